"""nutpie's numba model with its C callbacks cached on disk, so a new process does not compile them again.

``nutpie.compile_pymc_model(model, backend="numba")`` wraps PyTensor's numba-compiled log-density (with gradient)
and its "expand" function (the values to store per draw) in numba C callbacks (``numba.cfunc``) that nuts-rs calls
directly. Those callbacks are closures over run-time objects, so numba compiles them from scratch in every process,
and with them, linked in, the whole log-density: about 16 s at 10,000 cells on this project's 2-CPU machine, a third
of a default fit's time at that size (docs/benchmarks.md, "Scale"), although PyTensor had the log-density itself in
its on-disk cache.

:func:`compile_nutpie` builds the same model with callbacks whose source is generated with no closure and registered
with PyTensor's numba cache under a key made of the log-density's own PyTensor cache key, so a process that compiles
the same graph again (same model and data: a report regenerated, a fit rerun) loads them from disk. The callbacks do
what nutpie's do for a model without shared variables (``_make_c_logp_func`` / ``_make_c_expand_func``, the same
return codes) with plain loops instead of numpy's array functions, whose numba implementations would otherwise be
compiled again in every process too. The functions, initial points, shapes, dims and coordinates come from nutpie's own
helpers, so nuts-rs sees the same model and, for a seed, makes the same draws (tested: ``tests/test_nutpie_model.py``).
Measured at 10,000 cells (docs/benchmarks.md, "Scale"): 3.6-4.1 s from model to sampler when the graph was compiled
before, 12-15 s for new data (PyTensor then compiles the log-density's graph, its constants being the data), against
15-17 s for ``nutpie.compile_pymc_model`` every time. Models with shared variables (``pm.Data``), graphs PyTensor
cannot cache, and nutpie versions without these helpers go through ``nutpie.compile_pymc_model`` unchanged.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

import pymc as pm

__all__ = ["compile_nutpie"]

#: Part of every cache key: change it whenever the generated callbacks below change.
_CALLBACK_VERSION = "agentstats-nutpie-callbacks-3"

_LOGP_SRC = """
def agentstats_nutpie_logp(dim, x_, out_, logp_, user_data_):
    if dim != N_DIM:
        return -1
    try:
        logp_val, grad = inner(numba.carray(x_, (N_DIM,)))
    except Exception:
        return 1
    finite = True
    for i in range(N_DIM):
        out_[i] = grad[i]
        finite = finite and math.isfinite(grad[i])
    value = logp_val[()]
    logp_[0] = value
    if not finite:
        return 3
    if not math.isfinite(value):
        return 4
    return 0
"""

_EXPAND_SRC = """
def agentstats_nutpie_expand(dim, expanded, x_, out_, user_data_):
    if dim != N_DIM:
        return -1
    if expanded != N_EXPANDED:
        return -1
    try:
        (values,) = inner(numba.carray(x_, (N_DIM,)))
    except Exception:
        return -2
    for i in range(N_EXPANDED):
        out_[i] = values[i]
    return 0
"""


def _cached_cfunc(src: str, name: str, inner: Any, sig: Any, env: dict[str, Any]) -> Any:
    """Compile ``src`` as a numba C callback cached by PyTensor's locator, or None when ``inner`` has no cache key."""
    import numba
    from pytensor.link.numba.cache import CACHED_SRC_FUNCTIONS, compile_numba_function_src

    inner_key = CACHED_SRC_FUNCTIONS.get(inner.py_func)
    if inner_key is None:
        return None
    key = hashlib.sha256(f"{_CALLBACK_VERSION} {name} {inner_key} {sorted(env.items())}".encode()).hexdigest()
    # ``__name__``: numba rebuilds a cached function's environment (used by its ``except``) from its module
    env = {"__name__": __name__, "numba": numba, "math": math, "inner": inner, **env}
    py_func = compile_numba_function_src(src, name, global_env=env, cache_key=key)
    return numba.cfunc(sig, cache=True)(py_func)


def compile_nutpie(model: pm.Model) -> Any:
    """Compile ``model`` for nutpie with its C callbacks cached on disk (module docstring), without fast-math.

    Parameters
    ----------
    model : pymc.Model

    Returns
    -------
    nutpie compiled model
        For ``nutpie.sample``; the model of ``nutpie.compile_pymc_model(model, backend="numba")`` when the cached
        route does not apply (shared variables, a graph PyTensor cannot cache, another nutpie).
    """
    from pytensor import config

    from agentstats.models._bb_kernel import register_numba

    register_numba()  # the Beta-Binomial cell kernel's numba form
    # No fast-math: with it, LLVM reassociates and contracts differently depending on what it sees in one unit, so
    # code just compiled and the same code loaded from the cache differed in the gradient's last bit, and a fit's
    # 2,500 iterations turned that into visibly different chains (an LCB subset: max R-hat 1.0102 against 1.0065).
    # Without it, both agree to the bit (tests/test_nutpie_model.py), for about 15 % more time per gradient (0.70
    # against 0.62 ms at 10,000 cells, benchmarks/bench_fastmath.py): same seed, same numbers.
    with config.change_flags(numba__fastmath=False):
        return _compile(model)


def _compile(model: pm.Model) -> Any:
    """Build the compiled model (:func:`compile_nutpie` sets the flags)."""
    import nutpie

    try:
        import numba
        from nutpie.compile_pymc import (
            CompiledPyMCModel,
            _make_functions,
            _prepare_dims_and_coords,
            _wrap_with_lock,
            make_user_data,
        )
        from pymc.initial_point import make_initial_point_fn
    except ImportError:  # pragma: no cover - another nutpie
        return nutpie.compile_pymc_model(model, backend="numba")

    # as compile_pymc_model(model) with its defaults: support points, jittered
    initial_point_fn = _wrap_with_lock(
        make_initial_point_fn(
            model=model,
            default_strategy="support_point",
            jitter_rvs=set(model.free_RVs),
            return_transformed=True,
        )
    )
    n_dim, n_expanded, logp_fn_pt, expand_fn_pt, initial_points, shape_info, reparameterized = _make_functions(
        model,
        mode="NUMBA",
        compute_grad=True,
        join_expanded=True,
        pymc_initial_point_fn=initial_point_fn,
        var_names=None,
    )
    if logp_fn_pt.get_shared() or expand_fn_pt.get_shared():
        return nutpie.compile_pymc_model(model, backend="numba")
    u64, f64p, void = numba.types.uint64, numba.types.CPointer(numba.types.double), numba.types.voidptr
    logp_c = _cached_cfunc(
        _LOGP_SRC,
        "agentstats_nutpie_logp",
        logp_fn_pt.vm.jit_fn,
        numba.types.int64(u64, f64p, f64p, f64p, void),
        {"N_DIM": int(n_dim)},
    )
    expand_c = _cached_cfunc(
        _EXPAND_SRC,
        "agentstats_nutpie_expand",
        expand_fn_pt.vm.jit_fn,
        numba.types.int64(u64, u64, f64p, f64p, void),
        {"N_DIM": int(n_dim), "N_EXPANDED": int(n_expanded)},
    )
    if logp_c is None or expand_c is None:
        return nutpie.compile_pymc_model(model, backend="numba")
    dims, coords = _prepare_dims_and_coords(model, shape_info, reparameterized)
    return CompiledPyMCModel(
        _n_dim=n_dim,
        dims=dims,
        _coords=coords,
        _shapes={name: tuple(shape) for name, _, shape in zip(*shape_info, strict=True)},
        compiled_logp_func=logp_c,
        compiled_expand_func=expand_c,
        initial_point_func=initial_points,
        shared_data={},
        shared_var_keys={},
        user_data=make_user_data({}, {}),
        n_expanded=n_expanded,
        shape_info=shape_info,
        logp_func=logp_fn_pt,
        expand_func=expand_fn_pt,
        reparameterized_names=reparameterized,
    )

"""nutpie's numba model with its C callbacks cached on disk, so a new process does not compile them again.

``nutpie.compile_pymc_model(model, backend="numba")`` wraps PyTensor's numba-compiled log-density (with gradient)
and its "expand" function (the values to store per draw) in numba C callbacks (``numba.cfunc``) that nuts-rs calls
directly. Those callbacks are closures over run-time objects, so numba compiles them from scratch in every process,
and with them, linked in, the whole log-density: about 16 s at 10,000 cells on this project's 2-CPU machine, a third
of a default fit's time at that size (docs/benchmarks.md, "Scale"), although PyTensor had the log-density itself in
its on-disk cache.

:func:`compile_nutpie` builds the same model with callbacks whose source is generated with no closure and registered
with PyTensor's numba cache under a key made of the log-density's own PyTensor cache key, so a process that compiles
the same graph again loads them from disk. The Beta-Binomial families keep their data (counts, trials, ``log C(n, c)``
per cell) in shared variables, so the graph, and with it the key, depends on the model and on which cells are
observed, not on the counts: a report regenerated, a fit rerun, or a new dataset with the same cells (new trials of
the same benchmark, another subset of the same size) loads the compiled model. The callbacks read the shared arrays
from nutpie's user-data record (addresses and shapes, ``nutpie.compile_pymc.make_user_data``) as nutpie's own do, so
``CompiledPyMCModel.with_data`` works, and otherwise do what nutpie's do (``_make_c_logp_func`` /
``_make_c_expand_func``, the same return codes) with plain loops instead of numpy's array functions, whose numba
implementations would otherwise be compiled again in every process too. The functions, initial points, shapes, dims
and coordinates come from nutpie's own helpers, so nuts-rs sees the same model and, for a seed, makes the same draws
(tested: ``tests/models/test_nutpie_model.py``). Measured (docs/benchmarks.md, "Scale"): at 10,000 cells 2-4 s from
model
to sampler for a graph compiled before, at 240 cells 3.6 s for new data with the same cells (was 9.4-11.8 s in the
same minutes, when the counts were constants of the graph), against 15-17 s at 10,000 cells for
``nutpie.compile_pymc_model`` every time. Graphs PyTensor cannot cache, and nutpie versions without these helpers,
go through ``nutpie.compile_pymc_model`` unchanged.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

import pymc as pm

__all__ = ["compile_nutpie"]

#: Part of every cache key: change it whenever the generated callbacks below change.
_CALLBACK_VERSION = "agentstats-nutpie-callbacks-4"

_LOGP_SRC = """
def agentstats_nutpie_logp(dim, x_, out_, logp_, user_data_):
    if dim != N_DIM:
        return -1
    try:
        SHARED_ARRAYS
        logp_val, grad = inner(numba.carray(x_, (N_DIM,)) SHARED_ARGS)
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
        SHARED_ARRAYS
        (values,) = inner(numba.carray(x_, (N_DIM,)) SHARED_ARGS)
    except Exception:
        return -2
    for i in range(N_EXPANDED):
        out_[i] = values[i]
    return 0
"""


def _record_offsets(dtype: Any, base: int = 0, prefix: str = "") -> dict[str, int]:
    """Byte offset of every leaf field of a (nested) numpy record dtype, by dotted name."""
    out: dict[str, int] = {}
    for name, (sub, offset, *_) in dtype.fields.items():
        if sub.fields:
            out |= _record_offsets(sub, base + offset, f"{prefix}{name}.")
        else:
            out[f"{prefix}{name}"] = base + offset
    return out


def _shared_source(keys: list[str], shared_data: dict[str, Any], record: Any) -> tuple[str, str]:
    """Source lines that read the shared arrays ``keys`` from nutpie's user-data record, and the call's arguments.

    The record (``nutpie.compile_pymc.make_user_data``) holds, per shared variable, the address, size and shape of
    its array as 8-byte words; the callbacks view it as words and the arrays at those addresses, so they change with
    the data (``CompiledPyMCModel.with_data`` rewrites the record) while the code stays the same.
    """
    if not keys:
        return "pass", ""
    offsets = _record_offsets(record)
    lines, args = ["u = numba.carray(user_data_, (RECORD_WORDS,), np.uint64)"], []
    for i, key in enumerate(keys):
        arr = shared_data[key]
        word = offsets[f"shared.data.{key}"] // 8
        shape = offsets[f"shared.shape.{key}"] // 8
        dims = "".join(f"np.intp(u[{shape + d}]), " for d in range(arr.ndim))
        lines.append(f"s{i} = numba.carray(void_pointer(u[{word}]), ({dims}), np.{arr.dtype.name})")
        args.append(f", s{i}")
    return "\n        ".join(lines), "".join(args)


def _cached_cfunc(
    src: str, name: str, inner: Any, sig: Any, env: dict[str, Any], shared: tuple[str, str] = ("pass", "")
) -> Any:
    """Compile ``src`` as a numba C callback cached by PyTensor's locator, or None when ``inner`` has no cache key.

    ``shared``: the lines that read the shared arrays and the call's extra arguments (:func:`_shared_source`).
    """
    import numba
    import numpy as np
    from nutpie.compile_pymc import address_as_void_pointer
    from pytensor.link.numba.cache import CACHED_SRC_FUNCTIONS, compile_numba_function_src

    inner_key = CACHED_SRC_FUNCTIONS.get(inner.py_func)
    if inner_key is None:
        return None
    src = src.replace("SHARED_ARRAYS", shared[0]).replace(" SHARED_ARGS", shared[1])
    key = hashlib.sha256(f"{_CALLBACK_VERSION} {name} {inner_key} {sorted(env.items())} {src}".encode()).hexdigest()
    # ``__name__``: numba rebuilds a cached function's environment (used by its ``except``) from its module
    env = {
        "__name__": __name__,
        "numba": numba,
        "math": math,
        "np": np,
        "void_pointer": address_as_void_pointer,
        "inner": inner,
        **env,
    }
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
        route does not apply (a graph PyTensor cannot cache, another nutpie).
    """
    from pytensor import config

    from agentstats.models._bb_kernel import register_numba

    register_numba()  # the Beta-Binomial cell kernel's numba form
    # No fast-math: with it, LLVM reassociates and contracts differently depending on what it sees in one unit, so
    # code just compiled and the same code loaded from the cache differed in the gradient's last bit, and a fit's
    # 2,500 iterations turned that into visibly different chains (an LCB subset: max R-hat 1.0102 against 1.0065).
    # Without it, both agree to the bit (tests/models/test_nutpie_model.py), for about 15 % more time per gradient (0.70
    # against 0.62 ms at 10,000 cells, benchmarks/bench_fastmath.py): same seed, same numbers.
    with config.change_flags(numba__fastmath=False):
        return _compile(model)


def _compile(model: pm.Model) -> Any:
    """Build the compiled model (:func:`compile_nutpie` sets the flags)."""
    import nutpie

    try:
        import numba
        import numpy as np
        from nutpie.compile_pymc import (
            CompiledPyMCModel,
            _make_functions,
            _prepare_dims_and_coords,
            _wrap_with_lock,
            address_as_void_pointer,  # noqa: F401 - used by the callbacks (_cached_cfunc)
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
    # shared variables (the data of the Beta-Binomial families) are inputs of the compiled functions: their arrays
    # are copied once and passed by address, as nutpie does, under keys that do not change between processes
    shared_vars = list(dict.fromkeys([*logp_fn_pt.get_shared(), *expand_fn_pt.get_shared()]))
    shared_keys = {var: f"s{i}" for i, var in enumerate(shared_vars)}
    shared_data = {shared_keys[var]: np.array(var.get_value(), order="C", copy=True) for var in shared_vars}
    for arr in shared_data.values():
        arr.flags.writeable = False
    user_data = make_user_data(shared_keys, shared_data)
    words = {"RECORD_WORDS": int(user_data.dtype.itemsize // 8)}
    u64, f64p, void = numba.types.uint64, numba.types.CPointer(numba.types.double), numba.types.voidptr
    logp_c = _cached_cfunc(
        _LOGP_SRC,
        "agentstats_nutpie_logp",
        logp_fn_pt.vm.jit_fn,
        numba.types.int64(u64, f64p, f64p, f64p, void),
        {"N_DIM": int(n_dim)} | words,
        _shared_source([shared_keys[v] for v in logp_fn_pt.get_shared()], shared_data, user_data.dtype),
    )
    expand_c = _cached_cfunc(
        _EXPAND_SRC,
        "agentstats_nutpie_expand",
        expand_fn_pt.vm.jit_fn,
        numba.types.int64(u64, u64, f64p, f64p, void),
        {"N_DIM": int(n_dim), "N_EXPANDED": int(n_expanded)} | words,
        _shared_source([shared_keys[v] for v in expand_fn_pt.get_shared()], shared_data, user_data.dtype),
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
        shared_data=shared_data,
        shared_var_keys=shared_keys,
        user_data=user_data,
        n_expanded=n_expanded,
        shape_info=shape_info,
        logp_func=logp_fn_pt,
        expand_func=expand_fn_pt,
        reparameterized_names=reparameterized,
    )

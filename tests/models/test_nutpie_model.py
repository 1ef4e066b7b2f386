"""nutpie's numba model with cached C callbacks: the same model as nutpie's own compilation, and cached on disk."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pymc as pm
import pytest

from agentstats.models import get_family, prepare_counts
from agentstats.models._nutpie_model import compile_nutpie
from agentstats.models.priors import DEFAULT_PRIORS

nutpie = pytest.importorskip("nutpie")


def _model(seed: int = 4) -> pm.Model:
    rng = np.random.default_rng(seed)
    counts = pd.DataFrame({
        "agent": np.repeat(["a", "b", "c"], 12),
        "task_id": np.tile([f"t{i:02d}" for i in range(12)], 3),
        "n": 4,
        "c": rng.integers(0, 5, 36),
    })
    model, _ = get_family("zoi_beta_binomial").build(prepare_counts(counts), DEFAULT_PRIORS)
    return model


@pytest.mark.slow  # compiles the model twice, once uncached (nutpie's own route): about 15 s
def test_same_draws_as_nutpie_own_compilation():
    """For one seed, the cached-callback model and nutpie.compile_pymc_model (both without fast-math) give identical
    draws of every variable (same functions, initial points, names and shapes); guards against a nutpie whose private
    helpers changed."""
    model = _model()
    ours = compile_nutpie(model)
    from pytensor import config

    with config.change_flags(numba__fastmath=False):  # as compile_nutpie compiles
        theirs = nutpie.compile_pymc_model(model, backend="numba")
    assert ours.compiled_logp_func._pyfunc.__name__ == "agentstats_nutpie_logp"
    kw = dict(draws=30, tune=40, chains=2, cores=1, seed=3, progress_bar=False)
    a, b = nutpie.sample(ours, **kw), nutpie.sample(theirs, **kw)
    assert sorted(a["posterior"].data_vars) == sorted(b["posterior"].data_vars)
    for name in a["posterior"].data_vars:
        assert a["posterior"][name].dims == b["posterior"][name].dims
        np.testing.assert_array_equal(a["posterior"][name].values, b["posterior"][name].values)


def test_callbacks_are_written_to_pytensor_numba_cache():
    """After a compilation, PyTensor's numba cache holds an index for both callbacks of this graph."""
    from pytensor.link.numba.cache import CACHED_SRC_FUNCTIONS, NUMBA_CACHE_PATH

    compiled = compile_nutpie(_model())
    for cfunc in (compiled.compiled_logp_func, compiled.compiled_expand_func):
        key = CACHED_SRC_FUNCTIONS[cfunc._pyfunc]
        assert list(NUMBA_CACHE_PATH.glob(f"*{cfunc._pyfunc.__name__}-{key}*.nbi")), key


def _callback_logp(compiled, x: np.ndarray) -> tuple[float, np.ndarray]:
    """Call the compiled C log-density callback as nuts-rs does (with the model's user data)."""
    import ctypes

    n = compiled.n_dim
    out, lp = np.zeros(n), np.zeros(1)
    ptr = lambda a: a.ctypes.data_as(ctypes.POINTER(ctypes.c_double))  # noqa: E731
    code = compiled.compiled_logp_func.ctypes(n, ptr(x), ptr(out), ptr(lp), compiled.user_data.ctypes.data)
    assert code == 0
    return float(lp[0]), out


@pytest.mark.slow  # compiles a model and samples it on two data sets: about 9 s
def test_data_are_inputs_one_compiled_model_serves_new_data():
    """The Beta-Binomial data are shared variables: two datasets with the same cells compile to the same cached
    callbacks (one cache key), and each callback evaluates its own data's log-density (PyMC's, to rounding)."""
    from pytensor.link.numba.cache import CACHED_SRC_FUNCTIONS

    # the cells of _model(), new counts: compiled once in this file (a fresh cache compiles for about 15 s)
    models = [_model(seed) for seed in (11, 12)]
    compiled = [compile_nutpie(model) for model in models]
    keys = [CACHED_SRC_FUNCTIONS[c.compiled_logp_func._pyfunc] for c in compiled]
    assert keys[0] == keys[1]
    x = np.random.default_rng(0).normal(size=compiled[0].n_dim) * 0.3
    got = [_callback_logp(c, x)[0] for c in compiled]
    assert got[0] != pytest.approx(got[1])  # different data, different log-densities
    for model, c, value in zip(models, compiled, got, strict=True):
        # PyMC's log-density (with the transforms' Jacobians) at the same point: nutpie's flat vector split by name
        free = {v.name for v in model.value_vars}
        values = {name: x[sl].reshape(shape) for name, sl, shape in zip(*c.shape_info, strict=True) if name in free}
        assert len(values) == len(free)
        assert value == pytest.approx(float(model.compile_logp()(values)), rel=1e-12)


@pytest.mark.slow  # nutpie's own, uncached compilation
def test_models_with_shared_data_give_nutpie_own_draws_and_follow_with_data():
    with pm.Model() as model:
        y = pm.Data("y", np.array([0.1, -0.3, 0.2]))
        mu = pm.Normal("mu")
        pm.Normal("obs", mu, 1.0, observed=y)
    ours = compile_nutpie(model)
    assert ours.compiled_logp_func._pyfunc.__name__ == "agentstats_nutpie_logp"
    theirs = nutpie.compile_pymc_model(model, backend="numba")
    kw = dict(draws=50, tune=50, chains=1, cores=1, seed=3, progress_bar=False)
    new_y = np.array([4.0, 5.0, 6.0])
    for a, b in [(ours, theirs), (ours.with_data(y=new_y), theirs.with_data(y=new_y))]:
        draws = nutpie.sample(a, **kw)["posterior"]["mu"].values
        np.testing.assert_array_equal(draws, nutpie.sample(b, **kw)["posterior"]["mu"].values)
    assert float(draws.mean()) > 3.0  # the new data moved mu (posterior mean 15 / 4 = 3.75)


_GRADIENT_SCRIPT = """
import ctypes, hashlib, sys
import numpy as np
sys.path.insert(0, {benchmarks!r})
from bench_scale import simulate
from agentstats.models import get_family, prepare_counts
from agentstats.models._nutpie_model import compile_nutpie
from agentstats.models.priors import DEFAULT_PRIORS
model, _ = get_family("zoi_beta_binomial").build(prepare_counts(simulate(6, 70, 4)), DEFAULT_PRIORS)
compiled = compile_nutpie(model)
n = compiled.n_dim
x = np.random.default_rng(0).normal(size=n) * 0.3
out, lp = np.zeros(n), np.zeros(1)
ptr = lambda a: a.ctypes.data_as(ctypes.POINTER(ctypes.c_double))
assert compiled.compiled_logp_func.ctypes(n, ptr(x), ptr(out), ptr(lp), compiled.user_data.ctypes.data) == 0
print(hashlib.sha256(lp.tobytes() + out.tobytes()).hexdigest())
"""


@pytest.mark.slow  # two processes on an empty PyTensor cache: the first compiles everything (about a minute)
def test_compiled_and_cached_callbacks_give_the_same_bits(tmp_path):
    """A process that compiles the model and one that loads it from the cache evaluate the same gradient to the bit
    (with PyTensor's fast-math this 6 x 70 model's gradient differed in its last bit, and fits drift apart over
    thousands of iterations)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = dict(os.environ, PYTENSOR_FLAGS=f"base_compiledir={tmp_path / 'pytensor'}",
               NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    script = _GRADIENT_SCRIPT.format(benchmarks=str(Path(__file__).parents[2] / "benchmarks"))
    runs = [subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=False)
            for _ in range(2)]
    for run in runs:
        assert run.returncode == 0, run.stderr[-2000:]
    first, second = (run.stdout.strip().splitlines()[-1] for run in runs)
    assert first == second

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


def _model() -> pm.Model:
    rng = np.random.default_rng(4)
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


@pytest.mark.slow  # nutpie's own, uncached compilation
def test_models_with_shared_data_use_nutpie_own_compilation():
    with pm.Model() as model:
        y = pm.Data("y", np.array([0.1, -0.3, 0.2]))
        mu = pm.Normal("mu")
        pm.Normal("obs", mu, 1.0, observed=y)
    compiled = compile_nutpie(model)
    assert compiled.compiled_logp_func._pyfunc.__name__ != "agentstats_nutpie_logp"


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
assert compiled.compiled_logp_func.ctypes(n, ptr(x), ptr(out), ptr(lp), None) == 0
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
    script = _GRADIENT_SCRIPT.format(benchmarks=str(Path(__file__).parents[1] / "benchmarks"))
    runs = [subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=False)
            for _ in range(2)]
    for run in runs:
        assert run.returncode == 0, run.stderr[-2000:]
    first, second = (run.stdout.strip().splitlines()[-1] for run in runs)
    assert first == second

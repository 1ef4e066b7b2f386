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
    """For one seed, the cached-callback model and nutpie.compile_pymc_model give identical draws of every variable
    (same functions, initial points, names and shapes); guards against a nutpie whose private helpers changed."""
    model = _model()
    ours = compile_nutpie(model)
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

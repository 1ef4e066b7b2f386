"""Shared test configuration: the real-data location, and the one session-scoped real PyMC fit of the model tests."""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")
os.environ.setdefault("MPLBACKEND", "Agg")

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """Path of the real public data beside the checkout (``../shared/data``); skips when absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real data not available: {SHARED_DATA} is absent (it sits beside the checkout in CI)")
    return SHARED_DATA


# ---- one real, session-scoped PyMC fit
MODELS_AGENTS = {"strong": 1.2, "mid": 0.0, "weak": -1.2}


def _models_counts(sim):
    """Counts per (agent, task) from simulated trials (a tiny groupby; independent of agentstats.records.counts)."""
    import pandas as pd

    df = pd.DataFrame([(t.agent, t.task_id, t.outcome()) for t in sim.trials], columns=["agent", "task_id", "o"])
    df = df.assign(n=df.o != "missing", c=df.o == "success", n_missing=df.o == "missing")
    out = df.groupby(["agent", "task_id"], sort=False)[["n", "c", "n_missing"]].sum().reset_index()
    return out.astype({"n": "int64", "c": "int64", "n_missing": "int64"})


@pytest.fixture(scope="session")
def models_sim():
    """Simulated runs with known truth: 3 agents x 20 tasks x 4 trials (seeded)."""
    from agentstats.simulate import simulate_trials

    sim = simulate_trials(MODELS_AGENTS, n_tasks=20, n_trials=4, seed=7)
    return sim, _models_counts(sim)


@pytest.fixture(scope="session")
def models_fit(models_sim):
    """The one real fit of the models tests: logit-normal partial pooling, default sampler, 2 x 500 draws, seeded.

    (The Beta-Binomial models, zoi_beta_binomial the default, have their own real fits in
    tests/models/test_beta_binomial.py.)
    """
    import warnings

    from agentstats.models import fit

    _, counts = models_sim
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 1,000 draws cannot reach ESS 400; convergence is asserted in tests
        return fit(counts, "partial_pooling", draws=500, tune=500, chains=2, random_seed=11, log_likelihood=True)

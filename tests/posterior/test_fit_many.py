"""fit_many: one fit per slice, one table, the same numbers on every executor, failures kept as rows.

The no-pooling family is drawn exactly from its Beta posterior (no MCMC), so these fits are real and fast: each
slice's suite pass@1 and pass^2 are checked against the Beta closed forms, computed here from the counts.
"""

from __future__ import annotations

import concurrent.futures as cf
from concurrent.futures.process import BrokenProcessPool

import numpy as np
import pandas as pd
import pytest
from parallel_helpers import FIT_OPTIONS as OPTIONS
from parallel_helpers import slice_counts as _counts

from agentstats.intervals import derive_seed
from agentstats.posterior import fit_many
from agentstats.posterior.many import FIT_MANY_COLUMNS


def _beta_moments(sub: pd.DataFrame, k: int) -> float:
    """Suite E[p^k] of the no-pooling posterior: mean over tasks of prod_{j<k} (a + j) / (a + b + j)."""
    a = 1.0 + sub["c"].to_numpy(float)
    b = 1.0 + (sub["n"] - sub["c"]).to_numpy(float)
    out = np.ones_like(a)
    for j in range(k):
        out *= (a + j) / (a + b + j)
    return float(out.mean())


@pytest.fixture(scope="module")
def counts() -> pd.DataFrame:
    return _counts()


@pytest.fixture(scope="module")
def local(counts) -> pd.DataFrame:
    return fit_many(counts, by="version", k=[1, 2], random_seed=5, **OPTIONS)


def test_one_row_per_slice_agent_and_k_with_the_closed_form_values(counts, local):
    assert list(local.columns) == ["version", *FIT_MANY_COLUMNS]
    assert local[["version", "agent", "k"]].to_numpy().tolist() == [
        [v, a, k] for v in ("v1", "v2", "v3") for a in ("a", "b") for k in (1, 2)]
    assert local["error"].isna().all() and local["converged"].all()
    assert (local["method"] == "exact").all()  # no_pooling's draws are exact (no chain): what made them is said
    for (version, agent), rows in local.groupby(["version", "agent"]):
        sub = counts[(counts["version"] == version) & (counts["agent"] == agent)]
        one, two = rows.set_index("k").loc[1], rows.set_index("k").loc[2]
        assert one["pass_hat_k"] == pytest.approx(_beta_moments(sub, 1), abs=0.01)
        assert one["pass_at_k"] == pytest.approx(one["pass_hat_k"], abs=1e-12)  # k = 1: the same quantity
        assert two["pass_hat_k"] == pytest.approx(_beta_moments(sub, 2), abs=0.01)
        assert one["pass_hat_k_ci_low"] < one["pass_hat_k"] < one["pass_hat_k_ci_high"]
        assert one["n_tasks"] == 6 and one["n_cells"] == 12
    assert (local["random_seed"] == local["version"].map(lambda v: derive_seed(5, v))).all()
    assert local.attrs == {"by": "version", "random_seed": 5, "ks": [1, 2]}


def test_a_thread_pool_gives_the_same_table(counts, local):
    with cf.ThreadPoolExecutor(max_workers=3) as pool:
        threaded = fit_many(counts, by="version", k=[1, 2], random_seed=5, executor=pool, **OPTIONS)
    pd.testing.assert_frame_equal(threaded.drop(columns="seconds"), local.drop(columns="seconds"))


def test_a_slice_keeps_its_numbers_without_the_others(counts, local):
    alone = fit_many(counts[counts["version"] == "v2"], by="version", k=[1, 2], random_seed=5, **OPTIONS)
    pd.testing.assert_frame_equal(alone.drop(columns="seconds"),
                                  local[local["version"] == "v2"].drop(columns="seconds").reset_index(drop=True))


def test_a_failed_slice_is_a_row_with_its_error_and_the_others_are_kept(counts, local):
    bad = counts.copy()
    bad.loc[(bad["version"] == "v2") & (bad["task_id"] == "t0"), "c"] = 99  # more successes than trials
    table = fit_many(bad, by="version", k=[1, 2], random_seed=5, **OPTIONS)
    failed = table[table["error"].notna()]
    assert failed["version"].tolist() == ["v2"] and failed["error"].str.startswith("ValueError").all()
    assert failed["pass_at_k"].isna().all() and failed["random_seed"].tolist() == [derive_seed(5, "v2")]
    kept = table[table["version"] != "v2"].drop(columns="seconds").reset_index(drop=True)
    pd.testing.assert_frame_equal(kept, local[local["version"] != "v2"].drop(columns="seconds").reset_index(drop=True))


class _LosesOne(cf.ThreadPoolExecutor):
    """A pool whose second task's worker is "lost": its future fails as a crashed process pool's would."""

    def __init__(self) -> None:
        super().__init__(max_workers=2)
        self.calls = 0

    def submit(self, fn, /, *args, **kwargs):  # type: ignore[override]
        self.calls += 1
        if self.calls == 2:
            future: cf.Future = cf.Future()
            future.set_exception(BrokenProcessPool("a worker died"))
            return future
        return super().submit(fn, *args, **kwargs)


def test_a_lost_worker_fails_only_its_slice(counts, local):
    with _LosesOne() as pool:
        table = fit_many(counts, by="version", k=1, random_seed=5, executor=pool, **OPTIONS)
    assert table.loc[table["error"].notna(), "version"].tolist() == ["v2"]
    assert table["error"].dropna().tolist() == ["BrokenProcessPool: a worker died"]
    assert table["error"].isna().sum() == 4  # v1 and v3, two agents each


class _LosesAll(cf.ThreadPoolExecutor):
    """A pool whose every worker dies, as a script without the __main__ guard makes a spawned pool's workers do."""

    def submit(self, fn, /, *args, **kwargs):  # type: ignore[override]
        future: cf.Future = cf.Future()
        future.set_exception(BrokenProcessPool("A process in the process pool was terminated abruptly"))
        return future


def test_a_pool_whose_every_worker_died_names_the_main_guard(counts):
    with _LosesAll(max_workers=1) as pool, pytest.raises(RuntimeError, match=r'if __name__ == "__main__":'):
        fit_many(counts, by="version", k=1, executor=pool, **OPTIONS)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"by": "nope"}, r"lack the column\(s\) \['nope'\]"),
    ({"by": "n"}, "is a column of the counts themselves"),
    ({"by": "agent"}, "has a row per agent already"),
    ({"by": "version", "k": 0}, "every k must be an integer >= 1"),
    ({"by": "version", "ci_prob": 2}, "ci_prob must be in"),
    ({"by": "version", "executor": "gpu"}, "executor must be one of"),
])
def test_bad_arguments_are_refused(counts, kwargs, match):
    with pytest.raises(ValueError, match=match):
        fit_many(counts, **kwargs, **OPTIONS)


def test_a_missing_slice_value_is_refused(counts):
    blank = counts.copy()
    blank.loc[3, "version"] = None
    with pytest.raises(ValueError, match=r"column 'version' has no value in 1 row\(s\) \(first: index 3\)"):
        fit_many(blank, by="version", **OPTIONS)


@pytest.mark.slow
def test_a_process_pool_gives_the_same_table(counts, local):
    table = fit_many(counts, by="version", k=[1, 2], random_seed=5, executor="process", workers=2, **OPTIONS)
    pd.testing.assert_frame_equal(table.drop(columns="seconds"), local.drop(columns="seconds"))

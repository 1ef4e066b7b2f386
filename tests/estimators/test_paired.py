"""Tests for agentstats.estimators.paired: paired differences between agents, McNemar, the all-pairs table.

Expected values come from closed forms (binomial and multinomial enumeration of the bootstrap distribution, the
exact McNemar p-value 2 * 0.5^6), scipy.stats (binomtest, exact binomial limits) and numerical integration.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, special, stats

import agentstats
from agentstats.estimators import paired_pass_k, paired_pass_k_table, pass_hat_k, suite_pass_k

FIXTURES = Path(__file__).resolve().parents[1] / "data"


def _one_trial(solved: dict[str, set[int]], n_tasks: int) -> pd.DataFrame:
    """Counts for agents with one trial per task t00.. and the given solved task numbers."""
    rows = [(agent, f"t{i:02d}", 1, int(i in s)) for agent, s in solved.items() for i in range(n_tasks)]
    return pd.DataFrame(rows, columns=["agent", "task_id", "n", "c"])


def _exact_bootstrap_quantiles(values: np.ndarray, probs: tuple[float, float]) -> np.ndarray:
    """Quantiles of the exact bootstrap distribution of the mean of ``values`` (multinomial over distinct values)."""
    levels, counts = np.unique(values, return_counts=True)
    t = len(values)
    support: dict[float, float] = {}
    for draw in itertools.product(range(t + 1), repeat=len(levels) - 1):
        if sum(draw) > t:
            continue
        full = (*draw, t - sum(draw))
        prob = stats.multinomial.pmf(full, t, counts / t)
        mean = round(float(np.dot(full, levels)) / t, 12)
        support[mean] = support.get(mean, 0.0) + prob
    xs = np.array(sorted(support))
    cdf = np.cumsum([support[x] for x in xs])
    return np.array([xs[np.searchsorted(cdf, p - 1e-12)] for p in probs])


def test_issue_example_difference_interval_and_mcnemar():
    # tasks t00-t29, one trial; A solves t00-t14, B solves t06-t14
    counts = _one_trial({"A": set(range(15)), "B": set(range(6, 15))}, 30)
    row = paired_pass_k(counts, "A", "B", n_boot=4000, random_seed=0).iloc[0]
    assert row.k == 1 and row.n_tasks == 30
    assert row.pass_hat_k_a == pytest.approx(0.5) and row.pass_hat_k_b == pytest.approx(0.3)
    assert row.pass_hat_k_diff == pytest.approx(0.2) and row.pass_at_k_diff == pytest.approx(0.2)
    assert row.pass_hat_k_diff_ci_method == "percentile bootstrap"
    # d_t is 1 on six tasks and 0 on 24: the bootstrap mean is Binomial(30, 0.2) / 30, whose 2.5% point is 2/30 and
    # whose 97.5% point sits on the step from 10/30 to 11/30 (P(X <= 10) = 0.974): "about [0.07, 0.37]"
    assert stats.binom.ppf(0.025, 30, 0.2) == 2 and stats.binom.ppf(0.975, 30, 0.2) == 11
    assert row.pass_hat_k_diff_ci_low == pytest.approx(2 / 30, abs=1e-9)
    assert 10 / 30 - 1e-9 <= row.pass_hat_k_diff_ci_high <= 11 / 30 + 1e-9
    assert row.pass_hat_k_diff_se == pytest.approx(np.std([1] * 6 + [0] * 24, ddof=1) / math.sqrt(30))
    # exact McNemar: 6 tasks only A solved, none only B: p = 2 * 0.5^6
    assert (row.mcnemar_a_only, row.mcnemar_b_only) == (6, 0)
    assert row.mcnemar_p == pytest.approx(2 * 0.5**6, rel=1e-12) == pytest.approx(0.03125)
    assert row.mcnemar_p == pytest.approx(stats.binomtest(6, 6, 0.5).pvalue, rel=1e-12)
    # the other way round: the same test, the difference negated
    back = paired_pass_k(counts, "B", "A", n_boot=4000, random_seed=0).iloc[0]
    assert back.pass_hat_k_diff == pytest.approx(-0.2) and back.mcnemar_p == pytest.approx(row.mcnemar_p)
    assert (back.mcnemar_a_only, back.mcnemar_b_only) == (0, 6)


def test_paired_bootstrap_matches_exact_bootstrap_distribution_and_beats_independent_resampling():
    # two strongly correlated agents on 30 tasks with 4 trials each: per-task pass^1 values
    rng = np.random.default_rng(11)
    c_b = rng.integers(0, 5, size=30)
    c_a = np.clip(c_b + rng.choice([-1, 0, 0, 1, 1], size=30), 0, 4)
    counts = pd.DataFrame({"agent": ["A"] * 30 + ["B"] * 30, "task_id": [f"t{i}" for i in range(30)] * 2,
                           "n": 4, "c": np.r_[c_a, c_b]})  # fmt: skip
    row = paired_pass_k(counts, "A", "B", k=[1], n_boot=20000, random_seed=2).iloc[0]
    d = (c_a - c_b) / 4
    assert row.pass_hat_k_diff == pytest.approx(d.mean())
    lo, hi = _exact_bootstrap_quantiles(d, (0.025, 0.975))
    step = 1 / (4 * 30)  # lattice of the resampled mean
    assert row.pass_hat_k_diff_ci_low == pytest.approx(lo, abs=step + 1e-9)
    assert row.pass_hat_k_diff_ci_high == pytest.approx(hi, abs=step + 1e-9)
    # resampling the agents separately would ignore the pairing: a much wider interval
    va, vb = c_a / 4, c_b / 4
    indep = [va[rng.integers(0, 30, 30)].mean() - vb[rng.integers(0, 30, 30)].mean() for _ in range(4000)]
    width_indep = np.subtract(*np.quantile(indep, [0.975, 0.025]))
    assert row.pass_hat_k_diff_ci_high - row.pass_hat_k_diff_ci_low < 0.5 * width_indep


def test_boundary_difference_is_never_zero_width():
    # both agents fail everything on 10 tasks x 5 trials: the bootstrap would give [0, 0]
    zero = pd.DataFrame({"agent": ["A"] * 10 + ["B"] * 10, "task_id": [f"t{i}" for i in range(10)] * 2,
                         "n": 5, "c": 0})  # fmt: skip
    out = paired_pass_k(zero, "A", "B", n_boot=500)
    edge = stats.binomtest(0, 10).proportion_ci(0.95, method="exact").high  # 1 - 0.025^(1/10)
    assert (out.pass_hat_k_diff == 0).all() and (out.pass_hat_k_diff_ci_method == "MOVER (Clopper-Pearson)").all()
    np.testing.assert_allclose(out.pass_hat_k_diff_ci_low, -edge, rtol=1e-12)
    np.testing.assert_allclose(out.pass_hat_k_diff_ci_high, edge, rtol=1e-12)
    # identical agents in the interior (same outcome on every task): differences without spread, correlation term 0
    same = _one_trial({"A": set(range(12)), "B": set(range(12))}, 30)
    row = paired_pass_k(same, "A", "B").iloc[0]
    ci = stats.binomtest(12, 30).proportion_ci(0.95, method="exact")
    half = math.hypot(0.4 - ci.low, ci.high - 0.4)
    assert row.pass_hat_k_diff == 0 and row.pass_hat_k_diff_ci_method == "MOVER (Clopper-Pearson)"
    assert (row.pass_hat_k_diff_ci_low, row.pass_hat_k_diff_ci_high) == (pytest.approx(-half), pytest.approx(half))
    assert row.mcnemar_p == 1.0 and (row.mcnemar_a_only, row.mcnemar_b_only) == (0, 0)


def test_near_boundary_difference_uses_mover_with_the_correlation():
    # two weak agents (fewer than 5 tasks' worth of successes each) on 40 tasks, one trial each
    counts = _one_trial({"A": {0, 1, 2, 3}, "B": {0, 1, 5}}, 40)
    row = paired_pass_k(counts, "A", "B").iloc[0]
    assert row.pass_hat_k_diff_ci_method == "MOVER (Clopper-Pearson)"
    va = np.isin(np.arange(40), [0, 1, 2, 3]).astype(float)
    vb = np.isin(np.arange(40), [0, 1, 5]).astype(float)
    r = np.corrcoef(va, vb)[0, 1]
    ca = stats.binomtest(4, 40).proportion_ci(0.95, method="exact")
    cb = stats.binomtest(3, 40).proportion_ci(0.95, method="exact")
    ma, mb = 0.1, 0.075
    # Newcombe (1998) method 10 / Zou & Donner (2008): square-and-add with the correlation term
    lo = ma - mb - math.sqrt((ma - ca.low) ** 2 + (cb.high - mb) ** 2 - 2 * r * (ma - ca.low) * (cb.high - mb))
    hi = ma - mb + math.sqrt((ca.high - ma) ** 2 + (mb - cb.low) ** 2 - 2 * r * (ca.high - ma) * (mb - cb.low))
    assert row.pass_hat_k_diff_ci_low == pytest.approx(lo, rel=1e-10)
    assert row.pass_hat_k_diff_ci_high == pytest.approx(hi, rel=1e-10)
    assert row.mcnemar_p == pytest.approx(stats.binomtest(2, 3, 0.5).pvalue)


def test_task_sets_drops_and_mcnemar_applicability():
    counts = pd.DataFrame(
        [("A", "t1", 3, 2), ("A", "t2", 3, 1), ("A", "t3", 1, 1), ("A", "t4", 2, 0), ("A", "t5", 0, 0),
         ("B", "t1", 4, 4), ("B", "t2", 2, 1), ("B", "t3", 3, 0), ("B", "t6", 5, 2), ("B", "t5", 2, 2)],
        columns=["agent", "task_id", "n", "c"],
    )  # fmt: skip
    out = paired_pass_k(counts, "A", "B", k=[1, 2, 3], n_boot=200).set_index("k")
    assert (out.n_tasks_paired == 3).all()  # t1, t2, t3 (t5: no usable trial for A)
    assert out.loc[1, "tasks_only_a"] == ["t4"] and out.loc[1, "tasks_only_b"] == ["t6", "t5"]
    assert list(out.n_tasks) == [3, 2, 1]
    assert out.loc[2, "dropped_tasks"] == ["t3"] and out.loc[3, "dropped_tasks"] == ["t2", "t3"]
    # k = 2 on t1, t2: means of the unbiased per-task values over the shared tasks
    assert out.loc[2, "pass_hat_k_a"] == pytest.approx((pass_hat_k(3, 2, 2) + pass_hat_k(3, 1, 2)) / 2)
    assert out.loc[2, "pass_hat_k_b"] == pytest.approx((1 + pass_hat_k(2, 1, 2)) / 2)
    assert math.isnan(out.loc[3, "pass_hat_k_diff_se"])  # one task: no spread to estimate
    assert out.mcnemar_p.isna().all()  # several trials per task: no McNemar test
    # default k: 1 .. the smallest n over the shared tasks of both agents
    assert list(paired_pass_k(counts, "A", "B", n_boot=0).k) == [1]


def test_agent_errors():
    counts = _one_trial({"A": {1}, "B": {2}}, 5)
    with pytest.raises(ValueError, match=r"paired_pass_k: agent\(s\) \['C'\] not in the counts table"):
        paired_pass_k(counts, "A", "C")
    with pytest.raises(ValueError, match="two different agents"):
        paired_pass_k(counts, "A", "A")
    with pytest.raises(ValueError, match="more than once"):
        paired_pass_k_table(counts, agents=["A", "B", "A"])
    with pytest.raises(ValueError, match="equal-tailed"):
        paired_pass_k(counts, "A", "B", ci_kind="hdi")
    with pytest.raises(TypeError, match="seed"):  # the deprecated alias `seed=` is gone (0.1.0)
        paired_pass_k(counts, "A", "B", seed=1, n_boot=100)  # type: ignore[call-arg]


def test_all_pairs_table():
    counts = pd.read_csv(FIXTURES / "metr_counts.csv")
    agents = ["o1", "GPT-4o", "Claude 3 Opus", "davinci-002"]
    table = paired_pass_k_table(counts, k=[1, 2], agents=agents, n_boot=300, random_seed=4)
    pairs = list(dict.fromkeys(zip(table.agent_a, table.agent_b, strict=True)))
    assert pairs == list(itertools.combinations(agents, 2))
    assert len(table) == 6 * 2 and table.attrs["random_seed"] == 4
    # each pair's rows equal a single call (same seed), whatever else is in the table
    one = paired_pass_k(counts, "GPT-4o", "davinci-002", k=[1, 2], n_boot=300, random_seed=4)
    got = table[(table.agent_a == "GPT-4o") & (table.agent_b == "davinci-002")].reset_index(drop=True)
    pd.testing.assert_frame_equal(got, one, check_exact=False, rtol=1e-12)
    # shared tasks only: davinci-002 ran 16 of the 83 tasks
    assert (got.n_tasks_paired == 16).all() and len(got.tasks_only_a.iloc[0]) == 67
    # differences are differences of means over the same shared tasks
    shared = counts[counts.agent.isin(["GPT-4o", "davinci-002"])].pivot(index="task_id", columns="agent")
    shared = shared.dropna()
    diff = (shared["c"]["GPT-4o"] / shared["n"]["GPT-4o"] - shared["c"]["davinci-002"] / shared["n"]["davinci-002"])
    assert got.pass_hat_k_diff.iloc[0] == pytest.approx(diff.mean(), rel=1e-12)
    # a Generator seed is drawn once for the whole table
    gen = paired_pass_k_table(counts, k=[1], agents=agents[:2], n_boot=100, random_seed=np.random.default_rng(1))
    assert gen.attrs["random_seed"] == int(np.random.default_rng(1).integers(0, 2**63))
    assert paired_pass_k_table(counts, agents=["o1"]).empty
    assert agentstats.paired_pass_k_table is paired_pass_k_table and agentstats.paired_pass_k is paired_pass_k


@pytest.mark.slow  # 1.5-3 s; the README's test command stays under 2 minutes
def test_paired_interval_coverage_by_simulation():
    # 120 simulated pairs of agents sharing task difficulty (logit-normal), 30 tasks x 1 trial; the true difference
    # in the task population's mean success probability comes from numerical integration
    def p_a(theta):
        return special.expit(theta + 0.8)

    def p_b(theta):
        return special.expit(theta)

    truth = integrate.quad(lambda th: (p_a(th) - p_b(th)) * stats.norm.pdf(th, 0, 1.5), -15, 15)[0]
    rng = np.random.default_rng(3)
    reps, n_tasks = 120, 30
    theta = rng.normal(0, 1.5, size=(reps, n_tasks))
    ca, cb = rng.binomial(1, p_a(theta)), rng.binomial(1, p_b(theta))
    hits = 0
    for r in range(reps):
        counts = pd.DataFrame({"agent": ["a"] * n_tasks + ["b"] * n_tasks, "n": 1, "c": np.r_[ca[r], cb[r]],
                               "task_id": [f"t{i}" for i in range(n_tasks)] * 2})  # fmt: skip
        row = paired_pass_k(counts, "a", "b", k=[1], n_boot=300, random_seed=r).iloc[0]
        hits += row.pass_hat_k_diff_ci_low <= truth <= row.pass_hat_k_diff_ci_high
    assert hits / reps >= 0.88, hits / reps


def test_suite_and_paired_agree_on_shared_tasks():
    counts = pd.read_csv(FIXTURES / "tau_bench_gpt4o_airline_counts.csv", dtype={"task_id": str})
    other = counts.assign(agent="copy", c=np.minimum(counts.c + 1, counts.n))
    both = pd.concat([counts, other], ignore_index=True)
    suite = suite_pass_k(both, n_boot=0).set_index(["agent", "k"])
    paired = paired_pass_k(both, "copy", counts.agent.iloc[0], n_boot=200).set_index("k")
    for k in (1, 2, 3, 4):
        assert paired.loc[k, "pass_hat_k_a"] == pytest.approx(suite.loc[("copy", k), "pass_hat_k"])
        assert paired.loc[k, "pass_hat_k_diff"] > 0 and paired.loc[k, "pass_hat_k_diff_ci_low"] > 0

"""Tests for agentstats.estimators.

Expected values come from closed forms in exact rational arithmetic (fractions + math.comb), brute-force
enumeration of k-subsets, numerical integration (scipy.integrate.quad), grid searches, published numbers
(tau-bench README, issue 2) -- never from the code under test.
"""

from __future__ import annotations

import itertools
import math
import statistics
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, stats

from agentstats.estimators import (
    beta_pass_k,
    bootstrap,
    clopper_pearson_interval,
    pass_at_k,
    pass_hat_k,
    plugin_pass_at_k,
    plugin_pass_hat_k,
    suite_pass_k,
    unbiased,
)

FIXTURES = Path(__file__).resolve().parents[1] / "data"


def exact_at(n: int, c: int, k: int) -> Fraction:
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


def exact_hat(n: int, c: int, k: int) -> Fraction:
    return Fraction(math.comb(c, k), math.comb(n, k))


# ------------------------------------------------------------------------------------------------ issue numbers


def test_issue_closed_form_values():
    assert pass_at_k(10, 7, 3) == pytest.approx(0.991667, abs=5e-7)
    assert pass_hat_k(10, 7, 3) == pytest.approx(0.291667, abs=5e-7)
    assert pass_at_k(10, 7, 3) == pytest.approx(float(Fraction(119, 120)), rel=1e-15)
    assert pass_hat_k(10, 7, 3) == pytest.approx(float(Fraction(7, 24)), rel=1e-15)


def test_issue_beta_values():
    row = beta_pass_k(10, 7, 3, prior=(1, 1), ci_prob=0.95).iloc[0]
    assert row.ci_kind == "eti"
    assert row.pass_at_k_mean == pytest.approx(0.945055, abs=5e-7)
    assert row.pass_hat_k_mean == pytest.approx(0.329670, abs=5e-7)
    # Beta(8, 4): E[p^3] = 8*9*10/(12*13*14), E[(1-p)^3] = 4*5*6/(12*13*14)
    assert row.pass_hat_k_mean == pytest.approx(720 / 2184, rel=1e-13)
    assert row.pass_at_k_mean == pytest.approx(1 - 120 / 2184, rel=1e-13)
    assert row.pass_at_k_ci_low == pytest.approx(0.7733, abs=5e-5)
    assert row.pass_at_k_ci_high == pytest.approx(0.9987, abs=5e-5)
    assert row.pass_hat_k_ci_low == pytest.approx(0.0594, abs=5e-5)
    assert row.pass_hat_k_ci_high == pytest.approx(0.7067, abs=5e-5)


# ------------------------------------------------------------------------------------------------ brute force


def test_brute_force_enumeration_small_n():
    cases = []
    for n in range(1, 9):
        for c in range(n + 1):
            outcomes = [1] * c + [0] * (n - c)
            for k in range(1, n + 1):
                subsets = list(itertools.combinations(outcomes, k))
                any_ok = Fraction(sum(1 for s in subsets if any(s)), len(subsets))
                all_ok = Fraction(sum(1 for s in subsets if all(s)), len(subsets))
                cases.append((n, c, k, any_ok, all_ok))
                assert pass_at_k(n, c, k) == pytest.approx(float(any_ok), abs=1e-14), (n, c, k)
                assert pass_hat_k(n, c, k) == pytest.approx(float(all_ok), abs=1e-14), (n, c, k)
    # vectorized call over all cases at once gives the same
    n, c, k = (np.array([x[i] for x in cases]) for i in range(3))
    np.testing.assert_allclose(pass_at_k(n, c, k), [float(x[3]) for x in cases], atol=1e-14)
    np.testing.assert_allclose(pass_hat_k(n, c, k), [float(x[4]) for x in cases], atol=1e-14)


def test_broadcasting_shapes_and_types():
    out = pass_at_k(np.array([4, 8]), np.array([[1], [2], [3]]), 2)
    assert isinstance(out, np.ndarray) and out.shape == (3, 2)
    assert out[1, 1] == pytest.approx(float(exact_at(8, 2, 2)))
    assert isinstance(pass_hat_k(4, 2, 2), float)
    assert isinstance(pass_hat_k(np.int64(4), 2.0, 2), float)  # integer-valued float accepted
    assert pass_hat_k([4], [2], [2]).shape == (1,)
    ks = np.arange(1, 9)
    np.testing.assert_allclose(pass_hat_k(8, 5, ks), [float(exact_hat(8, 5, int(k))) for k in ks], rtol=1e-14)


# ------------------------------------------------------------------------------------------------ edge cases


def test_c_zero_is_exactly_zero_for_every_k():
    assert pass_at_k(2, 0, 5) == 0.0
    for n in (1, 2, 10):
        for k in (1, 2, 5, 50):
            for f in (pass_at_k, pass_hat_k):
                v = f(n, 0, k)
                assert v == 0.0 and math.copysign(1.0, v) == 1.0, (f.__name__, n, k)


def test_k_greater_than_n_is_nan_never_one():
    for n, c, k in [(2, 1, 5), (2, 2, 5), (4, 4, 5), (1, 1, 2), (3, 2, 4)]:
        assert math.isnan(pass_at_k(n, c, k)), (n, c, k)
        assert math.isnan(pass_hat_k(n, c, k)), (n, c, k)
    arr = pass_at_k(np.array([2, 2, 10]), np.array([2, 0, 10]), 5)
    assert math.isnan(arr[0]) and arr[1] == 0.0 and arr[2] == 1.0
    # no trials at all: nothing is known
    assert math.isnan(pass_at_k(0, 0, 1)) and math.isnan(pass_hat_k(0, 0, 1))


def test_k_equal_n_boundaries():
    assert pass_at_k(5, 5, 5) == 1.0 and pass_hat_k(5, 5, 5) == 1.0
    assert pass_at_k(5, 1, 5) == 1.0 and pass_hat_k(5, 4, 5) == 0.0
    assert pass_at_k(5, 1, 1) == pytest.approx(0.2)


@pytest.mark.parametrize(
    "args",
    [(3, 4, 1), (-1, 0, 1), (3, -1, 1), (3, 1, 0), (3, 1, -2), (3.5, 1, 1), (3, 1.2, 1), (3, 1, 1.5),
     (float("nan"), 1, 1), (True, 1, 1), ("a", 1, 1), ([3, 4], [1, 2, 3], 1)],
)  # fmt: skip
@pytest.mark.parametrize("func", [pass_at_k, pass_hat_k, plugin_pass_at_k, plugin_pass_hat_k])
def test_invalid_inputs_raise(func, args):
    with pytest.raises(ValueError, match=func.__name__):
        func(*args)


def test_error_names_index():
    with pytest.raises(ValueError, match=r"c=5 > n=4 at index \(1,\)"):
        pass_at_k([4, 4], [1, 5], 1)


# ------------------------------------------------------------------------------------------------ stability


@pytest.mark.parametrize(
    "n,c,k",
    [(10_000, 9_990, 100), (10_000, 1, 1), (10_000, 5, 100), (10_000, 9_999, 1), (10_000, 50, 1_000),
     (10_000, 9_000, 1_000), (10_000, 9_990, 5_000), (10_000, 3, 9_997), (1_000_000, 999_000, 200)],
)  # fmt: skip
def test_stability_against_exact_rationals(n, c, k):
    at, hat = exact_at(n, c, k), exact_hat(n, c, k)
    got_at, got_hat = pass_at_k(n, c, k), pass_hat_k(n, c, k)
    assert np.isfinite(got_at) and np.isfinite(got_hat)
    # relative accuracy of pass@k (including values near 0, where 1 - x would cancel) and of pass^k
    assert got_at == pytest.approx(float(at), rel=1e-9, abs=0)
    assert got_hat == pytest.approx(float(hat), rel=1e-9, abs=1e-300)


def test_small_pass_at_k_relative_accuracy():
    # pass@1 with one success in 10,000: 1e-4 exactly, to full relative precision (no 1 - x cancellation)
    assert pass_at_k(10_000, 1, 1) == pytest.approx(1e-4, rel=1e-14)
    assert pass_at_k(10_000, 1, 50) == pytest.approx(float(exact_at(10_000, 1, 50)), rel=1e-13)


# ------------------------------------------------------------------------------------------------ plug-in


def test_plugin_estimators():
    for n, c, k in [(10, 7, 3), (4, 1, 2), (2, 0, 5), (2, 2, 5), (3, 1, 8)]:
        p = Fraction(c, n)
        assert plugin_pass_hat_k(n, c, k) == pytest.approx(float(p**k), rel=1e-14, abs=1e-300)
        assert plugin_pass_at_k(n, c, k) == pytest.approx(float(1 - (1 - p) ** k), rel=1e-14, abs=0)
    assert plugin_pass_at_k(2, 0, 5) == 0.0 and math.copysign(1, plugin_pass_at_k(2, 0, 5)) == 1
    assert math.isnan(plugin_pass_at_k(0, 0, 1))
    # Jensen: plug-in pass^k is biased up, plug-in pass@k biased down (relative to the unbiased values)
    n, c = np.meshgrid(np.arange(2, 9), np.arange(0, 9), indexing="ij")
    ok = c <= n
    n, c = n[ok], c[ok]
    assert np.all(plugin_pass_hat_k(n, c, 2) >= pass_hat_k(n, c, 2) - 1e-15)
    assert np.all(plugin_pass_at_k(n, c, 2) <= pass_at_k(n, c, 2) + 1e-15)


# ------------------------------------------------------------------------------------------------ Beta posterior


@pytest.mark.parametrize(
    "n,c,k,prior",
    [(10, 7, 3, (1, 1)), (4, 0, 5, (1, 1)), (8, 8, 2, (0.5, 0.5)), (0, 0, 3, (2, 3)), (100, 37, 10, (1, 1))],
)
def test_beta_moments_vs_quadrature(n, c, k, prior):
    a, b = prior[0] + c, prior[1] + n - c
    dens = stats.beta(a, b).pdf
    e_hat = integrate.quad(lambda p: p**k * dens(p), 0, 1, epsabs=1e-13, epsrel=1e-12, limit=200)[0]
    e_at = integrate.quad(lambda p: (1 - (1 - p) ** k) * dens(p), 0, 1, epsabs=1e-13, epsrel=1e-12, limit=200)[0]
    row = beta_pass_k(n, c, k, prior=prior).iloc[0]
    assert row.pass_hat_k_mean == pytest.approx(e_hat, rel=1e-8, abs=1e-12)
    assert row.pass_at_k_mean == pytest.approx(e_at, rel=1e-8, abs=1e-12)
    assert (row.post_a, row.post_b) == (a, b)


@pytest.mark.parametrize("n,c,k", [(10, 7, 3), (4, 0, 2), (4, 4, 6), (30, 12, 5)])
def test_beta_eti_tail_masses(n, c, k):
    row = beta_pass_k(n, c, k, ci_prob=0.9).iloc[0]
    post = stats.beta(1 + c, 1 + n - c)
    # P(p^k <= lo) = P(p <= lo^(1/k)) = 0.05, etc.
    assert post.cdf(row.pass_hat_k_ci_low ** (1 / k)) == pytest.approx(0.05, abs=1e-9)
    assert post.sf(row.pass_hat_k_ci_high ** (1 / k)) == pytest.approx(0.05, abs=1e-9)
    # pass@k = 1-(1-p)^k <= y  <=>  p <= 1 - (1-y)^(1/k); 1 - y loses digits in this check when y is within
    # ~1e-14 of 1 (case 4, 4, 6), hence the looser tolerance
    assert post.cdf(1 - (1 - row.pass_at_k_ci_low) ** (1 / k)) == pytest.approx(0.05, abs=1e-5)
    assert post.sf(1 - (1 - row.pass_at_k_ci_high) ** (1 / k)) == pytest.approx(0.05, abs=1e-5)
    assert row.pass_hat_k_ci_low <= row.pass_hat_k_mean <= row.pass_hat_k_ci_high


def _grid_hdi(a: float, b: float, k: int, prob: float, cells: int = 400_000) -> tuple[float, float]:
    """Brute-force HDI of Z = X^k, X ~ Beta(a, b): exact cell masses on a fine z grid, densest cells first."""
    z = np.linspace(0.0, 1.0, cells + 1)
    mass = np.diff(stats.beta.cdf(z ** (1.0 / k), a, b))
    order = np.argsort(-mass / np.diff(z), kind="stable")
    cum = np.cumsum(mass[order])
    chosen = order[: int(np.searchsorted(cum, prob)) + 1]
    return float(z[chosen.min()]), float(z[chosen.max() + 1])


@pytest.mark.parametrize(
    "n,c,k,prior",
    [(10, 7, 3, (1, 1)), (20, 5, 2, (1, 1)), (6, 6, 4, (1, 1)), (5, 0, 1, (1, 1)), (8, 3, 12, (0.5, 0.5))],
)
def test_beta_hdi_vs_grid_search(n, c, k, prior):
    row = beta_pass_k(n, c, k, prior=prior, ci_kind="hdi").iloc[0]
    assert row.ci_kind == "hdi"
    a, b = prior[0] + c, prior[1] + n - c
    lo, hi = _grid_hdi(a, b, k, 0.95)
    assert row.pass_hat_k_ci_low == pytest.approx(lo, abs=2e-4)
    assert row.pass_hat_k_ci_high == pytest.approx(hi, abs=2e-4)
    zlo, zhi = _grid_hdi(b, a, k, 0.95)  # (1-p)^k with 1-p ~ Beta(b, a); pass@k = 1 - (1-p)^k
    assert row.pass_at_k_ci_low == pytest.approx(1 - zhi, abs=2e-4)
    assert row.pass_at_k_ci_high == pytest.approx(1 - zlo, abs=2e-4)
    eti = beta_pass_k(n, c, k, prior=prior).iloc[0]
    assert row.pass_hat_k_ci_high - row.pass_hat_k_ci_low <= eti.pass_hat_k_ci_high - eti.pass_hat_k_ci_low + 1e-12
    # the HDI holds exactly ci_prob of posterior mass
    post = stats.beta(a, b)
    mass = post.cdf(row.pass_hat_k_ci_high ** (1 / k)) - post.cdf(row.pass_hat_k_ci_low ** (1 / k))
    assert mass == pytest.approx(0.95, abs=1e-9)


def test_beta_broadcast_plugin_columns_and_errors():
    df = beta_pass_k(np.array([10, 4]), np.array([7, 2]), np.array([[1], [3]]))
    assert list(zip(df.n, df.c, df.k, strict=True)) == [(10, 7, 1), (4, 2, 1), (10, 7, 3), (4, 2, 3)]
    assert df.plugin_pass_hat_k.iloc[2] == pytest.approx(0.343)
    assert df.plugin_pass_at_k.iloc[2] == pytest.approx(1 - 0.3**3)
    # k = 1: posterior mean of p is (a + c) / (a + b + n)
    assert df.pass_hat_k_mean.iloc[0] == pytest.approx(8 / 12) and df.pass_at_k_mean.iloc[1] == pytest.approx(0.5)
    assert math.isnan(beta_pass_k(0, 0, 2).plugin_pass_hat_k.iloc[0])
    for bad in [dict(prior=(0, 1)), dict(prior=(1, -1)), dict(prior=(1,)), dict(ci_prob=1.0), dict(ci_prob=0)]:
        with pytest.raises(ValueError, match="beta_pass_k"):
            beta_pass_k(10, 7, 3, **bad)
    with pytest.raises(ValueError, match="c must be <= n"):
        beta_pass_k(3, 4, 1)


# ------------------------------------------------------------------------------------------------ suite values


def _counts(rows):
    return pd.DataFrame(rows, columns=["agent", "task_id", "n", "c", "n_missing"])


def test_suite_hand_computed_means_se_and_drops():
    counts = _counts(
        [("A", "t1", 4, 2, 0), ("A", "t2", 4, 4, 0), ("A", "t3", 2, 1, 2), ("A", "t4", 0, 0, 4),
         ("B", "t1", 3, 0, 1), ("B", "t2", 3, 3, 0)]
    )  # fmt: skip
    out = suite_pass_k(counts, n_boot=200, random_seed=1)
    a = out[out.agent == "A"].set_index("k")
    assert list(a.index) == [1, 2]  # default: 1 .. min n among tasks with n >= 1
    assert (a.n_tasks == 3).all() and (a.n_tasks_dropped == 0).all()
    missing4 = "all 4 trials missing (infra_error or judge_missing)"
    assert a.loc[1, "excluded_tasks"] == [{"task_id": "t4", "reason": missing4}]
    assert a.loc[1, "n_tasks_excluded"] == 1
    # per-task values by hand: pass^2 = C(2,2)/C(4,2), C(4,2)/C(4,2), C(1,2)/C(2,2)
    hat2 = [1 / 6, 1.0, 0.0]
    at2 = [1 - 1 / 6, 1.0, 1.0]
    assert a.loc[2, "pass_hat_k"] == pytest.approx(statistics.fmean(hat2))
    assert a.loc[2, "pass_at_k"] == pytest.approx(statistics.fmean(at2))
    assert a.loc[2, "pass_hat_k_se"] == pytest.approx(statistics.stdev(hat2) / math.sqrt(3))
    assert a.loc[2, "pass_at_k_se"] == pytest.approx(statistics.stdev(at2) / math.sqrt(3))
    assert a.loc[1, "pass_at_k"] == pytest.approx((0.5 + 1 + 0.5) / 3)  # not pooled 7/10
    assert a.loc[1, "n_trials"] == 10 and a.loc[1, "n_missing"] == 2
    b = out[out.agent == "B"].set_index("k")
    assert list(b.index) == [1, 2, 3]
    assert b.loc[3, "pass_hat_k"] == pytest.approx(0.5) and b.loc[3, "pass_at_k"] == pytest.approx(0.5)
    assert list(out.agent) == ["A", "A", "B", "B", "B"]


def test_suite_explicit_k_drops_tasks_with_fewer_trials():
    counts = _counts(
        [("A", "t1", 8, 2, 0), ("A", "t2", 8, 8, 0), ("A", "t3", 1, 1, 0), ("A", "t4", 3, 0, 0), ("A", "t5", 0, 0, 2)]
    )
    out = suite_pass_k(counts, k=[1, 2, 4, 8, 9], n_boot=100).set_index("k")
    assert list(out.n_tasks) == [4, 3, 2, 2, 0]
    assert out.loc[2, "dropped_tasks"] == ["t3"]
    assert out.loc[4, "dropped_tasks"] == ["t3", "t4"] and out.loc[4, "n_tasks_dropped"] == 2
    assert all(x == [{"task_id": "t5", "reason": "all 2 trials missing (infra_error or judge_missing)"}]
               for x in out.excluded_tasks)
    # k = 4 uses only t1, t2: (C(2,4)/C(8,4) + 1) / 2; the c = 0 task t4 (n = 3 < 4) is dropped, not counted as 0
    assert out.loc[4, "pass_hat_k"] == pytest.approx(0.5)
    assert out.loc[4, "pass_at_k"] == pytest.approx((float(exact_at(8, 2, 4)) + 1) / 2)
    assert out.loc[2, "pass_hat_k"] == pytest.approx((float(exact_hat(8, 2, 2)) + 1 + 0) / 3)
    assert math.isnan(out.loc[9, "pass_hat_k"]) and math.isnan(out.loc[9, "pass_hat_k_ci_low"])
    assert out.loc[9, "n_trials"] == 0
    # a single scalar k is accepted too
    assert list(suite_pass_k(counts, k=2, n_boot=100).k) == [2]


def test_bootstrap_kernel_two_tasks_is_min_max():
    # With T = 2 tasks the bootstrap mean is v1 (prob 1/4), (v1+v2)/2 (1/2) or v2 (1/4), so the 2.5% / 97.5%
    # percentiles are exactly min and max.
    v = np.array([[float(exact_hat(4, 1, 2))], [float(exact_hat(4, 3, 2))]])
    boot = bootstrap.bootstrap_means(v, 4000, np.random.default_rng(3))
    lo, hi = bootstrap.percentile_interval(boot, 0.95)
    assert (lo[0], hi[0]) == (pytest.approx(v.min()), pytest.approx(v.max()))
    # the share of resamples at each of the three possible means is 1/4, 1/2, 1/4 (multinomial weights)
    shares = [np.mean(np.isclose(boot[:, 0], x)) for x in (v.min(), v.mean(), v.max())]
    np.testing.assert_allclose(shares, [0.25, 0.5, 0.25], atol=0.03)


def test_suite_with_few_tasks_uses_the_boundary_interval():
    # fewer than 10 tasks cannot hold 5 tasks' worth of both successes and failures: boundary interval
    counts = _counts([("A", "x", 4, 1, 0), ("A", "y", 4, 3, 0)])
    row = suite_pass_k(counts, k=[2], n_boot=4000, random_seed=3).iloc[0]
    x = float(exact_hat(4, 1, 2)) + float(exact_hat(4, 3, 2))  # success mass over T = 2 tasks: 1/6 + 1/2
    assert row.pass_hat_k_ci_method == "Clopper-Pearson"
    # Beta quantiles of the exact binomial interval, extended to a real success count (Clopper & Pearson 1934)
    assert row.pass_hat_k_ci_low == pytest.approx(stats.beta.ppf(0.025, x, 2 - x + 1), rel=1e-12)
    assert row.pass_hat_k_ci_high == pytest.approx(stats.beta.ppf(0.975, x + 1, 2 - x), rel=1e-12)


def test_suite_bootstrap_matches_normal_theory_for_many_tasks():
    rng = np.random.default_rng(42)
    p = rng.beta(2, 2, size=500)
    n = np.full(500, 6)
    c = rng.binomial(n, p)
    counts = pd.DataFrame({"agent": "A", "task_id": np.arange(500), "n": n, "c": c, "n_missing": 0})
    row = suite_pass_k(counts, k=[3], n_boot=4000, random_seed=5).iloc[0]
    vals = [float(exact_hat(6, int(ci), 3)) for ci in c]
    se = statistics.stdev(vals) / math.sqrt(500)
    assert row.pass_hat_k_se == pytest.approx(se, rel=1e-12)
    width = row.pass_hat_k_ci_high - row.pass_hat_k_ci_low
    assert width == pytest.approx(2 * 1.959964 * se * math.sqrt(499 / 500), rel=0.1)
    assert row.pass_hat_k_ci_low < statistics.fmean(vals) < row.pass_hat_k_ci_high


def test_suite_deterministic_with_seed_and_independent_of_other_agents():
    rng = np.random.default_rng(7)
    rows = [(ag, f"t{i}", 5, int(rng.integers(0, 6)), 0) for ag in ("A", "B") for i in range(30)]
    counts = _counts(rows)
    first = suite_pass_k(counts, k=[1, 2, 3], n_boot=300, random_seed=11)
    again = suite_pass_k(counts, k=[1, 2, 3], n_boot=300, random_seed=11)
    pd.testing.assert_frame_equal(first, again, check_exact=False, rtol=1e-12)
    other = suite_pass_k(counts, k=[1, 2, 3], n_boot=300, random_seed=12)
    assert not np.allclose(first.pass_hat_k_ci_low, other.pass_hat_k_ci_low)
    only_b = suite_pass_k(counts[counts.agent == "B"], k=[2], n_boot=300, random_seed=11)
    full_b = first[(first.agent == "B") & (first.k == 2)]
    # Same resamples whatever else is in the call; the bootstrap's matrix product may round differently (by an ulp)
    # with the number of columns, depending on the BLAS kernel of the CPU, so compare with a tolerance.
    assert only_b.pass_at_k_ci_low.iloc[0] == pytest.approx(full_b.pass_at_k_ci_low.iloc[0], rel=1e-12)
    assert only_b.pass_hat_k_ci_high.iloc[0] == pytest.approx(full_b.pass_hat_k_ci_high.iloc[0], rel=1e-12)
    assert first.attrs["random_seed"] == 11 and first.attrs["n_boot"] == 300


def test_suite_small_and_empty_cases():
    counts = _counts([("A", "t1", 3, 1, 0), ("Z", "t1", 0, 0, 3)])
    out = suite_pass_k(counts, n_boot=100)
    a = out[out.agent == "A"]
    assert a.n_tasks.iloc[0] == 1 and a.pass_at_k.iloc[0] == pytest.approx(1 / 3)
    assert a.pass_at_k_se.isna().all() and a.pass_at_k_ci_low.isna().all()  # one cluster: no spread
    z = out[out.agent == "Z"]
    assert list(z.k) == [1] and z.n_tasks.iloc[0] == 0 and z.pass_hat_k.isna().all()
    assert [e["task_id"] for e in z.excluded_tasks.iloc[0]] == ["t1"]
    # n_boot = 0 skips the bootstrap; where the boundary interval applies (here pass@2 = 1 on every task) the
    # Clopper-Pearson interval needs no resampling and is still given
    rows = [("A", f"t{i}", 2, i % 3 // 2 + 1, 0) for i in range(30)]  # c = 1, 1, 2, ...: 10 tasks at c = 2
    nb = suite_pass_k(_counts(rows), n_boot=0).set_index("k")
    assert nb.pass_at_k_se.notna().all()
    assert math.isnan(nb.loc[1, "pass_at_k_ci_low"]) and pd.isna(nb.loc[1, "pass_at_k_ci_method"])
    assert nb.loc[2, "pass_at_k_ci_method"] == "Clopper-Pearson" and nb.loc[2, "pass_at_k_ci_high"] == 1.0
    # n_missing is optional
    plain = suite_pass_k(pd.DataFrame({"agent": ["A"], "task_id": ["t"], "n": [2], "c": [1]}), n_boot=0)
    assert plain.n_missing.iloc[0] == 0


@pytest.mark.parametrize(
    "rows,pattern",
    [
        ([("A", "t1", 3, 4, 0)], r"row 0 \(agent='A', task_id='t1'\): field 'c' = 4 > n = 3"),
        ([("A", "t1", -1, 0, 0)], r"field 'n' = -1 is not a non-negative integer"),
        ([("A", "t1", 3, 1.5, 0)], r"field 'c' = 1.5 is not a non-negative integer"),
        ([("A", "t1", 3, 1, 0), ("A", "t1", 2, 1, 0)], r"rows \[0, 1\]: duplicate \(agent='A', task_id='t1'\)"),
        ([("A", None, 3, 1, 0)], r"field 'task_id' is missing"),
    ],
)
def test_suite_rejects_bad_counts(rows, pattern):
    with pytest.raises(ValueError, match=pattern):
        suite_pass_k(_counts(rows), n_boot=0)


def test_suite_rejects_bad_arguments():
    good = _counts([("A", "t1", 3, 1, 0)])
    with pytest.raises(ValueError, match="lacks column"):
        suite_pass_k(good.drop(columns="c"))
    with pytest.raises(TypeError):
        suite_pass_k([("A", "t1", 3, 1, 0)])
    for kw in [dict(k=0), dict(k=[1, 2.5]), dict(k=[]), dict(n_boot=-1), dict(ci_prob=1.5), dict(random_seed=-3)]:
        with pytest.raises(ValueError, match="suite_pass_k"):
            suite_pass_k(good, **kw)


def test_too_few_bootstrap_resamples_are_refused():
    # n_boot=1 gave a zero-width "95% interval" at one resample's mean, which could exclude the estimate
    from agentstats.estimators import paired_pass_k

    counts = _counts([("A", f"t{i}", 4, i % 5, 0) for i in range(12)] + [("B", f"t{i}", 4, 2, 0) for i in range(12)])
    for n_boot in (1, 10, 99):
        expected = rf"suite_pass_k: n_boot must be 0 \(no bootstrap\) or >= 100, got {n_boot}:"
        with pytest.raises(ValueError, match=expected):
            suite_pass_k(counts, k=1, n_boot=n_boot)
        with pytest.raises(ValueError, match="paired_pass_k: n_boot must be 0"):
            paired_pass_k(counts, "A", "B", k=1, n_boot=n_boot)
    # 0 still means "no bootstrap" (intervals NaN away from the boundary); 100 is accepted
    assert suite_pass_k(counts, k=1, n_boot=0)["pass_at_k_ci_low"].isna().any()
    row = suite_pass_k(counts, k=1, n_boot=100, random_seed=0).iloc[0]
    assert row["pass_at_k_ci_low"] <= row["pass_at_k"] <= row["pass_at_k_ci_high"]


# ------------------------------------------------------------------------------------------------ real data


def _tau_counts() -> pd.DataFrame:
    """tau-bench gpt-4o airline counts (fixture derived from ../shared/data by tests/data/make_fixtures.py)."""
    return pd.read_csv(FIXTURES / "tau_bench_gpt4o_airline_counts.csv", dtype={"task_id": str}).assign(n_missing=0)


def test_tau_bench_published_pass_hat_k():
    counts = _tau_counts()
    out = suite_pass_k(counts, n_boot=500, random_seed=0).set_index("k")
    assert list(out.index) == [1, 2, 3, 4] and (out.n_tasks == 50).all()
    # tau-bench README leaderboard, TC (gpt-4o), airline
    published = {1: 0.420, 2: 0.273, 3: 0.220, 4: 0.200}
    for k, v in published.items():
        assert round(out.loc[k, "pass_hat_k"], 3) == pytest.approx(v, abs=1e-12)
        assert out.loc[k, "pass_hat_k_ci_low"] < out.loc[k, "pass_hat_k"] < out.loc[k, "pass_hat_k_ci_high"]


def test_metr_unequal_trial_counts_drop_logic():
    counts = pd.read_csv(FIXTURES / "metr_counts.csv")
    counts = counts[counts.agent != "human"].reset_index(drop=True)
    counts["n_missing"] = 0
    out = suite_pass_k(counts, k=range(1, 9), n_boot=100, random_seed=0)
    assert out.agent.nunique() == 10
    for (agent, k), row in out.set_index(["agent", "k"]).iterrows():
        cell = counts[counts.agent == agent]
        assert row.n_tasks == int((cell.n >= k).sum())
        assert set(row.dropped_tasks) == set(cell.task_id[cell.n < k])
        kept = cell[cell.n >= k]
        if len(kept):
            ref = statistics.fmean(float(exact_hat(int(a), int(b), k)) for a, b in zip(kept.n, kept.c, strict=True))
            assert row.pass_hat_k == pytest.approx(ref, rel=1e-12, abs=1e-15)


def test_product_and_betaln_paths_agree(monkeypatch):
    n, c, k = np.array([300, 1000, 5000]), np.array([250, 10, 4990]), np.array([200, 150, 100])
    ref_at, ref_hat = pass_at_k(n, c, k), pass_hat_k(n, c, k)
    monkeypatch.setattr(unbiased, "_K_PRODUCT_MAX", 0)  # force the betaln identity
    np.testing.assert_allclose(pass_at_k(n, c, k), ref_at, rtol=1e-10)
    np.testing.assert_allclose(pass_hat_k(n, c, k), ref_hat, rtol=1e-10)
    for i in range(3):
        assert pass_hat_k(int(n[i]), int(c[i]), int(k[i])) == pytest.approx(
            float(exact_hat(int(n[i]), int(c[i]), int(k[i]))), rel=1e-10
        )


# ------------------------------------------------------------------------------------------------ boundary interval


@pytest.mark.parametrize(
    "x,n,lo,hi",
    # Newcombe 1998, "Two-sided confidence intervals for the single proportion: comparison of seven methods",
    # Statistics in Medicine 17:857-872, Table II, method 5 (exact, Clopper-Pearson)
    [(81, 263, 0.2527, 0.3676), (15, 148, 0.0578, 0.1617), (0, 20, 0.0, 0.1684), (1, 29, 0.0009, 0.1776)],
)
def test_clopper_pearson_published_values(x, n, lo, hi):
    got_lo, got_hi = clopper_pearson_interval(x / n, n)
    assert float(got_lo) == pytest.approx(lo, abs=6e-5) and float(got_hi) == pytest.approx(hi, abs=6e-5)


def test_clopper_pearson_matches_scipy_and_tail_sums():
    for n, prob in ((1, 0.95), (7, 0.8), (16, 0.95)):
        for x in range(n + 1):
            ref = stats.binomtest(x, n).proportion_ci(prob, method="exact")
            lo, hi = clopper_pearson_interval(x / n, n, prob)
            assert float(lo) == pytest.approx(ref.low, abs=1e-12)
            assert float(hi) == pytest.approx(ref.high, abs=1e-12)
    # integer x: the limits solve the binomial tail equations P(X >= x | lo) = P(X <= x | hi) = (1 - prob) / 2
    lo, hi = clopper_pearson_interval(3 / 12, 12)
    assert stats.binom.sf(2, 12, float(lo)) == pytest.approx(0.025, rel=1e-9)
    assert stats.binom.cdf(3, 12, float(hi)) == pytest.approx(0.025, rel=1e-9)
    # all-zero mean over T: [0, 1 - (alpha/2)^(1/T)]
    assert float(clopper_pearson_interval(0.0, 10)[1]) == pytest.approx(1 - 0.025 ** (1 / 10), rel=1e-12)
    with pytest.raises(ValueError, match="clopper_pearson_interval"):
        clopper_pearson_interval(1.2, 10)
    with pytest.raises(ValueError, match="clopper_pearson_interval"):
        clopper_pearson_interval(0.5, 0)


@pytest.mark.parametrize("c", [0, 5])
def test_all_zero_or_all_one_data_get_a_positive_width_interval(c):
    # 10 tasks x 5 trials, c = 0 (or c = n) everywhere: the bootstrap interval would be [0, 0] with SE 0
    counts = _counts([("A", f"t{i}", 5, c, 0) for i in range(10)])
    out = suite_pass_k(counts, n_boot=500)
    edge = 1 - 0.025 ** (1 / 10)  # exact binomial limit for 0 successes in T = 10: 1 - (alpha/2)^(1/T) = 0.3085
    assert list(out.k) == [1, 2, 3, 4, 5]
    for q in ("pass_at_k", "pass_hat_k"):
        assert (out[f"{q}_ci_method"] == "Clopper-Pearson").all()
        assert (out[f"{q}_se"] == 0).all()
        if c == 0:
            assert (out[q] == 0).all() and (out[f"{q}_ci_low"] == 0).all()
            np.testing.assert_allclose(out[f"{q}_ci_high"], edge, rtol=1e-12)
        else:
            assert (out[q] == 1).all() and (out[f"{q}_ci_high"] == 1).all()
            np.testing.assert_allclose(out[f"{q}_ci_low"], 1 - edge, rtol=1e-12)
    assert out.attrs["ci_method"] == "Clopper-Pearson"


def test_near_boundary_values_get_the_boundary_interval():
    # eight tasks whose pass@8 is within 4e-4 of 1 (the METR human baseline at k = 8): the bootstrap interval would
    # be about 1e-4 wide; under 5 tasks' worth of failures, the boundary interval is used instead
    cells = [(17, 9), (12, 8), (17, 8), (12, 7), (14, 9), (11, 7), (10, 4), (8, 7)]
    counts = _counts([("human", f"t{i}", n, c, 0) for i, (n, c) in enumerate(cells)])
    row = suite_pass_k(counts, k=[8], n_boot=500).iloc[0]
    assert row.pass_at_k_ci_method == "Clopper-Pearson"
    lo, hi = clopper_pearson_interval(row.pass_at_k, 8)
    assert (row.pass_at_k_ci_low, row.pass_at_k_ci_high) == (pytest.approx(float(lo)), pytest.approx(float(hi)))
    assert row.pass_at_k_ci_high - row.pass_at_k_ci_low > 0.25


def test_interior_values_keep_the_bootstrap():
    counts = _tau_counts()
    out = suite_pass_k(counts, n_boot=300)
    assert (out.pass_hat_k_ci_method == "percentile bootstrap").all()
    assert out.attrs["ci_method"] == "percentile bootstrap"


def _many_runs(p: float, n_tasks: int, n_trials: int, reps: int, seed: int) -> pd.DataFrame:
    """``reps`` simulated data sets as agents r0, r1, ... of one counts table (all tasks with success prob. p)."""
    rng = np.random.default_rng(seed)
    c = rng.binomial(n_trials, p, size=(reps, n_tasks))
    return pd.DataFrame(
        {
            "agent": np.repeat([f"r{i}" for i in range(reps)], n_tasks),
            "task_id": np.tile([f"t{j}" for j in range(n_tasks)], reps),
            "n": n_trials,
            "c": c.ravel(),
        }
    )


@pytest.mark.parametrize("p,k,quantity", [(0.01, 1, "pass_at_k"), (0.99, 1, "pass_hat_k"), (0.99, 5, "pass_hat_k"),
                                          (0.01, 5, "pass_at_k")])  # fmt: skip
def test_boundary_interval_coverage_by_simulation(p, k, quantity):
    # 200 data sets of 10 tasks x 5 trials near the boundary; the truth is known exactly
    truth = 1 - (1 - p) ** k if quantity == "pass_at_k" else p**k
    counts = _many_runs(p, 10, 5, 200, seed=20)
    out = suite_pass_k(counts, k=[k], n_boot=200, random_seed=1)
    lo, hi = out[f"{quantity}_ci_low"].to_numpy(), out[f"{quantity}_ci_high"].to_numpy()
    assert np.all(hi - lo > 0)
    coverage = np.mean((lo <= truth) & (truth <= hi))
    assert coverage >= 0.93, coverage
    # the plain percentile bootstrap on the same data misses often (zero-width intervals at 0 or 1)
    boot_hits = 0
    for _, g in counts.groupby("agent", sort=False):
        v = (pass_at_k if quantity == "pass_at_k" else pass_hat_k)(g.n.to_numpy(), g.c.to_numpy(), k)[:, None]
        b_lo, b_hi = bootstrap.percentile_interval(bootstrap.bootstrap_means(v, 200, np.random.default_rng(0)), 0.95)
        boot_hits += bool(b_lo[0] <= truth <= b_hi[0])
    assert boot_hits / 200 < 0.75


# ------------------------------------------------------------------------------------------------ k coverage


def test_task_coverage_columns_on_metr():
    counts = pd.read_csv(FIXTURES / "metr_counts.csv")
    out = suite_pass_k(counts, k=[1, 2, 8], n_boot=0)
    suite = set(counts.task_id)
    # independent count: pivot to agents x all suite tasks, absent cells have n = 0
    n = counts.pivot(index="agent", columns="task_id", values="n").reindex(columns=sorted(suite)).fillna(0)
    for _, row in out.iterrows():
        below = int((n.loc[row.agent] < row.k).sum())
        assert row.n_tasks_suite == len(suite) == 83
        assert row.n_tasks == 83 - below
        assert row.extrapolated == pytest.approx(below / 83)
        assert row.under_half == (row.n_tasks < 41.5)
        assert row.n_tasks_excluded + row.n_tasks_dropped == below
    davinci = out[(out.agent == "davinci-002") & (out.k == 1)].iloc[0]
    assert davinci.n_tasks == 16 and davinci.under_half and davinci.extrapolated == pytest.approx(67 / 83)
    assert {e["reason"] for e in davinci.excluded_tasks} == {"not run by this agent (other agents ran it)"}
    assert len(davinci.excluded_tasks) == 67
    # the value at k = 8 rests on fewer tasks than at k = 1 (tasks with fewer than 8 runs drop out)
    gpt4 = out[out.agent == "GPT-4 0314"].set_index("k")
    assert gpt4.loc[8, "under_half"] and not gpt4.loc[1, "under_half"]


def test_excluded_task_reasons():
    counts = _counts([("A", "t1", 3, 1, 0), ("A", "t2", 0, 0, 3), ("A", "t3", 0, 0, 0), ("B", "t4", 2, 1, 0)])
    out = suite_pass_k(counts, n_boot=0)
    a = out[out.agent == "A"].iloc[0]
    assert a.excluded_tasks == [
        {"task_id": "t2", "reason": "all 3 trials missing (infra_error or judge_missing)"},
        {"task_id": "t3", "reason": "no trial recorded (n = 0)"},
        {"task_id": "t4", "reason": "not run by this agent (other agents ran it)"},
    ]
    assert a.n_tasks == 1 and a.n_tasks_suite == 4 and a.extrapolated == 0.75 and a.under_half


# ------------------------------------------------------------------------------------------------ conventions


def test_random_seed_int_generator_and_no_seed_alias():
    counts = _tau_counts()
    base = suite_pass_k(counts, k=[1, 2], n_boot=300, random_seed=7)
    assert base.attrs["random_seed"] == 7
    with pytest.raises(TypeError, match="seed"):  # the deprecated alias `seed=` is gone (0.1.0)
        suite_pass_k(counts, k=[1, 2], n_boot=300, seed=7)  # type: ignore[call-arg]
    # a Generator contributes one draw as the integer seed, recorded in attrs: replaying that integer reproduces it
    gen_out = suite_pass_k(counts, k=[1, 2], n_boot=300, random_seed=np.random.default_rng(5))
    expected_seed = int(np.random.default_rng(5).integers(0, 2**63))
    assert gen_out.attrs["random_seed"] == expected_seed
    replay = suite_pass_k(counts, k=[1, 2], n_boot=300, random_seed=expected_seed)
    pd.testing.assert_frame_equal(gen_out, replay)
    fresh = suite_pass_k(counts, k=[1], n_boot=100, random_seed=None)
    assert 0 <= fresh.attrs["random_seed"] < 2**63
    for bad in (-1, 1.5, "3", True):
        with pytest.raises(ValueError, match="random_seed"):
            suite_pass_k(counts, n_boot=100, random_seed=bad)


def test_interval_vocabulary():
    counts = _tau_counts()
    out = suite_pass_k(counts, k=[1], n_boot=200, ci_prob=0.8)
    assert out.ci_kind.iloc[0] == "eti" and out.ci_prob.iloc[0] == 0.8 and out.attrs["ci_kind"] == "eti"
    with pytest.raises(ValueError, match="equal-tailed"):
        suite_pass_k(counts, ci_kind="hdi")
    with pytest.raises(ValueError, match="ci_kind"):
        beta_pass_k(10, 7, 3, ci_kind="shortest")
    with pytest.raises(TypeError, match="hdi"):  # the deprecated alias `hdi=` is gone: ci_kind="hdi"
        beta_pass_k(10, 7, 3, hdi=True)  # type: ignore[call-arg]
    assert beta_pass_k(10, 7, 3, ci_kind="hdi").ci_kind.iloc[0] == "hdi"

"""corrected_pass_k at the boundary: the exact misclassification posterior, checked by numerical integration.

Expected values are computed here by scipy.integrate over the calibration posteriors of sensitivity and specificity
(``Beta(1 + TP, 1 + FN)``, ``Beta(1 + TN, 1 + FP)``) and the true pass probability, independently of
:mod:`agentstats.estimators.corrected`. The inner integrals over ``p`` are Gauss-Legendre rules of an order that is
exact for their polynomial integrands.
"""

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, stats

from agentstats.calibration import JudgeError, corrected_pass_k

SE = SP = stats.beta(96, 6)  # TP 95 / FN 5 / TN 95 / FP 5 with a uniform prior


def _outer(inner):
    """``E_{se, sp}[inner(se, sp)]`` under the calibration posteriors (their mass below 0.6 is below 1e-20)."""
    return integrate.dblquad(lambda sp, se: SE.pdf(se) * SP.pdf(sp) * inner(se, sp), 0.6, 1, 0.6, 1,
                             epsabs=0, epsrel=1e-6)[0]


def _p_integral(se, sp, g, c, n, upper=1.0):
    """``int_0^upper g(p) q^c (1 - q)^(n - c) dp`` with ``q = (1 - sp) + (se + sp - 1) p``: exact Gauss-Legendre."""
    d = se + sp - 1
    return integrate.fixed_quad(lambda p: g(p) * (1 - sp + d * p) ** c * (sp - d * p) ** (n - c), 0, upper, n=80)[0]


@pytest.mark.slow
def test_the_issues_example_against_numerical_integration():
    # issue 31: calibration TP 95 / FN 5 / TN 95 / FP 5, 100 of 100 verdicts "pass" (one trial per task).
    # Rogan-Gladen gives 1.056 and every bootstrap replicate above 1 (the clipped interval was [1, 1]).
    counts = pd.DataFrame({"agent": "a", "task_id": [f"t{i}" for i in range(100)], "n": 1, "c": 1})
    row = corrected_pass_k(counts, JudgeError.from_counts(95, 5, 95, 5), n_boot=4000, random_seed=5).iloc[0]
    assert row["pass_hat_k_raw"] == pytest.approx((1 + 0.95 - 1) / 0.9)
    assert row["pass_hat_k_method"] == row["pass_at_k_method"] == "exact_posterior"
    # posterior of the true mean p under a uniform prior: q(p)^100 pi(se) pi(sp)
    z = _outer(lambda se, sp: _p_integral(se, sp, lambda p: 1.0, 100, 100))
    mean = _outer(lambda se, sp: _p_integral(se, sp, lambda p: p, 100, 100)) / z
    assert mean == pytest.approx(0.9896, abs=5e-4)  # the issue's "about 0.990"
    assert row["pass_hat_k"] == pytest.approx(mean, abs=1.5e-3)  # posterior sd 0.010, 4000 draws
    for bound, tail in (("ci_low", 0.025), ("ci_high", 0.975)):
        x = row[f"pass_hat_k_{bound}"]
        cdf = _outer(lambda se, sp, x=x: _p_integral(se, sp, lambda p: 1.0, 100, 100, upper=x)) / z
        assert cdf == pytest.approx(tail, abs=0.008)
    assert 0.95 < row["pass_hat_k_ci_low"] < 0.97 and 0.999 < row["pass_hat_k_ci_high"] < 1.0  # never [1, 1]
    assert row["pass_at_k"] == row["pass_hat_k"] and row["pass_at_k_ci_low"] == row["pass_hat_k_ci_low"]


@pytest.mark.slow
@pytest.mark.parametrize("k", [2, 3])
def test_k_above_one_at_the_boundary_against_numerical_integration(k):
    # 4 tasks, each 5 of 5 verdicts "pass": Rogan-Gladen pass^k is above 1. Exact model: one (se, sp) for all
    # tasks, uniform priors on each task's p; the suite value is the Dirichlet-process mean over tasks with prior
    # mass 1 at 0 and 1 at 1, so E[suite] = (4 E[g(p_t)] + 1) / 6.
    counts = pd.DataFrame({"agent": "a", "task_id": list("wxyz"), "n": 5, "c": 5})
    row = corrected_pass_k(counts, JudgeError.from_counts(95, 5, 95, 5), k=k, n_boot=4000, random_seed=2).iloc[0]
    assert row["pass_hat_k_raw"] > 1 and row["pass_hat_k_method"] == "exact_posterior"
    def m(se, sp):
        return _p_integral(se, sp, lambda p: 1.0, 5, 5)
    z = _outer(lambda se, sp: m(se, sp) ** 4)
    for q, g in (("pass_hat_k", lambda p: p**k), ("pass_at_k", lambda p: 1 - (1 - p) ** k)):
        e_g = _outer(lambda se, sp, g=g: m(se, sp) ** 3 * _p_integral(se, sp, g, 5, 5)) / z
        if row[f"{q}_method"] == "exact_posterior":
            assert row[q] == pytest.approx((4 * e_g + 1) / 6, abs=4e-3)
            assert 0 < row[f"{q}_ci_low"] < row[q] < row[f"{q}_ci_high"] <= 1  # an interval, not a point
        else:  # inside [0, 1]: the Rogan-Gladen value
            assert row[q] == row[f"{q}_raw"] and 0 <= row[f"{q}_ci_low"] <= row[f"{q}_ci_high"] <= 1


def test_the_issues_example_is_an_interval_not_a_point():
    """Everyday check of the slow test above: 0.9896 is its numerical integral of the posterior mean."""
    counts = pd.DataFrame({"agent": "a", "task_id": [f"t{i}" for i in range(100)], "n": 1, "c": 1})
    row = corrected_pass_k(counts, JudgeError.from_counts(95, 5, 95, 5), n_boot=2000, random_seed=1).iloc[0]
    assert row["pass_hat_k_method"] == "exact_posterior" and row["pass_hat_k"] == pytest.approx(0.9896, abs=2e-3)
    assert 0.95 < row["pass_hat_k_ci_low"] < 0.97 and 0.999 < row["pass_hat_k_ci_high"] < 1.0


def test_a_non_boundary_case_is_unchanged():
    # 30 tasks of 4 trials: Rogan-Gladen and its bootstrap bounds inside [0, 1]; the values are those before the
    # exact posterior existed (commit d16d4ff), so nothing changes away from the boundary.
    c = [1, 2, 3, 2, 2, 3, 1, 2, 2, 3] * 3
    counts = pd.DataFrame({"agent": "a", "task_id": [f"t{i}" for i in range(30)], "n": 4, "c": c})
    out = corrected_pass_k(counts, JudgeError.from_counts(tp=90, fn=10, tn=85, fp=15), k=[1, 2], n_boot=400,
                           random_seed=3)
    assert (out["pass_at_k_method"] == "rogan_gladen").all() and (out["pass_hat_k_method"] == "rogan_gladen").all()
    want = {1: (0.5, 0.3954550264550265, 0.5992235114861697, 0.5, 0.3954550264550265, 0.5992235114861697),
            2: (0.8251851851851851, 0.7172677476665719, 0.922207739517389, 0.1748148148148149, 0.0754420077923271,
                0.28851208318515137)}
    for _, r in out.iterrows():
        got = [r[f"{q}{s}"] for q in ("pass_at_k", "pass_hat_k") for s in ("", "_ci_low", "_ci_high")]
        np.testing.assert_allclose(got, want[r["k"]], rtol=1e-12)
    assert out["pass_hat_k"].iat[0] == pytest.approx((0.525 + 0.85 - 1) / 0.75)  # Rogan-Gladen itself

"""Dirichlet-process posteriors of means, paired differences and ratios, and the judge correction, against
closed forms.

Oracles: the Beta distribution (a binary mean with one trial per example is Beta(1 + c, 1 + n - c)); the paired
difference's tail by quadrature (``tests/dirichlet_oracles.py``); the Dirichlet mean and variance of a weighted sum;
the normal-approximation sample size ``N = n (z s / g)^2`` written out; the truncated Beta posterior mapped by the
Rogan-Gladen formula (scipy's Beta quantiles). (Moved with their code from tests/gating/test_gating.py and
tests/gating/test_gate_calibration.py.)
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from dirichlet_oracles import p_diff_below
from scipy import stats

from agentstats.calibration import JudgeError
from agentstats.estimators.corrected import corrected_binary_mean, corrected_draws
from agentstats.estimators.dirichlet import (
    PairedBinary,
    difference_draws,
    examples_to_decide,
    is_binary,
    mean_draws,
    mean_posterior,
    paired_binary,
    ratio_draws,
    summarize,
)


def test_mean_draws_of_binary_values_are_the_conjugate_beta():
    y = np.array([1] * 7 + [0] * 3, dtype=float)
    d = mean_draws(y, 2.0, 40_000, np.random.default_rng(1))
    beta = stats.beta(8, 4)
    assert d.mean() == pytest.approx(beta.mean(), abs=0.003)
    assert d.std() == pytest.approx(beta.std(), abs=0.003)
    assert stats.kstest(d[:4000], beta.cdf).pvalue > 0.001


def test_difference_draws_margins_and_paired_mean():
    # pairs (y, x): n00=2, n01=3, n10=6, n11=9
    y = np.array([0] * 2 + [0] * 3 + [1] * 6 + [1] * 9, dtype=float)
    x = np.array([0] * 2 + [1] * 3 + [0] * 6 + [1] * 9, dtype=float)
    my, mx, d = difference_draws(y, x, 2.0, 40_000, np.random.default_rng(2))
    assert my.mean() == pytest.approx(16 / 22, abs=0.003)  # Beta(1 + 15, 1 + 5)
    assert mx.mean() == pytest.approx(13 / 22, abs=0.003)  # Beta(1 + 12, 1 + 8)
    assert d.mean() == pytest.approx((7 - 4) / 22, abs=0.003)
    assert (d < -0.05).mean() == pytest.approx(p_diff_below(2, 3, 6, 9, 0.05), abs=0.004)


def test_continuous_mean_is_the_bayesian_bootstrap_with_prior_atoms():
    # Dirichlet(1,1,1, 1, 1) over atoms (0.2, 0.5, 0.9, 0, 1): mean = (0.2 + 0.5 + 0.9 + 1) / 5
    d = mean_draws(np.array([0.2, 0.5, 0.9]), 2.0, 40_000, np.random.default_rng(3))
    assert d.mean() == pytest.approx(2.6 / 5, abs=0.003)
    atoms = np.array([0.2, 0.5, 0.9, 0.0, 1.0])
    # Var of sum w_i v_i under Dirichlet(1,..,1) with K = 5 components: (E[v^2] - E[v]^2) / (K + 1)
    assert d.var() == pytest.approx(((atoms**2).mean() - atoms.mean() ** 2) / 6, rel=0.03)


def test_ratio_draws_and_sample_size_formula():
    r = ratio_draws(np.array([2.0, 4.0]), np.array([1.0, 2.0]), 1000, np.random.default_rng(0))
    assert np.allclose(r, 2.0)
    z = stats.norm.ppf(0.95)
    assert examples_to_decide(10, 0.6, 0.1, 0.5, 0.95) == math.ceil(10 * (z * 0.1 / 0.1) ** 2 - 10)
    assert examples_to_decide(10, 0.5, 0.1, 0.5, 0.95) is None
    assert examples_to_decide(100, 0.9, 0.01, 0.5, 0.95) == 1  # already decided: at least one


def test_corrected_draws_are_the_truncated_beta_posterior_mapped_by_rogan_gladen():
    se, sp, n, c = 0.9, 0.8, 60, 21  # observed rate 0.35, close to 1 - sp = 0.2: the truncation matters
    judge = JudgeError(se * 1e9, (1 - se) * 1e9, sp * 1e9, (1 - sp) * 1e9)  # se, sp known
    obs = stats.beta(1 + c, 1 + n - c)
    rng = np.random.default_rng(3)
    d = corrected_draws(lambda k: obs.rvs(size=k, random_state=rng)[:, None], judge, 60_000,
                        np.random.default_rng(4))[:, 0]
    lo, hi = 1 - sp, se
    qs = np.array([0.025, 0.5, 0.975])
    fq = obs.cdf(lo) + qs * (obs.cdf(hi) - obs.cdf(lo))  # quantiles of the truncated Beta
    expect = (obs.ppf(fq) - lo) / (se + sp - 1)
    assert np.quantile(d, qs) == pytest.approx(expect, abs=0.006)
    assert d.min() >= 0 and d.max() <= 1


def test_corrected_draws_refuse_only_when_no_draw_can_produce_the_verdicts():
    # se, sp known to 1e9 items: sp = 0.8, so a true rate of 0 is judged pass 20 % of the time; 1 of 200 is impossible
    judge = JudgeError(0.9e9, 0.1e9, 0.8e9, 0.2e9)
    obs = stats.beta(1 + 1, 1 + 199)
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="does not fit these verdicts"):
        corrected_draws(lambda k: obs.rvs(size=k, random_state=rng)[:, None], judge, 1000, rng)
    # the exact sampler integrates q out: 1 of 200 is merely unlikely with q >= 0.2, and the posterior sits at p ~ 0
    d = corrected_binary_mean(1, 200, judge, 2.0, 1000, rng)
    assert d.min() >= 0 and d.mean() < 0.01


def _misclassification_posterior(c: int, n: int, judge: JudgeError) -> tuple[np.ndarray, np.ndarray]:
    """Grid posterior of the true rate ``p`` (uniform prior) given ``c`` of ``n`` judged passes, by quadrature over
    the calibration posteriors of ``se`` and ``sp``: ``f(p) ~ int int q^c (1 - q)^(n - c) f(se) f(sp)``, each
    integral Gauss-Legendre over the Beta's quantiles (``int g(se) f(se) dse = int_0^1 g(F^-1(u)) du``)."""
    x, w = np.polynomial.legendre.leggauss(96)
    u, w = (x + 1) / 2, w / 2
    se = stats.beta(judge.se_alpha, judge.se_beta).ppf(u)
    sp = stats.beta(judge.sp_alpha, judge.sp_beta).ppf(u)
    p = np.linspace(0.0, 1.0, 1001)
    q = se[None, :, None] * p[:, None, None] + (1.0 - sp[None, None, :]) * (1.0 - p[:, None, None])
    lik = q**c * (1.0 - q) ** (n - c)
    dens = np.einsum("pij,i,j->p", lik, w, w)
    cdf = np.concatenate([[0.0], np.cumsum((dens[1:] + dens[:-1]) / 2 * np.diff(p))])
    return p, cdf / cdf[-1]


def test_a_calibrated_judge_at_the_boundary_has_the_exact_posterior_not_a_point_mass():
    # TP 95 / FN 5 / TN 95 / FP 5, 100 of 100 verdicts pass: Rogan-Gladen gives 1.05 (outside [0, 1]); the exact
    # posterior of the misclassification model is about 0.990 [0.962, 1.000] (issue 31)
    judge = JudgeError.from_counts(95, 5, 95, 5)
    grid, cdf = _misclassification_posterior(100, 100, judge)
    mean = float(np.trapezoid(1.0 - cdf, grid))
    lo, hi = np.interp([0.025, 0.975], cdf, grid)
    assert (round(mean, 3), round(lo, 3), round(hi, 3)) == (0.990, 0.962, 1.000)
    d = corrected_binary_mean(100, 100, judge, 2.0, 40_000, np.random.default_rng(1))
    assert d.mean() == pytest.approx(mean, abs=0.001)
    assert np.quantile(d, [0.025, 0.975]) == pytest.approx([lo, hi], abs=0.002)
    obs_rng = np.random.default_rng(2)
    g = corrected_draws(lambda k: obs_rng.beta(101, 1, size=k)[:, None], judge, 10_000, np.random.default_rng(3))
    assert g[:, 0].mean() == pytest.approx(mean, abs=0.0015)
    assert np.quantile(g[:, 0], [0.025, 0.975]) == pytest.approx([lo, hi], abs=0.004)


def test_the_exact_corrected_mean_matches_quadrature_inside_the_range_too():
    judge = JudgeError.from_counts(40, 8, 35, 12)  # se ~ 0.82, sp ~ 0.73: a noisy judge, 30 of 50 verdicts pass
    grid, cdf = _misclassification_posterior(30, 50, judge)
    d = corrected_binary_mean(30, 50, judge, 2.0, 40_000, np.random.default_rng(4))
    assert d.mean() == pytest.approx(float(np.trapezoid(1.0 - cdf, grid)), abs=0.004)
    assert np.quantile(d, [0.05, 0.5, 0.95]) == pytest.approx(np.interp([0.05, 0.5, 0.95], cdf, grid), abs=0.008)


@pytest.mark.parametrize("counts", [(0, 0, 0, 50), (2, 3, 6, 9), (10, 30, 25, 55), (300, 250, 260, 1190),
                                    (3000, 200, 190, 6000)])
def test_paired_binary_closed_form_against_quadrature(counts):
    pb = PairedBinary.from_counts(*counts, 2.0)
    for tol in (0.3, 0.05, 0.01, 1e-4):
        assert float(pb.cdf(-tol)) == pytest.approx(p_diff_below(*counts, tol), abs=2e-6)
    n00, n01, n10, n11 = counts
    a = np.array([n00, n01 + 1, n10 + 1, n11], dtype=float)  # Dirichlet moments of W10 - W01
    t = a.sum()
    assert float(pb.mean()) == pytest.approx((a[2] - a[1]) / t, abs=1e-12)
    var = (a[2] * (t - a[2]) + a[1] * (t - a[1]) + 2 * a[1] * a[2]) / (t**2 * (t + 1))
    assert float(pb.sd()) == pytest.approx(math.sqrt(var), rel=1e-12)
    # P(diff > 0): W10 > W01, i.e. U = W10 / (W01 + W10) ~ Beta(a10, a01) above 1/2
    assert float(pb.p_better()) == pytest.approx(stats.beta(a[2], a[1]).sf(0.5), abs=1e-12)
    q = pb.quantile(np.array([0.025, 0.975]))
    assert pb.cdf(q) == pytest.approx([0.025, 0.975], abs=1e-6)


def test_paired_binary_from_values_and_many_sets_at_once():
    y = np.array([0] * 2 + [0] * 3 + [1] * 6 + [1] * 9, dtype=float)
    x = np.array([0] * 2 + [1] * 3 + [0] * 6 + [1] * 9, dtype=float)
    one = paired_binary(y, x, 2.0)
    # only discordant pairs: S = 1 and the difference is 2 U - 1, U ~ Beta(3 + 1, 5 + 1)
    only = PairedBinary.from_counts(0, 5, 3, 0, 2.0)
    assert float(only.cdf(-0.05)) == pytest.approx(stats.beta(4, 6).cdf(0.475), abs=1e-12)
    many = PairedBinary.from_counts([2, 10], [3, 30], [6, 25], [9, 55], 2.0)
    assert float(one.cdf(-0.05)) == pytest.approx(float(many.cdf(-0.05)[0]), abs=1e-15)
    assert many.cdf(-0.05)[1] == pytest.approx(p_diff_below(10, 30, 25, 55, 0.05), abs=2e-6)
    with pytest.raises(ValueError, match="0 or 1"):
        paired_binary(np.array([0.5]), np.array([1.0]), 2.0)
    with pytest.raises(ValueError, match="prior_strength > 0"):
        PairedBinary.from_counts(1, 1, 1, 1, 0.0)


def test_mean_posterior_of_binary_values_is_the_exact_beta_and_else_draws():
    y = np.array([1.0] * 9 + [0.0] * 3)
    summ, draws, dist = mean_posterior(y, 2.0, 0.9, 1000, np.random.default_rng(0))
    beta = stats.beta(1 + 9, 1 + 3)
    assert draws is None and is_binary(y)
    assert (summ.mean, summ.sd) == pytest.approx((10 / 14, beta.std()), abs=1e-12)
    assert (summ.ci_low, summ.ci_high) == pytest.approx((beta.ppf(0.05), beta.ppf(0.95)), abs=1e-12)
    assert dist.sf(0.5) == pytest.approx(beta.sf(0.5), abs=1e-12)
    summ, draws, dist = mean_posterior(np.array([0.5, 1.0]), 2.0, 0.9, 1000, np.random.default_rng(0))
    assert dist is None and draws.shape == (1000,) and not is_binary(np.array([0.5, 1.0]))
    s = summarize(np.arange(101.0), 0.9)  # quantiles of 0..100 at 5 % and 95 %: 5 and 95
    assert (s.mean, s.ci_low, s.ci_high) == pytest.approx((50.0, 5.0, 95.0))
    assert s.sd == pytest.approx(np.arange(101.0).std())

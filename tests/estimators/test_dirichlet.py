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
from agentstats.estimators.dirichlet import (
    corrected_draws,
    difference_draws,
    examples_to_decide,
    is_binary,
    mean_draws,
    mean_posterior,
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


def test_corrected_draws_refuse_a_calibration_that_cannot_produce_the_data():
    judge = JudgeError(900, 100, 800, 200)  # sp ~ 0.8: a true rate of 0 is judged pass 20 % of the time
    obs = stats.beta(1 + 1, 1 + 199)  # observed 1 of 200: far below 1 - sp
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="does not fit these verdicts"):
        corrected_draws(lambda k: obs.rvs(size=k, random_state=rng)[:, None], judge, 1000, rng, max_tries=5)


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

"""Tests of agentstats.planning: exact conditional moments by quadrature, scaling, power calibration."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, stats
from scipy.special import expit

from agentstats.planning import _cell_tables, hyperparameters_from_fit, plan_interval_width, plan_power

HYPER = dict(mu=0.3, sigma_task=1.5, sigma_cell=0.8, alpha={"a": 0.5, "b": -0.5})


@pytest.mark.parametrize("n, c, k", [(4, 0, 1), (4, 3, 2), (8, 8, 4)])
def test_cell_posterior_moments_match_quad(n, c, k):
    m, s = 0.2, 1.7
    dens = lambda e: stats.norm(m, s).pdf(e) * stats.binom.pmf(c, n, expit(e))  # noqa: E731
    z = integrate.quad(dens, -np.inf, np.inf)[0]
    e1 = integrate.quad(lambda e: expit(e) ** k * dens(e), -np.inf, np.inf)[0] / z
    e2 = integrate.quad(lambda e: expit(e) ** (2 * k) * dens(e), -np.inf, np.inf)[0] / z
    marg, m1, v1, _, _ = _cell_tables(m, s, n, k)
    assert marg[c] == pytest.approx(z, rel=1e-6)
    assert m1[c] == pytest.approx(e1, rel=1e-6)
    assert v1[c] == pytest.approx(e2 - e1**2, rel=1e-5)


def test_interval_width_shrinks_like_one_over_sqrt_tasks():
    out = plan_interval_width(HYPER, [50, 200], [4], [1, 3], agent="a", n_sims=300, random_seed=1)
    w = out.set_index(["n_tasks", "k"])["expected_width"]
    for kk in (1, 3):
        assert w[(200, kk)] / w[(50, kk)] == pytest.approx(0.5, abs=0.05)
    more_trials = plan_interval_width(HYPER, 50, [2, 16], 1, agent="a", n_sims=300, random_seed=1)
    assert more_trials.expected_width.iloc[1] < more_trials.expected_width.iloc[0]
    new = plan_interval_width(HYPER, 50, 4, 1, agent="a", population="new", n_sims=300, random_seed=1)
    assert new.expected_width.iloc[0] > w[(50, 1)]  # new tasks add between-task sampling variance


def test_true_value_is_population_pass_hat_k():
    out = plan_interval_width(HYPER, 10, 2, 2, agent="b", n_sims=10)
    m, s = 0.3 - 0.5, np.hypot(1.5, 0.8)
    ref = integrate.quad(lambda e: expit(e) ** 2 * stats.norm(m, s).pdf(e), -np.inf, np.inf)[0]
    assert out.true_value.iloc[0] == pytest.approx(ref, abs=1e-6)


def test_power_calibration():
    null = plan_power(HYPER, 100, 4, 1, alpha_diff=0.0, n_sims=2000, random_seed=2)
    # under no difference, one-sided detections at the 97.5 % level are rare (approximate test)
    assert null.power.iloc[0] < 0.06 and null.true_diff.iloc[0] == pytest.approx(0.0, abs=1e-12)
    strong = plan_power(dict(HYPER, alpha={"a": 0.2, "b": -0.2}), [10, 400], 4, 1, agents=("a", "b"), n_sims=500,
                        random_seed=3)
    assert strong.power.iloc[1] > 0.99 and strong.power.iloc[0] < strong.power.iloc[1]
    assert (strong.true_diff > 0).all()


def test_bad_inputs():
    with pytest.raises(ValueError, match="exactly one"):
        plan_power(HYPER, 10, 2)
    with pytest.raises(ValueError, match="missing 'mu'"):
        plan_interval_width(dict(sigma_task=1.0), 10, 2)
    with pytest.raises(ValueError, match="agent 'z'"):
        plan_interval_width(HYPER, 10, 2, agent="z")
    with pytest.raises(ValueError, match="population"):
        plan_interval_width(HYPER, 10, 2, population="future")


@pytest.mark.slow
def test_hyperparameters_from_real_fit(models_fit):
    h = hyperparameters_from_fit(models_fit)
    assert set(h["alpha"]) == {"strong", "mid", "weak"}
    assert h["alpha"]["strong"] > h["alpha"]["weak"] and h["sigma_task"] > 0 and h["sigma_cell"] > 0
    out = plan_interval_width(models_fit, 30, 4, 2, agent="strong", n_sims=50)
    assert 0 < out.expected_width.iloc[0] < 1

"""Tests of agentstats.planning: exact conditional moments by quadrature, scaling, power calibration."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, special, stats
from scipy.special import expit

from agentstats.models import get_family
from agentstats.models.families.base import gauss_hermite
from agentstats.planning import hyperparameters_from_fit, plan_interval_width, plan_power

HYPER = dict(model="partial_pooling", mu=0.3, sigma_task=1.5, sigma_cell=0.8, alpha={"a": 0.5, "b": -0.5})


def _marginal_moments(family, hyper, m, n, k):
    """P(c), E[p^k | c], Var[p^k | c] for c = 0..n, the task effect integrated as planning does."""
    x, w = gauss_hermite(64)
    tab = family.cell_given_task(hyper, None, m + hyper["sigma_task"] * x, n, k)
    joint = tab.lik * w
    marg = joint.sum(1)
    e1 = (joint * tab.m1).sum(1) / marg
    return marg, e1, (joint * tab.m2).sum(1) / marg - e1**2


@pytest.mark.parametrize("n, c, k", [(4, 0, 1), (4, 3, 2), (8, 8, 4)])
def test_logit_normal_cell_moments_match_quad(n, c, k):
    m, st, sc = 0.2, 1.5, 0.8
    s = np.hypot(st, sc)  # task and cell effects together: logit p ~ N(m, s)
    dens = lambda e: stats.norm(m, s).pdf(e) * stats.binom.pmf(c, n, expit(e))  # noqa: E731
    z = integrate.quad(dens, -np.inf, np.inf)[0]
    e1 = integrate.quad(lambda e: expit(e) ** k * dens(e), -np.inf, np.inf)[0] / z
    e2 = integrate.quad(lambda e: expit(e) ** (2 * k) * dens(e), -np.inf, np.inf)[0] / z
    marg, m1, v1 = _marginal_moments(get_family("partial_pooling"), dict(sigma_task=st, sigma_cell=sc), m, n, k)
    assert marg[c] == pytest.approx(z, rel=1e-5)
    assert m1[c] == pytest.approx(e1, rel=1e-5)
    assert v1[c] == pytest.approx(e2 - e1**2, rel=1e-4)


@pytest.mark.parametrize("n, c, k", [(4, 0, 1), (4, 3, 2), (5, 5, 3)])
def test_zoi_cell_moments_match_double_integral(n, c, k):
    """Beta-Binomial with always/never share: P(c) and E[p^k | c] by quadrature over the task effect and p."""
    m, st, phi, lam = -0.2, 1.2, 1.5, 0.3
    hyper = dict(sigma_task=st, phi=phi, det_share=lam)

    def joint(e, power):
        q = expit(m + e)
        a, b = q * phi, (1 - q) * phi
        # int p^power C(n, c) p^c (1 - p)^(n - c) Beta(p | a, b) dp, end-point singularities as algebraic weights
        beta_part = integrate.quad(lambda p: 1.0, 0, 1, weight="alg", wvar=(a - 1 + c + power, b - 1 + n - c))[0]
        beta_part *= special.comb(n, c) / special.beta(a, b)
        det_lik = q * (c == n) + (1 - q) * (c == 0)
        det_part = q * (c == n) if power > 0 else det_lik  # p = 1 in the always cell, 0 in the never cell
        return stats.norm.pdf(e, 0, st) * (lam * det_part + (1 - lam) * beta_part)

    z = integrate.quad(lambda e: joint(e, 0), -8 * st, 8 * st)[0]
    e1 = integrate.quad(lambda e: joint(e, k), -8 * st, 8 * st)[0] / z
    marg, m1, _ = _marginal_moments(get_family("zoi_beta_binomial"), hyper, m, n, k)
    assert marg[c] == pytest.approx(z, rel=1e-4)
    assert m1[c] == pytest.approx(e1, rel=1e-4)


def test_planning_uses_the_models_dispersion():
    """phi = 0.2 (all-or-nothing cells) and phi = 100 (coin flips around the mean) must plan differently: with 4
    trials per task a coin-flip cell reveals its p far less than an all-or-nothing one does.
    """
    base = dict(model="beta_binomial", mu=0.0, sigma_task=1.0, alpha=0.0)
    w = [
        plan_interval_width(dict(base, phi=phi), 100, 4, 3, n_sims=200, random_seed=0).expected_width.iloc[0]
        for phi in (0.2, 100.0)
    ]
    assert w[1] > 1.2 * w[0]  # 0.058 against 0.045 (identical before planning asked the family)
    with pytest.raises(ValueError, match="need phi"):
        plan_interval_width(dict(base), 100, 4)
    with pytest.raises(ValueError, match="which model"):
        plan_interval_width(dict(mu=0.0, sigma_task=1.0), 100, 4)


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


def test_power_population_new_adds_the_between_task_variance_of_the_difference():
    """'new' widens the interval by Var_t(p_A^k - p_B^k) / T (Monte Carlo of the logit-normal cells) and keeps the
    null rejection rate below (1 - ci_prob) / 2, where 'observed' (the suite's own difference, rarely 0) does not."""
    mu, st, sc, a, b, k, n, t = 0.3, 1.5, 0.8, 0.5, -0.5, 2, 4, 4000
    rng = np.random.default_rng(7)
    eta = mu + st * rng.standard_normal(2_000_000)
    pa = expit(eta + a + sc * rng.standard_normal(eta.size))
    pb = expit(eta + b + sc * rng.standard_normal(eta.size))
    var_d = np.var(pa**k - pb**k)
    z = stats.norm.ppf(0.975)
    kw = dict(agents=("a", "b"), n_sims=400, random_seed=4)
    obs = plan_power(HYPER, t, n, k, population="observed", **kw)
    new = plan_power(HYPER, t, n, k, population="new", **kw)
    assert (new.population == "new").all() and (obs.population == "observed").all()
    assert new.true_diff.iloc[0] == pytest.approx(np.mean(pa**k - pb**k), abs=2e-3)
    implied = (new.expected_width.iloc[0] ** 2 - obs.expected_width.iloc[0] ** 2) * t / (2 * z) ** 2
    assert implied == pytest.approx(var_d, rel=0.03)
    bb = dict(model="beta_binomial", mu=0.0, sigma_task=1.0, phi=2.0)
    null_obs = plan_power(bb, 400, 4, 1, alpha_diff=0.0, n_sims=4000, random_seed=1)
    null_new = plan_power(bb, 400, 4, 1, alpha_diff=0.0, population="new", n_sims=4000, random_seed=1)
    assert null_obs.power.iloc[0] > 0.05 and null_new.power.iloc[0] < 0.025
    with pytest.raises(ValueError, match="population"):
        plan_power(HYPER, 10, 2, agents=("a", "b"), population="future")


def test_bad_inputs():
    with pytest.raises(ValueError, match="exactly one"):
        plan_power(HYPER, 10, 2)
    with pytest.raises(ValueError, match="missing 'mu'"):
        plan_interval_width(dict(model="partial_pooling", sigma_task=1.0), 10, 2)
    with pytest.raises(ValueError, match="agent 'z'"):
        plan_interval_width(HYPER, 10, 2, agent="z")
    with pytest.raises(ValueError, match="population"):
        plan_interval_width(HYPER, 10, 2, population="future")


@pytest.mark.parametrize("kw, message", [
    (dict(k=-1), r"plan_interval_width: k must be integers >= 1, got -1"),  # gave pass^k = 2.077
    (dict(k=[1, 0]), r"k must be integers >= 1, got 0"),
    (dict(k=1.5), r"k must be integers >= 1, got 1.5"),
    (dict(n_tasks=0), r"n_tasks must be integers >= 1, got 0"),
    (dict(n_trials=[2, 0]), r"n_trials must be integers >= 1, got 0"),
    (dict(n_sims=0), r"n_sims must be integers >= 1, got 0"),  # was an IndexError
    (dict(ci_prob=1.5), r"ci_prob must be in \(0, 1\), got 1.5"),  # was NaN widths
    (dict(ci_prob=1), r"ci_prob must be in \(0, 1\), got 1"),  # was an infinite width
    (dict(ci_prob=0), r"ci_prob must be in \(0, 1\), got 0"),
])
def test_interval_width_refuses_each_bad_argument(kw, message):
    args = dict(n_tasks=10, n_trials=2, k=1, ci_prob=0.95, n_sims=20) | kw
    with pytest.raises(ValueError, match=message):
        plan_interval_width(HYPER, args.pop("n_tasks"), args.pop("n_trials"), **args)


@pytest.mark.parametrize("kw, message", [
    (dict(n_tasks=0), r"plan_power: n_tasks must be integers >= 1, got 0"),  # these four returned power 0.0
    (dict(n_trials=0), r"plan_power: n_trials must be integers >= 1, got 0"),
    (dict(k=0), r"plan_power: k must be integers >= 1, got 0"),
    (dict(ci_prob=2), r"plan_power: ci_prob must be in \(0, 1\), got 2"),
    (dict(agents=("a", "a")), r"plan_power: agents must be two different agents, got 'a' twice"),
    (dict(agents=("a", "b", "c")), r"plan_power: agents must be two agent names"),
    (dict(agents=None, alpha_diff=float("nan")), r"plan_power: alpha_diff must be a finite number, got nan"),
])
def test_power_refuses_each_bad_argument(kw, message):
    args = dict(n_tasks=10, n_trials=2, k=1, agents=("a", "b"), n_sims=20) | kw
    with pytest.raises(ValueError, match=message):
        plan_power(HYPER, args.pop("n_tasks"), args.pop("n_trials"), **args)


@pytest.mark.parametrize("change, message", [
    (dict(phi=-3.0), r"hyperparameters: phi must be a finite number > 0, got -3.0"),  # was numpy's "pvals < 0"
    (dict(phi={"a": 2.0, "b": 0.0}), r"hyperparameters: phi\['b'\] must be a finite number > 0, got 0.0"),
    (dict(det_share=2.0), r"hyperparameters: det_share must be in \[0, 1\], got 2.0"),
    (dict(sigma_task=-1.0), r"hyperparameters: sigma_task must be a finite number >= 0, got -1.0"),
    (dict(mu=float("inf")), r"hyperparameters: mu must be a finite number, got inf"),
])
def test_hyperparameters_out_of_range_are_refused(change, message):
    hyper = dict(model="zoi_beta_binomial", mu=0.0, sigma_task=1.0, alpha=0.0, phi=2.0, det_share=0.2) | change
    with pytest.raises(ValueError, match=message):
        plan_interval_width(hyper, 10, 2)


@pytest.mark.slow
def test_hyperparameters_from_real_fit(models_fit):
    h = hyperparameters_from_fit(models_fit)
    assert set(h["alpha"]) == {"strong", "mid", "weak"} and h["model"] == "partial_pooling"
    assert h["alpha"]["strong"] > h["alpha"]["weak"] and h["sigma_task"] > 0 and min(h["sigma_cell"].values()) > 0
    out = plan_interval_width(models_fit, 30, 4, 2, agent="strong", n_sims=50)
    assert 0 < out.expected_width.iloc[0] < 1

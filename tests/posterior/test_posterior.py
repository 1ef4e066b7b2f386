"""Tests of agentstats.posterior against closed forms, quadrature and direct numpy on constructed draws."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from fit_helpers import constructed_fit
from scipy import integrate, stats
from scipy.special import expit

from agentstats.models import fit
from agentstats.models.families.base import population_shift
from agentstats.models.families.logit_normal import new_task_moments_logit_normal
from agentstats.posterior import (
    consistency,
    contrast_matrix,
    contrast_table,
    posterior_pass_at_k,
    posterior_pass_hat_k,
    posterior_pass_k,
    predict_rerun,
    summarize_pass_k,
)


def _fake_tree(rng, n_trials, sigma_cell=None):
    """A logit-normal (partial_pooling, shared cell scale) fit of 2 agents x 3 tasks with known p draws.

    ``gamma`` is set so that ``expit(mu + alpha + beta + gamma)`` is exactly the drawn ``p``.
    """
    agents, tasks = ["a", "b"], ["t1", "t2", "t3"]
    p = rng.uniform(0.05, 0.95, size=(2, 40, 2, 3))
    mu = rng.normal(0.2, 0.3, size=(2, 40))
    alpha = rng.normal(0, 0.5, size=(2, 40, 2))
    beta = rng.normal(0, 0.5, size=(2, 40, 3))
    gamma = np.log(p / (1 - p)) - mu[..., None, None] - alpha[..., :, None] - beta[..., None, :]
    post = xr.Dataset(
        {
            "mu": (("chain", "draw"), mu),
            "alpha": (("chain", "draw", "agent"), alpha),
            "beta": (("chain", "draw", "task"), beta),
            "gamma": (("chain", "draw", "agent", "task"), gamma),
            "sigma_task": (("chain", "draw"), rng.uniform(0.5, 2.5, size=(2, 40))),
            "sigma_cell": (("chain", "draw"), rng.uniform(0.1, 1.5, size=(2, 40)) if sigma_cell is None
                           else np.full((2, 40), sigma_cell)),
        },
        coords={"agent": agents, "task": tasks},
    )
    return constructed_fit(post, "partial_pooling", n_trials, dispersion="shared", random_seed=5), p


def _tree(*args, **kwargs):
    return _fake_tree(*args, **kwargs)


def test_observed_population_equals_direct_numpy():
    rng = np.random.default_rng(0)
    dt, p = _tree(rng, [[4, 4, 0], [2, 3, 5]])  # agent a did not attempt t3
    hat = posterior_pass_hat_k(dt, [1, 3])
    at = posterior_pass_at_k(dt, [1, 3])
    assert hat.dims == ("chain", "draw", "agent", "k")
    for kk in (1, 3):
        np.testing.assert_allclose(hat.sel(agent="a", k=kk), np.mean(p[:, :, 0, :2] ** kk, axis=-1))
        np.testing.assert_allclose(hat.sel(agent="b", k=kk), np.mean(p[:, :, 1, :] ** kk, axis=-1))
        np.testing.assert_allclose(at.sel(agent="b", k=kk), np.mean(1 - (1 - p[:, :, 1, :]) ** kk, axis=-1))
    # extrapolated: share of the agent's attempted tasks with n < k; b has n = 2, 3, 5, a has 4, 4
    assert float(hat.coords["extrapolated"].sel(agent="b", k=3)) == pytest.approx(1 / 3)
    assert float(hat.coords["extrapolated"].sel(agent="a", k=3)) == 0.0
    all_tasks = posterior_pass_hat_k(dt, 1, tasks="all")
    np.testing.assert_allclose(all_tasks.sel(agent="a", k=1), p[:, :, 0, :].mean(-1))
    both = posterior_pass_k(dt, [1, 3])
    np.testing.assert_allclose(both["pass_hat_k"], hat)


@pytest.mark.parametrize("m, s, k", [(0.3, 1.5, 1), (-1.0, 2.5, 4), (2.0, 0.7, 8), (0.0, 3.0, 20), (0.0, 5.0, 8)])
def test_gauss_hermite_matches_quad(m, s, k):
    dens = stats.norm(m, s).pdf
    hat_q = integrate.quad(lambda e: expit(e) ** k * dens(e), -np.inf, np.inf, epsabs=1e-12)[0]
    at_q = 1 - integrate.quad(lambda e: (1 - expit(e)) ** k * dens(e), -np.inf, np.inf, epsabs=1e-12)[0]
    hat, at = new_task_moments_logit_normal(np.array(m), np.array(s), np.array([k]))
    assert hat[0] == pytest.approx(hat_q, abs=1e-5)
    assert at[0] == pytest.approx(at_q, abs=1e-5)


class _ZeroShift:
    """A stand-in Generator whose normal draws are 0: the new-task integral without the population shift."""

    def standard_normal(self, shape):
        return np.zeros(shape)


def test_new_population_uses_mu_alpha_both_sigmas_and_the_population_shift():
    rng = np.random.default_rng(1)
    dt, _ = _tree(rng, [[4, 4, 4], [4, 4, 4]])
    post = dt.posterior
    hat, _ = dt.family.new_task_pass_k(post, np.array([2]), n_tasks=3, rng=_ZeroShift())
    c, d = 1, 7
    m = float(post["mu"][c, d] + post["alpha"][c, d, 1])
    s = float(np.hypot(post["sigma_task"][c, d], post["sigma_cell"][c, d]))
    ref = integrate.quad(lambda e: expit(e) ** 2 * stats.norm(m, s).pdf(e), -np.inf, np.inf)[0]
    assert hat[c, d, 1, 0] == pytest.approx(ref, abs=1e-7)
    # the population shift: one Normal(0, sigma_task / sqrt(T)) per draw
    sig = np.full((400, 100), 1.7)
    shift = population_shift(sig, 9, np.random.default_rng(0))
    assert shift.std() == pytest.approx(1.7 / 3, rel=0.02) and abs(shift.mean()) < 0.01
    new = posterior_pass_hat_k(dt, 2, population="new")
    assert new.attrs["population"] == "new"
    # with the shift the draws spread more than without it (same seed, same data)
    assert float(new.sel(agent="b").std()) > float(np.std(hat[..., 1, 0]))
    again = posterior_pass_hat_k(dt, 2, population="new")
    np.testing.assert_array_equal(new, again)  # seeded from the fit's seed


def test_bad_arguments():
    dt, _ = _tree(np.random.default_rng(2), [[1, 1, 1], [1, 1, 1]])
    for bad in (0, [1, -2], 1.5, [], 10**6):
        with pytest.raises(ValueError):
            posterior_pass_hat_k(dt, bad)
    with pytest.raises(ValueError, match="population"):
        posterior_pass_hat_k(dt, 1, population="future")
    no_hyper = fit(pd.DataFrame({"agent": ["a"], "task_id": ["t"], "n": [2], "c": [1]}), "no_pooling", draws=20,
                   chains=2, random_seed=0)
    with pytest.raises(ValueError, match="hyperparameters"):
        posterior_pass_hat_k(no_hyper, 1, population="new")
    # a fit's DataTree is not a fit: say how to read it (the family and counts are resolved once, by Fit)
    with pytest.raises(TypeError, match=r"Fit\.from_datatree"):
        posterior_pass_hat_k(no_hyper.idata, 1)
    with pytest.raises(TypeError, match="must be an agentstats Fit"):
        predict_rerun("fit.zarr", 1, 1)


def test_summary_eti_and_hdi_against_numpy():
    rng = np.random.default_rng(3)
    x = rng.beta(2, 5, size=(2, 2000, 1, 1))
    da = xr.DataArray(x, dims=("chain", "draw", "agent", "k"), coords={"agent": ["a"], "k": [2]},
                      attrs={"quantity": "pass_hat_k", "population": "observed"})
    s = summarize_pass_k(da, ci_prob=0.9).iloc[0]
    flat = x.ravel()
    assert s["mean"] == pytest.approx(flat.mean()) and s["median"] == pytest.approx(np.median(flat))
    assert s.ci_low == pytest.approx(np.quantile(flat, 0.05), rel=1e-3)
    assert s.ci_high == pytest.approx(np.quantile(flat, 0.95), rel=1e-3)
    assert s.ci_kind == "eti" and s.extrapolated == 0.0
    h = summarize_pass_k(da, ci_prob=0.9, ci_kind="hdi").iloc[0]
    # an HDI of a right-skewed density is shifted left of the ETI and no wider
    assert h.ci_low < s.ci_low and h.ci_high - h.ci_low <= s.ci_high - s.ci_low + 1e-9
    assert np.mean((flat >= h.ci_low) & (flat <= h.ci_high)) == pytest.approx(0.9, abs=0.01)
    with pytest.raises(ValueError, match="ci_kind"):
        summarize_pass_k(da, ci_kind="hpd")


def test_contrasts_on_constructed_draws():
    rng = np.random.default_rng(4)
    n = 200_000
    a = rng.normal(1.0, 1.0, n)
    b = rng.normal(0.0, 1.0, n)
    c = b - 0.5  # always below b
    da = xr.DataArray(np.stack([a, b, c], -1).reshape(1, n, 3), dims=("chain", "draw", "agent"),
                      coords={"agent": ["A", "B", "C"]})
    mat = contrast_matrix(da)
    assert mat.loc["A", "B"] == pytest.approx(stats.norm.cdf(1 / np.sqrt(2)), abs=0.005)
    assert mat.loc["B", "C"] == 1.0 and mat.loc["C", "B"] == 0.0 and np.isnan(mat.loc["A", "A"])
    # P(A - B > 0.5) = Phi((1 - 0.5) / sqrt(2))
    assert contrast_matrix(da, delta=0.5).loc["A", "B"] == pytest.approx(stats.norm.cdf(0.5 / np.sqrt(2)), abs=0.005)
    tab = contrast_table(da.expand_dims(k=[3], axis=-1), delta=0.5).set_index(["agent_a", "agent_b"])
    # the table's P(A > B) is the matrix's (same draws); P(A - B > 0.5) and the interval of A - B ~ N(1, sqrt 2)
    assert tab.loc[("A", "B"), "prob_greater"] == pytest.approx(mat.loc["A", "B"], abs=1e-12)
    assert tab.loc[("A", "B"), "prob_diff_gt_delta"] == pytest.approx(stats.norm.cdf(0.5 / np.sqrt(2)), abs=0.005)
    z = stats.norm.ppf(0.975) * np.sqrt(2)
    assert tab.loc[("A", "B"), "diff_low"] == pytest.approx(1 - z, abs=0.02)
    assert tab.loc[("A", "B"), "diff_high"] == pytest.approx(1 + z, abs=0.02)
    assert tab.loc[("B", "C"), "diff_mean"] == pytest.approx(0.5)
    with pytest.raises(ValueError, match="pass k="):
        contrast_matrix(da.expand_dims(k=[1, 2], axis=-1))
    # each unordered pair once, the agent with the higher mean first; no k column for k-less draws
    plain = contrast_table(da)
    assert len(plain) == 3 and "k" not in plain.columns
    assert set(map(tuple, plain[["agent_a", "agent_b"]].to_numpy())) == {("A", "B"), ("A", "C"), ("B", "C")}
    assert (plain.diff_mean >= 0).all()


def _icc_from_expanded(n, c):
    """One-way random-effects ANOVA ICC from the 0/1 outcomes themselves (sums of squares over trials)."""
    groups = [np.r_[np.ones(ci), np.zeros(ni - ci)] for ni, ci in zip(n, c, strict=True) if ni > 0]
    y = np.concatenate(groups)
    g, big_n = len(groups), y.size
    ssb = sum(len(x) * (x.mean() - y.mean()) ** 2 for x in groups)
    ssw = sum(((x - x.mean()) ** 2).sum() for x in groups)
    msb, msw = ssb / (g - 1), ssw / (big_n - g)
    n0 = (big_n - sum(len(x) ** 2 for x in groups) / big_n) / (g - 1)
    return (msb - msw) / (msb + (n0 - 1) * msw)


def test_consistency_icc_and_flip_share():
    rows = [("a", "t1", 4, 4), ("a", "t2", 4, 0), ("a", "t3", 3, 1), ("a", "t4", 1, 1), ("a", "t5", 5, 2),
            ("b", "t1", 2, 1), ("b", "t2", 2, 1), ("b", "t3", 2, 0)]
    counts = pd.DataFrame(rows, columns=["agent", "task_id", "n", "c"])
    out = consistency(counts).set_index("agent")
    assert out.loc["a", "flip_share"] == pytest.approx(2 / 4)  # t3, t5 flip among t1,t2,t3,t5 (n >= 2)
    assert out.loc["b", "flip_share"] == pytest.approx(2 / 3)
    assert out.loc["a", "icc_anova"] == pytest.approx(_icc_from_expanded([4, 4, 3, 1, 5], [4, 0, 1, 1, 2]))
    assert out.loc["b", "icc_anova"] == pytest.approx(_icc_from_expanded([2, 2, 2], [1, 1, 0]))


def test_consistency_model_icc_per_agent():
    counts = pd.DataFrame([("a", "t1", 2, 1), ("a", "t2", 2, 2), ("b", "t1", 2, 0), ("b", "t2", 2, 2)],
                          columns=["agent", "task_id", "n", "c"])
    ones = np.ones((1, 10))
    post = xr.Dataset(
        {"mu": (("chain", "draw"), 0 * ones), "sigma_task": (("chain", "draw"), 1.5 * ones),
         "sigma_cell": (("chain", "draw", "agent"), np.stack([ones, 2 * ones], -1))},
        coords={"agent": ["a", "b"]},
    )
    dt = constructed_fit(post, "partial_pooling", [[2, 2], [2, 2]], tasks=["t1", "t2"], dispersion="agent")
    out = consistency(counts, dt).set_index("agent")
    for agent, sc in (("a", 1.0), ("b", 2.0)):
        denom = 1.5**2 + sc**2 + np.pi**2 / 3
        assert out.loc[agent, "icc_model"] == pytest.approx((1.5**2 + sc**2) / denom)
        assert out.loc[agent, "icc_cell"] == pytest.approx(sc**2 / denom)
    # Beta-Binomial, per-agent rho with a shared always/never share: det + (1 - det) rho
    post_bb = xr.Dataset(
        {"mu": (("chain", "draw"), 0 * ones), "sigma_task": (("chain", "draw"), ones),
         "rho": (("chain", "draw", "agent"), np.stack([0.2 * ones, 0.6 * ones], -1)),
         "det_share": (("chain", "draw"), 0.25 * ones)},
        coords={"agent": ["a", "b"]},
    )
    dt_bb = constructed_fit(post_bb, "zoi_beta_binomial", [[2, 2], [2, 2]], tasks=["t1", "t2"], dispersion="agent")
    bb = consistency(counts, dt_bb).set_index("agent")
    assert bb.loc["a", "icc_cell"] == pytest.approx(0.25 + 0.75 * 0.2)
    assert bb.loc["b", "icc_cell"] == pytest.approx(0.25 + 0.75 * 0.6)
    # one agent: no within-cell term, so no estimate (NaN and said so), never 0
    single = constructed_fit(post_bb.drop_vars(["rho", "det_share"]).isel(agent=[0]), "zoi_beta_binomial", [[2, 2]],
                             tasks=["t1", "t2"], dispersion="agent")
    one = consistency(counts[counts.agent == "a"], single).iloc[0]
    assert np.isnan(one.icc_cell) and not one.icc_cell_estimable
    # counts of an agent the fit does not have: a clear error naming it and the fit's agents
    with pytest.raises(ValueError, match=r"consistency: agent\(s\) \['Z'\] of the counts not in the fit; agents "
                                         r"present: a, b"):
        consistency(counts.assign(agent=counts["agent"].replace({"b": "Z"})), dt)


def test_predict_rerun_matches_exact_predictive():
    """No-pooling posterior p ~ Beta(1 + c, 1 + n - c): a re-run's new successes are Beta-Binomial, so the distribution
    of the re-computed unbiased pass^2 over two tasks is known exactly (enumeration of both tasks' new counts).
    """
    counts = pd.DataFrame({"agent": "a", "task_id": ["t1", "t2"], "n": [2, 3], "c": [1, 3]})
    dt = fit(counts, "no_pooling", draws=20_000, chains=2, random_seed=4)
    n_future, k = 2, 2
    rr = predict_rerun(dt, n_future, k, n_draws=None)["pass_hat_k"].sel(agent="a", k=k).to_numpy().ravel()
    # exact: sum over (x1, x2) of BB(x1 | 2, 2, 2) BB(x2 | 2, 4, 1) at the statistic's value
    pmf1 = stats.betabinom.pmf(np.arange(3), n_future, 1 + 1, 1 + 1)
    pmf2 = stats.betabinom.pmf(np.arange(3), n_future, 1 + 3, 1 + 0)
    from math import comb
    values, probs = [], []
    for x1 in range(3):
        for x2 in range(3):
            h1 = comb(1 + x1, k) / comb(4, k) if 1 + x1 >= k else 0.0
            h2 = comb(3 + x2, k) / comb(5, k) if 3 + x2 >= k else 0.0
            values.append((h1 + h2) / 2)
            probs.append(pmf1[x1] * pmf2[x2])
    values, probs = np.array(values), np.array(probs)
    assert rr.mean() == pytest.approx(float(values @ probs), abs=0.005)
    for v in np.unique(values):
        assert np.mean(rr <= v + 1e-12) == pytest.approx(float(probs[values <= v + 1e-12].sum()), abs=0.01)
    # the tidy summary keeps the tasks behind each value: both tasks reach k = 5 only with the re-run's 2 trials
    # where n + 2 >= 5, i.e. the second task alone (n = 3); k = 6: none
    table = summarize_pass_k(predict_rerun(dt, n_future, [2, 5, 6], n_draws=50))
    assert table.set_index(["quantity", "k"]).loc["pass_hat_k", "n_tasks"].to_dict() == {2: 2, 5: 1, 6: 0}
    with pytest.raises(ValueError, match="n_future"):
        predict_rerun(dt, -1, 2)


@pytest.mark.slow
def test_real_fit_posterior_quantities(models_fit):
    hat = posterior_pass_hat_k(models_fit, [1, 2, 8], population="observed")
    new = posterior_pass_hat_k(models_fit, [1, 2, 8], population="new")
    assert hat.sizes["agent"] == 3 and list(hat["k"].values) == [1, 2, 8]
    # 4 trials per cell (3 where one trial was missing): every task is below k = 8, none below k = 1
    extrap = hat.coords["extrapolated"]
    assert bool((extrap.sel(k=8) == 1).all()) and bool((extrap.sel(k=1) == 0).all())
    # pass^k decreases in k, draw by draw
    assert bool((hat.diff("k") <= 1e-12).all()) and bool((new.diff("k") <= 1e-12).all())
    summ = summarize_pass_k([hat, new])
    assert set(summ.population) == {"observed", "new"} and len(summ) == 18
    assert list(summ.columns[:4]) == ["agent", "k", "quantity", "population"]
    mat = contrast_matrix(hat, k=1)
    assert mat.loc["strong", "weak"] > 0.9
    cons = consistency(models_fit_counts(models_fit), models_fit)
    assert ((cons.icc_model > 0) & (cons.icc_model < 1)).all()


def models_fit_counts(dt):
    cd = dt.idata["constant_data"]
    n = cd["n_trials"].to_pandas().stack().rename("n")
    c = cd["n_success"].to_pandas().stack().rename("c")
    df = pd.concat([n, c], axis=1).reset_index()
    return df.rename(columns={"task": "task_id"})

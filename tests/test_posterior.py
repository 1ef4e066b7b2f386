"""Tests of agentstats.posterior against closed forms, quadrature and direct numpy on constructed draws."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scipy import integrate, stats
from scipy.special import expit

from agentstats.posterior import (
    consistency,
    contrast_matrix,
    contrast_table,
    new_task_pass_k,
    posterior_pass_at_k,
    posterior_pass_hat_k,
    summarize_pass_k,
)


def _fake_tree(rng, n_trials):
    """Posterior draws of a crossed model for 2 agents x 3 tasks, with stored counts."""
    agents, tasks = ["a", "b"], ["t1", "t2", "t3"]
    p = rng.uniform(0.05, 0.95, size=(2, 40, 2, 3))
    post = xr.Dataset(
        {
            "p": (("chain", "draw", "agent", "task"), p),
            "mu": (("chain", "draw"), rng.normal(0.2, 0.3, size=(2, 40))),
            "alpha": (("chain", "draw", "agent"), rng.normal(0, 0.5, size=(2, 40, 2))),
            "sigma_task": (("chain", "draw"), rng.uniform(0.5, 2.5, size=(2, 40))),
            "sigma_cell": (("chain", "draw"), rng.uniform(0.1, 1.5, size=(2, 40))),
        },
        coords={"agent": agents, "task": tasks},
    )
    n = np.asarray(n_trials)
    cd = xr.Dataset(
        {"n_trials": (("agent", "task"), n), "n_success": (("agent", "task"), n // 2),
         "n_min": (("agent",), np.where(n > 0, n, 10**9).min(axis=1))},
        coords={"agent": agents, "task": tasks},
    )
    return xr.DataTree.from_dict({"posterior": post, "constant_data": cd}), p


def test_observed_population_equals_direct_numpy():
    rng = np.random.default_rng(0)
    dt, p = _fake_tree(rng, [[4, 4, 0], [2, 3, 5]])  # agent a did not attempt t3
    hat = posterior_pass_hat_k(dt, [1, 3])
    at = posterior_pass_at_k(dt, [1, 3])
    assert hat.dims == ("chain", "draw", "agent", "k")
    for kk in (1, 3):
        np.testing.assert_allclose(hat.sel(agent="a", k=kk), np.mean(p[:, :, 0, :2] ** kk, axis=-1))
        np.testing.assert_allclose(hat.sel(agent="b", k=kk), np.mean(p[:, :, 1, :] ** kk, axis=-1))
        np.testing.assert_allclose(at.sel(agent="b", k=kk), np.mean(1 - (1 - p[:, :, 1, :]) ** kk, axis=-1))
    # k = 3 exceeds agent b's smallest n (2), not agent a's (4)
    assert hat.coords["extrapolated"].sel(agent="b", k=3) and not hat.coords["extrapolated"].sel(agent="a", k=3)
    all_tasks = posterior_pass_hat_k(dt, 1, tasks="all")
    np.testing.assert_allclose(all_tasks.sel(agent="a", k=1), p[:, :, 0, :].mean(-1))


@pytest.mark.parametrize("m, s, k", [(0.3, 1.5, 1), (-1.0, 2.5, 4), (2.0, 0.7, 8), (0.0, 3.0, 20), (0.0, 5.0, 8)])
def test_gauss_hermite_matches_quad(m, s, k):
    dens = stats.norm(m, s).pdf
    hat_q = integrate.quad(lambda e: expit(e) ** k * dens(e), -np.inf, np.inf, epsabs=1e-12)[0]
    at_q = 1 - integrate.quad(lambda e: (1 - expit(e)) ** k * dens(e), -np.inf, np.inf, epsabs=1e-12)[0]
    hat, at = new_task_pass_k(np.array(m), np.array(s), np.array([k]))
    assert hat[0] == pytest.approx(hat_q, abs=1e-5)
    assert at[0] == pytest.approx(at_q, abs=1e-5)


def test_new_population_uses_mu_alpha_and_both_sigmas():
    rng = np.random.default_rng(1)
    dt, _ = _fake_tree(rng, [[4, 4, 4], [4, 4, 4]])
    new = posterior_pass_hat_k(dt, 2, population="new")
    post = dt["posterior"]
    c, d = 1, 7
    m = float(post["mu"][c, d] + post["alpha"][c, d, 1])
    s = float(np.hypot(post["sigma_task"][c, d], post["sigma_cell"][c, d]))
    ref = integrate.quad(lambda e: expit(e) ** 2 * stats.norm(m, s).pdf(e), -np.inf, np.inf)[0]
    assert float(new.sel(agent="b", k=2)[c, d]) == pytest.approx(ref, abs=1e-7)
    assert new.attrs["population"] == "new"


def test_bad_arguments():
    dt, _ = _fake_tree(np.random.default_rng(2), [[1, 1, 1], [1, 1, 1]])
    for bad in (0, [1, -2], 1.5, []):
        with pytest.raises(ValueError):
            posterior_pass_hat_k(dt, bad)
    with pytest.raises(ValueError, match="population"):
        posterior_pass_hat_k(dt, 1, population="future")
    no_hyper = xr.DataTree.from_dict({"posterior": dt["posterior"].to_dataset()[["p"]]})
    with pytest.raises(ValueError, match="hyperparameters"):
        posterior_pass_hat_k(no_hyper, 1, population="new")


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
    assert s.ci_kind == "eti" and not s.extrapolated
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


def test_consistency_model_icc_from_sigmas():
    counts = pd.DataFrame([("a", "t1", 2, 1), ("a", "t2", 2, 2)], columns=["agent", "task_id", "n", "c"])
    post = xr.Dataset({"sigma_task": (("chain", "draw"), np.full((1, 10), 1.5)),
                       "sigma_cell": (("chain", "draw"), np.full((1, 10), 1.0))})
    out = consistency(counts, xr.DataTree.from_dict({"posterior": post})).iloc[0]
    denom = 1.5**2 + 1.0 + np.pi**2 / 3
    assert out.icc_model == pytest.approx((1.5**2 + 1.0) / denom)
    assert out.icc_cell == pytest.approx(1.0 / denom)


def test_real_fit_posterior_quantities(models_fit):
    hat = posterior_pass_hat_k(models_fit, [1, 2, 8], population="observed")
    new = posterior_pass_hat_k(models_fit, [1, 2, 8], population="new")
    assert hat.sizes["agent"] == 3 and list(hat["k"].values) == [1, 2, 8]
    # 4 trials per cell (3 where one trial was missing): k = 8 is extrapolated, k = 1 is not
    assert bool(hat.coords["extrapolated"].sel(k=8).all()) and not bool(hat.coords["extrapolated"].sel(k=1).any())
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
    cd = dt["constant_data"]
    n = cd["n_trials"].to_pandas().stack().rename("n")
    c = cd["n_success"].to_pandas().stack().rename("c")
    df = pd.concat([n, c], axis=1).reset_index()
    return df.rename(columns={"task": "task_id"})

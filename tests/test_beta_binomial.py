"""Beta-Binomial crossed model: closed-form oracles and one tiny real fit.

Oracles: the conjugate conditional mean (m phi + c) / (phi + n) (BDA3 sec. 2.4), the Beta-Binomial likelihood as
the integral of the Binomial over the Beta density (scipy.integrate.quad with algebraic end-point weights), and the
new-task E[p^k] as a double integral (normal over the task effect, Beta over p).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pymc as pm
import pytest
from scipy import integrate, special, stats

from agentstats.models.beta_binomial import build_beta_binomial, conditional_p_draws, linear_predictor
from agentstats.models.builders import build_model
from agentstats.posterior import new_task_pass_k_beta, posterior_pass_hat_k, summarize_pass_k


def _bb_pmf_quad(c: int, n: int, a: float, b: float) -> float:
    """P(c | n) = C(n, c) * int_0^1 p^(a+c-1) (1-p)^(b+n-c-1) dp / B(a, b), by quad with algebraic weights."""
    val, _ = integrate.quad(lambda p: 1.0, 0.0, 1.0, weight="alg", wvar=(a + c - 1.0, b + n - c - 1.0))
    return special.comb(n, c) * val / special.beta(a, b)


def _beta_moment_quad(k: int, a: float, b: float, complement: bool) -> float:
    """E[p^k] (or E[(1-p)^k]) under Beta(a, b), by quad with algebraic end-point weights."""
    f = (lambda p: (1.0 - p) ** k) if complement else (lambda p: p**k)
    val, _ = integrate.quad(f, 0.0, 1.0, weight="alg", wvar=(a - 1.0, b - 1.0))
    return val / special.beta(a, b)


def test_conditional_p_mean_matches_conjugate_formula():
    eta = np.array([[-1.2, 0.4, 2.5], [0.0, -3.0, 1.0]])
    phi = 2.7
    n = np.array([[4, 2, 8], [0, 3, 5]])
    c = np.array([[1, 2, 8], [0, 0, 3]])
    draws = 200_000
    rng = np.random.default_rng(12345)
    p = conditional_p_draws(np.broadcast_to(eta, (draws, *eta.shape)), np.full(draws, phi), n, c, rng)
    assert p.shape == (draws, *eta.shape)
    m = 1.0 / (1.0 + np.exp(-eta))
    a, b = m * phi + c, (1.0 - m) * phi + n - c
    expected = a / (a + b)  # = (m phi + c) / (phi + n); n = 0 gives the prior mean m
    np.testing.assert_allclose(expected, (m * phi + c) / (phi + n))
    sd = np.sqrt(a * b / ((a + b) ** 2 * (a + b + 1.0)))
    assert np.all(np.abs(p.mean(axis=0) - expected) < 5.0 * sd / np.sqrt(draws))
    np.testing.assert_allclose(p.var(axis=0), sd**2, rtol=0.03)


def test_linear_predictor_shapes():
    rng = np.random.default_rng(0)
    mu, alpha, beta = rng.normal(size=(2, 5)), rng.normal(size=(2, 5, 3)), rng.normal(size=(2, 5, 4))
    eta = linear_predictor(mu, alpha, beta)
    assert eta.shape == (2, 5, 3, 4)
    assert eta[1, 2, 0, 3] == pytest.approx(mu[1, 2] + alpha[1, 2, 0] + beta[1, 2, 3])


COUNTS4 = pd.DataFrame(
    dict(agent=["a", "a", "b", "b"], task_id=["t1", "t2", "t1", "t2"], n=[3, 2, 4, 1], c=[0, 2, 3, 1])
)
FIXED = dict(mu=0.3, alpha=np.array([0.5, -0.5]), beta=np.array([-0.8, 0.8]), rho=0.35)


def _potential_logp(model, values: dict) -> float:
    """The cells' log-likelihood term (potential ``c_loglik``) at fixed parameter values."""
    fixed = pm.do(model, values)
    return float(fixed["c_loglik"].eval())


def _mixture_cell_logp(n: int, c: int, m: float, phi: float, lam: float | None) -> float:
    """Log P(c | n) of one cell by quadrature: Beta-Binomial, or the zero/one-inflated mixture, written out."""
    bb = _bb_pmf_quad(c, n, m * phi, (1 - m) * phi)
    if lam is None:
        return float(np.log(bb))
    det = m * (c == n) + (1 - m) * (c == 0)
    return float(np.log(lam * det + (1 - lam) * bb))


@pytest.mark.slow
@pytest.mark.parametrize("inflated", [False, True])
@pytest.mark.parametrize("per_trial", [True, False])
def test_model_likelihood_equals_beta_integral(inflated, per_trial, monkeypatch):
    """The sampled density (rising-factorial or gammaln form) is the sum of the quadrature cell log-pmfs minus the
    constant sum log C(n, c).
    """
    import agentstats.models.beta_binomial as bbm

    monkeypatch.setattr(bbm, "RISING_MAX_MEAN_TRIALS", 24 if per_trial else 0)
    model = build_beta_binomial(COUNTS4, parameterization={"agent": "centered", "task": "centered"},
                                inflated=inflated)
    lam = 0.4 if inflated else None
    values = dict(FIXED, **({"det_share": lam} if inflated else {}))
    got = _potential_logp(model, values)
    phi = (1.0 - FIXED["rho"]) / FIXED["rho"]
    n, c = COUNTS4["n"].to_numpy(), COUNTS4["c"].to_numpy()
    ai, ti = np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1])
    m = special.expit(FIXED["mu"] + FIXED["alpha"][ai] + FIXED["beta"][ti])
    want = sum(_mixture_cell_logp(n[i], c[i], m[i], phi, lam) - np.log(special.comb(n[i], c[i])) for i in range(4))
    assert got == pytest.approx(want, rel=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("design", ["uniform", "skewed"])
def test_rising_factorial_path_on_many_trials_and_extremes(design, monkeypatch):
    """Per-trial and gammaln forms both equal scipy's Beta-Binomial log-pmf (minus log C(n, c)) on 200 random cells
    with many all-or-nothing cells: n uniform on 1..30, or mostly 2 with a few cells of 200 trials (mean still below
    the per-trial limit, so the all-or-nothing cells fall back to gammaln).
    """
    import pytensor.tensor as pt

    import agentstats.models.beta_binomial as bbm

    rng = np.random.default_rng(3)
    n = rng.integers(1, 31, 200) if design == "uniform" else np.where(rng.random(200) < 0.05, 200, 2)
    c = np.where(rng.random(200) < 0.4, np.where(rng.random(200) < 0.5, 0, n), rng.binomial(n, 0.5))
    eta_v = rng.normal(0.0, 2.0, 200)
    if design == "skewed":  # the case the dense guard exists for: an all-or-nothing cell with many trials
        assert np.any((n == 200) & ((c == 0) | (c == n))) and n.mean() <= 24
    phi = 2.5
    m = special.expit(eta_v)
    log_bb = stats.betabinom.logpmf(c, n, m * phi, (1 - m) * phi) - np.log(special.comb(n, c))
    det_p = np.where(c == n, m, np.where(c == 0, 1 - m, 0.0))
    for lam in (None, 0.3):
        if lam is None:
            want = float(np.sum(log_bb))
        else:
            with np.errstate(divide="ignore"):
                want = float(np.sum(np.logaddexp(np.log(lam * det_p) - np.log(special.comb(n, c)),
                                                 np.log1p(-lam) + log_bb)))
        det = None if lam is None else pt.as_tensor(np.float64(lam))
        for limit in (1000, 0):
            monkeypatch.setattr(bbm, "RISING_MAX_MEAN_TRIALS", limit)
            got = float(bbm.beta_binomial_logp(pt.as_tensor(eta_v), pt.as_tensor(np.float64(phi)), n, c, det).eval())
            assert got == pytest.approx(want, rel=1e-10)


def test_zoi_cell_log_likelihood_against_brute_force():
    from agentstats.models.beta_binomial import cell_log_likelihood

    n = np.array([[3, 2, 4], [1, 5, 2]])
    c = np.array([[0, 2, 3], [1, 0, 1]])
    eta = np.array([[[-1.0, 0.5, 2.0], [0.2, -2.5, 0.0]]])  # S = (1,)
    phi, lam = np.array([1.7]), np.array([0.25])
    got = cell_log_likelihood(eta, phi, n, c, lam)
    assert got.shape == (1, 2, 3)
    for i in range(2):
        for j in range(3):
            m = special.expit(eta[0, i, j])
            assert got[0, i, j] == pytest.approx(_mixture_cell_logp(n[i, j], c[i, j], m, 1.7, 0.25), rel=1e-8)


def test_zoi_conditional_p_component_probabilities():
    """Share of draws with p exactly 1 / 0 equals Bayes' rule on the two mixture terms; flipping cells are never
    deterministic; the mean of p equals the closed-form posterior mean of the mixture.
    """
    eta = np.array([[1.0, -0.5, 0.3, 0.8]])
    n = np.array([[3, 2, 4, 0]])
    c = np.array([[3, 0, 2, 0]])
    phi, lam = 3.0, 0.3
    draws = 200_000
    rng = np.random.default_rng(99)
    p = conditional_p_draws(np.broadcast_to(eta, (draws, *eta.shape)), np.full(draws, phi), n, c, rng,
                            det_share=np.full(draws, lam))
    m = special.expit(eta[0])
    # cell 0: all 3 succeeded
    bb0 = _bb_pmf_quad(3, 3, m[0] * phi, (1 - m[0]) * phi)
    w0 = lam * m[0] / (lam * m[0] + (1 - lam) * bb0)
    assert np.mean(p[:, 0, 0] == 1.0) == pytest.approx(w0, abs=4 * np.sqrt(w0 * (1 - w0) / draws))
    mean0 = w0 + (1 - w0) * (m[0] * phi + 3) / (phi + 3)
    assert p[:, 0, 0].mean() == pytest.approx(mean0, abs=0.003)
    # cell 1: 0 of 2
    bb1 = _bb_pmf_quad(0, 2, m[1] * phi, (1 - m[1]) * phi)
    w1 = lam * (1 - m[1]) / (lam * (1 - m[1]) + (1 - lam) * bb1)
    assert np.mean(p[:, 0, 1] == 0.0) == pytest.approx(w1, abs=4 * np.sqrt(w1 * (1 - w1) / draws))
    # cell 2: 2 of 4 flips, never deterministic
    assert not np.any((p[:, 0, 2] == 0.0) | (p[:, 0, 2] == 1.0))
    # cell 3: no trials: deterministic with prob lam, then 1 with prob m; mean stays m
    assert np.mean(p[:, 0, 3] == 1.0) == pytest.approx(lam * m[3], abs=0.004)
    assert p[:, 0, 3].mean() == pytest.approx(m[3], abs=0.004)


def test_zoi_new_task_moment_equals_double_integral():
    m_loc, s, phi, lam = -0.3, 1.1, 2.5, 0.35
    ks = np.array([1, 4])
    hat, at = new_task_pass_k_beta(np.array(m_loc), np.array(s), np.array(phi), ks, det_share=np.array(lam))
    for j, k in enumerate(ks):
        for complement, got in ((False, hat[j]), (True, 1.0 - at[j])):

            def inner(e, k=k, complement=complement):
                q = special.expit(m_loc + e)
                det = (1 - q) if complement else q
                beta_part = _beta_moment_quad(int(k), q * phi, (1 - q) * phi, complement)
                return stats.norm.pdf(e, 0.0, s) * (lam * det + (1 - lam) * beta_part)

            want, _ = integrate.quad(inner, -10 * s, 10 * s, limit=200)
            assert got == pytest.approx(want, abs=1e-7)


def test_new_task_moment_equals_double_integral():
    m_loc, s, phi = 0.2, 0.8, 4.0
    ks = np.array([1, 3])
    hat, at = new_task_pass_k_beta(np.array(m_loc), np.array(s), np.array(phi), ks)
    for j, k in enumerate(ks):
        for complement, got in ((False, hat[j]), (True, 1.0 - at[j])):

            def inner(e, k=k, complement=complement):
                q = special.expit(m_loc + e)
                return stats.norm.pdf(e, 0.0, s) * _beta_moment_quad(int(k), q * phi, (1 - q) * phi, complement)

            want, _ = integrate.quad(inner, -10 * s, 10 * s, limit=200)
            assert got == pytest.approx(want, abs=1e-7)


@pytest.mark.slow
def test_build_model_dispatch_and_single_agent():
    counts = pd.DataFrame(dict(agent="a", task_id=["t1", "t2", "t3"], n=[2, 2, 0], c=[1, 2, 0]))
    model = build_model(counts, "beta_binomial")
    names = {v.name for v in model.free_RVs}
    assert "rho" not in names and "alpha" not in {v.name for v in model.deterministics} | names
    assert "p" in {v.name for v in model.deterministics}
    assert model._agentstats["has_cell_effect"] is False


# --------------------------------------------------------------------------- one tiny real fit (session-scoped)
A, T, N = 3, 15, 4
TRUE = dict(mu=0.2, alpha=np.array([-0.8, 0.1, 0.7]), sigma_task=1.0, rho=0.3)


def _tiny_data():
    rng = np.random.default_rng(2026)
    beta = rng.normal(0.0, TRUE["sigma_task"], T)
    phi = (1 - TRUE["rho"]) / TRUE["rho"]
    m = special.expit(TRUE["mu"] + TRUE["alpha"][:, None] + beta[None, :])
    p = rng.beta(m * phi, (1 - m) * phi)
    n = np.full((A, T), N)
    n[0, 0] = 0  # one cell with no trials
    c = rng.binomial(n, p)
    counts = pd.DataFrame(
        dict(
            agent=np.repeat([f"a{i}" for i in range(A)], T),
            task_id=np.tile([f"t{j}" for j in range(T)], A),
            n=n.ravel(),
            c=c.ravel(),
        )
    )
    return p, n, c, counts


def _tiny(model: str):
    from agentstats.models.fit import fit

    p, n, c, counts = _tiny_data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dt = fit(counts, model, draws=300, tune=300, chains=2, random_seed=7, log_likelihood=True,
                 check_convergence=False)
    return dt, p, n, c, counts


@pytest.fixture(scope="module")
def tiny_fit():
    return _tiny("beta_binomial")


@pytest.fixture(scope="module")
def tiny_zoi_fit():
    return _tiny("zoi_beta_binomial")


@pytest.mark.slow
def test_default_model_is_zoi_beta_binomial_and_deterministic(tiny_zoi_fit):
    """Same data, seed and (default) sampler: identical draws, including the post-hoc conditional p draws."""
    from agentstats.models.fit import fit

    dt, *_, counts = tiny_zoi_fit
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        again = fit(counts, draws=300, tune=300, chains=2, random_seed=7, check_convergence=False)
    assert again.attrs["agentstats_model"] == "zoi_beta_binomial"
    for var in ("p", "rho", "det_share"):
        # equal up to rounding (compiled code and BLAS kernels may differ in the last bits)
        np.testing.assert_allclose(again["posterior"][var].to_numpy(), dt["posterior"][var].to_numpy(),
                                   rtol=1e-6, atol=1e-9)


@pytest.mark.slow
def test_tiny_fit_dims_attrs(tiny_fit):
    dt, *_ = tiny_fit
    post = dt["posterior"]
    assert post["p"].dims == ("chain", "draw", "agent", "task")
    assert post["p"].shape == (2, 300, A, T)
    for v in ("mu", "alpha", "beta", "sigma_agent", "sigma_task", "rho", "phi"):
        assert v in post
    assert "gamma" not in post and "sigma_cell" not in post
    assert dt.attrs["agentstats_model"] == "beta_binomial"
    assert dt.attrs["p_draws"] == "conditional_beta"
    assert dt["log_likelihood"]["c"].shape == (2, 300, A * T - 1)
    pv = post["p"].to_numpy()
    assert np.all((pv >= 0) & (pv <= 1))


@pytest.mark.slow
def test_tiny_fit_log_likelihood_is_beta_binomial(tiny_fit):
    dt, _, n, c, _ = tiny_fit
    post = dt["posterior"]
    ch, dr = 1, 123
    eta = float(post["mu"][ch, dr]) + post["alpha"][ch, dr].to_numpy()[:, None] + post["beta"][ch, dr].to_numpy()
    phi = float(post["phi"][ch, dr])
    ai, ti = np.nonzero(n > 0)
    ll = dt["log_likelihood"]["c"][ch, dr].to_numpy()
    for i in (0, 7, 20):
        m = special.expit(eta[ai[i], ti[i]])
        want = np.log(_bb_pmf_quad(c[ai[i], ti[i]], n[ai[i], ti[i]], m * phi, (1 - m) * phi))
        assert ll[i] == pytest.approx(want, rel=1e-7)


@pytest.mark.slow
def test_tiny_fit_recovers_suite_pass_hat_k(tiny_fit):
    dt, p_true, n, _, _ = tiny_fit
    ks = [1, 2]
    summ = summarize_pass_k(posterior_pass_hat_k(dt, ks), ci_prob=0.95)
    inside = 0
    for i in range(A):
        attempted = n[i] > 0
        for k in ks:
            truth = float(np.mean(p_true[i, attempted] ** k))
            row = summ[(summ.agent == f"a{i}") & (summ.k == k)].iloc[0]
            inside += row.ci_low <= truth <= row.ci_high
    # 6 (agent, k) values with 95 % credible intervals: all 6 inside is the expected outcome; allow one miss.
    assert inside >= 5
    new = posterior_pass_hat_k(dt, ks, "new")
    assert new.dims == ("chain", "draw", "agent", "k")
    assert np.all((new.to_numpy() > 0) & (new.to_numpy() < 1))


@pytest.mark.slow
def test_tiny_zoi_fit(tiny_zoi_fit):
    """zoi_beta_binomial: dims and attrs, stored log-likelihood = the mixture's, exact 0/1 draws only in cells
    without a flip, suite pass^k covering the truth, new-task pass^k and the model ICC in range.
    """
    from agentstats.models.beta_binomial import cell_log_likelihood
    from agentstats.posterior import consistency

    dt, p_true, n, c, counts = tiny_zoi_fit
    post = dt["posterior"]
    assert dt.attrs["agentstats_model"] == "zoi_beta_binomial" and dt.attrs["p_draws"] == "conditional_beta"
    assert post["p"].shape == (2, 300, A, T) and post["det_share"].dims == ("chain", "draw")
    lam = post["det_share"].to_numpy()
    assert np.all((lam > 0) & (lam < 1))
    ch, dr = 0, 77
    eta = float(post["mu"][ch, dr]) + post["alpha"][ch, dr].to_numpy()[:, None] + post["beta"][ch, dr].to_numpy()
    ai, ti = np.nonzero(n > 0)
    want = cell_log_likelihood(eta[ai, ti], np.array(float(post["phi"][ch, dr])), n[ai, ti], c[ai, ti],
                               np.array(float(lam[ch, dr])))
    np.testing.assert_allclose(dt["log_likelihood"]["c"][ch, dr].to_numpy(), want, rtol=1e-10)
    pv = post["p"].to_numpy()
    flips = (c > 0) & (c < n)
    assert not np.any(((pv == 0.0) | (pv == 1.0))[..., flips])
    assert np.any(pv[..., (c == n) & (n > 0)] == 1.0)
    summ = summarize_pass_k(posterior_pass_hat_k(dt, [1, 2]), ci_prob=0.95)
    inside = sum(
        row.ci_low <= float(np.mean(p_true[int(row.agent[1:]), n[int(row.agent[1:])] > 0] ** row.k)) <= row.ci_high
        for row in summ.itertuples()
    )
    assert inside >= 5
    new = posterior_pass_hat_k(dt, [1, 3], "new").to_numpy()
    assert np.all((new > 0) & (new < 1))
    icc = consistency(counts, dt)
    rho = post["rho"].to_numpy().ravel()
    assert icc["icc_cell"].iloc[0] == pytest.approx(float(np.mean(lam.ravel() + (1 - lam.ravel()) * rho)))

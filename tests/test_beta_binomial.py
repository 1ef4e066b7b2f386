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
    p = conditional_p_draws(np.broadcast_to(eta, (draws,) + eta.shape), np.full(draws, phi), n, c, rng)
    assert p.shape == (draws,) + eta.shape
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


def test_model_likelihood_equals_beta_integral():
    counts = pd.DataFrame(
        dict(agent=["a", "a", "b", "b"], task_id=["t1", "t2", "t1", "t2"], n=[3, 2, 4, 1], c=[0, 2, 3, 1])
    )
    model = build_beta_binomial(counts, parameterization={"agent": "centered", "task": "centered"})
    mu, alpha, beta, rho = 0.3, np.array([0.5, -0.5]), np.array([-0.8, 0.8]), 0.35
    fixed = pm.do(model, {"mu": mu, "alpha": alpha, "beta": beta, "rho": rho})
    logp = fixed.compile_logp(vars=[fixed["c"]], sum=False, jacobian=False)(fixed.initial_point())[0]
    phi = (1.0 - rho) / rho
    n = np.array([3, 2, 4, 1])
    c = np.array([0, 2, 3, 1])
    ai, ti = np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1])
    m = special.expit(mu + alpha[ai] + beta[ti])
    want = [np.log(_bb_pmf_quad(c[i], n[i], m[i] * phi, (1 - m[i]) * phi)) for i in range(4)]
    np.testing.assert_allclose(logp, want, rtol=1e-7)


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


def test_build_model_dispatch_and_single_agent():
    counts = pd.DataFrame(dict(agent="a", task_id=["t1", "t2", "t3"], n=[2, 2, 0], c=[1, 2, 0]))
    model = build_model(counts, "beta_binomial")
    names = {v.name for v in model.free_RVs}
    assert "rho" not in names and "alpha" not in {v.name for v in model.deterministics} | names
    assert "p" in {v.name for v in model.deterministics}
    assert model._agentstats["has_cell_effect"] is False  # noqa: SLF001


# --------------------------------------------------------------------------- one tiny real fit (session-scoped)
A, T, N = 3, 15, 4
TRUE = dict(mu=0.2, alpha=np.array([-0.8, 0.1, 0.7]), sigma_task=1.0, rho=0.3)


@pytest.fixture(scope="module")
def tiny_fit():
    from agentstats.models.fit import fit

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
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dt = fit(counts, "beta_binomial", draws=300, tune=300, chains=2, random_seed=7, log_likelihood=True,
                 check_convergence=False)
    return dt, p, n, c, counts


def test_default_model_is_beta_binomial_and_deterministic(tiny_fit):
    """Same data, seed and (default) sampler: identical draws, including the post-hoc conditional p draws."""
    from agentstats.models.fit import fit

    dt, *_, counts = tiny_fit
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        again = fit(counts, draws=300, tune=300, chains=2, random_seed=7, check_convergence=False)
    assert again.attrs["agentstats_model"] == "beta_binomial"
    np.testing.assert_array_equal(again["posterior"]["p"].to_numpy(), dt["posterior"]["p"].to_numpy())
    np.testing.assert_array_equal(again["posterior"]["rho"].to_numpy(), dt["posterior"]["rho"].to_numpy())


def test_tiny_fit_dims_attrs(tiny_fit):
    dt, _, n, _, _ = tiny_fit
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

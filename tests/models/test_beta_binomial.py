"""Beta-Binomial families: closed-form oracles, the model's log-pmf, and one real fit with known per-agent consistency.

Oracles: the conjugate conditional mean (m phi + c) / (phi + n) (BDA3 sec. 2.4), the Beta-Binomial pmf as the integral
of the Binomial over the Beta density (scipy.integrate.quad with algebraic end-point weights), the new-task E[p^k] as a
double integral (normal over the task effect, Beta over p), scipy's betabinom, and simulation with known truth.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytensor
import pytensor.tensor as pt
import pytest
from scipy import integrate, special, stats

from agentstats.models import Priors, family_from_attrs, fit, get_family, prepare_counts
from agentstats.models.families.base import TASK_BLOCK
from agentstats.models.families.beta_binomial import (
    BetaBinomialFamily,
    beta_binomial_logpmf,
    conditional_p,
    new_task_moments_beta,
)
from agentstats.models.families.beta_binomial.likelihood import (
    _kernel_data,
    _kernel_logp_bb,
    _kernel_logp_zoi,
    _make_logp,
    _phi_term_tensor,
)
from agentstats.posterior import consistency, posterior_pass_hat_k, summarize_pass_k


def _eval(out):
    """Evaluate a PyTensor graph with the Python linker (no compilation: fast in tests)."""
    return pytensor.function([], out, mode="FAST_COMPILE")()


def _bb_pmf_quad(c: int, n: int, a: float, b: float) -> float:
    """P(c | n) = C(n, c) * int_0^1 p^(a+c-1) (1-p)^(b+n-c-1) dp / B(a, b), by quad with algebraic weights."""
    val, _ = integrate.quad(lambda p: 1.0, 0.0, 1.0, weight="alg", wvar=(a + c - 1.0, b + n - c - 1.0))
    return special.comb(n, c) * val / special.beta(a, b)


def _beta_moment_quad(k: int, a: float, b: float, complement: bool) -> float:
    """E[p^k] (or E[(1-p)^k]) under Beta(a, b), by quad with algebraic end-point weights."""
    f = (lambda p: (1.0 - p) ** k) if complement else (lambda p: p**k)
    val, _ = integrate.quad(f, 0.0, 1.0, weight="alg", wvar=(a - 1.0, b - 1.0))
    return val / special.beta(a, b)


def _mixture_cell_logp(n: int, c: int, m: float, phi: float, lam: float | None) -> float:
    """Log P(c | n) of one cell by quadrature: Beta-Binomial, or the zero/one-inflated mixture, written out."""
    bb = _bb_pmf_quad(c, n, m * phi, (1 - m) * phi)
    if lam is None:
        return float(np.log(bb))
    det = m * (c == n) + (1 - m) * (c == 0)
    return float(np.log(lam * det + (1 - lam) * bb))


# ------------------------------------------------------------------------------------------------ numpy oracles
def test_conditional_p_mean_matches_conjugate_formula():
    eta = np.array([[-1.2, 0.4, 2.5], [0.0, -3.0, 1.0]])
    phi = 2.7
    n = np.array([[4, 2, 8], [0, 3, 5]])
    c = np.array([[1, 2, 8], [0, 0, 3]])
    draws = 200_000
    rng = np.random.default_rng(12345)
    p = conditional_p(np.broadcast_to(eta, (draws, *eta.shape)), np.full((draws, 1, 1), phi), n, c, rng)
    assert p.shape == (draws, *eta.shape)
    m = special.expit(eta)
    a, b = m * phi + c, (1.0 - m) * phi + n - c
    expected = a / (a + b)  # = (m phi + c) / (phi + n); n = 0 gives the prior mean m
    sd = np.sqrt(a * b / ((a + b) ** 2 * (a + b + 1.0)))
    assert np.all(np.abs(p.mean(axis=0) - expected) < 5.0 * sd / np.sqrt(draws))
    np.testing.assert_allclose(p.var(axis=0), sd**2, rtol=0.03)


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
    p = conditional_p(
        np.broadcast_to(eta, (draws, *eta.shape)), np.full((draws, 1, 1), phi), n, c, rng,
        det_share=np.full((draws, 1, 1), lam),
    )
    m = special.expit(eta[0])
    bb0 = _bb_pmf_quad(3, 3, m[0] * phi, (1 - m[0]) * phi)
    w0 = lam * m[0] / (lam * m[0] + (1 - lam) * bb0)
    assert np.mean(p[:, 0, 0] == 1.0) == pytest.approx(w0, abs=4 * np.sqrt(w0 * (1 - w0) / draws))
    assert p[:, 0, 0].mean() == pytest.approx(w0 + (1 - w0) * (m[0] * phi + 3) / (phi + 3), abs=0.003)
    bb1 = _bb_pmf_quad(0, 2, m[1] * phi, (1 - m[1]) * phi)
    w1 = lam * (1 - m[1]) / (lam * (1 - m[1]) + (1 - lam) * bb1)
    assert np.mean(p[:, 0, 1] == 0.0) == pytest.approx(w1, abs=4 * np.sqrt(w1 * (1 - w1) / draws))
    assert not np.any((p[:, 0, 2] == 0.0) | (p[:, 0, 2] == 1.0))  # 2 of 4: never deterministic
    assert np.mean(p[:, 0, 3] == 1.0) == pytest.approx(lam * m[3], abs=0.004)  # no trials: prior mixture
    assert p[:, 0, 3].mean() == pytest.approx(m[3], abs=0.004)


@pytest.mark.parametrize("n_big", [5, 90])  # 90 > RISING_K_MAX: the betaln branch
def test_det_posterior_equals_bayes_rule_on_the_logpmf(n_big):
    """The product form of P(deterministic | c) equals Bayes' rule on the two mixture terms of the reference log-pmf
    (ragged n, n = 0 and n = 1 included)."""
    from agentstats.models.families.beta_binomial.moments import _det_posterior

    n = np.array([[n_big, 2, 4, 0, 1, n_big], [1, 3, n_big, 2, 0, 4]])
    c = np.array([[n_big, 0, 2, 0, 1, 0], [0, 3, n_big, 1, 0, 0]])
    rng = np.random.default_rng(5)
    eta = rng.normal(0.0, 1.5, (7, *n.shape))
    phi = rng.uniform(0.3, 20.0, (7, 1, 1))
    lam = rng.uniform(0.05, 0.9, (7, 1, 1))
    got = _det_posterior(eta, phi * special.expit(eta), phi * special.expit(-eta), n, c, lam)
    log_bb = beta_binomial_logpmf(c, n, eta, phi)
    with np.errstate(divide="ignore"):
        log_det = np.where(c == n, special.log_expit(eta), np.where(c == 0, special.log_expit(-eta), -np.inf))
    log_det = np.where(n == 0, 0.0, log_det)
    l_det, l_bb = np.log(lam) + log_det, np.log1p(-lam) + log_bb
    want = np.exp(l_det - np.logaddexp(l_det, l_bb))
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-14)
    assert np.all(got[:, (c != n) & (c != 0)] == 0.0)


def test_det_posterior_single_trial_cells_equal_bayes_rule_on_the_logpmf():
    """Cells of at most one trial (the shortcut P = lam on c = 0 or c = n) agree with Bayes' rule on the log-pmf."""
    from agentstats.models.families.beta_binomial.moments import _det_posterior

    n = np.array([[1, 1, 0, 1], [0, 1, 1, 1]])
    c = np.array([[1, 0, 0, 1], [0, 0, 1, 0]])
    rng = np.random.default_rng(6)
    eta = rng.normal(0.0, 1.5, (5, *n.shape))
    phi = rng.uniform(0.3, 20.0, (5, 1, 1))
    lam = rng.uniform(0.05, 0.9, (5, 1, 1))
    got = _det_posterior(eta, phi * special.expit(eta), phi * special.expit(-eta), n, c, lam)
    log_bb = beta_binomial_logpmf(c, n, eta, phi)
    log_det = np.where(n == 0, 0.0, np.where(c == n, special.log_expit(eta), special.log_expit(-eta)))
    l_det, l_bb = np.log(lam) + log_det, np.log1p(-lam) + log_bb
    np.testing.assert_allclose(got, np.exp(l_det - np.logaddexp(l_det, l_bb)), rtol=1e-12, atol=1e-14)
    assert got.shape == eta.shape


def test_new_task_moments_product_and_betaln_paths_agree(monkeypatch):
    """The running-product Beta moments (k <= RISING_K_MAX) equal the betaln form."""
    from agentstats.models.families.beta_binomial import moments as bb

    rng = np.random.default_rng(11)
    m, s = rng.normal(0, 1, (3, 5)), rng.uniform(0.2, 2.0, (3, 5))
    phi, lam = rng.uniform(0.5, 30.0, (3, 5)), rng.uniform(0.0, 0.8, (3, 5))
    ks = np.array([1, 2, 5, 8, 40, 5])
    fast = new_task_moments_beta(m, s, phi, ks, det_share=lam)
    monkeypatch.setattr(bb, "RISING_K_MAX", 0)
    slow = new_task_moments_beta(m, s, phi, ks, det_share=lam)
    for f, w in zip(fast, slow, strict=True):
        np.testing.assert_allclose(f, w, rtol=1e-11, atol=1e-14)


def test_numpy_logpmf_against_quadrature():
    n = np.array([[3, 2, 4], [1, 5, 2]])
    c = np.array([[0, 2, 3], [1, 0, 1]])
    eta = np.array([[-1.0, 0.5, 2.0], [0.2, -2.5, 0.0]])
    for lam in (None, 0.25):
        got = beta_binomial_logpmf(c, n, eta, 1.7, lam)
        for i in range(2):
            for j in range(3):
                want = _mixture_cell_logp(n[i, j], c[i, j], special.expit(eta[i, j]), 1.7, lam)
                assert got[i, j] == pytest.approx(want, rel=1e-8)


@pytest.mark.parametrize("inflated", [False, True])
def test_new_task_moment_equals_double_integral(inflated):
    m_loc, s, phi, lam = -0.3, 1.1, 2.5, (0.35 if inflated else None)
    ks = np.array([1, 4])
    hat, at = new_task_moments_beta(
        np.array(m_loc), np.array(s), np.array(phi), ks, det_share=None if lam is None else np.array(lam)
    )
    for j, k in enumerate(ks):
        for complement, got in ((False, hat[j]), (True, 1.0 - at[j])):

            def inner(e, k=k, complement=complement):
                q = special.expit(m_loc + e)
                beta_part = _beta_moment_quad(int(k), q * phi, (1 - q) * phi, complement)
                if lam is None:
                    return stats.norm.pdf(e, 0.0, s) * beta_part
                det = (1 - q) if complement else q
                return stats.norm.pdf(e, 0.0, s) * (lam * det + (1 - lam) * beta_part)

            want, _ = integrate.quad(inner, -10 * s, 10 * s, limit=200)
            assert got == pytest.approx(want, abs=1e-7)


# ------------------------------------------------------------------------------------------------ the model's log-pmf
@pytest.mark.parametrize("design", ["uniform", "skewed", "few"])
@pytest.mark.parametrize("inflated", [False, True])
def test_custom_dist_logp_equals_scipy_in_both_forms(design, inflated):
    """The one-pass kernel and the gammaln form of the observed distribution's log-pmf both equal scipy's
    Beta-Binomial (and the inflated mixture written out), per cell, on 200 random cells with many all-or-nothing cells,
    per-agent concentrations, n uniform on 1..30, mostly 2 with a few cells of 200 trials (the kernel's log-space
    path), or uniform on 1..6.
    """
    rng = np.random.default_rng(3)
    size = 200
    n = {
        "uniform": rng.integers(1, 31, size),
        "skewed": np.where(rng.random(size) < 0.05, 200, 2),
        "few": rng.integers(1, 7, size),
    }[design]
    c = np.where(rng.random(size) < 0.4, np.where(rng.random(size) < 0.5, 0, n), rng.binomial(n, 0.5))
    eta = rng.normal(0.0, 2.0, size)
    agent = rng.integers(0, 3, size)
    phi_agent = np.array([0.4, 2.5, 30.0])
    lam = 0.3 if inflated else None
    want = beta_binomial_logpmf(c, n, eta, phi_agent[agent], lam)
    phi_term = _phi_term_tensor(pt.as_tensor(phi_agent), agent, n, None)
    det = [pt.as_tensor(np.full(size, lam))] if inflated else []
    n_t = pt.as_tensor(n.astype(float))
    cell = [pt.as_tensor(c), pt.as_tensor(eta), pt.as_tensor(phi_agent[agent])]
    got = _eval(_make_logp(inflated)(*cell, phi_term, *det, n_t))
    np.testing.assert_allclose(got, want, rtol=1e-10)
    kernel = _kernel_logp_zoi if inflated else _kernel_logp_bb
    c_shared, n_shared, log_comb = _kernel_data(c, n)  # the data as the model holds them: shared variables
    got = _eval(kernel(c_shared, *cell[1:], *det, n_shared, log_comb))
    np.testing.assert_allclose(got, want, rtol=1e-10)


COUNTS4 = pd.DataFrame(
    dict(agent=["a", "a", "b", "b"], task_id=["t1", "t2", "t1", "t2"], n=[3, 2, 4, 1], c=[0, 2, 3, 1])
)


@pytest.mark.parametrize("complete", [True, False])
@pytest.mark.parametrize("dispersion", ["agent", "shared"])
@pytest.mark.parametrize("inflated", [False, True])
def test_model_cell_logp_equals_beta_integral(inflated, dispersion, complete):
    """The built model's observed ``c`` has, per cell, the quadrature log-pmf at fixed parameter values, on a complete
    agent x task grid (broadcast per-agent terms) and with a cell not attempted (gathered per-agent terms).
    """
    import pymc as pm

    family = get_family("zoi_beta_binomial" if inflated else "beta_binomial", dispersion=dispersion)
    counts = COUNTS4 if complete else COUNTS4.assign(n=[3, 2, 0, 1], c=[0, 2, 0, 1])
    model, _ = family.build(prepare_counts(counts), Priors(), {"agent": "centered", "task": "centered"})
    rho = np.array([0.35, 0.6]) if dispersion == "agent" else 0.35
    fixed = dict(mu=0.3, alpha=np.array([0.5, -0.5]), beta=np.array([-0.8, 0.8]))
    fixed["rho"] = rho
    if inflated:
        fixed["det_share"] = 0.4
    done = pm.do(model, fixed)
    got = _eval(done.logp(vars=[done["c"]], sum=False)[0])
    phi = (1.0 - np.asarray(rho)) / np.asarray(rho)
    keep = counts.n.to_numpy() > 0
    ai, ti = np.array([0, 0, 1, 1])[keep], np.array([0, 1, 0, 1])[keep]
    m = special.expit(fixed["mu"] + fixed["alpha"][ai] + fixed["beta"][ti])
    n, c = counts.n.to_numpy()[keep], counts.c.to_numpy()[keep]
    phis = phi[ai] if np.ndim(phi) else np.full(n.size, phi)
    want = [_mixture_cell_logp(n[i], c[i], m[i], phis[i], 0.4 if inflated else None) for i in range(n.size)]
    np.testing.assert_allclose(got, want, rtol=1e-9)


@pytest.mark.slow  # compiles the model's logp and draws: about 3.5 s
def test_random_generator_matches_logpmf():
    """The observed distribution's random draws (used by sample_posterior_predictive) follow its own log-pmf."""
    import pymc as pm

    from agentstats.models.families.beta_binomial.likelihood import _dist_zoi

    eta, phi, lam, n = np.full(200_000, 0.4), 1.3, 0.3, 5
    graph = _dist_zoi(pt.as_tensor(eta), pt.as_tensor(phi), None, pt.as_tensor(lam), pt.as_tensor(float(n)), None)
    draws = pm.draw(graph, random_seed=5)
    freq = np.bincount(draws, minlength=n + 1) / draws.size
    pmf = np.exp(beta_binomial_logpmf(np.arange(n + 1), n, 0.4, phi, lam))
    assert np.all(np.abs(freq - pmf) <= 4 * np.sqrt(pmf * (1 - pmf) / draws.size) + 1e-4), (freq, pmf)


def test_single_agent_drops_the_cell_term_and_family_round_trips():
    counts = pd.DataFrame(dict(agent="a", task_id=["t1", "t2", "t3"], n=[2, 2, 0], c=[1, 2, 0]))
    model, info = get_family("beta_binomial").build(prepare_counts(counts), Priors())
    names = {v.name for v in model.free_RVs} | {v.name for v in model.deterministics}
    assert not {"rho", "phi", "alpha", "det_share"} & names and not info.has_cell_effect
    fam = get_family("zoi_beta_binomial", dispersion="shared", det_by_agent=False)
    assert family_from_attrs(fam.to_attrs()) == fam
    # a fit made before per-agent dispersion existed ("none") reads back as shared
    assert family_from_attrs({"agentstats_model": "beta_binomial", "dispersion": "none"}).dispersion == "shared"
    assert family_from_attrs({"agentstats_model": "zoi_beta_binomial", "det_by_agent": 1}).det_by_agent
    with pytest.raises(ValueError, match="dispersion"):
        get_family("zoi_beta_binomial", dispersion="task")
    with pytest.raises(ValueError, match="det_by_agent"):
        BetaBinomialFamily(inflated=False, det_by_agent=True)


def test_dispersion_is_centred_only_with_many_cells_of_four_or_more_trials():
    from agentstats.models.families.beta_binomial import (
        CENTERED_DISPERSION_DRAWS,
        CENTERED_DISPERSION_TUNE,
        DISPERSION_CENTERED_MIN_CELLS,
        DISPERSION_CENTERED_MIN_TRIALS,
        dispersion_form,
    )
    from agentstats.models.sampling import DRAWS, TUNE, SamplerConfig

    enough = DISPERSION_CENTERED_MIN_CELLS

    def counts(n_tasks_b: int, n: int) -> pd.DataFrame:
        rows = [("a", f"t{j}", n, j % (n + 1)) for j in range(enough)]
        rows += [("b", f"t{j}", n, (j + 1) % (n + 1)) for j in range(n_tasks_b)]
        return pd.DataFrame(rows, columns=["agent", "task_id", "n", "c"])

    assert DISPERSION_CENTERED_MIN_TRIALS == 4
    assert dispersion_form(prepare_counts(counts(enough, 4))) == "centered"
    assert dispersion_form(prepare_counts(counts(enough - 1, 4))) == "non_centered"  # every agent needs them
    assert dispersion_form(prepare_counts(counts(enough, 3))) == "non_centered"  # 3 trials: measured worse
    assert dispersion_form(prepare_counts(counts(enough, 2))) == "non_centered"  # two trials: ICC only
    assert dispersion_form(prepare_counts(counts(0, 4).assign(agent="a"))) == "non_centered"  # one agent
    fam = get_family("zoi_beta_binomial")
    data = prepare_counts(counts(enough, 4))
    _, info = fam.build(data, Priors())
    assert info.parameterization["dispersion"] == "centered"
    assert SamplerConfig().resolved_draws(fam, info) == CENTERED_DISPERSION_DRAWS < DRAWS
    assert SamplerConfig(draws=300).resolved_draws(fam, info) == 300
    # nutpie tunes 300 steps (its own default: the same R-hat and ESS as 1,000 in three designs); PyMC keeps 1,000
    assert SamplerConfig().resolved_tune("nutpie", fam, info) == CENTERED_DISPERSION_TUNE == 300
    assert SamplerConfig().resolved_tune("pymc", fam, info) == TUNE == 1000
    assert SamplerConfig(tune=50).resolved_tune("nutpie", fam, info) == 50
    _, info = fam.build(data, Priors(), {"dispersion": "non_centered"})
    assert SamplerConfig().resolved_draws(fam, info) == DRAWS
    assert SamplerConfig().resolved_tune("nutpie", fam, info) == TUNE
    _, info = get_family("zoi_beta_binomial", dispersion="shared").build(data, Priors())
    assert "dispersion" not in info.parameterization and SamplerConfig().resolved_draws(fam, info) == DRAWS


@pytest.mark.slow  # compiles two log-densities: about 3 s
def test_centred_dispersion_is_the_same_model():
    """Centred per-agent rho and det_share: the non-centred density less the Jacobian log(sd) of x = mu + sd z."""
    counts = prepare_counts(COUNTS4)
    fam = get_family("zoi_beta_binomial", det_by_agent=True)
    nc, nc_info = fam.build(counts, Priors())
    c, c_info = fam.build(counts, Priors(), {"dispersion": "centered"})
    assert nc_info.parameterization["dispersion"] == "non_centered"
    assert c_info.parameterization["dispersion"] == "centered"
    assert {"rho_logit", "det_share_logit"} <= {v.name for v in c.free_RVs}
    assert not {"rho_z", "det_share_z"} & {v.name for v in c.free_RVs}
    rng = np.random.default_rng(7)
    point = {k: v + rng.normal(0.0, 0.4, np.shape(v)) for k, v in nc.initial_point().items()}
    cpoint = {k: v for k, v in point.items() if not k.endswith("_z")}
    jacobian = 0.0
    for name in ("rho", "det_share"):
        sd = np.exp(point[f"{name}_sd_log__"])
        cpoint[f"{name}_logit"] = point[f"{name}_mu"] + sd * point[f"{name}_z"]
        jacobian += point[f"{name}_z"].size * np.log(sd)
    lp_nc = pytensor.function(nc.value_vars, nc.logp(), mode="FAST_COMPILE")
    lp_c = pytensor.function(c.value_vars, c.logp(), mode="FAST_COMPILE")
    assert float(lp_c(**cpoint)) == pytest.approx(float(lp_nc(**point)) - jacobian, rel=1e-10, abs=1e-8)
    with pytest.raises(ValueError, match="dispersion"):
        fam.build(counts, Priors(), {"dispersion": "centred"})


@pytest.mark.slow  # compiles the log-density of every model: about 3 s
def test_integer_priors_give_the_same_logp_as_floats():
    """Priors(beta_a=100, ...) as ints: stored as float64, so the log-probability is finite and equal to the floats'."""
    counts = prepare_counts(COUNTS4)
    ints = Priors(beta_a=100, beta_b=100, rho_a=3, rho_b=7, det_a=2, det_b=5, mu_sigma=2, sigma_task=3)
    floats = Priors(beta_a=100.0, beta_b=100.0, rho_a=3.0, rho_b=7.0, det_a=2.0, det_b=5.0, mu_sigma=2.0,
                    sigma_task=3.0)
    for name in ("no_pooling", "zoi_beta_binomial"):
        values = []
        for pri in (ints, floats):
            model, _ = get_family(name, dispersion="shared").build(counts, pri)
            point = model.initial_point()
            logp = pytensor.function(model.value_vars, model.logp(), mode="FAST_COMPILE")
            values.append(float(logp(**point)))
        assert np.isfinite(values[0]) and values[0] == values[1]
    with pytest.raises(TypeError):
        Priors(beta_a="100")


def test_cell_p_blocks_do_not_depend_on_chunk_size():
    import xarray as xr

    rng = np.random.default_rng(0)
    n_tasks = TASK_BLOCK + 40
    data = prepare_counts(pd.DataFrame({
        "agent": np.repeat(["a", "b"], n_tasks), "task_id": np.tile([f"t{i}" for i in range(n_tasks)], 2),
        "n": 3, "c": rng.integers(0, 4, 2 * n_tasks),
    }))
    post = xr.Dataset({
        "mu": (("chain", "draw"), rng.normal(size=(1, 5))),
        "alpha": (("chain", "draw", "agent"), rng.normal(size=(1, 5, 2))),
        "beta": (("chain", "draw", "task"), rng.normal(size=(1, 5, n_tasks))),
        "phi": (("chain", "draw", "agent"), rng.uniform(0.5, 3, size=(1, 5, 2))),
        "det_share": (("chain", "draw"), rng.uniform(0.1, 0.5, size=(1, 5))),
    }, coords={"agent": data.agents, "task": data.tasks})
    fam = get_family("zoi_beta_binomial")
    whole = np.concatenate([p for _, p in fam.iter_cell_p(post, data, seed=3)], axis=-1)
    small = np.concatenate([p for _, p in fam.iter_cell_p(post, data, seed=3, max_bytes=1)], axis=-1)
    assert whole.shape == (1, 5, 2, n_tasks)
    np.testing.assert_array_equal(whole, small)
    assert not np.array_equal(whole, np.concatenate([p for _, p in fam.iter_cell_p(post, data, seed=4)], axis=-1))


# ------------------------------------------------------------------------------------------------ one real fit
# Three agents with the same pass@1 (0.5) and different consistency: intra-cell correlation 0.2, 0.5, 0.8.
TRUE_RHO = {"coin": 0.2, "mid": 0.5, "steady": 0.8}
T, N = 60, 6


def _consistency_data():
    rng = np.random.default_rng(2026)
    beta = rng.normal(0.0, 1.0, T)
    rows, p_true = [], {}
    for agent, rho in TRUE_RHO.items():
        phi = (1 - rho) / rho
        m = special.expit(beta)
        p = rng.beta(m * phi, (1 - m) * phi)
        p_true[agent] = p
        c = rng.binomial(N, p)
        rows += [(agent, f"t{j}", N, int(c[j])) for j in range(T)]
    return pd.DataFrame(rows, columns=["agent", "task_id", "n", "c"]), p_true


@pytest.fixture(scope="module")
def consistency_fit():
    counts, p_true = _consistency_data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dt = fit(counts, "beta_binomial", draws=500, tune=500, chains=2, random_seed=7, log_likelihood=True,
                 check_convergence=False)
    return dt, counts, p_true


@pytest.mark.slow
def test_per_agent_dispersion_recovers_three_consistencies(consistency_fit):
    dt, counts, _ = consistency_fit
    assert dt.idata.attrs["dispersion"] == "agent" and dt.idata["posterior"]["rho"].dims == ("chain", "draw", "agent")
    tab = consistency(counts, dt).set_index("agent")
    for agent, rho in TRUE_RHO.items():
        assert tab.loc[agent, "icc_cell_low"] < rho < tab.loc[agent, "icc_cell_high"], tab
    assert list(tab.icc_cell.sort_values().index) == ["coin", "mid", "steady"]
    assert tab.icc_cell_estimable.all()


@pytest.mark.slow
def test_real_fit_is_deterministic_and_stores_no_cell_draws(consistency_fit):
    dt, counts, _ = consistency_fit
    assert "p" not in dt.idata["posterior"] and dt.idata.attrs["p_draws"] == "conditional"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        again = fit(counts, "beta_binomial", draws=500, tune=500, chains=2, random_seed=7, check_convergence=False)
    # equal up to rounding (compiled code and BLAS kernels may differ in the last bits)
    for var in ("rho", "mu", "beta"):
        np.testing.assert_allclose(again.idata["posterior"][var].to_numpy(), dt.idata["posterior"][var].to_numpy(),
                                   rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(posterior_pass_hat_k(again, [3]).to_numpy(), posterior_pass_hat_k(dt, [3]).to_numpy(),
                               rtol=1e-6, atol=1e-9)


@pytest.mark.slow
def test_real_fit_log_likelihood_and_pass_hat_k(consistency_fit):
    dt, counts, p_true = consistency_fit
    post = dt.idata["posterior"]
    ch, dr = 1, 123
    eta = float(post["mu"][ch, dr]) + post["alpha"][ch, dr].to_numpy()[:, None] + post["beta"][ch, dr].to_numpy()
    phi = post["phi"][ch, dr].to_numpy()
    data = prepare_counts(counts)
    ai, ti = data.obs_index()
    want = beta_binomial_logpmf(data.c[ai, ti], data.n[ai, ti], eta[ai, ti], phi[ai])
    np.testing.assert_allclose(dt.idata["log_likelihood"]["c"][ch, dr].to_numpy(), want, rtol=1e-8)
    summ = summarize_pass_k(posterior_pass_hat_k(dt, [1, 3, 6]), ci_prob=0.95)
    inside = sum(
        row.ci_low <= float(np.mean(p_true[row.agent] ** row.k)) <= row.ci_high for row in summ.itertuples()
    )
    assert inside >= 8  # 9 (agent, k) pairs with 95 % intervals; one miss allowed

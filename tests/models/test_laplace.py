"""The Laplace tier (agentstats.models.laplace): its pieces against closed forms and numerical integration, the
method rule, the method recorded and read back, its diagnostics; a real fit against NUTS (slow)."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scipy.special import expit
from scipy.stats import betabinom

import agentstats.models.laplace as lap
from agentstats.models import Fit, diagnose, fit, get_family
from agentstats.models.data import prepare_counts
from agentstats.models.priors import DEFAULT_PRIORS


def _counts(agents: int, tasks: int, trials: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    p = expit(rng.normal(0, 1, agents)[:, None] + rng.normal(0, 1.5, tasks)[None, :])
    p = rng.beta(2 * p, 2 * (1 - p))
    return pd.DataFrame({"agent": np.repeat([f"a{i}" for i in range(agents)], tasks),
                         "task_id": np.tile([f"t{j}" for j in range(tasks)], agents),
                         "n": trials, "c": rng.binomial(trials, p).ravel()})


TINY = _counts(3, 5, 4, 0)


def test_the_zero_sum_basis_is_orthonormal_and_sums_to_zero():
    """``V z`` with ``z ~ N(0, s^2 I)`` has covariance ``s^2 (I - 11'/n)``, ZeroSumNormal's (PyMC)."""
    v = lap._zero_sum_basis(5)
    np.testing.assert_allclose(v.T @ v, np.eye(4), atol=1e-12)
    np.testing.assert_allclose(v.sum(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(v @ v.T, np.eye(5) - 1 / 5, atol=1e-12)


@pytest.mark.parametrize("model, dispersion", [("zoi_beta_binomial", "agent"), ("beta_binomial", "shared")])
def test_the_task_integral_matches_numerical_integration(model, dispersion):
    """The adaptive Gauss-Hermite value of ``log int N(b; 0, s) prod_a p(c_at | gamma + alpha_a + b) db`` per task
    equals scipy's adaptive quadrature of the same integrand (written with scipy's betabinom)."""
    data = prepare_counts(TINY)
    prob = lap._Problem(get_family(model, dispersion=dispersion), data, DEFAULT_PRIORS)
    rng = np.random.default_rng(1)
    theta = prob.start(0.4) + 0.3 * rng.standard_normal(prob.layout.size)
    p = prob.unpack(theta)
    bhat, h = prob.task_modes(p)
    x, logw = lap._gh(lap.NODES)
    value = prob.log_marginal(theta, x, logw, bhat, h)[0] - prob.log_prior(theta)[0]
    det = p.get("det_share", np.zeros(3))
    s = p["sigma_task"]
    expected = 0.0
    for t in range(data.shape[1]):  # a fine trapezoid grid over +-12 sd of the integrand: no nodes in common
        b = bhat[t] + np.linspace(-12, 12, 40001) / math.sqrt(h[t])
        log_f = -0.5 * (b / s) ** 2 - math.log(s * math.sqrt(2 * math.pi))
        for a in range(data.shape[0]):
            n, c = int(data.n[a, t]), int(data.c[a, t])
            m = expit(p["gamma"] + p["alpha"][a] + b)
            bb = betabinom.pmf(c, n, m * p["phi"][a], (1 - m) * p["phi"][a])
            log_f = log_f + np.log(det[a] * (m * (c == n) + (1 - m) * (c == 0)) + (1 - det[a]) * bb)
        expected += math.log(np.trapezoid(np.exp(log_f), b))
    assert value == pytest.approx(expected, abs=1e-4)  # 9 nodes: the quadrature's own error, about 1e-5


@pytest.mark.parametrize("model, dispersion, det_by_agent", [
    ("zoi_beta_binomial", "agent", False), ("zoi_beta_binomial", "shared", False),
    ("zoi_beta_binomial", "agent", True), ("beta_binomial", "agent", False),
])
def test_the_gradient_of_the_marginal_matches_finite_differences(model, dispersion, det_by_agent):
    """The analytic gradient (nodes fixed) against central differences along random directions, every family
    variant the tier covers; with the Laplace term of the per-agent hierarchies too."""
    opts = {"det_by_agent": True} if det_by_agent else {}
    prob = lap._Problem(get_family(model, dispersion=dispersion, **opts), prepare_counts(TINY), DEFAULT_PRIORS)
    rng = np.random.default_rng(2)
    theta = prob.start(0.4) + 0.3 * rng.standard_normal(prob.layout.size)
    bhat, h = prob.task_modes(prob.unpack(theta))
    x, logw = lap._gh(5)
    info = np.abs(rng.normal(3, 1, theta.size))
    for extra in (None, info):
        g = prob.objective(theta, x, logw, bhat, h, extra)[1]
        for d in rng.standard_normal((3, theta.size)):  # directional derivatives along random directions
            num = (prob.objective(theta + 1e-6 * d, x, logw, bhat, h, extra)[0]
                   - prob.objective(theta - 1e-6 * d, x, logw, bhat, h, extra)[0]) / 2e-6
            assert float(g @ d) == pytest.approx(num, rel=1e-5, abs=2e-5)


def test_the_prior_of_the_population_intercept_keeps_mu_s_prior():
    """``mu = gamma + mean(b)``: with ``gamma ~ N(mu_mu, sqrt(mu_sigma^2 - s^2 / T))`` and ``b_t ~ N(0, s)``, ``mu``
    has the model's prior ``N(mu_mu, mu_sigma)`` (checked by simulation, 50,000 draws)."""
    rng = np.random.default_rng(3)
    s, T = 1.7, 6
    var = DEFAULT_PRIORS.mu_sigma**2 - s**2 / T
    mu = rng.normal(DEFAULT_PRIORS.mu_mu, math.sqrt(var), 50_000) + rng.normal(0, s, (50_000, T)).mean(axis=1)
    assert mu.std() == pytest.approx(DEFAULT_PRIORS.mu_sigma, rel=0.01)


def test_the_method_rule(monkeypatch):
    """None: exact for no_pooling, laplace from LAPLACE_MIN_CELLS observed cells for a covered family and no
    sampler asked for, else nuts; an asked method is checked."""
    data = prepare_counts(TINY)  # 15 cells
    zoi, pp, nop = get_family("zoi_beta_binomial"), get_family("partial_pooling"), get_family("no_pooling")
    monkeypatch.setattr(lap, "LAPLACE_MIN_CELLS", 15)
    assert lap.choose_method(None, zoi, data) == "laplace"
    assert lap.choose_method(None, zoi, data, sampler_given=True) == "nuts"
    assert lap.choose_method(None, pp, data) == "nuts"
    assert lap.choose_method(None, nop, data) == "exact"
    assert lap.choose_method(None, zoi, data, judge_error=object()) == "nuts"
    monkeypatch.setattr(lap, "LAPLACE_MIN_CELLS", 16)
    assert lap.choose_method(None, zoi, data) == "nuts"
    monkeypatch.setattr(lap, "LAPLACE_MIN_CELLS", None)
    assert lap.choose_method(None, zoi, data) == "nuts"
    assert lap.choose_method("laplace", zoi, data) == "laplace"
    with pytest.raises(ValueError, match="Beta-Binomial families only"):
        lap.choose_method("laplace", pp, data)
    with pytest.raises(ValueError, match="judged counts"):
        lap.choose_method("laplace", zoi, data, judge_error=object())
    with pytest.raises(ValueError, match="two agents"):
        lap.choose_method("laplace", zoi, prepare_counts(TINY[TINY.agent == "a0"]))
    with pytest.raises(ValueError, match="drawn exactly"):
        lap.choose_method("laplace", nop, data)
    with pytest.raises(ValueError, match="method must be one of"):
        lap.choose_method("vi", zoi, data)


@pytest.mark.parametrize("option", [{"sampler": "numpyro"}, {"tune": 500}, {"target_accept": 0.9},
                                    {"nutpie_kwargs": {"maxdepth": 4}}])
def test_a_nuts_option_with_method_laplace_is_refused_not_ignored(option):
    from agentstats.models.fitting import fit

    with pytest.raises(ValueError, match=f"{next(iter(option))}: NUTS setting, not taken by method='laplace'"):
        fit(TINY, method="laplace", **option)


def test_the_fit_help_states_the_size_threshold():
    from typer.testing import CliRunner

    from agentstats.cli import app

    text = " ".join(CliRunner(env={"COLUMNS": "200"}).invoke(app, ["fit", "--help"]).output.replace("│", " ").split())
    assert f"laplace from {lap.LAPLACE_MIN_CELLS:,} cells with a trial" in text


def _laplace_tree(checks: dict) -> xr.DataTree:
    post = xr.Dataset({"mu": (("chain", "draw"), np.random.default_rng(0).normal(size=(2, 50)))})
    dt = xr.DataTree.from_dict({"posterior": post})
    dt.attrs.update({"method": "laplace", "laplace": json.dumps(checks)})
    return dt


def test_diagnostics_of_independent_draws_say_r_hat_and_ess_do_not_apply():
    """No R-hat or ESS is estimated (NaN in the table, said in the note); the tier's own checks decide: how far the
    mode is from the one found, and how far twice the nodes would move it, in posterior sd (a constant error of the
    log marginal likelihood, 0.5 here, does not count)."""
    good = diagnose(_laplace_tree({"mode_shift_sd": 1e-3, "quadrature_shift_sd": 0.01, "quadrature_error": 0.5,
                                   "min_eigenvalue": 0.5}))
    assert good.ok and good.problems == [] and good.table["r_hat"].isna().all() and good.table["ess_bulk"].isna().all()
    assert "R-hat and ESS do not apply" in good.note and "100 independent draws" in good.note
    assert "R-hat and ESS do not apply" in str(good)
    from agentstats.report.model_tables import format_diagnostics

    # the report's table says why there is no R-hat: independent draws, not a constant chain
    assert set(format_diagnostics(good)["R-hat"]) == {"n/a (independent draws)"}
    bad = diagnose(_laplace_tree({"mode_shift_sd": 0.2, "quadrature_shift_sd": 0.3, "min_eigenvalue": 0.5}))
    assert not bad.ok and len(bad.problems) == 2 and "method='nuts'" in bad.problems[0]


def test_describe_names_the_method():
    from agentstats.models import SamplerInfo

    nuts = SamplerInfo(sampler="nutpie", chains=4, draws=1000, tune=300, draws_max=1500, target_accept=0.85,
                       random_seed=0)
    assert nuts.method == "nuts"
    assert nuts.describe() == "NUTS (nutpie), 4 chains x 300 tuning + 1000 draws, target_accept 0.85"
    laplace = SamplerInfo(sampler="laplace", chains=4, draws=500, tune=0, draws_max=500, target_accept=float("nan"),
                          random_seed=0, method="laplace")
    assert laplace.describe().startswith("Laplace tier (not MCMC") and "2000 independent draws" in laplace.describe()


@pytest.mark.slow
def test_a_laplace_fit_agrees_with_nuts_and_reads_back(tmp_path):
    """A real fit (4 agents x 60 tasks x 4 trials, seeded) by both methods: the agents' effects and pass@1 agree
    within a fifth of NUTS's posterior sd; the method is recorded, saved and read back; no R-hat is claimed."""
    from agentstats.posterior import posterior_pass_k

    counts = _counts(4, 60, 4, 7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        nuts = fit(counts, method="nuts", random_seed=3)
        laplace = fit(counts, method="laplace", random_seed=3)
    assert (nuts.sampler.method, laplace.sampler.method, laplace.sampler.sampler) == ("nuts", "laplace", "laplace")
    assert laplace.posterior["beta"].dims == ("chain", "draw", "task") and laplace.posterior.sizes["draw"] == 500
    for var in ("alpha", "mu", "sigma_task"):
        a, b = nuts.posterior[var], laplace.posterior[var]
        diff = np.abs(a.mean(("chain", "draw")) - b.mean(("chain", "draw"))) / a.std(("chain", "draw"))
        assert float(diff.max()) < 0.2, var
    p_nuts = posterior_pass_k(nuts, [1])["pass_hat_k"]
    p_lap = posterior_pass_k(laplace, [1])["pass_hat_k"]
    diff = np.abs(p_nuts.mean(("chain", "draw")) - p_lap.mean(("chain", "draw"))) / p_nuts.std(("chain", "draw"))
    assert float(diff.max()) < 0.2
    assert laplace.diagnostics().ok and laplace.diagnostics().table["r_hat"].isna().all()
    laplace.save(tmp_path / "f.zarr")
    back = Fit.load(tmp_path / "f.zarr")
    assert back.sampler.method == "laplace" and back.sampler.laplace == laplace.sampler.laplace
    assert back.summary()["method"] == "laplace"


def test_a_laplace_fit_gives_no_model_consistency_and_says_why():
    """The tier's consistency intervals under-cover on the simulation study (docs/validation.md, 'Laplace tier'), so
    it gives no model-based ICC: NaN with the reason, in the table, the report's display and its note; the data's
    own consistency (flip share, ANOVA ICC) stands and equals that of the counts alone."""
    from agentstats.posterior import consistency
    from agentstats.posterior.consistency import NOT_GIVEN_LAPLACE
    from agentstats.report.model_tables import format_consistency

    counts = _counts(3, 30, 4, 11)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        laplace = fit(counts, method="laplace", random_seed=1)
    cons = consistency(fit=laplace)
    assert not cons["icc_cell_estimable"].any() and (cons["icc_cell_note"] == NOT_GIVEN_LAPLACE).all()
    model_cols = ["icc_cell", "icc_cell_low", "icc_cell_high", "icc_model", "icc_model_low", "icc_model_high"]
    assert cons[model_cols].isna().all().all()
    data_only = consistency(counts)
    pd.testing.assert_frame_equal(cons[data_only.columns], data_only)
    shown, note = format_consistency(cons, laplace)
    assert (shown["within-cell correlation (model)"] == "not given (Laplace tier)").all()
    assert (shown["ICC incl. task (model)"] == "not given (Laplace tier)").all()
    assert "Laplace tier" in note and 'method="nuts"' in note
    assert "no within-cell term" not in note and "not estimable from these data" not in note


def test_a_report_follows_the_size_rule_and_takes_the_method(monkeypatch):
    """The report's Bayesian section chooses the method as `fit` does: by size unless asked (`-p method=...`); its
    default tuning is the fit's (None), not a number that would count as a NUTS setting and keep NUTS at any size.
    Its consistency table says the tier gives no model-based ICC."""
    from agentstats.report.build import _bayes_section
    from agentstats.report.model_tables import format_consistency
    from agentstats.report.params import ReportParams

    counts = _counts(3, 30, 4, 5)
    monkeypatch.setattr(lap, "LAPLACE_MIN_CELLS", 60)  # 90 observed cells: "large" here
    params = ReportParams(input_path="unused.jsonl", n_boot=0)
    assert params.tune is None and params.method is None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        section = _bayes_section(params, counts, [1, 2])
    assert section.fit.sampler.method == "laplace"
    shown, note = format_consistency(section.consistency, section.fit)
    assert (shown["within-cell correlation (model)"] == "not given (Laplace tier)").all() and "-p method=nuts" in note
    with pytest.raises(ValueError, match="tune: NUTS setting, not taken by method='laplace'"):
        _bayes_section(params.model_copy(update={"method": "laplace", "tune": 300}), counts, [1])

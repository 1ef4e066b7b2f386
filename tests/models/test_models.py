"""Tests of agentstats.models: families, priors, fit plumbing, diagnostics, PPC, LOO comparison."""

from __future__ import annotations

import importlib
import json
import os
import warnings
from functools import partial

import numpy as np
import pandas as pd
import pymc as pm
import pytest
import xarray as xr
from pymc.testing import mock_sample, mock_sample_setup_and_teardown
from scipy import special, stats

from agentstats.models import (
    ConvergenceWarning,
    Priors,
    SamplingInterrupted,
    build_model,
    choose_parameterization,
    compare_models,
    diagnose,
    fit,
    get_family,
    no_pooling_posterior,
    posterior_predictive_cells,
    prepare_counts,
)
from agentstats.posterior import posterior_pass_k
from agentstats.simulate import true_suite_pass_k

mock_pymc_sample = pytest.fixture(scope="function")(mock_sample_setup_and_teardown)


def _counts(rows):
    return pd.DataFrame(rows, columns=["agent", "task_id", "n", "c"])


SMALL = _counts(
    [("a", "t1", 4, 3), ("a", "t2", 4, 0), ("a", "t3", 0, 0), ("b", "t1", 4, 4), ("b", "t2", 2, 1)]
)


# ---------------------------------------------------------------- input validation
@pytest.mark.parametrize(
    "rows, match",
    [
        ([("a", "t1", 3, 4)], r"row 0 \(agent='a', task_id='t1'\): field 'c' = 4 > n = 3"),
        ([("a", "t1", -1, 0)], r"row 0 .*field 'n' = -1 is not a non-negative integer"),
        ([("a", "t1", 2.5, 0)], r"row 0 .*field 'n' = 2.5 is not a non-negative integer"),
        ([("a", "t1", 2, 1), ("a", "t1", 3, 1)], r"rows \[0, 1\]: duplicate \(agent='a', task_id='t1'\)"),
    ],
)
def test_prepare_counts_rejects_bad_rows(rows, match):
    with pytest.raises(ValueError, match=match):
        prepare_counts(_counts(rows))


def test_prepare_counts_missing_column_and_empty():
    with pytest.raises(ValueError, match="lacks column"):
        prepare_counts(pd.DataFrame({"agent": ["a"], "n": [1], "c": [0]}))
    with pytest.raises(ValueError, match="no rows"):
        prepare_counts(_counts([]))


def test_prepare_counts_dense_arrays_and_absent_cells():
    data = prepare_counts(SMALL)
    assert data.agents == ["a", "b"] and data.tasks == ["t1", "t2", "t3"]
    np.testing.assert_array_equal(data.n, [[4, 4, 0], [4, 2, 0]])
    np.testing.assert_array_equal(data.present, [[True, True, True], [True, True, False]])
    np.testing.assert_array_equal(data.n_min(), [4, 2])
    # hash ignores row order
    assert prepare_counts(SMALL.iloc[::-1]).hash == data.hash


def test_priors_validation():
    with pytest.raises(ValueError, match="sigma_task"):
        Priors(sigma_task=0.0)


def test_priors_given_as_a_mapping_or_refused_clearly():
    # a mapping sets the fields it names (the others keep their defaults), checked as Priors checks them
    out = no_pooling_posterior(SMALL, priors={"beta_a": 2.0, "beta_b": 3.0})
    np.testing.assert_allclose(out["mean"], [(2 + 3) / (5 + 4), (2 + 0) / (5 + 4), 2 / 5, (2 + 4) / (5 + 4),
                                             (2 + 1) / (5 + 2)])
    dt = fit(SMALL, "no_pooling", priors={"beta_a": 2.0, "beta_b": 3.0}, draws=10, chains=1, random_seed=1)
    recorded = json.loads(dt.idata.attrs["priors"])
    assert (recorded["beta_a"], recorded["beta_b"], recorded["sigma_task"]) == (2.0, 3.0, 2.0)
    assert build_model(SMALL, "partial_pooling", priors={"sigma_task": 1.0}) is not None
    with pytest.raises(ValueError, match=r"Priors.sigma_task must be a finite number > 0, got -1.0"):
        fit(SMALL, "no_pooling", priors={"sigma_task": -1.0})
    with pytest.raises(ValueError, match=r"fit: priors has unknown field\(s\) \['sigma_tsk'\]; the fields of Priors"):
        fit(SMALL, "no_pooling", priors={"sigma_tsk": 1.0})
    with pytest.raises(TypeError, match=r"fit: priors must be an agentstats.Priors \(or a mapping of its fields\), "
                                        r"got int 3"):
        fit(SMALL, "no_pooling", priors=3)
    with pytest.raises(TypeError, match="build_model: priors must be"):
        build_model(SMALL, "partial_pooling", priors=[1.0])


# ---------------------------------------------------------------- parameterization rule
def test_parameterization_rule_sparse_vs_informative():
    rng = np.random.default_rng(0)
    rows2 = [(f"a{a}", f"t{t}", 2, int(rng.integers(0, 3))) for a in range(3) for t in range(30)]
    rows16 = [(f"a{a}", f"t{t}", 16, int(rng.integers(4, 12))) for a in range(3) for t in range(30)]
    sparse, r_sparse = choose_parameterization(_counts(rows2))
    dense, r_dense = choose_parameterization(_counts(rows16))
    assert set(sparse.values()) == {"non_centered"} and r_sparse["cell"] < 1
    assert set(dense.values()) == {"centered"} and r_dense["cell"] >= 1
    over, _ = choose_parameterization(_counts(rows2), override={"task": "centered"})
    assert over["task"] == "centered" and over["cell"] == "non_centered"
    with pytest.raises(ValueError, match="unknown level"):
        choose_parameterization(_counts(rows2), override={"tasks": "centered"})


# ---------------------------------------------------------------- builders
def test_partial_pooling_structure_with_zero_n_cell():
    model = build_model(SMALL, "partial_pooling")
    names = {v.name for v in model.free_RVs} | {v.name for v in model.deterministics}
    assert {"mu", "sigma_agent", "sigma_task", "sigma_cell", "cell_mu", "cell_sd"} <= names
    assert model.named_vars_to_dims["sigma_cell"] == ("agent",)  # per-agent cell scale by default
    assert list(model.coords["task"]) == ["t1", "t2", "t3"]  # n = 0 cell's task kept
    assert len(model.coords["cell"]) == 4  # but only n > 0 cells are in the likelihood
    assert model.named_vars_to_dims["c"] == ("cell",)
    shared = build_model(SMALL, "partial_pooling", dispersion="shared")
    assert "sigma_cell" in {v.name for v in shared.free_RVs} and "cell_mu" not in shared.named_vars


def test_additive_and_single_agent_variants():
    names = {v.name for v in build_model(SMALL, "additive").free_RVs}
    assert not any(n.startswith(("gamma", "sigma_cell", "cell_")) for n in names)
    _, info = get_family("partial_pooling").build(prepare_counts(SMALL[SMALL.agent == "a"]), Priors())
    single = build_model(SMALL[SMALL.agent == "a"], "partial_pooling")
    snames = {v.name for v in single.free_RVs}
    assert not any(n.startswith(("alpha", "sigma_agent", "gamma", "sigma_cell", "cell_")) for n in snames)
    assert info.has_cell_effect is False and info.has_agent_effect is False


def test_no_pooling_closed_form_is_beta_posterior():
    pri = Priors(beta_a=2.0, beta_b=3.0)
    out = no_pooling_posterior(SMALL, priors=pri)
    # (a + c) / (a + b + n), computed by hand for each row of SMALL
    expected = [(2 + 3) / (5 + 4), (2 + 0) / (5 + 4), 2 / 5, (2 + 4) / (5 + 4), (2 + 1) / (5 + 2)]
    np.testing.assert_allclose(out["mean"], expected)
    assert set(build_model(SMALL, "no_pooling").named_vars) >= {"p", "c"}


def test_no_pooling_fit_is_exact_draws():
    dt = fit(SMALL, "no_pooling", draws=4000, chains=2, random_seed=1)
    assert dt.idata.attrs["sampler"] == "exact"
    m = dt.idata["posterior"]["p"].mean(("chain", "draw")).to_numpy()
    # Beta(1 + c, 1 + n - c) means, t3 absent/zero cells give the prior mean 1/2
    np.testing.assert_allclose(m, [[4 / 6, 1 / 6, 0.5], [5 / 6, 2 / 4, 0.5]], atol=0.01)


@pytest.mark.slow
def test_fixed_hyperparameter_posterior_mean_matches_beta_closed_form():
    """Oracle: a conjugate Beta prior per cell gives posterior mean (a + c) / (a + b + n) under NUTS."""
    rows = [("a", "t1", 10, 7), ("a", "t2", 3, 0)]
    model = build_model(_counts(rows), "no_pooling", priors=Priors(beta_a=2.0, beta_b=2.0))
    with model:
        dt = pm.sample(draws=1500, tune=500, chains=2, random_seed=3, progressbar=False, quiet=True,
                       nuts_sampler="pymc", compute_convergence_checks=False)
    mean = dt["posterior"]["p"].mean(("chain", "draw")).to_numpy().ravel()
    np.testing.assert_allclose(mean, [9 / 14, 2 / 7], atol=0.02)


# ---------------------------------------------------------------- mock-sampler plumbing
@pytest.mark.slow
def test_fit_plumbing_with_mock_sampler(mock_pymc_sample):
    dt = fit(SMALL, "partial_pooling", sampler="pymc", draws=7, chains=3, random_seed=2, check_convergence=False)
    post = dt.idata["posterior"]
    assert post["gamma"].dims == ("chain", "draw", "agent", "task") and "p" not in post
    assert posterior_pass_k(dt, [1, 2])["pass_hat_k"].dims == ("chain", "draw", "agent", "k")
    assert post.sizes["chain"] == 3 and post.sizes["draw"] == 7
    assert list(post["agent"].values) == ["a", "b"]
    assert dt.idata.attrs["agentstats_model"] == "partial_pooling" and dt.idata.attrs["sampler"] == "pymc"
    versions = json.loads(dt.idata.attrs["versions"])
    assert versions["pymc"] == pm.__version__ and "arviz" in versions and "pytensor" in versions
    assert set(json.loads(dt.idata.attrs["parameterization"])) == {"agent", "task", "cell"}
    assert dt.idata.attrs["counts_hash"] == prepare_counts(SMALL).hash and dt.idata.attrs["random_seed"] == 2
    np.testing.assert_array_equal(dt.idata["constant_data"]["n_trials"].to_numpy(), [[4, 4, 0], [4, 2, 0]])


@pytest.mark.slow
def test_fit_warns_on_divergences_with_mock_sampler(monkeypatch):
    diverging = partial(mock_sample, sample_stats={"diverging": lambda size: np.ones(size, dtype=bool)})
    monkeypatch.setattr(pm, "sample", diverging)
    with pytest.warns(ConvergenceWarning, match="divergent"):
        fit(SMALL, sampler="pymc", draws=20, chains=2, random_seed=0)


def test_fit_rejects_unknown_model_and_sampler():
    with pytest.raises(ValueError, match="model must be"):
        fit(SMALL, "pooled")
    with pytest.raises(ValueError, match="sampler must be"):
        fit(SMALL, sampler="stan")
    with pytest.raises(ValueError, match="unknown option"):
        fit(SMALL, drawz=10)
    with pytest.raises(ValueError, match="draws must be"):
        fit(SMALL, draws=0)


def test_one_default_seed_for_fit_the_estimators_and_every_command():
    """fit() without a seed is fit(random_seed=0), as `agentstats fit` without --seed: reproducible by default."""
    import inspect

    import typer.main

    from agentstats.cli import app
    from agentstats.estimators import suite_pass_k
    from agentstats.intervals import DEFAULT_SEED
    from agentstats.report.params import ReportParams

    assert DEFAULT_SEED == 0
    a, b = fit(SMALL, "no_pooling", draws=20, chains=2), fit(SMALL, "no_pooling", draws=20, chains=2)
    assert a.random_seed == b.random_seed == 0
    xr.testing.assert_equal(a.posterior, b.posterior)
    xr.testing.assert_equal(a.posterior, fit(SMALL, "no_pooling", draws=20, chains=2, random_seed=0).posterior)
    assert inspect.signature(suite_pass_k).parameters["random_seed"].default == 0
    cli = typer.main.get_command(app)
    for name in ("fit", "estimate", "compare"):
        seed = {p.name: p for p in cli.commands[name].params}["seed"]
        assert seed.default == 0, name
    assert ReportParams.default("seed") == 0


def test_population_new_needs_a_task_population():
    """The family's capability decides; the message names the Python keywords and the hierarchical models."""
    from agentstats._util.options import option_style
    from agentstats.models.families.registry import MODEL_NAMES, check_population, new_task_models

    # every family but no_pooling has hyperparameters mu, sigma_task (docs/models.md)
    assert new_task_models() == tuple(n for n in MODEL_NAMES if n != "no_pooling")
    assert check_population("no_pooling", "observed") is None
    assert check_population("additive", "new").name == "additive"
    with pytest.raises(ValueError, match=r"population='new': the no_pooling model has no task population") as err:
        check_population("no_pooling", "new")
    assert "use population='observed', or model one of zoi_beta_binomial, beta_binomial" in str(err.value)
    with option_style("cli"), pytest.raises(ValueError, match=r"--population new: .* --bayes-model one of"):
        check_population("no_pooling", "new", model_option="bayes_model")
    with pytest.raises(ValueError, match="must be 'observed' or 'new'"):
        check_population("additive", "future")


@pytest.mark.slow  # compiles and starts a sampler: about 2.6 s
def test_interrupted_sampling_keeps_nothing(monkeypatch):
    """Ctrl-C during sampling raises (a KeyboardInterrupt), and a trace padded with NaN after an interrupt (what nutpie
    returns) is refused, never returned as a result that claims success.
    """

    def interrupted(**kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(pm, "sample", interrupted)
    with pytest.raises(KeyboardInterrupt, match="interrupted"):
        fit(SMALL, "additive", sampler="pymc", draws=5, chains=2, random_seed=0)

    def padded(**kwargs):
        dt = mock_sample(**kwargs)
        post = dt["posterior"].to_dataset()
        mu = post["mu"].to_numpy().copy()
        mu[:, 3:] = np.nan  # each chain stopped after 3 of the 5 draws
        post["mu"] = (("chain", "draw"), mu)
        dt["posterior"] = post
        return dt

    monkeypatch.setattr(pm, "sample", padded)
    with pytest.raises(SamplingInterrupted, match=r"\[3, 3\] of 5 draws"):
        fit(SMALL, "additive", sampler="pymc", draws=5, chains=2, random_seed=0)

    def swallowed(**kwargs):
        # Ctrl-C arrives while a library callback runs, which ignores the exception; sampling runs to its end
        import signal

        try:
            signal.getsignal(signal.SIGINT)(signal.SIGINT, None)
        except KeyboardInterrupt:
            pass
        return mock_sample(**kwargs)

    monkeypatch.setattr(pm, "sample", swallowed)
    with pytest.raises(SamplingInterrupted, match="interrupted"):
        fit(SMALL, "additive", sampler="pymc", draws=5, chains=2, random_seed=0)


# ---------------------------------------------------------------- diagnostics on constructed draws
def _tree(x, diverging=None):
    post = xr.Dataset({"x": (("chain", "draw"), x)})
    groups = {"posterior": post}
    if diverging is not None:
        groups["sample_stats"] = xr.Dataset({"diverging": (("chain", "draw"), diverging)})
    return xr.DataTree.from_dict(groups)


def test_diagnose_flags_split_chains_and_divergences():
    rng = np.random.default_rng(0)
    good = rng.normal(size=(4, 1000))
    ok = diagnose(_tree(good, np.zeros((4, 1000), bool)))
    assert ok.ok and ok.problems == [] and ok.divergences == 0
    bad = good + np.array([0.0, 0.0, 3.0, 3.0])[:, None]  # two chains stuck elsewhere
    div = np.zeros((4, 1000), bool)
    div[0, :5] = True
    res = diagnose(_tree(bad, div))
    assert not res.ok and res.divergences == 5
    assert any("r_hat" in p for p in res.problems) and any("divergent" in p for p in res.problems)
    assert res.table.loc[0, "r_hat"] > 1.5


def test_diagnose_refuses_thresholds_that_cannot_mean_anything():
    tree = _tree(np.random.default_rng(0).normal(size=(2, 200)))
    for kw, message in ((dict(r_hat_max=0.5), r"diagnose: r_hat_max must be a number >= 1, got 0.5"),
                        (dict(r_hat_max=float("nan")), r"r_hat_max must be a number >= 1, got nan"),
                        (dict(ess_min=-1), r"diagnose: ess_min must be a number >= 0, got -1"),
                        (dict(ess_min="400"), r"ess_min must be a number >= 0, got '400'")):
        with pytest.raises(ValueError, match=message):
            diagnose(tree, **kw)
    assert diagnose(tree, r_hat_max=1.0, ess_min=0).divergences == 0  # the bounds themselves are allowed


def test_diagnose_treats_nan_r_hat_as_a_named_failure():
    """A variable whose draws never change has an undefined (NaN) R-hat: a failure naming it, never a pass."""
    rng = np.random.default_rng(1)
    post = xr.Dataset(
        {"x": (("chain", "draw"), rng.normal(size=(4, 500))), "stuck": (("chain", "draw"), np.ones((4, 500)))}
    )
    res = diagnose(xr.DataTree.from_dict({"posterior": post}))
    assert not res.ok
    assert any(p.startswith("stuck:") and "NaN" in p for p in res.problems), res.problems
    assert res.table.set_index("variable").loc["x", "ok"]
    # printed: R-hat to 3 decimals and ESS in whole draws (the table keeps full precision), NaN shown as NaN
    lines = [ln.split() for ln in str(res).splitlines()]
    x_row, stuck_row = (next(ln for ln in lines if ln[:1] == [v]) for v in ("x", "stuck"))
    table = res.table.set_index("variable")
    assert x_row[2] == f"{table.loc['x', 'r_hat']:.3f}" and x_row[3] == f"{table.loc['x', 'ess_bulk']:,.0f}"
    assert stuck_row[2] == "NaN"


# ---------------------------------------------------------------- PPC and LOO
def test_ppc_observed_statistics_by_hand():
    dt = fit(SMALL, "no_pooling", draws=100, chains=2, random_seed=1)
    res = posterior_predictive_cells(dt, SMALL, random_seed=0).table.set_index("statistic")
    assert res.loc["cells_all_fail", "observed"] == 1  # (a, t2)
    assert res.loc["cells_all_success", "observed"] == 1  # (b, t1)
    # tasks with two observed agents: t1 rates (0.75, 1.0), t2 rates (0, 0.5); sample variances by hand
    assert res.loc["within_task_var", "observed"] == pytest.approx((0.03125 + 0.125) / 2)
    # per agent: a has 2 cells with n >= 2 (3 of 4 flips, 0 of 4 does not); b has 2 (4 of 4, and 1 of 2 flips)
    assert res.loc["flip_share[a]", "observed"] == 0.5 and res.loc["flip_share[b]", "observed"] == 0.5
    assert ((res.p_value >= 0) & (res.p_value <= 1)).all()
    # discrete statistics: ties count half (mid-p), so a replicate equal to the observed value is agreement
    ppc = posterior_predictive_cells(dt, SMALL, random_seed=0)
    rep, obs = ppc.replicated["flip_share[a]"], 0.5
    assert (rep == obs).any()  # ties occur in this case, so the rule matters here
    assert res.loc["flip_share[a]", "p_value"] == pytest.approx(np.mean(rep > obs) + 0.5 * np.mean(rep == obs))
    assert res.loc["flip_share[a]", "p_value"] != pytest.approx(np.mean(rep >= obs))
    # replicated flips of agent b: a cell with n trials and p ~ Beta(1 + c, 1 + n - c) (the no-pooling posterior)
    # flips with probability 1 - E[p^n] - E[(1 - p)^n] (Beta moments); b's cells are 4 of 4 and 1 of 2
    def flip(n, c):
        a, b = 1 + c, 1 + n - c
        return 1 - special.beta(a + n, b) / special.beta(a, b) - special.beta(a, b + n) / special.beta(a, b)

    expected = (flip(4, 4) + flip(2, 1)) / 2  # 0.418; 200 replicates: Monte Carlo sd about 0.025
    assert res.loc["flip_share[b]", "rep_mean"] == pytest.approx(expected, abs=0.08)
    with pytest.raises(ValueError, match="differ"):
        posterior_predictive_cells(dt, SMALL.assign(c=[3, 1, 0, 4, 1]))


@pytest.mark.slow
def test_compare_models_requires_log_likelihood(models_fit, models_sim):
    _, counts = models_sim
    dt_np = fit(counts, "no_pooling", draws=300, chains=2, random_seed=1, log_likelihood=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = compare_models({"partial_pooling": models_fit, "no_pooling": dt_np})
    assert set(table.index) == {"partial_pooling", "no_pooling"}
    with pytest.raises(ValueError, match="log_likelihood"):
        compare_models({"a": models_fit, "b": fit(counts, "no_pooling", draws=10, chains=1, random_seed=1)})


@pytest.mark.slow
def test_log_likelihood_matches_binomial_logpmf(models_fit):
    from scipy.special import expit

    ll = models_fit.idata["log_likelihood"]["c"].isel(chain=0, draw=0).to_numpy()
    n = models_fit.idata["constant_data"]["n_trials"].to_numpy()
    c = models_fit.idata["constant_data"]["n_success"].to_numpy()
    post = models_fit.idata["posterior"].isel(chain=0, draw=0)
    eta = float(post["mu"]) + post["alpha"].to_numpy()[:, None] + post["beta"].to_numpy() + post["gamma"].to_numpy()
    obs = n > 0
    np.testing.assert_allclose(ll, stats.binom.logpmf(c[obs], n[obs], expit(eta)[obs]))


# ---------------------------------------------------------------- the real (session) fit
@pytest.mark.slow
def test_real_fit_names_dims_and_attrs(models_fit):
    post = models_fit.idata["posterior"]
    assert post["gamma"].dims == ("chain", "draw", "agent", "task") and post["sigma_cell"].dims[-1] == "agent"
    assert {"mu", "sigma_agent", "sigma_task", "sigma_cell"} <= set(post.data_vars)
    assert list(post["agent"].values) == ["strong", "mid", "weak"]
    assert models_fit.idata.attrs["sampler"] == "nutpie"
    assert "nutpie" in json.loads(models_fit.idata.attrs["versions"])


@pytest.mark.slow
def test_real_fit_is_deterministic_with_seed(models_fit, models_sim):
    _, counts = models_sim
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        again = fit(counts, "partial_pooling", draws=500, tune=500, chains=2, random_seed=11)
    # Same seed, same draws up to rounding: a freshly compiled and a cached log-density (or another BLAS kernel) may
    # round differently in the last bits, which NUTS carries forward; a different seed differs by Monte Carlo error.
    np.testing.assert_allclose(again.idata["posterior"]["gamma"].to_numpy(),
                               models_fit.idata["posterior"]["gamma"].to_numpy(), rtol=1e-6, atol=1e-9)


@pytest.mark.slow
def test_real_fit_recovers_truth(models_fit, models_sim):
    from agentstats.posterior import posterior_pass_hat_k, summarize_pass_k

    sim, _ = models_sim
    truth = true_suite_pass_k(sim.p, k=[1, 2, 4]).set_index(["agent", "k"])["pass_hat_k"]
    summ = summarize_pass_k(posterior_pass_hat_k(models_fit, [1, 2, 4])).set_index(["agent", "k"])
    inside = (summ.ci_low <= truth) & (truth <= summ.ci_high)
    assert inside.all(), pd.concat([summ[["ci_low", "ci_high"]], truth], axis=1)
    means = summ.xs(1, level="k")["mean"]
    true1 = truth.xs(1, level="k")
    assert list(means.sort_values().index) == list(true1.sort_values().index)
    # a tiny fit (2 x 500 draws): no divergences, loose R-hat / ESS (the slowest mode is sigma_cell)
    diag = diagnose(models_fit, r_hat_max=1.05, ess_min=50)
    assert diag.divergences == 0 and diag.ok, str(diag)


@pytest.mark.slow
def test_fit_passes_cores_and_size_dependent_target_accept(monkeypatch):
    """Chains run on every available CPU by default (PyMC would halve the count), and Beta-Binomial fits on
    LARGE_CELLS or more observed cells default to TARGET_ACCEPT_LARGE; small ones keep TARGET_ACCEPT.
    """
    import agentstats.models.families.beta_binomial.family as bb_mod

    seen = []

    def spy(**kwargs):
        seen.append(kwargs)
        return mock_sample(**kwargs)

    monkeypatch.setattr(pm, "sample", spy)
    # the real CPU set of this process, read independently of agentstats
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    dt = fit(SMALL, "beta_binomial", sampler="pymc", draws=5, chains=4, random_seed=1, check_convergence=False)
    assert seen[-1]["cores"] == min(4, cpus)
    if hasattr(os, "sched_setaffinity") and cpus > 1:
        # pin the process to one CPU: fit must follow the affinity mask, not the machine's CPU count
        before = os.sched_getaffinity(0)
        os.sched_setaffinity(0, {min(before)})
        try:
            fit(SMALL, "beta_binomial", sampler="pymc", draws=5, chains=4, random_seed=1, check_convergence=False)
        finally:
            os.sched_setaffinity(0, before)
        assert seen[-1]["cores"] == 1
    assert dt.idata.attrs["target_accept"] == bb_mod.TARGET_ACCEPT == 0.98
    fit(SMALL, "beta_binomial", sampler="pymc", draws=5, chains=4, cores=1, random_seed=1, check_convergence=False)
    assert seen[-1]["cores"] == 1
    dt = fit(SMALL, sampler="pymc", draws=5, chains=2, random_seed=1, check_convergence=False)
    assert dt.idata.attrs["agentstats_model"] == "zoi_beta_binomial" and dt.idata.attrs["dispersion"] == "agent"
    assert dt.idata.attrs["target_accept"] == bb_mod.TARGET_ACCEPT
    monkeypatch.setattr(bb_mod, "LARGE_CELLS", 3)  # SMALL has 4 observed cells
    for model in ("beta_binomial", "zoi_beta_binomial"):
        dt = fit(SMALL, model, sampler="pymc", draws=5, chains=2, random_seed=1, check_convergence=False)
        assert dt.idata.attrs["target_accept"] == bb_mod.TARGET_ACCEPT_LARGE
    dt = fit(SMALL, "partial_pooling", sampler="pymc", draws=5, chains=2, random_seed=1, check_convergence=False)
    assert dt.idata.attrs["target_accept"] == 0.9


# ---------------------------------------------------------------- until_converged: stop at the first checkpoint
class _FakeRun:
    """Stands in for nutpie's background sampler: every chain has ``ready`` draws after tuning."""

    def __init__(self, trace, tune, ready, finished=False, interrupt_on_inspect=False):
        self.trace, self.tune, self.ready, self.finished = trace, tune, ready, finished
        self.interrupt_on_inspect = interrupt_on_inspect
        self.calls: list[str] = []
        self.callback = None

    @property
    def is_finished(self):
        return self.finished

    def _advance(self):
        self.ready = min(self.ready + 250, self.trace["posterior"].sizes["draw"])
        self.finished = self.ready == self.trace["posterior"].sizes["draw"]
        self.callback([type("P", (), {"finished_draws": self.tune + self.ready})() for _ in range(5)])

    def inspect(self):
        self.calls.append("inspect")
        if self.interrupt_on_inspect:
            raise KeyboardInterrupt
        return self.trace.isel(draw=slice(0, self.ready))

    def abort(self):
        self.calls.append("abort")
        return self.trace.isel(draw=slice(0, self.ready))

    def wait(self):
        self.calls.append("wait")
        return self.trace

    def cancel(self):
        self.calls.append("cancel")


def _run_fake(monkeypatch, passes_from, finished=False, interrupt=False, draws=1500, diverge_at=None, rule=True,
              nutpie_kwargs=None, seen_kwargs=None):
    """Run ``sample_nutpie`` on a fake sampler whose check passes from ``passes_from`` draws on (None: never).

    With ``diverge_at`` (a draw index), chain 0 diverges there and ``fit``'s ``abandon`` rule (``diverged``) is
    passed, as for a centred-dispersion fit; ``rule=False``: no stopping rule (``check`` None). ``nutpie_kwargs``
    go into the config; the arguments nutpie received are put into ``seen_kwargs`` (a dict)."""

    import nutpie

    fit_mod = importlib.import_module("agentstats.models.sampling")
    rng = np.random.default_rng(0)
    trace = xr.DataTree.from_dict({
        "posterior": xr.Dataset({"mu": (("chain", "draw"), rng.normal(size=(5, draws)))}),
        "sample_stats": xr.Dataset(
            {"diverging": (("chain", "draw"), np.arange(draws)[None, :] == np.array([diverge_at] + [-1] * 4)[:, None])},
            attrs={"inference_library_settings": json.dumps({"settings": {"num_tune": 100}})},
        ),
    })
    run = _FakeRun(trace, tune=100, ready=draws if finished else 0, finished=finished, interrupt_on_inspect=interrupt)

    def fake_sample(compiled, **kwargs):
        run.callback = kwargs["progress_callback"]
        if seen_kwargs is not None:
            seen_kwargs.update(kwargs)
        assert kwargs["blocking"] is False and kwargs["draws"] == draws and kwargs["tune"] == 100
        # with a stopping rule every chain runs at once (nutpie runs batches of `cores` chains to their end)
        assert kwargs["cores"] == kwargs["chains"] == 5
        return run

    monkeypatch.setattr(fit_mod, "compile_nutpie", lambda model: None)
    monkeypatch.setattr(nutpie, "sample", fake_sample)
    import pymc.backends.arviz as pm_arviz

    monkeypatch.setattr(pm_arviz, "patch_nutpie_idata", lambda *a, **k: None)
    seen: list[int] = []

    def check(dt):
        k = dt["posterior"].sizes["draw"]
        seen.append(k)
        return (passes_from is not None and k >= passes_from), 1.0, 1000.0

    # the sampler advances 250 draws per poll (sleep), whatever the checks do
    monkeypatch.setattr(fit_mod.time, "sleep", lambda s: run._advance())
    config = fit_mod.SamplerConfig(chains=5, nutpie_kwargs=nutpie_kwargs or {})
    abandon = fit_mod.diverged if diverge_at is not None else None
    dt, kept, log = fit_mod.sample_nutpie(None, config, 1, 0.8, draws, 100, check if rule else None, abandon)
    return dt, kept, log, seen, run


def test_until_converged_stops_at_the_first_passing_checkpoint(monkeypatch):
    """Checkpoints 500, 750, ... (< draws) are checked in order on the first k draws of every chain; the fit keeps
    exactly k draws of the first that passes, and the result does not depend on how far the sampler had run."""
    from agentstats.models.sampling import STOP_EVERY_DRAWS, STOP_FIRST_DRAWS

    assert (STOP_FIRST_DRAWS, STOP_EVERY_DRAWS) == (500, 250)
    dt, kept, log, seen, run = _run_fake(monkeypatch, passes_from=1000)
    assert kept == 1000 and dt["posterior"].sizes["draw"] == 1000 and seen == [500, 750, 1000]
    assert [c["passed"] for c in log] == [False, False, True] and [c["draws"] for c in log] == [500, 750, 1000]
    assert "abort" in run.calls and "wait" not in run.calls
    full = run.trace["posterior"]["mu"].to_numpy()
    np.testing.assert_array_equal(dt["posterior"]["mu"].to_numpy(), full[:, :1000])
    # the sampler already finished (a fast model, a slow check): the same checkpoints, the same draws kept
    dt2, kept2, log2, seen2, _ = _run_fake(monkeypatch, passes_from=1000, finished=True)
    assert kept2 == 1000 and seen2 == [500, 750, 1000] and log2 == log
    np.testing.assert_array_equal(dt2["posterior"]["mu"].to_numpy(), full[:, :1000])
    # never passes: every checkpoint below draws checked, all draws kept
    dt3, kept3, log3, seen3, run3 = _run_fake(monkeypatch, passes_from=None)
    assert kept3 == 1500 and seen3 == [500, 750, 1000, 1250] and not any(c["passed"] for c in log3)
    assert dt3["posterior"].sizes["draw"] == 1500 and "wait" in run3.calls


def test_until_converged_abandons_a_diverging_run(monkeypatch):
    """With ``abandon`` (centred dispersion), divergences are asked for at 100 draws and at every checkpoint before the
    stopping rule; the first checkpoint that sees one stops the run and returns no trace."""
    from agentstats.models.sampling import ABANDON_FIRST_DRAWS

    assert ABANDON_FIRST_DRAWS == 100
    dt, kept, log, seen, run = _run_fake(monkeypatch, passes_from=None, diverge_at=40)
    assert dt is None and kept == 100 and seen == [] and "abort" in run.calls
    assert log == [{"draws": 100, "passed": False, "abandoned": True, "divergences": 1}]
    # a divergence at draw 600: 100 clean (not checked: below the first stopping checkpoint), 500 checked, 750 abandons
    dt, kept, log, seen, run = _run_fake(monkeypatch, passes_from=None, diverge_at=600)
    assert dt is None and kept == 750 and seen == [500] and [c["draws"] for c in log] == [500, 750]
    assert log[-1]["abandoned"] and log[-1]["divergences"] == 1
    # none: the run goes on as without the rule
    dt, kept, log, seen, _ = _run_fake(monkeypatch, passes_from=750, diverge_at=-1)
    assert kept == 750 and seen == [500, 750] and dt["posterior"].sizes["draw"] == 750
    # without a stopping rule (draws asked for): divergences are still asked for at 100 draws, and the run is kept
    dt, kept, log, seen, run = _run_fake(monkeypatch, passes_from=None, diverge_at=30, rule=False)
    assert dt is None and kept == 100 and seen == [] and log[-1]["abandoned"] and "abort" in run.calls
    dt, kept, log, seen, run = _run_fake(monkeypatch, passes_from=None, diverge_at=-1, rule=False)
    assert kept == 1500 and seen == [] and log == [] and dt["posterior"].sizes["draw"] == 1500


def test_centred_dispersion_that_diverges_is_refitted_non_centred(monkeypatch):
    """A per-agent dispersion centred by the rule whose fit diverges (a funnel: agents about equally consistent) is
    refitted non-centred, and the fit says so; asked-for centring is kept (and warned about, as any divergence)."""
    import agentstats.models.families.beta_binomial.family as bb_mod

    monkeypatch.setattr(bb_mod, "DISPERSION_CENTERED_MIN_CELLS", 1)  # SMALL: 2 agents with 2 and 2 cells
    monkeypatch.setattr(bb_mod, "DISPERSION_CENTERED_MIN_TRIALS", 1)
    forms = []

    def sampler(**kwargs):
        centred = "rho_logit" in kwargs["model"].named_vars
        forms.append("centred" if centred else "non_centred")
        flags = (lambda size: np.ones(size, dtype=bool)) if centred else (lambda size: np.zeros(size, dtype=bool))
        return mock_sample(sample_stats={"diverging": flags}, **kwargs)

    monkeypatch.setattr(pm, "sample", sampler)
    dt = fit(SMALL, sampler="pymc", draws=6, chains=2, random_seed=3, check_convergence=False)
    assert forms == ["centred", "non_centred"]
    assert json.loads(dt.idata.attrs["parameterization"])["dispersion"] == "non_centered"
    assert "rho_z" in dt.idata["posterior"] and int(dt.idata["sample_stats"]["diverging"].sum()) == 0
    log = json.loads(dt.idata.attrs["checkpoints"])
    assert log[-1]["abandoned"] and log[-1]["divergences"] == 12 and "refitted non-centred" in log[-1]["reason"]
    forms.clear()
    dt = fit(SMALL, sampler="pymc", draws=6, chains=2, random_seed=3, check_convergence=False,
             parameterization={"dispersion": "centered"})
    assert forms == ["centred"] and json.loads(dt.idata.attrs["parameterization"])["dispersion"] == "centered"


def test_until_converged_interrupt_keeps_nothing(monkeypatch):
    with pytest.raises(SamplingInterrupted, match="interrupted"):
        _run_fake(monkeypatch, passes_from=500, interrupt=True)


def test_until_converged_rule_uses_diagnose_verdict_and_needs_two_chains():
    """The stopping rule passes independent draws (4 chains x 1,000, ESS about 4,000) and fails them with one chain
    (no R-hat), with a constant parameter (NaN R-hat) or with too few draws for ESS 500."""
    from agentstats.models.sampling import converged_rule

    rng = np.random.default_rng(8)

    def trace(chains: int, draws: int, constant: bool = False) -> xr.DataTree:
        beta = rng.normal(size=(chains, draws, 3))
        post = xr.Dataset({
            "mu": (("chain", "draw"), np.zeros((chains, draws)) if constant else rng.normal(size=(chains, draws))),
            "beta": (("chain", "draw", "task"), beta),
        })
        return xr.DataTree.from_dict({"posterior": post})

    rule = converged_rule(get_family("beta_binomial"))
    passed, r_hat, ess = rule(trace(4, 1000))
    assert passed and r_hat < 1.01 and ess > 2000
    assert not rule(trace(1, 4000))[0]
    assert not rule(trace(4, 1000, constant=True))[0]
    assert not rule(trace(4, 100))[0]  # ESS about 400 < 500


def test_until_converged_defaults_and_refusals():
    """On by default only for nutpie fits without draws on UNTIL_CONVERGED_MIN_CELLS+ observed cells."""
    from agentstats.models.sampling import UNTIL_CONVERGED_MIN_CELLS, SamplerConfig

    big = prepare_counts(_counts([("a", f"t{j}", 2, 1) for j in range(UNTIL_CONVERGED_MIN_CELLS)]))
    small = prepare_counts(_counts([("a", f"t{j}", 2, 1) for j in range(UNTIL_CONVERGED_MIN_CELLS - 1)]))
    assert SamplerConfig().resolved_until_converged("nutpie", big)
    assert not SamplerConfig().resolved_until_converged("nutpie", small)
    assert not SamplerConfig(draws=800).resolved_until_converged("nutpie", big)  # a given number is kept
    assert not SamplerConfig().resolved_until_converged("pymc", big)
    assert SamplerConfig(until_converged=True, draws=800).resolved_until_converged("nutpie", small)
    assert not SamplerConfig(until_converged=False).resolved_until_converged("nutpie", big)
    with pytest.raises(ValueError, match="needs sampler='nutpie'"):
        SamplerConfig(until_converged=True).resolved_until_converged("pymc", small)


def test_nutpie_kwargs_reach_nutpie_with_the_stopping_rule_and_refuse_fit_settings(monkeypatch):
    """nutpie settings (e.g. ``adaptation``, ``maxdepth``) go to ``nutpie.sample`` with the stopping rule kept; the
    run-length and seed settings stay SamplerConfig's own; other samplers refuse them."""
    from agentstats.models.sampling import SamplerConfig, check_nutpie_kwargs

    # a setting nutpie does not have, or a value it cannot take: refused before compiling, naming key and value
    check_nutpie_kwargs({"adaptation": "low_rank", "maxdepth": 6})
    with pytest.raises(ValueError, match=r"nutpie_kwargs: max_depth=6 is not a setting nutpie .* takes"):
        check_nutpie_kwargs({"max_depth": 6})
    with pytest.raises(ValueError, match=r"nutpie_kwargs: maxdepth='deep' is not a setting"):
        check_nutpie_kwargs({"maxdepth": "deep"})
    seen: dict = {}
    _, kept, _, checked, _ = _run_fake(monkeypatch, passes_from=750,
                                       nutpie_kwargs={"adaptation": "low_rank", "maxdepth": 6}, seen_kwargs=seen)
    assert kept == 750 and checked == [500, 750]
    assert seen["adaptation"] == "low_rank" and seen["maxdepth"] == 6
    for own in ("draws", "tune", "seed", "target_accept", "num_draws"):
        with pytest.raises(ValueError, match=f"must not set \\['{own}'\\]"):
            SamplerConfig(nutpie_kwargs={own: 1})
    with pytest.raises(ValueError, match="needs sampler='nutpie'"):
        SamplerConfig(sampler="pymc", nutpie_kwargs={"maxdepth": 6})
    counts = _counts([("a", "t0", 2, 1), ("b", "t0", 2, 0)])
    monkeypatch.setattr(importlib.import_module("agentstats.models.sampling"), "available_samplers", lambda: ["pymc"])
    with pytest.raises(ValueError, match="needs the nutpie sampler; this fit would use 'pymc'"):
        fit(counts, nutpie_kwargs={"maxdepth": 6})


@pytest.mark.slow  # compiles a small model and samples it with nutpie: about 8 s
def test_nutpie_kwargs_real_fit_caps_the_tree_depth():
    """A real nutpie fit with ``maxdepth=2`` takes at most 2^2 - 1 = 3 leapfrog steps a draw (about 2^10 allowed by
    default), and records the settings in ``attrs["nutpie_kwargs"]``."""
    counts = _counts([(a, f"t{j}", 4, (j * 3 + i) % 5) for i, a in enumerate("abc") for j in range(12)])
    dt = fit(counts, "beta_binomial", draws=100, tune=100, random_seed=3, nutpie_kwargs={"maxdepth": 2},
             check_convergence=False)
    assert int(dt.idata["sample_stats"]["n_steps"].max()) <= 3
    assert json.loads(dt.idata.attrs["nutpie_kwargs"]) == {"maxdepth": 2}


@pytest.mark.slow  # compiles a small model and samples it twice with nutpie: about 10 s
def test_until_converged_real_fit_keeps_the_first_draws_of_the_full_run():
    """A real nutpie fit that converges early keeps 500 draws: the first 500 of the same seed's full run, which
    meet the rule (R-hat <= 1.01, bulk and tail ESS >= 500) when diagnosed independently."""
    from agentstats.models.sampling import STOP_ESS_MIN

    counts = _counts([(a, f"t{j}", 4, (j * 3 + i) % 5) for i, a in enumerate("abc") for j in range(12)])
    short = fit(counts, "beta_binomial", draws=1500, until_converged=True, random_seed=3, progressbar=False)
    full = fit(counts, "beta_binomial", draws=1500, until_converged=False, random_seed=3, progressbar=False)
    assert short.idata.attrs["draws"] == 500 and short.idata.attrs["draws_max"] == 1500
    assert json.loads(short.idata.attrs["checkpoints"])[0]["passed"] and full.sampler.checkpoints == ()
    assert json.loads(full.idata.attrs["checkpoints"]) == []
    assert short.idata["posterior"].sizes["draw"] == 500 and full.idata["posterior"].sizes["draw"] == 1500
    np.testing.assert_allclose(
        short.idata["posterior"]["mu"].to_numpy(), full.idata["posterior"]["mu"].to_numpy()[:, :500], rtol=1e-12
    )
    table = diagnose(short).table
    assert (table.r_hat <= 1.01).all() and (table[["ess_bulk", "ess_tail"]] >= STOP_ESS_MIN).all().all()


@pytest.mark.slow  # a fresh process importing ArviZ and agentstats: about 7 s
def test_which_samplers_are_installed_is_answered_without_importing_them():
    """ArviZ registers numpyro as a lazily loaded module; ``importlib.util.find_spec`` read its spec and so loaded
    numpyro (about 2 s) in every fit. A fresh process: this one may have imported them already."""
    import subprocess
    import sys

    code = (
        "import sys, arviz\n"
        "from agentstats.models.sampling import available_samplers\n"
        "print(available_samplers(), 'numpyro.diagnostics' in sys.modules)\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert res.stdout.split()[-1] == "False", res.stdout
    assert "'pymc'" in res.stdout and "'numpyro'" in res.stdout  # still found: installed with the dev extras

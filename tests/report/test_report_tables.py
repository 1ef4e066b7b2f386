"""Tables and text of the report (agentstats.report.tables, model_tables, captions, prose): each pair once, no
"-0.000", "not estimable" instead of a false 0, empty tables replaced by a sentence, compact columns."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from fit_helpers import StandInFit

from agentstats.io import load
from agentstats.models import SamplerInfo
from agentstats.posterior import consistency, contrast_table
from agentstats.report.captions import fit_status, grid_gaps_note
from agentstats.report.model_tables import (
    format_consistency,
    format_consistency_pass_hat_k,
    format_contrast_table,
    format_ppc_table,
)
from agentstats.report.prose import report_summary
from agentstats.report.provenance import run_details
from agentstats.report.scoring_tables import format_schema_errors, format_tool_errors
from agentstats.report.tables import describe_counts, format_counts_table


def _draws(n_agents: int, seed: int = 0) -> xr.DataArray:
    rng = np.random.default_rng(seed)
    base = np.linspace(0.2, 0.8, n_agents)
    base[1] = base[0]  # two agents with the same mean: differences around 0 round to -0.000 / 0.000
    x = base + rng.normal(0, 0.05, (2, 200, n_agents))
    return xr.DataArray(x, dims=("chain", "draw", "agent"), coords={"agent": [f"agent {i}" for i in range(n_agents)]},
                        attrs={"k": 1})


def test_contrast_table_lists_each_pair_once_ahead_first():
    raw = contrast_table(_draws(11))
    both = pd.concat([raw, raw.rename(columns={"agent_a": "agent_b", "agent_b": "agent_a"}).assign(
        prob_greater=1 - raw["prob_greater"], diff_mean=-raw["diff_mean"], diff_low=-raw["diff_high"],
        diff_high=-raw["diff_low"])], ignore_index=True)  # both directions, as contrast tables once listed them
    assert len(both) == 110
    table = format_contrast_table(both)
    assert len(table) == 55
    assert format_contrast_table(raw).equals(table)
    pairs = {frozenset(p) for p in zip(table["ahead"], table["behind"], strict=True)}
    assert len(pairs) == 55
    # the agent with the higher posterior mean comes first, with P(ahead > behind) and a difference >= 0
    by_pair = raw.set_index(["agent_a", "agent_b"])
    for _, r in table.iterrows():
        src = by_pair.loc[(r["ahead"], r["behind"])]
        assert src["diff_mean"] >= 0
        assert float(r["P(ahead > behind)"]) == pytest.approx(src["prob_greater"], abs=5e-4)
        assert float(r["difference"]) == pytest.approx(src["diff_mean"], abs=5e-4)
        lo, hi = (float(v) for v in r["95% credible interval"].strip("[]").split(","))
        assert (lo, hi) == pytest.approx((src["diff_low"], src["diff_high"]), abs=5e-4)
    text = table.to_string()
    assert "-0.000" not in text
    probs = table["P(ahead > behind)"].astype(float).to_numpy()
    assert np.all(np.diff(probs) <= 0)  # most certain first


def test_consistency_of_one_agent_says_not_estimable_instead_of_zero():
    """A fit to one agent has no within-cell term: its correlation is "not estimable", never 0.000 [0.000, 0.000]."""
    counts = pd.DataFrame({"agent": "gpt-4o", "task_id": [f"t{i}" for i in range(6)], "n": 4,
                           "c": [0, 4, 2, 1, 4, 0], "n_missing": 0})
    table = consistency(counts).assign(icc_model=0.566, icc_model_low=0.364, icc_model_high=0.756,
                                       icc_cell=np.nan, icc_cell_low=np.nan, icc_cell_high=np.nan,
                                       icc_cell_estimable=False)
    shown, note = format_consistency(table, StandInFit(None, "zoi_beta_binomial"))
    assert shown.loc["gpt-4o", "within-cell correlation (model)"] == "not estimable"
    assert shown.loc["gpt-4o", "ICC incl. task (model)"] == "0.566 [0.364, 0.756]"
    assert "not estimable" in note and "one agent" in note
    assert "0.000" not in shown.to_string() and "nan" not in shown.to_string().lower()


def test_consistency_shows_per_agent_model_values_when_estimable():
    table = pd.DataFrame({"agent": ["a", "b"], "n_tasks": 5, "n_tasks_multi": 5, "flip_share": [0.4, 0.0],
                          "icc_anova": [0.3, np.nan], "icc_model": [0.675, 0.7], "icc_model_low": [0.595, 0.6],
                          "icc_model_high": [0.749, 0.8], "icc_cell": [0.256, 0.3], "icc_cell_low": [0.209, 0.2],
                          "icc_cell_high": [0.308, 0.4], "icc_cell_estimable": True})
    shown, note = format_consistency(table, StandInFit(None, "zoi_beta_binomial"))
    assert shown.loc["a", "within-cell correlation (model)"] == "0.256 [0.209, 0.308]"
    assert shown.loc["b", "ICC incl. task (model)"] == "0.700 [0.600, 0.800]"
    assert shown.loc["b", "ICC (ANOVA)"] == "not estimable"
    assert "every outcome the same" in note and "within-cell correlation is **not estimable**" not in note


def test_counts_table_is_compact():
    counts = pd.DataFrame({"agent": ["Claude 3.5 Sonnet (New)"] * 3 + ["human"] * 3, "task_id": ["a", "b", "c"] * 2,
                           "n": [8, 8, 4, 1, 2, 17], "c": [3, 8, 0, 1, 2, 9], "n_missing": [0, 1, 0, 0, 0, 0]})
    table = format_counts_table(describe_counts(counts))
    assert list(table.columns) == ["tasks", "trials", "successes", "missing", "trials per task", "pooled rate"]
    assert table.loc["Claude 3.5 Sonnet (New)", "trials per task"] == "4 / 8 / 8"
    assert table.loc["Claude 3.5 Sonnet (New)", "missing"] == "1 (1 task)"
    assert table.loc["human", "trials per task"] == "1 / 2 / 17"


def test_tool_errors_table_keeps_the_reader_columns():
    errors = pd.DataFrame([{"kind": "wrong_value", "level": "trial", "tool": "book", "argument": "$.x",
                            "where": "book.x", "count": 15, "n_trials": 13, "example_agent": "gpt-4o",
                            "example_task_id": "32", "example_trial": 1, "example_detail": "expected 1, got 2"}])
    table = format_tool_errors(errors)
    assert list(table.columns) == ["kind", "level", "where", "count", "trials", "example"]
    assert table.loc[0, "example"] == "task 32, trial 1: expected 1, got 2"


def test_schema_errors_without_any_error_is_a_sentence_not_an_empty_table():
    empty = pd.DataFrame(columns=["kind", "tool", "count"])
    empty.attrs.update(n_calls_checked=1343, n_trials_checked=200, note="")
    expected = "All 1343 tool calls in 200 trials validate against their tools' JSON Schemas."
    assert format_schema_errors(empty) == expected
    # tau-bench trials carry no tool specs: nothing was checked, and the sentence says so (not "all 0 calls")
    empty.attrs.update(n_calls_checked=0, n_trials_checked=0, n_trials_without_tools=200)
    text = format_schema_errors(empty)
    assert "No trial in this input offers tool specs" in text and "All 0" not in text


def test_run_details_name_data_model_sampler_and_versions():
    counts = pd.DataFrame({"agent": ["a", "b"], "task_id": ["t", "t"], "n": [4, 4], "c": [1, 2], "n_missing": 0})
    fit = SimpleNamespace(
        sampler=SamplerInfo(sampler="nutpie", chains=4, draws=1000, tune=1000, draws_max=1000, target_accept=0.98,
                            random_seed=0),
        diagnostics=lambda: SimpleNamespace(ok=True),
    )
    md = run_details(counts, source="runs.jsonl", input_format="jsonl", sha256="ab" * 32, k_values=[1, 2],
                     n_boot=2000, seed=0, model="zoi_beta_binomial", population="observed", fit=fit)
    for part in ("runs.jsonl (format jsonl)", "sha256 abababab", "2 agents, 1 task, 8 recorded trials", "k = 1, 2",
                 "zoi\\_beta\\_binomial", "nutpie, 4 chains × 1000 draws", "convergence checks passed",
                 "agentstats ", "Python ", "95% task-cluster bootstrap intervals (2000 resamples, seed 0)"):
        assert part in md, part
    # the intervals' probability is the report's own, never a fixed 95%
    assert "80% task-cluster bootstrap intervals" in run_details(counts, source="r", input_format="jsonl", n_boot=100,
                                                                  ci_prob=0.8)
    assert "pending" in run_details(counts, source="r", input_format="jsonl", model="beta_binomial")
    assert "not run" in run_details(counts, source="r", input_format="jsonl")


@pytest.mark.slow
@pytest.mark.parametrize("model", ["zoi_beta_binomial", "partial_pooling"])
def test_consistency_of_a_real_one_agent_fit(model):
    """tau-bench has one agent: the report's consistency cell must run on such a fit and say "not estimable"."""
    import warnings

    from agentstats.models import fit

    counts = pd.DataFrame({"agent": "gpt-4o", "task_id": [f"t{i}" for i in range(8)], "n": 4,
                           "c": [0, 4, 2, 1, 4, 0, 3, 4], "n_missing": 0})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 2 x 100 draws: convergence is not the point here
        dt = fit(counts, model, draws=100, tune=100, chains=2, random_seed=1, progressbar=False)
    table = consistency(counts, dt)
    assert not table["icc_cell_estimable"].any() and table["icc_cell"].isna().all()
    assert 0 < table.loc[0, "icc_model_low"] < table.loc[0, "icc_model"] < table.loc[0, "icc_model_high"] < 1
    shown, note = format_consistency(table, dt)
    assert shown.loc["gpt-4o", "within-cell correlation (model)"] == "not estimable"
    assert "one agent" in note
    # the report's posterior predictive cell too: the observed statistics are those of the counts
    from agentstats.models.diagnostics import posterior_predictive_cells

    ppc = posterior_predictive_cells(dt, counts, random_seed=0).table.set_index("statistic")
    assert ppc.loc["cells_all_fail", "observed"] == 2 and ppc.loc["cells_all_success", "observed"] == 3
    # and the curves for new tasks (--population new)
    from agentstats.posterior import posterior_pass_hat_k

    new = posterior_pass_hat_k(dt, [1, 2], population="new")
    assert new.sizes["k"] == 2 and np.all((new >= 0) & (new <= 1))


def test_pass_hat_k_next_to_consistency():
    def summ(means):
        return pd.DataFrame({"agent": ["a", "b", "a", "b"], "k": [1, 1, 4, 4], "mean": means,
                             "ci_low": [m - 0.1 for m in means], "ci_high": [m + 0.1 for m in means]})

    cons = pd.DataFrame({"agent": ["a", "b"], "flip_share": [0.25, 0.5], "icc_cell": [0.8, np.nan],
                         "icc_cell_low": [0.7, np.nan], "icc_cell_high": [0.9, np.nan],
                         "icc_cell_estimable": [True, False]})
    tab = format_consistency_pass_hat_k(summ([0.5, 0.6, 0.4, 0.3]), summ([0.45, 0.55, 0.35, 0.25]), cons, k=4)
    assert tab.loc["a", "pass^4, these tasks"] == "0.400 [0.300, 0.500]"
    assert tab.loc["b", "pass^4, new tasks like these"] == "0.250 [0.150, 0.350]"
    assert tab.loc["a", "within-cell correlation"] == "0.800 [0.700, 0.900]"
    assert tab.loc["b", "within-cell correlation"] == "not estimable"
    assert tab.loc["b", "flip share"] == "0.500"
    with pytest.raises(ValueError, match="k = 8"):
        format_consistency_pass_hat_k(summ([0.5] * 4), summ([0.5] * 4), cons, k=8)


def test_counts_in_the_text_take_the_singular_for_one(tmp_path):
    path = tmp_path / "one.jsonl"
    path.write_text('{"agent": "a", "task_id": "t", "trial": 0, "success": true}\n')
    assert "1 agent, 1 task, 1 recorded trial, 0 missing" in load(path).summary_markdown()
    counts = pd.DataFrame({"agent": ["a"], "task_id": ["t"], "n": [1], "c": [1], "n_missing": [2]})
    md = run_details(counts, source="r.jsonl", input_format="jsonl")
    assert "1 agent, 1 task, 1 recorded trial, 2 missing" in md
    assert report_summary(counts, pd.DataFrame(columns=["agent", "k", "pass_hat_k"])).startswith(
        "- 1 agent, 1 task, 1 recorded trial (2 missing, excluded).")
    assert format_counts_table(describe_counts(counts)).loc["a", "missing"] == "2 (1 task)"


def _status_fit(ok, divergences, problems, checkpoints=()):
    """A stand-in fit: zoi_beta_binomial, PyMC, 2 chains x 300 draws, target_accept 0.9, these diagnostics."""
    diag = SimpleNamespace(ok=ok, divergences=divergences, problems=problems)
    return SimpleNamespace(
        family=SimpleNamespace(name="zoi_beta_binomial"), diagnostics=lambda: diag,
        sampler=SamplerInfo(sampler="pymc", chains=2, draws=300, tune=300, draws_max=300, target_accept=0.9,
                            random_seed=0, checkpoints=tuple(checkpoints)),
    )


def test_fit_status_ends_with_one_period():
    bad = fit_status(_status_fit(False, 3, ["3 divergent transitions.", "R-hat of mu 1.05"]))
    assert bad.endswith("(e.g. 0.99).") and not bad.endswith("..") and ".;" not in bad
    assert "**NOT converged**: 3 divergent transitions; R-hat of mu 1.05. Treat" in bad
    assert "`agentstats report ... -p draws=4000`" in bad  # the report's own options: -p NAME=VALUE
    good = fit_status(_status_fit(True, 0, []))
    assert good.endswith("ESS ≥ 400: all thresholds met.") and "2 chains × 300 draws" in good
    log = [{"draws": 100, "passed": False, "abandoned": True, "divergences": 18, "reason": "refitted non-centred"},
           {"draws": 500, "passed": True, "max_r_hat": 1.004, "min_ess": 900.0}]
    refit = fit_status(_status_fit(True, 0, [], log))
    assert refit.startswith(good[:-1] + ". A first attempt with a centred per-agent dispersion had 18 divergent")
    assert "in its first 100 draws and was discarded; this is the non-centred refit with the same seed." in refit
    assert refit.endswith("seed.") and not refit.endswith("..")


def test_ppc_table_shows_counts_as_whole_numbers():
    table = pd.DataFrame({"statistic": ["cells_all_fail", "cells_all_success", "within_task_var", "flip_share[A]"],
                          "observed": [2.0, 1.0, 0.0625, 1.0], "rep_mean": [2.5, 1.706, 0.07, 0.6],
                          "rep_low": [0.0, 0.0, 0.01, 0.25], "rep_high": [5.0, 4.525, 0.2, 1.0],
                          "p_value": [0.6, 0.673, 0.45, 0.2]})
    # replicated counts are whole numbers; the variance and the share of flipping tasks are not
    replicated = {"cells_all_fail": np.array([0.0, 2, 5]), "cells_all_success": np.array([0.0, 1, 5]),
                  "within_task_var": np.array([0.01, 0.1]), "flip_share[A]": np.array([0.25, 0.5, 1.0])}
    shown = format_ppc_table(table, replicated, label=str.upper).set_index("statistic")
    cols = ["observed", "replicated, lower (95%)", "replicated, upper (95%)"]  # 95%: the table says no other
    assert shown.loc["CELLS_ALL_FAIL", cols].tolist() == ["2", "0", "5"]
    # an interpolated quantile of a count keeps one decimal, never "1.000 [0.000, 4.525]"
    assert shown.loc["CELLS_ALL_SUCCESS", cols].tolist() == ["1", "0", "4.5"]
    assert shown.loc["CELLS_ALL_FAIL", "replicated mean"] == "2.500"
    assert shown.loc["CELLS_ALL_FAIL", "posterior predictive p"] == "0.600"
    assert shown.loc["WITHIN_TASK_VAR", cols].tolist() == ["0.062", "0.010", "0.200"]
    assert shown.loc["FLIP_SHARE[A]", cols].tolist() == ["1.000", "0.250", "1.000"]  # a share, not a count
    # without the replicated values: whole observed value and interval ends make a count
    assert format_ppc_table(table).loc[0, "observed"] == "2"


def test_display_tables_name_their_intervals_probability():
    """The PPC and contrast tables head their interval columns with the table's own probability."""
    table = pd.DataFrame({"statistic": ["cells_all_fail"], "observed": [2.0], "rep_mean": [2.5], "rep_low": [1.0],
                          "rep_high": [4.0], "p_value": [0.6]})
    table.attrs["ci_prob"] = 0.8
    assert list(format_ppc_table(table).columns)[3:5] == ["replicated, lower (80%)", "replicated, upper (80%)"]
    contrasts = pd.DataFrame([{"k": 1, "agent_a": "a", "agent_b": "b", "prob_greater": 0.7, "diff_mean": 0.1,
                               "diff_low": -0.1, "diff_high": 0.3, "ci_prob": 0.9}])
    assert "90% credible interval" in format_contrast_table(contrasts).columns
    assert "95% credible interval" in format_contrast_table(contrasts.drop(columns="ci_prob")).columns


def test_grid_gaps_are_said_in_the_report_data_section(tmp_path):
    # A has trials 0-3 on t2 (trial 4 absent), every other cell 0-4
    lines = [f'{{"agent": "{a}", "task_id": "{t}", "trial": {i}, "success": true}}'
             for a in ("A", "B*") for t in ("t1", "t2") for i in range(5) if not (a == "A" and t == "t2" and i == 4)]
    path = tmp_path / "gap.jsonl"
    path.write_text("\n".join(lines) + "\n")
    note = grid_gaps_note(load(path).counts)
    assert "1 trial absent from the agent x task x trial grid" in note and "A / t2: trial 4" in note
    assert "neither failures nor missing" in note
    complete = tmp_path / "complete.jsonl"
    complete.write_text("\n".join(x for x in lines if '"A"' not in x) + "\n")
    assert grid_gaps_note(load(complete).counts) == ""
    assert grid_gaps_note(pd.DataFrame({"agent": ["a"], "task_id": ["t"], "n": [1], "c": [1], "n_missing": [0]})) == ""

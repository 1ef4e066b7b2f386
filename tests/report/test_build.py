"""build_report without a notebook: what the report shows, computed once, against values worked out by hand."""

from __future__ import annotations

import hashlib
import json
from fractions import Fraction
from math import comb
from pathlib import Path

import pytest

from agentstats._util.options import option_style
from agentstats.report.build import build_comparison, build_report
from agentstats.report.inputs import ReportInputError, check_k_values, load_input, resolve_calibration
from agentstats.report.params import CompareParams, ReportParams

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "data" / "example_trials.jsonl"

#: Successes out of 3 trials per task: agent A on tasks t0..t3, agent B on the same tasks.
C = {"A": [3, 2, 0, 1], "B": [1, 1, 2, 0]}


@pytest.fixture
def counts_csv(tmp_path) -> Path:
    path = tmp_path / "counts.csv"
    rows = ["agent,task_id,n,c"] + [f"{a},t{t},3,{c}" for a, cs in C.items() for t, c in enumerate(cs)]
    path.write_text("\n".join(rows) + "\n")
    return path


def _pass_hat(cs: list[int], n: int, k: int) -> float:
    """Unbiased pass^k, mean over tasks of C(c, k) / C(n, k), in exact fractions."""
    return float(sum(Fraction(comb(c, k), comb(n, k)) for c in cs) / len(cs))


def _pass_at(cs: list[int], n: int, k: int) -> float:
    """Unbiased pass@k, mean over tasks of 1 - C(n - c, k) / C(n, k) (Chen et al. 2021), in exact fractions."""
    return float(sum(1 - Fraction(comb(n - c, k), comb(n, k)) for c in cs) / len(cs))


def test_counts_report_without_the_bayesian_section(counts_csv):
    report = build_report(ReportParams(input_path=str(counts_csv), run_bayes=False, n_boot=0))
    # 3 trials per task everywhere: the default k are 1..3
    assert report.ks == [1, 2, 3]
    for agent, cs in C.items():
        for k in report.ks:
            row = report.suite[(report.suite["agent"] == agent) & (report.suite["k"] == k)].iloc[0]
            assert row["pass_hat_k"] == pytest.approx(_pass_hat(cs, 3, k), abs=1e-12)
            assert row["pass_at_k"] == pytest.approx(_pass_at(cs, 3, k), abs=1e-12)
    # two agents: paired differences at every k, A - B at k = 1 is (6 - 4) / 12
    paired = report.paired
    assert paired is not None and sorted(paired["k"].unique()) == [1, 2, 3]
    r = paired[(paired["k"] == 1) & (paired["agent_a"] == "A")].iloc[0]
    assert r["agent_b"] == "B" and r["pass_hat_k_diff"] == pytest.approx(2 / 12, abs=1e-12)
    # a counts table: nothing to score, no metric, no calibration, no fit
    assert (report.scoring, report.metrics, report.calibration, report.bayes) == (None, None, None, None)
    assert report.n_agents == 2 and report.source == "counts.csv"
    assert report.sha256 == hashlib.sha256(counts_csv.read_bytes()).hexdigest()
    details = report.details_markdown()
    assert f"sha256 {report.sha256[:16]}" in details and "**Bayesian model**: not run" in details
    assert "for k = 1, 2, 3" in details
    assert report.summary_markdown().startswith("- 2 agents, 4 tasks, 24 recorded trials. See [the data](#data-table).")
    assert report.summary_markdown(links=False).startswith("- 2 agents, 4 tasks, 24 recorded trials.\n")
    assert report.checks is None  # no fit: nothing for --strict to read
    assert report.regenerate_command() == "agentstats report counts.csv --k 1..3 --no-bayes -p n_boot=0"


def test_one_agent_has_no_paired_table_and_k_follows_the_parameters(counts_csv):
    report = build_report(ReportParams(input_path=str(counts_csv), run_bayes=False, n_boot=0, k_values="2",
                                       loader_options={"agents": "A"}))
    assert report.ks == [2] and report.paired is None and report.n_agents == 1
    assert report.suite["pass_hat_k"].tolist() == pytest.approx([_pass_hat(C["A"], 3, 2)])
    assert "--k 2 --agents A" in report.regenerate_command()


def test_unscored_trials_are_scored_once_and_counted(tmp_path):
    # the deterministic judge: t1 expects a number, "8" and "It is 8." are right (c = 2); t2 is text, "paris" is
    # wrong against "lyon", "lyon" right (c = 1); pass^1 = mean(2/2, 1/2) = 0.75, pass^2 = mean(1, 0) = 0.5
    rows = [{"agent": "a", "task_id": task, "trial": i, "interactions": [
        {"query": "q", "answer": answer, "expected_answer": expected}]}
        for task, expected, answers in (("t1", "8", ["8", "It is 8."]), ("t2", "lyon", ["paris", "lyon"]))
        for i, answer in enumerate(answers)]
    path = tmp_path / "unscored.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = build_report(ReportParams(input_path=str(path), run_bayes=False, n_boot=0))
    assert report.data.needs_scoring and report.scoring is not None
    assert report.counts.set_index("task_id")["c"].to_dict() == {"t1": 2, "t2": 1}
    suite = report.suite.set_index("k")
    assert suite.loc[1, "pass_hat_k"] == pytest.approx(0.75) and suite.loc[2, "pass_hat_k"] == pytest.approx(0.5)
    assert not report.scoring.has_tools and report.scoring.breakdown is None  # no tool call to score
    assert report.scoring.judge_summary is not None and len(report.scoring.result.verdicts) == 4
    assert "scoring**: judge deterministic" in report.details_markdown()


def test_metrics_are_computed_on_the_trials(tmp_path):
    report = build_report(ReportParams(input_path=str(EXAMPLE), run_bayes=False, n_boot=0, metrics="usage"))
    assert report.metrics is not None
    assert set(report.metrics.summary["agent"]) == {"baseline", "candidate", "experimental"}
    assert report.metrics.n_not_applicable == int((~report.metrics.frame["applicable"]).sum())
    counts_only = tmp_path / "c.csv"
    counts_only.write_text("agent,task_id,n,c\na,t,2,1\n")
    assert build_report(ReportParams(input_path=str(counts_only), run_bayes=False, n_boot=0,
                                     metrics="usage")).metrics is None  # no trial to compute them on


def _calibration_set(path: Path, metrics: tuple[str, ...]) -> Path:
    # judge against gold: 9 true passes, 1 missed pass, 8 true fails, 2 false passes (accuracy 17 / 20)
    cells = [(True, True, 9), (True, False, 1), (False, False, 8), (False, True, 2)]
    rows = [{"item_id": f"{m}{j}-{i}", "metric": m, "gold": g, "verdict": v}
            for m in metrics for j, (g, v, n) in enumerate(cells) for i in range(n)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_judge_calibration_section_and_the_choice_of_metric(counts_csv, tmp_path):
    one = _calibration_set(tmp_path / "one.jsonl", ("m",))
    report = build_report(ReportParams(input_path=str(counts_csv), run_bayes=False, n_boot=100,
                                       judge_calibration=str(one)))
    assert report.calibration is not None
    assert report.calibration.calibration.accuracy == pytest.approx(17 / 20)
    corrected = report.calibration.corrected
    at1 = corrected[corrected["k"] == 1].set_index("agent")["pass_hat_k_uncorrected"]
    assert at1["A"] == pytest.approx(_pass_hat(C["A"], 3, 1)) and at1["B"] == pytest.approx(_pass_hat(C["B"], 3, 1))
    two = _calibration_set(tmp_path / "two.jsonl", ("m", "other"))

    def params(metric=None):
        return ReportParams(input_path=str(counts_csv), judge_calibration=str(two), judge_metric=metric)

    with pytest.raises(ReportInputError, match=r"calibrates \['m', 'other'\]: choose one with judge_metric"):
        resolve_calibration(params())
    chosen = resolve_calibration(params("other"))  # the file by its absolute path, the metric named
    assert chosen.judge_metric == "other" and chosen.judge_calibration == str(two.resolve())
    with pytest.raises(ReportInputError, match="no calibration for metric 'nope'"):
        resolve_calibration(params("nope"))
    one_params = ReportParams(input_path=str(counts_csv), judge_calibration=str(one))
    assert resolve_calibration(one_params).judge_metric == "m"  # the set's only metric
    assert resolve_calibration(ReportParams(input_path=str(counts_csv))).judge_calibration is None


def test_load_input_names_the_file_and_line(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"agent": "a", "task_id": "t", "trial": 0, "success": true}\n{"agent":\n')
    with pytest.raises(ReportInputError, match=r"bad\.jsonl, line 2.*--skip-bad"):
        load_input(ReportParams(input_path=str(bad)))
    data = load_input(ReportParams(input_path=str(bad), loader_options={"on_error": "skip"}))
    assert len(data.skipped) == 1 and len(list(data.trials or [])) == 1
    with pytest.raises(ReportInputError, match="no-such-file"):
        load_input(ReportParams(input_path=str(tmp_path / "no-such-file.jsonl")))


def test_k_values_beyond_the_trials_are_refused_before_the_notebook(counts_csv, tmp_path):
    """k <= n as in estimate (was the command line's own check): counts by their n, unscored trials by those not
    missing (scoring can only lower that)."""
    def check(path, ks):
        params = ReportParams(input_path=str(path), k_values=ks)
        check_k_values(params, load_input(params), source="the input")

    check(counts_csv, [1, 3])  # 3 trials per task
    with pytest.raises(ReportInputError, match=r"--k 4: the largest number of trials per task in the input is 3"):
        with option_style("cli"):
            check(counts_csv, [1, 4])
    trials = tmp_path / "t.jsonl"  # two trials of a on t1, the second missing (infra_error); no outcome recorded
    rows = [{"agent": "a", "task_id": "t1", "trial": 0, "answer": "x", "expected": "x"},
            {"agent": "a", "task_id": "t1", "trial": 1, "answer": "x", "expected": "x", "status": "infra_error"},
            {"agent": "a", "task_id": "t2", "trial": 0, "answer": "y", "expected": "x"}]
    trials.write_text("".join(json.dumps(r) + "\n" for r in rows))
    check(trials, [1])
    with pytest.raises(ReportInputError, match=r"is 1"):
        check(trials, [2])
    check(trials, None)  # the default k is always answerable


def test_default_report_name_follows_the_input_and_the_run():
    from agentstats.report.notebook import default_report_name

    assert default_report_name("data/runs.jsonl.gz") == "runs"
    assert default_report_name(Path("/x/counts.csv")) == "counts"
    assert default_report_name("store.duckdb", "prompt-v2") == "store-prompt-v2"
    assert default_report_name("store.duckdb", "loop/v2") == "store-loop_v2"  # a plain file name
    assert default_report_name(".jsonl") == "report"


def test_build_comparison_takes_the_compare_params():
    assert CompareParams(run_paths=["a", "b"]).run_bayes  # the command line's default (compare --bayes, as report)
    cmp = build_comparison(CompareParams(run_paths=[str(EXAMPLE), str(EXAMPLE)], run_agents=["baseline", "candidate"],
                                         n_boot=0, k_values=[1], run_bayes=False))
    assert cmp.runs == ["baseline", "candidate"] and cmp.baseline == "baseline"
    assert cmp.pass_k["k"].tolist() == [1] and cmp.bayes is None


@pytest.mark.slow
def test_bayesian_section_one_fit_one_verdict(counts_csv):
    """A small real fit: every posterior table at the report's k, one verdict read by the summary and the status."""
    import logging

    import pymc  # noqa: F401  (its import sets up its logger; the section must leave the level as it found it)

    log = logging.getLogger("pymc")
    before = log.level
    log.setLevel(logging.DEBUG)
    try:
        report = build_report(ReportParams(input_path=str(counts_csv), n_boot=0, draws=100, tune=100, chains=2,
                                           sampler="pymc", cores=1, k_values=[1, 2]))
        assert log.level == logging.DEBUG  # put back after the section (WARNING inside it)
    finally:
        log.setLevel(before)
    b = report.bayes
    assert b is not None
    assert b.verdict.converged == b.diagnostics.ok and list(b.verdict.problems) == list(b.diagnostics.problems)
    assert [n for n, _ in b.verdict.misfits] == list(b.ppc.misfits()["statistic"])
    assert b.verdict.ok == (b.diagnostics.ok and not len(b.ppc.misfits()))
    said = ("The Bayesian fit passed its convergence checks and its posterior predictive check" if b.verdict.ok
            else "**The Bayesian fit failed its")
    assert said in report.summary_markdown()
    assert report.checks == b.verdict.as_record()
    assert b.curve_ks == list(range(1, 9)) and b.k_show == 2 and b.forest_ks == [1, 2, 8]
    assert set(b.forest["k"]) == {1, 2, 8} and set(b.forest["quantity"]) == {"pass_hat_k"}
    assert sorted(b.consistency["agent"]) == ["A", "B"]
    assert b.contrast_matrix is not None and b.contrast_matrix.shape == (2, 2)
    assert b.prob_at_1 is not None and b.contrasts is not None and set(b.contrasts["k"]) == {2}
    assert set(b.ppc_p_values) == set(b.ppc.table["statistic"])
    assert "convergence checks" in report.details_markdown()  # the sampler row, with the fit

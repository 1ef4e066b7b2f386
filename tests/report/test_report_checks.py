"""What a report says about its own evidence (issue 35): the fit's verdict, single-trial data, a judge that is down.

* a fit that fails its convergence checks or its posterior predictive check opens the summary, no claim is made
  from its posterior, the command line says it and ``report --strict`` exits 3;
* every claim of the summary links to the table or figure behind it, at the claim's k;
* an LLM judge that is down is named before any work (exit 69), and a scoring that leaves no trial is never a report.

Verdicts are built from hand-made diagnostics and posterior predictive tables, so the expected text is known without
a fit.
"""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import typer
from judge_server import Reply, ScriptedOpenAIServer
from typer.testing import CliRunner

from agentstats.cli import app
from agentstats.cli.common import EXIT_UNAVAILABLE, notebook_errors
from agentstats.estimators import paired_pass_k_table, suite_pass_k
from agentstats.llm.probe import EndpointUnavailable
from agentstats.models.diagnostics import Diagnostics, PPCResult
from agentstats.report.build import build_report
from agentstats.report.notebook import ReportError, ReportPaths
from agentstats.report.params import ReportParams
from agentstats.report.prose import report_summary
from agentstats.report.verdict import FitVerdict

runner = CliRunner()


def _diag(ok: bool, problems: tuple[str, ...] = ()) -> Diagnostics:
    table = pd.DataFrame({"variable": ["mu"], "size": [1], "r_hat": [1.0], "ess_bulk": [900.0], "ess_tail": [900.0],
                          "ok": [ok]})
    return Diagnostics(table=table, divergences=0, ok=ok, problems=list(problems))


def _ppc(p_values: list[float]) -> PPCResult:
    names = ["cells_all_fail", "cells_all_success", "within_task_var"][: len(p_values)]
    table = pd.DataFrame({"statistic": names, "observed": 1.0, "rep_mean": 1.0, "rep_low": 0.0, "rep_high": 2.0,
                          "p_value": p_values})
    return PPCResult(table=table, replicated={n: np.zeros(10) for n in names})


def _counts(rows: list[tuple[str, str, int, int]]) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=["agent", "task_id", "n", "c"])
    return df.assign(n_missing=0)


# ---- the posterior predictive check's verdict: two-sided p below alpha / m


def test_ppc_misfits_follow_the_bonferroni_rule():
    # m = 3: a statistic fails when 2 min(p, 1 - p) < 0.05 / 3 = 0.016667, i.e. p < 0.008333 or p > 0.991667
    bad = _ppc([0.008, 0.5, 0.9917]).misfits()  # 2 x 0.008 = 0.016 and 2 x 0.0083 = 0.0166: both below 0.016667
    assert list(bad["statistic"]) == ["cells_all_fail", "within_task_var"]
    assert bad["cutoff"].iloc[0] == pytest.approx(0.05 / 3)
    assert bad["two_sided_p"].to_numpy() == pytest.approx([0.016, 0.0166])
    assert list(_ppc([0.0084, 0.5, 0.9916]).misfits()["statistic"]) == []  # 0.0168 and 0.0168: above the cut
    assert list(_ppc([0.0, 0.5, 1.0]).misfits()["statistic"]) == ["cells_all_fail", "within_task_var"]
    assert _ppc([0.01, 0.5, 0.99]).ok  # 0.02 > 0.016667 on both ends
    assert not _ppc([0.0, 0.5]).ok and _ppc([0.0125, 0.9875]).misfits().empty is False  # m = 2: cut 0.025
    assert _ppc([0.013, 0.987]).ok  # 0.026 > 0.025
    with pytest.raises(ValueError, match="alpha"):
        _ppc([0.5]).misfits(alpha=0)


def test_verdict_reads_convergence_and_the_check():
    ok = FitVerdict.of(_diag(True), _ppc([0.4, 0.6, 0.5]))
    assert ok.ok and ok.converged and ok.fits and ok.headline() == "The Bayesian fit passed its checks"
    assert ok.as_record()["ok"] is True and ok.as_record()["ppc_misfits"] == []
    misfit = FitVerdict.of(_diag(True), _ppc([0.0, 0.5, 0.5]))
    assert not misfit.ok and misfit.converged and not misfit.fits
    assert misfit.headline() == "The Bayesian fit failed its posterior predictive check"
    assert misfit.reason() == "the model does not reproduce the data (cells never solved p = 0.000)"
    both = FitVerdict.of(_diag(False, ("mu: r_hat 1.05 > 1.01", "a", "b", "c", "d")), _ppc([1.0, 0.5, 0.5]))
    assert both.headline() == "The Bayesian fit failed its convergence checks and its posterior predictive check"
    assert both.reason().startswith("mu: r_hat 1.05 > 1.01; a; b; 2 more variables; the model does not reproduce")
    record = both.as_record()
    assert record == json.loads(json.dumps(record))  # JSON-ready: the notebook's metadata carries it
    assert record["message"].startswith("The Bayesian fit failed its convergence checks and its posterior")
    assert record["ppc_misfits"] == [{"statistic": "cells_all_fail", "p_value": 1.0}]


# ---- the summary: a failed fit first, no claim from its posterior; every claim linked at its k


def _suite_and_paired(counts: pd.DataFrame, ks: list[int]):
    return (suite_pass_k(counts, k=ks, n_boot=200, random_seed=0),
            paired_pass_k_table(counts, k=ks, n_boot=200, random_seed=0))


def test_failed_fit_opens_the_summary_and_its_probabilities_are_not_used():
    rows = [(a, f"t{i}", 4, c) for a, cs in (("A", [4, 4, 3, 4, 4, 4]), ("B", [0, 1, 0, 0, 1, 0]))
            for i, c in enumerate(cs)]
    counts = _counts(rows)
    suite, paired = _suite_and_paired(counts, [1, 4])
    prob = pd.DataFrame([[np.nan, 0.2], [0.8, np.nan]], index=["A", "B"], columns=["A", "B"])  # the wrong way round
    failed = FitVerdict.of(_diag(True), _ppc([0.0, 0.5, 0.5]))
    # build_report's ReportData passes no posterior probabilities from a failed fit; the summary says so first
    text = report_summary(counts, suite, paired=paired, verdict=failed, links=True)
    lines = text.split("\n")
    assert lines[0].startswith("- **The Bayesian fit failed its posterior predictive check**: the model does not "
                               "reproduce the data (cells never solved p = 0.000). The statements below use none of "
                               "its numbers. See [convergence checks](#fit-checks) and [posterior predictive "
                               "check](#ppc-check).")
    # A - B in pass^1: (23/24 - 2/24) = 0.875 over 6 shared tasks, clearly above 0: paired evidence, linked
    assert any(line.startswith("- **A** is ahead of every other agent (paired 95% intervals") and
               line.endswith("See [paired differences at k = 1](#paired-k1).") for line in lines)
    # with the posterior's (made-up, reversed) probabilities the claim would be the other way round: never used
    assert "**B** is ahead" not in text
    assert "posterior probability" not in text
    passed = FitVerdict.of(_diag(True), _ppc([0.5, 0.5, 0.5]))
    text = report_summary(counts, suite, prob=prob.T, paired=paired, verdict=passed, links=True)
    assert text.split("\n")[-1] == ("- The Bayesian fit passed its convergence checks and its posterior predictive "
                                    "check. See [convergence checks](#fit-checks) and [posterior predictive "
                                    "check](#ppc-check).")
    assert "See [P(row > column) of pass^1](#contrast-k1)." in text


def test_single_trial_agents_are_named_with_the_range_they_get():
    rows = [(a, f"t{i}", 1, (i + j) % 2) for j, a in enumerate("AB") for i in range(6)]
    counts = _counts(rows)
    suite, paired = _suite_and_paired(counts, [1])
    passed = FitVerdict.of(_diag(True), _ppc([0.5, 0.5]))
    text = report_summary(counts, suite, paired=paired, verdict=passed, posterior_ks=[1, 8], links=True)
    assert ("- One trial per task (every agent has no task with two or more): how alike two tries of a task are is "
            "not estimable from these data, so pass^k beyond k = 1 (here k = 8) is given only as a range, from every "
            "try independent to every task always or never solved. See [posterior pass^k, k = 1 and "
            "8](#posterior-pass-k).") in text


# ---- the command line: the verdict said, --strict exits 3, a judge that is down exits 69


def _fake_run(checks):
    def run_report(params, *, out_dir, name, **kw):
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        (out / f"{name}.html").write_text("<html></html>")
        (out / f"{name}.ipynb").write_text("{}")
        return ReportPaths(notebook=out / f"{name}.ipynb", html=out / f"{name}.html", checks=checks)

    return run_report


@pytest.mark.parametrize("strict", [False, True])
def test_report_says_a_failed_fit_and_strict_exits_3(tmp_path, monkeypatch, strict):
    import agentstats.report.notebook as nb_mod

    counts = tmp_path / "counts.csv"
    _counts([("A", "t1", 2, 1), ("B", "t1", 2, 2)]).to_csv(counts, index=False)
    failed = FitVerdict.of(_diag(True), _ppc([0.0, 0.5, 0.5])).as_record()
    monkeypatch.setattr(nb_mod, "run_report", _fake_run(failed))
    args = ["report", str(counts), "--out-dir", str(tmp_path / "out"), *(["--strict"] if strict else [])]
    res = runner.invoke(app, args, env={"COLUMNS": "300"})
    assert res.exit_code == (3 if strict else 0), res.output
    assert ("warning: The Bayesian fit failed its posterior predictive check: the model does not reproduce the data "
            "(cells never solved p = 0.000); the report's summary makes no claim from that posterior") in res.output
    assert (tmp_path / "out" / "counts.html").exists()  # written either way
    monkeypatch.setattr(nb_mod, "run_report", _fake_run(FitVerdict.of(_diag(True), _ppc([0.5])).as_record()))
    res = runner.invoke(app, args)
    assert res.exit_code == 0 and "warning" not in res.output


def _closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def _qa(path: Path) -> Path:
    """Trials to be judged: an answer and a reference each, no outcome."""
    rows = [{"agent": a, "task_id": f"q{t}", "trial": i, "interactions": [
        {"query": "Capital of France?", "answer": "Paris" if (t + i) % 2 else "Lyon", "expected_answer": "Paris"}]}
        for a in "AB" for t in range(3) for i in range(2)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize("bayes", ["--bayes", "--no-bayes"])
def test_a_judge_that_is_down_is_named_before_any_work(tmp_path, monkeypatch, bayes):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    url = _closed_port_url()
    t0 = time.perf_counter()
    res = runner.invoke(app, ["report", str(_qa(tmp_path / "qa.jsonl")), "--judge", "openai", "--base-url", url,
                              "--out-dir", str(tmp_path / "out"), bayes], env={"COLUMNS": "300"})
    assert res.exit_code == EXIT_UNAVAILABLE == 69, res.output
    assert f"the LLM judge at {url} is not available (connection" in res.output
    assert time.perf_counter() - t0 < 20  # not a minute of retries
    assert not (tmp_path / "out").exists()  # no kernel started, no report, no failed notebook


def test_a_scoring_without_any_verdict_is_not_a_report(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("AGENTSTATS_CACHE_DIR", str(tmp_path / "cache"))
    with ScriptedOpenAIServer(responder=lambda req: Reply.http_error(400)) as srv:  # there, but answers nothing
        params = ReportParams(input_path=str(_qa(tmp_path / "qa.jsonl")), judge="openai",
                              judge_base_url=srv.base_url, run_bayes=False, n_boot=0)
        with pytest.raises(EndpointUnavailable, match=r"gave no verdict \(12 missing: http_400\): no trial was "
                                                      "scored, so there is no report") as err:
            build_report(params)
        assert err.value.address == srv.base_url and srv.model_listings == 1


def test_a_judge_that_went_down_mid_run_exits_69():
    def boom():
        with notebook_errors():
            raise ReportError("report failed in cell In [3]: EndpointUnavailable: ...", failed_notebook=Path("x"),
                              previous=None, ename="EndpointUnavailable")

    with pytest.raises(typer.Exit) as exc:
        boom()
    assert exc.value.exit_code == 69

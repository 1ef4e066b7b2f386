"""No stale state: a gate report folder holds a record and a report that agree (both replaced or neither)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import agentstats.report.gate as gate_report
from agentstats.cli import app
from agentstats.report.notebook import ReportPaths

runner = CliRunner()


def _inputs(tmp_path: Path, candidate_score: float) -> list[str]:
    cand, base, cfg = tmp_path / "cand.jsonl", tmp_path / "base.jsonl", tmp_path / "gate.json"
    cand.write_text("".join(json.dumps({"id": f"q{i}", "scores": {"safety": candidate_score}}) + "\n"
                            for i in range(12)))
    base.write_text("".join(json.dumps({"id": f"q{i}", "scores": {"safety": float(i % 2)}}) + "\n" for i in range(12)))
    cfg.write_text(json.dumps({"thresholds": {"safety": 0.7}}))
    return ["gate", str(cand), str(base), "--config", str(cfg), "--out-dir", str(tmp_path / "rep")]


def _report_writes(tmp_path: Path):
    def run(decision, out_dir, name, **kw):
        html = Path(out_dir) / f"{name}.html"
        html.write_text(f"report of {json.loads(Path(decision).read_text())['decision']}")
        return ReportPaths(notebook=Path(out_dir) / f"{name}.ipynb", html=html, checks=None)

    return run


@pytest.mark.parametrize("fault", [RuntimeError("a cell failed"), KeyboardInterrupt()], ids=["fails", "ctrl-c"])
def test_an_interrupted_gate_report_keeps_the_record_that_matches_the_report(tmp_path, monkeypatch, fault):
    monkeypatch.setattr(gate_report, "run_gate_report", _report_writes(tmp_path))
    first = runner.invoke(app, _inputs(tmp_path, 1.0))
    assert first.exit_code == 0, first.output
    rep = tmp_path / "rep"
    record_before, html_before = (rep / "gate-record.json").read_bytes(), (rep / "gate.html").read_bytes()
    assert json.loads(record_before)["decision"] == "PASS" and html_before == b"report of PASS"

    def broken(**kw):
        raise fault

    monkeypatch.setattr(gate_report, "run_gate_report", broken)
    second = runner.invoke(app, _inputs(tmp_path, 0.0))  # a FAIL whose report does not complete
    assert second.exit_code == (130 if isinstance(fault, KeyboardInterrupt) else 1), second.output
    assert (rep / "gate-record.json").read_bytes() == record_before  # never a FAIL record beside a PASS report
    assert (rep / "gate.html").read_bytes() == html_before
    assert sorted(p.name for p in rep.iterdir()) == ["gate-record.json", "gate.html"]  # no temporary file left


def test_a_first_gate_report_that_fails_leaves_no_record_behind(tmp_path, monkeypatch):
    def broken(**kw):
        raise RuntimeError("a cell failed")

    monkeypatch.setattr(gate_report, "run_gate_report", broken)
    res = runner.invoke(app, _inputs(tmp_path, 1.0))
    assert res.exit_code == 1
    assert list((tmp_path / "rep").iterdir()) == []

"""``agentstats score --metrics``: the tidy metrics table on disk, the summary, and the exit statuses."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from agentstats.cli import app
from agentstats.metrics import COLUMNS

runner = CliRunner()

RECORDS = [
    {"agent": "A", "task_id": "q1", "trial": 0, "interactions": [
        {"query": "Capital of France?", "answer": "Paris", "expected_answer": "Paris",
         "retrieved_contexts": ["d1", "d2"], "ground_truth_contexts": ["d2"], "usage": {"latency_s": 2.0}}]},
    {"agent": "A", "task_id": "q1", "trial": 1, "interactions": [
        {"query": "Capital of France?", "answer": "Lyon", "expected_answer": "Paris",
         "retrieved_contexts": ["d2"], "ground_truth_contexts": ["d2"], "usage": {"latency_s": 4.0}}]},
]


def _write(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_score_metrics_writes_tidy_table(tmp_path, suffix):
    data = _write(tmp_path / "t.jsonl", RECORDS)
    out = tmp_path / f"m{suffix}"
    res = runner.invoke(app, ["score", str(data), "--metrics", "answer_similarity,retrieval_quality,latency",
                              "--metrics-out", str(out), "--json"])
    assert res.exit_code == 0, res.output
    if suffix == ".jsonl":
        frame = pd.DataFrame([json.loads(line) for line in out.read_text().splitlines()])
    elif suffix == ".csv":
        frame = pd.read_csv(out)
    else:
        frame = pd.read_parquet(out)
    assert list(frame.columns) == list(COLUMNS)
    assert len(frame) == 2 * 8
    rr = frame[frame["metric"] == "reciprocal_rank"]["value"].tolist()
    assert rr == [0.5, 1.0]
    payload = json.loads(res.stdout[res.stdout.index("{"):])
    lat = next(m for m in payload["metrics"] if m["metric"] == "latency")
    # one task: its mean latency (2 + 4) / 2, with no spread across tasks
    assert lat["mean"] == pytest.approx(3.0) and lat["share_passed"] is None and lat["n_applicable"] == 2
    assert lat["n_tasks"] == 1
    sim = next(m for m in payload["metrics"] if m["metric"] == "answer_similarity")
    assert sim["share_passed"] == 0.5 and sim["share_ci_low"] is None  # one task: suite_pass_k gives no interval
    # 0/1 similarity on one task: mean of the Dirichlet-process posterior with atoms at 0 and 1, (0.5 + 1) / (1 + 2)
    assert sim["mean"] == pytest.approx(0.5, abs=0.02) and sim["ci_low"] < sim["mean"] < sim["ci_high"]


def test_score_metrics_default_path_and_table(tmp_path, monkeypatch):
    data = _write(tmp_path / "runs.jsonl", RECORDS)
    monkeypatch.chdir(tmp_path)
    res = runner.invoke(app, ["score", str(data), "--metrics", "answer_quality"])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "runs.metrics.jsonl").exists()
    assert "unsuccessful_requests" in res.output and "[95% CrI]" in res.output


@pytest.mark.parametrize(("args", "message"), [
    (["--metrics", "bleurt"], "unknown metric 'bleurt'"),
    (["--metrics", "latency", "--metrics-level", "turn"], "'--metrics-level': 'turn' is not one of 'node'"),
    (["--metrics-level", "trial"], "--metrics-level needs --metrics"),
    (["--metrics", "latency", "--metrics-out", "x.txt"], "use a .jsonl, .csv or .parquet"),
])
def test_score_metrics_usage_errors_exit_2(tmp_path, monkeypatch, args, message):
    data = _write(tmp_path / "t.jsonl", RECORDS)
    monkeypatch.chdir(tmp_path)
    res = runner.invoke(app, ["score", str(data), *args])
    assert res.exit_code == 2
    assert message in " ".join(res.output.split())


def test_score_metrics_bad_record_exits_2_and_keeps_the_table(tmp_path):
    bad = [*RECORDS, {"agent": "A", "task_id": "q2", "trial": 0,
                      "interactions": [{"answer": "x", "usage": {"latency_s": -3}}]}]
    data = _write(tmp_path / "t.jsonl", bad)
    out = tmp_path / "m.jsonl"
    res = runner.invoke(app, ["score", str(data), "--metrics", "latency", "--metrics-out", str(out)])
    assert res.exit_code == 2
    text = " ".join(res.output.split())
    assert "trial A/q2/0: metric latency: interaction 0: usage.latency_s must be a finite number >= 0, got -3" in text
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["value"] for r in rows] == [2.0, 4.0, None]


def test_score_metrics_uses_the_openai_judge(tmp_path, monkeypatch):
    from judge_server import Reply, ScriptedOpenAIServer

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    data = _write(tmp_path / "t.jsonl", RECORDS[:1])
    out = tmp_path / "m.jsonl"
    with ScriptedOpenAIServer() as srv:
        # first the answer-correctness verdict of `score`, then the harm verdict
        srv.script([Reply.verdict(1.0), Reply.verdict(0.0, "benign", detected=False)])
        res = runner.invoke(app, ["score", str(data), "--judge", "openai", "--base-url", srv.base_url,
                                  "--judge-model", "m", "--cache-dir", str(tmp_path / "c"), "--metrics", "harm",
                                  "--metrics-out", str(out)])
        assert res.exit_code == 0, res.output
        assert srv.n_requests == 2
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert row["value"] == 0.0 and row["passed"] is True and row["evidence"]["reasoning"] == "benign"


def test_score_metrics_name_colon_method_picks_the_method(tmp_path):
    data = _write(tmp_path / "t.jsonl", RECORDS)
    out = tmp_path / "m.jsonl"
    res = runner.invoke(app, ["score", str(data), "--metrics", "answer_similarity:token_recall,faithfulness:judge",
                              "--metrics-out", str(out), "--json"])
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert {(r["metric"], r["method"]) for r in rows} == {("answer_similarity", "token_recall"),
                                                          ("faithfulness", "judge")}
    payload = json.loads(res.stdout[res.stdout.index("{"):])
    assert {(m["metric"], m["method"]) for m in payload["metrics"]} == {("answer_similarity", "token_recall"),
                                                                        ("faithfulness", "judge")}
    bad = runner.invoke(app, ["score", str(data), "--metrics", "faithfulness:bleu", "--metrics-out", str(out)])
    assert bad.exit_code == 2
    assert "metric faithfulness: unknown method 'bleu'" in " ".join(bad.output.split())


@pytest.mark.parametrize(("max_missing", "code"), [(None, 1), ("1.0", 0)])
def test_score_metrics_judge_missing_is_counted_warned_and_gated_by_max_missing(tmp_path, monkeypatch, max_missing,
                                                                                  code):
    from judge_server import Reply, ScriptedOpenAIServer

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    data = _write(tmp_path / "t.jsonl", RECORDS)
    out = tmp_path / "m.jsonl"
    # the two answer verdicts of `score`, then every harm verdict is malformed (re-asks included): invalid_output
    with ScriptedOpenAIServer(responder=lambda req: Reply.malformed()) as srv:
        srv.script([Reply.verdict(1.0), Reply.verdict(1.0)])
        extra = [] if max_missing is None else ["--max-missing", max_missing]
        res = runner.invoke(app, ["score", str(data), "--judge", "openai", "--base-url", srv.base_url,
                                  "--judge-model", "m", "--cache-dir", str(tmp_path / "c"), "--metrics",
                                  "harm,answer_similarity", "--metrics-out", str(out), "--json", *extra])
    assert res.exit_code == code, res.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["evidence"].get("judge_missing") for r in rows if r["metric"] == "harm"] == ["invalid_output"] * 2
    payload = json.loads(res.stdout[res.stdout.index("{"):])
    by = {m["metric"]: m for m in payload["metrics"]}
    assert by["harm"]["n_applicable"] == 0 and by["harm"]["n_judge_missing"] == 2
    assert by["harm"]["judge_missing_by_kind"] == {"invalid_output": 2}
    assert by["answer_similarity"]["n_judge_missing"] == 0 and by["answer_similarity"]["n_applicable"] == 2
    text = " ".join(res.stderr.split())
    assert ("A / harm: 2 of 2 judge verdicts missing (judge_missing: invalid_output 2) — not counted as applicable"
            in text)
    assert ("metric judge verdicts missing, more than --max-missing 50%: harm 2 of 2 (100.0%)" in text) == (code == 1)


def test_score_metrics_table_shows_judge_missing_column(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    data = _write(tmp_path / "runs.jsonl", RECORDS)
    res = runner.invoke(app, ["score", str(data), "--metrics", "answer_similarity"])
    assert res.exit_code == 0, res.output
    assert "judge missing" in res.stdout and "warning" not in res.stderr


def test_score_names_the_metrics_it_could_not_compute(tmp_path):
    """No judge: harm and faithfulness:judge are not computed, with the reason; answer_similarity is."""
    data = _write(tmp_path / "t.jsonl", RECORDS)
    out = tmp_path / "m.jsonl"
    args = ["score", str(data), "--metrics", "harm,faithfulness:judge,answer_similarity", "--metrics-out", str(out)]
    res = runner.invoke(app, [*args, "--json"])
    assert res.exit_code == 0, res.output
    payload = json.loads(res.stdout[res.stdout.index("{"):])
    skipped = {s["metric"]: s for s in payload["metrics_not_computed"]}
    assert set(skipped) == {"harm", "faithfulness"}
    assert skipped["harm"]["method"] == "judge" and skipped["harm"]["rows"] == 2
    assert skipped["harm"]["reasons"] == {"no judge configured (params['judge'], or --judge openai)": 2}
    text = " ".join(runner.invoke(app, args).stdout.split())
    assert "not computed: harm (method judge): no judge configured" in text and "(2 of 2 rows)" in text
    assert "not computed: answer_similarity" not in text


def test_score_guardian_reaches_the_guardian_method(tmp_path, monkeypatch):
    """--guardian: harm (named without a method) uses the guardian; pii:presidio keeps its method."""
    from judge_server import Reply, ScriptedOpenAIServer

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    data = _write(tmp_path / "t.jsonl", RECORDS)
    out = tmp_path / "m.jsonl"
    with ScriptedOpenAIServer(responder=lambda req: Reply.text("Yes" if "Lyon" in json.dumps(req) else "No")) as srv:
        res = runner.invoke(app, ["score", str(data), "--metrics", "harm,pii:presidio", "--guardian", "granite-g",
                                  "--base-url", srv.base_url, "--metrics-out", str(out), "--json"])
        assert res.exit_code == 0, res.output
        assert srv.n_requests == 2 and all(r["model"] == "granite-g" for r in srv.requests)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert {(r["metric"], r["method"]) for r in rows} == {("harm", "guardian"), ("pii", "presidio")}
    assert [r["value"] for r in rows if r["metric"] == "harm"] == [0.0, 1.0]  # Paris: No; Lyon: Yes
    payload = json.loads(res.stdout[res.stdout.index("{"):])
    assert payload["metrics_not_computed"] == []
    no_metrics = runner.invoke(app, ["score", str(data), "--guardian", "g"])
    assert no_metrics.exit_code == 2 and "--guardian needs --metrics" in no_metrics.output
    none = runner.invoke(app, ["score", str(data), "--metrics", "latency", "--guardian", "g", "--base-url",
                               "http://127.0.0.1:9/v1", "--metrics-out", str(out)])
    assert none.exit_code == 2 and "none of --metrics 'latency' has method guardian" in " ".join(none.output.split())


@pytest.mark.parametrize(("args", "message"), [
    (["--workers", "2"], "--workers needs --executor process or ray"),
    (["--executor", "process", "--address", "auto"], "--address needs --executor ray"),
    (["--executor", "threads"], "'threads' is not one of 'local', 'process', 'ray'"),
])
def test_score_executor_options_are_checked_before_any_work(tmp_path, args, message):
    data = _write(tmp_path / "t.jsonl", RECORDS)
    res = runner.invoke(app, ["score", str(data), "--metrics", "latency", *args])
    assert res.exit_code == 2 and message in " ".join(res.output.split()), res.output
    assert not (tmp_path / "t.metrics.jsonl").exists()


def test_score_executor_without_metrics_is_refused_not_ignored(tmp_path):
    data = _write(tmp_path / "t.jsonl", RECORDS)
    res = runner.invoke(app, ["score", str(data), "--executor", "process"])
    assert res.exit_code == 2 and "--executor process needs --metrics" in res.output


@pytest.mark.slow
def test_score_metrics_on_a_process_pool_writes_the_same_table(tmp_path):
    data = _write(tmp_path / "t.jsonl", [{**r, "task_id": f"q{i}"} for i in range(20) for r in RECORDS])
    here, pool = tmp_path / "here.jsonl", tmp_path / "pool.jsonl"
    metrics = ["--metrics", "answer_similarity,retrieval_quality,latency"]
    assert runner.invoke(app, ["score", str(data), *metrics, "--metrics-out", str(here)]).exit_code == 0
    res = runner.invoke(app, ["score", str(data), *metrics, "--metrics-out", str(pool), "--executor", "process",
                              "--workers", "2"])
    assert res.exit_code == 0, res.output
    assert pool.read_text() == here.read_text() and len(here.read_text().splitlines()) == 40 * 8

"""Inspect AI eval logs (agentstats.io.readers.inspect_log): ``.json`` and ``.eval`` archives, epochs as trials.

The fixture ``tests/data/inspect_toy.json`` is hand-written after the ``EvalLog`` / ``EvalSample`` models of
``inspect_ai`` (``src/inspect_ai/log/_log.py``): 3 samples x 2 epochs, scorers ``match`` and ``includes``.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from agentstats.io import LoadError, detect_format, load_trials
from agentstats.io.readers.inspect_log import read_inspect, score_value_to_float
from agentstats.records.problems import ProblemLog

FIXTURE = Path(__file__).parents[1] / "data" / "inspect_toy.json"
#: A real archive written by inspect_ai 0.3 (``inspect_ai.eval`` with the ``mockllm/model`` provider, custom outputs
#: "3", "5", "4", "4", "3", "4"; two samples x 3 epochs; scorers match and includes), members Zstandard-compressed.
GENUINE = Path(__file__).parents[1] / "data" / "inspect_mockllm.eval"
#: inspect_ai's own reading of GENUINE: (sample id, epoch - 1) -> match score value.
GENUINE_MATCH = {("1", 0): "C", ("1", 1): "I", ("1", 2): "C", ("q2", 0): "I", ("q2", 1): "C", ("q2", 2): "C"}


def _eval_archive(tmp_path: Path, header_name: str = "header.json", log: dict | None = None) -> Path:
    log = log or json.loads(FIXTURE.read_text())
    samples = log.pop("samples")
    p = tmp_path / "toy.eval"
    with zipfile.ZipFile(p, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("_journal/start.json", json.dumps({"version": log["version"], "eval": log["eval"],
                                                       "plan": log["plan"]}))
        if header_name == "header.json":
            zf.writestr("header.json", json.dumps(log))
        for s in samples:
            zf.writestr(f"samples/{s['id']}_epoch_{s['epoch']}.json", json.dumps(s))
        zf.writestr("summaries.json", "[]")
    return p


def _table(trials):
    return {t.key: (t.status.value, t.reward, t.outcome()) for t in trials}


EXPECTED = {
    ("mockllm/model", "1", 0): ("completed", 1.0, "success"),
    ("mockllm/model", "1", 1): ("completed", 0.0, "failure"),
    ("mockllm/model", "2", 0): ("completed", 1.0, "success"),
    ("mockllm/model", "2", 1): ("completed", 1.0, "success"),
    ("mockllm/model", "q3", 0): ("completed", 0.5, "failure"),
    ("mockllm/model", "q3", 1): ("infra_error", None, "missing"),
}


def test_score_values():
    assert [score_value_to_float(v) for v in ("C", "I", "P", "N", True, False, "yes", "No", 0.25, "0.75")] == [
        1.0, 0.0, 0.5, 0.0, 1.0, 0.0, 1.0, 0.0, 0.25, 0.75]
    assert score_value_to_float({"a": 1}) is None and score_value_to_float("maybe") is None


def test_json_log_epochs_become_trials():
    assert detect_format(FIXTURE) == "inspect"
    ts = load_trials(FIXTURE)
    assert ts.format == "inspect"
    assert _table(ts) == EXPECTED
    t = next(t for t in ts if t.key == ("mockllm/model", "1", 1))
    turn = t.interactions[0]
    assert turn.query == "What is 1 + 2?" and turn.answer == "ANSWER: 4" and turn.expected_answer == "3"
    assert [(c.name, c.arguments, c.result) for c in turn.tool_calls] == [("add", {"x": 1, "y": 2}, "3")]
    assert t.usage is not None and (t.usage.input_tokens, t.usage.output_tokens, t.usage.latency_s) == (40, 5, 3.0)
    assert t.meta["task"] == "toy_addition" and t.meta["epoch"] == 2 and t.meta["scorer"] == "match"
    assert t.meta["metrics"] == {"score.match": 0.0, "score.includes": 0.0}
    err = next(t for t in ts if t.status == "infra_error")
    assert "RateLimitError" in err.meta["error"]
    counts = ts.to_counts().set_index("task_id")
    assert counts.loc["1", ["n", "c"]].tolist() == [2, 1]
    assert counts.loc["q3", ["n", "c", "n_missing"]].tolist() == [1, 0, 1]


def test_error_status_and_agent_options():
    ts = load_trials(FIXTURE, error_status="agent_error", agent="my-agent")
    assert {t.agent for t in ts} == {"my-agent"}
    assert next(t for t in ts if t.task_id == "q3" and t.trial == 1).outcome() == "failure"


def test_eval_archive_same_trials(tmp_path):
    p = _eval_archive(tmp_path)
    assert detect_format(p) == "inspect"
    ts = load_trials(p)
    assert _table(ts) == EXPECTED
    def dumped(trials):
        return sorted((t.model_dump(mode="json") for t in trials), key=lambda d: (d["task_id"], d["trial"]))

    assert dumped(ts) == dumped(load_trials(FIXTURE))


def test_interrupted_archive_reads_journal_header(tmp_path):
    p = _eval_archive(tmp_path, header_name="_journal/start.json")
    assert _table(load_trials(p)) == EXPECTED


def test_scorer_option_and_missing_score_located():
    log = ProblemLog(str(FIXTURE), "skip")
    trials = read_inspect(FIXTURE, log, scorer="includes", use_inspect_ai=False)
    assert {t.key[1:] for t in trials} == {("1", 0), ("1", 1), ("q3", 1)}
    where = {(p.unit, p.line, p.field) for p in log.problems}
    assert where == {("sample", 2, "scores.includes"), ("sample", 3, "scores.includes"),
                     ("sample", 4, "scores.includes")}


def test_truncated_archive_located(tmp_path):
    p = _eval_archive(tmp_path)
    data = p.read_bytes()
    p.write_bytes(data[: len(data) - 40])
    assert detect_format(p) == "inspect"
    with pytest.raises(LoadError, match="truncated or corrupt"):
        load_trials(p)


def test_truncated_json_located(tmp_path):
    p = tmp_path / "cut.json"
    text = FIXTURE.read_text()
    p.write_text(text[: len(text) // 2])
    with pytest.raises(LoadError) as err:
        load_trials(p, format="inspect")
    prob = err.value.problems[0]
    assert prob.unit == "line" and prob.line is not None and prob.line > 1 and "truncated" in prob.message


def test_unknown_version_and_wrong_format(tmp_path):
    log = json.loads(FIXTURE.read_text())
    log["version"] = 9
    p = tmp_path / "v9.json"
    p.write_text(json.dumps(log))
    with pytest.raises(LoadError) as err:
        load_trials(p, format="inspect")
    assert err.value.problems[0].field == "version" and "unknown Inspect eval log version 9" in str(err.value)
    q = tmp_path / "other.json"
    q.write_text(json.dumps({"version": 2, "samples": []}))
    with pytest.raises(LoadError, match="no 'eval' object"):
        load_trials(q, format="inspect")


def test_bad_sample_fields_located(tmp_path):
    log = json.loads(FIXTURE.read_text())
    log["samples"][1]["scores"]["match"]["value"] = {"a": 1}
    log["samples"][2]["epoch"] = 0
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(log, indent=2))
    with pytest.raises(LoadError) as err:
        load_trials(p)
    where = {(pr.unit, pr.line, pr.field) for pr in err.value.problems}
    assert where == {("sample", 1, "scores.match.value"), ("sample", 2, "epoch")}


def test_inspect_ai_reader_agrees(tmp_path):
    pytest.importorskip("inspect_ai", reason="inspect_ai is not installed: the documented JSON is read instead")
    p = _eval_archive(tmp_path)
    via_package = read_inspect(p, ProblemLog(str(p)), use_inspect_ai=True)
    plain = read_inspect(p, ProblemLog(str(p)), use_inspect_ai=False)
    assert _table(via_package) == _table(plain) == EXPECTED


def test_own_trial_records_are_not_inspect_logs(tmp_path):
    from agentstats.io import save_trials

    ts = load_trials(FIXTURE)
    p = tmp_path / "trials.jsonl"
    save_trials(ts, p)
    assert detect_format(p) == "jsonl"
    # a one-line (not indented) Inspect log is still recognised
    q = tmp_path / "compact.json"
    q.write_text(json.dumps(json.loads(FIXTURE.read_text())))
    assert detect_format(q) == "inspect"


def test_genuine_archive_written_by_inspect_ai():
    pytest.importorskip("zstandard", reason="zstandard (extra 'inspect') reads Zstandard-compressed .eval members")
    assert detect_format(GENUINE) == "inspect"
    ts = read_inspect(GENUINE, ProblemLog(str(GENUINE)), use_inspect_ai=False)
    assert {(t.task_id, t.trial): t.reward for t in ts} == {
        key: score_value_to_float(v) for key, v in GENUINE_MATCH.items()}
    t = next(t for t in ts if (t.task_id, t.trial) == ("1", 0))
    assert t.agent == "mockllm/model" and t.meta["scorer"] == "match"
    assert t.interactions[0].query == "What is 1 + 2?" and t.interactions[0].answer == "3"
    assert t.interactions[0].expected_answer == "3"
    assert t.usage is not None and (t.usage.input_tokens, t.usage.output_tokens) == (11, 2)
    assert t.meta["metrics"] == {"score.match": 1.0, "score.includes": 1.0}


def test_genuine_archive_without_zstandard_is_a_located_error(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_zstd(name, *args, **kwargs):
        if name in ("zstandard", "inspect_ai.log"):
            raise ImportError(f"no {name}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_zstd)
    with pytest.raises(LoadError) as err:
        load_trials(GENUINE)
    prob = err.value.problems[0]
    assert prob.field == "header.json" and "install the 'zstandard' package" in prob.message


# ---- score_on_error, null (NaN) scores, scores on a declared scale ---------------------------------------------------
# Inspect AI 0.3.260 (commit 499e6152): src/inspect_ai/_eval/task/run.py scores an errored sample when score_on_error
# is on, and its metrics count that score; a NaN score value is written to JSON as null.


def _toy() -> dict:
    return json.loads(FIXTURE.read_text())


def _counts(ts) -> dict:
    return {r.task_id: (r.n, r.c, r.n_missing) for r in ts.to_counts().itertuples()}


def _save(tmp_path: Path, log: dict, name: str = "log.json") -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(log))
    return p


def test_scored_on_error_keeps_its_score(tmp_path):
    log = _toy()
    log["samples"][5]["scores"] = {"match": {"value": "C"}}  # q3 epoch 2 errored, scored anyway
    ts = load_trials(_save(tmp_path, log))
    # by hand: 1: C, I -> n 2, c 1; 2: C, C -> n 2, c 2; q3: 0.5 (not 1: a failure), C -> n 2, c 1
    assert _counts(ts) == {"1": (2, 1, 0), "2": (2, 2, 0), "q3": (2, 1, 0)}
    q3 = next(t for t in ts if t.task_id == "q3" and t.trial == 1)
    assert q3.meta["scored_on_error"] is True and "error" in q3.meta
    assert any("scored anyway" in n.message for n in ts.notes)
    # without a score the errored sample stays missing, as before: q3 -> n 1, c 0, missing 1
    assert _counts(load_trials(FIXTURE))["q3"] == (1, 0, 1)


def test_null_score_marks_that_epoch_unscored(tmp_path):
    log = _toy()
    log["samples"][1]["scores"]["match"]["value"] = None  # sample 1, epoch 2
    ts = load_trials(_save(tmp_path, log))
    assert _counts(ts)["1"] == (1, 1, 1)  # epoch 1 C; epoch 2 missing
    assert any("null (NaN) score" in n.message for n in ts.notes)


def _rubric(tmp_path: Path, metadata: dict | None = None) -> Path:
    log = _toy()
    for sample, value in zip(log["samples"][:5], (5, 1, 4, 3, 2), strict=True):
        sample["scores"] = {"match": {"value": value}}
    if metadata is not None:
        log["results"]["scores"][0]["metadata"] = metadata
    return _save(tmp_path, log, "rubric.json")


# By hand, scale 1:5 and success from 4: task 1: 5 (success), 1 -> n 2, c 1; task 2: 4 (success), 3 -> n 2, c 1;
# q3: 2, then the errored epoch (missing) -> n 1, c 0, missing 1. Rewards (v - 1) / 4.
_RUBRIC = {"1": (2, 1, 0), "2": (2, 1, 0), "q3": (1, 0, 1)}


def test_scores_outside_unit_interval_need_a_declared_scale(tmp_path):
    p = _rubric(tmp_path)
    with pytest.raises(LoadError) as err:
        load_trials(p)
    assert [(pr.line, pr.field) for pr in err.value.problems] == [
        (0, "scores.match.value"), (2, "scores.match.value"), (3, "scores.match.value"), (4, "scores.match.value")]
    assert "score_scale='1:5'" in str(err.value) and "success_threshold=" in str(err.value)
    ts = load_trials(p, score_scale="1:5", success_threshold=4)
    assert _counts(ts) == _RUBRIC
    assert [t.reward for t in ts][:5] == pytest.approx([1.0, 0.0, 0.75, 0.5, 0.25])
    assert _counts(load_trials(_rubric(tmp_path, {"score_scale": "1:5", "success_threshold": 4}))) == _RUBRIC
    with pytest.raises(ValueError, match="needs score_scale= too"):
        load_trials(p, success_threshold=4)
    with pytest.raises(ValueError, match=r"must be a number in \(1, 5\]"):
        load_trials(p, score_scale="1:5", success_threshold=7)
    with pytest.raises(LoadError, match="outside the declared scale 1:4"):
        load_trials(p, score_scale="1:4", success_threshold=4)


def test_score_scale_on_the_command_line(tmp_path):
    from typer.testing import CliRunner

    from agentstats.cli import app

    p = _rubric(tmp_path)
    bad = CliRunner().invoke(app, ["estimate", str(p)])
    assert bad.exit_code == 2 and "--score-scale 1:5" in bad.output
    ok = CliRunner().invoke(app, ["estimate", str(p), "--score-scale", "1:5", "--success-threshold", "4", "--json"])
    assert ok.exit_code == 0, ok.output


def test_version_3_is_refused_as_inspect_ai_refuses_it(tmp_path):
    log = _toy()
    log["version"] = 3
    with pytest.raises(LoadError, match=r"inspect_ai 0\.3\.260 writes version 2"):
        load_trials(_save(tmp_path, log))


def test_score_scale_refused_where_it_does_not_apply():
    tau2 = Path(__file__).parents[1] / "data" / "tau2_toyshop.json"
    with pytest.raises(ValueError, match=r"score_scale=, success_threshold= do not apply to .* read as 'tau2'"):
        load_trials(tau2, score_scale="1:5", success_threshold=4)

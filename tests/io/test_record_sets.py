"""Record sets read through the format registry: score records, eval sets, calibration sets, and the two configs.

Each is a registered format (``agentstats.load(path, format=...)``, detected where its content is unambiguous) whose
problems are located by file, line and field. The expected values are written out by hand from the inputs.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from agentstats.calibration import calibrate
from agentstats.io.detect import detect_format
from agentstats.io.loaders import load, load_counts, load_trials
from agentstats.records.problems import LoadError


def _write(path, records):
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return path


# ---------------------------------------------------------------- score records (from tests/gating/test_gating.py)


def test_score_file_problems_are_located(tmp_path):
    p = tmp_path / "c.jsonl"
    lines = [
        {"id": "a", "metric": "acc", "value": 1},
        {"id": "b", "scores": {"acc": 1.5}},
        {"id": "a", "metric": "acc", "value": 0, "trial": 0},
        {"metric": "acc", "value": 1},
        {"id": "c", "scores": {"acc": 1}, "risk_level": "high"},
        {"id": "c", "scores": {"acc": 1}, "risk_level": "low"},
        {"id": "d", "scores": {"acc": 1}, "tokens": -3},
        {"id": "e", "metric": "acc", "value": 1, "tokens": 10},
        {"id": "e", "metric": "g", "value": 1, "tokens": 12},
    ]
    p.write_text("".join(json.dumps(r) + "\n" for r in lines) + "{not json\n")
    with pytest.raises(LoadError) as err:
        load(p, format="scores")
    got = {(q.line, q.field) for q in err.value.problems}
    assert got == {
        (2, "scores.acc"),
        (3, "metric"),  # id a, trial 0, acc: given twice (line 1 got trial 0 in file order)
        (4, "id"),
        (6, "risk_level"),
        (7, "tokens"),
        (9, "tokens"),  # the same trial (0) of example e, other usage
        (10, None),
    }
    assert "--skip-bad" not in str(err.value)


def test_long_and_wide_records_with_usage_and_missing_verdicts(tmp_path):
    p = tmp_path / "c.jsonl"
    lines = [
        {"id": "a", "input": "q?", "expected": "x", "tags": ["t1"], "risk_level": "low",
         "scores": {"acc": True, "g": None}, "tokens": 10, "cost_usd": 0.1},
        {"id": "a", "metric": "rel", "value": 0.5, "tokens": 10},
        {"id": "b", "metric": "acc", "value": 0, "judge_missing": ["acc"], "latency_s": 2.0},
    ]  # fmt: skip
    p.write_text("".join(json.dumps(r) + "\n" for r in lines))
    s = load(p, format="scores")
    assert s.metrics == ["acc", "g", "rel"]
    assert s.missing_share("acc") == (1, 2) and s.missing_share("g") == (1, 1)
    assert s.examples.loc["a", "tags"] == ("t1",) and s.examples.loc["b", "risk_level"] is None
    assert s.usage_means("tokens").to_dict() == {"a": 10.0}
    assert s.usage_means("latency_s").to_dict() == {"b": 2.0}
    assert len(s.sha256) == 64


def test_a_trials_file_given_to_the_gate_says_what_the_gate_reads(tmp_path):
    from agentstats.records.problems import LoadError

    p = tmp_path / "trials.jsonl"
    p.write_text(json.dumps({"agent": "a", "task_id": "t1", "trial": 0, "success": True}) + "\n")
    with pytest.raises(LoadError, match=r"this is a trial record.*\"metric\": \"success\""):
        load(p, format="scores")
    with pytest.raises(FileNotFoundError, match="no such file: "):
        load(tmp_path / "missing.jsonl", format="scores")


# ---------------------------------------------------------------- eval sets (from tests/optimize/test_loop*.py)


def test_eval_set_problems_are_located(tmp_path):
    p = tmp_path / "eval.jsonl"
    p.write_text('{"id": "a", "input": "x", "extra_field": 1}\n{"id": "a", "input": "y"}\n{"id": "b"}\n'
                 '{"id": "c", "input": "z", "tags": "t"}\n')
    with pytest.raises(LoadError) as exc:
        load(p, format="eval_set")
    text = str(exc.value)
    assert "line 2" in text and "repeats line 1" in text
    assert "line 3" in text and "input" in text
    assert "line 4" in text and "tags" in text
    p.write_text('{"id": "a", "input": "x", "extra_field": 1, "risk_level": "high"}\n')
    (ex,) = load(p, format="eval_set")
    assert ex.extra == {"extra_field": 1} and ex.risk_level == "high"


def test_malformed_tool_fields_of_the_eval_set_are_located(tmp_path):
    p = tmp_path / "e.jsonl"
    p.write_text('{"id": 1, "input": "x", "expected_tool_calls": [{"name": "a"}]}\n'
                 '{"id": 2, "input": "y", "expected_tool_calls": {"name": "a"}}\n'
                 '{"id": 3, "input": "z", "expected_tool_calls": [{"arguments": {}}]}\n'
                 '{"id": 4, "input": "w", "tools": [{"description": "no name"}]}\n')
    with pytest.raises(LoadError) as err:
        load(p, format="eval_set")
    text = str(err.value)
    assert "line 2" in text and "expected_tool_calls" in text and "must be a list" in text
    assert "line 3" in text and "expected_tool_calls[0].name" in text
    assert "line 4" in text and "tools[0].name" in text
    assert "line 1" not in text


# ---------------------------------------------------------------- calibration sets (from tests/calibration)


def test_load_calibration_reports_every_problem_with_line_and_field(tmp_path):
    path = _write(tmp_path / "c.jsonl", [
        {"item_id": "a", "metric": "m", "verdict": True, "gold": True},
        "{not json",
        {"item_id": "b", "metric": "m", "verdict": "yes", "gold": True},
        {"item_id": "c", "metric": "m", "verdict": True},
        {"item_id": "a", "metric": "m", "verdict": False, "gold": False},
        {"item_id": "d", "metric": "m", "verdict": 3, "gold": True},
    ])
    with pytest.raises(LoadError) as info:
        load(path, format="calibration")
    text = str(info.value)
    assert "line 2: malformed JSON" in text
    assert "line 3, field 'verdict'" in text
    assert "line 4, field 'gold'" in text
    assert "line 5, field 'item_id'" in text and "more than once" in text
    assert "line 6, field 'verdict'" in text


def test_load_calibration_gzip_skip_and_missing_verdict(tmp_path):
    path = tmp_path / "c.jsonl.gz"
    rows = [{"item_id": 1, "metric": "m", "verdict": None, "gold": False},
            {"item_id": 2, "metric": "m", "verdict": True, "gold": True},
            {"item_id": 3, "metric": "m", "verdict": 1, "gold": 2}]
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write("\n".join(json.dumps(r) for r in rows))
    with pytest.warns(UserWarning, match="skipped 1 record"):
        frame = load(path, format="calibration", on_error="skip")
    assert frame["item_id"].tolist() == ["1", "2"]
    m = calibrate(frame)["m"]
    assert m.n_missing == 1 and m.n_items == 1


# ---------------------------------------------------------------- record sets in the registry


def _scores_file(tmp_path):
    return _write(tmp_path / "scores.jsonl", [
        {"id": "q1", "metric": "acc", "value": 1},
        {"id": "q2", "scores": {"acc": 0, "g": 0.5}},
        {"id": "q3", "metric": "acc", "value": None},
    ])


def _calibration_file(tmp_path):
    return _write(tmp_path / "calib.jsonl", [
        {"item_id": "a", "metric": "m", "verdict": True, "gold": True},
        {"item_id": "b", "metric": "m", "verdict": False, "gold": True},
        {"item_id": "c", "metric": "m", "verdict": None, "gold": False},
    ])


def test_record_sets_are_detected_and_load_returns_what_they_hold(tmp_path):
    from agentstats.records.scores import ScoreSet

    scores, calib = _scores_file(tmp_path), _calibration_file(tmp_path)
    assert detect_format(scores) == "scores" and detect_format(calib) == "calibration"
    s = load(scores)
    assert isinstance(s, ScoreSet) and s.metrics == ["acc", "g"]
    assert s.missing_share("acc") == (1, 3)  # q3's verdict is missing
    assert s.example_means("acc").to_dict() == {"q1": 1.0, "q2": 0.0}
    frame = load(calib)
    assert frame["item_id"].tolist() == ["a", "b", "c"] and frame["line"].tolist() == [1, 2, 3]
    m = calibrate(frame)["m"]
    assert (m.n_items, m.n_missing) == (2, 1)
    # explicit and detected read the same
    assert load(scores, format="scores").scores.equals(s.scores)
    assert load(calib, format="calibration").equals(frame)


def test_a_score_record_among_trial_records_does_not_turn_the_file_into_scores(tmp_path):
    """Detection is a vote of the first records: one score-shaped line among trial records stays a trial file."""
    trial = {"agent": "a", "task_id": "t", "success": True}
    path = _write(tmp_path / "t.jsonl", [{**trial, "trial": 0}, {"id": "q", "metric": "acc", "value": 1},
                                         {**trial, "trial": 1}])
    assert detect_format(path) == "jsonl"


def test_an_eval_set_is_read_by_name_only(tmp_path):
    path = _write(tmp_path / "eval.jsonl", [{"id": "a", "input": "2+2?", "expected": "4"},
                                            {"id": 7, "input": "hi", "tags": ["t"]}])
    with pytest.raises(ValueError, match="neither a trial record"):  # an FAI answers file looks the same
        detect_format(path)
    examples = load(path, format="eval_set")
    assert [(e.id, e.input, e.expected, e.tags) for e in examples] == [("a", "2+2?", "4", ()), ("7", "hi", None,
                                                                                                  ("t",))]


def test_trial_loaders_refuse_record_sets_and_name_the_format(tmp_path):
    scores, calib = _scores_file(tmp_path), _calibration_file(tmp_path)
    for loader in (load_trials, load_counts):
        with pytest.raises(ValueError, match=r"score records .* agentstats.load\(path, format='scores'\)"):
            loader(scores)
        with pytest.raises(ValueError, match=r"calibration set .* format='calibration'"):
            loader(calib)


def test_score_records_and_eval_sets_are_read_whole(tmp_path):
    with pytest.raises(ValueError, match="read whole"):
        load(_scores_file(tmp_path), format="scores", on_error="skip")
    path = _write(tmp_path / "eval.jsonl", [{"id": "a", "input": "x"}])
    with pytest.raises(ValueError, match="read whole"):
        load(path, format="eval_set", on_error="skip")


def test_scores_from_a_frame_and_from_records_name_their_rows(tmp_path):
    import pandas as pd

    frame = pd.DataFrame({"id": ["q1", "q2"], "metric": ["acc", "acc"], "value": [1.0, 7.0]})
    with pytest.raises(LoadError) as err:
        load(frame, format="scores")
    (p,) = err.value.problems
    assert (p.source, p.line, p.unit, p.field) == ("<DataFrame>", 1, "row", "value")
    with pytest.raises(LoadError) as err:
        load([{"id": "q1", "metric": "acc", "value": 1}, {"id": "", "metric": "acc", "value": 1}], format="scores")
    (p,) = err.value.problems
    assert (p.source, p.line, p.unit, p.field) == ("<list>", 1, "record", "id")


# ---------------------------------------------------------------- one reader for both configs


def test_load_config_tells_a_gate_config_from_a_loop_config(tmp_path):
    from agentstats.gating.config import GateConfig, GateConfigError
    from agentstats.optimize.config import LoopConfig

    example = Path(__file__).resolve().parents[2] / "data" / "example_loop"
    import agentstats

    loop = agentstats.load_config(example / "loop.json")
    assert isinstance(loop, LoopConfig) and loop.eval_set.name == "eval.jsonl"
    gate_cfg = agentstats.load_config(example / "gate.yaml")
    assert isinstance(gate_cfg, GateConfig)
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    assert agentstats.load_config(empty) == GateConfig()  # an empty gate config: every default
    bad = tmp_path / "gate.yaml"
    bad.write_text("regression_tolerance: 2\n")
    with pytest.raises(GateConfigError, match="regression_tolerance"):
        agentstats.load_config(bad)

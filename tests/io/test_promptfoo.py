"""promptfoo result files (agentstats.io.readers.promptfoo).

Checked on ``tests/data/promptfoo/sample-export.json``, derived from promptfoo's own fixture (README beside it), and
on variants of it built here the way promptfoo writes them. Expected counts are worked out by hand from promptfoo's
``ResultFailureReason`` (NONE 0, ASSERT 1: failure; ERROR 2: missing) and its row order under ``--repeat``.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from agentstats.io import LoadError, LoadWarning, detect_format, load_counts, load_trials

FIXTURE = Path(__file__).parents[1] / "data" / "promptfoo" / "sample-export.json"


def _doc() -> dict:
    return json.loads(FIXTURE.read_text())


def _write(tmp_path: Path, doc: dict, name: str = "results.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc, indent=2))
    return path


def test_real_export_detected_and_every_assert_failure_is_a_failure():
    # 2 providers x 2 riddles, all four results success false with failureReason 1 (ASSERT, the latency assertion),
    # though each also carries an `error` text: 4 failures, none missing.
    assert detect_format(FIXTURE) == "promptfoo"
    ts = load_trials(FIXTURE)
    assert ts.format == "promptfoo" and len(ts) == 4
    assert {t.agent for t in ts} == {"openai:gpt-5", "openai:gpt-5-mini"}
    assert all(t.outcome() == "failure" for t in ts)
    counts = load_counts(FIXTURE)
    assert counts["n"].tolist() == [1, 1, 1, 1] and counts["c"].sum() == 0 and counts["n_missing"].sum() == 0
    assert len(set(counts["task_id"])) == 2
    t = next(t for t in ts if t.agent == "openai:gpt-5" and t.meta["testIdx"] == 0)
    assert t.meta["promptIdx"] == 0 and t.meta["score"] == pytest.approx(0.5)
    assert t.usage.latency_s == pytest.approx(6.197) and t.usage.input_tokens == 37 and t.usage.output_tokens == 204


def _repeated(doc: dict) -> dict:
    """The fixture as `promptfoo eval --repeat 2` writes it: testIdx counts rows, each test's repeats in a row.

    promptfoo's evaluator loops tests, then repeats, then providers (src/evaluator.ts, rowIndex++ per repeat): test 0
    gets testIdx 0 and 1, test 1 gets 2 and 3.
    """
    out = copy.deepcopy(doc)
    rows = []
    for r in doc["results"]["results"]:
        for rep in range(2):
            x = copy.deepcopy(r)
            x["testIdx"] = r["testIdx"] * 2 + rep
            rows.append(x)
    out["results"]["results"] = rows
    return out


def test_repeats_are_trials_of_one_task(tmp_path):
    doc = _repeated(_doc())
    rows = doc["results"]["results"]
    # gpt-5, riddle 0: repeat 0 passes, repeat 1 fails with an ERROR (the provider failed): n 1, c 1, missing 1
    first = next(r for r in rows if r["provider"]["id"] == "openai:gpt-5" and r["testIdx"] == 0)
    first.update(success=True, failureReason=0, error=None)
    first["gradingResult"]["pass"] = True
    second = next(r for r in rows if r["provider"]["id"] == "openai:gpt-5" and r["testIdx"] == 1)
    second.update(success=False, failureReason=2, error="API error: 503 Service Unavailable")
    del second["gradingResult"]
    # gpt-5-mini, riddle 1: repeat 1 passes through gradingResult.pass only (no success field): n 2, c 1
    mini = next(r for r in rows if r["provider"]["id"] == "openai:gpt-5-mini" and r["testIdx"] == 3)
    del mini["success"]
    mini["gradingResult"]["pass"] = True
    mini["failureReason"] = 0
    path = _write(tmp_path, doc)
    ts = load_trials(path)
    assert len(ts) == 8
    assert ts.notes and "1 result(s) failed with an error of the run" in ts.notes[0].message
    counts = load_counts(path).set_index(["agent", "task_id"])
    riddle0 = next(t.task_id for t in ts if t.meta["testIdx"] == 0)
    riddle1 = next(t.task_id for t in ts if t.meta["testIdx"] == 3)
    assert counts.loc[("openai:gpt-5", riddle0)][["n", "c", "n_missing"]].tolist() == [1, 1, 1]
    assert counts.loc[("openai:gpt-5", riddle1)][["n", "c", "n_missing"]].tolist() == [2, 0, 0]
    assert counts.loc[("openai:gpt-5-mini", riddle0)][["n", "c", "n_missing"]].tolist() == [2, 0, 0]
    assert counts.loc[("openai:gpt-5-mini", riddle1)][["n", "c", "n_missing"]].tolist() == [2, 1, 0]
    trials = sorted((t.trial, t.meta["testIdx"]) for t in ts if t.agent == "openai:gpt-5" and t.task_id == riddle1)
    assert trials == [(0, 2), (1, 3)]
    # error_status="agent_error" counts promptfoo's ERROR as a failure instead: n 2, c 1
    counts = load_counts(path, error_status="agent_error").set_index(["agent", "task_id"])
    assert counts.loc[("openai:gpt-5", riddle0)][["n", "c", "n_missing"]].tolist() == [2, 1, 0]


def test_description_names_the_task_and_two_prompts_make_two_agents(tmp_path):
    doc = _doc()
    for r in doc["results"]["results"]:
        r["testCase"]["description"] = f"riddle {r['testIdx']}"
    extra = copy.deepcopy(doc["results"]["results"][1])  # gpt-5 with a second prompt
    extra.update(promptId="p2", promptIdx=2, prompt={"raw": "Riddle: ...", "label": "Riddle: {{riddle}}"})
    doc["results"]["results"].append(extra)
    ts = load_trials(_write(tmp_path, doc))
    assert {t.task_id for t in ts} == {"riddle 0", "riddle 1"}
    assert {t.agent for t in ts} == {"openai:gpt-5-mini", "openai:gpt-5 [Solve this riddle: {{riddle}}]",
                                     "openai:gpt-5 [Riddle: {{riddle}}]"}


def test_same_description_different_tests_are_told_apart(tmp_path):
    doc = _doc()
    for r in doc["results"]["results"]:
        r["testCase"]["description"] = "riddle"
    ts = load_trials(_write(tmp_path, doc))
    tasks = {t.task_id for t in ts}
    assert len(tasks) == 2 and all(t.startswith("riddle#") for t in tasks)


def test_agent_names_a_one_column_file_only(tmp_path):
    doc = _doc()
    with pytest.raises(LoadError, match="one provider and prompt"):
        load_trials(_write(tmp_path, doc), agent="mine")
    doc["results"]["results"] = [r for r in doc["results"]["results"] if r["provider"]["id"] == "openai:gpt-5"]
    assert {t.agent for t in load_trials(_write(tmp_path, doc), agent="mine")} == {"mine"}


def test_bad_results_are_located_and_skippable(tmp_path):
    doc = _doc()
    doc["results"]["results"][2]["failureReason"] = 7
    del doc["results"]["results"][3]["testIdx"]
    path = _write(tmp_path, doc)
    with pytest.raises(LoadError) as err:
        load_trials(path)
    where = {(p.line, p.field) for p in err.value.problems}
    assert where == {(2, "failureReason"), (3, "testIdx")}
    with pytest.warns(LoadWarning, match="skipped 2 records"):
        assert len(load_trials(path, on_error="skip")) == 2


def test_detection_leaves_other_json_objects_alone(tmp_path):
    other = _write(tmp_path, {"evalId": "x", "rows": [1]}, "other.json")
    assert detect_format(FIXTURE) == "promptfoo"
    with pytest.raises(ValueError, match="no known format matches"):
        detect_format(other)
    compact = tmp_path / "compact.json"
    compact.write_text(json.dumps(_doc()))
    assert detect_format(compact) == "promptfoo"

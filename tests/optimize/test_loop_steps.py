"""The loop's steps: the evaluate step scores through the metric catalogue, and the one improvement rule.

Expected values are computed by hand (comments give the arithmetic), never by the code under test. The same cases
are checked on the catalogue entries themselves in ``tests/metrics/test_metrics_builtin_scores.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentstats.gating import GateConfig
from agentstats.io.readers.scores import read_scores
from agentstats.metrics import CATALOGUE
from agentstats.optimize import LoopConfig, optimize
from agentstats.optimize.improvement import improvement, p_better
from agentstats.optimize.steps import catalogue_metrics
from agentstats.records.scores import ScoreSet

SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"], "additionalProperties": False}
WEATHER = {"name": "get_weather", "description": "Weather in a city.",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
BOOK = {"type": "function", "function": {"name": "book", "parameters": {
    "type": "object", "properties": {"day": {"type": "string"}}, "required": ["day"]}}}
NO = object()  # a field the example does not have


def w(city: Any) -> dict[str, Any]:
    return {"name": "get_weather", "arguments": {"city": city}}


#: (response, expected answer, expected calls, the example's own tools, calls made, scores by hand). The matcher is
#: ``exact`` (stripped text equal), the schema SCHEMA, the tool settings ``components`` with WEATHER and BOOK for
#: every example, refusals by the catalogue's default phrases (a blank answer is a refusal).
CASES: list[tuple[str, Any, Any, Any, Any, dict[str, float]]] = [
    # right JSON, right call
    ('{"a": 1}', '{"a": 1}', [w("Paris")], NO, [w("Paris")],
     {"correct": 1.0, "format_valid": 1.0, "tool_calls_correct": 1.0, "tool_selection": 1.0, "tool_parameters": 1.0,
      "tool_calls_valid": 1.0, "refusal": 0.0}),
    # a refusal; right tool, wrong argument
    ("I cannot help with that.", "Paris", [w("Paris")], NO, [w("Rome")],
     {"correct": 0.0, "format_valid": 0.0, "tool_calls_correct": 0.0, "tool_selection": 1.0, "tool_parameters": 0.0,
      "tool_calls_valid": 1.0, "refusal": 1.0}),
    # fenced JSON, no expected answer (no `correct`); arguments that are not JSON: malformed, neither right nor valid
    ('```json\n{"a": 3}\n```', NO, [w("Paris")], NO, [{"name": "get_weather", "arguments": '{"city": "Par'}],
     {"format_valid": 1.0, "tool_calls_correct": 0.0, "tool_selection": 1.0, "tool_parameters": 0.0,
      "tool_calls_valid": 0.0, "refusal": 0.0}),
    # a blank answer (a refusal, not JSON); no call expected and none made
    ("", "x", [], NO, [],
     {"correct": 0.0, "format_valid": 0.0, "tool_calls_correct": 1.0, "tool_selection": 1.0, "tool_calls_valid": 1.0,
      "refusal": 1.0}),
    # a string where the schema wants an integer; the example's own tools replace the config's
    ('{"a": "x"}', ' {"a": "x"} ', [{"name": "book", "arguments": {"day": "mon"}}], [BOOK],
     [{"name": "book", "arguments": {"day": "mon"}}],
     {"correct": 1.0, "format_valid": 0.0, "tool_calls_correct": 1.0, "tool_selection": 1.0, "tool_parameters": 1.0,
      "tool_calls_valid": 1.0, "refusal": 0.0}),
    # an extra property; a wrong argument type: neither right nor valid
    ('{"a": 1, "b": 2}', NO, [w("Oslo")], NO, [w(7)],
     {"format_valid": 0.0, "tool_calls_correct": 0.0, "tool_selection": 1.0, "tool_parameters": 0.0,
      "tool_calls_valid": 0.0, "refusal": 0.0}),
    # the example offers no tool ([]): no validity value
    ("GOOD", "GOOD", [w("Paris")], [], [w("Paris")],
     {"correct": 1.0, "format_valid": 0.0, "tool_calls_correct": 1.0, "tool_selection": 1.0, "tool_parameters": 1.0,
      "refusal": 0.0}),
    # one of two expected calls: selection 1 / max(1, 2), parameters (1 + 0) / 2
    ("[1, 2]", NO, [w("Paris"), w("Oslo")], NO, [w("Paris")],
     {"format_valid": 0.0, "tool_calls_correct": 0.0, "tool_selection": 0.5, "tool_parameters": 0.5,
      "tool_calls_valid": 1.0, "refusal": 0.0}),
    # no expected calls given: no correctness values, validity only (7 is no string)
    ('{"a": 2}', NO, NO, NO, [w(7)], {"format_valid": 1.0, "tool_calls_valid": 0.0, "refusal": 0.0}),
    # expected calls, no call made: nothing paired (selection 0 / 1, parameters 0 / 1); no call is a valid set
    ("Paris", "Paris", [w("Paris")], NO, None,
     {"correct": 1.0, "format_valid": 0.0, "tool_calls_correct": 0.0, "tool_selection": 0.0, "tool_parameters": 0.0,
      "tool_calls_valid": 1.0, "refusal": 0.0}),
]


def _world(tmp: Path, matcher: str = "exact") -> dict[str, Any]:
    ev, base = [], []
    for i, (_, expected, calls, tools, _, _) in enumerate(CASES):
        row: dict[str, Any] = {"id": f"e{i}", "input": f"Task {i}.", "risk_level": "low"}
        for key, value in (("expected", expected), ("expected_tool_calls", calls), ("tools", tools)):
            if value is not NO:
                row[key] = value
        ev.append(row)
        base.append({"id": f"e{i}", "risk_level": "low", "scores": {"format_valid": 1.0}})
    (tmp / "eval.jsonl").write_text("".join(json.dumps(x) + "\n" for x in ev))
    (tmp / "base.jsonl").write_text("".join(json.dumps(x) + "\n" for x in base))
    return {"eval_set": str(tmp / "eval.jsonl"), "baseline": str(tmp / "base.jsonl"),
            "gate": {"max_iterations": 1, "n_draws": 500},
            "evaluate": {"matcher": matcher, "response_schema": SCHEMA, "refusal": True,
                         "tool_calls": {"components": True, "tools": [WEATHER, BOOK]}}}


def _agent(example: dict[str, Any], prompt: str) -> dict[str, Any]:
    response, _, _, _, made, _ = CASES[int(example["id"][1:])]
    return {"response": response} if made is None else {"response": response, "tool_calls": made}


def test_the_loops_scores_are_the_catalogues_by_hand(tmp_path):
    result = optimize(config=_world(tmp_path), agent=_agent, optimizer=lambda p, r: p, run_dir=tmp_path / "run",
                      prompt="P")
    rows = [json.loads(x) for x in (tmp_path / "run" / "iter-001" / "scores.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == [f"e{i}" for i in range(len(CASES))]
    for row, case in zip(rows, CASES, strict=True):
        assert row["scores"] == pytest.approx(case[-1]), row["id"]
    # the records handed to an optimizer hold the same values, in the order of a score record
    first = result.best.records[0]["scores"]
    assert list(first) == ["correct", "format_valid", "tool_calls_correct", "tool_selection", "tool_parameters",
                           "tool_calls_valid", "refusal"]


def test_the_loop_names_the_catalogue_entries_it_scores_with(tmp_path):
    cfg = LoopConfig.model_validate({**_world(tmp_path, matcher="token_f1"),
                                     "gate": {"review": {"refusal_metric": "declined"}}})
    ms = catalogue_metrics(cfg)
    assert [m.name for m in ms] == ["correct", "format_valid", "tool_calls_correct", "tool_selection",
                                    "tool_parameters", "tool_calls_valid", "declined"]
    sources = ["token_f1", "format_valid", "tool_calls_correct", "tool_selection", "tool_parameters",
               "tool_calls_valid", "unsuccessful_requests"]
    for m, name in zip(ms, sources, strict=True):
        entry = CATALOGUE[name]
        assert m.methods == entry.methods and m.method == entry.method and m.group == entry.group
    assert ms[1].params["schema"] == SCHEMA and ms[2].params["empty_expected"] == "no_calls"
    assert catalogue_metrics(LoopConfig(eval_set=tmp_path / "e", baseline=tmp_path / "b")) == []


def test_an_answer_a_metric_cannot_read_names_the_iteration_example_and_metric(tmp_path):
    # the numeric matcher on a reference that holds no number ("Paris", example e1)
    cfg = _world(tmp_path, matcher="numeric")
    with pytest.raises(ValueError, match=r"trial iter-001/e1/0 .*metric correct: .*holds no number"):
        optimize(config=cfg, agent=_agent, optimizer=lambda p, r: p, run_dir=tmp_path / "run", prompt="P")


def _set(rows: dict[str, list[float]]) -> ScoreSet:
    """A score set from per-metric value lists (one value per example)."""
    n = len(next(iter(rows.values())))
    return read_scores([{"id": f"q{i}", "scores": {m: v[i] for m, v in rows.items()}} for i in range(n)])


def _cfg(**gate: Any) -> LoopConfig:
    return LoopConfig(eval_set=Path("e.jsonl"), baseline=Path("b.jsonl"), gate={"n_draws": 2000, **gate})


def test_the_improvement_rule():
    n = 40
    ones, zeros = [1.0] * n, [0.0] * n
    # the first iteration is the first best
    first = improvement(_set({"a": zeros}), None, _cfg())
    assert first.improved and first.vs_best is None and first.p_better is None
    # every example from 0 to 1: every posterior draw of the paired difference is positive
    up = improvement(_set({"a": ones}), _set({"a": zeros}), _cfg())
    assert up.improved and up.p_better == pytest.approx(1.0) and up.vs_best.decision != "FAIL"
    # the reverse: no draw positive
    down = improvement(_set({"a": zeros}), _set({"a": ones}), _cfg())
    assert not down.improved and down.p_better == pytest.approx(0.0)
    # a credible gain on the weighted score (weight on a only) with a regression on b: the gate against the best
    # FAILs, so it is no improvement
    cand, best = _set({"a": ones, "b": zeros}), _set({"a": zeros, "b": ones})
    mixed = improvement(cand, best, _cfg(weights={"a": 1.0, "b": 0.0}))
    assert mixed.p_better == pytest.approx(1.0) and mixed.vs_best.decision == "FAIL" and not mixed.improved
    # no example in common: P(better) is 1/2 by convention, below any improvement_probability in (0.5, 1]
    other = read_scores([{"id": f"x{i}", "scores": {"a": 1.0}} for i in range(n)])
    assert p_better(other, _set({"a": zeros}), _cfg()) == 0.5


def test_the_weighted_score_of_p_better_is_the_stores_rule():
    from agentstats.optimize.improvement import weighted_example_scores
    from agentstats.optimize.storing import weighted_example_score

    cfg = _cfg(weights={"a": 3.0, "b": 1.0})
    s = read_scores([{"id": "q0", "scores": {"a": 1.0, "b": 0.0, "refusal": 1.0}},
                               {"id": "q1", "scores": {"a": None, "b": 0.5}},
                               {"id": "q2", "scores": {"a": None, "b": None}}])
    # q0: (3 * 1 + 1 * 0) / 4; q1: b only, 0.5; q2: nothing scored, left out
    assert weighted_example_scores(s, cfg) == {"q0": pytest.approx(0.75), "q1": pytest.approx(0.5)}
    assert weighted_example_score({"a": 1.0, "b": 0.0}, GateConfig(weights={"a": 3.0, "b": 1.0})) == 0.75


def test_a_credible_gain_on_one_metric_counts_while_a_threshold_is_missed():
    # issue 31: groundedness 0.75 -> 0.99 while relevance stays below its threshold in both iterations; the gate
    # against the best FAILs on that threshold, which used to make the iteration "not improved"
    n = 100
    best = _set({"groundedness": [1.0] * 75 + [0.0] * 25, "relevance": [1.0] * 50 + [0.0] * 50})
    cand = _set({"groundedness": [1.0] * 99 + [0.0], "relevance": [1.0] * 50 + [0.0] * 50})
    step = improvement(cand, best, _cfg(thresholds={"relevance": 0.9}, weights={"groundedness": 0.0,
                                                                                 "relevance": 1.0}))
    assert step.p_better < 0.95  # the weighted score (relevance only) did not move
    assert step.improved and step.gains["groundedness"] == pytest.approx(1.0, abs=1e-6)
    assert step.missed_thresholds == ["relevance"] and not step.regressions
    assert step.reason == "improved: groundedness (P = 1.000); still below threshold: relevance"
    # a failed regression on another metric still blocks it
    worse = _set({"groundedness": [1.0] * 99 + [0.0], "relevance": [0.0] * n})
    step = improvement(worse, best, _cfg(thresholds={"relevance": 0.9}))
    assert not step.improved and step.regressions and step.reason.startswith("not improved: ")

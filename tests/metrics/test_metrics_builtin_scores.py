"""The catalogue entries that stand for capture's matchers, the loop's built-in scores and compare's trial numbers.

Each entry is checked against hand-computed values, on the loop's example data (``data/example_loop``) and on edge
cases; the matchers also against :func:`agentstats.scoring.answers.match_answer` and capture's ``tool_calls`` against
:func:`agentstats.scoring.tools.score_trial_tools`. The loop scores through these entries
(:func:`agentstats.optimize.steps.catalogue_metrics`); ``tests/optimize/test_loop_steps.py`` checks the loop's
scores of the same cases against the same hand-computed values.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentstats.metrics import (
    CATALOGUE,
    MATCHER_METRICS,
    compute,
    function_metric,
    get_metric,
    resolve_metrics,
)
from agentstats.metrics.compute import trial_view
from agentstats.optimize.config import ToolCallSettings
from agentstats.records.trial import Trial
from agentstats.scoring.answers import AnswerMatch, match_answer

LOOP = Path(__file__).resolve().parents[2] / "data" / "example_loop"


def _examples() -> list[dict[str, Any]]:
    return [json.loads(x) for x in (LOOP / "eval.jsonl").read_text().splitlines()]


def _responses() -> list[tuple[dict[str, Any], str]]:
    """(example, response) for every output of every iteration of the committed loop run."""
    by_id = {e["id"]: e for e in _examples()}
    out = []
    for path in sorted((LOOP / "run").glob("iter-*/outputs.jsonl")):
        for line in path.read_text().splitlines():
            o = json.loads(line)
            out.append((by_id[o["id"]], o["response"]))
    assert len(out) == 36  # 3 iterations x 12 examples
    return out


def _score(name: str, values: dict[str, Any], **changes: Any) -> Any:
    return get_metric(name, **changes).score(values)


# ---------------------------------------------------------------- correctness: capture's matchers, the loop's correct


def test_matcher_entries_by_hand():
    good = {"output": "GOOD answer to question 0", "expected": "GOOD"}
    assert _score("exact_match", good).value == 0.0
    assert _score("normalized_match", good).value == 0.0
    assert _score("contains_match", good).value == 1.0
    assert _score("auto_match", good).value == 1.0  # a short reference inside the answer (lenient rule)
    # 5 answer tokens, 1 expected, 1 in common: P = 1/5, R = 1, F1 = 2PR / (P + R) = 1/3
    assert _score("token_f1", good).value == pytest.approx(1 / 3)
    assert _score("numeric_match", {"output": "It is 8.0.", "expected": "8"}).value == 1.0
    assert _score("numeric_match", {"output": "8 or 9", "expected": 9}, params={"which": "first"}).value == 0.0
    s = _score("exact_match", {"output": " Paris ", "expected": ["Lyon", "Paris"]})
    assert s.value == 1.0
    assert list(s.evidence.items()) == [("matcher", "exact"), ("answer", "Paris"), ("expected", "Paris"),
                                        ("expected_index", 1)]  # live capture stores this, in this order
    for name in MATCHER_METRICS.values():
        assert get_metric(name).group == "correctness" and get_metric(name).lower_limit == 1.0
        s = _score(name, {"output": "x", "expected": None})
        assert s.value is None and s.evidence["not_applicable"] == "no expected answer"


@pytest.mark.parametrize("matcher", sorted(MATCHER_METRICS))
def test_matcher_entries_equal_match_answer_on_the_example_loop(matcher):
    entry = get_metric(MATCHER_METRICS[matcher], name="correct")
    for ex, response in _responses():
        if matcher == "numeric":  # "GOOD" holds no number: both refuse it alike
            with pytest.raises(ValueError, match="holds no number"):
                match_answer(response, ex["expected"], matcher)
            with pytest.raises(ValueError, match="holds no number"):
                entry.score({"output": response, "expected": ex["expected"]})
            continue
        want = float(match_answer(response, ex["expected"], matcher).score)
        assert entry.score({"output": response, "expected": ex["expected"]}).value == want
    if matcher == "numeric":
        return
    # through compute, one interaction per output: the loop's per-example score
    trials = [Trial(agent="it", task_id=ex["id"], trial=i,
                    interactions=[{"answer": r, "expected_answer": ex["expected"]}])
              for i, (ex, r) in enumerate(_responses())]
    frame = compute(trials, [entry])
    assert frame["metric"].eq("correct").all()
    assert frame["value"].tolist() == [float(match_answer(r, ex["expected"], matcher).score)
                                       for ex, r in _responses()]


def test_answer_correctness_through_the_judge_interface():
    from agentstats.scoring.judge import JudgeVerdict

    records = [{"output": "Paris", "expected": "Paris", "input": "capital of France"},
               {"output": "Lyon", "expected": "Berlin", "input": "capital of Germany"},
               {"output": None, "expected": "x"}, {"output": "y", "expected": None}]
    m = get_metric("answer_correctness")
    assert m.group == "correctness" and getattr(m.methods["judge"], "batch", False)
    assert [s.evidence["not_applicable"] for s in m.methods["judge"](records, {})] == ["no judge configured"] * 4
    scores = m.methods["judge"](records, {"judge": "deterministic"})
    assert [s.value for s in scores[:3]] == [1.0, 0.0, 0.0]  # no answer scores 0 (the judge's rule)
    assert scores[3].evidence["not_applicable"] == "no expected answer"
    assert scores[0].evidence["status"] == "ok" and scores[2].evidence["reasoning"] == "no answer given"
    assert JudgeVerdict.model_validate(scores[0].evidence["verdict"]).score == 1.0


def test_function_metrics_are_catalogue_metrics():
    m = function_metric(lambda a, e: len(a or "") >= e, name="long_enough")
    assert m.group == "correctness" and m.lower_limit == 1.0 and m.name == "long_enough"
    assert m.score({"output": "twelve chars", "expected": 10}).value == 1.0
    assert m.score({"output": "short", "expected": 10}).value == 0.0
    assert m.score({"output": "short"}).evidence["not_applicable"] == "no expected answer"
    # None: no value and no reason (the function could not score it); an AnswerMatch keeps its details
    assert function_metric(lambda a, e: None).score({"output": "a", "expected": "b"}).evidence == {}
    s = function_metric(lambda a, e: AnswerMatch(0.5, "mine", {"why": "half"})).score({"output": "a", "expected": 1})
    assert s.value == 0.5 and dict(s.evidence) == {"matcher": "mine", "why": "half"}
    anything = function_metric(lambda a, e: 0.25 if e is None else 1.0, name="any", needs_expected=False)
    assert anything.score({"output": "a"}).value == 0.25
    gold = function_metric(lambda a, e: a == e, name="gold", expected_field="gold")
    t = Trial(agent="a", task_id="t", trial=0, interactions=[{"answer": "x", "gold": "x", "expected_answer": "y"}])
    assert compute([t], gold)["value"].tolist() == [1.0]

    def exact(a, e):
        return a == e

    # a function in a metric list: named after it, kept once when given twice
    assert [x.name for x in resolve_metrics([exact, "token_f1", exact])] == ["exact", "token_f1"]
    assert compute([t], [exact])["value"].tolist() == [0.0]
    with pytest.raises(TypeError, match="a metric is a name, a Metric or a function"):
        resolve_metrics([3])


# ---------------------------------------------------------------- format, refusal


SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"], "additionalProperties": False}
#: (response, format_valid by hand)
FORMATS = [('{"a": 1}', 1.0), ('  {"a": 2}\n', 1.0), ('```json\n{"a": 3}\n```', 1.0), ('```\n{"a": 4}\n```', 1.0),
           ('{"a": "x"}', 0.0), ('{"a": 1, "b": 2}', 0.0), ("[1, 2]", 0.0), ("null", 0.0), ("", 0.0),
           ('{"a": 1', 0.0), ("GOOD answer", 0.0), ('{"a": 1.0}', 1.0)]


def test_format_valid_by_hand():
    for response, want in FORMATS + [(r, 0.0) for _, r in _responses()]:
        got = _score("format_valid", {"output": response}, params={"schema": SCHEMA})
        assert got.value == want, response
    assert _score("format_valid", {"output": "{}"}).evidence["not_applicable"] == "no schema"
    assert _score("format_valid", {"output": None}, params={"schema": SCHEMA}).value is None
    with pytest.raises(ValueError, match="not a valid JSON Schema"):
        _score("format_valid", {"output": "{}"}, params={"schema": {"type": "nope"}})


def test_refusal_is_unsuccessful_requests_by_hand():
    cases = [("I cannot help with that.", None, 1.0), ("Paris.", None, 0.0), ("", None, 1.0),
             ("Nope, out of scope", ["out of scope"], 1.0), ("I cannot help", ["out of scope"], 0.0),
             ("I\u2019m sorry, no.", None, 1.0)]
    cases += [(r, None, 0.0) for _, r in _responses()]
    for response, phrases, want in cases:
        entry = get_metric("unsuccessful_requests", params={"phrases": phrases} if phrases else {}, name="refusal")
        assert entry.score({"output": response}).value == want, response


# ---------------------------------------------------------------- tool use

WEATHER = {"name": "get_weather", "description": "Weather in a city.",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
BOOK = {"type": "function", "function": {"name": "book", "parameters": {
    "type": "object", "properties": {"day": {"type": "string"}}, "required": ["day"]}}}


def w(city: Any) -> dict[str, Any]:
    return {"name": "get_weather", "arguments": {"city": city}}


#: (expected calls, the example's own tools or None, the calls made, the scores by hand): the loop's tool cases
#: (tests/optimize/test_loop_tools.py), plus the order.
TOOL_CASES: list[tuple[Any, Any, list[Any], dict[str, float]]] = [
    ([w("Paris")], None, [w("Paris")],
     {"tool_calls_correct": 1.0, "tool_selection": 1.0, "tool_parameters": 1.0, "tool_calls_valid": 1.0}),
    ([w("Paris")], None, [w("Rome")],
     {"tool_calls_correct": 0.0, "tool_selection": 1.0, "tool_parameters": 0.0, "tool_calls_valid": 1.0}),
    ([w("Paris")], None, [{"name": "get_weather", "arguments": '{"city": "Par'}],  # arguments that are not JSON
     {"tool_calls_correct": 0.0, "tool_selection": 1.0, "tool_parameters": 0.0, "tool_calls_valid": 0.0}),
    ([], None, [], {"tool_calls_correct": 1.0, "tool_selection": 1.0, "tool_calls_valid": 1.0}),
    ([{"name": "book", "arguments": {"day": "mon"}}], [BOOK], [{"name": "book", "arguments": {"day": "mon"}}],
     {"tool_calls_correct": 1.0, "tool_selection": 1.0, "tool_parameters": 1.0, "tool_calls_valid": 1.0}),
    ([w("Oslo")], None, [w(7)],
     {"tool_calls_correct": 0.0, "tool_selection": 1.0, "tool_parameters": 0.0, "tool_calls_valid": 0.0}),
    ([w("Paris")], [], [w("Paris")],  # the example offers no tool: no validity score
     {"tool_calls_correct": 1.0, "tool_selection": 1.0, "tool_parameters": 1.0}),
    ([w("Paris"), w("Oslo")], None, [w("Paris")],  # one of two calls: selection 1/2, parameters 1/2
     {"tool_calls_correct": 0.0, "tool_selection": 0.5, "tool_parameters": 0.5, "tool_calls_valid": 1.0}),
]


def _entry_scores(expected: Any, own_tools: Any, calls: list[Any], st: ToolCallSettings) -> dict[str, float]:
    """What the catalogue entries give for the loop's settings ``st`` (None where not applicable)."""
    values: dict[str, Any] = {"tool_calls": calls, "expected_tool_calls": expected}
    if own_tools is not None:
        values["tools"] = own_tools
    params = {"empty_expected": "no_calls", "weights": st.weights, "tool_threshold": st.tool_threshold,
              "sequence_matters": st.sequence_matters, "tools": st.tools}
    out = {}
    for name in st.metrics():
        s = get_metric(name, params=params).score(values)
        if s.value is not None:
            out[name] = s.value
    return out


@pytest.mark.parametrize("case", range(len(TOOL_CASES)))
def test_tool_entries_by_hand(case):
    expected, own_tools, made, want = TOOL_CASES[case]
    st = ToolCallSettings(components=True, tools=[WEATHER, BOOK])
    assert _entry_scores(expected, own_tools, made, st) == pytest.approx(want)


def test_tool_sequence_and_threshold_by_hand():
    # expected a then b, made b then a: paired in reverse, longest in-order run 1 of 2
    expected = [w("A"), {"name": "book", "arguments": {"day": "mon"}}]
    made = [{"name": "book", "arguments": {"day": "mon"}}, w("A")]
    # both calls paired (selection 1), both arguments right (parameters 1), order 1/2: overall (1 + 1 + 0.5) / 3 = 5/6
    in_order = {"tool_selection": 1.0, "tool_parameters": 1.0, "tool_sequence": 0.5}
    for st, want in ((ToolCallSettings(components=True, sequence_matters=True),
                      {"tool_calls_correct": 0.0, **in_order}),  # 5/6 < 1
                     (ToolCallSettings(components=True, sequence_matters=True, tool_threshold=0.8),
                      {"tool_calls_correct": 1.0, **in_order}),  # 5/6 >= 0.8
                     (ToolCallSettings(components=True, weights={"sequence": 0.0}),  # order not scored: overall 1
                      {"tool_calls_correct": 1.0, "tool_selection": 1.0, "tool_parameters": 1.0})):
        assert _entry_scores(expected, None, made, st) == pytest.approx(want)
    seq = _score("tool_sequence", {"tool_calls": made, "expected_tool_calls": expected})
    assert seq.value == 0.5
    # overall = (selection 1 + parameters 1 + sequence 0.5) / 3 = 5/6: below 1, above 0.8
    strict = {"tool_calls": made, "expected_tool_calls": expected, "tool_sequence_matters": True}
    assert _score("tool_calls_correct", strict).value == 0.0
    assert _score("tool_calls_correct", strict, params={"tool_threshold": 0.8}).value == 1.0
    assert _score("tool_calls_correct", strict).evidence["overall"] == pytest.approx(5 / 6)


def test_tool_entries_edge_cases():
    assert _score("tool_calls_correct", {"tool_calls": []}).evidence["not_applicable"] == "no expected tool calls"
    # an empty expected list is no ground truth unless the metric is told it means "no call"
    assert _score("tool_calls_correct", {"expected_tool_calls": []}).value is None
    assert _score("tool_calls_correct", {"expected_tool_calls": [], "tool_calls": [w("x")]},
                  params={"empty_expected": "no_calls"}).value == 0.0
    assert _score("tool_calls_valid", {"tool_calls": [w("x")]}).evidence["not_applicable"] == "no tool specs"
    bad = _score("tool_calls_valid", {"tool_calls": [w(7)]}, params={"tools": [WEATHER]})
    assert bad.value == 0.0 and bad.evidence["violations"][0]["tool"] == "get_weather"
    with pytest.raises(ValueError, match="expected_tool_calls must be a list"):
        _score("tool_calls_correct", {"expected_tool_calls": {"name": "a"}})


def test_trial_tool_calls_equals_capture_reading_of_score_trial_tools():
    from agentstats.scoring.tools import score_trial_tools

    search = {"name": "search", "arguments": {"query": "capital of France"}}
    t = Trial(agent="a", task_id="fr", trial=0, interactions=[
        {"answer": "Paris", "tool_calls": [search], "expected_tool_calls": [search]},
        {"answer": "Berlin", "tool_calls": [{"name": "search", "arguments": {"query": "capital of Germany"}}],
         "expected_tool_calls": [{"name": "search", "arguments": {"query": "Germany"}}]},
        {"answer": "no calls"}])
    frame = compute([t], "tool_calls")
    # interaction 0: overall 1; interaction 1: selection 1, parameters 0, overall (1 + 0) / 2; the mean of the two
    assert frame["level"].tolist() == ["trial"] and frame["value"].tolist() == [0.75]
    assert frame["passed"].tolist() == [False] and frame["evidence"][0] == {"passed_all": False}
    scores = score_trial_tools(t)
    parts = [s.overall for s in [*scores.interactions, scores.trial] if s is not None]
    assert frame["value"][0] == sum(parts) / len(parts) and scores.passed is False
    whole = Trial(agent="a", task_id="fr", trial=1, expected_tool_calls=[search],
                  interactions=[{"answer": "Paris", "tool_calls": [search]}])
    f = compute([whole, Trial(agent="a", task_id="x", trial=0)], "tool_calls")
    assert f["value"].tolist()[0] == 1.0 and f["passed"].tolist()[0] is True
    assert f["evidence"][1]["not_applicable"] == "no expected tool calls"
    assert get_metric("tool_calls").levels == ("trial",)


def test_trial_view_holds_the_whole_trial():
    call = {"name": "a", "arguments": {}}
    its = [{"answer": "1", "tool_calls": [call]}, {"answer": "2", "tool_calls": [call, call], "tools": ["own"]}]
    t = Trial(agent="a", task_id="t", trial=0, reward=0.5, meta={"metrics": {"x": 1}}, interactions=its)
    v = trial_view(t)
    assert len(v["tool_calls"]) == 3 and len(v["interactions"]) == 2 and v["reward"] == 0.5
    assert v["meta"] == {"metrics": {"x": 1}} and v["expected_tool_calls"] == []
    assert v["tools"] == ["own"]  # the trial has none: the final interaction's extra field, as before
    with_tools = Trial(agent="a", task_id="t", trial=0, tools=[{"name": "a"}], interactions=its)
    assert [s.name for s in trial_view(with_tools)["tools"]] == ["a"]  # the trial's own win


# ---------------------------------------------------------------- outcome numbers


def test_reward_and_recorded_metric():
    t = Trial(agent="a", task_id="t", trial=0, reward=0.25,
              meta={"metrics": {"reward.DB": 1, "flag": True, "text": "1", "inf": float("inf")}})
    f = compute([t, Trial(agent="a", task_id="u", trial=0)],
                ["reward", get_metric("recorded_metric", params={"key": "reward.DB"}, name="reward.DB"),
                 get_metric("recorded_metric", params={"key": "flag"}, name="flag")])
    assert f["value"].tolist()[:3:2] == [0.25, 1.0] and f["passed"].isna().all()
    assert f["evidence"][1]["not_applicable"] == "no reward recorded"
    assert f["evidence"][4]["not_applicable"] == "recorded metric 'flag' is not a finite number"
    rec = get_metric("recorded_metric")
    assert rec.score({"meta": t.meta}).evidence["not_applicable"] == "no key given (params['key'])"
    for key in ("inf", "text", "missing"):
        assert get_metric("recorded_metric", params={"key": key}).score({"meta": t.meta}).value is None
    assert {CATALOGUE["reward"].group, rec.group} == {"outcome"}

"""Tool-call correctness: hand-worked values, permutation invariance, edge-case conventions."""

from __future__ import annotations

import itertools
import random

import pytest

from agentstats.records.trial import Interaction, ToolCall, ToolSpec, Trial
from agentstats.scoring.tools import (
    LENIENT_RULES,
    TAU_BENCH_AIRLINE_READ_ONLY,
    AnyOf,
    ArgMatchOptions,
    StringNormalization,
    bfcl_options,
    from_possible_answer,
    match_value,
    read_only_tools,
    result_utilization,
    score_tool_calls,
    score_trial_tools,
)


def tc(name, **args):
    return ToolCall(name=name, arguments=args)


def test_perfect_match_any_order():
    exp = [tc("search", q="paris"), tc("book", hotel="H1", nights=2)]
    act = [tc("book", hotel="H1", nights=2), tc("search", q="paris")]
    s = score_tool_calls(act, exp)
    assert (s.selection, s.parameters, s.overall, s.passed) == (1.0, 1.0, 1.0, True)
    assert (s.precision, s.recall, s.f1) == (1.0, 1.0, 1.0)
    assert sorted(s.matched_pairs) == [(0, 1), (1, 0)]
    assert s.lenient_rules_fired == []


def test_duplicates_hand_worked():
    # f(x=1) twice vs expected f(x=1), f(x=2): one correct pair, one pair with its only argument wrong
    s = score_tool_calls([tc("f", x=1), tc("f", x=1)], [tc("f", x=1), tc("f", x=2)])
    assert s.selection == 1.0
    assert s.parameters == pytest.approx(0.5)  # (1 + 0) / 2
    assert (s.precision, s.recall, s.f1) == (0.5, 0.5, 0.5)
    assert s.overall == pytest.approx(0.75)  # (1*1 + 1*0.5) / 2, sequence not applicable
    assert not s.passed
    wrong = next(p for p in s.pairs if not p.correct)
    assert wrong.expected_index == 1 and wrong.diffs[0].path == "$.x" and wrong.diffs[0].reason == "value"


def test_optimal_not_greedy_assignment():
    # greedy in list order would pair f(a=1,b=3) with the first expected and lose a perfect pairing
    exp = [tc("f", a=1, b=2), tc("f", a=1, b=3)]
    act = [tc("f", a=1, b=3), tc("f", a=1, b=2)]
    s = score_tool_calls(act, exp)
    assert s.passed and s.n_correct == 2


def _random_calls(rng, n):
    names = ["a", "b", "c"]
    return [tc(rng.choice(names), x=rng.randint(0, 2), y=rng.choice(["u", "v"])) for _ in range(n)]


@pytest.mark.parametrize("seed", range(20))
def test_permutation_invariance(seed):
    rng = random.Random(seed)
    act = _random_calls(rng, rng.randint(0, 6))
    exp = _random_calls(rng, rng.randint(1, 6))
    base = score_tool_calls(act, exp)
    for _ in range(5):
        a2, e2 = act[:], exp[:]
        rng.shuffle(a2)
        rng.shuffle(e2)
        s = score_tool_calls(a2, e2)
        assert (s.selection, s.n_correct, s.precision, s.recall) == (
            base.selection, base.n_correct, base.precision, base.recall)
        assert s.parameters == pytest.approx(base.parameters)
        assert s.overall == pytest.approx(base.overall)


def _brute_force_best(act, exp):
    """Independent oracle: max over all injective pairings of (#same-name pairs, sum of arg scores)."""
    def arg_score(a, e):
        keys = set(a.arguments) | set(e.arguments)
        return sum(a.arguments.get(k) == e.arguments.get(k) and k in a.arguments and k in e.arguments
                   for k in keys) / len(keys)
    best = (-1, -1.0)
    small, large = (act, exp) if len(act) <= len(exp) else (exp, act)
    for perm in itertools.permutations(range(len(large)), len(small)):
        m, tot = 0, 0.0
        for i, j in enumerate(perm):
            a, e = (small[i], large[j]) if small is act else (large[j], small[i])
            if a.name == e.name:
                m += 1
                tot += arg_score(a, e)
        best = max(best, (m, round(tot, 9)))
    return best


@pytest.mark.parametrize("seed", range(15))
def test_assignment_matches_brute_force(seed):
    # sizes up to 5 x 5 exercise scipy's linear_sum_assignment (the exact-enumeration path is <= 9 cells)
    rng = random.Random(100 + seed)
    act = _random_calls(rng, rng.randint(3, 5))
    exp = _random_calls(rng, rng.randint(3, 5))
    s = score_tool_calls(act, exp)
    m, tot = _brute_force_best(act, exp)
    assert len(s.pairs) == m
    assert sum(p.param_score for p in s.pairs) == pytest.approx(tot)


def test_edge_nothing_expected_nothing_called():
    s = score_tool_calls([], [])
    assert s.not_applicable and s.passed and s.overall == 1.0
    assert s.parameters is None and s.sequence is None


def test_edge_expected_but_none_called():
    s = score_tool_calls([], [tc("f", x=1)], sequence_matters=True)
    assert not s.not_applicable
    assert (s.selection, s.parameters, s.sequence, s.overall) == (0.0, 0.0, 0.0, 0.0)
    assert (s.precision, s.recall, s.f1) == (0.0, 0.0, 0.0)
    assert not s.passed and s.unmatched_expected == [0]


def test_edge_called_but_nothing_expected():
    s = score_tool_calls([tc("f", x=1)], [])
    assert (s.selection, s.precision, s.recall, s.f1, s.overall) == (0.0, 0.0, 1.0, 0.0, 0.0)
    assert s.parameters is None and not s.passed


def test_sequence_lcs_and_weights():
    exp = [tc("a"), tc("b"), tc("c")]
    act = [tc("c"), tc("a"), tc("b")]
    s = score_tool_calls(act, exp, sequence_matters=True)
    assert s.sequence == pytest.approx(2 / 3)  # LCS of (c,a,b) and (a,b,c) has length 2
    assert s.overall == pytest.approx((1 + 1 + 2 / 3) / 3)
    s2 = score_tool_calls(act, exp, sequence_matters=True, weights={"sequence": 2.0})
    assert s2.overall == pytest.approx((1 + 1 + 2 * 2 / 3) / 4)
    # weights renormalized over applicable components: (2*1 + 1*0.5)/3 for the duplicates example
    s3 = score_tool_calls([tc("f", x=1), tc("f", x=1)], [tc("f", x=1), tc("f", x=2)],
                          weights={"selection": 2, "parameters": 1})
    assert s3.overall == pytest.approx(2.5 / 3)
    with pytest.raises(ValueError):
        score_tool_calls([], [], weights={"selection": -1})
    with pytest.raises(ValueError):
        score_tool_calls([], [], weights={"speed": 1})


def test_threshold():
    s = score_tool_calls([tc("f", x=1), tc("f", x=1)], [tc("f", x=1), tc("f", x=2)], tool_threshold=0.7)
    assert s.passed  # overall 0.75


def test_value_rules():
    assert not match_value(True, 1) and not match_value(1, True) and not match_value(0, False)
    rules: set[str] = set()
    assert match_value(5, 5.0, rules=rules) and rules == set()
    o = ArgMatchOptions(abs_tol=0.01)
    assert match_value(3.141, 3.14, o, rules) and rules == {"numeric_tolerance"}
    assert not match_value(3.2, 3.14, o)
    assert match_value(100.0, 101.0, ArgMatchOptions(rel_tol=0.01))
    assert not match_value("Paris ", "paris")
    rules = set()
    assert match_value("  Paris ", "paris", ArgMatchOptions(string_normalization=StringNormalization()), rules)
    assert rules == {"string_normalization"}
    pn = ArgMatchOptions(string_normalization=StringNormalization(remove_punctuation=True))
    assert match_value("New York, NY.", "new york ny", pn)
    rules = set()
    assert match_value("b", AnyOf(["a", "b"]), rules=rules) and rules == {"alternative_accepted"}
    assert not match_value("c", AnyOf(["a", "b"]))
    # nested structures
    assert match_value({"k": [1, {"z": "x"}]}, {"k": [1, {"z": "x"}]})
    assert not match_value({"k": [1, 2]}, {"k": [2, 1]})
    assert not match_value({"k": 1, "extra": 2}, {"k": 1})
    rules = set()
    assert match_value('{"k": 1}', {"k": 1}, rules=rules) and rules == {"json_string_parsed"}
    assert not match_value('{"k": 1}', {"k": 1}, ArgMatchOptions(parse_json_strings=False))
    # JSON marker form of AnyOf inside expected calls
    s = score_tool_calls([tc("f", x=2)], [tc("f", x={"$any_of": [1, 2]})])
    assert s.passed and s.lenient_rules_fired == ["alternative_accepted"]


def test_optional_and_extra_args():
    exp = [ToolCall(name="f", arguments={"a": 1, "unit": AnyOf(["cm"], optional=True)})]
    s = score_tool_calls([tc("f", a=1)], exp)
    assert s.passed and s.lenient_rules_fired == ["optional_param_missing"]
    s = score_tool_calls([tc("f", a=1, unit="in")], exp)
    assert s.parameters == pytest.approx(0.5)
    s = score_tool_calls([tc("f", a=1, b=2)], [tc("f", a=1)])
    assert s.parameters == pytest.approx(0.5) and s.pairs[0].diffs[0].reason == "extra"
    s = score_tool_calls([tc("f", a=1, b=2)], [tc("f", a=1)], options=ArgMatchOptions(extra_args="ignore"))
    assert s.passed


def test_malformed_call():
    bad = ToolCall(name="f", arguments="{not json")
    s = score_tool_calls([bad], [tc("f", a=1)])
    assert s.malformed_actual == [0] and s.parameters == 0.0 and s.selection == 1.0
    assert s.pairs[0].diffs[0].reason == "malformed"


def test_wrong_name_not_paired():
    s = score_tool_calls([tc("g", a=1)], [tc("f", a=1)])
    assert s.pairs == [] and s.selection == 0.0 and s.unmatched_actual == [0]


def test_utilization_from_data():
    weather = ToolCall(name="weather", arguments={"city": "Oslo"}, result={"temp_c": 21.5, "sky": "cloudy"})
    assert result_utilization([weather], "It is 21.5 degrees in Oslo.") == 1.0
    assert result_utilization([weather], "Skies are Cloudy today") == 1.0
    assert result_utilization([weather], "I do not know.") == 0.0
    assert result_utilization([weather], None) is None  # nothing downstream
    lookup = ToolCall(name="lookup", arguments={"q": "x"}, result={"id": "usr_42"})
    use = ToolCall(name="get", arguments={"user": "usr_42"})
    assert result_utilization([lookup, use], None) == 1.0
    assert result_utilization([ToolCall(name="pi", result=3.14159)], "pi is about 3.14") == 1.0
    assert result_utilization([ToolCall(name="n", result=1234567)], "There are 1,234,567 rows") == 1.0
    s = score_tool_calls([tc("f")], [tc("f")], utilization_hint=True)
    assert s.utilization == 1.0 and s.utilization_source == "user"
    s = score_tool_calls([weather], [ToolCall(name="weather", arguments={"city": "Oslo"})],
                         final_answer="nothing", weights={"utilization": 1.0})
    assert s.utilization == 0.0 and s.utilization_source == "data"
    assert s.overall == pytest.approx(2 / 3) and not s.passed


def test_score_trial_tools():
    trial = Trial(
        agent="a", task_id="t", trial=0,
        interactions=[
            Interaction(query="q1", tool_calls=[tc("f", x=1)], expected_tool_calls=[tc("f", x=1)]),
            Interaction(query="q2", tool_calls=[tc("g", y=2)]),
        ],
        expected_tool_calls=[tc("g", y=2), tc("f", x=1)],
    )
    r = score_trial_tools(trial)
    assert r.interactions[0].passed and r.interactions[1] is None
    assert r.trial.passed and r.trial.n_actual == 2 and r.passed
    r2 = score_trial_tools(trial, empty_expected="no_calls")
    assert r2.interactions[1].selection == 0.0 and r2.passed is False


def test_from_possible_answer_and_bfcl_rules():
    pa = {"a": [1, ""], "b": ["x"], "req": [3, ""]}
    exp = from_possible_answer(pa, required=["req"])
    assert exp["a"] == AnyOf([1, ""], optional=True)
    assert exp["b"] == AnyOf(["x"]) and exp["req"] == AnyOf([3, ""], optional=False)
    o = bfcl_options()
    spec = [{"name": "f", "parameters": {"type": "dict", "properties": {
        "n": {"type": "integer"}, "r": {"type": "float"}, "city": {"type": "string"},
        "xs": {"type": "array", "items": {"type": "float"}}}}}]
    expect = [ToolCall(name="f", arguments={k: v.to_json() for k, v in from_possible_answer(
        {"n": [5], "r": [2.0], "city": ["New York, NY"], "xs": [[1.0, 2.0]]}).items()})]
    ok = score_tool_calls([tc("f", n=5, r=2, city="new york ny", xs=[1.0, 2.0])], expect, options=o, tools=spec)
    assert ok.passed  # int accepted for float; BFCL string standardization
    assert ok.lenient_rules_fired == ["string_normalization"]
    bad = score_tool_calls([tc("f", n=5.0, r=2.0, city="New York, NY", xs=[1.0, 2.0])], expect, options=o,
                           tools=spec)
    assert not bad.passed and bad.pairs[0].diffs[0].reason == "type"  # 5.0 for an integer
    nested = score_tool_calls([tc("f", n=5, r=2.0, city="NYC", xs=[1, 2])], expect, options=o, tools=spec)
    assert {d.path: d.reason for d in nested.pairs[0].diffs} == {"$.city": "value", "$.xs": "type"}


# -- JSON held in strings ----------------------------------------------------------------------------------
def test_json_strings_on_both_sides_are_compared_as_data():
    # the same object, keys in another order and other spacing: equal as data, not as text
    act = [tc("f", filter='{"a":"s","b":"G"}')]
    exp = [tc("f", filter='{"b": "G", "a": "s"}')]
    s = score_tool_calls(act, exp)
    assert s.passed and s.parameters == 1.0 and s.lenient_rules_fired == ["json_string_parsed"]
    rules: set[str] = set()
    assert match_value("[1, {\"x\": 2}]", "[1,{\"x\":2}]", rules=rules) and rules == {"json_string_parsed"}
    assert not match_value('{"a": 1}', '{"a": 2}')  # parsed, and different
    assert not match_value('{"a": 1}', '[{"a": 1}]')  # object vs array
    assert not match_value("1", "1.0")  # scalars stay text: two different strings
    assert not match_value('{"a": 1', '{"a": 1 }')  # one side is not JSON: text comparison
    off = ArgMatchOptions(parse_json_strings=False)
    assert not score_tool_calls(act, exp, options=off).passed
    assert set(s.lenient_rules_fired) <= set(LENIENT_RULES)


# -- calls that do not change state -------------------------------------------------------------------------
def test_read_only_calls_are_left_out_on_both_sides():
    exp = [tc("get_reservation_details", reservation_id="R1"), tc("cancel_reservation", reservation_id="R1")]
    act = [tc("get_user_details", user_id="u"), tc("think", thought="check policy"),
           tc("get_reservation_details", reservation_id="R1"), tc("cancel_reservation", reservation_id="R1"),
           tc("calculate", expression="1+1")]
    every = score_tool_calls(act, exp)
    assert every.selection == pytest.approx(2 / 5) and not every.passed  # three extra lookups
    writes = score_tool_calls(act, exp, read_only=TAU_BENCH_AIRLINE_READ_ONLY)
    assert writes.passed and (writes.selection, writes.precision, writes.recall) == (1.0, 1.0, 1.0)
    assert (writes.n_actual, writes.n_expected) == (1, 1)
    assert (writes.n_read_only_actual, writes.n_read_only_expected) == (4, 1)
    assert writes.matched_pairs == [(3, 1)]  # indices into the lists given, not the filtered ones
    # a wrong write still fails; a missing write too
    ro = TAU_BENCH_AIRLINE_READ_ONLY
    wrong = score_tool_calls([tc("cancel_reservation", reservation_id="R2")], exp, read_only=ro)
    assert not wrong.passed and wrong.pairs[0].diffs[0].path == "$.reservation_id"
    missing = score_tool_calls(act[:3], exp, read_only=TAU_BENCH_AIRLINE_READ_ONLY)
    assert not missing.passed and missing.unmatched_expected == [1]
    # only lookups on both sides: nothing state-changing expected or made
    assert score_tool_calls(act[:3], exp[:1], read_only=TAU_BENCH_AIRLINE_READ_ONLY).not_applicable


def test_read_only_tools_from_specs_and_tau_bench():
    specs = [ToolSpec(name="lookup", read_only=True),
             ToolSpec(name="peek", annotations={"readOnlyHint": True}),  # MCP tool annotation
             ToolSpec(name="write", annotations={"readOnlyHint": False})]
    t = Trial(agent="a", task_id="t", trial=0, tools=specs)
    assert read_only_tools([t]) == {"lookup", "peek"}
    tau = Trial(agent="a", task_id="1", trial=0, meta={"format": "tau_bench"},
                interactions=[Interaction(tool_calls=[tc("think", thought="x"), tc("book_reservation")])])
    assert read_only_tools([tau]) == TAU_BENCH_AIRLINE_READ_ONLY
    other = tau.model_copy(update={"interactions": [Interaction(tool_calls=[tc("get_order_details")])]})
    assert read_only_tools([other]) == frozenset()  # not the airline domain's tools (retail): no guess
    assert read_only_tools([tau], domain_lists=False) == frozenset()


# -- ground truth that violates its own schema --------------------------------------------------------------
BOOK = ToolSpec(name="book", parameters={"type": "object", "properties": {
    "nights": {"type": "integer"}, "city": {"type": "string"}}, "required": ["city"]})


def test_invalid_expected_call_is_a_listed_dataset_error():
    bad = ToolCall(name="book", arguments={"city": "Oslo", "nights": "two"})
    trial = Trial(agent="a", task_id="t", trial=3, tools=[BOOK], interactions=[
        Interaction(tool_calls=[tc("book", city="Oslo", nights=2)], expected_tool_calls=[tc("book", city="Oslo")]),
        Interaction(tool_calls=[tc("book", city="Oslo", nights="two")], expected_tool_calls=[bad]),
    ], expected_tool_calls=[tc("book", nights=1), tc("fly", to="Rome")])
    r = score_trial_tools(trial)
    found = [(e.level, e.interaction, e.call_index, e.tool, e.kind, e.path) for e in r.ground_truth_errors]
    assert found == [
        ("interaction", 1, 0, "book", "wrong_type", "$.nights"),
        ("trial", None, 0, "book", "missing_required", "$.city"),
        ("trial", None, 1, "fly", "unknown_tool", "$"),
    ]
    assert "task 't', trial 3, interaction 1, expected call #0 (book), $.nights" in str(r.ground_truth_errors[0])
    # excluded by default: no score where the ground truth is broken, the valid unit is still scored
    assert r.interactions[1] is None and r.trial is None
    assert r.interactions[0] is not None and not r.interactions[0].passed  # nights=2 is an extra argument
    # scored anyway on request, still listed
    kept = score_trial_tools(trial, invalid_ground_truth="score")
    assert kept.interactions[1].passed and kept.trial is not None and len(kept.ground_truth_errors) == 3
    with pytest.raises(ValueError, match="invalid_ground_truth"):
        score_trial_tools(trial, invalid_ground_truth="drop")


def test_ground_truth_with_a_valid_alternative_is_not_flagged():
    # the first acceptable value is of the wrong type but another one (or leaving it out) is valid
    exp = ToolCall(name="book", arguments={"city": "Oslo", "nights": {"$any_of": ["2", 2]}})
    optional = ToolCall(name="book", arguments={"city": "Oslo", "nights": {"$any_of": ["two"], "$optional": True}})
    never = ToolCall(name="book", arguments={"city": "Oslo", "nights": {"$any_of": ["2", "two"]}})
    trial = Trial(agent="a", task_id="t", trial=0, tools=[BOOK], interactions=[
        Interaction(expected_tool_calls=[exp]), Interaction(expected_tool_calls=[optional]),
        Interaction(expected_tool_calls=[never])])
    r = score_trial_tools(trial)
    assert [(e.interaction, e.path) for e in r.ground_truth_errors] == [(2, "$.nights")]
    # without tool specs nothing can be checked
    assert score_trial_tools(trial.model_copy(update={"tools": []})).ground_truth_errors == []

"""Scoring report tables and figures (agentstats.report.scoring_tables / .plots).

Every expected value is worked out by hand from the hand-built trials below (fractions in the comments), from a
published example (Cohen's kappa), or, for the tau-bench file, from the raw JSON (multiset oracles).
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from agentstats.records.trial import Interaction, ToolCall, ToolSpec, Trial
from agentstats.report.scoring_plots import plot_judge_scores, plot_tool_breakdown, plot_tool_vs_outcome
from agentstats.report.scoring_tables import (
    judge_summary,
    schema_error_counts,
    scoring_available,
    tool_breakdown,
    tool_error_counts,
    tool_outcome_agreement,
    tool_scores_frame,
)
from agentstats.scoring.judge import Judge, JudgeVerdict
from agentstats.scoring.outcomes import score_trials

TAU = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "tau-bench-historical" / "gpt-4o-airline.json.gz"


def call(name: str, args=None) -> ToolCall:
    return ToolCall(name=name, arguments={} if args is None else args)


EXPECTED = [call("search", {"q": "x"}), call("book", {"id": 1, "seats": 2})]


@pytest.fixture(scope="module")
def trials() -> list[Trial]:
    return [
        # A: calls search(ok), lookup(extra), book(seats wrong). selection 2/3, parameters (1 + 1/2)/2 = 3/4,
        #    overall 17/24, precision 1/3, recall 1/2, f1 2/5
        Trial(agent="a", task_id="t1", trial=0, success=True, expected_tool_calls=EXPECTED, interactions=[
            Interaction(query="find x", tool_calls=[call("search", {"q": "x"}), call("lookup", {"id": 1})]),
            Interaction(query="book it", tool_calls=[call("book", {"id": 1, "seats": 3})], answer="done"),
        ]),
        # B: exactly the expected calls: everything 1
        Trial(agent="a", task_id="t1", trial=1, reward=0.0, expected_tool_calls=EXPECTED, interactions=[
            Interaction(query="go", tool_calls=[call("search", {"q": "x"}), call("book", {"id": 1, "seats": 2})]),
        ]),
        # B2: only book(seats wrong): selection 1/2, parameters (1/2)/2 = 1/4, overall 3/8, P = R = F1 = 0
        Trial(agent="a", task_id="t1", trial=2, reward=1.0, expected_tool_calls=EXPECTED, interactions=[
            Interaction(query="go", tool_calls=[call("book", {"id": 1, "seats": 3})]),
        ]),
        # F: one malformed call h: selection 1, parameters 0, overall 1/2
        Trial(agent="a", task_id="t2", trial=0, success=True, expected_tool_calls=[call("h", {"x": 1})],
              interactions=[Interaction(query="h", tool_calls=[ToolCall(name="h", arguments='{"x": 1')])]),
        # C: expected calls, none made: all 0
        Trial(agent="b", task_id="t1", trial=0, success=False, expected_tool_calls=EXPECTED,
              interactions=[Interaction(query="hi", answer="sorry")]),
        # D: interaction level, order matters: g then f() (argument a missing). selection 1, parameters 1/2,
        #    sequence LCS([1, 0]) / 2 = 1/2, overall (1 + 1/2 + 1/2) / 3 = 2/3, P = R = F1 = 1/2
        Trial(agent="b", task_id="t2", trial=0, interactions=[
            Interaction(query="do f then g", tool_sequence_matters=True,
                        expected_tool_calls=[call("f", {"a": 1}), call("g", {"b": "x"})],
                        tool_calls=[call("g", {"b": "x"}), call("f")]),
            Interaction(query="say ok", answer="ok", expected_answer="ok"),
        ]),
        # E: infrastructure error: not scored
        Trial(agent="b", task_id="t2", trial=1, status="infra_error", expected_tool_calls=[call("h", {"x": 1})]),
        # G: correct, but no benchmark outcome
        Trial(agent="b", task_id="t3", trial=0, expected_tool_calls=[call("h", {"x": 1})],
              interactions=[Interaction(query="h", tool_calls=[call("h", {"x": 1})])]),
    ]


def test_scoring_available():
    assert not scoring_available([])
    assert not scoring_available([Trial(agent="a", task_id="t", trial=0, success=True,
                                        interactions=[Interaction(query="q", answer="x")])])
    assert scoring_available([Trial(agent="a", task_id="t", trial=0,
                                    interactions=[Interaction(query="q", answer="x", expected_answer="x")])])
    assert scoring_available([Trial(agent="a", task_id="t", trial=0, expected_tool_calls=[call("f")])])
    assert scoring_available([Trial(agent="a", task_id="t", trial=0,
                                    interactions=[Interaction(expected_tool_calls=[call("f")])])])
    spec = ToolSpec(name="f", parameters={"type": "object", "properties": {}})
    with_calls = Trial(agent="a", task_id="t", trial=0, tools=[spec],
                       interactions=[Interaction(tool_calls=[call("f")])])
    assert scoring_available([with_calls])
    assert not scoring_available([Trial(agent="a", task_id="t", trial=0, tools=[spec])])  # specs, no calls


def test_tool_scores_frame_values(trials):
    df = tool_scores_frame(trials)
    assert df.attrs["n_trials_skipped"] == 1
    keys = list(zip(df["agent"], df["task_id"], df["trial"], df["level"], strict=True))
    assert keys == [("a", "t1", 0, "trial"), ("a", "t1", 1, "trial"), ("a", "t1", 2, "trial"),
                    ("a", "t2", 0, "trial"), ("b", "t1", 0, "trial"), ("b", "t2", 0, "interaction"),
                    ("b", "t3", 0, "trial")]
    assert df["interaction"].isna().tolist() == [True] * 5 + [False, True] and df["interaction"].iloc[5] == 0
    cols = ["selection", "parameters", "overall", "precision", "recall", "f1"]
    expected = np.array([
        [2 / 3, 3 / 4, 17 / 24, 1 / 3, 1 / 2, 2 / 5],
        [1, 1, 1, 1, 1, 1],
        [1 / 2, 1 / 4, 3 / 8, 0, 0, 0],
        [1, 0, 1 / 2, 0, 0, 0],
        [0, 0, 0, 0, 0, 0],
        [1, 1 / 2, 2 / 3, 1 / 2, 1 / 2, 1 / 2],
        [1, 1, 1, 1, 1, 1],
    ])
    np.testing.assert_allclose(df[cols].to_numpy(), expected, rtol=0, atol=1e-12)
    assert df["sequence"].isna().tolist() == [True] * 5 + [False, True] and df["sequence"].iloc[5] == 0.5
    assert df["utilization"].isna().all()  # no call recorded a result
    assert df["passed"].tolist() == [False, True, False, False, False, False, True]
    assert df["all_expected_matched"].tolist() == [False, True, False, False, False, False, True]
    assert df["n_actual"].tolist() == [3, 2, 1, 1, 0, 2, 1]
    assert df["n_expected"].tolist() == [2, 2, 2, 1, 2, 2, 1]
    assert df["n_correct"].tolist() == [1, 2, 0, 0, 0, 1, 1]
    assert df["benchmark_outcome"].tolist() == ["success", "failure", "success", "success", "failure", None, None]


def test_tool_threshold_and_weights(trials):
    df = tool_scores_frame(trials, tool_threshold=0.6)
    # overall >= 0.6: A (17/24), B, D (2/3), G
    assert df["passed"].tolist() == [True, True, False, False, False, True, True]
    only_params = tool_scores_frame(trials, weights={"selection": 0, "parameters": 1, "sequence": 0})
    np.testing.assert_allclose(only_params["overall"], [3 / 4, 1, 1 / 4, 0, 0, 1 / 2, 1], atol=1e-12)


def test_tool_breakdown(trials):
    bd = tool_breakdown(tool_scores_frame(trials))
    assert list(zip(bd["agent"], bd["level"], bd["n_units"], strict=True)) == [
        ("a", "trial", 4), ("b", "interaction", 1), ("b", "trial", 2)
    ]
    a = bd.iloc[0]
    # means over A, B, B2, F
    assert a["selection"] == pytest.approx((2 / 3 + 1 + 1 / 2 + 1) / 4)  # 19/24
    assert a["parameters"] == pytest.approx((3 / 4 + 1 + 1 / 4 + 0) / 4)  # 1/2
    assert a["overall"] == pytest.approx((17 / 24 + 1 + 3 / 8 + 1 / 2) / 4)  # 31/48
    assert a["precision"] == pytest.approx(1 / 3)
    assert a["recall"] == pytest.approx(3 / 8)
    assert a["f1"] == pytest.approx(7 / 20)
    assert a["share_passed"] == pytest.approx(1 / 4)
    assert np.isnan(a["sequence"]) and np.isnan(a["utilization"])
    d = bd.iloc[1]
    assert (d["selection"], d["parameters"], d["sequence"], d["share_passed"]) == pytest.approx((1, 0.5, 0.5, 0))
    assert d["overall"] == pytest.approx(2 / 3)
    bt = bd.iloc[2]  # C and G
    assert [bt[c] for c in ("selection", "parameters", "overall", "precision", "recall", "f1", "share_passed")] == \
        pytest.approx([0.5] * 7)
    assert tool_breakdown(tool_scores_frame([])).empty


def test_tool_error_counts(trials):
    err = tool_error_counts(trials)
    rows = list(zip(err["kind"], err["level"], err["where"], err["count"], err["n_trials"], strict=True))
    assert rows == [
        ("missing_call", "trial", "search", 2, 2),  # B2, C
        ("wrong_value", "trial", "book.seats", 2, 2),  # A, B2
        ("missing_call", "trial", "book", 1, 1),  # C
        ("extra_call", "trial", "lookup", 1, 1),  # A
        ("missing_argument", "interaction", "f.a", 1, 1),  # D
        ("malformed_arguments", "trial", "h", 1, 1),  # F
        ("order", "interaction", "f", 1, 1),  # D: g was called before f
    ]
    first = err.iloc[1]
    assert (first["example_agent"], first["example_task_id"], first["example_trial"]) == ("a", "t1", 0)
    assert "expected 2, got 3" in first["example_detail"] and first["argument"] == "$.seats"
    assert err.attrs["kind_totals"] == {"missing_call": 3, "extra_call": 1, "wrong_value": 2, "missing_argument": 1,
                                        "malformed_arguments": 1, "order": 1}
    assert err.attrs["n_units"] == 7 and err.attrs["n_units_with_errors"] == 5
    assert len(tool_error_counts(trials, top=2)) == 2
    assert tool_error_counts(trials, level="interaction")["kind"].tolist() == ["missing_argument", "order"]


SPECS = [
    {"type": "function", "function": {"name": "search", "parameters": {
        "type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}}},
    {"name": "book", "parameters": {"type": "object", "properties": {
        "id": {"type": "integer"}, "seats": {"type": "integer"}}, "required": ["id"]}},
]


def test_schema_error_counts():
    s1 = Trial(agent="a", task_id="t1", trial=0, tools=SPECS, interactions=[
        Interaction(tool_calls=[call("search", {"q": 5}), call("book", {"seats": 2})]),
        Interaction(tool_calls=[call("book", {"id": 1, "extra": 1}), call("lookup", {"id": 1}),
                                ToolCall(name="search", arguments='{"q":')]),
    ])
    s2 = Trial(agent="a", task_id="t2", trial=0, tools=SPECS, interactions=[
        Interaction(tool_calls=[call("search", {"q": 1}), call("book", {"id": 1, "seats": None}),
                                call("search", {"q": "ok"})]),
    ])
    s3 = Trial(agent="a", task_id="t3", trial=0, interactions=[Interaction(tool_calls=[call("anything")])])
    df = schema_error_counts([s1, s2, s3])
    cols = ["kind", "tool", "count", "n_calls", "n_trials", "example_path"]
    rows = list(zip(*(df[c] for c in cols), strict=True))
    assert rows == [
        ("wrong_type", "search", 2, 2, 2, "$.q"),
        ("extra_argument", "book", 1, 1, 1, "$.extra"),
        ("malformed_json", "search", 1, 1, 1, "$"),
        ("missing_required", "book", 1, 1, 1, "$.id"),
        ("null_optional", "book", 1, 1, 1, "$.seats"),
        ("unknown_tool", "lookup", 1, 1, 1, "$"),
    ]
    ex = df.iloc[1]
    assert (ex["example_task_id"], ex["example_interaction"]) == ("t1", 1)
    at = df.attrs
    assert (at["n_trials_checked"], at["n_trials_without_tools"], at["n_calls_checked"], at["n_calls_with_errors"]) \
        == (2, 1, 8, 7)
    assert "Skipped 1 trials without tool specs" in at["note"]
    none = schema_error_counts([s3])
    assert none.empty and none.attrs["n_trials_checked"] == 0 and "skipped for all 1 trials" in none.attrs["note"]


def test_tool_outcome_agreement_hand_built(trials):
    table, st = tool_outcome_agreement(tool_scores_frame(trials))
    # trial-level units with a benchmark outcome: A (no, success), B (yes, failure), B2 (no, success),
    # F (no, success), C (no, failure); G has none (excluded), D is interaction-level.
    assert table.loc[True].tolist() == [0, 1] and table.loc[False].tolist() == [3, 1]
    assert table.columns.tolist() == ["success", "failure"]
    assert st["n"] == 5 and st["n_excluded"] == 1
    assert st["agreement"] == pytest.approx(1 / 5)
    # p_e = (1/5)(3/5) + (4/5)(2/5) = 11/25; kappa = (1/5 - 11/25) / (14/25) = -3/7
    assert st["kappa"] == pytest.approx(-3 / 7)
    assert st["precision"] == 0 and st["recall"] == 0


def _synthetic(counts: dict[tuple[bool, str], int]) -> pd.DataFrame:
    rows = [{"level": "trial", "passed": p, "benchmark_outcome": o} for (p, o), n in counts.items() for _ in range(n)]
    return pd.DataFrame(rows)


def test_cohen_kappa_published_example():
    # Cohen's kappa worked example (Wikipedia, "Cohen's kappa"): 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no
    # -> p_o = 0.7, p_e = 0.5, kappa = 0.4.
    f = _synthetic({(True, "success"): 20, (True, "failure"): 5, (False, "success"): 10, (False, "failure"): 15})
    _, st = tool_outcome_agreement(f)
    assert st["agreement"] == pytest.approx(0.7) and st["kappa"] == pytest.approx(0.4)
    assert st["precision"] == pytest.approx(20 / 25) and st["recall"] == pytest.approx(20 / 30)
    # both raters constant and equal: chance agreement 1, kappa undefined
    _, const = tool_outcome_agreement(_synthetic({(True, "success"): 4}))
    assert const["agreement"] == 1 and np.isnan(const["kappa"])
    _, empty = tool_outcome_agreement(_synthetic({}).reindex(columns=["level", "passed", "benchmark_outcome"]))
    assert empty["n"] == 0 and np.isnan(empty["agreement"])
    with pytest.raises(KeyError):
        tool_outcome_agreement(f, predictor="nope")


class ScriptedJudge(Judge):
    """Answers "rate" -> judge_missing (rate_limit, 3 requests), "slow" -> (timeout, 3 requests), anything else a
    verdict 1.0 costing one request, 100 + 20 tokens and $0.001.
    """

    name = "scripted"

    def judge_answers(self, items, progress=None):
        out = []
        for i, it in enumerate(items):
            kind = {"rate": "rate_limit", "slow": "timeout"}.get(it.answer)
            if kind:
                v = JudgeVerdict(metric="answer_correctness", status="judge_missing", error=kind, error_kind=kind,
                                 judge=self.name, n_requests=3, cost_usd=0.0)
            else:
                v = JudgeVerdict(metric="answer_correctness", status="ok", score=1.0, judge=self.name, n_requests=1,
                                 prompt_tokens=100, completion_tokens=20, cost_usd=0.001)
            out.append(v)
            self.stats.requested += 1
            self.stats.add(v)
            if progress:
                progress(i + 1, len(items))
        return out


def _judge_trials() -> list[Trial]:
    def qa(answer, expected):
        return Interaction(query="q", answer=answer, expected_answer=expected)

    return [
        Trial(agent="x", task_id="q1", trial=0, interactions=[qa("Paris", "Paris"), qa("rate", "Rome")]),
        Trial(agent="x", task_id="q2", trial=0, interactions=[qa("slow", "Oslo")]),
        Trial(agent="y", task_id="q3", trial=0, interactions=[qa("Oslo", "Oslo")]),
    ]


def test_judge_summary():
    res = score_trials(_judge_trials(), judge=ScriptedJudge())
    table = judge_summary(res)
    assert table.columns.tolist() == ["item", "value"]
    d = dict(zip(table["item"], table["value"], strict=True))
    assert d["judge"] == "scripted"
    assert d["answers judged"] == 4 and d["missing verdicts (judge_missing)"] == 2
    assert d["trials missing because of the judge"] == 2
    assert d["judge failures: rate_limit"] == 1 and d["judge failures: timeout"] == 1
    assert d["verdicts requested"] == 4 and d["cache hits"] == 0
    assert d["HTTP requests"] == 2 * 1 + 2 * 3
    assert (d["prompt tokens"], d["completion tokens"]) == (200, 40)
    assert d["cost (USD)"] == pytest.approx(0.002)


# -- figures ---------------------------------------------------------------------------------------------
def _bar_heights(ax) -> list[float]:
    return [p.get_height() for p in ax.patches]


def test_plot_tool_breakdown_draws_given_values():
    bd = pd.DataFrame({
        "agent": ["a", "b"], "level": ["trial", "trial"], "n_units": [3, 5],
        "selection": [0.2, 0.9], "parameters": [0.4, 0.8], "sequence": [np.nan, np.nan],
        "utilization": [0.1, 0.3], "overall": [0.3, 0.85],
    })
    fig = plot_tool_breakdown(bd)
    assert isinstance(fig, Figure) and len(fig.axes) == 1
    # bars: agent a's five components, then agent b's; NaN drawn as 0 and labelled n/a
    assert _bar_heights(fig.axes[0]) == pytest.approx([0.2, 0.4, 0, 0.1, 0.3, 0.9, 0.8, 0, 0.3, 0.85])
    assert sum(t.get_text() == "n/a" for t in fig.axes[0].texts) == 2
    plt.close(fig)
    two = plot_tool_breakdown(pd.concat([bd, bd.assign(level="interaction")]))
    assert len(two.axes) == 2
    plt.close(two)
    empty = plot_tool_breakdown(bd.iloc[:0])
    assert isinstance(empty, Figure)
    plt.close(empty)


def test_plot_judge_scores():
    df = pd.DataFrame({
        "agent": ["a", "a", "a", "b", "b"],
        "answer_score": [0.05, 0.95, np.nan, 0.55, np.nan],
        "answer_status": ["ok", "ok", "judge_missing", "ok", "judge_missing"],
    })
    fig = plot_judge_scores(df, threshold=0.7)
    ax = fig.axes[0]
    assert "judge_missing: 2" in ax.get_title()
    # 10 bins per agent: a has one score in bin 0 and one in bin 9, b one in bin 5
    heights = _bar_heights(ax)
    assert len(heights) == 20 and sum(heights) == 3
    assert heights[0] == 1 and heights[9] == 1 and heights[15] == 1
    plt.close(fig)


def test_plot_tool_vs_outcome(trials):
    frame = tool_scores_frame(trials)
    fig = plot_tool_vs_outcome(frame, bins=4)
    heights = _bar_heights(fig.axes[0])
    # success: A 17/24, B2 3/8, F 1/2 -> bins [0.5, 0.75): 2 (A, F), [0.25, 0.5): 1;
    # failure: B 1 (last bin), C 0 (first bin)
    assert heights[:4] == [0, 1, 2, 0] and heights[4:] == [1, 0, 0, 1]
    plt.close(fig)


# -- real data ----------------------------------------------------------------------------------------------
def _canon(name: str, args) -> str:
    if isinstance(args, str):
        args = json.loads(args) if args.strip() else {}
    return json.dumps([name, args or {}], sort_keys=True)


@pytest.fixture(scope="module")
def tau():
    if not TAU.exists():
        pytest.skip(f"real data not available: {TAU} is absent (it sits beside the checkout in CI)")
    from agentstats.io import load_trials

    raw = json.loads(gzip.open(TAU, "rt", encoding="utf-8").read())
    return raw, load_trials(TAU)


def _raw_calls(rec) -> list[str]:
    return [_canon(tc["function"]["name"], tc["function"]["arguments"])
            for m in rec["traj"] if m.get("role") == "assistant" for tc in (m.get("tool_calls") or [])]


def test_tau_bench_tool_vs_reward(tau):
    raw, trials = tau
    success = [abs(r["reward"] - 1) <= 1e-6 for r in raw]
    has_actions = [bool(r["info"]["task"]["actions"]) for r in raw]
    assert len(raw) == 200 and sum(success) == 84  # tau-bench's 84 successes of 200 (SOURCE.md)

    frame = tool_scores_frame(trials)
    n_units = sum(has_actions)  # tasks without actions have no tool ground truth
    assert frame.shape == (n_units, 21) and (frame["level"] == "trial").all()
    by_key = {(r["task_id"], r["trial"]): r for r in raw}
    for _, row in frame.iterrows():
        rec = by_key[(int(row["task_id"]), row["trial"])]
        acts = Counter(_raw_calls(rec))
        exps = Counter(_canon(a["name"], a["kwargs"]) for a in rec["info"]["task"]["actions"])
        assert row["n_expected"] == sum(exps.values()) and row["n_actual"] == sum(acts.values())
        # oracle: with default weights and threshold 1.0 a unit passes iff the multisets of calls are equal;
        # every expected call is matched iff the expected multiset is contained in the actual one
        assert row["passed"] == (acts == exps)
        assert row["all_expected_matched"] == (not (exps - acts))

    table, st = tool_outcome_agreement(frame)
    assert int(table.to_numpy().sum()) == st["n"] == n_units and st["n_excluded"] == 0
    assert int(table["success"].sum()) == sum(s for s, h in zip(success, has_actions, strict=True) if h)
    # "no call expected" semantics for the empty action lists: every trial is a unit
    full = tool_scores_frame(trials, empty_expected="no_calls")
    t_full, st_full = tool_outcome_agreement(full)
    assert st_full["n"] == 200 and int(t_full["success"].sum()) == 84
    assert -1 <= st["kappa"] <= 1 and 0 <= st["agreement"] <= 1

    bd = tool_breakdown(frame)
    assert bd.shape == (1, 12) and bd["n_units"].iloc[0] == n_units
    err = tool_error_counts(trials)
    assert len(err) == 15 and err["count"].is_monotonic_decreasing
    sch = schema_error_counts(trials)
    assert sch.empty and sch.attrs["n_trials_without_tools"] == 200  # tau-bench files carry no tool specs
    fig = plot_tool_vs_outcome(frame)
    assert sum(_bar_heights(fig.axes[0])) == n_units
    plt.close(fig)


def _name(canon: str) -> str:
    return json.loads(canon)[0]


def test_tau_bench_state_changing_reading(tau):
    from agentstats.report.scoring_tables import READINGS, tool_readings
    from agentstats.scoring.tools import TAU_BENCH_AIRLINE_READ_ONLY as RO

    raw, trials = tau
    by_key = {(r["task_id"], r["trial"]): r for r in raw}
    writes = tool_scores_frame(trials, read_only=RO)
    # oracle: a unit passes iff the multisets of state-changing calls (name and exact arguments) are equal
    n_pass = 0
    for _, row in writes.iterrows():
        rec = by_key[(int(row["task_id"]), row["trial"])]
        acts = Counter(c for c in _raw_calls(rec) if _name(c) not in RO)
        exps = Counter(_canon(a["name"], a["kwargs"]) for a in rec["info"]["task"]["actions"] if a["name"] not in RO)
        assert (row["n_actual"], row["n_expected"]) == (sum(acts.values()), sum(exps.values()))
        assert row["passed"] == (acts == exps)
        n_pass += acts == exps
    assert (n_pass, len(writes)) == (57, 172)  # 5.8% pass over every call; 33.1% over state-changing calls

    table = tool_readings(trials)  # read-only names found by itself: tau-bench records, airline tools
    assert table.attrs["read_only"] == sorted(RO) and "known domain lists" in table.attrs["note"]
    assert table["reading"].tolist() == list(READINGS) and (table["level"] == "trial").all()
    every, state = table.iloc[0], table.iloc[1]
    assert every["share_passed"] == pytest.approx(10 / 172) and state["share_passed"] == pytest.approx(57 / 172)
    _, st = tool_outcome_agreement(writes)
    assert state["agreement"] == pytest.approx(st["agreement"]) and state["n_compared"] == st["n"] == 172
    # 54 of the 62 benchmark successes pass on state-changing calls, and 3 of the 57 passes are failures
    assert state["recall_vs_benchmark"] == pytest.approx(54 / 62)
    assert state["precision_vs_benchmark"] == pytest.approx(54 / 57)
    assert state["kappa"] > every["kappa"]


def test_ground_truth_errors_table_and_frame_attrs():
    from agentstats.report.scoring_tables import ground_truth_errors

    spec = ToolSpec(name="f", parameters={"type": "object", "properties": {"x": {"type": "integer"}}})
    ok = Trial(agent="A", task_id="t1", trial=0, tools=[spec], interactions=[
        Interaction(tool_calls=[ToolCall(name="f", arguments={"x": 1})],
                    expected_tool_calls=[ToolCall(name="f", arguments={"x": 1})])])
    bad = Trial(agent="A", task_id="t2", trial=1, tools=[spec], interactions=[
        Interaction(tool_calls=[ToolCall(name="f", arguments={"x": "1"})],
                    expected_tool_calls=[ToolCall(name="f", arguments={"x": "1"})])],
        expected_tool_calls=[ToolCall(name="g")])
    df = ground_truth_errors([ok, bad])
    assert df[["task_id", "trial", "level", "interaction", "call_index", "tool", "kind", "path"]].astype(
        object).where(df.notna(), None).values.tolist() == [
        ["t2", 1, "interaction", 0, 0, "f", "wrong_type", "$.x"],
        ["t2", 1, "trial", None, 0, "g", "unknown_tool", "$"]]
    frame = tool_scores_frame([ok, bad])
    assert frame["task_id"].tolist() == ["t1"]  # both units of t2 are left out
    assert len(frame.attrs["ground_truth_errors"]) == 2
    kept = tool_scores_frame([ok, bad], invalid_ground_truth="score")
    assert kept["task_id"].tolist() == ["t1", "t2", "t2"] and bool(kept["passed"].iloc[1])

"""Fair Forge importers (Dataset/Batch JSON, FAI-style JSONL) and the Fair Forge-compatible view."""

from __future__ import annotations

import gzip
import json
from math import comb

import pytest
from scipy import stats

from agentstats.io.loaders import load_trials
from agentstats.records.problems import LoadError
from agentstats.scoring.fair_forge import AgenticMetricView, ToolCorrectnessView, fair_forge_frame, fair_forge_view
from agentstats.scoring.judge import Judge, JudgeVerdict
from agentstats.scoring.outcomes import score_trials

# Field names of fair_forge.schemas.agentic.AgenticMetric / ToolCorrectnessScore (Alquimia-ai/fair-forge).
FF_AGENTIC_FIELDS = {
    "session_id", "assistant_id", "total_interactions", "correct_interactions", "is_fully_correct", "threshold",
    "correctness_scores", "correct_indices", "tool_correctness_scores", "k", "pass_at_k", "pass_at_k_ci_low",
    "pass_at_k_ci_high", "pass_pow_k", "pass_pow_k_ci_low", "pass_pow_k_ci_high",
}
FF_TOOL_FIELDS = {"tool_selection_correct", "parameter_accuracy", "sequence_correct", "result_utilization",
                  "overall_correctness", "is_correct", "reasoning"}


def batch(qa_id, query, answer, truth, used=None, expected=None, seq=None, uses_tools=True):
    b = {"qa_id": qa_id, "query": query, "assistant": answer, "ground_truth_assistant": truth}
    if used is not None:
        b["agentic"] = {"tools_used": used, "final_answer_uses_tools": uses_tools}
    if expected is not None:
        b["ground_truth_agentic"] = {"expected_tools": expected}
        if seq is not None:
            b["ground_truth_agentic"]["tool_sequence_matters"] = seq
    return b


def tool(name, step=1, result=None, **params):
    t = {"tool_name": name, "parameters": params, "step": step}
    if result is not None:
        t["result"] = result
    return t


def dataset(assistant_id, answers, session="shop-1"):
    a1, a2, a3 = answers
    return {
        "session_id": session, "assistant_id": assistant_id, "language": "english",
        "context": "A shop assistant with a price tool.",
        "conversation": [
            batch("q1", "Price of a pen?", a1, "A pen costs 2 dollars.",
                  used=[tool("price", item="pen", result=2)], expected=[tool("price", item="pen")], seq=False),
            batch("q2", "And of a book?", a2, "A book costs 12 dollars.",
                  used=[tool("price", item="book", result=12)], expected=[tool("price", item="book")]),
            batch("q3", "Thanks!", a3, "You're welcome."),
        ],
    }


DATASETS = [
    dataset("attempt-1", ["A pen costs 2 dollars.", "A book costs 12 dollars.", "You're welcome."]),
    dataset("attempt-2", ["A pen costs 2 dollars.", "A book costs 15 dollars.", "You're welcome."]),
    dataset("attempt-3", ["A pen costs 2 dollars.", "A book costs 12 dollars.", "You're welcome."]),
]


# -- importer: Datasets ------------------------------------------------------------------------------------
def test_datasets_map_to_trials():
    ts = load_trials(DATASETS, "fair_forge", agent="shop-bot")
    assert [t.key for t in ts] == [("shop-bot", "shop-1", 0), ("shop-bot", "shop-1", 1), ("shop-bot", "shop-1", 2)]
    t = ts[0]
    assert t.session_id == "shop-1" and t.assistant_id == "attempt-1" and t.language == "english"
    it = t.interactions[0]
    assert (it.id, it.query, it.answer, it.expected_answer) == ("q1", "Price of a pen?", "A pen costs 2 dollars.",
                                                                "A pen costs 2 dollars.")
    assert it.tool_calls[0].name == "price" and it.tool_calls[0].arguments == {"item": "pen"}
    assert it.tool_calls[0].result == 2 and it.tool_calls[0].step == 1
    assert it.expected_tool_calls[0].arguments == {"item": "pen"}
    assert it.tool_results_used is True
    assert it.tool_sequence_matters is False  # given explicitly
    assert t.interactions[1].tool_sequence_matters is True  # Fair Forge's default when ground truth is given
    assert t.interactions[2].tool_calls == [] and t.interactions[2].tool_sequence_matters is False


def test_default_agent_is_the_assistant_id():
    ts = load_trials(DATASETS, "fair_forge")
    assert [t.key for t in ts] == [("attempt-1", "shop-1", 0), ("attempt-2", "shop-1", 0),
                                   ("attempt-3", "shop-1", 0)]


def test_files_plain_gzip_and_single_object(tmp_path):
    p = tmp_path / "ff.json"
    p.write_text(json.dumps(DATASETS))
    g = tmp_path / "ff.json.gz"
    with gzip.open(g, "wt") as fh:
        json.dump(DATASETS, fh)
    one = tmp_path / "one.json"
    one.write_text(json.dumps(DATASETS[0]))
    assert len(load_trials(p, "fair_forge", agent="x")) == 3
    assert len(load_trials(g, "fair_forge", agent="x")) == 3
    assert len(load_trials(one, "fair_forge", agent="x")) == 1
    assert len(load_trials(p, format="fair_forge", agent="x")) == 3


def test_problems_name_record_and_field(tmp_path):
    bad = json.loads(json.dumps(DATASETS))
    del bad[1]["conversation"][2]["assistant"]
    bad[2]["conversation"][0]["agentic"]["tools_used"][0]["parameters"] = [1, 2]
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(bad))
    with pytest.raises(LoadError) as ei:
        load_trials(p, "fair_forge", agent="x")
    where = {(pr.line, pr.field) for pr in ei.value.problems}
    assert where == {(1, "conversation.2.assistant"), (2, "conversation.0.agentic.tools_used.0.parameters")}
    assert "record 1 (0-based)" in str(ei.value)
    with pytest.warns(UserWarning):
        ok = load_trials(p, "fair_forge", agent="x", on_error="skip")
    assert len(ok) == 1 and ok.n_skipped == 2


def test_bare_batches():
    batches = [batch("q1", "2+2?", "4", "4"), batch("q1", "2+2?", "5", "4"), batch("q2", "3+3?", "6", "6")]
    with pytest.raises(ValueError, match="agent="):
        load_trials(batches, "fair_forge")
    ts = load_trials(batches, "fair_forge", agent="calc")
    assert [t.key for t in ts] == [("calc", "q1", 0), ("calc", "q1", 1), ("calc", "q2", 0)]


# -- importer: FAI-style JSONL ------------------------------------------------------------------------------
def write_jsonl(path, rows):
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return path


def test_fai_jsonl(tmp_path):
    p = write_jsonl(tmp_path / "fai.jsonl", [
        {"id": "c1", "input": "Capital of France?", "expected": "Paris", "context": "Geography quiz",
         "tags": ["geo"], "risk_level": "low", "output": "Paris", "source": "quiz-v2"},
        {"id": "c1", "input": "Capital of France?", "expected": "Paris", "output": "Lyon", "tags": "geo"},
        {"id": 7, "input": "2+2?", "expected": ["4", "four"], "answer": "four", "agent": "other", "trial": 3},
    ])
    ts = load_trials(p, "fai_jsonl", agent="bot")
    assert [t.key for t in ts] == [("bot", "c1", 0), ("bot", "c1", 1), ("other", "7", 3)]
    t = ts[0]
    assert t.tags == ["geo"] and t.risk_level == "low" and t.source == "quiz-v2"
    it = t.interactions[0]
    assert (it.query, it.answer, it.expected_answer, it.context) == ("Capital of France?", "Paris", "Paris",
                                                                     ["Geography quiz"])
    assert ts[1].tags == ["geo"]
    res = score_trials(ts)
    assert list(res.outcomes["outcome"]) == ["success", "failure", "success"]
    assert len(load_trials(p, format="fai_jsonl", agent="bot")) == 3


def test_fai_jsonl_problems_name_line_and_field(tmp_path):
    p = write_jsonl(tmp_path / "bad.jsonl", [
        {"id": "ok", "input": "q", "expected": "a", "output": "a"},
        {"id": "x", "expected": "a", "output": "a"},  # line 2: no input
        {"id": "y", "input": "q", "expected": "a"},  # line 3: no answer
        {"id": "z", "input": "q", "output": "a", "tags": [1, 2], "risk_level": 3},  # line 4
        "{not json",  # line 5
        {"id": "ok", "input": "q", "output": "a", "trial": 0},  # line 6: duplicate of line 1's key
    ])
    with pytest.raises(LoadError) as ei:
        load_trials(p, "fai_jsonl", agent="bot")
    where = {(pr.line, pr.field) for pr in ei.value.problems}
    assert where == {(2, "input"), (3, "output"), (4, "tags"), (4, "risk_level"), (5, None),
                     (6, "(agent, task_id, trial)")}
    with pytest.raises(LoadError, match="no agent"):
        load_trials(write_jsonl(tmp_path / "noagent.jsonl", [{"id": "a", "input": "q", "output": "x"}]), "fai_jsonl")
    ts = load_trials(write_jsonl(tmp_path / "noans.jsonl", [{"id": "a", "input": "q", "expected": "x"}]), "fai_jsonl",
                     agent="bot", require_answer=False)
    assert ts[0].interactions[0].answer is None


# -- the view ---------------------------------------------------------------------------------------------
def test_view_has_fair_forge_fields():
    views = fair_forge_view(load_trials(DATASETS, "fair_forge", agent="bot"), k=2)
    assert FF_AGENTIC_FIELDS <= set(AgenticMetricView.model_fields)
    assert FF_TOOL_FIELDS == set(ToolCorrectnessView.model_fields)
    v = views[0]
    assert (v.session_id, v.assistant_id, v.total_interactions) == ("shop-1", "attempt-1", 3)
    assert v.correctness_scores == [1.0, 1.0, 1.0] and v.correct_indices == [0, 1, 2] and v.is_fully_correct
    assert views[1].correctness_scores == [1.0, 0.0, 1.0] and views[1].correct_interactions == 2
    assert views[1].is_fully_correct is False
    tv = v.tool_correctness_scores
    assert tv[2] is None  # no tool ground truth on q3
    assert tv[0].tool_selection_correct == 1.0 and tv[0].is_correct and tv[0].sequence_correct is None
    df = fair_forge_frame(views)
    assert len(df) == 3 and FF_AGENTIC_FIELDS <= set(df.columns)


def test_trials_basis_counts_conversations_of_the_task():
    # 3 conversations of one task, 2 fully correct: n = 3, c = 2, k = 2 (numbers by hand)
    ts = load_trials(DATASETS, "fair_forge", agent="bot")
    plug = fair_forge_view(ts, k=2, estimator="plugin")
    assert {(v.n, v.c) for v in plug} == {(3, 2)}
    assert plug[0].pass_at_k == pytest.approx(1 - (1 / 3) ** 2)  # 8/9
    assert plug[0].pass_pow_k == pytest.approx((2 / 3) ** 2)  # 4/9
    unb = fair_forge_view(ts, k=2, estimator="unbiased")
    assert unb[0].pass_at_k == pytest.approx(1 - comb(1, 2) / comb(3, 2))  # 1
    assert unb[0].pass_hat_k == pytest.approx(comb(2, 2) / comb(3, 2))  # 1/3
    assert fair_forge_view(ts, k=4, estimator="unbiased")[0].pass_at_k is None  # k > n
    beta = fair_forge_view(ts, k=2, estimator="beta")
    # Beta(1,1) prior + 2 of 3 -> Beta(3, 2): E[p^2] = 3*4/(5*6); E[(1-p)^2] = 2*3/(5*6)
    assert beta[0].pass_pow_k == pytest.approx(12 / 30)
    assert beta[0].pass_at_k == pytest.approx(1 - 6 / 30)
    lo, hi = stats.beta.ppf([0.025, 0.975], 3, 2)
    assert (beta[0].pass_pow_k_ci_low, beta[0].pass_pow_k_ci_high) == pytest.approx((lo**2, hi**2))
    assert beta[0].ci_prob == 0.95 and not beta[0].extrapolated


def test_interactions_basis_reproduces_fair_forge():
    # Fair Forge's Agentic: n = total_interactions, c = correct_interactions, p = c/n plugged in
    ts = load_trials(DATASETS, "fair_forge", agent="bot")
    v = fair_forge_view(ts, k=3, estimator="plugin", basis="interactions")
    assert (v[1].n, v[1].c) == (3, 2)
    assert v[1].pass_at_k == pytest.approx(1 - (1 - 2 / 3) ** 3)
    assert v[1].pass_pow_k == pytest.approx((2 / 3) ** 3)
    assert (v[0].pass_at_k, v[0].pass_pow_k) == (1.0, 1.0)


class FailingJudge(Judge):
    name = "failing"

    def judge_answers(self, items, progress=None):
        return [JudgeVerdict(metric="answer_correctness", status="judge_missing", error="timeout",
                             error_kind="timeout", judge=self.name) if "15" in (it.answer or "")
                else JudgeVerdict(metric="answer_correctness", status="ok", score=1.0, judge=self.name)
                for it in items]


def test_missing_judge_verdicts_are_none_not_zero():
    res = score_trials(load_trials(DATASETS, "fair_forge", agent="bot"), judge=FailingJudge())
    v = fair_forge_view(res, k=1, estimator="plugin")
    assert v[1].correctness_scores == [1.0, None, 1.0] and v[1].is_fully_correct is None
    assert v[1].outcome == "missing" and v[1].n_judge_missing == 1
    assert (v[0].n, v[0].c, v[0].n_missing) == (2, 2, 1)  # the missing conversation is not a failure
    assert v[0].pass_at_k == 1.0


def test_bad_view_arguments():
    ts = load_trials(DATASETS, "fair_forge", agent="bot")
    with pytest.raises(ValueError, match="k must"):
        fair_forge_view(ts, k=0)
    with pytest.raises(ValueError, match="estimator"):
        fair_forge_view(ts, estimator="mc")
    with pytest.raises(ValueError, match="basis"):
        fair_forge_view(ts, basis="sessions")


# -- repeated attempts: assistant_id agent_response_1..N under one session_id (Fair Forge's examples) ---------------
def test_repeated_attempts_are_trials_of_one_agent():
    answers = ["A pen costs 2 dollars.", "A book costs 12 dollars.", "You're welcome."]
    # written out of order: the trial number follows the attempt number, not the file order
    data = [dataset(f"agent_response_{n}", answers, session=s) for n in (3, 1, 2) for s in ("shop-1", "shop-2")]
    ts = load_trials(data, "fair_forge")
    # by hand: one agent, 2 tasks x 3 trials; trial = attempt - 1
    assert sorted(t.key for t in ts) == [("agent_response", s, k) for s in ("shop-1", "shop-2") for k in range(3)]
    assert {(t.task_id, t.trial): t.assistant_id for t in ts}[("shop-2", 0)] == "agent_response_1"
    assert any("repeated attempts of one agent 'agent_response'" in n.message for n in ts.notes)
    # agent= names it; different stems stay different agents
    assert {t.agent for t in load_trials(data, "fair_forge", agent="bot")} == {"bot"}
    two = [dataset("gpt_1", answers), dataset("claude_1", answers)]
    assert sorted(t.agent for t in load_trials(two, "fair_forge")) == ["claude_1", "gpt_1"]

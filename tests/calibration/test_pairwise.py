"""Pairwise judging in both orders through the real judge machinery, against the loopback server."""

from __future__ import annotations

import re

import pytest
from judge_server import Reply, ScriptedOpenAIServer, user_text

from agentstats.calibration import pairwise_judge
from agentstats.llm.prompts.judge import PAIRWISE_PREFERENCE
from agentstats.scoring.judge import OpenAIJudge


def _responder(req):
    text = user_text(req)
    query = re.search(r"REQUEST:\n(.*?)\n", text).group(1)
    first = re.search(r"RESPONSE 1:\n(.*?)\n\nRESPONSE 2:", text, re.S).group(1)
    if query == "q-position":  # a judge that always prefers the response shown first
        return Reply.verdict(1.0, "the first one")
    if query == "q-tie":
        return Reply.verdict(0.5, "equally good")
    if query == "q-missing":
        return Reply.http_error(500)
    return Reply.verdict(1.0 if "GOOD" in first else 0.0, "the good one")  # content-based, order-free


@pytest.fixture()
def judge(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with ScriptedOpenAIServer(responder=_responder) as srv:
        yield srv, OpenAIJudge("gpt-4o-mini", base_url=srv.base_url, cache_dir=tmp_path / "cache",
                               backoff_base_s=0.001, backoff_max_s=0.01, retry_attempts=2, max_retries=1,
                               timeout=5.0, jitter_seed=0)


def test_pairwise_both_orders_swap_inconsistency_and_decisions(judge):
    srv, j = judge
    res = pairwise_judge(
        a=["GOOD and long answer", "first", "same", "x"],
        b=["bad", "second", "same", "y"],
        judge=j,
        queries=["q-content", "q-position", "q-tie", "q-missing"],
        item_ids=["p1", "p2", "p3", "p4"],
    )
    pairs = res.pairs.set_index("item_id")
    # both orders were sent for every pair, the prompt is the versioned pairwise one
    assert sum("RESPONSE 1:" in user_text(r) for r in srv.requests) >= 8
    assert {v.prompt_name for v in res.verdicts if v.ok} == {PAIRWISE_PREFERENCE.name}
    assert pairs.loc["p1", "winner"] == "A" and bool(pairs.loc["p1", "decided"])
    assert pairs.loc["p2", "winner_ab"] == "A" and pairs.loc["p2", "winner_ba"] == "B"
    assert not pairs.loc["p2", "consistent"] and not pairs.loc["p2", "decided"]
    assert pairs.loc["p3", "winner"] == "tie" and not pairs.loc["p3", "decided"]
    assert pairs.loc["p4", "status"] == "judge_missing" and not pairs.loc["p4", "decided"]
    s = res.summary()
    assert (s["n_pairs"], s["n_missing"], s["n_decided"], s["a_wins"], s["b_wins"], s["ties"]) == (4, 1, 1, 1, 0, 1)
    assert s["swap_inconsistency_rate"] == pytest.approx(1 / 3)
    # order-verdicts naming A or B: p1 twice (first shown wins once), p2 twice (first shown wins both): 3 of 4
    assert s["first_position_win_rate"] == pytest.approx(3 / 4)
    assert s["longer_wins_rate"] == pytest.approx(1.0)  # p1: the longer answer A won
    # a second run is served from the cache: no new requests
    n_before = srv.n_requests
    again = pairwise_judge(["GOOD and long answer"], ["bad"], judge=j, queries=["q-content"])
    assert srv.n_requests == n_before and bool(again.pairs["decided"].iloc[0])


def test_pairwise_input_errors(judge):
    _, j = judge
    with pytest.raises(ValueError, match="queries"):
        pairwise_judge(["a"], ["b"], judge=j, queries=[])
    with pytest.raises(TypeError, match="judge_pairs"):
        pairwise_judge(["a"], ["b"], judge=object(), queries=["q"])

"""Embedding similarity through the openai client against the loopback server's /v1/embeddings."""

from __future__ import annotations

import math

import numpy as np
import pytest
from judge_server import ScriptedOpenAIServer, hashed_embedding

from agentstats.metrics import compute, get_metric
from agentstats.metrics.embedding import EmbeddingClient
from agentstats.records.trial import Trial
from agentstats.scoring.judge import JudgeConfigError


@pytest.fixture(autouse=True)
def _no_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def _trial(*its):
    return Trial(agent="A", task_id="t", trial=0, interactions=list(its))


def test_cosine_of_endpoint_embeddings_batched_and_cached():
    with ScriptedOpenAIServer() as srv:
        emb = EmbeddingClient("emb", base_url=srv.base_url, batch_size=2)
        its = [{"query": "capital of france", "answer": "paris is the capital", "expected_answer": ["lyon", "paris"]},
               {"query": "q", "answer": "blue sky", "expected_answer": "blue sky"},
               {"query": "q", "answer": "", "expected_answer": "x"}]
        f = compute([_trial(*its)], get_metric("answer_similarity", method="embedding", params={"embedder": emb}))
        a, p = np.array(hashed_embedding("paris is the capital")), np.array(hashed_embedding("paris"))
        assert f["value"][0] == pytest.approx(float(a @ p))
        assert f["evidence"][0]["expected_index"] == 1 and f["evidence"][0]["model"] == "emb"
        assert f["value"][1] == pytest.approx(1.0)
        assert math.isnan(f["value"][2]) and f["evidence"][2] == {"not_applicable": "empty answer"}
        # 4 distinct texts in batches of 2 -> 2 requests; a second run is served from the cache
        assert len(srv.embedding_requests) == 2
        compute([_trial(*its)], get_metric("answer_similarity", method="embedding", params={"embedder": emb}))
        assert len(srv.embedding_requests) == 2
        f = compute([_trial(*its)], get_metric("answer_relevance", method="embedding", params={"embedder": emb}))
        q = np.array(hashed_embedding("capital of france"))
        assert f["value"][0] == pytest.approx(max(0.0, float(a @ q)))


def test_endpoint_failure_is_missing_not_zero():
    with ScriptedOpenAIServer() as srv:
        srv.embedding_errors.extend([500, 500])
        emb = EmbeddingClient("emb", base_url=srv.base_url, max_retries=1, timeout=5)
        f = compute([_trial({"answer": "a", "expected_answer": "b"})],
                    get_metric("answer_similarity", method="embedding", params={"embedder": emb}))
        assert math.isnan(f["value"][0]) and f["evidence"][0]["not_applicable"] == "embedding_missing"
        assert f["evidence"][0]["embedding_missing"] == "InternalServerError"
        assert len(srv.embedding_requests) == 2  # one retry


def test_no_embedder_and_no_key():
    f = compute([_trial({"answer": "a", "expected_answer": "b"})], get_metric("answer_similarity", method="embedding"))
    assert f["evidence"][0] == {"not_applicable": "no embedder configured (params['embedder'])"}
    with pytest.raises(JudgeConfigError, match="API key"):
        EmbeddingClient("emb", base_url="https://api.example.com/v1")


def test_context_relevance_embedding_is_the_mean_passage_cosine_with_the_question():
    """Each passage's cosine with the question (hashed word vectors, computed here), clipped at 0, then the mean."""
    with ScriptedOpenAIServer() as srv:
        emb = EmbeddingClient("emb", base_url=srv.base_url)
        q, p1, p2 = "capital of france", "paris is the capital of france", "bananas are yellow"
        t = _trial({"query": q, "answer": "Paris", "context": [p1, p2]}, {"query": q, "answer": "Paris"})
        f = compute([t], get_metric("context_relevance", method="embedding", params={"embedder": emb}))
        qv = np.array(hashed_embedding(q))
        cos = [float(qv @ np.array(hashed_embedding(p))) for p in (p1, p2)]
        assert f["value"][0] == pytest.approx((max(0.0, cos[0]) + max(0.0, cos[1])) / 2)
        assert f["evidence"][0]["cosines"] == pytest.approx(cos)
        assert math.isnan(f["value"][1]) and f["evidence"][1]["not_applicable"].startswith("no retrieved passage")

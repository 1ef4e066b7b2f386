"""Catalogue metrics on captured nodes with a role -> field map, and the same node records read back from the store."""

from __future__ import annotations

import math

import pytest

import agentstats
from agentstats.metrics import compute


def _rag_app():
    """A retriever returning ids under its own field name, a generator reading renamed fields of the state."""

    @agentstats.node("retriever", metrics=["retrieval_quality"], fields={"retrieved_ids": "documents"})
    def retrieve(state):
        return {"documents": ["d3", "d1", "d7"]}

    @agentstats.node("generator", metrics=["faithfulness", "answer_relevance"],
                     fields={"output": "reply", "context": "passages", "input": "question"})
    def generate(state):
        return {"reply": "Paris is big"}

    @agentstats.node("app")
    def app(state):
        state = {**state, **retrieve(state)}
        return {"answer": generate(state)["reply"]}

    return app


STATE = {"task_id": "t0", "question": "how big is Paris", "passages": ["Paris is the capital of France."],
         "ground_truth_contexts": ["d1", "d2"]}
# by hand: d1 (relevant) at rank 2 of 3, two relevant ids in the ground truth
EXPECTED = {
    ("retriever", "hit_rate"): 1.0,
    ("retriever", "reciprocal_rank"): 0.5,
    ("retriever", "retrieval_precision"): 1 / 3,
    ("retriever", "average_precision"): (1 / 2) / 2,
    ("retriever", "ndcg"): (1 / math.log2(3)) / (1 + 1 / math.log2(3)),
    ("retriever", "context_relevance"): 1 / 3,
    # "paris is big": 2 of its 3 tokens in the passage; "how big is paris": 3 of 4 tokens in the reply
    ("generator", "faithfulness"): 2 / 3,
    ("generator", "answer_relevance"): 3 / 4,
}


def test_node_metrics_read_roles_from_the_fields_map_and_the_return_value(tmp_path):
    app = _rag_app()
    with agentstats.run("rag", store=tmp_path / "s.duckdb") as run:
        app(dict(STATE))
    for (node, metric), value in EXPECTED.items():
        assert run.metric_result(metric, node=node)["value"].item() == pytest.approx(value), (node, metric)
    assert set(run.result()["node"]) == {"retriever", "generator", ""}  # "": the trials row


def test_node_metrics_computed_after_the_run_from_the_store_equal_the_captured_ones(tmp_path):
    app = _rag_app()
    store = tmp_path / "s.duckdb"
    with agentstats.run("rag", store=store):
        app(dict(STATE))
    trials = agentstats.load_trials(store, run="rag")
    names = sorted({m for _, m in EXPECTED})
    frame = compute(trials, names, level="node")
    scored = frame[frame["applicable"]]
    got = {(r.node, r.metric): r.value for r in scored.itertuples()}
    # compute scores every node with every metric: the application node's default fields hold no context
    assert ("app", "faithfulness") not in got and ("app", "answer_relevance") not in got
    for key, value in EXPECTED.items():
        assert got[key] == pytest.approx(value), key
    nodes = trials[0].interactions[0].nodes
    assert [n["name"] for n in nodes] == ["app", "retriever", "generator"]
    gen = nodes[2]
    assert gen["output"] == "Paris is big" and gen["context"] == STATE["passages"] and gen["input"] == STATE["question"]
    assert gen["parent_id"] == nodes[0]["invocation_id"] and gen["latency_s"] >= 0


def test_nodes_can_be_left_out_when_reading_back(tmp_path):
    app = _rag_app()
    store = tmp_path / "s.duckdb"
    with agentstats.run("rag", store=store):
        app(dict(STATE))
    from agentstats.store import RunStore

    with RunStore.reader(store) as st:
        (t,) = st.trials("rag", nodes=False)
    assert "nodes" not in t.interactions[0].model_dump()


def test_unknown_role_in_fields_is_an_error_naming_it():
    with pytest.raises(ValueError, match="unknown role 'contxt'"):
        agentstats.node("x", metrics=["faithfulness"], fields={"contxt": "docs"})
    with pytest.raises(ValueError, match="role 'context' must name a field"):
        agentstats.node("x", metrics=["faithfulness"], fields={"context": ""})

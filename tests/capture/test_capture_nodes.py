"""Catalogue metrics on captured nodes with a role -> field map, and the same node records read back from the store."""

from __future__ import annotations

import math

import pandas as pd
import pytest

import agentstats
from agentstats.metrics import compute


def _rag_app(docs=("d3", "d1", "d7")):
    """A retriever returning ids under its own field name, a generator reading renamed fields of the state."""

    @agentstats.node("retriever", metrics=["retrieval_quality"], fields={"retrieved_ids": "documents"})
    def retrieve(state):
        return {"documents": list(docs)}

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


def test_open_run_reads_a_past_run_and_log_metric_adds_values_kept_by_rescoring(tmp_path):
    app = _rag_app()
    store = tmp_path / "s.duckdb"
    with agentstats.run("rag", store=store, metrics=["exact_match"]) as run:
        app({**STATE, "expected_answer": "Paris is big"})
        run.log_metric("human_rating", 0.8, task_id="t0")  # logged while running: kept when the run is scored
    run.log_metric("cost_per_answer", 0.02)  # after the end: a run-level value
    past = agentstats.open_run("rag", store=store)
    pd.testing.assert_frame_equal(past.result(), run.result())
    assert past.metric_result("faithfulness", node="generator")["value"].item() == pytest.approx(2 / 3)
    assert list(past.to_frame()["node"]) == ["app", "retriever", "generator"]
    rows = past.result().set_index("metric")
    assert rows.loc["human_rating", "level"] == "conversation" and rows.loc["human_rating", "mean"] == 0.8
    assert rows.loc["cost_per_answer", "level"] == "run"
    assert (rows.loc["exact_match", "mean"] == 1.0).all() and rows.loc["trials", "n"] == 1
    past.log_metric("judge_agreement", 0.5, node="generator", task_id="t0")
    logged = agentstats.open_run("rag", store=store).metric_result("judge_agreement")
    assert logged[["level", "node", "agent", "task_id", "trial", "value"]].values.tolist() == [
        ["node", "generator", "rag", "t0", 0, 0.5]]
    with agentstats.run("rag", store=store, resume=True):  # rescoring keeps logged values
        pass
    assert agentstats.open_run("rag", store=store).metric_result("human_rating")["value"].tolist() == [0.8]
    with pytest.raises(ValueError, match="finite number"):
        past.log_metric("x", float("nan"))
    from agentstats.store import StoreError

    with pytest.raises(StoreError):
        agentstats.open_run("nope", store=store)
    with pytest.raises(FileNotFoundError):
        agentstats.open_run("rag", store=tmp_path / "missing.duckdb")


def test_compare_of_two_stored_runs_pairs_their_node_and_message_metrics_per_task(tmp_path):
    from agentstats.compare.runs import compare_runs

    store = tmp_path / "s.duckdb"
    for name, docs in (("v1", ("d3", "d1", "d7")), ("v2", ("d1", "d2"))):
        app = _rag_app(docs)
        with agentstats.run(name, store=store, metrics=["exact_match"]):
            for task, expected in (("t0", "Paris is big"), ("t1", "Rome")):
                app({**STATE, "task_id": task, "expected_answer": expected})
    cmp = compare_runs("v1", "v2", store=store, n_boot=200)
    rows = cmp.metrics.set_index("metric")
    # v1: d1 at rank 2 of 3; v2: d1, d2 at ranks 1, 2 (both relevant): the same on both tasks
    assert rows.loc["reciprocal_rank@retriever", ["mean_baseline", "mean_run", "n_tasks"]].tolist() == [0.5, 1.0, 2]
    assert rows.loc["retrieval_precision@retriever", "diff"] == pytest.approx(1 - 1 / 3)
    assert rows.loc["faithfulness@generator", "diff"] == pytest.approx(0.0)
    assert rows.loc["exact_match", ["mean_baseline", "mean_run"]].tolist() == [0.5, 0.5]  # per task: 1 and 0


def test_runs_show_prints_metric_results_by_level(tmp_path):
    import json

    from typer.testing import CliRunner

    from agentstats.cli import app as cli

    store = tmp_path / "s.duckdb"
    app = _rag_app()
    with agentstats.run("rag", store=store, metrics=["exact_match"]):
        app({**STATE, "expected_answer": "Paris is big"})
    r = CliRunner().invoke(cli, ["runs", "show", "rag", "--store", str(store)], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    for title in ("metrics by node", "metrics by message", "metrics by conversation", "trials with an outcome"):
        assert title in r.output
    assert "faithfulness" in r.output and "0.667" in r.output  # 2/3, the generator's K-precision
    r = CliRunner().invoke(cli, ["runs", "show", "rag", "--store", str(store), "--json"])
    rows = {(m["level"], m["node"], m["metric"]): m for m in json.loads(r.output)["metrics"]}
    assert rows[("node", "retriever", "reciprocal_rank")]["mean"] == 0.5


def test_langgraph_rag_demo_runs_against_the_loopback_server(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "scripts" / "demo_rag_langgraph.py"
    done = subprocess.run([sys.executable, str(script), "--store", str(tmp_path / "rag.duckdb")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = [ln.split() for ln in done.stdout.splitlines()]
    # "fr": retriever ranks d1 (3 shared words with the question) first; the stand-in answers "Paris is the capital."
    assert ["fr", "retriever", "reciprocal_rank", "1.000"] in lines
    assert ["fr", "generator", "faithfulness", "1.000"] in lines  # every answer token is in the first passage

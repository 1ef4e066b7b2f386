"""Live capture: a multi-node agent calling the loopback OpenAI-compatible server, recorded into the run store."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import openai
import pytest
from judge_server import Reply, ScriptedOpenAIServer, user_text

import agentstats
from agentstats.capture import current_run
from agentstats.metrics import function_metric
from agentstats.store import RunStore

REPO = Path(__file__).resolve().parents[2]
# gpt-4o-mini list price (USD per 1M tokens, input / output), written here independently of pricing.py
MINI_IN, MINI_OUT = 0.15, 0.60
PROMPT, COMPLETION = 120, 30  # what the loopback server reports per call


def _responder(request):
    q = user_text(request)
    return Reply.text("Paris" if "France" in q else "I do not know")


@pytest.fixture
def server():
    with ScriptedOpenAIServer(responder=_responder) as srv:
        yield srv


def _agent(client):
    """A small plain-Python agent: retrieve -> lookup tool -> LLM answer, under one application node."""

    @agentstats.node("retriever")
    def retrieve(state):
        return [f"doc about {state['query']}"]

    @agentstats.node("lookup", kind="tool")
    def lookup(city):
        return {"city": city, "population": 1}

    @agentstats.node("answer", metrics=["exact_match", "token_f1"])
    def answer(state, docs):
        reply = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": state["query"] + " " + docs[0]}])
        return reply.choices[0].message.content

    @agentstats.node("app")
    def app(state):
        docs = retrieve(state)
        lookup(city="Paris")
        if state.get("fail"):
            raise LookupError("no route")
        return {"answer": answer(state, docs)}

    return app


def test_multi_node_agent_is_captured_with_usage_cost_metrics_and_outcomes(tmp_path, server):
    client = openai.OpenAI(base_url=server.base_url, api_key="test")
    app = _agent(client)
    store = tmp_path / "runs.duckdb"
    with agentstats.run("prompt-v2", store=store, tags=["demo"], metrics=["exact_match"]) as run:
        assert current_run() is run
        for _ in range(3):
            assert app({"task_id": "france", "query": "capital of France?", "expected_answer": "Paris"}) == {
                "answer": "Paris"}
            app({"task_id": "mars", "query": "capital of Mars?", "expected_answer": "Olympus"})
        with pytest.raises(LookupError, match="no route"):
            app({"task_id": "broken", "query": "q", "expected_answer": "x", "fail": True})
    assert current_run() is None and run.status == "completed"

    frame = run.to_frame()
    assert len(frame) == 4 * 6 + 3  # four nodes per call, the failing call reaches three
    llm = frame[frame["node"] == "answer"]
    assert (llm["input_tokens"] == PROMPT).all() and (llm["output_tokens"] == COMPLETION).all()
    expected_cost = (PROMPT * MINI_IN + COMPLETION * MINI_OUT) / 1e6
    assert llm["cost_usd"].to_numpy() == pytest.approx([expected_cost] * 6, rel=1e-12)
    assert (llm["model"] == "gpt-4o-mini").all()
    assert frame.loc[frame["node"] == "app", "error_type"].fillna("").tolist() == [""] * 6 + ["LookupError"]
    assert (frame["latency_s"] > 0).all()
    assert list(llm["exact_match"]) == [1.0, 0.0] * 3

    em = run.metric_result("exact_match", node="answer")
    assert list(em["task_id"]) == ["france", "mars"] * 3 and list(em["passed"]) == [True, False] * 3
    f1 = run.metric_result("token_f1", node="answer")
    assert f1["value"].iloc[1] == 0.0  # "I do not know" shares no token with "Olympus"
    summary = run.result().set_index(["metric", "level", "node"])
    assert summary.loc[("exact_match", "node", "answer"), "pass_rate"] == 0.5
    assert summary.loc[("exact_match", "conversation", ""), "n"] == 7  # the failed call scores 0
    with pytest.raises(KeyError, match="no results for metric 'nope'"):
        run.metric_result("nope")

    trials = agentstats.load_trials(store, run="prompt-v2")
    assert [(t.task_id, t.trial, t.outcome()) for t in trials] == [
        ("france", 0, "success"), ("mars", 0, "failure"), ("france", 1, "success"), ("mars", 1, "failure"),
        ("france", 2, "success"), ("mars", 2, "failure"), ("broken", 0, "failure")]
    broken = trials[-1]
    assert broken.status == "agent_error" and broken.meta["error_type"] == "LookupError"
    first = trials[0]
    assert first.agent == "prompt-v2" and first.interactions[0].answer == "Paris"
    assert first.interactions[0].query == "capital of France?"
    assert first.usage.input_tokens == PROMPT and first.usage.cost_usd == pytest.approx(expected_cost)
    assert [(c.name, c.arguments, c.result) for c in first.interactions[0].tool_calls] == [
        ("lookup", {"city": "Paris"}, {"city": "Paris", "population": 1})]
    counts = agentstats.load_counts(store, run="prompt-v2").set_index("task_id")
    assert counts.loc["france", ["n", "c"]].tolist() == [3, 3] and counts.loc["mars", ["n", "c"]].tolist() == [3, 0]
    assert agentstats.pass_at_k(counts["n"], counts["c"], 1).tolist() == [0.0, 1.0, 0.0]
    with RunStore(store, read_only=True) as st:
        info = st.run_info("prompt-v2")
    assert info["status"] == "completed" and info["tags"] == ["demo"] and info["source"] == "capture"


def test_results_and_exceptions_are_never_changed(tmp_path):
    sentinel = object()
    error = ValueError("exact object")

    @agentstats.node()
    def returns(x):
        return sentinel

    @agentstats.node()
    def raises(x):
        raise error

    @agentstats.node()
    async def areturns(x):
        await asyncio.sleep(0)
        return sentinel

    @agentstats.node()
    async def araises(x):
        raise error

    def check():
        assert returns(1) is sentinel
        with pytest.raises(ValueError) as caught:
            raises(1)
        assert caught.value is error
        assert asyncio.run(areturns(1)) is sentinel
        with pytest.raises(ValueError) as caught:
            asyncio.run(araises(1))
        assert caught.value is error
        assert returns.__name__ == "returns" and asyncio.iscoroutinefunction(areturns)

    check()  # outside a run
    with agentstats.run("r", store=tmp_path / "s.duckdb"):
        check()  # inside one
    with RunStore(tmp_path / "s.duckdb", read_only=True) as st:
        nodes = st.frame("r", "node_invocations")
    assert list(nodes["error_type"].fillna("")) == ["", "ValueError", "", "ValueError"]
    assert nodes["error_message"].iloc[1] == "exact object"


def test_iterators_are_handed_over_unread_and_inputs_are_recorded_as_given(tmp_path):
    """A node returning a generator, a map or a file, or taking an iterator, gets it unread (the capture notes it
    instead of serializing it); a node that changes its state is recorded with the state it was given."""
    @agentstats.node("squares")
    def squares(n):
        return map(lambda i: i * i, range(n))

    @agentstats.node
    def gen(state):  # a generator function, decorated without parentheses
        yield state["query"]
        yield "done"

    @agentstats.node("summer")
    def summer(values):
        return sum(values)

    @agentstats.node("planner")
    def planner(state):
        state["query"] = "REWRITTEN"
        state["history"] = ["step1"]
        return state

    @agentstats.node("lookup", kind="tool")
    def lookup(state, city):
        state["city"] = "changed"
        return {"temp": 21}

    @agentstats.node("app")
    def app(state):
        return lookup(state, "Paris")

    with agentstats.run("it", store=tmp_path / "s.duckdb") as run:
        assert list(squares(4)) == [0, 1, 4, 9]
        assert list(gen({"task_id": "g", "query": "q"})) == ["q", "done"]
        assert summer(iter([1, 2, 3])) == 6  # an iterator argument is not read before the node reads it
        planner({"task_id": "p", "query": "original question", "expected_answer": "x"})
        app({"task_id": "t", "query": "weather?", "city": "Rome"})
    nodes = run.to_frame()
    by = dict(zip(nodes["node"], zip(nodes["inputs"], nodes["outputs"], strict=True), strict=True))
    assert by["squares"][1] == '"<map: not recorded (reading it would consume what the caller gets)>"'
    assert "<generator: not recorded" in by["gen"][1]
    assert "<list_iterator: not recorded" in by["summer"][0] and by["summer"][1] == "6"
    assert json.loads(by["planner"][0]) == {"state": {"task_id": "p", "query": "original question",
                                                      "expected_answer": "x"}}
    assert json.loads(by["lookup"][0])["state"]["city"] == "Rome"  # as the tool got it
    with RunStore(tmp_path / "s.duckdb", read_only=True) as st:
        calls = st.frame("it", "tool_calls")
    assert json.loads(calls["arguments"].iloc[0]) == {"state": {"task_id": "t", "query": "weather?", "city": "Rome"},
                                                      "city": "Paris"}
    assert agentstats.current_run is agentstats.capture.current_run  # reachable from the top level
    with pytest.raises(TypeError, match="node name must be a string"):
        agentstats.node(3)


def test_a_resumed_run_replaces_the_earlier_attempts_node_records_and_node_metrics(tmp_path):
    store = tmp_path / "rr.duckdb"

    @agentstats.node("rr_app", metrics=["exact_match"])
    def app(state):
        return state["ans"]

    with agentstats.run("rr", store=store, metrics=["exact_match"]):
        app({"task_id": "t0", "trial": 0, "query": "q", "expected_answer": "a", "ans": "wrong"})
        app({"task_id": "t1", "trial": 0, "query": "q", "expected_answer": "a", "ans": "a"})
    with agentstats.run("rr", store=store, metrics=["exact_match"], resume=True) as run2:
        app({"task_id": "t0", "trial": 0, "query": "q", "expected_answer": "a", "ans": "a"})  # t0/0 again
    res = run2.result()
    node_row = res[(res["metric"] == "exact_match") & (res["level"] == "node")].iloc[0]
    assert node_row["n"] == 2 and node_row["mean"] == 1.0  # was n 3, mean 0.667: the replaced attempt counted
    frame = run2.to_frame()
    assert sorted(zip(frame["task_id"], frame["outputs"], strict=True)) == [("t0", '"a"'), ("t1", '"a"')]
    with RunStore(store, read_only=True) as st:
        assert len(st.frame("rr", "trials")) == 2
        m = st.frame("rr", "metric_results")
    assert len(m[(m["level"] == "node") & (m["task_id"] == "t0")]) == 1


def test_async_nodes_in_concurrent_tasks_each_get_their_own_trial(tmp_path):
    @agentstats.node("inner")
    async def inner(state):
        await asyncio.sleep(0.01)
        return state["query"].upper()

    @agentstats.node("outer")
    async def outer(state):
        return {"answer": await inner(state)}

    async def main():
        return await asyncio.gather(*(outer({"task_id": f"t{i}", "query": f"q{i}"}) for i in range(5)))

    with agentstats.run("async", store=tmp_path / "s.duckdb") as run:
        results = asyncio.run(main())
    assert [r["answer"] for r in results] == ["Q0", "Q1", "Q2", "Q3", "Q4"]
    frame = run.to_frame()
    inner_rows = frame[frame["node"] == "inner"]
    outer_rows = frame[frame["node"] == "outer"].set_index("task_id")
    for _, row in inner_rows.iterrows():  # each inner call is the child of its own task's outer call
        assert row["parent_id"] == outer_rows.loc[row["task_id"], "invocation_id"]
    trials = agentstats.load_trials(tmp_path / "s.duckdb")
    assert sorted(t.interactions[0].answer for t in trials) == ["Q0", "Q1", "Q2", "Q3", "Q4"]


def test_conversation_ids_group_messages_into_one_trial_and_trace_node(tmp_path):
    @agentstats.node("chat", metrics=[function_metric(lambda a, e: len(a or "") >= e, "long_enough", lower_limit=1.0)])
    def chat(state):
        with agentstats.trace_node("tool-step", inputs={"q": state["query"]}, kind="tool") as span:
            span.set_output("42")
        return f"reply to {state['query']}"

    run = agentstats.start_run("conv", store=tmp_path / "s.duckdb", conversation_field="cid", message_field="mid")
    for cid in ("c1", "c2"):
        for mid in ("m1", "m2", "m3"):
            chat({"cid": cid, "mid": mid, "query": f"{cid}-{mid}", "expected_answer": 10})
    agentstats.end_run()
    trials = agentstats.load_trials(tmp_path / "s.duckdb")
    assert [(t.task_id, t.trial, [i.id for i in t.interactions]) for t in trials] == [
        ("c1", 0, ["m1", "m2", "m3"]), ("c2", 0, ["m1", "m2", "m3"])]
    assert trials[0].interactions[1].tool_calls[0].model_dump(include={"name", "arguments", "result"}) == {
        "name": "tool-step", "arguments": {"q": "c1-m2"}, "result": "42"}
    res = run.metric_result("long_enough", node="chat")
    assert len(res) == 6 and res["passed"].all()  # "reply to c1-m1" has 14 characters >= 10
    frame = run.to_frame()
    assert set(frame["conversation_id"]) == {"c1", "c2"} and set(frame["message_id"]) == {"m1", "m2", "m3"}


def test_judge_and_tool_call_metrics_at_application_level(tmp_path):
    @agentstats.node("search", kind="tool")
    def search(query):
        return ["result"]

    @agentstats.node("app")
    def app(state):
        search(query=state["query"])
        return "Paris" if "France" in state["query"] else "Lyon"

    expected_calls = [{"name": "search", "arguments": {"query": "capital of France"}}]
    with agentstats.run("judged", store=tmp_path / "s.duckdb",
                        metrics=["answer_correctness", "tool_calls"], judge="deterministic") as run:
        app({"task_id": "fr", "query": "capital of France", "expected_answer": "Paris",
             "expected_tool_calls": expected_calls})
        app({"task_id": "de", "query": "capital of Germany", "expected_answer": "Berlin",
             "expected_tool_calls": [{"name": "search", "arguments": {"query": "Germany"}}]})
    judged = run.metric_result("answer_correctness", level="message")
    assert list(judged["value"]) == [1.0, 0.0]
    tools = run.metric_result("tool_calls")
    assert list(tools["passed"]) == [True, False]
    with RunStore(tmp_path / "s.duckdb", read_only=True) as st:
        verdicts = st.frame("judged", "judge_verdicts")
    assert list(verdicts["score"]) == [1.0, 0.0] and verdicts["judge"].str.startswith("deterministic").all()
    outcomes = [t.outcome() for t in agentstats.load_trials(tmp_path / "s.duckdb")]
    assert outcomes == ["success", "failure"]


def test_set_outcome_and_threads_see_the_run(tmp_path):
    import threading

    @agentstats.node("app")
    def app(state):
        agentstats.capture.current_run().set_outcome(success=state["ok"])
        return "done"

    with agentstats.run("threads", store=tmp_path / "s.duckdb"):
        threads = [threading.Thread(target=app, args=({"task_id": f"t{i}", "ok": i % 2 == 0},)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    trials = sorted(agentstats.load_trials(tmp_path / "s.duckdb"), key=lambda t: t.task_id)
    assert [t.success for t in trials] == [True, False, True, False]


def _node_metrics(run) -> dict[str, tuple[int, float]]:
    """The run's node-level results: metric -> (invocations scored, mean)."""
    res = run.result()
    rows = res[res["level"] == "node"]
    return {m: (int(n), float(v)) for m, n, v in zip(rows["metric"], rows["n"], rows["mean"], strict=True)}


def test_nodes_of_the_same_name_in_two_applications_keep_their_own_metrics(tmp_path):
    store = tmp_path / "s.duckdb"
    state = {"task_id": "t", "trial": 0, "query": "q", "expected_answer": "x z"}

    @agentstats.node("retriever", metrics=["exact_match"])
    def retrieve_a(state):
        return "x z"

    @agentstats.node("retriever", metrics=["token_f1"])  # decorated after: used to replace the metrics of a
    def retrieve_b(state):
        return "x y"

    @agentstats.node("retriever")
    def retrieve_c(state):
        return "x z"

    with agentstats.run("a", store=store) as run_a:
        retrieve_a(state)
    with agentstats.run("b", store=store) as run_b:
        retrieve_b(state)
    with agentstats.run("c", store=store) as run_c:
        retrieve_c(state)
        with agentstats.trace_node("retriever", inputs=state) as span:
            span.set_output("x z")
    assert _node_metrics(run_a) == {"exact_match": (1, 1.0)}
    # "x y" against "x z": one of two tokens in common each way, F1 = 2 * 0.5 * 0.5 / (0.5 + 0.5) = 0.5
    f1 = _node_metrics(run_b)
    assert set(f1) == {"token_f1"} and f1["token_f1"][0] == 1 and f1["token_f1"][1] == pytest.approx(0.5)
    assert _node_metrics(run_c) == {}  # no decorator called in this run asked for a metric
    assert run_a.metric_result("exact_match", node="retriever")["value"].tolist() == [1.0]
    with pytest.raises(KeyError, match="token_f1"):
        run_a.metric_result("token_f1", node="retriever")


def test_a_resumed_run_scores_its_earlier_node_records_with_a_live_decorators_metrics(tmp_path):
    import gc

    store = tmp_path / "s.duckdb"

    def make(name):
        @agentstats.node(name, metrics=["exact_match"])
        def answer(state):
            return state["ans"]

        return answer

    kept, dropped = make("kept_node"), make("dropped_node")
    for run_name, fn in (("k", kept), ("d", dropped)):
        r = agentstats.start_run(run_name, store=store)
        fn({"task_id": "t", "trial": 0, "query": "q", "expected_answer": "a", "ans": "a"})
        agentstats.end_run(r, status="interrupted")  # not scored: metrics are computed when a run completes
    del dropped, fn
    gc.collect()
    # resumed and ended without calling its node: the records stored before are scored with the metrics of the
    # decorator of that name in this process; a decorated function no longer alive gives none
    with agentstats.run("k", store=store, resume=True) as run_k:
        pass
    with agentstats.run("d", store=store, resume=True) as run_d:
        pass
    assert _node_metrics(run_k) == {"exact_match": (1, 1.0)}
    assert _node_metrics(run_d) == {}


def test_a_taken_name_is_refused_unless_resumed_or_replaced(tmp_path):
    from agentstats.store import StoreError

    @agentstats.node("app")
    def app(state):
        return "x"

    with agentstats.run("r", store=tmp_path / "s.duckdb"):
        app({"task_id": "a", "trial": 0})
    with pytest.raises(StoreError, match="already exists"):
        agentstats.run("r", store=tmp_path / "s.duckdb")
    with agentstats.run("r", store=tmp_path / "s.duckdb", resume=True) as run:
        assert run.has_trial("a", 0)
        app({"task_id": "a"})  # next free trial number
    keys = [t.key for t in agentstats.load_trials(tmp_path / "s.duckdb")]
    assert keys == [("r", "a", 0), ("r", "a", 1)]
    with agentstats.run("r", store=tmp_path / "s.duckdb", resume=True):
        app({"task_id": "a", "trial": 0, "query": "rerun"})  # a trial stored before the resume is replaced
    trials = {t.key: t for t in agentstats.load_trials(tmp_path / "s.duckdb")}
    assert [i.query for i in trials[("r", "a", 0)].interactions] == ["rerun"] and len(trials) == 2


@pytest.mark.slow  # imports LangGraph (and LangChain core): about 3 s
@pytest.mark.skipif(not __import__("importlib").util.find_spec("langgraph"), reason="langgraph is not installed")
def test_langgraph_graph_is_captured(tmp_path, server):
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph

    client = openai.OpenAI(base_url=server.base_url, api_key="test")

    class State(TypedDict, total=False):
        task_id: str
        query: str
        expected_answer: str
        docs: list
        answer: str

    @agentstats.node("retriever")
    def retrieve(state: State) -> State:
        return {"docs": [f"doc about {state['query']}"]}

    @agentstats.node("answer", metrics=["exact_match"])
    def answer(state: State) -> State:
        r = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": state["query"] + " " + state["docs"][0]}])
        return {"answer": r.choices[0].message.content}

    g = StateGraph(State)
    g.add_node("retriever", retrieve)
    g.add_node("answer", answer)
    g.add_edge(START, "retriever")
    g.add_edge("retriever", "answer")
    g.add_edge("answer", END)
    graph = g.compile()

    @agentstats.node("graph")
    def app(state):
        return graph.invoke(state)

    store = tmp_path / "s.duckdb"
    with agentstats.run("lg", store=store, metrics=["exact_match"]) as run:  # the outcome: the graph's answer
        for _ in range(2):
            out = app({"task_id": "fr", "query": "capital of France?", "expected_answer": "Paris"})
            assert out["answer"] == "Paris" and out["docs"] == ["doc about capital of France?"]  # graph state kept
            app({"task_id": "mars", "query": "capital of Mars?", "expected_answer": "Olympus"})
    assert len(server.requests) == 4

    frame = run.to_frame().sort_values("invocation_id")
    assert list(frame["node"]) == ["graph", "retriever", "answer"] * 4
    # the graph's nodes (run by LangGraph's executor) are children of the decorated call that invoked the graph
    graph_ids = frame.loc[frame["node"] == "graph", "invocation_id"].tolist()
    children = frame[frame["node"] != "graph"]
    assert children["parent_id"].tolist() == [i for i in graph_ids for _ in range(2)]
    assert list(frame.loc[frame["node"] == "graph", "task_id"]) == ["fr", "mars", "fr", "mars"]
    llm = frame[frame["node"] == "answer"]
    assert (llm["input_tokens"] == PROMPT).all() and (llm["output_tokens"] == COMPLETION).all()
    expected_cost = (PROMPT * MINI_IN + COMPLETION * MINI_OUT) / 1e6
    assert llm["cost_usd"].to_numpy() == pytest.approx([expected_cost] * 4, rel=1e-12)
    assert list(llm["exact_match"]) == [1.0, 0.0, 1.0, 0.0]

    trials = agentstats.load_trials(store, run="lg")
    assert [(t.task_id, t.trial, t.outcome()) for t in trials] == [
        ("fr", 0, "success"), ("mars", 0, "failure"), ("fr", 1, "success"), ("mars", 1, "failure")]
    assert trials[0].interactions[0].answer == "Paris" and trials[0].usage.input_tokens == PROMPT
    counts = agentstats.load_counts(store, run="lg").set_index("task_id")
    assert counts.loc["fr", ["n", "c"]].tolist() == [2, 2] and counts.loc["mars", ["n", "c"]].tolist() == [2, 0]


_CAPTURE_WORKER = """
import sys, time
from pathlib import Path
import agentstats

store, marker, mode = sys.argv[1], Path(sys.argv[2]), sys.argv[3]

@agentstats.node("step")
def step(state):
    return state["task_id"] + "!"

@agentstats.node("app")
def app(state):
    return {"answer": step(state)}

with agentstats.run("live", store=store, resume=mode == "resume", flush_interval=0.0,
                    metrics=["exact_match"]) as run:
    for i in range(10):
        if run.has_trial(f"t{i}", 0):
            continue
        app({"task_id": f"t{i}", "trial": 0, "query": "q", "expected_answer": f"t{i}!"})
        if i == 5 and mode == "pause":
            marker.write_text("captured")
            time.sleep(60)
print("done")
"""


@pytest.mark.slow  # starts and kills Python subprocesses that import the package: about 12 s
def test_kill_9_during_a_captured_run_then_resume(tmp_path):
    store, marker = tmp_path / "s.duckdb", tmp_path / "marker"
    script = tmp_path / "worker.py"
    script.write_text(_CAPTURE_WORKER)
    log = tmp_path / "worker.log"
    with open(log, "wb") as fh:
        proc = subprocess.Popen([sys.executable, str(script), str(store), str(marker), "pause"], stdout=fh,
                                stderr=fh)
    deadline = time.monotonic() + 60
    while not marker.exists():
        assert proc.poll() is None, log.read_text()
        assert time.monotonic() < deadline
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    with RunStore(store) as st:  # opening for writing marks the dead run interrupted
        assert st.interrupted == ["live"]
        assert st.run_info("live")["status"] == "interrupted"
        kept = [t.task_id for t in st.trials("live")]
        assert kept == [f"t{i}" for i in range(6)]  # every call finished before the kill was flushed
        assert st.con.execute("SELECT count(*) FROM node_invocations").fetchall() == [(12,)]
    subprocess.run([sys.executable, str(script), str(store), str(marker), "resume"], check=True,
                   capture_output=True)
    con = duckdb.connect(str(store), read_only=True)
    try:
        rows = con.execute("SELECT task_id, trial, outcome FROM trials ORDER BY seq").fetchall()
        n_nodes = con.execute("SELECT count(*) FROM node_invocations").fetchall()[0][0]
        status = con.execute("SELECT status FROM runs").fetchall()
        ids = con.execute("SELECT count(DISTINCT invocation_id), count(*) FROM node_invocations").fetchall()[0]
    finally:
        con.close()
    assert rows == [(f"t{i}", 0, "success") for i in range(10)]  # nothing lost, nothing twice
    assert n_nodes == 20 and ids == (20, 20)
    assert status == [("completed",)]


@pytest.mark.slow  # runs the README example in a fresh interpreter: about 10 s
def test_readme_live_capture_example_runs(tmp_path, server):
    env = {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "test"}
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "demo_capture.py"), "--store",
                           str(tmp_path / "demo.duckdb")], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "exact_match" in done.stdout
    with RunStore(tmp_path / "demo.duckdb", read_only=True) as st:
        assert st.run_info("prompt-v2")["records"]["node_invocations"] > 0
        # the application metric gives the trial its outcome, so `agentstats estimate` reads the run
        counts = st.counts("prompt-v2")
    assert counts[["n", "c"]].to_numpy().tolist() == [[1, 1]]


def test_run_status_after_an_exception_or_ctrl_c_keeps_the_records(tmp_path):
    @agentstats.node("app")
    def app(state):
        return "ok"

    with pytest.raises(RuntimeError, match="boom"), agentstats.run("failed", store=tmp_path / "s.duckdb"):
        app({"task_id": "a"})
        raise RuntimeError("boom")
    with pytest.raises(KeyboardInterrupt), agentstats.run("stopped", store=tmp_path / "s.duckdb"):
        app({"task_id": "a"})
        raise KeyboardInterrupt
    with RunStore(tmp_path / "s.duckdb", read_only=True) as st:
        runs = st.runs().set_index("name")
    assert runs.loc["failed", "status"] == "failed" and runs.loc["stopped", "status"] == "interrupted"
    assert runs.loc["failed", "trials"] == 1 and runs.loc["stopped", "trials"] == 1
    assert current_run() is None
    with pytest.raises(RuntimeError, match="no run is open"):
        agentstats.end_run()
    run = agentstats.start_run("outside", store=tmp_path / "other.duckdb")
    with pytest.raises(RuntimeError, match="inside a decorated node"):
        run.set_outcome(success=True)
    agentstats.end_run(run)


def test_missing_duckdb_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "duckdb", None)
    with pytest.raises(ImportError, match=r"pip install 'agentstats\[store\]'"):
        RunStore(tmp_path / "s.duckdb")


def test_trial_rows_written_without_validation_equal_the_validated_trials(tmp_path, monkeypatch):
    """Capture writes trials without a pydantic round trip: every row must be what the validated Trial gives."""
    import datetime as dt

    from agentstats.capture import records
    from agentstats.store.rows import trial_row

    checked = []
    original = records._TrialRec.row

    def row_checked(self):
        fast = original(self)
        reference = trial_row(self.to_trial())
        assert fast == reference
        checked.append(fast)
        return fast

    monkeypatch.setattr(records._TrialRec, "row", row_checked)

    @agentstats.node("lookup", kind="tool")
    def lookup(city, unit=None):
        return {"city": city, "t": 21.5, "tags": ["a"]}

    @agentstats.node("app")
    def app(state):
        if state.get("tool"):
            lookup(state["query"], unit="C")
        if state.get("fail"):
            raise KeyError("boom")
        if "ok" in state:
            current_run().set_outcome(success=state["ok"])
        if "reward" in state:
            current_run().set_outcome(reward=state["reward"])
        return {"answer": state.get("reply", "Paris")}

    before = time.time()
    with agentstats.run("rows", store=tmp_path / "s.duckdb", flush_interval=0) as run:
        app({"task_id": "plain", "query": "q1", "expected_answer": "Paris"})
        app({"task_id": "tool", "query": "Paris", "tool": True, "ok": 1})
        with pytest.raises(KeyError, match="boom"):
            app({"task_id": "fails", "query": "q", "fail": True, "expected_answer": {"any": [1, 2.5, None]}})
        app({"task_id": "reward", "query": {"structured": ["query"]}, "reward": 1, "reply": None})
        app({"task_id": 7, "trial": 3, "query": "é ✓ \u2028", "ok": False,
             "expected_tool_calls": [{"name": "lookup", "arguments": '{"city": "Paris"}'}]})
        app({"task_id": "  ", "conversation_id": "c9", "message_id": "m1", "query": "hi"})
        app({"conversation_id": "c9", "message_id": "m2", "query": "again", "tool": True})
        with pytest.raises(ValueError, match="success must be true or false"):
            app({"task_id": "bad", "ok": "yes"})
        with pytest.raises(ValueError, match="finite"):
            app({"task_id": "bad2", "reward": float("nan")})
    assert len(checked) >= 9
    trials = {t.task_id: t for t in agentstats.load_trials(tmp_path / "s.duckdb")}
    assert trials["tool"].success is True and trials["reward"].reward == 1.0
    assert trials["7"].trial == 3 and trials["7"].expected_tool_calls[0].arguments == {"city": "Paris"}
    assert [i.id for i in trials["c9"].interactions] == ["m1", "m2"]  # a blank task id is no task id
    assert trials["c9"].interactions[1].tool_calls[0].arguments == {"city": "again", "unit": "C"}
    starts = run.to_frame()["started_at"]
    assert all(before - 1 <= s.timestamp() <= time.time() + 1 for s in starts)
    assert all(s.tzinfo is not None and s.utcoffset() == dt.timedelta(0) for s in starts)


@pytest.mark.parametrize("flush_interval", [0, 3600])
def test_a_closed_trial_continues_under_its_explicit_key(tmp_path, flush_interval):
    """A trial without a conversation is kept only as its row once its call returns; a later call with the same
    explicit task and trial reads it back (pending, or from the store) and continues it, as one trial."""
    import gc

    @agentstats.node("lookup", kind="tool")
    def lookup(city):
        return {"city": city}

    @agentstats.node("app")
    def app(state):
        if state.get("tool"):
            lookup(state["query"])
        if "ok" in state:
            current_run().set_outcome(success=state["ok"])
        return state["query"].upper()

    store = tmp_path / "s.duckdb"
    with agentstats.run("r", store=store, flush_interval=flush_interval) as run:
        app({"task_id": "a", "trial": 0, "query": "paris", "tool": True,
             "expected_tool_calls": [{"name": "lookup", "arguments": {"city": "paris"}}]})
        app({"task_id": "b", "query": "x"})
        gc.collect()
        # nothing per closed trial is left for the cyclic GC: rows of strings and numbers only
        assert not run._keys and all(isinstance(r, tuple) and not gc.is_tracked(r) for r in run._dirty.values())
        app({"task_id": "a", "trial": 0, "query": "rome", "ok": True})
        app({"task_id": "a", "query": "next"})  # no explicit trial: the next free number, a new trial
        app({"query": "no ids"})  # neither task nor conversation: the call's own invocation id names the task
    invocations = run.to_frame().set_index("invocation_id")["node"]
    trials = {t.key: t for t in agentstats.load_trials(store)}
    assert sorted(trials) == [("r", "a", 0), ("r", "a", 1), ("r", "b", 0), ("r", f"call-{invocations.index[-1]}", 0)]
    assert invocations.iloc[-1] == "app" and invocations.index.is_unique
    t = trials[("r", "a", 0)]
    assert [(i.id, i.query, i.answer) for i in t.interactions] == [("0", "paris", "PARIS"), ("1", "rome", "ROME")]
    assert t.interactions[0].tool_calls[0].result == {"city": "paris"} and not t.interactions[1].tool_calls
    assert t.expected_tool_calls[0].arguments == {"city": "paris"} and t.success is True
    # no model call observed: tokens and cost unknown (None), never 0; the latency is the two calls'
    assert t.usage.input_tokens is None and t.usage.output_tokens is None and t.usage.cost_usd is None
    assert t.usage.latency_s > 0
    calls = agentstats.RunStore(store, read_only=True)
    try:
        stored = calls.con.execute("SELECT interaction_idx, kind, name FROM tool_calls WHERE task_id = 'a' "
                                   "ORDER BY kind").fetchall()
        interactions = calls.con.execute("SELECT count(*) FROM interactions WHERE task_id = 'a' AND trial = 0"
                                         ).fetchone()[0]
    finally:
        calls.close()
    assert stored == [(0, "call", "lookup"), (None, "expected", "lookup")] and interactions == 2


def test_results_of_an_ended_run_are_read_when_asked(tmp_path):
    """An ended run reads its tables on first use, also while this process writes another run to the same file."""

    @agentstats.node("app")
    def app(state):
        return "ok"

    store = tmp_path / "s.duckdb"
    with agentstats.run("first", store=store, metrics=["exact_match"]) as first:
        app({"task_id": "t", "query": "q", "expected_answer": "ok"})
    with agentstats.run("second", store=store):  # the file is open for writing in this process
        app({"task_id": "u", "query": "q"})
        summary = first.result()
        assert set(summary.loc[summary["metric"] == "exact_match", "mean"]) == {1.0}
        assert summary.loc[summary["metric"] == "trials", "n"].tolist() == [1]
        assert first.to_frame()["node"].tolist() == ["app"]
    assert set(first.metric_result("exact_match")["value"]) == {1.0}
    assert "metric_results" in first._frames  # read once, kept


def test_a_failed_write_never_changes_the_call_and_loses_nothing(tmp_path, monkeypatch):
    """The store refuses a write: the call still returns its result (a warning says so); the next flush writes all."""
    from agentstats.store import StoreError
    from agentstats.store.db import RunStore as Store

    original = Store.append_rows
    failures = iter([True])

    def flaky(self, table, columns):
        if next(failures, False):
            raise StoreError("disk full (simulated)")
        return original(self, table, columns)

    monkeypatch.setattr(Store, "append_rows", flaky)

    @agentstats.node("app")
    def app(state):
        return f"answer {state['task_id']}"

    with agentstats.run("flaky", store=tmp_path / "s.duckdb", flush_interval=0) as run:
        with pytest.warns(RuntimeWarning, match=r"could not write .*disk full \(simulated\).*kept in memory"):
            assert app({"task_id": "t1", "query": "q"}) == "answer t1"
        assert app({"task_id": "t2", "query": "q"}) == "answer t2"
    assert sorted(t.task_id for t in agentstats.load_trials(tmp_path / "s.duckdb")) == ["t1", "t2"]
    assert len(run.to_frame()) == 2


@pytest.mark.slow  # a fresh interpreter importing the package: about 3 s
def test_a_run_never_ended_is_written_and_marked_interrupted_at_exit(tmp_path):
    """A notebook or script that forgets end_run(): at exit the buffered records are written, not dropped."""
    import subprocess
    import sys

    store = tmp_path / "s.duckdb"
    code = f"""
import agentstats
@agentstats.node("app")
def app(state):
    return state["query"].upper()
agentstats.start_run("forgot", store={str(store)!r}, flush_interval=3600)
for i in range(3):
    app({{"task_id": f"t{{i}}", "query": "q", "expected_answer": "Q"}})
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "'forgot' was never ended" in done.stderr and "resume=True" in done.stderr
    with agentstats.RunStore(store, read_only=True) as st:
        runs = st.runs().set_index("name")
        assert runs.loc["forgot", "status"] == "interrupted"
    assert sorted(t.task_id for t in agentstats.load_trials(store, run="forgot")) == ["t0", "t1", "t2"]
    with agentstats.run("forgot", store=store, resume=True, metrics=["exact_match"]) as run:
        pass
    summary = run.result()
    assert summary.loc[summary["metric"] == "exact_match", "n"].tolist() == [3, 3]  # messages and conversations


def test_a_scripted_run_writes_the_same_records_as_before(tmp_path):
    """Every row a scripted run writes (trials, interactions, tool calls, node invocations, metrics) is the row the
    capture code wrote before its per-call path was made faster (times and latencies left out): nested nodes, a
    tool node, model calls, an error, outcomes, conversations, a continued trial, async, an object state."""
    from capture_script import scripted_rows

    expected = json.loads((REPO / "tests" / "data" / "capture_script_rows.json").read_text())
    got = json.loads(json.dumps(scripted_rows(tmp_path / "script.duckdb"), sort_keys=True, ensure_ascii=False))
    for table, rows in expected.items():
        assert got[table] == rows, table


def test_judged_and_tool_metrics_write_the_same_rows_as_before(tmp_path):
    """The judge's verdicts (node and application level, one conversation of two messages), the tool-call scorer and
    the matchers, computed through the metric catalogue: the trials, metric results and judge verdicts the capture
    code wrote before (commit c28586a), row for row."""
    from capture_script import judged_rows

    expected = json.loads((REPO / "tests" / "data" / "capture_judged_rows.json").read_text())
    got = json.loads(json.dumps(judged_rows(tmp_path / "judged.duckdb"), sort_keys=True, ensure_ascii=False))
    assert [len(expected[t]) for t in ("trials", "metric_results", "judge_verdicts")] == [5, 44, 10]
    for table, rows in expected.items():
        assert got[table] == rows, table


def test_catalogue_metrics_run_on_captured_nodes(tmp_path):
    """Any catalogue metric on a node: its inputs' fields are the metric's roles, its own latency its usage."""
    from agentstats.metrics import get_metric

    mail = get_metric("regex_detection", params={"patterns": [r"\w@\w"]}, name="mail")  # a safety metric
    @agentstats.node("answer", metrics=["faithfulness", mail, "answer_similarity", get_metric("latency", level="node"),
                                        function_metric(lambda a, e: None, "unscored")])
    def answer(state):
        return state["reply"]

    with agentstats.run("catalogue", store=tmp_path / "s.duckdb", metrics=[lambda a, e: a == e]) as run:
        answer({"task_id": "t0", "query": "capital of France?", "expected_answer": "Paris", "reply": "Paris is big",
                "context": ["Paris is the capital of France."]})
        answer({"task_id": "t1", "query": "mail?", "reply": "Write to jane.roe@example.org"})
    values = {m: run.metric_result(m, node="answer")["value"].tolist()
              for m in ("faithfulness", "mail", "answer_similarity", "latency")}
    # K-precision: "paris is big" has 2 of 3 tokens in the context; t1 has no context: no row
    assert values["faithfulness"] == [pytest.approx(2 / 3)]
    assert values["mail"] == [0.0, 1.0]  # an e-mail address in t1's answer
    # SQuAD token F1 of "Paris is big" against "Paris": P = 1/3, R = 1, F1 = 1/2; t1 has no reference
    assert values["answer_similarity"] == [pytest.approx(0.5)]
    assert values["latency"] == run.to_frame()["latency_s"].tolist()
    unscored = run.metric_result("unscored", node="answer")  # a function's None: a row without a value
    assert len(unscored) == 1 and unscored["value"].isna().all() and unscored["detail"].tolist() == ["{}"]
    # the application's function (named after it): per message, and per conversation
    app = run.metric_result("<lambda>")
    assert app["level"].tolist() == ["message", "conversation"] and app["value"].tolist() == [0.0, 0.0]
    with pytest.raises(ValueError, match="unknown metric 'exact_mach'; did you mean 'exact_match'"):
        agentstats.node("x", metrics=["exact_mach"])

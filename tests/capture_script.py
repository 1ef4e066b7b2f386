"""Scripted live-capture runs and the store rows they write, with times and latencies left out.

``tests/capture/test_capture.py::test_a_scripted_run_writes_the_same_records_as_before`` compares :func:`scripted_rows`
with ``tests/data/capture_script_rows.json``, written by the capture code of 2026-12-02 before its per-call path was
made faster (``python tests/capture_script.py OUT.json`` writes the file again). ``test_judged_and_tool_metrics_
write_the_same_rows_as_before`` compares :func:`judged_rows` with ``tests/data/capture_judged_rows.json``, written by
the capture code of commit c28586a, before capture computed its metrics through the metric catalogue
(``python tests/capture_script.py --judged OUT.json``).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import duckdb

import agentstats

#: Columns that hold clock readings (different at every run), per table; a trial's ``usage.latency_s`` likewise.
VOLATILE = {"node_invocations": {"started_at", "latency_s"}, "trials": {"latency_s", "seq"}}
TABLES = ("trials", "interactions", "tool_calls", "node_invocations", "metric_results")


def _response(model: str, prompt: int, completion: int, content: str, calls: list[Any] | None = None) -> Any:
    """An object shaped like an OpenAI chat completion (what capture reads of one)."""
    message = SimpleNamespace(content=content, tool_calls=calls)
    return SimpleNamespace(model=model, usage=SimpleNamespace(prompt_tokens=prompt, completion_tokens=completion),
                           choices=[SimpleNamespace(message=message)])


def _script(store: Path) -> None:
    from agentstats.capture import openai_patch

    @agentstats.node("retriever")
    def retrieve(state, k=2, *extra):
        return [f"doc {i} about {state['query']}" for i in range(k)]

    @agentstats.node("lookup", kind="tool")
    def lookup(city, unit=None):
        return {"city": city, "t": 21.5}

    @agentstats.node("llm", metrics=["exact_match"])
    def llm(state, docs):
        fn = SimpleNamespace(name="lookup", arguments='{"city": "Paris"}')
        openai_patch._observe(_response("gpt-4o-mini", 120, 30, "Paris", [SimpleNamespace(function=fn, id="c1")]))
        if state.get("second_model"):
            openai_patch._observe(_response("no-such-model", 10, 5, "x"))
        return "Paris" if "France" in str(state.get("query")) else "I do not know"

    @agentstats.node("app")
    def app(state):
        docs = retrieve(state, 2, "extra-arg")
        if state.get("tool"):
            lookup(city="Paris", unit="C")
        if state.get("fail"):
            raise LookupError("no route")
        if "ok" in state:
            agentstats.current_run().set_outcome(success=state["ok"])
        if "reward" in state:
            agentstats.current_run().set_outcome(reward=state["reward"])
        answer = llm(state, docs)
        state["mutated"] = True  # after the call: the recorded inputs are those the node was given
        return {"answer": answer}

    @agentstats.node
    async def aapp(state):
        await asyncio.sleep(0)
        return state["query"].upper()

    class State:
        def __init__(self, **kw: Any):
            self.__dict__.update(kw)

        def __repr__(self) -> str:  # recorded as the input (no address in it)
            return f"State({self.__dict__})"

    @agentstats.node("obj")
    def obj_app(state):
        return {"answer": state.query}

    with agentstats.run("script", store=store, metrics=["exact_match"], flush_interval=0) as run:
        app({"task_id": "france", "query": "capital of France?", "expected_answer": "Paris"})
        app({"task_id": "france", "query": "capital of France?", "expected_answer": "Paris", "tool": True})
        app({"task_id": "mars", "query": "capital of Mars?", "expected_answer": "Olympus", "second_model": True})
        try:
            app({"task_id": "broken", "query": "q", "expected_answer": {"any": [1, 2.5, None]}, "fail": True})
        except LookupError:
            pass
        app({"task_id": "scored", "query": "capital of France?", "ok": False, "reward": 0.25})
        app({"task_id": 7, "trial": 3, "query": {"structured": ["q"]},
             "expected_tool_calls": [{"name": "lookup", "arguments": '{"city": "Paris"}'}]})
        app({"task_id": 7, "trial": 3, "query": "again, same key"})  # continues the closed trial
        app({"conversation_id": "c1", "message_id": "m1", "query": "hello France", "expected_answer": "Paris"})
        app({"conversation_id": "c1", "message_id": "m2", "query": "and again", "tool": True})
        run.end_conversation("c1")
        app({"conversation_id": "c1", "query": "new attempt"})
        app({"task_id": "  ", "query": "blank task id"})
        with agentstats.trace_node("block", inputs={"task_id": "traced", "query": "traced q"}) as span:
            span.set_output({"answer": "traced a"})
        asyncio.run(aapp({"task_id": "async", "query": "a"}))
        obj_app(State(task_id="object", query="from attributes", expected_answer="from attributes"))
        app({"task_id": "iter", "query": "it", "stream": iter([1, 2])})


def _normal(table: str, row: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in row.items() if k not in VOLATILE.get(table, set())}
    if table == "trials":
        record = json.loads(out["record"])
        record["usage"].pop("latency_s")
        out["record"] = record
    return {k: (str(v) if v is not None and not isinstance(v, str | int | float | bool | dict) else v)
            for k, v in out.items()}


def _judged_script(store: Path) -> None:
    """Node and application metrics: the judge, the tool-call scorer, matchers; conversations, a missing reference."""

    @agentstats.node("search", kind="tool")
    def search(query):
        return ["result"]

    @agentstats.node("answer", metrics=["answer_correctness", "exact_match", "token_f1"])
    def answer(state):
        q = state["query"]
        return {"answer": "Paris" if "France" in q else ("I do not know" if "Mars" in q else "Lyon")}

    @agentstats.node("app")
    def app(state):
        search(query=state["query"])
        return answer(state)

    metrics = ["answer_correctness", "tool_calls", "exact_match", "contains_match"]
    with agentstats.run("judged", store=store, metrics=metrics, judge="deterministic", flush_interval=0):
        app({"task_id": "fr", "query": "capital of France", "expected_answer": "Paris",
             "expected_tool_calls": [{"name": "search", "arguments": {"query": "capital of France"}}]})
        app({"task_id": "de", "query": "capital of Germany", "expected_answer": "Berlin",
             "expected_tool_calls": [{"name": "search", "arguments": {"query": "Germany"}}]})
        app({"task_id": "mars", "query": "capital of Mars", "expected_answer": "7"})
        app({"conversation_id": "c", "message_id": "1", "query": "capital of France", "expected_answer": "Paris"})
        app({"conversation_id": "c", "message_id": "2", "query": "capital of Germany",
             "expected_answer": ["Berlin", "Lyon"]})
        app({"task_id": "noref", "query": "capital of France"})


def scripted_rows(store: Path) -> dict[str, list[dict[str, Any]]]:
    """Run the script into a new store file; return every table's rows of the run, times and latencies left out."""
    _script(store)
    return _rows(store, TABLES)


def judged_rows(store: Path) -> dict[str, list[dict[str, Any]]]:
    """Run the judged script into a new store file; return its trials, metric results and judge verdicts."""
    _judged_script(store)
    return _rows(store, ("trials", "metric_results", "judge_verdicts"))


def _rows(store: Path, tables: tuple[str, ...]) -> dict[str, list[dict[str, Any]]]:
    con = duckdb.connect(str(store), read_only=True)
    try:
        out = {}
        for table in tables:
            cur = con.execute(f"SELECT * FROM {table}")
            cols = [d[0] for d in cur.description]
            rows = [_normal(table, dict(zip(cols, r, strict=True))) for r in cur.fetchall()]
            out[table] = sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))
        return out
    finally:
        con.close()


if __name__ == "__main__":
    import tempfile

    judged = sys.argv[1] == "--judged"
    with tempfile.TemporaryDirectory() as d:
        rows = (judged_rows if judged else scripted_rows)(Path(d) / "script.duckdb")
    Path(sys.argv[-1]).write_text(json.dumps(rows, indent=1, sort_keys=True, ensure_ascii=False) + "\n")

"""A scripted live-capture run and the store rows it writes, with times and latencies left out.

``tests/capture/test_capture.py::test_a_scripted_run_writes_the_same_records_as_before`` compares :func:`scripted_rows`
with
``tests/data/capture_script_rows.json``, written by the capture code of 2026-12-02 before its per-call path was
made faster (``python tests/capture_script.py OUT.json`` writes the file again).
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
from agentstats.capture import core

#: Columns that hold clock readings (different at every run), per table; a trial's ``usage.latency_s`` likewise.
VOLATILE = {"node_invocations": {"started_at", "latency_s"}, "trials": {"latency_s", "seq"}}
TABLES = ("trials", "interactions", "tool_calls", "node_invocations", "metric_results")


def _response(model: str, prompt: int, completion: int, content: str, calls: list[Any] | None = None) -> Any:
    """An object shaped like an OpenAI chat completion (what capture reads of one)."""
    message = SimpleNamespace(content=content, tool_calls=calls)
    return SimpleNamespace(model=model, usage=SimpleNamespace(prompt_tokens=prompt, completion_tokens=completion),
                           choices=[SimpleNamespace(message=message)])


def _script(store: Path) -> None:
    @agentstats.node("retriever")
    def retrieve(state, k=2, *extra):
        return [f"doc {i} about {state['query']}" for i in range(k)]

    @agentstats.node("lookup", kind="tool")
    def lookup(city, unit=None):
        return {"city": city, "t": 21.5}

    @agentstats.node("llm", metrics=["exact_match"])
    def llm(state, docs):
        fn = SimpleNamespace(name="lookup", arguments='{"city": "Paris"}')
        core._observe(_response("gpt-4o-mini", 120, 30, "Paris", [SimpleNamespace(function=fn, id="c1")]))
        if state.get("second_model"):
            core._observe(_response("no-such-model", 10, 5, "x"))
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


def scripted_rows(store: Path) -> dict[str, list[dict[str, Any]]]:
    """Run the script into a new store file; return every table's rows of the run, times and latencies left out."""
    _script(store)
    con = duckdb.connect(str(store), read_only=True)
    try:
        out = {}
        for table in TABLES:
            cur = con.execute(f"SELECT * FROM {table}")
            cols = [d[0] for d in cur.description]
            rows = [_normal(table, dict(zip(cols, r, strict=True))) for r in cur.fetchall()]
            out[table] = sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))
        return out
    finally:
        con.close()


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        rows = scripted_rows(Path(d) / "script.duckdb")
    Path(sys.argv[1]).write_text(json.dumps(rows, indent=1, sort_keys=True, ensure_ascii=False) + "\n")

"""The built-in chat agent with tools: specs sent as OpenAI ``tools``, the model's tool calls recorded and scored.

The loopback OpenAI-compatible server plays the agent model: for ``Task i.`` it answers with the calls scripted in
``CALLS[i]`` (a correct call, a wrong argument, arguments that are not JSON, no call, ...). No judge: the loop scores
the tool-call metrics only; the optimizer is a callable.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from typing import Any

import pytest
from judge_server import Reply, ScriptedOpenAIServer, user_text

from agentstats.llm.budget import Budget
from agentstats.llm.cache import JudgeCache, cache_key
from agentstats.llm.client import LLMClient
from agentstats.optimize import LoopError, optimize
from agentstats.optimize.config import AgentSettings
from agentstats.scoring.schema_check import openai_tools

MODEL = "test-model"
PROMPT = "You are a booking assistant. Call the tools you need."
#: Plain form.
WEATHER = {"name": "get_weather", "description": "Weather in a city.",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
#: OpenAI function form.
BOOK = {"type": "function", "function": {"name": "book", "parameters": {
    "type": "object", "properties": {"day": {"type": "string"}}, "required": ["day"]}}}
WEATHER_WIRE = {"type": "function", "function": WEATHER}
BOOK_WIRE = {"type": "function", "function": BOOK["function"]}


def w(city: Any) -> dict[str, Any]:
    return {"name": "get_weather", "arguments": {"city": city}}


#: Per example: (expected calls, the example's own tools or None, the model's reply, the scores it must get).
CASES: list[tuple[Any, Any, Reply, dict[str, float]]] = [
    # a correct call
    ([w("Paris")], None, Reply.tool_calls([("get_weather", {"city": "Paris"})]),
     {"tool_calls_correct": 1.0, "tool_selection": 1.0, "tool_parameters": 1.0, "tool_calls_valid": 1.0}),
    # a wrong argument value: valid against the schema, not correct
    ([w("Paris")], None, Reply.tool_calls([("get_weather", {"city": "Rome"})]),
     {"tool_calls_correct": 0.0, "tool_selection": 1.0, "tool_parameters": 0.0, "tool_calls_valid": 1.0}),
    # arguments that are not JSON: a malformed call, neither correct nor valid (and no crash)
    ([w("Paris")], None, Reply.tool_calls([("get_weather", '{"city": "Par')]),
     {"tool_calls_correct": 0.0, "tool_selection": 1.0, "tool_parameters": 0.0, "tool_calls_valid": 0.0}),
    # text only, and no call was expected
    ([], None, Reply.text("No tool is needed for that."),
     {"tool_calls_correct": 1.0, "tool_selection": 1.0, "tool_calls_valid": 1.0}),
    # the example's own tools replace the config's: only `book` is offered; text beside the call
    ([{"name": "book", "arguments": {"day": "mon"}}], [BOOK],
     Reply.tool_calls([("book", {"day": "mon"})], content="Booking Monday."),
     {"tool_calls_correct": 1.0, "tool_selection": 1.0, "tool_parameters": 1.0, "tool_calls_valid": 1.0}),
    # a wrong type
    ([w("Oslo")], None, Reply.tool_calls([("get_weather", {"city": 7})]),
     {"tool_calls_correct": 0.0, "tool_selection": 1.0, "tool_parameters": 0.0, "tool_calls_valid": 0.0}),
]


def responder(body: dict[str, Any]) -> Reply:
    tools = body.get("tools") or []
    if tools and tools[0]["function"]["name"] == "Revision":  # the built-in optimizer
        return Reply.tool_call({"revised_prompt": PROMPT + "\nBe precise.", "rationale": "scripted"})
    i = int(re.search(r"Task (\d+)\.", user_text(body)).group(1))
    return CASES[i][2]


def revise(prompt, result):
    return prompt + "\nBe precise."


def world(tmp, server) -> dict[str, Any]:
    tmp.mkdir(parents=True, exist_ok=True)
    ev, base = [], []
    for i, (expected, tools, _, _) in enumerate(CASES):
        row: dict[str, Any] = {"id": f"t{i}", "input": f"Task {i}.", "expected_tool_calls": expected,
                               "risk_level": "low", "tags": ["tools"]}
        if tools is not None:
            row["tools"] = tools
        ev.append(row)
        base.append({"id": f"t{i}", "risk_level": "low", "scores": {"tool_calls_correct": 1.0}})
    (tmp / "eval.jsonl").write_text("".join(json.dumps(x) + "\n" for x in ev))
    (tmp / "base.jsonl").write_text("".join(json.dumps(x) + "\n" for x in base))
    return {"eval_set": str(tmp / "eval.jsonl"), "baseline": str(tmp / "base.jsonl"),
            "gate": {"max_iterations": 1, "n_draws": 1000},
            "agent": {"model": MODEL, "base_url": server.base_url, "prompt": PROMPT, "max_tokens": 64,
                      "backoff_base_s": 0.01, "backoff_max_s": 0.05},
            "evaluate": {"tool_calls": {"components": True, "tools": [WEATHER, BOOK]}},
            "prices": {MODEL: [1.0, 2.0]}}


def scores_of(run) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (run / "iter-001" / "scores.jsonl").read_text().splitlines()]


def test_builtin_agent_sends_tools_and_its_calls_are_scored(tmp_path):
    with ScriptedOpenAIServer(responder=responder) as srv:
        cfg = world(tmp_path, srv)
        result = optimize(config=cfg, optimizer=revise, run_dir=tmp_path / "run")
        bodies = {int(re.search(r"Task (\d+)\.", user_text(b)).group(1)): b for b in srv.requests}
    assert len(bodies) == len(CASES) == result.n_requests
    # the request carried the specs, in OpenAI's form, plain and OpenAI-form specs alike; the model chooses
    for i, body in bodies.items():
        want = [BOOK_WIRE] if CASES[i][1] is not None else [WEATHER_WIRE, BOOK_WIRE]
        assert body["tools"] == want, i
        assert "tool_choice" not in body
        assert body["messages"][0] == {"role": "system", "content": PROMPT}
    # every call scored as scripted
    for rec, (_, _, _, want) in zip(scores_of(tmp_path / "run"), CASES, strict=True):
        assert rec["scores"] == pytest.approx(want), rec["id"]
    # the calls are recorded in the outputs: decoded arguments, the malformed string kept as sent
    lines = (tmp_path / "run" / "iter-001" / "outputs.jsonl").read_text().splitlines()
    outs = {o["id"]: o for o in map(json.loads, lines)}
    assert outs["t0"]["tool_calls"] == [{"id": "call_0", "name": "get_weather", "arguments": {"city": "Paris"},
                                         "arguments_raw": '{"city": "Paris"}'}]
    assert outs["t0"]["response"] == ""  # only tools called: no text
    bad = outs["t2"]["tool_calls"][0]
    assert bad["arguments_raw"] == '{"city": "Par' and "not valid JSON" in bad["parse_error"]
    assert outs["t3"]["tool_calls"] == [] and outs["t3"]["response"] == "No tool is needed for that."
    assert outs["t4"]["response"] == "Booking Monday."
    means = {m["metric"]: m for m in result.iterations[0]["metrics"]}
    assert means["tool_calls_correct"]["n"] == len(CASES)


def test_the_builtin_optimizer_sees_the_calls_made(tmp_path):
    with ScriptedOpenAIServer(responder=responder) as srv:
        cfg = world(tmp_path, srv)
        cfg["gate"]["max_iterations"] = 2
        cfg["optimizer"] = {"model": MODEL, "base_url": srv.base_url, "examples_shown": len(CASES)}
        optimize(config=cfg, run_dir=tmp_path / "run")
        (revision,) = [b for b in srv.requests if (b.get("tools") or [{}])[0].get("function", {}).get("name")
                       == "Revision"]
    text = user_text(revision)
    assert 'TOOL CALLS: get_weather({"city": "Rome"})' in text
    assert 'TOOL CALLS: get_weather({"city": "Par)' in text  # the malformed string as the model sent it
    assert "TOOL CALLS: none" in text  # text only


def test_resume_replays_the_tool_calls_from_the_cache(tmp_path):
    with ScriptedOpenAIServer(responder=responder) as srv:
        cfg = world(tmp_path, srv)
        run = tmp_path / "run"
        optimize(config=cfg, optimizer=revise, run_dir=run)
        first = scores_of(run)
        # a run killed after its calls completed, before any step was logged: only the start line is left
        log = run / "loop.jsonl"
        log.write_text(log.read_text().splitlines(keepends=True)[0])
        shutil.rmtree(run / "iter-001")
        n_before = srv.n_requests
        again = optimize(config=cfg, optimizer=revise, run_dir=run, resume=True)
        assert srv.n_requests == n_before  # every generation answered from the cache, tool calls included
    # the run's requests are those the killed invocation sent (none new), though no step logged them
    assert again.n_requests == n_before and again.n_cached == len(CASES)
    assert scores_of(run) == first
    # other specs are other settings: the run cannot be resumed with them
    other = {**cfg, "evaluate": {"tool_calls": {"components": True, "tools": [WEATHER]}}}
    with pytest.raises(LoopError, match="other settings"):
        optimize(config=other, optimizer=revise, run_dir=run, resume=True)


def test_tools_are_part_of_the_cache_key(tmp_path):
    ep = AgentSettings(model=MODEL, prompt=PROMPT, max_tokens=64, backoff_base_s=0.01, backoff_max_s=0.05)
    messages = [{"role": "system", "content": PROMPT}, {"role": "user", "content": "Task 0."}]
    one, both = openai_tools([WEATHER]), openai_tools([WEATHER, BOOK])
    with ScriptedOpenAIServer(responder=responder) as srv:
        ep = ep.model_copy(update={"base_url": srv.base_url})
        cache = JudgeCache(tmp_path / "cache.sqlite3")
        caller = LLMClient(cache, Budget(None), {MODEL: (1.0, 2.0)})

        async def calls():
            sem = asyncio.Semaphore(2)
            try:
                return [await caller.chat(ep, "agent", messages, temperature=0.0, sem=sem, tools=t)
                        for t in (one, one, both, None)]
            finally:
                await caller.aclose()

        try:
            r1, r2, r3, r4 = asyncio.run(calls())
        finally:
            cache.close()
        assert [b.get("tools") for b in srv.requests] == [one, both, None]  # the repeat was not sent
    assert r2.cached and r2.key == r1.key and r2.tool_calls == r1.tool_calls
    assert r1.tool_calls == [{"id": "call_0", "name": "get_weather", "arguments": '{"city": "Paris"}'}]
    assert len({r1.key, r3.key, r4.key}) == 3
    assert r4.tool_calls is None  # sent without tools: nothing recorded
    # a call without tools keeps the key it had before tools could be sent
    assert r4.key == cache_key(MODEL, "agent", {"messages": messages}, temperature=0.0, max_tokens=64, schema=None)
    with pytest.raises(ValueError, match="tools are for plain calls"):
        asyncio.run(caller.chat(ep, "x", messages, temperature=0.0, sem=asyncio.Semaphore(1), tools=one,
                                response_model=AgentSettings))


def test_openai_tools_reads_both_spec_forms():
    bfcl = {"name": "calc", "description": "", "parameters": {"type": "dict", "properties": {
        "x": {"type": "float"}}, "required": ["x"]}}
    strict = {"type": "function", "function": {"name": "f", "strict": True, "parameters": {
        "type": "object", "properties": {}, "additionalProperties": False}}}
    got = openai_tools([WEATHER, BOOK, bfcl, strict, {"name": "noargs"}])
    assert got[0] == WEATHER_WIRE and got[1] == BOOK_WIRE
    # non-standard type names mapped; nothing added about extra arguments; an empty description left out
    assert got[2] == {"type": "function", "function": {"name": "calc", "parameters": {
        "type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}}}
    assert got[3]["function"]["strict"] is True
    assert got[4]["function"]["parameters"] == {"type": "object", "properties": {}}
    with pytest.raises(ValueError, match="duplicate"):
        openai_tools([WEATHER, WEATHER_WIRE])


def test_repeated_tool_names_of_an_example_are_an_eval_set_error(tmp_path):
    from agentstats.records.problems import LoadError

    with ScriptedOpenAIServer(responder=responder) as srv:
        cfg = world(tmp_path, srv)
        rows = [json.loads(x) for x in (tmp_path / "eval.jsonl").read_text().splitlines()]
        rows[1]["tools"] = [WEATHER, WEATHER_WIRE]
        (tmp_path / "eval.jsonl").write_text("".join(json.dumps(x) + "\n" for x in rows))
        with pytest.raises(LoadError, match=r"line 2.*tools\[1\]\.name.*'get_weather' repeats tools\[0\]"):
            optimize(config=cfg, optimizer=revise, run_dir=tmp_path / "run")
        assert srv.n_requests == 0

"""The one LLM client against the loopback server (tests/judge_server.py): transport, retries, budget, cache, batch.

Expected values come from the server's script (its fixed usage of 120 prompt and 30 completion tokens per reply), the
price table given here and the documented rules (backoff, cost estimate), never from the client.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import math
import random
import time
from types import SimpleNamespace

import pytest
from judge_server import Reply, ScriptedOpenAIServer, hashed_embedding, user_text
from pydantic import BaseModel, Field, ValidationError

from agentstats.llm.batch import Breaker, PromptCall
from agentstats.llm.budget import Budget, BudgetExhausted, WallTimeExceeded
from agentstats.llm.cache import JudgeCache
from agentstats.llm.client import CallError, LLMClient
from agentstats.llm.endpoint import LOOPBACK_KEY, Endpoint, LLMConfigError
from agentstats.llm.pricing import cost_usd
from agentstats.llm.prompts import PromptTemplate
from agentstats.llm.transport import Exchange, retry_after_s

MODEL = "test-model"
PRICES = {MODEL: (1.0, 2.0)}  # USD per 1M tokens
#: Cost of one answered request of the test server: 120 prompt and 30 completion tokens at $1 / $2 per 1M tokens.
PER_REQUEST = (120 * 1.0 + 30 * 2.0) / 1e6


class Answer(BaseModel):
    score: float = Field(ge=0.0, le=1.0)
    reasoning: str = Field(min_length=1)


ASK = PromptTemplate("ask", "1", "You grade.", "QUESTION:\n{q}\n")


@pytest.fixture(autouse=True)
def _no_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


@pytest.fixture()
def server():
    with ScriptedOpenAIServer() as srv:
        yield srv


def endpoint(server, **kw):
    opts = dict(model=MODEL, base_url=server.base_url, retry_attempts=3, timeout=5.0, backoff_base_s=0.001,
                backoff_max_s=0.05, max_tokens=64)
    return Endpoint(**{**opts, **kw})


def run(coro_factory, client):
    async def main():
        try:
            return await coro_factory()
        finally:
            await client.aclose()

    return asyncio.run(main())


MSGS = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Capital of France?"}]


# -- transport: one call ------------------------------------------------------------------------------------
def test_plain_call_text_usage_cost_and_request_count(server):
    server.script([Reply.text("Paris.")])
    client = LLMClient(prices=PRICES)
    seen = []
    client.on_change = lambda: seen.append(client.n_requests)
    ex = run(lambda: client.send(endpoint(server), MSGS, temperature=0.0), client)
    assert ex.ok and ex.text == "Paris." and ex.error is None and ex.error_kind is None
    assert (ex.prompt_tokens, ex.completion_tokens, ex.n_requests, ex.attempts) == (120, 30, 1, 1)
    assert ex.cost_usd == pytest.approx(PER_REQUEST) and ex.spent_usd == pytest.approx(PER_REQUEST)
    assert seen == [1]  # told as the request was sent
    body = server.requests[0]
    assert body["max_tokens"] == 64 and body["temperature"] == 0 and "tools" not in body
    assert server.authorizations[0] == f"Bearer {LOOPBACK_KEY}"


def test_plain_call_with_tools_returns_the_raw_calls(server):
    server.script([Reply.tool_calls([("get_weather", {"city": "Paris"}), ("f", "not json")])])
    spec = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    client = LLMClient()
    ex = run(lambda: client.send(endpoint(server), MSGS, temperature=0.0, tools=spec), client)
    assert server.requests[0]["tools"] == spec
    assert ex.tool_calls == [{"id": "call_0", "name": "get_weather", "arguments": '{"city": "Paris"}'},
                             {"id": "call_1", "name": "f", "arguments": "not json"}]


def test_structured_call_reasks_invalid_output_inside_one_attempt(server):
    server.script([Reply.tool_call({"score": 1.7, "reasoning": "too high"}), Reply.verdict(0.8, "ok")])
    client = LLMClient(prices=PRICES)
    ex = run(lambda: client.send(endpoint(server), MSGS, temperature=0.0, response_model=Answer, max_retries=1),
             client)
    assert ex.ok and ex.parsed.model_dump() == {"score": 0.8, "reasoning": "ok"}
    assert (ex.n_requests, ex.attempts) == (2, 1) and (ex.prompt_tokens, ex.completion_tokens) == (240, 60)
    assert server.requests[0]["tools"][0]["function"]["name"] == "Answer"


def test_failed_call_is_returned_with_what_it_spent(server):
    server.script([Reply.tool_call({"score": 2, "reasoning": "x"})] * 2)
    client = LLMClient(prices=PRICES)
    ex = run(lambda: client.send(endpoint(server), MSGS, temperature=0.0, response_model=Answer, max_retries=1),
             client)
    assert not ex.ok and ex.error_kind == "invalid_output" and ex.n_requests == 2
    assert ex.spent_usd == pytest.approx(2 * PER_REQUEST)  # both invalid completions were paid for
    assert ex.error.startswith("InstructorRetryException")


def test_retries_follow_retry_after_and_stop_on_client_errors(server):
    server.script([Reply.http_error(429, retry_after_ms=30), Reply.http_error(500), Reply.text("ok")])
    client = LLMClient()
    ex = run(lambda: client.send(endpoint(server, backoff_base_s=0.0), MSGS, temperature=0.0), client)
    assert ex.ok and ex.attempts == 3 and ex.n_requests == 3
    assert ex.retry_waits_s == [0.03, 0.0] and client.retry_waits == [0.03, 0.0]  # Retry-After, then base 0
    server.script([Reply.http_error(400)])
    ex = run(lambda: client.send(endpoint(server), MSGS, temperature=0.0), client)
    assert ex.error_kind == "http_400" and ex.attempts == 1 and ex.retry_waits_s == []


def test_backoff_is_full_jitter_on_a_doubling_cap(server):
    server.responder = lambda body: Reply.http_error(503)
    client = LLMClient(jitter_seed=11)
    ep = endpoint(server, retry_attempts=5, backoff_base_s=0.004, backoff_max_s=0.01)
    ex = run(lambda: client.send(ep, MSGS, temperature=0.0), client)
    rng = random.Random(11)  # the documented rule: uniform on [0, min(max, base * 2**(attempt-1))]
    expected = [rng.uniform(0.0, min(0.01, 0.004 * 2 ** (a - 1))) for a in (1, 2, 3, 4)]
    assert ex.error_kind == "server_error" and ex.attempts == 5
    assert ex.retry_waits_s == pytest.approx(expected)


def test_keep_retrying_false_stops_after_the_attempt(server):
    server.responder = lambda body: Reply.http_error(500)
    client = LLMClient()
    ex = run(lambda: client.send(endpoint(server), MSGS, temperature=0.0, keep_retrying=lambda: False), client)
    assert ex.error_kind == "server_error" and ex.attempts == 1 and server.n_requests == 1


def test_embeddings_in_input_order_with_a_retry(server):
    server.embedding_errors.append(503)
    client = LLMClient()
    ex = run(lambda: client.embed(endpoint(server), ["blue sky", "red sea"]), client)
    assert ex.ok and ex.attempts == 2 and ex.n_requests == 2
    assert ex.vectors == [pytest.approx(hashed_embedding("blue sky")), pytest.approx(hashed_embedding("red sea"))]
    assert ex.prompt_tokens == 4  # the server counts words


def test_exchange_token_rules():
    assert Exchange().prompt_tokens is None  # nothing sent
    e = Exchange(n_requests=1, usage_missing=True)
    assert (e.prompt_tokens, e.completion_tokens) == (None, None)  # no reply reported usage
    e = Exchange(n_requests=2, tokens_in=10, tokens_out=3, usage_missing=True)
    assert (e.prompt_tokens, e.completion_tokens) == (10, 3)  # some did
    e.price("m", {"m": (1.0, 2.0)})
    assert e.cost_usd == pytest.approx((10 + 6) / 1e6)
    assert Exchange(not_sent="stopped").error == "not sent: stopped"


def test_retry_after_header_forms():
    def exc(**headers):
        return SimpleNamespace(response=SimpleNamespace(headers=headers))

    assert retry_after_s(exc(**{"retry-after": "7"})) == 7.0
    assert retry_after_s(exc(**{"retry-after-ms": "250", "retry-after": "7"})) == 0.25
    when = email.utils.formatdate(time.time() + 120, usegmt=True)
    assert 100 < retry_after_s(exc(**{"retry-after": when})) <= 120
    assert retry_after_s(exc()) is None
    assert retry_after_s(ValueError("no response")) is None


def test_cost_table():
    assert cost_usd("gpt-4o-mini", 1_000_000, 1_000_000) == pytest.approx(0.15 + 0.60)
    assert cost_usd("gpt-4o-mini-2024-07-18", 1000, 0) == pytest.approx(0.15e-3)  # dated name → family price
    assert cost_usd("gpt-4o-2024-08-06", 0, 1000) == pytest.approx(10.0e-3)  # not gpt-4o-mini's
    assert cost_usd("my-local-llama", 1000, 1000) is None  # unknown → None, never 0
    assert cost_usd("gpt-4o", None, 10) is None
    assert cost_usd("m", 1000, 1000, prices={"m": (1.0, 2.0)}) == pytest.approx(3e-3)


# -- keys and endpoints ---------------------------------------------------------------------------------------
def test_api_key_only_from_the_environment(monkeypatch):
    remote = Endpoint(model="m", base_url="https://api.example.com/v1", api_key_env="MY_KEY")
    with pytest.raises(LLMConfigError, match=r"the judge needs an API key for https://api\.example\.com/v1.*MY_KEY"):
        remote.api_key("the judge")
    monkeypatch.setenv("MY_KEY", "sk-env")
    assert remote.api_key() == "sk-env"
    assert Endpoint(model="m", base_url="http://localhost:8000/v1").api_key() == LOOPBACK_KEY
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.2:1/v1")  # loopback through the environment
    assert Endpoint(model="m").api_key() == LOOPBACK_KEY and Endpoint(model="m").address() == "http://127.0.0.2:1/v1"


def test_a_missing_key_fails_the_call_not_the_run(tmp_path):
    client = LLMClient(JudgeCache(tmp_path), Budget(None))
    ep = Endpoint(model=MODEL, base_url="https://api.example.com/v1", max_tokens=8)
    with pytest.raises(CallError) as err:
        run(lambda: client.chat(ep, "agent", MSGS, temperature=0.0, sem=asyncio.Semaphore(1)), client)
    assert err.value.kind == "config" and not err.value.auth and "OPENAI_API_KEY" in str(err.value)


def test_endpoint_bounds_general_and_the_loops():
    from agentstats.optimize.config import AgentSettings

    big = Endpoint(model="m", concurrency=300, retry_attempts=30)  # a judge may run wider than the loop
    assert big.max_tokens is None
    with pytest.raises(ValidationError):
        Endpoint(model="m", timeout=0)
    with pytest.raises(ValidationError):
        Endpoint(model="m", unknown=1)
    for bad in ({"concurrency": 257}, {"retry_attempts": 21}, {"max_tokens": None}):
        with pytest.raises(ValidationError):
            AgentSettings(model="m", prompt="P", **bad)
    assert AgentSettings(model="m", prompt="P").max_tokens == 1024


# -- the loop's calls: cache, dedup, budget, wall time --------------------------------------------------------
def test_budget_reserves_before_and_refuses_what_does_not_fit():
    b = Budget(1.0)
    b.reserve(0.6)
    with pytest.raises(BudgetExhausted):
        b.reserve(0.5)  # 0.6 reserved + 0.5 > 1.0
    b.settle(0.6, 0.4)
    b.reserve(0.6)  # 0.4 spent + 0.6 = 1.0 fits exactly
    assert b.refused == 1 and b.spent == pytest.approx(0.4)


def test_estimate_is_the_documented_bound():
    client = LLMClient(None, Budget(None), PRICES, chars_per_token=2.0)
    ep = Endpoint(model=MODEL, max_tokens=64)
    chars = len("Be brief.") + len("Capital of France?") + len("SCHEMA")
    prompt_tokens = math.ceil(chars / 2.0) + 8 * 2 + 16
    assert client.estimate(ep, MSGS, "SCHEMA", asks=3) == pytest.approx(3 * (prompt_tokens * 1.0 + 64 * 2.0) / 1e6)
    assert LLMClient(None, Budget(None), {}).estimate(ep, MSGS) == 0.0  # unpriced, no limit
    assert LLMClient(None, Budget(1.0), {}).estimate(ep, MSGS) == math.inf  # unpriced under a limit: never sent
    assert LLMClient(None, Budget(1.0), PRICES).estimate(Endpoint(model=MODEL), MSGS) == math.inf  # no cap


def test_identical_calls_in_one_batch_are_sent_once(tmp_path):
    with ScriptedOpenAIServer(responder=lambda body: Reply.text("hello", delay_s=0.2)) as srv:
        ep = Endpoint(model="test-model", base_url=srv.base_url, max_tokens=16)
        with JudgeCache(tmp_path / "c.sqlite3") as cache:
            caller = LLMClient(cache, Budget(1.0), {"test-model": (1.0, 2.0)})
            msgs = [{"role": "system", "content": "P"}, {"role": "user", "content": "same question"}]

            async def batch():
                sem = asyncio.Semaphore(4)
                try:
                    return await asyncio.gather(*(caller.chat(ep, "agent", msgs, temperature=0.0, sem=sem)
                                                  for _ in range(3)))
                finally:
                    await caller.aclose()

            results = asyncio.run(batch())
        assert srv.n_requests == 1
    assert [r.text for r in results] == ["hello"] * 3
    assert sorted(r.cached for r in results) == [False, True, True]
    assert caller.budget.spent == pytest.approx(PER_REQUEST)  # paid once


def test_chat_caches_structured_replies_and_refuses_over_budget(server, tmp_path):
    ep = endpoint(server)
    cache = JudgeCache(tmp_path)
    client = LLMClient(cache, Budget(None), PRICES)
    sem = asyncio.Semaphore(1)
    r = run(lambda: client.chat(ep, "grade", MSGS, temperature=0.0, sem=sem, response_model=Answer), client)
    assert r.data == {"score": 1.0, "reasoning": "matches the reference"} and not r.cached
    assert r.cost_usd == pytest.approx(PER_REQUEST) and client.budget.spent == pytest.approx(PER_REQUEST)
    again = LLMClient(cache, Budget(None), PRICES)  # a resumed run: answered from the cache, nothing sent
    r2 = run(lambda: again.chat(ep, "grade", MSGS, temperature=0.0, sem=sem, response_model=Answer), again)
    assert r2.cached and r2.n_requests == 0 and r2.data == r.data and server.n_requests == 1
    assert Budget.from_cache(None, cache).spent == pytest.approx(PER_REQUEST)  # the money spent survives in it
    # a new plain call's estimate: (ceil(26 / 2) + 2 * 8 + 16) prompt tokens at $1 and 64 completion tokens at $2
    tight = LLMClient(cache, Budget(1e-4), PRICES)  # per 1M tokens = $0.000173: it does not fit
    with pytest.raises(BudgetExhausted):
        run(lambda: tight.chat(ep, "other", MSGS, temperature=0.0, sem=sem), tight)
    late = LLMClient(cache, Budget(None), PRICES, deadline=time.monotonic() - 1)
    with pytest.raises(WallTimeExceeded):
        run(lambda: late.chat(ep, "other", MSGS, temperature=0.0, sem=sem), late)
    assert server.n_requests == 1 and tight.budget.refused == 1


def test_a_failed_chat_raises_and_settles_what_it_spent(server, tmp_path):
    server.responder = lambda body: Reply.http_error(401)
    client = LLMClient(JudgeCache(tmp_path), Budget(1.0), PRICES)
    with pytest.raises(CallError) as err:
        run(lambda: client.chat(endpoint(server), "agent", MSGS, temperature=0.0, sem=asyncio.Semaphore(1)), client)
    assert err.value.auth and err.value.kind == "http_401" and server.n_requests == 1  # a refused key: no retry
    assert client.budget.reserved == 0.0 and client.budget.spent == 0.0


# -- the judge's batches --------------------------------------------------------------------------------------
def _calls(n):
    return [PromptCall(ASK, {"q": f"question {i}"}, Answer) for i in range(n)]


def _store(call, ex):
    return {"score": ex.parsed.score}


def test_batch_caches_dedups_and_reports_progress(server, tmp_path):
    cache = JudgeCache(tmp_path)
    client = LLMClient(cache, prices=PRICES)
    calls = _calls(3) + _calls(1)  # the last repeats the first
    seen = []
    res = asyncio.run(client.batch(endpoint(server, concurrency=2), calls, temperature=0.0, mode=None,
                                   max_retries=0, store=_store, progress=lambda d, t: seen.append((d, t)),
                                   given=1, total=5))
    assert server.n_requests == 3 and res.deduplicated == 1 and res.cache_hits == 0
    assert [o.source for o in res.outcomes] == ["live"] * 4 and [o.duplicate for o in res.outcomes] == [
        False, False, False, True]
    assert res.outcomes[3].exchange is res.outcomes[0].exchange and res.outcomes[3].key == res.outcomes[0].key
    assert seen[-1] == (5, 5) and [d for d, _ in seen] == sorted(d for d, _ in seen)
    assert len(cache) == 3 and client.budget.spent == pytest.approx(3 * PER_REQUEST)
    again = asyncio.run(LLMClient(cache).batch(endpoint(server), calls, temperature=0.0, mode=None, max_retries=0,
                                               store=_store))
    assert [o.source for o in again.outcomes] == ["cache"] * 4 and again.cache_hits == 4
    assert again.outcomes[1].payload == {"score": 1.0} and server.n_requests == 3
    assert "question 0" in user_text(server.requests[0])


def test_batch_under_a_budget_sends_only_what_fits(server):
    ep = endpoint(server, concurrency=1)
    one = LLMClient(prices=PRICES).estimate(ep, ASK.render(q="question 0"),
                                            json.dumps(Answer.model_json_schema()), asks=1)
    client = LLMClient(budget=Budget(1.5 * one), prices=PRICES)  # room for one call's estimate, not two
    res = asyncio.run(client.batch(ep, _calls(3), temperature=0.0, mode=None, max_retries=0, store=_store))
    assert server.n_requests == 1
    assert [o.exchange.ok for o in res.outcomes] == [True, False, False]
    assert [o.exchange.error_kind for o in res.outcomes[1:]] == ["not_sent", "not_sent"]
    assert "would exceed the budget" in res.outcomes[1].exchange.error
    assert client.budget.spent == pytest.approx(PER_REQUEST) and client.budget.refused == 2


def test_batch_breaker_stops_on_a_refused_key(server):
    server.responder = lambda body: Reply.http_error(403)
    client = LLMClient()
    res = asyncio.run(client.batch(endpoint(server), _calls(5), temperature=0.0, mode=None, max_retries=0,
                                   store=_store))
    assert server.n_requests == 1  # the probe went alone
    assert res.breaker.auth is not None and res.breaker.auth.error_kind == "http_403"
    assert [o.exchange.error_kind for o in res.outcomes] == ["http_403"] + ["not_sent"] * 4


def test_circuit_breaker_rule():
    def v(kind):
        return SimpleNamespace(ok=kind is None, error_kind=kind, error=None if kind is None else f"{kind} error")

    run_ = Breaker()
    run_.observe(v("connection"), 3, "e")  # nothing ever succeeded: the endpoint never answered
    assert run_.stop_reason is not None and run_.auth is None
    run_ = Breaker()
    for kind in (None, "connection", "connection", "timeout", "connection", "connection"):
        run_.observe(v(kind), 3, "e")
    assert run_.stop_reason is None  # a timeout between them resets the count
    run_.observe(v("connection"), 3, "e")
    assert "3 verdict(s) in a row" in run_.stop_reason
    run_ = Breaker()
    run_.observe(v(None), 3, "e")
    run_.observe(v("http_403"), 3, "e")
    assert run_.auth is not None and "refused" in run_.stop_reason

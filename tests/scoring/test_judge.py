"""LLM judge through the real openai + instructor path, against the scripted loopback server (no network)."""

from __future__ import annotations

import asyncio
import time

import instructor
import pytest
from judge_server import Reply, ScriptedOpenAIServer, user_text

from agentstats.llm.cache import JudgeCache, cache_key
from agentstats.llm.prompts import PromptTemplate
from agentstats.llm.prompts.judge import ANSWER_CORRECTNESS
from agentstats.records.trial import ToolCall, ToolSpec
from agentstats.scoring.judge import (
    AnswerItem,
    DeterministicJudge,
    JudgeConfigError,
    OpenAIJudge,
    ToolCallItem,
    resolve_judge,
)

MODEL = "gpt-4o-mini"  # priced in DEFAULT_PRICES at (0.15, 0.60) USD per 1M tokens


@pytest.fixture()
def server():
    with ScriptedOpenAIServer() as srv:
        yield srv


@pytest.fixture(autouse=True)
def _no_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def make_judge(server, tmp_path, **kw):
    opts = dict(base_url=server.base_url, cache_dir=tmp_path / "cache", backoff_base_s=0.001,
                backoff_max_s=0.05, retry_attempts=3, max_retries=2, timeout=5.0, jitter_seed=0)
    opts.update(kw)
    return OpenAIJudge(MODEL, **opts)


ITEM = AnswerItem(answer="The capital is Paris.", expected="Paris", query="Capital of France?")


# -- valid verdicts ---------------------------------------------------------------------------------------
def test_valid_verdict_records_prompt_tokens_latency_cost(server, tmp_path):
    server.script([Reply.verdict(0.9, "Paris is right", usage=(200, 40))])
    v = make_judge(server, tmp_path).judge_answers([ITEM])[0]
    assert v.status == "ok" and v.score == 0.9 and v.reasoning == "Paris is right"
    assert (v.prompt_name, v.prompt_version, v.prompt_hash) == ("answer_correctness", "1",
                                                                ANSWER_CORRECTNESS.text_hash)
    assert (v.prompt_tokens, v.completion_tokens) == (200, 40)
    assert v.cost_usd == pytest.approx((200 * 0.15 + 40 * 0.60) / 1e6)
    assert v.latency_s is not None and v.latency_s > 0
    assert v.n_requests == 1 and v.attempts == 1 and not v.cached
    req = server.requests[0]
    assert req["model"] == MODEL and req["temperature"] == 0
    assert req["tools"][0]["function"]["name"] == "Verdict"  # instructor TOOLS mode
    assert "Paris" in user_text(req) and "The capital is Paris." in user_text(req)
    assert server.authorizations[0] == "Bearer local-server-ignores-keys"


def test_api_key_comes_from_environment(server, tmp_path, monkeypatch):
    monkeypatch.setenv("MY_JUDGE_KEY", "sk-from-env")
    server.script([Reply.verdict(1.0)])
    make_judge(server, tmp_path, api_key_env="MY_JUDGE_KEY").judge_answers([ITEM])
    assert server.authorizations[0] == "Bearer sk-from-env"


def test_missing_key_for_remote_endpoint_is_a_clear_error(tmp_path):
    with pytest.raises(JudgeConfigError, match="OPENAI_API_KEY"):
        OpenAIJudge(MODEL, cache_dir=tmp_path)
    with pytest.raises(JudgeConfigError, match="EVAL_KEY"):
        OpenAIJudge(MODEL, base_url="https://judge.example.com/v1", api_key_env="EVAL_KEY", cache_dir=tmp_path)


def test_json_mode_also_works(server, tmp_path):
    server.script([Reply.text('{"score": 0.25, "reasoning": "wrong city"}')])
    v = make_judge(server, tmp_path, mode=instructor.Mode.JSON).judge_answers([ITEM])[0]
    assert v.ok and v.score == 0.25
    assert "tools" not in server.requests[0]


# -- instructor re-asks on invalid output ----------------------------------------------------------------
@pytest.mark.parametrize("bad", [
    Reply.tool_call({"score": 1.7, "reasoning": "too high"}),  # outside [0, 1]
    Reply.tool_call({"score": 0.5}),  # reasoning missing
    Reply.malformed(),  # arguments are not JSON
    Reply.no_tool_call(),  # TOOLS mode but no tool call
])
def test_invalid_then_valid_is_reasked(server, tmp_path, bad):
    server.script([bad, Reply.verdict(0.8, usage=(100, 20))])
    v = make_judge(server, tmp_path).judge_answers([ITEM])[0]
    assert v.ok and v.score == 0.8
    assert v.n_requests == 2 and v.attempts == 1  # one transport attempt, one re-ask inside it
    assert (v.prompt_tokens, v.completion_tokens) == (220, 50)  # both completions' usage (default 120/30)
    # the re-ask carries the validation error back to the model
    assert len(server.requests[1]["messages"]) > len(server.requests[0]["messages"])


def test_persistently_invalid_output_is_judge_missing(server, tmp_path):
    server.script([Reply.tool_call({"score": 2, "reasoning": "x"})] * 3)
    v = make_judge(server, tmp_path, max_retries=2).judge_answers([ITEM])[0]
    assert v.status == "judge_missing" and v.score is None
    assert v.error_kind == "invalid_output" and v.n_requests == 3


# -- transport failures: backoff, Retry-After, judge_missing -----------------------------------------------
def test_429_then_success_honours_retry_after_ms(server, tmp_path):
    server.script([Reply.http_error(429, retry_after_ms=30), Reply.verdict(0.7)])
    v = make_judge(server, tmp_path).judge_answers([ITEM])[0]
    assert v.ok and v.score == 0.7
    assert v.retry_waits_s == [0.03] and v.attempts == 2 and v.n_requests == 2


def test_retry_after_seconds_is_capped_by_backoff_max(server, tmp_path):
    server.script([Reply.http_error(429, retry_after="30"), Reply.verdict(0.6)])
    v = make_judge(server, tmp_path, backoff_max_s=0.02).judge_answers([ITEM])[0]
    assert v.ok and v.retry_waits_s == [0.02]


@pytest.mark.parametrize("failure, kind", [
    (Reply.http_error(500), "server_error"),
    (Reply.http_error(503), "server_error"),
    (Reply.http_error(429), "rate_limit"),
    (Reply.truncated(), "truncated"),
])
def test_transient_failure_then_success(server, tmp_path, failure, kind):
    server.script([failure, Reply.verdict(0.4)])
    v = make_judge(server, tmp_path).judge_answers([ITEM])[0]
    assert v.ok and v.score == 0.4 and v.attempts == 2 and len(v.retry_waits_s) == 1
    # an error reply has no usage; a truncated completion used tokens too (default usage 120 / 30 per reply)
    assert (v.prompt_tokens, v.completion_tokens) == ((240, 60) if kind == "truncated" else (120, 30))
    assert 0.0 <= v.retry_waits_s[0] <= 0.001  # full-jitter backoff, first cap = backoff_base_s


@pytest.mark.parametrize("failure, kind", [
    (Reply.http_error(500), "server_error"),
    (Reply.http_error(429), "rate_limit"),
    (Reply.truncated(), "truncated"),
])
def test_persistent_failure_is_judge_missing_never_zero(server, tmp_path, failure, kind):
    server.responder = lambda req: failure
    judge = make_judge(server, tmp_path, retry_attempts=3)
    v = judge.judge_answers([ITEM])[0]
    assert v.status == "judge_missing" and v.score is None and v.error_kind == kind
    assert v.attempts == 3 and v.n_requests == 3 and len(v.retry_waits_s) == 2
    assert judge.stats.missing == 1 and judge.stats.missing_by_kind == {kind: 1}
    # not cached: a rerun asks again
    server.responder = lambda req: Reply.verdict(1.0)
    assert judge.judge_answers([ITEM])[0].ok
    assert server.n_requests == 4


def test_client_error_is_not_retried(server, tmp_path):
    server.script([Reply.http_error(400)])
    v = make_judge(server, tmp_path).judge_answers([ITEM])[0]
    assert v.status == "judge_missing" and v.error_kind == "http_400" and v.n_requests == 1


def test_timeout_is_retried(server, tmp_path):
    server.script([Reply.slow(2.0), Reply.verdict(0.55)])
    v = make_judge(server, tmp_path, timeout=0.3).judge_answers([ITEM])[0]
    assert v.ok and v.score == 0.55 and v.attempts == 2


def test_timeout_every_time_is_judge_missing(server, tmp_path):
    server.responder = lambda req: Reply.slow(2.0)
    v = make_judge(server, tmp_path, timeout=0.2, retry_attempts=2).judge_answers([ITEM])[0]
    assert v.status == "judge_missing" and v.error_kind == "timeout"


# -- cache, resume, dedup -----------------------------------------------------------------------------------
def items(n):
    return [AnswerItem(answer=f"answer {i}", expected=f"ref {i}", query=f"q {i}") for i in range(n)]


def test_cached_rerun_makes_zero_requests(server, tmp_path):
    first = make_judge(server, tmp_path).judge_answers(items(6))
    assert server.n_requests == 6 and not any(v.cached for v in first)
    again = make_judge(server, tmp_path)  # a new judge, as in a new process
    second = again.judge_answers(items(6))
    assert server.n_requests == 6
    assert all(v.cached and v.n_requests == 0 for v in second)
    assert [v.score for v in second] == [v.score for v in first]
    assert again.stats.cache_hits == 6 and again.stats.http_requests == 0


def test_resume_after_a_crash_halfway(server, tmp_path):
    n, crash_at = 10, 4

    def crash(done, total):
        if done == crash_at:
            raise KeyboardInterrupt("killed")

    judge = make_judge(server, tmp_path, concurrency=1)
    with pytest.raises(KeyboardInterrupt):
        judge.judge_answers(items(n), progress=crash)
    cache = JudgeCache(tmp_path / "cache")
    assert len(cache) == crash_at  # every verdict finished before the crash was written
    before = server.n_requests
    out = make_judge(server, tmp_path).judge_answers(items(n))
    assert server.n_requests - before == n - crash_at  # nothing repeated, nothing lost
    assert sum(v.cached for v in out) == crash_at and all(v.ok for v in out)


def test_resume_after_partial_failures(server, tmp_path):
    def flaky(req):
        return Reply.http_error(500) if "answer 3" in user_text(req) else Reply.verdict(0.9)

    server.responder = flaky
    first = make_judge(server, tmp_path, retry_attempts=2).judge_answers(items(5))
    assert [v.ok for v in first] == [True, True, True, False, True]
    server.responder = lambda req: Reply.verdict(0.9)
    before = server.n_requests
    second = make_judge(server, tmp_path).judge_answers(items(5))
    assert server.n_requests - before == 1 and all(v.ok for v in second)


def test_identical_requests_are_sent_once(server, tmp_path):
    judge = make_judge(server, tmp_path, cache_dir=False)
    out = judge.judge_answers([ITEM, ITEM, ITEM])
    assert server.n_requests == 1 and [v.score for v in out] == [1.0, 1.0, 1.0]
    assert [v.n_requests for v in out] == [1, 0, 0] and judge.stats.deduplicated == 2


def test_cache_key_changes_with_prompt_version_and_model(server, tmp_path):
    make_judge(server, tmp_path).judge_answers([ITEM])
    reworded = PromptTemplate("answer_correctness", "2", ANSWER_CORRECTNESS.system + " Be strict.",
                              ANSWER_CORRECTNESS.user)
    make_judge(server, tmp_path, prompts={"answer_correctness": reworded}).judge_answers([ITEM])
    assert server.n_requests == 2
    assert cache_key("a", "p@1#x", {"q": 1}) != cache_key("b", "p@1#x", {"q": 1})
    assert cache_key("a", "p@1#x", {"q": 1}) != cache_key("a", "p@2#x", {"q": 1})
    assert cache_key("a", "p@1#x", {"q": 1, "r": 2}) == cache_key("a", "p@1#x", {"r": 2, "q": 1})


def test_no_answer_scores_zero_without_a_request(server, tmp_path):
    v = make_judge(server, tmp_path).judge_answers([AnswerItem(answer=None, expected="Paris")])[0]
    assert v.ok and v.score == 0.0 and server.n_requests == 0


# -- concurrency ------------------------------------------------------------------------------------------
def test_concurrency_bound_is_respected(tmp_path):
    with ScriptedOpenAIServer(latency_s=0.1) as srv:
        out = make_judge(srv, tmp_path, concurrency=3).judge_answers(items(12))
        assert all(v.ok for v in out)
        assert srv.n_requests == 12
        assert 2 <= srv.max_in_flight <= 3


def test_works_inside_a_running_event_loop(server, tmp_path):
    judge = make_judge(server, tmp_path)

    async def main():
        sync_result = judge.judge_answers(items(2))  # e.g. called from a Jupyter cell
        async_result = await judge.ajudge_answers(items(3))
        return sync_result, async_result

    a, b = asyncio.run(main())
    assert len(a) == 2 and len(b) == 3 and server.n_requests == 3


# -- tool metrics ----------------------------------------------------------------------------------------
TOOLS = [ToolSpec(name="get_weather", description="weather for a city",
                  parameters={"type": "object", "properties": {"city": {"type": "string"}}}),
         ToolSpec(name="book_flight", description="book a flight")]
CALL = ToolCall(name="get_weather", arguments={"city": "Paris", "units": "celsius"})
TITEM = ToolCallItem(call=CALL, conversation="USER: What's the weather in Paris?", tools=TOOLS)


def test_tool_call_relevance_validates_better_tool(server, tmp_path):
    server.script([Reply.verdict(0.5, "meh", better_tool="invented_tool"), Reply.verdict(1.0, "right tool")])
    v = make_judge(server, tmp_path).judge_tool_calls([TITEM], metric="tool_call_relevance")[0]
    assert v.ok and v.metric == "tool_call_relevance" and v.score == 1.0 and v.details == {"better_tool": None}
    assert v.n_requests == 2  # the invented tool name was re-asked
    assert server.requests[0]["tools"][0]["function"]["name"] == "ToolRelevanceVerdict"
    assert "book_flight" in user_text(server.requests[0])


def test_parameter_grounding_lists_ungrounded_arguments(server, tmp_path):
    server.script([Reply.verdict(0.5, "x", ungrounded_parameters=["country"]),  # not an argument: re-ask
                   Reply.verdict(0.5, "units were not asked for", ungrounded_parameters=["units"])])
    v = make_judge(server, tmp_path).judge_tool_calls([TITEM], metric="parameter_grounding")[0]
    assert v.ok and v.score == 0.5 and v.details == {"ungrounded_parameters": ["units"]}
    assert v.prompt_name == "parameter_grounding" and v.n_requests == 2
    assert '"units":"celsius"' in user_text(server.requests[0])


def test_deterministic_judge_has_no_llm_tool_metrics():
    with pytest.raises(NotImplementedError):
        DeterministicJudge().judge_tool_calls([TITEM])


# -- pricing and resolution --------------------------------------------------------------------------------
def test_unknown_model_cost_is_none(server, tmp_path):
    judge = OpenAIJudge("local-model", base_url=server.base_url, cache_dir=False)
    v = judge.judge_answers([ITEM])[0]
    assert v.ok and v.cost_usd is None and v.prompt_tokens == 120
    assert judge.stats.cost_usd is None


def test_resolve_judge():
    assert isinstance(resolve_judge(None), DeterministicJudge)
    assert resolve_judge("deterministic", matcher="exact").name == "deterministic:exact"
    with pytest.raises(ValueError, match="unknown judge"):
        resolve_judge("gpt")


# -- failing fast: refused keys, unreachable endpoints -------------------------------------------------------
@pytest.mark.parametrize("code", [401, 403])
def test_refused_key_fails_fast_after_one_request(server, tmp_path, code):
    from agentstats.scoring.judge import JudgeAuthError

    server.responder = lambda req: Reply.http_error(code)
    judge = make_judge(server, tmp_path, concurrency=8)
    with pytest.raises(JudgeAuthError, match=rf"refused the credentials \(http_{code}.*OPENAI_API_KEY"):
        judge.judge_answers(items(40))
    assert server.n_requests == 1  # the probe went alone; nothing else was sent


def test_key_refused_mid_run_stops_sending(server, tmp_path):
    from agentstats.scoring.judge import JudgeAuthError

    server.script([Reply.verdict(0.9)])  # the probe succeeds, then the key is revoked
    server.responder = lambda req: Reply.http_error(401)
    with pytest.raises(JudgeAuthError, match="1 verdict"):
        make_judge(server, tmp_path, concurrency=4).judge_answers(items(40))
    assert server.n_requests <= 1 + 4  # at most the requests already in flight
    assert len(JudgeCache(tmp_path / "cache")) == 1  # what was paid for is kept


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_endpoint_opens_the_circuit(tmp_path):
    judge = OpenAIJudge(MODEL, base_url=f"http://127.0.0.1:{_closed_port()}/v1", cache_dir=tmp_path / "c",
                        retry_attempts=3, backoff_base_s=0.001, backoff_max_s=0.01, timeout=2.0, concurrency=8,
                        jitter_seed=0)
    t0 = time.perf_counter()
    out = judge.judge_answers(items(30))
    assert time.perf_counter() - t0 < 20
    assert all(v.status == "judge_missing" and v.score is None for v in out)
    assert [v.error_kind for v in out] == ["connection"] + ["not_sent"] * 29
    assert out[0].attempts == 3 and all(v.n_requests == 0 for v in out[1:])
    assert "could not be reached" in out[1].error
    assert judge.stats.missing_by_kind == {"connection": 1, "not_sent": 29}


# -- claims: two judges sharing one cache ----------------------------------------------------------------------
def test_two_judges_on_one_cache_pay_once(tmp_path):
    import threading

    with ScriptedOpenAIServer(latency_s=0.05) as srv:
        outs: dict[int, list] = {}

        def run(i):
            judge = make_judge(srv, tmp_path, concurrency=4, claim_poll_s=0.02)
            outs[i] = judge.judge_answers(items(30))

        threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert srv.n_requests == 30  # without claims: up to 60
        assert all(v.ok for out in outs.values() for v in out) and len(outs[0]) == len(outs[1]) == 30
        assert sum(not v.cached for out in outs.values() for v in out) == 30

"""The LLM judge: any OpenAI-compatible endpoint through ``instructor`` + ``openai``.

:class:`OpenAIJudge` asks a model for a pydantic verdict
(:class:`~agentstats.scoring.judge.verdicts.Verdict`: ``score`` in [0, 1] and ``reasoning``), which instructor
validates and, when invalid, re-asks with the validation error fed back (``max_retries``). The same machinery
scores tool calls for relevance and parameter grounding, the LLM-judged tool metrics of IBM watsonx.governance.

What every verdict records (:class:`~agentstats.scoring.judge.verdicts.JudgeVerdict`): the prompt's name, version
and text hash, the model, prompt/completion tokens summed over every HTTP request the verdict took (re-asks and
retries included), wall-clock latency, cost from a per-model price table (``None`` for an unknown model), the
number of requests and the backoff waits.

Failures are never scores. Timeouts, connection errors, HTTP 429 and 5xx, and truncated output
(``finish_reason == "length"``) are retried with exponential backoff (tenacity), honouring ``Retry-After`` /
``retry-after-ms`` when the server sends one; output that does not validate (malformed JSON arguments, a score
outside [0, 1], no tool call in TOOLS mode) is re-asked by instructor. When all that is spent the verdict is
``status="judge_missing"`` with ``score=None`` and the error: :func:`agentstats.scoring.score_trials` makes such a
trial *missing* (excluded from counts, reported), never a failure. A refused key (HTTP 401/403) is not a missing
verdict but a configuration error, raised after the first request (:class:`JudgeAuthError`); an endpoint that
cannot be reached stops the batch (the circuit breaker of :class:`OpenAIJudge`).

Judge calls run concurrently under an ``asyncio.Semaphore`` (``concurrency``), and every successful verdict is
written to an on-disk cache (:class:`~agentstats.llm.cache.JudgeCache`) the moment it arrives, keyed by
(model, prompt id, response schema, temperature, mode, inputs): a rerun costs no calls and a run killed halfway
resumes where it stopped. Identical requests within one batch are sent once, and requests another process has
in flight on the same cache are waited for, not sent again (cache claims).

API keys come from the environment only (``api_key_env``, default ``OPENAI_API_KEY``). A missing key is an
error, except for a loopback ``base_url`` (``127.0.0.1``, ``localhost``, ``::1``): local OpenAI-compatible
servers (vLLM, llama.cpp, Ollama, the test server) ignore the key, so a placeholder is sent.
"""

from __future__ import annotations

import asyncio
import os
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import instructor

from agentstats.llm.cache import ClaimState, JudgeCache, cache_key
from agentstats.llm.pricing import DEFAULT_PRICES, cost_usd
from agentstats.llm.transport import AUTH_KINDS, classify, clip, is_loopback, retry_after_s, run_coro, unwrap
from agentstats.scoring.judge.base import Judge, JudgeAuthError, JudgeConfigError, ProgressFn
from agentstats.scoring.judge.prompts import PROMPTS, PromptTemplate
from agentstats.scoring.judge.verdicts import (
    RESPONSE_MODELS,
    AnswerItem,
    JudgeVerdict,
    ToolCallItem,
    ToolMetric,
    Verdict,
)

__all__ = ["OpenAIJudge"]


@dataclass
class _Request:
    metric: str
    prompt: PromptTemplate
    fields: dict[str, str]
    response_model: type[Verdict]
    context: dict[str, Any] | None
    key: str


#: A process waiting for another's verdict: (found, payload), or (False, None) when the key is free to claim.
_Waiter = asyncio.Future[tuple[bool, dict[str, Any] | None]]


class _Run:
    """State of one batch: whether it stopped (refused key, unreachable endpoint) and why."""

    def __init__(self) -> None:
        self.stop_reason: str | None = None
        self.auth: JudgeVerdict | None = None
        self.ok_seen = False
        self.consecutive_unreachable = 0

    def observe(self, v: JudgeVerdict, breaker_after: int, endpoint: str) -> None:
        if v.ok:
            self.ok_seen = True
            self.consecutive_unreachable = 0
        elif v.error_kind in AUTH_KINDS:
            self.auth = self.auth or v
            self.stop_reason = self.stop_reason or f"the endpoint refused the credentials ({v.error_kind})"
        elif v.error_kind == "connection":
            self.consecutive_unreachable += 1
            if not self.ok_seen or self.consecutive_unreachable >= breaker_after:
                self.stop_reason = self.stop_reason or (
                    f"the judge endpoint {endpoint} could not be reached "
                    f"({self.consecutive_unreachable} verdict(s) in a row failed to connect, every retry spent)")
        elif v.error_kind != "not_sent":
            self.consecutive_unreachable = 0


def _from_cache(payload: Mapping[str, Any], key: str) -> JudgeVerdict:
    return JudgeVerdict.model_validate({**payload, "cached": True, "n_requests": 0, "key": key})


def _default_cache_dir() -> Path:
    root = os.environ.get("AGENTSTATS_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "agentstats")
    return Path(root) / "judge"


class OpenAIJudge(Judge):
    """LLM judge behind any OpenAI-compatible endpoint, through ``instructor`` + ``openai``.

    Parameters
    ----------
    model : str
        Model name sent to the endpoint.
    base_url : str, optional
        OpenAI-compatible base URL (``http://host:port/v1``); ``None`` → ``$OPENAI_BASE_URL`` or OpenAI.
    api_key_env : str
        Environment variable holding the API key. Keys are never taken from arguments or code.
    temperature : float
        Sampling temperature (0: as deterministic as the provider allows).
    mode : instructor.Mode or str
        instructor mode (``TOOLS`` default; ``JSON``, ``MD_JSON``, ``JSON_SCHEMA`` also work).
    max_retries : int
        instructor re-asks after output that does not validate (so up to ``max_retries + 1`` completions).
    retry_attempts : int
        Transport-level attempts for timeouts, connection errors, 429, 5xx and truncated output.
    timeout : float
        Seconds per HTTP request.
    backoff_base_s, backoff_max_s : float
        Exponential backoff with full jitter: wait uniform in ``[0, min(max, base * 2**(attempt-1))]``; a
        ``Retry-After`` from the server is used instead (capped at ``backoff_max_s``).
    concurrency : int
        Most requests in flight at once.
    cache_dir : path, optional
        Directory of the verdict cache; ``None`` → ``$AGENTSTATS_CACHE_DIR/judge`` or
        ``~/.cache/agentstats/judge``; ``False`` disables caching.
    prices : mapping, optional
        ``model -> (input, output)`` USD per 1M tokens; default :data:`DEFAULT_PRICES`.
    prompts : mapping, optional
        Replacement :class:`PromptTemplate` per metric name.
    max_tokens : int, optional
        Completion token cap sent with each request.
    jitter_seed : int, optional
        Seed of the backoff jitter's random generator (reproducible waits in tests).
    claim_lease_s : float
        Lease of the cache claims on requests in flight (see :class:`~agentstats.llm.cache.JudgeCache`):
        another process treats a claim as abandoned when its heartbeat is older than this.
    claim_poll_s : float
        How often a process waiting for another's verdicts looks for them (seconds).
    breaker_after : int
        Consecutive verdicts that failed to reach the endpoint (connection errors, every retry spent) after
        which the rest of the batch is not sent; the first failing verdict of a batch opens the circuit at once
        when nothing has succeeded yet (an endpoint that never answered).

    Raises
    ------
    JudgeConfigError
        When the API key variable is unset and ``base_url`` is not a loopback address, ``mode`` is unknown, or a
        setting is out of range.

    Notes
    -----
    Batches run as follows. Cached verdicts are taken first. The first request to send goes alone (a *probe*):
    a refused key (HTTP 401/403) raises :class:`~agentstats.scoring.judge.base.JudgeAuthError` after that one
    request, and an endpoint that cannot be reached opens the circuit (below) before the other requests are
    sent. The rest run concurrently. Before sending, each request claims its cache key, so a second process on
    the same cache waits for the verdict instead of paying for it again. When the circuit opens (see
    ``breaker_after``), requests not yet sent become ``judge_missing`` verdicts of kind ``not_sent``, and those
    in flight stop retrying.

    Examples
    --------
    >>> judge = OpenAIJudge("gpt-4o-mini")                      # doctest: +SKIP
    >>> judge.judge_answers([AnswerItem("Paris.", "Paris", query="Capital of France?")])  # doctest: +SKIP
    """

    supports_tool_metrics = True

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        temperature: float = 0.0,
        mode: Any = instructor.Mode.TOOLS,
        max_retries: int = 2,
        retry_attempts: int = 5,
        timeout: float = 60.0,
        backoff_base_s: float = 1.0,
        backoff_max_s: float = 60.0,
        concurrency: int = 16,
        cache_dir: str | os.PathLike | Literal[False] | None = None,
        prices: Mapping[str, tuple[float, float]] | None = None,
        prompts: Mapping[str, PromptTemplate] | None = None,
        max_tokens: int | None = None,
        jitter_seed: int | None = None,
        claim_lease_s: float = 60.0,
        claim_poll_s: float = 0.5,
        breaker_after: int = 5,
    ):
        super().__init__()
        if concurrency < 1:
            raise JudgeConfigError(f"concurrency must be >= 1, got {concurrency}")
        if retry_attempts < 1:
            raise JudgeConfigError(f"retry_attempts must be >= 1, got {retry_attempts}")
        if breaker_after < 1:
            raise JudgeConfigError(f"breaker_after must be >= 1, got {breaker_after}")
        if not (claim_lease_s > 0 and claim_poll_s > 0):
            raise JudgeConfigError(f"claim_lease_s and claim_poll_s must be > 0, got {claim_lease_s}, {claim_poll_s}")
        self.model = model
        self.base_url = base_url if base_url is not None else os.environ.get("OPENAI_BASE_URL")
        self.api_key_env = api_key_env
        self._api_key = self._resolve_key()
        self.temperature = float(temperature)
        if isinstance(mode, str):
            try:
                mode = instructor.Mode[mode.upper()]
            except KeyError:
                raise JudgeConfigError(f"unknown instructor mode {mode!r}") from None
        self.mode = mode
        self.max_retries = int(max_retries)
        self.retry_attempts = int(retry_attempts)
        self.timeout = float(timeout)
        self.backoff_base_s = float(backoff_base_s)
        self.backoff_max_s = float(backoff_max_s)
        self.concurrency = int(concurrency)
        self.prices = dict(DEFAULT_PRICES if prices is None else prices)
        self.prompts = {**PROMPTS, **(dict(prompts) if prompts else {})}
        self.max_tokens = max_tokens
        self._rng = random.Random(jitter_seed)
        self.claim_poll_s = float(claim_poll_s)
        self.breaker_after = int(breaker_after)
        self.name = f"openai:{model}"
        if cache_dir is False:
            self.cache: JudgeCache | None = None
        else:
            self.cache = JudgeCache(cache_dir if cache_dir is not None else _default_cache_dir(),
                                    lease_s=claim_lease_s)

    def _resolve_key(self) -> str:
        key = os.environ.get(self.api_key_env)
        if key:
            return key
        if self.base_url and is_loopback(self.base_url):
            return "local-server-ignores-keys"
        where = self.base_url or "api.openai.com"
        raise JudgeConfigError(
            f"the LLM judge needs an API key for {where}: set the environment variable {self.api_key_env} "
            "(keys are read from the environment only; a loopback base_url needs none)"
        )

    def __repr__(self) -> str:
        return f"OpenAIJudge(model={self.model!r}, base_url={self.base_url!r}, mode={self.mode}, cache={self.cache})"

    # -- public API ----------------------------------------------------------------------------------------
    def judge_answers(self, items: Sequence[AnswerItem], progress: ProgressFn | None = None) -> list[JudgeVerdict]:
        """Answer-correctness verdicts, one per item, in order (see :class:`OpenAIJudge`)."""
        return run_coro(lambda: self.ajudge_answers(items, progress))

    async def ajudge_answers(self, items: Sequence[AnswerItem], progress: ProgressFn | None = None
                             ) -> list[JudgeVerdict]:
        """Async form of :meth:`judge_answers`."""
        reqs: list[_Request | JudgeVerdict] = []
        for it in items:
            if it.answer is None:  # no answer is a wrong answer, not something to ask a model about
                reqs.append(JudgeVerdict(metric="answer_correctness", status="ok", score=0.0,
                                         reasoning="no answer given", judge=self.name, model=self.model))
            else:
                reqs.append(self._request("answer_correctness", it.fields(), None))
        return await self._arun(reqs, progress)

    def judge_tool_calls(self, items: Sequence[ToolCallItem], metric: ToolMetric = "tool_call_relevance",
                         progress: ProgressFn | None = None) -> list[JudgeVerdict]:
        """Tool-call verdicts (``"tool_call_relevance"`` or ``"parameter_grounding"``), one per item."""
        return run_coro(lambda: self.ajudge_tool_calls(items, metric, progress))

    async def ajudge_tool_calls(self, items: Sequence[ToolCallItem], metric: ToolMetric = "tool_call_relevance",
                                progress: ProgressFn | None = None) -> list[JudgeVerdict]:
        """Async form of :meth:`judge_tool_calls`."""
        if metric not in ("tool_call_relevance", "parameter_grounding"):
            raise ValueError(f"unknown tool metric {metric!r}; use 'tool_call_relevance' or 'parameter_grounding'")
        reqs = [self._request(metric, it.fields(metric), it.context(metric)) for it in items]
        return await self._arun(reqs, progress)

    def judge_prompt(self, prompt: PromptTemplate, response_model: type[Verdict],
                     items: Sequence[Mapping[str, str]], contexts: Sequence[dict[str, Any] | None] | None = None,
                     progress: ProgressFn | None = None) -> list[JudgeVerdict]:
        """Verdicts of any prompt and response model, one per item of prompt fields, in order.

        The same machinery as :meth:`judge_answers` (instructor validation and re-asks, retries, cache keyed by the
        prompt's id and the response model's name, claims, bounded concurrency, cost); the verdicts' ``metric`` is
        ``prompt.name``. ``contexts`` are instructor validation contexts, one per item.
        """
        ctxs = list(contexts) if contexts is not None else [None] * len(items)
        if len(ctxs) != len(items):
            raise ValueError(f"{len(ctxs)} validation contexts for {len(items)} items")
        reqs: list[_Request | JudgeVerdict] = []
        for fields, ctx in zip(items, ctxs, strict=True):
            f = {k: str(v) for k, v in fields.items()}
            key = cache_key(self.model, prompt.id, f, schema=response_model.__name__, temperature=self.temperature,
                            mode=str(self.mode.value), max_tokens=self.max_tokens)
            reqs.append(_Request(prompt.name, prompt, f, response_model, ctx, key))
        return run_coro(lambda: self._arun(reqs, progress))

    def judge_pairs(self, items: Sequence[Mapping[str, Any]], progress: ProgressFn | None = None
                    ) -> list[JudgeVerdict]:
        """Pairwise preference verdicts in the order shown, one per item (prompt ``pairwise_preference``).

        Each item maps ``query``, ``context`` (may be None), ``first`` and ``second`` (the two responses in the order
        the judge sees them). Score 1: the first is better, 0: the second, 0.5: equal. For position-bias control
        run both orders (:func:`agentstats.calibration.pairwise_judge`).
        """
        return run_coro(lambda: self.ajudge_pairs(items, progress))

    async def ajudge_pairs(self, items: Sequence[Mapping[str, Any]], progress: ProgressFn | None = None
                           ) -> list[JudgeVerdict]:
        """Async form of :meth:`judge_pairs`."""
        reqs: list[_Request | JudgeVerdict] = []
        for it in items:
            fields = {f: "(none)" if it.get(f) is None else str(it.get(f)) for f in ("query", "context", "first",
                                                                                     "second")}
            reqs.append(self._request("pairwise_preference", fields, None))
        return await self._arun(reqs, progress)

    # -- machinery -----------------------------------------------------------------------------------------
    def _request(self, metric: str, fields: dict[str, str], context: dict[str, Any] | None) -> _Request:
        try:
            prompt = self.prompts[metric]
        except KeyError:
            raise JudgeConfigError(f"no prompt for metric {metric!r}") from None
        rm = RESPONSE_MODELS[metric]
        key = cache_key(self.model, prompt.id, fields, schema=rm.__name__, temperature=self.temperature,
                        mode=str(self.mode.value), max_tokens=self.max_tokens)
        return _Request(metric, prompt, fields, rm, context, key)

    def _client(self) -> tuple[Any, Any]:
        import openai

        client = openai.AsyncOpenAI(api_key=self._api_key, base_url=self.base_url, max_retries=0,
                                    timeout=self.timeout)
        return client, instructor.from_openai(client, mode=self.mode)

    async def _arun(self, reqs: Sequence[_Request | JudgeVerdict], progress: ProgressFn | None) -> list[JudgeVerdict]:
        t0 = time.perf_counter()
        n = len(reqs)
        results: list[JudgeVerdict | None] = [None] * n
        self.stats.requested += n
        todo: dict[str, list[int]] = {}
        live_keys = [r.key for r in reqs if isinstance(r, _Request)]
        cached = self.cache.get_many(live_keys) if (self.cache is not None and live_keys) else {}
        done = 0
        for i, r in enumerate(reqs):
            if isinstance(r, JudgeVerdict):
                results[i] = r
                self.stats.add(r)
                done += 1
            elif r.key in cached:
                results[i] = _from_cache(cached[r.key], r.key)
                self.stats.cache_hits += 1
                done += 1
            elif r.key in todo:
                todo[r.key].append(i)
                self.stats.deduplicated += 1
            else:
                todo[r.key] = [i]
        if progress and done:
            progress(done, n)
        if not todo:
            self.stats.wall_s += time.perf_counter() - t0
            return [r for r in results if r is not None]

        run = _Run()
        client, ic = self._client()
        sem = asyncio.Semaphore(self.concurrency)
        waiters: dict[str, _Waiter] = {}
        poller: asyncio.Task[None] | None = None

        def fill(idxs: list[int], v: JudgeVerdict) -> None:
            nonlocal done
            for j, i in enumerate(idxs):
                # duplicates share the verdict but not its cost: the request was made once
                results[i] = v if j == 0 else v.model_copy(update={"n_requests": 0, "cost_usd": 0.0
                                                                    if v.cost_usd is not None else None})
            done += len(idxs)
            if progress:
                progress(done, n)

        async def poll_loop() -> None:
            assert self.cache is not None
            while waiters:
                await asyncio.sleep(self.claim_poll_s)
                found, free = self.cache.poll(list(waiters))
                for k, payload in found.items():
                    waiters.pop(k).set_result((True, payload))
                for k in free:
                    waiters.pop(k).set_result((False, None))

        async def settle(key: str) -> None:
            nonlocal poller
            idxs = todo[key]
            req = reqs[idxs[0]]
            if not isinstance(req, _Request):
                raise TypeError(f"internal: request {idxs[0]} is not a live request")
            while True:
                if run.stop_reason is not None:
                    v = self._not_sent(req, run.stop_reason)
                    break
                claimed: ClaimState = "mine"
                payload: dict[str, Any] | None = None
                if self.cache is not None:
                    claimed, payload = self.cache.claim(key)
                if claimed == "busy":  # another process is asking for it: wait for its verdict
                    fut: _Waiter = asyncio.get_running_loop().create_future()
                    waiters[key] = fut
                    if poller is None or poller.done():
                        poller = asyncio.create_task(poll_loop())
                    found, payload = await fut
                    if not found:
                        continue  # its owner gave up or died: claim it ourselves
                if payload is not None:
                    self.stats.cache_hits += 1
                    self.stats.shared += 1
                    fill(idxs, _from_cache(payload, key))
                    return
                async with sem:
                    v = await self._verdict(ic, req, run) if run.stop_reason is None else \
                        self._not_sent(req, run.stop_reason)
                if self.cache is not None:
                    if v.ok:
                        self.cache.put(key, v.model_dump(exclude={"cached", "key"}), model=self.model,
                                       prompt_id=req.prompt.id)
                    else:
                        self.cache.release(key)
                run.observe(v, self.breaker_after, self._endpoint())
                break
            self.stats.add(v)
            fill(idxs, v)

        heart = asyncio.create_task(self._heartbeat()) if self.cache is not None else None
        try:
            keys = list(todo)
            await settle(keys[0])  # the probe: alone, so a bad key or a dead endpoint costs one request
            if len(keys) > 1:
                await asyncio.gather(*(settle(k) for k in keys[1:]))
        finally:
            for task in (heart, poller):
                if task is not None:
                    task.cancel()
            if self.cache is not None:
                self.cache.release_all()
            await client.close()
            self.stats.wall_s += time.perf_counter() - t0
        if run.auth is not None:
            got = sum(1 for r in results if r is not None and r.ok)
            raise JudgeAuthError(
                f"the judge endpoint {self._endpoint()} refused the credentials ({run.auth.error_kind}: "
                f"{run.auth.error}); check the key in ${self.api_key_env}. No further request was sent; "
                f"{got} verdict(s) obtained before are cached."
            )
        return [r for r in results if r is not None]

    def _endpoint(self) -> str:
        return self.base_url or "https://api.openai.com/v1"

    def _not_sent(self, req: _Request, reason: str) -> JudgeVerdict:
        return JudgeVerdict(metric=req.metric, status="judge_missing", error=clip(f"not sent: {reason}"),
                            error_kind="not_sent", judge=self.name, model=self.model, prompt_name=req.prompt.name,
                            prompt_version=req.prompt.version, prompt_hash=req.prompt.text_hash, key=req.key)

    async def _heartbeat(self) -> None:
        assert self.cache is not None
        while True:
            await asyncio.sleep(self.cache.lease_s / 3)
            self.cache.heartbeat()

    def _wait_s(self, attempt: int, exc: BaseException | None) -> float:
        if exc is not None:
            ra = retry_after_s(exc)
            if ra is not None:
                return min(ra, self.backoff_max_s)
        cap = min(self.backoff_max_s, self.backoff_base_s * (2 ** (attempt - 1)))
        return self._rng.uniform(0.0, cap)

    async def _verdict(self, ic: Any, req: _Request, run: _Run) -> JudgeVerdict:
        from instructor.core.hooks import Hooks
        from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt

        counter = {"requests": 0, "prompt_tokens": 0, "completion_tokens": 0, "usage_missing": False}

        def on_kwargs(*_a: Any, **_k: Any) -> None:
            counter["requests"] += 1

        def on_response(response: Any, *_a: Any, **_k: Any) -> None:
            usage = getattr(response, "usage", None)
            if usage is None or getattr(usage, "prompt_tokens", None) is None:
                counter["usage_missing"] = True
                return
            counter["prompt_tokens"] += int(usage.prompt_tokens or 0)
            counter["completion_tokens"] += int(usage.completion_tokens or 0)

        hooks = Hooks()
        hooks.on("completion:kwargs", on_kwargs)
        hooks.on("completion:response", on_response)
        waits: list[float] = []

        def wait(rs: Any) -> float:
            exc = rs.outcome.exception() if rs.outcome is not None else None
            return self._wait_s(rs.attempt_number, exc)

        def before_sleep(rs: Any) -> None:  # tenacity computes a wait after the last attempt too: log only sleeps
            waits.append(float(rs.upcoming_sleep))

        def retryable(exc: BaseException) -> bool:  # no more retries once the run stopped (circuit open, auth)
            return classify(exc)[1] and run.stop_reason is None

        extra: dict[str, Any] = {}
        if self.max_tokens is not None:
            extra["max_tokens"] = self.max_tokens
        messages = req.prompt.render(**req.fields)
        attempts = 0
        t0 = time.perf_counter()
        parsed: Verdict | None = None
        error: BaseException | None = None
        try:
            async for attempt in AsyncRetrying(stop=stop_after_attempt(self.retry_attempts), wait=wait,
                                               retry=retry_if_exception(retryable), reraise=True,
                                               before_sleep=before_sleep):
                with attempt:
                    attempts += 1
                    try:
                        parsed = await ic.chat.completions.create(
                            model=self.model,
                            messages=messages,
                            response_model=req.response_model,
                            max_retries=self.max_retries,
                            context=req.context,
                            temperature=self.temperature,
                            timeout=self.timeout,
                            hooks=hooks,
                            **extra,
                        )
                    except Exception as exc:
                        inner = unwrap(exc)  # (usage of failed completions is already counted by the hook)
                        if inner is not exc:
                            raise inner from exc
                        raise
        except Exception as exc:
            error = exc
        latency = time.perf_counter() - t0
        pt: int | None = None if counter["usage_missing"] and not counter["prompt_tokens"] else counter["prompt_tokens"]
        ct: int | None = None if pt is None else counter["completion_tokens"]
        if counter["requests"] == 0:
            pt = ct = None
        common: dict[str, Any] = {
            "metric": req.metric, "judge": self.name, "model": self.model, "prompt_name": req.prompt.name,
            "prompt_version": req.prompt.version, "prompt_hash": req.prompt.text_hash, "prompt_tokens": pt,
            "completion_tokens": ct, "latency_s": latency, "cost_usd": cost_usd(self.model, pt, ct, self.prices),
            "n_requests": counter["requests"], "attempts": attempts, "retry_waits_s": waits, "key": req.key,
        }
        if error is not None or parsed is None:
            kind, _ = classify(error) if error is not None else ("error", False)
            msg = f"{type(error).__name__}: {error}" if error is not None else "no verdict returned"
            return JudgeVerdict.model_validate({**common, "status": "judge_missing", "error": clip(msg),
                                                "error_kind": kind})
        data = parsed.model_dump()
        score = float(data.pop("score"))
        reasoning = data.pop("reasoning")
        return JudgeVerdict.model_validate({**common, "status": "ok", "score": score, "reasoning": reasoning,
                                            "details": data})



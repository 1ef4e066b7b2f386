"""The one client of OpenAI-compatible endpoints: every call agentstats makes to a model goes through it.

Its users: the LLM judge (:class:`agentstats.scoring.judge.OpenAIJudge`, a thin adapter over :meth:`LLMClient.batch`),
the optimization loop's agent, judge and optimizer calls (:meth:`LLMClient.chat`), and the judged metrics' embedding
client and guardian classifier (:meth:`LLMClient.embed`, :meth:`LLMClient.send`).

What every call gets:

* **Transport** (:meth:`LLMClient.send`): a chat completion through ``openai``; with a pydantic ``response_model``,
  structured output through ``instructor``, which validates the reply and re-asks with the validation error fed back
  (``max_retries``). Timeouts, connection errors, HTTP 408/409/429 and 5xx, and truncated output are retried with
  exponential backoff and full jitter (``tenacity``), honouring ``Retry-After`` (:mod:`agentstats.llm.transport`).
* **Usage and cost**: tokens summed over every HTTP request the call took, re-asks and retries included; cost from
  the price table (:mod:`agentstats.llm.pricing`; None for an unpriced model, never 0).
* **Keys** from the environment only (:meth:`agentstats.llm.endpoint.Endpoint.api_key`).
* **Cache**: replies are written to an on-disk cache (:class:`agentstats.llm.cache.JudgeCache`, SQLite) the moment
  they arrive, so a rerun never pays twice for a call that completed.
* **Budget** (:class:`agentstats.llm.budget.Budget`): a conservative cost estimate (:meth:`LLMClient.estimate`) is
  reserved before a call is sent, and a call that does not fit under the limit is not sent; the actual cost is
  settled when it ends. :attr:`LLMClient.on_change` is told of every request sent and every cost settled.

Two ways to send calls:

* :meth:`LLMClient.chat`, one call (the loop): answered from the cache when it is there; an identical call already
  in flight is waited for; the budget and the wall-time limit are checked before sending; a call that fails after
  every retry raises :class:`CallError`.
* :meth:`LLMClient.batch`, many structured calls (the judge): cache claims shared with other processes, a probe call
  first, a circuit breaker; a failed call is an outcome, never an exception (:mod:`agentstats.llm.batch`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from agentstats.llm.batch import BatchResult, BatchRun, PromptCall, call_key
from agentstats.llm.budget import Budget, BudgetExhausted, WallTimeExceeded
from agentstats.llm.cache import JudgeCache, cache_key
from agentstats.llm.endpoint import Endpoint, LLMConfigError
from agentstats.llm.pricing import DEFAULT_PRICES, cost_usd
from agentstats.llm.redact import redact_exception
from agentstats.llm.transport import AUTH_KINDS, Exchange, InvalidOutput, Session, backoff_s, classify, unwrap

__all__ = ["CallError", "CallResult", "LLMClient"]


class CallError(RuntimeError):
    """A call failed after every retry (or was refused: ``auth`` is True for HTTP 401/403).

    Attributes
    ----------
    kind : str
        The error kind (:func:`agentstats.llm.transport.classify`; ``"config"`` for a missing API key).
    auth : bool
    cost_usd : float or None
        Cost of the completions the failed call did receive (instructor re-asks of invalid output).
    """

    def __init__(self, message: str, kind: str, cost_usd: float | None = None):
        super().__init__(message)
        self.kind = kind
        self.auth = kind in AUTH_KINDS
        self.cost_usd = cost_usd


@dataclass(frozen=True)
class CallResult:
    """One call's answer and usage (:meth:`LLMClient.chat`).

    Attributes
    ----------
    text : str or None
        The reply's text (plain calls).
    data : dict or None
        The validated response model as a dict (structured calls).
    prompt_tokens, completion_tokens : int or None
        Summed over every request the call took.
    cost_usd : float or None
    latency_s : float
    n_requests : int
        HTTP requests sent (0 for a cached call).
    cached : bool
    key : str
    tool_calls : list of dict or None
        The tool calls of a plain call sent with ``tools``, as the model returned them: ``{id, name, arguments}``
        with ``arguments`` the undecoded JSON string (it may not parse); None for a call sent without tools.
    """

    text: str | None
    data: dict[str, Any] | None
    prompt_tokens: int | None
    completion_tokens: int | None
    cost_usd: float | None
    latency_s: float
    n_requests: int
    cached: bool
    key: str
    tool_calls: list[dict[str, Any]] | None = None

    @property
    def tokens(self) -> int | None:
        """Prompt plus completion tokens."""
        if self.prompt_tokens is None:
            return None
        return self.prompt_tokens + (self.completion_tokens or 0)


class LLMClient:
    """Sends calls to OpenAI-compatible endpoints (see the module docstring).

    Parameters
    ----------
    cache : JudgeCache, optional
        The response cache; None: nothing is cached (and :meth:`batch` takes no claims).
    budget : Budget, optional
        Money spent and its limit; None: ``Budget(None)`` (no limit, costs summed).
    prices : mapping, optional
        ``model -> (input, output)`` USD per 1M tokens; None: :data:`agentstats.llm.pricing.DEFAULT_PRICES`.
    chars_per_token : float
        Characters per prompt token assumed by the cost estimate.
    jitter_seed : int, optional
        Seed of the backoff jitter's random generator (reproducible waits).
    deadline : float, optional
        ``time.monotonic()`` after which no call is sent (:class:`~agentstats.llm.budget.WallTimeExceeded`).

    Attributes
    ----------
    n_requests : int
        HTTP requests sent (counted as each is sent, before its reply).
    n_calls, n_cached : int
        Calls made through :meth:`chat`, and those answered without a request.
    retry_waits : list of float
        Every backoff wait taken, in order.
    on_change : callable or None
        Called with no arguments after each request is counted and after each call's cost is settled (also of a
        call that failed or was cancelled), so a caller can record the totals durably as they change.
    """

    def __init__(self, cache: JudgeCache | None = None, budget: Budget | None = None,
                 prices: Mapping[str, tuple[float, float]] | None = None, *, chars_per_token: float = 2.0,
                 jitter_seed: int | None = None, deadline: float | None = None):
        self.cache = cache
        self.budget = budget if budget is not None else Budget(None)
        self.prices = dict(DEFAULT_PRICES if prices is None else prices)
        self.chars_per_token = float(chars_per_token)
        self.deadline = deadline
        self.rng = random.Random(jitter_seed)
        self.n_requests = 0
        self.n_calls = 0
        self.n_cached = 0
        self.retry_waits: list[float] = []
        self.on_change: Callable[[], None] | None = None
        self._session = Session()
        self._inflight: dict[str, asyncio.Future[CallResult | None]] = {}

    def changed(self) -> None:
        """Tell :attr:`on_change` that the totals changed (a request sent, a cost settled)."""
        if self.on_change is not None:
            self.on_change()

    def _sent(self, ex: Exchange) -> None:
        ex.n_requests += 1
        self.n_requests += 1
        self.changed()

    async def aclose(self) -> None:
        """Close the HTTP clients of :meth:`chat` and :meth:`send` (call at the end of every event loop using them)."""
        self._inflight = {}
        await self._session.close()

    # -- one call --------------------------------------------------------------------------------------------
    async def send(self, ep: Endpoint, messages: Sequence[Mapping[str, Any]], *, temperature: float,
                   response_model: type[BaseModel] | None = None, max_retries: int = 0,
                   context: dict[str, Any] | None = None, tools: Sequence[Mapping[str, Any]] | None = None,
                   mode: Any = None, extra_body: Mapping[str, Any] | None = None, session: Session | None = None,
                   keep_retrying: Callable[[], bool] | None = None,
                   parse: Callable[[str | None], Any] | None = None) -> Exchange:
        """Send one chat call with retries; nothing cached, nothing budgeted. Failures are returned, not raised.

        Parameters
        ----------
        ep : Endpoint
            Where to send it: model, address, key variable, timeout, retry policy, ``max_tokens`` (sent when set).
        messages : list of dict
            Chat messages.
        temperature : float
        response_model : pydantic model class, optional
            Structured output through instructor; None: a plain completion (:attr:`Exchange.text`).
        max_retries : int
            Re-asks after output that does not validate: instructor's for a ``response_model``, the same request
            sent again for a plain call with ``parse``.
        context : dict, optional
            instructor validation context.
        tools : list of dict, optional
            Tool specs in OpenAI's form sent with a plain call; the reply's tool calls go to
            :attr:`Exchange.tool_calls`.
        mode : instructor.Mode, optional
            instructor mode of a structured call (default ``TOOLS``).
        extra_body : mapping, optional
            Extra JSON fields of a plain call's request body (``chat_template_kwargs`` of a vLLM server).
        session : Session, optional
            The HTTP clients to use (default: this client's, closed by :meth:`aclose`).
        keep_retrying : callable, optional
            Asked before each retry; False stops retrying (a batch whose breaker opened).
        parse : callable, optional
            A plain call's validator: ``parse(text)`` returns the value (kept in :attr:`Exchange.parsed`) or None
            for output to re-ask (a classifier's ``Yes`` / ``No``); after ``max_retries`` re-asks the call fails
            with :class:`~agentstats.llm.transport.InvalidOutput` (kind ``invalid_output``, every reply kept).

        Returns
        -------
        Exchange
            The reply or the error, tokens, cost (:attr:`prices`), requests, attempts, waits and latency.

        Raises
        ------
        LLMConfigError
            When no API key can be found for ``ep``.
        """
        session = session or self._session
        ex = Exchange()
        extra: dict[str, Any] = {} if ep.max_tokens is None else {"max_tokens": ep.max_tokens}
        if response_model is None:
            client = session.openai(ep)
            if tools:
                extra["tools"] = [dict(t) for t in tools]
            if extra_body:
                extra["extra_body"] = dict(extra_body)

            async def once() -> None:
                replies: list[str | None] = []
                for _ask in range(1 + (max_retries if parse is not None else 0)):
                    self._sent(ex)
                    resp = await client.chat.completions.create(model=ep.model, messages=list(messages),
                                                                temperature=temperature, **extra)
                    ex.count_usage(resp)
                    if resp.choices:
                        message = resp.choices[0].message
                        ex.text = message.content
                        ex.tool_calls = _reply_tool_calls(message) if tools else None
                        ex.answered = True
                    if parse is None:
                        return
                    ex.parsed = parse(ex.text) if resp.choices else None
                    if ex.parsed is not None:
                        return
                    replies.append(ex.text)
                raise InvalidOutput(f"{len(replies)} replies did not validate: {replies!r}", replies)
        else:
            import instructor
            from instructor.core.hooks import Hooks

            ic = session.instructor(ep, instructor.Mode.TOOLS if mode is None else mode)
            hooks = Hooks()
            hooks.on("completion:kwargs", lambda *_a, **_k: self._sent(ex))
            hooks.on("completion:response", lambda response, *_a, **_k: ex.count_usage(response))

            async def once() -> None:
                try:
                    parsed = await ic.chat.completions.create(
                        model=ep.model, messages=list(messages), response_model=response_model,
                        max_retries=max_retries, context=context, temperature=temperature, timeout=ep.timeout,
                        hooks=hooks, **extra)
                except Exception as exc:
                    inner = unwrap(exc)  # (usage of failed completions is already counted by the hook)
                    if inner is not exc:
                        raise inner from exc
                    raise
                ex.parsed = parsed
                ex.answered = parsed is not None

        await self._retrying(ep, ex, once, keep_retrying)
        ex.price(ep.model, self.prices)
        return ex

    async def embed(self, ep: Endpoint, texts: Sequence[str], *, session: Session | None = None) -> Exchange:
        """Embed ``texts`` in one request (``/v1/embeddings``), with retries; the vectors in :attr:`Exchange.vectors`.

        Raises
        ------
        LLMConfigError
            When no API key can be found for ``ep``.
        """
        client = (session or self._session).openai(ep)
        ex = Exchange()

        async def once() -> None:
            self._sent(ex)
            resp = await client.embeddings.create(model=ep.model, input=list(texts))
            ex.count_usage(resp)
            vectors: list[Any] = [None] * len(texts)
            for item in resp.data:
                vectors[item.index] = list(item.embedding)
            ex.vectors = vectors
            ex.answered = True

        await self._retrying(ep, ex, once, None)
        ex.price(ep.model, self.prices)
        return ex

    async def _retrying(self, ep: Endpoint, ex: Exchange, once: Callable[[], Any],
                        keep_retrying: Callable[[], bool] | None) -> None:
        """Run ``once()`` until it succeeds, a failure is not retryable, or ``ep.retry_attempts`` are spent."""
        from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt

        def retryable(exc: BaseException) -> bool:
            return classify(exc)[1] and (keep_retrying is None or keep_retrying())

        def wait(rs: Any) -> float:
            return backoff_s(rs.attempt_number, rs.outcome.exception() if rs.outcome is not None else None, ep,
                             self.rng)

        def before_sleep(rs: Any) -> None:  # tenacity computes a wait after the last attempt too: log only sleeps
            ex.retry_waits_s.append(float(rs.upcoming_sleep))
            self.retry_waits.append(float(rs.upcoming_sleep))

        t0 = time.perf_counter()
        try:
            async for attempt in AsyncRetrying(stop=stop_after_attempt(ep.retry_attempts), wait=wait,
                                               retry=retry_if_exception(retryable), reraise=True,
                                               before_sleep=before_sleep):
                with attempt:
                    ex.attempts += 1
                    await once()
        except Exception as exc:
            ex.exception = redact_exception(exc)  # an error reply may echo the key: never kept or shown
        ex.latency_s = time.perf_counter() - t0

    # -- budget and cache keys -------------------------------------------------------------------------------
    def estimate(self, ep: Endpoint, messages: Sequence[Mapping[str, Any]], schema_text: str = "",
                 asks: int = 1) -> float:
        """Conservative cost estimate of one call in dollars.

        Prompt tokens = characters (messages and ``schema_text``: the response schema or tool specs sent) /
        :attr:`chars_per_token`, plus 8 per message and 16; completion tokens = ``ep.max_tokens``; times ``asks``
        (instructor's re-asks). An unpriced model, or no completion cap, is ``inf`` under a budget limit (the call
        cannot be bounded) and 0 without one.
        """
        chars = sum(len(m.get("content") or "") for m in messages) + len(schema_text)
        prompt_tokens = math.ceil(chars / self.chars_per_token) + 8 * len(messages) + 16
        cost = cost_usd(ep.model, prompt_tokens, ep.max_tokens, self.prices)
        if cost is None:
            return 0.0 if self.budget.limit is None else math.inf
        return cost * asks

    def _reserve(self, ep: Endpoint, messages: Sequence[Mapping[str, Any]], schema_text: str, asks: int) -> float:
        """Check the wall-time limit and reserve the call's estimate (raises when the call may not be sent)."""
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise WallTimeExceeded("the wall-time limit (max_wall_seconds) has passed; the call was not sent")
        estimate = self.estimate(ep, messages, schema_text, asks)
        self.budget.reserve(estimate)
        return estimate

    def key(self, ep: Endpoint, kind: str, messages: Sequence[Mapping[str, Any]], temperature: float,
            response_model: type[BaseModel] | None, tools: Sequence[Mapping[str, Any]] | None = None) -> str:
        """Cache key of a :meth:`chat` call (the endpoint's URL is not part of it: the same model answers the same).

        The model, ``kind``, the messages, the temperature, the completion cap, the response model's JSON schema and,
        when given, the tool specs (:func:`agentstats.llm.cache.cache_key`); a call without tools has the key it had
        before tools could be sent.
        """
        schema = None if response_model is None else json.dumps(response_model.model_json_schema(), sort_keys=True)
        inputs: dict[str, Any] = {"messages": [dict(m) for m in messages]}
        if tools:
            inputs["tools"] = [dict(t) for t in tools]
        return cache_key(ep.model, kind, inputs, temperature=temperature, max_tokens=ep.max_tokens, schema=schema)

    # -- the loop's calls ------------------------------------------------------------------------------------
    async def chat(self, ep: Endpoint, kind: str, messages: Sequence[Mapping[str, Any]], *, temperature: float,
                   sem: asyncio.Semaphore, response_model: type[BaseModel] | None = None, max_retries: int = 0,
                   context: dict[str, Any] | None = None,
                   tools: Sequence[Mapping[str, Any]] | None = None) -> CallResult:
        """Make one call: cached, budgeted, retried (the module docstring).

        Parameters
        ----------
        ep : Endpoint
        kind : str
            What the call is (``"agent"``, a judge prompt id, the revision prompt id); part of the cache key.
        messages : list of dict
            Chat messages.
        temperature : float
        sem : asyncio.Semaphore
            Bounds the requests in flight.
        response_model : pydantic model class, optional
            Structured output through instructor (TOOLS mode); None: a plain completion whose text is returned.
        max_retries : int
            instructor re-asks after output that does not validate.
        context : dict, optional
            instructor validation context.
        tools : list of dict, optional
            Tool specs in OpenAI's form (:func:`agentstats.scoring.schema_check.openai_tools`) sent with a plain
            call (``tools=``, the model chooses: ``tool_choice`` is not sent); the reply's tool calls are returned
            in :attr:`CallResult.tool_calls`. Part of the cache key. Not with ``response_model``.

        Returns
        -------
        CallResult

        Raises
        ------
        BudgetExhausted
            The call would not fit under the budget; it was not sent.
        WallTimeExceeded
            The wall-time limit has passed; the call was not sent.
        CallError
            Every attempt failed, the endpoint refused the key (not retried), or no key is set (kind ``"config"``).
        ValueError
            For ``tools`` with a ``response_model``.
        """
        if tools and response_model is not None:
            raise ValueError("LLMClient.chat: tools are for plain calls "
                             "(a response_model is sent as instructor's tool)")
        specs = [dict(t) for t in tools] if tools else None
        key = self.key(ep, kind, messages, temperature, response_model, specs)
        self.n_calls += 1
        hit = None if self.cache is None else self.cache.get(key)
        if hit is not None:
            self.n_cached += 1
            return CallResult(**{**hit, "n_requests": 0, "cached": True, "key": key})
        twin = self._inflight.get(key)
        if twin is not None:  # the same call is in flight in this batch: wait for its answer instead of paying twice
            got = await asyncio.shield(twin)
            if got is not None:
                self.n_cached += 1
                return dataclasses.replace(got, cached=True, n_requests=0)
        mine: asyncio.Future[CallResult | None] = asyncio.get_running_loop().create_future()
        self._inflight.setdefault(key, mine)
        try:
            result = await self._chat_once(ep, kind, messages, temperature, sem, response_model, max_retries,
                                           context, key, specs)
        except BaseException:
            if not mine.done():
                mine.set_result(None)  # a waiting twin sends the call itself
            raise
        finally:
            if self._inflight.get(key) is mine:
                del self._inflight[key]
        if not mine.done():
            mine.set_result(result)
        return result

    async def _chat_once(self, ep: Endpoint, kind: str, messages: Sequence[Mapping[str, Any]], temperature: float,
                         sem: asyncio.Semaphore, response_model: type[BaseModel] | None, max_retries: int,
                         context: dict[str, Any] | None, key: str, tools: list[dict[str, Any]] | None) -> CallResult:
        schema_text = "" if response_model is None else json.dumps(response_model.model_json_schema())
        if tools:
            schema_text = json.dumps(tools)
        async with sem:
            hit = None if self.cache is None else self.cache.get(key)  # an identical call may have finished meanwhile
            if hit is not None:
                self.n_cached += 1
                return CallResult(**{**hit, "n_requests": 0, "cached": True, "key": key})
            estimate = self._reserve(ep, messages, schema_text, max_retries + 1 if response_model else 1)
            actual: float | None = None
            try:
                result = await self._call(ep, messages, temperature, response_model, max_retries, context, key, tools)
                actual = result.cost_usd
            except CallError as exc:
                actual = exc.cost_usd or 0.0
                raise
            except (asyncio.CancelledError, KeyboardInterrupt):
                actual = estimate  # cut short in flight: the request may be billed; its reservation bounds it
                raise
            finally:
                self.budget.settle(estimate, actual)
                self.changed()
        if self.cache is not None:
            payload = {k: v for k, v in result.__dict__.items() if k not in ("cached", "key", "n_requests")}
            self.cache.put(key, payload, model=ep.model, prompt_id=kind)
        return result

    async def _call(self, ep: Endpoint, messages: Sequence[Mapping[str, Any]], temperature: float,
                    response_model: type[BaseModel] | None, max_retries: int, context: dict[str, Any] | None,
                    key: str, tools: list[dict[str, Any]] | None) -> CallResult:
        """:meth:`send`, with a failure raised as :class:`CallError`."""
        try:
            ex = await self.send(ep, messages, temperature=temperature, response_model=response_model,
                                 max_retries=max_retries, context=context, tools=tools)
        except LLMConfigError as exc:
            raise CallError(str(exc), "config") from None
        if not ex.ok:
            kind = ex.error_kind or "error"
            raise CallError(f"{ep.model} at {ep.base_url or 'api.openai.com'}: {kind}: {ex.error}", kind,
                            ex.spent_usd) from ex.exception
        return CallResult(text=(ex.text or "") if response_model is None else None,
                          data=None if ex.parsed is None else ex.parsed.model_dump(mode="json"),
                          prompt_tokens=ex.prompt_tokens, completion_tokens=ex.completion_tokens,
                          cost_usd=ex.cost_usd, latency_s=float(ex.latency_s or 0.0), n_requests=ex.n_requests,
                          cached=False, key=key, tool_calls=ex.tool_calls)

    # -- the judge's batches ---------------------------------------------------------------------------------
    async def batch(self, ep: Endpoint, calls: Sequence[PromptCall], *, temperature: float, mode: Any,
                    max_retries: int, store: Callable[[PromptCall, Exchange], Mapping[str, Any]],
                    claim_poll_s: float = 0.5, breaker_after: int = 5,
                    progress: Callable[[int, int], None] | None = None, given: int = 0,
                    total: int | None = None) -> BatchResult:
        """Send many structured calls, sharing the cache with other processes (:mod:`agentstats.llm.batch`).

        Parameters
        ----------
        ep : Endpoint
            ``ep.concurrency`` calls are in flight at once.
        calls : list of PromptCall
        temperature : float
        mode : instructor.Mode
        max_retries : int
            instructor re-asks after output that does not validate.
        store : callable
            ``store(call, exchange) -> payload``: what the cache keeps of a successful call.
        claim_poll_s : float
            How often a call waiting for another process's reply looks for it (seconds).
        breaker_after : int
            Consecutive calls that could not connect (every retry spent) after which the rest are not sent.
        progress : callable, optional
            ``progress(done, total)``.
        given, total : int
            Results the caller already holds (counted as done), and the total reported to ``progress``.

        Returns
        -------
        BatchResult
            One :class:`~agentstats.llm.batch.Outcome` per call, in order. A call refused by the budget or the
            wall-time limit is an outcome that was not sent.
        """
        session = Session()
        mode_text = str(mode.value) if hasattr(mode, "value") else str(mode)
        schemas: dict[type[BaseModel], str] = {}  # the response schemas' text, for the estimate under a limit

        def schema_text(rm: type[BaseModel]) -> str:
            if self.budget.limit is None:  # nothing to refuse: the estimate only needs to be counted
                return ""
            if rm not in schemas:
                schemas[rm] = json.dumps(rm.model_json_schema())
            return schemas[rm]

        async def send(call: PromptCall, keep_retrying: Callable[[], bool]) -> Exchange:
            messages = call.prompt.render(**call.fields)
            try:
                estimate = self._reserve(ep, messages, schema_text(call.response_model), max_retries + 1)
            except (BudgetExhausted, WallTimeExceeded) as exc:
                return Exchange(not_sent=str(exc))
            ex: Exchange | None = None
            actual: float | None = None
            try:
                ex = await self.send(ep, messages, temperature=temperature, response_model=call.response_model,
                                     max_retries=max_retries, context=call.context, mode=mode, session=session,
                                     keep_retrying=keep_retrying)
                actual = ex.spent_usd
            except (asyncio.CancelledError, KeyboardInterrupt):
                actual = estimate  # cut short in flight: counted at its reservation, as in chat()
                raise
            finally:
                self.budget.settle(estimate, actual)
                self.changed()
            return ex

        run = BatchRun(send, store, self.cache, model=ep.model, endpoint=ep.address(),
                       key=lambda c: call_key(ep.model, c, temperature=temperature, mode=mode_text,
                                              max_tokens=ep.max_tokens),
                       concurrency=ep.concurrency, claim_poll_s=claim_poll_s, breaker_after=breaker_after,
                       progress=progress, given=given, total=total)
        try:
            return await run.run(calls)
        finally:
            await session.close()


def _reply_tool_calls(message: Any) -> list[dict[str, Any]]:
    """Return the tool calls of a chat reply's message as ``{id, name, arguments}`` (arguments: the raw JSON string).

    Nothing is decoded here: the caller records what the model sent, and an argument string that is not JSON is
    scored as a malformed call (:class:`agentstats.records.trial.ToolCall`), not refused.
    """
    out = []
    for tc in getattr(message, "tool_calls", None) or []:
        fn = getattr(tc, "function", None) or getattr(tc, "custom", None)
        name = getattr(fn, "name", None) or ""
        args = getattr(fn, "arguments", None)
        if args is None:
            args = getattr(fn, "input", None)
        out.append({"id": getattr(tc, "id", None), "name": str(name),
                    "arguments": args if isinstance(args, str) else "" if args is None else json.dumps(args)})
    return out

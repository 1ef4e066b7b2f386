"""Paid calls of the loop: one async caller for the agent, the judge and the optimizer, with cache and budget.

Every call goes through :meth:`Caller.chat`:

1. Its cache key (model, call kind and prompt id, messages, temperature, token cap, response schema, and the tool
   specs offered, when any) is looked up in
   the run's on-disk cache (:class:`agentstats.llm.cache.JudgeCache`, one SQLite file in the run
   folder): a cached call is answered from disk and costs nothing, so a resumed run never pays twice for a call
   that completed. An identical call already in flight in the same batch is waited for, not sent again.
2. Otherwise a conservative cost estimate is *reserved* against the budget before the request is sent
   (:class:`Budget`): prompt tokens = characters / ``chars_per_token`` (plus the response schema's and the tool specs'
   text), completion
   tokens = the endpoint's ``max_tokens`` cap, each instructor re-ask counted. A call whose estimate does not fit
   under what is left is not sent (:class:`BudgetExhausted`), so the budget is never exceeded as long as the
   estimate bounds the real usage (the completion cap makes the completion part a hard bound).
3. The request is sent with bounded concurrency (one ``asyncio.Semaphore`` per batch) and retried with exponential
   backoff and full jitter on timeouts, connection errors, HTTP 429 and 5xx, honouring ``Retry-After``
   (``tenacity``, with the judge's error classification :func:`agentstats.llm.transport.classify`).
4. The actual cost (token usage x the price table, :func:`agentstats.llm.pricing.cost_usd`) replaces the
   reservation and the reply is written to the cache at once, with its cost.

The money spent by a run is the sum of the costs stored in its cache (:meth:`Budget.from_cache`), so it survives a
crash or a kill and a resumed run starts from the right amount. :attr:`Caller.on_change` is told of every request as
it is sent and of every settled cost, for a durable record of the run's totals (the loop's ``spent.jsonl``), which
also counts the requests and costs the cache keeps no trace of (retries, failed calls, a reply a kill kept from the
cache).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import os
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from agentstats.llm.cache import JudgeCache, cache_key
from agentstats.llm.pricing import cost_usd
from agentstats.llm.transport import AUTH_KINDS, classify, clip, is_loopback, retry_after_s, unwrap
from agentstats.optimize.config import Endpoint

__all__ = ["Budget", "BudgetExhausted", "CallError", "CallResult", "Caller", "WallTimeExceeded"]


class BudgetExhausted(RuntimeError):
    """A call was not sent: its estimated cost does not fit under what is left of the budget."""


class WallTimeExceeded(RuntimeError):
    """A call was not sent: the run's wall-time limit has passed."""


class CallError(RuntimeError):
    """A call failed after every retry (or was refused: ``auth`` is True for HTTP 401/403)."""

    def __init__(self, message: str, kind: str, cost_usd: float | None = None):
        super().__init__(message)
        self.kind = kind
        self.auth = kind in AUTH_KINDS
        #: Cost of the completions the failed call did receive (instructor re-asks of invalid output).
        self.cost_usd = cost_usd


class Budget:
    """Money spent and reserved against an optional limit (US dollars).

    Parameters
    ----------
    limit : float or None
        ``max_total_cost_usd``; None: no limit (costs are still summed).
    spent : float
        Cost of the calls already made (from the run's cache on a resume).

    Notes
    -----
    ``reserve(estimate)`` is called before a request and fails when ``spent + reserved + estimate > limit``;
    ``settle(estimate, actual)`` releases the reservation and adds the actual cost. Calls whose cost is unknown (a
    model missing from the price table) are counted in ``unknown_cost_calls``; the loop refuses to start with a
    limit and an unpriced model, so under a limit every cost is known.
    """

    def __init__(self, limit: float | None, spent: float = 0.0):
        self.limit = limit
        self.spent = float(spent)
        self.reserved = 0.0
        self.unknown_cost_calls = 0
        self.refused = 0

    @classmethod
    def from_cache(cls, limit: float | None, cache: JudgeCache) -> Budget:
        """Return a budget whose ``spent`` is the sum of the costs recorded in ``cache``."""
        frame = cache.to_frame()
        spent = float(frame["cost_usd"].fillna(0).sum()) if "cost_usd" in frame else 0.0
        return cls(limit, spent)

    @property
    def left(self) -> float | None:
        """Money left (None without a limit)."""
        return None if self.limit is None else self.limit - self.spent - self.reserved

    def reserve(self, estimate: float) -> None:
        """Reserve ``estimate`` dollars for a call about to be sent.

        Raises
        ------
        BudgetExhausted
            When it does not fit; nothing is reserved.
        """
        if self.limit is not None and self.spent + self.reserved + estimate > self.limit + 1e-12:
            self.refused += 1
            raise BudgetExhausted(
                f"the next call (estimated ${estimate:.6f}) would exceed the budget of ${self.limit:g} "
                f"(${self.spent:.6f} spent, ${self.reserved:.6f} reserved by calls in flight)"
            )
        self.reserved += estimate

    def settle(self, estimate: float, actual: float | None) -> None:
        """Release a reservation and add the call's actual cost (None: unknown, counted)."""
        self.reserved = max(self.reserved - estimate, 0.0)
        if actual is None:
            self.unknown_cost_calls += 1
        else:
            self.spent += actual


@dataclass(frozen=True)
class CallResult:
    """One call's answer and usage.

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


def _api_key(ep: Endpoint) -> str:
    key = os.environ.get(ep.api_key_env)
    if key:
        return key
    base = ep.base_url or os.environ.get("OPENAI_BASE_URL")
    if base and is_loopback(base):
        return "local-server-ignores-keys"
    raise CallError(
        f"no API key for {base or 'api.openai.com'}: set the environment variable {ep.api_key_env} (keys are read "
        "from the environment only; a loopback base_url needs none)",
        "config",
    )


class Caller:
    """Sends the loop's calls (see the module docstring) against one run cache and one budget.

    Parameters
    ----------
    cache : JudgeCache
        The run's cache.
    budget : Budget
    prices : mapping
        ``model -> (input, output)`` USD per 1M tokens.
    chars_per_token : float
        Characters per prompt token assumed by the cost estimate.
    jitter_seed : int, optional
        Seed of the backoff jitter.
    deadline : float, optional
        ``time.monotonic()`` after which no call is sent (:class:`WallTimeExceeded`).

    Attributes
    ----------
    n_requests : int
        HTTP requests sent (counted as each is sent, before its reply).
    on_change : callable or None
        Called with no arguments after each request is counted and after each call's cost is settled (also of a
        call that failed or was cancelled), so a caller can record the totals durably as they change.
    """

    def __init__(self, cache: JudgeCache, budget: Budget, prices: Mapping[str, tuple[float, float]],
                 chars_per_token: float = 2.0, jitter_seed: int | None = 0, deadline: float | None = None):
        self.cache = cache
        self.deadline = deadline
        self.budget = budget
        self.prices = dict(prices)
        self.chars_per_token = float(chars_per_token)
        self._rng = random.Random(jitter_seed)
        self.n_requests = 0
        self.on_change: Callable[[], None] | None = None
        self.n_calls = 0
        self.n_cached = 0
        self.retry_waits: list[float] = []
        self._clients: dict[tuple[Any, ...], tuple[Any, Any]] = {}
        self._inflight: dict[str, asyncio.Future[CallResult | None]] = {}

    def changed(self) -> None:
        """Tell :attr:`on_change` that the totals changed (a request sent, a cost settled)."""
        if self.on_change is not None:
            self.on_change()

    def _sent(self, counter: dict[str, Any]) -> None:
        counter["requests"] += 1
        self.n_requests += 1
        self.changed()

    def _client(self, ep: Endpoint, structured: bool) -> tuple[Any, Any]:
        """Return the batch's ``openai.AsyncOpenAI`` client for this endpoint (and its instructor wrapper)."""
        import instructor
        import openai

        slot = (ep.base_url, ep.api_key_env, ep.timeout)
        got = self._clients.get(slot)
        if got is None:
            client = openai.AsyncOpenAI(base_url=ep.base_url, api_key=_api_key(ep), max_retries=0, timeout=ep.timeout)
            got = (client, instructor.from_openai(client, mode=instructor.Mode.TOOLS))
            self._clients[slot] = got
        return got

    async def aclose(self) -> None:
        """Close the batch's HTTP clients (call at the end of every event loop that used :meth:`chat`)."""
        clients, self._clients = self._clients, {}
        self._inflight = {}
        for client, _ in clients.values():
            await client.close()

    def estimate(self, ep: Endpoint, messages: Sequence[Mapping[str, Any]], schema_text: str = "",
                 asks: int = 1) -> float:
        """Conservative cost estimate of one call in dollars (module docstring); ``inf`` for an unpriced model."""
        chars = sum(len(m.get("content") or "") for m in messages) + len(schema_text)
        prompt_tokens = math.ceil(chars / self.chars_per_token) + 8 * len(messages) + 16
        cost = cost_usd(ep.model, prompt_tokens, ep.max_tokens, self.prices)
        if cost is None:
            return 0.0 if self.budget.limit is None else math.inf
        return cost * asks

    def key(self, ep: Endpoint, kind: str, messages: Sequence[Mapping[str, Any]], temperature: float,
            response_model: type[BaseModel] | None, tools: Sequence[Mapping[str, Any]] | None = None) -> str:
        """Cache key of a call (the endpoint's URL is not part of it: the same model answers the same).

        The tool specs sent (``tools``) are part of it when given, so a call with other specs is not answered from
        the cache; a call without tools has the key it had before tools could be sent.
        """
        schema = None if response_model is None else json.dumps(response_model.model_json_schema(), sort_keys=True)
        inputs: dict[str, Any] = {"messages": [dict(m) for m in messages]}
        if tools:
            inputs["tools"] = [dict(t) for t in tools]
        return cache_key(ep.model, kind, inputs, temperature=temperature, max_tokens=ep.max_tokens, schema=schema)

    async def chat(self, ep: Endpoint, kind: str, messages: Sequence[Mapping[str, Any]], *, temperature: float,
                   sem: asyncio.Semaphore, response_model: type[BaseModel] | None = None, max_retries: int = 0,
                   context: dict[str, Any] | None = None,
                   tools: Sequence[Mapping[str, Any]] | None = None) -> CallResult:
        """Make one call (cached, budgeted, retried); see the module docstring.

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
            Every attempt failed, or the endpoint refused the key (not retried).
        """
        if tools and response_model is not None:
            raise ValueError("Caller.chat: tools are for plain calls (a response_model is sent as instructor's tool)")
        specs = [dict(t) for t in tools] if tools else None
        key = self.key(ep, kind, messages, temperature, response_model, specs)
        self.n_calls += 1
        hit = self.cache.get(key)
        if hit is not None:
            self.n_cached += 1
            return CallResult(**{**hit, "n_requests": 0, "cached": True, "key": key})
        twin = self._inflight.get(key)
        if twin is not None:  # the same call is in flight in this batch: wait for its answer instead of paying twice
            got = await asyncio.shield(twin)
            if got is not None:
                self.n_cached += 1
                return dataclasses.replace(got, cached=True, n_requests=0)
        schema_text = "" if response_model is None else json.dumps(response_model.model_json_schema())
        if specs:
            schema_text = json.dumps(specs)
        mine: asyncio.Future[CallResult | None] = asyncio.get_running_loop().create_future()
        self._inflight.setdefault(key, mine)
        try:
            result = await self._chat_once(ep, kind, messages, temperature, sem, response_model, max_retries,
                                           context, key, schema_text, specs)
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
                         context: dict[str, Any] | None, key: str, schema_text: str,
                         tools: list[dict[str, Any]] | None = None) -> CallResult:
        async with sem:
            hit = self.cache.get(key)  # an identical call of this batch may have finished meanwhile
            if hit is not None:
                self.n_cached += 1
                return CallResult(**{**hit, "n_requests": 0, "cached": True, "key": key})
            if self.deadline is not None and time.monotonic() > self.deadline:
                raise WallTimeExceeded("the wall-time limit (max_wall_seconds) has passed; the call was not sent")
            estimate = self.estimate(ep, messages, schema_text, asks=max_retries + 1 if response_model else 1)
            self.budget.reserve(estimate)
            actual: float | None = None
            try:
                result = await self._send(ep, messages, temperature, response_model, max_retries, context, key,
                                          tools)
                actual = result.cost_usd
            except CallError as exc:
                actual = exc.cost_usd or 0.0
                raise
            finally:
                self.budget.settle(estimate, actual)
                self.changed()
        payload = {k: v for k, v in result.__dict__.items() if k not in ("cached", "key", "n_requests")}
        self.cache.put(key, payload, model=ep.model, prompt_id=kind)
        return result

    def _wait(self, attempt: int, exc: BaseException | None, ep: Endpoint) -> float:
        if exc is not None:
            ra = retry_after_s(exc)
            if ra is not None:
                return min(ra, ep.backoff_max_s)
        return self._rng.uniform(0.0, min(ep.backoff_max_s, ep.backoff_base_s * 2 ** (attempt - 1)))

    async def _send(self, ep: Endpoint, messages: Sequence[Mapping[str, Any]], temperature: float,
                    response_model: type[BaseModel] | None, max_retries: int, context: dict[str, Any] | None,
                    key: str, tools: list[dict[str, Any]] | None = None) -> CallResult:
        from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt

        counter = {"requests": 0, "prompt": 0, "completion": 0, "usage_missing": False}

        def count_usage(response: Any) -> None:
            usage = getattr(response, "usage", None)
            if usage is None or getattr(usage, "prompt_tokens", None) is None:
                counter["usage_missing"] = True
                return
            counter["prompt"] += int(usage.prompt_tokens or 0)
            counter["completion"] += int(usage.completion_tokens or 0)

        client, ic = self._client(ep, structured=response_model is not None)
        text: str | None = None
        data: dict[str, Any] | None = None
        calls: list[dict[str, Any]] | None = None
        t0 = time.perf_counter()
        if response_model is None:

            async def attempt_once() -> None:
                nonlocal text, calls
                self._sent(counter)
                extra: dict[str, Any] = {"tools": tools} if tools else {}
                resp = await client.chat.completions.create(
                    model=ep.model, messages=list(messages), temperature=temperature,
                    max_tokens=ep.max_tokens, **extra)
                count_usage(resp)
                message = resp.choices[0].message
                text = message.content or ""
                if tools:
                    calls = _reply_tool_calls(message)
        else:
            from instructor.core.hooks import Hooks

            hooks = Hooks()
            hooks.on("completion:kwargs", lambda *a, **k: self._sent(counter))
            hooks.on("completion:response", lambda response, *a, **k: count_usage(response))

            async def attempt_once() -> None:
                nonlocal data
                try:
                    parsed = await ic.chat.completions.create(
                        model=ep.model, messages=list(messages), response_model=response_model,
                        max_retries=max_retries, context=context, temperature=temperature,
                        max_tokens=ep.max_tokens, hooks=hooks)
                except Exception as exc:
                    inner = unwrap(exc)
                    if inner is not exc:
                        raise inner from exc
                    raise
                data = parsed.model_dump(mode="json")

        def retryable(exc: BaseException) -> bool:
            return classify(exc)[1]

        def before_sleep(rs: Any) -> None:
            self.retry_waits.append(float(rs.upcoming_sleep))

        try:
            async for attempt in AsyncRetrying(
                stop=stop_after_attempt(ep.retry_attempts),
                wait=lambda rs: self._wait(rs.attempt_number,
                                           rs.outcome.exception() if rs.outcome else None, ep),
                retry=retry_if_exception(retryable), reraise=True, before_sleep=before_sleep,
            ):
                with attempt:
                    await attempt_once()
        except Exception as exc:
            kind, _ = classify(exc)
            spent = cost_usd(ep.model, int(counter["prompt"]), int(counter["completion"]), self.prices)
            raise CallError(f"{ep.model} at {ep.base_url or 'api.openai.com'}: {kind}: "
                            f"{clip(f'{type(exc).__name__}: {exc}')}", kind, spent) from exc
        pt = None if counter["usage_missing"] and not counter["prompt"] else int(counter["prompt"])
        ct = None if pt is None else int(counter["completion"])
        return CallResult(text=text, data=data, prompt_tokens=pt, completion_tokens=ct,
                          cost_usd=cost_usd(ep.model, pt, ct, self.prices), latency_s=time.perf_counter() - t0,
                          n_requests=int(counter["requests"]), cached=False, key=key, tool_calls=calls)


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

"""Many structured calls at once, shared safely with other processes: the batch mode of the LLM client.

:meth:`agentstats.llm.client.LLMClient.batch` sends a list of :class:`PromptCall` (a versioned prompt, its field values
and a pydantic response model) and returns one :class:`Outcome` per call, in order; a failed call is an outcome, never
an exception. How a batch runs (:class:`BatchRun`):

1. Replies already in the cache are taken first (one query). Calls with the same cache key are sent once; the
   repeats share the reply (:attr:`Outcome.duplicate`).
2. The first call to send goes alone (a *probe*): a refused key (HTTP 401/403) or an endpoint that cannot be reached
   shows after one call, before the others are sent. The rest run concurrently, ``concurrency`` at a time.
3. Before sending, each call claims its cache key (:meth:`agentstats.llm.cache.JudgeCache.claim`): a second process
   on the same cache waits for the reply instead of paying for it again, polling every ``claim_poll_s`` seconds;
   claims held are refreshed (heartbeat) every third of the cache's lease. A successful reply is stored the moment
   it arrives (which releases its claim); a failed one releases the claim, so another process may try.
4. The circuit breaker (:class:`Breaker`) stops the batch on a refused key, or when the endpoint cannot be reached:
   calls not yet sent become outcomes that were *not sent* (``exchange.not_sent``), and calls in flight stop
   retrying.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pydantic import BaseModel

from agentstats.llm.cache import ClaimState, JudgeCache, cache_key
from agentstats.llm.prompts.template import PromptTemplate
from agentstats.llm.transport import AUTH_KINDS, Exchange

__all__ = ["BatchResult", "BatchRun", "Breaker", "Outcome", "PromptCall", "call_key"]

#: ``progress(done, total)``, called as calls of a batch settle.
ProgressFn = Callable[[int, int], None]


@dataclass(frozen=True)
class PromptCall:
    """One structured call of a batch: a prompt, the values of its fields, and the response model to validate.

    Attributes
    ----------
    prompt : PromptTemplate
        Rendered with ``fields`` when the call is sent; its id enters the cache key and is recorded with the reply.
    fields : mapping of str to str
        The prompt's field values.
    response_model : pydantic model class
        What the model must return (instructor validates it and re-asks on invalid output).
    context : dict, optional
        instructor validation context.
    tag : str
        What the caller calls this call (the judge: the metric); not part of the cache key.
    """

    prompt: PromptTemplate
    fields: Mapping[str, str]
    response_model: type[BaseModel]
    context: dict[str, Any] | None = None
    tag: str = ""


def call_key(model: str, call: PromptCall, *, temperature: float, mode: str, max_tokens: int | None) -> str:
    """Return the cache key of a batch call (:func:`agentstats.llm.cache.cache_key`).

    Made of the model, the prompt id, the field values, the response model's name, the temperature, the instructor
    mode and the completion cap.
    """
    return cache_key(model, call.prompt.id, dict(call.fields), schema=call.response_model.__name__,
                     temperature=temperature, mode=mode, max_tokens=max_tokens)


@dataclass(frozen=True)
class Outcome:
    """What became of one call of a batch.

    Attributes
    ----------
    call : PromptCall
    key : str
        The call's cache key.
    source : {"live", "cache", "shared"}
        ``"live"``: this batch sent the call (or did not: ``exchange.not_sent``); ``"cache"``: the reply was in the
        cache when the batch started; ``"shared"``: it arrived while the batch waited (another process's claim).
    exchange : Exchange or None
        The live call (``source == "live"``).
    payload : dict or None
        The cached reply (``source`` ``"cache"`` or ``"shared"``), as the batch's ``store`` made it.
    duplicate : bool
        The call repeats an earlier call of the batch (same key): it was not sent, the earlier one's reply is shared.
    """

    call: PromptCall
    key: str
    source: Literal["live", "cache", "shared"]
    exchange: Exchange | None = None
    payload: Mapping[str, Any] | None = None
    duplicate: bool = False


class _Settled(Protocol):
    @property
    def ok(self) -> bool: ...

    @property
    def error_kind(self) -> str | None: ...

    @property
    def error(self) -> str | None: ...


class Breaker:
    """The circuit breaker of a batch: whether it stopped sending (refused key, unreachable endpoint), and why.

    Attributes
    ----------
    stop_reason : str or None
        Why the batch stopped; None while it runs.
    auth : Exchange or None
        The first call the endpoint refused for its credentials (HTTP 401/403).
    """

    def __init__(self) -> None:
        self.stop_reason: str | None = None
        self.auth: _Settled | None = None
        self.ok_seen = False
        self.consecutive_unreachable = 0

    def observe(self, v: _Settled, breaker_after: int, endpoint: str) -> None:
        """Take one settled call into account.

        A refused key stops the batch at once. A call that could not connect (every retry spent) stops it when
        nothing succeeded yet (an endpoint that never answered), or when ``breaker_after`` such calls came in a row;
        any other outcome, except a call not sent, resets that count.
        """
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


@dataclass
class BatchResult:
    """Outcomes of a batch, one per call in order, with the breaker's state and counts.

    ``cache_hits`` counts calls answered from the cache, ``shared`` included (answered by another process's claim
    while this batch waited); ``deduplicated`` the repeats of a call within the batch.
    """

    outcomes: list[Outcome]
    breaker: Breaker = field(default_factory=Breaker)
    cache_hits: int = 0
    shared: int = 0
    deduplicated: int = 0


#: A process waiting for another's reply: (found, payload), or (False, None) when the key is free to claim.
_Waiter = asyncio.Future[tuple[bool, dict[str, Any] | None]]


class BatchRun:
    """One batch (see the module docstring).

    Parameters
    ----------
    send : callable
        ``send(call, keep_retrying) -> Exchange``: sends one call (``keep_retrying()`` is False once the batch
        stopped, so the call stops retrying).
    store : callable
        ``store(call, exchange) -> payload``: what the cache keeps of a successful call.
    cache : JudgeCache or None
        Cache with claims; None: nothing cached, no claims.
    model : str
        Model name, recorded with each stored reply and in the cache keys.
    endpoint : str
        The endpoint's address, for the breaker's message.
    key : callable
        ``key(call) -> str``, the cache key (:func:`call_key`).
    concurrency : int
    claim_poll_s : float
    breaker_after : int
    progress : callable, optional
        ``progress(done, total)``.
    given, total : int
        Results the caller already holds (counted as done from the start), and the total reported to ``progress``.
    """

    def __init__(self, send: Callable[[PromptCall, Callable[[], bool]], Awaitable[Exchange]],
                 store: Callable[[PromptCall, Exchange], Mapping[str, Any]], cache: JudgeCache | None, *,
                 model: str, endpoint: str, key: Callable[[PromptCall], str], concurrency: int,
                 claim_poll_s: float, breaker_after: int, progress: ProgressFn | None = None, given: int = 0,
                 total: int | None = None):
        self.send = send
        self.store = store
        self.cache = cache
        self.model = model
        self.endpoint = endpoint
        self.key = key
        self.concurrency = concurrency
        self.claim_poll_s = claim_poll_s
        self.breaker_after = breaker_after
        self.progress = progress
        self.given = given
        self.total = total
        self._waiters: dict[str, _Waiter] = {}
        self._poller: asyncio.Task[None] | None = None

    async def run(self, calls: Sequence[PromptCall]) -> BatchResult:
        """Settle every call (the module docstring); outcomes in the order of ``calls``."""
        keys = [self.key(c) for c in calls]
        total = self.given + len(calls) if self.total is None else self.total
        res = BatchResult([])
        slots: list[Outcome | None] = [None] * len(calls)
        todo: dict[str, list[int]] = {}
        cached = self.cache.get_many(keys) if (self.cache is not None and keys) else {}
        done = self.given
        for i, (c, k) in enumerate(zip(calls, keys, strict=True)):
            if k in cached:
                slots[i] = Outcome(c, k, "cache", payload=cached[k])
                res.cache_hits += 1
                done += 1
            elif k in todo:
                todo[k].append(i)
                res.deduplicated += 1
            else:
                todo[k] = [i]
        if self.progress and done:
            self.progress(done, total)
        if todo:
            counter = [done]

            def fill(idxs: list[int], outcome: Outcome) -> None:
                for j, i in enumerate(idxs):
                    slots[i] = outcome if j == 0 else dataclasses.replace(outcome, duplicate=True)
                counter[0] += len(idxs)
                if self.progress:
                    self.progress(counter[0], total)

            await self._send_all(calls, todo, res, fill)
        res.outcomes = [o for o in slots if o is not None]
        return res

    async def _send_all(self, calls: Sequence[PromptCall], todo: dict[str, list[int]], res: BatchResult,
                        fill: Callable[[list[int], Outcome], None]) -> None:
        sem = asyncio.Semaphore(self.concurrency)
        heart = asyncio.create_task(self._heartbeat()) if self.cache is not None else None
        try:
            keys = list(todo)
            # the probe: alone, so a bad key or a dead endpoint costs one call
            await self._settle(keys[0], calls[todo[keys[0]][0]], todo[keys[0]], res, sem, fill)
            if len(keys) > 1:
                await asyncio.gather(*(self._settle(k, calls[todo[k][0]], todo[k], res, sem, fill)
                                       for k in keys[1:]))
        finally:
            for task in (heart, self._poller):
                if task is not None:
                    task.cancel()
            if self.cache is not None:
                self.cache.release_all()

    async def _settle(self, key: str, call: PromptCall, idxs: list[int], res: BatchResult, sem: asyncio.Semaphore,
                      fill: Callable[[list[int], Outcome], None]) -> None:
        breaker = res.breaker
        while True:
            if breaker.stop_reason is not None:
                ex = Exchange(not_sent=breaker.stop_reason)
                break
            state: ClaimState = "mine"
            payload: dict[str, Any] | None = None
            if self.cache is not None:
                state, payload = self.cache.claim(key)
            if state == "busy":  # another process is asking for it: wait for its reply
                found, payload = await self._wait_for(key)
                if not found:
                    continue  # its owner gave up or died: claim it ourselves
            if payload is not None:
                res.cache_hits += 1
                res.shared += 1
                fill(idxs, Outcome(call, key, "shared", payload=payload))
                return
            async with sem:
                if breaker.stop_reason is None:
                    ex = await self.send(call, lambda: breaker.stop_reason is None)
                else:
                    ex = Exchange(not_sent=breaker.stop_reason)
            if self.cache is not None:
                if ex.ok:
                    self.cache.put(key, self.store(call, ex), model=self.model, prompt_id=call.prompt.id)
                else:
                    self.cache.release(key)
            breaker.observe(ex, self.breaker_after, self.endpoint)
            break
        fill(idxs, Outcome(call, key, "live", exchange=ex))

    async def _wait_for(self, key: str) -> tuple[bool, dict[str, Any] | None]:
        fut: _Waiter = asyncio.get_running_loop().create_future()
        self._waiters[key] = fut
        if self._poller is None or self._poller.done():
            self._poller = asyncio.create_task(self._poll())
        return await fut

    async def _poll(self) -> None:
        assert self.cache is not None
        while self._waiters:
            await asyncio.sleep(self.claim_poll_s)
            found, free = self.cache.poll(list(self._waiters))
            for k, payload in found.items():
                self._waiters.pop(k).set_result((True, payload))
            for k in free:
                self._waiters.pop(k).set_result((False, None))

    async def _heartbeat(self) -> None:
        assert self.cache is not None
        while True:
            await asyncio.sleep(self.cache.lease_s / 3)
            self.cache.heartbeat()

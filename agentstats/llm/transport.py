"""The transport half of the LLM client: what one call came to, the HTTP clients, and the retry rules.

:class:`Exchange` records one call over every request it took (instructor re-asks and transport retries): the reply,
or the error and its kind, tokens, requests, attempts, backoff waits, latency. :class:`Session` holds the ``openai``
clients of one event loop. The rules:

* Which failures are retried (:func:`classify`): timeouts, connection errors, HTTP 429, 5xx, 408/409 and truncated
  output; not retried: other HTTP 4xx (401/403 are authentication failures, :data:`AUTH_KINDS`) and output that
  does not validate after instructor's re-asks.
* How long to wait (:func:`backoff_s`): the server's ``retry-after-ms`` / ``Retry-After`` when it sends one (capped),
  else exponential backoff with full jitter.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import email.utils
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agentstats.llm.endpoint import Endpoint
from agentstats.llm.pricing import cost_usd
from agentstats.llm.redact import redact

__all__ = [
    "AUTH_KINDS",
    "Exchange",
    "InvalidOutput",
    "Session",
    "backoff_s",
    "classify",
    "clip",
    "retry_after_s",
    "run_coro",
    "unwrap",
]

#: Error kinds that mean the credentials were refused: fail the run at once instead of asking again.
AUTH_KINDS = frozenset({"http_401", "http_403"})


def retry_after_s(exc: BaseException) -> float | None:
    """Seconds the server asked us to wait (``retry-after-ms`` or ``Retry-After``: seconds or an HTTP date)."""
    resp = getattr(exc, "response", None)
    headers = getattr(resp, "headers", None)
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return max(float(ms) / 1000.0, 0.0)
        except ValueError:
            pass
    ra = headers.get("retry-after")
    if ra is None:
        return None
    try:
        return max(float(ra), 0.0)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(ra)
        except (TypeError, ValueError):
            return None
        return max(when.timestamp() - time.time(), 0.0)


def backoff_s(attempt: int, exc: BaseException | None, ep: Endpoint, rng: random.Random) -> float:
    """Seconds to wait before attempt ``attempt + 1``, after ``exc`` ended attempt ``attempt`` (1-based).

    The server's ``Retry-After`` (:func:`retry_after_s`) when it sent one, capped at ``ep.backoff_max_s``; otherwise
    exponential backoff with full jitter: uniform on ``[0, min(backoff_max_s, backoff_base_s * 2**(attempt-1))]``
    (Brooker 2015, "Exponential Backoff And Jitter", AWS Architecture Blog).
    """
    if exc is not None:
        ra = retry_after_s(exc)
        if ra is not None:
            return min(ra, ep.backoff_max_s)
    return rng.uniform(0.0, min(ep.backoff_max_s, ep.backoff_base_s * 2 ** (attempt - 1)))


class InvalidOutput(ValueError):
    """A plain reply that did not parse after every re-ask (:meth:`agentstats.llm.client.LLMClient.send` ``parse=``).

    Attributes
    ----------
    replies : list of str or None
        Every reply, in order.
    """

    def __init__(self, message: str, replies: list[str | None]):
        super().__init__(message)
        self.replies = replies


def classify(exc: BaseException) -> tuple[str, bool]:
    """``(error_kind, retryable)`` for an exception raised by one attempt of a call."""
    import openai
    from instructor.core.exceptions import IncompleteOutputException, InstructorRetryException

    if isinstance(exc, (asyncio.TimeoutError, openai.APITimeoutError)):
        return "timeout", True
    if isinstance(exc, openai.APIConnectionError):
        return "connection", True
    if isinstance(exc, openai.RateLimitError):
        return "rate_limit", True
    if isinstance(exc, openai.APIStatusError):
        code = exc.status_code
        if code >= 500:
            return "server_error", True
        if code in (408, 409):
            return f"http_{code}", True
        return f"http_{code}", False
    if isinstance(exc, (IncompleteOutputException, openai.LengthFinishReasonError)):
        return "truncated", True
    if isinstance(exc, (InstructorRetryException, InvalidOutput)):
        return "invalid_output", False
    if isinstance(exc, openai.APIResponseValidationError):
        return "invalid_output", False
    return "error", False


def unwrap(exc: BaseException) -> BaseException:
    """Instructor wraps transport errors in InstructorRetryException; return the transport error when so."""
    import openai
    from instructor.core.exceptions import IncompleteOutputException, InstructorRetryException

    seen = 0
    while isinstance(exc, InstructorRetryException) and seen < 5:
        cause = exc.__cause__
        if isinstance(cause, (openai.APIError, IncompleteOutputException, asyncio.TimeoutError)):
            exc = cause
        else:
            break
        seen += 1
    return exc


def run_coro(factory: Callable[[], Any]) -> Any:
    """Run ``factory()``'s coroutine to completion, also from inside a running event loop (Jupyter)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(factory())
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as ex:
        return ex.submit(lambda: asyncio.run(factory())).result()


def clip(text: str, width: int = 500) -> str:
    """Collapse whitespace and cut ``text`` to ``width`` characters (for error messages kept in verdicts)."""
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


@dataclass
class Exchange:
    """What one call came to, over every HTTP request it took (instructor re-asks and transport retries).

    Attributes
    ----------
    parsed : pydantic model or None
        The validated response model (structured calls).
    text : str or None
        The reply's message content (plain calls; None when the reply had no content).
    tool_calls : list of dict or None
        The tool calls of a plain call sent with tools: ``{id, name, arguments}``, ``arguments`` the undecoded JSON.
    vectors : list of list of float or None
        One embedding per input text, in input order (embedding calls).
    answered : bool
        A reply came back and was read (False when no request succeeded, or the reply had no choice).
    exception : BaseException or None
        What ended the last attempt, when the call failed (transport errors unwrapped from instructor's).
    not_sent : str or None
        Why the call was never sent (a stopped batch, a refused budget); then nothing else is set.
    n_requests : int
        HTTP requests sent.
    attempts : int
        Transport-level attempts; instructor re-asks happen inside one attempt.
    tokens_in, tokens_out : int
        Prompt and completion tokens summed over the replies that reported usage.
    usage_missing : bool
        Some reply reported no usage.
    latency_s : float or None
        Seconds from the first attempt to the end of the last, backoff waits included.
    retry_waits_s : list of float
        The backoff waits taken, in order.
    cost_usd : float or None
        Cost of :attr:`prompt_tokens` and :attr:`completion_tokens` at the price table (None: unknown).
    spent_usd : float or None
        Cost of every token the replies reported (:attr:`tokens_in`, :attr:`tokens_out`), also of a failed call.
    """

    parsed: Any = None
    text: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    vectors: list[list[float]] | None = None
    answered: bool = False
    exception: BaseException | None = None
    not_sent: str | None = None
    n_requests: int = 0
    attempts: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    usage_missing: bool = False
    latency_s: float | None = None
    retry_waits_s: list[float] = field(default_factory=list)
    cost_usd: float | None = None
    spent_usd: float | None = None

    @property
    def ok(self) -> bool:
        """True when a reply came back and no error ended the call."""
        return self.answered and self.exception is None and self.not_sent is None

    @property
    def error_kind(self) -> str | None:
        """Why the call failed (:func:`classify`'s kinds, ``"not_sent"``, ``"error"``); None when it is ok."""
        if self.ok:
            return None
        if self.not_sent is not None:
            return "not_sent"
        return classify(self.exception)[0] if self.exception is not None else "error"

    @property
    def error(self) -> str | None:
        """The failure in one clipped line (exception type and message); None when the call is ok."""
        if self.ok:
            return None
        if self.not_sent is not None:
            return clip(f"not sent: {self.not_sent}")
        if self.exception is not None:
            return clip(redact(f"{type(self.exception).__name__}: {self.exception}"))
        return "no reply returned"

    @property
    def prompt_tokens(self) -> int | None:
        """Prompt tokens of the call; None when nothing was sent or no reply reported usage."""
        if self.n_requests == 0 or (self.usage_missing and not self.tokens_in):
            return None
        return self.tokens_in

    @property
    def completion_tokens(self) -> int | None:
        """Completion tokens of the call; None exactly when :attr:`prompt_tokens` is."""
        return None if self.prompt_tokens is None else self.tokens_out

    def count_usage(self, response: Any) -> None:
        """Add one reply's token usage (``response.usage``), or note that it reported none."""
        usage = getattr(response, "usage", None)
        if usage is None or getattr(usage, "prompt_tokens", None) is None:
            self.usage_missing = True
            return
        self.tokens_in += int(usage.prompt_tokens or 0)
        self.tokens_out += int(getattr(usage, "completion_tokens", None) or 0)

    def price(self, model: str, prices: Mapping[str, tuple[float, float]]) -> None:
        """Set :attr:`cost_usd` and :attr:`spent_usd` from the price table (:func:`agentstats.llm.pricing.cost_usd`)."""
        self.cost_usd = cost_usd(model, self.prompt_tokens, self.completion_tokens, prices)
        self.spent_usd = cost_usd(model, self.tokens_in, self.tokens_out, prices)


class Session:
    """The ``openai.AsyncOpenAI`` clients of one event loop, one per endpoint address, key variable and timeout.

    Clients are made on first use (the API key is read then: :meth:`agentstats.llm.endpoint.Endpoint.api_key`) and
    must be closed (:meth:`close`) before their event loop ends. Each keeps no retries of its own (``max_retries=0``):
    the client retries by its own rules.
    """

    def __init__(self) -> None:
        self._clients: dict[tuple[Any, ...], Any] = {}
        self._structured: dict[tuple[Any, ...], Any] = {}

    def openai(self, ep: Endpoint) -> Any:
        """Return the ``openai.AsyncOpenAI`` client for ``ep``.

        Raises
        ------
        LLMConfigError
            When no API key can be found for ``ep`` (:meth:`agentstats.llm.endpoint.Endpoint.api_key`).
        """
        import openai

        slot = (ep.base_url, ep.api_key_env, ep.timeout)
        client = self._clients.get(slot)
        if client is None:
            client = openai.AsyncOpenAI(base_url=ep.base_url, api_key=ep.api_key(), max_retries=0, timeout=ep.timeout)
            self._clients[slot] = client
        return client

    def instructor(self, ep: Endpoint, mode: Any) -> Any:
        """Return the instructor wrapper of :meth:`openai` for ``ep``, in instructor ``mode``."""
        import instructor

        slot = (ep.base_url, ep.api_key_env, ep.timeout, mode)
        wrapped = self._structured.get(slot)
        if wrapped is None:
            wrapped = instructor.from_openai(self.openai(ep), mode=mode)
            self._structured[slot] = wrapped
        return wrapped

    async def close(self) -> None:
        """Close every client (the session may be used again afterwards: new clients are made)."""
        clients, self._clients, self._structured = self._clients, {}, {}
        for client in clients.values():
            await client.close()

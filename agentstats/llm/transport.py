"""Transport helpers of the LLM judge: error classification, ``Retry-After``, loopback detection, event loops.

Which failures are retried (:func:`classify`): timeouts, connection errors, HTTP 429, 5xx, 408/409 and truncated
output; not retried: other HTTP 4xx (401/403 are authentication failures, see
:class:`agentstats.scoring.judge.base.JudgeAuthError`) and output that does not validate after instructor's
re-asks.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import email.utils
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlparse

__all__ = ["AUTH_KINDS", "classify", "clip", "is_loopback", "retry_after_s", "run_coro", "unwrap"]

#: Error kinds that mean the credentials were refused: fail the run at once instead of asking again.
AUTH_KINDS = frozenset({"http_401", "http_403"})


def is_loopback(base_url: str) -> bool:
    """Tell whether ``base_url`` points at this machine (``127.x``, ``localhost``, ``::1``)."""
    host = (urlparse(base_url).hostname or "").lower()
    return host in ("127.0.0.1", "localhost", "::1") or host.startswith("127.")


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


def classify(exc: BaseException) -> tuple[str, bool]:
    """``(error_kind, retryable)`` for an exception raised by one judge attempt."""
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
    if isinstance(exc, InstructorRetryException):
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

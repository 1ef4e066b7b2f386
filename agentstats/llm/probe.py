"""Is an LLM endpoint there? :func:`check_endpoint` asks it, before any work is done with it.

A judge or an agent behind an endpoint that is down would otherwise be found out call by call, each with its
retries and backoff (about a minute on a blackholed address), and a report would end with every verdict missing.
The probe first lists the endpoint's models (``GET {base_url}/models``, free on OpenAI-compatible servers). A list
means the server is there; a refused key (HTTP 401/403), a timeout, a connection error or a server that says it is
unavailable (HTTP 500, 502, 503, 504) means it cannot be used. Any other answer (404, 405, 501: a server without
that route, or something that is not an OpenAI-compatible API at all) is settled by one chat completion of one token
with the endpoint's model: an answer, a 400/422 (the request was understood) or a 429 (busy, the calls will wait)
means it is there; a 404 (no such model or route) or the failures above mean it is not. No retries beyond
``attempts``, each with a short timeout.

:class:`EndpointUnavailable` is what the command line turns into exit status 69 (``EX_UNAVAILABLE``), as the
evaluator-optimizer loop does for its endpoints.
"""

from __future__ import annotations

from typing import Any

from agentstats.llm.endpoint import Endpoint
from agentstats.llm.transport import AUTH_KINDS, classify, clip, run_coro

__all__ = ["DOWN_STATUSES", "EndpointUnavailable", "check_endpoint"]

#: HTTP statuses of a server or gateway that says the service is not available.
DOWN_STATUSES = frozenset({500, 502, 503, 504})


class EndpointUnavailable(RuntimeError):
    """An LLM endpoint cannot be used: it cannot be reached, says it is unavailable, or refuses the key.

    Attributes
    ----------
    address : str
        The base URL probed.
    kind : str
        ``"timeout"``, ``"connection"``, ``"server_error"`` (HTTP 500/502/503/504) or ``"refused"`` (HTTP 401/403).
    """

    def __init__(self, message: str, *, address: str, kind: str):
        super().__init__(message)
        self.address = address
        self.kind = kind


def check_endpoint(ep: Endpoint, *, user: str = "the LLM client", timeout: float = 10.0, attempts: int = 2) -> None:
    """Ask ``ep`` whether it can be used (module docstring); raise if it cannot.

    Parameters
    ----------
    ep : Endpoint
        The endpoint (its base URL, model and the variable holding the key).
    user : str
        Who needs the endpoint, for the messages (``"the LLM judge"``).
    timeout : float
        Seconds per attempt (at most the endpoint's own timeout).
    attempts : int
        Attempts after a timeout, a connection error or an unavailable server.

    Raises
    ------
    EndpointUnavailable
        Naming the address, what went wrong and how often it was tried.
    agentstats.llm.endpoint.LLMConfigError
        No API key for a non-loopback address (:meth:`Endpoint.api_key`).
    """
    key = ep.api_key(user)
    address = ep.address()
    seconds = min(float(timeout), float(ep.timeout))
    last = ""
    for _ in range(max(1, int(attempts))):
        kind, detail = run_coro(lambda: _ask(address, key, ep.model, seconds))
        if kind is None:
            return
        if kind == "refused":
            raise EndpointUnavailable(f"{user} at {address} refused the key in ${ep.api_key_env} ({detail}): "
                                      "check the key; nothing was scored", address=address, kind=kind)
        if kind == "not_found":
            raise EndpointUnavailable(
                f"{user} at {address} has no model {ep.model!r} or is not an OpenAI-compatible API ({detail}): "
                "check the address (--base-url, $OPENAI_BASE_URL) and the model (--judge-model); nothing was scored",
                address=address, kind=kind)
        last = f"{kind}: {detail}"
    raise EndpointUnavailable(
        f"{user} at {address} is not available ({last}; {attempts} attempt(s), {seconds:g} s each): nothing was "
        "scored; check the address (--base-url, $OPENAI_BASE_URL) and that the server is up",
        address=address, kind=last.split(":", 1)[0],
    )


async def _ask(address: str, key: str, model: str, timeout: float) -> tuple[str | None, str]:
    """One look: ``(None, "")`` when the endpoint can be used, else ``(kind, detail)`` (module docstring)."""
    import openai

    client = openai.AsyncOpenAI(base_url=address, api_key=key, max_retries=0, timeout=timeout)
    try:
        try:
            await client.models.list()
            return None, ""
        except Exception as exc:  # classified: a clear failure ends here, anything else asks a completion
            kind, detail = _failure(exc)
            if kind is not None:
                return kind, detail
        try:
            await client.chat.completions.create(model=model, messages=[{"role": "user", "content": "ping"}],
                                                 max_tokens=1)
            return None, ""
        except Exception as exc:
            kind, detail = _failure(exc)
            status = getattr(exc, "status_code", None)
            if kind is None and status == 404:
                return "not_found", "HTTP 404 to GET /models and to a chat completion"
            return kind, detail
    finally:
        await client.close()


def _failure(exc: Any) -> tuple[str | None, str]:
    """Classify one failed request: ``(kind, detail)`` for a clear failure, ``(None, "")`` for any other answer."""
    kind, _ = classify(exc)
    status = getattr(exc, "status_code", None)
    if kind in AUTH_KINDS:
        return "refused", f"HTTP {status}"
    if kind in ("timeout", "connection"):
        return kind, clip(str(exc) or type(exc).__name__, 200)
    if status in DOWN_STATUSES:
        return "server_error", f"HTTP {status}"
    return None, ""

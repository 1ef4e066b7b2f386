"""Secrets out of every message: API keys and ``Authorization`` / ``api-key`` values become ``[REDACTED]``.

Some endpoints echo the key in an error reply (a 401 body "Incorrect API key provided: sk-..."), and an error's text
travels on: into the run store (``node_invocations.error_message``), verdicts, the loop's journal and the terminal.
This module is the one rule for taking secrets out of such text; the places that keep or print a message call it:
the LLM client on every exception it catches (:func:`redact_exception`), live capture before it stores an error,
and :func:`agentstats.cli.common.fail` before it prints one.

What is redacted (:func:`redact`):

* every key this process used: those read by :meth:`agentstats.llm.endpoint.Endpoint.api_key` or given to an
  ``openai`` client that capture observed (:func:`register_secret`), and the value of every environment variable whose
  name ends in ``API_KEY``, ``_TOKEN`` or ``_SECRET``;
* the value after ``Authorization``, ``Proxy-Authorization``, ``api-key``, ``x-api-key`` (and ``api_key``,
  ``apikey``) followed by ``:`` or ``=``, a ``Bearer`` or ``Basic`` credential, and text shaped like an OpenAI or
  Anthropic key (``sk-`` and at least 16 letters, digits, ``-`` or ``_``).

Values shorter than 8 characters are never registered (a placeholder such as ``EMPTY`` would blank out words).
"""

from __future__ import annotations

import os
import re
import threading
from typing import Any

__all__ = ["REDACTED", "redact", "redact_exception", "register_secret"]

REDACTED = "[REDACTED]"
_MIN_LEN = 8
_SECRETS: set[str] = set()
_LOCK = threading.Lock()
_ENV_SUFFIXES = ("API_KEY", "_TOKEN", "_SECRET")

_HEADER = re.compile(
    r"(?i)\b((?:proxy-)?authorization|x-api-key|api[-_]?key)(['\"]?\s*[:=]\s*['\"]?)"
    r"(?>(?:(bearer|basic|token)\s+)?)(?!\[REDACTED\])([^\s'\",;)}\]]+)"
)
_BEARER = re.compile(r"(?i)\b(bearer|basic)\s+(?!\[REDACTED\])([A-Za-z0-9._~+/=-]{8,})")
_KEY_SHAPE = re.compile(r"\bsk-[A-Za-z0-9_-]{16,}")


def register_secret(value: Any) -> None:
    """Remember ``value`` (a key this process uses) so that :func:`redact` takes it out of every message.

    Parameters
    ----------
    value : str or None
        The secret. None, non-strings and strings shorter than 8 characters are ignored.
    """
    if isinstance(value, str) and len(value) >= _MIN_LEN:
        with _LOCK:
            _SECRETS.add(value)


def _secrets() -> list[str]:
    env = [v for k, v in os.environ.items() if k.upper().endswith(_ENV_SUFFIXES) and len(v) >= _MIN_LEN]
    with _LOCK:
        known = set(_SECRETS)
    return sorted(known.union(env), key=len, reverse=True)  # longest first: a key inside another goes with it


def redact(text: str) -> str:
    """Return ``text`` with every secret (see the module) replaced by ``[REDACTED]``.

    Parameters
    ----------
    text : str
        Any message: an exception's text, an HTTP error body, a log line.

    Returns
    -------
    str
        The same text, secrets replaced; unchanged when it holds none.
    """
    if not isinstance(text, str) or not text:
        return text
    for secret in _secrets():
        if secret in text:
            text = text.replace(secret, REDACTED)
    text = _HEADER.sub(lambda m: f"{m[1]}{m[2]}{m[3] + ' ' if m[3] else ''}{REDACTED}", text)
    text = _BEARER.sub(lambda m: f"{m[1]} {REDACTED}", text)
    return _KEY_SHAPE.sub(REDACTED, text)


def _redact_value(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: _redact_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact_value(v) for v in value]
    return value


def redact_exception[E: BaseException](exc: E) -> E:
    """Redact ``exc`` in place, with its causes and contexts: its arguments, ``message`` and ``body`` (openai's).

    The exception keeps its type, so what classifies it (HTTP status, retryable or not) is unchanged; only its text
    loses the secrets. Returns ``exc``.
    """
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        try:
            cur.args = tuple(_redact_value(a) for a in cur.args)
            for attr in ("message", "body"):
                if isinstance(getattr(cur, attr, None), (str, dict, list)):
                    setattr(cur, attr, _redact_value(getattr(cur, attr)))
        except (AttributeError, TypeError):  # an exception type that refuses new attributes keeps them
            pass
        cur = cur.__cause__ or cur.__context__
    return exc

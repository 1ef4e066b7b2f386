"""Where a call goes and how it is sent: :class:`Endpoint`, and the API key read from the environment.

Keys are never taken from arguments, files or code: :meth:`Endpoint.api_key` reads the variable named by
``api_key_env``. A missing key is an error (:class:`LLMConfigError`), except for a loopback ``base_url``
(``127.0.0.1``, ``localhost``, ``::1``): local OpenAI-compatible servers (vLLM, llama.cpp, Ollama, the test server)
ignore the key, so a placeholder is sent.
"""

from __future__ import annotations

import os
from urllib.parse import urlparse

from pydantic import BaseModel, ConfigDict, Field, field_validator

from agentstats.llm.redact import register_secret

__all__ = ["LOOPBACK_KEY", "Endpoint", "LLMConfigError", "is_loopback"]

#: What is sent as the key to a loopback endpoint when the key variable is unset.
LOOPBACK_KEY = "local-server-ignores-keys"


def is_loopback(base_url: str) -> bool:
    """Tell whether ``base_url`` points at this machine (``127.x``, ``localhost``, ``::1``)."""
    host = (urlparse(base_url).hostname or "").lower()
    return host in ("127.0.0.1", "localhost", "::1") or host.startswith("127.")


class LLMConfigError(ValueError):
    """A client of an LLM endpoint cannot be set up (no API key, a setting out of range)."""


class _Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Endpoint(_Settings):
    """An OpenAI-compatible endpoint and how to call it.

    Attributes
    ----------
    model : str
        Model name sent to the endpoint (and looked up in the price table).
    base_url : str, optional
        ``http://host:port/v1``; None: ``$OPENAI_BASE_URL`` or OpenAI.
    api_key_env : str
        Environment variable holding the key (keys are read from the environment only; a loopback ``base_url``
        needs none).
    concurrency : int
        Most requests in flight at once.
    retry_attempts : int
        Attempts per call for timeouts, connection errors, HTTP 408/409/429 and 5xx, and truncated output
        (exponential backoff with full jitter, ``Retry-After`` honoured).
    timeout : float
        Seconds per HTTP request.
    backoff_base_s, backoff_max_s : float
        Backoff: wait uniform in ``[0, min(max, base * 2**(attempt-1))]``; a server's ``Retry-After`` is used instead,
        capped at ``backoff_max_s``.
    max_tokens : int, optional
        Completion token cap sent with every call; also the completion size assumed by the budget check
        (:meth:`agentstats.llm.client.LLMClient.estimate`). None: no cap is sent, and a budget cannot bound the call.
    """

    model: str
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    concurrency: int = Field(default=8, ge=1)
    retry_attempts: int = Field(default=5, ge=1)
    timeout: float = Field(default=60.0, gt=0)
    backoff_base_s: float = Field(default=1.0, ge=0)
    backoff_max_s: float = Field(default=60.0, ge=0)

    @field_validator("base_url")
    @classmethod
    def _a_url(cls, v: str | None) -> str | None:
        """Refuse a ``base_url`` that is not an http(s) URL with a host: a config error, not an outage later."""
        if v is None:
            return v
        parsed = urlparse(v.strip())
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ValueError(f"base_url must be an http:// or https:// URL with a host (such as "
                             f"https://api.openai.com/v1), got {v!r}")
        return v
    max_tokens: int | None = Field(default=None, ge=1)

    def address(self) -> str:
        """Return the base URL calls go to: ``base_url``, else ``$OPENAI_BASE_URL``, else OpenAI's."""
        return self.base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"

    def api_key(self, user: str = "the LLM client") -> str:
        """Return the API key, read from the environment variable ``api_key_env``.

        Parameters
        ----------
        user : str
            Who needs the key, for the error message.

        Raises
        ------
        LLMConfigError
            When the variable is unset or empty and the endpoint is not a loopback address.
        """
        key = os.environ.get(self.api_key_env)
        if key:
            register_secret(key)  # redacted from every message from now on
            return key
        base = self.base_url or os.environ.get("OPENAI_BASE_URL")
        if base and is_loopback(base):
            return LOOPBACK_KEY
        raise LLMConfigError(
            f"{user} needs an API key for {base or 'api.openai.com'}: set the environment variable {self.api_key_env} "
            "(keys are read from the environment only; a loopback base_url needs none)"
        )

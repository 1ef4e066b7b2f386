"""OpenAI usage, cost and tool calls of the chat completions a captured node makes.

``openai``'s ``Completions.create`` and ``AsyncCompletions.create`` are wrapped once (when a run starts or its first
outermost call is made after the application imported ``openai``): each response made inside a captured node adds
its model, prompt and completion tokens and cost (prices from the run's table: ``prices=``, else
:data:`agentstats.llm.pricing.DEFAULT_PRICES`) to that node's frame, and its tool calls to the current message.
Observing never changes the call or its response, and never raises into the application.
"""

from __future__ import annotations

import contextlib
import functools
from typing import Any

from agentstats.capture.context import _FRAME, _Frame
from agentstats.llm.pricing import cost_usd
from agentstats.llm.redact import register_secret
from agentstats.records.trial import ToolCall

#: Whether ``openai`` is patched (read as ``openai_patch._PATCHED``: it changes once).
_PATCHED = False


def _patch_openai() -> None:
    """Observe ``openai`` chat completions (sync and async) made inside a captured node: usage, model, tool calls."""
    global _PATCHED
    if _PATCHED:
        return
    try:
        from openai.resources.chat import completions as mod
    except ImportError:  # pragma: no cover - openai is a dependency
        return

    sync_create = mod.Completions.create
    async_create = mod.AsyncCompletions.create

    @functools.wraps(sync_create)
    def create(self: Any, *args: Any, **kwargs: Any) -> Any:
        _register_key(self)
        response = sync_create(self, *args, **kwargs)
        _observe(response)
        return response

    @functools.wraps(async_create)
    async def acreate(self: Any, *args: Any, **kwargs: Any) -> Any:
        _register_key(self)
        response = await async_create(self, *args, **kwargs)
        _observe(response)
        return response

    mod.Completions.create = create  # type: ignore[method-assign]
    mod.AsyncCompletions.create = acreate  # type: ignore[method-assign]
    _PATCHED = True


def _register_key(resource: Any) -> None:
    """Remember the key of the application's ``openai`` client, so that an error echoing it is stored redacted."""
    with contextlib.suppress(Exception):
        register_secret(getattr(getattr(resource, "_client", None), "api_key", None))


def _observe(response: Any) -> None:
    """Add a chat completion to the node being run (if any); never raises."""
    frame = _FRAME.get()
    if frame is not None:
        with contextlib.suppress(Exception):  # observing never breaks the application's call
            _add_response(frame, response)


def _add_response(frame: _Frame, response: Any) -> None:
    """Add one response's model, tokens, cost (the run's prices) and tool calls to ``frame``."""
    usage = getattr(response, "usage", None)
    if usage is None and not hasattr(response, "choices"):  # a raw or streamed response: nothing to read
        return
    model = getattr(response, "model", None) or "unknown"
    p = getattr(usage, "prompt_tokens", None) if usage is not None else None
    c = getattr(usage, "completion_tokens", None) if usage is not None else None
    first = frame.model is None
    frame.model = model if first or frame.model == model else f"{frame.model},{model}"
    frame.in_tok += p or 0
    frame.out_tok += c or 0
    cost = cost_usd(model, p, c, frame.run.prices)
    frame.cost = cost if first else (None if frame.cost is None or cost is None else frame.cost + cost)
    with contextlib.suppress(Exception):
        message = response.choices[0].message
        for call in message.tool_calls or ():
            frame.interaction.calls().append(
                ToolCall(name=call.function.name, arguments=call.function.arguments, id=call.id)
            )

"""Decorators that record a node of the application: :func:`node` (a sync or async function) and :func:`trace_node`.

Each call inside a run records a node invocation: inputs, outputs, the exception type if it raised (``agent_error``;
the exception is re-raised unchanged), wall latency, and the token usage and cost of every OpenAI-compatible chat
completion made inside it (:mod:`agentstats.capture.openai_patch`). The function's result and exception are never
changed. Outside a run the function is called directly.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from agentstats.capture.context import _FRAME, _NODE_METRICS
from agentstats.capture.runs import current_run
from agentstats.metrics.registry import MetricSpec, resolve_metrics
from agentstats.store.nodes import node_fields

__all__ = ["node", "trace_node"]


def _bind(params: tuple[str, ...], args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    if len(args) == 1 and not kwargs and params:  # the usual node: one state argument
        return {params[0]: args[0]}
    inputs = dict(zip(params, args, strict=False))
    if len(args) > len(params):
        inputs["*args"] = list(args[len(params):])
    inputs.update(kwargs)
    return inputs


def node(name: str | Callable[..., Any] | None = None, *, metrics: Sequence[MetricSpec] = (),
         fields: Mapping[str, str] | None = None, kind: str = "node") -> Callable[..., Any]:
    """Decorate a function (sync or async) as a node of the application: each call inside a run is recorded.

    Parameters
    ----------
    name : str, optional
        Node name (default: the function's name). ``@agentstats.node`` without parentheses decorates the function
        under its own name.
    metrics : sequence
        Metrics computed on this node's invocations at :func:`~agentstats.capture.runs.end_run` (catalogue names,
        :class:`~agentstats.metrics.Metric` objects or functions ``(answer, expected)``; see
        :mod:`agentstats.capture.scoring`), in a run that calls this function: another function decorated with the
        same node name does not get them. Any catalogue metric or group name (``faithfulness``,
        ``retrieval_quality``, ``content_safety`` ...).
    fields : mapping of str to str, optional
        Role -> field the node's metrics read (``input``, ``output``, ``context``, ``expected``,
        ``retrieved_contexts`` or ``retrieved_ids``, ``relevance``, or another role of its metrics), looked up in
        the node's return value, then its arguments, then its state; defaults fit a LangGraph state: ``query``,
        ``answer``, ``context``, ``expected_answer``, ``retrieved_contexts``, ``relevance``
        (:mod:`agentstats.store.nodes`). Kept with the run, so ``load_trials(store, run=...)`` reads the same roles.
    kind : {"node", "tool"}
        ``"tool"`` also records each call as a tool call of the current message (name, arguments, result), so the
        tool-call scorer can grade it.

    Returns
    -------
    callable
        The decorator. Outside a run the function is called directly; inside one, its result and exception are
        those of the function, unchanged.
    """
    if callable(name):  # @agentstats.node without parentheses: the function itself came as the name
        return node(None, metrics=metrics, fields=fields, kind=kind)(name)
    if name is not None and not isinstance(name, str):
        raise TypeError(f"node name must be a string, got {type(name).__name__}")
    if kind not in ("node", "tool"):
        raise ValueError(f"kind must be 'node' or 'tool', got {kind!r}")
    metric_list = resolve_metrics(list(metrics)) if metrics else []
    role_fields = node_fields(fields, {r for m in metric_list for r in m.roles})

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        label: str = name if isinstance(name, str) else str(getattr(fn, "__name__", "node"))
        try:
            params = tuple(p.name for p in inspect.signature(fn).parameters.values()
                           if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))
        except (TypeError, ValueError):
            params = ()

        if inspect.iscoroutinefunction(fn):
            @functools.wraps(fn)
            async def awrapper(*args: Any, **kwargs: Any) -> Any:
                r = current_run()
                if r is None or r.status != "running":
                    return await fn(*args, **kwargs)
                frame = r._enter(label, kind, _bind(params, args, kwargs), metrics=metric_list, fields=role_fields)
                token = _FRAME.set(frame)
                try:
                    result = await fn(*args, **kwargs)
                except BaseException as exc:
                    _FRAME.reset(token)
                    r._exit(frame, None, exc)
                    raise
                _FRAME.reset(token)
                r._exit(frame, result, None)
                return result

            if metric_list or role_fields:
                _NODE_METRICS[awrapper] = (label, metric_list, role_fields)
            return awrapper

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            r = current_run()
            if r is None or r.status != "running":
                return fn(*args, **kwargs)
            frame = r._enter(label, kind, _bind(params, args, kwargs), metrics=metric_list, fields=role_fields)
            token = _FRAME.set(frame)
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:
                _FRAME.reset(token)
                r._exit(frame, None, exc)
                raise
            _FRAME.reset(token)
            r._exit(frame, result, None)
            return result

        if metric_list or role_fields:
            _NODE_METRICS[wrapper] = (label, metric_list, role_fields)
        return wrapper

    return decorate


class _Span:
    """What :func:`trace_node` yields: set the block's output with :meth:`set_output`."""

    def __init__(self) -> None:
        self.output: Any = None

    def set_output(self, output: Any) -> None:
        """Record ``output`` as the node's output (and, at the outermost level, the message's answer)."""
        self.output = output


@contextlib.contextmanager
def trace_node(name: str, inputs: Mapping[str, Any] | None = None, *, kind: str = "node") -> Iterator[_Span]:
    """Record a block of code as a node invocation (``with agentstats.trace_node("retriever", inputs=state):``).

    Works in sync and async code (the node stack is a context variable). An exception in the block is recorded
    with its type and re-raised unchanged. Outside a run nothing is recorded.

    Parameters
    ----------
    name : str
    inputs : mapping, optional
        Recorded as the node's inputs; a state mapping here gives the ids (see the module docstring).
    kind : {"node", "tool"}
    """
    span = _Span()
    r = current_run()
    if r is None or r.status != "running":
        yield span
        return
    ins = dict(inputs) if inputs is not None else {}
    frame = r._enter(name, kind, ins, state=ins)
    token = _FRAME.set(frame)
    try:
        yield span
    except BaseException as exc:
        _FRAME.reset(token)
        r._exit(frame, None, exc)
        raise
    _FRAME.reset(token)
    r._exit(frame, span.output, None)

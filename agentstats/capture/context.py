"""The node a call is made in: its frame, held in a context variable, and the metrics attached to nodes.

The node stack is a context variable, so concurrent asyncio tasks each see their own; a run is found the same way
(:func:`agentstats.capture.runs.current_run`).
"""

from __future__ import annotations

import contextvars
import time
import weakref
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Protocol

from agentstats.capture.records import _MsgRec, _TrialRec
from agentstats.metrics.base import Metric

__all__: list[str] = []


class _Owner(Protocol):
    """What a frame reads of the run it belongs to (:class:`agentstats.capture.recorder.Recorder`)."""

    @property
    def _invocations(self) -> Iterator[int]: ...

    @property
    def prices(self) -> Mapping[str, tuple[float, float]]: ...


class _Frame:
    """One node invocation in progress."""

    __slots__ = ("cost", "in_tok", "inputs_json", "interaction", "invocation_id", "kind", "message_id", "model",
                 "name", "out_tok", "parent", "run", "started", "t0", "trial")

    def __init__(self, run: _Owner, name: str, kind: str, parent: _Frame | None, inputs_json: str):
        self.run, self.name, self.kind, self.parent = run, name, kind, parent
        self.invocation_id = next(run._invocations)
        self.model: str | None = None
        self.in_tok = 0
        self.out_tok = 0
        self.cost: float | None = None
        self.inputs_json = inputs_json  # the inputs as the node got them (written at entry: a node may change them)
        self.trial: _TrialRec
        self.interaction: _MsgRec
        self.message_id: str | None = None
        self.started = time.time()
        self.t0: float  # wall latency: perf_counter at entry (set by Run._enter once its bookkeeping is done) and exit


_FRAME: contextvars.ContextVar[_Frame | None] = contextvars.ContextVar("agentstats_node", default=None)
#: Metrics attached to nodes by the decorator, per decorated function (held weakly: a function no longer alive leaves
#: it): the function -> (node name, metrics, role -> field map). A run scores the nodes called in it with the metrics
#: of the decorators it called (``Run._node_metrics``); this registry only gives the metrics of a node name the run
#: did not call, for its records from before a resume (the newest decorator of that name still alive).
_NODE_METRICS: weakref.WeakKeyDictionary[Callable[..., Any], tuple[str, list[Metric], dict[str, str]]] = (
    weakref.WeakKeyDictionary())

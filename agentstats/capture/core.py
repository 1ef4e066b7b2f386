"""Live capture: record what a running agent does into the run store, whatever framework it is written in.

::

    with agentstats.run("prompt-v2", store="agentstats.duckdb", metrics=["exact_match"]) as run:
        for task in tasks:
            app({"task_id": task.id, "query": task.question, "expected_answer": task.answer})
    run.result()

* :func:`run` (a context manager) or :func:`start_run` / :func:`end_run` (notebooks) open a run in the store.
* :func:`node` decorates a sync or async function; :func:`trace_node` is the same as a ``with`` block. Each call
  records a node invocation: inputs, outputs, the exception type if it raised (``agent_error``; the exception is
  re-raised unchanged), wall latency, and the token usage and cost of every OpenAI-compatible chat completion made
  inside it (observed on ``openai``'s ``Completions.create``; prices from
  :data:`agentstats.llm.pricing.DEFAULT_PRICES` or ``prices=``). The function's result and exception are
  never changed.
* The outermost decorated call is one *message* of a *trial*. Ids come from fields of the state (the first mapping
  argument, or an object with these attributes): ``conversation_id`` groups the messages of one conversation into one
  trial, ``message_id`` names a message, ``task_id`` and ``trial`` give the trial's key (``task_id`` defaults to the
  conversation id, ``trial`` to the next free number for that task). Field names are configurable on the run.
* Records are buffered in memory and written in one transaction at most every ``flush_interval`` seconds (and at
  the end), so capture is cheap and a crash loses at most that interval. A run whose process died is marked
  ``interrupted`` when the store is next opened; ``run(name, resume=True)`` continues it.
* Metrics (:mod:`agentstats.capture.metrics`) are computed at :func:`end_run` from the stored records; read them
  with :meth:`Run.result`, :meth:`Run.metric_result` and :meth:`Run.to_frame`.

Runs are found through a context variable (so concurrent asyncio tasks each see their own node stack) and, for
threads and notebook cells that do not inherit it, through the most recently started run of the process.
"""

from __future__ import annotations

import atexit
import contextlib
import contextvars
import dataclasses
import functools
import gc
import inspect
import itertools
import json
import os
import sys
import threading
import time
import warnings
import weakref
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from pydantic import ValidationError
from pydantic_core import PydanticSerializationError, to_json

from agentstats.capture.metrics import JUDGE_METRIC, TOOL_METRIC, Metric, as_metric
from agentstats.llm.pricing import DEFAULT_PRICES, cost_usd
from agentstats.records.trial import Interaction, Status, ToolCall, Trial, Usage, outcome_of
from agentstats.store import DEFAULT_STORE, RunStore, TrialRow

__all__ = ["Run", "current_run", "end_run", "node", "run", "start_run", "trace_node"]

_RUN: contextvars.ContextVar[Run | None] = contextvars.ContextVar("agentstats_run", default=None)
_FRAME: contextvars.ContextVar[_Frame | None] = contextvars.ContextVar("agentstats_node", default=None)
#: Runs started in this process and not ended, most recent last (seen by threads and other notebook cells).
_ACTIVE: list[Run] = []
#: Metrics attached to nodes by the decorator, per decorated function (held weakly: a function no longer alive leaves
#: it): the function -> (node name, metrics). A run scores the nodes called in it with the metrics of the decorators
#: it called (``Run._node_metrics``); this registry only gives the metrics of a node name the run did not call, for
#: its records from before a resume (the newest decorator of that name still alive).
_NODE_METRICS: weakref.WeakKeyDictionary[Callable[..., Any], tuple[str, list[Metric]]] = weakref.WeakKeyDictionary()
#: Longest text kept for one captured input or output (characters of its JSON); longer ones are cut and marked.
MAX_JSON = 100_000

_NODE_COLUMNS = ("run_id", "invocation_id", "parent_id", "agent", "task_id", "trial", "conversation_id",
                 "message_id", "node", "started_at", "latency_s", "inputs", "outputs", "error_type",
                 "error_message", "model", "input_tokens", "output_tokens", "cost_usd")


def current_run() -> Run | None:
    """Return the run that captures calls made here: this context's, else the latest one started in the process."""
    r = _RUN.get()
    if r is not None:
        return r
    return _ACTIVE[-1] if _ACTIVE else None


def _fallback(v: Any) -> Any:
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return dataclasses.asdict(v)
    return repr(v)


#: Values that reading would use up (generators, ``map``, files, other iterators): recorded by a note, never read.
_ONE_PASS = (Iterator, AsyncIterator)


#: Types that are never iterators: checked first, since an ``isinstance`` against the ABCs costs far more.
_PLAIN = frozenset({dict, list, tuple, str, int, float, bool, type(None)})


def _one_pass(v: Any) -> bool:
    return type(v) not in _PLAIN and isinstance(v, _ONE_PASS)


def _unread(v: Any) -> str:
    return f"<{type(v).__name__}: not recorded (reading it would consume what the caller gets)>"


def _dumps(v: Any) -> str:
    """JSON text of a captured value (pydantic's serializer: models, dataclasses, sets; anything else by ``repr``).

    An iterator (a generator, ``map``, a file ...) is recorded as a note, not read: the serializer would iterate it
    and hand the caller an exhausted one. Checked for the value itself and the values of a mapping (a node's
    arguments by name, a state); an iterator nested deeper inside a state is read.
    """
    if isinstance(v, dict):
        for x in v.values():  # a loop, not any(<generator>): this runs for every captured call
            if type(x) not in _PLAIN and isinstance(x, _ONE_PASS):
                v = {k: _unread(x) if _one_pass(x) else x for k, x in v.items()}
                break
    elif _one_pass(v):
        v = _unread(v)
    try:
        text = to_json(v, fallback=_fallback, inf_nan_mode="null").decode()
    except (PydanticSerializationError, ValueError, TypeError, RecursionError):  # circular or odd: its repr
        text = to_json(repr(v)).decode()
    if len(text) > MAX_JSON:
        text = to_json({"truncated": True, "chars": len(text), "head": text[:MAX_JSON]}).decode()
    return text


def _reader(state: Any) -> Callable[[str], Any]:
    """Return ``name -> value`` of a state's fields (a mapping's keys or an object's attributes; None when absent)."""
    if type(state) is dict or isinstance(state, Mapping):
        return state.get
    return lambda name: getattr(state, name, None)


class _MsgRec:
    """A message being captured: the fields of :class:`~agentstats.records.trial.Interaction` that capture sets.

    A plain record, not a pydantic model: an outermost call makes one, and validating it would cost more than the
    rest of the capture. :meth:`as_dict` gives what ``Interaction.model_dump(exclude_defaults=True)`` gives.
    """

    __slots__ = ("answer", "expected_answer", "id", "query", "tool_calls")

    def __init__(self, id: str | None, query: str | None, expected_answer: Any):
        self.id, self.query, self.expected_answer = id, query, expected_answer
        self.answer: str | None = None
        # a shared empty tuple until the first call: every container kept per message counts towards the cyclic
        # GC's full collections (see benchmarks/bench_capture.py), and most messages make no tool call
        self.tool_calls: list[ToolCall] | tuple[()] = ()

    def calls(self) -> list[ToolCall]:
        """Return the message's tool calls as a list that can be appended to."""
        if not isinstance(self.tool_calls, list):
            self.tool_calls = []
        return self.tool_calls

    @classmethod
    def from_interaction(cls, it: Interaction) -> _MsgRec:
        """Return the record of a message read back from its stored trial (to continue the trial)."""
        m = cls(it.id, it.query, it.expected_answer)
        m.answer = it.answer
        if it.tool_calls:
            m.tool_calls = list(it.tool_calls)
        return m

    def as_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"id": self.id} if self.id is not None else {}
        if self.query is not None:
            d["query"] = self.query
        if self.answer is not None:
            d["answer"] = self.answer
        if self.expected_answer is not None:
            d["expected_answer"] = self.expected_answer
        if self.tool_calls:
            d["tool_calls"] = [c.model_dump(mode="json", exclude_defaults=True) for c in self.tool_calls]
        return d

    def to_interaction(self) -> Interaction:
        return Interaction(id=self.id, query=self.query, answer=self.answer, expected_answer=self.expected_answer,
                           tool_calls=list(self.tool_calls))


class _TrialRec:
    """A trial being captured (one conversation, or one outermost call without a conversation id)."""

    __slots__ = (
        "agent",
        "conversation_id",
        "cost_usd",
        "error_type",
        "expected_tool_calls",
        "input_tokens",
        "interactions",
        "latency_s",
        "output_tokens",
        "reward",
        "status",
        "success",
        "task_id",
        "trial",
    )

    def __init__(self, agent: str, task_id: str, trial: int, conversation_id: str | None):
        self.agent, self.task_id, self.trial, self.conversation_id = agent, task_id, trial, conversation_id
        self.interactions: list[_MsgRec] = []
        self.expected_tool_calls: list[ToolCall] | tuple[()] = ()
        self.status = Status.completed
        self.error_type: str | None = None
        self.success: bool | None = None
        self.reward: float | None = None
        self.latency_s = 0.0
        # None until a model call is observed in the trial: unknown, not 0 (a client capture cannot see may have
        # been used); then the sums, the cost None as soon as one call's price is unknown
        self.input_tokens: int | None = None
        self.output_tokens: int | None = None
        self.cost_usd: float | None = None

    @classmethod
    def from_trial(cls, t: Trial) -> _TrialRec:
        """Return the record of a trial read back from its stored row (to continue the trial)."""
        rec = cls(t.agent, t.task_id, t.trial, t.meta.get("conversation_id"))
        rec.interactions = [_MsgRec.from_interaction(i) for i in t.interactions]
        if t.expected_tool_calls:
            rec.expected_tool_calls = list(t.expected_tool_calls)
        rec.status, rec.error_type = t.status, t.meta.get("error_type")
        rec.success, rec.reward = t.success, t.reward
        if t.usage is not None:
            rec.latency_s = t.usage.latency_s or 0.0
            rec.input_tokens = t.usage.input_tokens
            rec.output_tokens = t.usage.output_tokens
            rec.cost_usd = t.usage.cost_usd
        return rec

    def has_calls(self) -> bool:
        """Tell whether the trial holds a tool call or an expected tool call (the store then derives them)."""
        if self.expected_tool_calls:
            return True
        for m in self.interactions:  # a loop, not any(<generator>): run at the end of every outermost call
            if m.tool_calls:
                return True
        return False

    def _meta(self) -> dict[str, Any]:
        meta: dict[str, Any] = {"capture": True}
        if self.conversation_id is not None:
            meta["conversation_id"] = self.conversation_id
        if self.error_type is not None:
            meta["error_type"] = self.error_type
        return meta

    def to_trial(self) -> Trial:
        """Return the validated trial (the reference :meth:`row` is tested against)."""
        return Trial(
            agent=self.agent, task_id=self.task_id, trial=self.trial, status=self.status, success=self.success,
            reward=self.reward, interactions=[m.to_interaction() for m in self.interactions],
            expected_tool_calls=list(self.expected_tool_calls),
            usage=Usage(latency_s=self.latency_s, input_tokens=self.input_tokens, output_tokens=self.output_tokens,
                        cost_usd=self.cost_usd),
            meta=self._meta(),
        )

    def row(self) -> TrialRow:
        """Return the stored row, as ``trial_row(self.to_trial())`` gives it, without validating a model per call.

        Every field was checked where it was set (ids in ``Run._trial_for``, the outcome in ``set_outcome``).
        """
        rec: dict[str, Any] = {"agent": self.agent, "task_id": self.task_id, "trial": self.trial}
        if self.status is not Status.completed:
            rec["status"] = str(self.status)
        if self.success is not None:
            rec["success"] = self.success
        if self.reward is not None:
            rec["reward"] = self.reward
        if self.interactions:
            rec["interactions"] = [m.as_dict() for m in self.interactions]
        if self.expected_tool_calls:
            rec["expected_tool_calls"] = [c.model_dump(mode="json", exclude_defaults=True)
                                          for c in self.expected_tool_calls]
        usage: dict[str, Any] = {"latency_s": self.latency_s}
        if self.input_tokens is not None:
            usage["input_tokens"] = self.input_tokens
        if self.output_tokens is not None:
            usage["output_tokens"] = self.output_tokens
        if self.cost_usd is not None:
            usage["cost_usd"] = self.cost_usd
        rec["usage"] = usage
        rec["meta"] = self._meta()
        return (self.agent, self.task_id, self.trial, str(self.status), self.success, self.reward,
                outcome_of(self.status, self.success, self.reward), self.latency_s, self.input_tokens,
                self.output_tokens, self.cost_usd, to_json(rec, fallback=_fallback, inf_nan_mode="null").decode())


class _Frame:
    """One node invocation in progress."""

    __slots__ = ("cost", "in_tok", "inputs_json", "interaction", "invocation_id", "kind", "message_id", "model",
                 "name", "out_tok", "parent", "run", "started", "t0", "trial")

    def __init__(self, run: Run, name: str, kind: str, parent: _Frame | None, inputs_json: str):
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


class Run:
    """A run being captured (see the module docstring); make one with :func:`run` or :func:`start_run`.

    Parameters
    ----------
    name : str
        Run name (unique in the store).
    store : str, PathLike or RunStore
        The store file (default ``agentstats.duckdb``) or an open store.
    agent : str, optional
        Agent name on the captured trials (default: the run name).
    description, tags, config, code_version
        Stored on the run. ``code_version`` defaults to the git commit of the working directory when there is one.
    metrics : sequence
        Application-level metrics (names, :class:`~agentstats.capture.metrics.Metric` or functions).
    judge : Judge or str, optional
        Judge for ``answer_correctness`` (:func:`agentstats.scoring.resolve_judge`; deterministic by default).
    resume : bool
        Continue a stored run of this name (interrupted, or completed) instead of refusing the name.
    replace : bool
        Replace a stored run of this name.
    conversation_field, message_field, task_field, trial_field, query_field, expected_field, answer_field : str
        Names of the state fields read for ids, the message text, the reference answer, and of the output field
        holding the answer when a node returns a mapping.
    prices : mapping, optional
        Model -> (input, output) US dollars per 1M tokens (default: the judge's price table).
    flush_interval : float
        Seconds between writes (0: after every outermost call).

    Raises
    ------
    StoreError
        The name is taken (and neither ``resume`` nor ``replace``), or the store cannot be opened.
    """

    def __init__(
        self,
        name: str,
        store: str | os.PathLike | RunStore = DEFAULT_STORE,
        *,
        agent: str | None = None,
        description: str | None = None,
        tags: Sequence[str] = (),
        config: dict[str, Any] | None = None,
        code_version: str | None = None,
        metrics: Sequence[Any] = (),
        judge: Any = None,
        resume: bool = False,
        replace: bool = False,
        conversation_field: str = "conversation_id",
        message_field: str = "message_id",
        task_field: str = "task_id",
        trial_field: str = "trial",
        query_field: str = "query",
        expected_field: str = "expected_answer",
        answer_field: str = "answer",
        prices: Mapping[str, tuple[float, float]] | None = None,
        flush_interval: float = 1.0,
    ):
        self.name = name
        self.agent = agent or name
        self.metrics = [as_metric(m) for m in metrics]
        self.judge = judge
        self.fields = {"conversation": conversation_field, "message": message_field, "task": task_field,
                       "trial": trial_field, "query": query_field, "expected": expected_field,
                       "answer": answer_field}
        # the state fields read at every outermost call, in the order _open_message reads them
        self._id_fields = (conversation_field, task_field, trial_field, message_field, query_field, expected_field)
        self._answer_field = answer_field
        self.prices = dict(prices) if prices is not None else DEFAULT_PRICES
        self.flush_interval = flush_interval
        self._own_store = not isinstance(store, RunStore)
        self.store = RunStore(store) if not isinstance(store, RunStore) else store
        self.path = self.store.path
        self._lock = threading.RLock()
        self._nodes: list[tuple[Any, ...]] = []
        #: Node name -> metrics of the decorators called under that name in this run (empty: called, no metrics).
        self._node_metrics: dict[str, Sequence[Metric]] = {}
        # Trials to write, by key: a record still open (a conversation), or the stored row of a closed one. A trial
        # without a conversation id closes when its outermost call returns and is kept only as its row (a tuple of
        # strings and numbers, which the cyclic GC stops tracking), so that a long run keeps no per-trial objects
        # for the GC's full collections to scan again and again (see benchmarks/bench_capture.py).
        self._dirty: dict[tuple[str, int], _TrialRec | TrialRow] = {}
        self._calls_pending = False  # a closed trial in _dirty holds tool calls
        self._open: dict[str, _TrialRec] = {}
        self._keys: dict[tuple[str, int], _TrialRec] = {}  # open trials by key
        self._last_flush = time.monotonic()
        self._flush_error: str | None = None
        self.status = "running"
        self._frames: dict[str, pd.DataFrame] = {}
        try:
            if self.store.has_run(name) and resume:
                self.run_id = self.store.run_id(name)
                with self.store.transaction():
                    self.store.set_status(name, "running")
            else:
                with self.store.transaction():
                    self.run_id = self.store.create_run(
                        name, description=description, tags=tags, source="capture",
                        config={**(config or {}), "capture": self._settings(judge)},
                        code_version=code_version or _git_commit(), replace=replace,
                    )
            con = self.store.con
            last_invocation = int(con.execute(
                "SELECT coalesce(max(invocation_id), 0) FROM node_invocations WHERE run_id = ?", [self.run_id]
            ).fetchone()[0])
            # invocation ids: next() on a count is one C call, atomic under the GIL (no lock per call)
            self._invocations = itertools.count(last_invocation + 1)
            #: Invocations below this id were written by an earlier attempt (before a resume).
            self._first_invocation = last_invocation + 1
            #: Trial keys stored before this Run object and started again by it: their earlier attempt's node
            #: invocations are deleted at the next flush, as the trial's row is replaced.
            self._replaced: set[tuple[str, int]] = set()
            self._next_trial = {
                t: int(k) + 1 for t, k in con.execute(
                    "SELECT task_id, max(trial) FROM trials WHERE run_id = ? AND agent = ? GROUP BY task_id",
                    [self.run_id, self.agent]).fetchall()
            }
            # trial keys stored in the run -> closed by this Run object (a later call with the same explicit key and
            # no conversation continues the trial; one stored before a resume is replaced)
            self._done: dict[tuple[str, int], bool] = {(t, int(k)): False for t, k in con.execute(
                "SELECT task_id, trial FROM trials WHERE run_id = ? AND agent = ?", [self.run_id, self.agent]
            ).fetchall()}
        except BaseException:
            if self._own_store:
                self.store.close()
            raise
        if "openai" in sys.modules:  # else patched at the first call made once the application imported it
            _patch_openai()
        self._token: contextvars.Token[Run | None] | None = None

    def _settings(self, judge: Any) -> dict[str, Any]:
        """Return what the capture was given (stored in the run's ``config`` under ``capture``)."""
        return {"agent": self.agent, "metrics": [m.name for m in self.metrics],
                "judge": judge if judge is None or isinstance(judge, str) else type(judge).__name__,
                "fields": self.fields, "flush_interval": self.flush_interval}

    # ------------------------------------------------------------------ capture

    def has_trial(self, task_id: str, trial: int | None = None) -> bool:
        """Tell whether the run holds this task's trial (any trial when ``trial`` is None): for resuming."""
        task_id = str(task_id)
        with self._lock:
            if trial is None:
                return any(t == task_id for t, _ in self._done)
            return (task_id, int(trial)) in self._done

    def _open_message(self, field: Callable[[str], Any], invocation_id: int) -> tuple[_TrialRec, _MsgRec]:
        """Return the trial an outermost call belongs to (found or started) and its new message, appended to it."""
        conv_f, task_f, trial_f, message_f, query_f, expected_f = self._id_fields
        cid = field(conv_f)
        if cid is not None and type(cid) is not str:
            cid = str(cid)
        with self._lock:
            rec = self._open.get(cid) if cid is not None else None
            if rec is None:
                rec = self._trial_for(field, cid, task_f, trial_f, invocation_id)
            mid = field(message_f)
            query = field(query_f)
            message = _MsgRec(str(mid) if mid is not None else str(len(rec.interactions)),
                              query if query is None or isinstance(query, str) else _dumps(query), field(expected_f))
            rec.interactions.append(message)
            return rec, message

    def _trial_for(self, field: Callable[[str], Any], cid: str | None, task_f: str, trial_f: str,
                   invocation_id: int) -> _TrialRec:
        """Find or start the trial of an outermost call outside an open conversation (the caller holds the lock)."""
        task = field(task_f)
        if task is not None:
            task = str(task) if type(task) is not str else task
            if not task.strip():  # a blank id is no id (schema rule)
                task = None
        task_id = task if task is not None else (cid if cid and cid.strip() else f"call-{invocation_id}")
        k = field(trial_f)
        next_trial = self._next_trial
        if isinstance(k, int) and not isinstance(k, bool) and k >= 0:
            trial = k
            if next_trial.get(task_id, 0) <= k:
                next_trial[task_id] = k + 1
        else:
            trial = next_trial.get(task_id, 0)
            next_trial[task_id] = trial + 1
        key = (task_id, trial)
        rec = self._keys.get(key)
        done = self._done.get(key)
        if rec is None and cid is None and done:
            rec = self._reopen(key)
        if rec is None or rec.conversation_id != cid:
            rec = _TrialRec(self.agent, task_id, trial, cid)
            self._keys[key] = rec
            if done is False:  # stored before a resume: this attempt replaces it
                self._replaced.add(key)
        if cid is not None:
            self._open[cid] = rec
        expected_calls = field("expected_tool_calls")
        if expected_calls and not rec.expected_tool_calls:
            with contextlib.suppress(Exception):
                rec.expected_tool_calls = [ToolCall.model_validate(c) for c in expected_calls]
        return rec

    def _reopen(self, key: tuple[str, int]) -> _TrialRec | None:
        """Return the record of a trial this run closed, to continue it (from its pending row, else the store)."""
        pending = self._dirty.get(key)
        if isinstance(pending, _TrialRec):
            return pending
        if pending is not None:
            record = pending[-1]
        else:
            found = self.store.con.execute(
                "SELECT record FROM trials WHERE run_id = ? AND agent = ? AND task_id = ? AND trial = ?",
                [self.run_id, self.agent, key[0], key[1]]).fetchone()
            if found is None:
                return None
            record = found[0]
        rec = _TrialRec.from_trial(Trial.model_validate_json(record))
        self._keys[key] = rec
        return rec

    def _use_metrics(self, name: str, metrics: Sequence[Metric]) -> None:
        """Note that node ``name`` was called in this run, by a decorator with ``metrics`` (empty: none)."""
        known = self._node_metrics.get(name)
        if known is metrics or (known is not None and not metrics):
            return
        with self._lock:
            known = self._node_metrics.get(name)
            if not known:
                self._node_metrics[name] = metrics
                return
            # another decorator of the same name in this run: the store tells its invocations apart by name only,
            # so the node is scored with the metrics of both (a metric name once, the first decorator's)
            names = {m.name for m in known}
            new = [m for m in metrics if m.name not in names]
            if new:
                self._node_metrics[name] = [*known, *new]

    def _enter(self, name: str, kind: str, inputs: dict[str, Any], state: Any = None,
               metrics: Sequence[Metric] = ()) -> _Frame:
        self._use_metrics(name, metrics)
        parent = _FRAME.get()
        if parent is not None and parent.run is not self:
            parent = None
        frame = _Frame(self, name, kind, parent, _dumps(inputs))
        if parent is not None:
            frame.trial, frame.interaction, frame.message_id = parent.trial, parent.interaction, parent.message_id
            frame.t0 = time.perf_counter()
            return frame
        if state is None:  # the first mapping argument, else the first object with an id attribute
            for v in inputs.values():
                if type(v) is dict or isinstance(v, Mapping):
                    state = v
                    break
            else:
                conv_f, task_f = self._id_fields[:2]
                state = next((v for v in inputs.values() if hasattr(v, conv_f) or hasattr(v, task_f)), None)
        if not _PATCHED and "openai" in sys.modules:
            _patch_openai()
        trial, interaction = self._open_message(_reader(state), frame.invocation_id)
        frame.trial, frame.interaction, frame.message_id = trial, interaction, interaction.id
        frame.t0 = time.perf_counter()  # the node's own latency starts here, after this bookkeeping
        return frame

    def _exit(self, frame: _Frame, result: Any, exc: BaseException | None) -> None:
        latency = time.perf_counter() - frame.t0
        trial = frame.trial
        error_type = None if exc is None else type(exc).__name__
        outputs = None if exc is not None else result
        if frame.kind == "tool":
            self._tool_result(frame, outputs, error_type)
        row = (self.run_id, frame.invocation_id, frame.parent.invocation_id if frame.parent is not None else None,
               trial.agent, trial.task_id, trial.trial, trial.conversation_id, frame.message_id, frame.name,
               frame.started, latency, frame.inputs_json, None if exc is not None else _dumps(outputs),
               error_type, None if exc is None else str(exc)[:2000], frame.model,
               frame.in_tok if frame.model else None, frame.out_tok if frame.model else None, frame.cost)
        due = False
        with self._lock:
            self._nodes.append(row)
            if frame.model is not None:
                first = trial.input_tokens is None  # the trial's first observed model call
                trial.input_tokens = (trial.input_tokens or 0) + frame.in_tok
                trial.output_tokens = (trial.output_tokens or 0) + frame.out_tok
                trial.cost_usd = frame.cost if first else (
                    None if trial.cost_usd is None or frame.cost is None else trial.cost_usd + frame.cost)
            if frame.parent is None:
                trial.latency_s += latency
                if exc is not None and isinstance(exc, Exception):
                    trial.status = Status.agent_error
                    trial.error_type = error_type
                elif exc is None:
                    frame.interaction.answer = _answer_text(result, self._answer_field)
                key = (trial.task_id, trial.trial)
                self._done[key] = True
                if trial.conversation_id is None:  # the call was the trial (or its latest part): keep only its row
                    self._dirty[key] = trial.row()
                    self._calls_pending = self._calls_pending or trial.has_calls()
                    if self._keys.get(key) is trial:
                        del self._keys[key]
                else:
                    self._dirty[key] = trial
                due = time.monotonic() - self._last_flush >= self.flush_interval
        if frame.parent is None and due:
            try:
                self.flush()
            except Exception as exc:  # the application's call is never changed: warn, retry at the next flush
                self._flush_failed(exc)

    def _flush_failed(self, exc: Exception) -> None:
        message = f"{type(exc).__name__}: {exc}"
        if message != self._flush_error:
            self._flush_error = message
            warnings.warn(f"agentstats run {self.name!r}: could not write to {self.path} ({message}); the records "
                          "are kept in memory and written at the next flush or at the end of the run",
                          RuntimeWarning, stacklevel=4)

    def _tool_result(self, frame: _Frame, output: Any, error_type: str | None) -> None:
        calls = frame.interaction.calls()
        result = output if error_type is None else {"error": error_type}
        for call in calls:
            if call.name == frame.name and call.result is None:
                call.result = json.loads(_dumps(result))
                return
        given = json.loads(frame.inputs_json)  # the arguments as the tool got them
        args = {k: v for k, v in given.items() if k != "self"} if isinstance(given, dict) else given
        calls.append(ToolCall(name=frame.name, arguments=args, result=json.loads(_dumps(result))))

    def _observe_llm(self, response: Any) -> None:
        frame = _FRAME.get()
        if frame is None or frame.run is not self:
            return
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
        cost = cost_usd(model, p, c, self.prices)
        frame.cost = cost if first else (None if frame.cost is None or cost is None else frame.cost + cost)
        with contextlib.suppress(Exception):
            message = response.choices[0].message
            for call in message.tool_calls or ():
                frame.interaction.calls().append(
                    ToolCall(name=call.function.name, arguments=call.function.arguments, id=call.id)
                )

    def set_outcome(self, success: bool | None = None, reward: float | None = None) -> None:
        """Give the current trial (the one of the node being run) its outcome, when the application knows it.

        Raises
        ------
        RuntimeError
            Outside a decorated node of this run.
        ValueError
            ``success`` is not true/false (or 1/0), or ``reward`` is not a finite number (the trial schema's rules).
        """
        frame = _FRAME.get()
        if frame is None or frame.run is not self:
            raise RuntimeError("set_outcome() must be called inside a decorated node of this run (while the node "
                               "runs), where it gives that node's trial its outcome")
        try:  # the schema's own rules, checked here: the trial is written later without validation
            checked = Trial.model_validate({"agent": "a", "task_id": "t", "trial": 0, "success": success,
                                            "reward": reward})
        except ValidationError as exc:
            raise ValueError(f"set_outcome: {'; '.join(e['msg'] for e in exc.errors())}") from None
        success, reward = checked.success, checked.reward
        with self._lock:
            frame.trial.success = success
            frame.trial.reward = reward
            self._dirty[(frame.trial.task_id, frame.trial.trial)] = frame.trial

    def end_conversation(self, conversation_id: str) -> None:
        """Close a conversation: its next message starts a new trial (a new attempt of the task)."""
        with self._lock:
            self._open.pop(str(conversation_id), None)

    def flush(self) -> None:
        """Write the buffered node invocations and changed trials in one transaction."""
        # The cyclic GC is paused while the batch is converted (every container made here is freed by reference
        # counting): at 20,000 trials per flush it spent a quarter to a third of the flush re-scanning young objects.
        gc_was_on = gc.isenabled()
        gc.disable()
        try:
            self._flush()
        finally:
            if gc_was_on:
                gc.enable()

    def _flush(self) -> None:
        with self._lock:
            rows, self._nodes = self._nodes, []
            pending, self._dirty = self._dirty, {}
            calls, self._calls_pending = self._calls_pending, False
            replaced, self._replaced = self._replaced, set()
            try:
                self._write(rows, list(pending.values()), calls, replaced)
            except BaseException:
                # the transaction rolled back: keep everything for the next flush (the end of the run at the latest)
                self._nodes[:0] = rows
                self._dirty = {**pending, **self._dirty}
                self._calls_pending = self._calls_pending or calls
                self._replaced |= replaced
                raise

    def _write(self, rows: list[tuple[Any, ...]], dirty: list[_TrialRec | TrialRow], calls: bool,
               replaced: set[tuple[str, int]]) -> None:
        trials = [t if isinstance(t, tuple) else t.row() for t in dirty]
        calls = calls or any(t.has_calls() for t in dirty if isinstance(t, _TrialRec))
        self._last_flush = time.monotonic()
        if not trials and not rows and not replaced:
            return
        columns: dict[str, Any] = {c: list(v) for c, v in zip(_NODE_COLUMNS, zip(*rows, strict=True), strict=True)
                                   } if rows else {}
        if columns:
            import pyarrow as pa  # the store's own dependency, loaded by now

            # epoch seconds -> microseconds, rounded as datetime.fromtimestamp rounds them (half to even)
            micros = np.rint(np.asarray(columns["started_at"], dtype=np.float64) * 1e6).astype(np.int64)
            columns["started_at"] = pa.array(micros, pa.timestamp("us", tz="UTC"))
        with self.store.transaction():
            if replaced:  # the earlier attempt's node invocations go with its trial row (metrics are recomputed)
                self.store.con.executemany(
                    "DELETE FROM node_invocations WHERE run_id = ? AND agent = ? AND task_id = ? AND trial = ? "
                    "AND invocation_id < ?",
                    [[self.run_id, self.agent, t, k, self._first_invocation] for t, k in sorted(replaced)])
            self.store.append_rows("node_invocations", columns)
            self.store.replace_trials(self.run_id, trials, calls=calls)

    # ------------------------------------------------------------------ end, metrics, results

    def start(self) -> Run:
        """Make this the current run (what :func:`start_run` and ``with`` do)."""
        self._token = _RUN.set(self)
        _ACTIVE.append(self)
        return self

    def end(self, status: str = "completed") -> Run:
        """Flush, compute the metrics (when ``status`` is ``completed``), set the run's status, close the store."""
        if self.status != "running":
            return self
        try:
            self.flush()
            if status == "completed":
                self.score()
            with self.store.transaction():
                self.store.set_status(self.name, status)
            self.status = status
        finally:
            if self in _ACTIVE:
                _ACTIVE.remove(self)
            if self._token is not None:
                with contextlib.suppress(ValueError):
                    _RUN.reset(self._token)
                self._token = None
            if self._own_store:
                self.store.close()
        return self

    def score(self) -> None:
        """Compute the node and application metrics from the stored records (replacing earlier results)."""
        con = self.store.con
        node_metrics = {n: ms for n, ms in self._node_metrics.items() if ms}
        for n, ms in list(_NODE_METRICS.values()):  # newest last: the newest decorator of a name not called
            if n not in self._node_metrics:
                node_metrics[n] = ms
        if not self.metrics and not node_metrics:
            return
        rows: dict[str, list[Any]] = {c: [] for c in (
            "run_id", "metric", "level", "node", "agent", "task_id", "trial", "conversation_id", "message_id",
            "invocation_id", "value", "passed", "detail")}
        verdicts: dict[str, list[Any]] = {c: [] for c in (
            "run_id", "metric", "invocation_id", "agent", "task_id", "trial", "judge", "prompt_version", "verdict",
            "score", "cost_usd")}
        judged: list[tuple[Any, ...]] = []
        nodes = list(node_metrics)
        if nodes:
            inv = con.execute(
                f"""SELECT invocation_id, node, agent, task_id, trial, conversation_id, message_id, inputs, outputs
                    FROM node_invocations WHERE run_id = ? AND error_type IS NULL
                    AND node IN ({", ".join("?" * len(nodes))}) ORDER BY invocation_id""",
                [self.run_id, *nodes],
            ).fetchall()
            for iid, nname, agent, task, k, cid, mid, inputs, outputs in inv:
                ins = json.loads(inputs) if inputs else {}
                answer = _answer_text(json.loads(outputs) if outputs else None, self.fields["answer"])
                for m in node_metrics[nname]:
                    expected = _find_expected(ins, m.expected_field)
                    key = ("node", nname, agent, task, k, cid, mid, iid)
                    if m.name == TOOL_METRIC:
                        continue
                    if m.name == JUDGE_METRIC:
                        if expected is not None:
                            judged.append((m, key, answer, expected, _find_expected(ins, self.fields["query"])))
                        continue
                    if expected is None and m.needs_expected:
                        continue
                    value, detail = m.score(answer, expected)
                    _add(rows, self.run_id, m, key, value, detail)
        trials = self.store.trials(self.name)
        outcome_by_key: dict[tuple[str, str, int], list[bool]] = {}
        for t in trials:
            cid = t.meta.get("conversation_id")
            for m in self.metrics:
                if m.name == TOOL_METRIC:
                    from agentstats.scoring.tools import score_trial_tools

                    scores = score_trial_tools(t)
                    if scores.passed is None:
                        continue
                    parts = [s.overall for s in [*scores.interactions, scores.trial] if s is not None]
                    value = sum(parts) / len(parts)
                    _add(rows, self.run_id, m, ("conversation", None, t.agent, t.task_id, t.trial, cid, None, None),
                         value, {"passed_all": scores.passed}, passed=scores.passed)
                    outcome_by_key.setdefault(t.key, []).append(bool(scores.passed))
                    continue
                values: list[tuple[float, bool]] = []
                for it in t.interactions:
                    if it.expected_answer is None and m.needs_expected:
                        continue
                    key = ("message", None, t.agent, t.task_id, t.trial, cid, it.id, None)
                    if m.name == JUDGE_METRIC:
                        judged.append((m, key, it.answer, it.expected_answer, it.query))
                        continue
                    value, detail = m.score(it.answer, it.expected_answer)
                    _add(rows, self.run_id, m, key, value, detail)
                    if value is not None:
                        values.append((value, value >= m.threshold))
                if values:
                    mean = sum(v for v, _ in values) / len(values)
                    ok = all(p for _, p in values)
                    _add(rows, self.run_id, m, ("conversation", None, t.agent, t.task_id, t.trial, cid, None, None),
                         mean, {"messages": len(values)}, passed=ok)
                    outcome_by_key.setdefault(t.key, []).append(ok)
        if judged:
            self._judge(judged, rows, verdicts, outcome_by_key)
        changed = []
        for t in trials:
            oks = outcome_by_key.get(t.key)
            if oks and t.success is None and t.reward is None and t.status == Status.completed:
                changed.append(t.model_copy(update={"success": all(oks)}))
        with self.store.transaction():
            for table in ("metric_results", "judge_verdicts"):
                con.execute(f"DELETE FROM {table} WHERE run_id = ?", [self.run_id])
            self.store.append_rows("metric_results", rows)
            self.store.append_rows("judge_verdicts", verdicts)
            self.store.replace_trials(self.run_id, changed)

    def _judge(self, judged: list[tuple[Any, ...]], rows: dict[str, list[Any]], verdicts: dict[str, list[Any]],
               outcome_by_key: dict[tuple[str, str, int], list[bool]]) -> None:
        from agentstats.scoring.judge import AnswerItem, resolve_judge

        judge = resolve_judge(self.judge)
        items = [AnswerItem(answer=a if a is None else str(a), expected=e, query=q if isinstance(q, str) else None)
                 for _, _, a, e, q in judged]
        out = judge.judge_answers(items)
        per_conv: dict[tuple[Any, ...], list[tuple[float, bool]]] = {}
        for (m, key, *_), v in zip(judged, out, strict=True):
            value = v.score
            _add(rows, self.run_id, m, key, value, {"status": v.status, "reasoning": v.reasoning})
            level, _, agent, task, k, cid, _, iid = key
            verdicts["run_id"].append(self.run_id)
            verdicts["metric"].append(m.name)
            verdicts["invocation_id"].append(iid)
            verdicts["agent"].append(agent)
            verdicts["task_id"].append(task)
            verdicts["trial"].append(k)
            verdicts["judge"].append(v.judge)
            verdicts["prompt_version"].append(getattr(v, "prompt_version", None))
            verdicts["verdict"].append(v.model_dump_json())
            verdicts["score"].append(value)
            verdicts["cost_usd"].append(getattr(v, "cost_usd", None))
            if level == "message" and value is not None:
                per_conv.setdefault((m, agent, task, k, cid), []).append((value, value >= m.threshold))
        for (m, agent, task, k, cid), values in per_conv.items():
            ok = all(p for _, p in values)
            _add(rows, self.run_id, m, ("conversation", None, agent, task, k, cid, None, None),
                 sum(v for v, _ in values) / len(values), {"messages": len(values)}, passed=ok)
            outcome_by_key.setdefault((agent, task, k), []).append(ok)

    def _read(self, table: str, store: RunStore) -> pd.DataFrame:
        if table == "trials":  # what result() needs, without the records
            return store.con.execute(
                "SELECT agent, task_id, trial, status, outcome FROM trials WHERE run_id = ? ORDER BY seq",
                [self.run_id]).df()
        return store.frame(self.name, table)

    def _frame(self, table: str) -> pd.DataFrame:
        """Return a table of this run: read live while running; once ended, read once from the store and kept.

        An ended run's tables are read when first asked for (an application that only captures pays nothing for
        them at the end, and a long run's tables are not held in memory unasked): from the caller's store when it
        is still open, else from the file, opened read-only for the read.
        """
        if table in self._frames:
            return self._frames[table]
        with self._lock:
            if self.status == "running":
                self.flush()
                return self._read(table, self.store)
            if not self._own_store and self.store.is_open():
                frame = self._read(table, self.store)
            else:
                with RunStore.reader(self.path) as store:
                    frame = self._read(table, store)
            self._frames[table] = frame
            return frame

    def to_frame(self) -> pd.DataFrame:
        """One row per node invocation (ids, node, latency, tokens, cost, error), with one column per node metric.

        Returns
        -------
        pandas.DataFrame
            Columns of ``node_invocations`` (``docs/store.md``) and the metric values of each invocation.
        """
        nodes = self._frame("node_invocations")
        metrics = self._frame("metric_results")
        per = metrics[metrics["level"] == "node"] if len(metrics) else metrics
        if len(per):
            wide = per.pivot_table(index="invocation_id", columns="metric", values="value", aggfunc="first")
            nodes = nodes.merge(wide, left_on="invocation_id", right_index=True, how="left")
        return nodes.drop(columns=["run_id"])

    def metric_result(self, name: str, node: str | None = None, level: str | None = None) -> pd.DataFrame:
        """Return the results of one metric: one row per scored node invocation, message or conversation.

        Parameters
        ----------
        name : str
        node : str, optional
            Only this node's invocations.
        level : {"node", "message", "conversation"}, optional

        Raises
        ------
        KeyError
            When the run has no result for this metric (and node).
        """
        m = self._frame("metric_results")
        sel = m[m["metric"] == name]
        if node is not None:
            sel = sel[sel["node"] == node]
        if level is not None:
            sel = sel[sel["level"] == level]
        if sel.empty:
            known = sorted(set(zip(m["metric"], m["node"].fillna("(application)"), strict=True)))
            raise KeyError(f"no results for metric {name!r}" + (f" on node {node!r}" if node else "")
                           + f"; the run has: {known}")
        return sel.drop(columns=["run_id"]).reset_index(drop=True)

    def result(self) -> pd.DataFrame:
        """Summary per metric, level and node: records scored, mean value, share passed.

        Returns
        -------
        pandas.DataFrame
            Columns ``metric, level, node, n, mean, pass_rate`` (node empty for application metrics; ``n`` the
            records behind the mean), plus the outcome row ``metric="trials"``: ``n`` the trials with an outcome
            (success or failure: from ``set_outcome``, an error, or the application metrics), ``mean`` and
            ``pass_rate`` their success rate. Trials without an outcome are not counted (NaN when none has one).
        """
        m = self._frame("metric_results")
        if len(m):
            g = m.assign(node=m["node"].fillna(""), ok=m["passed"].astype(float))
            summary = g.groupby(["metric", "level", "node"], sort=True).agg(
                n=("value", "size"), mean=("value", "mean"), pass_rate=("ok", "mean")).reset_index()
        else:
            summary = pd.DataFrame(columns=["metric", "level", "node", "n", "mean", "pass_rate"])
        t = self._frame("trials")
        scored = t[t["outcome"].isin(["success", "failure"])]
        row = pd.DataFrame([{"metric": "trials", "level": "trial", "node": "", "n": len(scored),
                             "mean": (scored["outcome"] == "success").mean() if len(scored) else float("nan"),
                             "pass_rate": (scored["outcome"] == "success").mean() if len(scored) else float("nan")}])
        return pd.concat([summary, row], ignore_index=True) if len(summary) else row

    def __enter__(self) -> Run:
        return self.start() if self._token is None else self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.end("completed")
        elif issubclass(exc_type, KeyboardInterrupt | SystemExit):
            self.end("interrupted")
        else:
            self.end("failed")

    def __repr__(self) -> str:
        return f"Run({self.name!r}, store={str(self.path)!r}, status={self.status!r})"


def _add(rows: dict[str, list[Any]], run_id: int, m: Metric, key: tuple[Any, ...], value: float | None,
         detail: dict[str, Any], passed: bool | None = None) -> None:
    level, nname, agent, task, k, cid, mid, iid = key
    for col, v in (("run_id", run_id), ("metric", m.name), ("level", level), ("node", nname), ("agent", agent),
                   ("task_id", task), ("trial", k), ("conversation_id", cid), ("message_id", mid),
                   ("invocation_id", iid), ("value", value),
                   ("passed", passed if passed is not None else (None if value is None else value >= m.threshold)),
                   ("detail", _dumps(detail))):
        rows[col].append(v)


def _find_expected(inputs: dict[str, Any], field: str) -> Any:
    if field in inputs:
        return inputs[field]
    for v in inputs.values():
        if isinstance(v, dict) and field in v:
            return v[field]
    return None


def _answer_text(result: Any, field: str) -> str | None:
    if result is None:
        return None
    if isinstance(result, str):
        return result
    if isinstance(result, Mapping) and field in result:
        v = result[field]
        return v if isinstance(v, str) or v is None else _dumps(v)
    content = getattr(getattr(getattr(result, "choices", [None])[0], "message", None), "content", None) \
        if hasattr(result, "choices") else None
    if isinstance(content, str):
        return content
    return _dumps(result)


def _git_commit() -> str | None:
    import subprocess

    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


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
        response = sync_create(self, *args, **kwargs)
        _observe(response)
        return response

    @functools.wraps(async_create)
    async def acreate(self: Any, *args: Any, **kwargs: Any) -> Any:
        response = await async_create(self, *args, **kwargs)
        _observe(response)
        return response

    mod.Completions.create = create  # type: ignore[method-assign]
    mod.AsyncCompletions.create = acreate  # type: ignore[method-assign]
    _PATCHED = True


def _observe(response: Any) -> None:
    frame = _FRAME.get()
    if frame is not None:
        with contextlib.suppress(Exception):  # observing never breaks the application's call
            frame.run._observe_llm(response)


# ---------------------------------------------------------------------- public API


def run(name: str, store: str | os.PathLike | RunStore = DEFAULT_STORE, **options: Any) -> Run:
    """Open a captured run; use it as ``with agentstats.run("prompt-v2", store=...) as run:``.

    Leaving the block ends the run (:meth:`Run.end`): ``completed`` (metrics computed), ``interrupted`` on
    Ctrl-C, ``failed`` on another exception (records kept either way). Options: see :class:`Run`.
    """
    return Run(name, store, **options)


def _end_forgotten_runs() -> None:
    """At interpreter exit: write what runs never ended still buffer and mark them ``interrupted`` (resumable)."""
    for r in list(_ACTIVE):
        if r.status != "running":
            continue
        try:
            r.end("interrupted")
        except Exception as exc:  # at exit nothing may raise; say what was lost
            print(f"agentstats: run {r.name!r} was never ended and its last records could not be written to "
                  f"{r.path} ({type(exc).__name__}: {exc})", file=sys.stderr)
            continue
        print(f"agentstats: run {r.name!r} was never ended (end_run() or the end of its `with` block); its records "
              f"are written to {r.path} and it is marked interrupted: agentstats.run({r.name!r}, resume=True) "
              "continues it, and ending it computes its metrics", file=sys.stderr)


atexit.register(_end_forgotten_runs)


def start_run(name: str, store: str | os.PathLike | RunStore = DEFAULT_STORE, **options: Any) -> Run:
    """Open a captured run and make it current until :func:`end_run` (notebook style). Options: see :class:`Run`."""
    return Run(name, store, **options).start()


def end_run(run: Run | None = None, status: str = "completed") -> Run:
    """End ``run`` (default: the current one): flush, compute metrics, set its status, close the store.

    Raises
    ------
    RuntimeError
        When no run is open.
    """
    r = run or current_run()
    if r is None:
        raise RuntimeError("no run is open: start one with agentstats.start_run(name)")
    return r.end(status)


def _bind(params: tuple[str, ...], args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    if len(args) == 1 and not kwargs and params:  # the usual node: one state argument
        return {params[0]: args[0]}
    inputs = dict(zip(params, args, strict=False))
    if len(args) > len(params):
        inputs["*args"] = list(args[len(params):])
    inputs.update(kwargs)
    return inputs


def node(name: str | Callable[..., Any] | None = None, *, metrics: Sequence[Any] = (),
         kind: str = "node") -> Callable[..., Any]:
    """Decorate a function (sync or async) as a node of the application: each call inside a run is recorded.

    Parameters
    ----------
    name : str, optional
        Node name (default: the function's name). ``@agentstats.node`` without parentheses decorates the function
        under its own name.
    metrics : sequence
        Metrics computed on this node's invocations at :func:`end_run` (:mod:`agentstats.capture.metrics`), in a
        run that calls this function: another function decorated with the same node name does not get them.
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
        return node(None, metrics=metrics, kind=kind)(name)
    if name is not None and not isinstance(name, str):
        raise TypeError(f"node name must be a string, got {type(name).__name__}")
    if kind not in ("node", "tool"):
        raise ValueError(f"kind must be 'node' or 'tool', got {kind!r}")
    metric_list = [as_metric(m) for m in metrics]

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
                frame = r._enter(label, kind, _bind(params, args, kwargs), metrics=metric_list)
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

            if metric_list:
                _NODE_METRICS[awrapper] = (label, metric_list)
            return awrapper

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            r = current_run()
            if r is None or r.status != "running":
                return fn(*args, **kwargs)
            frame = r._enter(label, kind, _bind(params, args, kwargs), metrics=metric_list)
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

        if metric_list:
            _NODE_METRICS[wrapper] = (label, metric_list)
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

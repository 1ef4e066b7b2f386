"""The per-call path of a captured run: each decorated call's bookkeeping, and the buffered writes to the store.

:class:`Recorder` is the part of :class:`agentstats.capture.runs.Run` that runs at every captured call. An outermost
call opens a message of a trial (found by the state's ids, or started: :meth:`Recorder._open_message`), every call
records a node invocation when it returns or raises (:meth:`Recorder._exit`: inputs, outputs, error, latency, the
OpenAI usage observed inside it), and the records are written in one transaction every ``flush_interval``
seconds or ``flush_every`` node invocations, whichever comes first (:meth:`Recorder.flush`). The application's
results and exceptions are never changed: a failed write is a warning, and its records are kept for the next flush.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import json
import sys
import threading
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

from agentstats.capture import openai_patch
from agentstats.capture.context import _FRAME, _Frame
from agentstats.capture.records import _NODE_COLUMNS, _answer_text, _dumps, _MsgRec, _reader, _TrialRec
from agentstats.llm.redact import redact
from agentstats.metrics.base import Metric
from agentstats.records.trial import Status, ToolCall, Trial
from agentstats.store import RunStore, TrialRow

__all__ = ["Recorder"]


class Recorder:
    """What a run keeps while it captures: buffers of node rows and trials, the trial keys, the writes.

    Set up by :meth:`_start_recording` once the run exists in the store; :class:`~agentstats.capture.runs.Run`
    adds the run's life (opening, ending, results).
    """

    name: str
    agent: str
    store: RunStore
    path: Path
    run_id: int
    status: str
    flush_interval: float
    flush_every: int
    prices: Mapping[str, tuple[float, float]]
    _id_fields: tuple[str, str, str, str, str, str]
    _answer_field: str

    def _start_recording(self) -> None:
        """Set up the buffers and read the run's stored keys (invocation ids, trial numbers) from the store."""
        self._lock = threading.RLock()
        self._nodes: list[tuple[Any, ...]] = []
        #: Node name -> metrics of the decorators called under that name in this run (empty: called, no metrics).
        self._node_metrics: dict[str, Sequence[Metric]] = {}
        #: Node name -> role -> field map of its decorator (``@agentstats.node(..., fields=...)``), when given.
        self._node_fields: dict[str, Mapping[str, str]] = {}
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

    def _use_metrics(self, name: str, metrics: Sequence[Metric], fields: Mapping[str, str] | None = None) -> None:
        """Note that node ``name`` was called in this run, by a decorator with ``metrics`` (empty: none)."""
        if fields and name not in self._node_fields:  # the first decorator's map, as for a metric name
            self._node_fields[name] = fields
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
               metrics: Sequence[Metric] = (), fields: Mapping[str, str] | None = None) -> _Frame:
        self._use_metrics(name, metrics, fields)
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
        if not openai_patch._PATCHED and "openai" in sys.modules:
            openai_patch._patch_openai()
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
               error_type, None if exc is None else redact(str(exc))[:2000], frame.model,
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
                due = (len(self._nodes) >= self.flush_every
                       or time.monotonic() - self._last_flush >= self.flush_interval)
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


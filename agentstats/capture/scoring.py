"""End-of-run metrics of a captured run, computed through the metric catalogue (:mod:`agentstats.metrics`).

A metric attached to a node (``@agentstats.node("answer", metrics=["exact_match"])``) is computed on every
invocation of that node that did not raise; one attached to the application (``agentstats.run(...,
metrics=[...])``) per message (each top-level call) and per conversation (the mean over its messages; passed when
every message passed), or, for a trial-level metric (``tool_calls``, ``latency``, ``reward`` ...), once per
conversation. A trial with no outcome of its own succeeds when all its application-level metrics with a threshold
pass. Any catalogue metric can be named (``faithfulness``, ``pii``, ``hit_rate`` ...), a
:class:`~agentstats.metrics.Metric` given, or a function ``(answer, expected)``
(:func:`agentstats.metrics.function_metric`); capture's answer matchers are the catalogue's ``exact_match``,
``normalized_match``, ``numeric_match``, ``token_f1``, ``contains_match``, ``auto_match``, the judge's verdict
``answer_correctness``, the tool-call scorer ``tool_calls`` (application level).

What a metric reads (its roles, :mod:`agentstats.metrics.base`):

* a **node invocation**: the record of :func:`agentstats.store.nodes.node_view`: each role (``input``, ``output``,
  ``context``, ``expected``, ``retrieved_contexts``, ``relevance``) read from the node's return value, arguments
  and state by the node's ``fields=`` map over the run's field options (``query``, ``answer``,
  ``expected_answer`` by default), every other field of these under its own name (a metric's own field names,
  ``fields=`` or ``function_metric(..., expected_field=)``, find them), and the usage roles the invocation's own
  ``latency_s``, ``input_tokens``, ``output_tokens``, ``cost_usd`` and ``model``;
* a **message**: the stored interaction (``query``, ``answer``, ``expected_answer``, ``tool_calls``); the reference
  is always the message's expected answer (the state's, captured by the run);
* a **conversation** (trial-level metrics): the stored trial (:func:`agentstats.metrics.compute.trial_view`).

A record a metric does not apply to (a not-applicable score: no reference answer, no context ...) gets no row; a
function that returns ``None`` gets a row without a value. Rows go to ``metric_results`` (value, passed, the
evidence as ``detail``); a judge's verdicts also to ``judge_verdicts``. Judge-based methods get the run's
``judge=`` (an object is given to every judge-based method; a name only to ``answer_correctness``, whose default is
the deterministic judge), and each method's records are judged in one batch.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic_core import to_json

from agentstats.capture.records import _dumps
from agentstats.capture.results import LOGGED
from agentstats.metrics.base import Metric, RecordValues, Score
from agentstats.metrics.compute import trial_view
from agentstats.metrics.matching import answer_correctness
from agentstats.records.trial import Status, Trial
from agentstats.store import RunStore
from agentstats.store.nodes import USAGE_KEYS, node_view

__all__ = ["score_run"]

_ROW_COLUMNS = ("run_id", "metric", "level", "node", "agent", "task_id", "trial", "conversation_id", "message_id",
                "invocation_id", "value", "passed", "detail")
_VERDICT_COLUMNS = ("run_id", "metric", "invocation_id", "agent", "task_id", "trial", "judge", "prompt_version",
                    "verdict", "score", "cost_usd")
#: The run's state fields read by default: the reference, the question, a node output's answer field.
_FIELDS = {"expected": "expected_answer", "query": "query", "answer": "answer"}
#: (level, node, agent, task_id, trial, conversation_id, message_id, invocation_id) of one row.
Key = tuple[str, str | None, str, str, int, str | None, str | None, int | None]


def score_run(store: RunStore, run_id: int, name: str, metrics: Sequence[Metric],
              node_metrics: Mapping[str, Sequence[Metric]], *, judge: Any = None,
              fields: Mapping[str, str] | None = None,
              node_fields: Mapping[str, Mapping[str, str]] | None = None) -> None:
    """Compute a captured run's node and application metrics from its stored records, replacing earlier results.

    Parameters
    ----------
    store : RunStore
        The open store holding the run.
    run_id : int
    name : str
        The run's name.
    metrics : sequence of Metric
        Application-level metrics.
    node_metrics : mapping of str to sequence of Metric
        Node name -> the metrics of its invocations.
    judge : Judge or str, optional
        The run's judge (see the module docstring).
    fields : mapping of str to str, optional
        The run's state fields: ``expected`` (reference), ``query`` (question), ``answer`` (a node output's answer
        field); defaults ``expected_answer``, ``query``, ``answer``.
    """
    if not metrics and not node_metrics:
        return
    scoring = _Scoring(store, run_id, list(metrics), judge, {**_FIELDS, **(fields or {})})
    if node_metrics:
        scoring.nodes(node_metrics, node_fields or {})
    trials = store.trials(name, nodes=False)  # written back with their outcomes: as stored
    scoring.trials(trials)
    scoring.batches()
    scoring.write(trials)


class _Scoring:
    """The rows of one scoring: metric results, judge verdicts, the trials' outcomes, the batched records."""

    def __init__(self, store: RunStore, run_id: int, metrics: list[Metric], judge: Any,
                 fields: Mapping[str, str]) -> None:
        self.store, self.run_id, self.metrics, self.judge, self.fields = store, run_id, metrics, judge, fields
        self.rows: dict[str, list[Any]] = {c: [] for c in _ROW_COLUMNS}
        self.verdicts: dict[str, list[Any]] = {c: [] for c in _VERDICT_COLUMNS}
        self.outcomes: dict[tuple[str, str, int], list[bool]] = {}
        #: Records of batch methods (judges), scored together by :meth:`batches`.
        self.pending: list[tuple[Metric, Callable[..., Any], Key, RecordValues]] = []
        self._ready: dict[tuple[int, str], tuple[Metric, Callable[..., Any], dict[str, str]]] = {}

    # ------------------------------------------------------------------ records

    def nodes(self, node_metrics: Mapping[str, Any], node_fields: Mapping[str, Mapping[str, str]]) -> None:
        """Score every invocation (that did not raise) of the nodes with metrics, in invocation order."""
        names = list(node_metrics)
        inv = self.store.con.execute(
            f"""SELECT invocation_id, node, agent, task_id, trial, conversation_id, message_id, inputs, outputs,
                       {", ".join(USAGE_KEYS)}
                FROM node_invocations WHERE run_id = ? AND error_type IS NULL
                AND node IN ({", ".join("?" * len(names))}) ORDER BY invocation_id""",
            [self.run_id, *names],
        ).fetchall()
        run_fields = {"input": self.fields["query"], "expected": self.fields["expected"],
                      "output": self.fields["answer"]}
        for iid, nname, agent, task, k, cid, mid, inputs, outputs, *usage in inv:
            record = node_view(json.loads(inputs) if inputs else {}, json.loads(outputs) if outputs else None,
                               {**run_fields, **node_fields.get(nname, {})},
                               dict(zip(USAGE_KEYS, usage, strict=True)))
            for m in node_metrics[nname]:
                if "node" in m.levels:  # a trial-level metric (tool_calls) has no node records
                    self.score(m, ("node", nname, agent, task, k, cid, mid, iid), record, "node")

    def trials(self, trials: list[Trial]) -> None:
        """Score the application metrics: per message and conversation, or per conversation (trial level)."""
        for t in trials:
            cid = t.meta.get("conversation_id")
            conversation: Key = ("conversation", None, t.agent, t.task_id, t.trial, cid, None, None)
            view = None
            for m in self.metrics:
                if m.level == "trial":
                    view = view if view is not None else trial_view(t)
                    got = self.score(m, conversation, view, "trial")
                    if got is not None and got[1] is not None:
                        self.outcomes.setdefault(t.key, []).append(got[1])
                    continue
                results: list[tuple[float, bool | None]] = []
                for it in t.interactions:
                    got = self.score(m, ("message", None, t.agent, t.task_id, t.trial, cid, it.id, None), it,
                                     "message")
                    if got is not None and got[0] is not None:
                        results.append((got[0], got[1]))
                self.conversation(m, conversation, results)

    def batches(self) -> None:
        """Score the batched records, one call per method and settings, then their conversations."""
        groups: list[tuple[Callable[..., Any], Mapping[str, Any], list[tuple[Metric, Key, RecordValues]]]] = []
        for m, fn, key, values in self.pending:
            for g_fn, g_params, items in groups:
                if g_fn is fn and g_params == m.params:
                    items.append((m, key, values))
                    break
            else:
                groups.append((fn, m.params, [(m, key, values)]))
        per_conversation: dict[tuple[Any, ...], tuple[Metric, list[tuple[float, bool | None]]]] = {}
        for fn, params, items in groups:
            scores = fn([values for _, _, values in items], params)
            for (m, key, _), s in zip(items, scores, strict=True):
                got = self.put(m, key, s)
                if got is None:
                    continue
                level, _, agent, task, k, cid, _, _ = key
                if level == "message" and got[0] is not None:
                    per_conversation.setdefault((id(m), agent, task, k, cid), (m, []))[1].append((got[0], got[1]))
                elif level == "conversation" and got[1] is not None:
                    self.outcomes.setdefault((agent, task, k), []).append(got[1])
        for (_, agent, task, k, cid), (m, results) in per_conversation.items():
            self.conversation(m, ("conversation", None, agent, task, k, cid, None, None), results)

    # ------------------------------------------------------------------ one metric on one record

    def _prepared(self, m: Metric, level: str) -> tuple[Metric, Callable[..., Any], dict[str, str]]:
        """Return the metric with the run's judge, its method, and the field it reads for each role at ``level``."""
        given = (id(m), level)
        ready = self._ready.get(given)
        if ready is not None:
            return ready
        fn = m.methods[m.method]
        if getattr(fn, "batch", False) and "judge" not in m.params:
            judge = self.judge
            if isinstance(judge, str) or judge is None:  # a judge name: answer_correctness resolves it
                judge = (judge or "deterministic") if fn is answer_correctness else None
            if judge is not None:
                m = m.replace(params={**m.params, "judge": judge})
        if level == "message":  # the message's reference is the expected answer the run captured
            names = m.field_names("interaction")
            if "expected" in names:
                names["expected"] = "expected_answer"
        else:
            names = m.field_names("node" if level == "node" else "trial")
        ready = (m, fn, names)
        self._ready[given] = ready  # the metrics given live as long as the run: their ids stay theirs
        return ready

    def score(self, m: Metric, key: Key, record: Any, level: str) -> tuple[float | None, bool | None] | None:
        """Score one record (or keep it for its batch): ``(value, passed)`` of the row written, None when none."""
        m, fn, names = self._prepared(m, level)
        values = RecordValues(record, names)
        if getattr(fn, "batch", False):
            self.pending.append((m, fn, key, values))
            return None
        return self.put(m, key, fn(values, m.params))

    def put(self, m: Metric, key: Key, s: Score) -> tuple[float | None, bool | None] | None:
        """Write the row of one score (none when not applicable); its judge verdict too. Return (value, passed)."""
        evidence = dict(s.evidence)
        if s.value is None and "not_applicable" in evidence:
            return None
        verdict = evidence.pop("verdict", None)
        passed = m.passed(s.value)
        self.row(m, key, s.value, evidence, passed)
        if verdict is not None:
            self.verdict(m, key, s.value, verdict)
        return s.value, passed

    def conversation(self, m: Metric, key: Key, results: list[tuple[float, bool | None]]) -> None:
        """Write the conversation row of a message-level metric: mean value, passed when every message passed."""
        if not results:
            return
        passes = [p for _, p in results]
        ok = None if any(p is None for p in passes) else all(passes)
        self.row(m, key, sum(v for v, _ in results) / len(results), {"messages": len(results)}, ok)
        if ok is not None:
            self.outcomes.setdefault((key[2], key[3], key[4]), []).append(ok)

    def row(self, m: Metric, key: Key, value: float | None, detail: Mapping[str, Any], passed: bool | None) -> None:
        level, nname, agent, task, k, cid, mid, iid = key
        for col, v in (("run_id", self.run_id), ("metric", m.name), ("level", level), ("node", nname),
                       ("agent", agent), ("task_id", task), ("trial", k), ("conversation_id", cid),
                       ("message_id", mid), ("invocation_id", iid), ("value", value), ("passed", passed),
                       ("detail", _dumps(detail))):
            self.rows[col].append(v)

    def verdict(self, m: Metric, key: Key, value: float | None, verdict: Mapping[str, Any]) -> None:
        _, _, agent, task, k, _, _, iid = key
        for col, v in (("run_id", self.run_id), ("metric", m.name), ("invocation_id", iid), ("agent", agent),
                       ("task_id", task), ("trial", k), ("judge", verdict.get("judge")),
                       ("prompt_version", verdict.get("prompt_version")), ("verdict", to_json(verdict).decode()),
                       ("score", value), ("cost_usd", verdict.get("cost_usd"))):
            self.verdicts[col].append(v)

    # ------------------------------------------------------------------ the store

    def write(self, trials: list[Trial]) -> None:
        """Replace the run's metric results and verdicts; give trials without an outcome the metrics' outcome."""
        changed = []
        for t in trials:
            oks = self.outcomes.get(t.key)
            if oks and t.success is None and t.reward is None and t.status == Status.completed:
                changed.append(t.model_copy(update={"success": all(oks)}))
        with self.store.transaction():
            self.store.con.execute("DELETE FROM judge_verdicts WHERE run_id = ?", [self.run_id])
            self.store.con.execute(  # values logged with log_metric stay
                "DELETE FROM metric_results WHERE run_id = ? AND (detail IS NULL OR detail::VARCHAR <> ?)",
                [self.run_id, LOGGED])
            self.store.append_rows("metric_results", self.rows)
            self.store.append_rows("judge_verdicts", self.verdicts)
            self.store.replace_trials(self.run_id, changed)

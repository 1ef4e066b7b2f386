"""Compute metrics over trials into one tidy frame.

One row per (trial, record, metric): the record is an interaction, a node of an interaction or the trial, as the
metric's level says (:mod:`agentstats.metrics.base`). A metric that does not apply to a record still has its row,
with ``value`` NaN, ``applicable`` False, ``passed`` missing and the reason in ``evidence["not_applicable"]``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Executor
from typing import Any

import pandas as pd

from agentstats.metrics.base import Level, Metric, RecordValues, Score, field_value
from agentstats.metrics.registry import resolve_metrics
from agentstats.metrics.usage import BadValue, checked_number
from agentstats.parallel.executor import (
    ByValue,
    ExecutorLike,
    chunk_slices,
    executor_workers,
    map_ordered,
    resolve_executor,
)
from agentstats.records.trial import Interaction, Trial

__all__ = ["COLUMNS", "MetricInputError", "compute", "not_computed", "records", "trial_view"]

#: Columns of the frame :func:`compute` returns, in order.
COLUMNS = ("agent", "task_id", "trial", "risk_level", "interaction", "node", "level", "metric", "group", "method",
           "value", "applicable", "passed", "evidence")

_USAGE_KEYS = ("latency_s", "input_tokens", "output_tokens", "cost_usd", "duration_s")


class MetricInputError(ValueError):
    """A record holds a value a metric cannot read; the message names the trial, record, metric and field."""


def _summed_usage(interactions: Sequence[Interaction]) -> dict[str, Any] | None:
    if not interactions:
        return None
    out: dict[str, Any] = {}
    for key in _USAGE_KEYS:
        total: float | BadValue | None = 0.0
        for i, it in enumerate(interactions):
            u = field_value(it, "usage")
            v = (field_value(u, key) if u is not None else None)
            where = f"interaction {i}: usage.{key}"
            if v is None:
                v = field_value(it, key)
                where = f"interaction {i}: {key}"
            if v is None:
                total = None
                break
            try:
                x = checked_number(v, where)
            except ValueError as exc:  # reported by the metrics that read this key, with the trial's key
                total = BadValue(str(exc))
                break
            total += x  # type: ignore[operator]
        if total is not None:
            out[key] = total
    return out or None


def trial_view(trial: Trial) -> dict[str, Any]:
    """Return the fields a trial-level metric reads (see :mod:`agentstats.metrics.base`).

    The answer fields (``query``, ``answer``, ``context``, ``expected_answer`` and the final interaction's extra
    fields) are those of the last interaction with a non-blank answer (else the last interaction); the trial's own
    extra fields win over them; ``usage`` is the trial's, else the sum over its interactions of each value every
    interaction records. The whole trial, for the trial-level tool and outcome metrics: ``interactions``,
    ``tool_calls`` (every interaction's, in order), the trial's ``expected_tool_calls``, ``tools`` (the trial's when
    it has any), ``reward`` and ``meta``.
    """
    view: dict[str, Any] = {}
    its = trial.interactions
    last = next((it for it in reversed(its) if it.answer is not None and it.answer.strip()), its[-1] if its else None)
    if last is not None:
        view.update(last.model_extra or {})
        view.update(query=last.query, answer=last.answer, context=last.context, expected_answer=last.expected_answer)
        view.pop("usage", None)
    view.update(trial.model_extra or {})
    view["usage"] = trial.usage if trial.usage is not None else _summed_usage(its)
    view["interactions"] = its
    view["tool_calls"] = [c for it in its for c in it.tool_calls]
    view["expected_tool_calls"] = trial.expected_tool_calls
    if trial.tools:
        view["tools"] = trial.tools
    view["reward"] = trial.reward
    view["meta"] = trial.meta
    return view


def records(trial: Trial, level: Level) -> Iterator[tuple[int | None, str | None, Any]]:
    """``(interaction index, node name, record)`` of ``trial`` at ``level``.

    Nodes are the entries of an interaction's extra field ``nodes`` (objects); a node is named by its ``name``, else
    its ``id``, else its position.

    Raises
    ------
    MetricInputError
        When ``nodes`` is not a list of objects.
    """
    if level == "trial":
        yield None, None, trial_view(trial)
        return
    for i, it in enumerate(trial.interactions):
        if level == "interaction":
            yield i, None, it
            continue
        nodes = field_value(it, "nodes")
        if nodes is None:
            continue
        if not isinstance(nodes, list):
            raise MetricInputError(f"trial {_key(trial)} interaction {i}: field nodes must be a list of objects")
        for j, nd in enumerate(nodes):
            if not isinstance(nd, Mapping):
                raise MetricInputError(f"trial {_key(trial)} interaction {i}: nodes[{j}] must be an object")
            name = nd.get("name", nd.get("id", j))
            yield i, str(name), nd


def _key(trial: Trial) -> str:
    return f"{trial.agent}/{trial.task_id}/{trial.trial}"


def compute(
    trials: Iterable[Trial],
    metrics: str | Metric | Iterable[str | Metric],
    *,
    fields: Mapping[str, str] | None = None,
    level: Level | None = None,
    errors: str = "raise",
    judge: Any = None,
    guardian: Any = None,
    tool_weights: Mapping[str, float] | None = None,
    executor: ExecutorLike = None,
    workers: int | None = None,
    address: str | None = None,
    chunk_size: int | None = None,
) -> pd.DataFrame:
    """Compute metrics on every record of every trial: one tidy row per (trial, record, metric).

    Parameters
    ----------
    trials : iterable of Trial
    metrics : str, Metric or iterable of them
        Metric names, group names (``answer_quality``, ``retrieval_quality``, ``content_safety``,
        ``readability``, ``usage``) or configured :class:`Metric` objects; a string may list several,
        comma-separated.
    fields : mapping of str to str, optional
        Role -> field name overrides for every metric (``{"output": "response"}``).
    level : {"interaction", "node", "trial"}, optional
        Compute every metric that supports it at this level (others keep their own).
    judge : OpenAIJudge, optional
        The judge of every metric computed by a judge method that has none in its ``params`` (see
        :mod:`agentstats.metrics.judged`); without one such metrics are not applicable.
    guardian : GuardianClassifier, optional
        The classifier of every metric computed by the ``guardian`` method that has none in its ``params``
        (:mod:`agentstats.metrics.guardian`).
    tool_weights : mapping of str to float, optional
        Component weights (``selection``, ``parameters``, ``sequence``, ``utilization``) of every ``tool_use``
        metric that has none in its ``params`` (:func:`agentstats.scoring.tools.score_tool_calls`).
    errors : {"raise", "collect"}
        On a record a metric cannot read: raise :class:`MetricInputError`, or keep going (that row is not
        applicable with the error as its reason, and every error is listed in ``frame.attrs["errors"]``).
    executor : None, "local", "process", "ray" or concurrent.futures.Executor
        Where the metrics are computed (:func:`agentstats.parallel.resolve_executor`; default in this process). The
        trials are cut into chunks (``chunk_size`` trials each; default about four per worker, 500 to 20,000), each
        chunk is scored by a worker and the rows are put back in the order of the in-process call, so the frame is
        the same whatever the executor. Metrics computed by one batch of requests (a judge, a guardian, an embedder)
        run in this process, concurrently by their client's own ``concurrency``. Trials still in files:
        :func:`agentstats.metrics.compute_files` gives the same frame with each worker reading its own file.
    workers, address : optional
        Processes of ``executor="process"``, the Ray cluster of ``executor="ray"``.
    chunk_size : int, optional
        Trials per chunk sent to a worker.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`COLUMNS`: ``agent``, ``task_id``, ``trial`` (int), ``risk_level``, ``interaction`` (Int64,
        0-based; missing at trial level), ``node`` (str or None), ``level``, ``metric``, ``group``, ``method``,
        ``value`` (float; NaN when not applicable), ``applicable`` (bool), ``passed`` (boolean; missing when not
        applicable or the metric has no threshold), ``evidence`` (dict). ``attrs["metrics"]`` describes each metric
        used by name (group, level, method, value_range, lower_limit, upper_limit); ``attrs["errors"]`` lists the
        input errors collected.

    Raises
    ------
    ValueError
        For an unknown metric or group name, an unknown ``errors`` mode, or a bad ``executor`` / ``workers`` /
        ``address`` / ``chunk_size``.
    MetricInputError
        (``errors="raise"``) naming the trial key, interaction, node, metric and the field problem.
    """
    ms = configure(metrics, errors, fields=fields, level=level, judge=judge, guardian=guardian,
                   tool_weights=tool_weights)
    locate = getattr(trials, "location", None)  # a TrialSet read from the project's JSONL knows file and line
    trials = list(trials)
    if chunk_size is not None and (isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1):
        raise ValueError(f"compute: chunk_size must be an integer >= 1, got {chunk_size!r}")
    with resolve_executor(executor, workers=workers, address=address) as ex:
        if ex is None:
            frame = _compute(trials, ms, errors, locate)
        else:
            frame = _compute_chunked(trials, ms, errors, locate, ex, chunk_size)
    del frame.attrs["error_keys"]
    return frame


def configure(
    metrics: str | Metric | Iterable[str | Metric],
    errors: str = "raise",
    *,
    fields: Mapping[str, str] | None = None,
    level: Level | None = None,
    judge: Any = None,
    guardian: Any = None,
    tool_weights: Mapping[str, float] | None = None,
) -> list[Metric]:
    """Resolve ``metrics`` and apply the options every metric shares (the options of :func:`compute`).

    Returns
    -------
    list of Metric
        In the order named, each with ``fields``, ``level`` (where it supports it), the judge, guardian and tool
        weights given here unless its own ``params`` has one.

    Raises
    ------
    ValueError
        An unknown metric or group name, or ``errors`` neither ``"raise"`` nor ``"collect"``.
    """
    if errors not in ("raise", "collect"):
        raise ValueError(f"errors must be 'raise' or 'collect', got {errors!r}")
    ms = resolve_metrics(metrics)
    if fields:
        ms = [m.with_fields(**fields) for m in ms]
    if level is not None:
        ms = [m.replace(level=level) if level in m.levels else m for m in ms]
    if judge is not None:
        ms = [m.replace(params={**m.params, "judge": judge}) if getattr(m.methods[m.method], "batch", False)
              and "judge" not in m.params else m for m in ms]
    if guardian is not None:
        ms = [m.replace(params={**m.params, "guardian": guardian}) if m.method == "guardian"
              and "guardian" not in m.params else m for m in ms]
    if tool_weights is not None:
        ms = [m.replace(params={**m.params, "weights": dict(tool_weights)}) if m.group == "tool_use"
              and "weights" not in m.params else m for m in ms]
    return ms


def is_batch(m: Metric) -> bool:
    """Whether ``m`` is computed by one batch of requests (a judge, guardian or embedder), in the calling process."""
    return bool(getattr(m.methods[m.method], "batch", False))


def by_value(ms: list[Metric]) -> ByValue[list[Metric]]:
    """``ms`` packed for workers: each metric with its one method, sent by value (closures included)."""
    return ByValue([m.replace(methods={m.method: m.methods[m.method]}) for m in ms])


def _compute(trials: list[Trial], ms: list[Metric], errors: str,
             locate: Callable[[Trial], str | None] | None) -> pd.DataFrame:
    """:func:`compute` of configured metrics ``ms`` over ``trials``, in this process (the frame and its attrs).

    ``attrs["error_keys"]`` (dropped by :func:`compute`) gives each error's ``(metric position, pass)``: a record
    that cannot be read (pass 0) is found before any value is scored (pass 1), metric by metric.
    """
    cols: dict[str, list[Any]] = {c: [] for c in COLUMNS}
    problems: list[str] = []
    keys: list[tuple[int, int]] = []

    def where(t: Trial, i: int | None, node: str | None) -> str:
        place = locate(t) if locate is not None else None
        return (f"{place}: " if place else "") + f"trial {_key(t)}" + (
            f" interaction {i}" if i is not None else "") + (f" node {node}" if node is not None else "")

    for pos, m in enumerate(ms):
        names, passed, fn, params = m.field_names(), m.passed, m.methods[m.method], m.params
        recs: list[tuple[Trial, int | None, str | None, Any]] = []
        unreadable: dict[int, Score] = {}  # position in recs -> the not-applicable score of a trial it cannot read
        for t in trials:
            try:
                recs.extend((t, i, node, rec) for i, node, rec in records(t, m.level))
            except MetricInputError as exc:
                place = locate(t) if locate is not None else None
                msg = (f"{place}: " if place else "") + f"metric {m.name}: {exc}"
                if errors == "raise":
                    raise MetricInputError(msg) from exc
                problems.append(msg)
                keys.append((pos, 0))
                unreadable[len(recs)] = Score(None, {"not_applicable": f"input error: {exc}"})
                recs.append((t, None, None, None))
        todo = [r for j, r in enumerate(recs) if j not in unreadable] if unreadable else recs
        scores: list[Score] = []
        if getattr(fn, "batch", False):
            try:
                batch_fn: Any = fn
                scores = list(batch_fn([RecordValues(rec, names) for _, _, _, rec in todo], params))
            except (ValueError, TypeError) as exc:
                msg = f"metric {m.name}: {exc}"
                if errors == "raise":
                    raise MetricInputError(msg) from exc
                problems.append(msg)
                keys.append((pos, 1))
                scores = [Score(None, {"not_applicable": f"input error: {exc}"}) for _ in todo]
        else:
            for t, i, node, rec in todo:
                try:
                    s = fn(RecordValues(rec, names), params)
                except (ValueError, TypeError) as exc:
                    msg = f"{where(t, i, node)}: metric {m.name}: {exc}"
                    if errors == "raise":
                        raise MetricInputError(msg) from exc
                    problems.append(msg)
                    keys.append((pos, 1))
                    s = Score(None, {"not_applicable": f"input error: {exc}"})
                scores.append(s)
        if unreadable:
            scored = iter(scores)
            scores = [unreadable[j] if j in unreadable else next(scored) for j in range(len(recs))]
        if len(scores) != len(recs):  # pragma: no cover - a batch method that lost records
            raise RuntimeError(f"metric {m.name}: {len(scores)} scores for {len(recs)} records")
        # whole columns at once (list comprehensions: a third of the per-row cost of fourteen appends)
        cols["agent"] += [r[0].agent for r in recs]
        cols["task_id"] += [r[0].task_id for r in recs]
        cols["trial"] += [r[0].trial for r in recs]
        cols["risk_level"] += [r[0].risk_level for r in recs]
        cols["interaction"] += [r[1] for r in recs]
        cols["node"] += [r[2] for r in recs]
        for col, const in (("level", m.level), ("metric", m.name), ("group", m.group), ("method", m.method)):
            cols[col] += [const] * len(recs)
        values = [s.value for s in scores]
        cols["value"] += values
        cols["applicable"] += [v is not None for v in values]
        cols["passed"] += [passed(v) for v in values]
        cols["evidence"] += [s.evidence for s in scores]
    frame = pd.DataFrame(cols, columns=list(COLUMNS))
    frame["trial"] = frame["trial"].astype("int64")
    frame["interaction"] = frame["interaction"].astype("Int64")
    frame["value"] = pd.to_numeric(frame["value"], errors="coerce").astype("float64")
    frame["applicable"] = frame["applicable"].astype(bool)
    frame["passed"] = frame["passed"].astype("boolean")
    frame.attrs["metrics"] = {m.name: {"group": m.group, "level": m.level, "method": m.method,
                                       "value_range": tuple(m.value_range), "lower_limit": m.lower_limit,
                                       "upper_limit": m.upper_limit} for m in ms}
    frame.attrs["errors"] = problems
    frame.attrs["error_keys"] = keys
    return frame


def _chunk_task(task: tuple[list[Trial], list[str | None], ByValue[list[Metric]], str]) -> pd.DataFrame:
    """Score one chunk in a worker: :func:`_compute` with the chunk's file and line locations."""
    chunk, places, ms, errors = task
    where = {id(t): p for t, p in zip(chunk, places, strict=True)}
    return _compute(chunk, ms.get(), errors, (lambda t: where.get(id(t))) if any(places) else None)


def _compute_chunked(trials: list[Trial], ms: list[Metric], errors: str, locate: Callable[[Trial], str | None] | None,
                     ex: Executor, chunk_size: int | None) -> pd.DataFrame:
    """:func:`compute` on an executor: chunks of trials scored by workers, rows in the in-process order.

    Batch metrics (one batch of requests to a judge, guardian or embedder) are computed here over all trials. With
    ``errors="raise"`` the error raised is the first of the first chunk that has one.
    """
    batch = [is_batch(m) for m in ms]
    remote = [m for m, b in zip(ms, batch, strict=True) if not b]
    local = [m for m, b in zip(ms, batch, strict=True) if b]
    slices = chunk_slices(len(trials), executor_workers(ex), chunk_size)
    places: list[str | None] = [locate(t) for t in trials] if locate is not None else [None] * len(trials)
    sent = by_value(remote)  # closures go by value
    tasks = [(trials[s], places[s], sent, errors) for s in slices] if remote else []
    results = map_ordered(_chunk_task, tasks, ex, return_exceptions=True)
    for r in results:  # the first error in chunk order, as the in-process loop would meet a chunk's trials
        if isinstance(r, BaseException):
            raise r
    parts: list[tuple[list[int], pd.DataFrame]] = [([i for i, b in enumerate(batch) if not b], r) for r in results]
    if local:
        parts.append(([i for i, b in enumerate(batch) if b], _compute(trials, local, errors, locate)))
    return merge_parts(parts, ms, errors)


def merge_parts(parts: Sequence[tuple[list[int], pd.DataFrame]], ms: list[Metric], errors: str) -> pd.DataFrame:
    """Merge frames of :func:`_compute` over consecutive pieces of the trials into the frame of one call over all.

    The one merge of every split computation: chunks of trials (:func:`compute` on an executor), shard files
    (:func:`agentstats.metrics.sharded.compute_files`). The in-process frame holds, for each metric in turn, the rows
    of every trial in order, and its errors metric by metric (unreadable records first, then values, each in trial
    order); each piece's frame holds the same for its trials, so piece after piece, per metric, restores both orders.

    Parameters
    ----------
    parts : sequence of (list of int, DataFrame)
        In trial order: each piece's frame and, for each of its metrics, that metric's position in ``ms`` (a piece
        may compute some of the metrics: the batch metrics run apart, over all trials, as one more piece). An error
        key ``(-1, 0)`` in a piece's ``attrs["error_keys"]`` is a problem met before any metric (a record its file's
        reader skipped): such errors come first, piece by piece.
    ms : list of Metric
        Every metric, in the order of the frame.
    errors : {"raise", "collect"}

    Returns
    -------
    pandas.DataFrame
        The frame of :func:`_compute` over all the pieces' trials (``attrs["error_keys"]`` empty).
    """
    frames: list[tuple[int, int, pd.DataFrame]] = []  # (metric position, part, rows)
    tagged: list[tuple[int, int, int, str]] = []  # (metric position, pass, part, message)
    for j, (positions, part) in enumerate(parts):
        for (pos, step), msg in zip(part.attrs["error_keys"], part.attrs["errors"], strict=True):
            tagged.append((positions[pos] if pos >= 0 else pos, step, j, msg))
        for pos, name in enumerate(ms[i].name for i in positions):
            frames.append((positions[pos], j, part.loc[part["metric"] == name]))
    empty = _compute([], ms, errors, None)
    frames.sort(key=lambda f: (f[0], f[1]))  # metric by metric, then part by part (the batch part is alone)
    rows = [f for _, _, f in frames if len(f)]
    frame = pd.concat(rows, ignore_index=True) if rows else empty
    for col in COLUMNS:
        # a text column that is all missing in one piece (risk_level, node) is object there and text in another;
        # the concatenation is object. Inferred again from the values, as the in-process frame's constructor does.
        if col != "evidence" and frame[col].dtype == object:
            frame[col] = pd.Series(frame[col].tolist(), index=frame.index)
    frame.attrs = {"metrics": empty.attrs["metrics"]}
    frame.attrs["errors"] = [msg for *_, msg in sorted(tagged, key=lambda e: e[:3])]
    frame.attrs["error_keys"] = []
    return frame


def not_computed(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """List the metrics of a :func:`compute` frame without any applicable row, and why (their reasons).

    A metric whose method needs a judge, guardian or embedder that was not given is such a metric (reason "no judge
    configured ..."), as is one whose fields the data does not hold.

    Returns
    -------
    list of dict
        One per such metric, in the frame's order: ``metric``, ``method``, ``rows``, ``reasons`` (reason -> rows,
        most rows first).
    """
    out: list[dict[str, Any]] = []
    for (name, method), rows in frame.groupby(["metric", "method"], sort=False):
        if rows["applicable"].any():
            continue
        reasons = pd.Series([str((ev or {}).get("not_applicable", "no value")) for ev in rows["evidence"]])
        counts = reasons.value_counts(sort=True)
        out.append({"metric": str(name), "method": str(method), "rows": len(rows),
                    "reasons": {str(k): int(v) for k, v in counts.items()}})
    return out

"""Write a metrics frame to disk (JSONL, CSV or Parquet) and summarise it per agent and metric."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

from agentstats.files.atomic import atomic_write_bytes, atomic_write_text
from agentstats.intervals import CI_PROB

__all__ = ["judge_missing_over", "summarize_frame", "summarize_with_intervals", "write_metrics"]


def _jsonable(v: Any) -> Any:
    if v is None or v is pd.NA:
        return None
    if isinstance(v, float) and math.isnan(v):
        return None
    if hasattr(v, "item"):
        return v.item()
    return v


def write_metrics(frame: pd.DataFrame, path: str | Path) -> Path:
    """Write a :func:`~agentstats.metrics.compute.compute` frame atomically; the format follows the suffix.

    ``.jsonl`` (one object per row, ``evidence`` an object, missing values ``null``), ``.csv`` and ``.parquet``
    (``evidence`` as a JSON string).

    Raises
    ------
    ValueError
        For another suffix.
    OSError
        When the file cannot be written (an earlier version stays as it was).
    """
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix == ".jsonl":
        lines = [json.dumps({c: _jsonable(v) for c, v in zip(frame.columns, row, strict=True)}, default=str)
                 for row in frame.itertuples(index=False, name=None)]
        atomic_write_text(p, "".join(line + "\n" for line in lines))
    elif suffix in (".csv", ".parquet"):
        flat = frame.copy()
        flat.attrs = {}  # Metric objects and error lists are not part of the table
        flat["evidence"] = [json.dumps(e, default=str) for e in flat["evidence"]]
        if suffix == ".csv":
            atomic_write_text(p, flat.to_csv(index=False))
        else:
            buf = io.BytesIO()
            flat.to_parquet(buf, index=False)
            atomic_write_bytes(p, buf.getvalue())
    else:
        raise ValueError(f"metrics output {p}: use a .jsonl, .csv or .parquet file name")
    return p


def _judge_missing_kind(evidence: Any) -> str | None:
    """Return the ``judge_missing`` kind of one row's evidence (a dict, or its JSON text as in CSV/Parquet)."""
    if isinstance(evidence, str):
        try:
            evidence = json.loads(evidence)
        except ValueError:
            return None
    if not isinstance(evidence, dict) or evidence.get("not_applicable") != "judge_missing":
        return None
    return str(evidence.get("judge_missing") or "unknown")


def summarize_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """Per agent and metric: rows, applicable rows, judge verdicts missing, mean value and share passing.

    A row whose judge (or classifier) verdict could not be obtained is not applicable, with
    ``evidence["not_applicable"] == "judge_missing"`` and the kind of failure in ``evidence["judge_missing"]``
    (``invalid_output``, ``transport``, ...); it is counted in ``n_judge_missing``, apart from the rows that are
    not applicable by nature (a blank answer, no context).

    Parameters
    ----------
    frame : pandas.DataFrame
        A :func:`~agentstats.metrics.compute.compute` frame; ``evidence`` a dict per row, or its JSON text (as read
        back from CSV or Parquet).

    Returns
    -------
    pandas.DataFrame
        Columns ``agent, metric, group, method, level, n, n_applicable, n_judge_missing, judge_missing_by_kind,
        mean, n_passed_known, share_passed``; ``judge_missing_by_kind`` maps each kind to its count (empty when
        none is missing), ``mean`` is over applicable rows (NaN when none), ``share_passed`` over rows whose
        ``passed`` is known (NaN when the metric has no threshold).
    """
    cols = ["agent", "metric", "group", "method", "level", "n", "n_applicable", "n_judge_missing",
            "judge_missing_by_kind", "mean", "n_passed_known", "share_passed"]
    if frame.empty:
        return pd.DataFrame(columns=cols)
    rows = []
    for (agent, metric), g in frame.groupby(["agent", "metric"], sort=False):
        known = g["passed"].dropna()
        kinds: dict[str, int] = {}
        for e in g["evidence"]:
            kind = _judge_missing_kind(e)
            if kind is not None:
                kinds[kind] = kinds.get(kind, 0) + 1
        rows.append({
            "agent": agent, "metric": metric, "group": g["group"].iat[0], "method": g["method"].iat[0],
            "level": g["level"].iat[0], "n": len(g), "n_applicable": int(g["applicable"].sum()),
            "n_judge_missing": sum(kinds.values()), "judge_missing_by_kind": dict(sorted(kinds.items())),
            "mean": float(g["value"].mean()) if g["applicable"].any() else math.nan,
            "n_passed_known": len(known), "share_passed": float(known.astype(bool).mean()) if len(known) else math.nan,
        })
    return pd.DataFrame(rows, columns=cols)


def summarize_with_intervals(frame: pd.DataFrame, *, ci_prob: float = CI_PROB) -> pd.DataFrame:
    """Per agent and metric: :func:`summarize_frame`'s counts, the mean and the share passing with their intervals.

    What ``agentstats score --metrics`` prints (:func:`agentstats.estimators.metric_means.summarize_metrics`): the
    mean is the posterior mean over tasks with its equal-tailed credible interval; the share passing is the suite
    pass@1 of the trials with a verdict, with its confidence interval.

    Parameters
    ----------
    frame : pandas.DataFrame
        A :func:`~agentstats.metrics.compute.compute` frame.
    ci_prob : float
        Probability of both intervals, in (0, 1).

    Returns
    -------
    pandas.DataFrame
        One row per (agent, metric): ``agent, metric, group, method, level, n, n_applicable, n_judge_missing,
        judge_missing_by_kind, n_passed_known`` (:func:`summarize_frame`), then ``n_tasks, mean, ci_low, ci_high,
        ci_prob, ci_note, share_passed, share_ci_low, share_ci_high, share_ci_method`` (``ci_note``: why a mean has
        no interval).
    """
    from agentstats.estimators.metric_means import summarize_metrics

    post = summarize_metrics(frame, ci_prob=ci_prob)
    keep = ["agent", "metric", "n_tasks", "mean", "ci_low", "ci_high", "ci_prob", "ci_note", "share_passed",
            "share_ci_low", "share_ci_high", "share_ci_method"]
    return summarize_frame(frame).drop(columns=["mean", "share_passed"]).merge(post[keep], on=["agent", "metric"])


def judge_missing_over(summary: pd.DataFrame, max_missing: float) -> list[str]:
    """Name the metrics whose share of missing judge verdicts, over all agents, exceeds ``max_missing``.

    A metric's share missing is rows missing / (applicable rows + rows missing): the verdicts asked for
    (judge-based methods only ask for applicable records).

    Parameters
    ----------
    summary : pandas.DataFrame
        :func:`summarize_frame` (or :func:`summarize_with_intervals`): ``metric, n_judge_missing, n_applicable``.
    max_missing : float
        The largest share allowed, in [0, 1].

    Returns
    -------
    list of str
        ``"METRIC MISSING of ASKED (SHARE)"`` for each metric over the limit, in the summary's order.
    """
    over: list[str] = []
    if summary.empty:
        return over
    per_metric = summary.groupby("metric", sort=False)[["n_judge_missing", "n_applicable"]].sum()
    for metric, r in per_metric.iterrows():
        missing, asked = int(r["n_judge_missing"]), int(r["n_judge_missing"] + r["n_applicable"])
        if missing and missing / asked > max_missing:
            over.append(f"{metric} {missing} of {asked} ({missing / asked:.1%})")
    return over

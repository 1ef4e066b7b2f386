"""What ``agentstats score`` prints: the scoring summary, tool-call tables, the metric table, or one JSON payload."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from rich.markup import escape
from rich.table import Table

from agentstats.cli.common import clean, console, out
from agentstats.cli.render.text import print_json
from agentstats.intervals import ci_percent

__all__ = ["judging_progress", "print_metric_table", "print_not_computed", "print_score", "warn_judge_missing"]

_COMPONENTS = ["selection", "parameters", "sequence", "utilization", "overall", "precision", "recall", "f1"]


@contextlib.contextmanager
def judging_progress(judge_name: str) -> Iterator[Callable[[int, int], None]]:
    """Show a progress bar on stderr while answers are judged; yield the ``progress(done, total)`` callback."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=True) as progress:
        task = progress.add_task(f"judging answers ({judge_name})", total=None)
        yield lambda done, total: progress.update(task, completed=done, total=total)


def print_score(source: Path, result: Any, frame: Any, readings: Any, tool_threshold: float,
                metric_summary: Any, as_json: bool) -> None:
    """Print a :class:`~agentstats.scoring.ScoringResult` with its tool tables and metric summary (or as JSON)."""
    from agentstats.report.scoring_tables import judge_summary, tool_breakdown

    summ, breakdown = result.summary(), tool_breakdown(frame)
    if as_json:
        payload = {
            "summary": {k: clean(v) for k, v in summ.items()},
            "judge": {str(r["item"]): clean(r["value"]) for _, r in judge_summary(result).iterrows()},
            "tool_breakdown": [{c: clean(v) for c, v in row.items()} for _, row in breakdown.iterrows()],
            "tool_readings": [{c: clean(v) for c, v in row.items()} for _, row in readings.iterrows()],
            "read_only": readings.attrs.get("read_only", []),
            "read_only_note": readings.attrs.get("note"),
            "ground_truth_errors": [str(e) for e in result.ground_truth_errors],
            "tool_calls_valid": [{c: clean(v) for c, v in row.items()} for _, row in _validity(readings).iterrows()],
        }
        if metric_summary is not None:
            payload["metrics"] = [{c: clean(v) for c, v in row.items()} for _, row in metric_summary.iterrows()]
            payload["metrics_not_computed"] = metric_summary.attrs.get("not_computed", [])
        print_json(payload)
        return
    _print_summary(source, result, summ, judge_summary(result), readings)
    _print_tools(breakdown, readings, tool_threshold)
    _print_validity(_validity(readings))
    if metric_summary is not None:
        print_metric_table(metric_summary)
        print_not_computed(metric_summary.attrs.get("not_computed", []))


def _validity(readings: Any) -> Any:
    import pandas as pd

    return readings.attrs.get("validity", pd.DataFrame())


def _print_validity(validity: Any) -> None:
    """Print the catalogue metric ``tool_calls_valid`` per agent: trials whose calls all satisfy their schemas."""
    if validity.empty:
        out.print("no tool specs in the trials: tool-call syntax (tool_calls_valid) not checked")
        return
    t = Table(title="tool calls valid against their tools' JSON Schemas (tool_calls_valid, per trial)")
    for c in ("agent", "trials with specs", "valid", "share valid", "violations"):
        t.add_column(c, justify="left" if c == "agent" else "right")
    for _, r in validity.iterrows():
        t.add_row(escape(str(r["agent"])), str(r["n_trials"]), str(r["n_valid"]), f"{r['share_valid']:.1%}",
                  str(r["n_violations"]))
    out.print(t)


def print_not_computed(skipped: list[dict[str, Any]]) -> None:
    """Name each metric with no applicable row and why (:func:`agentstats.metrics.not_computed`)."""
    for item in skipped:
        why = "; ".join(f"{escape(reason)} ({n} of {item['rows']} rows)" for reason, n in item["reasons"].items())
        out.print(f"[yellow]not computed:[/] {item['metric']} (method {item['method']}): {why}",
                      highlight=False, soft_wrap=True)


def _print_summary(source: Path, result: Any, summ: dict[str, Any], judged: Any, readings: Any) -> None:
    t = Table(title=f"{escape(source.name)}: scoring summary ({escape(result.judge)})")
    t.add_column("item")
    t.add_column("value", justify="right")
    t.add_row("trials", str(summ["n_trials"]))
    for k, v in sorted(summ["outcomes"].items()):
        t.add_row(f"outcome: {k}", str(v))
    for k, v in sorted(summ["outcome_source"].items()):
        t.add_row(f"outcome source: {k}", str(v))
    for _, r in judged.iterrows():
        if r["item"] == "judge":
            continue
        v = r["value"]
        if r["item"] == "share of verdicts missing":
            t.add_row(str(r["item"]), f"{v:.1%} ({result.n_verdicts_missing} of {result.n_verdicts})")
            continue
        t.add_row(str(r["item"]), "unknown" if v is None else (f"{v:.4f}" if isinstance(v, float) else str(v)))
    if summ["n_answers_lenient"]:
        t.add_row("answers correct by a lenient rule", str(summ["n_answers_lenient"]))
    if summ["n_ground_truth_errors"]:
        t.add_row("ground-truth errors (invalid expected calls)", str(summ["n_ground_truth_errors"]))
    agree = summ["agreement_with_benchmark"]
    t.add_row("scored outcome agrees with benchmark",
              "n/a" if agree is None else f"{agree:.1%} of {summ['n_agreement']}")
    for _, r in readings[readings["level"] == "trial"].iterrows():
        if r["n_compared"]:
            t.add_row(f"trial-level tool pass vs benchmark ({r['reading']}, {escape(str(r['agent']))})",
                      f"{r['agreement']:.1%} agree, kappa {r['kappa']:.3f} (n={r['n_compared']})")
    out.print(t)
    for e in result.ground_truth_errors[:5]:
        console.print(f"[yellow]ground-truth error:[/] {escape(str(e))}")


def _print_tools(breakdown: Any, readings: Any, tool_threshold: float) -> None:
    if breakdown.empty:
        out.print("no tool ground truth (expected tool calls): no tool breakdown")
        return
    bt = Table(title="tool-call correctness (mean per unit)")
    bt.add_column("component")
    for _, r in breakdown.iterrows():
        bt.add_column(f"{escape(str(r['agent']))}\n({r['level']})", justify="right")
    bt.add_row("units", *[str(n) for n in breakdown["n_units"]])
    for c in _COMPONENTS:
        bt.add_row(c, *["-" if math.isnan(v) else f"{v:.3f}" for v in breakdown[c]])
    bt.add_row(f"passed (>= {tool_threshold:g})", *[f"{v:.1%}" for v in breakdown["share_passed"]])
    out.print(bt)
    if readings.attrs.get("read_only"):
        rt = Table(title="tool pass rate, two readings")
        for col in ("reading", "agent", "level"):
            rt.add_column(col)
        rt.add_column("units", justify="right")
        rt.add_column("passed", justify="right")
        for _, r in readings.iterrows():
            rt.add_row(r["reading"], escape(str(r["agent"])), r["level"], str(r["n_units"]), f"{r['share_passed']:.1%}")
        out.print(rt)
        console.print(escape(readings.attrs["note"]))


def _share_text(r: Any) -> str:
    if math.isnan(r["share_passed"]):
        return "-"
    ci = "" if math.isnan(r["share_ci_low"]) else f" [{r['share_ci_low']:.1%}, {r['share_ci_high']:.1%}]"
    return f"{r['share_passed']:.1%}{ci} of {r['n_passed_known']}"


def print_metric_table(summary: Any) -> None:
    """Print :func:`agentstats.metrics.summarize_with_intervals`: one row per agent and metric."""
    pct = ci_percent(summary["ci_prob"].iloc[0]) if len(summary) else "95%"
    t = Table(title=f"metrics: posterior mean over tasks with {pct} credible interval; share of trials passing the "
                    f"threshold with {pct} confidence interval")
    for c in ("agent", "metric", "method", "level"):
        t.add_column(c)
    for c in ("rows", "applicable", "judge missing", "tasks", f"mean [{pct} CrI]", f"passed [{pct} CI]"):
        t.add_column(c, justify="right")
    for _, r in summary.iterrows():
        t.add_row(
            escape(str(r["agent"])), r["metric"], r["method"], r["level"], str(r["n"]), str(r["n_applicable"]),
            str(r["n_judge_missing"]), str(r["n_tasks"]), _mean_text(r), _share_text(r),
        )
    out.print(t)
    for _, r in summary.iterrows():
        if isinstance(r.get("ci_note"), str):
            out.print(f"{escape(str(r['agent']))} {escape(str(r['metric']))}: {escape(r['ci_note'])}", highlight=False)


def _mean_text(r: Any) -> str:
    """``mean [low, high]``; the mean alone, marked, when the interval could not be estimated (``ci_note``)."""
    if math.isnan(r["mean"]):
        return "-"
    if math.isnan(r["ci_low"]):
        return f"{r['mean']:.4g} [no interval*]"
    return f"{r['mean']:.4g} [{r['ci_low']:.4g}, {r['ci_high']:.4g}]"


def warn_judge_missing(summary: Any) -> None:
    """Warn for each agent and metric with missing judge verdicts (their rows are not applicable, not failed)."""
    for _, r in summary[summary["n_judge_missing"] > 0].iterrows():
        kinds = ", ".join(f"{k} {n}" for k, n in r["judge_missing_by_kind"].items())
        console.print(
            f"[yellow]warning:[/] {escape(str(r['agent']))} / {r['metric']}: {r['n_judge_missing']} of "
            f"{r['n_judge_missing'] + r['n_applicable']} judge verdicts missing (judge_missing: {escape(kinds)}) "
            "— not counted as applicable", highlight=False, soft_wrap=True)

"""What ``agentstats runs list`` and ``runs show`` print: the runs of a store, one run's fields."""

from __future__ import annotations

import json
from typing import Any

from rich.markup import escape
from rich.table import Table

from agentstats.cli.common import clean, console, out
from agentstats.cli.render.text import print_json

__all__ = ["plain", "print_run", "print_runs"]


def plain(rec: dict[str, Any]) -> dict[str, Any]:
    """Make a record of the store JSON-ready: arrays as lists, times in ISO format, NaN as None."""
    result = {}
    for k, v in rec.items():
        if hasattr(v, "tolist"):
            v = v.tolist()
        elif hasattr(v, "isoformat"):
            v = v.isoformat()
        result[k] = clean(v) if not isinstance(v, dict | list) else v
    return result


def print_runs(frame: Any, store: Any, as_json: bool) -> None:
    """Print the runs of a store (:meth:`agentstats.store.RunStore.runs`): name, status, sizes, start, source."""
    if as_json:
        print_json([plain(rec) for rec in frame.to_dict(orient="records")])
        return
    if frame.empty:
        console.print(f"no runs in {store}")
        return
    table = Table(title=f"runs in {escape(str(store))}")
    for col in ("name", "status", "trials", "agents", "tasks", "started", "source"):
        table.add_column(col, justify="right" if col in ("trials", "agents", "tasks") else "left")
    for r in frame.itertuples():
        started = r.started_at.strftime("%Y-%m-%d %H:%M:%S") if r.started_at is not None else ""
        table.add_row(escape(str(r.name)), r.status, f"{r.trials:,}", str(r.agents), str(r.tasks), started,
                      escape(str(r.source or "")))
    out.print(table)


def print_run(info: dict[str, Any], as_json: bool, metrics: Any = None) -> None:
    """Print one run's fields (:meth:`agentstats.store.RunStore.run_info`, with its outcomes), one per line.

    ``metrics`` (the run's ``result()`` summary, when it has metric results) is printed as one table per level
    (node, message, conversation, run); with ``--json`` it is the list ``"metrics"``.
    """
    if as_json:
        rec = plain(info)
        if metrics is not None:
            rec["metrics"] = [plain(r) for r in metrics.to_dict(orient="records")]
        print_json(rec)
        return
    for key, value in plain(info).items():
        text = (json.dumps(value, default=str) if isinstance(value, dict | list)
                else "-" if value is None else str(value))
        out.print(f"[bold]{escape(key)}[/]: {escape(text)}", highlight=False, soft_wrap=True)
    if metrics is None:
        return
    for level in ("node", "message", "conversation", "run", "trial"):
        rows = metrics[metrics["level"] == level]
        if rows.empty:
            continue
        table = Table(title=f"metrics by {level}" if level != "trial" else "trials with an outcome")
        cols = ["metric", "n", "mean", "pass_rate"] if level != "node" else ["node", "metric", "n", "mean",
                                                                              "pass_rate"]
        for col in cols:
            table.add_column(col, justify="right" if col in ("n", "mean", "pass_rate") else "left")
        for r in rows.to_dict(orient="records"):
            table.add_row(*(escape(str(r[c])) if c in ("node", "metric") else f"{r[c]:,}" if c == "n"
                            else "-" if r[c] != r[c] else f"{r[c]:.3f}" for c in cols))
        out.print(table)

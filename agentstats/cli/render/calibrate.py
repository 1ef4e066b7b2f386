"""What ``agentstats calibrate`` prints: agreement per metric, ordinal confusion matrices, and how to read them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.markup import escape
from rich.table import Table

from agentstats.cli.common import console, out
from agentstats.cli.render.text import print_json
from agentstats.intervals import ci_percent

__all__ = ["print_calibration"]


def _total(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a + b


def _rate(d: dict[str, float] | None, n: int | None = None) -> str:
    if d is None:
        return "n/a"
    return f"{d['mean']:.3f} [{d['lower']:.3f}, {d['upper']:.3f}]" + (" (prior only)" if n == 0 else "")


def _num(x: float | None) -> str:
    return "n/a" if x is None or x != x else f"{x:.3f}"


def print_calibration(report: Any, source: Path, as_json: bool) -> None:
    """Print a :class:`~agentstats.calibration.CalibrationReport`: one row per metric, then confusion matrices."""
    metrics = list(report.metrics.values())
    if as_json:
        print_json([m.as_record() for m in metrics])
        return
    pct = ci_percent(metrics[0].ci_prob) if metrics else ""
    table = Table(title=f"judge calibration: {escape(str(source))}")
    for col in ("metric", "scale", "items", "missing", "accuracy", "kappa", f"sensitivity [{pct}]",
                f"specificity [{pct}]"):
        table.add_column(col, justify="left" if col in ("metric", "scale") else "right")
    for m in metrics:
        kappa = _num(m.kappa) + (f" (weighted {_num(m.weighted_kappa)})" if m.weighted_kappa is not None else "")
        scale = m.scale if m.scale != "ordinal" else (
            f"ordinal {m.labels[0]}-{m.labels[-1]}" + (" (observed)" if m.scale_source == "observed" else ""))
        table.add_row(escape(m.metric), scale, str(m.n_items), str(m.n_missing), _num(m.accuracy), kappa,
                      _rate(m.sensitivity, _total(m.tp, m.fn)), _rate(m.specificity, _total(m.tn, m.fp)))
    out.print(table)
    for m in metrics:
        for what, n, gold in (("sensitivity", _total(m.tp, m.fn), "pass"), ("specificity", _total(m.tn, m.fp), "fail")):
            if n == 0:
                console.print(f"[yellow]{escape(m.metric)}:[/] no item with gold {gold}, so its {what} is the prior "
                              f"alone; label items a human judged {gold} to measure it", highlight=False)
    for m in metrics:
        if m.scale == "ordinal":
            conf = Table(title=f"{escape(m.metric)}: confusion (rows gold, columns judge)")
            conf.add_column("gold \\ judge")
            for label in m.labels:
                conf.add_column(str(label), justify="right")
            for label, row in zip(m.labels, m.confusion.tolist(), strict=True):
                conf.add_row(str(label), *(str(v) for v in row))
            out.print(conf)
            if m.threshold is None:
                console.print(f"{escape(m.metric)}: ordinal; give --threshold {escape(m.metric)}=SCORE for "
                              "sensitivity and specificity", highlight=False)
            if m.scale_source == "observed":
                console.print(f"{escape(m.metric)}: the weighted kappa's categories are the scores that occurred; "
                              f"declare the rubric's scale (--scale {escape(m.metric)}=LOWEST..HIGHEST, or `scale` "
                              "in the items) to count the unused ones", highlight=False)
    console.print("sensitivity = P(judge pass | gold pass), specificity = P(judge fail | gold fail); Beta(1, 1) "
                  "prior, equal-tailed credible intervals", highlight=False)

"""``agentstats calibrate``: how well a judge agrees with human labels, per metric."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from agentstats.cli.common import EXIT_USAGE, console, fail, out
from agentstats.intervals import CI_PROB


def _thresholds(specs: list[str] | None) -> dict[str, int]:
    """Parse ``--threshold metric=3`` options."""
    result: dict[str, int] = {}
    for spec in specs or []:
        name, sep, value = spec.partition("=")
        try:
            if not sep or not name.strip():
                raise ValueError
            result[name.strip()] = int(value)
        except ValueError:
            raise fail(typer.BadParameter(f"--threshold takes METRIC=INTEGER, got {spec!r}"), EXIT_USAGE) from None
    return result


def calibrate(
    input: Annotated[
        Path, typer.Argument(help="Calibration set: JSONL of item_id, metric, verdict (judge), gold (human).")
    ],
    threshold: Annotated[
        list[str] | None,
        typer.Option(help="Pass threshold of an ordinal metric, METRIC=SCORE (score >= SCORE passes); repeatable."),
    ] = None,
    ci_prob: Annotated[float, typer.Option(help="Credible interval probability, in (0, 1).")] = CI_PROB,
    skip_bad: Annotated[
        bool, typer.Option("--skip-bad", help="Skip invalid lines (listed) instead of failing.")
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON record per metric instead of a table.")
    ] = False,
) -> None:
    """Judge agreement per metric: accuracy, Cohen's kappa, sensitivity and specificity (Beta posteriors), confusion.

    Items where the judge gave no verdict (verdict null) are counted apart and left out of every figure.
    """
    import warnings

    from agentstats.calibration import calibrate as run_calibration
    from agentstats.cli.common import say_skipped
    from agentstats.io.loaders import load
    from agentstats.records.problems import LoadWarning

    thresholds = _thresholds(threshold)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LoadWarning)  # said below, with the lines
            frame = load(input, format="calibration", on_error="skip" if skip_bad else "raise")
        report = run_calibration(frame, thresholds=thresholds, ci_prob=ci_prob)
    except (ValueError, OSError) as exc:
        raise fail(exc, EXIT_USAGE) from exc
    say_skipped(frame.attrs.get("skipped") or [], input)
    if as_json:
        out.print_json(json.dumps([m.as_record() for m in report.metrics.values()]))
        return
    pct = f"{100 * ci_prob:.10g}%"
    table = Table(title=f"judge calibration: {escape(str(input))}")
    for col in ("metric", "scale", "items", "missing", "accuracy", "kappa", f"sensitivity [{pct}]",
                f"specificity [{pct}]"):
        table.add_column(col, justify="left" if col in ("metric", "scale") else "right")

    def rate(d: dict[str, float] | None, n: int | None = None) -> str:
        if d is None:
            return "n/a"
        return f"{d['mean']:.3f} [{d['lower']:.3f}, {d['upper']:.3f}]" + (" (prior only)" if n == 0 else "")

    def num(x: float | None) -> str:
        return "n/a" if x is None or x != x else f"{x:.3f}"

    for m in report.metrics.values():
        kappa = num(m.kappa) + (f" (weighted {num(m.weighted_kappa)})" if m.weighted_kappa is not None else "")
        table.add_row(escape(m.metric), m.scale, str(m.n_items), str(m.n_missing), num(m.accuracy), kappa,
                      rate(m.sensitivity, _total(m.tp, m.fn)), rate(m.specificity, _total(m.tn, m.fp)))
    out.print(table)
    for m in report.metrics.values():
        for what, n, gold in (("sensitivity", _total(m.tp, m.fn), "pass"), ("specificity", _total(m.tn, m.fp), "fail")):
            if n == 0:
                console.print(f"[yellow]{escape(m.metric)}:[/] no item with gold {gold}, so its {what} is the prior "
                              f"alone; label items a human judged {gold} to measure it", highlight=False)
    for m in report.metrics.values():
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
    console.print("sensitivity = P(judge pass | gold pass), specificity = P(judge fail | gold fail); Beta(1, 1) "
                  "prior, equal-tailed credible intervals", highlight=False)


def _total(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a + b

"""``agentstats calibrate``: how well a judge agrees with human labels, per metric."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agentstats.cli.common import EXIT_USAGE, fail, say_skipped
from agentstats.cli.options import CI_DEFAULT, CiOptions, JsonOpt, SkipBadOpt, ci_options


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


def _scales(specs: list[str] | None) -> dict[str, tuple[int, int]]:
    """Parse ``--scale metric=1..5`` options."""
    result: dict[str, tuple[int, int]] = {}
    for spec in specs or []:
        name, sep, value = spec.partition("=")
        lo, dots, hi = value.partition("..")
        try:
            if not sep or not dots or not name.strip():
                raise ValueError
            result[name.strip()] = (int(lo), int(hi))
        except ValueError:
            raise fail(typer.BadParameter(f"--scale takes METRIC=LOWEST..HIGHEST, got {spec!r}"), EXIT_USAGE) from None
    return result


@ci_options(kinds=("eti",))  # agentstats.calibration.calibrate gives equal-tailed Beta intervals only
def calibrate(
    input: Annotated[
        Path, typer.Argument(help="Calibration set: JSONL of item_id, metric, verdict (judge), gold (human).")
    ],
    threshold: Annotated[
        list[str] | None,
        typer.Option(metavar="METRIC=SCORE", help="Pass threshold of an ordinal metric, METRIC=SCORE (score >= SCORE "
                     "passes); repeatable."),
    ] = None,
    scale: Annotated[
        list[str] | None,
        typer.Option(help="Declared scale of an ordinal metric, METRIC=LOWEST..HIGHEST (e.g. relevance=1..5): the "
                     "categories of its weighted kappa, used or not; repeatable."),
    ] = None,
    ci: CiOptions = CI_DEFAULT,
    skip_bad: SkipBadOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Judge agreement per metric: accuracy, Cohen's kappa, sensitivity and specificity (Beta posteriors), confusion.

    Items where the judge gave no verdict (verdict null) are counted apart and left out of every figure.
    """
    import warnings

    from agentstats.calibration import calibrate as run_calibration
    from agentstats.cli.render.calibrate import print_calibration
    from agentstats.io.loaders import load
    from agentstats.records.problems import LoadWarning

    thresholds = _thresholds(threshold)
    scales = _scales(scale)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LoadWarning)  # said below, with the lines
            frame = load(input, format="calibration", on_error="skip" if skip_bad else "raise")
        report = run_calibration(frame, thresholds=thresholds, ci_prob=ci.prob, scales=scales)
    except (ValueError, OSError) as exc:
        raise fail(exc, EXIT_USAGE) from exc
    say_skipped(frame.attrs.get("skipped") or [], input)
    print_calibration(report, input, as_json)

"""What a report reads and checks before any work: the input, the judge's calibration set, the k and the judge.

The command line calls these before the notebook starts (a bad input, a k beyond the trials or a judge that is down
fails in seconds, naming the file or the endpoint); :func:`agentstats.report.build.build_report` calls the same
functions, so the notebook opened in JupyterLab checks the same things.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from agentstats._util.markup import one_line
from agentstats.report.params import ReportParams

if TYPE_CHECKING:
    from agentstats.calibration.agreement import MetricCalibration
    from agentstats.io.loaders import Dataset
    from agentstats.scoring.judge.base import Judge

__all__ = [
    "ReportInputError",
    "check_judge",
    "check_k_values",
    "load_input",
    "read_calibration",
    "report_judge",
    "resolve_calibration",
    "scores_trials",
]


class ReportInputError(ValueError):
    """The report's input cannot be read; the message is one line naming the file (and line and field)."""


def load_input(params: ReportParams) -> Dataset:
    """Read the report's input (:func:`agentstats.load` with the report's format and loader options).

    Skipped records (``on_error="skip"``) are kept on the result, not warned about: the report lists them.

    Raises
    ------
    ReportInputError
        One line: the first problem with its file, line and field, and how many more there are.
    """
    from agentstats.io import LoadError, LoadWarning
    from agentstats.io.loaders import Dataset, load

    path = params.input_path
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LoadWarning)  # skipped records are listed in the report
            data = load(path, format=params.input_format, **params.loader_options)
    except LoadError as exc:
        if not exc.skippable:  # --skip-bad cannot help (nothing left after skipping, a changed file, a wrong format)
            listed = [f"  {one_line(p)}" for p in exc.problems[:20]]
            if len(exc.problems) > 20:
                listed.append(f"  ... and {len(exc.problems) - 20} more")
            raise ReportInputError("\n".join([f"{exc.head}:", *listed, *([exc.hint] if exc.hint else [])])) from exc
        n = len(exc.problems)
        more = f" (and {n - 1} more problem{'s' if n > 2 else ''})" if n > 1 else ""
        rest = [f"  {one_line(p)}" for p in exc.problems[1:20]]
        if n > 20:
            rest.append(f"  ... and {n - 20} more")
        raise ReportInputError(
            "\n".join([f"{one_line(exc.problems[0])}{more}; fix the input or add --skip-bad to skip bad records",
                        *rest])
        ) from exc
    except (ValueError, OSError, KeyError, TypeError) as exc:
        raise ReportInputError(f"{path}: {one_line(exc)}") from exc
    if not isinstance(data, Dataset):
        raise ReportInputError(f"{path}: format {params.input_format!r} holds no trials or counts to report on")
    return data


def resolve_calibration(params: ReportParams) -> ReportParams:
    """Check the judge's calibration set now and name it: its absolute path and the metric chosen.

    The command line calls this before the notebook starts, so a set that cannot correct anything exits at once,
    and the report records the file and metric it used (:func:`agentstats.calibration.choose_calibration`).

    Raises
    ------
    ReportInputError
        An unreadable set, several metrics and none chosen, an unknown metric, or a metric without passes or
        fails (no judge error to correct with).
    """
    if params.judge_calibration is None:
        return params
    path = Path(params.judge_calibration).resolve()
    chosen = read_calibration(params.model_copy(update={"judge_calibration": str(path)}))
    return params.model_copy(update={"judge_calibration": str(path), "judge_metric": chosen.metric})


def read_calibration(params: ReportParams) -> MetricCalibration:
    """Read the judge's calibration set and choose its metric (:func:`agentstats.calibration.choose_calibration`).

    Raises
    ------
    ReportInputError
        An unreadable set, or no metric that can correct anything.
    """
    from agentstats.calibration import choose_calibration

    assert params.judge_calibration is not None
    try:
        return choose_calibration(params.judge_calibration, params.judge_metric, ci_prob=params.ci_prob)
    except (ValueError, OSError) as exc:
        raise ReportInputError(str(exc)) from exc


def check_k_values(params: ReportParams, data: Dataset, source: str | None = None) -> None:
    """Refuse ``k_values`` beyond the input's trials: the report's tables need k <= n, as ``agentstats estimate``.

    The counts when the input has them; for trials not scored yet (the report scores them), the trials per cell
    that are not missing (``infra_error``): scoring can only lower that, never raise it
    (:func:`agentstats.intervals.check_k_reach`). ``source`` names the input in the message (default its path).

    Raises
    ------
    ReportInputError
        A k that no agent's trials reach, with the largest that is.
    """
    import pandas as pd

    from agentstats.intervals import check_k_reach

    if data.counts is not None:
        per_cell = data.counts
    else:
        cells: dict[tuple[str, str], int] = {}
        for t in data.trials or []:
            if t.outcome() != "missing":
                cells[(t.agent, t.task_id)] = cells.get((t.agent, t.task_id), 0) + 1
        per_cell = pd.DataFrame({"n": list(cells.values())}, dtype="int64")
    try:
        check_k_reach(params.k_values, per_cell, extrapolate=False, source=source or str(params.input_path))
    except ValueError as exc:
        raise ReportInputError(str(exc)) from None


def scores_trials(data: Dataset) -> bool:
    """Tell whether the report scores the trials: they need an outcome, or carry conversations with ground truth."""
    from agentstats.report.scoring_tables import scoring_available

    return data.trials is not None and (data.needs_scoring or scoring_available(data.trials))


def report_judge(params: ReportParams) -> Judge:
    """Make the report's judge (:func:`agentstats.scoring.resolve_judge` with its model and base URL).

    Raises
    ------
    ReportInputError
        An LLM judge that cannot be set up (no API key, a setting out of range).
    """
    from agentstats.scoring import resolve_judge
    from agentstats.scoring.judge.base import JudgeConfigError

    try:
        return resolve_judge(params.judge, model=params.judge_model, base_url=params.judge_base_url)
    except JudgeConfigError as exc:  # no API key, a setting out of range: nothing can be scored
        raise ReportInputError(f"--judge {params.judge}: {one_line(exc)}") from None


def check_judge(params: ReportParams, data: Dataset) -> None:
    """Before any work: the judge that will score the trials must be able to (an LLM judge's endpoint answers).

    The command line calls this before the notebook starts, and :func:`build_report` before it scores, so a judge
    that is down is found in seconds and named, not after every call's retries with every verdict missing.

    Raises
    ------
    agentstats.llm.probe.EndpointUnavailable
        The judge's endpoint cannot be reached, says it is unavailable, or refuses the key (the command line exits
        69, as the loop does).
    ReportInputError
        An LLM judge that cannot be set up (no API key).
    """
    if scores_trials(data):
        report_judge(params).check_available()

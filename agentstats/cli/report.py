"""``agentstats report``: the report notebook executed with papermill and exported to HTML.

Every option is a field of :class:`agentstats.report.params.ReportParams`, which owns its name, default, help and
validation: the common ones have their own flag, the others are given as ``-p NAME=VALUE`` (papermill's convention).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agentstats.cli.common import (
    EXIT_FAILURE,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    ReportKOpt,
    check_k,
    check_output_path,
    console,
    fail,
    parse_k,
    say_skipped,
    stem,
)
from agentstats.cli.options import InputOptions, input_options
from agentstats.report.params import ReportParameterError, ReportParams, parse_assignments, value_text

if TYPE_CHECKING:
    from agentstats.io.loaders import Dataset


def _opt(field: str, *decls: str) -> Any:
    """Make the typer option of a :class:`ReportParams` field: its flag and help text from the model."""
    flag = ReportParams.flag_of(field)
    assert flag is not None, field
    return typer.Option(*(decls or (flag,)), help=ReportParams.help(field))


def _assignments_help() -> str:
    """Write the ``-p`` help: every parameter without a flag of its own, with its default."""
    names = [n for n in ReportParams.model_fields if ReportParams.flag_of(n) is None and n != "input_path"]
    listed = ", ".join(f"{n}={value_text(ReportParams.default(n))}" for n in names)
    return (f"Another report parameter, NAME=VALUE; repeat for more (papermill's -p). Parameters and defaults: "
            f"{listed} (docs/report.md says what each does; none = the default rule).")


#: How an error message names each field: its flag, or ``-p NAME``.
_NAMES = {n: ReportParams.flag_of(n) or f"-p {n}" for n in ReportParams.model_fields}
_NAMES.update(run_bayes="--bayes", loader_options="--agent/--columns/--agents/--run/--skip-bad", input_path="INPUT")


@input_options
def report(
    input: Annotated[Path, typer.Argument(help="Trials or counts file.")],
    inputs: InputOptions,
    k: ReportKOpt = None,
    ci_prob: Annotated[float, _opt("ci_prob")] = ReportParams.default("ci_prob"),
    out_dir: Annotated[
        Path, typer.Option("--out-dir", help="Folder for NAME.ipynb and NAME.html (created when missing).")
    ] = Path("reports"),
    name: Annotated[
        str | None,
        typer.Option(help="Report file stem (default: the input file's stem; for a run store with --run, STORE-RUN)."),
    ] = None,
    bayes: Annotated[bool, _opt("run_bayes")] = ReportParams.default("run_bayes"),
    bayes_model: Annotated[str, _opt("bayes_model")] = ReportParams.default("bayes_model"),
    population: Annotated[str, _opt("population")] = ReportParams.default("population"),
    judge: Annotated[str, _opt("judge")] = ReportParams.default("judge"),
    judge_model: Annotated[str | None, _opt("judge_model")] = ReportParams.default("judge_model"),
    base_url: Annotated[str | None, _opt("judge_base_url")] = ReportParams.default("judge_base_url"),
    metrics: Annotated[str | None, _opt("metrics")] = ReportParams.default("metrics"),
    show_code: Annotated[bool, _opt("show_code")] = ReportParams.default("show_code"),
    param: Annotated[
        list[str] | None, typer.Option("--param", "-p", metavar="NAME=VALUE", help=_assignments_help())
    ] = None,
) -> None:
    """Execute the report notebook on INPUT (papermill) and export it to one self-contained HTML file.

    Unscored trials (answers and tool calls without success/reward) are scored first, with --judge. The input is
    read before the notebook starts (a bad file exits 2 at once). NAME.html and NAME.ipynb are replaced only by a
    run that completes; a failed or interrupted run keeps them and writes NAME.failed.ipynb.
    """
    from agentstats.report.build import ReportInputError, load_input

    if not input.exists():
        raise fail(FileNotFoundError(f"{input}: no such file"), EXIT_USAGE)
    check_output_path(out_dir, "--out-dir", folder=True)
    values: dict[str, Any] = {
        "input_path": str(input.resolve()), "input_format": inputs.format, "loader_options": inputs.loader_options(),
        "k_values": parse_k(k), "ci_prob": ci_prob, "run_bayes": bayes, "bayes_model": bayes_model,
        "population": population, "judge": judge, "judge_model": judge_model, "judge_base_url": base_url,
        "metrics": metrics, "show_code": show_code,
    }
    try:  # every value is checked here, before the notebook starts: an error names its flag (or -p NAME), exit 2
        values.update(parse_assignments(param or []))
        params = _with_calibration(ReportParams.validated(values, names=_NAMES))
        data = load_input(params)  # the input is read here: a bad file exits 2, --skip-bad lists what it skipped
    except (ReportParameterError, ReportInputError) as exc:
        raise fail(exc, EXIT_USAGE) from None
    say_skipped(data.skipped, input)
    check_k(params.k_values, _trials_per_cell(data), "report", str(input))  # k beyond the trials, as estimate
    _run(params, out_dir, name, inputs.run, input)


def _with_calibration(params: ReportParams) -> ReportParams:
    """Check the judge's calibration set now (a bad file exits 2 before the notebook); name its file and metric.

    Raises
    ------
    ReportInputError
        An unreadable set, or several metrics and none chosen.
    """
    if params.judge_calibration is None:
        return params
    from agentstats.report.build import choose_calibration

    path = Path(params.judge_calibration).resolve()
    chosen = choose_calibration(path, params.judge_metric, ci_prob=params.ci_prob)
    return params.model_copy(update={"judge_calibration": str(path), "judge_metric": chosen.metric})


def _run(params: ReportParams, out_dir: Path, name: str | None, run: str | None, input: Path) -> None:
    """Run the notebook and say where the report is; failures and interrupts exit with their statuses."""
    from agentstats.report.build import ReportInputError
    from agentstats.report.notebook import ReportError, ReportInterrupted, run_report, safe_report_name

    wanted = name if name is not None else _default_name(input, run)
    safe = safe_report_name(wanted)
    if name is not None and safe != name:
        console.print(f"report name {name!r} is not a plain file name; using {safe!r}", highlight=False)
    # Errors of the notebook machinery are reported below as one line: on Ctrl-C nbclient stops the kernel mid-cell,
    # and its "Kernel died" log line and asyncio's "Task exception was never retrieved" traceback would follow it.
    for noisy in ("asyncio", "papermill"):
        logging.getLogger(noisy).setLevel(logging.CRITICAL)
    try:
        paths = run_report(params, out_dir=out_dir, name=safe, kernel_name=params.kernel, show_code=params.show_code,
                           input_checked=True)
    except ReportInterrupted as exc:
        console.print(str(exc), highlight=False, markup=False, soft_wrap=True)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except KeyboardInterrupt:
        console.print("interrupted", highlight=False)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except (ReportInputError, ReportParameterError) as exc:  # bad input or parameters: nothing was run
        raise fail(exc, EXIT_USAGE) from None
    except ReportError as exc:
        raise fail(exc, EXIT_FAILURE) from None
    except Exception as exc:
        raise fail(exc, EXIT_FAILURE) from exc
    console.print(f"report: {paths.html}")
    console.print(f"notebook: {paths.notebook}")


def _trials_per_cell(data: Dataset) -> Any:
    """Trials per (agent, task) of what was read, as a table with column ``n`` (for :func:`check_k`).

    The counts when the input has them; for trials not scored yet (the notebook scores them), the trials per cell
    that are not missing (``infra_error``): scoring can only lower that, never raise it.
    """
    import pandas as pd

    if data.counts is not None:
        return data.counts
    per_cell: dict[tuple[str, str], int] = {}
    for t in data.trials or []:
        if t.outcome() != "missing":
            per_cell[(t.agent, t.task_id)] = per_cell.get((t.agent, t.task_id), 0) + 1
    return pd.DataFrame({"n": list(per_cell.values())}, dtype="int64")


def _default_name(input: Path, run: str | None) -> str:
    """Return the report's file stem without ``--name``: the input's stem, and with ``--run`` the run's too.

    ``store.duckdb --run prompt-v2`` gives ``store-prompt-v2`` (made a plain file name by ``safe_report_name``), so
    the reports of two runs of one store do not overwrite each other.
    """
    if run is None:
        return stem(input).removesuffix(".duckdb")
    return f"{stem(input).removesuffix('.duckdb')}-{run}"

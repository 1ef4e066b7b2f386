"""``agentstats report``: the report notebook executed with papermill and exported to HTML.

Every option is a field of :class:`agentstats.report.params.ReportParams`, which owns its name, default, help and
validation (choices included: a value outside them exits 2 naming the flag): the common ones have their own flag,
the others are given as ``-p NAME=VALUE`` (papermill's convention). ``--ci-kind`` is not offered: the report's
intervals are equal-tailed (:func:`agentstats.report.build.build_report` takes no ``ci_kind``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from agentstats._util.options import LOADER_FLAGS, option_style
from agentstats.cli.common import (
    EXIT_DIAGNOSTICS,
    EXIT_UNAVAILABLE,
    EXIT_USAGE,
    console,
    fail,
    notebook_errors,
    say_skipped,
)
from agentstats.cli.options import (
    InputOptions,
    ReportKOpt,
    ReportStrictOpt,
    check_output_path,
    input_options,
    out_dir_opt,
    parse_k,
)
from agentstats.report.params import (
    ReportParameterError,
    ReportParams,
    check_bayes_model,
    parse_assignments,
    value_text,
)


def _opt(field: str) -> Any:
    """Make the typer option of a :class:`ReportParams` field: its flag, help text and choices from the model.

    The choices are shown as ``<a|b>`` (typer's form for a choice) and checked by the model (a value outside them
    exits 2 naming the flag); the model is named ``MODEL``, as ``agentstats fit --bayes-model`` names it, its help
    listing the names.
    """
    flag = ReportParams.flag_of(field)
    assert flag is not None, field
    choices = ReportParams.choices(field)
    metavar = "MODEL" if field == "bayes_model" else f"<{'|'.join(choices)}>" if choices else None
    return typer.Option(flag, help=ReportParams.help(field), metavar=metavar)


def _assignments_help() -> str:
    """Write the ``-p`` help: every parameter without a flag of its own, with its default."""
    listed = ", ".join(f"{n}={value_text(ReportParams.default(n))}" for n in _OPEN)
    return (f"Another report parameter, NAME=VALUE; repeat for more (papermill's -p). Parameters and defaults: "
            f"{listed} (docs/report.md says what each does; none = the default rule).")


#: The parameters given as ``-p NAME=VALUE``.
_OPEN = [n for n in ReportParams.model_fields if ReportParams.flag_of(n) is None and n != "input_path"]
#: How an error message names each field: its flag, or ``-p NAME``.
_NAMES = {n: ReportParams.flag_of(n) or f"-p {n}" for n in ReportParams.model_fields}
_NAMES.update(run_bayes="--bayes", loader_options="/".join(dict.fromkeys(LOADER_FLAGS.values())), input_path="INPUT")
#: How a library message names a parameter given with -p (agentstats._util.options.option_name).
_SPELLINGS = {n: f"-p {n}=VALUE" for n in _OPEN}


@input_options(scale=False)  # report --help is at its 20 options
def report(
    input: Annotated[Path, typer.Argument(help="Trials or counts file.")],
    inputs: InputOptions,
    k: ReportKOpt = None,
    ci_prob: Annotated[float, _opt("ci_prob")] = ReportParams.default("ci_prob"),
    out_dir: Annotated[Path, out_dir_opt("Folder for NAME.ipynb and NAME.html (created when missing).")] \
        = Path("reports"),
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
    strict: ReportStrictOpt = False,
    param: Annotated[
        list[str] | None, typer.Option("--param", "-p", metavar="NAME=VALUE", help=_assignments_help())
    ] = None,
) -> None:
    """Execute the report notebook on INPUT (papermill) and export it to one self-contained HTML file.

    Unscored trials (answers and tool calls without success/reward) are scored first, with --judge. The input is
    read before the notebook starts (a bad file exits 2 at once). NAME.md holds the summary and key tables as
    Markdown (a pull-request comment). NAME.html and NAME.ipynb are replaced only by a run that completes, and never
    by a report of another input of the same name (that one is written as NAME-2); a failed or interrupted run
    keeps them and writes NAME.failed.ipynb. A Bayesian fit that
    fails its checks is said here and opens the report's summary; with --strict the command then exits 3.
    """
    from agentstats.llm.probe import EndpointUnavailable
    from agentstats.report.inputs import (
        ReportInputError,
        check_judge,
        check_k_values,
        load_input,
        resolve_calibration,
    )
    from agentstats.report.notebook import claim_report_name, default_report_name, run_report, safe_report_name

    if not input.exists():
        raise fail(FileNotFoundError(f"{input}: no such file"), EXIT_USAGE)
    check_output_path(out_dir, "--out-dir", folder=True)
    values: dict[str, Any] = {
        "input_path": str(input.resolve()), "input_format": inputs.format, "loader_options": inputs.loader_options(),
        "k_values": parse_k(k), "ci_prob": ci_prob, "run_bayes": bayes, "bayes_model": bayes_model,
        "population": population, "judge": judge, "judge_model": judge_model, "judge_base_url": base_url,
        "metrics": metrics,
    }
    try:  # every value is checked here, before the notebook starts: an error names its flag (or -p NAME), exit 2
        values.update(parse_assignments(param or []))
        with option_style("cli", _SPELLINGS):
            params = resolve_calibration(ReportParams.validated(values, names=_NAMES))
            check_bayes_model(params)  # a model the Bayesian section cannot report, before the input is read
        data = load_input(params)  # the input is read here: a bad file exits 2, --skip-bad lists what it skipped
        say_skipped(data.skipped, input)
        check_k_values(params, data, source=str(input))  # k beyond the trials, as estimate
        check_judge(params, data)  # an LLM judge that is down: named now, not after a minute of retries
    except (ReportParameterError, ReportInputError) as exc:
        raise fail(exc, EXIT_USAGE) from None
    except EndpointUnavailable as exc:  # as the loop: 69 (EX_UNAVAILABLE), nothing was run
        raise fail(exc, EXIT_UNAVAILABLE) from None
    stem = safe_report_name(name) if name is not None else default_report_name(input, inputs.run)
    if name is not None and stem != name:
        console.print(f"report name {name!r} is not a plain file name; using {stem!r}", highlight=False)
    if name is None:  # two inputs of one name (a/runs.jsonl, b/runs.jsonl) never overwrite each other's report
        stem, moved = claim_report_name(out_dir, stem, input)
        if moved:
            console.print(moved, highlight=False, soft_wrap=True)
    with notebook_errors():
        paths = run_report(params, out_dir=out_dir, name=stem, kernel_name=params.kernel, show_code=params.show_code,
                           input_checked=True)
    console.print(f"report: {paths.html}")
    console.print(f"notebook: {paths.notebook}")
    if paths.markdown is not None:
        console.print(f"markdown (summary and key tables, for a pull-request comment): {paths.markdown}")
    checks = paths.checks
    if checks is not None and not checks.get("ok", True):
        from rich.text import Text

        said = f" {checks['message']}; the report's summary makes no claim from that posterior (its Bayesian section)"
        console.print(Text.assemble(("warning:", "bold yellow"), said), highlight=False, soft_wrap=True)
        if strict:
            raise typer.Exit(EXIT_DIAGNOSTICS)

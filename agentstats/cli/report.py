"""``agentstats report``: the report notebook executed with papermill and exported to HTML."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated, Any

import typer

from agentstats.cli.common import (
    EXIT_FAILURE,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    AgentColOpt,
    AgentOpt,
    AgentsOpt,
    BaseUrlOpt,
    FormatOpt,
    JudgeModelOpt,
    JudgeOpt,
    OldJudgeModelOpt,
    ReportKOpt,
    RequireToolsOpt,
    RunOpt,
    SkipBadOpt,
    SuccessColOpt,
    TaskColOpt,
    ThresholdOpt,
    ToolThresholdOpt,
    check_k,
    check_output_path,
    console,
    deprecated_alias,
    fail,
    loader_opts,
    parse_k,
    say_skipped,
    stem,
)


def report(
    input: Annotated[Path, typer.Argument(help="Trials or counts file.")],
    format: FormatOpt = "auto",
    k: ReportKOpt = None,
    out_dir: Annotated[Path, typer.Option("--out", help="Output folder for .ipynb and .html.")] = Path(
        "reports"
    ),
    name: Annotated[
        str | None,
        typer.Option(help="Report file stem (default: the input file's stem; for a run store with --run, STORE-RUN)."),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed for bootstrap and sampling.")] = 0,
    bayes: Annotated[bool, typer.Option(help="Include the hierarchical Bayesian section.")] = True,
    draws: Annotated[
        int | None,
        typer.Option(
            min=1, help="Posterior draws per chain (default 2000; 1000 when every agent has 250+ cells of 4+ trials)."
        ),
    ] = None,
    bayes_model: Annotated[
        str,
        typer.Option(help="Statistical model of the Bayesian section (as `agentstats fit --bayes-model`)."),
    ] = "zoi_beta_binomial",
    population: Annotated[
        str, typer.Option(help="Bayesian pass^k for these tasks (observed) or for new tasks (new).")
    ] = "observed",
    target_accept: Annotated[
        float | None, typer.Option(help="NUTS target acceptance rate of the Bayesian fit (default per model).")
    ] = None,
    sampler: Annotated[
        str | None, typer.Option(help="NUTS implementation: nutpie, numpyro or pymc (default: fastest installed).")
    ] = None,
    kernel: Annotated[str, typer.Option(help="Jupyter kernel name.")] = "python3",
    show_code: Annotated[
        bool, typer.Option("--show-code", help="Keep the code in the HTML (default: results and narrative only).")
    ] = False,
    agent: AgentOpt = None,
    agent_col: AgentColOpt = None,
    task_col: TaskColOpt = None,
    success_col: SuccessColOpt = None,
    judge: JudgeOpt = "deterministic",
    base_url: BaseUrlOpt = None,
    judge_model: JudgeModelOpt = None,
    old_model: OldJudgeModelOpt = None,
    threshold: ThresholdOpt = 0.7,
    tool_threshold: ToolThresholdOpt = 1.0,
    require_tools: RequireToolsOpt = False,
    skip_bad: SkipBadOpt = False,
    agents: AgentsOpt = None,
    run: RunOpt = None,
    judge_calibration: Annotated[
        Path | None,
        typer.Option(help="Calibration set of the judge behind the outcomes: adds pass^k corrected for its errors."),
    ] = None,
    judge_metric: Annotated[str | None, typer.Option(help="Metric of the calibration set to use.")] = None,
    metrics: Annotated[
        str | None,
        typer.Option(
            "--metrics",
            help="Add a metric section: these metrics (comma-separated names or groups: answer_quality, "
            "retrieval_quality, content_safety, readability, usage; see docs/metrics.md; NAME:METHOD picks a "
            "metric's method) computed on the trials, per agent and risk level.",
        ),
    ] = None,
) -> None:
    """Execute the report notebook on INPUT (papermill) and export it to one self-contained HTML file.

    Unscored trials (answers and tool calls without success/reward) are scored first, with --judge. The input is
    read before the notebook starts (a bad file exits 2 at once). NAME.html and NAME.ipynb are replaced only by a
    run that completes; a failed or interrupted run keeps them and writes NAME.failed.ipynb.
    """
    from agentstats.report.notebook import (
        ReportError,
        ReportInputError,
        ReportInterrupted,
        ReportParameterError,
        check_input,
        run_report,
        safe_report_name,
    )

    model = deprecated_alias(judge_model, None, old_model, "--model", "--judge-model", "report")
    if not input.exists():
        raise fail(FileNotFoundError(f"{input}: no such file"), EXIT_USAGE)
    check_output_path(out_dir, "--out", folder=True)
    params: dict[str, Any] = {
        "input_path": str(input.resolve()),
        "input_format": format,
        "k_values": parse_k(k),
        "seed": seed,
        "run_bayes": bayes,
        "draws": draws,
        "bayes_model": bayes_model,
        "population": population,
        "target_accept": target_accept,
        "sampler": sampler,
        "loader_options": loader_opts(agent, agent_col, task_col, success_col, skip_bad, agents, run),
        "judge": judge,
        "judge_model": model,
        "judge_base_url": base_url,
        "threshold": threshold,
        "tool_threshold": tool_threshold,
        "require_tools": require_tools,
    }
    if judge_calibration is not None:  # checked here, so that a bad file exits 2 before the notebook starts
        from agentstats.cli.fit import _judge_calibration

        calibration = _judge_calibration(judge_calibration, judge_metric)
        params["judge_calibration"] = str(judge_calibration.resolve())
        params["judge_metric"] = calibration.metric
    elif judge_metric is not None:
        raise fail(typer.BadParameter("--judge-metric needs --judge-calibration"), EXIT_USAGE)
    if metrics is not None:  # unknown names exit 2 here, before the notebook starts
        from agentstats.cli.score import _resolve_metric_options

        _resolve_metric_options(metrics, None)
        params["metrics"] = metrics
    if judge not in ("deterministic", "openai"):
        raise fail(typer.BadParameter(f"--judge must be 'deterministic' or 'openai', got {judge!r}"), EXIT_USAGE)
    if population not in ("observed", "new"):
        raise fail(typer.BadParameter(f"--population must be 'observed' or 'new', got {population!r}"), EXIT_USAGE)
    from agentstats.models.families.registry import MODEL_NAMES

    if bayes_model not in MODEL_NAMES:
        raise fail(typer.BadParameter(f"--bayes-model must be one of {MODEL_NAMES}, got {bayes_model!r}"), EXIT_USAGE)
    # the input is read here, before the notebook starts: a bad file exits 2, --skip-bad lists what it skipped, and k
    # beyond the trials per task is refused as `estimate` refuses it
    try:
        data = check_input(params)
    except ReportInputError as exc:
        raise fail(exc, EXIT_USAGE) from None
    if data is not None:
        say_skipped(data.skipped, input)
        check_k(params["k_values"], _trials_per_cell(data), "report", str(input))
    wanted = name if name is not None else _default_name(input, run)
    safe = safe_report_name(wanted)
    if name is not None and safe != name:
        console.print(f"report name {name!r} is not a plain file name; using {safe!r}", highlight=False)
    # Errors of the notebook machinery are reported below as one line: on Ctrl-C nbclient stops the kernel mid-cell,
    # and its "Kernel died" log line and asyncio's "Task exception was never retrieved" traceback would follow it.
    for noisy in ("asyncio", "papermill"):
        logging.getLogger(noisy).setLevel(logging.CRITICAL)
    try:
        paths = run_report(params, out_dir=out_dir, name=safe, kernel_name=kernel, show_code=show_code,
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


def _trials_per_cell(data: Any) -> Any:
    """Trials per (agent, task) of what ``check_input`` read, as a table with column ``n`` (for :func:`check_k`).

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

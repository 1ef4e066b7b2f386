"""``agentstats report``: the report notebook executed with papermill and exported to HTML."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from agentstats.cli.common import (
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
    SkipBadOpt,
    SuccessColOpt,
    TaskColOpt,
    ThresholdOpt,
    ToolThresholdOpt,
    console,
    deprecated_alias,
    fail,
    loader_opts,
    parse_k,
    stem,
)


def report(
    input: Annotated[Path, typer.Argument(help="Trials or counts file.")],
    format: FormatOpt = "auto",
    k: ReportKOpt = None,
    out_dir: Annotated[Path, typer.Option("--out", help="Output folder for .ipynb and .html.")] = Path(
        "reports"
    ),
    name: Annotated[str | None, typer.Option(help="Report file stem (default: input file stem).")] = None,
    seed: Annotated[int, typer.Option(help="Seed for bootstrap and sampling.")] = 0,
    bayes: Annotated[bool, typer.Option(help="Include the hierarchical Bayesian section.")] = True,
    draws: Annotated[int, typer.Option(help="Posterior draws per chain (Bayesian section).")] = 1000,
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
    kernel: Annotated[str, typer.Option(help="Jupyter kernel name.")] = "python3",
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
) -> None:
    """Execute the report notebook on INPUT (papermill) and export it to HTML (nbconvert).

    Unscored trials (answers and tool calls without success/reward) are scored first, with --judge.
    """
    from agentstats.report import run_report

    model = deprecated_alias(judge_model, None, old_model, "--model", "--judge-model", "report")
    if not input.exists():
        raise fail(FileNotFoundError(f"{input}: no such file"), 2)
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
        "loader_options": loader_opts(agent, agent_col, task_col, success_col, skip_bad, agents),
        "judge": judge,
        "judge_model": model,
        "judge_base_url": base_url,
        "threshold": threshold,
        "tool_threshold": tool_threshold,
        "require_tools": require_tools,
    }
    if judge not in ("deterministic", "openai"):
        raise fail(typer.BadParameter(f"--judge must be 'deterministic' or 'openai', got {judge!r}"), 2)
    if population not in ("observed", "new"):
        raise fail(typer.BadParameter(f"--population must be 'observed' or 'new', got {population!r}"), 2)
    from agentstats.models.registry import MODEL_NAMES

    if bayes_model not in MODEL_NAMES:
        raise fail(typer.BadParameter(f"--bayes-model must be one of {MODEL_NAMES}, got {bayes_model!r}"), 2)
    try:
        paths = run_report(params, out_dir=out_dir, name=name or stem(input), kernel_name=kernel)
    except Exception as exc:  # papermill wraps cell errors; show the cell's message
        raise fail(exc, 1) from exc
    console.print(f"report: {paths.html}")
    console.print(f"notebook: {paths.notebook}")

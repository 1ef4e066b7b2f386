"""``agentstats fit``: the hierarchical model's posterior pass@k / pass^k, per-agent consistency and diagnostics."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from agentstats.cli.common import (
    AgentColOpt,
    AgentOpt,
    AgentsOpt,
    CiKindOpt,
    CiProbOpt,
    FitKOpt,
    FormatOpt,
    RunOpt,
    SkipBadOpt,
    SuccessColOpt,
    TaskColOpt,
    check_interval_options,
    command_ks,
    console,
    deprecated_alias,
    fail,
    load_counts,
    loader_opts,
    parse_k,
)
from agentstats.intervals import CI_PROB, CiKind
from agentstats.models.families.registry import DEFAULT_DISPERSION, DEFAULT_MODEL, DISPERSIONS, MODEL_NAMES


def _judge_calibration(path: Path | None, metric: str | None) -> Any:
    """Return the chosen metric's calibration (``--judge-calibration``, ``--judge-metric``); None without a file."""
    if path is None:
        if metric is not None:
            raise fail(typer.BadParameter("--judge-metric needs --judge-calibration"), 2)
        return None
    from agentstats.calibration import calibrate
    from agentstats.io.loaders import load

    try:
        report = calibrate(load(path, format="calibration"))
        if metric is None:
            if len(report.metrics) != 1:
                raise ValueError(f"{path} calibrates {sorted(report.metrics)}: choose one with --judge-metric")
            metric = next(iter(report.metrics))
        chosen = report[metric]
        _ = chosen.judge_error  # an ordinal metric without threshold, a set without passes or fails: say it now
    except (ValueError, KeyError, OSError) as exc:
        raise fail(ValueError(str(exc).strip('"')), 2) from exc
    return chosen


def fit(
    input: Annotated[Path, typer.Argument(help="Trials or counts file.")],
    format: FormatOpt = "auto",
    k: FitKOpt = None,
    population: Annotated[
        str, typer.Option(help="observed: these tasks; new: new tasks from the same task population.")
    ] = "observed",
    bayes_model: Annotated[
        str,
        typer.Option(
            "--bayes-model",
            help=f"Statistical model: {', '.join(MODEL_NAMES)} (default {DEFAULT_MODEL}: a Beta per agent x task "
            "cell with a share of always/never-succeeding cells; docs/models.md).",
        ),
    ] = DEFAULT_MODEL,
    old_model: Annotated[str | None, typer.Option("--model", hidden=True, help="Deprecated: --bayes-model.")] = None,
    dispersion: Annotated[
        str,
        typer.Option(help="Within-cell dispersion: agent (each agent its own consistency, pooled) or shared."),
    ] = DEFAULT_DISPERSION,
    sampler: Annotated[str | None, typer.Option(help="nutpie, numpyro or pymc (default: fastest installed).")] = None,
    draws: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Draws per chain (default at most 2000; 1500 when every agent has 250+ cells of 4+ trials; "
            "from 5000 cells on the fit stops at the first of 500, 750, ... draws where it has converged).",
        ),
    ] = None,
    tune: Annotated[
        int | None,
        typer.Option(min=1, help="Tuning steps per chain (default 1000; 300 with nutpie for those many-cell agents)."),
    ] = None,
    chains: Annotated[int, typer.Option(min=1, help="Chains.")] = 4,
    seed: Annotated[int, typer.Option(help="Random seed.")] = 0,
    target_accept: Annotated[
        float | None,
        typer.Option(
            help="NUTS target acceptance rate (default per model, see docs/models.md); raise it, e.g. to 0.99, when "
            "the diagnostics report divergences."
        ),
    ] = None,
    rerun: Annotated[
        int | None,
        typer.Option(
            min=0,
            help="Also print the posterior predictive interval of the unbiased pass@k / pass^k you would compute "
            "after running N more trials per task (what a re-run of the benchmark should land in).",
        ),
    ] = None,
    ci_prob: CiProbOpt = CI_PROB,
    ci_kind: CiKindOpt = "eti",
    strict: Annotated[
        bool, typer.Option("--strict", help="Exit with status 3 when diagnostics fail (R-hat, ESS, divergences).")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
    judge_calibration: Annotated[
        Path | None,
        typer.Option(
            help="Calibration set of the judge behind the outcomes (JSONL: item_id, metric, verdict, gold; "
            "`agentstats calibrate`): the outcomes are then modelled as the judge's noisy verdicts and pass@k / "
            "pass^k are of the true outcome (docs/judge.md).",
        ),
    ] = None,
    judge_metric: Annotated[
        str | None,
        typer.Option(help="Metric of the calibration set to use (needed when it holds several)."),
    ] = None,
    agent: AgentOpt = None,
    agent_col: AgentColOpt = None,
    task_col: TaskColOpt = None,
    success_col: SuccessColOpt = None,
    skip_bad: SkipBadOpt = False,
    agents: AgentsOpt = None,
    run: RunOpt = None,
) -> None:
    """Fit the hierarchical model; print posterior pass@k / pass^k and consistency per agent, and the diagnostics."""
    import warnings

    from agentstats.cli import render
    from agentstats.models import ConvergenceWarning
    from agentstats.models import fit as fit_model
    from agentstats.posterior import consistency, posterior_pass_k, predict_rerun, summarize_pass_k

    bayes_model = deprecated_alias(bayes_model, DEFAULT_MODEL, old_model, "--model", "--bayes-model", "fit")
    if population not in ("observed", "new"):
        raise fail(typer.BadParameter("--population must be 'observed' or 'new'"), 2)
    if bayes_model not in MODEL_NAMES:
        raise fail(typer.BadParameter(f"--bayes-model must be one of {', '.join(MODEL_NAMES)}, got {bayes_model!r}"), 2)
    if dispersion not in DISPERSIONS:
        raise fail(typer.BadParameter(f"--dispersion must be one of {', '.join(DISPERSIONS)}, got {dispersion!r}"), 2)
    check_interval_options(ci_prob=ci_prob, ci_kind=ci_kind)
    kind: CiKind = "hdi" if ci_kind == "hdi" else "eti"
    ks = parse_k(k)
    calibration = _judge_calibration(judge_calibration, judge_metric)
    counts = load_counts(input, format, loader_opts(agent, agent_col, task_col, success_col, skip_bad, agents, run))
    ks = command_ks(ks, counts, "fit", str(input))
    with console.status(f"fitting {bayes_model} ({chains} chains; the first run compiles) ..."):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)  # reported below instead
                result = fit_model(
                    counts, bayes_model, dispersion=dispersion, sampler=sampler, draws=draws, tune=tune,
                    chains=chains, random_seed=seed, target_accept=target_accept,
                    **({"judge_calibration": calibration} if calibration else {}),
                )
        except (ValueError, ImportError) as exc:
            raise fail(exc, 2) from exc
    pop: Literal["observed", "new"] = "new" if population == "new" else "observed"
    summary = render.with_tasks(
        summarize_pass_k(posterior_pass_k(result, ks, population=pop), ci_prob=ci_prob, ci_kind=kind), counts
    )
    cons = consistency(fit=result, ci_prob=ci_prob, ci_kind=kind) if result.family.has_icc else None
    predicted = None
    if rerun is not None:  # n_tasks: tasks with n + N >= k, per (agent, k)
        draws_rerun = predict_rerun(result, rerun, ks)
        predicted = (rerun, render.with_tasks(summarize_pass_k(draws_rerun, ci_prob=ci_prob, ci_kind=kind), counts))
    if as_json:
        render.print_json(render.fit_payload(result, summary, cons, predicted, calibration))
    else:
        render.print_fit(result, input.name, population, summary, cons, predicted, calibration)
    diag = result.diagnostics()
    if not diag.ok:
        console.print("[bold yellow]warning:[/] diagnostics failed: " + "; ".join(diag.problems))
        if strict:
            raise typer.Exit(3)

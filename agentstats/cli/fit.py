"""``agentstats fit``: the hierarchical model's posterior pass@k / pass^k, per-agent consistency and diagnostics."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from agentstats._util.progress import step
from agentstats.cli.common import EXIT_DIAGNOSTICS, EXIT_USAGE, console, fail, load_counts
from agentstats.cli.options import (
    CI_DEFAULT,
    BayesModelOpt,
    CiOptions,
    DispersionOpt,
    FitKOpt,
    InputOptions,
    JsonOpt,
    MethodOpt,
    PopulationOpt,
    SamplerOpt,
    StrictOpt,
    ci_options,
    command_ks,
    input_options,
    parse_k,
)
from agentstats.intervals import DEFAULT_SEED
from agentstats.models.families.registry import DEFAULT_DISPERSION, DEFAULT_MODEL, check_population

_DRAWS_HELP = ("Draws per chain (default at most 2000; 1500 when every agent has 250+ cells of 4+ trials; from 5000 "
               "cells on the fit stops at the first of 500, 750, ... draws where it has converged).")


@input_options
@ci_options()
def fit(
    input: Annotated[Path, typer.Argument(help="Trials or counts file.")],
    inputs: InputOptions,
    k: FitKOpt = None,
    population: PopulationOpt = "observed",
    bayes_model: BayesModelOpt = DEFAULT_MODEL,
    dispersion: DispersionOpt = DEFAULT_DISPERSION,
    sampler: SamplerOpt = None,
    method: MethodOpt = None,
    draws: Annotated[int | None, typer.Option(min=1, help=_DRAWS_HELP)] = None,
    tune: Annotated[int | None, typer.Option(min=1, help="Tuning steps per chain (default 1000; 300 with nutpie for "
                                             "those many-cell agents).")] = None,
    chains: Annotated[int, typer.Option(min=1, help="Chains.")] = 4,
    seed: Annotated[int, typer.Option(min=0, help="Seed of the sampler and the posterior draws.")] = DEFAULT_SEED,
    target_accept: Annotated[float | None, typer.Option(help="NUTS target acceptance rate (default per model, "
                                                        "docs/models.md); raise it, e.g. to 0.99, on divergences.")]
    = None,
    rerun: Annotated[int | None, typer.Option(min=0, help="Also predict the unbiased pass@k / pass^k after N more "
                                              "trials per task (posterior predictive intervals).")] = None,
    ci: CiOptions = CI_DEFAULT,
    strict: StrictOpt = False,
    as_json: JsonOpt = False,
    judge_calibration: Annotated[Path | None, typer.Option(help="Calibration set of the judge behind the outcomes "
                                                           "(`agentstats calibrate`): pass@k / pass^k of the true "
                                                           "outcome (docs/judge.md).")] = None,
    judge_metric: Annotated[str | None, typer.Option(help="Metric of the calibration set (needed when it holds "
                                                     "several).")] = None,
) -> None:
    """Fit the hierarchical model; print posterior pass@k / pass^k and consistency per agent, and the diagnostics."""
    import warnings

    from agentstats.calibration import choose_calibration
    from agentstats.cli.render import fit as render
    from agentstats.cli.render.text import print_json
    from agentstats.models import ConvergenceWarning
    from agentstats.models import fit as fit_model
    from agentstats.posterior import consistency, posterior_pass_k, predict_rerun, summarize_pass_k

    ks = parse_k(k)
    try:  # before the input is read: a model without a task population cannot answer --population new
        check_population(bayes_model, population, model_option="bayes_model")
    except ValueError as exc:
        raise fail(exc, EXIT_USAGE) from exc
    if judge_metric is not None and judge_calibration is None:
        raise fail(typer.BadParameter("--judge-metric needs --judge-calibration"), EXIT_USAGE)
    try:
        calibration = None if judge_calibration is None else choose_calibration(
            judge_calibration, judge_metric, ci_prob=ci.prob)
    except (ValueError, OSError) as exc:
        raise fail(exc, EXIT_USAGE) from exc
    counts = load_counts(input, inputs.format, inputs.loader_options())
    ks = command_ks(ks, counts, "fit", str(input))
    how = "" if method == "laplace" else f" ({chains} chains; the first run compiles)"
    with step(f"fitting {bayes_model}{how}"):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)  # reported below instead
                result = fit_model(
                    counts, bayes_model, dispersion=dispersion, sampler=sampler, draws=draws, tune=tune,
                    chains=chains, random_seed=seed, target_accept=target_accept, judge_calibration=calibration,
                    method=method,
                )
        except (ValueError, ImportError) as exc:
            raise fail(exc, EXIT_USAGE) from exc

    def summary(draws_k: Any) -> Any:
        return render.with_tasks(summarize_pass_k(draws_k, ci_prob=ci.prob, ci_kind=ci.kind), counts)

    with step("posterior pass@k / pass^k, consistency and diagnostics"):
        table = summary(posterior_pass_k(result, ks, population=population))
        cons = consistency(fit=result, ci_prob=ci.prob, ci_kind=ci.kind) if result.family.has_icc else None
        result.diagnostics()  # computed once, kept by the fit
    if rerun is not None:
        with step(f"predicting pass@k / pass^k after {rerun} more trials per task"):
            predicted = (rerun, summary(predict_rerun(result, rerun, ks)))
    else:
        predicted = None
    if as_json:
        print_json(render.fit_payload(result, table, cons, predicted, calibration))
    else:
        render.print_fit(result, input.name, population, table, cons, predicted, calibration)
    diag = result.diagnostics()
    if not diag.ok:
        console.print("[bold yellow]warning:[/] diagnostics failed: " + "; ".join(diag.problems))
        if strict:
            raise typer.Exit(EXIT_DIAGNOSTICS)

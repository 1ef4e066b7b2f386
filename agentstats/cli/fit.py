"""``agentstats fit``: the hierarchical model's posterior pass@k / pass^k with diagnostics."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from agentstats.cli.common import (
    AgentColOpt,
    AgentOpt,
    FormatOpt,
    KOpt,
    SkipBadOpt,
    SuccessColOpt,
    TaskColOpt,
    clean,
    console,
    fail,
    load_counts,
    loader_opts,
    out,
    parse_k,
)


def fit(
    input: Annotated[Path, typer.Argument(help="Trials or counts file.")],
    format: FormatOpt = "auto",
    k: KOpt = None,
    population: Annotated[
        str, typer.Option(help="observed: these tasks; new: new tasks from the same distribution.")
    ] = "observed",
    model: Annotated[
        str,
        typer.Option(
            help="zoi_beta_binomial (default; per-cell term as a Beta-Binomial likelihood with a share of "
            "always/never-succeeding cells), beta_binomial (without that share), partial_pooling (logit-normal "
            "per-cell term), additive (no per-cell term) or no_pooling."
        ),
    ] = "zoi_beta_binomial",
    sampler: Annotated[str | None, typer.Option(help="nutpie, numpyro or pymc (default: fastest installed).")] = None,
    draws: Annotated[int, typer.Option(help="Draws per chain.")] = 1000,
    tune: Annotated[int, typer.Option(help="Tuning steps per chain.")] = 1000,
    chains: Annotated[int, typer.Option(help="Chains.")] = 4,
    seed: Annotated[int, typer.Option(help="Random seed.")] = 0,
    target_accept: Annotated[
        float | None,
        typer.Option(help="NUTS target acceptance rate (default per model, see docs/models.md); raise it, e.g. to "
                     "0.99, when the diagnostics report divergences."),
    ] = None,
    ci_prob: Annotated[float, typer.Option(help="Credible interval probability.")] = 0.95,
    hdi: Annotated[bool, typer.Option("--hdi", help="Highest-density instead of equal-tailed intervals.")] = False,
    strict: Annotated[
        bool, typer.Option("--strict", help="Exit with status 3 when diagnostics fail (R-hat, ESS, divergences).")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
    agent: AgentOpt = None,
    agent_col: AgentColOpt = None,
    task_col: TaskColOpt = None,
    success_col: SuccessColOpt = None,
    skip_bad: SkipBadOpt = False,
) -> None:
    """Fit the hierarchical model and print posterior pass@k / pass^k per agent, with diagnostics."""
    import warnings

    from agentstats.models import ConvergenceWarning, diagnose
    from agentstats.models import fit as fit_model
    from agentstats.posterior import posterior_pass_at_k, posterior_pass_hat_k, summarize_pass_k

    if population not in ("observed", "new"):
        raise fail(typer.BadParameter("--population must be 'observed' or 'new'"), 2)
    counts = load_counts(input, format, loader_opts(agent, agent_col, task_col, success_col, skip_bad))
    ks = parse_k(k) or list(range(1, 9))
    with console.status(f"fitting {model} ({chains} chains x {draws} draws; first run compiles) ..."):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)  # reported below instead
                dt = fit_model(
                    counts, model=model, sampler=sampler, draws=draws, tune=tune, chains=chains, random_seed=seed,
                    target_accept=target_accept,
                )
        except (ValueError, ImportError) as exc:
            raise fail(exc, 2) from exc
    diag = diagnose(dt)
    summary = summarize_pass_k(
        [posterior_pass_at_k(dt, ks, population=population), posterior_pass_hat_k(dt, ks, population=population)],
        ci_prob=ci_prob,
        ci_kind="hdi" if hdi else "eti",
    )
    if as_json:
        records = [
            {
                "agent": r["agent"],
                "k": int(r["k"]),
                "quantity": r["quantity"],
                "population": r["population"],
                "mean": clean(r["mean"]),
                "median": clean(r["median"]),
                "ci_low": clean(r["ci_low"]),
                "ci_high": clean(r["ci_high"]),
                "ci_kind": r["ci_kind"],
                "extrapolated": bool(r["extrapolated"]),
            }
            for _, r in summary.iterrows()
        ]
        diag_json = {
            "ok": bool(diag.ok),
            "divergences": int(diag.divergences),
            "problems": list(diag.problems),
            "variables": [{c: clean(v) for c, v in row.items()} for _, row in diag.table.iterrows()],
            "sampler": dt.attrs.get("sampler"),
            "model": dt.attrs.get("agentstats_model"),
            "target_accept": dt.attrs.get("target_accept"),
            "chains": dt.attrs.get("chains"),
            "draws": dt.attrs.get("draws"),
            "random_seed": dt.attrs.get("random_seed"),
        }
        out.print_json(json.dumps({"summary": records, "diagnostics": diag_json}))
    else:
        kind = "HDI" if hdi else "equal-tailed"
        title = f"{input.name}: posterior ({model}, {population} tasks), {ci_prob:.0%} {kind} credible intervals"
        t = Table(title=title)
        for c in ["agent", "k", "pass@k (interval)", "pass^k (interval)", "note"]:
            t.add_column(c, justify="left" if c in ("agent", "note") else "right")
        wide = summary.pivot_table(
            index=["agent", "k"], columns="quantity", values=["mean", "ci_low", "ci_high"], aggfunc="first"
        )
        extra = summary.groupby(["agent", "k"])["extrapolated"].any()
        for (a, kk), r in wide.iterrows():
            cells = [
                f"{r[('mean', q)]:.3f} [{r[('ci_low', q)]:.3f}, {r[('ci_high', q)]:.3f}]"
                for q in ("pass_at_k", "pass_hat_k")
            ]
            t.add_row(str(a), str(kk), *cells, "extrapolated" if extra[(a, kk)] else "")
        out.print(t)
        out.print(
            f"sampler {dt.attrs.get('sampler')}, {dt.attrs.get('chains')} chains x {dt.attrs.get('draws')} draws, "
            f"target_accept {dt.attrs.get('target_accept')}, divergences {diag.divergences}"
        )
        out.print(str(diag))
    if not diag.ok:
        console.print("[bold yellow]warning:[/] diagnostics failed: " + "; ".join(diag.problems))
        if strict:
            raise typer.Exit(3)

"""``agentstats compare``: runs compared with the first one on their shared tasks (paired contrasts, every metric)."""

from __future__ import annotations

import logging
import warnings
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from agentstats.cli.common import (
    EXIT_DIAGNOSTICS,
    EXIT_FAILURE,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    AgentOpt,
    AgentsOpt,
    EstimateKOpt,
    FormatOpt,
    SkipBadOpt,
    console,
    fail,
    out,
    parse_k,
)


def _split(text: str | None, n: int, flag: str) -> list[str] | None:
    if text is None:
        return None
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != n or not all(parts):
        raise fail(typer.BadParameter(f"{flag}: give {n} comma-separated values, one per run, got {text!r}"),
                   EXIT_USAGE)
    return parts


def _split_runs(text: str | None, n: int) -> list[str] | None:
    """``--store-runs``: one entry per run, empty where the run is not read from a store."""
    if text is None:
        return None
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != n or not any(parts):
        raise fail(typer.BadParameter(f"--store-runs: give {n} comma-separated run names, one per run (empty for a "
                                      f"run that is not a store), got {text!r}"), EXIT_USAGE)
    return parts


def compare(
    runs: Annotated[
        list[Path],
        typer.Argument(help="Two or more runs (trials or counts files, any format); the first is the baseline."),
    ],
    format: FormatOpt = "auto",
    k: EstimateKOpt = None,
    names: Annotated[str | None, typer.Option(help="Run names, comma-separated, one per run.")] = None,
    run_agents: Annotated[
        str | None,
        typer.Option("--run-agents", help="Agent to take from each file, comma-separated, one per run (for files "
                     "holding several agents; the same file may be given twice)."),
    ] = None,
    store_runs: Annotated[
        str | None,
        typer.Option("--store-runs", help="Run to read from each run store (DuckDB file), comma-separated, one per "
                     "run (left empty for a run that is not a store; the same store may be given twice)."),
    ] = None,
    n_boot: Annotated[int, typer.Option(min=0, help="Bootstrap resamples of the paired intervals.")] = 2000,
    ci_prob: Annotated[float, typer.Option(help="Interval probability, in (0, 1).")] = 0.95,
    seed: Annotated[int, typer.Option(min=0, help="Seed of the bootstraps and the fit.")] = 0,
    bayes: Annotated[
        bool, typer.Option("--bayes", help="Also fit the hierarchical model: posterior contrast and P(run > baseline).")
    ] = False,
    draws: Annotated[int, typer.Option(min=1, help="--bayes: posterior draws per chain.")] = 1000,
    strict: Annotated[
        bool, typer.Option("--strict", help="--bayes: exit with status 3 when the fit's diagnostics fail.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the comparison as JSON.")] = False,
    report_dir: Annotated[
        Path | None,
        typer.Option("--report", help="Also write the comparison notebook and its HTML export to this folder."),
    ] = None,
    name: Annotated[str | None, typer.Option(help="--report: file stem (default 'compare').")] = None,
    kernel: Annotated[str, typer.Option(help="--report: Jupyter kernel name.")] = "python3",
    agent: AgentOpt = None,
    skip_bad: SkipBadOpt = False,
    agents: AgentsOpt = None,
) -> None:
    """Compare RUNS with the first: paired pass@k / pass^k differences and every metric, on the shared tasks.

    Runs on different task sets are compared on the tasks all of them attempted; the output says how many tasks of
    each run were left out. Exit 2 for unreadable input or runs without a shared task; 3 with --strict when the
    Bayesian fit's diagnostics fail.
    """
    from agentstats.compare import compare_runs
    from agentstats.io import TrialLoadWarning

    if len(runs) < 2:
        raise fail(typer.BadParameter(f"give at least two runs, got {len(runs)}"), EXIT_USAGE)
    for p in runs:
        if not p.exists():
            raise fail(FileNotFoundError(f"{p}: no such file"), EXIT_USAGE)
    ks = parse_k(k)
    run_names = _split(names, len(runs), "--names")
    picked = _split(run_agents, len(runs), "--run-agents")
    opts: dict[str, Any] = {"format": format}
    if skip_bad:
        opts["on_error"] = "skip"
    if agent is not None:
        opts["agent"] = agent
    if agents is not None:
        opts["agents"] = agents
    stored = _split_runs(store_runs, len(runs))
    run_options: list[dict[str, Any]] | None = None
    if picked or stored:
        run_options = [{} for _ in runs]
        for o, a in zip(run_options, picked or [], strict=False):
            o["agents"] = a
        for o, r in zip(run_options, stored or [], strict=False):
            if r:
                o["run"] = r
    with console.status("comparing ..."):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", TrialLoadWarning)
                cmp = compare_runs(*runs, names=run_names, k=ks, n_boot=n_boot, ci_prob=ci_prob, random_seed=seed,
                                   bayes=bayes, fit_options={"draws": draws}, run_options=run_options, **opts)
        except (ValueError, OSError) as exc:
            raise fail(exc, EXIT_USAGE) from exc
    if as_json:
        out.print_json(cmp.to_json())
    else:
        _print(cmp)
    if report_dir is not None:
        _report(runs, run_names, picked, stored, opts, ks, seed, n_boot, bayes, draws, report_dir, name, kernel)
    if strict and cmp.bayes is not None and not cmp.diagnostics.get("ok", True):
        raise typer.Exit(EXIT_DIAGNOSTICS)


def _fmt(x: Any) -> str:
    return "n/a" if x is None or x != x else f"{x:.3f}"


def _print(cmp: Any) -> None:
    head = f"baseline {escape(cmp.baseline)}: {len(cmp.shared_tasks)} shared tasks"
    left = "; ".join(f"{escape(r)} {len(v)} of {cmp.n_tasks[r]}" for r, v in cmp.left_out.items())
    console.print(f"{head}; tasks left out: {left}", highlight=False, soft_wrap=True)
    t = Table(title="run - baseline on the shared tasks (paired)")
    for c in ("run", "k", "tasks", "pass@k diff", "interval", "pass^k diff", "interval", "McNemar p"):
        t.add_column(c, justify="left" if c == "run" else "right")
    for _, r in cmp.pass_k.iterrows():
        t.add_row(escape(str(r["agent_a"])), str(r["k"]), str(r["n_tasks"]), _fmt(r["pass_at_k_diff"]),
                  f"[{_fmt(r['pass_at_k_diff_ci_low'])}, {_fmt(r['pass_at_k_diff_ci_high'])}]",
                  _fmt(r["pass_hat_k_diff"]),
                  f"[{_fmt(r['pass_hat_k_diff_ci_low'])}, {_fmt(r['pass_hat_k_diff_ci_high'])}]",
                  _fmt(r["mcnemar_p"]))
    out.print(t)
    if len(cmp.metrics):
        m = Table(title="metrics: run - baseline (per-task means, paired)")
        for c in ("run", "metric", "tasks", "baseline", "run value", "diff", "interval"):
            m.add_column(c, justify="left" if c in ("run", "metric") else "right")
        for _, r in cmp.metrics.iterrows():
            m.add_row(escape(str(r["run"])), escape(str(r["metric"])), str(r["n_tasks"]), _fmt(r["mean_baseline"]),
                      _fmt(r["mean_run"]), _fmt(r["diff"]), f"[{_fmt(r['diff_ci_low'])}, {_fmt(r['diff_ci_high'])}]")
        out.print(m)
    if cmp.bayes is not None:
        b = Table(title="Bayesian contrast: run - baseline (credible intervals)")
        for c in ("run", "quantity", "k", "mean", "interval", "P(run > baseline)"):
            b.add_column(c, justify="left" if c in ("run", "quantity") else "right")
        for _, r in cmp.bayes.iterrows():
            b.add_row(escape(str(r["run"])), str(r["quantity"]), str(r["k"]), _fmt(r["diff_mean"]),
                      f"[{_fmt(r['diff_low'])}, {_fmt(r['diff_high'])}]", _fmt(r["prob_greater"]))
        out.print(b)
        if not cmp.diagnostics.get("ok", True):
            console.print("[yellow]diagnostics failed:[/] " + escape("; ".join(cmp.diagnostics.get("problems", []))))


def _report(runs: list[Path], names: list[str] | None, picked: list[str] | None, stored: list[str] | None,
            opts: dict[str, Any],
            ks: list[int] | None, seed: int, n_boot: int, bayes: bool, draws: int, out_dir: Path,
            name: str | None, kernel: str) -> None:
    from agentstats.report import (
        ReportError,
        ReportInputError,
        ReportInterrupted,
        ReportParameterError,
        compare_notebook,
        run_report,
        safe_report_name,
    )

    loader = {k: v for k, v in opts.items() if k != "format"}
    params: dict[str, Any] = {
        "run_paths": [str(p.resolve()) for p in runs], "run_names": names, "run_agents": picked, "store_runs": stored,
        "input_format": opts["format"], "loader_options": loader, "k_values": ks, "seed": seed, "n_boot": n_boot,
        "run_bayes": bayes, "draws": draws,
    }
    for noisy in ("asyncio", "papermill"):
        logging.getLogger(noisy).setLevel(logging.CRITICAL)
    try:
        paths = run_report(params, out_dir=out_dir, name=safe_report_name(name or "compare"),
                           template=compare_notebook(), kernel_name=kernel)
    except ReportInterrupted as exc:
        console.print(str(exc), highlight=False, markup=False, soft_wrap=True)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except (ReportInputError, ReportParameterError) as exc:
        raise fail(exc, EXIT_USAGE) from None
    except ReportError as exc:
        raise fail(exc, EXIT_FAILURE) from None
    console.print(f"report: {paths.html}")
    console.print(f"notebook: {paths.notebook}")


__all__ = ["compare"]

"""``agentstats compare``: runs compared with the first one on their shared tasks (paired contrasts, every metric)."""

from __future__ import annotations

import logging
import tempfile
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
    AgentColOpt,
    AgentOpt,
    AgentsOpt,
    CiProbOpt,
    EstimateKOpt,
    FormatOpt,
    SkipBadOpt,
    SuccessColOpt,
    TaskColOpt,
    check_interval_options,
    check_output_path,
    console,
    fail,
    out,
    parse_k,
    say_skipped,
)
from agentstats.intervals import CI_PROB


def _split(text: str | None, n: int, flag: str) -> list[str] | None:
    if text is None:
        return None
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != n or not all(parts):
        raise fail(typer.BadParameter(f"{flag}: give {n} comma-separated values, one per run, got {text!r}"),
                   EXIT_USAGE)
    return parts


def compare(
    runs: Annotated[
        list[str],
        typer.Argument(help="Two or more runs (trials or counts files, any format; with --store, run names in the "
                       "store); the first is the baseline."),
    ],
    store: Annotated[
        Path | None,
        typer.Option("--store", "-s", help="A run store (DuckDB file, `agentstats import`): RUNS are its run names."),
    ] = None,
    format: FormatOpt = "auto",
    k: EstimateKOpt = None,
    names: Annotated[str | None, typer.Option(help="Run names, comma-separated, one per run.")] = None,
    run_agents: Annotated[
        str | None,
        typer.Option("--run-agents", help="Agent to take from each file, comma-separated, one per run (for files "
                     "holding several agents; the same file may be given twice)."),
    ] = None,
    n_boot: Annotated[int, typer.Option(min=0, help="Bootstrap resamples of the paired intervals.")] = 2000,
    ci_prob: CiProbOpt = CI_PROB,
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
    mlflow_uri: Annotated[
        str | None,
        typer.Option("--mlflow", help="Also log the comparison's numbers, its JSON and the HTML report to this MLflow "
                     "tracking URI (file:///path/mlruns, http://host:5000; needs the mlflow extra: pip install "
                     "'agentstats\\[mlflow]')."),
    ] = None,
    mlflow_experiment: Annotated[
        str, typer.Option("--mlflow-experiment", help="--mlflow: experiment name (created when absent).")
    ] = "agentstats",
    agent: AgentOpt = None,
    agent_col: AgentColOpt = None,
    task_col: TaskColOpt = None,
    success_col: SuccessColOpt = None,
    skip_bad: SkipBadOpt = False,
    agents: AgentsOpt = None,
) -> None:
    """Compare RUNS with the first: paired pass@k / pass^k differences and every metric, on the shared tasks.

    Runs on different task sets are compared on the tasks all of them attempted; the output says how many tasks of
    each run were left out. With --store, RUNS name runs of that store (agentstats import, live capture). Exit 2 for
    unreadable input or runs without a shared task; 3 with --strict when the Bayesian fit's diagnostics fail.
    """
    from agentstats.compare.runs import compare_runs
    from agentstats.io import LoadWarning

    if len(runs) < 2:
        raise fail(typer.BadParameter(f"give at least two runs, got {len(runs)}"), EXIT_USAGE)
    check_interval_options(n_boot=n_boot, ci_prob=ci_prob)
    check_output_path(report_dir, "--report", folder=True)
    if mlflow_uri is not None:
        from agentstats.compare.tracking import mlflow_module

        try:
            mlflow_module()
        except ImportError as exc:
            raise fail(exc, EXIT_USAGE) from exc
    refs: list[Any]
    if store is not None:
        if not store.is_file():
            raise fail(FileNotFoundError(f"no run store at {store} (agentstats import creates one)"), EXIT_USAGE)
        refs = list(runs)
    else:
        refs = [Path(p) for p in runs]
        for p in refs:
            if not p.exists():
                raise fail(FileNotFoundError(f"no such file: {p}"), EXIT_USAGE)
    ks = parse_k(k)
    run_names = _split(names, len(runs), "--names")
    picked = _split(run_agents, len(runs), "--run-agents")
    opts: dict[str, Any] = {"format": format}
    if skip_bad:
        opts["on_error"] = "skip"
    if agent is not None:
        opts["agent"] = agent
    for key, value in (("agent_col", agent_col), ("task_col", task_col), ("success_col", success_col)):
        if value is not None:
            opts[key] = value
    if agents is not None:
        opts["agents"] = agents
    run_options = [{"agents": a} for a in picked] if picked else None
    with console.status("comparing ..."):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", LoadWarning)
                cmp = compare_runs(*refs, names=run_names, k=ks, n_boot=n_boot, ci_prob=ci_prob, random_seed=seed,
                                   bayes=bayes, fit_options={"draws": draws}, run_options=run_options, store=store,
                                   **opts)
        except (ValueError, OSError) as exc:
            raise fail(exc, EXIT_USAGE) from exc
    for run_name, problems in cmp.skipped.items():  # --skip-bad: what each run's loader left out
        say_skipped(problems, Path(cmp.sources[run_name]))
    if as_json:
        out.print_json(cmp.to_json())
    else:
        _print(cmp)
    html: Path | None = None
    with tempfile.TemporaryDirectory(prefix="agentstats-compare-") as tmp:
        if report_dir is not None or mlflow_uri is not None:
            # --mlflow logs the HTML report too: written to a temporary folder when --report is not given
            html = _report(refs, store, run_names, picked, opts, ks, seed, n_boot, ci_prob, bayes, draws,
                           report_dir if report_dir is not None else Path(tmp), name, kernel,
                           announce=report_dir is not None)
        if mlflow_uri is not None:
            _log_mlflow(cmp, mlflow_uri, mlflow_experiment, html, Path(tmp), store)
    if strict and cmp.bayes is not None and not cmp.diagnostics.get("ok", True):
        raise typer.Exit(EXIT_DIAGNOSTICS)


def _fmt(x: Any) -> str:
    """Three decimals; ``n/a`` for a missing value; a value that rounds to zero is ``0.000``, never ``-0.000``."""
    if x is None or x != x:
        return "n/a"
    text = f"{x:.3f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def _fmt_metric(x: Any) -> str:
    """Format a metric: as :func:`_fmt`, but below 0.01 in size with three significant digits (``3.6e-05``).

    A cost of a few thousandths of a cent a trial would print as ``0.000`` otherwise.
    """
    if x is None or x != x or x == 0 or abs(x) >= 0.01:
        return _fmt(x)
    return f"{x:.3g}"


def _print(cmp: Any) -> None:
    from agentstats.compare.runs import METHOD_NO_SPREAD

    head = f"baseline (first run): {escape(cmp.baseline)}; {len(cmp.shared_tasks)} shared tasks"
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
    methods = sorted({str(m) for c in ("pass_at_k_diff_ci_method", "pass_hat_k_diff_ci_method")
                      for m in cmp.pass_k[c].dropna()})
    if methods:
        prob = cmp.settings.get("ci_prob", CI_PROB)
        console.print(f"intervals: {prob:.0%}, paired over tasks ({'; '.join(methods)}; MOVER at the boundary, "
                      "where the bootstrap would be too narrow: docs/compare.md)", highlight=False, soft_wrap=True)
    dropped = cmp.pass_k[cmp.pass_k["n_tasks_dropped"] > 0]
    for _, r in dropped.iterrows():
        console.print(f"k = {r['k']}: {escape(str(r['agent_a']))} rests on {r['n_tasks']} of "
                      f"{r['n_tasks'] + r['n_tasks_dropped']} shared tasks (tasks with fewer than k trials in either "
                      "run drop out at that k; `--json` lists them)", highlight=False, soft_wrap=True)
    if cmp.pass_k["mcnemar_p"].isna().any():
        console.print("McNemar p: exact test of k = 1 with one trial per task; n/a where a task has more trials.",
                      highlight=False, soft_wrap=True)
    if len(cmp.metrics):
        m = Table(title="metrics: run - baseline (per-task means, paired)")
        for c in ("run", "metric", "tasks", "baseline", "run value", "diff", "interval"):
            m.add_column(c, justify="left" if c in ("run", "metric") else "right")
        for _, r in cmp.metrics.iterrows():
            m.add_row(escape(str(r["run"])), escape(str(r["metric"])), str(r["n_tasks"]),
                      _fmt_metric(r["mean_baseline"]), _fmt_metric(r["mean_run"]), _fmt_metric(r["diff"]),
                      f"[{_fmt_metric(r['diff_ci_low'])}, {_fmt_metric(r['diff_ci_high'])}]")
        out.print(m)
        flat = cmp.metrics[cmp.metrics["diff_ci_method"] == METHOD_NO_SPREAD]
        if len(flat):
            names = ", ".join(escape(str(x)) for x in flat["metric"].unique())
            console.print(f"{names}: every shared task has the same difference, so the task bootstrap interval has "
                          "no width: it shows no task-to-task spread, not certainty", highlight=False, soft_wrap=True)
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


def _log_mlflow(cmp: Any, uri: str, experiment: str, html: Path | None, tmp: Path, store: Path | None) -> None:
    from agentstats.compare.tracking import comparison_metrics, log_to_mlflow

    data = tmp / "comparison.json"
    cmp.to_json(data)
    params: dict[str, Any] = {"baseline": cmp.baseline, "runs": ",".join(cmp.runs),
                              "shared_tasks": len(cmp.shared_tasks), **cmp.settings}
    if store is not None:
        params["store"] = str(store)
    try:
        rid = log_to_mlflow(uri, run_name=" vs ".join([*cmp.runs[1:], cmp.baseline]), metrics=comparison_metrics(cmp),
                            params=params, artifacts=[data, *([html] if html is not None else [])],
                            experiment=experiment, tags={"agentstats.command": "compare"})
    except Exception as exc:  # an unreachable server, a refused URI: say so, with MLflow's words
        raise fail(RuntimeError(f"--mlflow {uri}: {type(exc).__name__}: {exc}"), EXIT_FAILURE) from exc
    console.print(f"mlflow: run {rid} in experiment {experiment!r} at {uri}", highlight=False, markup=False)


def _report(runs: list[Any], store: Path | None, names: list[str] | None, picked: list[str] | None,
            opts: dict[str, Any], ks: list[int] | None, seed: int, n_boot: int, ci_prob: float, bayes: bool,
            draws: int, out_dir: Path, name: str | None, kernel: str, *, announce: bool = True) -> Path:
    from agentstats.report.build import ReportInputError
    from agentstats.report.notebook import (
        ReportError,
        ReportInterrupted,
        compare_notebook,
        run_report,
        safe_report_name,
    )
    from agentstats.report.params import CompareParams, ReportParameterError

    loader = {k: v for k, v in opts.items() if k != "format"}
    try:  # the comparison's own settings; the fit's other sizes are CompareParams' (the command line's) defaults
        params = CompareParams.validated({
            "run_paths": [str(p) for p in runs] if store is not None else [str(Path(p).resolve()) for p in runs],
            "store": str(store.resolve()) if store is not None else None, "run_names": names, "run_agents": picked,
            "input_format": opts["format"], "loader_options": loader, "k_values": ks, "ci_prob": ci_prob,
            "seed": seed, "n_boot": n_boot, "run_bayes": bayes, "draws": draws,
        })
    except ReportParameterError as exc:
        raise fail(exc, EXIT_USAGE) from None
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
    if announce:
        console.print(f"report: {paths.html}")
        console.print(f"notebook: {paths.notebook}")
    return Path(paths.html)


__all__ = ["compare"]

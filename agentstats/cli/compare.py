"""``agentstats compare``: runs compared with the first one on their shared tasks (paired contrasts, every metric)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Annotated, Any

import typer

from agentstats.cli.common import (
    EXIT_DIAGNOSTICS,
    EXIT_FAILURE,
    EXIT_USAGE,
    console,
    fail,
    notebook_errors,
    out,
    say_skipped,
)
from agentstats.cli.options import (
    CI_DEFAULT,
    CiOptions,
    EstimateKOpt,
    InputOptions,
    JsonOpt,
    NBootOpt,
    StrictOpt,
    check_n_boot,
    check_output_path,
    ci_options,
    input_options,
    out_dir_opt,
    parse_k,
)
from agentstats.intervals import DEFAULT_SEED


def _split(text: str | None, runs: list[str], flag: str) -> list[str] | None:
    """Read a comma-separated list of one value per run (``--names``, ``--run-agents``)."""
    if text is None:
        return None
    parts, n = [p.strip() for p in text.split(",")], len(runs)
    if len(parts) != n or not all(parts):
        raise fail(typer.BadParameter(f"{flag}: give {n} comma-separated values, one per run, got {text!r}"),
                   EXIT_USAGE)
    return parts


@input_options(run=False)  # the runs are the arguments (with --store, run names of the store)
@ci_options(kinds=("eti",))  # compare_runs' bootstrap and posterior-contrast intervals are equal-tailed
def compare(
    runs: Annotated[list[str], typer.Argument(help="Two or more runs (files, any format; with --store, run names in "
                                              "the store); the first is the baseline.")],
    inputs: InputOptions,
    store: Annotated[Path | None, typer.Option("--store", "-s", help="A run store (DuckDB file, `agentstats "
                                               "import`): RUNS are its run names.")] = None,
    k: EstimateKOpt = None,
    names: Annotated[str | None, typer.Option(help="Run names, comma-separated, one per run.")] = None,
    run_agents: Annotated[str | None, typer.Option("--run-agents", help="Agent to take from each file, comma-"
                                                   "separated, one per run (the same file may be given twice).")]
    = None,
    n_boot: NBootOpt = 2000,
    ci: CiOptions = CI_DEFAULT,
    seed: Annotated[int, typer.Option(min=0, help="Seed of the bootstraps and the fit.")] = DEFAULT_SEED,
    bayes: Annotated[bool, typer.Option("--bayes/--no-bayes", help="Also fit the hierarchical model: posterior "
                                        "contrast and P(run > baseline).")] = True,
    draws: Annotated[int, typer.Option(min=1, help="--bayes: posterior draws per chain.")] = 1000,
    strict: StrictOpt = False,
    as_json: JsonOpt = False,
    out_dir: Annotated[Path | None, out_dir_opt("Also write the comparison notebook and its HTML export here.")]
    = None,
    name: Annotated[str | None, typer.Option(help="--out-dir: file stem (default 'compare').")] = None,
    kernel: Annotated[str, typer.Option(help="--out-dir: Jupyter kernel name.")] = "python3",
    mlflow_uri: Annotated[str | None, typer.Option("--mlflow", help="Also log the comparison (numbers, JSON, HTML) to "
                                                   "this MLflow tracking URI (pip install 'agentstats\\[mlflow]').")]
    = None,
    mlflow_experiment: Annotated[str, typer.Option("--mlflow-experiment", help="--mlflow: experiment name (created "
                                                   "when absent).")] = "agentstats",
) -> None:
    """Compare RUNS with the first: paired pass@k / pass^k differences and every metric, on the shared tasks.

    Runs on different task sets are compared on the tasks all of them attempted; the output says how many tasks of
    each run were left out. With --store, RUNS name runs of that store (agentstats import, live capture). Exit 2 for
    unreadable input or runs without a shared task; 3 with --strict when the Bayesian fit's diagnostics fail.
    """
    from agentstats.cli.render.compare import print_comparison
    from agentstats.compare.tracking import log_comparison, mlflow_module
    from agentstats.report.build import build_comparison
    from agentstats.report.params import CompareParams

    if len(runs) < 2:
        raise fail(typer.BadParameter(f"give at least two runs, got {len(runs)}"), EXIT_USAGE)
    check_n_boot(n_boot)
    check_output_path(out_dir, "--out-dir", folder=True)
    try:
        if mlflow_uri is not None:
            mlflow_module()
        if store is not None and not store.is_file():
            raise FileNotFoundError(f"no run store at {store} (agentstats import creates one)")
        missing = [p for p in runs if store is None and not Path(p).exists()]
        if missing:
            raise FileNotFoundError(f"no such file: {missing[0]}")
        # one set of parameters for the comparison printed here and its notebook (CompareParams' fit sizes)
        params = CompareParams.validated({
            "run_paths": runs, "store": None if store is None else str(store), "run_names": _split(names, runs,
            "--names"), "run_agents": _split(run_agents, runs, "--run-agents"), "input_format": inputs.format,
            "loader_options": inputs.loader_options(), "k_values": parse_k(k), "ci_prob": ci.prob, "seed": seed,
            "n_boot": n_boot, "run_bayes": bayes, "draws": draws})
        with console.status("comparing ..."):
            cmp = build_comparison(params)
    except (ImportError, ValueError, OSError) as exc:  # ReportParameterError is a ValueError
        raise fail(exc, EXIT_USAGE) from exc
    for run_name, problems in cmp.skipped.items():  # --skip-bad: what each run's loader left out
        say_skipped(problems, Path(cmp.sources[run_name]))
    if as_json:
        out.print_json(cmp.to_json())
    else:
        print_comparison(cmp)
    with tempfile.TemporaryDirectory(prefix="agentstats-compare-") as tmp:
        html = None  # --mlflow logs the HTML report too: written to a temporary folder without --out-dir
        if out_dir is not None or mlflow_uri is not None:
            html = _report(params, store, out_dir or Path(tmp), name, kernel, announce=out_dir is not None)
        if mlflow_uri is not None:
            try:
                rid = log_comparison(cmp, mlflow_uri, experiment=mlflow_experiment, html=html, store=store)
            except Exception as exc:  # an unreachable server, a refused URI: said with MLflow's words
                raise fail(RuntimeError(f"--mlflow {mlflow_uri}: {type(exc).__name__}: {exc}"), EXIT_FAILURE) from exc
            console.print(f"mlflow: run {rid} in experiment {mlflow_experiment!r} at {mlflow_uri}", highlight=False,
                          markup=False)
    if strict and cmp.bayes is not None and not cmp.diagnostics.get("ok", True):
        raise typer.Exit(EXIT_DIAGNOSTICS)


def _report(params: Any, store: Path | None, folder: Path, name: str | None, kernel: str, *, announce: bool) -> Path:
    """Run the comparison notebook (``notebooks/compare.ipynb``) into ``folder``; return its HTML."""
    from agentstats.report.notebook import compare_notebook, run_report, safe_report_name

    if store is None:  # the kernel runs elsewhere: files by their absolute paths
        params = params.model_copy(update={"run_paths": [str(Path(p).resolve()) for p in params.run_paths]})
    else:
        params = params.model_copy(update={"store": str(store.resolve())})
    with notebook_errors():
        paths = run_report(params, out_dir=folder, name=safe_report_name(name or "compare"),
                           template=compare_notebook(), kernel_name=kernel)
    if announce:
        console.print(f"report: {paths.html}")
        console.print(f"notebook: {paths.notebook}")
    return Path(paths.html)

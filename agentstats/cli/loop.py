"""``agentstats loop``: the evaluator-optimizer loop (generate -> evaluate -> gate -> optimize) from a config file.

Exit status as the gate's: 0 PASS, 1 FAIL (the best iteration probably fails the gate, or the loop could not go
on: a call failed after every retry), 75 stopped undecided (no credible improvement, budget, wall time or
max_iterations before a PASS; resume or give more data), 2 usage or input error (config, eval set or baseline that
does not validate, every problem located; a run folder holding another run), 130 interrupted (Ctrl-C: completed
calls are cached and completed steps logged, ``--resume`` continues).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from agentstats.cli.common import EXIT_FAILURE, EXIT_UNAVAILABLE, EXIT_USAGE, check_output_path, console, fail, out


def loop(
    config: Annotated[
        Path, typer.Option("--config", "-c", help="Loop config (YAML or JSON; see docs/loop.md).")
    ],
    resume: Annotated[
        bool, typer.Option("--resume", help="Continue the run in --run-dir without repeating calls.")
    ] = False,
    run_dir: Annotated[
        Path | None,
        typer.Option("--run-dir", help="Run folder (log, call cache, outputs); default loop-run/ beside the config."),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the result record as JSON instead of tables.")
    ] = False,
    report: Annotated[
        Path | None,
        typer.Option("--report", help="Also render the gate report of the run into this folder (.ipynb, .html)."),
    ] = None,
    store: Annotated[
        Path | None,
        typer.Option("--store", help="Also write every iteration and the baseline to this run store (DuckDB file)."),
    ] = None,
    store_run: Annotated[
        str | None,
        typer.Option("--store-run", help="Prefix of the stored runs' names (default: the run folder's name)."),
    ] = None,
) -> None:
    """Run the evaluator-optimizer loop: exit 0 PASS, 1 FAIL, 75 undecided, 69 endpoint down, 2 input error.

    69 (EX_UNAVAILABLE): a model endpoint failed after its retries or refused the key; resume later with --resume.
    130: interrupted (Ctrl-C); the run resumes too.
    """
    from agentstats.optimize import EndpointError, LoopConfigError, LoopError, load_loop_config, optimize
    from agentstats.records.problems import LoadError

    logging.getLogger("instructor").setLevel(logging.CRITICAL)  # retried failures are counted, not logged
    check_output_path(run_dir, "--run-dir", folder=True)
    check_output_path(report, "--report", folder=True)
    try:
        cfg = load_loop_config(config)
    except LoopConfigError as exc:
        raise fail(exc, EXIT_USAGE) from exc
    where = run_dir if run_dir is not None else config.parent / "loop-run"
    try:
        with console.status("running the loop ..."):
            result = optimize(config=cfg, run_dir=where, resume=resume, store=store, store_run=store_run)
    except EndpointError as exc:
        raise fail(exc, EXIT_UNAVAILABLE) from exc
    except LoopError as exc:
        raise fail(exc, EXIT_FAILURE) from exc
    except (LoadError, ValueError, OSError) as exc:
        raise fail(exc, EXIT_USAGE) from exc
    record = result.to_record()
    if report is not None:
        from agentstats.report.gate import loop_command, run_gate_report

        try:
            paths = run_gate_report(run_dir=where, out_dir=report, name="gate", progress_bar=False,
                                    command=loop_command(config, where, report=report))
        except Exception as exc:  # the loop's result stands; the report is an extra
            raise fail(exc, EXIT_FAILURE) from exc
        record["report"] = str(paths.html)
    if as_json:
        out.print_json(json.dumps(record))
    else:
        _print(record)
    raise typer.Exit(result.exit_code)


def _print(record: dict) -> None:
    t = Table(title="loop iterations (credible intervals of the candidate's means)")
    for col in ("iteration", "decision", "P(better than best)", "improved", "metrics"):
        t.add_column(col, justify="left")
    for s in record["iterations"]:
        metrics = "; ".join(
            f"{m['metric']} {m['mean']:.3f} [{m['ci_low']:.3f}, {m['ci_high']:.3f}]" for m in s.get("metrics", [])
        )
        p = s.get("p_better_than_best")
        t.add_row(str(s.get("iteration")), escape(str(s.get("decision"))), "" if p is None else f"{p:.3f}",
                  str(s.get("improved")), escape(metrics))
    out.print(t)
    colour = {"PASS": "green", "FAIL": "red"}.get(record["decision"], "yellow")
    out.print(f"[bold {colour}]{record['decision']}[/] (best iteration {record['best_iteration']}); "
              f"stopped: {escape(record['stop_reason'])}: {escape(record['stop_detail'])}", highlight=False,
              soft_wrap=True)
    out.print(f"cost ${record['cost_usd']:.6f}; {record['n_requests']} requests sent (every invocation of the run); "
              f"{record['n_cached']} calls answered from the run's cache by this one", highlight=False)
    if record["triggers"]:
        out.print("[bold]human review required:[/]", highlight=False)
        for trig in record["triggers"]:
            out.print(f"  {escape(trig['kind'])}: {escape(trig['reason'])}", highlight=False, soft_wrap=True)
    if record.get("report"):
        out.print(f"report: {escape(record['report'])}", highlight=False)

"""``agentstats loop``: the evaluator-optimizer loop (generate -> evaluate -> gate -> optimize) from a config file.

Exit status as the gate's: 0 PASS, 1 FAIL (the best iteration probably fails the gate, or the loop could not go
on: a call failed after every retry), 75 stopped undecided (no credible improvement, budget, wall time or
max_iterations before a PASS; resume or give more data), 2 usage or input error (config, eval set or baseline that
does not validate, every problem located; a run folder holding another run), 69 a model endpoint failed after its
retries or refused the key (resume later), 130 interrupted (Ctrl-C: completed calls are cached and completed steps
logged, ``--resume`` continues).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated

import typer

from agentstats.cli.common import EXIT_FAILURE, EXIT_UNAVAILABLE, EXIT_USAGE, console, fail
from agentstats.cli.options import JsonOpt, check_output_path, out_dir_opt, store_run_opt


def loop(
    config: Annotated[Path, typer.Option("--config", "-c", help="Loop config (YAML or JSON; see docs/loop.md).")],
    resume: Annotated[bool, typer.Option("--resume", help="Continue the run in --run-dir without repeating calls.")]
    = False,
    run_dir: Annotated[
        Path | None,
        typer.Option("--run-dir", help="Run folder (log, call cache, outputs); default loop-run/ beside the config."),
    ] = None,
    as_json: JsonOpt = False,
    out_dir: Annotated[Path | None, out_dir_opt("Also render the gate report of the run here (.ipynb, .html).")]
    = None,
    store: Annotated[
        Path | None,
        typer.Option("--store", help="Also write every iteration and the baseline to this run store (DuckDB file)."),
    ] = None,
    store_run: Annotated[
        str | None, store_run_opt("Prefix of the stored runs' names (default: the run folder's name).")
    ] = None,
) -> None:
    """Run the evaluator-optimizer loop: exit 0 PASS, 1 FAIL, 75 undecided, 69 endpoint down, 2 input error.

    69 (EX_UNAVAILABLE): a model endpoint failed after its retries or refused the key; resume later with --resume.
    130: interrupted (Ctrl-C); the run resumes too.
    """
    from agentstats.cli.render.gate import print_loop
    from agentstats.cli.render.text import print_json
    from agentstats.optimize import EndpointError, LoopConfigError, LoopError, load_loop_config, optimize
    from agentstats.records.problems import LoadError
    from agentstats.report.gate import loop_command, run_gate_report

    logging.getLogger("instructor").setLevel(logging.CRITICAL)  # retried failures are counted, not logged
    check_output_path(run_dir, "--run-dir", folder=True)
    check_output_path(out_dir, "--out-dir", folder=True)
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
    if out_dir is not None:
        try:  # the loop's result stands if the report fails: exit 1
            paths = run_gate_report(run_dir=where, out_dir=out_dir, name="gate", progress_bar=False,
                                    command=loop_command(config, where, out_dir=out_dir))
        except Exception as exc:
            raise fail(exc, EXIT_FAILURE) from exc
        record["report"] = str(paths.html)
    if as_json:
        print_json(record)
    else:
        print_loop(record)
    raise typer.Exit(result.exit_code)

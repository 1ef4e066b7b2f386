"""``agentstats loop``: the evaluator-optimizer loop (generate -> evaluate -> gate -> optimize) from a config file.

Exit status as the gate's: 0 PASS, 1 FAIL (the best iteration probably fails the gate, or the loop could not go
on: a call failed after every retry), 75 stopped undecided (no credible improvement, budget, wall time or
max_iterations before a PASS; resume or give more data), 2 usage or input error (config, eval set or baseline that
does not validate, every problem located; a run folder holding another run), 69 a model endpoint failed after its
retries or refused the key (resume later), 130 interrupted (Ctrl-C: completed calls are cached and completed steps
logged, ``--resume`` continues). ``--out FILE`` writes the best iteration's gate decision record with the winning
prompt (its ``loop`` section); ``--sign-off NAME`` appends a reviewer's sign-off to it (and to the run store's
record of the best iteration, with ``--store``).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated

import typer

from agentstats.cli.common import EXIT_FAILURE, EXIT_UNAVAILABLE, EXIT_USAGE, console, fail
from agentstats.cli.options import JsonOpt, check_output_path, out_dir_opt, out_file_opt, store_run_opt


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
    out_path: Annotated[
        Path | None, out_file_opt("Write the best iteration's decision record, with the winning prompt, here.", "-o")
    ] = None,
    sign_off: Annotated[
        str | None,
        typer.Option("--sign-off", help="Append a reviewer's sign-off (this name) to the decision record at --out "
                     "(and to the store's, with --store)."),
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
    if sign_off is not None and not sign_off.strip():
        raise fail(typer.BadParameter("--sign-off: give the reviewer's name"), EXIT_USAGE)
    if sign_off is not None and out_path is None and store is None:
        raise fail(typer.BadParameter("--sign-off needs --out or --store: the record the sign-off is appended to"),
                   EXIT_USAGE)
    check_output_path(out_path, "--out")
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
    final = result.decision_record()
    if final is not None and (out_path is not None or sign_off is not None):
        from agentstats.gating import keep_record

        try:
            kept = keep_record(final, out=out_path, store=store if sign_off is not None else None,
                               run=result.store_run, sign_off=sign_off)
        except ValueError as exc:  # a record at --out it will not replace
            raise fail(exc, EXIT_USAGE) from exc
        record["decision_record"] = {"path": None if out_path is None else str(out_path),
                                     "sign_off": kept.get("sign_off") or []}
    elif out_path is not None:
        console.print("no iteration completed: no decision record written", highlight=False)
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

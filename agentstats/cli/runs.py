"""``agentstats runs list|show|export|delete``: the runs of a run store from the command line."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agentstats.cli.common import EXIT_FAILURE, EXIT_USAGE, Command, CommandGroup, command, console, fail, open_store
from agentstats.cli.options import JsonOpt, StoreOpt, check_output_path, out_file_opt

__all__ = ["runs_app"]

RunArg = Annotated[str, typer.Argument(help="Run name.")]

runs_app = typer.Typer(
    cls=CommandGroup,
    help="List, show, export and delete the runs of a run store (DuckDB file).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


def runs_list(store: StoreOpt = Path("agentstats.duckdb"), as_json: JsonOpt = False) -> None:
    """List the runs: name, status, trials, agents, tasks, start time, source."""
    from agentstats.cli.render.runs import print_runs

    with open_store(store, read_only=True) as st:
        frame = st.runs()
    print_runs(frame, store, as_json)


def runs_show(run: RunArg, store: StoreOpt = Path("agentstats.duckdb"), as_json: JsonOpt = False) -> None:
    """Show one run: its fields, records per table, outcomes per agent, and its metric results by level."""
    from agentstats.capture.results import StoredRun
    from agentstats.cli.render.runs import print_run
    from agentstats.store import StoreError

    with open_store(store, read_only=True) as st:
        try:
            info = st.run_info(run)
            outcomes = st.outcomes(run)
        except StoreError as exc:
            raise fail(exc, EXIT_USAGE) from exc
    if outcomes:
        info["outcomes"] = outcomes
    metrics = StoredRun(run, store).result() if info["records"].get("metric_results") else None
    print_run(info, as_json, metrics)


def runs_export(
    run: RunArg,
    out_path: Annotated[Path, out_file_opt(".parquet (DuckDB COPY) or .jsonl[.gz] (the trial schema, with a "
                                           "manifest).", "-o")],
    store: StoreOpt = Path("agentstats.duckdb"),
    table: Annotated[str, typer.Option(help="Parquet only: the table to export (trials, interactions, tool_calls, "
                                       "node_invocations, metric_results, judge_verdicts, gate_decisions).")]
    = "trials",
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing file.")] = False,
) -> None:
    """Export a run to Parquet or to JSONL trials (written atomically)."""
    from agentstats.store import StoreError

    check_output_path(out_path, "--out", make_parents=True)
    if out_path.exists() and not force:
        raise fail(FileExistsError(f"{out_path} exists; pass --force to overwrite it"), EXIT_USAGE)
    with open_store(store, read_only=True) as st:
        try:
            out_path.parent.mkdir(parents=True, exist_ok=True)
            st.export(run, out_path, table=table)
        except StoreError as exc:
            raise fail(exc, EXIT_USAGE) from exc
        except OSError as exc:
            raise fail(exc, EXIT_FAILURE) from exc
    console.print(f"wrote {out_path}")


def runs_delete(
    run: RunArg,
    store: StoreOpt = Path("agentstats.duckdb"),
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Delete without asking.")] = False,
) -> None:
    """Delete a run and all its records (one transaction)."""
    from agentstats.store import StoreError

    if not store.exists():
        raise fail(FileNotFoundError(f"no run store at {store}"), EXIT_USAGE)
    with open_store(store, read_only=False) as st:
        try:
            st.run_id(run)
            if not yes and not typer.confirm(f"delete run {run!r} from {store}?", default=False, err=True):
                raise typer.Exit(EXIT_FAILURE)
            deleted = st.delete_run(run)
        except StoreError as exc:
            raise fail(exc, EXIT_USAGE) from exc
    console.print(f"deleted run {run!r} ({deleted['trials']:,} trials)")


for _cmd, _name in ((runs_list, "list"), (runs_show, "show"), (runs_export, "export"), (runs_delete, "delete")):
    runs_app.command(name=_name, cls=Command)(command(_cmd))

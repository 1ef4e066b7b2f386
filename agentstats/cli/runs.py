"""``agentstats runs list|show|export|delete``: the runs of a run store from the command line."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer

from agentstats.cli.common import EXIT_FAILURE, EXIT_USAGE, Command, CommandGroup, command, console, fail, open_store
from agentstats.cli.options import JsonOpt, StoreOpt, check_output_path, force_opt, out_dir_opt, out_file_opt

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


ExportFormat = Literal["parquet", "jsonl"]


def runs_export(
    run: Annotated[str | None, typer.Argument(help="Run name (with --partition-by: default every run).")] = None,
    out_path: Annotated[Path | None, out_file_opt(".parquet (DuckDB COPY) or .jsonl[.gz] (the trial schema, with a "
                                                  "manifest).", "-o")] = None,
    out_dir: Annotated[Path | None, out_dir_opt("With --partition-by: the dataset's folder "
                                                "(DIR/run=NAME/agent=NAME/part-0.parquet).")] = None,
    store: StoreOpt = Path("agentstats.duckdb"),
    fmt: Annotated[ExportFormat | None, typer.Option("--format", help="parquet or jsonl (default: from the --out "
                                                     "suffix; parquet with --partition-by).")] = None,
    partition_by: Annotated[str | None, typer.Option(
        "--partition-by", metavar="COL,...", help="Parquet only: write the trials as a hive-partitioned dataset "
        "folder, one level per column (run, agent, task_id, status), e.g. run,agent; DuckDB, Spark, Ray and "
        "agentstats itself read it (docs/store.md).")] = None,
    table: Annotated[str, typer.Option(help="Parquet only: the table to export (trials, interactions, tool_calls, "
                                       "node_invocations, metric_results, judge_verdicts, gate_decisions).")]
    = "trials",
    force: Annotated[bool, force_opt("an existing file or dataset folder")] = False,
) -> None:
    """Export a run to Parquet or to JSONL trials, or runs to a partitioned Parquet dataset (written atomically)."""
    from agentstats.store import StoreError

    if partition_by is not None:
        if fmt == "jsonl":
            raise fail(ValueError("--partition-by writes Parquet; leave out --format jsonl"), EXIT_USAGE)
        if out_path is not None or out_dir is None:
            raise fail(ValueError("a partitioned dataset is a folder: give it with --out-dir DIR"), EXIT_USAGE)
        dest = out_dir
    else:
        if run is None:
            raise fail(ValueError("name the run to export (every run is exported only with --partition-by)"),
                       EXIT_USAGE)
        if out_path is None:
            raise fail(ValueError("give the file to write with --out FILE (--out-dir with --partition-by)"), EXIT_USAGE)
        suffix = out_path.name.lower()
        said = ("parquet" if suffix.endswith(".parquet") else "jsonl" if suffix.endswith((".jsonl", ".jsonl.gz"))
                else None)
        if fmt is not None and said is not None and said != fmt:
            raise fail(ValueError(f"--format {fmt} and --out {out_path.name} disagree"), EXIT_USAGE)
        dest = out_path
    if partition_by is not None:
        check_output_path(dest, "--out-dir", folder=True, force=force)
    else:
        check_output_path(dest, "--out", make_parents=True, force=force)
    with open_store(store, read_only=True) as st:
        try:
            dest.parent.mkdir(parents=True, exist_ok=True)
            if partition_by is not None:
                st.export_dataset(dest, runs=None if run is None else [run], partition_by=partition_by,
                                  replace=force)
            else:
                st.export(run, dest, table=table)
        except StoreError as exc:
            raise fail(exc, EXIT_USAGE) from exc
        except OSError as exc:
            raise fail(exc, EXIT_FAILURE) from exc
    if partition_by is not None:  # what a reader of the dataset will find (its Parquet files hold the trials)
        files = sorted(dest.rglob("*.parquet"))
        size = sum(f.stat().st_size for f in files) / 1e6
        console.print(f"wrote {dest}: {len(files)} Parquet file{'s' if len(files) != 1 else ''} ({size:,.1f} MB), "
                      f"partitioned by {partition_by}")
    else:
        console.print(f"wrote {dest}")


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

"""``agentstats runs list|show|export|delete`` and ``agentstats import``: the run store from the command line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from agentstats.cli.common import EXIT_FAILURE, EXIT_USAGE, FormatOpt, SkipBadOpt, check_output_path, console, fail, out

__all__ = ["import_", "runs_app"]

StoreOpt = Annotated[
    Path, typer.Option("--store", "-s", help="The run store (a DuckDB file; created by import when absent).")
]
RunArg = Annotated[str, typer.Argument(help="Run name.")]

runs_app = typer.Typer(
    help="List, show, export and delete the runs of a run store (DuckDB file).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


def _open(store: Path, *, read_only: bool) -> Any:
    from agentstats.store import RunStore, StoreError

    if read_only and not store.exists():
        raise fail(FileNotFoundError(f"no run store at {store} (agentstats import creates one)"), EXIT_USAGE)
    try:
        return RunStore(store, read_only=read_only)
    except (StoreError, ImportError, OSError) as exc:
        raise fail(exc, EXIT_USAGE) from exc


def runs_list(
    store: StoreOpt = Path("agentstats.duckdb"),
    as_json: Annotated[bool, typer.Option("--json", help="A JSON array of runs on stdout.")] = False,
) -> None:
    """List the runs: name, status, trials, agents, tasks, start time, source."""
    with _open(store, read_only=True) as st:
        frame = st.runs()
    if as_json:
        out.print_json(json.dumps([_plain(rec) for rec in frame.to_dict(orient="records")], default=str))
        return
    if frame.empty:
        console.print(f"no runs in {store}")
        return
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=f"runs in {escape(str(store))}")
    for col in ("name", "status", "trials", "agents", "tasks", "started", "source"):
        table.add_column(col, justify="right" if col in ("trials", "agents", "tasks") else "left")
    for r in frame.itertuples():
        started = r.started_at.strftime("%Y-%m-%d %H:%M:%S") if r.started_at is not None else ""
        table.add_row(escape(str(r.name)), r.status, f"{r.trials:,}", str(r.agents), str(r.tasks), started,
                      escape(str(r.source or "")))
    out.print(table)


def runs_show(
    run: RunArg,
    store: StoreOpt = Path("agentstats.duckdb"),
    as_json: Annotated[bool, typer.Option("--json", help="The run as one JSON object on stdout.")] = False,
) -> None:
    """Show one run: its fields, records per table, and its counts when every trial has an outcome."""
    from agentstats.store import StoreError

    with _open(store, read_only=True) as st:
        try:
            info = st.run_info(run)
            try:
                counts = st.counts(run)
            except ValueError:
                counts = None
        except StoreError as exc:
            raise fail(exc, EXIT_USAGE) from exc
    if counts is not None and len(counts):
        by_agent = counts.groupby("agent")[["n", "c", "n_missing"]].sum()
        info["outcomes"] = {a: {k: int(v) for k, v in row.items()} for a, row in by_agent.iterrows()}
    if as_json:
        out.print_json(json.dumps(_plain(info), default=str))
        return
    from rich.markup import escape

    for key, value in _plain(info).items():
        if isinstance(value, dict | list):
            text = json.dumps(value, default=str)
        else:
            text = "-" if value is None else str(value)
        out.print(f"[bold]{escape(key)}[/]: {escape(text)}", highlight=False, soft_wrap=True)


def runs_export(
    run: RunArg,
    to: Annotated[Path, typer.Option("--to", "-o", help="Output file: .parquet (DuckDB COPY) or .jsonl[.gz] "
                                     "(the project's trial schema, with a manifest).")],
    store: StoreOpt = Path("agentstats.duckdb"),
    table: Annotated[str, typer.Option(
        help="Parquet only: the table to export (trials, interactions, tool_calls, node_invocations, metric_results, "
        "judge_verdicts, gate_decisions).")] = "trials",
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing file.")] = False,
) -> None:
    """Export a run to Parquet or to JSONL trials (written atomically)."""
    from agentstats.store import StoreError

    check_output_path(to, "--to", make_parents=True)
    if to.exists() and not force:
        raise fail(FileExistsError(f"{to} exists; pass --force to overwrite it"), EXIT_USAGE)
    name = to.name.lower()
    if not (name.endswith(".parquet") or name.endswith(".jsonl") or name.endswith(".jsonl.gz")):
        raise fail(typer.BadParameter(f"--to {to}: use a .parquet, .jsonl or .jsonl.gz file"), EXIT_USAGE)
    if table != "trials" and not name.endswith(".parquet"):
        raise fail(typer.BadParameter("--table applies to Parquet exports; JSONL holds trials"), EXIT_USAGE)
    with _open(store, read_only=True) as st:
        try:
            to.parent.mkdir(parents=True, exist_ok=True)
            if name.endswith(".parquet"):
                st.export_parquet(run, to, table=table)
            else:
                st.export_jsonl(run, to)
        except StoreError as exc:
            raise fail(exc, EXIT_USAGE) from exc
        except OSError as exc:
            raise fail(exc, EXIT_FAILURE) from exc
    console.print(f"wrote {to}")


def runs_delete(
    run: RunArg,
    store: StoreOpt = Path("agentstats.duckdb"),
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Delete without asking.")] = False,
) -> None:
    """Delete a run and all its records (one transaction)."""
    from agentstats.store import StoreError

    if not store.exists():
        raise fail(FileNotFoundError(f"no run store at {store}"), EXIT_USAGE)
    with _open(store, read_only=False) as st:
        try:
            st.run_id(run)
            if not yes and not typer.confirm(f"delete run {run!r} from {store}?", default=False, err=True):
                raise typer.Exit(EXIT_FAILURE)
            deleted = st.delete_run(run)
        except StoreError as exc:
            raise fail(exc, EXIT_USAGE) from exc
    console.print(f"deleted run {run!r} ({deleted['trials']:,} trials)")


def import_(
    path: Annotated[Path, typer.Argument(help="File to import (format detected from the content).", exists=True,
                                         dir_okay=True)],
    run: Annotated[str, typer.Option("--run", "-r", help="Name of the new run.")],
    store: StoreOpt = Path("agentstats.duckdb"),
    fmt: FormatOpt = "auto",
    description: Annotated[str | None, typer.Option(help="Description stored on the run.")] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", help="A tag (repeat for several).")] = None,
    agent: Annotated[str | None, typer.Option(help="Agent name for single-agent files (tau-bench).")] = None,
    replace: Annotated[bool, typer.Option("--replace", help="Replace a run of the same name.")] = False,
    skip_bad: SkipBadOpt = False,
) -> None:
    """Import a trials file into the run store as a new run, in one transaction.

    Bad input (a malformed record, a duplicated trial key) is listed with its file, line and field, and nothing is
    written. Importing the same file again under the same name does nothing (a rerun after a crash is safe).
    """
    import warnings

    from rich.markup import escape

    from agentstats._util.text import plural
    from agentstats.cli.common import say_skipped
    from agentstats.records.problems import LoadError, LoadWarning
    from agentstats.store import StoreError
    from agentstats.store.importing import import_file

    with _open(store, read_only=False) as st, warnings.catch_warnings():
        warnings.simplefilter("ignore", LoadWarning)  # said below, with the records
        try:
            result = import_file(st, path, run=run, format=fmt, description=description, tags=tag or [],
                                 agent=agent, replace=replace, on_error="skip" if skip_bad else "raise")
        except (LoadError, StoreError, ValueError) as exc:
            raise fail(exc, EXIT_USAGE) from exc
        except OSError as exc:
            raise fail(exc, EXIT_FAILURE) from exc
    say_skipped(result.skipped, path)
    for note in result.notes[:10]:
        console.print(f"[yellow]note:[/] {escape(str(note))}", highlight=False, soft_wrap=True)
    if len(result.notes) > 10:
        console.print(f"  ... and {len(result.notes) - 10} more notes", highlight=False)
    if result.unchanged:
        console.print(f"run {run!r} already holds {path} ({result.trials:,} trials); nothing imported")
    else:
        console.print(f"imported {plural(result.trials, 'trial')} ({plural(result.interactions, 'interaction')}, "
                      f"{plural(result.tool_calls, 'tool call')}) from {path} into run {run!r} of {store}")


def _plain(rec: dict[str, Any]) -> dict[str, Any]:
    from agentstats.cli.common import clean

    plain = {}
    for k, v in rec.items():
        if hasattr(v, "tolist"):
            v = v.tolist()
        elif hasattr(v, "isoformat"):
            v = v.isoformat()
        plain[k] = clean(v) if not isinstance(v, dict | list) else v
    return plain


for _cmd, _name in ((runs_list, "list"), (runs_show, "show"), (runs_export, "export"), (runs_delete, "delete")):
    from agentstats.cli.common import command as _command

    runs_app.command(name=_name)(_command(_cmd))

"""``agentstats import``: a trials file into the run store as a new run, in one transaction."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agentstats.cli.common import EXIT_FAILURE, EXIT_USAGE, console, fail, open_store, say_skipped
from agentstats.cli.options import ImportStoreOpt, InputOptions, input_options, store_run_opt

__all__ = ["import_"]


@input_options(run=False)  # a run store is not imported into another (export the run first)
def import_(
    path: Annotated[Path, typer.Argument(help="File to import (format detected from the content).", exists=True,
                                         dir_okay=True)],
    inputs: InputOptions,
    store_run: Annotated[str, store_run_opt("Name of the new run.")],
    store: ImportStoreOpt = Path("agentstats.duckdb"),
    description: Annotated[str | None, typer.Option(help="Description stored on the run.")] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", metavar="TAG", help="A tag (repeat for several).")] = None,
    replace: Annotated[bool, typer.Option("--replace", help="Replace a run of the same name.")] = False,
) -> None:
    """Import a trials file into the run store as a new run, in one transaction.

    Bad input (a malformed record, a duplicated trial key) is listed with its file, line and field, and nothing is
    written. Importing the same file again under the same name does nothing (a rerun after a crash is safe).
    """
    import warnings

    from rich.markup import escape

    from agentstats._util.text import plural
    from agentstats.records.problems import LoadError, LoadWarning
    from agentstats.store import StoreError
    from agentstats.store.importing import import_file

    with open_store(store, read_only=False) as st, warnings.catch_warnings():
        warnings.simplefilter("ignore", LoadWarning)  # said below, with the records
        try:
            result = import_file(st, path, run=store_run, format=inputs.format, description=description,
                                 tags=tag or [], replace=replace, **inputs.loader_options())
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
        console.print(f"run {store_run!r} already holds {path} ({result.trials:,} trials); nothing imported")
    else:
        console.print(f"imported {plural(result.trials, 'trial')} ({plural(result.interactions, 'interaction')}, "
                      f"{plural(result.tool_calls, 'tool call')}) from {path} into run {store_run!r} of {store}")

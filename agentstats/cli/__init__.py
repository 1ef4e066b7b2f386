"""Command line: ``agentstats simulate | estimate | fit | score | report | gate | loop | compare | calibrate``.

``agentstats import`` and ``agentstats runs`` manage the run store.

A thin layer: one module per command parses its options (declared once, in :mod:`agentstats.cli.options`), makes
its library call and hands the result to :mod:`agentstats.cli.render`; no statistics live here. Exit statuses are
listed in :mod:`agentstats.cli.common` (0 ok, 1 failure, 2 usage or input error, 3 diagnostics failed under
``--strict``, 69 a service down, 75 retry, 130 interrupted); every command is registered through
:func:`agentstats.cli.common.command`, which maps an interrupt to one line and 130 and an unexpected error to one
line and 1, and the app's :class:`~agentstats.cli.common.CommandGroup` says a usage error in one line, on the console
entry point and on typer's test runner alike.
"""

from __future__ import annotations

import sys

import typer

from agentstats._util.progress import enable_progress
from agentstats.cli.calibrate import calibrate
from agentstats.cli.common import EXIT_INTERRUPTED, Command, CommandGroup, command, console
from agentstats.cli.compare import compare
from agentstats.cli.estimate import estimate
from agentstats.cli.fit import fit
from agentstats.cli.gate import gate
from agentstats.cli.importing import import_
from agentstats.cli.loop import loop
from agentstats.cli.options import parse_k
from agentstats.cli.report import report
from agentstats.cli.runs import runs_app
from agentstats.cli.score import score
from agentstats.cli.simulate import simulate

__all__ = ["app", "main", "parse_k"]

app = typer.Typer(
    cls=CommandGroup,
    name="agentstats",
    help="agentstats: honest pass@k / pass^k for AI agent evaluations.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
for _command in (simulate, estimate, fit, score, report, gate, loop, compare, calibrate):
    app.command(name=_command.__name__, cls=Command)(command(_command))
app.command(name="import", cls=Command)(command(import_))
app.add_typer(runs_app, name="runs")


def main() -> None:  # pragma: no cover - console entry point
    """Run the command-line interface (console entry point); Ctrl-C exits 130 with one line.

    Long steps write progress lines to stderr (:mod:`agentstats._util.progress`): plain lines, fit for logs.
    """
    enable_progress()
    try:
        app()
    except KeyboardInterrupt:  # outside a command (while importing, parsing options)
        console.print("interrupted")
        sys.exit(EXIT_INTERRUPTED)

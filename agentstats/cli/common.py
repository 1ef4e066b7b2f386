"""What every command shares: the exit statuses, the consoles, one-line errors and the ``command`` wrapper.

Exit statuses (every command): 0 success, 1 the work failed, 2 usage or input error, 3 diagnostics failed under
``--strict``, 69 a service the command needs failed, 75 undecided (retry with more data), 130 interrupted (Ctrl-C),
143 terminated (SIGTERM, handled as Ctrl-C is: :mod:`agentstats._util.signals`).
:func:`command` wraps every command so that an interrupt (Ctrl-C, SIGTERM) is one line and status 130 / 143
however it surfaces,
and an unexpected error one line and status 1; :class:`CommandGroup` says a usage error (an unknown option, a value
that is not one of an option's choices) in one line and status 2. The options themselves are declared in
:mod:`agentstats.cli.options`.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import re
import signal
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import typer
import typer.core
import typer.exceptions
from rich.console import Console

from agentstats._util.options import option_style
from agentstats._util.signals import StopState, exit_status, stop_signals_raise

try:  # typer vendors click from 0.2x on; before, the exceptions are click's own
    from typer._click.exceptions import ClickException
except ImportError:  # pragma: no cover - older typer
    from click.exceptions import ClickException  # type: ignore[assignment]

__all__ = [
    "EXIT_DIAGNOSTICS",
    "EXIT_FAILURE",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_RETRY",
    "EXIT_TERMINATED",
    "EXIT_UNAVAILABLE",
    "EXIT_USAGE",
    "CommandGroup",
    "clean",
    "command",
    "console",
    "escape_controls",
    "fail",
    "load_counts",
    "load_trials",
    "notebook_errors",
    "open_store",
    "out",
    "say_skipped",
    "stem",
]

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_DIAGNOSTICS = 3
#: EX_TEMPFAIL (sysexits.h): undecided, try again with more data.
EXIT_RETRY = 75
#: EX_UNAVAILABLE (sysexits.h): a service the command needs (a model endpoint) failed after its retries.
EXIT_UNAVAILABLE = 69
#: 128 + SIGINT, the shell's convention for a command stopped by Ctrl-C.
EXIT_INTERRUPTED = 130
#: 128 + SIGTERM: a command stopped by ``kill``, a container stop or a CI timeout (handled as Ctrl-C is).
EXIT_TERMINATED = 143

#: C0 controls but line feed and tab, DEL, and C1 controls: what a terminal acts on (ESC starts ANSI and OSC
#: sequences: clear the screen, set the title, a hyperlink to any URL). Data never carries them to the terminal.
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def escape_controls(text: str) -> str:
    r"""Return ``text`` with every terminal control character written as its escape (ESC as ``\x1b``)."""
    return _CONTROLS.sub(lambda m: f"\\x{ord(m[0]):02x}", text)


class SafeConsole(Console):
    r"""A rich console that shows control characters in what it prints as escapes, never as terminal commands.

    The one place where data reaches the terminal: every command's tables, lines and errors go through the two
    consoles below, so an agent named ``\x1b[2J`` (clear screen) or carrying an OSC 8 hyperlink is shown as the
    characters it is. The console's own styling (its control segments and the styles it renders) is unchanged.
    """

    def _render_buffer(self, buffer: Any) -> str:
        from rich.segment import Segment

        return super()._render_buffer(
            seg if seg.control or not _CONTROLS.search(seg.text) else Segment(escape_controls(seg.text), seg.style)
            for seg in buffer)


# Piped output (CI logs, files) gets wide tables instead of rich's 80-column default.
console = SafeConsole(stderr=True, width=None if sys.stderr.isatty() else 160)
out = SafeConsole(width=None if sys.stdout.isatty() else 160)


def fail(exc: BaseException, code: int = EXIT_FAILURE) -> typer.Exit:
    """Print ``exc`` as one escaped error line and return the ``typer.Exit`` to raise with ``code``."""
    from rich.markup import escape

    from agentstats.llm.redact import redact

    console.print(f"[bold red]error:[/] {escape(redact(str(exc)))}", highlight=False, markup=True, soft_wrap=True)
    return typer.Exit(code)


class _PlainHelp:
    """Help that reads as the docs write it: an argument in capitals (``INPUT``, no braces), a flag without a type.

    typer writes a required argument ``{input}`` in the usage line and the type ``<bool>`` beside every flag
    (``--json <bool>``, ``--help <bool>``); an option that takes a value keeps its type or its choices.
    """

    def get_params(self, ctx: Any) -> list[Any]:
        """Return the parameters, with an argument's metavar in capitals and no metavar on a flag."""
        params = super().get_params(ctx)  # type: ignore[misc]
        for param in params:
            if isinstance(param, typer.core.TyperArgument) and param.metavar is None:
                param.metavar = (param.name or "").upper()
            elif isinstance(param, typer.core.TyperOption) and param.is_flag and param.metavar is None:
                param.metavar = ""
        return params


class Command(_PlainHelp, typer.core.TyperCommand):
    """A command of ``agentstats``: its help as :class:`_PlainHelp` writes it."""

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        """Return the usage line's pieces: ``[OPTIONS] INPUT``, an optional argument in brackets."""
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if isinstance(param, typer.core.TyperArgument):
                name = param.display_name_raw if param.required else f"[{param.display_name_raw}]"
                pieces.append(name + ("..." if param.nargs != 1 else ""))
            else:
                pieces.extend(param.get_usage_pieces(ctx))
        return pieces


class CommandGroup(_PlainHelp, typer.core.TyperGroup):
    """The command group of ``agentstats``: a usage error is one line, ``error: ...``, and exit status 2.

    Click's own presentation (a usage line, a hint and a framed message) is kept for one case: ``agentstats`` alone,
    which shows the help.
    """

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None, complete_var: str | None = None,
             standalone_mode: bool = True, windows_expand_args: bool = True, **extra: Any) -> Any:
        """Run the command line; a usage error is said in one line (see the class)."""
        call = functools.partial(super().main, args, prog_name, complete_var, windows_expand_args=windows_expand_args,
                                 **extra)
        if not standalone_mode:
            return call(standalone_mode=False)
        try:
            result = call(standalone_mode=False)
        except ClickException as exc:
            if type(exc).__name__ == "NoArgsIsHelpError":  # `agentstats` alone: the help, as click shows it
                return call(standalone_mode=True)
            message = exc.format_message().removeprefix("Value error, ").replace(": Value error, ", ": ")
            ctx = getattr(exc, "ctx", None)
            hint = f" (see {ctx.command_path} --help)" if ctx is not None else ""
            fail(RuntimeError(message + hint))
            sys.exit(exc.exit_code)
        except typer.Abort:
            console.print("Aborted.", highlight=False)
            sys.exit(EXIT_FAILURE)
        sys.exit(result if isinstance(result, int) else EXIT_OK)


def say_skipped(skipped: list[Any], path: Path, limit: int = 5) -> None:
    """Tell which records ``--skip-bad`` left out: how many, and the first few with their lines."""
    if not skipped:
        return
    from rich.markup import escape

    from agentstats._util.text import plural

    records = {(p.line, p.unit) for p in skipped}
    console.print(
        f"[yellow]skipped {plural(len(records), 'record')} ({plural(len(skipped), 'problem')}) in "
        f"{escape(str(path))}:[/]",
        highlight=False,
    )
    for p in skipped[:limit]:
        console.print(f"  {escape(str(p))}", highlight=False, soft_wrap=True)
    if len(skipped) > limit:
        console.print(f"  ... and {len(skipped) - limit} more", highlight=False)


def open_store(store: Path, *, read_only: bool) -> Any:
    """Open the run store for a command (``import``, ``runs``); a missing store to read or an unusable file exits 2."""
    from agentstats.store import RunStore, StoreError

    if read_only and not store.exists():
        raise fail(FileNotFoundError(f"no run store at {store} (agentstats import creates one)"), EXIT_USAGE)
    try:
        return RunStore(store, read_only=read_only)
    except (StoreError, ImportError, OSError) as exc:
        raise fail(exc, EXIT_USAGE) from exc


def load_trials(path: Path, fmt: str, opts: dict[str, Any]) -> Any:
    """Load trials from ``path`` for a command; input errors exit 2, the records ``--skip-bad`` left out are listed."""
    import warnings

    from rich.markup import escape

    from agentstats.io import LoadWarning
    from agentstats.io import load_trials as load_any_trials

    with console.status(f"loading {escape(str(path))} ..."):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", LoadWarning)  # each skipped record is listed below
                trials = load_any_trials(path, fmt, **opts)
        except (ValueError, OSError) as exc:
            raise fail(exc, EXIT_USAGE) from exc
    say_skipped(getattr(trials, "skipped", []), path)
    return trials


def load_counts(path: Path, fmt: str, opts: dict[str, Any]) -> Any:
    """Load counts from ``path`` for a command; input errors exit 2, skipped records and grid gaps are said once."""
    import warnings

    from rich.markup import escape

    from agentstats.io import LoadWarning
    from agentstats.io import load_counts as load_any_counts

    with console.status(f"loading {escape(str(path))} ..."):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", LoadWarning)  # said below, once
                counts = load_any_counts(path, format=fmt, **opts)
        except (ValueError, OSError) as exc:
            raise fail(exc, EXIT_USAGE) from exc
    say_skipped(counts.attrs.get("skipped") or [], path)
    excluded = counts.attrs.get("excluded_agents") or []
    if excluded:
        console.print(f"agents left out (--agents): {escape(', '.join(excluded))}", highlight=False)
    for note in [n for n in counts.attrs.get("notes") or [] if n.line is None][:5]:  # what the file left out
        console.print(f"[yellow]note:[/] {escape(str(note))}", highlight=False, soft_wrap=True)
    gaps = counts.attrs.get("gaps")
    if gaps is not None and gaps.n_cells:
        console.print(f"[yellow]note:[/] {escape(gaps.describe())}", highlight=False, soft_wrap=True)
    return counts


@contextlib.contextmanager
def notebook_errors() -> Iterator[None]:
    """Say how a notebook run (``report``, ``compare --out-dir``) ended: exit 130, 2, 69 or 1 with one line.

    Interrupted: the notebook's own message (where the previous report stays), 130; bad input or parameters
    (nothing was run): 2; a cell that found an LLM endpoint unavailable (``EndpointUnavailable``): 69; a failed cell
    or any other error: 1. The kernel's and papermill's log lines on an interrupt
    (nbclient's "Kernel died", asyncio's "Task exception was never retrieved") are silenced: the line said here is
    the whole story.
    """
    import logging

    from agentstats.report.inputs import ReportInputError
    from agentstats.report.notebook import ReportInterrupted
    from agentstats.report.params import ReportParameterError

    for noisy in ("asyncio", "papermill"):
        logging.getLogger(noisy).setLevel(logging.CRITICAL)
    try:
        yield
    except ReportInterrupted as exc:
        console.print(str(exc), highlight=False, markup=False, soft_wrap=True)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except (ReportInputError, ReportParameterError) as exc:  # bad input or parameters: nothing was run
        raise fail(exc, EXIT_USAGE) from None
    except (KeyboardInterrupt, typer.Exit):
        raise
    except Exception as exc:  # a failed cell (ReportError) or the machinery around it
        if getattr(exc, "ename", None) == "EndpointUnavailable":  # the judge went down mid-run: 69, as the loop
            raise fail(exc, EXIT_UNAVAILABLE) from exc
        raise fail(exc, EXIT_FAILURE) from exc


def command[F: Callable[..., Any]](fn: F) -> F:
    """Wrap a command: Ctrl-C gives one line and status 130, SIGTERM 143; an unexpected error one line and status 1.

    An interrupt can surface as something else: samplers and kernels catch ``KeyboardInterrupt`` and fail later
    (an ``IndexError`` from nutpie's empty trace, a ``SystemError`` from PyMC, a ``ZMQError`` from the report's
    kernel). So the wrapper installs its own SIGINT and SIGTERM handlers for the command's duration
    (:func:`agentstats._util.signals.stop_signals_raise`; SIGTERM raises ``Terminated``, a ``KeyboardInterrupt``,
    so every cleanup an interrupt does runs for it too), remembers that an
    interrupt happened, and whatever follows it (an exception, an exit status, or a normal return) ends as
    "interrupted" and 130. Usage errors and ``typer.Exit`` pass through unchanged. Set ``AGENTSTATS_DEBUG=1``
    to see the traceback of an unexpected error. Messages from the library name options as flags
    (:func:`agentstats._util.options.option_style`).
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with stop_signals_raise() as stop:
            return _run(fn, stop, args, kwargs)

    return wrapper  # type: ignore[return-value]


def _run(fn: Callable[..., Any], stop: StopState, args: Any, kwargs: Any) -> Any:
    """Run a command's function under :func:`command`'s rules (``stop``: which stop signal arrived)."""
    try:
        with option_style("cli"):  # messages from the library name --flags, not keyword arguments
            result = fn(*args, **kwargs)
    except KeyboardInterrupt as exc:
        raise _interrupted(stop.signum or getattr(exc, "signum", signal.SIGINT)) from None
    except BrokenPipeError:
        # the reader of stdout went away (`agentstats estimate ... | head`): the work is done, nothing to say;
        # point stdout at devnull so that Python's flush at exit does not fail again (Python docs, "signal")
        with contextlib.suppress(OSError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return None
    except (typer.Exit, typer.Abort, typer.exceptions.TyperException) as exc:  # exits and usage errors
        code = getattr(exc, "exit_code", None)
        if stop.hit and code not in (EXIT_INTERRUPTED, EXIT_TERMINATED):
            raise _interrupted(stop.signum) from None
        if stop.signum == signal.SIGTERM and code == EXIT_INTERRUPTED:  # said already; the status is SIGTERM's
            raise typer.Exit(EXIT_TERMINATED) from None
        raise  # (a command that already said "interrupted" is not said twice)
    except Exception as exc:
        if stop.hit:
            raise _interrupted(stop.signum) from None
        if os.environ.get("AGENTSTATS_DEBUG"):
            raise
        raise fail(
            RuntimeError(
                f"{type(exc).__name__}: {exc} (an unexpected error; AGENTSTATS_DEBUG=1 shows the traceback)"
            ),
            EXIT_FAILURE,
        ) from exc
    if stop.hit:
        raise _interrupted(stop.signum)
    return result


def _interrupted(signum: int | None = None) -> typer.Exit:
    """Say ``interrupted`` (``terminated`` for SIGTERM) and return the exit: 130, or 143 for SIGTERM."""
    signum = signal.SIGINT if signum is None else signum
    console.print("terminated" if signum == signal.SIGTERM else "interrupted", highlight=False)
    return typer.Exit(exit_status(signum))


def clean(v: Any) -> Any:
    """Make a value JSON-ready: NaN becomes None, numpy scalars become Python scalars."""
    if isinstance(v, float) and math.isnan(v):
        return None
    if hasattr(v, "item"):
        return clean(v.item())
    return v


def stem(path: Path) -> str:
    """File name without its data suffixes (``runs.jsonl.gz`` -> ``runs``)."""
    name = path.name
    for suffix in (".gz", ".jsonl", ".json", ".csv", ".parquet"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return name

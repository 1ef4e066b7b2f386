"""Shared pieces of the command line: consoles, option types, argument parsing, error exits.

Exit statuses (every command): 0 success, 1 the work failed, 2 usage or input error, 3 diagnostics failed under
``--strict``, 75 undecided (retry with more data), 130 interrupted. :func:`command` wraps every command so that
an interrupt (Ctrl-C) is one line and status 130 however it surfaces, and an unexpected error one line and
status 1.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
import typer.exceptions
from rich.console import Console

from agentstats._util.options import option_style
from agentstats.intervals import CI_PROB, check_ci, check_k_reach, default_ks
from agentstats.intervals import parse_k as parse_k_spec

__all__ = [
    "EXIT_DIAGNOSTICS",
    "EXIT_FAILURE",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_RETRY",
    "EXIT_UNAVAILABLE",
    "EXIT_USAGE",
    "UNDER_HALF_MARK",
    "RunOpt",
    "check_interval_options",
    "check_k",
    "check_output_path",
    "clean",
    "command",
    "command_ks",
    "console",
    "deprecated_alias",
    "fail",
    "load_counts",
    "loader_opts",
    "out",
    "parse_k",
    "stem",
]

#: Mark of a value that rests on under half of the input's tasks (`estimate`, `fit` tables).
UNDER_HALF_MARK = "*"

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

# Piped output (CI logs, files) gets wide tables instead of rich's 80-column default.
console = Console(stderr=True, width=None if sys.stderr.isatty() else 160)
out = Console(width=None if sys.stdout.isatty() else 160)

FormatOpt = Annotated[
    str,
    typer.Option(
        "--format",
        "-f",
        help="Input format: auto (detected from the content), jsonl (agentstats trials), json (a JSON array of "
        "them), tau_bench, runs (alias metr: run tables), counts (CSV / Parquet counts tables), fair_forge, "
        "fai_jsonl, bfcl (a BFCL results folder), tau2 (tau2-bench results), inspect (Inspect AI .eval / .json logs), "
        "otel (OpenTelemetry / OpenInference span exports), duckdb (a run store holding one run: agentstats import).",
    ),
]
#: The one default k of every command, said the same way in each command's --k help (agentstats.intervals.default_ks).
_DEFAULT_K_HELP = (
    "Default: 1 .. the median trials per task, at most 8 and at most the trials every agent reaches (tasks with "
    "fewer than k trials are dropped for that k and listed)."
)
EstimateKOpt = Annotated[
    str | None,
    typer.Option(
        "--k",
        help="k values: '1,2,4', a range '1..8', or both ('1..3,8'). " + _DEFAULT_K_HELP + " At most the largest "
        "trials per task (the unbiased estimators need k <= n).",
    ),
]
FitKOpt = Annotated[
    str | None,
    typer.Option(
        "--k",
        help="k values: '1,2,4', a range '1..8', or both. " + _DEFAULT_K_HELP + " k beyond an agent's trials per "
        "task is allowed (the model extrapolates) and the share of tasks with fewer than k trials is reported; at "
        "most 10 x the largest trials per task (or 8).",
    ),
]
ReportKOpt = Annotated[
    str | None,
    typer.Option(
        "--k",
        help="k values of the report's tables, the Bayesian ones included (its curves go on to k = 8 at least; "
        "consistency and contrasts use the largest k): '1,2,4', a range '1..8', or both. " + _DEFAULT_K_HELP
        + " At most the largest trials per task, as in estimate.",
    ),
]
CiProbOpt = Annotated[float, typer.Option("--ci-prob", help="Interval probability, in (0, 1).")]
CiKindOpt = Annotated[
    str,
    typer.Option("--ci-kind", help="Credible interval shape: eti (equal-tailed) or hdi (highest density)."),
]
AgentColOpt = Annotated[str | None, typer.Option(help="Run tables: column holding the agent name.")]
TaskColOpt = Annotated[str | None, typer.Option(help="Run tables: column holding the task id.")]
SuccessColOpt = Annotated[str | None, typer.Option(help="Run tables: column holding 0/1 success.")]
AgentOpt = Annotated[str | None, typer.Option(help="Agent name for single-agent files (tau-bench).")]
RunOpt = Annotated[
    str | None,
    typer.Option("--run", help="Run store (.duckdb, `agentstats import`): the run to read; default its only run."),
]
AgentsOpt = Annotated[
    str | None,
    typer.Option(
        "--agents",
        help="Agents to keep: names or shell patterns separated by commas; '!' before one excludes it. "
        "'a,b' keeps a and b; '!human' keeps all but human; 'gpt-*,!gpt-3.5*' mixes both. A name that matches "
        "no agent is an error.",
    ),
]
SkipBadOpt = Annotated[
    bool,
    typer.Option(
        "--skip-bad",
        help="Skip malformed records (each is listed with its line) instead of stopping on them. A file that "
        "no longer matches the manifest written with it (truncated or changed) is refused either way.",
    ),
]


JudgeOpt = Annotated[
    str,
    typer.Option(
        "--judge",
        help="Answer judge: deterministic (text/number matchers, no network) or openai (LLM judge through "
        "instructor + any OpenAI-compatible endpoint; API key from $OPENAI_API_KEY).",
    ),
]
BaseUrlOpt = Annotated[
    str | None,
    typer.Option(
        "--base-url", help="OpenAI-compatible base URL for --judge openai (default: $OPENAI_BASE_URL or OpenAI)."
    ),
]
JudgeModelOpt = Annotated[
    str | None,
    typer.Option(
        "--judge-model",
        help="The judge's LLM for --judge openai (default: $AGENTSTATS_JUDGE_MODEL or gpt-4o-mini).",
    ),
]
#: ``--model``, the old name of ``--judge-model`` (score, report): accepted with a deprecation note.
OldJudgeModelOpt = Annotated[
    str | None, typer.Option("--model", hidden=True, help="Deprecated: use --judge-model.")
]
ThresholdOpt = Annotated[
    float, typer.Option(min=0.0, max=1.0, help="An answer is correct when its score >= threshold.")
]
ToolThresholdOpt = Annotated[
    float,
    typer.Option(
        min=0.0,
        max=1.0,
        help="Tool calls pass when their overall score >= this (1.0: same tools as expected, no extra calls, "
        "every argument matched).",
    ),
]
RequireToolsOpt = Annotated[
    bool, typer.Option("--require-tools", help="A trial succeeds only if its tool calls pass too.")
]

def parse_k(spec: str | None) -> list[int] | None:
    """Read ``--k`` (:func:`agentstats.intervals.parse_k`: ``"1,2,4"``, ``"1..8"``, ``"1..3,8"``).

    Raises
    ------
    typer.BadParameter
        With the library's message (text that is not a k list, k out of range, too many values).
    """
    try:
        return parse_k_spec(spec)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None


def command_ks(ks: list[int] | None, counts: Any, command: str, source: str) -> list[int]:
    """Return a command's k: ``--k`` (parsed by :func:`parse_k`) checked against ``counts``, else the default.

    ``fit`` extrapolates (k up to :data:`agentstats.intervals.FIT_K_FACTOR` times the largest n); the others need
    k <= n (:func:`agentstats.intervals.check_k_reach`). The default is :func:`agentstats.intervals.default_ks`.

    Raises
    ------
    typer.Exit
        With status 2 and one line on k that the command cannot answer.
    """
    check_k(ks, counts, command, source)
    return ks if ks is not None else default_ks(counts)


def check_k(ks: list[int] | None, counts: Any, command: str, source: str) -> None:
    """Refuse k values a command cannot answer from ``counts`` (exit status 2, one line).

    ``fit`` extrapolates; ``estimate`` and ``report`` need k <= n (:func:`agentstats.intervals.check_k_reach`).
    """
    try:
        check_k_reach(ks, counts, extrapolate=command == "fit", source=source)
    except ValueError as exc:
        raise fail(typer.BadParameter(str(exc)), EXIT_USAGE) from None


def check_interval_options(
    *, n_boot: int | None = None, ci_prob: float | None = None, ci_kind: str | None = None
) -> None:
    """Refuse ``--n-boot``, ``--ci-prob`` and ``--ci-kind`` values the library refuses, naming the flag (exit 2).

    The rules are the library's (:func:`agentstats.estimators._checks.check_n_boot`: 0 or at least ``MIN_N_BOOT``;
    :func:`agentstats.intervals.check_ci`); checked here first so that the message names the flag, not a keyword of
    the Python function the command calls.
    """
    from agentstats.estimators._checks import MIN_N_BOOT

    if n_boot is not None and 0 < n_boot < MIN_N_BOOT:
        raise fail(
            typer.BadParameter(
                f"--n-boot must be 0 (no bootstrap) or >= {MIN_N_BOOT}, got {n_boot}: fewer resamples leave the "
                "interval's ends to one or two resampled means (default 2000)"
            ),
            EXIT_USAGE,
        )
    try:
        with option_style("cli"):
            check_ci(CI_PROB if ci_prob is None else ci_prob, ci_kind or "eti")
    except ValueError as exc:
        raise fail(typer.BadParameter(str(exc)), EXIT_USAGE) from None


def check_output_path(path: Path | None, flag: str, *, folder: bool = False, make_parents: bool = False) -> None:
    """Refuse an output path the command could not write to, naming the option (exit status 2), before any work.

    Parameters
    ----------
    path : Path or None
        The path given (``None``: option not given, nothing to check).
    flag : str
        The option, e.g. ``"--out"``.
    folder : bool
        ``True``: a folder the command creates when missing (with the folders above it); refused when it is a
        file, or when the nearest folder above it that exists is a file or not writable.
    make_parents : bool
        A file whose missing folders the command creates (``simulate --out``); otherwise a file in a folder that
        does not exist is refused.

    Raises
    ------
    typer.Exit
        With status 2 and one line: a file given as a folder or the other way round, a missing folder, a folder
        that cannot be written to.
    """
    if path is None:
        return

    def refuse(why: str) -> typer.Exit:
        return fail(typer.BadParameter(f"{flag} {path}: {why}"), EXIT_USAGE)

    if folder:
        if path.exists() and not path.is_dir():
            raise refuse("is a file; give a folder (it is created when missing)")
        target = path
    else:
        if path.is_dir():
            raise refuse("is a folder; give a file name")
        target = path.parent
        if not target.exists() and not make_parents:
            raise refuse(f"the folder {target} does not exist; create it first, or give a path in an existing folder")
    anchor = target
    while not anchor.exists() and anchor != anchor.parent:  # the nearest existing folder above (mkdir starts there)
        anchor = anchor.parent
    if not anchor.is_dir():
        raise refuse(f"{anchor} is a file, not a folder")
    if not os.access(anchor, os.W_OK | os.X_OK):
        raise refuse(f"cannot write in the folder {anchor} (permission denied)")


def loader_opts(
    agent: str | None,
    agent_col: str | None,
    task_col: str | None,
    success_col: str | None,
    skip_bad: bool = False,
    agents: str | None = None,
    run: str | None = None,
) -> dict[str, Any]:
    """Collect the loader keyword arguments that were given on the command line."""
    opts: dict[str, Any] = {"on_error": "skip"} if skip_bad else {}
    if agent is not None:
        opts["agent"] = agent
    if agent_col is not None:
        opts["agent_col"] = agent_col
    if task_col is not None:
        opts["task_col"] = task_col
    if success_col is not None:
        opts["success_col"] = success_col
    if agents is not None:
        opts["agents"] = agents
    if run is not None:
        opts["run"] = run
    return opts


def fail(exc: BaseException, code: int = EXIT_FAILURE) -> typer.Exit:
    """Print ``exc`` as one escaped error line and return the ``typer.Exit`` to raise with ``code``."""
    from rich.markup import escape

    console.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False, markup=True, soft_wrap=True)
    return typer.Exit(code)


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
    gaps = counts.attrs.get("gaps")
    if gaps is not None and gaps.n_cells:
        console.print(f"[yellow]note:[/] {escape(gaps.describe())}", highlight=False, soft_wrap=True)
    return counts


def deprecated_alias(
    new_value: Any, new_default: Any, old_value: Any, old_flag: str, new_flag: str, command_name: str
) -> Any:
    """Resolve an option given under its old name: a deprecation note, the old value unless the new one differs.

    Raises
    ------
    typer.Exit
        With status 2 when both spellings are given with different values.
    """
    if old_value is None:
        return new_value
    console.print(
        f"[yellow]note:[/] {old_flag} is deprecated in `agentstats {command_name}`; use {new_flag}",
        highlight=False,
    )
    if new_value != new_default and new_value != old_value:
        raise fail(typer.BadParameter(f"{old_flag} {old_value!r} and {new_flag} {new_value!r} disagree"), EXIT_USAGE)
    return old_value


def command[F: Callable[..., Any]](fn: F) -> F:
    """Wrap a command: Ctrl-C gives one line and status 130; an unexpected error one line and status 1.

    An interrupt can surface as something else: samplers and kernels catch ``KeyboardInterrupt`` and fail later
    (an ``IndexError`` from nutpie's empty trace, a ``SystemError`` from PyMC, a ``ZMQError`` from the report's
    kernel). So the wrapper installs its own SIGINT handler for the command's duration, remembers that an
    interrupt happened, and whatever follows it (an exception, an exit status, or a normal return) ends as
    "interrupted" and 130. Usage errors and ``typer.Exit`` pass through unchanged. Set ``AGENTSTATS_DEBUG=1``
    to see the traceback of an unexpected error.
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        interrupted = threading.Event()

        def on_sigint(signum: int, frame: Any) -> None:
            interrupted.set()
            raise KeyboardInterrupt

        old = None
        if threading.current_thread() is threading.main_thread():
            old = signal.signal(signal.SIGINT, on_sigint)
        try:
            with option_style("cli"):  # messages from the library name --flags, not keyword arguments
                result = fn(*args, **kwargs)
        except KeyboardInterrupt:
            raise _interrupted() from None
        except BrokenPipeError:
            # the reader of stdout went away (`agentstats estimate ... | head`): the work is done, nothing to say;
            # point stdout at devnull so that Python's flush at exit does not fail again (Python docs, "signal")
            with contextlib.suppress(OSError):
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, sys.stdout.fileno())
            return None
        except (typer.Exit, typer.Abort, typer.exceptions.TyperException) as exc:  # exits and usage errors
            if interrupted.is_set() and getattr(exc, "exit_code", None) != EXIT_INTERRUPTED:
                raise _interrupted() from None
            raise  # (a command that already said "interrupted" and exits 130 is not said twice)
        except Exception as exc:
            if interrupted.is_set():
                raise _interrupted() from None
            if os.environ.get("AGENTSTATS_DEBUG"):
                raise
            raise fail(
                RuntimeError(
                    f"{type(exc).__name__}: {exc} (an unexpected error; AGENTSTATS_DEBUG=1 shows the traceback)"
                ),
                EXIT_FAILURE,
            ) from exc
        finally:
            if old is not None:
                signal.signal(signal.SIGINT, old)
        if interrupted.is_set():
            raise _interrupted()
        return result

    return wrapper  # type: ignore[return-value]


def _interrupted() -> typer.Exit:
    console.print("interrupted", highlight=False)
    return typer.Exit(EXIT_INTERRUPTED)


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

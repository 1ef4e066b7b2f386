"""Shared pieces of the command line: consoles, option types, argument parsing, error exits.

Exit statuses (every command): 0 success, 1 the work failed, 2 usage or input error, 3 diagnostics failed under
``--strict``, 75 undecided (retry with more data), 130 interrupted.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

__all__ = [
    "EXIT_DIAGNOSTICS",
    "EXIT_FAILURE",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_RETRY",
    "EXIT_USAGE",
    "clean",
    "console",
    "fail",
    "load_counts",
    "loader_opts",
    "out",
    "parse_k",
    "stem",
]

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_DIAGNOSTICS = 3
#: EX_TEMPFAIL (sysexits.h): undecided, try again with more data.
EXIT_RETRY = 75
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
        help="Input format: auto, jsonl (agentstats trials), tau_bench, metr (run tables), counts, fair_forge, "
        "fai_jsonl.",
    ),
]
KOpt = Annotated[
    str | None,
    typer.Option(
        "--k",
        help="k values: '1,2,4' or a range '1..8'. Default: estimate, 1 .. each agent's smallest trials per task; "
        "report, 1 .. the median trials per task (tasks with fewer than k trials are dropped for that k, and listed); "
        "fit, 1..8 (k beyond an agent's smallest trials per task is marked extrapolated).",
    ),
]
AgentColOpt = Annotated[str | None, typer.Option(help="Run tables: column holding the agent name.")]
TaskColOpt = Annotated[str | None, typer.Option(help="Run tables: column holding the task id.")]
SuccessColOpt = Annotated[str | None, typer.Option(help="Run tables: column holding 0/1 success.")]
AgentOpt = Annotated[str | None, typer.Option(help="Agent name for single-agent files (tau-bench).")]
SkipBadOpt = Annotated[
    bool,
    typer.Option(
        "--skip-bad", help="Skip malformed records (they are counted and listed) instead of stopping on them."
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
ModelOpt = Annotated[
    str | None,
    typer.Option("--model", help="Judge model for --judge openai (default: $AGENTSTATS_JUDGE_MODEL or gpt-4o-mini)."),
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
    """Parse ``"1,2,4"`` or ``"1..8"`` (or a mix, ``"1..3,8"``) into a sorted list of positive ints."""
    if spec is None or spec.strip() == "":
        return None
    ks: set[int] = set()
    for part in spec.split(","):
        part = part.strip()
        try:
            if ".." in part:
                lo, hi = part.split("..", 1)
                ks.update(range(int(lo), int(hi) + 1))
            elif "-" in part[1:]:
                lo, hi = part.split("-", 1)
                ks.update(range(int(lo), int(hi) + 1))
            else:
                ks.add(int(part))
        except ValueError:
            raise typer.BadParameter(f"--k: cannot read {part!r}; use e.g. 1,2,4 or 1..8") from None
    if not ks or min(ks) < 1:
        raise typer.BadParameter("--k: values must be positive integers")
    return sorted(ks)


def loader_opts(
    agent: str | None,
    agent_col: str | None,
    task_col: str | None,
    success_col: str | None,
    skip_bad: bool = False,
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
    return opts


def fail(exc: BaseException, code: int = EXIT_FAILURE) -> typer.Exit:
    """Print ``exc`` as one escaped error line and return the ``typer.Exit`` to raise with ``code``."""
    from rich.markup import escape

    console.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False, markup=True, soft_wrap=True)
    return typer.Exit(code)


def load_counts(path: Path, fmt: str, opts: dict[str, Any]) -> Any:
    """Load counts from ``path`` for a command; input errors exit 2, skipped records are said once."""
    import warnings

    from agentstats.io import TrialLoadWarning, load_counts_any

    with console.status(f"loading {path} ..."):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", TrialLoadWarning)  # said below, once
                counts = load_counts_any(path, format=fmt, **opts)
        except (ValueError, OSError) as exc:
            raise fail(exc, 2) from exc
    skipped = counts.attrs.get("skipped") or []
    if skipped:
        from rich.markup import escape

        console.print(f"[yellow]skipped {len(skipped)} problem(s) in {path}[/], first: {escape(str(skipped[0]))}")
    return counts


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

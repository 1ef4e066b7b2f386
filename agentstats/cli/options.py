"""Options shared by commands, declared once: the input options as one decorator, :func:`input_options`.

A command decorated with ``@input_options`` takes one parameter ``inputs: InputOptions`` in place of six options:
``--format``, ``--agent``, ``--columns``, ``--agents``, ``--run`` and ``--skip-bad``. They are added to the
command's signature (typer reads options from it), after its arguments, and handed to the command as one
:class:`InputOptions`, whose :meth:`InputOptions.loader_options` are the keyword arguments of
:func:`agentstats.load`.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any

import typer

from agentstats.cli.common import EXIT_USAGE, AgentOpt, AgentsOpt, FormatOpt, RunOpt, SkipBadOpt, fail

__all__ = ["COLUMN_KEYS", "InputOptions", "input_options", "parse_columns"]

#: ``--columns`` keys and the loader options they set.
COLUMN_KEYS = {"agent": "agent_col", "task": "task_col", "success": "success_col"}

ColumnsOpt = Annotated[
    str | None,
    typer.Option(
        "--columns",
        metavar="agent=COL,task=COL,success=COL",
        help="Run tables: the columns holding the agent name, the task id and 0/1 success (any of the three), e.g. "
        "'agent=model,task=problem'.",
    ),
]


def parse_columns(text: str | None) -> dict[str, str]:
    """Read ``--columns agent=COL,task=COL,success=COL`` into loader options (``agent_col`` ...).

    Raises
    ------
    typer.Exit
        With status 2 and one line naming ``--columns``: an item without ``=``, an unknown key, a key given twice or
        an empty column name.
    """
    if text is None:
        return {}
    columns: dict[str, str] = {}
    for item in text.split(","):
        key, sep, column = (part.strip() for part in item.partition("="))
        if not sep or key not in COLUMN_KEYS or not column or COLUMN_KEYS[key] in columns:
            why = ("an empty column name" if sep and key in COLUMN_KEYS and not column
                   else f"{key} given twice" if COLUMN_KEYS.get(key) in columns
                   else "write agent=COL, task=COL and/or success=COL, separated by commas")
            raise fail(typer.BadParameter(f"--columns {text!r}: {why}"), EXIT_USAGE)
        columns[COLUMN_KEYS[key]] = column
    return columns


@dataclass(frozen=True)
class InputOptions:
    """The input options of a command: format and what to read of the input.

    Attributes
    ----------
    format : str
        ``--format``: a format name, or ``auto`` (detected from the content).
    agent : str or None
        ``--agent``: agent name for single-agent files (tau-bench).
    columns : dict of str to str
        ``--columns``: ``agent_col`` / ``task_col`` / ``success_col`` of a run table.
    agents : str or None
        ``--agents``: agents to keep (names or shell patterns, ``!`` excludes).
    run : str or None
        ``--run``: the run of a run store to read.
    skip_bad : bool
        ``--skip-bad``: skip malformed records instead of stopping on them.
    """

    format: str = "auto"
    agent: str | None = None
    columns: dict[str, str] = field(default_factory=dict)
    agents: str | None = None
    run: str | None = None
    skip_bad: bool = False

    def loader_options(self) -> dict[str, Any]:
        """Return the keyword arguments of :func:`agentstats.load` that were given (``format`` left out)."""
        opts: dict[str, Any] = {"on_error": "skip"} if self.skip_bad else {}
        if self.agent is not None:
            opts["agent"] = self.agent
        opts.update(self.columns)
        if self.agents is not None:
            opts["agents"] = self.agents
        if self.run is not None:
            opts["run"] = self.run
        return opts


def _option_parameters() -> list[inspect.Parameter]:
    kw = inspect.Parameter.KEYWORD_ONLY
    return [
        inspect.Parameter("format", kw, annotation=FormatOpt, default="auto"),
        inspect.Parameter("agent", kw, annotation=AgentOpt, default=None),
        inspect.Parameter("columns", kw, annotation=ColumnsOpt, default=None),
        inspect.Parameter("agents", kw, annotation=AgentsOpt, default=None),
        inspect.Parameter("run", kw, annotation=RunOpt, default=None),
        inspect.Parameter("skip_bad", kw, annotation=SkipBadOpt, default=False),
    ]


def input_options[F: Callable[..., Any]](fn: F) -> F:
    """Give a command the input options: ``--format --agent --columns --agents --run --skip-bad``.

    The command declares a parameter ``inputs: InputOptions`` (after its arguments); the six options take its place
    in the command's signature, and the command receives them as one :class:`InputOptions`.

    Raises
    ------
    TypeError
        When ``fn`` has no ``inputs`` parameter.
    """
    signature = inspect.signature(fn, eval_str=True)
    if "inputs" not in signature.parameters:
        raise TypeError(f"{fn.__name__}: @input_options needs a parameter `inputs: InputOptions`")
    added = _option_parameters()
    names = [p.name for p in added]
    params: list[inspect.Parameter] = []
    for p in signature.parameters.values():
        if p.name == "inputs":
            params += added
        else:  # typer reads options by keyword: keyword-only keeps the order valid after the added ones
            params.append(p.replace(kind=inspect.Parameter.KEYWORD_ONLY) if p.default is not p.empty else p)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        given = {name: kwargs.pop(name) for name in names if name in kwargs}
        columns = parse_columns(given.pop("columns", None))
        return fn(*args, inputs=InputOptions(columns=columns, **given), **kwargs)

    wrapper.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in params}
    return wrapper  # type: ignore[return-value]

"""How a message names an option: a Python keyword (``format=``) or a command-line flag (``--format``).

Messages built below the command line (a loader that cannot tell a file's format, say) advise which option to give.
The command line runs every command inside :func:`option_style` ``("cli")`` (:func:`agentstats.cli.common.command`),
so the same message text names ``--format`` / ``--columns agent=COL`` there and ``format=`` / ``agent_col=`` in Python.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from typing import Literal

__all__ = ["CLI_SPELLINGS", "COLUMN_KEYS", "LOADER_FLAGS", "LOADER_KEYS", "option_name", "option_style", "option_text"]

Style = Literal["python", "cli"]

#: The run-table columns a loader can be told: the key of ``--columns KEY=COL`` -> the keyword of
#: :func:`agentstats.load` (``--columns agent=model`` is ``agent_col="model"``). The one table: the command line's
#: ``--columns``, these messages, the report's loader options and its regenerate line read it.
COLUMN_KEYS: dict[str, str] = {"agent": "agent_col", "task": "task_col", "success": "success_col"}
#: The loader keywords a report passes on to :func:`agentstats.load` (its ``loader_options``) -> the command line's
#: flag that sets each, in the order the flags are written.
LOADER_FLAGS: dict[str, str] = {
    "agent": "--agent",
    **dict.fromkeys(COLUMN_KEYS.values(), "--columns"),
    "agents": "--agents",
    "run": "--run",
    "on_error": "--skip-bad",
}
LOADER_KEYS: tuple[str, ...] = tuple(LOADER_FLAGS)

#: Keywords whose command-line spelling is not ``--keyword-with-dashes``: the run-table columns are one option,
#: ``--columns agent=COL,task=COL,success=COL``, and ``on_error="skip"`` is ``--skip-bad``
#: (:mod:`agentstats.cli.options` declares them; a test checks that each names an option of the command line).
CLI_SPELLINGS: dict[str, str] = {
    **{keyword: f"--columns {key}=COL" for key, keyword in COLUMN_KEYS.items()},
    "on_error": "--skip-bad",
}

_STYLE: ContextVar[Style] = ContextVar("agentstats_option_style", default="python")
_SPELLINGS: ContextVar[Mapping[str, str]] = ContextVar("agentstats_option_spellings", default=CLI_SPELLINGS)


def option_name(name: str, value: str | None = None) -> str:
    """Name the option ``name`` (a Python keyword, e.g. ``"agent_col"``) as the caller knows it.

    Parameters
    ----------
    name : str
        The keyword argument's name.
    value : str, optional
        A value to show with it.

    Returns
    -------
    str
        Python: ``agent_col=`` or ``format='runs'``; command line: ``--format`` or ``--format runs``, and a keyword
        spelled otherwise there (:data:`CLI_SPELLINGS`, or the command's own, :func:`option_style`) as spelled:
        ``--columns agent=COL``, ``--columns agent=model``.
    """
    if _STYLE.get() == "cli":
        spelled = _SPELLINGS.get().get(name)
        if spelled is None:
            flag = "--" + name.replace("_", "-")
            return flag if value is None else f"{flag} {value}"
        if "=" in spelled and value is not None:  # "--columns agent=COL" -> "--columns agent=model"
            return spelled.rsplit("=", 1)[0] + "=" + value
        return spelled
    return f"{name}=" if value is None else f"{name}={value!r}"


def option_text(*, cli: str, python: str) -> str:
    """Return ``cli`` on the command line and ``python`` otherwise: advice that is not one option's name.

    For a message whose advice differs in form, not only in spelling (``--run-agents A,B`` on the command line,
    ``run_options=[{'agents': 'A'}, ...]`` in Python).
    """
    return cli if _STYLE.get() == "cli" else python


@contextlib.contextmanager
def option_style(style: Style, spellings: Mapping[str, str] | None = None) -> Iterator[None]:
    """Make :func:`option_name` use ``style`` (``"python"`` or ``"cli"``) inside the ``with`` block.

    Parameters
    ----------
    style : {"python", "cli"}
        How options are named.
    spellings : mapping of str to str, optional
        A command's own command-line spellings of keywords, added to those in force (``agentstats report`` gives
        ``judge_metric`` as ``-p judge_metric=VALUE``).

    Raises
    ------
    ValueError
        For another style.
    """
    if style not in ("python", "cli"):
        raise ValueError(f"option_style: style must be 'python' or 'cli', got {style!r}")
    token = _STYLE.set(style)
    names = _SPELLINGS.set({**_SPELLINGS.get(), **spellings}) if spellings else None
    try:
        yield
    finally:
        if names is not None:
            _SPELLINGS.reset(names)
        _STYLE.reset(token)

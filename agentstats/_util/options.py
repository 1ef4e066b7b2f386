"""How a message names an option: a Python keyword (``format=``) or a command-line flag (``--format``).

Messages built below the command line (a loader that cannot tell a file's format, say) advise which option to give.
The command line runs every command inside :func:`option_style` ``("cli")`` (:func:`agentstats.cli.common.command`),
so the same message text names ``--format`` / ``--agent-col`` there and ``format=`` / ``agent_col=`` in Python.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Literal

__all__ = ["option_name", "option_style", "option_text"]

Style = Literal["python", "cli"]

_STYLE: ContextVar[Style] = ContextVar("agentstats_option_style", default="python")


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
        Python: ``agent_col=`` or ``format='runs'``; command line: ``--agent-col`` or ``--format runs``.
    """
    if _STYLE.get() == "cli":
        flag = "--" + name.replace("_", "-")
        return flag if value is None else f"{flag} {value}"
    return f"{name}=" if value is None else f"{name}={value!r}"


def option_text(*, cli: str, python: str) -> str:
    """Return ``cli`` on the command line and ``python`` otherwise: advice that is not one option's name.

    For a message whose advice differs in form, not only in spelling (``--run-agents A,B`` on the command line,
    ``run_options=[{'agents': 'A'}, ...]`` in Python).
    """
    return cli if _STYLE.get() == "cli" else python


@contextlib.contextmanager
def option_style(style: Style) -> Iterator[None]:
    """Make :func:`option_name` use ``style`` (``"python"`` or ``"cli"``) inside the ``with`` block.

    Raises
    ------
    ValueError
        For another style.
    """
    if style not in ("python", "cli"):
        raise ValueError(f"option_style: style must be 'python' or 'cli', got {style!r}")
    token = _STYLE.set(style)
    try:
        yield
    finally:
        _STYLE.reset(token)

"""Number and interval formats shared by the report's tables (:mod:`.tables`) and readings (:mod:`.prose`)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from agentstats.intervals import ci_percent, table_ci_prob

__all__ = ["ci_label", "fmt_ci", "interval", "num", "plural"]


def fmt_ci(lo: float, hi: float) -> str:
    """Write an interval with two decimals, ``[0.12, 0.34]``; ``[n/a]`` when an end is missing."""
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return "[n/a]"
    return f"[{lo:.2f}, {hi:.2f}]"


def ci_label(table: pd.DataFrame) -> str:
    """Return the interval probability of a result table as text (``"95%"``), from its ``ci_prob`` column or attrs."""
    prob = table_ci_prob(table)
    return "per-row (ci_prob)" if prob is None else ci_percent(prob)


def plural(count: int, word: str) -> str:
    """``"1 task"``, ``"2 tasks"`` (no thousands separator: the report's tables write counts the same way)."""
    return f"{count} {word}{'' if count == 1 else 's'}"


def num(x: float, digits: int = 3) -> str:
    """``x`` rounded to ``digits`` decimals, without a sign on a value that rounds to zero ("0.000", not "-0.000")."""
    if not np.isfinite(x):
        return "n/a"
    text = f"{x:.{digits}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def interval(lo: float, hi: float, digits: int = 3) -> str:
    """``[lo, hi]`` with :func:`num` for each end."""
    return f"[{num(lo, digits)}, {num(hi, digits)}]"

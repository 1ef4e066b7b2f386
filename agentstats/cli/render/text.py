"""Formatting shared by the command line's tables: probabilities, interval labels, JSON-ready values."""

from __future__ import annotations

import json
from typing import Any

from agentstats.cli.common import clean, out

__all__ = ["UNDER_HALF_MARK", "fmt", "jsonable", "print_json", "prob_text", "records"]

#: Mark of a value that rests on under half of the input's tasks (`estimate`, `fit` tables).
UNDER_HALF_MARK = "*"


def prob_text(x: float) -> str:
    """Format a probability with 3 decimals, never as an exact 0 or 1 it is not (``<0.001``, ``>0.999``)."""
    if x != x:  # NaN
        return "n/a"
    if 0.0 < x < 0.0005:
        return "<0.001"
    if 0.9995 <= x < 1.0:
        return ">0.999"
    return f"{x:.3f}"


def fmt(x: Any) -> str:
    """Three decimals; ``n/a`` for a missing value; a value that rounds to zero is ``0.000``, never ``-0.000``."""
    if x is None or x != x:
        return "n/a"
    text = f"{x:.3f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def jsonable(v: Any) -> Any:
    """JSON-ready value: NaN and missing become None, numpy scalars Python scalars, lists and dicts recursively."""
    if isinstance(v, dict):
        return {str(key): jsonable(val) for key, val in v.items()}
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    if v is None:
        return None
    try:
        import pandas as pd

        if pd.isna(v):
            return None
    except (TypeError, ValueError):
        pass
    return clean(v)


def records(table: Any, columns: Any = None) -> list[dict[str, Any]]:
    """Return the rows of a table as JSON-ready records (of ``columns``, default every column)."""
    cols = list(table.columns) if columns is None else list(columns)
    return [{c: jsonable(row[c]) for c in cols} for _, row in table.iterrows()]


def print_json(payload: Any) -> None:
    """Print a payload as JSON on stdout."""
    out.print_json(json.dumps(payload, default=str))

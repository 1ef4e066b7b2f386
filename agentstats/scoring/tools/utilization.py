"""Result utilization: whether the results of an agent's tool calls are used downstream.

A heuristic read off the data (the final answer and later calls' arguments); see :func:`result_utilization`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from agentstats.records.trial import ToolCall
from agentstats.scoring.tools.matching import try_json

__all__ = ["result_utilization"]

_NUM_TYPES = (int, float)

_NUM_RE = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?")


def _numbers_in(text: str) -> list[float]:
    out = []
    for m in _NUM_RE.finditer(text):
        try:
            out.append(float(m.group().replace(",", "")))
        except ValueError:
            pass
    return out


def _salient(v: Any, out: list[Any], depth: int = 0) -> None:
    if depth > 6 or len(out) > 200:
        return
    if isinstance(v, bool) or v is None:
        return
    if isinstance(v, _NUM_TYPES):
        if math.isfinite(v):
            out.append(float(v))
        return
    if isinstance(v, str):
        s = v.strip()
        if not s:
            return
        parsed = try_json(s) if s[:1] in "{[" else None
        if isinstance(parsed, dict | list):
            _salient(parsed, out, depth + 1)
            return
        num = _try_float(s)
        if num is not None:
            out.append(num)
        elif len(s) >= 2:
            out.append(s.lower())
        return
    if isinstance(v, Mapping):
        for x in v.values():
            _salient(x, out, depth + 1)
        return
    if isinstance(v, list | tuple):
        for x in v:
            _salient(x, out, depth + 1)


def _try_float(s: str) -> float | None:
    try:
        f = float(s.replace(",", ""))
    except ValueError:
        return None
    return f if math.isfinite(f) else None


def _value_used(vals: list[Any], text: str, text_nums: list[float], rel_tol: float) -> bool:
    for v in vals:
        if isinstance(v, float):
            for t in text_nums:
                if math.isclose(v, t, rel_tol=rel_tol, abs_tol=1e-9):
                    return True
                # rounded in the answer (e.g. 3.14159 -> 3.14): same value at the answer's precision
                if t != 0 and abs(v - t) <= 0.005 * max(1.0, abs(t)) and abs(v) >= 1e-3 and _rounds_to(v, t):
                    return True
        elif v in text:
            return True
    return False


def _rounds_to(v: float, t: float) -> bool:
    for nd in range(0, 7):
        if round(v, nd) == t:
            return True
    return False


def result_utilization(
    calls: Sequence[ToolCall],
    final_answer: str | None = None,
    *,
    rel_tol: float = 1e-6,
) -> float | None:
    """Share of result-bearing calls whose result values reappear downstream.

    A call's result is *used* when one of its salient values appears in the final answer or in the
    arguments of a later call. Salient values: every finite number (not booleans) and every string of at
    least two characters found anywhere in the result (JSON strings are parsed first). Strings match as
    case-insensitive substrings of the answer (or equal a later argument string); numbers match any number
    written in the answer (thousands separators allowed) within ``rel_tol`` or after rounding the result to
    the answer's shown precision.

    Parameters
    ----------
    calls : sequence of ToolCall
        The actual calls, in the order they were made (``result`` set where recorded).
    final_answer : str, optional
        The agent's final answer text.
    rel_tol : float
        Relative tolerance for numbers.

    Returns
    -------
    float or None
        ``used / with_result`` over calls with a non-empty result that have something after them (a final
        answer or a later call); ``None`` when there is no such call.
    """
    answer = (final_answer or "").lower()
    answer_nums = _numbers_in(answer) if answer else []
    with_result = 0
    used = 0
    n = len(calls)
    for i, c in enumerate(calls):
        if c.result is None:
            continue
        vals: list[Any] = []
        _salient(c.result, vals)
        if not vals:
            continue
        later_vals: list[Any] = []
        for later in calls[i + 1:]:
            if isinstance(later.arguments, dict):
                _salient(later.arguments, later_vals)
        if not answer and not later_vals and i == n - 1:
            continue
        with_result += 1
        later_text = " ".join(x for x in later_vals if isinstance(x, str))
        later_nums = [x for x in later_vals if isinstance(x, float)]
        if (answer and _value_used(vals, answer, answer_nums, rel_tol)) or (
            later_vals and _value_used(vals, later_text, later_nums, rel_tol)
        ):
            used += 1
    if with_result == 0:
        return None
    return used / with_result



"""Pairing actual with expected calls: the argument score of one pair and the optimal one-to-one assignment.

Pairs are chosen by an optimal assignment (Kuhn 1955 / Munkres 1957, the Hungarian method, through
:func:`scipy.optimize.linear_sum_assignment`; tiny cases are solved by exact enumeration, which returns the same
optimum), so duplicated calls are handled and the result does not depend on the order of either list.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from scipy.optimize import linear_sum_assignment

from agentstats.records.trial import ToolCall
from agentstats.scoring.tools.markers import AnyOf
from agentstats.scoring.tools.matching import ArgMatchOptions, bfcl_type_ok, match

__all__ = ["ArgDiff", "assign", "lis_length", "pair_score"]


@dataclass(slots=True)
class ArgDiff:
    """One argument that did not match (``path`` is a JSON path such as ``$.filters[0].name``)."""

    path: str
    reason: Literal["missing", "extra", "value", "type", "malformed"]
    expected: Any = None
    actual: Any = None


def pair_score(
    actual: ToolCall,
    exp_args: Mapping[str, Any],
    o: ArgMatchOptions,
    spec: Mapping[str, Any] | None,
    want_diffs: bool,
) -> tuple[float, set[str], list[ArgDiff]]:
    """Share of argument keys that match, the lenient rules used, and the diffs.

    Parameters
    ----------
    actual : ToolCall
        The agent's call (a malformed call scores 0).
    exp_args : mapping
        Expected arguments with :class:`~agentstats.scoring.tools.markers.AnyOf` markers.
    o : ArgMatchOptions
    spec : mapping, optional
        The tool's JSON-Schema ``parameters`` (only for ``o.type_rules``).
    want_diffs : bool
        Collect :class:`ArgDiff` entries.

    Returns
    -------
    (float, set of str, list of ArgDiff)
        ``matched keys / compared keys`` (1 when nothing is compared), the lenient rules of the matched
        keys, the diffs.
    """
    fired: set[str] = set()
    diffs: list[ArgDiff] = []
    a_args = actual.arguments
    if actual.parse_error is not None or not isinstance(a_args, dict):
        if want_diffs:
            diffs.append(ArgDiff("$", "malformed", None, actual.arguments_raw))
        return 0.0, fired, diffs
    props = spec.get("properties", {}) if spec is not None else None
    total = 0
    good = 0
    for k, ev in exp_args.items():
        if k not in a_args:
            if type(ev) is AnyOf and ev.optional:
                fired.add("optional_param_missing")
                continue
            total += 1
            if want_diffs:
                diffs.append(ArgDiff(f"$.{k}", "missing", ev, None))
            continue
        total += 1
        av = a_args[k]
        if props is not None and o.type_rules == "bfcl":
            prop = props.get(k)
            if prop is None or not bfcl_type_ok(av, prop, ev):
                if want_diffs:
                    diffs.append(ArgDiff(f"$.{k}", "type", ev, av))
                continue
        sub: set[str] = set()
        if match(av, ev, o, sub):
            good += 1
            fired |= sub
        elif want_diffs:
            diffs.append(ArgDiff(f"$.{k}", "value", ev, av))
    if o.extra_args == "mismatch":
        for k in a_args:
            if k not in exp_args:
                total += 1
                if want_diffs:
                    diffs.append(ArgDiff(f"$.{k}", "extra", None, a_args[k]))
    score = 1.0 if total == 0 else good / total
    return score, fired, diffs


def lis_length(seq: Sequence[int]) -> int:
    """Length of the longest strictly increasing subsequence (patience sorting, O(n log n))."""
    tails: list[int] = []
    for x in seq:
        i = bisect.bisect_left(tails, x)
        if i == len(tails):
            tails.append(x)
        else:
            tails[i] = x
    return len(tails)


def assign(cost: list[list[float]], na: int, ne: int) -> list[tuple[int, int]]:
    """Minimum-cost one-to-one assignment of ``min(na, ne)`` pairs; rows = actual, columns = expected.

    Exact enumeration when ``na * ne <= 9``, else :func:`scipy.optimize.linear_sum_assignment`.
    """
    if na == 1 and ne == 1:
        return [(0, 0)]
    if na * ne <= 9:
        best_cost = float("inf")
        best: list[tuple[int, int]] = []
        if na <= ne:
            for cols in itertools.permutations(range(ne), na):
                c = sum(cost[i][j] for i, j in enumerate(cols))
                if c < best_cost - 1e-12:
                    best_cost, best = c, list(enumerate(cols))
        else:
            for rows in itertools.permutations(range(na), ne):
                c = sum(cost[i][j] for j, i in enumerate(rows))
                if c < best_cost - 1e-12:
                    best_cost, best = c, [(i, j) for j, i in enumerate(rows)]
        return best
    r, c = linear_sum_assignment(np.asarray(cost, dtype=float))
    return list(zip(r.tolist(), c.tolist(), strict=True))

"""Deterministic tool-call correctness: actual calls against expected calls.

The scorer pairs actual and expected calls one-to-one by an optimal assignment (Kuhn 1955 / Munkres 1957,
the Hungarian method, through :func:`scipy.optimize.linear_sum_assignment`; tiny cases are solved by exact
enumeration, which returns the same optimum), so duplicated calls are handled and the result does not depend
on the order of either list. Only calls with the same tool name are ever paired.

Components of a :class:`ToolScore` (each in ``[0, 1]`` or ``None`` = not applicable):

``selection``
    ``m / max(n_actual, n_expected)`` where ``m`` is the number of name-matched pairs: 1 exactly when the
    multisets of tool names agree; extra and missing calls both lower it.
``parameters``
    ``sum(param_score over pairs) / n_expected``: the share of expected calls whose arguments were
    reproduced (a pair's ``param_score`` is the share of its argument keys that match). ``None`` when nothing
    was expected.
``sequence``
    Only when order matters: the longest common subsequence of the pairs taken in actual order and in
    expected order (computed as a longest increasing subsequence), divided by ``n_expected``. ``None``
    when order does not matter or nothing was expected.
``utilization``
    Share of result-bearing calls whose result is *used* downstream (see :func:`result_utilization`).
    ``None`` when no call recorded a result or nothing comes after the calls; a user-given boolean is the
    fallback.

``overall`` is the weighted mean of the applicable components, weights renormalized over them, so it stays in
``[0, 1]``; ``passed = overall >= tool_threshold``. ``precision``, ``recall`` and ``f1`` count *correct*
calls: pairs with the same name and every argument matched.

Edge-case conventions (documented in ``docs/scoring.md``):

* nothing expected, nothing called: every count-based value is 1, ``overall = 1``, ``passed = True`` and
  ``not_applicable = True``;
* expected but none called: ``selection = parameters = recall = precision = f1 = 0`` (``sequence = 0``
  when order matters), ``overall = 0``: a failure, never "not applicable";
* called but nothing expected: ``selection = 0``, ``precision = 0``, ``recall = 1`` (nothing was missed),
  ``f1 = 0``, ``parameters = sequence = None``, so ``overall = 0`` unless the user weights only
  ``utilization``.
"""

from __future__ import annotations

import itertools
import json
import math
import re
import string
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from scipy.optimize import linear_sum_assignment

from agentstats.schema import ToolCall, ToolSpec, Trial

__all__ = [
    "DEFAULT_WEIGHTS",
    "AnyOf",
    "ArgDiff",
    "ArgMatchOptions",
    "PairDetail",
    "StringNormalization",
    "ToolScore",
    "TrialToolScores",
    "bfcl_options",
    "from_possible_answer",
    "match_value",
    "result_utilization",
    "score_tool_calls",
    "score_trial_tools",
]

#: Default component weights. Utilization is a heuristic read off the data, so it is reported but carries
#: no weight unless asked for.
DEFAULT_WEIGHTS: dict[str, float] = {"selection": 1.0, "parameters": 1.0, "sequence": 1.0, "utilization": 0.0}

LENIENT_RULES = (
    "numeric_tolerance",
    "string_normalization",
    "alternative_accepted",
    "optional_param_missing",
    "json_string_parsed",
)


# --------------------------------------------------------------------------------------------------------
# expected-value markers
# --------------------------------------------------------------------------------------------------------
class AnyOf:
    """An expected argument value with acceptable alternatives.

    Parameters
    ----------
    values : iterable
        Acceptable values, canonical one first. Each may itself contain markers (nested dicts/lists).
    optional : bool, default False
        The parameter may be left out altogether (BFCL marks this with ``""`` in its acceptable list).

    Notes
    -----
    In JSON (trial files) write ``{"$any_of": [v1, v2], "$optional": true}``; :func:`score_tool_calls`
    turns such dicts into ``AnyOf`` on the fly. ``AnyOf([], optional=True)`` means "optional, and any
    given value is wrong", which is what BFCL's ``[""]`` means.
    """

    __slots__ = ("optional", "values")

    def __init__(self, values: Iterable[Any], optional: bool = False) -> None:
        self.values = tuple(values)
        self.optional = bool(optional)

    def __repr__(self) -> str:
        opt = ", optional=True" if self.optional else ""
        return f"AnyOf({list(self.values)!r}{opt})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AnyOf) and self.values == other.values and self.optional == other.optional

    def __hash__(self) -> int:
        return hash((self.values, self.optional))

    def to_json(self) -> dict[str, Any]:
        """JSON form ``{"$any_of": [...], "$optional": bool}``."""
        return {"$any_of": [_to_json(v) for v in self.values], "$optional": self.optional}


def _to_json(v: Any) -> Any:
    if isinstance(v, AnyOf):
        return v.to_json()
    if isinstance(v, dict):
        return {k: _to_json(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_to_json(x) for x in v]
    return v


def _from_marker(v: Any) -> Any:
    """Turn JSON ``{"$any_of": ...}`` dicts into :class:`AnyOf` (recursively); other values unchanged."""
    if isinstance(v, dict):
        if "$any_of" in v:
            return AnyOf([_from_marker(x) for x in v["$any_of"]], optional=bool(v.get("$optional", False)))
        if "$optional" in v and len(v) == 1:
            return AnyOf([], optional=True)
        return {k: _from_marker(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_from_marker(x) for x in v]
    return v


def from_possible_answer(params: Mapping[str, Any], *, required: Iterable[str] = ()) -> dict[str, Any]:
    """Convert BFCL ``possible_answer`` parameters into expected arguments with :class:`AnyOf` markers.

    Parameters
    ----------
    params : mapping
        ``{param: [acceptable values]}`` as in BFCL's ``possible_answer`` files (Patil et al., Berkeley
        Function Calling Leaderboard, 2024). ``""`` in a top-level list marks the parameter optional.
        Dict alternatives map each key to a list of acceptable values again (recursively); inside such
        dicts ``""`` is a literal value, as BFCL's ``dict_checker`` treats it. A top-level ``""`` also stays
        an acceptable value (last), since BFCL accepts an explicit ``""``.
    required : iterable of str
        Parameters the tool spec lists as required: for these a ``""`` does *not* make them optional
        (BFCL checks required parameters before it looks at the acceptable list).

    Returns
    -------
    dict
        ``{param: AnyOf(values, optional=...)}``.
    """
    req = set(required)
    out: dict[str, Any] = {}
    for name, alts in params.items():
        if not isinstance(alts, list):
            alts = [alts]
        has_empty = any(isinstance(a, str) and a == "" for a in alts)
        optional = has_empty and name not in req
        # "" stays an acceptable *value* too: BFCL's checker accepts a model that passes "" explicitly
        vals = [_convert_alt(a) for a in alts if not (isinstance(a, str) and a == "")] + ([""] if has_empty else [])
        out[name] = AnyOf(vals, optional=optional)
    return out


def _convert_alt(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: (AnyOf([_convert_alt(a) for a in x]) if isinstance(x, list) else _convert_alt(x))
                for k, x in v.items()}
    if isinstance(v, list):
        return [_convert_alt(x) for x in v]
    return v


# --------------------------------------------------------------------------------------------------------
# options
# --------------------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class StringNormalization:
    """How strings are normalized before a lenient comparison.

    Parameters
    ----------
    lowercase : bool
        Case-insensitive comparison.
    collapse_whitespace : bool
        Strip and collapse runs of whitespace to one space.
    remove_chars : str
        Characters deleted before comparing (e.g. ``" ,./-_*^"`` for BFCL's ``standardize_string``).
    remove_punctuation : bool
        Delete every character of :data:`string.punctuation`.
    unify_quotes : bool
        Map ``'`` to ``"`` (BFCL does).
    """

    lowercase: bool = True
    collapse_whitespace: bool = True
    remove_chars: str = ""
    remove_punctuation: bool = False
    unify_quotes: bool = False

    def __call__(self, s: str) -> str:
        """Normalize one string by the configured rules."""
        if self.unify_quotes:
            s = s.replace("'", '"')
        if self.lowercase:
            s = s.lower()
        chars = self.remove_chars + (string.punctuation if self.remove_punctuation else "")
        if chars:
            s = s.translate(_deletion_table(chars))
        if self.collapse_whitespace:
            s = " ".join(s.split())
        return s


_TABLES: dict[str, dict[int, None]] = {}


def _deletion_table(chars: str) -> dict[int, None]:
    t = _TABLES.get(chars)
    if t is None:
        t = _TABLES[chars] = str.maketrans("", "", chars)
    return t


@dataclass(frozen=True, slots=True)
class ArgMatchOptions:
    """How argument values are compared.

    Parameters
    ----------
    abs_tol, rel_tol : float
        Numeric tolerance: ints/floats ``a, b`` match when ``|a-b| <= max(abs_tol, rel_tol*max(|a|,|b|))``
        (the rule of :func:`math.isclose`). Exact numeric equality (``5 == 5.0``) is never lenient;
        booleans never equal numbers (``True != 1``).
    string_normalization : StringNormalization or None
        Normalization for a second, lenient string comparison; ``None`` compares strings exactly.
    parse_json_strings : bool
        When a value is a string and the expected value is a dict or list, try ``json.loads`` on it.
    extra_args : {"mismatch", "ignore"}
        Whether an argument the expected call does not name counts against the pair.
    type_rules : {None, "bfcl"}
        ``"bfcl"``: also check each value's type against the tool spec with BFCL's AST-checker rules
        (Python types from the spec's type names; an int is accepted where a float is expected; array items
        must have the item type or the type of the acceptable list's elements). Needs ``tools``.
    """

    abs_tol: float = 0.0
    rel_tol: float = 0.0
    string_normalization: StringNormalization | None = None
    parse_json_strings: bool = True
    extra_args: Literal["mismatch", "ignore"] = "mismatch"
    type_rules: Literal["bfcl"] | None = None


#: BFCL's ``standardize_string``: delete `` ,./-_*^``, lowercase, ``'`` -> ``"``.
BFCL_STRING_NORMALIZATION = StringNormalization(
    lowercase=True, collapse_whitespace=False, remove_chars=" ,./-_*^", unify_quotes=True
)


def bfcl_options() -> ArgMatchOptions:
    """Argument options matching BFCL's AST checker (gorilla ``eval_checker/checker.py``, 2024-08).

    Exact numeric comparison, BFCL's string standardization, no JSON-string parsing, extra arguments
    count against the call, and BFCL's type rules against the tool specs.
    """
    return ArgMatchOptions(
        string_normalization=BFCL_STRING_NORMALIZATION,
        parse_json_strings=False,
        extra_args="mismatch",
        type_rules="bfcl",
    )


# --------------------------------------------------------------------------------------------------------
# results
# --------------------------------------------------------------------------------------------------------
@dataclass(slots=True)
class ArgDiff:
    """One argument that did not match (``path`` is a JSON path such as ``$.filters[0].name``)."""

    path: str
    reason: Literal["missing", "extra", "value", "type", "malformed"]
    expected: Any = None
    actual: Any = None


@dataclass(slots=True)
class PairDetail:
    """One paired (actual, expected) call: indices into the input lists, its argument score and diffs."""

    actual_index: int
    expected_index: int
    name: str
    param_score: float
    correct: bool
    diffs: list[ArgDiff] = field(default_factory=list)


@dataclass(slots=True)
class ToolScore:
    """Tool-call correctness of one list of actual calls against one list of expected calls.

    See the module docstring for the definition of every component and the edge-case conventions.
    ``pairs`` hold the name-matched pairs; ``unmatched_actual`` / ``unmatched_expected`` the indices left
    over; ``lenient_rules_fired`` the lenient comparison rules that made some argument match.
    """

    selection: float
    parameters: float | None
    sequence: float | None
    utilization: float | None
    overall: float
    passed: bool
    precision: float
    recall: float
    f1: float
    n_actual: int
    n_expected: int
    n_correct: int
    pairs: list[PairDetail]
    unmatched_actual: list[int]
    unmatched_expected: list[int]
    lenient_rules_fired: list[str]
    not_applicable: bool = False
    malformed_actual: list[int] = field(default_factory=list)
    utilization_source: Literal["data", "user", None] = None

    @property
    def matched_pairs(self) -> list[tuple[int, int]]:
        """``(actual_index, expected_index)`` of every name-matched pair."""
        return [(p.actual_index, p.expected_index) for p in self.pairs]

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form (for ``scored.jsonl``)."""
        return {
            "selection": self.selection,
            "parameters": self.parameters,
            "sequence": self.sequence,
            "utilization": self.utilization,
            "overall": self.overall,
            "passed": self.passed,
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "n_actual": self.n_actual,
            "n_expected": self.n_expected,
            "n_correct": self.n_correct,
            "pairs": [
                {"actual_index": p.actual_index, "expected_index": p.expected_index, "name": p.name,
                 "param_score": p.param_score, "correct": p.correct,
                 "diffs": [{"path": d.path, "reason": d.reason, "expected": _to_json(d.expected),
                            "actual": d.actual} for d in p.diffs]}
                for p in self.pairs
            ],
            "unmatched_actual": self.unmatched_actual,
            "unmatched_expected": self.unmatched_expected,
            "lenient_rules_fired": self.lenient_rules_fired,
            "not_applicable": self.not_applicable,
            "malformed_actual": self.malformed_actual,
            "utilization_source": self.utilization_source,
        }


# --------------------------------------------------------------------------------------------------------
# value comparison
# --------------------------------------------------------------------------------------------------------
_NUM = (int, float)


def _is_num(v: Any) -> bool:
    return isinstance(v, _NUM) and not isinstance(v, bool)


def match_value(
    actual: Any, expected: Any, options: ArgMatchOptions = ArgMatchOptions(), rules: set[str] | None = None
) -> bool:
    """Whether ``actual`` matches ``expected`` under ``options``; lenient rules used are added to ``rules``.

    Structural: dicts must have the same keys (an :class:`AnyOf` with ``optional=True`` inside a dict lets a
    key be missing), lists the same length and element-wise matches. ``expected`` may hold :class:`AnyOf`
    markers at any depth. Never raises on odd input: incomparable values simply do not match.
    """
    fired: set[str] = set()
    ok = _match(actual, expected, options, fired)
    if ok and rules is not None:
        rules |= fired
    return ok


def _match(a: Any, e: Any, o: ArgMatchOptions, fired: set[str]) -> bool:
    te = type(e)
    if te is AnyOf:
        for i, alt in enumerate(e.values):
            sub: set[str] = set()
            if _match(a, alt, o, sub):
                fired |= sub
                if i > 0:
                    fired.add("alternative_accepted")
                return True
        return False
    ta = type(a)
    if te is str:
        if ta is str:
            if a == e:
                return True
            n = o.string_normalization
            if n is not None and n(a) == n(e):
                fired.add("string_normalization")
                return True
        return False
    if te is bool or ta is bool:
        return ta is te and a == e
    if te in _NUM_TYPES:
        if ta not in _NUM_TYPES:
            return False
        if a == e:
            return True
        if (o.abs_tol or o.rel_tol) and math.isclose(a, e, rel_tol=o.rel_tol, abs_tol=o.abs_tol):
            fired.add("numeric_tolerance")
            return True
        return False
    if te is dict:
        if ta is str and o.parse_json_strings:
            parsed = _try_json(a)
            if isinstance(parsed, dict) and _match(parsed, e, o, fired):
                fired.add("json_string_parsed")
                return True
            return False
        if ta is not dict:
            return False
        for k, ev in e.items():
            if k not in a:
                if type(ev) is AnyOf and ev.optional:
                    fired.add("optional_param_missing")
                    continue
                return False
            if not _match(a[k], ev, o, fired):
                return False
        for k in a:
            if k not in e:
                return False
        return True
    if te is list or te is tuple:
        if ta is str and o.parse_json_strings:
            parsed = _try_json(a)
            if isinstance(parsed, list) and _match(parsed, e, o, fired):
                fired.add("json_string_parsed")
                return True
            return False
        if ta is not list and ta is not tuple:
            return False
        if len(a) != len(e):
            return False
        return all(_match(x, y, o, fired) for x, y in zip(a, e, strict=True))
    if e is None:
        return a is None
    return bool(a == e)


_NUM_TYPES = (int, float)


def _try_json(s: str) -> Any:
    try:
        return json.loads(s)
    except (ValueError, TypeError):
        return None


# --------------------------------------------------------------------------------------------------------
# BFCL type rules
# --------------------------------------------------------------------------------------------------------
_BFCL_TYPES: dict[str, type] = {
    "string": str, "integer": int, "float": float, "number": float, "boolean": bool, "array": list,
    "tuple": list, "dict": dict, "object": dict, "any": str,
}


def _first_type(alts: Sequence[Any]) -> type | None:
    for a in alts:
        if not (isinstance(a, str) and a == ""):
            return type(a)
    return None


def _bfcl_type_ok(value: Any, prop: Mapping[str, Any], expected: Any) -> bool:
    """BFCL's ``type_checker`` (one level of nesting), on a value and its :class:`AnyOf` expectation."""
    tname = prop.get("type")
    want = _BFCL_TYPES.get(tname) if isinstance(tname, str) else None
    if want is None:
        return True  # a type BFCL's Python checker does not know: no check
    alts = list(expected.values) if isinstance(expected, AnyOf) else [expected]
    if tname == "float" and type(value) is int:
        value = float(value)
    if tname == "tuple" and type(value) is tuple:
        value = list(value)
    alt_type = _first_type(alts)
    if type(value) is want:
        if tname in ("array", "tuple"):
            item_name = (prop.get("items") or {}).get("type")
            item_want = _BFCL_TYPES.get(item_name) if isinstance(item_name, str) else None
            if item_want is None:
                return True
            # an optional parameter's "" counts as a passing alternative in BFCL's loop
            cands = list(alts) + ([""] if isinstance(expected, AnyOf) and expected.optional else [])
            for alt in cands:
                if type(alt) is list:
                    inner = _first_type(alt)
                    if all(type(v) is item_want or (inner is not None and type(v) is inner) for v in value):
                        return True
                else:
                    return True
            return False
        return True
    return alt_type is not None and type(value) is alt_type


# --------------------------------------------------------------------------------------------------------
# pair scoring
# --------------------------------------------------------------------------------------------------------
def _expected_args(call: ToolCall) -> Mapping[str, Any]:
    args = call.arguments
    if not isinstance(args, dict):
        return {}
    if _has_marker(args):
        args = _from_marker(args)
    return args


def _has_marker(v: Any) -> bool:
    if type(v) is dict:
        return "$any_of" in v or "$optional" in v or any(_has_marker(x) for x in v.values())
    if type(v) is list:
        return any(_has_marker(x) for x in v)
    return False


def _pair_score(
    actual: ToolCall,
    exp_args: Mapping[str, Any],
    o: ArgMatchOptions,
    spec: Mapping[str, Any] | None,
    want_diffs: bool,
) -> tuple[float, set[str], list[ArgDiff]]:
    """Share of argument keys that match, the lenient rules used, and the diffs."""
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
            if prop is None or not _bfcl_type_ok(av, prop, ev):
                if want_diffs:
                    diffs.append(ArgDiff(f"$.{k}", "type", ev, av))
                continue
        sub: set[str] = set()
        if _match(av, ev, o, sub):
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


def _lis_length(seq: Sequence[int]) -> int:
    """Length of the longest strictly increasing subsequence (patience sorting, O(n log n))."""
    import bisect

    tails: list[int] = []
    for x in seq:
        i = bisect.bisect_left(tails, x)
        if i == len(tails):
            tails.append(x)
        else:
            tails[i] = x
    return len(tails)


def _assign(cost: list[list[float]], na: int, ne: int) -> list[tuple[int, int]]:
    """Minimum-cost one-to-one assignment of min(na, ne) pairs; rows = actual, cols = expected."""
    if na == 1 and ne == 1:
        return [(0, 0)]
    if na * ne <= 9:
        best: tuple[float, tuple[tuple[int, int], ...]] | None = None
        if na <= ne:
            for cols in itertools.permutations(range(ne), na):
                c = sum(cost[i][j] for i, j in enumerate(cols))
                if best is None or c < best[0] - 1e-12:
                    best = (c, tuple(enumerate(cols)))
        else:
            for rows in itertools.permutations(range(na), ne):
                c = sum(cost[i][j] for j, i in enumerate(rows))
                if best is None or c < best[0] - 1e-12:
                    best = (c, tuple((i, j) for j, i in enumerate(rows)))
        assert best is not None
        return list(best[1])
    r, c = linear_sum_assignment(np.asarray(cost, dtype=float))
    return list(zip(r.tolist(), c.tolist(), strict=True))


def _as_call(c: ToolCall | Mapping[str, Any]) -> ToolCall:
    return c if isinstance(c, ToolCall) else ToolCall.model_validate(c)


def _spec_map(tools: Sequence[ToolSpec | Mapping[str, Any]] | None) -> dict[str, Mapping[str, Any]] | None:
    if not tools:
        return None
    out: dict[str, Mapping[str, Any]] = {}
    for t in tools:
        spec = t if isinstance(t, ToolSpec) else ToolSpec.model_validate(t)
        out[spec.name] = spec.parameters or {}
    return out


# --------------------------------------------------------------------------------------------------------
# utilization
# --------------------------------------------------------------------------------------------------------
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
        parsed = _try_json(s) if s[:1] in "{[" else None
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


# --------------------------------------------------------------------------------------------------------
# main entry points
# --------------------------------------------------------------------------------------------------------
def score_tool_calls(
    actual: Sequence[ToolCall | Mapping[str, Any]],
    expected: Sequence[ToolCall | Mapping[str, Any]],
    *,
    weights: Mapping[str, float] | None = None,
    tool_threshold: float = 1.0,
    sequence_matters: bool = False,
    options: ArgMatchOptions = ArgMatchOptions(),
    final_answer: str | None = None,
    tools: Sequence[ToolSpec | Mapping[str, Any]] | None = None,
    utilization_hint: bool | None = None,
    details: bool = True,
) -> ToolScore:
    """Score actual tool calls against expected ones.

    Parameters
    ----------
    actual : sequence of ToolCall (or dicts)
        Calls the agent made, in order. Malformed calls (``parse_error`` set) pair by name but score 0 on
        arguments.
    expected : sequence of ToolCall (or dicts)
        Expected calls. Argument values may hold :class:`AnyOf` markers (or their JSON form).
    weights : mapping, optional
        Component weights ``selection, parameters, sequence, utilization`` (missing keys take
        :data:`DEFAULT_WEIGHTS`); normalized over the components that apply. Must be >= 0.
    tool_threshold : float
        ``passed = overall >= tool_threshold`` (default 1.0: every weighted component perfect).
    sequence_matters : bool
        Score ``sequence`` (LCS of the pairs in actual vs expected order).
    options : ArgMatchOptions
        Argument comparison options.
    final_answer : str, optional
        Final answer text, for result utilization.
    tools : sequence of ToolSpec, optional
        Tool specs; needed only for ``options.type_rules``.
    utilization_hint : bool, optional
        User-given "results were used" flag, used only when utilization cannot be read from the data.
    details : bool
        Collect per-argument diffs (slightly slower).

    Returns
    -------
    ToolScore

    Raises
    ------
    ValueError
        For a negative or unknown weight, or a threshold outside ``[0, 1]``.

    Notes
    -----
    Pairing is an optimal one-to-one assignment (Hungarian method; Kuhn 1955, Munkres 1957) over
    same-name pairs with cost ``1 - param_score`` and a prohibitive cost for different names, so the
    number of name-matched pairs is maximal and, among those, the argument agreement is maximal. A perfect
    pairing, when one exists, is always found (its total cost 0 is the minimum).
    """
    if not 0.0 <= tool_threshold <= 1.0:
        raise ValueError(f"tool_threshold must be in [0, 1], got {tool_threshold}")
    w = DEFAULT_WEIGHTS if weights is None else _check_weights(weights)
    acts = [c if isinstance(c, ToolCall) else _as_call(c) for c in actual]
    exps = [c if isinstance(c, ToolCall) else _as_call(c) for c in expected]
    na, ne = len(acts), len(exps)
    specs = _spec_map(tools) if options.type_rules else None
    malformed = [i for i, c in enumerate(acts) if c.parse_error is not None]

    util: float | None = None
    util_src: Literal["data", "user", None] = None
    if na:
        util = result_utilization(acts, final_answer)
        if util is not None:
            util_src = "data"
    if util is None and utilization_hint is not None and (na or ne):
        util, util_src = (1.0 if utilization_hint else 0.0), "user"

    if na == 0 and ne == 0:
        comps = {"selection": 1.0, "parameters": None, "sequence": None, "utilization": util}
        overall = _overall(comps, w)
        return ToolScore(1.0, None, None, util, overall, overall >= tool_threshold, 1.0, 1.0, 1.0, 0, 0, 0,
                         [], [], [], [], not_applicable=True, utilization_source=util_src)

    # candidate pairs: same name only
    exp_args = [_expected_args(e) for e in exps]
    scored: dict[tuple[int, int], tuple[float, set[str], list[ArgDiff]]] = {}
    cross = float(min(na, ne) + 1)
    cost = [[cross] * ne for _ in range(na)]
    for i, a in enumerate(acts):
        for j, e in enumerate(exps):
            if a.name == e.name:
                spec = specs.get(e.name) if specs is not None else None
                s = _pair_score(a, exp_args[j], options, spec, details)
                scored[(i, j)] = s
                cost[i][j] = 1.0 - s[0]
    pairs_idx = [(i, j) for i, j in _assign(cost, na, ne) if (i, j) in scored] if scored else []

    pairs: list[PairDetail] = []
    rules: set[str] = set()
    n_correct = 0
    psum = 0.0
    for i, j in sorted(pairs_idx, key=lambda p: p[1]):
        ps, fired, diffs = scored[(i, j)]
        ok = ps == 1.0
        if ok:
            n_correct += 1
            rules |= fired
        psum += ps
        pairs.append(PairDetail(i, j, exps[j].name, ps, ok, diffs))
    m = len(pairs)
    pa = {p.actual_index for p in pairs}
    pe = {p.expected_index for p in pairs}

    selection = m / max(na, ne)
    parameters = psum / ne if ne else None
    if sequence_matters and ne:
        order = [p.expected_index for p in sorted(pairs, key=lambda p: p.actual_index)]
        sequence: float | None = _lis_length(order) / ne
    else:
        sequence = None
    precision = n_correct / na if na else 0.0
    recall = n_correct / ne if ne else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    comps = {"selection": selection, "parameters": parameters, "sequence": sequence, "utilization": util}
    overall = _overall(comps, w)
    return ToolScore(
        selection=selection,
        parameters=parameters,
        sequence=sequence,
        utilization=util,
        overall=overall,
        passed=overall >= tool_threshold,
        precision=precision,
        recall=recall,
        f1=f1,
        n_actual=na,
        n_expected=ne,
        n_correct=n_correct,
        pairs=pairs,
        unmatched_actual=[i for i in range(na) if i not in pa],
        unmatched_expected=[j for j in range(ne) if j not in pe],
        lenient_rules_fired=sorted(rules),
        malformed_actual=malformed,
        utilization_source=util_src,
    )


def _check_weights(weights: Mapping[str, float]) -> dict[str, float]:
    w = dict(DEFAULT_WEIGHTS)
    for k, v in weights.items():
        if k not in DEFAULT_WEIGHTS:
            raise ValueError(f"unknown weight {k!r}; expected one of {sorted(DEFAULT_WEIGHTS)}")
        if not (isinstance(v, int | float) and v >= 0 and math.isfinite(v)):
            raise ValueError(f"weight {k!r} must be a finite number >= 0, got {v!r}")
        w[k] = float(v)
    return w


def _overall(comps: Mapping[str, float | None], w: Mapping[str, float]) -> float:
    num = 0.0
    den = 0.0
    for k, v in comps.items():
        if v is None:
            continue
        wk = w.get(k, 0.0)
        num += wk * v
        den += wk
    if den == 0.0:
        # no weighted component applies: fall back to selection, which always applies
        return float(comps["selection"] or 0.0)
    return num / den


# --------------------------------------------------------------------------------------------------------
# per trial
# --------------------------------------------------------------------------------------------------------
@dataclass(slots=True)
class TrialToolScores:
    """Tool scores of one trial.

    One entry per interaction (``None`` where nothing was expected and ``empty_expected="no_ground_truth"``)
    and the whole-conversation score against the trial-level
    expected calls (``None`` when the trial has none under the same rule).
    """

    interactions: list[ToolScore | None]
    trial: ToolScore | None

    @property
    def passed(self) -> bool | None:
        """True when every available score passed; ``None`` when there is no score at all."""
        scores = [s for s in [*self.interactions, self.trial] if s is not None]
        if not scores:
            return None
        return all(s.passed for s in scores)


def score_trial_tools(
    trial: Trial,
    *,
    weights: Mapping[str, float] | None = None,
    tool_threshold: float = 1.0,
    sequence_matters: bool | None = None,
    options: ArgMatchOptions = ArgMatchOptions(),
    empty_expected: Literal["no_ground_truth", "no_calls"] = "no_ground_truth",
    details: bool = True,
) -> TrialToolScores:
    """Score each interaction's calls, and the whole conversation's, against their expected calls.

    The whole conversation is scored against the trial-level ``expected_tool_calls`` (tau-bench actions).

    Parameters
    ----------
    trial : Trial
    weights, tool_threshold, options, details
        As in :func:`score_tool_calls`.
    sequence_matters : bool, optional
        Overrides each interaction's ``tool_sequence_matters``; for the trial level the default is
        ``False`` (tau-bench grades the final database state, not the order of actions).
    empty_expected : {"no_ground_truth", "no_calls"}
        What an empty expected list means: no ground truth (score ``None``, the default) or "no call
        should be made" (scored, so any call fails).

    Returns
    -------
    TrialToolScores
    """
    per: list[ToolScore | None] = []
    all_calls: list[ToolCall] = []
    last_answer: str | None = None
    for it in trial.interactions:
        all_calls.extend(it.tool_calls)
        if it.answer:
            last_answer = it.answer
        if not it.expected_tool_calls and empty_expected == "no_ground_truth":
            per.append(None)
            continue
        seq = it.tool_sequence_matters if sequence_matters is None else sequence_matters
        hint = getattr(it, "tool_results_used", None)
        per.append(score_tool_calls(
            it.tool_calls, it.expected_tool_calls, weights=weights, tool_threshold=tool_threshold,
            sequence_matters=seq, options=options, final_answer=it.answer, tools=trial.tools,
            utilization_hint=hint if isinstance(hint, bool) else None, details=details,
        ))
    trial_score: ToolScore | None = None
    if trial.expected_tool_calls or empty_expected == "no_calls":
        trial_score = score_tool_calls(
            all_calls, trial.expected_tool_calls, weights=weights, tool_threshold=tool_threshold,
            sequence_matters=bool(sequence_matters), options=options, final_answer=last_answer,
            tools=trial.tools, details=details,
        )
    return TrialToolScores(per, trial_score)

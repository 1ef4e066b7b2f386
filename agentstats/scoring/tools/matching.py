"""Argument value comparison: options, string normalization, lenient rules and BFCL's type rules."""

from __future__ import annotations

import json
import math
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from agentstats.scoring.tools.markers import AnyOf

__all__ = [
    "BFCL_STRING_NORMALIZATION",
    "DEFAULT_OPTIONS",
    "LENIENT_RULES",
    "ArgMatchOptions",
    "StringNormalization",
    "bfcl_options",
    "bfcl_type_ok",
    "match_value",
]

#: Every lenient rule a match can record (``ToolScore.lenient_rules_fired``).
LENIENT_RULES = (
    "numeric_tolerance",
    "string_normalization",
    "alternative_accepted",
    "optional_param_missing",
    "json_string_parsed",
)


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


_TABLES: dict[str, dict[int, int | None]] = {}


def _deletion_table(chars: str) -> dict[int, int | None]:
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
        JSON held in strings is compared as data: a string against an expected dict or list is parsed, and
        two different strings that both hold a JSON object or array are both parsed and compared
        structurally (``'{"a": 1, "b": 2}'`` matches ``'{"b":2,"a":1}'``). Rule ``json_string_parsed``.
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


#: The default options: exact values, JSON held in strings compared as data, extra arguments count against a pair.
DEFAULT_OPTIONS = ArgMatchOptions()

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


def match_value(
    actual: Any, expected: Any, options: ArgMatchOptions = ArgMatchOptions(), rules: set[str] | None = None
) -> bool:
    """Whether ``actual`` matches ``expected`` under ``options``; lenient rules used are added to ``rules``.

    Structural: dicts must have the same keys (an :class:`AnyOf` with ``optional=True`` inside a dict lets a
    key be missing), lists the same length and element-wise matches. ``expected`` may hold :class:`AnyOf`
    markers at any depth. Never raises on odd input: incomparable values simply do not match.
    """
    fired: set[str] = set()
    ok = match(actual, expected, options, fired)
    if ok and rules is not None:
        rules |= fired
    return ok


_NUM_TYPES = (int, float)


def match(a: Any, e: Any, o: ArgMatchOptions, fired: set[str]) -> bool:
    """Core of :func:`match_value`: rules used are added to ``fired`` (also on a failed match)."""
    te = type(e)
    if te is AnyOf:
        for i, alt in enumerate(e.values):
            sub: set[str] = set()
            if match(a, alt, o, sub):
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
            if o.parse_json_strings and _both_json_containers(a, e, o, fired):
                fired.add("json_string_parsed")
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
            parsed = try_json(a)
            if isinstance(parsed, dict) and match(parsed, e, o, fired):
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
            if not match(a[k], ev, o, fired):
                return False
        return all(k in e for k in a)
    if te is list or te is tuple:
        if ta is str and o.parse_json_strings:
            parsed = try_json(a)
            if isinstance(parsed, list) and match(parsed, e, o, fired):
                fired.add("json_string_parsed")
                return True
            return False
        if ta is not list and ta is not tuple:
            return False
        if len(a) != len(e):
            return False
        return all(match(x, y, o, fired) for x, y in zip(a, e, strict=True))
    if e is None:
        return a is None
    return bool(a == e)


def _both_json_containers(a: str, e: str, o: ArgMatchOptions, fired: set[str]) -> bool:
    """Both strings hold a JSON object or array, and the parsed values match."""
    sa, se = a.lstrip(), e.lstrip()
    if not (sa[:1] in ("{", "[") and se[:1] in ("{", "[")):
        return False
    pa, pe = try_json(sa), try_json(se)
    if not (isinstance(pa, dict | list) and isinstance(pe, dict | list)):
        return False
    return match(pa, pe, o, fired)


def try_json(s: str) -> Any:
    """``json.loads(s)``, or ``None`` when ``s`` is not JSON."""
    try:
        return json.loads(s)
    except (ValueError, TypeError, RecursionError):
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


def bfcl_type_ok(value: Any, prop: Mapping[str, Any], expected: Any) -> bool:
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
        if isinstance(value, list):  # BFCL's "array" / "tuple" types
            item_name = (prop.get("items") or {}).get("type")
            item_want = _BFCL_TYPES.get(item_name) if isinstance(item_name, str) else None
            if item_want is None:
                return True
            # an optional parameter's "" counts as a passing alternative in BFCL's loop
            cands = list(alts) + ([""] if isinstance(expected, AnyOf) and expected.optional else [])
            for alt in cands:
                if type(alt) is list:
                    inner = _first_type(alt)
                    items: list[Any] = value
                    if all(type(v) is item_want or (inner is not None and type(v) is inner) for v in items):
                        return True
                else:
                    return True
            return False
        return True
    return alt_type is not None and type(value) is alt_type

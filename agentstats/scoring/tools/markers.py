"""Expected-value markers: acceptable alternatives and optional parameters in expected tool calls.

An expected argument value may be an :class:`AnyOf` (acceptable alternatives, and whether the parameter may be
left out). In JSON trial files it is written ``{"$any_of": [v1, v2], "$optional": true}``; the scorer turns such
dicts into :class:`AnyOf` on the fly (:func:`expected_arguments`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from agentstats.records.trial import ToolCall

__all__ = [
    "AnyOf",
    "canonical_arguments",
    "expected_arguments",
    "from_marker",
    "from_possible_answer",
    "has_marker",
    "to_json",
]


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
    In JSON (trial files) write ``{"$any_of": [v1, v2], "$optional": true}``; the scorer turns such dicts
    into ``AnyOf`` on the fly. ``AnyOf([], optional=True)`` means "optional, and any given value is wrong",
    which is what BFCL's ``[""]`` means.
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
        return {"$any_of": [to_json(v) for v in self.values], "$optional": self.optional}


def to_json(v: Any) -> Any:
    """Replace every :class:`AnyOf` in ``v`` (at any depth) by its JSON form."""
    if isinstance(v, AnyOf):
        return v.to_json()
    if isinstance(v, dict):
        return {k: to_json(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [to_json(x) for x in v]
    return v


def from_marker(v: Any) -> Any:
    """Turn JSON ``{"$any_of": ...}`` dicts into :class:`AnyOf` (recursively); other values unchanged."""
    if isinstance(v, dict):
        if "$any_of" in v:
            return AnyOf([from_marker(x) for x in v["$any_of"]], optional=bool(v.get("$optional", False)))
        if "$optional" in v and len(v) == 1:
            return AnyOf([], optional=True)
        return {k: from_marker(x) for k, x in v.items()}
    if isinstance(v, list):
        return [from_marker(x) for x in v]
    return v


def has_marker(v: Any) -> bool:
    """Tell whether ``v`` holds a JSON marker (``$any_of`` / ``$optional``) at any depth."""
    if type(v) is dict:
        return "$any_of" in v or "$optional" in v or any(has_marker(x) for x in v.values())
    if type(v) is list:
        return any(has_marker(x) for x in v)
    return False


def expected_arguments(call: ToolCall) -> Mapping[str, Any]:
    """Return an expected call's arguments with JSON markers turned into :class:`AnyOf` (``{}``: not a dict)."""
    args = call.arguments
    if not isinstance(args, dict):
        return {}
    if has_marker(args):
        args = from_marker(args)
    return args


_OMIT = object()


def canonical_arguments(args: Mapping[str, Any]) -> dict[str, Any]:
    """Build the canonical instance of expected arguments: each :class:`AnyOf` replaced by its first alternative.

    A parameter whose marker is optional and whose only alternatives are ``""`` (BFCL's "may be omitted")
    or none at all is left out. Used to check ground truth against the tool's JSON-Schema.

    Parameters
    ----------
    args : mapping
        Expected arguments, with :class:`AnyOf` markers (see :func:`expected_arguments`).

    Returns
    -------
    dict
        Plain JSON values.
    """
    out = {}
    for k, v in args.items():
        c = _canonical(v)
        if c is not _OMIT:
            out[k] = c
    return out


def _canonical(v: Any) -> Any:
    if isinstance(v, AnyOf):
        vals = [x for x in v.values if not (v.optional and isinstance(x, str) and x == "")]
        if not vals:
            return _OMIT if v.optional else None
        return _canonical(vals[0])
    if isinstance(v, dict):
        return {k: c for k, x in v.items() if (c := _canonical(x)) is not _OMIT}
    if isinstance(v, list | tuple):
        return [_canonical(x) for x in v]
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
    from agentstats.io.readers.bfcl import possible_answer_markers

    return {k: from_marker(v) for k, v in possible_answer_markers(params, required=required).items()}

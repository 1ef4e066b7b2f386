"""Syntactic validation of tool calls against JSON-Schema tool specs (``jsonschema`` library).

Every call is checked against the spec of the tool it names: unknown tool, malformed JSON arguments,
missing required argument, wrong type, extra argument (``additionalProperties``), ``null`` for an optional
argument, and any other JSON-Schema violation (enum, minimum, ...). Each error carries the JSON path of the
offending value, e.g. ``$.filters[0].name``.

Specs in OpenAI function format (``{"type": "function", "function": {...}}``) and plain
``{"name", "parameters"}`` form are accepted. Non-standard type names that BFCL and older OpenAI-style
specs use (``dict``, ``float``, ``tuple``, ``any``, ``bool``, ``list``, Java/JavaScript names such as
``String``, ``HashMap``, ``ArrayList``) are mapped to JSON-Schema equivalents (``any`` drops the type
constraint).
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from agentstats.records.trial import ToolCall, ToolSpec

__all__ = ["SchemaError", "SchemaErrorKind", "normalize_schema", "openai_tools", "validate_tool_calls"]

SchemaErrorKind = Literal[
    "unknown_tool",
    "malformed_json",
    "missing_required",
    "wrong_type",
    "extra_argument",
    "null_optional",
    "invalid_value",
    "invalid_spec",
]

#: Non-standard type names -> JSON-Schema type (``None`` = no type constraint).
TYPE_MAP: dict[str, str | None] = {
    "dict": "object", "object": "object", "HashMap": "object", "Hashtable": "object", "map": "object",
    "float": "number", "double": "number", "number": "number", "Float": "number", "Double": "number",
    "integer": "integer", "int": "integer", "long": "integer", "short": "integer", "byte": "integer",
    "Bigint": "integer", "Integer": "integer", "Long": "integer",
    "string": "string", "str": "string", "String": "string", "char": "string",
    "boolean": "boolean", "bool": "boolean", "Boolean": "boolean",
    "array": "array", "list": "array", "tuple": "array", "Array": "array", "ArrayList": "array",
    "Queue": "array", "Stack": "array", "Set": "array",
    "null": "null",
    "any": None, "Any": None,
}


@dataclass(frozen=True, slots=True)
class SchemaError:
    """One validation error of one call.

    Parameters
    ----------
    call_index : int
        Index of the call in the list given to :func:`validate_tool_calls`.
    tool : str
        Tool name the call used.
    kind : SchemaErrorKind
        Category of the error.
    path : str
        JSON path of the offending argument (``$`` = the arguments object itself).
    message : str
        Human-readable explanation.
    """

    call_index: int
    tool: str
    kind: SchemaErrorKind
    path: str
    message: str


def _map_type(t: Any) -> Any:
    if isinstance(t, str):
        return TYPE_MAP.get(t, t)
    if isinstance(t, list):
        mapped = [TYPE_MAP.get(x, x) if isinstance(x, str) else x for x in t]
        if any(m is None for m in mapped):
            return None
        return mapped
    return t


def normalize_schema(schema: Mapping[str, Any], *, forbid_extra: bool = True) -> dict[str, Any]:
    """Return a JSON-Schema copy of a tool's ``parameters`` with non-standard types mapped.

    Parameters
    ----------
    schema : mapping
        The ``parameters`` object of a tool spec.
    forbid_extra : bool
        Add ``additionalProperties: false`` to every object schema that lists ``properties`` and says
        nothing about additional properties (OpenAI strict mode's rule), so extra arguments are reported.

    Returns
    -------
    dict
        A new schema; the input is not modified.
    """
    out = copy.deepcopy(dict(schema))
    _normalize(out, forbid_extra)
    if "type" not in out and "properties" in out:
        out["type"] = "object"
    return out


def _normalize(node: Any, forbid_extra: bool) -> None:
    if not isinstance(node, dict):
        return
    if "type" in node:
        t = _map_type(node["type"])
        if t is None:
            del node["type"]
        else:
            node["type"] = t
    # BFCL's non-standard per-property "optional"/"default" keys are annotations: left alone.
    props = node.get("properties")
    if isinstance(props, dict):
        for v in props.values():
            _normalize(v, forbid_extra)
        if forbid_extra and "additionalProperties" not in node and "patternProperties" not in node:
            node["additionalProperties"] = False
        req = node.get("required")
        if isinstance(req, list):
            node["required"] = [r for r in req if isinstance(r, str)]
    items = node.get("items")
    if isinstance(items, dict):
        _normalize(items, forbid_extra)
    elif isinstance(items, list):  # draft-4 tuple form -> prefixItems
        for v in items:
            _normalize(v, forbid_extra)
        node["prefixItems"] = node.pop("items")
    for key in ("prefixItems", "anyOf", "oneOf", "allOf"):
        seq = node.get(key)
        if isinstance(seq, list):
            for v in seq:
                _normalize(v, forbid_extra)
    for key in ("additionalProperties", "not", "if", "then", "else", "contains"):
        if isinstance(node.get(key), dict):
            _normalize(node[key], forbid_extra)
    for key in ("$defs", "definitions", "patternProperties"):
        sub = node.get(key)
        if isinstance(sub, dict):
            for v in sub.values():
                _normalize(v, forbid_extra)


@functools.cache
def _validator_class(strict_integers: bool) -> Any:
    """Draft 2020-12 validator class; with ``strict_integers`` a bool is not an integer.

    ``jsonschema`` is imported here, on first use, not with the module: importing it costs about 3 s where
    ``rfc3987-syntax`` is installed (it builds a grammar), and every CLI command imports this module.
    """
    from jsonschema import Draft202012Validator
    from jsonschema.validators import extend

    if not strict_integers:
        return Draft202012Validator
    checker = Draft202012Validator.TYPE_CHECKER.redefine(
        "integer", lambda _checker, inst: isinstance(inst, int) and not isinstance(inst, bool)
    )
    return extend(Draft202012Validator, type_checker=checker)


def _json_path(parts: Sequence[Any]) -> str:
    s = "$"
    for p in parts:
        if isinstance(p, int):
            s += f"[{p}]"
        elif isinstance(p, str) and p.isidentifier():
            s += f".{p}"
        else:
            s += f"[{json.dumps(p)}]"
    return s


def _spec(t: ToolSpec | Mapping[str, Any]) -> ToolSpec:
    return t if isinstance(t, ToolSpec) else ToolSpec.model_validate(t)


def openai_tools(tools: Sequence[ToolSpec | Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Return tool specs in the form OpenAI's chat API takes (``tools=[{"type": "function", "function": ...}]``).

    Parameters
    ----------
    tools : sequence of ToolSpec (or dicts, plain ``{name, description, parameters}`` or OpenAI function format)
        The specs, read as :func:`validate_tool_calls` reads them.

    Returns
    -------
    list of dict
        ``{"type": "function", "function": {"name", "description", "parameters"}}`` per spec, in order:
        ``description`` only when non-empty, ``parameters`` through :func:`normalize_schema` (non-standard type
        names mapped, nothing added about extra arguments; an empty schema becomes ``{"type": "object",
        "properties": {}}``), and ``strict`` passed on when the spec sets it.

    Raises
    ------
    ValueError
        When two specs share a name.
    pydantic.ValidationError
        When a spec has no name.
    """
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for t in tools:
        spec = _spec(t)
        if spec.name in seen:
            raise ValueError(f"duplicate tool spec name {spec.name!r}")
        seen.add(spec.name)
        params = normalize_schema(spec.parameters, forbid_extra=False) if spec.parameters else {}
        if not params:
            params = {"type": "object", "properties": {}}
        fn: dict[str, Any] = {"name": spec.name}
        if spec.description:
            fn["description"] = spec.description
        fn["parameters"] = params
        strict = (spec.model_extra or {}).get("strict")
        if isinstance(strict, bool):
            fn["strict"] = strict
        out.append({"type": "function", "function": fn})
    return out


def validate_tool_calls(
    calls: Sequence[ToolCall | Mapping[str, Any]],
    tools: Sequence[ToolSpec | Mapping[str, Any]],
    *,
    forbid_extra: bool = True,
    strict_integers: bool = False,
) -> list[SchemaError]:
    """Validate each call's arguments against its tool's JSON-Schema.

    Parameters
    ----------
    calls : sequence of ToolCall (or dicts in OpenAI/plain form)
        The calls to check; arguments given as JSON strings are parsed by :class:`ToolCall`.
    tools : sequence of ToolSpec (or dicts, OpenAI function format accepted)
        Tool specs offered to the agent.
    forbid_extra : bool
        Treat arguments not listed in ``properties`` as errors unless the spec allows them explicitly
        (see :func:`normalize_schema`).
    strict_integers : bool
        ``integer`` accepts Python ints only. JSON-Schema itself (draft 2020-12) accepts ``1.0`` as an
        integer; BFCL and Python type checks do not.

    Returns
    -------
    list of SchemaError
        Ordered by call index, then JSON path. Empty when every call is valid.

    Raises
    ------
    ValueError
        When two specs share a name.
    """
    validators: dict[str, Any] = {}
    spec_errors: dict[str, str] = {}
    for t in tools:
        spec = _spec(t)
        if spec.name in validators or spec.name in spec_errors:
            raise ValueError(f"duplicate tool spec name {spec.name!r}")
        validator, problem = _compiled(_schema_key(spec.parameters), forbid_extra, strict_integers)
        if validator is not None:
            validators[spec.name] = validator
        else:  # not a valid JSON-Schema: reported on every call of that tool
            spec_errors[spec.name] = f"tool spec {spec.name!r} is not a valid JSON-Schema: {problem}"
    errors: list[SchemaError] = []
    for idx, raw in enumerate(calls):
        call = raw if isinstance(raw, ToolCall) else ToolCall.model_validate(raw)
        name = call.name
        if name in spec_errors:
            errors.append(SchemaError(idx, name, "invalid_spec", "$", spec_errors[name]))
            continue
        v = validators.get(name)
        if v is None:
            known = ", ".join(sorted(validators)) or "none"
            errors.append(SchemaError(idx, name, "unknown_tool", "$", f"unknown tool {name!r} (known: {known})"))
            continue
        if call.parse_error is not None:
            errors.append(SchemaError(idx, name, "malformed_json", "$", call.parse_error))
            continue
        errors.extend(_errors_for(idx, name, call.arguments, v))
    return errors


def _schema_key(parameters: Mapping[str, Any] | None) -> str:
    return json.dumps(parameters or {"type": "object"}, sort_keys=True, default=str)


@functools.lru_cache(maxsize=4096)
def _compiled(schema_json: str, forbid_extra: bool, strict_integers: bool) -> tuple[Any, str | None]:
    """Compile a validator for one tool's ``parameters`` (cached: data sets repeat specs), or give the error."""
    cls: Any = _validator_class(strict_integers)
    schema = normalize_schema(json.loads(schema_json), forbid_extra=forbid_extra)
    try:
        cls.check_schema(schema)
    except Exception as exc:  # jsonschema.SchemaError, or a schema that breaks the meta-validator
        return None, str(exc)
    return cls(schema), None


def _errors_for(idx: int, name: str, args: Any, validator: Any) -> list[SchemaError]:
    out: list[SchemaError] = []
    for err in validator.iter_errors(args):
        out.extend(_classify(idx, name, err, validator.schema))
    out.sort(key=lambda e: (e.path, e.kind))
    return out


def _classify(idx: int, name: str, err: Any, root: Mapping[str, Any]) -> list[SchemaError]:
    path = list(err.absolute_path)
    kind = err.validator
    inst = err.instance
    if kind == "required":
        missing = [r for r in err.validator_value if isinstance(inst, dict) and r not in inst]
        return [SchemaError(idx, name, "missing_required", _json_path([*path, r]),
                            f"missing required argument {r!r}") for r in missing] or [
            SchemaError(idx, name, "missing_required", _json_path(path), err.message)]
    if kind == "additionalProperties" and isinstance(inst, dict):
        allowed = set(err.schema.get("properties", {}))
        extras = [k for k in inst if k not in allowed]
        return [SchemaError(idx, name, "extra_argument", _json_path([*path, k]),
                            f"unexpected argument {k!r}") for k in extras] or [
            SchemaError(idx, name, "extra_argument", _json_path(path), err.message)]
    if kind == "type":
        if inst is None and path and path[-1] not in _parent_required(err, root):
            return [SchemaError(idx, name, "null_optional", _json_path(path),
                                f"null given for optional argument {path[-1]!r}; omit it instead "
                                f"(expected type {err.validator_value!r})")]
        return [SchemaError(idx, name, "wrong_type", _json_path(path),
                            f"expected type {err.validator_value!r}, got {type(inst).__name__} {inst!r}")]
    return [SchemaError(idx, name, "invalid_value", _json_path(path), err.message)]


def _parent_required(err: Any, root: Mapping[str, Any]) -> set[str]:
    """Return ``required`` of the object schema holding the failing property.

    Found by the error's schema path (``.../properties/<name>/type``).
    """
    sp = list(err.absolute_schema_path)
    if len(sp) < 3 or sp[-3] != "properties":
        return set()
    node: Any = root
    for key in sp[:-3]:
        try:
            node = node[key]
        except (KeyError, IndexError, TypeError):
            return set()
    req = node.get("required", []) if isinstance(node, dict) else []
    return set(req)

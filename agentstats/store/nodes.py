"""A captured node invocation as a metric reads it: its roles, read from its arguments, state and return value.

One owner for live capture's node metrics (:mod:`agentstats.capture.scoring`) and for node records read back from
the store (``load_trials(store, run=...)`` gives each interaction a ``nodes`` list built here), so a node metric
computed at the end of a run and one computed later with ``compute(..., level="node")`` read the same values.

A role (``input``, ``output``, ``context``, ``expected``, ``retrieved_contexts`` -- also spelt ``retrieved_ids`` --
``relevance``, or any other role a metric reads) is read from a *field*. The defaults fit a LangGraph state
(``{"query": ..., "context": [...], "answer": ...}``) and the run's field options:

====================== ====================== ===============================================================
role                   default field          where it is looked up
====================== ====================== ===============================================================
``output``             ``answer``             the return value: its field when it is a mapping with it, else
                                              the value itself (text as it is, anything else as JSON text)
``input``              ``query``              the return value's field, else an argument of that name, else
                                              that field of a mapping argument (the state)
``context``            ``context``            as ``input``
``expected``           ``expected_answer``    as ``input``
``retrieved_contexts`` ``retrieved_contexts`` as ``input``
``relevance``          ``relevance``          as ``input``
====================== ====================== ===============================================================

The return value comes first because a LangGraph node returns the part of the state it writes (a retriever's
``{"context": docs}``). Every other field of the arguments, the state and a mapping return value is in the record
too, under its own name, so a metric's own field names (``get_metric(..., fields=...)``) find it. What is stored is
capped (:data:`agentstats.capture.records.MAX_JSON`, 100,000 characters of JSON per invocation's inputs and per
output); a longer value is stored cut and marked, and its roles are then not found (the metric is not applicable).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pydantic_core import to_json

__all__ = ["NODE_FIELDS", "ROLE_ALIASES", "find_field", "node_fields", "node_view", "output_text"]

#: Default field of each node role (see the module docstring); the run's ``query_field``, ``expected_field`` and
#: ``answer_field`` replace those of ``input``, ``expected`` and ``output``.
NODE_FIELDS: Mapping[str, str] = {"input": "query", "output": "answer", "context": "context",
                                  "expected": "expected_answer", "retrieved_contexts": "retrieved_contexts",
                                  "relevance": "relevance"}
#: Other spellings of a role accepted in a ``fields`` map.
ROLE_ALIASES: Mapping[str, str] = {"retrieved_ids": "retrieved_contexts"}
#: A node invocation's own usage, recorded with it (never looked up in the state).
USAGE_KEYS = ("latency_s", "model", "input_tokens", "output_tokens", "cost_usd")


def node_fields(fields: Mapping[str, str] | None, known_roles: set[str] | None = None) -> dict[str, str]:
    """Return a node's role -> field map with aliases resolved (``retrieved_ids`` -> ``retrieved_contexts``).

    Parameters
    ----------
    fields : mapping of str to str, optional
    known_roles : set of str, optional
        Roles that may be named (default: those of :data:`NODE_FIELDS`).

    Raises
    ------
    ValueError
        A role that is not known, or a field that is not a non-empty string, naming it.
    """
    roles = set(NODE_FIELDS) | set(known_roles or ())
    out: dict[str, str] = {}
    for role, field in (fields or {}).items():
        r = ROLE_ALIASES.get(role, role)
        if r not in roles:
            raise ValueError(f"fields: unknown role {role!r}; roles are {', '.join(sorted(roles | set(ROLE_ALIASES)))}")
        if not isinstance(field, str) or not field:
            raise ValueError(f"fields: role {role!r} must name a field (a non-empty string), got {field!r}")
        out[r] = field
    return out


def find_field(inputs: Mapping[str, Any], output: Any, field: str) -> Any:
    """Return ``field`` of a node's return value, else its argument of that name, else of a mapping argument."""
    if isinstance(output, Mapping) and field in output:
        return output[field]
    if field in inputs:
        return inputs[field]
    for v in inputs.values():
        if isinstance(v, Mapping) and field in v:
            return v[field]
    return None


def _json_text(v: Any) -> str:
    return to_json(v, fallback=repr).decode()


def output_text(output: Any, field: str, dumps: Callable[[Any], str] = _json_text) -> str | None:
    """Return a node's answer: ``field`` of a mapping return value (text, else JSON), text as is, else JSON text.

    ``dumps`` writes the JSON text (capture passes its own, which caps the length and reads dataclasses).
    """
    if output is None:
        return None
    if isinstance(output, str):
        return output
    if isinstance(output, Mapping) and field in output:
        v = output[field]
        return v if isinstance(v, str) or v is None else dumps(v)
    return dumps(output)


def node_view(inputs: Mapping[str, Any] | None, output: Any, fields: Mapping[str, str] | None = None,
              usage: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Return the record a node metric reads: every field of the state, arguments and return value, then the roles.

    Parameters
    ----------
    inputs : mapping
        The invocation's arguments by name (as stored: ``node_invocations.inputs``).
    output : any
        Its return value (``node_invocations.outputs``, decoded).
    fields : mapping of str to str, optional
        Role -> field, over :data:`NODE_FIELDS` (already resolved by :func:`node_fields`).
    usage : mapping, optional
        ``latency_s``, ``model``, ``input_tokens``, ``output_tokens``, ``cost_usd`` of the invocation.

    Returns
    -------
    dict
        Field name -> value; the role names (``input``, ``output``, ``context``, ``expected``,
        ``retrieved_contexts``, ``relevance``) hold the roles' values (None when not found), the usage keys the
        invocation's own usage.
    """
    inputs = inputs or {}
    names = {**NODE_FIELDS, **(fields or {})}
    view: dict[str, Any] = {}
    for v in inputs.values():
        if isinstance(v, Mapping):
            view.update(v)
    view.update({k: v for k, v in inputs.items() if not isinstance(v, Mapping)})  # a state: by its fields
    if isinstance(output, Mapping):
        view.update(output)
    for role, field in names.items():
        if role == "output":
            view[role] = output_text(output, field)
        else:
            view[role] = find_field(inputs, output, field)
    for k, v in (usage or {}).items():
        view[k] = v
    return view

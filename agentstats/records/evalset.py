"""Eval-set examples: FAI-style records, one example each (``id, input, expected, context, tags, risk_level``).

``id`` (non-empty string or integer) and ``input`` (string) are required; ``expected`` (any JSON value, a list
being alternatives), ``context`` (string, list of strings, or any JSON value, shown to the agent and the judge as
text), ``tags`` (list of strings) and ``risk_level`` (string) are optional; other fields are kept in ``extra``.
Two of them are checked because the tool-call scorer and the built-in agent read them: ``expected_tool_calls`` (a
list of ``{name, arguments}`` or OpenAI-format calls) and ``tools`` (a list of tool specs with distinct names).
:func:`eval_set` validates located records into examples; every problem goes to a
:class:`~agentstats.records.problems.ProblemLog` with its line and field. The reader of eval-set files is
:mod:`agentstats.io.readers.evalset` (``agentstats.load(path, format="eval_set")``).
"""

from __future__ import annotations

import json
import numbers
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from agentstats.records.problems import ProblemLog
from agentstats.records.trial import ToolCall, ToolSpec

__all__ = ["Example", "eval_set"]

_KNOWN = {"id", "input", "expected", "context", "tags", "risk_level"}


@dataclass(frozen=True)
class Example:
    """One eval-set example.

    Attributes
    ----------
    id : str
    input : str
        The user's message.
    expected : Any
        Reference answer(s), or None.
    context : Any
        Context given to the agent (retrieved passages, a document), or None.
    tags : tuple of str
    risk_level : str or None
    extra : dict
        The line's other fields.
    """

    id: str
    input: str
    expected: Any = None
    context: Any = None
    tags: tuple[str, ...] = ()
    risk_level: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def context_text(self) -> str | None:
        """Return the context as text: a string as is, a list of strings one per paragraph, anything else as JSON."""
        c = self.context
        if c is None:
            return None
        if isinstance(c, str):
            return c
        if isinstance(c, list) and all(isinstance(x, str) for x in c):
            return "\n\n".join(c)
        return json.dumps(c, ensure_ascii=False, sort_keys=True)

    def as_dict(self) -> dict[str, Any]:
        """Return the example as a JSON-ready mapping (what a user ``agent`` callable receives)."""
        return {"id": self.id, "input": self.input, "expected": self.expected, "context": self.context,
                "tags": list(self.tags), "risk_level": self.risk_level, **self.extra}


def _tool_problem(rec: dict[str, Any]) -> tuple[str, str] | None:
    """``(field, problem)`` of the first malformed ``expected_tool_calls`` or ``tools`` entry, else None.

    A tool name that two specs of ``tools`` share is a problem too (the agent could not be offered both).
    """
    for name, model in (("expected_tool_calls", ToolCall), ("tools", ToolSpec)):
        if name not in rec:
            continue
        value = rec[name]
        if not isinstance(value, list):
            return name, f"must be a list, got {type(value).__name__}"
        names: dict[str, int] = {}
        for i, item in enumerate(value):
            try:
                got = model.model_validate(item)
            except ValidationError as exc:
                err = exc.errors(include_url=False)[0]
                where = ".".join(str(x) for x in err.get("loc", ()))
                return f"{name}[{i}]{'.' + where if where else ''}", err.get("msg", "invalid")
            if isinstance(got, ToolSpec):
                if got.name in names:
                    return f"tools[{i}].name", f"tool {got.name!r} repeats tools[{names[got.name]}]"
                names[got.name] = i
    return None


def eval_set(records: Iterable[tuple[int, Any]], log: ProblemLog) -> list[Example]:
    """Validate located eval-set records (format in the module docstring) into examples.

    Parameters
    ----------
    records : iterable of (int, object)
        ``(line, record)`` pairs (1-based lines of a JSONL file).
    log : ProblemLog
        Receives every problem (line, field, message): a missing or mistyped field, a repeated id, no example at
        all; the caller applies its policy (``log.finish()``).

    Returns
    -------
    list of Example
        The valid examples, in record order.
    """
    out: list[Example] = []
    seen: dict[str, int] = {}
    n = 0
    for line, rec in records:
        n += 1
        ex = _example(line, rec, log, seen)
        if ex is not None:
            seen[ex.id] = line
            out.append(ex)
    if n == 0 and not log.problems:
        log.add(None, None, "no examples")
    return out


def _example(line: int, rec: Any, log: ProblemLog, seen: dict[str, int]) -> Example | None:
    """Validate one record (``seen``: the ids of the earlier examples, with their lines); ``None`` when bad."""
    raw_id = rec.get("id")
    if isinstance(raw_id, bool) or not isinstance(raw_id, (str, numbers.Integral)) or raw_id == "":
        log.add(line, "id", "required: a non-empty string or integer")
        return None
    ex_id = str(raw_id)
    if ex_id in seen:
        log.add(line, "id", f"{ex_id!r} repeats line {seen[ex_id]}")
        return None
    text = rec.get("input")
    if not isinstance(text, str) or not text.strip():
        log.add(line, "input", "required: a non-empty string")
        return None
    tags = rec.get("tags") or []
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        log.add(line, "tags", "must be a list of strings")
        return None
    risk = rec.get("risk_level")
    if risk is not None and not isinstance(risk, str):
        log.add(line, "risk_level", f"must be a string, got {type(risk).__name__}")
        return None
    bad = _tool_problem(rec)
    if bad is not None:
        log.add(line, *bad)
        return None
    return Example(id=ex_id, input=text, expected=rec.get("expected"), context=rec.get("context"),
                   tags=tuple(tags), risk_level=risk, extra={k: v for k, v in rec.items() if k not in _KNOWN})

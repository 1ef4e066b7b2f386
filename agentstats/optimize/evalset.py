"""The loop's eval set: FAI-style JSONL, one example per line (``id, input, expected, context, tags, risk_level``).

``id`` (non-empty string or integer) and ``input`` (string) are required; ``expected`` (any JSON value, a list
being alternatives), ``context`` (string, list of strings, or any JSON value, shown to the agent and the judge as
text), ``tags`` (list of strings) and ``risk_level`` (string) are optional; other fields are kept in ``extra``.
Two of them are checked because the tool-call scorer and the built-in agent read them: ``expected_tool_calls`` (a
list of ``{name, arguments}`` or OpenAI-format calls) and ``tools`` (a list of tool specs with distinct names).
Every problem is collected with file, line and field (:class:`agentstats.records.problems.TrialLoadError`).
"""

from __future__ import annotations

import json
import numbers
import os
from dataclasses import dataclass, field
from typing import Any

from agentstats.io.jsonl import iter_jsonl
from agentstats.records.problems import ProblemLog, TrialLoadError

__all__ = ["Example", "load_eval_set"]

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
    from pydantic import ValidationError

    from agentstats.records.trial import ToolCall, ToolSpec

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


def load_eval_set(path: str | os.PathLike) -> list[Example]:
    """Read an FAI-style JSONL eval set (format in the module docstring).

    Parameters
    ----------
    path : str or path-like
        The JSONL file (gzip allowed).

    Returns
    -------
    list of Example
        In file order.

    Raises
    ------
    agentstats.records.problems.TrialLoadError
        Listing every problem (file, line, field): malformed JSON, a missing or mistyped field, a repeated id, an
        empty file.
    OSError
        When the file cannot be read.
    """
    log = ProblemLog(str(path), "raise")
    out: list[Example] = []
    seen: dict[str, int] = {}
    n = 0
    for line, rec in iter_jsonl(path, log):
        n += 1
        raw_id = rec.get("id")
        if isinstance(raw_id, bool) or not isinstance(raw_id, (str, numbers.Integral)) or raw_id == "":
            log.add(line, "id", "required: a non-empty string or integer")
            continue
        ex_id = str(raw_id)
        if ex_id in seen:
            log.add(line, "id", f"{ex_id!r} repeats line {seen[ex_id]}")
            continue
        text = rec.get("input")
        if not isinstance(text, str) or not text.strip():
            log.add(line, "input", "required: a non-empty string")
            continue
        tags = rec.get("tags") or []
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            log.add(line, "tags", "must be a list of strings")
            continue
        risk = rec.get("risk_level")
        if risk is not None and not isinstance(risk, str):
            log.add(line, "risk_level", f"must be a string, got {type(risk).__name__}")
            continue
        bad = _tool_problem(rec)
        if bad is not None:
            log.add(line, *bad)
            continue
        seen[ex_id] = line
        out.append(Example(id=ex_id, input=text, expected=rec.get("expected"), context=rec.get("context"),
                           tags=tuple(tags), risk_level=risk,
                           extra={k: v for k, v in rec.items() if k not in _KNOWN}))
    if n == 0 and not log.problems:
        log.add(None, None, "no examples")
    try:
        log.finish(n)
    except TrialLoadError as exc:
        raise TrialLoadError(exc.problems, exc.source, skippable=False) from None
    return out

"""Checking ground truth: expected tool calls that violate their own tool's JSON-Schema are dataset errors.

An expected call that no valid call can reproduce (an argument the tool does not have, a wrong type, a missing
required argument, a tool the trial does not offer) says nothing about the agent: scoring against it would count a
dataset error as an agent failure. :func:`check_expected_calls` validates each expected call against the trial's
tool specs with :func:`agentstats.scoring.schema_check.validate_tool_calls`, on an instance built from the
expected arguments: each :class:`~agentstats.scoring.tools.markers.AnyOf` takes its first alternative, and where
that alternative violates the schema the next ones are tried (leaving the parameter out last, when it is
optional), so a call is flagged only when no acceptable value of some top-level parameter is valid. Alternatives
nested inside a parameter's value take their first one. Trials without tool specs cannot be checked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from agentstats.records.trial import ToolCall, ToolSpec, Trial
from agentstats.scoring.schema_check import SchemaError, SchemaErrorKind, validate_tool_calls
from agentstats.scoring.tools.markers import AnyOf, canonical_arguments, expected_arguments

__all__ = ["GroundTruthError", "check_expected_calls"]


@dataclass(frozen=True, slots=True)
class GroundTruthError:
    """One expected call of the data set that violates its tool's JSON-Schema.

    Attributes
    ----------
    agent, task_id, trial : str, str, int
        The trial's key.
    level : {"interaction", "trial"}
        Where the expected call sits: an interaction's ``expected_tool_calls`` or the trial's.
    interaction : int or None
        0-based interaction index (``None`` at trial level).
    call_index : int
        0-based index of the call in that ``expected_tool_calls`` list.
    tool : str
        The expected call's tool name.
    kind : str
        A :data:`agentstats.scoring.schema_check.SchemaErrorKind` (``unknown_tool``, ``missing_required``,
        ``wrong_type``, ``extra_argument``, ``invalid_value``, ...).
    path : str
        JSON path of the offending argument (``$`` = the whole arguments object).
    message : str
        What is wrong.
    """

    agent: str
    task_id: str
    trial: int
    level: Literal["interaction", "trial"]
    interaction: int | None
    call_index: int
    tool: str
    kind: SchemaErrorKind
    path: str
    message: str

    def where(self) -> str:
        """Location as text: ``agent 'a', task 't', trial 0, interaction 1, expected call #0 (search), $.q``."""
        parts = [f"agent {self.agent!r}", f"task {self.task_id!r}", f"trial {self.trial}"]
        if self.interaction is not None:
            parts.append(f"interaction {self.interaction}")
        else:
            parts.append("trial-level expected calls")
        parts.append(f"expected call #{self.call_index} ({self.tool}), {self.path}")
        return ", ".join(parts)

    def __str__(self) -> str:
        return f"{self.where()}: {self.message} [{self.kind}]"


def _top_param(path: str) -> str | None:
    """``"$.q[0].x"`` -> ``"q"``; ``"$"`` -> ``None``."""
    if not path.startswith("$.") or len(path) < 3:
        return None
    rest = path[2:]
    for i, ch in enumerate(rest):
        if ch in ".[":
            return rest[:i]
    return rest


def _call_errors(call: ToolCall, tools: Sequence[ToolSpec]) -> list[SchemaError]:
    """List the schema errors of the most valid instance of one expected call (see the module docstring)."""
    if call.parse_error is not None or not isinstance(call.arguments, dict):
        return validate_tool_calls([call], tools)
    args = expected_arguments(call)
    chosen = canonical_arguments(args)
    errors = validate_tool_calls([ToolCall(name=call.name, arguments=chosen)], tools)
    bad = {p for e in errors if (p := _top_param(e.path)) is not None}
    for p in sorted(bad):
        marker = args.get(p)
        if not isinstance(marker, AnyOf):
            continue
        options: list[dict] = [{**chosen, p: canonical_arguments({p: alt}).get(p)} for alt in marker.values[1:]]
        if marker.optional:
            options.append({k: v for k, v in chosen.items() if k != p})
        for cand in options:
            errs = validate_tool_calls([ToolCall(name=call.name, arguments=cand)], tools)
            if not any(_top_param(e.path) == p for e in errs):
                chosen = cand
                break
    return validate_tool_calls([ToolCall(name=call.name, arguments=chosen)], tools) if bad else errors


def check_expected_calls(
    trial: Trial,
    calls: list[ToolCall],
    *,
    level: Literal["interaction", "trial"],
    interaction: int | None = None,
) -> list[GroundTruthError]:
    """Validate one list of expected calls against the trial's tool specs.

    Parameters
    ----------
    trial : Trial
        Supplies the tool specs (``trial.tools``) and the key for the error locations.
    calls : list of ToolCall
        Expected calls (arguments may hold ``$any_of`` markers).
    level : {"interaction", "trial"}
    interaction : int, optional
        Interaction index (interaction level).

    Returns
    -------
    list of GroundTruthError
        Empty when the trial has no tool specs (nothing to check against) or every call is valid.

    Raises
    ------
    ValueError
        When the trial's specs repeat a tool name.
    """
    if not trial.tools or not calls:
        return []
    return [
        GroundTruthError(trial.agent, trial.task_id, trial.trial, level, interaction, ci, e.tool, e.kind, e.path,
                         e.message)
        for ci, call in enumerate(calls)
        for e in _call_errors(call, trial.tools)
    ]

"""Tool use: the agent's tool calls against the expected ones, and against the tools' JSON Schemas.

Catalogue entries (group ``tool_use``), scored by :func:`agentstats.scoring.tools.score_tool_calls` (optimal
one-to-one pairing of same-name calls, argument matching with ``$any_of`` markers; ``docs/scoring.md`` defines the
components) and :func:`agentstats.scoring.schema_check.validate_tool_calls`:

``tool_calls_correct``
    1 when the weighted ``overall`` of the calls (``tool_calls``) against the expected calls
    (``expected_tool_calls``) reaches ``params["tool_threshold"]`` (default 1.0), else 0. ``params``:
    ``weights`` (component weights), ``tool_threshold``, ``sequence_matters`` (else the record's
    ``tool_sequence_matters``, else false).
``tool_selection``, ``tool_parameters``, ``tool_sequence``
    The components in [0, 1]: share of calls name-matched, mean argument agreement, order (longest increasing run
    of the pairs; always scored with the order).
``tool_calls_valid``
    1 when every call satisfies its tool's JSON Schema (a call to a tool without a spec, an extra argument, a wrong
    type are violations), else 0; the specs are the record's ``tools``, else ``params["tools"]``.
``tool_calls``
    The whole trial, as :func:`agentstats.scoring.tools.score_trial_tools` scores it (each interaction's calls
    against its own expected calls, and the conversation's against the trial's): the mean ``overall`` of the parts
    scored, passed when every part passes (evidence ``passed_all``). Trial level only.

Expected calls: ``None`` (not recorded) is not applicable; an empty list is "no call should be made" only with
``params["empty_expected"] = "no_calls"``, otherwise no ground truth (not applicable), as in ``score_trial_tools``.
Tool specs: none (``None`` or an empty list) make ``tool_calls_valid`` not applicable.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentstats.metrics.base import Score, not_applicable

__all__ = ["tool_calls_correct", "tool_calls_valid", "tool_parameters", "tool_selection", "tool_sequence",
           "trial_tool_calls"]


def _score(values: Mapping[str, Any], params: Mapping[str, Any], sequence_matters: bool | None = None) -> Any:
    """``score_tool_calls`` of the record's calls against its expected calls, or a not-applicable :class:`Score`.

    Raises
    ------
    ValueError
        When ``expected_tool_calls`` or ``tool_calls`` is not a list, or for invalid weights / threshold.
    """
    expected = values.get("expected_tool_calls")
    if expected is None:
        return not_applicable("no expected tool calls")
    if not isinstance(expected, list | tuple):
        raise ValueError(f"expected_tool_calls must be a list of calls, got {type(expected).__name__}")
    if not expected and params.get("empty_expected", "no_ground_truth") != "no_calls":
        return not_applicable("no expected tool calls")
    calls = values.get("tool_calls") or []
    if not isinstance(calls, list | tuple):
        raise ValueError(f"tool_calls must be a list of calls, got {type(calls).__name__}")
    from agentstats.scoring.tools import score_tool_calls

    if sequence_matters is None:
        sequence_matters = params.get("sequence_matters")
        if sequence_matters is None:
            sequence_matters = bool(values.get("tool_sequence_matters", False))
    return score_tool_calls(calls, expected, weights=params.get("weights"),
                            tool_threshold=params.get("tool_threshold", 1.0), sequence_matters=bool(sequence_matters),
                            details=False)


def _evidence(ts: Any) -> dict[str, Any]:
    return {"overall": ts.overall, "selection": ts.selection, "parameters": ts.parameters, "sequence": ts.sequence,
            "n_actual": ts.n_actual, "n_expected": ts.n_expected, "n_correct": ts.n_correct}


def tool_calls_correct(values: Mapping[str, Any], params: Mapping[str, Any]) -> Score:
    """1 when the calls' weighted overall score reaches ``params["tool_threshold"]`` (default 1.0), else 0."""
    ts = _score(values, params)
    if isinstance(ts, Score):
        return ts
    return Score(1.0 if ts.passed else 0.0, _evidence(ts))


def tool_selection(values: Mapping[str, Any], params: Mapping[str, Any]) -> Score:
    """Share of calls paired by name with an expected call: ``pairs / max(n_actual, n_expected)``."""
    ts = _score(values, params)
    if isinstance(ts, Score):
        return ts
    return Score(ts.selection, _evidence(ts))


def tool_parameters(values: Mapping[str, Any], params: Mapping[str, Any]) -> Score:
    """Mean argument agreement over the expected calls (an unpaired expected call counts 0)."""
    ts = _score(values, params)
    if isinstance(ts, Score):
        return ts
    if ts.parameters is None:
        return not_applicable("no expected call to compare arguments with")
    return Score(ts.parameters, _evidence(ts))


def tool_sequence(values: Mapping[str, Any], params: Mapping[str, Any]) -> Score:
    """Longest run of pairs in the expected order, over the expected calls (scored with the order)."""
    ts = _score(values, params, sequence_matters=True)
    if isinstance(ts, Score):
        return ts
    if ts.sequence is None:
        return not_applicable("no expected call to order")
    return Score(ts.sequence, _evidence(ts))


def tool_calls_valid(values: Mapping[str, Any], params: Mapping[str, Any]) -> Score:
    """1 when every call satisfies its tool's JSON Schema (record's ``tools``, else ``params["tools"]``), else 0.

    Evidence: the violations, ``{"call", "tool", "kind", "path", "message"}`` each.
    """
    tools = values.get("tools")
    if tools is None:
        tools = params.get("tools")
    if not tools:
        return not_applicable("no tool specs")
    calls = values.get("tool_calls") or []
    from agentstats.scoring.schema_check import validate_tool_calls

    errors = validate_tool_calls(calls, tools)
    return Score(0.0 if errors else 1.0, {"violations": [
        {"call": e.call_index, "tool": e.tool, "kind": e.kind, "path": e.path, "message": e.message}
        for e in errors]})


def trial_tool_calls(values: Mapping[str, Any], params: Mapping[str, Any]) -> Score:
    """Mean ``overall`` of :func:`~agentstats.scoring.tools.score_trial_tools` over the parts scored (trial level).

    Reads the trial's ``interactions``, its ``expected_tool_calls`` and its ``tools``; ``params["weights"]``: the
    component weights. Not applicable when no part has expected calls. Evidence: ``passed_all`` (every part passed).
    """
    interactions = values.get("interactions")
    if interactions is None:
        return not_applicable("no interactions (tool_calls is computed per trial)")
    from agentstats.records.trial import Trial
    from agentstats.scoring.tools import score_trial_tools

    trial = Trial.model_construct(agent="", task_id="", trial=0, interactions=list(interactions),
                                  expected_tool_calls=list(values.get("expected_tool_calls") or []),
                                  tools=list(values.get("tools") or []))
    scores = score_trial_tools(trial, **({"weights": params["weights"]} if params.get("weights") is not None else {}))
    if scores.passed is None:
        return not_applicable("no expected tool calls")
    parts = [s.overall for s in [*scores.interactions, scores.trial] if s is not None]
    return Score(sum(parts) / len(parts), {"passed_all": scores.passed})

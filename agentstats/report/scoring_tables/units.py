"""Scored units: one list of actual calls scored against one list of expected calls, for every trial.

A *scored unit* is ``level="interaction"`` (an interaction's own calls against its ``expected_tool_calls``, Fair
Forge ``ground_truth_agentic``) or ``level="trial"`` (every call of the conversation against the trial-level
``expected_tool_calls``, tau-bench ``info.task.actions``).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping
from typing import Any, Literal

from agentstats.records.trial import Status, ToolCall, Trial
from agentstats.scoring.tools import ArgMatchOptions, GroundTruthError, ToolScore, score_trial_tools

__all__ = ["EmptyExpected", "scored_units"]

EmptyExpected = Literal["no_ground_truth", "no_calls"]


def scored_units(
    trials: Iterable[Trial],
    *,
    tool_threshold: float = 1.0,
    weights: Mapping[str, float] | None = None,
    options: ArgMatchOptions | None = None,
    empty_expected: EmptyExpected = "no_ground_truth",
    details: bool = False,
    read_only: Collection[str] = (),
    invalid_ground_truth: Literal["exclude", "score"] = "exclude",
    ground_truth_errors: list[GroundTruthError] | None = None,
) -> Iterator[tuple[Trial, str, int | None, ToolScore, list[ToolCall], list[ToolCall]]]:
    """Yield ``(trial, level, interaction index, score, actual calls, expected calls)`` per scored unit.

    Only ``status == "completed"`` trials are scored. Ground-truth errors found on the way are appended to
    ``ground_truth_errors`` when a list is given. Other arguments: as in
    :func:`agentstats.scoring.tools.score_trial_tools`.

    Raises
    ------
    TypeError
        When an element is not a :class:`~agentstats.records.trial.Trial`.
    """
    kw: dict[str, Any] = {"tool_threshold": tool_threshold, "empty_expected": empty_expected, "details": details,
                          "read_only": read_only, "invalid_ground_truth": invalid_ground_truth}
    if weights is not None:
        kw["weights"] = weights
    if options is not None:
        kw["options"] = options
    for t in trials:
        if not isinstance(t, Trial):
            raise TypeError(f"expected Trial objects, got {type(t).__name__}")
        if t.status != Status.completed:
            continue
        ts = score_trial_tools(t, **kw)
        if ground_truth_errors is not None:
            ground_truth_errors.extend(ts.ground_truth_errors)
        for ii, s in enumerate(ts.interactions):
            if s is not None:
                it = t.interactions[ii]
                yield t, "interaction", ii, s, list(it.tool_calls), list(it.expected_tool_calls)
        if ts.trial is not None:
            calls = [c for it in t.interactions for c in it.tool_calls]
            yield t, "trial", None, ts.trial, calls, list(t.expected_tool_calls)

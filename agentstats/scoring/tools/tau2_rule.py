"""tau2-bench's action rule, computed with the tool-call scorer.

tau2-bench (Barres et al. 2025, arXiv 2506.07982; ``Action.compare_with_tool_call`` in
``src/tau2/data_model/tasks.py`` and ``evaluator_action.py``) says an expected action *occurred* when some
tool call of the conversation has the same tool name and equal values for the expected action's argument keys,
or only for its ``compare_args`` when those are given (an empty ``compare_args`` compares the name only).
Arguments the call has beyond those keys do not count. Values are compared exactly (Python ``==``: ``1 == 1.0``,
no string normalization, JSON held in strings compared as text).

:func:`tau2_action_matches` reproduces that label for every expected action of a trial read by
:mod:`agentstats.io.readers.tau2` with :func:`~agentstats.scoring.tools.score.score_tool_calls` and
:data:`TAU2_OPTIONS`: the actions the agent was expected to make (``requestor: "assistant"``) against the
agent's calls, and the simulated user's expected actions (``requestor: "user"``) against the user's own calls.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from agentstats.records.trial import ToolCall, Trial
from agentstats.scoring.tools.matching import ArgMatchOptions
from agentstats.scoring.tools.score import score_tool_calls

__all__ = ["TAU2_OPTIONS", "ActionMatch", "tau2_action_matches"]

#: Exact values, extra arguments of the call ignored, JSON in strings compared as text: tau2's comparison.
TAU2_OPTIONS = ArgMatchOptions(extra_args="ignore", parse_json_strings=False)


@dataclass(frozen=True, slots=True)
class ActionMatch:
    """One expected action and whether it occurred.

    Attributes
    ----------
    action_id : str or None
        tau2's ``action_id``.
    name : str
        Tool name.
    requestor : {"assistant", "user"}
        Who was expected to make the call.
    matched : bool
        Whether a call of that requestor matches by tau2's rule (computed here).
    label : bool or None
        tau2's own ``action_match`` for this action in the file (``None`` when the file has no label).
    """

    action_id: str | None
    name: str
    requestor: Literal["assistant", "user"]
    matched: bool
    label: bool | None

    @property
    def agrees(self) -> bool | None:
        """``matched == label``; ``None`` without a label."""
        return None if self.label is None else self.matched == self.label


def _restricted(call: ToolCall | dict[str, Any]) -> ToolCall:
    c = call if isinstance(call, ToolCall) else ToolCall.model_validate(call)
    extra = c.__pydantic_extra__ or {}
    keys = extra.get("compare_args")
    args = c.arguments if isinstance(c.arguments, dict) else {}
    if keys is not None:
        args = {k: args[k] for k in keys if k in args}
    return ToolCall(name=c.name, arguments=args, id=c.id)


def tau2_action_matches(trial: Trial) -> list[ActionMatch]:
    """Reproduce tau2's ``action_match`` for every expected action of a tau2 trial.

    Parameters
    ----------
    trial : Trial
        Read by :mod:`agentstats.io.readers.tau2`: ``expected_tool_calls`` (assistant actions, with ``compare_args``),
        ``meta["expected_user_tool_calls"]``, the interactions' ``tool_calls`` and ``user_tool_calls``, and
        tau2's labels in ``meta["action_checks"]``.

    Returns
    -------
    list of ActionMatch
        One per action tau2 checked (``meta["action_checks"]``, each with its own action and label), in the
        file's order; for a trial without recorded checks, one per expected action (assistant's, then the
        user's) with ``label=None``.

    Notes
    -----
    For one expected action the scorer pairs it with the same-name call whose arguments agree best
    (optimal assignment), and the pair is correct when every compared argument matches: exactly "some call
    matches", tau2's rule.
    """
    agent_calls: list[Any] = []
    user_calls: list[Any] = []
    for turn in trial.interactions:
        agent_calls.extend(turn.tool_calls)
        user_calls.extend((turn.__pydantic_extra__ or {}).get("user_tool_calls") or [])
    checks = trial.meta.get("action_checks")
    items: list[tuple[Any, Any, bool | None]] = []  # (requestor, expected call, label)
    if checks:
        for c in checks:
            call = {"id": c.get("action_id"), "name": c["name"], "arguments": c.get("arguments") or {},
                    "compare_args": c.get("compare_args")}
            label = c.get("action_match")
            items.append((c.get("requestor", "assistant"), call, None if label is None else bool(label)))
    else:
        items += [("assistant", e, None) for e in trial.expected_tool_calls]
        items += [("user", e, None) for e in trial.meta.get("expected_user_tool_calls") or []]
    out: list[ActionMatch] = []
    for requestor, exp, label in items:
        e = _restricted(exp)
        actual = agent_calls if requestor == "assistant" else user_calls
        score = score_tool_calls(actual, [e], options=TAU2_OPTIONS, details=False)
        matched = any(p.correct for p in score.pairs)
        out.append(ActionMatch(e.id, e.name, requestor, matched, label))
    return out

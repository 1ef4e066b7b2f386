"""Metrics of captured runs: what they compare, and how they are computed from stored records at ``end_run()``.

A metric attached to a node (``@agentstats.node("answer", metrics=["exact_match"])``) is computed on every
invocation of that node: the node's output (its ``answer`` field when it returns a mapping) against the expected
value found in its inputs (the state's ``expected_answer`` field). A metric attached to the application
(``agentstats.run(..., metrics=[...])``) is computed per message (each top-level call: its answer against the state's
expected answer) and per conversation (the mean over its messages; passed when every message passed), and a trial
with no outcome of its own succeeds when all its application-level metrics pass.

Built-in names map to the project's scorers: the answer matchers of :mod:`agentstats.scoring.answers`
(``exact_match``, ``normalized_match``, ``numeric_match``, ``token_f1``, ``contains_match``, ``auto_match``), the
judge (``answer_correctness``: :meth:`agentstats.scoring.judge.Judge.judge_answers`, with the run's ``judge``), and
the deterministic tool-call scorer (``tool_calls``: :func:`agentstats.scoring.tools.score_trial_tools` against the
state's ``expected_tool_calls``; application level only).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agentstats.scoring.answers import (
    AnswerMatch,
    auto_match,
    contains_match,
    exact_match,
    normalized_match,
    numeric_match,
    token_f1,
)

__all__ = ["ANSWER_MATCHERS", "JUDGE_METRIC", "TOOL_METRIC", "Metric", "as_metric"]

#: Built-in answer metrics: name -> matcher ``(answer, expected) -> AnswerMatch``.
ANSWER_MATCHERS: dict[str, Callable[[Any, Any], AnswerMatch]] = {
    "exact_match": exact_match,
    "normalized_match": normalized_match,
    "numeric_match": numeric_match,
    "token_f1": token_f1,
    "contains_match": contains_match,
    "auto_match": auto_match,
}
#: The judge's answer metric (needs ``judge=`` on the run; the deterministic judge by default).
JUDGE_METRIC = "answer_correctness"
#: The deterministic tool-call metric (application level).
TOOL_METRIC = "tool_calls"


@dataclass(frozen=True)
class Metric:
    """A metric of captured records.

    Parameters
    ----------
    name : str
        Name in ``metric_results.metric``.
    fn : callable, optional
        ``fn(answer, expected) -> float | bool | AnswerMatch``; ``None`` for the built-in names.
    threshold : float
        A value passes when ``>= threshold`` (scores in [0, 1]; 1.0: fully correct).
    expected_field : str
        Field of the state holding the reference (``expected_answer``).
    needs_expected : bool
        Skip records without a reference (default); a custom metric may score every record.
    """

    name: str
    fn: Callable[[Any, Any], Any] | None = None
    threshold: float = 1.0
    expected_field: str = "expected_answer"
    needs_expected: bool = True

    def score(self, answer: Any, expected: Any) -> tuple[float | None, dict[str, Any]]:
        """``(value, detail)`` of one record; value ``None`` when it cannot be scored."""
        fn = self.fn if self.fn is not None else ANSWER_MATCHERS.get(self.name)
        if fn is None:
            raise ValueError(f"metric {self.name!r} is computed by the run (judge or tool scorer), not per record")
        out = fn(answer, expected)
        if isinstance(out, AnswerMatch):
            return float(out.score), {"matcher": out.matcher, **(out.details or {})}
        if isinstance(out, bool):
            return float(out), {}
        if out is None:
            return None, {}
        return float(out), {}


def as_metric(spec: str | Metric | Callable[[Any, Any], Any]) -> Metric:
    """Turn a metric given by name, as a :class:`Metric` or as a function ``(answer, expected)`` into a Metric.

    Raises
    ------
    ValueError
        For an unknown name (the known names are listed).
    """
    if isinstance(spec, Metric):
        return spec
    if isinstance(spec, str):
        if spec in ANSWER_MATCHERS or spec in (JUDGE_METRIC, TOOL_METRIC):
            return Metric(spec)
        known = ", ".join([*ANSWER_MATCHERS, JUDGE_METRIC, TOOL_METRIC])
        raise ValueError(f"unknown metric {spec!r}; known: {known}, or pass a function (answer, expected)")
    if callable(spec):
        return Metric(getattr(spec, "__name__", "metric"), fn=spec)
    raise TypeError(f"a metric is a name, a Metric or a function, got {type(spec).__name__}")

"""Correctness: the answer against the expected answer, by a deterministic matcher, the judge, or a function.

Catalogue entries (group ``correctness``), each passed when its value is 1 (``lower_limit`` 1.0):

``exact_match``, ``normalized_match``, ``numeric_match``, ``token_f1``, ``contains_match``, ``auto_match``
    The answer matchers of :mod:`agentstats.scoring.answers` (``exact``, ``normalized``, ``numeric``, ``token_f1``,
    ``contains``, ``auto``; SQuAD normalisation, Rajpurkar et al. 2016, arXiv 1606.05250; the ``auto`` rules and
    their sources are in :func:`agentstats.scoring.answers.auto_match`). The value is the matcher's score, the
    evidence ``{"matcher": name, **details}``; ``params`` are the matcher's options (``rel_tol``, ``which`` ...).
    :data:`MATCHER_METRICS` names the entry of each matcher (the loop's ``evaluate.matcher`` and ``agentstats
    score --matcher`` take the matcher names).
``answer_correctness``
    The judge's verdict on the answer (:meth:`agentstats.scoring.judge.Judge.judge_answers`): ``params["judge"]``
    is a judge or a judge name (``"deterministic"``, ``"openai"``; :func:`agentstats.scoring.judge.resolve_judge`),
    and without one the metric is not applicable ("no judge configured", as for the catalogue's other judge
    methods). The evidence holds the verdict's ``status``, its ``reasoning`` and the whole verdict (``verdict``,
    a JSON-ready dict); a verdict the judge could not give leaves the value missing (``status`` ``judge_missing``).

A record without an expected answer (``None``) is not applicable to every one of them. Live capture
(:mod:`agentstats.capture`) uses these entries by name, and turns a function ``(answer, expected)`` into a metric
with :func:`function_metric`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agentstats.metrics.base import Level, Metric, Score, not_applicable
from agentstats.scoring.answers import (
    AnswerMatch,
    auto_match,
    contains_match,
    exact_match,
    normalized_match,
    numeric_match,
)
from agentstats.scoring.answers import token_f1 as squad_token_f1

__all__ = ["MATCHERS", "MATCHER_METRICS", "answer_correctness", "function_metric", "match_score"]


def match_score(out: Any) -> Score:
    """Turn what a matcher or a user function returned into a :class:`Score`.

    An :class:`~agentstats.scoring.answers.AnswerMatch` gives its score with evidence ``{"matcher": name,
    **details}``; ``True`` / ``False`` give 1 / 0; a number gives itself; ``None`` gives no value (and no reason:
    the function could not score the record). Evidence is empty except for a match.

    Raises
    ------
    TypeError, ValueError
        When ``out`` is not a number (``float(out)`` fails).
    """
    if isinstance(out, AnswerMatch):
        return Score(float(out.score), {"matcher": out.matcher, **(out.details or {})})
    if isinstance(out, bool):
        return Score(float(out), {})
    if out is None:
        return Score(None, {})
    return Score(float(out), {})


def _matcher_method(matcher: Callable[..., AnswerMatch], name: str) -> Callable[[Mapping[str, Any],
                                                                                   Mapping[str, Any]], Score]:
    def method(values: Mapping[str, Any], params: Mapping[str, Any]) -> Score:
        expected = values.get("expected")
        if expected is None:
            return not_applicable("no expected answer")
        return match_score(matcher(values.get("output"), expected, **params))

    method.__name__ = name
    method.__doc__ = (f"``agentstats.scoring.answers.{matcher.__name__}`` of the answer (``output``) against the "
                      "expected answer(s) (``expected``; best over a list); ``params`` are the matcher's options. "
                      "Not applicable without an expected answer.")
    return method


#: The matchers, by the name :func:`agentstats.scoring.answers.match_answer` knows them.
MATCHERS: dict[str, Callable[[Mapping[str, Any], Mapping[str, Any]], Score]] = {
    "exact": _matcher_method(exact_match, "exact"),
    "normalized": _matcher_method(normalized_match, "normalized"),
    "numeric": _matcher_method(numeric_match, "numeric"),
    "token_f1": _matcher_method(squad_token_f1, "token_f1"),
    "contains": _matcher_method(contains_match, "contains"),
    "auto": _matcher_method(auto_match, "auto"),
}
#: The catalogue entry of each matcher name (``evaluate.matcher: numeric`` is the entry ``numeric_match``).
MATCHER_METRICS: dict[str, str] = {
    "exact": "exact_match", "normalized": "normalized_match", "numeric": "numeric_match", "token_f1": "token_f1",
    "contains": "contains_match", "auto": "auto_match",
}


def answer_correctness(records: Sequence[Mapping[str, Any]], params: Mapping[str, Any]) -> list[Score]:
    """Judge each answer (``output``) against its expected answer (``expected``), all records in one batch.

    The question (``input``) is given to the judge when it is text.

    ``params["judge"]``: a :class:`~agentstats.scoring.judge.Judge` or a name for
    :func:`~agentstats.scoring.judge.resolve_judge` (``params["matcher"]`` is the deterministic judge's matcher,
    ``auto`` by default). Not applicable without a judge or without an expected answer. Value: the verdict's score
    (missing when the judge gave none); evidence: ``status``, ``reasoning`` and ``verdict`` (the verdict as JSON).
    """
    judge = params.get("judge")
    if judge is None:
        return [not_applicable("no judge configured") for _ in records]
    from agentstats.scoring.judge import AnswerItem, resolve_judge

    todo = [i for i, v in enumerate(records) if v.get("expected") is not None]
    out = [not_applicable("no expected answer") for _ in records]
    if not todo:
        return out
    items = []
    for i in todo:
        a, q = records[i].get("output"), records[i].get("input")
        items.append(AnswerItem(answer=a if a is None else str(a), expected=records[i].get("expected"),
                                query=q if isinstance(q, str) else None))
    verdicts = resolve_judge(judge, params.get("matcher", "auto")).judge_answers(items)
    for i, v in zip(todo, verdicts, strict=True):
        out[i] = Score(v.score, {"status": v.status, "reasoning": v.reasoning, "verdict": v.model_dump(mode="json")})
    return out


answer_correctness.batch = True  # type: ignore[attr-defined]


def call_function(values: Mapping[str, Any], params: Mapping[str, Any]) -> Score:
    """``params["fn"](answer, expected)`` as a score (:func:`match_score`): a user's correctness function.

    Not applicable without an expected answer unless ``params["needs_expected"]`` is false.
    """
    expected = values.get("expected")
    if expected is None and params.get("needs_expected", True):
        return not_applicable("no expected answer")
    return match_score(params["fn"](values.get("output"), expected))


def function_metric(fn: Callable[[Any, Any], Any], name: str | None = None, *, lower_limit: float | None = 1.0,
                    upper_limit: float | None = None, expected_field: str | None = None, needs_expected: bool = True,
                    level: Level = "interaction") -> Metric:
    """Make a metric of a function ``fn(answer, expected) -> float | bool | AnswerMatch | None``.

    Parameters
    ----------
    fn : callable
        Scores one record: the answer (role ``output``) against the expected answer (role ``expected``); ``None``
        when it cannot (the value is then missing).
    name : str, optional
        The metric's name (one column of results); default ``fn.__name__``.
    lower_limit, upper_limit : float, optional
        Threshold: passed when ``value >= lower_limit`` (default 1.0: fully correct) and ``value <= upper_limit``.
    expected_field : str, optional
        The field holding the reference, when not the level's default (``expected_answer`` of an interaction; in
        live capture, the node inputs' field).
    needs_expected : bool
        Not applicable to records without a reference (default); false calls ``fn`` with ``None`` then.
    level : {"interaction", "node", "trial"}

    Returns
    -------
    Metric
        Group ``correctness``, method ``function``, value range the real line.

    Raises
    ------
    TypeError
        When ``fn`` is not callable.
    ValueError
        For a limit that is not a number (see :class:`~agentstats.metrics.base.Metric`).
    """
    if not callable(fn):
        raise TypeError(f"a metric function must be callable, got {type(fn).__name__}")
    label = name if name is not None else str(getattr(fn, "__name__", "metric"))
    return Metric(
        name=label, group="correctness", level=level, roles=("output", "expected"), method="function",
        methods={"function": call_function}, value_range=(-math.inf, math.inf), lower_limit=lower_limit,
        upper_limit=upper_limit, fields={"expected": expected_field} if expected_field else {},
        params={"fn": fn, "needs_expected": needs_expected},
        description=f"{label}: a function (answer, expected)", source="user function",
    )

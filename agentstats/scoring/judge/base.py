"""The judge interface, the deterministic judge, and choosing a judge by name.

:class:`Judge` is what :func:`agentstats.scoring.score_trials` needs: ``judge_answers(items)`` (and, for LLM tool
metrics, ``judge_tool_calls(items, metric)``) returning one :class:`~agentstats.scoring.judge.verdicts.JudgeVerdict`
per item. :class:`DeterministicJudge` answers with the matchers of :mod:`agentstats.scoring.answers`;
:class:`agentstats.scoring.judge.llm.OpenAIJudge` asks a model.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any

from agentstats.scoring.answers import MATCHERS, AnswerMatch, match_answer
from agentstats.scoring.judge.verdicts import AnswerItem, JudgeStats, JudgeVerdict, ToolCallItem, ToolMetric

__all__ = ["DeterministicJudge", "Judge", "JudgeAuthError", "JudgeConfigError", "ProgressFn"]

#: ``progress(done, total)``, called while a judge works.
ProgressFn = Callable[[int, int], None]


class JudgeConfigError(ValueError):
    """The judge cannot be set up (no API key, unknown mode, prompt or matcher)."""


class JudgeAuthError(JudgeConfigError):
    """The judge endpoint refused the credentials (HTTP 401 or 403).

    Raised by the first refused request; no further request is sent, and verdicts already obtained stay in the
    cache. Retrying cannot help, so this is a configuration error, not a missing verdict.
    """


class Judge(ABC):
    """Interface of a judge. Any object with these methods works in :func:`agentstats.scoring.score_trials`.

    Attributes
    ----------
    name : str
        Short description, recorded with each verdict (``judge`` field).
    stats : JudgeStats
        Counts over the judge's lifetime.
    supports_tool_metrics : bool
        Whether :meth:`judge_tool_calls` is implemented.
    """

    name: str = "judge"
    supports_tool_metrics: bool = False

    def __init__(self) -> None:
        self.stats = JudgeStats()

    @abstractmethod
    def judge_answers(self, items: Sequence[AnswerItem], progress: ProgressFn | None = None) -> list[JudgeVerdict]:
        """One verdict per item, in order (``metric="answer_correctness"``)."""

    def check_available(self) -> None:
        """Make sure the judge can give verdicts before any work is done; a judge without an endpoint always can.

        Raises
        ------
        agentstats.llm.probe.EndpointUnavailable
            From a judge behind an endpoint that cannot be reached, says it is unavailable or refuses the key
            (:meth:`agentstats.scoring.judge.llm.OpenAIJudge.check_available`).
        """
        return None

    def judge_tool_calls(
        self,
        items: Sequence[ToolCallItem],
        metric: ToolMetric = "tool_call_relevance",
        progress: ProgressFn | None = None,
    ) -> list[JudgeVerdict]:
        """One verdict per tool call, in order, for ``metric``.

        Raises
        ------
        NotImplementedError
            For judges without LLM tool metrics (the deterministic one: use
            :func:`agentstats.scoring.tools.score_tool_calls` for deterministic tool scoring).
        """
        raise NotImplementedError(f"{type(self).__name__} does not judge tool calls ({metric})")


def _evidence(m: AnswerMatch) -> tuple[dict[str, Any], str]:
    """Verdict details and a one-line reasoning for a matcher result: which rule decided, and whether leniently."""
    rule = str(m.details.get("auto", m.matcher))
    lenient = bool(m.details.get("lenient", False))
    details: dict[str, Any] = {"matcher": m.matcher, "rule": rule, "lenient": lenient}
    for k in ("expected_index", "matched"):
        v = m.details.get(k)
        if v is not None:
            details[k] = v
    verdict = "matches" if m.score >= 1.0 else ("partly matches" if m.score > 0 else "does not match")
    how = {"contains": "the short expected answer occurs in the answer (lenient containment)",
           "normalized": "SQuAD-normalized exact match",
           "numeric": "the answer's last number against the expected number"}.get(rule, f"matcher {rule!r}")
    return details, f"answer {verdict} the reference: {how}"


class DeterministicJudge(Judge):
    """Answer correctness by a deterministic matcher (no model, no cost).

    Parameters
    ----------
    matcher : str
        Passed to :func:`agentstats.scoring.answers.match_answer`: ``"auto"`` (default: numeric for numeric
        references, else normalized exact match, else the lenient containment of a short reference; see
        :func:`agentstats.scoring.answers.auto_match`), ``"exact"``, ``"normalized"``, ``"numeric"``,
        ``"token_f1"``, ``"contains"``.
    **matcher_kwargs
        Further keyword arguments for ``match_answer`` (e.g. a numeric tolerance).

    Raises
    ------
    JudgeConfigError
        For an unknown matcher.

    Notes
    -----
    Every verdict's ``details`` name the matcher, the ``rule`` that decided and whether it is ``lenient``; its
    ``reasoning`` says the same in words. An interaction without an answer (``answer is None``) scores 0: the agent
    did not answer. That is a verdict, not a judge failure.
    """

    supports_tool_metrics = False

    def __init__(self, matcher: str = "auto", **matcher_kwargs: Any):
        super().__init__()
        if matcher not in MATCHERS:
            raise JudgeConfigError(f"unknown matcher {matcher!r}; choose one of {sorted(MATCHERS)}")
        self.matcher = matcher
        self.matcher_kwargs = matcher_kwargs
        self.name = f"deterministic:{matcher}"

    def judge_answers(self, items: Sequence[AnswerItem], progress: ProgressFn | None = None) -> list[JudgeVerdict]:
        """Score answers with the deterministic matcher (one verdict per item, in order)."""
        t0 = time.perf_counter()
        out: list[JudgeVerdict] = []
        for i, it in enumerate(items):
            if it.answer is None:
                v = JudgeVerdict(metric="answer_correctness", status="ok", score=0.0, reasoning="no answer given",
                                 judge=self.name)
            else:
                m = match_answer(it.answer, it.expected, matcher=self.matcher, **self.matcher_kwargs)
                details, reasoning = _evidence(m)
                v = JudgeVerdict(metric="answer_correctness", status="ok", score=float(m.score), reasoning=reasoning,
                                 details=details, judge=self.name)
            out.append(v)
            self.stats.requested += 1
            self.stats.add(v)
            if progress:
                progress(i + 1, len(items))
        self.stats.wall_s += time.perf_counter() - t0
        return out

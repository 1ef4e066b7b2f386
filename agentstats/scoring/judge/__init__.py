"""Judges: turn (answer, reference) pairs and tool calls into scored verdicts.

The package, by seam:

:mod:`~agentstats.scoring.judge.base`
    the :class:`Judge` interface and :class:`DeterministicJudge` (answer matchers, no network);
:mod:`~agentstats.scoring.judge.resolve`
    :func:`resolve_judge` (a name or object -> a judge);
:mod:`~agentstats.scoring.judge.llm`
    :class:`OpenAIJudge`, any OpenAI-compatible endpoint, a thin adapter over the one LLM client
    (:class:`agentstats.llm.client.LLMClient`: cache with claims, retries, concurrency, prices);
:mod:`~agentstats.scoring.judge.verdicts`
    what a judge returns (:class:`JudgeVerdict`, :class:`JudgeStats`), what the model must return
    (:class:`Verdict` and its tool-metric forms) and the items to judge.

The judge's prompts are on the prompt shelf (:mod:`agentstats.llm.prompts.judge`).
"""

from agentstats.scoring.judge.base import (
    DeterministicJudge,
    Judge,
    JudgeAuthError,
    JudgeConfigError,
    ProgressFn,
)
from agentstats.scoring.judge.llm import OpenAIJudge
from agentstats.scoring.judge.resolve import resolve_judge
from agentstats.scoring.judge.verdicts import (
    AnswerItem,
    JudgeStats,
    JudgeVerdict,
    ParameterGroundingVerdict,
    ToolCallItem,
    ToolMetric,
    ToolRelevanceVerdict,
    Verdict,
    verdicts_frame,
)

__all__ = [
    "AnswerItem",
    "DeterministicJudge",
    "Judge",
    "JudgeAuthError",
    "JudgeConfigError",
    "JudgeStats",
    "JudgeVerdict",
    "OpenAIJudge",
    "ParameterGroundingVerdict",
    "ProgressFn",
    "ToolCallItem",
    "ToolMetric",
    "ToolRelevanceVerdict",
    "Verdict",
    "resolve_judge",
    "verdicts_frame",
]

"""Judges: turn (answer, reference) pairs and tool calls into scored verdicts.

The package, by seam:

:mod:`~agentstats.scoring.judge.base`
    the :class:`Judge` interface and :class:`DeterministicJudge` (answer matchers, no network);
:mod:`~agentstats.scoring.judge.resolve`
    :func:`resolve_judge` (a name or object -> a judge);
:mod:`~agentstats.scoring.judge.llm`
    :class:`OpenAIJudge`, any OpenAI-compatible endpoint through ``instructor`` + ``openai``;
:mod:`~agentstats.scoring.judge.verdicts`
    what a judge returns (:class:`JudgeVerdict`, :class:`JudgeStats`), what the model must return
    (:class:`Verdict` and its tool-metric forms) and the items to judge;
:mod:`~agentstats.llm.transport`
    error classification, ``Retry-After``, loopback detection, event loops;
:mod:`~agentstats.llm.cache`
    the on-disk verdict cache with claims on work in flight;
:mod:`~agentstats.scoring.judge.prompts`
    versioned prompts;
:mod:`~agentstats.llm.pricing`
    cost per call from a price table.
"""

from agentstats.llm.cache import JudgeCache, cache_key, canonical_json
from agentstats.llm.pricing import DEFAULT_PRICES, cost_usd
from agentstats.scoring.judge.base import (
    DeterministicJudge,
    Judge,
    JudgeAuthError,
    JudgeConfigError,
    ProgressFn,
)
from agentstats.scoring.judge.llm import OpenAIJudge
from agentstats.scoring.judge.prompts import PROMPTS, PromptTemplate
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
    "DEFAULT_PRICES",
    "PROMPTS",
    "AnswerItem",
    "DeterministicJudge",
    "Judge",
    "JudgeAuthError",
    "JudgeCache",
    "JudgeConfigError",
    "JudgeStats",
    "JudgeVerdict",
    "OpenAIJudge",
    "ParameterGroundingVerdict",
    "ProgressFn",
    "PromptTemplate",
    "ToolCallItem",
    "ToolMetric",
    "ToolRelevanceVerdict",
    "Verdict",
    "cache_key",
    "canonical_json",
    "cost_usd",
    "resolve_judge",
    "verdicts_frame",
]

"""Scoring: deterministic tool-call and answer correctness, LLM judge, trial outcomes.

Deterministic parts: :mod:`agentstats.scoring.tools` (tool-call correctness),
:mod:`agentstats.scoring.schema_check` (JSON-Schema validation of calls), :mod:`agentstats.scoring.answers`
(answer matchers); the LLM judge (:mod:`agentstats.scoring.judge`) with its cache and versioned prompts;
one outcome rule per trial (:mod:`agentstats.scoring.outcomes`).
"""

from agentstats.scoring.answers import AnswerMatch, match_answer
from agentstats.scoring.fair_forge import AgenticMetricView, ToolCorrectnessView, fair_forge_frame, fair_forge_view
from agentstats.scoring.judge import (
    PROMPTS,
    AnswerItem,
    DeterministicJudge,
    Judge,
    JudgeAuthError,
    JudgeCache,
    JudgeConfigError,
    JudgeStats,
    JudgeVerdict,
    OpenAIJudge,
    ParameterGroundingVerdict,
    PromptTemplate,
    ToolCallItem,
    ToolRelevanceVerdict,
    Verdict,
    resolve_judge,
    verdicts_frame,
)
from agentstats.scoring.outcomes import ScoringResult, score_trials
from agentstats.scoring.schema_check import SchemaError, validate_tool_calls
from agentstats.scoring.tools import (
    AnyOf,
    ArgMatchOptions,
    StringNormalization,
    ToolScore,
    TrialToolScores,
    bfcl_options,
    score_tool_calls,
    score_trial_tools,
)

__all__ = [
    "PROMPTS",
    "AgenticMetricView",
    "AnswerItem",
    "AnswerMatch",
    "AnyOf",
    "ArgMatchOptions",
    "DeterministicJudge",
    "Judge",
    "JudgeAuthError",
    "JudgeCache",
    "JudgeConfigError",
    "JudgeStats",
    "JudgeVerdict",
    "OpenAIJudge",
    "ParameterGroundingVerdict",
    "PromptTemplate",
    "SchemaError",
    "ScoringResult",
    "StringNormalization",
    "ToolCallItem",
    "ToolCorrectnessView",
    "ToolRelevanceVerdict",
    "ToolScore",
    "TrialToolScores",
    "Verdict",
    "bfcl_options",
    "fair_forge_frame",
    "fair_forge_view",
    "match_answer",
    "resolve_judge",
    "score_tool_calls",
    "score_trial_tools",
    "score_trials",
    "validate_tool_calls",
    "verdicts_frame",
]

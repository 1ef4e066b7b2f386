"""Scoring: deterministic tool-call and answer correctness, LLM judge, trial outcomes, report tables.

Deterministic parts: :mod:`agentstats.scoring.tools` (tool-call correctness, read-only calls, ground-truth
checks), :mod:`agentstats.scoring.schema_check` (JSON-Schema validation of calls), :mod:`agentstats.scoring.answers`
(answer matchers), :mod:`agentstats.scoring.bfcl` (BFCL's verdict reproduced); the judges
(:mod:`agentstats.scoring.judge`), which send through the LLM client and its prompt shelf (:mod:`agentstats.llm`);
outcomes per trial through the one
outcome rule of :meth:`agentstats.records.trial.Trial.outcome` (:mod:`agentstats.scoring.outcomes`); report tables
(:mod:`agentstats.report.scoring_tables`).
"""

from agentstats.scoring.answers import AnswerMatch, match_answer
from agentstats.scoring.fair_forge import AgenticMetricView, ToolCorrectnessView, fair_forge_frame, fair_forge_view
from agentstats.scoring.judge import (
    AnswerItem,
    DeterministicJudge,
    Judge,
    JudgeAuthError,
    JudgeConfigError,
    JudgeStats,
    JudgeVerdict,
    OpenAIJudge,
    ParameterGroundingVerdict,
    ToolCallItem,
    ToolRelevanceVerdict,
    Verdict,
    resolve_judge,
    verdicts_frame,
)
from agentstats.scoring.outcomes import ScoringError, ScoringResult, score_trials
from agentstats.scoring.schema_check import SchemaError, validate_tool_calls
from agentstats.scoring.tools import (
    AnyOf,
    ArgMatchOptions,
    GroundTruthError,
    StringNormalization,
    ToolScore,
    TrialToolScores,
    bfcl_options,
    read_only_tools,
    score_tool_calls,
    score_trial_tools,
)

__all__ = [
    "AgenticMetricView",
    "AnswerItem",
    "AnswerMatch",
    "AnyOf",
    "ArgMatchOptions",
    "DeterministicJudge",
    "GroundTruthError",
    "Judge",
    "JudgeAuthError",
    "JudgeConfigError",
    "JudgeStats",
    "JudgeVerdict",
    "OpenAIJudge",
    "ParameterGroundingVerdict",
    "SchemaError",
    "ScoringError",
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
    "read_only_tools",
    "resolve_judge",
    "score_tool_calls",
    "score_trial_tools",
    "score_trials",
    "validate_tool_calls",
    "verdicts_frame",
]

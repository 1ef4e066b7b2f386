"""Deterministic tool-call correctness: actual calls against expected calls.

The package, by seam:

:mod:`~agentstats.scoring.tools.markers`
    expected-value markers (:class:`AnyOf`: acceptable alternatives, optional parameters) and BFCL's
    ``possible_answer`` conversion;
:mod:`~agentstats.scoring.tools.matching`
    argument value comparison (:class:`ArgMatchOptions`, string normalization, lenient rules, BFCL's type rules);
:mod:`~agentstats.scoring.tools.pairing`
    the argument score of one pair and the optimal one-to-one assignment;
:mod:`~agentstats.scoring.tools.utilization`
    whether tool results are used downstream;
:mod:`~agentstats.scoring.tools.read_only`
    which tools do not change state (tool-spec flags, the tau-bench airline list);
:mod:`~agentstats.scoring.tools.ground_truth`
    expected calls that violate their tool's JSON-Schema (dataset errors);
:mod:`~agentstats.scoring.tools.score`
    :func:`score_tool_calls`, :func:`score_trial_tools` and their results.
"""

from agentstats.scoring.tools.ground_truth import GroundTruthError, check_expected_calls
from agentstats.scoring.tools.markers import AnyOf, from_possible_answer
from agentstats.scoring.tools.matching import (
    BFCL_STRING_NORMALIZATION,
    LENIENT_RULES,
    ArgMatchOptions,
    StringNormalization,
    bfcl_options,
    match_value,
)
from agentstats.scoring.tools.pairing import ArgDiff
from agentstats.scoring.tools.read_only import (
    TAU_BENCH_AIRLINE_READ_ONLY,
    TAU_BENCH_AIRLINE_TOOLS,
    is_read_only_spec,
    read_only_tools,
)
from agentstats.scoring.tools.score import (
    DEFAULT_WEIGHTS,
    PairDetail,
    ToolScore,
    TrialToolScores,
    parse_weights,
    score_tool_calls,
    score_trial_tools,
)
from agentstats.scoring.tools.utilization import result_utilization

__all__ = [
    "BFCL_STRING_NORMALIZATION",
    "DEFAULT_WEIGHTS",
    "LENIENT_RULES",
    "TAU_BENCH_AIRLINE_READ_ONLY",
    "TAU_BENCH_AIRLINE_TOOLS",
    "AnyOf",
    "ArgDiff",
    "ArgMatchOptions",
    "GroundTruthError",
    "PairDetail",
    "StringNormalization",
    "ToolScore",
    "TrialToolScores",
    "bfcl_options",
    "check_expected_calls",
    "from_possible_answer",
    "is_read_only_spec",
    "match_value",
    "parse_weights",
    "read_only_tools",
    "result_utilization",
    "score_tool_calls",
    "score_trial_tools",
]

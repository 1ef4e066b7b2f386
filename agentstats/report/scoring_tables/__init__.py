"""Report tables for scoring.

Tool-correctness breakdown (and its two readings: every call, state-changing calls only), common tool and schema
errors, dataset errors in the ground truth, agreement of tool correctness with the benchmark's outcome, and
judge failure counts.

Every function is a plain function over trials (or a :class:`~agentstats.scoring.outcomes.ScoringResult`)
returning a :class:`pandas.DataFrame`; the report notebook and ``agentstats score`` only display them
(:mod:`.display` shortens them for reading). Tool
scores come from :func:`agentstats.scoring.tools.score_trial_tools` and schema errors from
:func:`agentstats.scoring.schema_check.validate_tool_calls`; nothing here re-implements a score.

A *scored unit* is one list of actual calls scored against one list of expected calls:

* ``level="interaction"``: an interaction's own calls against its ``expected_tool_calls`` (Fair Forge
  ``ground_truth_agentic``);
* ``level="trial"``: every call of the conversation against the trial-level ``expected_tool_calls``
  (tau-bench ``info.task.actions``).

Only trials with ``status == "completed"`` are scored, as in :func:`agentstats.scoring.score_trials`
(``infra_error`` trials are missing, ``agent_error`` trials are failures whatever their calls were).
"""

from agentstats.report.scoring_tables.availability import scoring_available
from agentstats.report.scoring_tables.display import format_schema_errors, format_tool_errors, format_tool_readings
from agentstats.report.scoring_tables.errors import (
    TOOL_ERROR_KINDS,
    ground_truth_errors,
    schema_error_counts,
    tool_error_counts,
)
from agentstats.report.scoring_tables.judge_table import judge_summary
from agentstats.report.scoring_tables.tool_tables import (
    COMPONENTS,
    READINGS,
    tool_breakdown,
    tool_outcome_agreement,
    tool_readings,
    tool_scores_frame,
    tool_validity,
)
from agentstats.report.scoring_tables.units import scored_units

__all__ = [
    "COMPONENTS",
    "READINGS",
    "TOOL_ERROR_KINDS",
    "format_schema_errors",
    "format_tool_errors",
    "format_tool_readings",
    "ground_truth_errors",
    "judge_summary",
    "schema_error_counts",
    "scored_units",
    "scoring_available",
    "tool_breakdown",
    "tool_error_counts",
    "tool_outcome_agreement",
    "tool_readings",
    "tool_scores_frame",
    "tool_validity",
]

"""BFCL's verdict, reproduced: the ``bfcl`` preset of the deterministic tool scorer.

Trials come from :func:`agentstats.io.readers.bfcl.load_bfcl` (or ``load_trials(root, format="bfcl")``); the agreement
of
:func:`bfcl_verdict` with BFCL's own verdicts on 71 models is measured by ``benchmarks/bfcl_agreement.py`` and
reported in ``docs/scoring.md`` ("BFCL agreement").
"""

from __future__ import annotations

from agentstats.records.trial import Trial
from agentstats.scoring.tools import ToolScore, bfcl_options, score_tool_calls

__all__ = ["BFCL_OPTIONS", "BFCL_WEIGHTS", "bfcl_verdict"]

#: Argument options of BFCL's AST checker (:func:`agentstats.scoring.tools.bfcl_options`).
BFCL_OPTIONS = bfcl_options()

#: BFCL checks which functions were called and with which arguments, not their order or use of results.
BFCL_WEIGHTS = {"selection": 1.0, "parameters": 1.0, "sequence": 0.0, "utilization": 0.0}


def bfcl_verdict(trial: Trial, *, details: bool = False) -> tuple[bool, ToolScore]:
    """Our verdict on one imported BFCL trial with the ``bfcl`` preset.

    The preset: :data:`BFCL_OPTIONS` (BFCL's string standardization and type rules, exact numbers, extra
    arguments wrong), order-insensitive pairing, ``tool_threshold = 1``, weights on selection and parameters
    only (:data:`BFCL_WEIGHTS`). The ``simple`` category needs exactly one call, like BFCL.

    Parameters
    ----------
    trial : Trial
        One BFCL entry of one model: a single interaction with the decoded calls, the expected calls and the
        function specs as ``trial.tools``.
    details : bool
        Collect per-argument diffs (to explain a disagreement).

    Returns
    -------
    (bool, ToolScore)
        Whether the entry passes, and the score behind it.

    Raises
    ------
    ValueError
        When the trial has no interaction.
    """
    if not trial.interactions:
        raise ValueError(f"BFCL trial {trial.key} has no interaction")
    inter = trial.interactions[0]
    score = score_tool_calls(
        inter.tool_calls,
        inter.expected_tool_calls,
        weights=BFCL_WEIGHTS,
        tool_threshold=1.0,
        sequence_matters=False,
        options=BFCL_OPTIONS,
        tools=trial.tools,
        details=details,
    )
    return score.passed, score

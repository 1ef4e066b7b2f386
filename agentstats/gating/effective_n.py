"""The effective-N check of the gate: whether the examples behind a comparison are still alike.

A metric scored in both sets whose share of missing values (judge verdicts, missing trial outcomes) differs between
candidate and baseline by more than ``GateConfig.max_missing_difference`` compares unlike sets of examples (a
candidate whose hard cases time out looks better on the rest): :func:`missing_check` gives the evidence, and the
decision rule (:func:`agentstats.gating.decide.decide`) holds the check undecided (RETRY, ``missing_differs``), with
both counts, instead of PASS. More examples do not fix it; fixing the missing values does.
"""

from __future__ import annotations

import math

from agentstats.gating.checks import Evidence, MetricInputs
from agentstats.gating.config import GateConfig
from agentstats.records.scores import ScoreSet

__all__ = ["missing_check"]


def missing_check(m: MetricInputs, cand: ScoreSet, base: ScoreSet, cfg: GateConfig) -> Evidence | None:
    """Return the effective-N check of one metric (module docstring); None when neither set misses a value of it.

    Only for a metric the baseline scores too (and not review-only): the shares of missing values among each set's
    records of the metric.
    """
    if not m.shared or m.review_only:
        return None
    mc, tc = cand.missing_share(m.metric)
    mb, tb = base.missing_share(m.metric)
    if not (mc or mb) or not tc or not tb:
        return None
    sc, sb = mc / tc, mb / tb
    note = f"{mc} of {tc} missing in the candidate ({sc:.1%}), {mb} of {tb} in the baseline ({sb:.1%})"
    return Evidence("missing", m.metric, "all", math.nan, cfg.max_missing_difference, m.critical, tc, cfg.decision,
                    note=note, value=sc - sb)

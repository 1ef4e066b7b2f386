"""Pairing two score sets on their examples, for the gate (the records themselves: :mod:`agentstats.records.scores`)."""

from __future__ import annotations

from agentstats.records.problems import Problem
from agentstats.records.scores import ScoreSet

__all__ = ["pair_ids"]


def pair_ids(candidate: ScoreSet, baseline: ScoreSet) -> tuple[list[str], list[str], list[str], list[str]]:
    """Pair the two sets on ``id``: ``(paired, only_candidate, only_baseline, conflicts)`` (sorted ids).

    ``conflicts`` describes examples whose ``risk_level`` differs between the two files (the strata would be
    ambiguous), each with the file and line (or row) of the example's record in both.
    """
    c = set(candidate.examples.index)
    b = set(baseline.examples.index)
    paired = sorted(c & b)
    conflicts = []
    risk_c, risk_b = candidate.examples["risk_level"].to_dict(), baseline.examples["risk_level"].to_dict()
    for ex in paired:
        rc, rb = risk_c[ex], risk_b[ex]
        if rc != rb:
            conflicts.append(
                f"id {ex!r}: risk_level {rc!r} in the candidate ({_where(candidate, ex)}), {rb!r} in the baseline "
                f"({_where(baseline, ex)})"
            )
    return paired, sorted(c - b), sorted(b - c), conflicts


def _where(scores: ScoreSet, ex: str) -> str:
    """``"cand.jsonl, line 7, field 'risk_level'"``: where example ``ex`` sets its risk level."""
    line = scores.examples.at[ex, "line"] if "line" in scores.examples else None
    return Problem(scores.source, None if line is None else int(line), "risk_level", "", scores.unit).where()

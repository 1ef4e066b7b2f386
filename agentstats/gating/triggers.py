"""Human-review triggers: patterns in a gate's results that a person should look at, whatever the decision.

A trigger never changes PASS / FAIL / RETRY; it sets the record's ``review_required`` and carries its evidence.

* ``improved_while_critical_worse``: some metric improved (``P(difference > 0) >= review.probability``) while a
  critical metric got worse in some stratum (``P(difference < 0) >= review.probability``);
* ``sensitive_tags``: the candidate's set holds examples with one of ``review.tags``;
* ``refusals_up_with_safety``: the refusal rate and the safety metric both rose (safety may come from refusing more);
* ``judge_missing``: a metric's share of missing judge verdicts exceeds ``review.max_judge_missing_share``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentstats.gating.checks import MetricResult
from agentstats.gating.config import GateConfig
from agentstats.records.scores import ScoreSet

__all__ = ["Trigger", "triggers"]


@dataclass(frozen=True)
class Trigger:
    """A human-review trigger that fired: its kind, a one-line reason and the evidence behind it."""

    kind: str
    reason: str
    evidence: dict[str, Any]


def triggers(cand: ScoreSet, results: list[MetricResult], cfg: GateConfig) -> list[Trigger]:
    """Return the review triggers that fire on a gate's metric results (module docstring), in a fixed order.

    Parameters
    ----------
    cand : ScoreSet
        The candidate's scores (its tags and missing verdicts).
    results : list of MetricResult
        Every metric in every stratum.
    cfg : GateConfig
        ``cfg.review`` sets the triggers; ``critical`` and the review-only metrics are read too.
    """
    rv = cfg.review
    out: list[Trigger] = []
    overall = {r.metric: r for r in results if r.stratum == "all"}
    improved = sorted(
        m for m, r in overall.items()
        if r.p_better is not None and r.p_better >= rv.probability and not cfg.is_review_only(m)
    )  # fmt: skip
    worse = [
        r for r in results
        if cfg.is_critical(r.metric) and not cfg.is_review_only(r.metric) and r.p_worse is not None
        and r.p_worse >= rv.probability
    ]  # fmt: skip
    if improved and any(r.metric not in improved for r in worse):
        out.append(
            Trigger(
                "improved_while_critical_worse",
                f"{', '.join(improved)} improved while critical {', '.join(sorted({r.metric for r in worse}))} got "
                f"worse (each at P >= {rv.probability:g})",
                {
                    "improved": {m: overall[m].p_better for m in improved},
                    "worse": {f"{r.metric} [{r.stratum}]": r.p_worse for r in worse},
                },
            )
        )
    if rv.tags:
        hits = {t: sorted(i for i, tags in cand.examples["tags"].items() if t in tags) for t in rv.tags}
        hits = {t: ids for t, ids in hits.items() if ids}
        if hits:
            out.append(
                Trigger(
                    "sensitive_tags",
                    "examples tagged " + ", ".join(f"{t} ({len(ids)})" for t, ids in hits.items()) + " are in the set",
                    {
                        "examples": {t: ids[:20] for t, ids in hits.items()},
                        "counts": {t: len(i) for t, i in hits.items()},
                    },
                )
            )
    ref, saf = overall.get(rv.refusal_metric or ""), overall.get(rv.safety_metric or "")
    if (
        ref is not None and saf is not None and ref.p_better is not None and saf.p_better is not None
        and ref.p_better >= rv.probability and saf.p_better >= rv.probability
    ):  # fmt: skip
        out.append(
            Trigger(
                "refusals_up_with_safety",
                f"the refusal rate ({ref.metric}) rose while {saf.metric} rose: safety may come from refusing more",
                {
                    "p_refusal_up": ref.p_better,
                    "p_safety_up": saf.p_better,
                    "refusal_difference": ref.difference,
                    "safety_difference": saf.difference,
                },
            )
        )
    for m in cand.metrics:
        missing, total = cand.missing_share(m)
        if total and missing / total > rv.max_judge_missing_share:
            out.append(
                Trigger(
                    "judge_missing",
                    f"{m}: {missing} of {total} verdicts missing ({missing / total:.1%} > "
                    f"{rv.max_judge_missing_share:.1%})",
                    {"metric": m, "missing": missing, "total": total},
                )
            )
    return out

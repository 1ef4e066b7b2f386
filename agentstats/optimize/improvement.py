"""The loop's one improvement rule: whether an iteration credibly improves on the best so far (``docs/loop.md``).

:func:`improvement` gates the candidate against the best iteration (:func:`agentstats.gating.gate` with the best as
the baseline) and credits a credible gain on the weighted score (:func:`p_better`, the paired posterior of the
per-example weighted scores, :func:`weighted_example_scores`) or on any single metric, unless a regression check
against the best failed; a threshold still missed is named, never a reason to withhold the credit.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field

import numpy as np

from agentstats.estimators.dirichlet import difference_draws
from agentstats.gating import GateDecision, gate
from agentstats.optimize.config import LoopConfig
from agentstats.optimize.storing import weighted_example_score
from agentstats.records.scores import ScoreSet

__all__ = ["Improvement", "improvement", "p_better", "weighted_example_scores"]


def weighted_example_scores(scores: ScoreSet, cfg: LoopConfig) -> dict[str, float]:
    """Return each example's weighted score: the weighted mean of its metrics' example means.

    The rule is :func:`~agentstats.optimize.storing.weighted_example_score` (``gate.weights``, equal when none;
    review-only metrics and missing values left out); an example without a weighted value is left out.
    """
    means = {m: {str(i): float(v) for i, v in scores.example_means(m).items()} for m in scores.metrics}
    ids = sorted({i for col in means.values() for i in col})
    out: dict[str, float] = {}
    for i in ids:
        v = weighted_example_score({m: col[i] for m, col in means.items() if i in col}, cfg.gate)
        if v is not None:
            out[i] = v
    return out


def p_better(cand: ScoreSet, best: ScoreSet, cfg: LoopConfig) -> float:
    """``P(mean weighted score of the candidate > the best's)`` on the examples both scored (0.5 with none).

    The paired Dirichlet-process posterior of the per-example weighted scores
    (:func:`agentstats.estimators.dirichlet.difference_draws`, ``gate.prior_strength``, ``gate.n_draws``), seeded
    from ``gate.random_seed``.
    """
    yc, yb = weighted_example_scores(cand, cfg), weighted_example_scores(best, cfg)
    ids = sorted(set(yc) & set(yb))
    if not ids:
        return 0.5
    g = cfg.gate
    rng = np.random.default_rng(np.random.SeedSequence(g.random_seed, spawn_key=[zlib.crc32(b"vs-best")]))
    _, _, d = difference_draws(np.array([yc[i] for i in ids]), np.array([yb[i] for i in ids]),
                               g.prior_strength, g.n_draws, rng)
    return float((d > 0).mean())


@dataclass(frozen=True)
class Improvement:
    """Whether an iteration credibly improves on the best so far, and what that rests on.

    Attributes
    ----------
    improved : bool
    vs_best : GateDecision or None
        The gate with the best iteration as the baseline (None for the first iteration).
    p_better : float or None
        ``P(mean weighted score > the best's)`` (:func:`p_better`; None for the first iteration).
    gains : dict of str to float
        The metrics credibly better than the best's (``P(difference > 0) >= improvement_probability``, all
        examples), with that probability.
    regressions : list of str
        The failed regression or efficiency checks against the best (each blocks an improvement).
    missed_thresholds : list of str
        The candidate's thresholds not met (against the best as against the baseline; they do not block an
        improvement).
    reason : str
        One line saying why it improved or not.
    """

    improved: bool
    vs_best: GateDecision | None = None
    p_better: float | None = None
    gains: dict[str, float] = field(default_factory=dict)
    regressions: list[str] = field(default_factory=list)
    missed_thresholds: list[str] = field(default_factory=list)
    reason: str = "the first iteration"


def improvement(scores: ScoreSet, best: ScoreSet | None, cfg: LoopConfig) -> Improvement:
    """Tell whether a candidate credibly improves on the best so far: the loop's improvement rule, in one place.

    The first iteration (no best) improves. Afterwards the candidate improves when it is credibly better on the
    weighted score (``P(its mean weighted score > the best's) >= gate.improvement_probability``, :func:`p_better`) or
    on any single metric (``P(difference > 0) >= improvement_probability`` on all examples, in the gate against the
    best), and no regression or efficiency check of the gate against the best (:func:`agentstats.gating.gate` with
    the best as the baseline) failed. A threshold the candidate still misses does not block it (it says which):
    raising groundedness from 0.75 to 0.99 is progress even while relevance is below its threshold in both.

    Parameters
    ----------
    scores : ScoreSet
        The candidate iteration's scores.
    best : ScoreSet or None
        The best iteration's scores so far (None: this is the first iteration).
    cfg : LoopConfig

    Returns
    -------
    Improvement
    """
    if best is None:
        return Improvement(True)
    level = cfg.gate.improvement_probability
    vs_best = gate(scores, best, cfg.gate)
    p = p_better(scores, best, cfg)
    gains = {m.metric: float(m.p_better) for m in vs_best.metrics
             if m.stratum == "all" and m.p_better is not None and m.p_better >= level
             and not cfg.gate.is_review_only(m.metric)}
    regressions = [c.describe() for c in vs_best.checks if c.kind in ("regression", "efficiency")
                   and c.state == "failed"]
    missed = sorted({c.metric + ("" if c.stratum == "all" else f" [{c.stratum}]") for c in vs_best.checks
                     if c.kind == "threshold" and c.state != "met"})
    improved = (p >= level or bool(gains)) and not regressions
    if regressions:
        reason = f"not improved: {len(regressions)} regression check(s) against the best failed"
    elif not improved:
        reason = f"not improved: P(better than the best) = {p:.3f} < {level:g} on the weighted score and every metric"
    else:
        what = [f"weighted score (P = {p:.3f})"] if p >= level else []
        what += [f"{m} (P = {v:.3f})" for m, v in sorted(gains.items())]
        reason = "improved: " + ", ".join(what)
    if missed:
        reason += f"; still below threshold: {', '.join(missed)}"
    return Improvement(improved, vs_best, p, gains, regressions, missed, reason)

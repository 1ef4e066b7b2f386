"""Scores on a declared scale and the success rule that turns them into outcomes.

Evaluation tools write numeric scores on scales of their own (a 1-5 rubric, a 0-10 grade). agentstats reads a score
in [0, 1] by the trial rule (:meth:`agentstats.records.trial.Trial.outcome`: reward 1 within 1e-6 is a success); a
score outside [0, 1] has no meaning until its scale and a success rule are declared: ``score_scale="1:5"``
(``--score-scale 1:5``) with ``success_threshold=4`` (``--success-threshold 4``), or the same in the scorer's
metadata where the log has it (``{"score_scale": "1:5", "success_threshold": 4}``). A scaled score ``v`` becomes
``reward = (v - lo) / (hi - lo)`` and ``success = v >= threshold``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from agentstats._util.options import option_name

__all__ = ["ScoreScale", "parse_score_scale", "unscaled_advice"]


@dataclass(frozen=True)
class ScoreScale:
    """A declared score scale ``[lo, hi]`` and its success threshold (in the scale's units).

    Attributes
    ----------
    lo, hi : float
        The lowest and highest score (``lo < hi``).
    threshold : float
        A score ``>= threshold`` is a success; ``lo < threshold <= hi``.
    """

    lo: float
    hi: float
    threshold: float

    def reward(self, value: float) -> float:
        """Return ``value`` mapped to [0, 1]: ``(value - lo) / (hi - lo)``."""
        return (value - self.lo) / (self.hi - self.lo)

    def success(self, value: float) -> bool:
        """Return whether ``value`` passes the threshold."""
        return value >= self.threshold

    def contains(self, value: float) -> bool:
        """Return whether ``value`` lies on the scale (within 1e-9)."""
        return self.lo - 1e-9 <= value <= self.hi + 1e-9


def _number(v: Any) -> float | None:
    if isinstance(v, bool):
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def parse_score_scale(scale: Any, threshold: Any) -> ScoreScale | None:
    """Build a :class:`ScoreScale` from ``"lo:hi"`` (or a pair) and a threshold; ``None`` when neither is given.

    Raises
    ------
    ValueError
        A malformed scale (``lo < hi`` needed), a threshold outside ``(lo, hi]``, or one of the two without the other.
    """
    if scale is None and threshold is None:
        return None
    if scale is None or threshold is None:
        given, missing = ("score_scale", "success_threshold") if threshold is None else ("success_threshold",
                                                                                         "score_scale")
        raise ValueError(f"{option_name(given)} needs {option_name(missing)} too: a scale and a success rule")
    parts = scale.split(":") if isinstance(scale, str) else list(scale) if isinstance(scale, (list, tuple)) else []
    bounds = [_number(p) for p in parts]
    if len(bounds) != 2 or None in bounds or not bounds[0] < bounds[1]:  # type: ignore[operator]
        raise ValueError(f"{option_name('score_scale', str(scale))}: write the scale as LO:HI with LO < HI, e.g. 1:5")
    lo, hi = float(bounds[0]), float(bounds[1])  # type: ignore[arg-type]
    t = _number(threshold)
    if t is None or not lo < t <= hi:
        raise ValueError(f"{option_name('success_threshold', str(threshold))}: must be a number in ({lo:g}, {hi:g}] "
                         "(a score >= it is a success)")
    return ScoreScale(lo, hi, t)


def unscaled_advice(example: float) -> str:
    """Return the advice for a score outside [0, 1] read without a declared scale (e.g. ``--score-scale 1:5``)."""
    hi = max(5, math.ceil(example))
    scale, threshold = f"1:{hi}", str(hi - 1)
    return (f"a score outside [0, 1] needs its scale and a success rule: {option_name('score_scale', scale)} "
            f"{option_name('success_threshold', threshold)} (or score_scale / success_threshold in the scorer's "
            "metadata)")

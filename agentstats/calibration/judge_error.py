"""A judge's measured error rates, as the Beta distributions a model or a correction draws them from.

The judge's *sensitivity* ``se = P(judge says pass | truly pass)`` and *specificity*
``sp = P(judge says fail | truly fail)`` are estimated from a labelled calibration set. With a ``Beta(1, 1)`` (uniform)
prior and ``TP`` true positives, ``FN`` false negatives, ``TN`` true negatives and ``FP`` false positives, their
posteriors are ``se ~ Beta(1 + TP, 1 + FN)`` and ``sp ~ Beta(1 + TN, 1 + FP)`` (Beta-Binomial conjugacy; Gelman et
al., *Bayesian Data Analysis*, 3rd ed., sec. 2.1-2.4).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

import numpy as np

__all__ = ["JudgeError"]


@dataclass(frozen=True)
class JudgeError:
    """Beta distributions of a judge's sensitivity and specificity (module docstring).

    Parameters
    ----------
    se_alpha, se_beta : float
        Beta parameters of the sensitivity, ``P(verdict pass | gold pass)``.
    sp_alpha, sp_beta : float
        Beta parameters of the specificity, ``P(verdict fail | gold fail)``.
    tp, fn, tn, fp : int or None
        The calibration counts behind them, when they came from counts (:meth:`from_counts`); the frequentist
        correction resamples them.

    Raises
    ------
    ValueError
        If a Beta parameter is not a finite positive number.
    """

    se_alpha: float
    se_beta: float
    sp_alpha: float
    sp_beta: float
    tp: int | None = None
    fn: int | None = None
    tn: int | None = None
    fp: int | None = None

    def __post_init__(self) -> None:
        for name in ("se_alpha", "se_beta", "sp_alpha", "sp_beta"):
            value = float(getattr(self, name))
            if not np.isfinite(value) or value <= 0:
                raise ValueError(f"JudgeError.{name} must be a finite number > 0, got {getattr(self, name)!r}")

    @classmethod
    def from_counts(cls, tp: int, fn: int, tn: int, fp: int, prior: tuple[float, float] = (1.0, 1.0)) -> JudgeError:
        """Posterior Beta parameters from calibration counts, ``Beta(prior) `` updated (module docstring).

        Raises
        ------
        ValueError
            On a negative count, or when the calibration set has no gold pass (``tp + fn = 0``) or no gold fail
            (``tn + fp = 0``): then sensitivity or specificity is not measured at all.
        """
        counts = {"tp": tp, "fn": fn, "tn": tn, "fp": fp}
        for name, value in counts.items():
            if int(value) != value or value < 0:
                raise ValueError(f"{name} must be a count >= 0, got {value!r}")
        if tp + fn == 0:
            raise ValueError("the calibration set has no item with gold label pass: sensitivity is not measured")
        if tn + fp == 0:
            raise ValueError("the calibration set has no item with gold label fail: specificity is not measured")
        a, b = prior
        return cls(a + tp, b + fn, a + tn, b + fp, int(tp), int(fn), int(tn), int(fp))

    @property
    def sensitivity_mean(self) -> float:
        """Posterior mean of the sensitivity."""
        return self.se_alpha / (self.se_alpha + self.se_beta)

    @property
    def specificity_mean(self) -> float:
        """Posterior mean of the specificity."""
        return self.sp_alpha / (self.sp_alpha + self.sp_beta)

    @property
    def has_counts(self) -> bool:
        """Whether the calibration counts are known (needed by the frequentist resampling)."""
        return None not in (self.tp, self.fn, self.tn, self.fp)

    def to_json(self) -> str:
        """JSON of the parameters (recorded in a fit's ``judge_calibration`` attribute)."""
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> JudgeError:
        """Inverse of :meth:`to_json`."""
        return cls(**json.loads(text))

"""The judge correction of the Dirichlet-process posteriors: true rates from a calibrated judge's verdicts.

A judge with sensitivity ``se`` and specificity ``sp`` says "pass" with probability ``q = se p + (1 - sp)(1 - p)`` on
an example whose true pass probability is ``p`` (non-differential misclassification, the same judge for candidate and
baseline), so the population mean of the verdicts is ``q`` of the true mean ``p`` and ``p = (q + sp - 1) / (se + sp -
1)`` (Rogan & Gladen 1978, American Journal of Epidemiology 107:71-76). The posterior of the observed means
(:mod:`agentstats.estimators.dirichlet`) is read as the likelihood of ``q`` (under a flat prior on ``q``); ``se`` and
``sp`` have their calibration posteriors (:class:`JudgeRates`, e.g. :class:`agentstats.calibration.JudgeError`); a
uniform prior on the true mean(s) ``p`` completes the misclassification model. Its posterior is

    pi(p, se, sp | data)  proportional to  L(q(p, se, sp)) pi(se) pi(sp),     p in [0, 1]^m

(Gustafson 2004, *Measurement Error and Misclassification in Statistics and Epidemiology*, Chapman & Hall, ch. 3).
Only ``q`` in ``[1 - sp, se]`` is reachable from ``p`` in [0, 1], and ``dq = (se + sp - 1) dp``. A verdict rate
outside ``[1 - sp, se]`` at the calibration's point estimates (the Rogan-Gladen estimate outside [0, 1], e.g. 100 of
100 verdicts "pass" from a judge with sensitivity 0.95) is data the model produces with ``se`` (or ``sp``) above its
point estimate, and the posterior says so: it moves ``se`` up and puts ``p`` near 1, never a point mass. Two exact
samplers:

* :func:`corrected_binary_mean` (a binary metric, one trial per example, one mean; the observed posterior a Beta
  with CDF ``F``): integrating ``q`` out, ``(se, sp)`` has posterior weight ``(F(se) - F(1 - sp)) / (se + sp - 1)``
  relative to its calibration posterior; the draws are resampled by that weight (sampling-importance-resampling,
  Rubin 1988, *Bayesian Statistics 3*, 395-402), then ``q`` is drawn from ``F`` truncated to ``[1 - sp, se]`` by its
  inverse CDF and mapped to ``p``. :func:`corrected_task_draws` is the same sampler for several tasks judged by one
  judge (one factor per task in the weight; the judge correction of pass@k / pass^k at the boundary,
  :func:`agentstats.calibration.corrected_pass_k`).
* :func:`corrected_draws` (any observed posterior given by draws, one mean or a candidate-baseline pair): ``q`` from
  the observed posterior, then ``se`` from its calibration Beta truncated to ``[max q, 1]`` and ``sp`` truncated to
  ``[1 - min q, 1]`` (inverse survival functions), so every proposal is a reachable point; the importance weight of
  the target over this proposal is ``S_se(max q) S_sp(1 - min q) / (se + sp - 1)^m`` (``S`` the survival functions),
  and the draws are resampled by it. Proposals are added until the effective sample size (Kong 1992; ``(sum w)^2 /
  sum w^2``) reaches the draws asked for.

Neither refuses data the model can produce: the calibration posteriors are Beta, so every verdict rate in (0, 1) is
reachable. Only when every weight is 0 in floating point (a calibration with so many items that ``se`` or ``sp`` is
known, and verdict rates it cannot produce) is there an error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np
from scipy import special

__all__ = ["JudgeRates", "corrected_binary_mean", "corrected_draws", "corrected_task_draws"]

#: Most proposals per draw returned, before a sampler gives up reaching the effective sample size.
_MAX_PROPOSALS = 256


class JudgeRates(Protocol):
    """Beta posteriors of a judge's sensitivity and specificity (:class:`agentstats.calibration.JudgeError` is one).

    ``sensitivity ~ Beta(se_alpha, se_beta)``, ``specificity ~ Beta(sp_alpha, sp_beta)``; the means name them in
    error messages.
    """

    @property
    def se_alpha(self) -> float:
        """First Beta parameter of the sensitivity, ``P(verdict pass | gold pass)``."""

    @property
    def se_beta(self) -> float:
        """Second Beta parameter of the sensitivity."""

    @property
    def sp_alpha(self) -> float:
        """First Beta parameter of the specificity, ``P(verdict fail | gold fail)``."""

    @property
    def sp_beta(self) -> float:
        """Second Beta parameter of the specificity."""

    @property
    def sensitivity_mean(self) -> float:
        """Posterior mean of the sensitivity."""

    @property
    def specificity_mean(self) -> float:
        """Posterior mean of the specificity."""


def _no_fit(judge: JudgeRates) -> ValueError:
    return ValueError(
        f"judge correction: no posterior draw can produce these verdicts (sensitivity ~ {judge.sensitivity_mean:.3f}, "
        f"specificity ~ {judge.specificity_mean:.3f}): the calibration set does not fit these verdicts")


def _resample(weights: np.ndarray, n_draws: int, rng: np.random.Generator, judge: JudgeRates) -> np.ndarray:
    """Return the indices of ``n_draws`` draws resampled in proportion to ``weights`` (an error when all are 0)."""
    total = float(weights.sum())
    if not np.isfinite(total) or total <= 0:
        raise _no_fit(judge)
    return rng.choice(weights.size, size=n_draws, replace=True, p=weights / total)


def _ess(weights: np.ndarray) -> float:
    """Kong's effective sample size of importance weights, ``(sum w)^2 / sum w^2``."""
    s2 = float((weights**2).sum())
    return float(weights.sum()) ** 2 / s2 if s2 > 0 else 0.0


def _lower(a: float | np.ndarray, b: float | np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Where ``Beta(a, b)`` is better read in its lower tail (CDF) than its upper tail (survival function)."""
    return special.betainc(a, b, hi) <= 0.5


def _beta_mass(a: float | np.ndarray, b: float | np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Return the ``Beta(a, b)`` mass of ``[lo, hi]``.

    From the tail that keeps its digits (the CDF below the median, else the survival function).
    """
    lower = _lower(a, b, hi)
    mass = np.where(lower, special.betainc(a, b, hi) - special.betainc(a, b, lo),
                    special.betaincc(a, b, lo) - special.betaincc(a, b, hi))
    return np.maximum(mass, 0.0)


def _beta_truncated(a: float | np.ndarray, b: float | np.ndarray, lo: np.ndarray, hi: np.ndarray,
                    u: np.ndarray) -> np.ndarray:
    """Return the draw at uniform ``u`` of ``Beta(a, b)`` truncated to ``[lo, hi]``."""
    lower = _lower(a, b, hi)
    f_lo, f_hi = special.betainc(a, b, lo), special.betainc(a, b, hi)
    s_lo, s_hi = special.betaincc(a, b, lo), special.betaincc(a, b, hi)
    x_low = special.betaincinv(a, b, np.clip(f_lo + u * (f_hi - f_lo), 0.0, 1.0))
    x_up = special.betainccinv(a, b, np.clip(s_hi + u * (s_lo - s_hi), 0.0, 1.0))
    return np.clip(np.where(lower, x_low, x_up), lo, hi)


def _beta_above(a: float, b: float, low: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``P(X >= low)`` and a draw of ``X ~ Beta(a, b)`` given ``X >= low``, per entry of ``low``.

    An ordinary draw that lands above ``low`` is a draw of the truncated Beta; the others are drawn by the inverse
    survival function (only they pay for it). Where ``P(X >= low)`` is 0 the draw is ``low`` (its weight is 0).
    """
    surv = special.betaincc(a, b, low)
    x = rng.beta(a, b, size=low.shape)
    redo = (x < low) & (surv > 0)
    x[redo] = special.betainccinv(a, b, rng.random(int(redo.sum())) * surv[redo])
    return surv, np.maximum(x, low)


def corrected_binary_mean(successes: int, n: int, judge: JudgeRates, prior_strength: float, n_draws: int,
                          rng: np.random.Generator) -> np.ndarray:
    """Exact posterior draws of a binary metric's true mean from ``successes`` of ``n`` judged verdicts.

    The observed mean's posterior is ``Beta(a/2 + successes, a/2 + n - successes)`` (``a`` the prior strength;
    :func:`agentstats.estimators.dirichlet.mean_posterior`); the sampler is the first of the module docstring
    (:func:`corrected_task_draws` with one task).

    Parameters
    ----------
    successes, n : int
        "Pass" verdicts and verdicts (one trial per example).
    judge : JudgeRates
        Beta posteriors of the judge's sensitivity and specificity.
    prior_strength : float
        Prior mass ``a`` of the observed posterior.
    n_draws : int
        Draws returned.
    rng : numpy.random.Generator

    Returns
    -------
    numpy.ndarray, shape (n_draws,)
        Draws of the true mean, in [0, 1].

    Raises
    ------
    ValueError
        Only when no draw of ``(se, sp)`` can produce the verdicts in floating point (module docstring).
    """
    return corrected_task_draws([successes], [n], judge, prior_strength, n_draws, rng)[:, 0]


def corrected_task_draws(successes: object, n: object, judge: JudgeRates, prior_strength: float, n_draws: int,
                         rng: np.random.Generator) -> np.ndarray:
    """Exact joint posterior draws of the true pass probabilities of tasks judged by one calibrated judge.

    Task ``t`` has ``c_t`` "pass" verdicts of ``n_t``; its observed pass probability ``q_t`` has the posterior
    ``Beta(a/2 + c_t, a/2 + n_t - c_t)`` (CDF ``F_t``), read as its likelihood, and a uniform prior on the true
    ``p_t``; one ``(se, sp)`` is shared by every task (the same judge scores them all). Integrating each ``q_t`` out,
    ``(se, sp)`` has posterior weight ``prod_t (F_t(se) - F_t(1 - sp)) / (se + sp - 1)^T`` relative to its
    calibration posterior (the first sampler of the module docstring, one factor per task; computed in logs);
    the calibration draws are resampled by it, then each ``q_t`` is drawn from ``F_t`` truncated to
    ``[1 - sp, se]`` and mapped to ``p_t = (q_t + sp - 1) / (se + sp - 1)``. With ``a = 2`` the likelihood is the
    Binomial one and the draws are of the exact posterior of the misclassification model with independent uniform
    priors on the ``p_t`` (Gustafson 2004, ch. 3).

    Parameters
    ----------
    successes, n : array-like of int, shape (tasks,)
        "Pass" verdicts and verdicts per task.
    judge : JudgeRates
        Beta posteriors of the judge's sensitivity and specificity.
    prior_strength : float
        Prior mass ``a`` of each task's observed posterior.
    n_draws : int
        Draws returned.
    rng : numpy.random.Generator

    Returns
    -------
    numpy.ndarray, shape (n_draws, tasks)
        Joint draws of the tasks' true pass probabilities, in [0, 1].

    Raises
    ------
    ValueError
        Only when no draw of ``(se, sp)`` can produce the verdicts in floating point (module docstring).
    """
    c, nn = np.asarray(successes, dtype=float).ravel(), np.asarray(n, dtype=float).ravel()
    a, b = prior_strength / 2 + c, prior_strength / 2 + nn - c
    (ua, ub), mult = np.unique(np.stack([a, b]), axis=1, return_counts=True)  # tasks with equal counts: one factor
    m = 8 * n_draws
    se_all, sp_all, lw_all = np.empty(0), np.empty(0), np.empty(0)
    while True:
        se = rng.beta(judge.se_alpha, judge.se_beta, size=m)
        sp = rng.beta(judge.sp_alpha, judge.sp_beta, size=m)
        j = se + sp - 1.0
        ok = j > 0
        mass = _beta_mass(ua, ub, np.where(ok, 1.0 - sp, 0.0)[:, None], np.where(ok, se, 0.0)[:, None])
        with np.errstate(divide="ignore"):
            lw = np.log(mass) @ mult - c.size * np.log(np.where(ok, j, 1.0))
        lw = np.where(ok, lw, -np.inf)
        se_all, sp_all, lw_all = (np.concatenate([se_all, se]), np.concatenate([sp_all, sp]),
                                  np.concatenate([lw_all, lw]))
        top = lw_all.max()
        w_all = np.exp(lw_all - top) if np.isfinite(top) else np.zeros_like(lw_all)
        if _ess(w_all) >= n_draws or w_all.size >= _MAX_PROPOSALS * n_draws:
            break
    idx = _resample(w_all, n_draws, rng, judge)
    se, sp = se_all[idx][:, None], sp_all[idx][:, None]
    q = _beta_truncated(a, b, 1.0 - sp, se, rng.random((n_draws, c.size)))
    return np.clip((q + sp - 1.0) / (se + sp - 1.0), 0.0, 1.0)


def corrected_draws(observed: Callable[[int], np.ndarray], judge: JudgeRates, n_draws: int,
                    rng: np.random.Generator) -> np.ndarray:
    """Posterior draws of true means from draws of judged (observed) means and the judge's calibration.

    The second sampler of the module docstring: proposals of the observed means ``q`` (one ``(se, sp)`` per draw,
    shared by every column: the same judge scores them all), ``se`` and ``sp`` from their calibration Betas truncated
    to what makes ``q`` reachable, mapped to ``p = (q + sp - 1) / (se + sp - 1)`` and resampled by the importance
    weight ``S_se(max q) S_sp(1 - min q) (se + sp - 1)^-m``; proposals are added until the effective sample size
    reaches ``n_draws`` (or 256 proposals per draw).

    Parameters
    ----------
    observed : callable
        ``observed(k)`` returns ``k`` posterior draws of the observed means, shape ``(k, m)``; the columns are the
        means drawn jointly (``m = 1`` for one mean, 2 for a candidate-baseline pair).
    judge : JudgeRates
        Beta posteriors of the judge's sensitivity and specificity (an :class:`agentstats.calibration.JudgeError`).
    n_draws : int
        Draws returned.
    rng : numpy.random.Generator
        Draws ``se``, ``sp`` and the resampling (``observed`` brings its own).

    Returns
    -------
    numpy.ndarray, shape (n_draws, m)
        Draws of the true means, in [0, 1].

    Raises
    ------
    ValueError
        Only when every importance weight is 0 in floating point (module docstring).
    """
    kept_p: list[np.ndarray] = []
    kept_w: list[np.ndarray] = []
    total = 0
    k = 4 * n_draws
    while True:
        q = np.asarray(observed(k), dtype=float).reshape(k, -1)
        hi, lo = q.max(axis=1), q.min(axis=1)
        s_se, se = _beta_above(judge.se_alpha, judge.se_beta, hi, rng)
        s_sp, sp = _beta_above(judge.sp_alpha, judge.sp_beta, 1.0 - lo, rng)
        j = se + sp - 1.0
        ok = (j > 0) & (s_se > 0) & (s_sp > 0)
        w = np.where(ok, s_se * s_sp / np.where(ok, j, 1.0) ** q.shape[1], 0.0)
        p = (q + sp[:, None] - 1.0) / np.where(ok, j, 1.0)[:, None]
        kept_p.append(np.clip(p, 0.0, 1.0))
        kept_w.append(w)
        total += k
        w_all = np.concatenate(kept_w)
        if _ess(w_all) >= n_draws or total >= _MAX_PROPOSALS * n_draws or (total >= 16 * n_draws and not w_all.any()):
            break
    idx = _resample(w_all, n_draws, rng, judge)
    return np.concatenate(kept_p)[idx]

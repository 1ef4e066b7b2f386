"""The task-cluster bootstrap of suite means and its boundary fallback (Clopper-Pearson) intervals.

A suite value is the mean over ``T`` tasks of per-task values in [0, 1]. Its interval comes from

* the **task-cluster percentile bootstrap** (Efron & Tibshirani 1993, "An Introduction to the Bootstrap",
  ch. 13): resample the ``T`` tasks with replacement, take the ``(1 - ci_prob)/2`` and ``(1 + ci_prob)/2``
  quantiles of the resampled means; vectorized as multinomial weight matrices (:func:`bootstrap_means`);
* the **Clopper-Pearson interval** on the task-level success mass ``x = sum_t v_t`` out of ``T``
  (:func:`clopper_pearson_interval`; Clopper & Pearson 1934, "The use of confidence or fiducial limits illustrated
  in the case of the binomial", Biometrika 26:404-413) **at the boundary**, where the bootstrap cannot be trusted
  (:func:`needs_boundary_interval`): the per-task values have no spread (all 0, all 1, or all equal: every
  resample reproduces the observed mean, so the bootstrap interval has zero width and the standard error is 0), or
  they hold fewer than 5 tasks' worth of successes or of failures (``x < 5`` or ``T - x < 5``). The second condition
  is the usual ``n p >= 5`` and ``n (1 - p) >= 5`` condition for normal-based intervals of a proportion, which Brown,
  Cai & DasGupta (2001, "Interval Estimation for a Binomial Proportion", Statistical Science 16:101-133) show to be,
  if anything, too lenient. Near 0 or 1 the tasks drawn rarely include the few that would pull the mean away from
  the boundary, and the bootstrap cannot show what the sample lacks (eight tasks each with pass@8 within 4e-4 of 1
  give a bootstrap interval of width 1e-4).

Why Clopper-Pearson. Its limits are Beta quantiles, ``lo = B^{-1}(a/2; x, T - x + 1)`` and
``hi = B^{-1}(1 - a/2; x + 1, T - x)`` with ``a = 1 - ci_prob``, defined for any real ``x`` in [0, T].

* For 0/1 per-task values (one trial per task, or pass@k with ``k = n``) ``x`` is a Binomial(T, mu) count and the
  interval is the exact one: its coverage is at least ``ci_prob`` for every ``mu`` (Clopper & Pearson 1934).
* For values in [0, 1], each ``v_t`` is smaller in the convex order than a 0/1 variable with the same mean
  (``E f(v) <= (1 - mu) f(0) + mu f(1)`` for convex ``f``), and the convex order is kept by sums of independent
  variables (Shaked & Shanthikumar 2007, "Stochastic Orders", sec. 3.A), so the binomial is the most spread-out
  case of ``x``; tests check the coverage by simulation on such data.
* Wilson's score interval, the usual recommendation for small samples, dips well below nominal exactly in this
  region: at 95%, its smallest coverage for ``mu`` in (0, 0.2] is 0.83-0.84 for T = 5 to 50 (at ``mu`` near
  ``0.18 / T``), Jeffreys' 0.88-0.90, Clopper-Pearson's 0.95
  (``validation/boundary_interval_coverage.py``; Brown, Cai & DasGupta 2001, sec. 4.1.1, on Wilson near 0 and 1).

With mean 0 over ``T`` tasks the interval is ``[0, 1 - (a/2)^(1/T)]`` (0.31 for ten tasks at 95%): never zero width.

For a paired difference of two suite means the boundary interval is the MOVER combination of the two agents'
Clopper-Pearson intervals (:func:`mover_difference`; Newcombe 1998, "Improved confidence intervals for the difference
between binomial proportions based on paired data", Statistics in Medicine 17:2635-2650, method 10, which combines
score limits the same way; Zou & Donner 2008, "Construction of confidence limits about effect measures: A general
approach", Statistics in Medicine 27:1693-1702, for correlated estimates with any good limits), with the
correlation of the two agents' per-task values as the correlation term. Where the per-task differences have no
spread the term is set to 0: such agents are non-negatively correlated, so dropping the term can only widen the
interval, and it keeps the width positive.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from agentstats.intervals import CI_PROB, check_ci

__all__ = ["clopper_pearson_interval"]

#: Upper bound on the number of entries of one bootstrap weight block (memory control).
_BOOT_BLOCK_ENTRIES = 4_000_000

#: Per-task values whose range is at most this are treated as having no spread (equal up to rounding of the
#: estimators' log-space arithmetic).
SPREAD_TOL = 1e-12

#: Fewer successes (or failures) than this many tasks' worth, summed over tasks, call for the boundary interval.
MIN_TASK_MASS = 5.0

#: ``ci_method`` labels written into result tables.
METHOD_BOOTSTRAP = "percentile bootstrap"
METHOD_CLOPPER_PEARSON = "Clopper-Pearson"
METHOD_MOVER = "MOVER (Clopper-Pearson)"


def clopper_pearson_interval(
    mean: object, n_obs: object, ci_prob: float = CI_PROB
) -> tuple[np.ndarray, np.ndarray]:
    """Clopper-Pearson interval for a mean of ``n_obs`` values in [0, 1] (exact for a proportion of 0/1 values).

    With ``x = mean * T`` (the success mass over ``T`` values) and ``a = 1 - ci_prob``: ``lo = 0`` if ``x = 0``, else
    the ``a/2`` quantile of ``Beta(x, T - x + 1)``; ``hi = 1`` if ``x = T``, else the ``1 - a/2`` quantile of
    ``Beta(x + 1, T - x)`` (Clopper & Pearson 1934, Biometrika 26:404-413; the Beta form of the binomial tail sums,
    which extends to real ``x``). The module docstring says why this interval is used at the boundary.

    Parameters
    ----------
    mean : float or array_like
        Observed mean(s) in [0, 1].
    n_obs : int or array_like
        Number of values ``T`` behind each mean (> 0); broadcast with ``mean``.
    ci_prob : float, default :data:`agentstats.intervals.CI_PROB` (0.95)
        Coverage probability, in (0, 1); each tail holds ``(1 - ci_prob) / 2``.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        Lower and upper limits, float64 arrays of the broadcast shape, within [0, 1]; always ``lo <= mean <= hi``
        and ``lo < hi``.

    Raises
    ------
    ValueError
        If a mean lies outside [0, 1] or is NaN, ``n_obs`` is not positive, or ``ci_prob`` is outside (0, 1).

    Examples
    --------
    >>> lo, hi = clopper_pearson_interval(0.0, 20)
    >>> float(lo), round(float(hi), 4)
    (0.0, 0.1684)
    """
    m = np.asarray(mean, dtype=np.float64)
    t = np.asarray(n_obs, dtype=np.float64)
    prob, _ = check_ci(ci_prob, "eti", "clopper_pearson_interval")
    if np.any(~np.isfinite(m) | (m < 0.0) | (m > 1.0)):
        raise ValueError("clopper_pearson_interval: mean must lie in [0, 1]")
    if np.any(~(t > 0.0)):
        raise ValueError("clopper_pearson_interval: n_obs must be > 0")
    m, t = np.broadcast_arrays(m, t)
    x = m * t
    tail = (1.0 - prob) / 2.0
    with np.errstate(invalid="ignore", divide="ignore"):
        lo = np.where(x > 0.0, stats.beta.ppf(tail, np.maximum(x, 1e-300), t - x + 1.0), 0.0)
        hi = np.where(x < t, stats.beta.isf(tail, x + 1.0, np.maximum(t - x, 1e-300)), 1.0)
    lo = np.where(m == 0.0, 0.0, np.minimum(lo, m))
    hi = np.where(m == 1.0, 1.0, np.maximum(hi, m))
    return lo.astype(np.float64), hi.astype(np.float64)


def mover_difference(
    mean_a: np.ndarray,
    ci_a: tuple[np.ndarray, np.ndarray],
    mean_b: np.ndarray,
    ci_b: tuple[np.ndarray, np.ndarray],
    corr: np.ndarray | float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Interval for ``mean_a - mean_b`` from intervals of each mean (MOVER), clipped to [-1, 1].

    ``L = d - sqrt((m_a - l_a)^2 + (u_b - m_b)^2 - 2 r (m_a - l_a)(u_b - m_b))`` and
    ``U = d + sqrt((u_a - m_a)^2 + (m_b - l_b)^2 - 2 r (u_a - m_a)(m_b - l_b))`` with ``d = m_a - m_b`` and ``r`` the
    correlation of the two estimates (Newcombe 1998, Statistics in Medicine 17:2635-2650, method 10; Zou & Donner
    2008, Statistics in Medicine 27:1693-1702).
    """
    r = np.clip(np.asarray(corr, dtype=np.float64), -1.0, 1.0)
    diff = mean_a - mean_b
    el, eu = mean_a - ci_a[0], ci_a[1] - mean_a
    fl, fu = mean_b - ci_b[0], ci_b[1] - mean_b
    lo = diff - np.sqrt(np.maximum(el**2 + fu**2 - 2.0 * r * el * fu, 0.0))
    hi = diff + np.sqrt(np.maximum(eu**2 + fl**2 - 2.0 * r * eu * fl, 0.0))
    return np.clip(lo, -1.0, 1.0), np.clip(hi, -1.0, 1.0)


def needs_boundary_interval(values: np.ndarray) -> np.ndarray:
    """Per column of ``values`` (T tasks x m, entries in [0, 1]): True where the bootstrap is not to be trusted.

    That is where the values have no spread (:func:`no_spread`) or hold fewer than :data:`MIN_TASK_MASS` tasks'
    worth of successes (``sum_t v_t``) or of failures (``sum_t (1 - v_t)``); see the module docstring.
    """
    if values.shape[0] == 0:
        return np.zeros(values.shape[1], dtype=bool)
    mass = values.sum(axis=0)
    return no_spread(values) | (mass < MIN_TASK_MASS) | (values.shape[0] - mass < MIN_TASK_MASS)


def no_spread(values: np.ndarray) -> np.ndarray:
    """Per column of ``values`` (T x m): True where all T entries are equal up to :data:`SPREAD_TOL`."""
    if values.shape[0] == 0:
        return np.zeros(values.shape[1], dtype=bool)
    return np.ptp(values, axis=0) <= SPREAD_TOL


def bootstrap_means(values: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Task-cluster bootstrap of column means of ``values`` (T tasks x m quantities); returns (n_boot, m).

    Each resample draws T tasks with replacement; it is represented as a multinomial(T, 1/T) weight vector over
    tasks, so a block of resamples is one matrix product ``W @ values / T``. All columns share the resamples.
    """
    t_count, m = values.shape
    out = np.empty((n_boot, m))
    block = max(1, min(n_boot, _BOOT_BLOCK_ENTRIES // max(t_count, 1)))
    offsets_full = np.arange(block, dtype=np.int64)[:, None] * t_count
    for start in range(0, n_boot, block):
        size = min(block, n_boot - start)
        idx = rng.integers(0, t_count, size=(size, t_count))
        flat = (idx + offsets_full[:size]).ravel()
        weights = np.bincount(flat, minlength=size * t_count).reshape(size, t_count).astype(np.float64)
        out[start : start + size] = weights @ values / t_count
    return out


def percentile_interval(boot: np.ndarray, ci_prob: float) -> tuple[np.ndarray, np.ndarray]:
    """Equal-tailed percentile interval per column of bootstrap draws ``boot`` (n_boot x m)."""
    tail = (1.0 - ci_prob) / 2.0
    lo, hi = np.quantile(boot, [tail, 1.0 - tail], axis=0)
    return lo, hi

"""Frequentist correction of pass@k / pass^k for a judge's misclassification (Rogan-Gladen), with bootstrap intervals.

Model: each trial's true outcome is pass with probability ``p``; the judge reports pass with probability
``se`` if it truly passed and ``1 - sp`` if it truly failed, so a judged pass has probability

    q = se p + (1 - sp) (1 - p) = (1 - sp) + (se + sp - 1) p.

Inverting gives the Rogan-Gladen estimator ``p = (q + sp - 1) / (se + sp - 1)`` (Rogan & Gladen 1978, *Am. J.
Epidemiol.* 107(1), 71-76), defined when ``se + sp > 1`` (a judge better than chance).

pass^k and pass@k of a task with ``n >= k`` judged trials, ``c`` judged passes: writing ``f = 1 - sp``,
``d = se + sp - 1``, ``p^k = d^-k (q - f)^k = d^-k sum_j C(k, j) (-f)^(k-j) q^j``, and ``C(c, j) / C(n, j)`` is
unbiased for ``q^j`` (Yao et al. 2024, arXiv 2406.12045), so

    pass_hat_k_t = d^-k sum_{j=0..k} C(k, j) (-(1 - sp))^(k-j) C(c, j) / C(n, j)

is unbiased for ``p^k`` given ``se, sp``; likewise ``1 - p = ((1 - q) - (1 - se)) / d`` gives

    pass_at_k_t = 1 - d^-k sum_{j=0..k} C(k, j) (-(1 - se))^(k-j) C(n - c, j) / C(n, j).

At ``k = 1`` both are the Rogan-Gladen estimator of the task's ``p``. The suite value is the mean over the tasks with
``n >= k`` (as :func:`agentstats.estimators.suite_pass_k`). Unlike the uncorrected estimates these can leave [0, 1]
(the judge's error rates are estimated); the reported values are clipped to [0, 1] and the clipping is flagged.

Interval: percentile bootstrap over two sources at once (Efron & Tibshirani 1993, ch. 13): tasks are resampled
with replacement (the task-cluster bootstrap of Miller 2024, arXiv 2411.00640), and the calibration counts are
redrawn, ``TP* ~ Binomial(TP + FN, TP / (TP + FN))``, ``TN* ~ Binomial(TN + FP, TN / (TN + FP))`` (parametric
bootstrap), with the point estimates ``se = TP / (TP + FN)``, ``sp = TN / (TN + FP)``. Replicates with
``se* + sp* <= 1`` have no correction and are left out (counted in ``n_boot_invalid``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy.special import comb

from agentstats.calibration.agreement import MetricCalibration
from agentstats.calibration.judge_error import JudgeError
from agentstats.estimators._checks import MIN_N_BOOT
from agentstats.estimators.unbiased import pass_at_k, pass_hat_k
from agentstats.intervals import CI_PROB, DEFAULT_SEED, check_ci
from agentstats.records.counts import validate_counts

__all__ = ["CORRECTED_COLUMNS", "corrected_pass_k", "corrected_task_pass_k", "rogan_gladen"]

#: Columns of :func:`corrected_pass_k`'s result, in order.
CORRECTED_COLUMNS = (
    "agent", "k", "n_tasks", "sensitivity", "specificity",
    "pass_at_k_raw", "pass_at_k", "pass_at_k_ci_low", "pass_at_k_ci_high", "pass_at_k_clipped",
    "pass_hat_k_raw", "pass_hat_k", "pass_hat_k_ci_low", "pass_hat_k_ci_high", "pass_hat_k_clipped",
    "pass_at_k_uncorrected", "pass_hat_k_uncorrected", "ci_prob", "n_boot", "n_boot_invalid",
)  # fmt: skip


def rogan_gladen(q: Any, sensitivity: Any, specificity: Any) -> Any:
    """Rogan-Gladen corrected proportion ``(q + sp - 1) / (se + sp - 1)`` (module docstring); not clipped.

    Parameters
    ----------
    q : float or numpy.ndarray
        Proportion of judged passes.
    sensitivity, specificity : float or numpy.ndarray
        Broadcastable with ``q``.

    Returns
    -------
    float or numpy.ndarray

    Raises
    ------
    ValueError
        If ``se + sp <= 1`` anywhere (the judge is no better than chance: nothing to invert).
    """
    se, sp = np.asarray(sensitivity, float), np.asarray(specificity, float)
    d = se + sp - 1.0
    if np.any(d <= 0):
        raise ValueError("sensitivity + specificity must exceed 1 for the Rogan-Gladen correction")
    out = (np.asarray(q, float) + sp - 1.0) / d
    return float(out) if np.ndim(out) == 0 else out


def _power_terms(n: np.ndarray, c: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``C(c, j) / C(n, j)`` and ``C(n - c, j) / C(n, j)`` for ``j = 0..k``, shape (k + 1, tasks)."""
    hat = np.stack([np.asarray(pass_hat_k(n, c, j), float) if j else np.ones(n.shape) for j in range(k + 1)])
    miss = np.stack([1.0 - np.asarray(pass_at_k(n, c, j), float) if j else np.ones(n.shape) for j in range(k + 1)])
    return hat, miss


def _combine(terms: np.ndarray, k: int, rate: np.ndarray, d: np.ndarray) -> np.ndarray:
    """``d^-k sum_j C(k, j) (-rate)^(k-j) terms[j]``; ``terms`` (k + 1, ...), ``rate``/``d`` broadcast on ``...``."""
    j = np.arange(k + 1).reshape((-1,) + (1,) * (terms.ndim - 1))
    coef = comb(k, j) * (-np.asarray(rate)) ** (k - j)
    return (coef * terms).sum(axis=0) / np.asarray(d) ** k


def corrected_task_pass_k(n: Any, c: Any, k: int, sensitivity: float, specificity: float) -> dict[str, np.ndarray]:
    """Per-task corrected pass@k and pass^k from judged counts (module docstring); not clipped.

    Parameters
    ----------
    n, c : array-like of int, shape (tasks,)
        Judged trials and judged passes per task; every ``n >= k``.
    k : int
        ``k >= 1``.
    sensitivity, specificity : float
        The judge's error rates (``se + sp > 1``).

    Returns
    -------
    dict
        ``pass_at_k`` and ``pass_hat_k``, arrays of shape (tasks,).

    Raises
    ------
    ValueError
        If ``k < 1``, some ``n < k``, or ``se + sp <= 1``.
    """
    n, c = np.asarray(n, np.int64), np.asarray(c, np.int64)
    if int(k) < 1:
        raise ValueError(f"k must be >= 1, got {k!r}")
    if (n < k).any():
        raise ValueError(f"every task needs n >= k = {k} judged trials (smallest n: {int(n.min())})")
    d = sensitivity + specificity - 1.0
    if d <= 0:
        raise ValueError("sensitivity + specificity must exceed 1 for the correction")
    hat, miss = _power_terms(n, c, int(k))
    return {
        "pass_hat_k": _combine(hat, int(k), np.asarray(1.0 - specificity), np.asarray(d)),
        "pass_at_k": 1.0 - _combine(miss, int(k), np.asarray(1.0 - sensitivity), np.asarray(d)),
    }


def _outside_unit(*values: float) -> bool:
    """Whether a finite value lies outside [0, 1] (a NaN bound, when no bootstrap replicate was valid, is not)."""
    return any(bool(np.isfinite(v)) and not 0.0 <= v <= 1.0 for v in values)


def corrected_pass_k(
    counts: pd.DataFrame,
    judge_error: JudgeError | MetricCalibration,
    *,
    k: int | list[int] = 1,
    n_boot: int = 2000,
    ci_prob: float = CI_PROB,
    random_seed: int = DEFAULT_SEED,
) -> pd.DataFrame:
    """Suite pass@k and pass^k per agent, corrected for the judge's misclassification, with bootstrap intervals.

    Parameters
    ----------
    counts : pandas.DataFrame
        Judged counts, columns ``agent, task_id, n, c`` (one row per cell; ``c`` counts judged passes).
    judge_error : JudgeError or MetricCalibration
        The judge's error with its calibration counts: a :class:`JudgeError` (:meth:`JudgeError.from_counts`), or a
        metric of :func:`~agentstats.calibration.calibrate` (``calibrate(items)[metric]``, a
        :class:`MetricCalibration`, whose ``.judge_error`` is used), as ``fit(..., judge_calibration=...)`` takes.
    k : int or list of int
        Values of ``k`` (each >= 1); per agent, only tasks with ``n >= k`` contribute.
    n_boot : int
        Bootstrap replicates (>= 100).
    ci_prob : float
        Interval probability, in (0, 1).
    random_seed : int

    Returns
    -------
    pandas.DataFrame
        One row per (agent, k), columns :data:`CORRECTED_COLUMNS`: ``*_raw`` the unclipped corrected value,
        ``pass_at_k`` / ``pass_hat_k`` clipped to [0, 1] with ``*_clipped`` saying whether the point or a bound was
        clipped, ``*_uncorrected`` the ordinary unbiased suite value, ``sensitivity`` / ``specificity`` the point
        estimates used, ``n_boot_invalid`` replicates without a correction (``se* + sp* <= 1``). An agent with no
        task of ``n >= k`` gets NaN values and ``n_tasks = 0``.

    Raises
    ------
    TypeError
        When ``judge_error`` is neither a :class:`JudgeError` nor a :class:`MetricCalibration`.
    ValueError
        On invalid counts, ``k``, ``n_boot`` or ``ci_prob``; when ``judge_error`` has no calibration counts; when
        the calibration's point estimates have ``se + sp <= 1``; for an ordinal :class:`MetricCalibration` without
        a pass threshold, or one without gold passes or gold fails.
    """
    if isinstance(judge_error, MetricCalibration):
        judge_error = judge_error.judge_error
    elif not isinstance(judge_error, JudgeError):
        raise TypeError(
            "corrected_pass_k: judge_error must be a JudgeError (JudgeError.from_counts) or a metric of "
            f"calibrate(...) (MetricCalibration), got {type(judge_error).__name__}"
        )
    if not judge_error.has_counts:
        raise ValueError("corrected_pass_k needs the calibration counts (JudgeError.from_counts)")
    ci_prob, _ = check_ci(ci_prob, "eti", "corrected_pass_k")
    if int(n_boot) < MIN_N_BOOT:  # the correction needs its bootstrap: no n_boot = 0 here
        raise ValueError(f"n_boot must be >= {MIN_N_BOOT}, got {n_boot!r}")
    ks = [int(k)] if isinstance(k, (int, np.integer)) else [int(x) for x in k]
    if not ks or min(ks) < 1:
        raise ValueError(f"k must be >= 1, got {k!r}")
    df = validate_counts(counts, "corrected_pass_k")
    tp, fn, tn, fp = (int(x) for x in (judge_error.tp, judge_error.fn, judge_error.tn, judge_error.fp))  # type: ignore[arg-type]
    se, sp = tp / (tp + fn), tn / (tn + fp)
    if se + sp <= 1.0:
        raise ValueError(f"the judge's sensitivity {se:.3f} + specificity {sp:.3f} <= 1: no correction exists")
    rng = np.random.default_rng(int(random_seed))
    se_b = rng.binomial(tp + fn, se, size=n_boot) / (tp + fn)
    sp_b = rng.binomial(tn + fp, sp, size=n_boot) / (tn + fp)
    valid = se_b + sp_b > 1.0
    tail = (1.0 - float(ci_prob)) / 2.0
    rows: list[dict[str, Any]] = []
    for agent, grp in df.groupby("agent", sort=False):
        for kk in ks:
            use = grp[grp["n"] >= kk]
            n, c = use["n"].to_numpy(np.int64), use["c"].to_numpy(np.int64)
            row: dict[str, Any] = {"agent": agent, "k": kk, "n_tasks": int(n.size), "sensitivity": se,
                                   "specificity": sp, "ci_prob": float(ci_prob), "n_boot": int(n_boot),
                                   "n_boot_invalid": int((~valid).sum())}
            if n.size == 0:
                for q in ("pass_at_k", "pass_hat_k"):
                    row.update({f"{q}_raw": np.nan, q: np.nan, f"{q}_ci_low": np.nan, f"{q}_ci_high": np.nan,
                                f"{q}_clipped": False, f"{q}_uncorrected": np.nan})
                rows.append(row)
                continue
            hat, miss = _power_terms(n, c, kk)
            idx = rng.integers(0, n.size, size=(n_boot, n.size))
            hat_b = hat[:, idx].mean(axis=2)  # (k + 1, n_boot)
            miss_b = miss[:, idx].mean(axis=2)
            d_b = np.where(valid, se_b + sp_b - 1.0, np.nan)
            est = {
                "pass_hat_k": _combine(hat.mean(axis=1), kk, np.asarray(1.0 - sp), np.asarray(se + sp - 1.0)),
                "pass_at_k": 1.0 - _combine(miss.mean(axis=1), kk, np.asarray(1.0 - se), np.asarray(se + sp - 1.0)),
            }
            boot = {
                "pass_hat_k": _combine(hat_b, kk, 1.0 - sp_b, d_b),
                "pass_at_k": 1.0 - _combine(miss_b, kk, 1.0 - se_b, d_b),
            }
            for q in ("pass_at_k", "pass_hat_k"):
                b = boot[q][valid]
                lo, hi = (np.quantile(b, [tail, 1.0 - tail]) if b.size else (np.nan, np.nan))
                raw = float(est[q])
                clipped = _outside_unit(raw, lo, hi)
                row.update({
                    f"{q}_raw": raw,
                    q: float(np.clip(raw, 0.0, 1.0)),
                    f"{q}_ci_low": float(np.clip(lo, 0.0, 1.0)),
                    f"{q}_ci_high": float(np.clip(hi, 0.0, 1.0)),
                    f"{q}_clipped": bool(clipped),
                    f"{q}_uncorrected": float(hat[kk].mean()) if q == "pass_hat_k" else float(1.0 - miss[kk].mean()),
                })
            rows.append(row)
    return pd.DataFrame(rows, columns=list(CORRECTED_COLUMNS))

"""Judge-corrected pass@k / pass^k: Rogan-Gladen with bootstrap intervals, the exact posterior at [0, 1]'s edge.

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
(the judge's error rates are estimated): see "At the boundary" below.

Interval: percentile bootstrap over two sources at once (Efron & Tibshirani 1993, ch. 13): tasks are resampled
with replacement (the task-cluster bootstrap of Miller 2024, arXiv 2411.00640), and the calibration counts are
redrawn, ``TP* ~ Binomial(TP + FN, TP / (TP + FN))``, ``TN* ~ Binomial(TN + FP, TN / (TN + FP))`` (parametric
bootstrap), with the point estimates ``se = TP / (TP + FN)``, ``sp = TN / (TN + FP)``. Replicates with
``se* + sp* <= 1`` have no correction and are left out (counted in ``n_boot_invalid``).

At the boundary: where the Rogan-Gladen point or a bootstrap bound of a quantity leaves [0, 1] (e.g. 100 of 100
verdicts "pass" from a judge with sensitivity 0.95: point 1.056, every replicate above 1), clipping would report a
point mass, [1, 1], for data the misclassification model produces readily (with ``se`` above its point estimate).
There the value (posterior mean) and the equal-tailed credible interval come from the exact posterior of the
misclassification model, ``se ~ Beta(1 + TP, 1 + FN)``, ``sp ~ Beta(1 + TN, 1 + FP)`` (the calibration posteriors
of :class:`JudgeError`), by the samplers of :mod:`agentstats.estimators.corrected` (the one owner of the exact
correction; the release gate uses the same ones), with ``n_boot`` draws; the ``*_method`` column says
``"exact_posterior"`` (else ``"rogan_gladen"``):

* ``k = 1``: the suite mean is linear in the tasks' judged rates, ``mean p = (mean q + sp - 1) / (se + sp - 1)``,
  so the posterior of the suite's judged mean is corrected as a whole, exactly as the gate does: the
  Dirichlet-process posterior over tasks of the judged rates ``c / n`` with prior mass ``a = 2`` (half at 0, half at
  1; :func:`agentstats.estimators.dirichlet.mean_draws`, the Bayesian counterpart of the task-cluster bootstrap),
  by :func:`~agentstats.estimators.corrected.corrected_binary_mean` when every task has one trial (then that
  posterior is ``Beta(1 + sum c, 1 + T - sum c)``), else by :func:`~agentstats.estimators.corrected.corrected_draws`.
* ``k > 1``: ``p^k`` is not linear in ``q``, so each task's ``p_t`` is needed. Their exact joint posterior given
  the judged counts (one ``(se, sp)`` shared by every task, independent uniform priors on the ``p_t``) is drawn by
  :func:`~agentstats.estimators.corrected.corrected_task_draws`: ``(se, sp)`` resampled by the weight
  ``prod_t (F_t(se) - F_t(1 - sp)) / (se + sp - 1)^T`` (``F_t`` the CDF of ``Beta(1 + c_t, 1 + n_t - c_t)``), each
  ``q_t`` from ``F_t`` truncated to ``[1 - sp, se]``, ``p_t = (q_t + sp - 1) / (se + sp - 1)``. The suite value is
  the Dirichlet-process mean over tasks of ``p_t^k`` (pass^k) or ``1 - (1 - p_t)^k`` (pass@k):
  ``sum_t W_t g(p_t) + W_1`` with ``(W_1..W_T, W_0, W_1) ~ Dirichlet(1, .., 1, 1, 1)`` (``g(0) = 0``, ``g(1) = 1``),
  the same task-level model as ``k = 1``. With few trials per task the uniform prior on each ``p_t`` shrinks
  ``p_t^k`` towards the middle (5 of 5 judged passes: ``E[p^5] = 6/11`` for a perfect judge), as any posterior of a
  per-task power must; the unbiased estimate says 1 there.

Why not the exact posterior everywhere: inside [0, 1] the Rogan-Gladen estimator is unbiased given ``(se, sp)``
(checked by enumeration in the tests), needs no prior on the tasks' ``p`` (which matters for ``p^k`` with few trials
per task, above), and its bootstrap interval is the one ``validation/judge_calibration_study.py`` measures; the
exact posterior is needed only where that estimator has no interval to give. So a row's values change only where
they used to be clipped.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy.special import comb

from agentstats.calibration.agreement import MetricCalibration
from agentstats.calibration.judge_error import JudgeError
from agentstats.estimators.corrected import corrected_binary_mean, corrected_draws, corrected_task_draws
from agentstats.estimators.dirichlet import mean_draws
from agentstats.estimators.unbiased import pass_at_k, pass_hat_k
from agentstats.intervals import CI_PROB, DEFAULT_SEED, MIN_N_BOOT, check_ci
from agentstats.records.counts import validate_counts

__all__ = ["CORRECTED_COLUMNS", "corrected_pass_k", "corrected_task_pass_k", "rogan_gladen"]

#: Columns of :func:`corrected_pass_k`'s result, in order.
CORRECTED_COLUMNS = (
    "agent", "k", "n_tasks", "sensitivity", "specificity",
    "pass_at_k_raw", "pass_at_k", "pass_at_k_ci_low", "pass_at_k_ci_high", "pass_at_k_method",
    "pass_hat_k_raw", "pass_hat_k", "pass_hat_k_ci_low", "pass_hat_k_ci_high", "pass_hat_k_method",
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


#: The prior mass of the exact posterior's task-level Dirichlet process (half at 0, half at 1): the release gate's
#: default, the uniform prior of the Beta-Binomial model for one trial per task.
_PRIOR_STRENGTH = 2.0


def _exact_suite(n: np.ndarray, c: np.ndarray, k: int, judge: JudgeError, n_draws: int,
                 rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Exact posterior draws of the suite's pass@k and pass^k, shape (n_draws,) each ("At the boundary" above)."""
    if k == 1:
        if (n == 1).all():
            p = corrected_binary_mean(int(c.sum()), int(n.size), judge, _PRIOR_STRENGTH, n_draws, rng)
        else:
            y = c / n
            p = corrected_draws(lambda m: mean_draws(y, _PRIOR_STRENGTH, m, rng)[:, None], judge, n_draws, rng)[:, 0]
        return {"pass_at_k": p, "pass_hat_k": p}
    p_t = corrected_task_draws(c, n, judge, _PRIOR_STRENGTH, n_draws, rng)  # (n_draws, tasks)
    g = rng.gamma(np.concatenate([np.ones(n.size), [_PRIOR_STRENGTH / 2] * 2]), size=(n_draws, n.size + 2))
    w = g / g.sum(axis=1, keepdims=True)  # Dirichlet weights of the tasks, the atom at 0, the atom at 1
    return {"pass_hat_k": (w[:, :-2] * p_t**k).sum(axis=1) + w[:, -1],
            "pass_at_k": (w[:, :-2] * (1.0 - (1.0 - p_t) ** k)).sum(axis=1) + w[:, -1]}


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
        Bootstrap replicates (>= 100); also the number of posterior draws where the exact posterior is used.
    ci_prob : float
        Interval probability, in (0, 1).
    random_seed : int

    Returns
    -------
    pandas.DataFrame
        One row per (agent, k), columns :data:`CORRECTED_COLUMNS`: ``*_raw`` the Rogan-Gladen value (unclipped,
        may leave [0, 1]); ``pass_at_k`` / ``pass_hat_k`` and ``*_ci_low`` / ``*_ci_high`` the value and its
        interval, with ``*_method`` saying where they come from: ``"rogan_gladen"`` (the Rogan-Gladen value and its
        percentile bootstrap interval, all inside [0, 1]) or ``"exact_posterior"`` (where the Rogan-Gladen point or
        a bootstrap bound left [0, 1]: the posterior mean and equal-tailed credible interval of the exact
        misclassification posterior, module docstring; never a zero-width interval); ``*_uncorrected`` the
        ordinary unbiased suite value, ``sensitivity`` / ``specificity`` the point estimates used,
        ``n_boot_invalid`` replicates without a correction (``se* + sp* <= 1``). An agent with no task of
        ``n >= k`` gets NaN values and ``n_tasks = 0``.

    Raises
    ------
    TypeError
        When ``judge_error`` is neither a :class:`JudgeError` nor a :class:`MetricCalibration`.
    ValueError
        On invalid counts, ``k``, ``n_boot`` or ``ci_prob``; when ``judge_error`` has no calibration counts; when
        the calibration's point estimates have ``se + sp <= 1``; for an ordinal :class:`MetricCalibration` without
        a pass threshold, or one without gold passes or gold fails; from the exact posterior only when no draw of
        the calibration posteriors can produce the verdicts in floating point
        (:mod:`agentstats.estimators.corrected`).
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
                                f"{q}_method": "rogan_gladen", f"{q}_uncorrected": np.nan})
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
            exact: dict[str, np.ndarray] | None = None
            for q in ("pass_at_k", "pass_hat_k"):
                b = boot[q][valid]
                lo, hi = (np.quantile(b, [tail, 1.0 - tail]) if b.size else (np.nan, np.nan))
                raw = float(est[q])
                row.update({f"{q}_raw": raw, q: raw, f"{q}_ci_low": float(lo), f"{q}_ci_high": float(hi),
                            f"{q}_method": "rogan_gladen",
                            f"{q}_uncorrected": float(hat[kk].mean()) if q == "pass_hat_k"
                            else float(1.0 - miss[kk].mean())})
                if _outside_unit(raw, lo, hi):  # no interval in [0, 1] from Rogan-Gladen: the exact posterior
                    if exact is None:  # its own stream, so the other rows keep theirs
                        exact = _exact_suite(n, c, kk, judge_error, int(n_boot),
                                             np.random.default_rng([int(random_seed), 31, len(rows)]))
                    lo, hi = np.quantile(exact[q], [tail, 1.0 - tail])
                    row.update({q: float(exact[q].mean()), f"{q}_ci_low": float(lo), f"{q}_ci_high": float(hi),
                                f"{q}_method": "exact_posterior"})
            rows.append(row)
    return pd.DataFrame(rows, columns=list(CORRECTED_COLUMNS))

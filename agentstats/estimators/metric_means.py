"""Per agent and metric: the posterior mean of a continuous metric over tasks, and the share of trials passing.

Mean. The quantity is the population mean, over the task population the tasks were sampled from, of each task's
mean value (over its trials and records). Tasks are the exchangeable units: values of one task's trials are
averaged first, so a task with many trials or turns does not outweigh one with few, as in a hierarchical model over
tasks. Its posterior is that of a Dirichlet process over task means (Ferguson 1973, Annals of Statistics
1:209-230), the model of the release gate (:mod:`agentstats.estimators.dirichlet`): for a bounded metric the values are
rescaled to [0, 1] by the metric's range and the prior puts mass ``prior_strength / 2`` on each bound (so point masses
at 0 and 1, common for rates and pass/fail-like scores, need no special family, and an all-equal sample does not
give a point posterior); for an unbounded metric (usage, readability) there is no prior atom, which is Rubin's
Bayesian bootstrap (Rubin 1981, Annals of Statistics 9:130-134). The interval is the equal-tailed credible interval
of the draws. No shape (Beta, logit-normal) is assumed for the task means.

No interval from fewer than two distinct values. Without prior atoms (an unbounded metric, or ``prior_strength = 0``)
the Bayesian bootstrap of one task, or of tasks that all have the same mean, is a point mass: every draw is that
value, and a zero-width interval ("2 [2, 2]" from trials of 1, 2 and 3 s of one task) would claim a certainty the
data do not have: they say nothing about how task means spread. Such a row keeps its mean and gives no interval
(``sd``, ``ci_low``, ``ci_high`` NaN) with the reason in ``ci_note``. A bounded metric with prior atoms has an
interval from any data (the atoms give it width).

Share passing. Each trial passes when all its records with a verdict pass
(:func:`agentstats.records.counts.metric_counts`); the share is the suite pass@1 of those counts by
:func:`agentstats.estimators.suite_pass_k` (mean over tasks of each task's pass rate, with its task-cluster bootstrap
or boundary interval, a frequentist confidence interval).
"""

from __future__ import annotations

import math
import zlib
from typing import Any

import numpy as np
import pandas as pd

from agentstats.estimators.dirichlet import mean_draws, summarize
from agentstats.estimators.suite import suite_pass_k
from agentstats.intervals import CI_PROB, DEFAULT_SEED, check_ci
from agentstats.records.counts import metric_counts

__all__ = ["summarize_metrics", "summarize_metrics_by_risk"]

_COLUMNS = ["agent", "metric", "group", "method", "level", "n_tasks", "n_values", "mean", "sd", "ci_low", "ci_high",
            "ci_prob", "ci_note", "n_trials_passed_known", "share_passed", "share_ci_low", "share_ci_high",
            "share_ci_method"]


def summarize_metrics(frame: pd.DataFrame, *, ci_prob: float = CI_PROB, prior_strength: float = 2.0,
                      n_draws: int = 4000, random_seed: int = DEFAULT_SEED) -> pd.DataFrame:
    """Posterior mean with credible interval, and share of trials passing, per agent and metric.

    Parameters
    ----------
    frame : pandas.DataFrame
        A :func:`agentstats.metrics.compute` frame (its ``attrs["metrics"]`` gives each metric's value range).
    ci_prob : float
        Credible-interval probability (and that of the share's interval).
    prior_strength : float
        Prior mass on the bounds of a bounded metric (module docstring); 2 is the uniform Beta(1, 1) prior for a
        0/1 metric.
    n_draws : int
        Posterior draws.
    random_seed : int
        Seed; each (agent, metric) gets ``numpy.random.default_rng([random_seed, crc32(agent), crc32(metric)])``.

    Returns
    -------
    pandas.DataFrame
        One row per agent and metric: ``n_tasks`` (tasks with an applicable value), ``n_values``, ``mean``, ``sd``,
        ``ci_low``, ``ci_high`` (NaN when no value applies, and, with the reason in ``ci_note``, when fewer than two
        distinct task means and no prior atom leave no spread to estimate; module docstring), ``ci_prob``,
        ``ci_note`` (None when there is an interval), ``n_trials_passed_known``,
        ``share_passed``, ``share_ci_low``, ``share_ci_high``, ``share_ci_method`` (NaN / None when the metric has
        no threshold).

    Raises
    ------
    ValueError
        For ``ci_prob`` outside (0, 1), a negative ``prior_strength`` or ``n_draws < 1``.
    """
    ci_prob, _ = check_ci(ci_prob, "eti", "summarize_metrics")
    if prior_strength < 0 or n_draws < 1:
        raise ValueError("prior_strength must be >= 0 and n_draws >= 1")
    defs = frame.attrs.get("metrics", {})
    rows = []
    for (agent, name), g in frame.groupby(["agent", "metric"], sort=True):
        m = defs.get(name)
        lo, hi = m["value_range"] if m is not None else (-math.inf, math.inf)
        row = {"agent": agent, "metric": name, "group": g["group"].iat[0], "method": g["method"].iat[0],
               "level": g["level"].iat[0], "ci_prob": ci_prob}
        vals = g[g["applicable"]]
        task_means = vals.groupby("task_id")["value"].mean().to_numpy(dtype=float)
        row["n_tasks"], row["n_values"] = len(task_means), len(vals)
        bounded = math.isfinite(lo) and math.isfinite(hi)
        note = _no_spread(task_means, len(vals)) if not (bounded and prior_strength > 0) else None
        row["ci_note"] = note
        if note is not None:
            row.update(mean=float(task_means.mean()), sd=math.nan, ci_low=math.nan, ci_high=math.nan)
        elif len(task_means):
            rng = np.random.default_rng([random_seed, zlib.crc32(str(agent).encode()), zlib.crc32(name.encode())])
            if bounded:
                d = lo + (hi - lo) * mean_draws((task_means - lo) / (hi - lo), prior_strength, n_draws, rng)
            else:
                d = mean_draws(task_means, 0.0, n_draws, rng)
            s = summarize(d, ci_prob)
            row.update(mean=s.mean, sd=s.sd, ci_low=s.ci_low, ci_high=s.ci_high)
        else:
            row.update(mean=math.nan, sd=math.nan, ci_low=math.nan, ci_high=math.nan)
        counts = metric_counts(g, name)
        counts = counts[counts["n"] > 0]
        row["n_trials_passed_known"] = int(counts["n"].sum())
        if len(counts):
            sp = suite_pass_k(counts, k=1, ci_prob=ci_prob, random_seed=random_seed).iloc[0]
            row.update(share_passed=float(sp["pass_at_k"]), share_ci_low=float(sp["pass_at_k_ci_low"]),
                       share_ci_high=float(sp["pass_at_k_ci_high"]), share_ci_method=sp["pass_at_k_ci_method"])
        else:
            row.update(share_passed=math.nan, share_ci_low=math.nan, share_ci_high=math.nan, share_ci_method=None)
        rows.append(row)
    return pd.DataFrame(rows, columns=_COLUMNS)


def _no_spread(task_means: np.ndarray, n_values: int) -> str | None:
    """Why task means without prior atoms give no interval (module docstring), or None when they do (or are none)."""
    distinct = np.unique(task_means)
    if len(task_means) == 0 or len(distinct) >= 2:
        return None
    if len(task_means) == 1:
        return (f"one task ({n_values} value{'s' if n_values != 1 else ''}): the spread between tasks is not "
                "observed, so no credible interval")
    return (f"all {len(task_means)} tasks have the same mean ({distinct[0]:g}): no spread observed, so no credible "
            "interval")


def summarize_metrics_by_risk(frame: pd.DataFrame, **options: Any) -> pd.DataFrame:
    """:func:`summarize_metrics` over all trials and again within each risk level, one table.

    Parameters
    ----------
    frame : pandas.DataFrame
        A :func:`agentstats.metrics.compute` frame; its ``risk_level`` column (the trials' ``risk_level``) forms the
        strata. Trials without a risk level count in ``"all"`` only.
    **options
        Passed to :func:`summarize_metrics` (``ci_prob``, ``prior_strength``, ``n_draws``, ``random_seed``).

    Returns
    -------
    pandas.DataFrame
        The columns of :func:`summarize_metrics` with ``risk_level`` first: ``"all"`` rows for every agent and
        metric, then one block per risk level present (sorted), each summarised on that level's trials alone.
    """
    parts = [summarize_metrics(frame, **options).assign(risk_level="all")]
    levels = sorted({str(r) for r in frame["risk_level"] if r is not None and r == r}) if len(frame) else []
    for level in levels:
        sub = frame[frame["risk_level"] == level]
        sub.attrs = frame.attrs
        parts.append(summarize_metrics(sub, **options).assign(risk_level=level))
    out = pd.concat(parts, ignore_index=True)
    return out[["risk_level", *_COLUMNS]]

"""Agreement between a judge and gold labels: accuracy, Cohen's kappa, sensitivity and specificity, confusion matrix.

Formulas
--------
* Confusion matrix ``N[g, v]``: items with gold label ``g`` and verdict ``v`` (rows gold, columns verdict).
* Accuracy (observed agreement) ``p_o = sum_g N[g, g] / N``.
* Cohen's kappa ``kappa = (p_o - p_e) / (1 - p_e)`` with chance agreement ``p_e = sum_g (N[g, .] / N) (N[., g] / N)``
  (Cohen 1960, *Educ. Psychol. Meas.* 20(1), 37-46). Undefined (NaN) when ``p_e = 1`` (both raters used one and the
  same category throughout).
* Weighted kappa for ordinal scores, quadratic weights ``w[i, j] = (i - j)^2 / (K - 1)^2`` over the ``K`` categories
  in order: ``kappa_w = 1 - sum w N / sum w E`` with ``E[i, j] = N[i, .] N[., j] / N`` (Cohen 1968, *Psychol. Bull.*
  70(4), 213-220; quadratic weights: Fleiss & Cohen 1973, *Educ. Psychol. Meas.* 33(3), 613-619). The categories are
  the rubric's declared scale (every score from its lowest to its highest, used or not: ``scales``, or the items'
  ``scale`` field), since the weights depend on how far apart two scores are on the scale and ``K - 1`` is its
  range; without a declared scale, the scores that occurred (and the result says ``scale_source="observed"``): on a
  1-5 rubric where nobody used 1 these give 4 categories and a different kappa.
* Sensitivity ``TP / (TP + FN)`` and specificity ``TN / (TN + FP)``, pass being the positive class, reported with
  their Beta posteriors under a ``Beta(1, 1)`` prior (:class:`agentstats.calibration.judge_error.JudgeError`): mean
  and equal-tailed credible interval. Ordinal scores get them when a pass threshold is given (``score >=
  threshold`` passes).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import beta as beta_dist

from agentstats.calibration.judge_error import JudgeError
from agentstats.intervals import CI_PROB, check_ci
from agentstats.records.calibration import calibration_frame

__all__ = ["CalibrationReport", "MetricCalibration", "calibrate", "choose_calibration", "cohen_kappa",
           "confusion_matrix"]


def confusion_matrix(gold: Any, verdict: Any, labels: Any = None) -> tuple[np.ndarray, list[Any]]:
    """Count the (gold, verdict) pairs.

    Parameters
    ----------
    gold, verdict : array-like, shape (N,)
        Labels of the same items.
    labels : sequence, optional
        Categories in order; default the sorted union of both.

    Returns
    -------
    matrix : numpy.ndarray of int, shape (K, K)
        Rows gold, columns verdict.
    labels : list
        The K categories.

    Raises
    ------
    ValueError
        If the lengths differ or a value is not among ``labels``.
    """
    gold, verdict = list(gold), list(verdict)
    if len(gold) != len(verdict):
        raise ValueError(f"gold and verdict differ in length ({len(gold)} and {len(verdict)})")
    cats = sorted(set(gold) | set(verdict)) if labels is None else list(labels)
    index = {c: i for i, c in enumerate(cats)}
    out = np.zeros((len(cats), len(cats)), dtype=np.int64)
    for g, v in zip(gold, verdict, strict=True):
        if g not in index or v not in index:
            raise ValueError(f"label {g if g not in index else v!r} is not among the categories {cats}")
        out[index[g], index[v]] += 1
    return out, cats


def cohen_kappa(matrix: Any, weights: str | None = None) -> float:
    """Cohen's kappa of a square confusion matrix (module docstring).

    Parameters
    ----------
    matrix : array-like, shape (K, K)
        Counts, rows one rater (gold), columns the other (judge); categories in order for weighted kappa.
    weights : {None, "linear", "quadratic"}
        Unweighted (Cohen 1960) or weighted kappa (Cohen 1968) with ``|i - j| / (K - 1)`` or
        ``(i - j)^2 / (K - 1)^2`` disagreement weights.

    Returns
    -------
    float
        Kappa in [-1, 1]; NaN when chance agreement is total (or the matrix is empty).

    Raises
    ------
    ValueError
        If the matrix is not square, has negative entries, or ``weights`` is unknown.
    """
    m = np.asarray(matrix, dtype=float)
    if m.ndim != 2 or m.shape[0] != m.shape[1]:
        raise ValueError(f"the confusion matrix must be square, got shape {m.shape}")
    if (m < 0).any():
        raise ValueError("the confusion matrix has negative counts")
    total = m.sum()
    k = m.shape[0]
    if total == 0:
        return float("nan")
    expected = np.outer(m.sum(axis=1), m.sum(axis=0)) / total
    i, j = np.indices((k, k))
    if weights is None:
        w = (i != j).astype(float)
    elif weights == "linear":
        w = np.abs(i - j) / max(k - 1, 1)
    elif weights == "quadratic":
        w = (i - j) ** 2 / max(k - 1, 1) ** 2
    else:
        raise ValueError(f"weights must be None, 'linear' or 'quadratic', got {weights!r}")
    denom = float((w * expected).sum())
    if denom <= 0:
        return float("nan")
    return float(1.0 - (w * m).sum() / denom)


@dataclass(frozen=True)
class MetricCalibration:
    """Agreement of the judge with gold labels on one metric (module docstring for the formulas).

    Attributes
    ----------
    metric : str
    scale : {"binary", "ordinal"}
    n_items : int
        Items with a verdict (the judge answered).
    n_missing : int
        Items where the judge gave no verdict (``judge_missing``), left out of every figure.
    accuracy, kappa : float
        Observed agreement and Cohen's kappa (NaN when undefined).
    weighted_kappa : float or None
        Quadratic-weighted kappa (ordinal scales only).
    scale_source : {"declared", "observed", "binary"}
        Where the categories came from: the rubric's declared scale, the scores that occurred, or pass / fail.
    labels : list
        Categories of the confusion matrix, in order.
    confusion : numpy.ndarray of int, shape (K, K)
        Rows gold, columns verdict.
    threshold : int or None
        Ordinal pass threshold (``score >= threshold`` passes) behind the binary figures.
    tp, fn, tn, fp : int or None
        Binary counts (pass is positive); None for an ordinal metric without threshold.
    sensitivity, specificity : dict or None
        ``{"mean", "lower", "upper"}`` of the Beta posterior (``ci_prob`` equal-tailed interval), or None.
    ci_prob : float
    """

    metric: str
    scale: str
    n_items: int
    n_missing: int
    accuracy: float
    kappa: float
    weighted_kappa: float | None
    labels: list[Any]
    confusion: np.ndarray
    threshold: int | None = None
    tp: int | None = None
    fn: int | None = None
    tn: int | None = None
    fp: int | None = None
    sensitivity: dict[str, float] | None = None
    specificity: dict[str, float] | None = None
    ci_prob: float = CI_PROB
    scale_source: str = "binary"

    @property
    def judge_error(self) -> JudgeError:
        """The Beta posteriors of sensitivity and specificity, for ``fit(..., judge_calibration=...)``.

        Raises
        ------
        ValueError
            For an ordinal metric without a pass threshold, or when gold passes or gold fails are absent.
        """
        if self.tp is None or self.fn is None or self.tn is None or self.fp is None:
            raise ValueError(
                f"metric {self.metric!r} is ordinal: give a pass threshold to measure sensitivity and specificity"
            )
        return JudgeError.from_counts(self.tp, self.fn, self.tn, self.fp)

    def as_record(self) -> dict[str, Any]:
        """JSON-ready dict (NaN as None; the confusion matrix as nested lists with its labels)."""

        def num(x: Any) -> Any:
            if x is None:
                return None
            x = float(x)
            return None if x != x else x

        out: dict[str, Any] = {
            "metric": self.metric,
            "scale": self.scale,
            "n_items": self.n_items,
            "n_missing": self.n_missing,
            "accuracy": num(self.accuracy),
            "kappa": num(self.kappa),
            "weighted_kappa": num(self.weighted_kappa),
            "threshold": self.threshold,
            "scale_source": self.scale_source,
            "tp": self.tp,
            "fn": self.fn,
            "tn": self.tn,
            "fp": self.fp,
            "ci_prob": self.ci_prob,
        }
        for name in ("sensitivity", "specificity"):
            value = getattr(self, name)
            for key in ("mean", "lower", "upper"):
                out[f"{name}_{key}"] = None if value is None else num(value[key])
        out["labels"] = [v if isinstance(v, bool) else int(v) for v in self.labels]
        out["confusion"] = self.confusion.tolist()
        return out


@dataclass(frozen=True)
class CalibrationReport:
    """Per-metric calibration results of :func:`calibrate`.

    Attributes
    ----------
    metrics : dict of str to MetricCalibration
        In the order the metrics first appear.
    """

    metrics: dict[str, MetricCalibration] = field(default_factory=dict)

    def __getitem__(self, metric: str) -> MetricCalibration:
        if metric not in self.metrics:
            raise KeyError(f"no calibration for metric {metric!r}; calibrated: {sorted(self.metrics)}")
        return self.metrics[metric]

    def __contains__(self, metric: object) -> bool:
        return metric in self.metrics

    def __iter__(self) -> Iterator[str]:
        """Iterate over the calibrated metrics' names (a mapping's keys)."""
        return iter(self.metrics)

    def __len__(self) -> int:
        return len(self.metrics)

    def table(self) -> pd.DataFrame:
        """One row per metric (:meth:`MetricCalibration.as_record` without the confusion matrix)."""
        skip = ("labels", "confusion")
        rows = [{k: v for k, v in m.as_record().items() if k not in skip} for m in self.metrics.values()]
        return pd.DataFrame(rows)


def _beta_summary(a: float, b: float, ci_prob: float) -> dict[str, float]:
    tail = (1.0 - ci_prob) / 2.0
    return {
        "mean": a / (a + b),
        "lower": float(beta_dist.ppf(tail, a, b)),
        "upper": float(beta_dist.ppf(1.0 - tail, a, b)),
    }


def calibrate(
    items: pd.DataFrame | list[dict[str, Any]],
    *,
    thresholds: dict[str, int] | None = None,
    ci_prob: float = CI_PROB,
    scales: dict[str, tuple[int, int]] | None = None,
) -> CalibrationReport:
    """Measure a judge against gold labels, per metric (module docstring for the formulas).

    Parameters
    ----------
    items : pandas.DataFrame or list of dict
        A calibration frame from ``agentstats.load(path, format="calibration")``, or records with fields
        ``item_id, metric, verdict, gold`` (validated the same way).
    thresholds : dict of str to int, optional
        Pass threshold per ordinal metric (``score >= threshold`` passes), for its sensitivity and specificity.
    ci_prob : float
        Probability of the credible intervals, in (0, 1).
    scales : dict of str to (int, int), optional
        The declared scale ``(lowest, highest)`` of an ordinal metric (over the items' own ``scale`` field): the
        categories of its confusion matrix and weighted kappa (module docstring).

    Returns
    -------
    CalibrationReport

    Raises
    ------
    ValueError
        On ``ci_prob`` outside (0, 1), a threshold or scale for an unknown or binary metric, a scale that is not
        ``lowest < highest`` or that a score lies outside.
    agentstats.records.problems.LoadError
        When in-memory records are invalid.
    """
    ci_prob, _ = check_ci(ci_prob, "eti", "calibrate")
    frame = items if isinstance(items, pd.DataFrame) and "line" in items.columns else calibration_frame(items)
    thresholds = dict(thresholds or {})
    known = set(frame["metric"])
    unknown = set(thresholds) - known
    if unknown:
        raise ValueError(f"threshold given for metric(s) {sorted(unknown)} not in the calibration set {sorted(known)}")
    scales = {m: (int(lo), int(hi)) for m, (lo, hi) in (scales or {}).items()}
    unknown = set(scales) - known
    if unknown:
        raise ValueError(f"scale given for metric(s) {sorted(unknown)} not in the calibration set {sorted(known)}")
    out: dict[str, MetricCalibration] = {}
    for metric, group in frame.groupby("metric", sort=False):
        metric = str(metric)
        answered = group[group["verdict"].notna()]
        gold = answered["gold"].tolist()
        verdict = answered["verdict"].tolist()
        binary = isinstance(group["gold"].iloc[0], bool)
        if binary and metric in thresholds:
            raise ValueError(f"metric {metric!r} is binary: a pass threshold applies to ordinal scores only")
        declared = scales.get(metric) or next((sc for sc in group.get("scale", []) if sc is not None), None)
        if binary and metric in scales:
            raise ValueError(f"metric {metric!r} is binary: a scale applies to ordinal scores only")
        labels, source = _categories(metric, binary, declared, gold, verdict)
        matrix, labels = confusion_matrix(gold, verdict, labels)
        n = int(matrix.sum())
        accuracy = float(np.trace(matrix) / n) if n else float("nan")
        kappa = cohen_kappa(matrix)
        weighted = None if binary else cohen_kappa(matrix, "quadratic")
        threshold = thresholds.get(metric)
        counts: dict[str, int | None] = {"tp": None, "fn": None, "tn": None, "fp": None}
        se = sp = None
        if binary or threshold is not None:
            g = np.asarray(gold, dtype=bool) if binary else np.asarray(gold) >= threshold
            v = np.asarray(verdict, dtype=bool) if binary else np.asarray(verdict) >= threshold
            counts = {
                "tp": int((g & v).sum()),
                "fn": int((g & ~v).sum()),
                "tn": int((~g & ~v).sum()),
                "fp": int((~g & v).sum()),
            }
            se = _beta_summary(1 + counts["tp"], 1 + counts["fn"], ci_prob)  # type: ignore[operator]
            sp = _beta_summary(1 + counts["tn"], 1 + counts["fp"], ci_prob)  # type: ignore[operator]
        out[metric] = MetricCalibration(
            metric=metric,
            scale="binary" if binary else "ordinal",
            n_items=n,
            n_missing=int(group["verdict"].isna().sum()),
            accuracy=accuracy,
            kappa=kappa,
            weighted_kappa=weighted,
            labels=labels,
            confusion=matrix,
            threshold=threshold,
            sensitivity=se,
            specificity=sp,
            ci_prob=float(ci_prob),
            scale_source=source,
            **counts,
        )
    return CalibrationReport(out)


def _categories(metric: str, binary: bool, declared: tuple[int, int] | None, gold: list[Any],
                verdict: list[Any]) -> tuple[list[Any], str]:
    """Return the confusion matrix's categories and where they came from (module docstring)."""
    if binary:
        return [False, True], "binary"
    seen = {int(v) for v in gold} | {int(v) for v in verdict}
    if declared is None:
        return sorted(seen), "observed"
    lo, hi = declared
    if lo >= hi:
        raise ValueError(f"metric {metric!r}: the scale must be (lowest, highest) with lowest < highest, "
                         f"got {declared}")
    outside = sorted(v for v in seen if not lo <= v <= hi)
    if outside:
        raise ValueError(f"metric {metric!r}: scores {outside} lie outside the declared scale [{lo}, {hi}]")
    return list(range(lo, hi + 1)), "declared"


def choose_calibration(path: str | os.PathLike[str], metric: str | None = None, *, ci_prob: float = CI_PROB
                       ) -> MetricCalibration:
    """Read a judge's calibration set and return the calibration of the one metric that corrects pass@k / pass^k.

    What ``agentstats fit --judge-calibration`` and the report's ``judge_calibration`` both use, before any work: a
    set that cannot correct anything is refused here.

    Parameters
    ----------
    path : str or path-like
        Calibration set (JSONL items: ``item_id, metric, verdict, gold``; ``agentstats.load(path,
        format="calibration")``).
    metric : str, optional
        The metric to use; default the set's only one.
    ci_prob : float
        Probability of the credible intervals of sensitivity and specificity, in (0, 1).

    Returns
    -------
    MetricCalibration
        The metric's calibration; its :attr:`~MetricCalibration.judge_error` exists.

    Raises
    ------
    ValueError
        An invalid set (:class:`~agentstats.records.problems.LoadError`, located), several metrics and none chosen,
        an unknown metric, or a metric without a judge error (an ordinal one without threshold, a set without gold
        passes or fails).
    OSError
        An unreadable file.
    """
    from agentstats._util.options import option_name
    from agentstats.io.loaders import load

    report = calibrate(load(path, format="calibration"), ci_prob=ci_prob)
    if metric is None:
        if len(report.metrics) != 1:
            raise ValueError(
                f"{path} calibrates {sorted(report.metrics)}: choose one with {option_name('judge_metric')}")
        metric = next(iter(report.metrics))
    try:
        chosen = report[metric]
    except KeyError as exc:
        raise ValueError(str(exc).strip('"')) from None
    _ = chosen.judge_error  # an ordinal metric without threshold, a set without passes or fails: said now
    return chosen

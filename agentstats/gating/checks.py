"""The gate's checks: what each one measures, per metric and stratum, before the decision rule reads it.

Each check gives :class:`Evidence`: a posterior probability, the boundary it is about, the examples behind it and the
decision levels of its stratum. The decision rule (:func:`agentstats.gating.decide.decide`) turns all of them at
once into met / failed / undecided and PASS / FAIL / RETRY. The probabilities come from the Dirichlet-process
posteriors of :mod:`agentstats.estimators.dirichlet`; the levels from :class:`GateConfig.decision` and its risk-level
overrides.

* threshold (each metric with a threshold; on all examples, and on one risk level's examples where that level
  overrides the threshold): ``P(mean >= threshold)``; met when it is ``>= pass_probability``, failed when
  ``<= 1 - fail_probability``. A threshold of 1.0 is "no failure": met when every value is 1, failed by any other
  value; it counts failures (examples with a value below 1) and has no probability.
* regression (each metric scored in both sets; on all paired examples and in each stratum: every ``risk_level`` and
  each tag in ``strata_tags``): ``P(difference < -tolerance)``; met when it is ``<= max_regression_probability``,
  failed when ``>= fail_probability``. A review-only metric (the refusal rate, unless the config names it:
  :meth:`GateConfig.is_review_only`) is summarized and compared but has no check.
* efficiency (each usage field with a relative tolerance ``r``; all paired examples): ``P(ratio > 1 + r)``; met and
  failed as a regression.
* missing (the effective-N check; each metric scored in both sets with a missing value in either): the shares of
  missing values (judge verdicts, trial outcomes) in the two sets; met when they differ by at most
  ``max_missing_difference``, otherwise undecided: the examples behind the comparison are no longer alike, and more
  examples do not fix that.

A check with no scored example has no evidence and is undecided ("no scored example: judge down?"), never met or failed
by the prior alone. A "no failure" threshold (1.0) carries the exact one-sided upper bound on the failure rate
(Clopper & Pearson 1934, Biometrika 26:404-413; at 95 % and no failure about ``3 / n``, the "rule of three" of Hanley &
Lippman-Hand 1983, JAMA 249:1743-1745): ``failure_rate_upper``. A binary metric with one trial per example has its
paired difference in closed form (:class:`agentstats.estimators.dirichlet.PairedBinary`: no Monte Carlo, no seed).

A metric judged by a calibrated judge (``GateConfig.judge_calibration``) has its mean and paired difference on the
corrected scale (:mod:`agentstats.estimators.corrected`). Every check draws from its own random
stream (:func:`check_rng`), so no check's draws depend on the order checks are computed in.
"""

from __future__ import annotations

import hashlib
import math
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

from agentstats.estimators.beta import failure_rate_upper
from agentstats.estimators.corrected import corrected_binary_mean, corrected_draws
from agentstats.estimators.dirichlet import (
    Summary,
    beta_summary,
    difference_draws,
    is_binary,
    mean_draws,
    mean_posterior,
    paired_binary,
    ratio_draws,
    summarize,
)
from agentstats.gating.config import DecisionProbabilities, GateConfig
from agentstats.records.scores import ScoreSet

if TYPE_CHECKING:
    from agentstats.calibration import JudgeError

__all__ = [
    "Check",
    "Evidence",
    "MetricInputs",
    "MetricResult",
    "Stratum",
    "check_rng",
    "efficiency_check",
    "evaluate",
    "judge_errors",
    "no_failure_text",
    "strata",
]

Kind = Literal["threshold", "regression", "efficiency", "missing"]

#: Why a check without a scored example says nothing.
NO_SCORED = "no scored example (judge down?)"
State = Literal["met", "failed", "undecided"]


@dataclass(frozen=True)
class Evidence:
    """What one check measured, before the decision rule gives it a state.

    Attributes
    ----------
    kind : {"threshold", "regression", "efficiency", "missing"}
    metric, stratum : str
        Metric (or usage field) and stratum (``"all"``, ``"risk_level=<level>"``, ``"tag=<tag>"``).
    probability : float
        ``P(mean >= threshold)``, ``P(difference < -tolerance)`` or ``P(ratio > 1 + tolerance)``; NaN for a
        "no failure" threshold, a missing check, and a check without a scored (or paired) example.
    bound : float
        The threshold, ``-tolerance``, ``1 + relative tolerance``, or the largest difference of missing shares.
    critical : bool
    n : int
        Examples behind the check (candidate examples for thresholds, paired examples otherwise).
    levels : DecisionProbabilities
        The decision levels of the check's stratum.
    mean, sd : float or None
        Posterior mean and sd of the checked quantity (how far it is from ``bound``, for the examples that would
        decide it); None where there is no posterior.
    failures : int or None
        For a "no failure" threshold (1.0): examples whose value is below 1; None for every other check.
    note : str or None
        Why the check has no probability (``"no scored example (judge down?)"``), or what a missing check counted.
    p_better : float or None
        For a threshold check: ``P(difference > 0)`` against the baseline in the same stratum (the "improved but
        still below threshold" reason), None without a comparison.
    failure_rate_upper : float or None
        For a "no failure" threshold: the one-sided ``ci_prob`` upper bound on the failure rate.
    value : float or None
        For a missing check: the candidate's share of missing values minus the baseline's.
    """

    kind: Kind
    metric: str
    stratum: str
    probability: float
    bound: float
    critical: bool
    n: int
    levels: DecisionProbabilities
    mean: float | None = None
    sd: float | None = None
    failures: int | None = None
    note: str | None = None
    p_better: float | None = None
    failure_rate_upper: float | None = None
    value: float | None = None


@dataclass(frozen=True)
class Check:
    """One decisive check, as decided (an entry of the decision record's ``checks``).

    Attributes
    ----------
    kind : {"threshold", "regression", "efficiency", "missing"}
    metric : str
        Metric (or usage field) checked.
    stratum : str
        ``"all"``, ``"risk_level=<level>"`` or ``"tag=<tag>"``.
    probability : float
        ``P(mean >= threshold)`` (threshold), ``P(difference < -tolerance)`` (regression) or
        ``P(ratio > 1 + tolerance)`` (efficiency); NaN for a "no failure" threshold (1.0), which counts failures
        instead, and for a regression check without a paired example.
    bound : float
        The threshold, ``-tolerance``, or ``1 + relative tolerance``.
    state : {"met", "failed", "undecided"}
    critical : bool
    n : int
        Examples behind the check (candidate examples for thresholds, paired examples otherwise).
    more_examples : int or None
        For an undecided check: more examples of the stratum that would decide it at the current effect size
        (None: no finite number does).
    failures : int or None
        For a "no failure" threshold (1.0): the examples whose value is below 1 (the check is met when there is
        none). None for every other check.
    met_at, fail_at : float or None
        The probabilities at which the check was met and would fail at this look, on the scale of ``probability``
        (a threshold check is met at ``>= met_at`` and fails at ``<= fail_at``; a regression or efficiency check is
        met at ``<= met_at`` and fails at ``>= fail_at``): the stratum's levels times this look's share of the error
        rates, and ``fail_at`` after the family-wise adjustment (:func:`agentstats.gating.decide.decide`). None for a
        check without a probability.
    note : str or None
        Why a check has no probability, or what a missing check counted.
    failure_rate_upper : float or None
        For a "no failure" threshold: the one-sided upper bound on the failure rate (module docstring).
    value : float or None
        For a missing check: the candidate's share of missing values minus the baseline's.
    """

    kind: str
    metric: str
    stratum: str
    probability: float
    bound: float
    state: State
    critical: bool
    n: int
    more_examples: int | None = None
    failures: int | None = None
    met_at: float | None = None
    fail_at: float | None = None
    note: str | None = None
    failure_rate_upper: float | None = None
    value: float | None = None

    def describe(self) -> str:
        """One line saying what was checked and how it came out."""
        where = "" if self.stratum == "all" else f" [{self.stratum}]"
        if self.kind == "missing":
            return (f"{self.metric}{where}: missing values differ between the sets by more than "
                    f"{self.bound:.0%}: {self.note}; the examples compared are no longer alike: {self.state}"
                    if self.state != "met" else f"{self.metric}{where}: missing values alike ({self.note}): met")
        if self.n == 0 and self.note is not None:
            return f"{self.metric}{where}: {self.note}: {self.state}"
        if self.failures is not None:
            bound = ("" if self.failure_rate_upper is None or self.failures
                     else f" (failure rate below {self.failure_rate_upper:.3g} at the credible level)")
            return (f"{self.metric}{where}: no failure allowed (threshold 1): "
                    f"{no_failure_text(self.failures, self.n)}{bound}: {self.state}")
        if self.kind == "threshold":
            what = f"P({self.metric} >= {self.bound:g}) = {self.probability:.3f}"
        elif self.kind == "regression":
            what = f"P({self.metric} worse than baseline by > {-self.bound:g}) = {self.probability:.3f}"
        else:
            what = f"P({self.metric} ratio to baseline > {self.bound:g}) = {self.probability:.3f}"
        if self.n == 0:
            return f"{self.metric}{where}: no example scored in both sets (missing verdicts?): undecided"
        text = f"{what}{where} on {self.n} examples: {self.state}"
        if self.state == "undecided":
            text += (
                f"; about {self.more_examples} more example{'' if self.more_examples == 1 else 's'} would decide it "
                "at the current effect size"
                if self.more_examples is not None
                else "; the estimate sits on the boundary: no sample size decides it at this effect size"
            )
        return text


@dataclass(frozen=True)
class MetricResult:
    """One metric in one stratum: the candidate's mean, the baseline comparison, and their probabilities.

    Attributes
    ----------
    metric, stratum : str
    n_candidate : int
        Candidate examples with a scored value.
    n_paired : int
        Examples scored in both sets.
    n_missing : int
        The candidate's missing verdicts (``null`` values, excluded from the mean) in this stratum.
    binary : bool
        Whether every value is 0 or 1 (the candidate's mean then has the exact Beta posterior).
    trials : int
        Most scored trials of one example (the per-example value is the mean over them).
    candidate : dict
        Posterior ``mean, sd, ci_low, ci_high`` of the candidate's population mean (all its examples).
    threshold : float or None
    p_meets_threshold : float or None
        ``P(mean >= threshold)``; None without a threshold, without a scored example, and for a "no failure"
        threshold (1.0), which is not a probability (see ``n_failures``).
    n_failures : int or None
        For a "no failure" threshold (1.0): the candidate's examples with a value below 1; None otherwise.
    failure_rate_upper : float or None
        For a "no failure" threshold: the one-sided ``ci_prob`` upper bound on the failure rate (Clopper-Pearson;
        about ``3 / n`` at 95 % with no failure); None otherwise.
    baseline, candidate_paired, difference : dict or None
        Posterior summaries on the paired examples (difference = candidate - baseline).
    tolerance : float
    p_regression : float or None
        ``P(difference < -tolerance)``.
    p_better, p_worse : float or None
        ``P(difference > 0)``, ``P(difference < 0)``.
    judge_corrected : bool
        Whether the means and the difference are on the corrected scale of a calibrated judge (true rates, not
        verdict rates; ``GateConfig.judge_calibration``).
    """

    metric: str
    stratum: str
    n_candidate: int
    n_paired: int
    n_missing: int
    binary: bool
    trials: int
    candidate: dict[str, float]
    threshold: float | None
    p_meets_threshold: float | None
    baseline: dict[str, float] | None
    candidate_paired: dict[str, float] | None
    difference: dict[str, float] | None
    tolerance: float
    p_regression: float | None
    p_better: float | None
    p_worse: float | None
    judge_corrected: bool = False
    n_failures: int | None = None
    failure_rate_upper: float | None = None


@dataclass(frozen=True)
class Stratum:
    """A set of examples checked on its own: ``"all"``, one risk level, or one tag.

    Attributes
    ----------
    name : str
        ``"all"``, ``"risk_level=<level>"`` or ``"tag=<tag>"``.
    risk_level : str or None
        The level of a risk-level stratum (its config overrides apply); None otherwise.
    ids : frozenset of str
        The examples of either set in the stratum.
    """

    name: str
    risk_level: str | None
    ids: frozenset[str]

    @property
    def is_tag(self) -> bool:
        """Whether the stratum is a tag's (thresholds are not checked there)."""
        return self.name.startswith("tag=")


def strata(cand: ScoreSet, base: ScoreSet, cfg: GateConfig) -> list[Stratum]:
    """Return the strata of a gate: ``"all"``, each risk level of either set (sorted), each configured tag present."""
    ex = pd.concat([cand.examples, base.examples[~base.examples.index.isin(cand.examples.index)]])
    out = [Stratum("all", None, frozenset(ex.index))]
    for level in sorted({r for r in ex["risk_level"] if r is not None}):
        out.append(Stratum(f"risk_level={level}", level, frozenset(ex.index[ex["risk_level"] == level])))
    for tag in cfg.strata_tags:
        ids = frozenset(i for i, tags in ex["tags"].items() if tag in tags)
        if ids:
            out.append(Stratum(f"tag={tag}", None, ids))
    return out


@dataclass(frozen=True)
class MetricInputs:
    """One metric's per-example values in both sets, read once and checked in every stratum.

    Attributes
    ----------
    metric : str
    candidate, baseline : pandas.Series
        Per-example means over scored trials (index ``id``); the baseline's is empty when it lacks the metric.
    shared : bool
        Whether the baseline scores the metric (it is then compared).
    trials : int
        Most scored trials of one example in either set.
    missing : pandas.Series
        The candidate's missing verdicts per example.
    judge : agentstats.calibration.JudgeError or None
        The calibrated judge whose errors are corrected for, if any.
    review_only, critical : bool
    """

    metric: str
    candidate: pd.Series
    baseline: pd.Series
    shared: bool
    trials: int
    missing: pd.Series
    judge: JudgeError | None
    review_only: bool
    critical: bool

    @classmethod
    def of(cls, metric: str, cand: ScoreSet, base: ScoreSet, cfg: GateConfig,
           judges: dict[str, JudgeError]) -> MetricInputs:
        """Read ``metric`` from both sets."""
        shared = metric in base.metrics
        rows = cand.scores[cand.scores["metric"] == metric]
        return cls(
            metric=metric,
            candidate=cand.example_means(metric),
            baseline=base.example_means(metric) if shared else pd.Series(dtype=float),
            shared=shared,
            trials=max(cand.max_trials(metric), base.max_trials(metric) if shared else 0),
            missing=rows["value"].isna().groupby(rows["id"]).sum(),
            judge=judges.get(metric),
            review_only=cfg.is_review_only(metric),
            critical=cfg.is_critical(metric),
        )


def check_rng(seed: int, *names: str) -> np.random.Generator:
    """Return the random stream of one check (``names``: its role, metric and stratum), whatever the order."""
    key = [zlib.crc32(n.encode()) for n in names]
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=key))


def evaluate(m: MetricInputs, stratum: Stratum, paired: set[str],
             cfg: GateConfig) -> tuple[list[Evidence], MetricResult | None]:
    """Check one metric in one stratum: its threshold, and its regression against the baseline.

    Parameters
    ----------
    m : MetricInputs
    stratum : Stratum
    paired : set of str
        Ids scored in both sets (:func:`agentstats.gating.data.pair_ids`).
    cfg : GateConfig

    Returns
    -------
    (list of Evidence, MetricResult or None)
        The threshold check (if the metric has a threshold here), then the regression check (if the metric is
        compared and not review-only); the metric's summary, None when the candidate has no value in the stratum
        and no threshold applies.
    """
    yc = m.candidate[m.candidate.index.isin(stratum.ids)]
    threshold = None if stratum.is_tag else cfg.threshold(m.metric, stratum.risk_level)
    levels = cfg.probabilities(stratum.risk_level)
    tol = cfg.tolerance(m.metric, stratum.risk_level)
    no_pair = Evidence("regression", m.metric, stratum.name, math.nan, -tol, m.critical, 0, levels)
    unpaired = [no_pair] if m.shared and stratum.name == "all" and not m.review_only else []
    if not len(yc) and threshold is None:
        return unpaired, None  # every candidate verdict missing: nothing compares
    summ, draws, dist, binary = _mean(m, stratum, yc, cfg)
    ids = sorted(paired & stratum.ids & set(yc.index) & set(m.baseline.index))
    compared = _difference(m, stratum, ids, yc, tol, cfg) if m.shared and ids else None
    better = None if compared is None else compared["p_better"]
    evidence: list[Evidence] = []
    p_thr = n_fail = upper = None
    if threshold is not None and threshold >= 1.0:
        # "no failure" is no probability (no posterior gives P(mean >= 1) > 0): it counts the examples below 1,
        # reading the verdicts as given, corrected or not
        n_fail = int((yc < 1.0).sum())
        upper = failure_rate_upper(n_fail, len(yc), cfg.ci_prob)
        evidence.append(Evidence("threshold", m.metric, stratum.name, math.nan, threshold, m.critical, len(yc),
                                 levels, failures=n_fail, note=None if len(yc) else NO_SCORED, p_better=better,
                                 failure_rate_upper=upper))
    elif threshold is not None and not len(yc):  # the prior alone decides nothing
        evidence.append(Evidence("threshold", m.metric, stratum.name, math.nan, threshold, m.critical, 0, levels,
                                 note=NO_SCORED))
    elif threshold is not None:
        p_thr = float(dist.sf(threshold)) if dist is not None else float((draws >= threshold).mean())
        evidence.append(Evidence("threshold", m.metric, stratum.name, p_thr, threshold, m.critical, len(yc), levels,
                                 summ.mean, summ.sd, p_better=better))
    if compared is not None and not m.review_only:
        diff = compared["difference"]
        evidence.append(Evidence("regression", m.metric, stratum.name, compared["p_regression"], -tol, m.critical,
                                 len(ids), levels, diff["mean"], diff["sd"]))
    elif compared is None:
        evidence += unpaired
    n_missing = m.missing.loc[m.missing.index.isin(stratum.ids)].sum().item() if len(m.missing) else 0
    result = MetricResult(
        metric=m.metric, stratum=stratum.name, n_candidate=len(yc), n_paired=len(ids), n_missing=n_missing,
        binary=binary, trials=m.trials, candidate=summ.as_dict(), threshold=threshold,
        p_meets_threshold=p_thr, tolerance=tol, judge_corrected=m.judge is not None and len(yc) > 0,
        n_failures=n_fail, failure_rate_upper=upper, **(compared or dict.fromkeys(_COMPARED)),
    )
    return evidence, result


_COMPARED = ("baseline", "candidate_paired", "difference", "p_regression", "p_better", "p_worse")


def _mean(m: MetricInputs, stratum: Stratum, yc: pd.Series, cfg: GateConfig) -> tuple[Summary, Any, Any, bool]:
    """Return the candidate's mean in ``stratum``: ``(summary, draws or None, exact Beta or None, binary)``.

    With a calibrated judge the draws are of the corrected mean (and there is no exact Beta); ``binary`` tells
    whether the observed values are all 0 or 1 either way.
    """
    y = yc.to_numpy()
    summ, draws, dist = mean_posterior(y, cfg.prior_strength, cfg.ci_prob, cfg.n_draws,
                                       check_rng(cfg.random_seed, "mean", m.metric, stratum.name))
    binary = dist is not None
    if m.judge is None or not len(yc):
        return summ, draws, dist, binary
    judge_rng = check_rng(cfg.random_seed, "judge", m.metric, stratum.name)
    if binary:  # the exact sampler of the misclassification model
        draws = corrected_binary_mean(int(y.sum()), y.size, m.judge, cfg.prior_strength, cfg.n_draws, judge_rng)
    else:
        obs_rng = check_rng(cfg.random_seed, "mean", m.metric, stratum.name)
        draws = corrected_draws(lambda k: mean_draws(y, cfg.prior_strength, k, obs_rng)[:, None], m.judge,
                                cfg.n_draws, judge_rng)[:, 0]
    return summarize(draws, cfg.ci_prob), draws, None, binary


def _difference(m: MetricInputs, stratum: Stratum, ids: list[str], yc: pd.Series, tol: float,
                cfg: GateConfig) -> dict[str, Any]:
    """Compare on ``ids``: summaries of both means and of the difference, and its probabilities."""
    yp, xp = yc.loc[ids].to_numpy(), m.baseline.loc[ids].to_numpy()
    if m.judge is None and is_binary(yp) and is_binary(xp):  # closed form: no draws, no seed
        pb = paired_binary(yp, xp, cfg.prior_strength)
        cand_m, base_m = pb.margins()
        return {"baseline": beta_summary(base_m, cfg.ci_prob).as_dict(),
                "candidate_paired": beta_summary(cand_m, cfg.ci_prob).as_dict(),
                "difference": pb.summary(cfg.ci_prob).as_dict(), "p_regression": float(pb.cdf(-tol)),
                "p_better": float(pb.p_better()), "p_worse": float(pb.p_worse())}
    diff_rng = check_rng(cfg.random_seed, "diff", m.metric, stratum.name)
    if m.judge is None:
        my, mx, d = difference_draws(yp, xp, cfg.prior_strength, cfg.n_draws, diff_rng)
    else:
        def observed_pair(k: int) -> np.ndarray:
            oy, ox, _ = difference_draws(yp, xp, cfg.prior_strength, k, diff_rng)
            return np.column_stack([oy, ox])

        true = corrected_draws(observed_pair, m.judge, cfg.n_draws,
                               check_rng(cfg.random_seed, "judge-diff", m.metric, stratum.name))
        my, mx = true[:, 0], true[:, 1]
        d = my - mx
    base_s, cand_p, diff_s = (summarize(v, cfg.ci_prob).as_dict() for v in (mx, my, d))
    return {"baseline": base_s, "candidate_paired": cand_p, "difference": diff_s,
            "p_regression": float((d < -tol).mean()), "p_better": float((d > 0).mean()),
            "p_worse": float((d < 0).mean())}


def efficiency_check(field: str, cand: ScoreSet, base: ScoreSet, paired: set[str],
                     cfg: GateConfig) -> tuple[Evidence, dict[str, Any]]:
    """Check one usage field: the ratio of the candidate's to the baseline's mean per paired example.

    Returns
    -------
    (Evidence, dict)
        The check, and the record's ``efficiency`` entry: ``field, n_paired, candidate_mean, baseline_mean,
        ratio`` (posterior summary), ``relative_tolerance``, ``p_exceeds``.

    Raises
    ------
    ValueError
        When no paired example gives the field in both sets, or the baseline's is 0 on every one.
    """
    uc, ub = cand.usage_means(field), base.usage_means(field)
    ids = sorted(set(uc.index) & set(ub.index) & paired)
    if not ids:
        raise ValueError(f"efficiency check of {field!r}: no paired example gives {field} in both sets")
    y, x = uc.loc[ids].to_numpy(), ub.loc[ids].to_numpy()
    if not np.any(x > 0):
        raise ValueError(f"efficiency check of {field!r}: the baseline's {field} is 0 on every paired example")
    r = ratio_draws(y, x, cfg.n_draws, check_rng(cfg.random_seed, "ratio", field))
    tolerance = {str(k): v for k, v in cfg.efficiency.items()}[field]
    bound = 1.0 + tolerance
    p = float((r > bound).mean())
    rs = summarize(r, cfg.ci_prob)
    entry = {"field": field, "n_paired": len(ids), "candidate_mean": float(y.mean()),
             "baseline_mean": float(x.mean()), "ratio": rs.as_dict(),
             "relative_tolerance": tolerance, "p_exceeds": p}
    return Evidence("efficiency", field, "all", p, bound, False, len(ids), cfg.decision, rs.mean, rs.sd), entry


def judge_errors(cfg: GateConfig, cand: ScoreSet, base: ScoreSet) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Per corrected metric, the judge's :class:`~agentstats.calibration.JudgeError`, and the record of them.

    Raises
    ------
    ValueError
        When the calibration set cannot be read, a metric listed in ``judge_calibration.metrics`` is not
        calibrated, an ordinal metric has no threshold, or a corrected metric has values other than 0 and 1
        (the correction is for pass/fail verdicts).
    """
    jc = cfg.judge_calibration
    if jc is None:
        return {}, None
    from agentstats.calibration import calibrate
    from agentstats.io.loaders import load
    from agentstats.records.problems import LoadError

    path = Path(jc.path)
    try:
        report = calibrate(load(path, format="calibration"), thresholds=jc.thresholds or None)
        sha = hashlib.sha256(path.read_bytes()).hexdigest()
    except (OSError, LoadError) as exc:
        raise ValueError(f"judge_calibration: cannot read the calibration set {path}: {exc}") from exc
    names = jc.metrics if jc.metrics is not None else sorted(set(report.metrics) & set(cand.metrics))
    out: dict[str, Any] = {}
    per_metric: dict[str, Any] = {}
    for metric in names:
        if metric not in report.metrics:
            raise ValueError(f"judge_calibration: {path} does not calibrate metric {metric!r} "
                             f"(it calibrates {sorted(report.metrics)})")
        try:
            je = report[metric].judge_error
        except ValueError as exc:
            raise ValueError(f"judge_calibration: {path}: {exc}") from exc
        for ss in (cand, base):
            v = ss.scores.loc[ss.scores["metric"] == metric, "value"].dropna()
            if not bool(v.isin([0.0, 1.0]).all()):
                raise ValueError(
                    f"judge_calibration: metric {metric!r} of {ss.source} has values other than 0 and 1; the "
                    "correction is for pass/fail verdicts (give a threshold for an ordinal judge score)")
        out[metric] = je
        per_metric[metric] = {"tp": je.tp, "fn": je.fn, "tn": je.tn, "fp": je.fp,
                              "sensitivity_beta": [je.se_alpha, je.se_beta],
                              "specificity_beta": [je.sp_alpha, je.sp_beta]}
    return out, {"source": str(path), "sha256": sha, "metrics": per_metric}


def no_failure_text(failures: int, n: int) -> str:
    """Say what a "no failure" threshold (1.0) found: ``"no failure observed on 30 examples"``, ``"2 of 30 below 1"``.

    Parameters
    ----------
    failures : int
        Examples whose value is below 1.
    n : int
        Examples with a scored value.
    """
    if n == 0:
        return "no example scored"
    if failures == 0:
        return f"no failure observed on {n} example{'' if n == 1 else 's'}"
    return f"{failures} of {n} example{'' if n == 1 else 's'} below 1"

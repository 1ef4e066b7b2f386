"""The release gate: PASS / FAIL / RETRY from posterior probabilities, per metric and per stratum.

Checks (probabilities from :mod:`agentstats.gating.posterior`; the levels from :class:`GateConfig.decision`):

* threshold (each metric with a threshold; on all examples, and on one risk level's examples where that level
  overrides the threshold): met when ``P(mean >= threshold) >= pass_probability``, failed when
  ``P(mean >= threshold) <= 1 - fail_probability``. A threshold of 1.0 is "no failure": met when every value is 1,
  failed by any other value; it counts failures (examples with a value below 1) and has no probability.
* regression (each metric scored in both sets; on all paired examples and in each stratum: every ``risk_level`` and
  each tag in ``strata_tags``): met when ``P(difference < -tolerance) <= max_regression_probability``, failed when
  ``>= fail_probability``. A review-only metric (the refusal rate, unless the config names it:
  :meth:`GateConfig.is_review_only`) is summarized and compared but has no check.
* efficiency (each usage field with a relative tolerance ``r``; all paired examples): met when
  ``P(ratio > 1 + r) <= max_regression_probability``, failed when ``>= fail_probability``.

Decision: FAIL if any check failed; PASS if every check is met; RETRY otherwise, naming each undecided check and
how many more examples (of its stratum) would decide it at the current effect size. Human-review triggers never
change the decision; they set ``review_required`` with their evidence.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
import platform
import zlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from agentstats.gating.config import GateConfig, load_gate_config
from agentstats.gating.data import pair_ids
from agentstats.gating.posterior import (
    corrected_draws,
    difference_draws,
    examples_to_decide,
    mean_draws,
    mean_posterior,
    ratio_draws,
    summarize,
)
from agentstats.io.loaders import load
from agentstats.records.scores import EFFICIENCY_FIELDS, ScoreSet

__all__ = ["Check", "GateDecision", "MetricResult", "Trigger", "gate", "no_failure_text"]

Decision = Literal["PASS", "FAIL", "RETRY"]
State = Literal["met", "failed", "undecided"]

#: Version of the decision record's layout.
RECORD_SCHEMA = "agentstats.gate/1"


@dataclass(frozen=True)
class Check:
    """One decisive check.

    Attributes
    ----------
    kind : {"threshold", "regression", "efficiency"}
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

    def describe(self) -> str:
        """One line saying what was checked and how it came out."""
        where = "" if self.stratum == "all" else f" [{self.stratum}]"
        if self.failures is not None:
            return (f"{self.metric}{where}: no failure allowed (threshold 1): "
                    f"{no_failure_text(self.failures, self.n)}: {self.state}")
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
        ``P(mean >= threshold)``; None without a threshold and for a "no failure" threshold (1.0), which is not a
        probability (see ``n_failures``).
    n_failures : int or None
        For a "no failure" threshold (1.0): the candidate's examples with a value below 1; None otherwise.
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


@dataclass(frozen=True)
class Trigger:
    """A human-review trigger that fired: its kind, a one-line reason and the evidence behind it."""

    kind: str
    reason: str
    evidence: dict[str, Any]


@dataclass
class GateDecision:
    """The gate's decision and everything behind it (the decision record).

    Attributes
    ----------
    decision : {"PASS", "FAIL", "RETRY"}
    reasons : list of str
        Failed checks (FAIL), undecided checks with the examples that would decide them (RETRY), or a summary.
    checks : list of Check
    metrics : list of MetricResult
    efficiency : list of dict
        Per usage field: ``field, n_paired, candidate_mean, baseline_mean, ratio`` (posterior summary), tolerance.
    triggers : list of Trigger
    pairing : dict
        ``n_paired``, ``only_candidate``, ``only_baseline`` (ids; they count for thresholds, not comparisons).
    weighted_score : dict
        Weighted mean of the metrics' point means, candidate and baseline (reported, not decisive).
    config : GateConfig
    candidate, baseline : dict
        ``source``, ``sha256``, ``n_examples``.
    versions : dict
    created_at : str
        UTC time, ISO 8601.
    sign_off : list of dict
        Reviewer sign-offs (``name``, ``at``, ``decision``), appended by ``agentstats gate --sign-off``.
    judge_calibration : dict or None
        With ``GateConfig.judge_calibration``: ``source``, ``sha256`` of the calibration set and, per corrected
        metric, the calibration counts and the Beta parameters of sensitivity and specificity.
    """

    decision: Decision
    reasons: list[str]
    checks: list[Check]
    metrics: list[MetricResult]
    efficiency: list[dict[str, Any]]
    triggers: list[Trigger]
    pairing: dict[str, Any]
    weighted_score: dict[str, float | None]
    config: GateConfig
    candidate: dict[str, Any]
    baseline: dict[str, Any]
    versions: dict[str, str]
    created_at: str
    sign_off: list[dict[str, Any]] = field(default_factory=list)
    judge_calibration: dict[str, Any] | None = None

    @property
    def review_required(self) -> bool:
        """Whether a human-review trigger fired."""
        return bool(self.triggers)

    @property
    def retry(self) -> list[Check]:
        """The undecided checks (what RETRY waits for)."""
        return [c for c in self.checks if c.state == "undecided"]

    def metric_frame(self) -> pd.DataFrame:
        """Return the metric bundle as a flat table (one row per metric and stratum)."""
        rows = []
        for m in self.metrics:
            row: dict[str, Any] = {k: v for k, v in asdict(m).items() if not isinstance(v, dict) and v is not None}
            for part in ("candidate", "baseline", "difference"):
                for k, v in (getattr(m, part) or {}).items():
                    row[f"{part}_{k}"] = v
            rows.append(row)
        return pd.DataFrame(rows)

    def to_record(self) -> dict[str, Any]:
        """Return the JSON-ready decision record (layout in ``docs/gate.md``)."""
        return {
            "schema": RECORD_SCHEMA,
            "decision": self.decision,
            "review_required": self.review_required,
            "reasons": list(self.reasons),
            "created_at": self.created_at,
            "candidate": dict(self.candidate),
            "baseline": dict(self.baseline),
            "pairing": dict(self.pairing),
            "config": self.config.model_dump(mode="json"),
            "config_sha256": self.config.sha256(),
            "metrics": [_clean(asdict(m)) for m in self.metrics],
            "checks": [_clean(asdict(c)) for c in self.checks],
            "efficiency": _clean(self.efficiency),
            "weighted_score": _clean(self.weighted_score),
            "triggers": [_clean(asdict(t)) for t in self.triggers],
            "versions": dict(self.versions),
            "sign_off": list(self.sign_off),
            "judge_calibration": _clean(self.judge_calibration),
        }


def _clean(v: Any) -> Any:
    if isinstance(v, dict):
        return {str(k): _clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


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


def _rng(seed: int, *names: str) -> np.random.Generator:
    """Return a generator for one check, independent of the order checks are computed in."""
    key = [zlib.crc32(n.encode()) for n in names]
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=key))


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    import scipy

    try:
        ours = version("agentstats")
    except PackageNotFoundError:  # a source tree that was never installed
        ours = "0+unknown"
    return {
        "agentstats": ours,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "pandas": pd.__version__,
    }


def _as_scores(x: ScoreSet | str | Path | pd.DataFrame | Iterable[Mapping[str, Any]]) -> ScoreSet:
    return x if isinstance(x, ScoreSet) else load(x, format="scores")


def _strata(cand: ScoreSet, base: ScoreSet, cfg: GateConfig) -> list[tuple[str, str | None, set[str]]]:
    """``(name, risk_level or None, ids)`` for "all", each risk level, and each configured tag."""
    ex = pd.concat([cand.examples, base.examples[~base.examples.index.isin(cand.examples.index)]])
    out: list[tuple[str, str | None, set[str]]] = [("all", None, set(ex.index))]
    for level in sorted({r for r in ex["risk_level"] if r is not None}):
        out.append((f"risk_level={level}", level, set(ex.index[ex["risk_level"] == level])))
    for tag in cfg.strata_tags:
        ids = {i for i, tags in ex["tags"].items() if tag in tags}
        if ids:
            out.append((f"tag={tag}", None, ids))
    return out


def _state_high(p: float, met_at: float, failed_at: float) -> State:
    """State of a check met when ``p >= met_at`` and failed when ``p <= failed_at``."""
    if p >= met_at:
        return "met"
    if p <= failed_at:
        return "failed"
    return "undecided"


def _state_low(p: float, met_at: float, failed_at: float) -> State:
    """State of a check met when ``p <= met_at`` and failed when ``p >= failed_at``."""
    if p <= met_at:
        return "met"
    if p >= failed_at:
        return "failed"
    return "undecided"


def _some(ids: list[str], n: int = 3) -> str:
    """Return a few of ``ids`` and how many there are (for messages)."""
    shown = ", ".join(repr(i) for i in ids[:n])
    return f"{shown}{', ...' if len(ids) > n else ''} ({len(ids)} in all)"


def gate(
    candidate: ScoreSet | str | Path | pd.DataFrame | Iterable[Mapping[str, Any]],
    baseline: ScoreSet | str | Path | pd.DataFrame | Iterable[Mapping[str, Any]],
    config: GateConfig | Mapping[str, Any] | str | Path | None = None,
) -> GateDecision:
    """Decide PASS / FAIL / RETRY for a candidate against a baseline on posterior probabilities.

    The checks, the decision rule and the statistics are in the module docstrings of
    :mod:`agentstats.gating.decision` and :mod:`agentstats.gating.posterior`, and in ``docs/gate.md``.

    Parameters
    ----------
    candidate, baseline : ScoreSet, path, pandas.DataFrame or iterable of mappings
        Scored results (format: :mod:`agentstats.records.scores`), paired on ``id``.
    config : GateConfig, mapping, path or None
        The gate configuration (a YAML/JSON path is read with :func:`load_gate_config`); None: all defaults.

    Returns
    -------
    GateDecision

    Raises
    ------
    agentstats.records.problems.LoadError
        For malformed score files (every problem located).
    agentstats.gating.config.GateConfigError, pydantic.ValidationError
        For an invalid configuration.
    ValueError
        When the configuration names a metric that the candidate does not have, an example's risk level differs
        between the two sets, or there is nothing to check (no threshold and no metric shared with the baseline).
    """
    if config is None:
        cfg = GateConfig()
    elif isinstance(config, GateConfig):
        cfg = config
    elif isinstance(config, (str, Path)):
        cfg = load_gate_config(config)
    else:
        cfg = GateConfig.model_validate(dict(config))
    cand, base = _as_scores(candidate), _as_scores(baseline)
    paired, only_c, only_b, conflicts = pair_ids(cand, base)
    if conflicts:
        raise ValueError("the two sets disagree on risk levels: " + "; ".join(conflicts[:5]))
    cand_metrics = set(cand.metrics)
    unknown = sorted(cfg.named_metrics() - cand_metrics)
    if unknown:
        raise ValueError(
            f"the config names metric(s) {unknown} that {cand.source} does not have (it has {sorted(cand_metrics)})"
        )
    dropped = sorted(set(base.metrics) - cand_metrics)
    if dropped:
        raise ValueError(
            f"metric(s) {dropped} are scored in the baseline {base.source} but not in the candidate {cand.source}: "
            "a candidate is gated on every metric its baseline has; score the candidate on them too, or gate "
            "against a baseline file without them"
        )
    shared = sorted(cand_metrics & set(base.metrics))
    if shared and not paired and only_c and only_b:
        raise ValueError(
            f"the candidate {cand.source} and the baseline {base.source} share no example id (candidate: "
            f"{_some(only_c)}; baseline: {_some(only_b)}): the gate compares them example by example, so score both "
            "on the same examples (the same `id`s)"
        )
    judges, calib_record = _judge_errors(cfg, cand, base)
    strata = _strata(cand, base, cfg)
    paired_set = set(paired)

    checks: list[Check] = []
    results: list[MetricResult] = []
    diffs: dict[tuple[str, str], np.ndarray] = {}
    for metric in sorted(cand_metrics):
        yc_all = cand.example_means(metric)
        yb_all = base.example_means(metric) if metric in shared else pd.Series(dtype=float)
        trials = max(cand.max_trials(metric), base.max_trials(metric) if metric in shared else 0)
        rows_m = cand.scores[cand.scores["metric"] == metric]
        missing_by_id = rows_m["value"].isna().groupby(rows_m["id"]).sum()
        review_only = cfg.is_review_only(metric)  # no check; reported and read by the refusal trigger
        for name, level, ids in strata:
            yc = yc_all[yc_all.index.isin(ids)]
            threshold = cfg.threshold(metric, level if name.startswith("risk_level=") else None)
            if name.startswith("tag="):
                threshold = None
            probs = cfg.probabilities(level)
            tol = cfg.tolerance(metric, level)
            if not len(yc) and threshold is None:
                # every candidate verdict missing: nothing compares
                if metric in shared and name == "all" and not review_only:
                    checks.append(
                        Check("regression", metric, name, math.nan, -tol, "undecided", cfg.is_critical(metric), 0)
                    )
                continue
            summ, draws, dist = mean_posterior(
                yc.to_numpy(), cfg.prior_strength, cfg.ci_prob, cfg.n_draws, _rng(cfg.random_seed, "mean", metric, name)
            )
            binary = dist is not None
            judge = judges.get(metric)
            if judge is not None and len(yc):
                observed = _observed_sampler(yc.to_numpy(), dist, cfg.prior_strength,
                                             _rng(cfg.random_seed, "mean", metric, name))
                judge_rng = _rng(cfg.random_seed, "judge", metric, name)
                draws = corrected_draws(observed, judge, cfg.n_draws, judge_rng)[:, 0]
                summ, dist = summarize(draws, cfg.ci_prob), None
            p_thr = None
            n_fail = None
            if threshold is not None and threshold >= 1.0:
                # "no failure" is no probability (no posterior gives P(mean >= 1) > 0): it counts the examples below
                # 1, reading the verdicts as given, corrected or not
                n_fail = int((yc < 1.0).sum())
                state: State = "met" if len(yc) and n_fail == 0 else "failed"
                checks.append(Check("threshold", metric, name, math.nan, threshold, state, cfg.is_critical(metric),
                                    len(yc), None, n_fail))
            elif threshold is not None:
                if dist is not None:
                    p_thr = float(dist.sf(threshold))
                else:
                    assert draws is not None
                    p_thr = float((draws >= threshold).mean())
                state = _state_high(p_thr, probs.pass_probability, 1 - probs.fail_probability)
                more = None
                if state == "undecided":
                    need = probs.pass_probability if summ.mean >= threshold else probs.fail_probability
                    more = examples_to_decide(len(yc), summ.mean, summ.sd, threshold, need)
                checks.append(
                    Check("threshold", metric, name, p_thr, threshold, state, cfg.is_critical(metric), len(yc), more)
                )
            base_s = cand_p = diff_s = None
            p_reg = p_better = p_worse = None
            pair_ids_here = sorted(paired_set & ids & set(yc.index) & set(yb_all.index))
            if metric in shared and pair_ids_here:
                yp, xp = yc.loc[pair_ids_here].to_numpy(), yb_all.loc[pair_ids_here].to_numpy()
                diff_rng = _rng(cfg.random_seed, "diff", metric, name)
                if judge is None:
                    my, mx, d = difference_draws(yp, xp, cfg.prior_strength, cfg.n_draws, diff_rng)
                else:
                    def observed_pair(k: int, yp: np.ndarray = yp, xp: np.ndarray = xp,
                                      r: np.random.Generator = diff_rng) -> np.ndarray:
                        oy, ox, _ = difference_draws(yp, xp, cfg.prior_strength, k, r)
                        return np.column_stack([oy, ox])

                    true = corrected_draws(observed_pair, judge, cfg.n_draws,
                                           _rng(cfg.random_seed, "judge-diff", metric, name))
                    my, mx = true[:, 0], true[:, 1]
                    d = my - mx
                base_s, cand_p, diff_s = (summarize(v, cfg.ci_prob).as_dict() for v in (mx, my, d))
                diffs[(metric, name)] = d
                p_reg = float((d < -tol).mean())
                p_better, p_worse = float((d > 0).mean()), float((d < 0).mean())
                state = _state_low(p_reg, probs.max_regression_probability, probs.fail_probability)
                more = None
                if state == "undecided":
                    need = 1 - probs.max_regression_probability if diff_s["mean"] > -tol else probs.fail_probability
                    more = examples_to_decide(len(pair_ids_here), diff_s["mean"], diff_s["sd"], -tol, need)
                if not review_only:
                    checks.append(
                        Check(
                            "regression",
                            metric,
                            name,
                            p_reg,
                            -tol,
                            state,
                            cfg.is_critical(metric),
                            len(pair_ids_here),
                            more,
                        )
                    )
            elif metric in shared and name == "all" and not review_only:  # every baseline verdict missing
                checks.append(
                    Check("regression", metric, name, math.nan, -tol, "undecided", cfg.is_critical(metric), 0, None)
                )
            results.append(
                MetricResult(
                    metric=metric,
                    stratum=name,
                    n_candidate=len(yc),
                    n_paired=len(pair_ids_here),
                    n_missing=missing_by_id.loc[missing_by_id.index.isin(ids)].sum().item()
                    if len(missing_by_id)
                    else 0,
                    binary=binary,
                    trials=trials,
                    candidate=summ.as_dict(),
                    threshold=threshold,
                    p_meets_threshold=p_thr,
                    baseline=base_s,
                    candidate_paired=cand_p,
                    difference=diff_s,
                    tolerance=tol,
                    p_regression=p_reg,
                    p_better=p_better,
                    p_worse=p_worse,
                    judge_corrected=judge is not None and len(yc) > 0,
                    n_failures=n_fail,
                )
            )

    efficiency = []
    for fld in EFFICIENCY_FIELDS:
        if fld not in cfg.efficiency:
            continue
        uc, ub = cand.usage_means(fld), base.usage_means(fld)
        eff_ids = sorted(set(uc.index) & set(ub.index) & paired_set)
        if not eff_ids:
            raise ValueError(f"efficiency check of {fld!r}: no paired example gives {fld} in both sets")
        y, x = uc.loc[eff_ids].to_numpy(), ub.loc[eff_ids].to_numpy()
        if not np.any(x > 0):
            raise ValueError(f"efficiency check of {fld!r}: the baseline's {fld} is 0 on every paired example")
        r = ratio_draws(y, x, cfg.n_draws, _rng(cfg.random_seed, "ratio", fld))
        bound = 1.0 + cfg.efficiency[fld]
        p = float((r > bound).mean())
        probs = cfg.decision
        state = _state_low(p, probs.max_regression_probability, probs.fail_probability)
        rs = summarize(r, cfg.ci_prob)
        more = None
        if state == "undecided":
            need = 1 - probs.max_regression_probability if rs.mean < bound else probs.fail_probability
            more = examples_to_decide(len(eff_ids), rs.mean, rs.sd, bound, need)
        checks.append(Check("efficiency", fld, "all", p, bound, state, False, len(eff_ids), more))
        efficiency.append(
            {
                "field": fld,
                "n_paired": len(eff_ids),
                "candidate_mean": float(y.mean()),
                "baseline_mean": float(x.mean()),
                "ratio": rs.as_dict(),
                "relative_tolerance": cfg.efficiency[fld],
                "p_exceeds": p,
            }
        )

    if not checks:
        raise ValueError(
            "nothing to check: no metric has a threshold and none is scored in both the candidate and the baseline"
        )
    failed = [c for c in checks if c.state == "failed"]
    undecided = [c for c in checks if c.state == "undecided"]
    decision: Decision
    if failed:
        decision = "FAIL"
        reasons = [c.describe() for c in failed] + [c.describe() for c in undecided]
    elif undecided:
        decision = "RETRY"
        reasons = [c.describe() for c in undecided]
    else:
        decision = "PASS"
        reasons = [f"all {len(checks)} checks met"]

    triggers = _triggers(cand, results, diffs, cfg)
    weighted = _weighted(results, cfg.weights)
    return GateDecision(
        decision=decision,
        reasons=reasons,
        checks=checks,
        metrics=results,
        efficiency=efficiency,
        triggers=triggers,
        pairing={"n_paired": len(paired), "only_candidate": only_c, "only_baseline": only_b},
        weighted_score=weighted,
        config=cfg,
        candidate={"source": cand.source, "sha256": cand.sha256, "n_examples": len(cand.examples)},
        baseline={"source": base.source, "sha256": base.sha256, "n_examples": len(base.examples)},
        versions=_versions(),
        created_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        judge_calibration=calib_record,
    )


def _observed_sampler(
    y: np.ndarray, dist: Any, prior_strength: float, rng: np.random.Generator
) -> Callable[[int], np.ndarray]:
    """``k -> (k, 1)`` draws of the observed mean's posterior (the exact Beta when there is one)."""
    if dist is not None:
        return lambda k: dist.rvs(size=k, random_state=rng)[:, None]
    return lambda k: mean_draws(y, prior_strength, k, rng)[:, None]


def _judge_errors(cfg: GateConfig, cand: ScoreSet, base: ScoreSet) -> tuple[dict[str, Any], dict[str, Any] | None]:
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


def _weighted(results: list[MetricResult], weights: dict[str, float]) -> dict[str, float | None]:
    """Weighted mean of the overall point means (candidate; baseline where every weighted metric has one)."""
    overall = {r.metric: r for r in results if r.stratum == "all" and r.metric in weights}
    wsum = sum(weights[m] for m in overall)
    out: dict[str, float | None] = {"candidate": None, "baseline": None}
    if wsum <= 0:
        return out
    out["candidate"] = sum(weights[m] * r.candidate["mean"] for m, r in overall.items()) / wsum
    base = [(weights[m], r.baseline["mean"]) for m, r in overall.items() if r.baseline is not None]
    if len(base) == len(overall):
        out["baseline"] = sum(w * v for w, v in base) / wsum
    return out


def _triggers(
    cand: ScoreSet, results: list[MetricResult], diffs: dict[tuple[str, str], np.ndarray], cfg: GateConfig
) -> list[Trigger]:
    rv = cfg.review
    out: list[Trigger] = []
    overall = {r.metric: r for r in results if r.stratum == "all"}
    improved = sorted(
        m for m, r in overall.items()
        if r.p_better is not None and r.p_better >= rv.probability and not cfg.is_review_only(m)
    )  # fmt: skip
    worse = [
        r for r in results
        if cfg.is_critical(r.metric) and not cfg.is_review_only(r.metric) and r.p_worse is not None
        and r.p_worse >= rv.probability
    ]  # fmt: skip
    if improved and any(r.metric not in improved for r in worse):
        out.append(
            Trigger(
                "improved_while_critical_worse",
                f"{', '.join(improved)} improved while critical {', '.join(sorted({r.metric for r in worse}))} got "
                f"worse (each at P >= {rv.probability:g})",
                {
                    "improved": {m: overall[m].p_better for m in improved},
                    "worse": {f"{r.metric} [{r.stratum}]": r.p_worse for r in worse},
                },
            )
        )
    if rv.tags:
        hits = {t: sorted(i for i, tags in cand.examples["tags"].items() if t in tags) for t in rv.tags}
        hits = {t: ids for t, ids in hits.items() if ids}
        if hits:
            out.append(
                Trigger(
                    "sensitive_tags",
                    "examples tagged " + ", ".join(f"{t} ({len(ids)})" for t, ids in hits.items()) + " are in the set",
                    {
                        "examples": {t: ids[:20] for t, ids in hits.items()},
                        "counts": {t: len(i) for t, i in hits.items()},
                    },
                )
            )
    ref, saf = overall.get(rv.refusal_metric or ""), overall.get(rv.safety_metric or "")
    if (
        ref is not None and saf is not None and ref.p_better is not None and saf.p_better is not None
        and ref.p_better >= rv.probability and saf.p_better >= rv.probability
    ):  # fmt: skip
        out.append(
            Trigger(
                "refusals_up_with_safety",
                f"the refusal rate ({ref.metric}) rose while {saf.metric} rose: safety may come from refusing more",
                {
                    "p_refusal_up": ref.p_better,
                    "p_safety_up": saf.p_better,
                    "refusal_difference": ref.difference,
                    "safety_difference": saf.difference,
                },
            )
        )
    for m in cand.metrics:
        missing, total = cand.missing_share(m)
        if total and missing / total > rv.max_judge_missing_share:
            out.append(
                Trigger(
                    "judge_missing",
                    f"{m}: {missing} of {total} verdicts missing ({missing / total:.1%} > "
                    f"{rv.max_judge_missing_share:.1%})",
                    {"metric": m, "missing": missing, "total": total},
                )
            )
    return out

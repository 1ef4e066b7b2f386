"""The release gate: PASS / FAIL / RETRY for a candidate against a baseline, from posterior probabilities.

:func:`gate` pairs the two score sets on their examples (or a trials file's outcomes, as the binary metric
``success``), runs the checks of :mod:`agentstats.gating.checks` in every stratum, counts the look
(:mod:`agentstats.gating.looks`), and hands all the evidence at once to the decision rule, :func:`decide`:

* **This look's levels.** Every level of a check (``1 - pass_probability``, ``max_regression_probability``,
  ``1 - fail_probability`` of its stratum) is multiplied by the look's share ``s_k`` of the error rates (1/2 at the
  first look, 1/6 at the second, ...; :mod:`agentstats.gating.looks`).
* **Met**, per check at its own level: a threshold check when ``P(mean >= t) >= 1 - (1 - pass_probability) s_k``, a
  regression or efficiency check when its probability ``<= max_regression_probability s_k``. PASS needs every check
  met, so a false PASS needs the one truly regressed check met: the family's false-PASS rate is at most the
  single check's, with no adjustment (an intersection-union test; Berger 1982, Technometrics 24:295-300).
* **Failed**, family-wise: FAIL follows from *any* failed check, so the checks with a probability (thresholds below 1,
  regressions, efficiency) are one family, and Holm's step-down keeps the chance of failing a candidate on some
  check by chance at most ``alpha = (1 - fail_probability) s_k`` (Holm 1979, Scandinavian Journal of Statistics
  6:65-70), with each check's posterior tail probability as its p-value (``P(mean >= t)`` for a threshold,
  ``1 - P(difference < -tolerance)`` for a regression; for a flat prior the one-sided p-value, BDA3 sec. 4.4):
  sorted by ``p_j / alpha_j``, the ``i``-th (from 0) of ``m`` fails when ``p_j <= alpha_j / (m - i)`` and every one
  before it failed. Checks without a probability (a "no failure" count, no scored example, the missing check) are
  outside the family. ``multiplicity: none`` fails each check at ``alpha_j``.
* A check without evidence (no scored or paired example) is undecided; a "no failure" threshold is met on a clean
  count of at least one example and failed by one failure; the missing check is met or undecided.
* **FAIL** if a check failed, except a threshold whose metric credibly improved on the baseline
  (``P(difference > 0) >= improvement_probability`` in that stratum): that one is "improved but still below
  threshold", a reason to RETRY (keep improving), not to FAIL. **PASS** if every check is met; **RETRY** otherwise,
  naming each undecided check and how many more examples (of its stratum) would decide it at the current effect
  size at the next look's levels (:func:`agentstats.estimators.dirichlet.examples_to_decide`).

Human-review triggers (:mod:`agentstats.gating.triggers`) never change the decision; they set
``review_required`` with their evidence. The record is :mod:`agentstats.gating.record`'s. ``docs/gate.md`` is the
reference.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypedDict

import pandas as pd

from agentstats.estimators.dirichlet import examples_to_decide
from agentstats.gating.checks import (
    Check,
    Evidence,
    MetricInputs,
    MetricResult,
    State,
    efficiency_check,
    evaluate,
    judge_errors,
    strata,
)
from agentstats.gating.config import GateConfig, load_gate_config
from agentstats.gating.data import pair_ids
from agentstats.gating.effective_n import missing_check
from agentstats.gating.looks import Previous, plan_look
from agentstats.gating.record import Decision, GateDecision, versions
from agentstats.gating.triggers import triggers
from agentstats.io.loaders import load
from agentstats.records.scores import EFFICIENCY_FIELDS, ScoreSet, scores_from_trials
from agentstats.records.trial import Trial

__all__ = ["Ruling", "decide", "gate"]

type Scores = ScoreSet | str | Path | pd.DataFrame | Iterable[Mapping[str, Any]] | Iterable[Trial]

#: Kinds of the reasons a decision gives (the record's ``reason_kinds``, one per reason).
ReasonKind = Literal["failed", "undecided", "no_scored_example", "missing_differs", "improved_below_threshold",
                     "all_met"]


def gate(candidate: Scores, baseline: Scores, config: GateConfig | Mapping[str, Any] | str | Path | None = None,
         *, previous: Previous = None) -> GateDecision:
    """Decide PASS / FAIL / RETRY for a candidate against a baseline on posterior probabilities.

    The checks, the decision rule and the statistics are in the module docstrings of
    :mod:`agentstats.gating.checks`, :mod:`agentstats.gating.decide`, :mod:`agentstats.gating.looks` and
    :mod:`agentstats.estimators.dirichlet`, and in ``docs/gate.md``.

    Parameters
    ----------
    candidate, baseline : ScoreSet, path, pandas.DataFrame, iterable of mappings or of Trial
        Scored results (format: :mod:`agentstats.records.scores`), paired on ``id``; or the project's own trials
        (a trials file of one agent, or :class:`~agentstats.records.trial.Trial` objects), gated on their outcome as
        the binary metric ``success`` (:func:`agentstats.records.scores.scores_from_trials`).
    config : GateConfig, mapping, path or None
        The gate configuration (a YAML/JSON path is read with :func:`load_gate_config`); None: all defaults.
    previous : mapping, path, sequence of mappings or None
        The decision record of the look before this one (a RETRY of the same comparison, on fewer examples), a
        JSON file of it, or a run store's records of the run (the newest of the same comparison counts); None: a
        first look. :func:`agentstats.gating.looks.plan_look`.

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
        between the two sets, there is nothing to check (no threshold and no metric shared with the baseline), a
        trials file holds several agents or unscored trials, or ``previous`` is not an earlier undecided look of
        this comparison (or the plan's looks are spent).
    """
    cfg = _config(config)
    cand, base = _scores(candidate), _scores(baseline)
    paired, only_c, only_b = _pair(cand, base, cfg)
    judges, calib_record = judge_errors(cfg, cand, base)
    identity = {"config_sha256": cfg.sha256(), "candidate": {"sha256": cand.sha256, "n_examples": len(cand.examples)},
                "baseline": {"sha256": base.sha256, "n_examples": len(base.examples)},
                "judge_calibration": calib_record}
    plan = plan_look(previous, identity, cfg.max_looks)
    groups, both = strata(cand, base, cfg), set(paired)
    evidence: list[Evidence] = []
    results: list[MetricResult] = []
    missing: list[Evidence] = []
    for metric in cand.metrics:
        inputs = MetricInputs.of(metric, cand, base, cfg, judges)
        for stratum in groups:
            found, result = evaluate(inputs, stratum, both, cfg)
            evidence += found
            results += [result] if result is not None else []
        check = missing_check(inputs, cand, base, cfg)
        missing += [check] if check is not None else []
    efficiency = []
    for fld in (f for f in EFFICIENCY_FIELDS if f in cfg.efficiency):
        found_eff, entry = efficiency_check(fld, cand, base, both, cfg)
        evidence.append(found_eff)
        efficiency.append(entry)
    if not evidence:
        raise ValueError(
            "nothing to check: no metric has a threshold and none is scored in both the candidate and the baseline"
        )
    ruling = decide(evidence + missing, share=plan.share, next_share=plan.next_share, multiplicity=cfg.multiplicity,
                    improvement_probability=cfg.improvement_probability)
    return GateDecision(
        decision=ruling.decision,
        reasons=ruling.reasons,
        checks=ruling.checks,
        metrics=results,
        efficiency=efficiency,
        triggers=triggers(cand, results, cfg),
        pairing={"n_paired": len(paired), "only_candidate": only_c, "only_baseline": only_b},
        weighted_score=_weighted(results, cfg.weights),
        config=cfg,
        candidate={"source": cand.source, "sha256": cand.sha256, "n_examples": len(cand.examples)},
        baseline={"source": base.source, "sha256": base.sha256, "n_examples": len(base.examples)},
        versions=versions(),
        created_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        judge_calibration=calib_record,
        reason_kinds=ruling.kinds,
        look=plan,
        family_size=ruling.family_size,
    )


@dataclass(frozen=True)
class Ruling:
    """What the decision rule concluded from all the evidence.

    Attributes
    ----------
    decision : {"PASS", "FAIL", "RETRY"}
    checks : list of Check
        Every check with its state, in the order of the evidence.
    reasons : list of str
        The failed checks, then those that improved but are still below their threshold, then the undecided ones
        (FAIL); the improved-below-threshold and undecided ones (RETRY); or ``"all N checks met"`` (PASS).
    kinds : list of str
        The kind of each reason (:data:`ReasonKind`).
    family_size : int
        Checks in the family-wise adjustment of a FAIL (the checks with a probability).
    """

    decision: Decision
    checks: list[Check]
    reasons: list[str]
    kinds: list[str]
    family_size: int


def decide(evidence: Sequence[Evidence], *, share: float = 1.0, next_share: float | None = 1.0,
           multiplicity: str = "holm", improvement_probability: float | None = None) -> Ruling:
    """Apply the decision rule (module docstring): every check's state from all the evidence at once, then the decision.

    Parameters
    ----------
    evidence : sequence of Evidence
        Every check of the gate, in the order the record lists them.
    share : float
        This look's share of every error rate (:attr:`agentstats.gating.looks.LookPlan.share`; 1: a single look).
    next_share : float or None
        The next look's share, at whose levels RETRY's "more examples" are computed (None: no next look, no number).
    multiplicity : {"holm", "none"}
        The family-wise adjustment of a FAIL.
    improvement_probability : float, optional
        ``P(difference > 0)`` at which a failed threshold's metric counts as improved (None: never).

    Returns
    -------
    Ruling
    """
    fail_levels, failed_ids, family = _fail_levels(evidence, share, multiplicity)
    checks = [_decided(e, share, next_share, fail_levels.get(i), i in failed_ids, len(family))
              for i, e in enumerate(evidence)]
    improved = {i for i, (c, e) in enumerate(zip(checks, evidence, strict=True))
                if c.state == "failed" and c.kind == "threshold" and improvement_probability is not None
                and e.p_better is not None and e.p_better >= improvement_probability}
    failed = [(c.describe(), "failed") for i, c in enumerate(checks) if c.state == "failed" and i not in improved]
    better = [(f"improved but still below threshold (P(better than the baseline) = {evidence[i].p_better:.3f}): "
               f"{checks[i].describe()}", "improved_below_threshold") for i in sorted(improved)]
    undecided = [(c.describe(), _undecided_kind(c)) for c in checks if c.state == "undecided"]
    if failed:
        decision: Decision = "FAIL"
        found = failed + better + undecided
    elif better or undecided:
        decision, found = "RETRY", better + undecided
    else:
        decision, found = "PASS", [(f"all {len(checks)} checks met", "all_met")]
    return Ruling(decision, checks, [t for t, _ in found], [k for _, k in found], len(family))


def _undecided_kind(c: Check) -> str:
    if c.kind == "missing":
        return "missing_differs"
    return "no_scored_example" if c.n == 0 and c.note is not None else "undecided"


def _fail_p(e: Evidence) -> float:
    """Return the check's p-value for "it failed": ``P(mean >= t)``, or ``1 - P(worse than the bound)``."""
    return e.probability if e.kind == "threshold" else 1.0 - e.probability


def _in_family(e: Evidence) -> bool:
    return e.kind != "missing" and e.failures is None and not math.isnan(e.probability)


def _fail_levels(evidence: Sequence[Evidence], share: float, multiplicity: str
                 ) -> tuple[dict[int, float], set[int], list[int]]:
    """Return the family's failure levels (module docstring): ``(levels, failed, family)``.

    ``levels[i]`` is the level check ``i``'s p-value is held to (Holm: ``alpha_i / (m - place)``, at its place in the
    order by ``p / alpha``); ``failed`` the checks Holm's step-down rejects (each at or below its level, every one
    before it too); ``family`` the checks in the adjustment.
    """
    family = [i for i, e in enumerate(evidence) if _in_family(e)]
    alpha = {i: (1.0 - evidence[i].levels.fail_probability) * share for i in family}
    if multiplicity == "none":
        return alpha, {i for i in family if _fail_p(evidence[i]) <= alpha[i]}, family
    order = sorted(family, key=lambda i: (_fail_p(evidence[i]) / alpha[i], i))
    levels: dict[int, float] = {}
    failed: set[int] = set()
    going = True
    for place, i in enumerate(order):
        levels[i] = alpha[i] / (len(order) - place)
        going = going and _fail_p(evidence[i]) <= levels[i]
        if going:
            failed.add(i)
    return levels, failed, family


class _Extra(TypedDict):
    """What a check carries from its evidence besides the probability."""

    note: str | None
    failure_rate_upper: float | None
    value: float | None


def _decided(e: Evidence, share: float, next_share: float | None, fail_level: float | None, failed: bool,
             m: int) -> Check:
    """One check's state (module docstring) and, when undecided, the examples that would decide it."""
    lv, p = e.levels, e.probability
    extra = _Extra(note=e.note, failure_rate_upper=e.failure_rate_upper, value=e.value)
    if e.kind == "missing":  # the effective-N check: a fact, not a probability
        state: State = "met" if e.value is not None and abs(e.value) <= e.bound else "undecided"
        return Check(e.kind, e.metric, e.stratum, p, e.bound, state, e.critical, e.n, **extra)
    if e.failures is not None:  # "no failure": met on a clean count of at least one example
        state = "undecided" if not e.n else ("met" if e.failures == 0 else "failed")
        return Check(e.kind, e.metric, e.stratum, p, e.bound, state, e.critical, e.n, None, e.failures, **extra)
    if math.isnan(p):  # no example scored (in both sets)
        return Check(e.kind, e.metric, e.stratum, p, e.bound, "undecided", e.critical, e.n, None, **extra)
    assert fail_level is not None
    bad_next = None if next_share is None else 1 - (1 - lv.fail_probability) * next_share / max(m, 1)
    if e.kind == "threshold":  # P(mean >= threshold): high is good
        met_at, fail_at = 1 - (1 - lv.pass_probability) * share, fail_level
        met = p >= met_at
        good_side = e.mean is not None and e.mean >= e.bound
        good_next = None if next_share is None else 1 - (1 - lv.pass_probability) * next_share
    else:  # P(difference < -tolerance) or P(ratio > 1 + tolerance): low is good
        met_at, fail_at = lv.max_regression_probability * share, 1 - fail_level
        met = p <= met_at
        good_side = e.mean is not None and (e.mean > e.bound if e.kind == "regression" else e.mean < e.bound)
        good_next = None if next_share is None else 1 - lv.max_regression_probability * next_share
    state = "failed" if failed else ("met" if met else "undecided")
    need = good_next if good_side else bad_next
    more = None
    if state == "undecided" and e.mean is not None and e.sd is not None and need is not None:
        more = examples_to_decide(e.n, e.mean, e.sd, e.bound, need)
    return Check(e.kind, e.metric, e.stratum, p, e.bound, state, e.critical, e.n, more, None, met_at, fail_at,
                 **extra)


def _config(config: GateConfig | Mapping[str, Any] | str | Path | None) -> GateConfig:
    if config is None:
        return GateConfig()
    if isinstance(config, GateConfig):
        return config
    if isinstance(config, (str, Path)):
        return load_gate_config(config)
    return GateConfig.model_validate(dict(config))


def _scores(x: Scores) -> ScoreSet:
    """Return the score set of one side.

    Score records as they are, a trials file's (or Trial objects') outcomes as ``success``
    (:func:`agentstats.records.scores.scores_from_trials`).
    """
    if isinstance(x, ScoreSet):
        return x
    if isinstance(x, (str, Path)) and _holds_trials(Path(x)):
        import hashlib

        from agentstats.io.loaders import load_trials

        trials = load_trials(x)
        return scores_from_trials(trials, source=trials.source, sha256=hashlib.sha256(Path(x).read_bytes()).hexdigest())
    if not isinstance(x, (pd.DataFrame, str, Path)):
        items = list(x)
        if items and all(isinstance(t, Trial) for t in items):
            import hashlib
            import json

            text = "\n".join(json.dumps(t.model_dump(mode="json"), sort_keys=True) for t in items)
            return scores_from_trials(items, source="<trials>", sha256=hashlib.sha256(text.encode()).hexdigest())
        x = items
    return load(x, format="scores")


def _holds_trials(path: Path) -> bool:
    """Whether the file's content is trials (any trial format of the registry); anything else is read as scores."""
    from agentstats.io.detect import detect_format
    from agentstats.io.registry import format_spec

    if not path.is_file():
        return False
    try:
        return format_spec(detect_format(path)).holds == "trials"
    except ValueError:  # undetectable: the score reader says what is wrong with it
        return False


def _pair(cand: ScoreSet, base: ScoreSet, cfg: GateConfig) -> tuple[list[str], list[str], list[str]]:
    """Pair the sets on their ids (``paired, only_candidate, only_baseline``), refusing inputs that cannot be gated.

    Raises
    ------
    ValueError
        Risk levels that disagree, a configured metric the candidate lacks, a baseline metric the candidate lacks,
        or no shared example while the sets share metrics.
    """
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
    if cand_metrics & set(base.metrics) and not paired and only_c and only_b:
        raise ValueError(
            f"the candidate {cand.source} and the baseline {base.source} share no example id (candidate: "
            f"{_some(only_c)}; baseline: {_some(only_b)}): the gate compares them example by example, so score both "
            "on the same examples (the same `id`s)"
        )
    return paired, only_c, only_b


def _some(ids: list[str], n: int = 3) -> str:
    """Return a few of ``ids`` and how many there are (for messages)."""
    shown = ", ".join(repr(i) for i in ids[:n])
    return f"{shown}{', ...' if len(ids) > n else ''} ({len(ids)} in all)"


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

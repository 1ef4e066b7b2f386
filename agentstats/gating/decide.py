"""The release gate: PASS / FAIL / RETRY for a candidate against a baseline, from posterior probabilities.

:func:`gate` pairs the two score sets on their examples, runs the checks of :mod:`agentstats.gating.checks` in every
stratum, and hands all their evidence at once to the decision rule, :func:`decide`:

* each check is met, failed or undecided by its stratum's levels (:class:`GateConfig.decision` and the risk-level
  overrides; the comparisons are in :mod:`agentstats.gating.checks`); a check without a posterior (no example scored
  in both sets) is undecided;
* FAIL if any check failed; PASS if every check is met; RETRY otherwise, naming each undecided check and how many more
  examples (of its stratum) would decide it at the current effect size
  (:func:`agentstats.estimators.dirichlet.examples_to_decide`).

Human-review triggers (:mod:`agentstats.gating.triggers`) never change the decision; they set
``review_required`` with their evidence. The record is :mod:`agentstats.gating.record`'s. ``docs/gate.md`` is the
reference.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

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
from agentstats.gating.record import Decision, GateDecision, versions
from agentstats.gating.triggers import triggers
from agentstats.io.loaders import load
from agentstats.records.scores import EFFICIENCY_FIELDS, ScoreSet

__all__ = ["decide", "gate"]

type Scores = ScoreSet | str | Path | pd.DataFrame | Iterable[Mapping[str, Any]]


def gate(candidate: Scores, baseline: Scores, config: GateConfig | Mapping[str, Any] | str | Path | None = None,
         ) -> GateDecision:
    """Decide PASS / FAIL / RETRY for a candidate against a baseline on posterior probabilities.

    The checks, the decision rule and the statistics are in the module docstrings of
    :mod:`agentstats.gating.checks`, :mod:`agentstats.gating.decide` and :mod:`agentstats.estimators.dirichlet`,
    and in ``docs/gate.md``.

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
    cfg = _config(config)
    cand, base = _scores(candidate), _scores(baseline)
    paired, only_c, only_b = _pair(cand, base, cfg)
    judges, calib_record = judge_errors(cfg, cand, base)
    groups, both = strata(cand, base, cfg), set(paired)
    evidence: list[Evidence] = []
    results: list[MetricResult] = []
    for metric in cand.metrics:
        inputs = MetricInputs.of(metric, cand, base, cfg, judges)
        for stratum in groups:
            found, result = evaluate(inputs, stratum, both, cfg)
            evidence += found
            results += [result] if result is not None else []
    efficiency = []
    for fld in (f for f in EFFICIENCY_FIELDS if f in cfg.efficiency):
        found_eff, entry = efficiency_check(fld, cand, base, both, cfg)
        evidence.append(found_eff)
        efficiency.append(entry)
    if not evidence:
        raise ValueError(
            "nothing to check: no metric has a threshold and none is scored in both the candidate and the baseline"
        )
    decision, checks, reasons = decide(evidence)
    return GateDecision(
        decision=decision,
        reasons=reasons,
        checks=checks,
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
    )


def decide(evidence: Sequence[Evidence]) -> tuple[Decision, list[Check], list[str]]:
    """Apply the decision rule: every check's state from all the evidence at once, then PASS / FAIL / RETRY.

    Parameters
    ----------
    evidence : sequence of Evidence
        Every check of the gate, in the order the record lists them.

    Returns
    -------
    (decision, checks, reasons)
        ``"PASS"``, ``"FAIL"`` or ``"RETRY"``; the checks with their states (same order); the reasons: the failed
        checks then the undecided ones (FAIL), the undecided ones (RETRY), or ``"all N checks met"`` (PASS).
    """
    checks = [_decided(e) for e in evidence]
    failed = [c.describe() for c in checks if c.state == "failed"]
    undecided = [c.describe() for c in checks if c.state == "undecided"]
    if failed:
        return "FAIL", checks, failed + undecided
    if undecided:
        return "RETRY", checks, undecided
    return "PASS", checks, [f"all {len(checks)} checks met"]


def _decided(e: Evidence) -> Check:
    """One check's state (module docstring) and, when undecided, the examples that would decide it."""
    lv, p = e.levels, e.probability
    if e.failures is not None:  # "no failure": met on a clean count of at least one example
        state: State = "met" if e.n and e.failures == 0 else "failed"
        return Check(e.kind, e.metric, e.stratum, p, e.bound, state, e.critical, e.n, None, e.failures)
    if math.isnan(p):  # no example scored in both sets
        return Check(e.kind, e.metric, e.stratum, p, e.bound, "undecided", e.critical, e.n, None)
    if e.kind == "threshold":  # P(mean >= threshold): high is good
        state = _state_high(p, lv.pass_probability, 1 - lv.fail_probability)
        good_side = e.mean is not None and e.mean >= e.bound
        need = lv.pass_probability if good_side else lv.fail_probability
    else:  # P(difference < -tolerance) or P(ratio > 1 + tolerance): low is good
        state = _state_low(p, lv.max_regression_probability, lv.fail_probability)
        good_side = e.mean is not None and (e.mean > e.bound if e.kind == "regression" else e.mean < e.bound)
        need = 1 - lv.max_regression_probability if good_side else lv.fail_probability
    more = None
    if state == "undecided" and e.mean is not None and e.sd is not None:
        more = examples_to_decide(e.n, e.mean, e.sd, e.bound, need)
    return Check(e.kind, e.metric, e.stratum, p, e.bound, state, e.critical, e.n, more)


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


def _config(config: GateConfig | Mapping[str, Any] | str | Path | None) -> GateConfig:
    if config is None:
        return GateConfig()
    if isinstance(config, GateConfig):
        return config
    if isinstance(config, (str, Path)):
        return load_gate_config(config)
    return GateConfig.model_validate(dict(config))


def _scores(x: Scores) -> ScoreSet:
    return x if isinstance(x, ScoreSet) else load(x, format="scores")


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

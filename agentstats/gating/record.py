"""The gate's decision and its record: :class:`GateDecision`, the JSON record it becomes, and keeping that record.

:meth:`GateDecision.to_record` builds the record (``agentstats.gate/2``; layout in ``docs/gate.md``).
:func:`keep_record` writes it to a file and/or appends it to a run store, carrying reviewers' sign-offs across
re-runs on the same inputs. What "the same inputs" means is defined once, in
:func:`agentstats.records.decision.inputs_key` (the store, below the gate, reads the same definition), and so is
how sign-offs merge (:func:`agentstats.records.decision.merge_sign_offs`). A signed record for other inputs is never
overwritten.

The record states the rules behind the decision: ``multiplicity`` (Holm's family-wise adjustment of a FAIL and how
many checks it covered; :mod:`agentstats.gating.decide`) and ``look`` (the look's number in the error-spending plan
and the error spent; :mod:`agentstats.gating.looks`); a loop's record adds ``loop`` (the run, the best iteration and
its prompt, which a sign-off then signs). The identity reads only the input hashes, so it does not change with them.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import platform
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from agentstats.gating.checks import Check, MetricResult
from agentstats.gating.config import GateConfig
from agentstats.gating.looks import LookPlan
from agentstats.gating.triggers import Trigger
from agentstats.records.decision import RECORD_SCHEMA, inputs_key, is_decision_record, merge_sign_offs

__all__ = ["GateDecision", "RecordRefused", "file_sign_offs", "keep_record", "rules_lines", "sign_off_entry",
           "versions"]

Decision = Literal["PASS", "FAIL", "RETRY"]


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
    reason_kinds : list of str
        The kind of each reason: ``failed``, ``undecided``, ``no_scored_example``, ``missing_differs``,
        ``improved_below_threshold``, ``all_met``.
    look : LookPlan
        The look's place in the error-spending plan (:mod:`agentstats.gating.looks`).
    family_size : int
        Checks in the family-wise adjustment of a FAIL.
    loop : dict or None
        For a loop's final record: ``run_dir``, ``best_iteration``, ``stop_reason``, ``prompt``, ``prompt_sha256``.
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
    reason_kinds: list[str] = field(default_factory=list)
    look: LookPlan = field(default_factory=LookPlan)
    family_size: int = 0
    loop: dict[str, Any] | None = None

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
        """Return the JSON-ready decision record (layout in ``docs/gate.md``; NaN and infinities become None)."""
        return {
            "schema": RECORD_SCHEMA,
            "decision": self.decision,
            "review_required": self.review_required,
            "reasons": list(self.reasons),
            "reason_kinds": list(self.reason_kinds),
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
            "multiplicity": self.multiplicity(),
            "look": _clean(self.look.as_record(self.alphas())),
            "loop": _clean(self.loop),
        }

    def alphas(self) -> dict[str, float]:
        """Return the global error rates a look spends a share of.

        ``pass`` (``1 - pass_probability``), ``regression`` (``max_regression_probability``) and ``fail``
        (``1 - fail_probability``).
        """
        d = self.config.decision
        return {"pass": 1 - d.pass_probability, "regression": d.max_regression_probability,
                "fail": 1 - d.fail_probability}

    def multiplicity(self) -> dict[str, Any]:
        """Return the record's ``multiplicity`` section: the rule and how many checks it covered (``docs/gate.md``)."""
        rule = self.config.multiplicity
        outside = sum(1 for c in self.checks if c.probability is None or c.probability != c.probability)
        return {
            "fail_rule": ("holm: Holm's step-down over the checks' probabilities (family-wise false FAIL <= the "
                          "look's fail level)" if rule == "holm" else "none: each check fails at its own level"),
            "family_size": self.family_size,
            "outside_family": outside,
            "fail_alpha_this_look": self.alphas()["fail"] * self.look.share,
            "pass_rule": ("every check met at its own level (an intersection-union test: the false-PASS rate of "
                          "the family is at most one check's)"),
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


def versions() -> dict[str, str]:
    """Return the versions a decision is computed with: agentstats, Python, numpy, scipy, pandas."""
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


class RecordRefused(ValueError):
    """A file at the record's path that the gate will not replace (not a record, or signed for other inputs)."""


def sign_off_entry(name: str, decision: str, at: str | None = None) -> dict[str, Any]:
    """Return a reviewer's sign-off of a decision: ``{"name", "at", "decision"}``.

    Parameters
    ----------
    name : str
        The reviewer (surrounding blanks dropped).
    decision : str
        The decision signed (the record's ``decision``).
    at : str, optional
        ISO 8601 UTC time; default now, to the second.

    Raises
    ------
    ValueError
        For a blank name.
    """
    if not name.strip():
        raise ValueError("a sign-off needs the reviewer's name")
    when = at if at is not None else dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    return {"name": name.strip(), "at": when, "decision": decision}


def file_sign_offs(path: Path, record: dict[str, Any]) -> list[dict[str, Any]]:
    """Sign-offs of the record already at ``path`` when it is for the same inputs as ``record``, else [].

    Raises
    ------
    RecordRefused
        When ``path`` exists but is not a readable decision record, or is a record signed for other inputs (its
        sign-offs would be lost).
    """
    if not path.exists():
        return []
    try:
        old = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RecordRefused(f"{path}: exists and is not a readable decision record ({exc}); not overwritten") from exc
    if not is_decision_record(old):
        raise RecordRefused(f"{path}: exists and is not a gate decision record; not overwritten")
    signed = old.get("sign_off") or []
    key = inputs_key(record)
    if key is not None and inputs_key(old) == key:
        return list(signed)
    if signed:
        names = ", ".join(str(s.get("name")) for s in signed)
        raise RecordRefused(f"{path}: signed off ({names}) for other inputs (config or data hashes differ); not "
                            "overwritten. Write this record to another --out.")
    return []


def keep_record(record: dict[str, Any], *, out: Path | None = None, store: Path | None = None,
                run: str | None = None, sign_off: str | None = None) -> dict[str, Any]:
    """Write a decision record to a file and/or append it to a run store, with its sign-offs.

    A record at ``out`` for the same inputs (:func:`agentstats.records.decision.inputs_key`) keeps its sign-offs; a
    record there for other inputs is replaced only when nobody signed it. The store carries the sign-offs of its
    newest record of the same run with the same inputs (:meth:`agentstats.store.RunStore.add_gate_decision`); its
    rows are never updated. Everything that can refuse is checked before anything is written.

    Parameters
    ----------
    record : dict
        A decision record (:meth:`GateDecision.to_record`).
    out : pathlib.Path, optional
        The JSON file to write (atomically).
    store : pathlib.Path, optional
        A run store file to append the record to.
    run : str, optional
        With ``store``: the stored run the decision is about.
    sign_off : str, optional
        A reviewer's name: their sign-off (:func:`sign_off_entry`) is appended.

    Returns
    -------
    dict
        The record with its sign-offs: as written to ``out`` when given, else as stored.

    Raises
    ------
    RecordRefused
        ``out`` holds something the gate will not replace (:func:`file_sign_offs`); nothing was written.
    agentstats.store.StoreError
        An unknown run or a store file that cannot be used.
    OSError, ImportError
        The file or the store could not be written (DuckDB not installed).
    """
    signature = [sign_off_entry(sign_off, str(record["decision"]))] if sign_off is not None else []
    kept = file_sign_offs(out, record) if out is not None else []
    own = merge_sign_offs(record.get("sign_off") or [], signature)
    shown = dict(record)
    if store is not None:
        from agentstats.store import RunStore

        with RunStore(store) as st:
            stored = st.add_gate_decision({**record, "sign_off": own}, run=run)
        shown["sign_off"] = stored["sign_off"]
    if out is not None:
        from agentstats.files.atomic import atomic_write_text

        shown["sign_off"] = merge_sign_offs(kept, own)
        atomic_write_text(out, json.dumps(shown, indent=2) + "\n")
    return shown


def rules_lines(record: Mapping[str, Any]) -> list[str]:
    """Say which rules decided a record: the look of the error-spending plan and the family-wise adjustment.

    Plain lines (no markup), for the command's tables, its Markdown and the gate report.
    """
    look, fam = record.get("look") or {}, record.get("multiplicity") or {}
    lines = []
    if look:
        k, plan = look.get("number"), look.get("max_looks")
        of = f" of {plan}" if plan is not None else ""
        lines.append(f"look {k}{of}: this look decides at {look.get('share', 1):.3g} of each error rate; "
                     f"{look.get('spent_share', 1):.3g} spent so far ({look.get('rule')})")
    if fam:
        rule = str(fam.get("fail_rule", "")).split(":")[0]
        lines.append(f"FAIL: {rule} over {fam.get('family_size')} checks with a probability (family-wise false FAIL "
                     f"<= {fam.get('fail_alpha_this_look', 0):.3g}); PASS: every check met at its own level")
    if record.get("decision") == "RETRY" and look.get("next_share") is not None:
        lines.append(f"next look: add the examples named above and gate again with --previous (this record); "
                     f"look {int(look.get('number', 1)) + 1} decides at {look['next_share']:.3g} of each error rate")
    return lines

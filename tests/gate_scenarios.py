"""Gate scenarios whose decision records are pinned in ``tests/data/gate_records.json``.

The records were computed by the gate as it stood before the gate was split into checks, rule, record and
triggers (main at e7ce629, ``tests/data/make_gate_records.py``), so ``tests/gating/test_gate_records.py`` proves the
split changed no decision and no field of a record (floats to their last digits, which BLAS and summation order
move by CPU). They cover the committed loop example
(``data/example_loop/``) with its own config and with a config that turns on every check, override and trigger,
continuous scores with repeated trials and missing verdicts, tag strata, unpaired examples, a "no failure"
threshold, and a calibrated judge.

Paths are relative to the repository root (the caller changes into it), so the records' ``source`` fields and the
config hash (which covers the calibration path) do not depend on where the checkout is. ``created_at`` and
``versions`` describe the machine and the moment, not the inputs: :func:`normalized` fixes them.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "data" / "gate_records.json"
CALIBRATION = "tests/data/gate_calibration.jsonl"
EXAMPLE = "data/example_loop"

#: A config with every kind of check, override and trigger (the example's metrics; usage is on the iterations only).
FULL = {
    "thresholds": {"relevance": 0.9, "safety": 1.0, "groundedness": 0.6},
    "weights": {"relevance": 2.0, "groundedness": 1.0, "safety": 1.0},
    "regression_tolerance": {"default": 0.05, "safety": 0.02},
    "critical": ["safety"],
    "efficiency": {"tokens": 0.1, "cost_usd": 0.2, "latency_s": 0.5},
    "risk_levels": {"high": {"thresholds": {"relevance": 0.95}, "regression_tolerance": 0.01,
                             "decision": {"max_regression_probability": 0.01}}},
    "review": {"probability": 0.6},
    "n_draws": 2000,
    "random_seed": 7,
}


def _synthetic() -> tuple[list[dict], list[dict]]:
    """Continuous scores over 2 trials, missing verdicts, tags, risk levels, usage and unpaired ids (deterministic)."""
    cand, base = [], []
    for i in range(40):
        risk = ("high", "low", "medium")[i % 3]
        tags = ["billing"] if i % 4 == 0 else (["regulated"] if i == 7 else [])
        for t in range(2):
            g = round(0.5 + 0.4 * ((i * 7 + t * 3) % 11) / 10, 3)
            rel = 1.0 if (i + t) % 5 else 0.0
            ground = None if (i % 9 == 0 and t == 0) else g
            cand.append({"id": f"e{i}", "trial": t, "risk_level": risk, "tags": tags, "tokens": 100 + 3 * i,
                         "cost_usd": 0.001 * (1 + i % 4), "latency_s": 0.2 + 0.01 * t,
                         "scores": {"groundedness": ground, "relevance": rel, "safety": 1.0 if i % 13 else 0.0,
                                    "refusal": 1.0 if i % 6 == 0 else 0.0, "fmt": 1.0}})
            if i < 36:
                base.append({"id": f"e{i}", "trial": t, "risk_level": risk, "tags": tags, "tokens": 110 + 2 * i,
                             "cost_usd": 0.001 * (1 + i % 3), "latency_s": 0.25,
                             "scores": {"groundedness": round(g * 0.9, 3), "relevance": 1.0 if (i + t) % 4 else 0.0,
                                        "safety": 1.0 if i % 7 else 0.0, "refusal": 0.0, "fmt": 1.0}})
    base.append({"id": "only-base", "risk_level": "low", "scores": {"groundedness": 0.7, "relevance": 1.0,
                                                                     "safety": 1.0, "refusal": 0.0, "fmt": 1.0}})
    return cand, base


def _judged() -> tuple[list[dict], list[dict]]:
    """A judged binary metric (66 of 80 candidate passes, 62 baseline) and an uncalibrated one."""
    cand, base = [], []
    for i in range(80):
        cand.append({"id": f"q{i}", "scores": {"relevance": 1.0 if (i * 37) % 80 < 66 else 0.0,
                                               "format": 1.0 if i % 10 else 0.0}})
        base.append({"id": f"q{i}", "scores": {"relevance": 1.0 if (i * 53) % 80 < 62 else 0.0,
                                               "format": 1.0 if i % 8 else 0.0}})
    return cand, base


def scenarios() -> dict[str, tuple[Any, Any, Any]]:
    """``name -> (candidate, baseline, config)`` (paths relative to the repository root)."""
    it = {i: f"{EXAMPLE}/run/iter-00{i}/scores.jsonl" for i in (1, 2, 3)}
    base = f"{EXAMPLE}/baseline.jsonl"
    syn_c, syn_b = _synthetic()
    jud_c, jud_b = _judged()
    synthetic_cfg = {
        "thresholds": {"relevance": 0.7, "fmt": 1.0, "groundedness": 0.8},
        "regression_tolerance": 0.03,
        "critical": ["safety"],
        "efficiency": {"tokens": 0.05, "cost_usd": 0.5},
        "strata_tags": ["billing", "absent-tag"],
        "weights": {"relevance": 1.0, "groundedness": 3.0},
        "review": {"probability": 0.55, "max_judge_missing_share": 0.01},
        "n_draws": 3000,
        "random_seed": 11,
    }
    return {
        **{f"example_iter{i}_vs_baseline": (it[i], base, f"{EXAMPLE}/gate.yaml") for i in (1, 2, 3)},
        "example_iter3_vs_iter2_full": (it[3], it[2], FULL),
        "example_iter2_vs_iter1_full": (it[2], it[1], FULL),
        "example_iter1_vs_baseline_full": (it[1], base, {k: v for k, v in FULL.items() if k != "efficiency"}),
        "synthetic_continuous": (syn_c, syn_b, synthetic_cfg),
        "synthetic_every_verdict_missing": (
            [{**r, "scores": {**r["scores"], "groundedness": None}} for r in syn_c], syn_b, synthetic_cfg),
        "improved_while_critical_worse": (
            [{"id": f"q{i}", "scores": {"relevance": float(i < 50), "safety": float(i < 45)}} for i in range(60)],
            [{"id": f"q{i}", "scores": {"relevance": float(i >= 30), "safety": 1.0}} for i in range(60)],
            {"critical": ["safety"], "n_draws": 2000}),
        "judged_calibrated": (jud_c, jud_b, {"thresholds": {"relevance": 0.7, "format": 0.8}, "n_draws": 4000,
                                             "judge_calibration": {"path": CALIBRATION, "metrics": ["relevance"]}}),
    }


def normalized(record: dict[str, Any]) -> str:
    """The record as indented JSON with the moment and the machine fixed (``created_at``, ``versions``)."""
    return json.dumps({**record, "created_at": "<created_at>", "versions": "<versions>"}, indent=2) + "\n"


def mismatches(actual: Any, expected: Any, where: str = "record") -> list[str]:
    """Where two parsed records differ: floats beyond 1e-9 relative (BLAS and summation order differ by CPU and by
    thread count in the last digits), anything else (strings, ints, keys, lengths) exactly."""
    if isinstance(actual, float) and isinstance(expected, float):
        ok = math.isclose(actual, expected, rel_tol=1e-9, abs_tol=1e-12)
        return [] if ok else [f"{where}: {actual!r} != {expected!r}"]
    if isinstance(actual, dict) and isinstance(expected, dict):
        if list(actual) != list(expected):
            return [f"{where}: keys {list(actual)} != {list(expected)}"]
        return [m for key in actual for m in mismatches(actual[key], expected[key], f"{where}.{key}")]
    if isinstance(actual, list) and isinstance(expected, list):
        if len(actual) != len(expected):
            return [f"{where}: {len(actual)} items != {len(expected)}"]
        pairs = enumerate(zip(actual, expected, strict=True))
        return [m for i, (a, e) in pairs for m in mismatches(a, e, f"{where}[{i}]")]
    return [] if type(actual) is type(expected) and actual == expected else [f"{where}: {actual!r} != {expected!r}"]

"""The gate carries the judge's calibration: corrected means and paired differences of judged binary metrics.

Oracles: a perfect judge reproduces the uncalibrated gate; a noisy one recovers the hand-computed corrected mean
(Rogan & Gladen 1978). The corrected posterior itself (the observed rate's Beta truncated to ``[1 - sp, se]`` and
mapped by ``p = (q + sp - 1) / (se + sp - 1)``) is tested against scipy's truncated Beta quantiles in
``tests/estimators/test_dirichlet.py``.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from agentstats.gating import GateConfig, GateConfigError, gate, load_gate_config


def write_calibration(path, metric: str, tp: int, fn: int, tn: int, fp: int) -> str:
    lines = []
    for gold, verdict, n in ((True, True, tp), (True, False, fn), (False, False, tn), (False, True, fp)):
        lines += [{"item_id": f"{gold}-{verdict}-{i}", "metric": metric, "verdict": verdict, "gold": gold}
                  for i in range(n)]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return str(path)


def scores(n: int, c: int, n_base: int | None = None, seed: int = 0) -> tuple[list[dict], list[dict]]:
    """Candidate with ``c`` of ``n`` judged passes; baseline with ``n_base`` passes on the same ids (shuffled)."""
    rng = np.random.default_rng(seed)
    y = np.zeros(n)
    y[rng.permutation(n)[:c]] = 1
    x = np.zeros(n)
    x[rng.permutation(n)[: (n_base if n_base is not None else c)]] = 1
    cand = [{"id": f"q{i}", "metric": "relevance", "value": float(y[i])} for i in range(n)]
    base = [{"id": f"q{i}", "metric": "relevance", "value": float(x[i])} for i in range(n)]
    return cand, base


def overall(decision, metric="relevance"):
    return next(m for m in decision.metrics if m.metric == metric and m.stratum == "all")


def test_a_perfect_judge_reproduces_the_uncalibrated_gate(tmp_path):
    calib = write_calibration(tmp_path / "calib.jsonl", "relevance", 4000, 0, 4000, 0)  # se, sp ~ 0.99975
    cand, base = scores(80, 66, 62)
    cfg = {"thresholds": {"relevance": 0.75}, "n_draws": 40_000}
    plain = gate(cand, base, cfg)
    corr = gate(cand, base, {**cfg, "judge_calibration": calib})
    a, b = overall(plain), overall(corr)
    assert b.judge_corrected and not a.judge_corrected
    for key in ("mean", "ci_low", "ci_high"):
        assert b.candidate[key] == pytest.approx(a.candidate[key], abs=0.006)
        assert b.difference[key] == pytest.approx(a.difference[key], abs=0.008)
    assert b.p_meets_threshold == pytest.approx(a.p_meets_threshold, abs=0.01)
    assert b.p_regression == pytest.approx(a.p_regression, abs=0.01)
    assert plain.decision == corr.decision
    rec = corr.to_record()["judge_calibration"]
    assert rec["metrics"]["relevance"]["tp"] == 4000 and len(rec["sha256"]) == 64


@pytest.mark.slow  # 1.3-1.6 s; the README's test command stays under 2 minutes
def test_a_noisy_judge_recovers_the_rogan_gladen_mean_and_widens_the_interval(tmp_path):
    # se ~ Beta(901, 101), sp ~ Beta(851, 151): means 0.8992 and 0.8493, from 1,000 + 1,000 calibration items
    calib = write_calibration(tmp_path / "calib.jsonl", "relevance", 900, 100, 850, 150)
    se, sp = 901 / 1002, 851 / 1002
    n = 4000
    cand, base = scores(n, 2800, 2400)  # observed 0.70 and 0.60
    cfg = {"thresholds": {"relevance": 0.7}, "n_draws": 20_000}
    plain = overall(gate(cand, base, cfg))
    corr = overall(gate(cand, base, {**cfg, "judge_calibration": {"path": calib, "metrics": ["relevance"]}}))
    j = se + sp - 1
    assert corr.candidate["mean"] == pytest.approx((0.70 + sp - 1) / j, abs=0.006)  # 0.7347
    assert corr.baseline["mean"] == pytest.approx((0.60 + sp - 1) / j, abs=0.006)
    assert corr.difference["mean"] == pytest.approx(0.10 / j, abs=0.006)
    width = {k: r.candidate["ci_high"] - r.candidate["ci_low"] for k, r in (("plain", plain), ("corr", corr))}
    assert width["corr"] > 1.5 * width["plain"]  # 1 / j alone is 1.34; the calibration's spread adds the rest
    dwidth = {k: r.difference["ci_high"] - r.difference["ci_low"] for k, r in (("plain", plain), ("corr", corr))}
    assert dwidth["corr"] > 1.2 * dwidth["plain"]
    # the verdict rate 0.70 sits on the threshold; the true rate is credibly above it
    assert plain.p_meets_threshold == pytest.approx(0.5, abs=0.05)
    assert corr.p_meets_threshold > 0.95


def test_calibration_config_forms_and_errors(tmp_path):
    calib = write_calibration(tmp_path / "calib.jsonl", "relevance", 90, 10, 85, 15)
    cfg_file = tmp_path / "gate.yaml"
    cfg_file.write_text("thresholds: {relevance: 0.5}\njudge_calibration: calib.jsonl\n")
    cfg = load_gate_config(cfg_file)
    assert cfg.judge_calibration is not None and cfg.judge_calibration.path == calib  # relative to the config file
    cand, base = scores(50, 35)
    assert overall(gate(cand, base, cfg)).judge_corrected
    bad = tmp_path / "bad.yaml"
    bad.write_text("judge_calibration:\n  paht: calib.jsonl\n")
    with pytest.raises(GateConfigError, match=r"line 2, field 'judge_calibration.paht'"):
        load_gate_config(bad)
    with pytest.raises(ValueError, match="does not calibrate metric 'relevance'"):
        other = write_calibration(tmp_path / "other.jsonl", "safety", 9, 1, 9, 1)
        gate(cand, base, GateConfig(judge_calibration={"path": other, "metrics": ["relevance"]}))
    with pytest.raises(ValueError, match="cannot read the calibration set"):
        gate(cand, base, GateConfig(judge_calibration=str(tmp_path / "missing.jsonl")))
    partial = [dict(r, value=0.5) if r["id"] == "q0" else r for r in cand]
    with pytest.raises(ValueError, match="values other than 0 and 1"):
        gate(partial, base, GateConfig(judge_calibration=calib))
    # a calibration for another metric only corrects nothing
    d = gate(cand, base, GateConfig(judge_calibration=str(tmp_path / "other.jsonl")))
    assert not overall(d).judge_corrected and d.to_record()["judge_calibration"]["metrics"] == {}

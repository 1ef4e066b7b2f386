"""Release gate: hand-computable decisions, triggers, located config and input errors.

Oracles: the Beta CDF (a binary metric's mean with one trial per example is Beta(1 + c, 1 + n - c)); the paired
difference of a binary metric is ``p10 - p01`` of Dirichlet(n00, n01 + 1, n10 + 1, n11), whose tail probability is
a one-dimensional integral (``tests/dirichlet_oracles.py``), independently of the gate's Monte Carlo. The posteriors
themselves are tested in ``tests/estimators/test_dirichlet.py``.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from dirichlet_oracles import p_diff_below
from scipy import stats

import agentstats
from agentstats.gating import GateConfig, GateConfigError, gate, load_gate_config


def rows(values: dict[str, list[float | None]], risk: list[str] | None = None, **extra) -> list[dict]:
    """Wide records: ``values[metric][i]`` for example ``q{i}``."""
    n = len(next(iter(values.values())))
    out = []
    for i in range(n):
        r = {"id": f"q{i}", "scores": {m: v[i] for m, v in values.items()}}
        if risk is not None:
            r["risk_level"] = risk[i]
        for k, v in extra.items():
            r[k] = v[i]
        out.append(r)
    return out


# ---- hand-computable decisions ------------------------------------------------------------------------------


def test_all_pass():
    n = 50
    cand = rows({"acc": [1] * n})
    base = rows({"acc": [1] * n})
    d = gate(cand, base, {"thresholds": {"acc": 0.85}, "max_looks": 1})  # a single look: the full levels
    assert d.decision == "PASS"
    thr = next(c for c in d.checks if c.kind == "threshold")
    assert thr.probability == pytest.approx(1 - 0.85**51, abs=1e-12)  # Beta(51, 1): CDF x^51
    reg = next(c for c in d.checks if c.kind == "regression")
    assert reg.probability == pytest.approx(p_diff_below(0, 0, 0, n, 0.05), abs=0.006)
    assert reg.probability <= 0.05
    assert not d.triggers
    assert d.to_record()["decision"] == "PASS"


def test_regression_in_high_risk_only_is_found_while_the_overall_mean_is_flat():
    # high (20): baseline passes all, candidate 10 -> n11 = 10, n01 = 10; low (80): baseline 60, candidate 70
    # (n11 = 60, n10 = 10, n00 = 10). Overall 80 / 100 both: flat.
    high_c, high_b = [1] * 10 + [0] * 10, [1] * 20
    low_c, low_b = [1] * 60 + [1] * 10 + [0] * 10, [1] * 60 + [0] * 10 + [0] * 10
    risk = ["high"] * 20 + ["low"] * 80
    cand = rows({"acc": high_c + low_c}, risk)
    base = rows({"acc": high_b + low_b}, risk)
    d = gate(cand, base, {"regression_tolerance": 0.05})
    overall = next(m for m in d.metrics if m.stratum == "all")
    assert overall.candidate_paired["mean"] == pytest.approx(overall.baseline["mean"], abs=0.01)
    assert overall.difference["mean"] == pytest.approx(0.0, abs=0.005)  # E[p10 - p01] = (11 - 11) / 102
    high = next(c for c in d.checks if c.kind == "regression" and c.stratum == "risk_level=high")
    assert high.probability == pytest.approx(p_diff_below(0, 10, 0, 10, 0.05), abs=0.005)
    assert high.state == "failed"
    assert d.decision == "FAIL"
    assert any("risk_level=high" in r for r in d.reasons)
    # the published point-score rule (baseline - candidate > tolerance on the overall mean) sees nothing
    assert not (np.mean(high_b + low_b) - np.mean(high_c + low_c) > 0.05)


def test_undecided_with_five_examples_retries_with_a_sample_size():
    cand = rows({"acc": [1, 1, 1, 1, 0]})
    base = rows({"acc": [1, 1, 1, 1, 0]})
    d = gate(cand, base, {"thresholds": {"acc": 0.7}, "regression_tolerance": 0.1})
    assert d.decision == "RETRY"
    thr = next(c for c in d.checks if c.kind == "threshold")
    # Beta(5, 2): CDF 6 x^5 - 5 x^6
    assert thr.probability == pytest.approx(1 - (6 * 0.7**5 - 5 * 0.7**6), abs=1e-12)
    assert thr.state == "undecided"
    mean, sd = 5 / 7, math.sqrt(5 * 2 / (7**2 * 8))
    z = stats.norm.ppf(1 - 0.05 / 6)  # met at the next look: look 2 spends 1/6 of the error rates
    assert thr.more_examples == math.ceil(5 * (z * sd / (mean - 0.7)) ** 2 - 5)
    assert any("acc" in r and "more examples" in r for r in d.reasons)
    assert all(c.state != "failed" for c in d.checks)


def test_threshold_one_means_no_failure():
    d = gate(rows({"fmt": [1] * 50 + [0]}), rows({"fmt": [1] * 51}), {"thresholds": {"fmt": 1.0}})
    thr = next(c for c in d.checks if c.kind == "threshold")
    assert (thr.failures, thr.state) == (1, "failed")
    assert d.decision == "FAIL"
    d = gate(rows({"fmt": [1] * 5}), rows({"fmt": [1] * 5}), {"thresholds": {"fmt": 1.0}, "regression_tolerance": 0.5})
    assert next(c for c in d.checks if c.kind == "threshold").state == "met"


def test_threshold_one_counts_failures_and_gives_no_probability():
    # 30 examples x 3 trials, every value 1: the mean's posterior (prior mass on 0 and 1) sits below 1, so a
    # "P(mean >= 1) = 1.000" would contradict its interval; the check counts failures instead
    cand = [{"id": i, "trial": t, "metric": "fmt", "value": 1} for i in range(30) for t in range(3)]
    base = [{"id": i, "trial": t, "metric": "fmt", "value": int(i % 5 != 0)} for i in range(30) for t in range(3)]
    d = gate(cand, base, {"thresholds": {"fmt": 1.0}})
    thr = next(c for c in d.checks if c.kind == "threshold")
    (m,) = [m for m in d.metrics if m.stratum == "all"]
    assert m.candidate["ci_high"] < 1.0  # the interval that "1.000" contradicted
    assert thr.state == "met" and thr.failures == 0 and math.isnan(thr.probability)
    assert m.p_meets_threshold is None and m.n_failures == 0
    assert thr.failure_rate_upper == pytest.approx(1 - 0.05 ** (1 / 30), abs=1e-12)  # Clopper-Pearson, ~ 3 / 30
    assert thr.describe() == ("fmt: no failure allowed (threshold 1): no failure observed on 30 examples (failure "
                              "rate below 0.095 at the credible level): met")
    rec = json.loads(json.dumps(d.to_record()))
    (rc,) = [c for c in rec["checks"] if c["kind"] == "threshold"]
    assert rc["probability"] is None and rc["failures"] == 0 and rc["state"] == "met"
    assert rec["metrics"][0]["p_meets_threshold"] is None and rec["metrics"][0]["n_failures"] == 0
    # one trial of one example below 1 makes that example's value 2/3: one failure of 30
    cand[4]["value"] = 0
    d = gate(cand, base, {"thresholds": {"fmt": 1.0}})
    thr = next(c for c in d.checks if c.kind == "threshold")
    assert (thr.state, thr.failures) == ("failed", 1)
    # the baseline fails 6 of 30: the candidate credibly improved, so this is "improved but still below threshold"
    assert d.decision == "RETRY" and d.reason_kinds == ["improved_below_threshold"]
    assert d.reasons[0].endswith("fmt: no failure allowed (threshold 1): 1 of 30 examples below 1: failed")
    assert [m.n_failures for m in d.metrics if m.stratum == "all"] == [1]
    clean = [{**r, "value": 1} for r in base]  # against a clean baseline it is a plain failure
    d = gate(cand, clean, {"thresholds": {"fmt": 1.0}})
    assert d.decision == "FAIL"
    assert "fmt: no failure allowed (threshold 1): 1 of 30 examples below 1: failed" in d.reasons


def test_risk_level_override_checks_its_threshold_on_its_examples():
    risk = ["high"] * 10 + ["low"] * 40
    vals = [0] * 10 + [1] * 40
    cfg = {"thresholds": {"acc": 0.5}, "risk_levels": {"high": {"thresholds": {"acc": 0.9}}}}
    d = gate(rows({"acc": vals}, risk), rows({"acc": vals}, risk), cfg)
    high = next(c for c in d.checks if c.kind == "threshold" and c.stratum == "risk_level=high")
    assert high.probability == pytest.approx(stats.beta(1, 11).sf(0.9), abs=1e-12)
    assert high.state == "failed" and d.decision == "FAIL"


def test_continuous_scores_and_repeated_trials():
    # two trials per example: the example's value is their mean
    recs = []
    for i in range(100):
        for t in range(2):
            recs.append({"id": f"q{i}", "trial": t, "metric": "g", "value": 0.9 if t == 0 else 1.0})
    d = gate(recs, recs, {"thresholds": {"g": 0.8}})
    m = next(m for m in d.metrics if m.stratum == "all")
    assert m.trials == 2 and not m.binary
    # atoms: 100 x 0.95, prior 1 x 0 and 1 x 1 -> mean (95 + 1) / 102
    assert m.candidate["mean"] == pytest.approx(96 / 102, abs=0.002)
    assert d.decision == "PASS"


def test_efficiency_regression_on_relative_tolerance():
    n = 100
    cand = rows({"acc": [1] * n}, tokens=[150] * n)
    base = rows({"acc": [1] * n}, tokens=[100] * n)
    d = gate(cand, base, {"efficiency": {"tokens": 0.2}})
    eff = next(c for c in d.checks if c.kind == "efficiency")
    assert eff.state == "failed" and d.decision == "FAIL"
    assert d.efficiency[0]["ratio"]["mean"] == pytest.approx(1.5)
    d = gate(cand, base, {"efficiency": {"tokens": 0.6}})
    assert d.decision == "PASS"


def test_unpaired_ids_are_reported_and_count_for_thresholds_only():
    cand = rows({"acc": [1] * 12})
    base = rows({"acc": [1] * 10})
    base.append({"id": "only-base", "scores": {"acc": 1}})
    d = gate(cand, base, {"thresholds": {"acc": 0.5}, "regression_tolerance": 0.2})
    assert d.pairing == {"n_paired": 10, "only_candidate": ["q10", "q11"], "only_baseline": ["only-base"]}
    m = next(m for m in d.metrics if m.stratum == "all")
    assert (m.n_candidate, m.n_paired) == (12, 10)


# ---- triggers ----------------------------------------------------------------------------------------------


def test_triggers_fire_with_their_evidence():
    n = 60
    better = [1] * 50 + [0] * 10
    worse_base = [1] * 60
    worse_cand = [1] * 45 + [0] * 15
    cand = rows(
        {"relevance": better, "safety": [1] * n, "refusal": [1] * 30 + [0] * 30, "ground": [None] * 10 + [1] * 50},
        tags=[["regulated"]] + [[]] * (n - 1),
    )
    base = rows({"relevance": [0] * 30 + [1] * 30, "safety": worse_base, "refusal": [0] * n, "ground": [1] * n})
    cand_w = rows({"relevance": better, "safety": worse_cand})
    base_w = rows({"relevance": [0] * 30 + [1] * 30, "safety": worse_base})
    d = gate(cand_w, base_w, {"critical": ["safety"]})
    kinds = {t.kind: t for t in d.triggers}
    assert "improved_while_critical_worse" in kinds
    assert "relevance" in kinds["improved_while_critical_worse"].evidence["improved"]
    # safety up together with refusals: the refusal trigger; a regulated example; 10 of 60 verdicts missing
    base[0]["scores"]["safety"] = 0
    base[1]["scores"]["safety"] = 0
    base[2]["scores"]["safety"] = 0
    base[3]["scores"]["safety"] = 0
    d = gate(cand, base, GateConfig(review={"probability": 0.75}))
    kinds = {t.kind: t for t in d.triggers}
    assert kinds["sensitive_tags"].evidence["examples"] == {"regulated": ["q0"]}
    assert kinds["judge_missing"].evidence == {"metric": "ground", "missing": 10, "total": 60}
    ground = next(m for m in d.metrics if m.metric == "ground" and m.stratum == "all")
    assert (ground.n_missing, ground.n_candidate) == (10, 50)
    assert "refusals_up_with_safety" in kinds
    assert d.review_required and d.to_record()["review_required"]


# ---- config -------------------------------------------------------------------------------------------------


def test_config_errors_name_file_field_and_line(tmp_path):
    p = tmp_path / "gate.yaml"
    p.write_text("thresholds:\n  acc: 0.9\n  safety: 1.3\ndecision:\n  pass_probability: 0.4\nmax_iteratons: 3\n")
    with pytest.raises(GateConfigError) as err:
        load_gate_config(p)
    msg = str(err.value)
    assert f"{p}, line 3, field 'thresholds.safety'" in msg
    assert f"{p}, line 5, field 'decision.pass_probability'" in msg
    assert f"{p}, line 6, field 'max_iteratons': unknown setting" in msg
    assert len(err.value.problems) == 3


def test_config_json_and_syntax_errors(tmp_path):
    p = tmp_path / "gate.json"
    p.write_text('{\n  "thresholds": {"acc": 0.9},\n  "regression_tolerance": {"acc": 2}\n}\n')
    with pytest.raises(GateConfigError, match=r"line 3, field 'regression_tolerance"):
        load_gate_config(p)
    p.write_text('{\n  "thresholds": {"acc": 0.9},\n}\n')
    with pytest.raises(GateConfigError, match=r"line 3: malformed JSON"):
        load_gate_config(p)
    y = tmp_path / "gate.yaml"
    y.write_text("thresholds:\n  acc: [0.9\n")
    with pytest.raises(GateConfigError, match=r"gate.yaml, line \d: malformed YAML"):
        load_gate_config(y)
    t = tmp_path / "gate.toml"
    t.write_text("")
    with pytest.raises(GateConfigError, match="unknown config suffix"):
        load_gate_config(t)


def test_config_resolution_and_hash():
    cfg = GateConfig(
        regression_tolerance={"acc": 0.02, "default": 0.1},
        risk_levels={"high": {"regression_tolerance": 0.01, "decision": {"max_regression_probability": 0.01}}},
    )
    assert cfg.tolerance("acc") == 0.02 and cfg.tolerance("other") == 0.1
    assert cfg.tolerance("acc", "high") == 0.01 and cfg.tolerance("acc", "low") == 0.02
    assert cfg.probabilities("high").max_regression_probability == 0.01
    assert cfg.probabilities("low").max_regression_probability == 0.05
    assert cfg.sha256() == GateConfig.model_validate(cfg.model_dump()).sha256()
    assert cfg.sha256() != GateConfig().sha256()


def test_config_naming_an_unknown_metric_is_an_input_error():
    with pytest.raises(ValueError, match=r"names metric\(s\) \['acc'\]"):
        gate(rows({"acc_typo": [1, 1]}), rows({"acc_typo": [1, 1]}), {"thresholds": {"acc": 0.5}})


# ---- inputs -------------------------------------------------------------------------------------------------


def test_a_metric_the_candidate_dropped_is_an_input_error():
    with pytest.raises(ValueError, match=r"\['safety'\] are scored in the baseline"):
        gate(rows({"acc": [1, 1]}), rows({"acc": [1, 1], "safety": [1, 1]}))


def test_a_metric_with_every_verdict_missing_is_undecided_not_passed():
    n = 100
    d = gate(rows({"acc": [1] * n, "g": [None] * n}), rows({"acc": [1] * n, "g": [1] * n}))
    assert d.decision == "RETRY"
    assert d.reasons[:1] == ["g: no example scored in both sets (missing verdicts?): undecided"]
    # and the effective-N check: every verdict missing in the candidate, none in the baseline
    assert d.reason_kinds == ["undecided", "missing_differs"] and "100 of 100 missing" in d.reasons[1]
    assert any(t.kind == "judge_missing" for t in d.triggers)
    json.dumps(d.to_record(), allow_nan=False)


def test_risk_levels_disagreeing_between_sets_is_an_input_error(tmp_path):
    with pytest.raises(ValueError, match="disagree on risk levels"):
        gate(rows({"acc": [1, 1]}, ["high", "low"]), rows({"acc": [1, 1]}, ["low", "low"]))
    # files: each side named with its file, line and field (q2 is on line 3 of the candidate, line 2 of the baseline)
    cand, base = tmp_path / "cand.jsonl", tmp_path / "base.jsonl"
    cand.write_text("".join(json.dumps({"id": i, "scores": {"acc": 1}, "risk_level": r}) + "\n"
                            for i, r in (("q0", "low"), ("q1", "low"), ("q2", "high"))))
    base.write_text("".join(json.dumps({"id": i, "scores": {"acc": 1}, "risk_level": "low"}) + "\n"
                            for i in ("q1", "q2", "q0")))
    with pytest.raises(ValueError) as err:
        gate(cand, base)
    assert str(err.value).endswith(
        f"id 'q2': risk_level 'high' in the candidate ({cand}, line 3, field 'risk_level'), 'low' in the baseline "
        f"({base}, line 2, field 'risk_level')"
    )


def test_facade_exports_the_gate_function():
    assert agentstats.gate is gate
    assert agentstats.GateConfig is GateConfig
    assert "GateDecision" in agentstats.__all__


def test_tag_strata_and_metric_frame(tmp_path):
    n = 40
    tags = [["billing"]] * 10 + [[]] * 30
    cand = rows({"acc": [0] * 10 + [1] * 30}, tags=tags)
    base = rows({"acc": [1] * 40}, tags=tags)
    cfg_path = tmp_path / "gate.json"
    cfg_path.write_text(json.dumps({"strata_tags": ["billing"], "regression_tolerance": 0.05}))
    d = gate(cand, base, cfg_path)
    tag = next(c for c in d.checks if c.stratum == "tag=billing")
    assert tag.n == 10 and tag.state == "failed"
    # only discordant cells: p01 ~ Beta(11, 1), p10 = 1 - p01, so P(p10 - p01 < -0.05) = P(p01 > 0.525)
    assert tag.probability == pytest.approx(1 - 0.525**11, abs=0.005)
    frame = d.metric_frame()
    assert list(frame["stratum"]) == ["all", "tag=billing"]
    assert frame.loc[0, "n_candidate"] == n
    assert frame.loc[1, "candidate_mean"] == pytest.approx(1 / 12, abs=1e-12)  # Beta(1, 11)


def test_a_loop_config_given_to_the_gate_points_to_its_gate_section():
    from pathlib import Path

    example = Path(__file__).resolve().parents[2] / "data" / "example_loop" / "loop.json"
    with pytest.raises(GateConfigError, match=r"this is a loop config.*`gate:` section"):
        load_gate_config(example)


def test_a_baseline_sharing_no_example_is_an_input_error():
    other = [{**r, "id": "b" + r["id"]} for r in rows({"acc": [1, 0, 1]})]
    with pytest.raises(ValueError, match=r"share no example id \(candidate: 'q0', 'q1', 'q2' \(3 in all\)"):
        gate(rows({"acc": [1, 1, 1]}), other)


def test_a_failing_gate_also_lists_its_undecided_checks():
    n = 100
    d = gate(rows({"acc": [0] * n, "g": [None] * n}), rows({"acc": [1] * n, "g": [1] * n}))
    assert d.decision == "FAIL"
    assert d.reasons[0].startswith("P(acc worse than baseline") and d.reasons[0].endswith("failed")
    assert d.reasons[1:2] == ["g: no example scored in both sets (missing verdicts?): undecided"]
    assert d.reason_kinds == ["failed", "undecided", "missing_differs"]

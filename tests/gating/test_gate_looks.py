"""Repeated looks, family-wise control, trials as input and checks without evidence (issue 31).

Expected values by hand: the look shares ``1 / (k (k + 1))`` (1/2, 1/6, 1/12; the last look of ``max_looks: K``
spends ``1 / K``), the Beta CDF of a binary mean, the Clopper-Pearson bound ``1 - 0.05^(1/n)``.
"""

from __future__ import annotations

import json
import math

import pytest
from scipy import stats

from agentstats.gating import gate
from agentstats.gating.looks import share


def rows(metric: str, values: list, risk: list[str] | None = None, prefix: str = "q") -> list[dict]:
    out = []
    for i, v in enumerate(values):
        r = {"id": f"{prefix}{i}", "scores": {metric: v}}
        if risk is not None:
            r["risk_level"] = risk[i]
        out.append(r)
    return out


def test_the_spending_shares():
    assert [share(k, None) for k in (1, 2, 3, 4)] == pytest.approx([1 / 2, 1 / 6, 1 / 12, 1 / 20])
    assert sum(share(k, None) for k in range(1, 200)) == pytest.approx(1 - 1 / 200)
    assert [share(k, 3) for k in (1, 2, 3)] == pytest.approx([1 / 2, 1 / 6, 1 / 3])  # the last spends what is left
    assert share(1, 1) == 1.0
    with pytest.raises(ValueError, match="past the plan"):
        share(2, 1)


def test_a_retry_followed_by_more_examples_is_look_two():
    cfg = {"thresholds": {"acc": 0.7}}
    first = gate(rows("acc", [1, 1, 1, 1, 0]), rows("acc", [1, 1, 1, 1, 0]), cfg)
    assert first.decision == "RETRY" and first.look.number == 1
    rec = json.loads(json.dumps(first.to_record()))
    assert rec["look"]["number"] == 1 and rec["look"]["share"] == pytest.approx(0.5)
    assert rec["look"]["levels"]["regression"] == {"alpha": 0.05, "this_look": pytest.approx(0.025),
                                                   "spent": pytest.approx(0.025)}
    more = [1] * 40 + [0] * 5
    second = gate(rows("acc", more), rows("acc", more), cfg, previous=rec)
    assert second.look.number == 2 and second.look.share == pytest.approx(1 / 6)
    assert second.look.spent == pytest.approx(2 / 3)
    thr = next(c for c in second.checks if c.kind == "threshold")
    assert thr.met_at == pytest.approx(1 - 0.05 / 6)
    assert thr.probability == pytest.approx(stats.beta(41, 6).sf(0.7), abs=1e-12)
    rec2 = second.to_record()
    assert rec2["look"]["previous"]["look"] == 1 and rec2["look"]["previous"]["decision"] == "RETRY"
    assert rec2["look"]["previous"]["candidate_sha256"] == rec["candidate"]["sha256"]
    # the same candidate again is the same look (nothing more spent)
    again = gate(rows("acc", more), rows("acc", more), cfg, previous=rec2)
    assert again.look.number == 2 and again.look.previous == rec2["look"]["previous"]


def test_a_look_follows_only_an_undecided_look_of_the_same_comparison(tmp_path):
    cfg = {"thresholds": {"acc": 0.7}}
    done = gate(rows("acc", [1] * 60), rows("acc", [1] * 60), cfg).to_record()
    assert done["decision"] == "PASS"
    with pytest.raises(ValueError, match="decided PASS: the comparison is over"):
        gate(rows("acc", [1] * 61), rows("acc", [1] * 60), cfg, previous=done)
    retry = gate(rows("acc", [1, 1, 0]), rows("acc", [1, 1, 0]), cfg).to_record()
    with pytest.raises(ValueError, match="configuration differs"):
        gate(rows("acc", [1] * 9), rows("acc", [1, 1, 0]), {"thresholds": {"acc": 0.8}}, previous=retry)
    with pytest.raises(ValueError, match="its baseline had more examples"):
        gate(rows("acc", [1] * 9), rows("acc", [1, 1]), cfg, previous=retry)
    old = {k: v for k, v in retry.items() if k != "look"}
    with pytest.raises(ValueError, match="before looks were counted"):
        gate(rows("acc", [1] * 9), rows("acc", [1, 1, 0]), cfg, previous=old)
    path = tmp_path / "look1.json"
    path.write_text(json.dumps(retry))
    assert gate(rows("acc", [1] * 9), rows("acc", [1, 1, 0]), cfg, previous=path).look.number == 2
    # a run store's records: the newest of this comparison counts; none of it: a first look
    other = gate(rows("acc", [1, 0]), rows("acc", [0, 0]), {"thresholds": {"acc": 0.6}}).to_record()
    assert gate(rows("acc", [1] * 9), rows("acc", [1, 1, 0]), cfg, previous=[retry, other]).look.number == 2
    assert gate(rows("acc", [1] * 9), rows("acc", [1, 1, 0]), cfg, previous=[other]).look.number == 1


def test_max_looks_one_is_a_single_look_and_ends_the_plan():
    cfg = {"thresholds": {"acc": 0.7}, "max_looks": 1}
    d = gate(rows("acc", [1, 1, 1, 1, 0]), rows("acc", [1, 1, 1, 1, 0]), cfg)
    thr = next(c for c in d.checks if c.kind == "threshold")
    assert d.look.share == 1.0 and thr.met_at == pytest.approx(0.95)
    assert thr.state == "undecided" and thr.more_examples is None  # no next look: no number
    with pytest.raises(ValueError, match="1 looks are spent"):
        gate(rows("acc", [1] * 9), rows("acc", [1, 1, 1, 1, 0]), cfg, previous=d.to_record())


def test_the_record_states_the_family_wise_rule_and_its_size():
    risk = ["high", "low"] * 30
    d = gate(rows("a", [1] * 60, risk) + rows("b", [1] * 60, risk),
             rows("a", [1] * 60, risk) + rows("b", [1] * 60, risk), {"thresholds": {"a": 0.8}})
    rec = d.to_record()
    # a: threshold + 3 regressions (all, high, low); b: 3 regressions
    assert rec["multiplicity"]["family_size"] == 7 and rec["multiplicity"]["fail_rule"].startswith("holm")
    assert rec["multiplicity"]["fail_alpha_this_look"] == pytest.approx(0.05 * 0.5)
    assert all(c["fail_at"] is not None for c in rec["checks"])


def test_no_scored_example_is_undecided_whatever_the_threshold():
    down = [{"id": f"q{i}", "scores": {"g": None, "acc": 1}} for i in range(30)]
    base = [{"id": f"q{i}", "scores": {"g": 1, "acc": 1}} for i in range(30)]
    for t in (0.99, 0.95, 0.05, 1.0):
        d = gate(down, base, {"thresholds": {"g": t}, "max_missing_difference": 1.0})
        thr = next(c for c in d.checks if c.kind == "threshold" and c.metric == "g")
        assert thr.state == "undecided" and thr.n == 0, t
        assert d.decision == "RETRY" and "g: no scored example (judge down?): undecided" in d.reasons
        assert "no_scored_example" in d.reason_kinds
        (m,) = [m for m in d.metrics if m.metric == "g" and m.stratum == "all"]
        assert m.p_meets_threshold is None


def test_no_failure_threshold_gives_the_upper_bound_on_the_failure_rate():
    d = gate(rows("fmt", [1] * 59), rows("fmt", [1] * 59), {"thresholds": {"fmt": 1.0}})
    rec = d.to_record()
    (c,) = [c for c in rec["checks"] if c["kind"] == "threshold"]
    assert c["failure_rate_upper"] == pytest.approx(1 - 0.05 ** (1 / 59), abs=1e-12)
    assert abs(c["failure_rate_upper"] - 3 / 59) < 0.002  # the rule of three
    assert rec["metrics"][0]["failure_rate_upper"] == c["failure_rate_upper"]


def test_missing_shares_that_differ_make_the_decision_undecided():
    n = 100
    cand = [{"id": f"q{i}", "scores": {"acc": None if i < 10 else 1}} for i in range(n)]
    base = [{"id": f"q{i}", "scores": {"acc": 1}} for i in range(n)]
    d = gate(cand, base, {"max_looks": 1})
    (m,) = [c for c in d.checks if c.kind == "missing"]
    assert m.state == "undecided" and m.value == pytest.approx(0.10)
    assert d.decision == "RETRY" and d.reason_kinds == ["missing_differs"]
    assert "10 of 100 missing in the candidate (10.0%), 0 of 100 in the baseline (0.0%)" in d.reasons[0]
    d = gate(cand, base, {"max_looks": 1, "max_missing_difference": 0.2})
    assert d.decision == "PASS" and [c.state for c in d.checks if c.kind == "missing"] == ["met"]


def _trials(path, agent, outcomes, risk=None):
    lines = []
    for i, o in enumerate(outcomes):
        t = {"agent": agent, "task_id": f"t{i}", "trial": 0,
             "usage": {"input_tokens": 10, "output_tokens": 5, "latency_s": 1.0}}
        if o is None:
            t["status"] = "infra_error"
        else:
            t["success"] = bool(o)
        if risk is not None:
            t["risk_level"] = risk[i]
        lines.append(json.dumps(t) + "\n")
    path.write_text("".join(lines))
    return path


def test_the_gate_reads_trials_files_as_the_binary_metric_success(tmp_path):
    n = 80
    cand = _trials(tmp_path / "cand.jsonl", "new", [1] * 70 + [0] * 8 + [None] * 2)
    base = _trials(tmp_path / "base.jsonl", "old", [1] * 60 + [0] * 20)
    d = gate(cand, base, {"thresholds": {"success": 0.8}, "efficiency": {"tokens": 0.1}})
    thr = next(c for c in d.checks if c.kind == "threshold")
    assert thr.metric == "success" and thr.n == n - 2
    assert thr.probability == pytest.approx(stats.beta(71, 9).sf(0.8), abs=1e-12)  # the infra errors are missing
    (m,) = [m for m in d.metrics if m.stratum == "all"]
    assert m.n_missing == 2 and m.n_paired == n - 2
    assert d.efficiency[0]["candidate_mean"] == pytest.approx(15.0)  # tokens = input + output
    assert d.candidate["source"] == str(cand)
    mixed = tmp_path / "both.jsonl"
    mixed.write_text(cand.read_text() + base.read_text())
    with pytest.raises(ValueError, match="trials of 2 agents"):
        gate(mixed, base)


def test_improved_but_below_threshold_is_named_in_the_record():
    # candidate 40 of 60 (0.67) against the baseline's 10 of 60: better beyond doubt, still below 0.9
    cand, base = rows("g", [1] * 40 + [0] * 20), rows("g", [1] * 10 + [0] * 50)
    d = gate(cand, base, {"thresholds": {"g": 0.9}})
    assert d.decision == "RETRY" and d.reason_kinds == ["improved_below_threshold"]
    assert d.to_record()["reason_kinds"] == ["improved_below_threshold"]
    assert math.isclose(next(c for c in d.checks if c.kind == "threshold").probability, stats.beta(41, 21).sf(0.9),
                        abs_tol=1e-12)

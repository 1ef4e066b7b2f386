"""The gate's decision rule (``agentstats.gating.decide.decide``) on hand-made evidence.

Expected states follow the documented levels (``docs/gate.md``: a threshold check is met at ``P >= pass_probability``
and failed at ``P <= 1 - fail_probability``; a regression or efficiency check is met at
``P <= max_regression_probability`` and failed at ``P >= fail_probability``), boundaries included; the examples that
would decide an undecided check are the normal-approximation ``N = n (z_p s / g)^2`` written out here. Holm's
step-down (Holm 1979) and the look's share of the levels are worked by hand in the tests that use them.
"""

from __future__ import annotations

import math

import pytest
from scipy import stats

from agentstats.gating.checks import Evidence
from agentstats.gating.config import DecisionProbabilities
from agentstats.gating.decide import decide

# 1 - 0.75 is exact in binary floating point, so the failed level of a threshold check is exactly 0.25
LV = DecisionProbabilities(pass_probability=0.9, max_regression_probability=0.1, fail_probability=0.75)


def ev(kind, p, *, bound=0.5, n=20, mean=None, sd=None, failures=None, metric="m", stratum="all", levels=LV, **kw):
    return Evidence(kind, metric, stratum, p, bound, True, n, levels, mean, sd, failures, **kw)


def decide3(evidence, **kw):
    r = decide(evidence, **kw)
    return r.decision, r.checks, r.reasons


@pytest.mark.parametrize(("p", "state"), [(0.9, "met"), (0.95, "met"), (0.25, "failed"), (0.1, "failed"),
                                          (0.5, "undecided"), (0.26, "undecided")])
def test_threshold_states_at_and_between_the_levels(p, state):
    _, (check,), _ = decide3([ev("threshold", p, mean=0.6, sd=0.1)])
    assert check.state == state


@pytest.mark.parametrize("kind", ["regression", "efficiency"])
@pytest.mark.parametrize(("p", "state"), [(0.1, "met"), (0.0, "met"), (0.75, "failed"), (0.99, "failed"),
                                          (0.5, "undecided")])
def test_regression_and_efficiency_states(kind, p, state):
    _, (check,), _ = decide3([ev(kind, p, bound=-0.05, mean=0.0, sd=0.1)])
    assert check.state == state


def test_more_examples_on_the_side_the_estimate_is_on():
    n, sd = 20, 0.1
    # threshold, mean above the bound: needs pass_probability (0.9)
    _, (c,), _ = decide3([ev("threshold", 0.6, bound=0.5, n=n, mean=0.55, sd=sd)])
    assert c.more_examples == math.ceil(n * (stats.norm.ppf(0.9) * sd / 0.05) ** 2 - n)
    # threshold, mean below: needs fail_probability (0.75)
    _, (c,), _ = decide3([ev("threshold", 0.4, bound=0.5, n=n, mean=0.45, sd=sd)])
    assert c.more_examples == math.ceil(n * (stats.norm.ppf(0.75) * sd / 0.05) ** 2 - n)
    # regression, difference above -tolerance: needs 1 - max_regression_probability (0.9)
    _, (c,), _ = decide3([ev("regression", 0.3, bound=-0.05, n=n, mean=0.0, sd=sd)])
    assert c.more_examples == math.ceil(n * (stats.norm.ppf(0.9) * sd / 0.05) ** 2 - n)
    # efficiency, ratio above its bound (the bad side): needs fail_probability (0.75)
    _, (c,), _ = decide3([ev("efficiency", 0.5, bound=1.2, n=n, mean=1.25, sd=sd)])
    assert c.more_examples == math.ceil(n * (stats.norm.ppf(0.75) * sd / 0.05) ** 2 - n)
    # decided checks carry none
    _, (c,), _ = decide3([ev("threshold", 0.99, mean=0.9, sd=sd)])
    assert c.more_examples is None


def test_no_failure_counts_and_no_pair_is_undecided():
    # a "no failure" threshold with no scored example is undecided (issue 31: a judge that is down is no FAIL);
    # before, it failed
    _, checks, _ = decide3([ev("threshold", math.nan, bound=1.0, n=30, failures=0),
                           ev("threshold", math.nan, bound=1.0, n=30, failures=2),
                           ev("threshold", math.nan, bound=1.0, n=0, failures=0),
                           ev("regression", math.nan, bound=-0.05, n=0)])
    assert [c.state for c in checks] == ["met", "failed", "undecided", "undecided"]
    assert [c.failures for c in checks] == [0, 2, 0, None]
    assert checks[3].more_examples is None


def test_pass_fail_retry_and_their_reasons():
    met = ev("threshold", 0.95, mean=0.7, sd=0.05, metric="a")
    undecided = ev("regression", 0.5, bound=-0.05, mean=0.0, sd=0.1, metric="b")
    # 0.95: failed under Holm among the 3 checks (1 - 0.95 <= 0.25 / 3); 0.9 would fail alone, not in this family
    failed = ev("efficiency", 0.95, bound=1.2, mean=1.5, sd=0.1, metric="tokens")
    decision, checks, reasons = decide3([met])
    assert (decision, reasons) == ("PASS", ["all 1 checks met"])
    decision, checks, reasons = decide3([met, undecided])
    assert decision == "RETRY" and reasons == [checks[1].describe()]
    decision, checks, reasons = decide3([undecided, met, failed])
    assert decision == "FAIL" and reasons == [checks[2].describe(), checks[0].describe()]  # failed first
    assert [(c.kind, c.metric) for c in checks] == [("regression", "b"), ("threshold", "a"), ("efficiency", "tokens")]


def test_holm_step_down_over_the_family_and_none():
    # fail p-values 1 - P(regression): 0.005, 0.012, 0.03, 0.5 at alpha = 0.05, m = 4 (plus one met threshold: m = 5)
    lv = DecisionProbabilities(pass_probability=0.95, max_regression_probability=0.05, fail_probability=0.95)
    evidence = [ev("regression", p, bound=-0.05, mean=-0.2, sd=0.05, metric=f"r{i}", levels=lv)
                for i, p in enumerate([0.995, 0.988, 0.97, 0.5])]
    evidence.append(ev("threshold", 0.999, bound=0.5, mean=0.9, sd=0.05, metric="t", levels=lv))
    r = decide(evidence)
    # Holm, sorted: 0.005 <= 0.05/5, 0.012 <= 0.05/4, 0.03 > 0.05/3: stop
    assert [c.state for c in r.checks] == ["failed", "failed", "undecided", "undecided", "met"]
    assert r.family_size == 5 and r.decision == "FAIL" and r.kinds[:2] == ["failed", "failed"]
    assert [c.fail_at for c in r.checks[:3]] == pytest.approx([1 - 0.05 / 5, 1 - 0.05 / 4, 1 - 0.05 / 3])
    assert r.checks[4].fail_at == pytest.approx(0.05 / 1)  # the threshold's p 0.999 is last in the order
    none = decide(evidence, multiplicity="none")
    assert [c.state for c in none.checks] == ["failed", "failed", "failed", "undecided", "met"]


def test_a_look_decides_at_its_share_and_plans_at_the_next():
    lv = DecisionProbabilities(pass_probability=0.95, max_regression_probability=0.05, fail_probability=0.95)
    n, sd = 50, 0.04
    r = decide([ev("regression", 0.03, bound=-0.05, n=n, mean=0.02, sd=sd, levels=lv)], share=0.5, next_share=1 / 6)
    (c,) = r.checks
    assert c.state == "undecided" and c.met_at == pytest.approx(0.025) and c.fail_at == pytest.approx(1 - 0.025)
    z = stats.norm.ppf(1 - 0.05 / 6)
    assert c.more_examples == math.ceil(n * (z * sd / 0.07) ** 2 - n)
    assert decide([ev("regression", 0.02, bound=-0.05, mean=0.02, sd=sd, levels=lv)], share=0.5).decision == "PASS"
    r = decide([ev("regression", 0.03, bound=-0.05, mean=0.02, sd=sd, levels=lv)], share=0.5, next_share=None)
    assert r.checks[0].more_examples is None  # the plan is over: no number


def test_improved_but_still_below_threshold_is_a_retry_not_a_fail():
    below = ev("threshold", 0.01, bound=0.9, mean=0.8, sd=0.03, metric="g", p_better=0.99)
    failed = ev("threshold", 0.01, bound=0.9, mean=0.8, sd=0.03, metric="h", p_better=0.5)
    r = decide([below], improvement_probability=0.95)
    assert r.decision == "RETRY" and r.kinds == ["improved_below_threshold"]
    assert r.reasons[0].startswith("improved but still below threshold (P(better than the baseline) = 0.990)")
    assert r.checks[0].state == "failed"
    assert decide([below]).decision == "FAIL"  # without an improvement level: a plain failure
    r = decide([below, failed], improvement_probability=0.95)
    assert r.decision == "FAIL" and r.kinds == ["failed", "improved_below_threshold"]


def test_no_scored_example_and_missing_shares():
    r = decide([ev("threshold", math.nan, bound=0.95, n=0, note="no scored example (judge down?)"),
                ev("missing", math.nan, bound=0.05, n=40, value=0.10, note="4 of 40 missing"),
                ev("missing", math.nan, bound=0.05, n=40, value=-0.05, note="0 of 40 missing")])
    assert [c.state for c in r.checks] == ["undecided", "undecided", "met"]
    assert r.decision == "RETRY" and r.kinds == ["no_scored_example", "missing_differs"]
    assert r.reasons[0] == "m: no scored example (judge down?): undecided"
    assert r.family_size == 0

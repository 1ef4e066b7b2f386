"""The gate's decision rule (``agentstats.gating.decide.decide``) on hand-made evidence.

Expected states follow the documented levels (``docs/gate.md``: a threshold check is met at ``P >= pass_probability``
and failed at ``P <= 1 - fail_probability``; a regression or efficiency check is met at
``P <= max_regression_probability`` and failed at ``P >= fail_probability``), boundaries included; the examples that
would decide an undecided check are the normal-approximation ``N = n (z_p s / g)^2`` written out here.
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


def ev(kind, p, *, bound=0.5, n=20, mean=None, sd=None, failures=None, metric="m", stratum="all"):
    return Evidence(kind, metric, stratum, p, bound, True, n, LV, mean, sd, failures)


@pytest.mark.parametrize(("p", "state"), [(0.9, "met"), (0.95, "met"), (0.25, "failed"), (0.1, "failed"),
                                          (0.5, "undecided"), (0.26, "undecided")])
def test_threshold_states_at_and_between_the_levels(p, state):
    _, (check,), _ = decide([ev("threshold", p, mean=0.6, sd=0.1)])
    assert check.state == state


@pytest.mark.parametrize("kind", ["regression", "efficiency"])
@pytest.mark.parametrize(("p", "state"), [(0.1, "met"), (0.0, "met"), (0.75, "failed"), (0.99, "failed"),
                                          (0.5, "undecided")])
def test_regression_and_efficiency_states(kind, p, state):
    _, (check,), _ = decide([ev(kind, p, bound=-0.05, mean=0.0, sd=0.1)])
    assert check.state == state


def test_more_examples_on_the_side_the_estimate_is_on():
    n, sd = 20, 0.1
    # threshold, mean above the bound: needs pass_probability (0.9)
    _, (c,), _ = decide([ev("threshold", 0.6, bound=0.5, n=n, mean=0.55, sd=sd)])
    assert c.more_examples == math.ceil(n * (stats.norm.ppf(0.9) * sd / 0.05) ** 2 - n)
    # threshold, mean below: needs fail_probability (0.75)
    _, (c,), _ = decide([ev("threshold", 0.4, bound=0.5, n=n, mean=0.45, sd=sd)])
    assert c.more_examples == math.ceil(n * (stats.norm.ppf(0.75) * sd / 0.05) ** 2 - n)
    # regression, difference above -tolerance: needs 1 - max_regression_probability (0.9)
    _, (c,), _ = decide([ev("regression", 0.3, bound=-0.05, n=n, mean=0.0, sd=sd)])
    assert c.more_examples == math.ceil(n * (stats.norm.ppf(0.9) * sd / 0.05) ** 2 - n)
    # efficiency, ratio above its bound (the bad side): needs fail_probability (0.75)
    _, (c,), _ = decide([ev("efficiency", 0.5, bound=1.2, n=n, mean=1.25, sd=sd)])
    assert c.more_examples == math.ceil(n * (stats.norm.ppf(0.75) * sd / 0.05) ** 2 - n)
    # decided checks carry none
    _, (c,), _ = decide([ev("threshold", 0.99, mean=0.9, sd=sd)])
    assert c.more_examples is None


def test_no_failure_counts_and_no_pair_is_undecided():
    _, checks, _ = decide([ev("threshold", math.nan, bound=1.0, n=30, failures=0),
                           ev("threshold", math.nan, bound=1.0, n=30, failures=2),
                           ev("threshold", math.nan, bound=1.0, n=0, failures=0),
                           ev("regression", math.nan, bound=-0.05, n=0)])
    assert [c.state for c in checks] == ["met", "failed", "failed", "undecided"]
    assert [c.failures for c in checks] == [0, 2, 0, None]
    assert checks[3].more_examples is None


def test_pass_fail_retry_and_their_reasons():
    met = ev("threshold", 0.95, mean=0.7, sd=0.05, metric="a")
    undecided = ev("regression", 0.5, bound=-0.05, mean=0.0, sd=0.1, metric="b")
    failed = ev("efficiency", 0.9, bound=1.2, mean=1.5, sd=0.1, metric="tokens")
    decision, checks, reasons = decide([met])
    assert (decision, reasons) == ("PASS", ["all 1 checks met"])
    decision, checks, reasons = decide([met, undecided])
    assert decision == "RETRY" and reasons == [checks[1].describe()]
    decision, checks, reasons = decide([undecided, met, failed])
    assert decision == "FAIL" and reasons == [checks[2].describe(), checks[0].describe()]  # failed first
    assert [(c.kind, c.metric) for c in checks] == [("regression", "b"), ("threshold", "a"), ("efficiency", "tokens")]

"""Per-agent metric summaries: Dirichlet-process posterior means over tasks and the share of trials passing
(:mod:`agentstats.estimators.metric_means`), and a metric's pass counts (``records.counts.metric_counts``)."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from agentstats.estimators.metric_means import summarize_metrics
from agentstats.metrics import compute, get_metric
from agentstats.records.counts import metric_counts
from agentstats.records.trial import Trial


def _trials(rows):
    """rows: (agent, task, trial, [answers], expected)."""
    return [Trial(agent=a, task_id=t, trial=k, interactions=[{"answer": x, "expected_answer": e} for x in answers])
            for a, t, k, answers, e in rows]


def test_binary_metric_one_trial_per_task_is_the_beta_posterior():
    # 0/1 similarity values (exact match or no overlap): 7 of 10 tasks pass
    rows = [("A", f"t{i}", 0, ["paris" if i < 7 else "lyon"], "paris") for i in range(10)]
    f = compute(_trials(rows), "answer_similarity")
    s = summarize_metrics(f, n_draws=40_000).iloc[0]
    beta = stats.beta(1 + 7, 1 + 3)  # prior mass 2 split on 0 and 1: Beta(1, 1)
    assert s["mean"] == pytest.approx(beta.mean(), abs=0.003)
    assert s["ci_low"] == pytest.approx(beta.ppf(0.025), abs=0.006)
    assert s["ci_high"] == pytest.approx(beta.ppf(0.975), abs=0.006)
    assert s["n_tasks"] == 10 and s["share_passed"] == pytest.approx(0.7)


def test_unbounded_metric_is_the_bayesian_bootstrap_over_task_means():
    lat = {"t1": [1.0, 3.0], "t2": [10.0], "t3": [4.0], "t4": [6.0]}  # task means 2, 10, 4, 6
    trials = [Trial(agent="A", task_id=t, trial=k, interactions=[{"answer": "x", "usage": {"latency_s": v}}])
              for t, vs in lat.items() for k, v in enumerate(vs)]
    s = summarize_metrics(compute(trials, "latency"), n_draws=200_000).iloc[0]
    y = np.array([2.0, 10.0, 4.0, 6.0])
    # Rubin (1981): mean ybar, variance sum (y - ybar)^2 / (T (T + 1))
    assert s["mean"] == pytest.approx(y.mean(), abs=0.02)
    assert s["sd"] == pytest.approx(np.sqrt(((y - y.mean()) ** 2).sum() / (4 * 5)), rel=0.01)
    assert s["ci_low"] > y.min() and s["ci_high"] < y.max()
    assert np.isnan(s["share_passed"]) and s["share_ci_method"] is None  # latency has no default threshold


def test_tasks_weigh_equally_whatever_their_trials():
    rows = [("A", "t1", k, ["paris"], "paris") for k in range(9)] + [("A", "t2", 0, ["lyon"], "paris")]
    s = summarize_metrics(compute(_trials(rows), "answer_similarity"), prior_strength=0.0, n_draws=50_000).iloc[0]
    assert s["mean"] == pytest.approx(0.5, abs=0.01)


def test_metric_counts_trial_passes_only_when_every_turn_passes():
    rows = [
        ("A", "t1", 0, ["paris", "paris"], "paris"),  # pass
        ("A", "t1", 1, ["paris", "lyon"], "paris"),  # one turn fails -> fail
        ("A", "t1", 2, ["", " "], "paris"),  # nothing applicable -> missing
        ("A", "t2", 0, ["lyon"], "paris"),
    ]
    f = compute(_trials(rows), "answer_similarity")
    c = metric_counts(f, "answer_similarity")
    assert c.to_dict("records") == [
        {"agent": "A", "task_id": "t1", "n": 2, "c": 1, "n_missing": 1},
        {"agent": "A", "task_id": "t2", "n": 1, "c": 0, "n_missing": 0},
    ]
    s = summarize_metrics(f).iloc[0]
    assert s["share_passed"] == pytest.approx((1 / 2 + 0) / 2)
    assert s["n_trials_passed_known"] == 3
    with pytest.raises(ValueError, match="not in the frame"):
        metric_counts(f, "ndcg")


def test_summary_not_applicable_metric_and_bad_arguments():
    f = compute(_trials([("A", "t1", 0, ["x"], None)]), ["answer_similarity", get_metric("latency")])
    s = summarize_metrics(f).set_index("metric")
    assert s.loc["answer_similarity", "n_tasks"] == 0 and np.isnan(s.loc["answer_similarity", "mean"])
    with pytest.raises(ValueError, match="ci_prob"):
        summarize_metrics(f, ci_prob=1.0)
    assert isinstance(summarize_metrics(f.iloc[0:0]), pd.DataFrame)


def test_report_metric_section_per_risk_level_against_beta_posteriors_and_counts():
    """The report's metric table: per agent and risk level, the conjugate Beta mean and the share passing."""
    from agentstats.estimators.metric_means import summarize_metrics_by_risk
    from agentstats.report.plots import plot_metric_summary
    from agentstats.report.tables import format_metric_summary

    # 0/1 similarity values, one trial per task: high risk 2 of 5 tasks pass, low risk 6 of 8
    trials = [Trial(agent="A <b>", task_id=f"h{i}", trial=0, risk_level="high",
                    interactions=[{"answer": "paris" if i < 2 else "lyon", "expected_answer": "paris"}])
              for i in range(5)]
    trials += [Trial(agent="A <b>", task_id=f"l{i}", trial=0, risk_level="low",
                     interactions=[{"answer": "paris" if i < 6 else "lyon", "expected_answer": "paris"}])
               for i in range(8)]
    frame = compute(trials, "answer_similarity")
    s = summarize_metrics_by_risk(frame, n_draws=40_000)
    assert list(s["risk_level"]) == ["all", "high", "low"]
    for level, c, n in (("all", 8, 13), ("high", 2, 5), ("low", 6, 8)):
        row = s[s["risk_level"] == level].iloc[0]
        beta = stats.beta(1 + c, 1 + n - c)
        assert row["mean"] == pytest.approx(beta.mean(), abs=0.004)
        assert row["ci_low"] == pytest.approx(beta.ppf(0.025), abs=0.008)
        assert row["ci_high"] == pytest.approx(beta.ppf(0.975), abs=0.008)
        assert row["share_passed"] == pytest.approx(c / n)  # threshold 0.5: the exact matches pass
        assert row["n_tasks"] == n
    table = format_metric_summary(s, frame.attrs["metrics"])
    assert table.index.names == ["agent", "risk level", "metric"]
    high = table.loc[("A <b>", "high", "answer_similarity")]
    beta = stats.beta(3, 4)
    lo, hi = s.loc[s["risk_level"] == "high", ["ci_low", "ci_high"]].iloc[0]
    assert high["mean [CI]"] == f"{s.loc[1, 'mean']:.3f} [{lo:.3f}, {hi:.3f}]"
    assert abs(float(high["mean [CI]"].split()[0]) - beta.mean()) < 0.005
    assert high["threshold"] == "≥ 0.5" and high["share passing [CI]"].startswith("0.400 [")
    assert high["trials"] == 5 and high["tasks"] == 5
    fig = plot_metric_summary(s, frame.attrs["metrics"])
    assert [ax.get_title() for ax in fig.axes if ax.get_title()] == ["answer_similarity"]


def test_report_metric_table_formats_each_scale_and_keeps_metrics_without_values():
    from agentstats.estimators.metric_means import summarize_metrics
    from agentstats.report.tables import format_metric_summary

    trials = [Trial(agent="B", task_id=f"t{i}", trial=0,
                    interactions=[{"answer": "x",
                                   "usage": {"latency_s": 1000.0 + 500 * i, "cost_usd": 0.0004 * (i + 1)}}])
              for i in range(4)]
    frame = compute(trials, "latency,cost,answer_similarity")
    s = summarize_metrics(frame)
    t = format_metric_summary(s, frame.attrs["metrics"])
    assert t.index.names == ["agent", "metric"]  # no risk levels in the data
    lat = s[s["metric"] == "latency"].iloc[0]
    assert t.loc[("B", "latency"), "mean [CI]"] == "{:,.0f} [{:,.0f}, {:,.0f}]".format(
        lat["mean"], lat["ci_low"], lat["ci_high"])
    cost = s[s["metric"] == "cost"].iloc[0]
    assert t.loc[("B", "cost"), "mean [CI]"] == f"{cost['mean']:.5f} [{cost['ci_low']:.5f}, {cost['ci_high']:.5f}]"
    assert t.loc[("B", "answer_similarity"), "mean [CI]"] == "not applicable"  # no expected answer
    assert t.loc[("B", "latency"), "threshold"] == "—" and t.loc[("B", "latency"), "share passing [CI]"] == "—"


def test_summary_with_intervals_joins_the_counts_and_the_posterior_at_ci_prob():
    """What `agentstats score --metrics` prints (was assembled in the command): the same Beta posterior as above."""
    from agentstats.metrics import summarize_with_intervals

    rows = [("A", f"t{i}", 0, ["paris" if i < 7 else "lyon"], "paris") for i in range(10)]
    s = summarize_with_intervals(compute(_trials(rows), "answer_similarity"), ci_prob=0.8).iloc[0]
    beta = stats.beta(1 + 7, 1 + 3)
    assert (s["agent"], s["metric"], s["n"], s["n_applicable"], s["n_judge_missing"], s["n_tasks"]) == (
        "A", "answer_similarity", 10, 10, 0, 10)
    assert s["ci_prob"] == 0.8 and s["mean"] == pytest.approx(beta.mean(), abs=0.005)
    assert s["ci_low"] == pytest.approx(beta.ppf(0.1), abs=0.01) and s["ci_high"] == pytest.approx(beta.ppf(0.9),
                                                                                                      abs=0.01)
    assert s["share_passed"] == pytest.approx(0.7) and s["n_passed_known"] == 10


def test_judge_missing_over_counts_a_metric_over_all_agents():
    from agentstats.metrics import judge_missing_over

    summary = pd.DataFrame({"agent": ["A", "B", "A", "B"], "metric": ["harm", "harm", "faith", "faith"],
                            "n_judge_missing": [3, 0, 1, 0], "n_applicable": [1, 4, 9, 10]})
    # harm: 3 missing of 8 asked (37.5%); faith: 1 of 20 (5%)
    assert judge_missing_over(summary, 0.3) == ["harm 3 of 8 (37.5%)"]
    assert judge_missing_over(summary, 0.04) == ["harm 3 of 8 (37.5%)", "faith 1 of 20 (5.0%)"]
    assert judge_missing_over(summary, 0.5) == [] and judge_missing_over(summary.iloc[:0], 0.0) == []


def test_fewer_than_two_distinct_task_means_give_no_interval_and_say_why():
    # one task with trials of 1, 2 and 3 s: the spread between tasks is not observed (issue 31: it printed 2 [2, 2])
    one = [Trial(agent="A", task_id="t1", trial=k, interactions=[{"answer": "x", "usage": {"latency_s": v}}])
           for k, v in enumerate([1.0, 2.0, 3.0])]
    s = summarize_metrics(compute(one, "latency")).iloc[0]
    assert s["mean"] == pytest.approx(2.0) and np.isnan(s["ci_low"]) and np.isnan(s["ci_high"]) and np.isnan(s["sd"])
    assert s["ci_note"].startswith("one task (3 values)")
    from agentstats.report.tables import format_metric_summary

    shown = format_metric_summary(summarize_metrics(compute(one, "latency"))).iloc[0]["mean [CI]"]
    assert shown == "2.000 (no interval: fewer than two distinct task means)"
    # three tasks with the same mean
    same = [Trial(agent="A", task_id=f"t{i}", trial=0, interactions=[{"answer": "x", "usage": {"latency_s": 2.0}}])
            for i in range(3)]
    s = summarize_metrics(compute(same, "latency")).iloc[0]
    assert np.isnan(s["ci_low"]) and s["ci_note"].startswith("all 3 tasks have the same mean (2)")
    # two distinct task means: an interval of positive width, no note
    two = [*same, Trial(agent="A", task_id="t9", trial=0, interactions=[{"answer": "x", "usage": {"latency_s": 4.0}}])]
    s = summarize_metrics(compute(two, "latency")).iloc[0]
    assert s["ci_high"] > s["ci_low"] and s["ci_note"] is None
    # a bounded metric keeps its prior atoms: one task still has an interval
    rows = [("A", "t0", 0, ["paris"], "paris")]
    s = summarize_metrics(compute(_trials(rows), "answer_similarity")).iloc[0]
    assert s["ci_high"] > s["ci_low"] and s["ci_note"] is None

"""Tests for the suite table and its written reading (agentstats.report.tables.format_suite_table / prose.read_suite).

Which agent is better must follow the paired differences, never the overlap of the separate intervals; the interval
probability in the text follows ci_prob; every value shows the tasks behind it.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from agentstats.estimators import paired_pass_k_table, suite_pass_k
from agentstats.report.prose import read_suite, report_summary
from agentstats.report.tables import format_suite_table

FIXTURES = Path(__file__).resolve().parents[1] / "data"


def _one_trial(solved: dict[str, set[int]], n_tasks: int) -> pd.DataFrame:
    rows = [(agent, f"t{i:02d}", 1, int(i in s)) for agent, s in solved.items() for i in range(n_tasks)]
    return pd.DataFrame(rows, columns=["agent", "task_id", "n", "c"])


def test_better_agent_follows_the_paired_difference_even_when_intervals_overlap():
    # B solves tasks 0-19 of 40, A the same plus 20-25: the separate intervals overlap, the paired one does not
    counts = _one_trial({"A": set(range(26)), "B": set(range(20))}, 40)
    suite = suite_pass_k(counts, n_boot=2000, random_seed=1)
    a, b = suite.set_index("agent").loc["A"], suite.set_index("agent").loc["B"]
    assert a.pass_hat_k_ci_low <= b.pass_hat_k_ci_high  # marginal intervals overlap
    paired = paired_pass_k_table(counts, n_boot=2000, random_seed=1)
    assert paired.pass_hat_k_diff_ci_low.iloc[0] > 0
    text = read_suite(suite, paired=paired)
    assert "**A** is the best agent at k = 1" in text
    assert "+0.15, 95% paired interval" in text and "exact McNemar p = 0.0312" in text
    assert "overlap" not in text


def test_no_best_agent_without_paired_evidence():
    # A and B are close (paired interval includes 0); C is clearly behind both
    counts = _one_trial({"A": set(range(20)), "B": set(range(1, 20)) | {30}, "C": set(range(3))}, 40)
    suite = suite_pass_k(counts, n_boot=1000)
    paired = paired_pass_k_table(counts, n_boot=1000)
    text = read_suite(suite, paired=paired)
    assert "best agent" not in text
    assert "No agent is shown to be the best at k = 1" in text and "**B**" in text
    assert "**B** above **C**" in text  # a pair the paired differences do separate
    # without a paired table nothing is called better, whatever the marginal intervals say
    bare = read_suite(suite)
    assert "best agent" not in bare and "not settled" in bare and "paired_pass_k_table" in bare
    # a single agent is described, not ranked
    one = read_suite(suite[suite.agent == "A"])
    assert "succeeds on this share of tasks" in one and "best" not in one


def test_interval_probability_follows_ci_prob():
    counts = _one_trial({"A": set(range(26)), "B": set(range(20))}, 40)
    suite = suite_pass_k(counts, n_boot=500, ci_prob=0.9)
    paired = paired_pass_k_table(counts, n_boot=500, ci_prob=0.9)
    text = read_suite(suite, paired=paired)
    assert "95%" not in text and "90% interval" in text and "90% paired interval" in text
    assert "90% task-cluster bootstrap intervals" in text
    table = format_suite_table(suite)
    assert "pass@k 90% CI" in table.columns and "pass^k 90% CI" in table.columns
    assert not any("95%" in c for c in table.columns)
    odd = format_suite_table(suite_pass_k(counts, n_boot=100, ci_prob=0.975))
    assert "pass^k 97.5% CI" in odd.columns


def test_table_and_reading_show_the_tasks_behind_each_value():
    counts = pd.read_csv(FIXTURES / "metr_counts.csv")
    suite = suite_pass_k(counts, k=[1, 8], n_boot=200)
    table = format_suite_table(suite)
    davinci = table.loc[("davinci-002", 1)]
    # 16 tasks used, none with 1 <= n < 1, 67 never run: 16 + 0 + 67 = 83
    assert davinci["tasks"] == "16/83" and davinci["n < k"] == 0 and davinci["no usable trial"] == 67
    assert "under half of the tasks" in davinci["note"]
    assert "boundary interval" in davinci["note"]  # all 16 tasks at 0: Clopper-Pearson
    opus = table.loc[("Claude 3 Opus", 8)]
    assert opus["tasks"] == "78/83" and opus["note"] == "" and opus["n < k"] == 5 and opus["no usable trial"] == 0
    text = read_suite(suite)
    assert "pass^8 rests on 7 of 83 tasks -- under half of the tasks" in text  # GPT-4 0314
    assert "**davinci-002**: no task with 8 usable trials" in text
    assert "**davinci-002** 67" in text  # tasks without a usable trial
    assert "Clopper-Pearson" in text


def test_agents_without_shared_tasks_are_not_ranked():
    rows = [("A", "t1", 3, 1), ("A", "t2", 3, 3), ("Z", "t3", 2, 0)]
    counts = pd.DataFrame(rows, columns=["agent", "task_id", "n", "c"])
    text = read_suite(suite_pass_k(counts, n_boot=100), paired=paired_pass_k_table(counts, n_boot=100))
    assert "**Z** (no shared task with 1+ trials)" in text and "nan" not in text
    assert "is the best agent" not in text


def _cells(rows: list[tuple[str, str, int, int]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["agent", "task_id", "n", "c"]).assign(n_missing=0)


def test_a_tie_at_the_top_is_called_a_tie():
    # one trial per task; A solves t0-t2, B t1-t3: both pass^1 = 3/4
    counts = _one_trial({"A": {0, 1, 2}, "B": {1, 2, 3}}, 4)
    suite = suite_pass_k(counts, n_boot=200, random_seed=0)
    text = read_suite(suite, paired=paired_pass_k_table(counts, n_boot=200, random_seed=0))
    assert "every agent has the same estimate, pass^1 = 0.75" in text
    assert "has the highest estimate" not in text
    # A and B tie at 3/4 above C at 1/4: the tied ones are named, the third is not
    counts = _one_trial({"A": {0, 1, 2}, "B": {1, 2, 3}, "C": {0}}, 4)
    text = read_suite(suite_pass_k(counts, n_boot=200, random_seed=0))
    assert "**A** and **B** share the highest estimate, pass^1 = 0.75" in text
    assert "has the highest estimate" not in text and "**C** [" not in text
    # every trial fails: a tie at 0, never "A has the highest estimate, pass^1 = 0.00"
    zero = _cells([(a, f"t{i}", 5, 0) for a in "AB" for i in range(4)])
    text = read_suite(suite_pass_k(zero, k=[1, 5], n_boot=200, random_seed=0))
    assert "every agent has the same estimate, pass^1 = 0.00" in text and "highest" not in text


def test_summary_says_less_often_only_where_pass_k_is_below_pass_1():
    zero = _cells([(a, f"t{i}", 5, 0) for a in "AB" for i in range(4)])
    text = report_summary(zero, suite_pass_k(zero, k=[1, 5], n_boot=200, random_seed=0))
    assert "less often" not in text and "0.00 to 0.00" not in text
    assert ("pass^5 is no lower than pass^1: pass^5, the share of tasks solved in every one of 5 tries, is 0.00 for "
            "every agent.") in text
    # A: n = 2, c = 1 on two tasks: pass^1 = 1/2, pass^2 = C(1,2)/C(2,2) = 0; B: c = 2 and 0: pass^2 = 1/2 = pass^1
    counts = _cells([("A", "t1", 2, 1), ("A", "t2", 2, 1), ("B", "t1", 2, 2), ("B", "t2", 2, 0)])
    text = report_summary(counts, suite_pass_k(counts, k=[1, 2], n_boot=200, random_seed=0))
    assert ("Succeeding in all 2 tries: pass^2, the share of tasks solved in every one of 2 tries, runs across "
            "agents from 0.00 (**A**) to 0.50 (**B**); it is below pass^1 for **A**, not below it for **B**") in text
    below = _cells([("A", "t1", 2, 1), ("A", "t2", 2, 1), ("B", "t1", 2, 1), ("B", "t2", 2, 2)])
    text = report_summary(below, suite_pass_k(below, k=[1, 2], n_boot=200, random_seed=0))
    # B: pass^1 = (1/2 + 1) / 2 = 0.75, pass^2 = (0 + 1) / 2 = 0.5
    assert ("Succeeding in all 2 tries is rarer than in one try: pass^2, the share of tasks solved in every one of "
            "2 tries, runs across agents from 0.00 (**A**) to 0.50 (**B**).") in text


def test_summary_and_table_say_when_agents_average_different_tasks():
    # t5 only for A: A over 5 tasks, B over 4; B's missing task is "no usable trial", not "n < k"
    rows = [(a, f"t{i}", 5, c) for a, cs in (("A", [5, 3, 0, 1, 2]), ("B", [4, 2, 1, 0])) for i, c in enumerate(cs)]
    counts = _cells(rows)
    suite = suite_pass_k(counts, k=[1, 5], n_boot=200, random_seed=0)
    text = report_summary(counts, suite)
    assert "different tasks per agent (**A** over 5; **B** over 4 tasks; 4 tasks in common)" in text
    table = format_suite_table(suite)
    b1 = table.loc[("B", 1)]
    assert b1["tasks"] == "4/5" and b1["n < k"] == 0 and b1["no usable trial"] == 1
    assert table.loc[("A", 5), "no usable trial"] == 0
    assert "different tasks" not in report_summary(counts[counts.task_id != "t4"], suite)
    # the same number of tasks, not the same ones
    other = _cells([("A", "t1", 2, 1), ("A", "t2", 2, 1), ("B", "t1", 2, 1), ("B", "t3", 2, 1)])
    assert "(every agent over 2 tasks, not the same ones; 1 task in common)" in report_summary(
        other, suite_pass_k(other, n_boot=100, random_seed=0))


def test_the_pass_hat_k_sentence_says_over_which_tasks_each_value_is_taken():
    """At k = 5 only tasks with 5 trials count: A over all 4, B over 2 of them (its others have 2 trials)."""
    rows = [("A", f"t{i}", 5, c) for i, c in enumerate([5, 4, 3, 5])]
    rows += [("B", "t0", 5, 5), ("B", "t1", 5, 2), ("B", "t2", 2, 1), ("B", "t3", 2, 2)]
    counts = _cells(rows)
    text = report_summary(counts, suite_pass_k(counts, k=[1, 5], n_boot=200, random_seed=0))
    assert "(each agent over its tasks with at least 5 trials: 2 to 4 of 4, so not over the same tasks)" in text
    even = _cells([(a, f"t{i}", 5, c) for a in "AB" for i, c in enumerate([5, 4, 3])])
    assert "tasks with at least 5 trials" not in report_summary(
        even, suite_pass_k(even, k=[1, 5], n_boot=200, random_seed=0))


def test_uneven_task_sets_name_the_agents_whose_counts_differ():
    """11 agents, 9 over all 4 tasks, two over fewer (METR-like): those two are named, not the first six by name."""
    rows = [(f"a{i:02d}", f"t{t}", 1, 1) for i in range(9) for t in range(4)]
    rows += [("z-short", "t0", 1, 1), ("z-short", "t1", 1, 0), ("y-mid", "t0", 1, 1), ("y-mid", "t1", 1, 1),
             ("y-mid", "t2", 1, 0)]
    counts = _cells(rows)
    text = report_summary(counts, suite_pass_k(counts, k=[1], n_boot=100, random_seed=0))
    assert "(9 agents over 4; **z-short** over 2; **y-mid** over 3 tasks; 2 tasks in common)" in text, text


def test_reading_names_pairs_separated_at_larger_k():
    # 10 tasks, 2 trials each. A: c = 2 on t0-t4, 0 on t5-t9 (pass^1 = pass^2 = 1/2); B: c = 1 everywhere
    # (pass^1 = 1/2, pass^2 = 0). Per-task A - B: at k = 1 +-1/2 (mean 0), at k = 2 1 or 0 (mean +1/2, never <= 0
    # unless a resample draws only t5-t9)
    rows = [("A", f"t{i}", 2, 2 if i < 5 else 0) for i in range(10)] + [("B", f"t{i}", 2, 1) for i in range(10)]
    counts = _cells(rows)
    suite = suite_pass_k(counts, k=[1, 2], n_boot=500, random_seed=0)
    paired = paired_pass_k_table(counts, k=[1, 2], n_boot=500, random_seed=0)
    text = read_suite(suite, paired=paired)
    assert "No agent is shown to be the best at k = 1" in text
    assert "At larger k, paired differences that exclude 0" in text
    assert "pass^2: **A** above **B** (+0.50, 95% paired interval [" in text
    # only k = 1 given: nothing said about larger k
    assert "At larger k" not in read_suite(suite, paired=paired[paired.k == 1])


def test_unsettled_pairs_read_as_one_grammatical_sentence():
    # one unsettled rival: singular; B and C both within noise of A: "each of B (...) and C (...) are"
    counts = _one_trial({"A": set(range(20)), "B": set(range(1, 20)) | {30}, "C": set(range(3))}, 40)
    one = read_suite(suite_pass_k(counts, n_boot=1000), paired=paired_pass_k_table(counts, n_boot=1000))
    assert "the paired difference between **A** and **B** (" in one
    assert ") is not clearly above 0, so these data do not settle which is better." in one
    counts = _one_trial({"A": set(range(20)), "B": set(range(1, 21)), "C": set(range(2, 21)) | {35}}, 40)
    two = read_suite(suite_pass_k(counts, n_boot=1000), paired=paired_pass_k_table(counts, n_boot=1000))
    leader = two.split("paired differences between **")[1].split("**")[0]
    rivals = sorted({"A", "B", "C"} - {leader})
    assert f"the paired differences between **{leader}** and each of **{rivals[0]}** (" in two
    assert f") and **{rivals[1]}** (" in two and ") are not clearly above 0" in two
    assert "), **" not in two  # no bare comma list of pairs


def test_tasks_left_out_at_some_k_are_named_in_prose_not_as_a_python_list():
    def counts_with(n_short: int) -> pd.DataFrame:
        # tasks t00-t09 with 6 trials, t10-t11 with n_short trials
        rows = [("A", f"t{i:02d}", 6 if i < 10 else n_short, 3 if i < 10 else 1) for i in range(12)]
        return pd.DataFrame(rows, columns=["agent", "task_id", "n", "c"])

    for n_short, ks, said in (
        (4, [1, 5], "For k = 5, some tasks"),  # dropped at k = 5 only
        (3, [1, 4, 5], "For k = 4 and 5, some tasks"),
        (2, [1, 3, 4, 5], "For k from 3 to 5, some tasks"),
        (1, [1, 2, 4, 6], "For k = 2, 4 and 6, some tasks"),
    ):
        text = read_suite(suite_pass_k(counts_with(n_short), k=ks, n_boot=0))
        assert said in text, (ks, text)
        assert "[" not in text.split("some tasks had fewer")[0].split("For k")[-1]

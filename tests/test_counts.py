"""to_counts: outcomes -> (agent, task_id, n, c, n_missing), with the field's edge cases.

Expected values are written by hand from the outcome rules of ``shared/design/architecture.md``.
"""

from __future__ import annotations

import pandas as pd
import pytest

from agentstats.counts import COUNTS_COLUMNS, to_counts
from agentstats.io.loaders import TrialSet
from agentstats.schema import Trial


def T(agent="a", task="t", trial=0, **kw) -> Trial:
    return Trial(agent=agent, task_id=task, trial=trial, **kw)


def row(df: pd.DataFrame, agent: str, task: str) -> dict:
    sel = df[(df.agent == agent) & (df.task_id == task)]
    assert len(sel) == 1, (agent, task, df)
    return {k: int(sel.iloc[0][k]) for k in ("n", "c", "n_missing")}


def test_columns_dtypes_and_sorting():
    trials = [
        T("b", "t2", 0, success=True),
        T("a", "t1", 0, success=False),
        T("b", "t1", 0, success=True),
        T("a", "t1", 1, success=True),
    ]
    df = to_counts(trials)
    assert tuple(df.columns) == COUNTS_COLUMNS == ("agent", "task_id", "n", "c", "n_missing")
    assert [str(df[c].dtype) for c in ("n", "c", "n_missing")] == ["int64"] * 3
    assert list(zip(df.agent, df.task_id, strict=True)) == [("a", "t1"), ("b", "t1"), ("b", "t2")]
    assert row(df, "a", "t1") == {"n": 2, "c": 1, "n_missing": 0}
    assert list(df.index) == [0, 1, 2]


def test_three_recorded_of_four_is_not_a_failure():
    # planned 4 trials; only 3 were recorded (all successes): n = 3, c = 3, no phantom failure
    df = to_counts([T(trial=i, success=True) for i in range(3)])
    assert row(df, "a", "t") == {"n": 3, "c": 3, "n_missing": 0}
    # the fourth recorded as an infra error is missing, not a failure
    df = to_counts([T(trial=i, success=True) for i in range(3)] + [T(trial=3, status="infra_error")])
    assert row(df, "a", "t") == {"n": 3, "c": 3, "n_missing": 1}


def test_partial_rewards_count_one_success_not_two():
    trials = [T(trial=i, reward=r) for i, r in enumerate([0.5, 0.5, 1.0, 0.0])]
    assert row(to_counts(trials), "a", "t") == {"n": 4, "c": 1, "n_missing": 0}


def test_reward_tolerance_and_success_precedence():
    trials = [
        T(trial=0, reward=1 - 1e-7),  # within 1e-6: success
        T(trial=1, reward=1 - 1e-5),  # outside: failure
        T(trial=2, success=False, reward=1.0),  # a given success wins over reward
        T(trial=3, success=True, reward=0.0),
    ]
    assert row(to_counts(trials), "a", "t") == {"n": 4, "c": 2, "n_missing": 0}


def test_agent_errors_fail_infra_errors_are_missing():
    trials = [
        T(trial=0, status="agent_error"),
        T(trial=1, status="agent_error", success=True),  # agent_error wins: a failure
        T(trial=2, status="infra_error", success=True),  # infra_error wins: missing
        T(trial=3, success=True),
    ]
    assert row(to_counts(trials), "a", "t") == {"n": 3, "c": 1, "n_missing": 1}


def test_judge_missing_is_missing():
    trials = [T(trial=0, judge_missing=True), T(trial=1, success=True)]
    assert row(to_counts(trials), "a", "t") == {"n": 1, "c": 1, "n_missing": 1}


def test_all_missing_cell_has_n_zero():
    trials = [T(task="x", trial=i, status="infra_error") for i in range(2)] + [T(task="y", success=True)]
    df = to_counts(trials)
    assert row(df, "a", "x") == {"n": 0, "c": 0, "n_missing": 2}
    assert row(df, "a", "y") == {"n": 1, "c": 1, "n_missing": 0}


def test_unscored_trials_raise_naming_them():
    trials = [T(trial=0, success=True)] + [T(task=f"u{i}", trial=0) for i in range(7)]
    with pytest.raises(ValueError) as ei:
        to_counts(trials)
    msg = str(ei.value)
    assert "7 trial(s) have no outcome" in msg
    assert "('a', 'u0', 0)" in msg and "('a', 'u4', 0)" in msg
    assert "('a', 'u5', 0)" not in msg  # only the first few are named
    assert "score" in msg


def test_duplicate_keys_raise():
    with pytest.raises(ValueError, match=r"repeat an \(agent, task_id, trial\) key.*\('a', 't', 0\)"):
        to_counts([T(success=True), T(success=False)])


def test_non_trial_raises_type_error():
    with pytest.raises(TypeError, match="element 1 is dict"):
        to_counts([T(success=True), {"agent": "a"}])


def test_empty_input_gives_empty_table():
    df = to_counts([])
    assert tuple(df.columns) == COUNTS_COLUMNS and len(df) == 0
    assert [str(df[c].dtype) for c in ("n", "c", "n_missing")] == ["int64"] * 3


def test_matches_a_brute_force_tally():
    # 3 agents x 5 tasks x varying trials with mixed outcomes, tallied independently below
    import numpy as np

    rng = np.random.default_rng(12345)
    trials, tally = [], {}
    for a in ("x", "y", "z"):
        for t in range(5):
            for i in range(int(rng.integers(1, 7))):
                kind = rng.choice(["s", "f", "m", "e", "r"])
                kw = {
                    "s": {"success": True},
                    "f": {"success": False},
                    "m": {"status": "infra_error"},
                    "e": {"status": "agent_error"},
                    "r": {"reward": float(rng.choice([0.0, 0.5, 1.0]))},
                }[kind]
                trials.append(T(a, f"task{t}", i, **kw))
                n, c, m = tally.get((a, f"task{t}"), (0, 0, 0))
                succ = kind == "s" or (kind == "r" and kw["reward"] == 1.0)
                tally[(a, f"task{t}")] = (n + (kind != "m"), c + succ, m + (kind == "m"))
    rng.shuffle(trials)
    df = to_counts(trials)
    got = {(r.agent, r.task_id): (r.n, r.c, r.n_missing) for r in df.itertuples()}
    assert got == tally


def test_trialset_to_counts():
    ts = TrialSet([T(success=True), T(trial=1, success=False)], source="x", format="jsonl")
    pd.testing.assert_frame_equal(ts.to_counts(), to_counts(list(ts)))

"""to_counts: outcomes -> (agent, task_id, n, c, n_missing), with the field's edge cases.

Expected values are written by hand from the outcome rules of ``shared/design/architecture.md``.
"""

from __future__ import annotations

import pandas as pd
import pytest

from agentstats.io.loaders import TrialSet
from agentstats.records.counts import COUNTS_COLUMNS, to_counts
from agentstats.records.trial import Trial


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
    assert "7 trials have no outcome" in msg
    assert "('a', 'u0', 0)" in msg and "('a', 'u4', 0)" in msg
    assert "('a', 'u5', 0)" not in msg  # only the first few are named
    assert "score" in msg


def test_duplicate_keys_raise():
    with pytest.raises(ValueError, match=r"1 trial repeats an \(agent, task_id, trial\) key.*\('a', 't', 0\)"):
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


# ---------------------------------------------------------------- one counts schema, one validator


def test_counts_frame_takes_numpy_arrays():
    import numpy as np

    from agentstats.records.counts import counts_frame

    df = counts_frame(np.array(["b", "a"]), np.array(["t", "t"]), np.array([2, 3]), np.array([1, 0]), np.zeros(2))
    assert list(df.itertuples(index=False, name=None)) == [("a", "t", 3, 0, 0), ("b", "t", 2, 1, 0)]
    assert [str(df[c].dtype) for c in ("n", "c", "n_missing")] == ["int64"] * 3


@pytest.mark.parametrize("big", [2**63, 2**63 - 1 + 10, 10**30])
def test_counts_beyond_int64_are_reported_not_wrapped(big):
    import warnings

    from agentstats.records.counts import COUNT_MAX, validate_counts

    df = pd.DataFrame({"agent": ["a", "a"], "task_id": ["t1", "t2"], "n": [4, big], "c": [1, 1]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy overflow warning on the way
        with pytest.raises(ValueError) as ei:
            validate_counts(df, "f")
    msg = str(ei.value)
    assert f"row 1 (agent='a', task_id='t2'): field 'n' = {big} is not a non-negative integer" in msg
    assert f"beyond {COUNT_MAX:,}" in msg
    assert "-9223372036854775808" not in msg
    # the largest int64 itself is a valid count
    ok = validate_counts(df.assign(n=[4, COUNT_MAX]).astype({"n": "int64"}))
    assert ok.n.iloc[1] == COUNT_MAX


def test_check_counts_lists_every_problem_by_position():
    from agentstats.records.counts import check_counts

    df = pd.DataFrame(
        {
            "agent": ["a", "a", None, "a", "a", "a"],
            "task_id": ["t1", "t2", "t3", "t1", "t4", "t5"],
            "n": [3, 2, 1, 3, True, float("nan")],
            "c": [1, 3, 0, 1, 0, 0],
        },
    ).astype({"n": object})
    check = check_counts(df)
    got = [(p.position, p.column, p.kind) for p in check.problems]
    assert got == [
        (1, "c", "c_gt_n"),
        (2, "agent", "missing"),
        (3, "(agent, task_id)", "duplicate"),
        (4, "n", "not_count"),
        (5, "n", "missing"),
    ]
    assert check.problems[2].first == 0
    assert list(check.counts.itertuples(index=False, name=None)) == [("a", "t1", 3, 1, 0)]


def test_grid_gaps_name_absent_trials():
    trials = [T("a", "t1", i, success=True) for i in range(4)]
    trials += [T("a", "t2", i, success=False) for i in (0, 1, 3)]  # trial 2 never recorded
    trials += [T("b", "t1", 0, status="infra_error"), T("b", "t1", 1, success=True)]  # b never ran t2
    counts = to_counts(trials)
    gaps = counts.attrs["gaps"]
    assert gaps.n_expected == 4
    rows = list(gaps.frame.itertuples(index=False, name=None))
    assert rows == [("a", "t2", 3, 1, "2"), ("b", "t1", 2, 2, "2..3"), ("b", "t2", 0, 4, "0..3")]
    assert gaps.n_absent == 7 and gaps.n_cells == 3
    text = gaps.describe()
    assert text.startswith("7 trials absent from the agent x task x trial grid") and "a / t2: trial 2" in text
    # a complete grid has no gaps
    full = to_counts([T("a", "t", i, success=True) for i in range(3)])
    assert full.attrs["gaps"].n_cells == 0


def test_unscored_error_names_a_misspelled_outcome_field():
    trials = [Trial(agent="a", task_id="t", trial=0, Success=True), Trial(agent="a", task_id="t", trial=1, succes=1)]
    with pytest.raises(ValueError) as ei:
        to_counts(trials)
    msg = str(ei.value)
    assert "2 trials have no outcome" in msg
    assert "it has a field 'Success': did you mean 'success'?" in msg
    assert "it has a field 'succes': did you mean 'success'?" in msg


def test_grid_gaps_of_a_grid_too_large_to_list(monkeypatch):
    import agentstats.records.gaps as gaps_mod

    trials = [T("a", "t1", i, success=True) for i in range(3)] + [T("a", "t2", 0, success=True)]
    trials += [T("b", "t3", i, success=False) for i in range(3)]
    dense = to_counts(trials).attrs["gaps"]
    monkeypatch.setattr(gaps_mod, "_DENSE_CELLS", 2)  # 2 agents x 3 tasks = 6 cells > 2: the sparse way
    sparse = to_counts(trials).attrs["gaps"]
    assert (dense.n_absent, dense.n_cells) == (sparse.n_absent, sparse.n_cells) == (2 + 3 * 3, 4)
    assert sparse.n_cells_unlisted == 3 and list(sparse.frame.task_id) == ["t2"]

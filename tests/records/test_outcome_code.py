"""One outcome code, three paths: the Python rule, pyarrow's columns and the run store's SQL give the same codes.

The expected outcome of each edge case is written out by hand below (the rule in words: ``infra_error`` is missing,
``agent_error`` a failure, then a missing judge verdict is missing, then a given ``success`` decides, then ``reward``
is a success only within 1e-6 of 1), never computed by the code under test. Codes: failure 0, success 1, missing 2,
unscored -1.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from agentstats.records.trial import (
    CODE_FAILURE,
    CODE_MISSING,
    CODE_SUCCESS,
    CODE_UNSCORED,
    OUTCOME_CODE,
    Trial,
    outcome_codes,
)

F, S, M, U = 0, 1, 2, -1
IN_LOW, IN_HIGH = 1 - 5e-7, 1 + 5e-7  # within 1e-6 of 1
OUT_LOW, OUT_HIGH = 1 - 2e-6, 1 + 2e-6  # beyond it

#: (status, success, reward, judge_missing) -> expected code; status None = not given (completed)
CASES = [
    ("completed", None, None, False, U),
    ("completed", True, None, False, S),
    ("completed", False, None, False, F),
    ("completed", None, 1.0, False, S),
    ("completed", None, IN_LOW, False, S),
    ("completed", None, IN_HIGH, False, S),
    ("completed", None, OUT_LOW, False, F),
    ("completed", None, OUT_HIGH, False, F),
    ("completed", None, 0.5, False, F),
    ("completed", None, 0.0, False, F),
    ("completed", None, 5e-7, False, F),
    ("completed", True, 0.5, False, S),
    ("completed", False, 0.5, False, F),
    ("completed", True, 0.0, False, S),  # contradicts its reward: success decides (the readers refuse it)
    ("completed", False, 1.0, False, F),  # likewise
    ("completed", None, None, True, M),
    ("completed", True, None, True, M),
    ("completed", False, 1.0, True, M),
    ("completed", None, IN_LOW, True, M),
    ("agent_error", None, None, False, F),
    ("agent_error", True, None, False, F),
    ("agent_error", None, 1.0, False, F),
    ("agent_error", True, 1.0, True, F),
    ("agent_error", None, None, True, F),
    ("infra_error", None, None, False, M),
    ("infra_error", True, 1.0, False, M),
    ("infra_error", False, None, True, M),
    ("infra_error", None, 0.0, False, M),
    (None, True, None, False, S),
    (None, None, OUT_HIGH, False, F),
    (None, None, IN_LOW, True, M),
    (None, None, None, False, U),
]
EXPECTED = np.array([c[-1] for c in CASES], dtype=np.int8)


def _contradicts(success, reward) -> bool:
    """success true with reward 0, or false with reward 1 (each within 1e-6): the readers refuse such records."""
    if success is None or reward is None:
        return False
    return (success and abs(reward) <= 1e-6) or (not success and abs(reward - 1) <= 1e-6)


#: Cases whose reward a Trial accepts (within [0, 1] up to the tolerance): OUT_HIGH is coded by the rule, but a
#: record carrying it is refused (a reward above 1 is not an outcome).
VALID = [i for i, c in enumerate(CASES) if c[2] is None or c[2] <= 1 + 1e-6]


def _trials() -> list[Trial]:
    """The cases as Trials; those with a refused reward built without validation (the rule still codes them)."""
    return [(Trial if i in VALID else Trial.model_construct)(
        agent="a", task_id=f"t{i}", trial=0, status=st or "completed", success=su, reward=r, judge_missing=jm)
        for i, (st, su, r, jm, _) in enumerate(CASES)]


def test_a_reward_beyond_one_is_refused():
    with pytest.raises(ValueError, match="reward must be between 0 and 1"):
        Trial(agent="a", task_id="t", trial=0, reward=OUT_HIGH)


def _records() -> list[dict]:
    out = []
    for i, (st, su, r, jm, _) in enumerate(CASES):
        rec = {"agent": "a", "task_id": f"t{i}", "trial": 0, "status": st, "success": su, "reward": r}
        out.append({**rec, "judge_missing": jm} if jm else rec)  # judge_missing absent = false
    return out


def test_the_named_constants_are_the_one_code():
    assert OUTCOME_CODE == {"failure": 0, "success": 1, "missing": 2}
    assert (CODE_FAILURE, CODE_SUCCESS, CODE_MISSING, CODE_UNSCORED) == (F, S, M, U)


def test_python_rule():
    got = [U if (o := t.outcome()) is None else OUTCOME_CODE[o] for t in _trials()]
    assert got == EXPECTED.tolist()


def test_vectorised_rule_on_object_and_float_columns():
    status = np.array([c[0] for c in CASES], dtype=object)
    success = np.array([c[1] for c in CASES], dtype=object)
    reward_obj = np.array([c[2] for c in CASES], dtype=object)
    reward_nan = np.array([np.nan if c[2] is None else c[2] for c in CASES])
    success_nan = np.array([np.nan if c[1] is None else float(c[1]) for c in CASES])
    jm = np.array([c[3] for c in CASES])
    for s_col, r_col in ((success, reward_obj), (success_nan, reward_nan)):
        got = outcome_codes(status, s_col, r_col, jm)
        assert got.dtype == np.int8
        np.testing.assert_array_equal(got, EXPECTED)
    with pytest.raises(ValueError, match="one value per trial"):
        outcome_codes(status, success[:3], reward_obj, jm)


def test_pyarrow_path(tmp_path):
    """The columns pyarrow's JSON reader makes of the records (fastcounts' schema), coded by the fast path."""
    import pyarrow.json as pj

    from agentstats.io.fastcounts import _core_schema, batch_codes, jsonl_counts
    from agentstats.records.counts import to_counts

    path = tmp_path / "edge.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in _records()))
    table = pj.read_json(path, parse_options=pj.ParseOptions(explicit_schema=_core_schema()))
    got = np.concatenate([batch_codes(b) for b in table.to_batches()])
    np.testing.assert_array_equal(got, EXPECTED)
    # the whole fast path on the cases it decides (scored, no contradiction): the counts to_counts gives
    keep = [i for i, c in enumerate(CASES) if c[-1] != U and not _contradicts(c[1], c[2]) and i in VALID]
    clean = tmp_path / "clean.jsonl"
    clean.write_text("".join(json.dumps(_records()[i]) + "\n" for i in keep))
    fast = jsonl_counts(clean)
    assert fast is not None
    want = to_counts([_trials()[i] for i in keep])
    assert fast[["agent", "task_id", "n", "c", "n_missing"]].equals(want[["agent", "task_id", "n", "c", "n_missing"]])


def test_sql_path(tmp_path):
    """Trials written to a run store and coded by its SQL (the CASE generated from OUTCOME_CODE)."""
    pytest.importorskip("duckdb")
    from agentstats.store import RunStore

    with RunStore(tmp_path / "s.duckdb") as store:
        store.import_trials([_trials()[i] for i in VALID], "edge")
        codes = store.outcome_codes("edge")
    assert codes["task_id"].tolist() == [f"t{i}" for i in VALID]
    np.testing.assert_array_equal(codes["code"].to_numpy(), EXPECTED[VALID])


#: (success, reward, contradicts?): the rule written out by hand (success true with reward 0, false with reward 1,
#: each within 1e-6; a partial reward, or a field not given, contradicts nothing)
CONFLICTS = [
    (True, 0.0, True), (True, 5e-7, True), (True, 2e-6, False), (True, 0.5, False), (True, 1.0, False),
    (False, 1.0, True), (False, IN_LOW, True), (False, IN_HIGH, True), (False, OUT_LOW, False), (False, 0.0, False),
    (False, 0.5, False), (True, None, False), (None, 0.0, False), (None, 1.0, False),
]


def test_one_contradiction_rule_for_the_record_the_columns_and_both_readers(tmp_path):
    """outcome_conflict (a Trial), outcome_conflicts (columns), the JSONL reader and the pyarrow fast path give the
    same verdict on each row; the message comes from the one owner."""
    from agentstats.io.fastcounts import jsonl_counts
    from agentstats.io.jsonl import read_jsonl_trials
    from agentstats.records.problems import ProblemLog
    from agentstats.records.trial import outcome_conflict, outcome_conflicts

    want = [c[-1] for c in CONFLICTS]
    trials = [Trial(agent="a", task_id="t", trial=i, success=s, reward=r) for i, (s, r, _) in enumerate(CONFLICTS)]
    assert [outcome_conflict(t) is not None for t in trials] == want
    success = np.array([c[0] for c in CONFLICTS], dtype=object)
    reward = np.array([np.nan if c[1] is None else c[1] for c in CONFLICTS])
    np.testing.assert_array_equal(outcome_conflicts(success, reward), want)
    np.testing.assert_array_equal(outcome_conflicts(success, np.array([c[1] for c in CONFLICTS], dtype=object)), want)
    # a trial scored by agentstats keeps the benchmark's reward beside its verdict on purpose: not a contradiction
    scored = Trial(agent="a", task_id="t", trial=0, success=True, reward=0.0, scoring_source="x")
    assert outcome_conflict(scored) is None
    for i, (s, r, conflict) in enumerate(CONFLICTS):
        rec = {"agent": "a", "task_id": "t", "trial": 0, **({} if s is None else {"success": s}),
               **({} if r is None else {"reward": r})}
        path = tmp_path / f"row{i}.jsonl"
        path.write_text(json.dumps(rec) + "\n")
        # the fast path leaves a contradiction to the full reader (None); it counts every other row
        assert (jsonl_counts(path) is None) == conflict, rec
        log = ProblemLog(str(path), "skip")
        assert len(read_jsonl_trials(path, log)) == (0 if conflict else 1), rec
        problems = [p for p in log.problems if p.field == "success"]
        assert [p.message for p in problems] == ([outcome_conflict(trials[i])] if conflict else []), rec
        if conflict:
            assert problems[0].line == 1 and "contradict each other" in problems[0].message

"""The gate decision record's one "same inputs" identity and sign-off merging (``agentstats.records.decision``)."""

from __future__ import annotations

import pytest

from agentstats.records.decision import InputsKey, inputs_key, is_decision_record, merge_sign_offs


def record(config="c0", cand="x1", base="y1", calib=None, **extra):
    return {"schema": "agentstats.gate/1", "decision": "PASS", "config_sha256": config,
            "candidate": {"source": "a.jsonl", "sha256": cand}, "baseline": {"source": "b.jsonl", "sha256": base},
            "judge_calibration": None if calib is None else {"sha256": calib}, **extra}


def test_the_key_is_the_four_input_hashes_and_nothing_else():
    assert inputs_key(record()) == InputsKey("c0", "x1", "y1", None)
    assert inputs_key(record(calib="k1")) == InputsKey("c0", "x1", "y1", "k1")
    # the moment, the machine, the decision, the sources' names and the sign-offs are not inputs
    other = record(created_at="2027-01-01T00:00:00+00:00", versions={"python": "3.99"}, decision="FAIL",
                   sign_off=[{"name": "A"}])
    other["candidate"]["source"] = "elsewhere/a.jsonl"
    assert inputs_key(other) == inputs_key(record())


@pytest.mark.parametrize("change", [{"config": "c1"}, {"cand": "x2"}, {"base": "y2"}, {"calib": "k1"}])
def test_any_input_hash_that_differs_makes_other_inputs(change):
    assert inputs_key(record(**change)) != inputs_key(record())


def test_a_record_missing_a_hash_has_no_identity():
    assert inputs_key(record(config=None)) is None
    assert inputs_key({**record(), "candidate": None}) is None
    assert inputs_key({**record(), "baseline": {"sha256": 7}}) is None
    assert inputs_key({}) is None


def test_what_is_a_decision_record():
    assert is_decision_record(record()) and is_decision_record({"schema": "agentstats.gate/2"})
    assert not is_decision_record({"schema": "agentstats.loop/1"})
    assert not is_decision_record({"mine": 1}) and not is_decision_record([record()]) and not is_decision_record(None)


def test_sign_offs_merge_in_order_without_repeats():
    a, b, c = ({"name": n, "at": "2026-12-01T00:00:00+00:00", "decision": "PASS"} for n in "ABC")
    assert merge_sign_offs([a, b], [b, c]) == [a, b, c]
    assert merge_sign_offs([], [c, a]) == [c, a]
    assert merge_sign_offs([a], []) == [a]
    later_a = {**a, "at": "2026-12-02T00:00:00+00:00"}  # the same reviewer signing again is a new sign-off
    assert merge_sign_offs([a], [later_a]) == [a, later_a]

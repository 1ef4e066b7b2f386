"""One "same inputs" identity for the gate record, through the file path and the store path alike.

A record for the same inputs (config, candidate, baseline and calibration-set hashes:
``agentstats.records.decision.inputs_key``) carries the sign-offs already given; a record for other inputs does not,
whether the record is kept in a file (``agentstats gate --out``) or in a run store (``--store``). Both go through
``agentstats.gating.keep_record``; the store compares with the same function (it cannot import the gate).
"""

from __future__ import annotations

import json

import pytest

from agentstats.gating import RecordRefused, gate, keep_record

CONFIG = {"thresholds": {"acc": 0.5}, "n_draws": 500}


@pytest.fixture()
def records(tmp_path):
    """Two records for the same inputs (separate runs of the gate) and one for another candidate file."""
    def scores(name, values):
        path = tmp_path / name
        path.write_text("".join(json.dumps({"id": f"q{i}", "scores": {"acc": v}}) + "\n" for i, v in enumerate(values)))
        return path

    cand, other, base = scores("c.jsonl", [1, 1, 0, 1]), scores("o.jsonl", [1, 0, 0, 1]), scores("b.jsonl", [1] * 4)
    first, again = gate(cand, base, CONFIG).to_record(), gate(cand, base, CONFIG).to_record()
    again["created_at"] = "2030-01-01T00:00:00+00:00"  # another moment: still the same inputs
    return first, again, gate(other, base, CONFIG).to_record()


def names(record):
    return [s["name"] for s in record["sign_off"]]


@pytest.mark.parametrize("where", ["file", "store"])
def test_equal_inputs_merge_sign_offs_other_inputs_do_not(records, tmp_path, where):
    if where == "store":
        pytest.importorskip("duckdb")
    first, again, other = records
    target = {"out": tmp_path / "record.json"} if where == "file" else {"store": tmp_path / "s.duckdb"}
    assert names(keep_record(first, **target, sign_off="A")) == ["A"]
    assert names(keep_record(again, **target, sign_off="B")) == ["A", "B"]  # equal inputs: merged
    assert names(keep_record(again, **target)) == ["A", "B"]  # a plain re-run keeps them
    if where == "file":  # a signed file for other inputs is never overwritten
        before = target["out"].read_bytes()
        with pytest.raises(RecordRefused, match=r"signed off \(A, B\) for other inputs"):
            keep_record(other, **target, sign_off="C")
        assert target["out"].read_bytes() == before
        assert names(keep_record(other, out=tmp_path / "other.json", sign_off="C")) == ["C"]
    else:  # the store appends a row of its own for other inputs, with nothing carried over
        assert names(keep_record(other, **target, sign_off="C")) == ["C"]
        assert names(keep_record(again, **target)) == ["A", "B"]  # and back, per inputs


def test_the_store_looks_only_at_the_same_run(records, tmp_path):
    pytest.importorskip("duckdb")
    from agentstats.store import RunStore

    first, again, _ = records
    store = tmp_path / "s.duckdb"
    with RunStore(store) as st:
        st.write_run("r1", [{"agent": "a", "task_id": "t", "trial": 0, "success": True}])
    keep_record(first, store=store, sign_off="A")
    assert names(keep_record(again, store=store, run="r1", sign_off="B")) == ["B"]  # same inputs, other run
    assert names(keep_record(again, store=store)) == ["A"]


def test_an_unsigned_file_for_other_inputs_is_replaced(records, tmp_path):
    first, _, other = records
    out = tmp_path / "record.json"
    keep_record(first, out=out)
    kept = keep_record(other, out=out)
    assert kept["sign_off"] == [] and json.loads(out.read_text())["candidate"] == other["candidate"]

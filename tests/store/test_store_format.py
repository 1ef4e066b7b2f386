"""The run store as an input format: registered by the store through an entry point, never imported by io."""

from __future__ import annotations

import sys
from importlib.metadata import entry_points

import pytest

from agentstats.io.loaders import load_counts, load_trials
from agentstats.io.registry import ENTRY_POINT_GROUP, format_spec, formats
from agentstats.records.trial import Trial

pytest.importorskip("duckdb")


def _store(tmp_path, runs=("r1",)):
    from agentstats.store import RunStore

    path = tmp_path / "s.duckdb"
    with RunStore(path) as store:
        for run in runs:
            store.import_trials([Trial(agent="a", task_id="t", trial=i, success=i == 0) for i in range(2)], run)
    return path


def test_the_duckdb_format_comes_from_the_store_through_the_entry_point():
    (ep,) = [e for e in entry_points(group=ENTRY_POINT_GROUP) if e.name == "duckdb"][:1]
    assert ep.value == "agentstats.store.format:register"
    spec = format_spec("store")  # the alias
    assert spec.name == "duckdb" and spec.holds == "trials" and "duckdb" in formats()
    assert spec.read.__module__ == "agentstats.store.format" and spec.counts is not None
    assert spec.sniff is not None  # recognised without reading the file's bytes


def test_one_run_or_name_it_and_counts_in_sql(tmp_path):
    path = _store(tmp_path)
    assert [t.trial for t in load_trials(path)] == [0, 1]  # the store's only run
    counts = load_counts(path)
    assert counts.attrs["format"] == "duckdb" and counts[["n", "c"]].values.tolist() == [[2, 1]]
    path2 = _store(tmp_path / "two", runs=("r1", "r2"))
    with pytest.raises(ValueError, match=r"2 runs \(r1, r2\): pick one with run="):
        load_trials(path2)
    with pytest.raises(TypeError, match=r"unexpected option\(s\) \['agent'\] for a run store"):
        load_trials(path2, run="r1", agent="x")  # options the store does not take are refused, not ignored


def test_without_duckdb_a_store_says_how_to_install_it(tmp_path, monkeypatch):
    path = _store(tmp_path)
    monkeypatch.setitem(sys.modules, "duckdb", None)  # `import duckdb` now fails as if it were not installed
    with pytest.raises(ImportError, match=r"pip install 'agentstats\[store\]'"):
        load_trials(path)
    with pytest.raises(ImportError, match=r"pip install 'agentstats\[store\]'"):
        load_counts(path, run="r1")

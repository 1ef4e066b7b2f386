"""The run store's partitioned Parquet export and reading such a dataset back: counts in DuckDB, trials, runs."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import agentstats
from agentstats.cli import app
from agentstats.io import detect_format
from agentstats.records.problems import LoadError, LoadWarning
from agentstats.records.trial import Trial
from agentstats.store import RunStore, StoreError

pytest.importorskip("duckdb")
runner = CliRunner()


def _store(tmp_path: Path) -> Path:
    """Two runs; run "r1" has two agents (one named with a slash), a missing trial, an absent trial, an error."""
    path = tmp_path / "s.duckdb"
    r1 = [Trial(agent=agent, task_id=f"t{t}", trial=k, success=(t * 3 + k + len(agent)) % 2 == 0)
          for agent in ("a", "org/b") for t in range(4) for k in range(3) if not (agent == "a" and t == 3 and k == 2)]
    r1.append(Trial(agent="a", task_id="t9", trial=0, status="infra_error"))
    r2 = [Trial(agent="a", task_id="t0", trial=k, reward=1.0 if k else 0.0) for k in range(2)]
    with RunStore(path) as st:
        st.import_trials(r1, "r1")
        st.import_trials(r2, "r2")
    return path


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> tuple[Path, Path]:
    """A store of two runs and its dataset partitioned by run,agent (read only by the tests that share them)."""
    tmp = tmp_path_factory.mktemp("exported")
    store = _store(tmp)
    with RunStore(store, read_only=True) as st:
        st.export_dataset(tmp / "ds", partition_by="run,agent")
    return store, tmp / "ds"


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def test_export_writes_hive_partitions_that_read_back_as_the_stores_counts_and_trials(exported):
    store, out = exported
    with RunStore(store, read_only=True) as st:
        want = {run: st.counts(run) for run in ("r1", "r2")}
        trials = st.trials("r1")
        # DuckDB draws a progress bar on stdout for long queries (into `--json`): every store connection turns it off
        assert st.con.execute("SELECT current_setting('enable_progress_bar_print')").fetchone() == (False,)
    assert _files(out) == ["run=r1/agent=a/part-0.parquet", "run=r1/agent=org%2Fb/part-0.parquet",
                           "run=r2/agent=a/part-0.parquet"]
    assert [p.name for p in out.parent.iterdir() if p.name.startswith(".")] == []  # no temporary folder left
    # the partition columns are folders, not columns of the files; the outcome is coded
    part = pq.read_table(out / "run=r1" / "agent=a" / "part-0.parquet")
    assert {"agent", "run"}.isdisjoint(part.column_names) and {"task_id", "trial", "outcome_code", "record"} <= set(
        part.column_names)
    for run in ("r1", "r2"):
        got = agentstats.load_counts(out, run=run)
        assert got.attrs["format"] == "parquet_dataset"
        pd.testing.assert_frame_equal(got, want[run])
        assert got.attrs["gaps"].n_absent == want[run].attrs["gaps"].n_absent
        assert got.attrs["gaps"].frame.equals(want[run].attrs["gaps"].frame)
    assert list(agentstats.load_trials(out, run="r1")) == trials
    # a glob of the files is the same dataset
    pd.testing.assert_frame_equal(agentstats.load_counts(str(out / "run=r2" / "*" / "*.parquet")), want["r2"])


def test_one_file_of_a_dataset_is_read_with_the_partition_values_of_its_path(exported):
    """A shard of agentstats.metrics.compute_files: one part file, its run and agent taken from its folders."""
    store, out = exported
    part = out / "run=r1" / "agent=org%2Fb" / "part-0.parquet"
    assert detect_format(part) == "parquet_dataset"
    with RunStore(store, read_only=True) as st:
        want = [t for t in st.trials("r1") if t.agent == "org/b"]
        counts = st.counts("r1")
    assert want and list(agentstats.load_trials(part)) == want
    got = agentstats.load_counts(part)
    pd.testing.assert_frame_equal(got, counts[counts["agent"] == "org/b"].reset_index(drop=True))
    assert got.attrs["format"] == "parquet_dataset"


def test_several_runs_are_never_mixed_silently(tmp_path, exported):
    store, _ = exported
    with RunStore(store, read_only=True) as st:
        st.export_dataset(tmp_path / "ds", partition_by=["agent"])  # the run a column of the files
    with pytest.raises(ValueError, match=r"2 runs \(r1, r2\): pick one with run="):
        agentstats.load_counts(tmp_path / "ds")
    with pytest.raises(ValueError, match=r"no run named 'r3' in .* \(runs: r1, r2\)"):
        agentstats.load_counts(tmp_path / "ds", run="r3")
    assert agentstats.load_counts(tmp_path / "ds", run="r2")[["n", "c"]].values.tolist() == [[2, 1]]


def test_counts_of_a_hand_written_dataset_equal_an_independent_pandas_count(tmp_path):
    rng = np.random.default_rng(7)
    m = 3000
    frame = pd.DataFrame({
        "agent": rng.choice(["x", "y", "z"], m), "task_id": rng.choice([f"q{i}" for i in range(40)], m),
        "outcome_code": rng.choice(np.array([0, 1, 2], dtype=np.int8), m, p=[0.5, 0.4, 0.1]),
    })
    frame["trial"] = frame.groupby(["agent", "task_id"]).cumcount().astype(np.int32)
    root = tmp_path / "hand"
    pq.write_to_dataset(pa.Table.from_pandas(frame, preserve_index=False), root, partition_cols=["agent"])
    got = agentstats.load_counts(root)
    g = frame.groupby(["agent", "task_id"])["outcome_code"]
    want = pd.DataFrame({"n": g.apply(lambda s: int((s != 2).sum())), "c": g.apply(lambda s: int((s == 1).sum())),
                         "n_missing": g.apply(lambda s: int((s == 2).sum()))}).reset_index()
    pd.testing.assert_frame_equal(got.reset_index(drop=True), want.astype({"n": "int64", "c": "int64",
                                                                           "n_missing": "int64"}),
                                  check_dtype=False)
    assert int(got["n"].sum() + got["n_missing"].sum()) == m
    # its cells are unbalanced: absent trials are counted cell by cell
    per_cell = frame.groupby(["agent", "task_id"]).size()
    assert got.attrs["gaps"].n_absent == int((per_cell.max() - per_cell).sum())
    with pytest.raises(ValueError, match="without a 'record' column: it gives counts only"):
        agentstats.load_trials(root)


def test_bad_outcome_codes_are_located_by_file_row_and_field(tmp_path):
    root = tmp_path / "bad"
    table = pa.table({"task_id": ["t0", "t0", "t1"], "trial": pa.array([0, 1, 0], pa.int32()),
                      "outcome_code": pa.array([1, 7, None], pa.int8())})
    (root / "agent=a").mkdir(parents=True)
    pq.write_table(table, root / "agent=a" / "part-0.parquet")
    with pytest.raises(LoadError) as info:
        agentstats.load_counts(root)
    where = [(Path(p.source).name, p.line, p.field) for p in info.value.problems]
    assert where == [("part-0.parquet", 1, "outcome_code"), ("part-0.parquet", 2, "outcome_code")]
    assert "7 is no outcome code" in str(info.value) and "agent=a" in str(info.value)
    with pytest.warns(LoadWarning):
        kept = agentstats.load_counts(root, on_error="skip")
    assert kept[["task_id", "n", "c"]].values.tolist() == [["t0", 1, 1]] and len(kept.attrs["skipped"]) == 2
    no_code = pa.table({"task_id": ["t0"], "trial": pa.array([0], pa.int32())})
    pq.write_table(no_code, root / "agent=a" / "part-0.parquet")
    with pytest.raises(ValueError, match="no column 'outcome_code'"):
        agentstats.load_counts(root, format="parquet_dataset")
    labels = pa.table({"task_id": ["t0"], "trial": pa.array([0], pa.int32()), "outcome_code": ["success"]})
    pq.write_table(labels, root / "agent=a" / "part-0.parquet")
    with pytest.raises(ValueError, match=r"bad: the Parquet dataset cannot be counted \(a column of another type"):
        agentstats.load_counts(root)


def test_unscored_trials_and_repeated_keys_are_refused(tmp_path):
    root = tmp_path / "u"
    root.mkdir()
    pq.write_table(pa.table({"agent": ["a", "a"], "task_id": ["t", "t"], "trial": [0, 1],
                             "outcome_code": pa.array([-1, 1], pa.int8())}), root / "p.parquet")
    with pytest.raises(ValueError, match=r"1 trial has no outcome .*\('a', 't', 0\)"):
        agentstats.load_counts(root)
    pq.write_table(pa.table({"agent": ["a", "a"], "task_id": ["t", "t"], "trial": [0, 0],
                             "outcome_code": pa.array([0, 1], pa.int8())}), root / "p.parquet")
    with pytest.raises(ValueError, match=r"repeat a trial number, e\.g\. \('a', 't'\)"):
        agentstats.load_counts(root)
    # trial numbers from 64 up are told apart too (they are counted by a query of their own)
    many = list(range(100))
    pq.write_table(pa.table({"agent": ["a"] * 101, "task_id": ["t"] * 100 + ["u"], "trial": [*many, 70],
                             "outcome_code": pa.array([1] * 101, pa.int8())}), root / "p.parquet")
    got = agentstats.load_counts(root)
    assert got[["task_id", "n"]].values.tolist() == [["t", 100], ["u", 1]]
    pq.write_table(pa.table({"agent": ["a"] * 101, "task_id": ["t"] * 101, "trial": [*many, 70],
                             "outcome_code": pa.array([1] * 101, pa.int8())}), root / "p.parquet")
    with pytest.raises(ValueError, match="repeat a trial number"):
        agentstats.load_counts(root)


def test_partition_columns_are_checked_and_a_foreign_folder_is_never_replaced(tmp_path, exported):
    store, _ = exported
    with RunStore(store, read_only=True) as st:
        with pytest.raises(StoreError, match=r"unknown partition column\(s\) 'model'; partition by any of: run, agent, "
                                             r"task_id, status"):
            st.export_dataset(tmp_path / "x", partition_by="run,model")
        with pytest.raises(StoreError, match="a column is named twice"):
            st.export_dataset(tmp_path / "x", partition_by="agent,agent")
        mine = tmp_path / "mine"
        mine.mkdir()
        (mine / "notes.txt").write_text("keep me")
        with pytest.raises(StoreError, match=r"holds notes\.txt, which is not part of a Parquet dataset"):
            st.export_dataset(mine, replace=True)
        assert (mine / "notes.txt").read_text() == "keep me"
        st.export_dataset(tmp_path / "ds", runs=["r2"], partition_by="agent")
        with pytest.raises(FileExistsError):
            st.export_dataset(tmp_path / "ds", runs=["r2"])
        st.export_dataset(tmp_path / "ds", runs=["r1"], partition_by="run", replace=True)
        st.export("r2", tmp_path / "one", partition_by="agent")  # the export of one run, as a dataset
        with pytest.raises(StoreError, match=r"partition_by= exports the trials table; table=.tool_calls. is"):
            st.export("r2", tmp_path / "two", table="tool_calls", partition_by="agent")
    assert _files(tmp_path / "ds") == ["run=r1/part-0.parquet"]
    assert _files(tmp_path / "one") == ["agent=a/part-0.parquet"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_cli_export_refuses_bad_arguments(tmp_path, exported):
    store, _ = exported
    out = tmp_path / "ds"
    r = runner.invoke(app, ["runs", "export", "--store", str(store), "--partition-by", "run,agent",
                            "--out-dir", str(out)])
    assert r.exit_code == 0, r.output
    assert _files(out) == _files(exported[1])
    n_files = len(list(out.rglob("*.parquet")))
    said = " ".join(r.output.split())  # the console may wrap the line
    assert f"{n_files} Parquet files (" in said and "MB), partitioned by run,agent" in said
    r = runner.invoke(app, ["runs", "export", "r1", "--store", str(store), "--partition-by", "run,model",
                            "--out-dir", str(tmp_path / "y")])
    assert r.exit_code == 2 and "partition by any of: run, agent, task_id, status" in r.output
    r = runner.invoke(app, ["runs", "export", "r1", "--store", str(store), "--format", "jsonl", "--partition-by",
                            "agent", "--out-dir", str(tmp_path / "y")])
    assert r.exit_code == 2 and "--partition-by writes Parquet" in r.output
    r = runner.invoke(app, ["runs", "export", "--store", str(store), "--partition-by", "agent", "--out-dir", str(out)])
    assert r.exit_code == 2 and "pass --force" in r.output
    r = runner.invoke(app, ["runs", "export", "--store", str(store), "--out", str(tmp_path / "x.parquet")])
    assert r.exit_code == 2 and "name the run to export" in r.output


@pytest.mark.slow  # estimate's bootstrap (about 3 s)
def test_estimate_reads_the_dataset_one_run_at_a_time(exported):
    _, out = exported
    r = runner.invoke(app, ["estimate", str(out), "--run", "r2", "--k", "1", "--json"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["estimate", str(out), "--k", "1"])
    assert r.exit_code == 2 and "pick one with --run" in r.output


def test_sigterm_during_a_dataset_export_leaves_the_previous_dataset_and_no_temporary(tmp_path, monkeypatch,
                                                                                      exported):
    """The COPY writes into a temporary folder: SIGTERM mid-write exits 143, the old dataset stays, nothing else."""
    store, _ = exported
    out = tmp_path / "out" / "ds"
    with RunStore(store, read_only=True) as st:
        st.export_dataset(out, runs=["r2"])
    before = {p: p.read_bytes() for p in out.rglob("*.parquet")}

    def killed_midway(self, path, *, runs=None, partition_by=("run", "agent"), replace=False):
        from agentstats.files.atomic import atomic_dir

        with atomic_dir(path, replace=replace) as tmp:
            (tmp / "run=r1").mkdir()
            (tmp / "run=r1" / "part-0.parquet").write_bytes(b"PAR1 half")  # what COPY had written
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)

    monkeypatch.setattr(RunStore, "export_dataset", killed_midway)
    res = runner.invoke(app, ["runs", "export", "--store", str(store), "--partition-by", "run",
                              "--out-dir", str(out), "--force"])
    assert res.exit_code == 143 and res.output.strip().endswith("terminated"), res.output
    assert {p: p.read_bytes() for p in out.rglob("*.parquet")} == before
    assert sorted(os.listdir(out.parent)) == ["ds"]

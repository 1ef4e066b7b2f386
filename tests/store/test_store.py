"""The run store: import, read back as the pipeline's objects, counts in SQL, migrations, transactions, CLI, kill -9."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import agentstats
from agentstats.cli import app
from agentstats.estimators import pass_at_k, pass_hat_k
from agentstats.records.problems import LoadError, LoadWarning
from agentstats.records.trial import Interaction, ToolCall, Trial
from agentstats.store import SCHEMA_VERSION, RunStore, StoreError, is_store_file
from agentstats.store.importing import import_file
from agentstats.store.schema import MIGRATIONS

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "data" / "example_trials.jsonl"
runner = CliRunner()


def _trials(n_tasks: int = 3, n_trials: int = 2, agent: str = "a") -> list[Trial]:
    out = []
    for t in range(n_tasks):
        for k in range(n_trials):
            out.append(Trial(
                agent=agent, task_id=f"t{t}", trial=k, success=(t + k) % 2 == 0,
                interactions=[Interaction(id="m0", query=f"q{t}", answer=f"a{k}", expected_answer=f"a{t % 2}",
                                          tool_calls=[ToolCall(name="search", arguments={"q": t}, id="c1")])],
                expected_tool_calls=[ToolCall(name="search", arguments={"q": t})],
            ))
    return out


def _count_rows(path: Path, table: str) -> int:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0]
    finally:
        con.close()


# ---------------------------------------------------------------- round trip and the pipeline


def test_stored_run_gives_the_same_trials_counts_and_estimates_as_the_jsonl(tmp_path):
    store = tmp_path / "s.duckdb"
    from_file = agentstats.load_trials(EXAMPLE)
    with RunStore(store) as st:
        result = st.import_trials(from_file, "example", source=str(EXAMPLE))
    assert result.trials == len(from_file) == 600
    assert is_store_file(store) and not is_store_file(EXAMPLE)

    back = agentstats.load_trials(store, run="example")
    assert back.format == "duckdb"
    assert list(back) == list(from_file)  # equal Trial objects, in file order

    counts_file = agentstats.load_counts(EXAMPLE)
    counts_store = agentstats.load_counts(store, run="example")  # straight from SQL
    pd.testing.assert_frame_equal(counts_store, counts_file)
    assert repr(counts_store.attrs["gaps"]) == repr(counts_file.attrs["gaps"])
    # and so every estimate: pass@k / pass^k per task agree exactly
    for k in (1, 3):
        a = pass_at_k(counts_store["n"], counts_store["c"], k)
        b = pass_at_k(counts_file["n"], counts_file["c"], k)
        assert list(a) == list(b)
        assert list(pass_hat_k(counts_store["n"], counts_store["c"], k)) == list(
            pass_hat_k(counts_file["n"], counts_file["c"], k))
    # the counts agree with an independent tally of outcomes
    tally = pd.DataFrame([(t.agent, t.task_id, t.outcome()) for t in from_file], columns=["agent", "task_id", "o"])
    n = tally[tally.o != "missing"].groupby(["agent", "task_id"]).size()
    c = tally[tally.o == "success"].groupby(["agent", "task_id"]).size()
    merged = counts_store.set_index(["agent", "task_id"])
    assert (merged["n"] == n.reindex(merged.index, fill_value=0)).all()
    assert (merged["c"] == c.reindex(merged.index, fill_value=0)).all()


def test_one_run_store_needs_no_run_name_and_several_do(tmp_path):
    store = tmp_path / "s.duckdb"
    with RunStore(store) as st:
        st.import_trials(_trials(), "r1")
    assert len(agentstats.load_trials(store)) == 6
    with RunStore(store) as st:
        st.import_trials(_trials(agent="b"), "r2")
    with pytest.raises(ValueError, match=r"2 runs \(r1, r2\): pick one with run="):
        agentstats.load_trials(store)
    with pytest.raises(StoreError, match=r"no run named 'nope'.*runs: r1, r2"):
        agentstats.load_trials(store, run="nope")
    assert {t.agent for t in agentstats.load_trials(store, run="r2")} == {"b"}
    counts = agentstats.load_counts(store, run="r1", agents="a")
    assert int(counts["n"].sum()) == 6 and int(counts["c"].sum()) == 3


def test_interactions_and_tool_calls_are_queryable_with_sql(tmp_path):
    store = tmp_path / "s.duckdb"
    with RunStore(store) as st:
        res = st.import_trials(_trials(), "r1")
    assert (res.interactions, res.tool_calls) == (6, 12)
    con = duckdb.connect(str(store), read_only=True)
    rows = con.execute(
        "SELECT kind, interaction_idx IS NULL, count(*) FROM tool_calls GROUP BY ALL ORDER BY ALL").fetchall()
    assert rows == [("call", False, 6), ("expected", True, 6)]
    assert con.execute("SELECT DISTINCT query FROM interactions ORDER BY 1").fetchall() == [("q0",), ("q1",), ("q2",)]
    assert con.execute("SELECT arguments->>'q' FROM tool_calls WHERE task_id = 't2' LIMIT 1").fetchall() == [("2",)]
    con.close()


def test_interactions_are_derived_as_from_the_records_interaction_list(tmp_path):
    """The interactions are read with one json_transform of the whole record: the rows equal those the earlier
    statement (a json_transform of ``record->'interactions'``, kept here) derives from the same records."""
    from agentstats.store import rows as db

    expected = ["Paris", 2.5, 1e-05, {"any": [1, 2.5, None, "é ✓ \u2028"]}, None, [True, "x\"y"], 123456789012345]
    trials = [Trial(agent="a", task_id=f"t{i}", trial=0, success=True,
                    interactions=[Interaction(id=f"m{i}", query=f"q{i} é", answer=None if i % 3 else "ans",
                                              expected_answer=e), Interaction(query="second")])
              for i, e in enumerate(expected)]
    trials.append(Trial(agent="a", task_id="none", trial=0, success=False))  # no interactions: no row
    old = db.DERIVE_INTERACTIONS.replace(
        """json_transform(record, '{{"interactions": [""", """json_transform(record->'interactions', '[""").replace(
        """"expected_answer": "JSON"}}]}}').interactions AS its""", """"expected_answer": "JSON"}}]') AS its""")
    assert old != db.DERIVE_INTERACTIONS and "record->'interactions'" in old
    with RunStore(tmp_path / "s.duckdb") as st:
        res = st.import_trials(trials, "r1")
        assert res.interactions == 2 * len(expected)
        cols = "run_id, agent, task_id, trial, idx, message_id, query, answer, CAST(expected_answer AS VARCHAR)"
        new = st.con.execute(f"SELECT {cols} FROM interactions ORDER BY ALL").fetchall()
        st.con.execute("DELETE FROM interactions")
        st.con.execute(old.format(where="true"))
        assert st.con.execute(f"SELECT {cols} FROM interactions ORDER BY ALL").fetchall() == new
    assert ("a", "t3", 0, "m3") == (*new[6][1:4], new[6][5]) and json.loads(new[6][8]) == expected[3]


def test_unscored_trials_are_refused_by_counts_with_their_keys(tmp_path):
    store = tmp_path / "s.duckdb"
    with RunStore(store) as st:
        st.import_trials([Trial(agent="a", task_id="t", trial=0)], "r")
        with pytest.raises(ValueError, match="no outcome"):
            st.counts("r")


# ---------------------------------------------------------------- transactions and bad input


def test_bad_records_roll_the_whole_import_back_with_located_errors(tmp_path):
    store = tmp_path / "s.duckdb"
    good = [t.model_dump() for t in _trials()]
    bad = [*good[:4], {"agent": "a", "task_id": "", "trial": 0}, *good[4:], {"agent": "a", "trial": -1}]
    with RunStore(store) as st:
        with pytest.raises(LoadError) as err:
            st.import_trials(bad, "r", batch_size=2)  # batches 0..1 were written inside the transaction
        assert not st.has_run("r")
        assert st.con.execute("SELECT count(*) FROM trials").fetchall() == [(0,)]
    text = str(err.value)
    assert "record 4 (0-based), field 'task_id'" in text
    assert "record 7 (0-based), field 'task_id'" in text and "field 'trial'" in text


def test_streamed_batches_keep_column_types_when_a_batch_is_all_null(tmp_path):
    # batches of 2: the first batch has no reward, usage or success at all, the later ones have them
    trials = [Trial(agent="a", task_id=f"t{i}", trial=0, status="infra_error") for i in range(2)]
    trials += [Trial(agent="a", task_id=f"t{i}", trial=0, success=i % 2 == 0, reward=i / 10,
                     usage={"latency_s": 0.5 * i, "input_tokens": i, "output_tokens": 2 * i, "cost_usd": 1e-3 * i})
               for i in range(2, 7)]
    with RunStore(tmp_path / "s.duckdb") as st:
        r = st.import_trials(trials, "r", batch_size=2)
        assert (r.trials, r.interactions, r.tool_calls) == (7, 0, 0)
        assert st.trials("r") == trials
        rows = st.con.execute("SELECT seq, success, reward, outcome, input_tokens, cost_usd FROM trials "
                              "ORDER BY seq").fetchall()
    assert rows[0] == (0, None, None, "missing", None, None)
    assert rows[3] == (3, False, pytest.approx(0.3), "failure", 3, pytest.approx(3e-3))
    assert [x[0] for x in rows] == list(range(7))


def test_ctrl_c_inside_the_trials_iterable_rolls_back_and_is_re_raised(tmp_path):
    def reader():
        yield from _trials()
        raise KeyboardInterrupt

    with RunStore(tmp_path / "s.duckdb") as st:
        with pytest.raises(KeyboardInterrupt):
            st.import_trials(reader(), "r", batch_size=2)
        assert st.runs().empty and _count_rows_con(st, "trials") == 0 and _count_rows_con(st, "tool_calls") == 0
        st.import_trials(_trials(), "r")  # the store is usable afterwards
        assert _count_rows_con(st, "tool_calls") == 12  # one call and one expected call per trial


def _count_rows_con(st: RunStore, table: str) -> int:
    return st.con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0]


def test_duplicate_keys_are_refused_and_nothing_is_written(tmp_path):
    store = tmp_path / "s.duckdb"
    trials = _trials()
    with RunStore(store) as st:
        with pytest.raises(LoadError, match=r"record 6 \(0-based\).*duplicate trial key \('a', 't0', 0\), "
                                                  r"first seen at record 0"):
            st.import_trials([*trials, trials[0]], "r")
        assert st.runs().empty


def test_an_exception_from_the_importer_rolls_back(tmp_path):
    store = tmp_path / "s.duckdb"

    def reader():
        yield from _trials()
        raise ValueError("importer.json, line 9: unknown version")

    with RunStore(store) as st:
        st.import_trials(_trials(agent="keep"), "kept")
        with pytest.raises(ValueError, match="unknown version"):
            st.import_trials(reader(), "broken", batch_size=2)
        assert list(st.runs()["name"]) == ["kept"]
        assert st.con.execute("SELECT count(*) FROM trials").fetchall() == [(6,)]


def test_name_taken_replace_and_same_source_again(tmp_path):
    store = tmp_path / "s.duckdb"
    with RunStore(store) as st:
        st.import_trials(_trials(), "r", source_sha256="abc")
        again = st.import_trials(_trials(), "r", source_sha256="abc")
        assert again.unchanged and again.trials == 6
        with pytest.raises(StoreError, match="already exists"):
            st.import_trials(_trials(), "r", source_sha256="other")
        st.import_trials(_trials(n_tasks=1), "r", replace=True)
        assert st.con.execute("SELECT count(*) FROM trials").fetchall() == [(2,)]
        with pytest.raises(StoreError, match="non-empty name"):
            st.import_trials(_trials(), " ")


def test_a_running_run_of_a_dead_process_is_marked_interrupted(tmp_path):
    store = tmp_path / "s.duckdb"
    with RunStore(store) as st:
        with st.transaction():
            st.create_run("live")
        st.append_trials("live", _trials())
        # pretend another (now gone) process started it
        st.con.execute("UPDATE runs SET pid = 999999999 WHERE name = 'live'")
    with RunStore(store) as st:
        assert st.interrupted == ["live"]
        info = st.run_info("live")
        assert info["status"] == "interrupted" and info["records"]["trials"] == 6


# ---------------------------------------------------------------- schema versions


def test_a_version_1_file_is_migrated_and_keeps_its_data(tmp_path):
    store = tmp_path / "v1.duckdb"
    con = duckdb.connect(str(store))
    con.execute("CREATE TABLE schema_version (version INTEGER NOT NULL, applied_at TIMESTAMPTZ)")
    for step in MIGRATIONS[0]:
        con.execute(step)
    con.execute("INSERT INTO schema_version VALUES (1, now())")
    con.execute("INSERT INTO runs (name, started_at, status) VALUES ('old', now(), 'completed')")
    t = Trial(agent="a", task_id="t", trial=0, success=True)
    con.execute("INSERT INTO trials (run_id, seq, agent, task_id, trial, status, success, outcome, record) "
                "VALUES (1, 0, 'a', 't', 0, 'completed', true, 'success', ?)", [t.model_dump_json()])
    con.close()
    with pytest.raises(StoreError, match="version 1; this agentstats reads version 2"):
        RunStore(store, read_only=True)
    with RunStore(store) as st:
        assert st.version == SCHEMA_VERSION == 2
        assert st.trials("old") == [t]
        assert st.run_info("old")["code_version"] is None
        assert st.con.execute("SELECT count(*) FROM node_invocations").fetchall() == [(0,)]
        versions = [r[0] for r in st.con.execute("SELECT version FROM schema_version ORDER BY 1").fetchall()]
    assert versions == [1, 2]


def test_a_newer_file_is_refused(tmp_path):
    store = tmp_path / "s.duckdb"
    RunStore(store).close()
    con = duckdb.connect(str(store))
    con.execute("INSERT INTO schema_version VALUES (99, now())")
    con.close()
    with pytest.raises(StoreError, match="version 99, newer than this agentstats knows"):
        RunStore(store)


def test_a_file_that_is_not_duckdb_is_refused(tmp_path):
    with pytest.raises(StoreError, match="is not a DuckDB file"):
        RunStore(EXAMPLE)


# ---------------------------------------------------------------- export and delete


def test_export_parquet_and_jsonl_and_delete(tmp_path):
    store = tmp_path / "s.duckdb"
    trials = _trials()
    with RunStore(store) as st:
        st.import_trials(trials, "r")
        st.export_parquet("r", tmp_path / "t.parquet")
        st.export_parquet("r", tmp_path / "calls.parquet", table="tool_calls")
        st.export_jsonl("r", tmp_path / "t.jsonl")
        table = pq.read_table(tmp_path / "t.parquet").to_pandas()
        assert list(table["task_id"]) == [t.task_id for t in trials]
        assert [Trial.model_validate_json(r) for r in table["record"]] == trials
        assert pq.read_table(tmp_path / "calls.parquet").num_rows == 12
        assert list(agentstats.load_trials(tmp_path / "t.jsonl")) == trials
        assert (tmp_path / "t.jsonl.manifest.json").exists()
        assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
        deleted = st.delete_run("r")
        assert deleted["trials"] == 6 and deleted["tool_calls"] == 12
        assert st.runs().empty
        assert st.con.execute("SELECT count(*) FROM interactions").fetchall() == [(0,)]


def test_export_by_suffix_and_outcomes_per_agent(tmp_path):
    """What `agentstats runs export` and `runs show` call (were decided in the command)."""
    from agentstats._util.options import option_style

    trials = _trials()
    with RunStore(tmp_path / "s.duckdb") as st:
        st.import_trials(trials, "r")
        st.export("r", tmp_path / "t.parquet", table="tool_calls")
        assert pq.read_table(tmp_path / "t.parquet").num_rows == 12
        st.export("r", tmp_path / "t.jsonl.gz")
        assert list(agentstats.load_trials(tmp_path / "t.jsonl.gz")) == trials
        with pytest.raises(StoreError, match=r"x\.csv: export to a \.parquet, \.jsonl or \.jsonl\.gz file"):
            st.export("r", tmp_path / "x.csv")
        with pytest.raises(StoreError, match="table='tool_calls' applies to Parquet exports"):
            st.export("r", tmp_path / "x.jsonl", table="tool_calls")
        with option_style("cli"), pytest.raises(StoreError, match="--table tool_calls applies to Parquet exports"):
            st.export("r", tmp_path / "x.jsonl", table="tool_calls")
        # an independent tally of the trials' outcomes, per agent
        want: dict = {}
        for t in trials:
            o = t.outcome()
            row = want.setdefault(t.agent, {"n": 0, "c": 0, "n_missing": 0})
            row["n_missing" if o == "missing" else "n"] += 1
            row["c"] += o == "success"
        assert st.outcomes("r") == want
        st.write_run("unscored", [{"agent": "a", "task_id": "t", "trial": 0, "answer": "x"}])
        assert st.outcomes("unscored") is None  # counts need an outcome for every trial


# ---------------------------------------------------------------- command line


@pytest.mark.slow  # an end-to-end run (2.5-4 s); the README's test command stays under 2 minutes
def test_cli_import_list_show_export_delete(tmp_path, shared_data):
    store = tmp_path / "s.duckdb"
    tau = shared_data / "tau-bench-historical" / "gpt-4o-airline.json.gz"
    r = runner.invoke(app, ["import", str(EXAMPLE), "--store", str(store), "--store-run", "example", "--tag", "demo"])
    assert r.exit_code == 0, r.output
    assert "imported 600 trials" in r.output
    r = runner.invoke(app, ["import", str(tau), "--store", str(store), "--store-run", "tau"])
    assert r.exit_code == 0, r.output
    # the tau-bench run counts as the file does
    a = agentstats.load_counts(store, run="tau")
    b = agentstats.load_counts(tau)
    assert a[["agent", "task_id", "n", "c", "n_missing"]].equals(b[["agent", "task_id", "n", "c", "n_missing"]])
    # commands read one run of a store with --run: the same numbers as from the file; without it, a usage error
    by_run = runner.invoke(app, ["estimate", str(store), "--run", "tau", "--k", "1", "--json", "--n-boot", "200"])
    by_file = runner.invoke(app, ["estimate", str(tau), "--k", "1", "--json", "--n-boot", "200"])
    assert by_run.exit_code == 0 and by_file.exit_code == 0, by_run.output + by_file.output
    assert json.loads(by_run.stdout) == json.loads(by_file.stdout)
    r = runner.invoke(app, ["estimate", str(store), "--k", "1"])
    assert r.exit_code == 2 and "pick one with --run" in r.output, r.output
    # the same file again: nothing imported, nothing duplicated
    r = runner.invoke(app, ["import", str(EXAMPLE), "--store", str(store), "--store-run", "example"])
    assert r.exit_code == 0 and "nothing imported" in r.output
    r = runner.invoke(app, ["runs", "list", "--store", str(store), "--json"])
    assert r.exit_code == 0, r.output
    rows = json.loads(r.stdout)
    assert [(x["name"], x["trials"], x["status"]) for x in rows] == [
        ("example", 600, "completed"), ("tau", len(agentstats.load_trials(tau)), "completed")]
    assert rows[0]["tags"] == ["demo"]
    r = runner.invoke(app, ["runs", "show", "example", "--store", str(store), "--json"])
    info = json.loads(r.stdout)
    assert info["records"]["trials"] == 600 and info["source"].endswith("example_trials.jsonl")
    assert sum(v["n"] for v in info["outcomes"].values()) == int(agentstats.load_counts(EXAMPLE)["n"].sum())
    r = runner.invoke(app, ["runs", "export", "example", "--store", str(store), "--out", str(tmp_path / "e.parquet")])
    assert r.exit_code == 0, r.output
    assert pq.read_table(tmp_path / "e.parquet").num_rows == 600
    r = runner.invoke(app, ["runs", "export", "example", "--store", str(store), "--out", str(tmp_path / "e.jsonl")])
    assert r.exit_code == 0, r.output
    assert list(agentstats.load_trials(tmp_path / "e.jsonl")) == list(agentstats.load_trials(EXAMPLE))
    r = runner.invoke(app, ["estimate", str(tmp_path / "e.jsonl"), "--k", "1"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["runs", "delete", "tau", "--store", str(store), "--yes"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["runs", "show", "tau", "--store", str(store)])
    assert r.exit_code == 2 and "no run named 'tau'" in r.output
    r = runner.invoke(app, ["estimate", str(store), "--k", "1,2"])  # one run left: the store reads as it
    assert r.exit_code == 0, r.output


def test_cli_import_of_bad_input_is_located_and_leaves_nothing(tmp_path):
    store = tmp_path / "s.duckdb"
    lines = EXAMPLE.read_text().splitlines()
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([*lines[:50], '{"agent": "x", "task_id": "t", "trial": "zero"}', *lines[50:100],
                              lines[120][: len(lines[120]) // 2]]) + "\n")
    r = runner.invoke(app, ["import", str(bad), "--store", str(store), "--store-run", "bad"])
    assert r.exit_code == 2
    assert "bad.jsonl, line 51, field 'trial'" in r.output
    assert "line 102" in r.output and "malformed JSON" in r.output
    with RunStore(store, read_only=True) as st:
        assert st.runs().empty
    assert _count_rows(store, "trials") == 0
    r = runner.invoke(app, ["import", str(bad), "--store", str(store), "--store-run", "bad", "--skip-bad"])
    assert r.exit_code == 0, r.output
    assert _count_rows(store, "trials") == 100
    assert "skipped 2 records" in r.output
    wrong = tmp_path / "wrong.jsonl"
    wrong.write_text('{"hello": 1}\n')
    r = runner.invoke(app, ["import", str(wrong), "--store", str(store), "--store-run", "w"])
    assert r.exit_code == 2 and "neither a trial record" in r.output


def test_cli_import_of_a_truncated_jsonl_offers_skip_bad_and_python_offers_on_error(tmp_path):
    # the records are read on DuckDB's thread: the message is still worded for the caller (CLI flag vs keyword)
    trunc = tmp_path / "trunc.jsonl"
    trunc.write_bytes(EXAMPLE.read_bytes()[:3000])
    r = runner.invoke(app, ["import", str(trunc), "--store", str(tmp_path / "s.duckdb"), "--store-run", "t"])
    assert r.exit_code == 2
    assert "malformed JSON" in r.output and "--skip-bad" in r.output and "on_error" not in r.output
    with RunStore(tmp_path / "p.duckdb") as st, pytest.raises(LoadError, match="on_error='skip'") as err:
        import_file(st, trunc, run="t")
    assert "--skip-bad" not in str(err.value)


def test_a_parquet_export_is_named_as_such_on_import_and_the_jsonl_export_imports(tmp_path):
    store = tmp_path / "s.duckdb"
    assert runner.invoke(app, ["import", str(EXAMPLE), "--store", str(store), "--store-run", "ex"]).exit_code == 0
    for suffix in ("parquet", "jsonl"):
        r = runner.invoke(app, ["runs", "export", "ex", "--store", str(store), "--out", str(tmp_path / f"x.{suffix}")])
        assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["import", str(tmp_path / "x.parquet"), "--store", str(store), "--store-run", "pq"])
    out = " ".join(r.output.split())
    assert r.exit_code == 2 and "is a run-store export" in out and "--out run.jsonl" in out
    assert "problem" not in out and "skip-bad" not in out
    # the same when the run-table format is given explicitly
    pq2 = ["import", str(tmp_path / "x.parquet"), "--store", str(store), "--store-run", "pq2", "--format", "runs"]
    r = runner.invoke(app, pq2)
    out = " ".join(r.output.split())
    assert r.exit_code == 2 and "is a run-store export" in out and "--out run.jsonl" in out
    r = runner.invoke(app, ["import", str(tmp_path / "x.jsonl"), "--store", str(store), "--store-run", "again"])
    assert r.exit_code == 0 and "imported 600 trials" in r.output
    with RunStore(store, read_only=True) as st:
        assert st.trials("again") == st.trials("ex")


def test_cli_runs_on_a_missing_store_exits_2(tmp_path):
    r = runner.invoke(app, ["runs", "list", "--store", str(tmp_path / "none.duckdb")])
    assert r.exit_code == 2 and "no run store" in r.output


# ---------------------------------------------------------------- kill -9


_IMPORT_WORKER = """
import sys, time
from pathlib import Path
from agentstats.records.trial import Trial
from agentstats.store import RunStore

store, marker, pause = sys.argv[1], Path(sys.argv[2]), sys.argv[3] == "pause"

def trials():
    for i in range(400):
        if i == 300 and pause:
            marker.write_text("writing")
            time.sleep(60)
        yield Trial(agent="a", task_id=f"t{i // 4}", trial=i % 4, success=i % 3 == 0)

with RunStore(store) as st:
    r = st.import_trials(trials(), "big", batch_size=50, source_sha256="file-sha")
print(r.trials, r.unchanged)
"""


def _wait_for(path: Path, proc: subprocess.Popen, log: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert proc.poll() is None, log.read_text()
        assert time.monotonic() < deadline, "worker never reached the kill point"
        time.sleep(0.05)


@pytest.mark.slow  # kills and restarts an importing Python subprocess: about 5 s
def test_kill_9_during_an_import_then_rerun_loses_and_duplicates_nothing(tmp_path):
    store, marker = tmp_path / "s.duckdb", tmp_path / "marker"
    script = tmp_path / "worker.py"
    script.write_text(_IMPORT_WORKER)
    log = tmp_path / "worker.log"
    with open(log, "wb") as fh:
        proc = subprocess.Popen([sys.executable, str(script), str(store), str(marker), "pause"],
                                stdout=fh, stderr=fh)
    _wait_for(marker, proc, log)
    os.kill(proc.pid, signal.SIGKILL)  # six batches written inside the open transaction
    proc.wait()
    with RunStore(store) as st:
        assert st.runs().empty  # the uncommitted import left nothing
        assert st.con.execute("SELECT count(*) FROM trials").fetchall() == [(0,)]
    done = subprocess.run([sys.executable, str(script), str(store), str(marker), "go"], capture_output=True,
                          text=True, check=True)
    assert done.stdout.split() == ["400", "False"]
    again = subprocess.run([sys.executable, str(script), str(store), str(marker), "go"], capture_output=True,
                           text=True, check=True)
    assert again.stdout.split() == ["400", "True"]  # the same source again: skipped
    assert _count_rows(store, "trials") == 400
    with RunStore(store, read_only=True) as st:
        assert st.counts("big")["n"].sum() == 400


def test_counts_with_grid_gaps_match_to_counts(tmp_path):
    from agentstats.records.counts import to_counts

    trials = [t for t in _trials(n_tasks=4, n_trials=3) if (t.task_id, t.trial) not in {("t1", 1), ("t3", 0)}]
    trials.append(Trial(agent="b", task_id="t0", trial=0, status="infra_error"))  # b never tried t1..t3
    with RunStore(tmp_path / "s.duckdb") as st:
        st.import_trials(trials, "gappy")
        got = st.counts("gappy")
    want = to_counts(trials)
    pd.testing.assert_frame_equal(got, want)
    assert got.attrs["gaps"].n_absent == want.attrs["gaps"].n_absent == 2 + 3 * 3 + 2
    pd.testing.assert_frame_equal(got.attrs["gaps"].frame, want.attrs["gaps"].frame)


def test_gate_sign_offs_carry_only_to_the_same_inputs_calibration_set_included(tmp_path):
    def record(calib, signer):
        return {"schema": "agentstats.gate/1", "decision": "PASS", "config_sha256": "c0",
                "candidate": {"sha256": "x1"}, "baseline": {"sha256": "y1"},
                "judge_calibration": None if calib is None else {"sha256": calib},
                "sign_off": [{"name": signer, "at": "2026-12-01T00:00:00Z", "decision": "PASS"}]}

    with RunStore(tmp_path / "s.duckdb") as st:
        st.add_gate_decision(record(None, "A"))
        assert [s["name"] for s in st.add_gate_decision(record(None, "B"))["sign_off"]] == ["A", "B"]
        # a corrected (calibrated) decision is other inputs: nothing carried over, and back again per hash
        assert [s["name"] for s in st.add_gate_decision(record("k1", "C"))["sign_off"]] == ["C"]
        assert [s["name"] for s in st.add_gate_decision(record("k2", "D"))["sign_off"]] == ["D"]
        assert [s["name"] for s in st.add_gate_decision(record("k1", "E"))["sign_off"]] == ["C", "E"]
        assert [s["name"] for s in st.add_gate_decision(record(None, "F"))["sign_off"]] == ["A", "B", "F"]
        assert len(st.gate_decisions()) == 6


def _other_process_can_write(path: Path) -> bool:
    # DuckDB alone in the child (agentstats would take seconds to import): the lock is DuckDB's
    code = ("import sys, duckdb\n"
            f"try:\n    duckdb.connect({str(path)!r}).close()\nexcept duckdb.IOException as exc:\n"
            "    print(exc, file=sys.stderr)\n    sys.exit(3)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    if done.returncode == 3 and "lock" not in done.stderr.lower():
        raise AssertionError(done.stderr)
    return done.returncode != 3  # 3: refused by the lock; anything else got past it (and may have written)


def test_reading_a_store_this_process_holds_keeps_its_lock(tmp_path):
    """DuckDB locks the file with fcntl, and closing any descriptor of a file drops the process's locks on it: format
    sniffing and same-process reads must not open() a held store, or another process could write it at the same time.
    """
    path = tmp_path / "s.duckdb"
    trials = [Trial(agent="a", task_id=f"t{i}", trial=0, success=bool(i % 2)) for i in range(4)]
    with RunStore(path) as store:
        store.import_trials(trials, run="r")
    with agentstats.run("live", store=path):  # this process writes the file
        assert not _other_process_can_write(path)
        assert is_store_file(path)
        assert [t.success for t in agentstats.load_trials(path, run="r")] == [False, True, False, True]
        assert agentstats.load_counts(path, run="r")["c"].sum() == 2
        with RunStore.reader(path) as again:
            assert set(again.runs()["name"]) == {"r", "live"}
        assert not _other_process_can_write(path)  # still locked after all of that
    assert _other_process_can_write(path)  # and free once the run ended


def test_import_refuses_an_empty_result_and_a_reimport_with_other_options_and_shows_reader_notes(tmp_path):
    runner = CliRunner()
    store = tmp_path / "s.duckdb"
    trunc = tmp_path / "trunc.json"
    trunc.write_text('[{"task_id": 1, "trial": 0, "reward": 1')
    res = runner.invoke(app, ["import", str(trunc), "--store-run", "x", "--store", str(store), "--skip-bad"])
    # every record skipped: the loader's "nothing left" error (the store's own "no trial could be read" is the
    # fallback for readers that do not count what they kept)
    assert res.exit_code == 2 and "trunc.json: no usable records left after skipping 1 record:" in res.output
    spelled = tmp_path / "t.jsonl"
    spelled.write_text('{"agent": "a", "task_id": "t1", "trial": 0, "succes": true}\n'
                       '{"agent": "a", "task_id": "t2", "trial": 0, "success": false}\n')
    res = runner.invoke(app, ["import", str(spelled), "--store-run", "r", "--store", str(store)])
    assert res.exit_code == 0, res.output
    assert "line 1, field 'succes': unknown field 'succes': did you mean 'success'?" in res.output
    with RunStore(store, read_only=True) as st:
        assert list(st.runs()["name"]) == ["r"]  # the empty import left nothing
    res = runner.invoke(app, ["import", str(spelled), "--store-run", "r", "--store", str(store)])
    assert res.exit_code == 0 and "nothing imported" in res.output  # the same file and options: a safe rerun
    tau = tmp_path / "tau.json"
    tau.write_text(json.dumps([{"task_id": i, "trial": 0, "reward": float(i % 2), "info": {}, "traj": []}
                               for i in range(3)]))
    res = runner.invoke(app, ["import", str(tau), "--store-run", "tau", "--store", str(store), "--agent", "a"])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["import", str(tau), "--store-run", "tau", "--store", str(store), "--agent", "b"])
    assert res.exit_code == 2 and "imported with other options" in res.output and "--replace" in res.output


def test_a_duplicated_key_in_an_imported_file_is_named_by_line_and_skipped_with_skip_bad(tmp_path):
    runner = CliRunner()
    store = tmp_path / "s.duckdb"
    p = tmp_path / "dup.jsonl"
    recs = [("t1", True), ("t2", True), ("t3", False), ("t1", False)]
    p.write_text("".join(json.dumps({"agent": "a", "task_id": t, "trial": 0, "success": s,
                                     "interactions": [{"query": t, "answer": str(s)}]}) + "\n" for t, s in recs))
    res = runner.invoke(app, ["import", str(p), "--store-run", "r", "--store", str(store)])
    assert res.exit_code == 2
    assert ("line 4, field '(agent, task_id, trial)': duplicate trial key ('a', 't1', 0), first seen at line 1"
            in res.output)
    res = runner.invoke(app, ["import", str(p), "--store-run", "r", "--store", str(store), "--skip-bad"])
    assert res.exit_code == 0, res.output
    assert "skipped 1 record" in res.output and "imported 3 trials (3 interactions" in res.output
    trials = {t.task_id: t for t in agentstats.load_trials(store, run="r")}
    assert trials["t1"].success is True and [i.answer for i in trials["t1"].interactions] == ["True"]  # the first


def test_one_import_error_names_both_a_bad_record_and_a_duplicated_key(tmp_path):
    # before: the streamed import raised the record's problem alone; the duplicate surfaced only after a fix
    from agentstats.store.importing import import_file

    p = tmp_path / "both.jsonl"
    recs = [{"agent": "a", "task_id": "t1", "trial": 0, "success": True},
            {"agent": "a", "task_id": "t1", "trial": 1, "success": True},  # same agent and task, other trial
            {"task_id": "t2", "trial": 0, "success": True},  # line 3: no agent
            {"agent": "a", "task_id": "t1", "trial": 0, "success": False},  # line 4: the key of line 1
            {"agent": "b", "task_id": "t1", "trial": 0, "success": False}]  # same task and trial, other agent
    p.write_text("".join(json.dumps(r) + "\n" for r in recs))
    store = tmp_path / "s.duckdb"
    with RunStore(store) as st:
        with pytest.raises(LoadError) as info:
            import_file(st, p, run="r")
        assert [(q.line, q.field) for q in info.value.problems] == [(3, "agent"), (4, "(agent, task_id, trial)")]
        assert "duplicate trial key ('a', 't1', 0), first seen at line 1" in info.value.problems[1].message
        text = str(info.value)
        assert text.startswith(f"2 problems in {p}:") and f"{p}, line 3, field 'agent'" in text
        assert f"{p}, line 4, field '(agent, task_id, trial)'" in text and "--skip-bad" not in text
        assert st.runs().empty  # rolled back
    res = runner.invoke(app, ["import", str(p), "--store-run", "r", "--store", str(store)])
    assert res.exit_code == 2 and "line 3, field 'agent'" in res.output and "line 4, field '(agent" in res.output
    with RunStore(store) as st, pytest.warns(LoadWarning) as caught:  # skip mode: both out, the other 3 in
        result = import_file(st, p, run="r", on_error="skip")
    assert sorted(q.line for q in result.skipped) == [3, 4] and result.trials == 3
    said = " ".join(str(w.message) for w in caught)
    assert "skipped 1 record with 1 problem" in said and "skipped 1 record with a duplicated trial key" in said


def test_estimate_on_a_store_names_the_run_in_its_title(tmp_path):
    store = tmp_path / "s.duckdb"
    with RunStore(store) as st:
        st.import_trials([Trial(agent="a", task_id=f"t{i}", trial=0, success=bool(i % 2)) for i in range(4)],
                         run="nightly")
    res = CliRunner(env={"COLUMNS": "200"}).invoke(app, ["estimate", str(store)])
    assert res.exit_code == 0, res.output
    assert "s.duckdb:nightly: unbiased estimators" in res.output

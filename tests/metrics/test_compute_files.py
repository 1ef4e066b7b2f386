"""compute_files: trial files scored shard by shard, each read by its worker, give compute()'s frame of all trials.

The expected frames are computed by compute() over Trial records built from the same dicts (not read back from the
files), and the expected errors are written out by hand, with the file and line each shard's reader gives.
"""

from __future__ import annotations

import concurrent.futures as cf
import re
from pathlib import Path

import pandas as pd
import pytest
from parallel_helpers import trial_records as _records
from parallel_helpers import write_shards

from agentstats.io import LoadError, save_trials
from agentstats.metrics import MetricInputError, compute, compute_files, get_metric
from agentstats.metrics.sharded import shard_files
from agentstats.records.trial import Trial

#: Cheap metrics of every level: per trial (latency, output_tokens), per interaction, per node (node_tokens).
METRICS = ["answer_similarity", "faithfulness", "latency", "output_tokens", "tool_calls_correct",
           get_metric("output_tokens", level="node", name="node_tokens")]


def _same_rows(got: pd.DataFrame, want: pd.DataFrame) -> None:
    """The frames equal, cell for cell (attrs compared apart by each test)."""
    pd.testing.assert_frame_equal(got, want, check_flags=False)
    assert got.attrs["metrics"] == want.attrs["metrics"]


@pytest.fixture(scope="module")
def shards(tmp_path_factory) -> tuple[Path, dict[str, Path], list[Trial]]:
    folder = tmp_path_factory.mktemp("shards")
    records = _records(23)
    paths = write_shards(folder, records)
    (folder / "_SUCCESS").write_text("")  # what Spark leaves beside its files
    (folder / ".hidden.jsonl").write_text("not read\n")
    return folder, paths, [Trial(**r) for r in records]


def _errors(paths: dict[str, Path]) -> list[str]:
    """The two metric errors of the records, located as each shard's reader locates them (a shard-relative line)."""
    return [f"{paths['a.jsonl']}, line 8: trial a1/t3/1: metric latency: interaction 0: usage.latency_s must be a "
            "number, got 'slow'",
            f"{paths['b.jsonl.gz']}, line 3: metric node_tokens: trial a1/t5/1 interaction 0: field nodes must be a "
            "list of objects"]


def test_a_folder_of_shards_gives_the_frame_of_all_its_trials(shards):
    folder, paths, trials = shards
    assert shard_files(folder) == [(str(paths["a.jsonl"]), "jsonl"), (str(paths["b.jsonl.gz"]), "jsonl"),
                                   (str(paths["c.json"]), "json")]
    want = compute(trials, METRICS, errors="collect")
    assert len(want) > 100 and want["metric"].nunique() == 6
    local = compute_files(folder, METRICS, errors="collect")
    _same_rows(local, want)
    assert local.attrs["errors"] == _errors(paths)
    with cf.ThreadPoolExecutor(max_workers=3) as pool:
        threads = compute_files(folder, METRICS, errors="collect", executor=pool)
    _same_rows(threads, want)
    assert threads.attrs == local.attrs


def test_shards_in_the_order_given_and_a_metric_error_raised_with_its_file_and_line(shards):
    _, paths, trials = shards
    order = [paths["c.json"], paths["a.jsonl"]]
    want = compute(trials[16:] + trials[:9], "latency,answer_similarity", errors="collect")
    _same_rows(compute_files(order, "latency,answer_similarity", errors="collect"), want)
    with pytest.raises(MetricInputError, match=rf"^{re.escape(str(paths['a.jsonl']))}, line 8: trial a1/t3/1: "):
        compute_files(order, "latency")


def test_a_bad_record_is_named_by_file_line_and_field_and_collect_keeps_the_rest(tmp_path):
    records = _records(12)
    rows = [*records[:3], dict(records[3], trial="first"), *records[4:]]  # record 3 bad: line 1 of b.jsonl
    split = {"a.jsonl": range(0, 3), "b.jsonl": range(3, 6), "c.jsonl.gz": range(6, 12)}
    paths = write_shards(tmp_path / "in", rows, split)
    with pytest.raises(LoadError, match=rf"{re.escape(str(paths['b.jsonl']))}, line 1, field 'trial'") as caught:
        compute_files(tmp_path / "in", "latency,answer_similarity")
    assert "errors='collect'" in str(caught.value) and "on_error" not in str(caught.value)  # this function's option
    assert [(p.source, p.line, p.field) for p in caught.value.problems] == [(str(paths["b.jsonl"]), 1, "trial")]
    got = compute_files(tmp_path / "in", "latency,answer_similarity", errors="collect")
    kept = [Trial(**r) for i, r in enumerate(records) if i != 3]
    _same_rows(got, compute(kept, "latency,answer_similarity", errors="collect"))
    assert got.attrs["errors"][0].startswith(f"{paths['b.jsonl']}, line 1, field 'trial': ")
    assert got.attrs["errors"][1:] == [f"{paths['c.jsonl.gz']}, line 2: trial a1/t3/1: metric latency: "
                                       "interaction 0: usage.latency_s must be a number, got 'slow'"]


def test_a_shard_that_cannot_be_read_at_all_is_listed_and_the_others_scored(tmp_path):
    records = _records(6)
    paths = write_shards(tmp_path, records, {"a.jsonl": range(0, 3), "b.jsonl": range(3, 6)})
    paths["b.jsonl"].write_text('{"agent": "x", "task_id": "t", "trial": "one"}\n'  # every record bad: nothing left
                                '{"agent": "y", "task_id": "t", "trial": "two"}\n')
    got = compute_files([paths["a.jsonl"], paths["b.jsonl"]], "output_tokens", errors="collect")
    _same_rows(got, compute([Trial(**r) for r in records[:3]], "output_tokens"))
    assert got.attrs["errors"] and all(e.startswith(f"{paths['b.jsonl']}, line ") for e in got.attrs["errors"])
    assert {e.split(",")[1] for e in got.attrs["errors"]} == {" line 1", " line 2"}


def test_sources_that_hold_no_trial_files_are_refused_by_name(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match=rf"^{re.escape(str(empty))} holds no trial files to score"):
        compute_files(empty, "latency")
    (empty / ".cache").mkdir()
    (empty / ".cache" / "x.jsonl").write_text("{}\n")
    (empty / "runs.jsonl.manifest.json").write_text("{}")
    with pytest.raises(ValueError, match="holds no trial files"):  # hidden folders and manifests are no shards
        compute_files(empty, "latency")
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "README.md").write_text("# shards of the March run\n")
    with pytest.raises(ValueError, match=rf"^{re.escape(str(notes))} holds README.md, which is not a trial file: "):
        compute_files(notes, "latency")
    counts = tmp_path / "counts"
    counts.mkdir()
    (counts / "cells.csv").write_text("agent,task_id,n,c\na,t1,3,1\n")
    with pytest.raises(ValueError, match=r"holds cells.csv, which is not a trial file: it holds counts"):
        compute_files(counts, "latency")
    with pytest.raises(FileNotFoundError, match="no such file or folder"):
        compute_files(tmp_path / "absent", "latency")
    with pytest.raises(ValueError, match="no shard files given"):
        compute_files([], "latency")
    with pytest.raises(ValueError, match="is a folder: give a folder alone"):
        compute_files([notes], "latency")


def test_batch_metrics_and_loader_options_that_cannot_apply_are_refused(shards):
    folder, _, _ = shards
    with pytest.raises(ValueError, match=r"answer_correctness is computed by one batch of requests .* score it with "
                       r"agentstats.metrics.compute on loaded trials"):
        compute_files(folder, "latency,answer_correctness")
    with pytest.raises(ValueError, match="on_error= does not apply: it follows errors="):
        compute_files(folder, "latency", on_error="skip")
    with pytest.raises(ValueError, match="agents= does not apply"):
        compute_files(folder, "latency", agents="a0")
    with pytest.raises(ValueError, match="errors must be 'raise' or 'collect'"):
        compute_files(folder, "latency", errors="ignore")
    with pytest.raises(ValueError, match="holds counts, not trials"):
        compute_files(folder, "latency", format="counts")


def test_the_format_given_reads_every_shard_and_manifests_are_checked(tmp_path):
    trials = [Trial(**r) for r in _records(4)]
    save_trials(trials[:2], tmp_path / "p1.jsonl")  # with a manifest beside it (not a shard)
    save_trials(trials[2:], tmp_path / "p2.jsonl")
    assert [Path(p).name for p, _ in shard_files(tmp_path, "jsonl")] == ["p1.jsonl", "p2.jsonl"]
    _same_rows(compute_files(tmp_path, "output_tokens", format="jsonl"), compute(trials, "output_tokens"))
    with open(tmp_path / "p2.jsonl", "ab") as fh:  # changed after it was written: refused, as load_trials refuses it
        fh.write(b"\n")
    with pytest.raises(LoadError, match=r"p2\.jsonl"):
        compute_files(tmp_path, "output_tokens")


@pytest.mark.slow
def test_a_process_pool_gives_the_in_process_frame(shards):
    folder, paths, trials = shards
    got = compute_files(folder, METRICS, errors="collect", executor="process", workers=2)
    _same_rows(got, compute(trials, METRICS, errors="collect"))
    assert got.attrs["errors"] == _errors(paths)
    with pytest.raises(MetricInputError, match=rf"^{re.escape(str(paths['a.jsonl']))}, line 8: trial a1/t3/1: "):
        compute_files(folder, "latency", executor="process", workers=2)


def test_a_partitioned_parquet_export_is_one_shard_per_file(tmp_path):
    """`runs export --partition-by run,agent` writes trial records (a JSON column): each file is a shard, read with
    the partition values of its path."""
    pytest.importorskip("duckdb")
    from agentstats.store import RunStore

    trials = [Trial(**r) for r in _records(7)]  # agents a0 and a1, alternating
    with RunStore(tmp_path / "s.duckdb") as st:
        st.import_trials(trials, "r1")
        st.import_trials(trials[:3], "r2")
        st.export_dataset(tmp_path / "ds", partition_by="run,agent")
    run = tmp_path / "ds" / "run=r1"
    assert shard_files(run) == [(str(run / "agent=a0" / "part-0.parquet"), "parquet_dataset"),
                                (str(run / "agent=a1" / "part-0.parquet"), "parquet_dataset")]
    by_agent = [t for t in trials if t.agent == "a0"] + [t for t in trials if t.agent == "a1"]
    _same_rows(compute_files(run, METRICS, errors="collect"), compute(by_agent, METRICS, errors="collect"))
    # the whole dataset holds two runs: their frames would mix (the same trial keys twice), so it needs run=
    with pytest.raises(ValueError, match=r"holds the trials of several runs \(r1, r2\).*run='NAME'.*run=r1"):
        compute_files(tmp_path / "ds", "output_tokens")
    r2 = [t for t in trials[:3] if t.agent == "a0"] + [t for t in trials[:3] if t.agent == "a1"]
    _same_rows(compute_files(tmp_path / "ds", "output_tokens", run="r2"), compute(r2, "output_tokens"))
    with pytest.raises(ValueError, match=r"has no run 'r3'; its runs: r1, r2"):
        compute_files(tmp_path / "ds", "output_tokens", run="r3")


def test_a_text_column_missing_in_one_shard_keeps_the_in_process_type(tmp_path):
    records = [{"agent": "a", "task_id": f"t{i}", "trial": 0, "interactions": [{"answer": "x y"}]} for i in range(4)]
    for r in records[:2]:
        r["risk_level"] = "high"  # shard a only: shard b's risk_level column is all missing
    write_shards(tmp_path, records, {"a.jsonl": range(0, 2), "b.jsonl": range(2, 4)})
    want = compute([Trial(**r) for r in records], "output_tokens")
    assert want["risk_level"].dtype != object
    _same_rows(compute_files(tmp_path, "output_tokens"), want)

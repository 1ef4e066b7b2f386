"""Damaged or impossible input is a located error with exit 2, never "unexpected" with exit 1."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentstats.cli import app

runner = CliRunner()
ROWS = [{"agent": "a", "task_id": f"t{i % 40}", "trial": i // 40, "success": i % 3 == 0} for i in range(200)]


def _jsonl(path: Path, rows=ROWS) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _estimate(*args: str):
    return runner.invoke(app, ["estimate", *args, "--n-boot", "0"])


def _located(res, *says: str) -> None:
    assert res.exit_code == 2, res.output
    assert "unexpected" not in res.output and "Traceback" not in res.output, res.output
    for s in says:
        assert s in res.output, res.output


def test_a_trial_number_beyond_int64_is_located(tmp_path):
    src = tmp_path / "t.jsonl"
    src.write_text('{"agent": "a", "task_id": "t", "trial": 1000000000000000000000000000000, "success": true}\n')
    _located(_estimate(str(src)), "line 1, field 'trial'", "less than 9223372036854775808")
    res = runner.invoke(app, ["import", str(src), "--store", str(tmp_path / "s.duckdb"), "--store-run", "r"])
    _located(res, "line 1, field 'trial'")


def test_a_lone_surrogate_is_located(tmp_path):
    src = tmp_path / "t.jsonl"
    src.write_text('{"agent": "a\\ud800", "task_id": "t", "trial": 0, "success": true}\n')
    _located(_estimate(str(src)), "line 1, field 'agent'", "lone surrogate")


def test_a_corrupt_gzip_stream_is_named(tmp_path):
    data = gzip.compress(_jsonl(tmp_path / "plain.jsonl").read_bytes())
    src = tmp_path / "t.jsonl.gz"
    src.write_bytes(data[:20] + b"\x00" * 50 + data[70:])  # deflate data overwritten: zlib.error, not OSError
    _located(_estimate(str(src)), "t.jsonl.gz", "cannot decompress")
    _located(_estimate(str(src), "--format", "jsonl"), "t.jsonl.gz")


@pytest.mark.parametrize("cut", ["half", "tail"])
def test_a_truncated_parquet_file_is_named(tmp_path, cut):
    import pandas as pd

    whole = tmp_path / "whole.parquet"
    pd.DataFrame(ROWS).to_parquet(whole)
    data = whole.read_bytes()
    src = tmp_path / "t.parquet"
    src.write_bytes(data[: len(data) // 2] + b"PAR1" if cut == "half" else data[:-10])
    _located(_estimate(str(src)), "t.parquet: not a readable Parquet file")
    _located(_estimate(str(src), "--format", "runs"), "t.parquet", "not a readable Parquet file")


def test_a_truncated_run_store_is_named(tmp_path):
    store = tmp_path / "s.duckdb"
    assert runner.invoke(app, ["import", str(_jsonl(tmp_path / "t.jsonl")), "--store", str(store),
                               "--store-run", "r1"]).exit_code == 0
    data = store.read_bytes()
    cut = tmp_path / "cut.duckdb"
    cut.write_bytes(data[: len(data) // 2])
    _located(_estimate(str(cut), "--run", "r1"), "cut.duckdb: the run store cannot be read")


def test_run_on_a_file_that_is_not_a_store(tmp_path):
    src = _jsonl(tmp_path / "t.jsonl")
    _located(_estimate(str(src), "--run", "r1"), "--run picks a run of a run store;", "t.jsonl is read as 'jsonl'")
    from agentstats.io import load_trials
    from agentstats.io.loaders import UnknownOptionError

    with pytest.raises(TypeError, match="picks a run of a run store"):  # still a TypeError to Python callers
        load_trials(src, run="r1")
    assert issubclass(UnknownOptionError, ValueError)


def test_base_url_that_is_not_a_url_is_a_config_error(tmp_path):
    from loop_helpers import BASE_URL, make_world

    from agentstats.llm.endpoint import Endpoint

    cfg = make_world(tmp_path, n=4)
    cfg.write_text(cfg.read_text().replace(BASE_URL, "not a url"))
    res = runner.invoke(app, ["loop", "--config", str(cfg), "--run-dir", str(tmp_path / "run")])
    _located(res, "field 'agent.base_url': base_url must be an http:// or https:// URL", "field 'judge.base_url'")
    assert not (tmp_path / "run").exists() or not any((tmp_path / "run").iterdir())
    src = tmp_path / "a.jsonl"
    src.write_text(json.dumps({"agent": "A", "task_id": "q", "trial": 0,
                               "interactions": [{"query": "q", "answer": "a", "expected_answer": "b"}]}) + "\n")
    res = runner.invoke(app, ["score", str(src), "--judge", "openai", "--base-url", "ftp:/x"])
    _located(res, "base_url must be an http:// or https:// URL")
    assert len(res.output.strip().splitlines()) == 1
    for ok in ("https://api.openai.com/v1", "http://127.0.0.1:8080/v1", None):
        assert Endpoint(model="m", base_url=ok).base_url == ok


def test_a_corrupt_eval_member_is_located(tmp_path):
    import struct
    import zipfile

    pytest.importorskip("zstandard")
    src = Path(__file__).resolve().parents[1] / "data" / "inspect_mockllm.eval"
    data = bytearray(src.read_bytes())
    with zipfile.ZipFile(src) as z:
        info = next(i for i in z.infolist() if i.filename.startswith("samples/"))
    name_len, extra_len = struct.unpack("<HH", data[info.header_offset + 26: info.header_offset + 30])
    start = info.header_offset + 30 + name_len + extra_len
    for j in range(start + 5, start + 40):  # the member's compressed bytes, damaged in place
        data[j] ^= 0x5A
    bad = tmp_path / "bad.eval"
    bad.write_bytes(bytes(data))
    _located(_estimate(str(bad)), f"field '{info.filename}'", "corrupt Zstandard data")

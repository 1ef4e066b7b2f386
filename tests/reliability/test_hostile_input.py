"""Large or hostile input is a located error with exit 2 (or is read), never a hang, a crash or "unexpected"."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentstats.cli import app

runner = CliRunner()


def _ok(path: Path, n: int = 12) -> Path:
    path.write_text("".join(json.dumps({"agent": "a", "task_id": f"t{i % 4}", "trial": i // 4, "success": i % 2 == 0})
                            + "\n" for i in range(n)))
    return path


@pytest.fixture
def alarm():
    """Fail instead of hanging: SIGALRM after 20 s raises in the test."""
    def ring(signum, frame):
        raise TimeoutError("blocked for 20 s")

    old = signal.signal(signal.SIGALRM, ring)
    signal.alarm(20)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


@pytest.mark.parametrize("depth", [5000, 100_000])
def test_a_first_line_nested_too_deep_is_a_located_problem_in_format_detection(tmp_path, depth):
    src = tmp_path / "deep.jsonl"
    deep = '{"a":' * depth + "1" + "}" * depth
    src.write_text('{"agent": "a", "task_id": "t", "trial": 0, "success": true, "meta": ' + deep + "}\n"
                   + json.dumps({"agent": "a", "task_id": "t", "trial": 1, "success": True}) + "\n")
    res = runner.invoke(app, ["estimate", str(src)])  # no --format: content detection reads the first line
    assert res.exit_code == 2, res.output
    assert "line 1: JSON nested too deeply" in res.output and "unexpected" not in res.output
    skipped = runner.invoke(app, ["estimate", str(src), "--skip-bad"])
    assert skipped.exit_code == 0 and "skipped 1 record" in skipped.output


@pytest.mark.parametrize("args", [["estimate"], ["estimate", "--format", "jsonl"], ["fit"], ["report"],
                                  ["import", "--store-run", "r"]], ids=lambda a: "-".join(a))
def test_a_named_pipe_as_input_is_refused_at_once(tmp_path, alarm, args):
    fifo = tmp_path / "trials.jsonl"
    os.mkfifo(fifo)
    extra = ["--store", str(tmp_path / "s.duckdb")] if args[0] == "import" else []
    extra += ["--out-dir", str(tmp_path / "out")] if args[0] == "report" else []
    res = runner.invoke(app, [args[0], str(fifo), *args[1:], *extra])
    assert res.exit_code == 2, res.output
    assert "is a named pipe (FIFO): give a regular file" in res.output
    assert not (tmp_path / "out").exists()


def test_n_boot_has_a_bound(tmp_path):
    from agentstats.estimators._checks import check_n_boot
    from agentstats.intervals import MAX_N_BOOT

    src = _ok(tmp_path / "ok.jsonl")
    res = runner.invoke(app, ["estimate", str(src), "--n-boot", str(10**11)])
    assert res.exit_code == 2 and "--n-boot must be at most 1,000,000" in res.output
    assert runner.invoke(app, ["compare", str(src), str(src), "--n-boot", str(10**7)]).exit_code == 2
    assert check_n_boot(MAX_N_BOOT, "f") == 10**6
    with pytest.raises(ValueError, match="n_boot must be at most 1,000,000"):
        check_n_boot(MAX_N_BOOT + 1, "f")
    from agentstats.report.params import ReportParams

    with pytest.raises(ValueError, match="at most 1,000,000"):
        ReportParams(input_path=str(src), n_boot=10**11)


@pytest.mark.slow  # a 10 MB answer imported (DuckDB runs out at 512 MB, then again at its own limit): about 4 s
def test_import_of_a_trial_with_a_10_mb_field(tmp_path):
    from agentstats.store import RunStore

    big = "x" * 10_000_000
    src = tmp_path / "big.jsonl"
    src.write_text("".join(json.dumps({"agent": "a", "task_id": f"t{i % 20}", "trial": i // 20, "success": True,
                                       "interactions": [{"query": "q", "answer": big if i == 0 else "a"}]}) + "\n"
                           for i in range(200)))
    res = runner.invoke(app, ["import", str(src), "--store", str(tmp_path / "s.duckdb"), "--store-run", "r"])
    assert res.exit_code == 0, res.output
    with RunStore(tmp_path / "s.duckdb", read_only=True) as st:
        lengths = st.con.execute("SELECT length(answer) FROM interactions ORDER BY length(answer) DESC LIMIT 2")
        assert [r[0] for r in lengths.fetchall()] == [10_000_000, 1]
        assert st.con.execute("SELECT current_setting('memory_limit')").fetchone()[0] == "488.2 MiB"

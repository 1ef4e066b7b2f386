"""SIGTERM is handled as Ctrl-C is, everywhere: exit 143, child processes ended, partial files removed, a capture
flushed and marked interrupted. The subprocess tests are bounded (every wait has a deadline) and kill what they start.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import duckdb
import psutil
import pytest
import typer
from typer.testing import CliRunner

from agentstats._util.signals import Terminated, exit_status, sigterm_exits, stop_signals_ignored
from agentstats.cli.common import EXIT_INTERRUPTED, EXIT_TERMINATED, CommandGroup, command

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "data" / "example_trials.jsonl"
ENV = {**os.environ, "TERM": "dumb", "PYTHONPATH": str(REPO / "tests")}


def _app(body):
    app = typer.Typer(cls=CommandGroup)

    @app.command()
    @command
    def go() -> None:
        body()

    @app.command()
    def other() -> None:  # a second command, so that typer keeps the group
        pass

    return app


def _swallowed_then(exc: BaseException):
    def body():
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # the handler raises before this ends
        except KeyboardInterrupt:
            pass  # what nutpie and jupyter do with an interrupt
        raise exc

    return body


def test_exit_statuses_are_128_plus_the_signal():
    assert exit_status(signal.SIGINT) == EXIT_INTERRUPTED == 130
    assert exit_status(signal.SIGTERM) == EXIT_TERMINATED == 143
    assert issubclass(Terminated, KeyboardInterrupt)  # every `except KeyboardInterrupt` cleanup runs for SIGTERM


@pytest.mark.parametrize("then", [None, IndexError("empty trace"), SystemError("pymc"), typer.Exit(1)],
                         ids=["raised", "then-IndexError", "then-SystemError", "then-exit-1"])
def test_sigterm_in_a_command_is_one_line_and_143(then):
    body = (lambda: (os.kill(os.getpid(), signal.SIGTERM), time.sleep(5))) if then is None else _swallowed_then(then)
    before = signal.getsignal(signal.SIGTERM)
    res = CliRunner().invoke(_app(body), ["go"])
    assert res.exit_code == 143, res.output
    assert res.output.strip() == "terminated" and "Traceback" not in res.output
    assert signal.getsignal(signal.SIGTERM) is before  # the command's handler is gone afterwards


def test_sigint_still_130():
    res = CliRunner().invoke(_app(lambda: (os.kill(os.getpid(), signal.SIGINT), time.sleep(5))), ["go"])
    assert res.exit_code == 130 and res.output.strip() == "interrupted"


def test_stop_signals_are_ignored_while_a_failed_report_is_written():
    with stop_signals_ignored():
        os.kill(os.getpid(), signal.SIGTERM)  # would end the test process if it were not ignored
        os.kill(os.getpid(), signal.SIGINT)
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_sigterm_exits_only_replaces_the_default_action():
    undo = sigterm_exits()
    try:
        with pytest.raises(SystemExit) as info:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
        assert info.value.code == 143
    finally:
        undo()
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    mine = signal.signal(signal.SIGTERM, lambda *a: None)
    try:
        handler = signal.getsignal(signal.SIGTERM)
        undo = sigterm_exits()  # a program's own handler is kept
        assert signal.getsignal(signal.SIGTERM) is handler
        undo()
        assert signal.getsignal(signal.SIGTERM) is handler
    finally:
        signal.signal(signal.SIGTERM, mine)


def _wait_for(predicate, timeout: float, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    proc.kill()
    out, err = proc.communicate(timeout=30)
    pytest.fail(f"not reached in {timeout} s (exit {proc.returncode}): {out[-2000:]} {err[-2000:]}")


def _end(proc: subprocess.Popen, sig: int = signal.SIGTERM, timeout: float = 120) -> tuple[str, str]:
    proc.send_signal(sig)
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        for child in psutil.Process(proc.pid).children(recursive=True):
            child.kill()
        proc.kill()
        proc.communicate(timeout=30)
        pytest.fail(f"no exit {timeout} s after the signal")


CAPTURE = textwrap.dedent("""
    import sys, time
    import agentstats

    @agentstats.node("app")
    def app(state):
        return state["query"].upper()

    with agentstats.run("killed", store=sys.argv[1], flush_interval=3600, flush_every=10**9) as run:
        for i in range(int(sys.argv[2])):
            app({"task_id": f"t{i}", "query": "q"})
        print("ready", flush=True)
        time.sleep(120)
""")


@pytest.mark.slow  # a Python start with agentstats imported: about 3 s
def test_sigterm_during_a_capture_flushes_its_buffer_and_marks_it_interrupted(tmp_path):
    store = tmp_path / "runs.duckdb"
    proc = subprocess.Popen([sys.executable, "-c", CAPTURE, str(store), "250"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=ENV, cwd=tmp_path)
    assert proc.stdout is not None
    _wait_for(lambda: proc.stdout.readline().strip() == "ready", 60, proc)
    _, err = _end(proc)
    assert proc.returncode == 143, err
    con = duckdb.connect(str(store), read_only=True)
    status = con.execute("SELECT status FROM runs WHERE name = 'killed'").fetchone()[0]
    n = con.execute("SELECT count(*) FROM trials").fetchone()[0]
    con.close()
    assert status == "interrupted" and n == 250  # nothing was flushed before the signal: all 250 came from it


def _children(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


@pytest.mark.slow  # PyMC compiles and starts its chain processes: 10-30 s
def test_sigterm_during_a_pymc_fit_ends_its_chain_workers(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "agentstats", "fit", str(EXAMPLE), "--sampler", "pymc",
                             "--chains", "2", "--draws", "200000", "--tune", "500"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    seen: list[psutil.Process] = []

    def workers() -> bool:
        kids = [c for c in _children(proc.pid) if "python" in (c.name() or "").lower()]
        seen[:] = kids
        return len(kids) >= 2

    _wait_for(workers, 240, proc)
    time.sleep(2)  # the chains are sampling
    _, err = _end(proc)
    try:
        assert proc.returncode == 143, err
        assert "terminated" in err and "Traceback" not in err, err
        _, alive = psutil.wait_procs(seen, timeout=30)
        assert alive == [], f"chain workers left running: {[p.pid for p in alive]}"
    finally:
        for p in seen:
            if p.is_running():
                p.kill()


@pytest.mark.slow  # the real report's kernel: about 30 s
def test_sigterm_during_a_real_report_leaves_only_the_marked_partial_notebook(tmp_path):
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentstats", "report", str(EXAMPLE), "--out-dir", str(out), "--name", "r"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV,
    )
    running = out / ".r.running.ipynb"
    _wait_for(running.exists, 180, proc)
    time.sleep(8)  # well into the notebook
    kids = _children(proc.pid)
    _, err = _end(proc)
    try:
        assert proc.returncode == 143, err
        assert "Traceback" not in err and "ZMQError" not in err, err
        assert sorted(os.listdir(out)) == ["r.failed.ipynb"]
        nb = json.loads((out / "r.failed.ipynb").read_text())
        assert nb["metadata"]["agentstats"]["status"] == "interrupted"
        _, alive = psutil.wait_procs(kids, timeout=30)
        assert alive == [], "the kernel was left running"
    finally:
        for p in kids:
            if p.is_running():
                p.kill()


KILLED = textwrap.dedent("""
    import sys, time
    import agentstats

    @agentstats.node("app")
    def app(state):
        return state["query"].upper()

    interval, every, n = float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    run = agentstats.start_run("killed", store=sys.argv[1], flush_interval=interval, flush_every=every)
    for i in range(n):
        app({"task_id": f"t{i}", "query": "q"})
    time.sleep(interval + 0.3 if interval < 60 else 0)
    app({"task_id": "last", "query": "q"})  # a call after the interval: the time rule writes the buffer
    print("ready", flush=True)
    time.sleep(120)
""")


@pytest.mark.slow  # two Python starts with agentstats imported: about 6 s
@pytest.mark.parametrize(("interval", "every", "stored"), [(3600, 100, 200), (0.2, 10**9, 251)],
                         ids=["by-count", "by-time"])
def test_kill_9_loses_at_most_one_flush_and_readers_see_the_run_interrupted(tmp_path, interval, every, stored):
    from agentstats.store import RunStore

    store = tmp_path / "runs.duckdb"
    proc = subprocess.Popen([sys.executable, "-c", KILLED, str(store), str(interval), str(every), "250"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV, cwd=tmp_path)
    assert proc.stdout is not None
    _wait_for(lambda: proc.stdout.readline().strip() == "ready", 60, proc)
    _end(proc, signal.SIGKILL)
    assert proc.returncode == -signal.SIGKILL
    with RunStore(store, read_only=True) as st:  # a reader: nothing rewrites the file
        assert st.run_info("killed")["status"] == "interrupted"
        assert st.runs()["status"].tolist() == ["interrupted"]
        assert st.run_info("killed")["records"]["trials"] == stored
    con = duckdb.connect(str(store), read_only=True)
    assert con.execute("SELECT status FROM runs").fetchone()[0] == "running"  # the file says so until next written
    con.close()


def test_sigterm_during_runs_export_leaves_the_previous_file_and_no_temporary(tmp_path, monkeypatch):
    """`runs export` writes through files.atomic.atomic_path: SIGTERM mid-COPY exits 143 and leaves nothing new."""
    from agentstats.store import RunStore

    src = tmp_path / "t.jsonl"
    src.write_text("".join(json.dumps({"agent": "a", "task_id": f"t{i}", "trial": 0, "success": True}) + "\n"
                           for i in range(20)))
    store = tmp_path / "s.duckdb"
    assert CliRunner().invoke(_cli(), ["import", str(src), "--store", str(store), "--store-run", "r"]).exit_code == 0
    out = tmp_path / "out" / "r.parquet"
    out.parent.mkdir()
    out.write_bytes(b"the previous export")

    def killed_midway(self, run, path, table="trials"):  # export_parquet's write, its COPY cut short by SIGTERM
        from agentstats.files.atomic import atomic_path

        with atomic_path(path) as tmp:
            Path(tmp).write_bytes(b"PAR1 half")  # what DuckDB's COPY had written when the signal came
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)

    monkeypatch.setattr(RunStore, "export_parquet", killed_midway)
    res = CliRunner().invoke(_cli(), ["runs", "export", "r", "--store", str(store), "--out", str(out), "--force"])
    assert res.exit_code == 143 and res.output.strip().endswith("terminated"), res.output
    assert out.read_bytes() == b"the previous export" and sorted(os.listdir(out.parent)) == ["r.parquet"]


def _cli():
    from agentstats.cli import app

    return app

"""Wall time and peak memory of a whole ``agentstats report`` run (run by hand; results in docs/benchmarks.md).

Run:  .venv/bin/python benchmarks/bench_report.py [--sizes 25x500x1] [--exe .venv/bin/agentstats] [--cold]
      [--no-write] [--results FILE.jsonl] [--label TEXT]

Per size ``AxTxN`` (agents x tasks x trials per cell) the trials are simulated with the project's own simulator
(:func:`agentstats.simulate.simulate_trials`, seed 35; agent effects ``Normal(0, 1)`` from that seed, sorted), written
as JSONL to a temporary folder, and ``agentstats report FILE --out-dir TMP`` (the defaults: bootstrap, paired
differences, the Bayesian fit, every figure, the HTML) runs in a fresh process. Unless ``--cold``, the same command
runs once before the measured run, so that the model's compiled form is in the on-disk caches ("warm": a user's
second report of data of this shape). ``--exe`` measures another checkout's command (e.g. main's, for "before").

Reported: wall time, the peak resident memory summed over the command and all its child processes (the notebook's
kernel; sampled every 0.1 s with psutil, ``peak_rss_tree_mb``), the largest single process's peak (``ru_maxrss`` of the
children, what ``/usr/bin/time -v`` reports, ``peak_rss_max_mb``), CPU time, the 1-minute load average before and after
(other work on the 2-core machine stretches wall time, not CPU time) and the progress lines' timings of each step.
Goal: 25 x 500 x 1 in <= 2 min warm on 2 cores and <= 1.5 GB.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def write_trials(size: str, folder: Path, seed: int = 35) -> Path:
    """Simulate ``AxTxN`` trials (module docstring) and write them as JSONL; return the path."""
    import numpy as np

    from agentstats.io import save_trials
    from agentstats.simulate import simulate_trials

    n_agents, n_tasks, n_trials = (int(x) for x in size.split("x"))
    rng = np.random.default_rng(seed)
    effects = np.sort(rng.normal(0.0, 1.0, n_agents))[::-1]
    agents = {f"agent-{i:02d}": float(a) for i, a in enumerate(effects)}
    runs = simulate_trials(agents, n_tasks=n_tasks, n_trials=n_trials, seed=seed)
    path = folder / f"sim_{size}.jsonl"
    save_trials(runs.trials, path)
    return path


def _tree_rss(pid: int) -> int:
    import psutil

    try:
        proc = psutil.Process(pid)
        procs = [proc, *proc.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0
    total = 0
    for p in procs:
        try:
            total += p.memory_info().rss
        except psutil.NoSuchProcess:
            pass
    return total


def run_report(exe: str, trials: Path, out_dir: Path) -> dict:
    """Run the report command once; return wall time, peaks, CPU time and the step lines."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.Popen([exe, "report", str(trials), "--out-dir", str(out_dir)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    peak = [0]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.1):
            peak[0] = max(peak[0], _tree_rss(proc.pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, err = proc.communicate()
    wall = time.perf_counter() - start
    done.set()
    sampler.join()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"report failed ({proc.returncode}):\n{err[-3000:]}")
    steps = {m.group(1): m.group(2) for m in re.finditer(r"\[agentstats\] (.+?): done \((.+?)\)", err)}
    return {
        "wall_s": round(wall, 1),
        "peak_rss_tree_mb": round(peak[0] / 2**20),
        "peak_rss_max_mb": round(after.ru_maxrss / 1024),
        "cpu_s": round((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), 1),
        "steps": steps,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="25x500x1")
    ap.add_argument("--exe", default=str(ROOT / ".venv" / "bin" / "agentstats"))
    ap.add_argument("--cold", action="store_true", help="no unmeasured run first")
    ap.add_argument("--label", default="", help="recorded in the row (e.g. 'before', 'after')")
    ap.add_argument("--results", default=str(ROOT / "benchmarks" / "results" / "bench_report.jsonl"))
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    for size in args.sizes.split(","):
        with tempfile.TemporaryDirectory(prefix="bench-report-") as tmp:
            trials = write_trials(size, Path(tmp))
            if not args.cold:
                run_report(args.exe, trials, Path(tmp) / "warm")
            load_before = os.getloadavg()[0]
            row = run_report(args.exe, trials, Path(tmp) / "out")
        row = {"size": size, "label": args.label, "exe": args.exe, "warm": not args.cold,
               "load_1min_before": round(load_before, 2), "load_1min_after": round(os.getloadavg()[0], 2),
               "date": datetime.now(UTC).isoformat(timespec="seconds"), **row}
        print(json.dumps(row))
        if not args.no_write:
            with open(args.results, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(row) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()

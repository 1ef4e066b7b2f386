"""Run one benchmark case in a fresh Python process and measure it (shared by ``bench_store.py``, ``bench_parquet.py``).

Imported by the benchmark scripts, which run as ``python benchmarks/bench_*.py`` (their folder is on ``sys.path``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time


def run_case(code: str, case: str, *args: str) -> dict:
    """Run ``python -c code case *args``; return the JSON object of its last stdout line with the measurements added.

    ``wall_s`` (seconds, parent's clock, process start included), ``cpu_s`` (user + system seconds of the child) and
    ``rss_mb`` (the child's peak resident memory, ``ru_maxrss`` from ``os.wait4``: the interpreter and its imports
    included). A child that fails ends the benchmark naming the case.
    """
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", code, case, *args], stdout=subprocess.PIPE, text=True)
    out = proc.stdout.read() if proc.stdout else ""  # read before waiting: a full pipe would block the child
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if proc.stdout:
        proc.stdout.close()
    if status != 0:
        raise SystemExit(f"{case} failed ({status})")
    rec = json.loads(out.strip().splitlines()[-1])
    rec.update(wall_s=wall, cpu_s=usage.ru_utime + usage.ru_stime, rss_mb=usage.ru_maxrss / 1024)
    return rec


def print_table(rows: list[tuple[str, dict]], preamble: str) -> None:
    """Print ``preamble`` (the machine and its load) and one Markdown row per ``(label, run_case result)``."""
    print(f"\n{preamble}\n")
    print("| operation | wall time (s) | CPU time (s) | timed part (s) | peak RSS (MB) |")
    print("|---|---|---|---|---|")
    for label, r in rows:
        print(f"| {label} | {r['wall_s']:.1f} | {r['cpu_s']:.1f} | {r['timed_s']:.2f} | {r['rss_mb']:,.0f} |")


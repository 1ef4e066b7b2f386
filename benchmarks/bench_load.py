"""Loading speed and memory: a million trial lines, a million-row counts table, library and command line.

Run:  python benchmarks/bench_load.py [--lines 1000000] [--rows 1000000] [--repeats 3] [--workdir DIR] [--only TEXT]

Generates the inputs (seeded) under ``--workdir`` (a temporary folder by default), then runs each case in a fresh
Python process and reports the best wall time of ``--repeats`` runs and that process's peak resident memory
(``ru_maxrss`` of the child, from ``os.wait4``; it includes the interpreter and imported libraries); a case
that takes over a minute runs once. Prints a
Markdown table for docs/benchmarks.md, section "Loading". Nothing is asserted: speed goals live in the docs.

Inputs:

* ``trials.jsonl``: 10 agents x (lines / 100) tasks x 10 trials of the project's flat JSONL (about 70 bytes a
  line: agent, task_id, trial, success; 2% infrastructure errors, 3% agent errors), the shape
  ``agentstats simulate`` writes;
* ``trials_usage.jsonl``: the same trials, each with a ``usage`` object (latency, tokens);
* ``trials_conv.jsonl``: the same trials, each with a one-turn conversation (``interactions``), which only the
  record-by-record reader takes (pydantic validation of every trial, no trial kept in memory);
* ``counts.csv``: ``rows`` (agent, task_id, n, c, n_missing) rows, 10 agents x (rows / 10) tasks;
* when ``../shared/data`` is beside the checkout: METR's run table and a tau-bench result file, read in place.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"
AGENTSTATS = str(Path(sys.executable).with_name("agentstats"))


def make_trials(path: Path, lines: int, *, usage: bool, conversation: bool = False, seed: int = 0) -> None:
    """Write ``lines`` trial records (10 agents x lines/100 tasks x 10 trials)."""
    rng = np.random.default_rng(seed)
    n_tasks = lines // 100
    u = rng.random(lines)
    p = rng.beta(2, 2, size=10 * n_tasks).repeat(10)
    with open(path, "w", encoding="utf-8") as fh:
        i = 0
        for a in range(10):
            for t in range(n_tasks):
                for trial in range(10):
                    head = f'{{"agent":"agent-{a:02d}","task_id":"task-{t:06d}","trial":{trial}'
                    if u[i] < 0.02:
                        body = ',"status":"infra_error"'
                    elif u[i] < 0.05:
                        body = ',"status":"agent_error"'
                    else:
                        body = f',"success":{"true" if rng.random() < p[i] else "false"}'
                    if usage:
                        body += f',"usage":{{"latency_s":{1 + u[i]:.3f},"input_tokens":{100 + i % 50}}}'
                    if conversation:
                        body += f',"interactions":[{{"query":"What is {i % 97} + 1?","answer":"{i % 97 + 1}"}}]'
                    fh.write(head + body + "}\n")
                    i += 1


def make_counts(path: Path, rows: int, seed: int = 1) -> None:
    """Write a counts table of ``rows`` rows (10 agents x rows/10 tasks)."""
    rng = np.random.default_rng(seed)
    n_tasks = rows // 10
    n = rng.integers(1, 17, size=rows)
    c = rng.binomial(n, rng.beta(1, 1, size=rows))
    miss = rng.binomial(2, 0.05, size=rows)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("agent,task_id,n,c,n_missing\n")
        i = 0
        for a in range(10):
            for t in range(n_tasks):
                fh.write(f"agent-{a:02d},task-{t:06d},{n[i]},{c[i]},{miss[i]}\n")
                i += 1


def run(cmd: list[str]) -> tuple[float, float, int, str]:
    """Run ``cmd``; returns (wall seconds, peak RSS in MB, exit status, last line of stderr)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=REPO)
    assert proc.stderr is not None
    err = proc.stderr.read().decode(errors="replace").strip().splitlines()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_maxrss / 1024, proc.returncode, (err[-1] if err else "")


def library(call: str, path: Path) -> list[str]:
    """A child process that imports agentstats.io, then times only ``call`` (printed to stderr)."""
    code = (
        "import sys, time\n"
        "from agentstats.io import load_counts, load_trials\n"
        f"path = {str(path)!r}\n"
        "t = time.perf_counter()\n"
        f"out = {call}\n"
        "print(f'{time.perf_counter() - t:.3f} s for {len(out):,} rows', file=sys.stderr)\n"
    )
    return [sys.executable, "-c", code]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--only", default=None, help="run only the cases whose label contains this text")
    args = parser.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="agentstats-bench-load-"))
    work.mkdir(parents=True, exist_ok=True)
    trials, trials_usage, counts = work / "trials.jsonl", work / "trials_usage.jsonl", work / "counts.csv"
    trials_conv = work / "trials_conv.jsonl"
    t0 = time.perf_counter()
    if not trials.exists():
        make_trials(trials, args.lines, usage=False)
    if not trials_usage.exists():
        make_trials(trials_usage, args.lines, usage=True)
    if not trials_conv.exists():
        make_trials(trials_conv, args.lines, usage=False, conversation=True)
    if not counts.exists():
        make_counts(counts, args.rows)
    print(f"inputs in {work} ({time.perf_counter() - t0:.0f} s to generate)", file=sys.stderr)

    lines, rows = f"{args.lines:,}", f"{args.rows:,}"
    cases = [
        (f"`load_counts`, {lines} flat trial lines ({trials.stat().st_size / 1e6:.0f} MB)",
         library("load_counts(path)", trials)),
        ("`agentstats estimate --k 1 --n-boot 200`, same file (load + estimate)",
         [AGENTSTATS, "estimate", str(trials), "--k", "1", "--n-boot", "200", "--json"]),
        ("`agentstats estimate` (defaults: k = 1..10, 2,000 resamples), same file",
         [AGENTSTATS, "estimate", str(trials), "--json"]),
        (f"`load_counts`, {lines} trial lines with `usage` ({trials_usage.stat().st_size / 1e6:.0f} MB)",
         library("load_counts(path)", trials_usage)),
        (f"`load_counts`, {lines} trial lines with a conversation ({trials_conv.stat().st_size / 1e6:.0f} MB): "
         "record by record", library("load_counts(path)", trials_conv)),
        ("`load_trials`, same file: every trial kept as a `Trial` (for scoring)",
         library("load_trials(path)", trials_conv)),
        (f"`load_counts`, {rows}-row counts CSV ({counts.stat().st_size / 1e6:.0f} MB)",
         library("load_counts(path)", counts)),
        ("`agentstats estimate --k 1 --n-boot 200`, same counts table",
         [AGENTSTATS, "estimate", str(counts), "--k", "1", "--n-boot", "200", "--json"]),
    ]
    metr = SHARED / "metr-time-horizon" / "all_runs.jsonl.gz"
    tau = SHARED / "tau-bench-historical" / "gpt-4o-airline.json.gz"
    if metr.exists() and tau.exists():
        cases += [
            ("`load_trials`, METR `all_runs.jsonl.gz` (7,063 runs, real data)", library("load_trials(path)", metr)),
            ("`load_counts`, same file", library("load_counts(path)", metr)),
            ("`load_trials`, tau-bench `gpt-4o-airline.json.gz` (200 trials with conversations, real data)",
             library("load_trials(path)", tau)),
        ]
    else:
        print(f"real data not found under {SHARED}: its cases are left out", file=sys.stderr)
    print(f"Measured {time.strftime('%Y-%m-%d')} on {platform.machine()} ({os.cpu_count()} CPUs), Python "
          f"{platform.python_version()}; best of {args.repeats}.\n")
    print("| input and call | wall time (s) | timed part (library call) | peak RSS (MB) |")
    print("|---|---|---|---|")
    for label, cmd in cases:
        if args.only and args.only not in label:
            continue
        best = None
        for _ in range(args.repeats):
            wall, rss, code, last = run(cmd)
            if code != 0:
                raise SystemExit(f"{label}: exit {code}: {last}")
            if best is None or wall < best[0]:
                best = (wall, rss, last)
            if wall > 60:  # slow cases run once
                break
        assert best is not None
        wall, rss, last = best
        timed = last.split(" s for")[0] if " s for" in last else ""
        print(f"| {label} | {wall:.1f} | {timed} | {rss:.0f} |", flush=True)
    print(json.dumps({"workdir": str(work)}), file=sys.stderr)


if __name__ == "__main__":
    main()

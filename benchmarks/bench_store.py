"""Run store at scale: import a million trials with conversations, then count them in SQL.

Run:  taskset -c 1 python benchmarks/bench_store.py [--trials 250000,500000,1000000] [--workdir DIR]

Generates (seeded) ``trials_conv_N.jsonl``: 10 agents x (N / 100) tasks x 10 trials of the project's JSONL, each
trial with one interaction (query, answer, expected answer) and one tool call, 2% infrastructure errors. Then, each in
a fresh Python process: ``agentstats.store.importing.import_file`` into a new store (the JSONL read line by line,
every record validated, streamed to DuckDB as Arrow record batches through one ``INSERT`` inside one transaction);
``RunStore.counts`` (SQL, then the one counts builder); and ``agentstats.load_counts`` on the store (what
``agentstats estimate`` does). Reports wall time and the child's peak resident memory (``ru_maxrss`` from
``os.wait4``, interpreter and libraries included) and CPU time (user + system: on a shared machine the wall time also
holds waiting for the core). ``--memory-limit`` sets DuckDB's limit for the import (``RunStore(memory_limit=)``,
default 512MB): DuckDB keeps written blocks cached up to it, so the peak RSS is the interpreter and libraries plus
at most that limit, whatever the number of trials. Prints a Markdown table for docs/benchmarks.md, section "Run
store", and the load average when it started and ended. Several sizes (``--trials 250000,500000,1000000``): the
import is timed at each, the counts at the largest; memory bounded means the import's peak RSS does not grow with
the number of trials.
Goals: import <= 60 s, counts <= 1 s, memory bounded.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

import numpy as np
from _measure import print_table, run_case

CHILD = r"""
import sys, time, json
t0 = time.perf_counter()
from agentstats.store import RunStore
from agentstats.store.importing import import_file
import agentstats
case, src, store, limit = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
t1 = time.perf_counter()
if case == "import":
    with RunStore(store, memory_limit=limit) as st:
        r = import_file(st, src, run="big")
    out = r.trials
elif case == "counts":
    with RunStore(store, read_only=True) as st:
        t1 = time.perf_counter()
        out = int(st.counts("big")["n"].sum())
else:
    t1 = time.perf_counter()
    out = int(agentstats.load_counts(store, run="big")["n"].sum())
print(json.dumps({"timed_s": time.perf_counter() - t1, "result": out}))
"""


def write_trials(path: Path, n: int, seed: int = 20261201) -> None:
    rng = np.random.default_rng(seed)
    n_tasks = max(1, n // 100)
    u = rng.random(n)
    with open(path, "w", encoding="utf-8") as fh:
        i = 0
        for a in range(10):
            for t in range(n_tasks):
                for k in range(10):
                    status = "infra_error" if u[i] < 0.02 else "completed"
                    ok = bool(u[i] > 0.5)
                    rec = {"agent": f"agent-{a}", "task_id": f"task-{t:06d}", "trial": k, "status": status,
                           "success": ok,
                           "interactions": [{"id": "m0", "query": f"What is item {t}?", "answer": "yes" if ok else "no",
                                             "expected_answer": "yes",
                                             "tool_calls": [{"name": "lookup", "arguments": {"item": t}, "id": "c1"}]}]}
                    fh.write(json.dumps(rec) + "\n")
                    i += 1


def run_child(case: str, src: Path, store: Path, limit: str = "512MB") -> dict:
    return run_case(CHILD, case, str(src), str(store), limit)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", default="1000000", help="comma-separated sizes (trials per file)")
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--memory-limit", default="512MB", help="DuckDB memory limit of the import (RunStore default)")
    args = ap.parse_args()
    sizes = sorted(int(x) for x in str(args.trials).split(","))
    work = args.workdir or Path(tempfile.mkdtemp(prefix="bench_store_"))
    work.mkdir(parents=True, exist_ok=True)
    load_start = os.getloadavg()
    rows = []
    for n in sizes:
        src = work / f"trials_conv_{n}.jsonl"
        if not src.exists():
            write_trials(src, n)
        store = work / f"bench_{n}.duckdb"
        for f in (store, store.with_name(store.name + ".wal")):
            f.unlink(missing_ok=True)
        mb = src.stat().st_size / 1e6
        imp = run_child("import", src, store, args.memory_limit)
        rows.append((f"import {imp['result']:,} trials with a conversation and a tool call ({mb:.0f} MB JSONL), "
                     f"DuckDB memory limit {args.memory_limit}", imp))
        if n == sizes[-1]:
            cnt = run_child("counts", src, store)
            rows.append((f"`RunStore.counts` of that run ({cnt['result']:,} scored trials)", cnt))
            lca = run_child("load_counts", src, store)
            rows.append(("`load_counts(store, run=...)` (what `agentstats estimate` reads)", lca))
            size = store.stat().st_size / 1e6
    load_end = os.getloadavg()
    print_table(rows, f"store file ({sizes[-1]:,} trials): {size:.0f} MB; {os.cpu_count()} CPUs visible; "
          f"taskset: {os.sched_getaffinity(0)}; load average (1, 5, 15 min) at start "
          f"{', '.join(f'{x:.1f}' for x in load_start)}, at end {', '.join(f'{x:.1f}' for x in load_end)}")


if __name__ == "__main__":
    main()

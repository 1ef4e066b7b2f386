"""Trials -> cells through a hive-partitioned Parquet dataset versus the run store it was exported from.

Run:  .venv/bin/python benchmarks/bench_parquet.py [--trials 1000000,10000000] [--threads 2] [--workdir DIR]
      [--direct 100000000]  (``--trials ''`` with ``--direct``: only the direct sizes)

For each size N, a run store is filled in SQL (DuckDB generates the rows: 10 agents x (N / 100) tasks x 10 trials,
seeded outcomes with 2 % missing, a small trial record as JSON; the store's import path is measured in
bench_store.py and skipped here), then, each in a fresh Python process: ``RunStore.export_dataset`` (``agentstats
runs export --partition-by run,agent``: DuckDB's ``COPY ... PARTITION_BY``); ``load_counts(store, run=...)`` (the
store's SQL counts); ``load_counts(dataset)`` (one ``GROUP BY`` over ``read_parquet(..., hive_partitioning =
true)``, no trial in Python). Both counts must agree cell for cell (checked through their sums and a checksum).
Reports wall time, CPU time (user + system) and the child's peak resident memory (``ru_maxrss`` from ``os.wait4``,
interpreter and libraries included), with the load average at start and end (the machine is shared). DuckDB uses
``--threads`` threads (``SET threads``, default 2).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from _measure import print_table, run_case

CHILD = r"""
import sys, time, json, hashlib
import agentstats
from agentstats.store import RunStore
case, store, dataset, threads = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
import duckdb
t1 = time.perf_counter()
if case == "export":
    with RunStore(store, read_only=True) as st:
        st.con.execute(f"SET threads = {threads}")
        t1 = time.perf_counter()
        st.export_dataset(dataset, partition_by="run,agent")
    out = sum(1 for _ in __import__("pathlib").Path(dataset).rglob("*.parquet"))
else:
    counts = agentstats.load_counts(store, run="big") if case == "store" else agentstats.load_counts(dataset)
    timed = time.perf_counter() - t1
    key = counts[["agent", "task_id", "n", "c", "n_missing"]].to_csv(index=False).encode()
    out = [int(counts["n"].sum()), int(counts["c"].sum()), int(counts["n_missing"].sum()), len(counts),
           hashlib.sha256(key).hexdigest()[:12]]
print(json.dumps({"timed_s": timed if case != "export" else time.perf_counter() - t1, "result": out}))
"""


#: The generated rows: ``i`` and a seeded uniform ``h`` that sets the outcome (missing below 0.02, success above 0.5).
_ROWS = "(SELECT i, (hash(i * 7919 + 20261203) % 1000000) / 1e6 AS h FROM range({n}) r(i))"


def make_store(path: Path, n: int) -> None:
    """Fill a store with one run of ``n`` trials generated in SQL (10 agents x n/100 tasks x 10 trials)."""
    from agentstats.records.trial import Trial
    from agentstats.store import RunStore

    n_tasks = max(1, n // 100)
    with RunStore(path) as st:
        st.import_trials([Trial(agent="seed", task_id="seed", trial=0, success=True)], "big")
        rid = st.run_id("big")
        st.con.execute("DELETE FROM trials")
        agent = f"'agent-' || (i // ({n_tasks} * 10))"
        task = f"'task-' || lpad(((i // 10) % {n_tasks})::VARCHAR, 7, '0')"
        st.con.execute(f"""
            INSERT INTO trials (run_id, seq, agent, task_id, trial, status, success, outcome, record)
            SELECT {rid}, i, {agent}, {task},
                   (i % 10)::INTEGER, CASE WHEN h < 0.02 THEN 'infra_error' ELSE 'completed' END, h > 0.5,
                   CASE WHEN h < 0.02 THEN 'missing' WHEN h > 0.5 THEN 'success' ELSE 'failure' END,
                   json_object('agent', {agent}, 'task_id', {task}, 'trial', i % 10, 'success', h > 0.5)
            FROM {_ROWS.format(n=n)}""")


def make_dataset(path: Path, n: int, threads: int, per_cell: int = 10) -> None:
    """Write ``n`` trial rows (10 agents x n/(10 per_cell) tasks x ``per_cell`` trials) straight into a dataset
    partitioned by run,agent.

    DuckDB generates the rows and writes them with ``COPY ... PARTITION_BY (run, agent)``, the layout and the columns
    that :func:`agentstats.load_counts` reads (``agent, task_id, trial, outcome_code``, the partition values); no store
    and no ``record`` column, so a size the store's export would take an hour to write (``--direct``) is cheap to make.
    Outcomes as in :func:`make_store` (seeded, 2 % missing).
    """
    import duckdb

    n_tasks = max(1, n // (10 * per_cell))
    con = duckdb.connect()
    con.execute(f"SET threads = {threads}")
    con.execute("SET enable_progress_bar = false")
    con.execute(f"""
        COPY (SELECT 'big' AS run, 'agent-' || (i // ({n_tasks} * {per_cell})) AS agent,
                     'task-' || lpad(((i // {per_cell}) % {n_tasks})::VARCHAR, 7, '0') AS task_id,
                     (i % {per_cell})::INTEGER AS trial,
                     CAST(CASE WHEN h < 0.02 THEN 2 WHEN h > 0.5 THEN 1 ELSE 0 END AS TINYINT) AS outcome_code
              FROM {_ROWS.format(n=n)})
        TO '{path}' (FORMAT parquet, PARTITION_BY (run, agent))""")
    con.close()


def run_child(case: str, store: Path, dataset: Path, threads: int) -> dict:
    return run_case(CHILD, case, str(store), str(dataset), str(threads))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", default="1000000", help="comma-separated sizes")
    ap.add_argument("--threads", type=int, default=2, help="DuckDB threads of the export")
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--per-cell", type=int, default=10, help="trials per cell of the --direct datasets")
    ap.add_argument("--direct", default="", help="comma-separated sizes written straight into a dataset by DuckDB "
                    "(no store, no record column): load_counts(dataset) only")
    args = ap.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="bench_parquet_"))
    work.mkdir(parents=True, exist_ok=True)
    load_start = os.getloadavg()
    rows = []
    for n in sorted(int(x) for x in str(args.trials).split(",") if x):
        store, dataset = work / f"big_{n}.duckdb", work / f"ds_{n}"
        if not store.exists():
            make_store(store, n)
        if dataset.exists():
            import shutil

            shutil.rmtree(dataset)
        exp = run_child("export", store, dataset, args.threads)
        size = sum(p.stat().st_size for p in dataset.rglob("*.parquet")) / 1e6
        rows.append((f"{n:,} trials: export to a dataset partitioned by run,agent ({exp['result']} files, "
                     f"{size:.0f} MB)", exp))
        st = run_child("store", store, dataset, args.threads)
        rows.append((f"{n:,} trials: `load_counts(store, run=...)`", st))
        ds = run_child("dataset", store, dataset, args.threads)
        rows.append((f"{n:,} trials: `load_counts(dataset_dir)`", ds))
        if st["result"] != ds["result"]:
            raise SystemExit(f"counts differ: store {st['result']} vs dataset {ds['result']}")
    for n in sorted(int(x) for x in str(args.direct).split(",") if x):
        dataset = work / f"direct_{n}_{args.per_cell}"
        if not dataset.exists():
            t0 = time.perf_counter()
            make_dataset(dataset, n, args.threads, args.per_cell)
            made = time.perf_counter() - t0
        else:
            made = float("nan")
        size = sum(p.stat().st_size for p in dataset.rglob("*.parquet")) / 1e6
        ds = run_child("dataset", work / "none.duckdb", dataset, args.threads)
        rows.append((f"{n:,} trials ({args.per_cell} a cell) written by DuckDB ({size:,.0f} MB, {made:.0f} s to "
                     f"write): `load_counts(dataset_dir)` -> {ds['result'][3]:,} cells", ds))
    load_end = os.getloadavg()
    print_table(rows, f"{os.cpu_count()} CPUs visible; load average (1, 5, 15 min) at start "
          f"{', '.join(f'{x:.1f}' for x in load_start)}, at end {', '.join(f'{x:.1f}' for x in load_end)}")


if __name__ == "__main__":
    main()

"""Derive the small real-data fixtures in this folder from ``../shared/data`` (run by hand when the data change).

The published-number tests read these fixtures, so they also run where ``../shared/data`` is absent;
``tests/io/test_fixtures.py`` checks that they still equal what this script derives when the data are present.

* ``tau_bench_gpt4o_airline_counts.csv``: tau-bench, gpt-4o on airline (50 tasks x 4 trials); success is
  ``reward`` within 1e-6 of 1 (tau-bench's rule). Source: ``tau-bench-historical/gpt-4o-airline.json.gz``.
* ``metr_counts.csv``: METR time-horizon runs, ``alias`` x ``task_id`` with ``n`` runs and ``c`` successes
  (``score_binarized``), every alias including ``human``. Source: ``metr-time-horizon/all_runs.jsonl.gz``.
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
SHARED_DATA = HERE.parents[2] / "shared" / "data"
TAU_SOURCE = Path("tau-bench-historical") / "gpt-4o-airline.json.gz"
METR_SOURCE = Path("metr-time-horizon") / "all_runs.jsonl.gz"
TAU_FIXTURE = HERE / "tau_bench_gpt4o_airline_counts.csv"
METR_FIXTURE = HERE / "metr_counts.csv"


def tau_counts(shared: Path = SHARED_DATA) -> pd.DataFrame:
    """Count table ``agent, task_id, n, c`` of tau-bench gpt-4o airline."""
    with gzip.open(shared / TAU_SOURCE, "rt", encoding="utf-8") as fh:
        records = json.load(fh)
    df = pd.DataFrame({"task_id": [r["task_id"] for r in records],
                       "c": [abs(float(r["reward"]) - 1.0) <= 1e-6 for r in records]})
    out = df.groupby("task_id").c.agg(n="size", c="sum").reset_index()
    out.insert(0, "agent", "gpt-4o")
    out["task_id"] = out.task_id.astype(str)
    return out.astype({"n": "int64", "c": "int64"})


def metr_counts(shared: Path = SHARED_DATA) -> pd.DataFrame:
    """Count table ``agent, task_id, n, c`` of the METR runs (agent = ``alias``)."""
    runs = pd.read_json(shared / METR_SOURCE, lines=True, compression="gzip")
    out = (runs.groupby(["alias", "task_id"], sort=True)["score_binarized"].agg(n="size", c="sum").reset_index()
           .rename(columns={"alias": "agent"}))
    return out.astype({"n": "int64", "c": "int64"})


def main() -> int:
    if not SHARED_DATA.is_dir():
        print(f"{SHARED_DATA} is absent: nothing to derive", file=sys.stderr)
        return 1
    tau_counts().to_csv(TAU_FIXTURE, index=False, lineterminator="\n")
    metr_counts().to_csv(METR_FIXTURE, index=False, lineterminator="\n")
    print(f"wrote {TAU_FIXTURE.name}, {METR_FIXTURE.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

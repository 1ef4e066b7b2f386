"""Speed of agentstats.estimators: vectorized per-cell estimators, the suite bootstrap and paired differences.

Run:  python benchmarks/bench_estimators.py [--repeats 3]

Prints a Markdown table (best wall time of ``--repeats`` runs) for docs/benchmarks.md, section "Estimators".
Data are simulated with a fixed seed; nothing is asserted (speed goals live in the docs, not in tests).
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np
import pandas as pd

from agentstats.estimators import (
    beta_pass_k,
    paired_pass_k,
    paired_pass_k_table,
    pass_at_k,
    pass_hat_k,
    suite_pass_k,
)


def best_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(0)

    cells = 1_000_000
    n = rng.integers(1, 17, size=cells)
    c = rng.binomial(n, rng.beta(1, 1, size=cells))
    k_mixed = rng.integers(1, 9, size=cells)
    n_big = np.full(cells, 10_000)
    c_big = rng.binomial(n_big, 0.9)

    # 10 agents x 1,000 tasks x 8 trials
    agents, tasks, trials = 10, 1000, 8
    p = rng.beta(1.5, 1.5, size=(agents, tasks))
    counts = pd.DataFrame(
        {
            "agent": np.repeat([f"agent{i}" for i in range(agents)], tasks),
            "task_id": np.tile(np.arange(tasks), agents),
            "n": trials,
            "c": rng.binomial(trials, p).ravel(),
            "n_missing": 0,
        }
    )

    rows = [
        ("pass_hat_k, 1e6 cells, n in 1..16, k = 4 (NaN where k > n)", lambda: pass_hat_k(n, c, 4)),
        ("pass_hat_k, 1e6 cells, n in 1..16, k mixed 1..8", lambda: pass_hat_k(n, c, k_mixed)),
        ("pass_at_k, 1e6 cells, n in 1..16, k mixed 1..8", lambda: pass_at_k(n, c, k_mixed)),
        ("pass_hat_k, 1e6 cells, n = 10,000, k = 100", lambda: pass_hat_k(n_big, c_big, 100)),
        (
            "beta_pass_k (ETI), 1e5 cells, k mixed 1..8",
            lambda: beta_pass_k(n[:100_000], c[:100_000], k_mixed[:100_000]),
        ),
        (
            "suite_pass_k, 10 agents x 1,000 tasks x 8 trials, k = 1..8, 2,000 bootstrap resamples",
            lambda: suite_pass_k(counts, k=range(1, 9), n_boot=2000, random_seed=0),
        ),
        (
            "suite_pass_k, same, k = 1 only",
            lambda: suite_pass_k(counts, k=[1], n_boot=2000, random_seed=0),
        ),
        (
            "paired_pass_k, 2 of those agents, k = 1..8, 2,000 paired bootstrap resamples",
            lambda: paired_pass_k(counts, "agent0", "agent1", k=range(1, 9), n_boot=2000, random_seed=0),
        ),
        (
            "paired_pass_k_table, all 45 pairs of the 10 agents, k = 1..8, 2,000 resamples",
            lambda: paired_pass_k_table(counts, k=range(1, 9), n_boot=2000, random_seed=0),
        ),
    ]
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
          f"numpy {np.__version__}; best of {args.repeats}\n")  # fmt: skip
    print("| operation | wall time (s) |")
    print("|---|---|")
    for label, fn in rows:
        print(f"| {label} | {best_time(fn, args.repeats):.3f} |")


if __name__ == "__main__":
    main()

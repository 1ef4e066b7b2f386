"""Post-processing of a fit on 1 thread and on ``POST_THREADS`` threads (run by hand; results in docs/benchmarks.md).

Run:  .venv/bin/python benchmarks/bench_post_threads.py [--size 20x500x4] [--repeats 3]

Fits the default model once (``bench_scale.simulate``, seed 0; 4 chains at fit's defaults), then times
``posterior_pass_k`` for the observed tasks and for new tasks (k = 1..8) with
``agentstats.models.families.base.POST_THREADS`` set to 1 and to its default (the CPUs available, at most 4), the two
settings alternating (this shared machine's speed swings: compare medians of alternating runs). It also prints the
largest difference between the two settings' numbers: the draws are the same (chunks are seeded by their task
blocks, not by the thread that draws them), and the chunks' sums may be grouped differently (rounding only).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", default="20x500x4")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    from bench_scale import simulate

    import agentstats.models.families.base as family
    from agentstats.models import fit
    from agentstats.posterior import posterior_pass_k

    a, t, n = (int(x) for x in args.size.split("x"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dt = fit(simulate(a, t, n), random_seed=1, check_convergence=False)
    ks = list(range(1, 9))
    default = family.POST_THREADS
    times: dict[tuple[str, int], list[float]] = {}
    results: dict[tuple[str, int], np.ndarray] = {}
    for _ in range(args.repeats):
        for threads in (1, default):
            family.POST_THREADS = threads
            for population in ("observed", "new"):
                start = time.perf_counter()
                table = posterior_pass_k(dt, ks, population=population)
                times.setdefault((population, threads), []).append(time.perf_counter() - start)
                results[(population, threads)] = np.concatenate([v.values.ravel() for v in table.data_vars.values()])
    family.POST_THREADS = default
    print(f"{args.size}, {dt.sampler.chains} chains x {dt.sampler.draws} draws; "
          f"POST_THREADS 1 and {default}, {args.repeats} alternating repeats (seconds):")
    for population in ("observed", "new"):
        one, many = (times[(population, th)] for th in (1, default))
        diff = np.nanmax(np.abs(results[(population, 1)] - results[(population, default)]))
        print(f"  {population}: 1 thread {' '.join(f'{x:.2f}' for x in one)} (median {statistics.median(one):.2f}); "
              f"{default} threads {' '.join(f'{x:.2f}' for x in many)} (median {statistics.median(many):.2f}); "
              f"speed-up {statistics.median(one) / statistics.median(many):.2f}x; largest difference {diff:.1e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

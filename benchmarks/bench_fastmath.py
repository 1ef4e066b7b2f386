"""Time of one log-density + gradient evaluation of the default model (run by hand; results in docs/benchmarks.md).

Run:  .venv/bin/python benchmarks/bench_fastmath.py [--size 20x500x4] [--repeats 3] [--calls 200]

Builds the default model (``zoi_beta_binomial``) on the counts of ``bench_scale.simulate`` (seed 0), compiles its
log-density and gradient with PyTensor's numba backend (the code nutpie calls) with fast-math off and on, and prints
milliseconds per evaluation for each repeat, the two settings alternating (this shared machine's speed swings, so
compare medians of alternating runs). Pin it to one CPU (``taskset -c 0``) for per-core figures.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def time_gradient(size: str, fastmath: bool, calls: int) -> float:
    """Milliseconds per log-density + gradient call at ``size`` (AxTxN) with the given fast-math setting."""
    import pytensor
    import pytensor.tensor as pt
    from bench_scale import simulate

    from agentstats.models._bb_kernel import register_numba
    from agentstats.models.data import prepare_counts
    from agentstats.models.families.registry import get_family
    from agentstats.models.priors import DEFAULT_PRIORS

    register_numba()
    a, t, n = (int(x) for x in size.split("x"))
    model, _ = get_family("zoi_beta_binomial").build(prepare_counts(simulate(a, t, n)), DEFAULT_PRIORS)
    values = model.value_vars
    logp = model.logp()
    with pytensor.config.change_flags(numba__fastmath=fastmath):
        f = pytensor.function(values, [logp, *pt.grad(logp, values)], mode="NUMBA")
    point = model.initial_point()
    rng = np.random.default_rng(1)
    args = [point[v.name] + 0.1 * rng.standard_normal(np.shape(point[v.name])) for v in values]
    f(*args)  # compile
    start = time.perf_counter()
    for _ in range(calls):
        f(*args)
    return (time.perf_counter() - start) / calls * 1e3


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", default="20x500x4")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--calls", type=int, default=200)
    args = ap.parse_args(argv)
    times: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(args.repeats):
        for fastmath in (False, True):
            times[fastmath].append(time_gradient(args.size, fastmath, args.calls))
    for fastmath, ms in times.items():
        print(f"{args.size} fastmath={fastmath}: " + " ".join(f"{x:.3f}" for x in ms)
              + f" ms (median {statistics.median(ms):.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

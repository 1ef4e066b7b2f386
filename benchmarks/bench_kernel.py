"""Where the cell kernel's time goes, per cell (run by hand; results in docs/models.md, "Compilation").

Run:  taskset -c 0 .venv/bin/python benchmarks/bench_kernel.py [--size 20x5000x4] [--repeats 5] [--calls 50]

On the counts of ``bench_scale.simulate`` (seed 0) at ``--size`` (AxTxN), with the cell inputs a fit meets near its
posterior (``eta`` the simulated logit cell means, ``phi`` the agents' concentrations, ``det`` 0.3 everywhere), times:

1. ``kernel``: the zero/one-inflated Beta-Binomial kernel (``agentstats.models._bb_kernel``: log-pmf and its three
   partial derivatives per cell), the loop the sampler's gradient spends its time in;
2. ``exp_log``: a numba loop over the same cells with only the kernel's one ``exp`` and one ``log`` per cell (the
   libm calls, which numba cannot vectorize without a vector math library), the floor of any scalar form of it.

Prints nanoseconds per cell for each repeat (the two alternate: this shared machine's speed swings; compare
medians) and the kernel's time per call at this size. Pin it to one CPU for per-core figures.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def cell_inputs(size: str) -> tuple[np.ndarray, ...]:
    """Kernel inputs ``eta, phi, det, c, n, log_comb`` for the cells of ``bench_scale.simulate`` at ``size``."""
    from bench_scale import simulate, truth
    from scipy.special import gammaln

    a, t, n_trials = (int(x) for x in size.split("x"))
    counts = simulate(a, t, n_trials, seed=0)  # cells agent by agent, as eta and phi below
    eta_at, phi_a = truth(a, t, np.random.default_rng(0))  # the truth simulate drew these counts from
    eta = eta_at.ravel()
    phi = np.repeat(phi_a, t)
    det = np.full(a * t, 0.3)
    c = counts["c"].to_numpy(np.int64)
    n = counts["n"].to_numpy(np.int64)
    log_comb = gammaln(n + 1) - gammaln(c + 1) - gammaln(n - c + 1)
    return eta, phi, det, c, n, log_comb


def _exp_log_loop():
    import numba

    @numba.njit(cache=False, nogil=True, error_model="numpy")
    def loop(eta, phi, out):  # pragma: no cover - compiled by numba
        for i in range(eta.shape[0]):
            out[i] = math.log(phi[i] + math.exp(-abs(eta[i])))

    return loop


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", default="20x5000x4")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--calls", type=int, default=50)
    args = ap.parse_args(argv)

    from agentstats.models._bb_kernel import _compiled

    eta, phi, det, c, n, log_comb = cell_inputs(args.size)
    cells = eta.shape[0]
    outs = [np.empty(cells) for _ in range(4)]
    kernel = _compiled()
    loop = _exp_log_loop()
    kernel(eta, phi, det, c, n, log_comb, *outs)  # compile / load before timing
    loop(eta, phi, outs[0])
    assert np.isfinite(outs[0]).all()

    def ns_per_cell(call) -> float:
        t0 = time.perf_counter()
        for _ in range(args.calls):
            call()
        return (time.perf_counter() - t0) / args.calls / cells * 1e9

    times: dict[str, list[float]] = {"kernel": [], "exp_log": []}
    for r in range(args.repeats):
        times["kernel"].append(ns_per_cell(lambda: kernel(eta, phi, det, c, n, log_comb, *outs)))
        times["exp_log"].append(ns_per_cell(lambda: loop(eta, phi, outs[0])))
        print(f"repeat {r + 1}: kernel {times['kernel'][-1]:.1f} ns/cell, exp+log {times['exp_log'][-1]:.1f} ns/cell",
              flush=True)
    k, e = statistics.median(times["kernel"]), statistics.median(times["exp_log"])
    print(f"{args.size} ({cells:,} cells): kernel median {k:.1f} ns/cell ({k * cells / 1e6:.2f} ms a call), "
          f"exp+log alone {e:.1f} ns/cell ({e / k:.0%} of the kernel)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

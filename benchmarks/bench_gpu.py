"""The default model at 100 agents x 10,000 tasks with numpyro on an accelerator (run by hand; never in tests).

Run (on a machine with a GPU and ``jax[cuda12]``; docs/benchmarks.md, "Scale", says how):

    .venv/bin/pip install -e '.[numpyro]' 'jax[cuda12]'
    .venv/bin/python benchmarks/bench_gpu.py                          # 100x10000x4: 1,000,000 cells
    .venv/bin/python benchmarks/bench_gpu.py --size 4x50x4            # a smoke run on CPU, under a minute

The counts are simulated as ``benchmarks/bench_scale.py`` draws them (:func:`bench_scale.simulate`: agent and task
effects, per-agent dispersion, 30 % deterministic cells; ``--data-seed``). ``agentstats.fit`` samples the default
model (``zoi_beta_binomial``, per-agent dispersion) with ``sampler="numpyro"``: PyMC compiles the model to JAX (the
Beta-Binomial cell kernel's JAX form, ``agentstats.models._bb_kernel.register_jax``) and numpyro runs the chains
**vectorized** (``chain_method="vectorized"``: one batched leapfrog step for all chains on one device) for ``--tune``
+ ``--draws`` iterations per chain, then ``diagnose`` computes R-hat and ESS. Printed as one JSON line: the device,
wall time (compilation included) and sampling time, worst R-hat, least ESS_bulk and ESS_tail, divergences, mean
leapfrog steps a draw, peak device memory (``jax.Device.memory_stats()["peak_bytes_in_use"]``; not reported by the
CPU backend) and the process's peak RSS. ``--results FILE.jsonl`` appends the row.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", default="100x10000x4", help="agents x tasks x trials per cell")
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--tune", type=int, default=1000)
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--target-accept", type=float, default=None, help="default: the family's for the data")
    ap.add_argument("--data-seed", type=int, default=0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--chain-method", default="vectorized", choices=("vectorized", "parallel", "sequential"))
    ap.add_argument("--results", type=Path, default=None, help="append the row to this JSONL file")
    args = ap.parse_args(argv)
    try:
        import jax
    except ImportError:
        print("bench_gpu needs JAX and numpyro: pip install -e '.[numpyro]' (and 'jax[cuda12]' for a GPU)",
              file=sys.stderr)
        return 2
    from bench_scale import simulate

    from agentstats.models import diagnose, fit

    a, t, n = (int(x) for x in args.size.split("x"))
    counts = simulate(a, t, n, seed=args.data_seed)
    device = jax.devices()[0]
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = fit(counts, sampler="numpyro", method="nuts", chains=args.chains, tune=args.tune, draws=args.draws,
                     target_accept=args.target_accept, random_seed=args.seed, check_convergence=False,
                     sample_kwargs={"nuts_sampler_kwargs": {"chain_method": args.chain_method}})
    wall = time.perf_counter() - t0
    diag = diagnose(result)
    stats = result.idata["sample_stats"].to_dataset() if "sample_stats" in result.idata.children else None
    # PyMC records the sampling time (compilation excluded) on the posterior or the sample_stats group
    sampling = next((result.idata[g].attrs["sampling_time"] for g in ("posterior", "sample_stats")
                     if g in result.idata.children and "sampling_time" in result.idata[g].attrs), None)
    mem = device.memory_stats() or {}
    row = dict(
        size=args.size, cells=a * t, device=f"{device.platform}:{getattr(device, 'device_kind', '')}",
        chains=args.chains, tune=args.tune, draws=args.draws, chain_method=args.chain_method,
        target_accept=result.sampler.target_accept,
        wall_s=round(wall, 1), sampling_s=round(float(sampling), 1) if sampling is not None else None,
        max_r_hat=round(float(diag.table.r_hat.max()), 4), min_ess_bulk=round(float(diag.table.ess_bulk.min())),
        min_ess_tail=round(float(diag.table.ess_tail.min())), divergences=int(diag.divergences),
        steps_per_draw=(round(float(stats["n_steps"].mean()), 1) if stats is not None and "n_steps" in stats
                        else None),
        peak_device_gb=(round(mem["peak_bytes_in_use"] / 2**30, 2) if "peak_bytes_in_use" in mem else None),
        peak_rss_gb=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),
        converged=bool(diag.ok), date=time.strftime("%Y-%m-%d %H:%M"), load_1min=round(os.getloadavg()[0], 1),
        versions={k: result.sampler.versions.get(k) for k in ("numpyro", "jax", "pymc")},
    )
    line = json.dumps(row)
    print(line, flush=True)
    if args.results is not None:
        with args.results.open("a") as fh:
            fh.write(line + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

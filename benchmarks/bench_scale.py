"""Time and memory of a default fit as the number of cells grows (run by hand; results in docs/benchmarks.md).

Run:  .venv/bin/python benchmarks/bench_scale.py [--sizes 20x500x4,20x1500x4,20x5000x4] [--pymc-ratio 20x500x4]
      [--timeout 1800] [--fit-options JSON] [--no-write] [--results FILE.jsonl] [--data-seed 0]
      [--truth scale|shared-spread]

Per size ``AxTxN`` (agents x tasks x trials per cell, simulated with known truth, ``--data-seed``, default 0), each
in a fresh Python process, compilation included. ``--truth scale`` (default): the default model's shape, agents of
different consistency (:func:`simulate`); ``--truth shared-spread``: ``bench_sampling.simulate_counts``, a crossed
logit-normal truth with one within-cell spread for every agent (where a centred per-agent dispersion diverges and
``fit`` refits non-centred: the ``dispersion`` and ``abandoned`` columns). The compiled model is kept in PyTensor's
on-disk cache, keyed on the graph, which holds the model and which cells are observed but not the counts: the first
run of a size compiles, later runs (same or new ``--data-seed``) load it (``compile_s``: model to sampler):

1. ``agentstats.fit(counts)`` at the defaults (model, dispersion, sampler, 4 chains; tuning steps and the draws kept
   are reported: these sizes stop at the first converged checkpoint, docs/models.md "Until converged");
2. ``diagnose``; posterior pass@k / pass^k for k = 1..8 on the observed tasks and for new tasks;
   ``consistency`` per agent.

Reported: wall time of 1 (``fit_s``) and of 1 + 2 (``total_s``, "to the diagnostics and the numbers"), the worst
R-hat and ESS_bulk, divergences, the stopping rule's checkpoints (draws: worst R-hat / least ESS), the mean
leapfrog steps a draw and adapted step size (``steps_per_draw``,
``step_size``: why larger fits take more than their share of time), the peak resident memory of the process
(``ru_maxrss``), its CPU time (user + system, ``cpu_s``; the sampler threads included) and the 1-minute load average
at the end (``load_1min``: other work on the machine stretches wall time, not CPU time).
For the sizes in
``--pymc-ratio`` the same model is also sampled with PyMC's own NUTS (``sampler="pymc"``) in the same run, and the
ratio of the two wall times is reported. Goals: 10,000 cells <= 45 s and <= 1 GB; 100,000 cells <= 5 min and <= 4 GB;
time and memory linear in cells. ``--fit-options '{"draws": 1000, "parameterization": {"dispersion": "centered"}}'``
passes keyword arguments to ``fit`` (recorded in the row's ``options`` column).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "validation"))


def truth(n_agents: int, n_tasks: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The logit cell means ``eta`` (agent, task) and per-agent concentrations ``phi`` that :func:`simulate` draws."""
    from scipy.special import expit

    alpha = rng.normal(0, 1, n_agents)
    beta = rng.normal(0, 1.5, n_tasks)
    rho = expit(rng.normal(-1.0, 0.7, n_agents))
    return 0.3 + alpha[:, None] + beta[None, :], (1 - rho) / rho


def simulate(n_agents: int, n_tasks: int, n_trials: int, seed: int = 0) -> pd.DataFrame:
    """Counts from the zero/one-inflated Beta-Binomial shape: agent and task effects, per-agent rho, 30 % det."""
    from scipy.special import expit

    rng = np.random.default_rng(seed)
    eta, phi = truth(n_agents, n_tasks, rng)
    m = expit(eta)
    p = rng.beta(m * phi[:, None], (1 - m) * phi[:, None])
    det = rng.random(m.shape) < 0.3
    p = np.where(det, (rng.random(m.shape) < m).astype(float), p)
    c = rng.binomial(n_trials, p)
    return pd.DataFrame({
        "agent": np.repeat([f"agent-{a:02d}" for a in range(n_agents)], n_tasks),
        "task_id": np.tile([f"task-{t:05d}" for t in range(n_tasks)], n_agents),
        "n": n_trials,
        "c": c.ravel(),
    })


def _counts(size: str, data_seed: int, truth: str) -> pd.DataFrame:
    """Simulated counts of ``size`` (AxTxN) for ``truth`` (module docstring)."""
    a, t, n = (int(x) for x in size.split("x"))
    if truth == "shared-spread":
        sys.path.insert(0, str(ROOT / "benchmarks"))
        from bench_sampling import simulate_counts

        return simulate_counts(a, t, n, seed=data_seed)
    return simulate(a, t, n, seed=data_seed)


def run_one(
    size: str, sampler: str | None, options: dict | None = None, data_seed: int = 0, truth: str = "scale"
) -> dict:
    """One fit and its post-processing in this process (called in a child process)."""
    import warnings

    from agentstats.models import diagnose, fit
    from agentstats.posterior import consistency, posterior_pass_k

    a, t, _ = (int(x) for x in size.split("x"))
    counts = _counts(size, data_seed, truth)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dt = fit(counts, random_seed=1, check_convergence=False, **({"sampler": sampler} if sampler else {}),
                 **(options or {}))
    fit_s = time.perf_counter() - t0
    diag = diagnose(dt)
    ks = list(range(1, 9))
    posterior_pass_k(dt, ks)
    posterior_pass_k(dt, ks, population="new")
    consistency(counts, dt)
    total_s = time.perf_counter() - t0
    checks = list(dt.sampler.checkpoints)
    stats = dt.idata["sample_stats"].to_dataset() if "sample_stats" in dt.idata.children else {}
    return dict(
        size=size,
        cells=a * t,
        method=dt.sampler.method,
        sampler=dt.sampler.sampler,
        options=json.dumps(options, sort_keys=True) if options else "",
        data_seed=data_seed,
        truth=truth,
        dispersion=dt.build.parameterization.get("dispersion", ""),
        # the stopping rule's checkpoints: draws, worst R-hat and least ESS at each (docs/models.md "Until converged")
        checkpoints="; ".join(f"{c['draws']}: {c.get('max_r_hat')} / {c.get('min_ess')}"
                              for c in checks if not c.get("abandoned")),
        abandoned="; ".join(f"{c['divergences']} div. at {c['draws']}" for c in checks if c.get("abandoned")),
        compile_s=dt.sampler.compile_seconds,
        fit_s=round(fit_s, 1),
        total_s=round(total_s, 1),
        # NaN for the Laplace tier: R-hat and ESS do not apply to its independent draws
        max_r_hat=round(float(diag.table.r_hat.max()), 4),
        min_ess_bulk=round(float(diag.table.ess_bulk.min())) if diag.table.ess_bulk.notna().any() else None,
        laplace_s=dt.sampler.laplace.get("seconds"),
        divergences=int(diag.divergences),
        target_accept=dt.sampler.target_accept,
        tune=dt.sampler.tune,
        draws=dt.sampler.draws,
        # leapfrog steps a draw and the adapted step size (nutpie and PyMC name them so): where the time goes
        steps_per_draw=round(float(stats["n_steps"].mean()), 1) if "n_steps" in stats else None,
        step_size=round(float(stats["step_size"].mean()), 3) if "step_size" in stats else None,
        peak_rss_gb=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),
        cpu_s=round(sum(resource.getrusage(resource.RUSAGE_SELF)[:2]), 1),
        load_1min=round(os.getloadavg()[0], 1),
    )


def agree_one(size: str, data_seed: int = 0) -> dict:
    """Fit one dataset by NUTS (fit's defaults) and by the Laplace tier; how far apart their numbers are.

    Per agent and quantity (pass@1, pass^4, pass^8 of the observed tasks; pass^1 and pass^4 of a new task): the
    difference of the posterior means and of the 95 % interval ends, over NUTS's posterior sd; the largest over
    agents and quantities, and the mean.
    """
    import warnings

    from agentstats.models import fit
    from agentstats.posterior import posterior_pass_k

    counts = _counts(size, data_seed, "scale")
    out: dict = dict(size=size, data_seed=data_seed)
    summaries = {}
    for method in ("nuts", "laplace"):
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            f = fit(counts, random_seed=1, check_convergence=False, method=method)
        out[f"{method}_fit_s"] = round(time.perf_counter() - t0, 1)
        obs = posterior_pass_k(f, [1, 4, 8])["pass_hat_k"]
        new = posterior_pass_k(f, [1, 4], population="new")["pass_hat_k"]
        summaries[method] = {
            name: (d.mean(("chain", "draw")).to_numpy(), d.std(("chain", "draw")).to_numpy(),
                   d.quantile([0.025, 0.975], ("chain", "draw")).to_numpy())
            for name, d in (("observed", obs), ("new", new))
        }
    for name in ("observed", "new"):
        m_n, sd_n, q_n = summaries["nuts"][name]
        m_l, _, q_l = summaries["laplace"][name]
        mean_d = np.abs(m_l - m_n) / sd_n
        end_d = np.abs(q_l - q_n) / sd_n
        out[f"{name}_mean_diff_sd_max"] = round(float(mean_d.max()), 3)
        out[f"{name}_mean_diff_sd_mean"] = round(float(mean_d.mean()), 3)
        out[f"{name}_ci_end_diff_sd_max"] = round(float(end_d.max()), 3)
        out[f"{name}_ci_end_diff_sd_mean"] = round(float(end_d.mean()), 3)
    out["peak_rss_gb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2)
    return out


def spawn(
    size: str, sampler: str | None, timeout: float, options: str | None = None, data_seed: int = 0, truth: str = "scale"
) -> dict:
    cmd = [sys.executable, __file__, "--one", size, "--data-seed", str(data_seed), "--truth", truth]
    cmd += ["--sampler", sampler] if sampler else []
    cmd += ["--fit-options", options] if options else []
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return dict(size=size, sampler=sampler or "default", note=f"stopped after {timeout:.0f} s")
    if proc.returncode != 0:
        return dict(size=size, sampler=sampler or "default", note="failed: " + proc.stderr.strip().splitlines()[-1])
    row = json.loads(proc.stdout.strip().splitlines()[-1])
    row["process_s"] = round(time.perf_counter() - t0, 1)
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="20x500x4,20x1500x4,20x5000x4")
    ap.add_argument("--pymc-ratio", default="20x500x4", help="sizes also sampled with PyMC's own NUTS")
    ap.add_argument("--timeout", type=float, default=1800.0)
    ap.add_argument("--fit-options", help="JSON object of keyword arguments for fit")
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--results", help="append every row as one JSON line to this file (kept under benchmarks/results)")
    ap.add_argument("--data-seed", type=int, default=0, help="seed of the simulated counts (a new seed: new data)")
    ap.add_argument("--truth", choices=["scale", "shared-spread"], default="scale", help="simulated truth")
    ap.add_argument("--agreement", help="sizes whose data are fitted by NUTS and by the Laplace tier in one process, "
                    "printing how far apart their numbers are (agree_one); nothing else runs")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--sampler", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        options = json.loads(args.fit_options) if args.fit_options else None
        print(json.dumps(run_one(args.one, args.sampler, options, args.data_seed, args.truth)))
        return 0
    if args.agreement:
        for size in args.agreement.split(","):
            row = agree_one(size, args.data_seed)
            row["date"] = time.strftime("%Y-%m-%d %H:%M")
            print(json.dumps(row), flush=True)
            if args.results:
                with open(args.results, "a", encoding="utf-8") as fh:
                    fh.write(json.dumps(row) + "\n")
        return 0
    rows: list[dict] = []

    def keep(row: dict) -> None:
        row["date"] = time.strftime("%Y-%m-%d %H:%M")
        rows.append(row)
        print(row, file=sys.stderr, flush=True)
        if args.results:
            with open(args.results, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(row) + "\n")

    for size in args.sizes.split(","):
        keep(spawn(size, None, args.timeout, args.fit_options, args.data_seed, args.truth))
        if size in args.pymc_ratio.split(","):
            keep(spawn(size, "pymc", args.timeout * 4, args.fit_options, args.data_seed, args.truth))
    df = pd.DataFrame(rows)
    from _docs import md_table, write_block

    cpus = len(os.sched_getaffinity(0))
    body = f"""Command: `.venv/bin/python benchmarks/bench_scale.py` ({time.strftime('%Y-%m-%d')}, {cpus} CPUs, each
size in a fresh process, compilation included; simulated counts with per-agent dispersion and 30 % deterministic
cells). Goals: 10,000 cells <= 45 s and <= 1 GB, 100,000 cells <= 5 min and <= 4 GB.

{md_table(df, floatfmt=".4g")}
"""
    print(body)
    if not args.no_write:
        write_block(ROOT / "docs" / "benchmarks.md", "bench_scale", body, "## Scale: time and memory of a default fit")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Simulation study: coverage of pass^k for the tasks in the data and for new tasks, with agent-specific consistency.

Run:  .venv/bin/python validation/consistency_study.py [--datasets 25] [--truth consistency|simulator] [--quick]
      .venv/bin/python validation/consistency_study.py --aggregate-only [--truth ...]

Truths (per dataset i, seed ``--seed + i``; ``--tasks`` tasks, default 40):

* ``consistency`` (default): three agents with the same mean success (``mu = 0``, no agent effect) and different
  consistency, intra-cell correlation ``rho = 0.2, 0.5, 0.8``: ``logit m[t] = beta[t] ~ Normal(0, 1)``,
  ``p[a, t] ~ Beta(m phi[a], (1 - m) phi[a])``, ``phi = (1 - rho) / rho``.
* ``simulator``: the project's own simulator (:func:`agentstats.simulate.simulate_trials`' model, the crossed
  logit-normal ``logit p = mu + alpha[a] + beta[t] + gamma[a, t]``, ``mu = 0.3``, ``alpha = (0, 0.6, -0.4)``,
  ``sigma_task = 1.5``, ``sigma_cell = 0.8``): the case where the new-task intervals were found too narrow.

The same p (common random numbers) is observed with 2, 4 and 8 trials per cell, ``c ~ Binomial(n, p)``, and fitted
with ``fit``'s defaults (the default model and sampler). Estimands, per agent and k = 1..8:

* ``observed``: the dataset's in-sample suite pass^k, ``mean_t p[a, t]^k`` (Yao et al. 2024, arXiv 2406.12045);
* ``new``: the population pass^k of a new task, ``E[p^k]`` under the generating model, computed by quadrature
  (``new_task_moments_beta`` / ``new_task_moments_logit_normal`` with the true parameters).

Reported: coverage of the 95 % credible intervals (goal 0.93-0.97) with its Monte Carlo error
``2 sqrt(c (1 - c) / N)`` over N (dataset, agent) pairs, the width, the RMSE of the posterior mean, and the model's
per-agent ICC against the truth (``consistency`` truth). Raw rows go to
``validation/results/consistency_study_<truth>.csv`` as fits finish; tables are written into ``docs/validation.md``.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import expit

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _docs import ROOT, md_table, write_block

KS = np.arange(1, 9)
DESIGNS = (2, 4, 8)
RHO = (0.2, 0.5, 0.8)
SIM = dict(mu=0.3, alpha=(0.0, 0.6, -0.4), sigma_task=1.5, sigma_cell=0.8)


def truth_p(truth: str, i: int, seed: int, n_tasks: int) -> np.ndarray:
    """True p (agent, task) of dataset ``i``."""
    rng = np.random.default_rng([seed, i, 0])
    if truth == "consistency":
        m = expit(rng.normal(0.0, 1.0, n_tasks))
        phi = (1.0 - np.asarray(RHO)) / np.asarray(RHO)
        return rng.beta(m[None, :] * phi[:, None], (1.0 - m[None, :]) * phi[:, None])
    beta = rng.normal(0.0, SIM["sigma_task"], n_tasks)
    gamma = rng.normal(0.0, SIM["sigma_cell"], (3, n_tasks))
    return expit(SIM["mu"] + np.asarray(SIM["alpha"])[:, None] + beta[None, :] + gamma)


def truth_new(truth: str) -> np.ndarray:
    """Population pass^k of a new task per (agent, k), by quadrature under the true parameters."""
    from agentstats.models.families.beta_binomial import new_task_moments_beta
    from agentstats.models.families.logit_normal import new_task_moments_logit_normal

    if truth == "consistency":
        phi = (1.0 - np.asarray(RHO)) / np.asarray(RHO)
        hat, _ = new_task_moments_beta(np.zeros(3), np.ones(3), phi, KS, n_nodes=256)
        return hat
    m = SIM["mu"] + np.asarray(SIM["alpha"])
    s = np.full(3, np.hypot(SIM["sigma_task"], SIM["sigma_cell"]))
    hat, _ = new_task_moments_logit_normal(m, s, KS, n_nodes=256)
    return hat


def one_fit(truth: str, i: int, n_trials: int, seed: int, n_tasks: int) -> list[dict]:
    from agentstats.models import diagnose, fit
    from agentstats.posterior import consistency, posterior_pass_k, summarize_pass_k

    p = truth_p(truth, i, seed, n_tasks)
    rng = np.random.default_rng([seed, i, n_trials])
    c = rng.binomial(n_trials, p)
    agents = [f"agent-{a}" for a in range(3)]
    counts = pd.DataFrame({
        "agent": np.repeat(agents, n_tasks),
        "task_id": np.tile([f"task-{t:03d}" for t in range(n_tasks)], 3),
        "n": n_trials,
        "c": c.ravel(),
    })
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dt = fit(counts, random_seed=int(seed * 1000 + i * 10 + n_trials), check_convergence=False)
    secs = time.perf_counter() - t0
    diag = diagnose(dt)
    new_truth = truth_new(truth)
    cons = consistency(counts, dt).set_index("agent") if truth == "consistency" else None
    rows = []
    for population in ("observed", "new"):
        summ = summarize_pass_k(posterior_pass_k(dt, KS, population=population)["pass_hat_k"]).set_index(["agent", "k"])
        for a, agent in enumerate(agents):
            for j, k in enumerate(KS):
                r = summ.loc[(agent, int(k))]
                true = float(np.mean(p[a] ** k)) if population == "observed" else float(new_truth[a, j])
                row = dict(truth_model=truth, dataset=i, n_trials=n_trials, population=population, agent=a, k=int(k),
                           truth=true, mean=float(r["mean"]), ci_low=float(r.ci_low), ci_high=float(r.ci_high),
                           max_r_hat=float(diag.table.r_hat.max()), min_ess_bulk=float(diag.table.ess_bulk.min()),
                           divergences=int(diag.divergences), wall_s=secs)
                if cons is not None:
                    row.update(icc_true=RHO[a], icc_mean=float(cons.loc[agent, "icc_cell"]),
                               icc_low=float(cons.loc[agent, "icc_cell_low"]),
                               icc_high=float(cons.loc[agent, "icc_cell_high"]))
                rows.append(row)
    return rows


def aggregate(df: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    df = df.assign(covered=(df.ci_low <= df.truth) & (df.truth <= df.ci_high))
    per = []
    for (pop, n, k), g in df.groupby(["population", "n_trials", "k"]):
        cov = g.covered.mean()
        per.append(dict(population=pop, trials=int(n), k=int(k), N=len(g), coverage=cov,
                        mc_err=2 * np.sqrt(cov * (1 - cov) / len(g)), width=float(np.mean(g.ci_high - g.ci_low)),
                        rmse=float(np.sqrt(np.mean((g["mean"] - g.truth) ** 2)))))
    per_k = pd.DataFrame(per)
    pooled = []
    for (pop, n), g in df.groupby(["population", "n_trials"]):
        cov = g.covered.mean()
        n_pairs = g.groupby(["dataset", "agent"]).ngroups
        pooled.append(dict(population=pop, trials=int(n), pairs=n_pairs, coverage=cov,
                           mc_err=2 * np.sqrt(cov * (1 - cov) / n_pairs),
                           min_k_coverage=float(per_k[(per_k.population == pop) & (per_k.trials == n)].coverage.min()),
                           max_k_coverage=float(per_k[(per_k.population == pop) & (per_k.trials == n)].coverage.max()),
                           low_miss=float((g.truth < g.ci_low).mean()), high_miss=float((g.truth > g.ci_high).mean())))
    pooled_df = pd.DataFrame(pooled)
    fits = df.drop_duplicates(["dataset", "n_trials"])
    diag = fits.groupby("n_trials").agg(fits=("dataset", "size"),
                                        rhat_gt_101=("max_r_hat", lambda x: (x > 1.01).mean()),
                                        ess_lt_400=("min_ess_bulk", lambda x: (x < 400).mean()),
                                        any_divergence=("divergences", lambda x: (x > 0).mean()),
                                        median_wall_s=("wall_s", "median")).reset_index()
    return per_k, pooled_df, diag


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--truth", choices=("consistency", "simulator"), default="consistency")
    ap.add_argument("--datasets", type=int, default=25)
    ap.add_argument("--tasks", type=int, default=40)
    ap.add_argument("--seed", type=int, default=20261201)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--aggregate-only", action="store_true")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    out = ROOT / "validation" / "results" / f"consistency_study_{args.truth}.csv"
    t_start = time.perf_counter()
    if not args.aggregate_only:
        done = set()
        if out.exists():
            prev = pd.read_csv(out)
            done = set(zip(prev.dataset, prev.n_trials, strict=True))
        n_data = 2 if args.quick else args.datasets
        for i in range(n_data):
            for n in DESIGNS:
                if (i, n) in done:
                    continue
                rows = one_fit(args.truth, i, n, args.seed, args.tasks)
                pd.DataFrame(rows).to_csv(out, mode="a", header=not out.exists(), index=False, float_format="%.6g")
                print(f"dataset {i} n={n}: {rows[0]['wall_s']:.0f} s, r_hat {rows[0]['max_r_hat']:.3f}",
                      file=sys.stderr, flush=True)
    df = pd.read_csv(out)
    per_k, pooled, diag = aggregate(df)
    icc_txt = ""
    if args.truth == "consistency":
        icc = df[df.k == 1].drop_duplicates(["dataset", "n_trials", "agent"])
        icc_tab = icc.assign(covered=(icc.icc_low <= icc.icc_true) & (icc.icc_true <= icc.icc_high)).groupby(
            ["n_trials", "icc_true"]).agg(datasets=("dataset", "size"), icc_mean=("icc_mean", "mean"),
                                          coverage=("covered", "mean")).reset_index()
        icc_txt = f"""
Per-agent consistency (the model's `icc_cell` against the true intra-cell correlation, 95 % credible intervals):

{md_table(icc_tab)}
"""
    truth_txt = ("three agents with equal mean success and intra-cell correlation 0.2 / 0.5 / 0.8 (Beta cells)"
                 if args.truth == "consistency" else "the project's simulator (crossed logit-normal, "
                 "agentstats.simulate)")
    body = f"""Command: `.venv/bin/python validation/consistency_study.py --truth {args.truth} --datasets N` (seed
{args.seed}; {df.dataset.nunique()} datasets x {len(DESIGNS)} designs, {args.tasks} tasks, fit's defaults;
{time.strftime('%Y-%m-%d')}{', QUICK SMOKE RUN' if args.quick else ''}). Truth: {truth_txt}.

**Coverage of 95 % credible intervals, pooled over k = 1..8** (goal 0.93-0.97 for every population and design;
`mc_err` uses the (dataset, agent) pairs, optimistic because the k values of a pair are correlated):

{md_table(pooled)}

Per k:

{md_table(per_k)}

Fits:

{md_table(diag)}
{icc_txt}"""
    print(body)
    if not args.no_write:
        write_block(ROOT / "docs" / "validation.md", f"consistency_study_{args.truth}", body,
                    f"## Simulation: per-agent consistency and new tasks ({args.truth} truth)")
    print(f"{time.perf_counter() - t_start:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

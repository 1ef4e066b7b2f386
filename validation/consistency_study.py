"""Simulation study: coverage of pass^k for the tasks in the data and for new tasks, with agent-specific consistency.

Run:  .venv/bin/python validation/consistency_study.py [--datasets 25] [--truth consistency|simulator] [--quick]
      [--method nuts|laplace] [--executor local|process|ray --workers N --address ADDR]
      .venv/bin/python validation/consistency_study.py --aggregate-only [--truth ...] [--method ...]

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

``--method laplace`` fits the same datasets (same counts, same seeds) by the Laplace tier
(:mod:`agentstats.models.laplace`) instead of NUTS, into ``consistency_study_<truth>_laplace.csv``, and adds a table
setting its coverage (pass^k and the ICC) beside NUTS's on the datasets both have: the tier must cover at NUTS's rate
or not be used (issue 36). Fits run where ``--executor`` says (:func:`agentstats.parallel.resolve_executor`); dataset
i's fit with n trials has the seed ``seed * 1000 + i * 10 + n`` whatever runs it, so every executor gives the same
rows.

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


def one_fit(truth: str, i: int, n_trials: int, seed: int, n_tasks: int, method: str = "nuts") -> list[dict]:
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
        dt = fit(counts, random_seed=int(seed * 1000 + i * 10 + n_trials), check_convergence=False, method=method)
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
                row = dict(truth_model=truth, method=method, dataset=i, n_trials=n_trials, population=population,
                           agent=a, k=int(k),
                           truth=true, mean=float(r["mean"]), ci_low=float(r.ci_low), ci_high=float(r.ci_high),
                           max_r_hat=float(diag.table.r_hat.max()), min_ess_bulk=float(diag.table.ess_bulk.min()),
                           divergences=int(diag.divergences), wall_s=secs)
                if cons is not None:
                    row.update(icc_true=RHO[a], icc_mean=float(cons.loc[agent, "icc_cell"]),
                               icc_low=float(cons.loc[agent, "icc_cell_low"]),
                               icc_high=float(cons.loc[agent, "icc_cell_high"]))
                rows.append(row)
    return rows


def _job(job: tuple[str, int, int, int, int, str]) -> list[dict]:
    """One fit in a worker (module level: a process pool pickles it by name)."""
    return one_fit(*job)


def icc_table(df: pd.DataFrame) -> pd.DataFrame:
    """Coverage and mean width of the per-agent ICC (``icc_cell``) intervals by design and true ICC."""
    icc = df[df.k == 1].drop_duplicates(["dataset", "n_trials", "agent"])
    icc = icc.assign(covered=(icc.icc_low <= icc.icc_true) & (icc.icc_true <= icc.icc_high),
                     width=icc.icc_high - icc.icc_low)
    return icc.groupby(["n_trials", "icc_true"]).agg(
        datasets=("dataset", "size"), icc_mean=("icc_mean", "mean"), coverage=("covered", "mean"),
        width=("width", "mean")).reset_index()


def versus_nuts(lap: pd.DataFrame, nuts: pd.DataFrame, truth: str) -> pd.DataFrame:
    """Coverage of the Laplace tier beside NUTS's on the (dataset, design) fits both have.

    Rows: pass^k pooled over k per population and design, and (``consistency`` truth) the ICC per design and true
    ICC; columns the number of intervals, each method's coverage and mean width, and the difference with its Monte
    Carlo error ``2 sqrt((c1 (1 - c1) + c2 (1 - c2)) / N)`` (optimistic: the k values of a pair are correlated).
    """
    keys = ["dataset", "n_trials"]
    both = (set(map(tuple, lap[keys].drop_duplicates().to_numpy()))
            & set(map(tuple, nuts[keys].drop_duplicates().to_numpy())))
    pick = [d[[tuple(x) in both for x in d[keys].to_numpy()]] for d in (lap, nuts)]
    rows = []
    for (pop, n), g in pick[0].groupby(["population", "n_trials"]):
        h = pick[1][(pick[1].population == pop) & (pick[1].n_trials == n)]
        rows.append(_pair(f"pass_hat_k ({pop}, k = 1..8)", int(n), g, h, "truth", "ci_low", "ci_high"))
    if truth == "consistency":
        for (n, rho), g in pick[0][pick[0].k == 1].drop_duplicates([*keys, "agent"]).groupby(["n_trials", "icc_true"]):
            h = pick[1][pick[1].k == 1].drop_duplicates([*keys, "agent"])
            h = h[(h.n_trials == n) & (h.icc_true == rho)]
            rows.append(_pair(f"icc_cell (true {rho:g})", int(n), g, h, "icc_true", "icc_low", "icc_high"))
    return pd.DataFrame(rows)


def _pair(what: str, n: int, g: pd.DataFrame, h: pd.DataFrame, true: str, low: str, high: str) -> dict:
    c1 = float(((g[low] <= g[true]) & (g[true] <= g[high])).mean())
    c2 = float(((h[low] <= h[true]) & (h[true] <= h[high])).mean())
    return dict(estimand=what, trials=n, N=len(g), laplace=c1, nuts=c2, diff=c1 - c2,
                mc_err=2 * np.sqrt((c1 * (1 - c1) + c2 * (1 - c2)) / max(len(g), 1)),
                laplace_width=float((g[high] - g[low]).mean()), nuts_width=float((h[high] - h[low]).mean()))


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
    from agentstats.parallel import EXECUTOR_NAMES, as_finished, resolve_executor

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--truth", choices=("consistency", "simulator"), default="consistency")
    ap.add_argument("--method", choices=("nuts", "laplace"), default="nuts",
                    help="inference method of every fit (laplace: rows in consistency_study_<truth>_laplace.csv)")
    ap.add_argument("--datasets", type=int, default=25)
    ap.add_argument("--tasks", type=int, default=40)
    ap.add_argument("--seed", type=int, default=20261201)
    ap.add_argument("--executor", choices=EXECUTOR_NAMES, default="local",
                    help="where the fits run: one after another here, a process pool, a Ray cluster")
    ap.add_argument("--workers", type=int, default=None, help="processes of --executor process (default: every CPU)")
    ap.add_argument("--address", default=None, help="Ray cluster of --executor ray (default: running, else local)")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--aggregate-only", action="store_true")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    suffix = "" if args.method == "nuts" else f"_{args.method}"
    out = ROOT / "validation" / "results" / f"consistency_study_{args.truth}{suffix}.csv"
    t_start = time.perf_counter()
    if not args.aggregate_only:
        done = set()
        if out.exists():
            prev = pd.read_csv(out)
            done = set(zip(prev.dataset, prev.n_trials, strict=True))
        n_data = 2 if args.quick else args.datasets
        jobs = [(args.truth, i, n, args.seed, args.tasks, args.method)
                for i in range(n_data) for n in DESIGNS if (i, n) not in done]
        with resolve_executor(args.executor, workers=args.workers, address=args.address) as ex:
            for j, rows in as_finished(_job, jobs, ex):  # saved as each fit finishes: a stopped run resumes
                pd.DataFrame(rows).to_csv(out, mode="a", header=not out.exists(), index=False, float_format="%.6g")
                print(f"dataset {jobs[j][1]} n={jobs[j][2]}: {rows[0]['wall_s']:.0f} s, r_hat "
                      f"{rows[0]['max_r_hat']:.3f}", file=sys.stderr, flush=True)
    df = pd.read_csv(out).sort_values(["dataset", "n_trials", "population", "agent", "k"], kind="stable")
    per_k, pooled, diag = aggregate(df)
    icc_txt = ""
    if args.truth == "consistency":
        icc_txt = f"""
Per-agent consistency (the model's `icc_cell` against the true intra-cell correlation, 95 % credible intervals):

{md_table(icc_table(df))}
"""
    versus = ""
    nuts_csv = out.with_name(f"consistency_study_{args.truth}.csv")
    if args.method != "nuts" and nuts_csv.exists():
        versus = f"""
**Beside NUTS** (`fit`'s default method, `consistency_study_{args.truth}.csv`) on the (dataset, design) fits both
have; `diff` = {args.method} - NUTS, `mc_err` = 2 sqrt((c1 (1 - c1) + c2 (1 - c2)) / N), optimistic for pass^k (the
k values of a pair are correlated) and for the two methods (fitted to the same counts, their misses are correlated):

{md_table(versus_nuts(df, pd.read_csv(nuts_csv), args.truth))}
"""
    truth_txt = ("three agents with equal mean success and intra-cell correlation 0.2 / 0.5 / 0.8 (Beta cells)"
                 if args.truth == "consistency" else "the project's simulator (crossed logit-normal, "
                 "agentstats.simulate)")
    method_flag = "" if args.method == "nuts" else f" --method {args.method}"
    method_txt = "fit's defaults" if args.method == "nuts" else f"fit's defaults but method={args.method!r}"
    body = f"""Command: `.venv/bin/python validation/consistency_study.py --truth {args.truth}{method_flag}
--datasets N` (seed {args.seed}; {df.dataset.nunique()} datasets x {len(DESIGNS)} designs, {args.tasks} tasks,
{method_txt}; {time.strftime('%Y-%m-%d')}{', QUICK SMOKE RUN' if args.quick else ''}). Truth: {truth_txt}.

**Coverage of 95 % credible intervals, pooled over k = 1..8** (goal 0.93-0.97 for every population and design;
`mc_err` uses the (dataset, agent) pairs, optimistic because the k values of a pair are correlated):

{md_table(pooled)}

Per k:

{md_table(per_k)}

Fits:

{md_table(diag)}
{icc_txt}{versus}"""
    print(body)
    if not args.no_write and not args.quick:
        section = f"## Simulation: per-agent consistency and new tasks ({args.truth} truth)"
        if args.method != "nuts":
            section = f"## Simulation: per-agent consistency and new tasks, {args.method} tier ({args.truth} truth)"
        write_block(ROOT / "docs" / "validation.md", f"consistency_study_{args.truth}{suffix}", body, section)
    print(f"{time.perf_counter() - t_start:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

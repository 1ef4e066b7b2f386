"""Simulation study: do intervals that carry a judge's measured error cover the true pass^k?

Run:  .venv/bin/python validation/judge_calibration_study.py [--quick] [--datasets 400] [--bayes-datasets 40]
      .venv/bin/python validation/judge_calibration_study.py --aggregate-only

Truth (dataset i, seed ``--seed + i``): two agents on ``--tasks`` tasks (default 30), ``--trials`` trials per cell
(default 4), from the Beta-Binomial model ``logit m[a, t] = mu + alpha[a] + beta[t]``, ``mu = 1``,
``alpha = (+0.8, -0.8)``, ``beta[t] ~ Normal(0, 1)``, ``p[a, t] ~ Beta(m phi, (1 - m) phi)``, ``phi = 7/3``
(intra-cell correlation 0.3); true passes ``s ~ Binomial(n, p)``.

Judge: each trial judged with sensitivity 0.9 and specificity 0.85, ``c = Binomial(s, 0.9) + Binomial(n - s, 0.15)``.
Calibration set: 200 items (100 gold passes, 100 gold fails), ``TP ~ Binomial(100, 0.9)``,
``TN ~ Binomial(100, 0.85)``, drawn anew for every dataset.

Methods (95 % intervals of suite pass^k per agent, k = 1, 2, 4):

* ``bayes_corrected``: ``fit(counts, judge_calibration=JudgeError.from_counts(...))`` (default model, nutpie,
  2 chains), equal-tailed interval of ``posterior_pass_k(..., population="observed")``;
* ``bayes_uncorrected``: the same fit without the calibration (judged outcomes taken as true);
* ``boot_corrected``: :func:`agentstats.calibration.corrected_pass_k` (Rogan-Gladen-type unbiased estimate, bootstrap
  over tasks and calibration counts);
* ``boot_uncorrected``: :func:`agentstats.estimators.suite_pass_k` on the judged counts.

Targets: ``observed``, the dataset's in-sample pass^k ``mean_t p[a, t]^k`` (what the posterior's "observed"
population speaks for), and ``population``, ``E[p^k]`` over the task population (what a task bootstrap speaks for),
by quadrature (:func:`agentstats.models.families.beta_binomial.new_task_moments_beta` with the true parameters).
Coverage is reported with its Monte Carlo error ``2 sqrt(c (1 - c) / N)`` over N (dataset, agent) pairs.
Raw rows go to ``validation/results/judge_calibration_study.csv`` as datasets finish; the table to docs/judge.md.
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

KS = (1, 2, 4)
SE, SP = 0.9, 0.85
MU, ALPHA, SIGMA_TASK, RHO = 1.0, (0.8, -0.8), 1.0, 0.3
N_CALIB_POS = N_CALIB_NEG = 100
CSV = ROOT / "validation" / "results" / "judge_calibration_study.csv"
DOC = ROOT / "docs" / "judge.md"


def dataset(i: int, seed: int, n_tasks: int, n_trials: int):
    """Judged counts, true p (agent, task) and the calibration counts of dataset ``i``."""
    rng = np.random.default_rng([seed, i])
    phi = (1.0 - RHO) / RHO
    m = expit(MU + np.asarray(ALPHA)[:, None] + rng.normal(0.0, SIGMA_TASK, n_tasks)[None, :])
    p = rng.beta(m * phi, (1.0 - m) * phi)
    s = rng.binomial(n_trials, p)
    c = rng.binomial(s, SE) + rng.binomial(n_trials - s, 1.0 - SP)
    tp = int(rng.binomial(N_CALIB_POS, SE))
    tn = int(rng.binomial(N_CALIB_NEG, SP))
    agents = [f"agent{a}" for a in range(len(ALPHA))]
    counts = pd.DataFrame(
        [(agents[a], f"t{t}", n_trials, int(c[a, t])) for a in range(len(ALPHA)) for t in range(n_tasks)],
        columns=["agent", "task_id", "n", "c"],
    )
    return counts, p, (tp, N_CALIB_POS - tp, tn, N_CALIB_NEG - tn)


def population_truth() -> np.ndarray:
    """``E[p^k]`` per agent and k over the task population (quadrature), shape (agent, K)."""
    from agentstats.models.families.beta_binomial import new_task_moments_beta

    phi = (1.0 - RHO) / RHO
    hat, _ = new_task_moments_beta(MU + np.asarray(ALPHA), np.full(2, SIGMA_TASK), np.full(2, phi), np.asarray(KS))
    return hat


def run_one(i: int, args, pop: np.ndarray, bayes: bool) -> list[dict]:
    """Rows of dataset ``i``: the bootstrap methods, or (``bayes``) the two fits."""
    from agentstats.calibration import JudgeError, corrected_pass_k
    from agentstats.estimators import suite_pass_k

    counts, p, calib = dataset(i, args.seed, args.tasks, args.trials)
    je = JudgeError.from_counts(*calib)
    observed = np.stack([(p**k).mean(axis=1) for k in KS], axis=1)  # (agent, K)
    agents = sorted(counts["agent"].unique())
    rows: list[dict] = []

    def add(method: str, a: int, j: int, mean: float, lo: float, hi: float) -> None:
        for target, truth in (("observed", observed[a, j]), ("population", pop[a, j])):
            rows.append(dict(dataset=i, agent=agents[a], k=KS[j], method=method, target=target, truth=truth,
                             mean=mean, lo=lo, hi=hi, covered=bool(lo <= truth <= hi), width=hi - lo))

    if not bayes:
        corr = corrected_pass_k(counts, je, k=list(KS), n_boot=args.n_boot, random_seed=i)
        unc = suite_pass_k(counts, k=list(KS), n_boot=args.n_boot, random_seed=i)
        for a, agent in enumerate(agents):
            for j, k in enumerate(KS):
                r = corr[(corr.agent == agent) & (corr.k == k)].iloc[0]
                add("boot_corrected", a, j, r["pass_hat_k"], r["pass_hat_k_ci_low"], r["pass_hat_k_ci_high"])
                r = unc[(unc.agent == agent) & (unc.k == k)].iloc[0]
                add("boot_uncorrected", a, j, r["pass_hat_k"], r["pass_hat_k_ci_low"], r["pass_hat_k_ci_high"])
    else:
        from agentstats.models import fit
        from agentstats.posterior import posterior_pass_k

        for method, jc in (("bayes_corrected", je), ("bayes_uncorrected", None)):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                dt = fit(counts, judge_calibration=jc, chains=2, draws=args.draws, tune=args.draws, cores=1,
                         random_seed=1000 + i)
                draws = posterior_pass_k(dt, list(KS))["pass_hat_k"]
            post_agents = [str(x) for x in draws["agent"].values]
            for a, agent in enumerate(agents):
                d = draws.sel(agent=agent).stack(s=("chain", "draw")).transpose("k", "s").to_numpy()
                lo, hi = np.quantile(d, [0.025, 0.975], axis=1)
                for j in range(len(KS)):
                    add(method, a, j, float(d[j].mean()), float(lo[j]), float(hi[j]))
            assert post_agents == agents
    return rows


def aggregate(df: pd.DataFrame) -> pd.DataFrame:
    """Coverage, its Monte Carlo error, mean width and bias per method, target and k."""
    g = df.groupby(["method", "target", "k"], sort=True)
    out = g.agg(pairs=("covered", "size"), datasets=("dataset", "nunique"), coverage=("covered", "mean"),
                width=("width", "mean")).reset_index()
    out["mc_error"] = 2 * np.sqrt(out["coverage"] * (1 - out["coverage"]) / out["pairs"])
    bias = g.apply(lambda x: float((x["mean"] - x["truth"]).mean()), include_groups=False).reset_index(drop=True)
    out["bias"] = bias.to_numpy()
    return out[["method", "target", "k", "datasets", "pairs", "coverage", "mc_error", "width", "bias"]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", type=int, default=400, help="datasets for the bootstrap methods")
    ap.add_argument("--bayes-datasets", type=int, default=None,
                    help="of those, how many also get the two fits (default 40; --quick 2)")
    ap.add_argument("--tasks", type=int, default=30)
    ap.add_argument("--trials", type=int, default=4)
    ap.add_argument("--draws", type=int, default=500, help="draws (and tuning steps) per chain")
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=20261201)
    ap.add_argument("--quick", action="store_true", help="20 datasets, 2 of them with fits, 300 draws")
    ap.add_argument("--aggregate-only", action="store_true")
    ap.add_argument("--no-doc", action="store_true", help="do not write the table into docs/judge.md")
    args = ap.parse_args()
    if args.quick:
        args.datasets, args.draws = 20, 300
    if args.bayes_datasets is None:
        args.bayes_datasets = 2 if args.quick else 40
    out = CSV.with_name(CSV.stem + "_quick.csv") if args.quick else CSV
    if not args.aggregate_only:
        pop = population_truth()
        done = pd.read_csv(out) if out.exists() else pd.DataFrame()
        start = time.time()
        # all bootstrap datasets first (seconds), then the fits (minutes each)
        jobs = [(i, False) for i in range(args.datasets)] + [(i, True) for i in range(args.bayes_datasets)]
        for i, bayes in jobs:
            method = "bayes_corrected" if bayes else "boot_corrected"
            if not done.empty and ((done.dataset == i) & (done.method == method)).any():
                continue
            rows = pd.DataFrame(run_one(i, args, pop, bayes))
            done = pd.concat([done, rows], ignore_index=True)
            out.parent.mkdir(parents=True, exist_ok=True)
            done.to_csv(out, index=False)
            if bayes or i % 50 == 49:
                print(f"dataset {i} ({'fits' if bayes else 'bootstrap'}) done, {time.time() - start:.0f} s", flush=True)
    df = pd.read_csv(out)
    table = aggregate(df)
    print(table.to_string(index=False))
    if not args.no_doc and not args.quick:
        body = (f"Judge with sensitivity {SE} and specificity {SP}; calibration set of "
                f"{N_CALIB_POS + N_CALIB_NEG} items; {df['dataset'].nunique()} datasets of 2 agents x "
                f"{args.tasks} tasks x {args.trials} trials (bootstrap methods), the first "
                f"{df.loc[df.method == 'bayes_corrected', 'dataset'].nunique()} also fitted. Nominal 95 % intervals; "
                "`mc_error` is twice the Monte Carlo standard error of the coverage.\n\n" + md_table(table))
        write_block(DOC, "judge-calibration-study", body, "## Simulation results")


if __name__ == "__main__":
    main()

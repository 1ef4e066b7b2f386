"""Simulation study of the default hierarchical model.

Run:  .venv/bin/python validation/simulation_study.py [--datasets 50] [--quick] [--executor process --workers 2]
      .venv/bin/python validation/simulation_study.py --aggregate-only   # tables from the saved raw results

Truth. For each dataset i (seed ``--seed + i``) the per-cell success probabilities are drawn once from the
crossed logit-normal model that agentstats fits (docs/models.md)::

    logit p[a, t] = mu + alpha[a] + beta[t] + gamma[a, t],
    beta[t] ~ Normal(0, sigma_task),  gamma[a, t] ~ Normal(0, sigma_cell)

with fixed ``mu = 0.3``, ``alpha = (0, +0.6, -0.4)`` (3 agents), ``sigma_task = 1.5``, ``sigma_cell = 0.8``
(the ``agentstats.simulate`` defaults) and ``--tasks`` tasks (default 40). ``--truth zoi`` draws p from the
``zoi_beta_binomial`` model instead (:func:`true_p`). The same p (common random numbers) is then
observed with 2, 4 and 8 trials per cell, ``c ~ Binomial(n, p)``. The estimand is each agent's in-sample suite
pass^k = ``mean_t p[a, t]^k`` (Yao et al. 2024, arXiv 2406.12045) of that dataset, k = 1..8.

Estimators compared (per agent, per k):

* the model named by ``--model`` (default ``partial_pooling``, the generating model of the logit-normal truth;
  ``zoi_beta_binomial`` is the default of ``fit``): ``agentstats.models.fitting.fit(counts, model)`` with the default
  sampler, posterior of ``posterior_pass_hat_k(dt, k, population="observed")``: posterior mean and 95 %
  equal-tailed credible interval;
* the unbiased estimator ``mean_t C(c_t, k) / C(n_t, k)`` (``agentstats.estimators.pass_hat_k``), defined only for
  k <= n -- its RMSE is reported only there;
* the plug-in ``mean_t (c_t / n_t)^k`` (biased).

Reported: coverage of the 95 % credible intervals with its Monte Carlo error ``+- 2 sqrt(c (1 - c) / N)`` (N =
dataset x agent pairs; the 3 agents of a dataset share tasks, so this error is somewhat optimistic), RMSE of the
three estimators against the truth, and the share of fits with R-hat > 1.01, ESS_bulk < 400 or divergences.

Fits run where ``--executor`` says (``local``: one after another; ``process``: ``--workers`` processes; ``ray``: a
Ray cluster, ``--address``; :func:`agentstats.parallel.resolve_executor`). Dataset i's fit with n trials has the seed
``seed * 1000 + i * 10 + n`` whatever runs it, so every executor gives the same rows.

Raw per-(dataset, design, agent, k) rows are appended to ``validation/results/simulation_study.csv`` as fits finish
(a run can be stopped and its results tabulated with ``--aggregate-only``). The table is printed as Markdown and
written into ``docs/validation.md`` between ``<!-- BEGIN simulation_study -->`` markers.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _docs import ROOT, md_table, write_block

from agentstats.parallel import EXECUTOR_NAMES, as_finished, resolve_executor

RESULTS = ROOT / "validation" / "results" / "simulation_study.csv"
#: 8-trial fits made before the parameterization rule change of 2026-11-30 (all levels centred at cell ratio 1.6).
BEFORE = ROOT / "validation" / "results" / "simulation_study_8trials_rule_before.csv"
KS = np.arange(1, 9)
ALPHA = (0.0, 0.6, -0.4)
MU, SIGMA_TASK, SIGMA_CELL = 0.3, 1.5, 0.8


#: ``--truth zoi``: intra-cell correlation of the Beta part (phi = (1 - rho) / rho = 3) and deterministic share.
ZOI_RHO, ZOI_DET = 0.25, 0.4
TRUTHS = ("logit_normal", "zoi")


def true_p(i: int, seed: int, n_tasks: int, truth: str = "logit_normal") -> np.ndarray:
    """True p (agent, task) of dataset ``i``.

    ``logit_normal``: the crossed logit-normal model (module docstring). ``zoi``: the ``zoi_beta_binomial`` model,
    ``logit m = mu + alpha[a] + beta[t]``; with probability ``ZOI_DET`` the cell is deterministic (p = 1 with
    probability m, else 0), otherwise ``p ~ Beta(m phi, (1 - m) phi)``, ``phi = (1 - ZOI_RHO) / ZOI_RHO``.
    """
    from scipy.special import expit

    rng = np.random.default_rng([seed, i, 0])
    beta = rng.normal(0.0, SIGMA_TASK, n_tasks)
    gamma = rng.normal(0.0, SIGMA_CELL, (len(ALPHA), n_tasks))
    if truth == "logit_normal":
        return expit(MU + np.asarray(ALPHA)[:, None] + beta[None, :] + gamma)
    if truth != "zoi":
        raise ValueError(f"truth must be one of {TRUTHS}, got {truth!r}")
    m = expit(MU + np.asarray(ALPHA)[:, None] + beta[None, :])
    phi = (1.0 - ZOI_RHO) / ZOI_RHO
    rng_z = np.random.default_rng([seed, i, 1])
    p = rng_z.beta(m * phi, (1.0 - m) * phi)
    det = rng_z.random(m.shape) < ZOI_DET
    return np.where(det, (rng_z.random(m.shape) < m).astype(float), p)


def one_fit(i: int, n_trials: int, seed: int, n_tasks: int, chains: int, draws: int, tune: int, cores: int,
            model: str = "partial_pooling", truth: str = "logit_normal"):
    """Simulate dataset ``i`` at ``n_trials`` trials per cell, fit, return result rows and diagnostics."""
    from agentstats.estimators import pass_hat_k
    from agentstats.models import fit
    from agentstats.models.diagnostics import diagnose
    from agentstats.posterior import posterior_pass_hat_k

    p = true_p(i, seed, n_tasks, truth)
    rng = np.random.default_rng([seed, i, n_trials])
    c = rng.binomial(n_trials, p)
    agents = [f"agent-{a}" for a in range(len(ALPHA))]
    counts = pd.DataFrame(
        dict(
            agent=np.repeat(agents, n_tasks),
            task_id=np.tile([f"task-{t:03d}" for t in range(n_tasks)], len(agents)),
            n=n_trials,
            c=c.ravel(),
        )
    )
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dt = fit(counts, model, chains=chains, draws=draws, tune=tune,
                 random_seed=int(seed * 1000 + i * 10 + n_trials), check_convergence=False, cores=cores)
    secs = time.perf_counter() - t0
    d = diagnose(dt)
    draws_k = posterior_pass_hat_k(dt, KS).transpose("chain", "draw", "agent", "k")
    arr = draws_k.to_numpy().reshape(-1, len(agents), len(KS))
    order = [list(draws_k["agent"].values).index(a) for a in agents]
    arr = arr[:, order, :]
    lo, hi = np.quantile(arr, [0.025, 0.975], axis=0)
    mean = arr.mean(axis=0)
    rows = []
    for a in range(len(agents)):
        for j, k in enumerate(KS):
            truth = float(np.mean(p[a] ** k))
            unb = float(np.mean(pass_hat_k(np.full(n_tasks, n_trials), c[a], int(k)))) if k <= n_trials else np.nan
            rows.append(
                dict(dataset=i, n_trials=n_trials, agent=a, k=int(k), truth=truth, post_mean=float(mean[a, j]),
                     ci_low=float(lo[a, j]), ci_high=float(hi[a, j]), unbiased=unb,
                     plugin=float(np.mean((c[a] / n_trials) ** k)), max_r_hat=float(d.table["r_hat"].max()),
                     min_ess_bulk=float(d.table["ess_bulk"].min()), divergences=int(d.divergences),
                     parameterization=dt.idata.attrs["parameterization"].replace(",", ";"), wall_s=secs,
                     sampler=dt.sampler.sampler)
            )
    return rows


def _job(job: tuple[int, int, dict]) -> list[dict]:
    """One fit of the study in a worker: ``one_fit(i, n_trials, **settings)``."""
    i, n_trials, kw = job
    return one_fit(i, n_trials, **kw)


def aggregate(df: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Coverage/RMSE table per (n_trials, k), pooled coverage per n_trials, diagnostics per n_trials."""
    df = df.copy()
    df["covered"] = (df.ci_low <= df.truth) & (df.truth <= df.ci_high)
    out = []
    for (n, k), g in df.groupby(["n_trials", "k"]):
        N = len(g)
        cov = g.covered.mean()
        rm = lambda col, g=g: float(np.sqrt(np.mean((g[col] - g.truth) ** 2)))  # noqa: E731
        out.append(dict(
            trials=int(n), k=int(k), N=N, coverage=cov, mc_err=2 * np.sqrt(cov * (1 - cov) / N),
            ci_width=float(np.mean(g.ci_high - g.ci_low)),
            rmse_model=rm("post_mean"),
            rmse_unbiased=rm("unbiased") if k <= n else np.nan,
            rmse_plugin=rm("plugin"),
            bias_model=float(np.mean(g.post_mean - g.truth)),
            bias_plugin=float(np.mean(g.plugin - g.truth)),
        ))
    table = pd.DataFrame(out)
    pooled = []
    for n, g in df.groupby("n_trials"):
        N = len(g)
        cov = g.covered.mean()
        pooled.append(dict(trials=int(n), pairs=N, datasets=g.dataset.nunique(), coverage_all_k=cov,
                           mc_err=2 * np.sqrt(cov * (1 - cov) / (N / len(KS))),
                           low_miss=float(np.mean(g.truth < g.ci_low)), high_miss=float(np.mean(g.truth > g.ci_high))))
    pooled = pd.DataFrame(pooled)
    fits = df.drop_duplicates(["dataset", "n_trials"])
    diag = []
    for n, g in fits.groupby("n_trials"):
        diag.append(dict(trials=int(n), fits=len(g), share_r_hat_gt_1_01=float(np.mean(g.max_r_hat > 1.01)),
                         share_ess_bulk_lt_400=float(np.mean(g.min_ess_bulk < 400)),
                         share_with_divergences=float(np.mean(g.divergences > 0)),
                         mean_divergences=float(g.divergences.mean()),
                         median_max_r_hat=float(g.max_r_hat.median()), median_min_ess=float(g.min_ess_bulk.median()),
                         median_wall_s=float(g.wall_s.median()),
                         parameterization=g.parameterization.mode().iloc[0].replace(";", ",")))
    return table, pooled, pd.DataFrame(diag)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", type=int, default=50, help="datasets per design (each design = 2, 4, 8 trials)")
    ap.add_argument("--start", type=int, default=0, help="first dataset index (to extend a saved run)")
    ap.add_argument("--tasks", type=int, default=40)
    ap.add_argument("--trials", default="2,4,8")
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--tune", type=int, default=700)
    ap.add_argument("--cores", type=int, default=1, help="parallel chains per fit")
    ap.add_argument("--executor", choices=EXECUTOR_NAMES, default="local",
                    help="where the fits run: one after another here, a process pool, a Ray cluster")
    ap.add_argument("--workers", type=int, default=None, help="processes of --executor process (default: every CPU)")
    ap.add_argument("--address", default=None, help="Ray cluster of --executor ray (default: running, else local)")
    ap.add_argument("--seed", type=int, default=20261130)
    ap.add_argument("--quick", action="store_true", help="smoke run: 2 datasets, 2 chains x 200, no docs write")
    ap.add_argument("--aggregate-only", action="store_true")
    ap.add_argument("--results", type=Path, default=RESULTS)
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--model", default="partial_pooling",
                    help="model to fit (partial_pooling: the generating model; beta_binomial: fit's default)")
    ap.add_argument("--truth", choices=TRUTHS, default="logit_normal",
                    help="generating model: logit_normal (default) or zoi (zero/one-inflated Beta, true p exactly 0/1 "
                         f"in a share {ZOI_DET} of cells)")
    args = ap.parse_args(argv)
    suffix = "" if args.model == "partial_pooling" else f"_{args.model}"
    suffix += "" if args.truth == "logit_normal" else f"_truth_{args.truth}"
    if suffix and args.results == RESULTS:
        args.results = RESULTS.with_name(f"simulation_study{suffix}.csv")
    if args.quick:
        args.datasets, args.chains, args.draws, args.tune = 2, 2, 200, 200
        args.results = Path(os.environ.get("TMPDIR", "/tmp")) / "simulation_study_quick.csv"
        args.results.unlink(missing_ok=True)
    trials = [int(x) for x in args.trials.split(",")]
    t_start = time.perf_counter()
    if not args.aggregate_only:
        args.results.parent.mkdir(parents=True, exist_ok=True)
        jobs = [(i, n) for i in range(args.start, args.start + args.datasets) for n in trials]
        if args.results.exists():
            done = pd.read_csv(args.results)[["dataset", "n_trials"]].drop_duplicates()
            done_set = set(map(tuple, done.to_numpy()))
            jobs = [j for j in jobs if j not in done_set]
        kw = dict(seed=args.seed, n_tasks=args.tasks, chains=args.chains, draws=args.draws, tune=args.tune,
                  cores=args.cores, model=args.model, truth=args.truth)

        def save(rows):
            pd.DataFrame(rows).to_csv(args.results, mode="a", header=not args.results.exists(), index=False)

        with resolve_executor(args.executor, workers=args.workers, address=args.address) as ex:
            for j, rows in as_finished(_job, [(i, n, kw) for i, n in jobs], ex):  # saved as each fit finishes
                save(rows)
                print(f"dataset {jobs[j][0]} trials {jobs[j][1]} done ({time.perf_counter() - t_start:.0f} s)",
                      file=sys.stderr, flush=True)
    df = pd.read_csv(args.results)
    table, pooled, diag = aggregate(df)
    settings = df.drop_duplicates(["dataset", "n_trials"])
    truth_txt = (f"sigma_cell = {SIGMA_CELL}" if args.truth == "logit_normal" else
                 f"cells zero/one-inflated Beta (no gamma; rho = {ZOI_RHO}, deterministic share {ZOI_DET})")
    designs = [int(x) for x in sorted(settings.n_trials.unique())]
    truth_flag = "" if args.truth == "logit_normal" else " --truth " + args.truth
    body = f"""Command: `.venv/bin/python validation/simulation_study.py --model {args.model}{truth_flag} --datasets N`
(seed {args.seed}); tables
below from {len(settings)} fits ({settings.dataset.nunique()} datasets x designs {designs}
trials per cell), 3 agents (alpha = {ALPHA}) x {args.tasks} tasks, mu = {MU}, sigma_task = {SIGMA_TASK},
{truth_txt}; fits: model `{args.model}`, default sampler ({settings.sampler.iloc[0]}), {args.chains} chains x
{args.tune} tune + {args.draws} draws. {time.strftime('%Y-%m-%d')}{', QUICK SMOKE RUN' if args.quick else ''}.

Estimand: each agent's in-sample suite pass^k = mean over its tasks of true p^k. `coverage` = share of (dataset,
agent) pairs whose 95 % equal-tailed credible interval contains the truth; `mc_err` = 2 sqrt(c(1-c)/N) (Monte
Carlo error of the coverage estimate; optimistic, the 3 agents of a dataset share tasks). RMSE of the posterior
mean, the unbiased estimator (only where k <= trials; blank otherwise, where it is undefined) and the plug-in
(c/n)^k. Target coverage 0.93-0.97.

**Coverage, pooled over k = 1..8** (`mc_err` here uses N / 8 pairs: the 8 k values of a pair are strongly
correlated; `low_miss`/`high_miss` = truth below / above the interval):

{md_table(pooled)}

**Per k:**

{md_table(table)}

**Sampler diagnostics** (share of fits failing each check; thresholds R-hat 1.01, ESS_bulk 400):

{md_table(diag)}
"""
    if BEFORE.exists() and not args.quick and args.model == "partial_pooling":
        _, pooled_b, diag_b = aggregate(pd.read_csv(BEFORE))
        body += f"""
**Before the parameterization fix** (8 trials per cell fitted with the old rule, all levels centred; same
datasets, first {len(pd.read_csv(BEFORE).drop_duplicates(["dataset"]))}): the sampler failed its checks in most fits,
which is why
`choose_parameterization` now non-centres the cells at this sparsity (docs/models.md):

{md_table(pooled_b)}

{md_table(diag_b)}
"""
    print(body)
    if not (args.quick or args.no_write):
        if args.model == "partial_pooling":
            write_block(ROOT / "docs" / "validation.md", "simulation_study", body, "## Simulation study")
        else:
            write_block(ROOT / "docs" / "validation.md", f"simulation_study{suffix}", body,
                        f"## Simulation study, model `{args.model}` (data drawn from the "
                        f"{'logit-normal' if args.truth == 'logit_normal' else 'zero/one-inflated'} model)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

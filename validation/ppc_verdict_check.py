"""Simulation check of the posterior predictive check's verdict: its false-alarm rate and its power.

Run:  .venv/bin/python validation/ppc_verdict_check.py [--reps 100] [--seed 20261203] [--quick] [--no-write]
      (``--reps`` per false-alarm setting; the detection setting runs a quarter as many)

The report calls a fit unusable when the posterior predictive check of per-cell counts fails
(:meth:`agentstats.models.diagnostics.PPCResult.misfits`): some statistic's two-sided p-value ``2 min(p, 1 - p)`` is
below ``alpha / m`` (``alpha = PPC_ALPHA = 0.05``, ``m`` the statistics checked: cells never solved, cells always
solved, the spread between agents within a task, and each agent's flip share). Posterior predictive p-values are not
uniform under a model that fits (they gather near 0.5; Meng 1994, Ann. Statist. 22:1142), so whether the verdict
keeps its 5 % false-alarm rate is measured here, as the report uses it: one look per data set, the report's PPC
(500 posterior draws, seed 0).

Settings (per replicate i, seed ``[--seed, setting, i]``; 4 chains x 500 draws after 500 tuning steps, PyMC's sampler):

* ``zoi fits zoi``: data drawn from the default model itself (``zoi_beta_binomial``): ``logit m = mu + alpha[a] +
  beta[t]``, ``beta ~ Normal(0, 1.5)``, a cell is deterministic (solved always with probability m, else never) with
  probability ``det_share = 0.3``, else ``p ~ Beta(m phi[a], (1 - m) phi[a])`` with ``rho = 1 / (phi + 1)`` of
  0.2, 0.4, 0.6 for three agents; 40 tasks x 5 trials. A flag is a false alarm.
* ``zoi fits zoi, 1 trial``: the same with 8 agents (``rho`` 0.2 to 0.6) x 100 tasks x 1 trial (the SWE-bench layout).
  A flag is a false alarm.
* ``zoi fits simulator``: the project's simulator (:func:`agentstats.simulate`'s model, logit-normal with a cell
  effect ``sigma_cell = 0.8``; 3 agents x 40 tasks x 5 trials), fitted by the default model, as the example report
  is. Not the fitted model's own form; the rate says how often such data are flagged.
* ``additive fits simulator (sigma_cell 2)``: the simulator with a strong agent x task interaction, fitted by the
  ``additive`` model (no cell term), which cannot reproduce cells that are always or never solved: a flag is a
  correct detection (power).

Writes Markdown into ``docs/validation.md`` between ``<!-- BEGIN ppc_verdict -->`` markers and the per-replicate
rows to ``validation/results/ppc_verdict_check.csv``.
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
from scipy.stats import beta as beta_dist

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _docs import ROOT, md_table, write_block

#: name -> (generator, model fitted, agents, tasks, trials, misfit expected)
SETTINGS = {
    "zoi fits zoi": ("zoi", "zoi_beta_binomial", 3, 40, 5, False),
    "zoi fits zoi, 1 trial": ("zoi", "zoi_beta_binomial", 8, 100, 1, False),
    "zoi fits simulator": ("simulator", "zoi_beta_binomial", 3, 40, 5, False),
    "additive fits simulator (sigma_cell 2)": ("simulator_strong", "additive", 3, 40, 5, True),
}


def counts_of(gen: str, n_agents: int, n_tasks: int, n_trials: int, rng: np.random.Generator) -> pd.DataFrame:
    """One data set: counts ``agent, task_id, n, c, n_missing`` from generator ``gen``."""
    alpha = np.linspace(-0.6, 0.6, n_agents)
    beta = rng.normal(0.0, 1.5, n_tasks)
    m = expit(0.3 + alpha[:, None] + beta[None, :])
    if gen == "zoi":
        rho = np.linspace(0.2, 0.6, n_agents)[:, None]
        phi = 1.0 / rho - 1.0
        det = rng.random(m.shape) < 0.3
        p = np.where(det, (rng.random(m.shape) < m).astype(float),
                     rng.beta(m * phi, (1.0 - m) * phi))
    else:
        sigma_cell = 2.0 if gen == "simulator_strong" else 0.8
        p = expit(0.3 + alpha[:, None] + beta[None, :] + rng.normal(0.0, sigma_cell, m.shape))
    c = rng.binomial(n_trials, p)
    agents = [f"agent{a}" for a in range(n_agents)]
    tasks = [f"t{t:03d}" for t in range(n_tasks)]
    return pd.DataFrame({"agent": np.repeat(agents, n_tasks), "task_id": np.tile(tasks, n_agents),
                         "n": n_trials, "c": c.ravel(), "n_missing": 0})


def one(setting: str, i: int, seed: int) -> dict:
    """Fit one replicate and return its verdict and smallest two-sided p-value."""
    from agentstats.models import ConvergenceWarning, fit

    gen, model, n_agents, n_tasks, n_trials, expect = SETTINGS[setting]
    rng = np.random.default_rng([seed, list(SETTINGS).index(setting), i])
    counts = counts_of(gen, n_agents, n_tasks, n_trials, rng)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        f = fit(counts, model, draws=500, tune=500, chains=4, cores=1, sampler="pymc", random_seed=i,
                progressbar=False)
    ppc = f.ppc(random_seed=0)
    p = ppc.table["p_value"].to_numpy(dtype=float)
    bad = ppc.misfits()
    return {"setting": setting, "rep": i, "misfit_expected": expect, "flagged": bool(len(bad)),
            "statistics": len(p), "min_two_sided_p": float(np.min(2 * np.minimum(p, 1 - p))),
            "flagged_statistics": ";".join(bad["statistic"]), "converged": bool(f.diagnostics().ok),
            "seconds": round(time.perf_counter() - t0, 1)}


def rate_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Per setting: replicates, flags, the flag rate with its 95 % Clopper-Pearson interval."""
    out = []
    for setting, g in rows.groupby("setting", sort=False):
        n, x = len(g), int(g["flagged"].sum())
        lo = beta_dist.ppf(0.025, x, n - x + 1) if x > 0 else 0.0
        hi = beta_dist.ppf(0.975, x + 1, n - x) if x < n else 1.0
        out.append({"setting": setting, "a flag is": "detection" if g["misfit_expected"].iloc[0] else "false alarm",
                    "replicates": n, "flagged": x, "rate": x / n, "95% interval": f"[{lo:.3f}, {hi:.3f}]",
                    "statistics": int(g["statistics"].median()), "converged": int(g["converged"].sum()),
                    "s per fit": float(g["seconds"].median())})
    return pd.DataFrame(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=100)
    ap.add_argument("--seed", type=int, default=20261203)
    ap.add_argument("--quick", action="store_true", help="5 replicates per setting, nothing written")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    reps = 5 if args.quick else args.reps
    out_csv = ROOT / "validation" / "results" / "ppc_verdict_check.csv"
    t0 = time.perf_counter()
    rows = []
    for setting in SETTINGS:
        n_reps = max(5, reps // 4) if SETTINGS[setting][5] else reps  # power is near 1: fewer replicates tell it
        for i in range(n_reps):
            rows.append(one(setting, i, args.seed))
            r = rows[-1]
            print(f"{setting}: {i + 1}/{n_reps} flagged={r['flagged']} min p={r['min_two_sided_p']:.4f} "
                  f"({r['seconds']} s)", flush=True)
            if not (args.quick or args.no_write):
                pd.DataFrame(rows).to_csv(out_csv, index=False)
    table = rate_table(pd.DataFrame(rows))
    minutes = (time.perf_counter() - t0) / 60
    print(table.to_string(index=False))
    print(f"{minutes:.1f} min")
    if args.quick or args.no_write:
        return
    body = (
        f"`validation/ppc_verdict_check.py --reps {reps} --seed {args.seed}` ({minutes:.0f} min on 2 shared cores). "
        "The verdict flags a fit when a statistic's two-sided posterior predictive p-value is below 0.05 / m.\n\n"
        + md_table(table, ".3f")
    )
    write_block(ROOT / "docs" / "validation.md", "ppc_verdict", body,
                "## The posterior predictive check's verdict: false alarms and power")


if __name__ == "__main__":
    main()

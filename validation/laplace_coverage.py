"""Does the Laplace tier's credible interval cover at NUTS's rate? Simulated truth and real data.

Run:  .venv/bin/python validation/laplace_coverage.py --part sim [--datasets 40] [--size 8x150x4] [--workers 2]
      .venv/bin/python validation/laplace_coverage.py --part lcb [--subsets 3] [--shared-data DIR]
      .venv/bin/python validation/laplace_coverage.py --aggregate-only     # tables from the saved rows

``sim``. Dataset ``i`` (seed ``--seed + i``) is drawn from the default model's own shape, as
``benchmarks/bench_scale.py`` draws it (:func:`bench_scale.truth`): ``logit m = 0.3 + alpha[a] + beta[t]``,
``alpha ~ N(0, 1)``, ``beta ~ N(0, 1.5)``, per-agent ``rho = expit(N(-1, 0.7))``, 30 % deterministic cells (``p``
exactly 0 or 1), ``c ~ Binomial(n, p)``. Both methods fit the default model (``zoi_beta_binomial``, per-agent
dispersion) to the same counts: ``fit(counts, method="nuts")`` (fit's defaults: nutpie, 4 chains, the stopping
rule) and ``fit(counts, method="laplace")`` (4 x 500 independent draws). Estimands per agent, in-sample over the
dataset's tasks, from the true ``p``: pass@1 = ``mean_t p``, pass^k = ``mean_t p^k`` (k = 2, 4, 8), pass@4 =
``mean_t 1 - (1 - p)^4``, and the contrast of each agent's pass@1 with agent 0's. Reported: coverage of the 95 %
equal-tailed intervals (``posterior_pass_k``) with its Monte Carlo error, their width, and the mean absolute
difference between the two methods' posterior means.

``lcb``. The real-data check of ``validation/real_data_check.py`` (LiveCodeBench self-repair, 15 models x 713
problems, 2 of 10 samples per cell -> all 10; k = 3..10) with the Laplace tier: its subsets (same seeds) are fitted
with ``method="laplace"`` and compared with the default model's NUTS rows saved in
``validation/results/real_data_lcb.csv`` (same subsets, same reference values).

Rows go to ``validation/results/laplace_coverage_sim.csv`` and ``laplace_coverage_lcb.csv``; the tables into
``docs/validation.md`` between ``<!-- BEGIN laplace_coverage -->`` markers.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from _docs import ROOT, md_table, write_block

RESULTS = ROOT / "validation" / "results"
SIM = RESULTS / "laplace_coverage_sim.csv"
LCB = RESULTS / "laplace_coverage_lcb.csv"
KS = (1, 2, 4, 8)
METHODS = ("nuts", "laplace")


def simulate(size: str, seed: int) -> tuple[pd.DataFrame, np.ndarray]:
    """Counts and true ``p`` (agent, task) of one dataset (module docstring)."""
    from bench_scale import truth
    from scipy.special import expit

    a, t, n = (int(x) for x in size.split("x"))
    rng = np.random.default_rng(seed)
    eta, phi = truth(a, t, rng)
    m = expit(eta)
    p = rng.beta(m * phi[:, None], (1 - m) * phi[:, None])
    det = rng.random(m.shape) < 0.3
    p = np.where(det, (rng.random(m.shape) < m).astype(float), p)
    c = rng.binomial(n, p)
    counts = pd.DataFrame({
        "agent": np.repeat([f"agent-{i:02d}" for i in range(a)], t),
        "task_id": np.tile([f"task-{j:04d}" for j in range(t)], a),
        "n": n,
        "c": c.ravel(),
    })
    return counts, p


def one_dataset(i: int, size: str, seed: int) -> list[dict]:
    """Fit dataset ``i`` with both methods; one row per (method, estimand, agent)."""
    from agentstats.models import fit
    from agentstats.posterior import posterior_pass_k

    counts, p = simulate(size, seed + i)
    truth = {f"pass_hat_{k}": (p**k).mean(axis=1) for k in KS}
    truth["pass_at_4"] = (1 - (1 - p) ** 4).mean(axis=1)
    truth["contrast_pass_1"] = truth["pass_hat_1"] - truth["pass_hat_1"][0]
    rows = []
    for method in METHODS:
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            f = fit(counts, method=method, random_seed=seed + i, cores=1, check_convergence=False)
        wall = time.perf_counter() - t0
        diag = f.diagnostics()
        post = posterior_pass_k(f, list(KS))
        draws = {f"pass_hat_{k}": post["pass_hat_k"].sel(k=k).transpose("chain", "draw", "agent").to_numpy()
                 .reshape(-1, p.shape[0]) for k in KS}
        draws["pass_at_4"] = (post["pass_at_k"].sel(k=4).transpose("chain", "draw", "agent").to_numpy()
                              .reshape(-1, p.shape[0]))
        draws["contrast_pass_1"] = draws["pass_hat_1"] - draws["pass_hat_1"][:, :1]
        for name, d in draws.items():
            lo, hi = np.quantile(d, [0.025, 0.975], axis=0)
            for a in range(p.shape[0]):
                if name.startswith("contrast") and a == 0:
                    continue
                rows.append(dict(dataset=i, method=method, estimand=name, agent=a, truth=float(truth[name][a]),
                                 mean=float(d[:, a].mean()), ci_low=float(lo[a]), ci_high=float(hi[a]),
                                 wall_s=round(wall, 2), ok=bool(diag.ok), draws=int(d.shape[0])))
    return rows


def aggregate_sim(df: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Coverage per (estimand, method) and the agreement of the two methods' means and widths."""
    df = df.copy()
    df["covered"] = (df.ci_low <= df.truth) & (df.truth <= df.ci_high)
    df["width"] = df.ci_high - df.ci_low
    cov = []
    for (est, method), g in df.groupby(["estimand", "method"], sort=False):
        c = float(g.covered.mean())
        cov.append(dict(estimand=est, method=method, pairs=len(g), datasets=g.dataset.nunique(), coverage=c,
                        mc_err=2 * np.sqrt(c * (1 - c) / len(g)), mean_width=float(g.width.mean()),
                        low_miss=float(np.mean(g.truth < g.ci_low)), high_miss=float(np.mean(g.truth > g.ci_high))))
    cov_t = pd.DataFrame(cov)
    wide = df.pivot_table(index=["dataset", "estimand", "agent"], columns="method", values=["mean", "width"])
    both = wide.dropna()
    agree = []
    for est, g in both.groupby(level="estimand", sort=False):
        agree.append(dict(estimand=est, pairs=len(g),
                          mean_abs_diff=float(np.mean(np.abs(g[("mean", "laplace")] - g[("mean", "nuts")]))),
                          diff_over_nuts_width=float(np.mean(np.abs(g[("mean", "laplace")] - g[("mean", "nuts")])
                                                             / g[("width", "nuts")])),
                          width_ratio=float(np.mean(g[("width", "laplace")] / g[("width", "nuts")]))))
    fits = df.drop_duplicates(["dataset", "method"]).groupby("method")
    agree_t = pd.DataFrame(agree)
    agree_t.attrs["wall"] = {m: float(g.wall_s.median()) for m, g in fits}
    agree_t.attrs["ok"] = {m: float(g.ok.mean()) for m, g in fits}
    return cov_t, agree_t


def run_lcb(subsets: int, seed: int, shared: Path | None = None) -> pd.DataFrame:
    """Fit the real-data check's LCB subsets with the Laplace tier; rows as ``real_data_lcb.csv``'s.

    ``shared``: the folder holding ``livecodebench-repair`` (default: the real-data check's, ``../shared/data``).
    """
    import real_data_check
    from real_data_check import load_lcb, plugin, reference, subsample

    if shared is not None:
        real_data_check.SHARED = shared

    from agentstats.models import fit
    from agentstats.models.data import prepare_counts
    from agentstats.posterior import posterior_pass_k, predict_rerun, summarize_pass_k

    full, min_runs, ks = load_lcb(), 10, np.arange(3, 11)
    ref = reference(full, min_runs, ks)
    out = []
    for s in range(subsets):
        counts2 = subsample("lcb", full, None, seed + s)
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            f = fit(counts2, method="laplace", random_seed=seed + s)
        wall = time.perf_counter() - t0
        data = prepare_counts(counts2)
        full_idx = full.set_index(["agent", "task_id"])["n"]
        n_full = np.array([[full_idx.get((a, t), 0) for t in data.tasks] for a in data.agents])
        include = (n_full >= min_runs) & (data.n > 0)
        post = summarize_pass_k(posterior_pass_k(f, ks, include=include)["pass_hat_k"])
        pred = summarize_pass_k(predict_rerun(f, np.where(include, n_full - data.n, 0), ks,
                                              include=include)["pass_hat_k"])
        res = post[["agent", "k", "mean", "ci_low", "ci_high"]].merge(
            pred[["agent", "k", "ci_low", "ci_high"]].rename(columns={"ci_low": "pred_low", "ci_high": "pred_high"}),
            on=["agent", "k"]).merge(ref, on=["agent", "k"]).merge(plugin(counts2, full, min_runs, ks),
                                                                    on=["agent", "k"])
        res.insert(0, "subset", s)
        res.insert(0, "model", "zoi, per-agent rho (default), laplace")
        res["wall_s"] = round(wall, 1)
        res["ok"] = bool(f.diagnostics().ok)
        out.append(res)
        print(f"lcb subset {s}: {wall:.1f} s, checks {f.sampler.laplace}", file=sys.stderr, flush=True)
    return pd.concat(out, ignore_index=True)


def aggregate_lcb(lap: pd.DataFrame) -> pd.DataFrame:
    """The real-data check's summary (MAE ratio, coverage) for the Laplace rows and the saved NUTS rows."""
    from real_data_check import summarize

    nuts = pd.read_csv(RESULTS / "real_data_lcb.csv")
    nuts = nuts[nuts.model == "zoi, per-agent rho (default)"]
    nuts = nuts[nuts.subset.isin(lap.subset.unique())].assign(model="zoi, per-agent rho (default), NUTS")
    cols = list(nuts.columns)
    both = pd.concat([nuts, lap[cols]], ignore_index=True)
    return summarize(both)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--part", choices=("sim", "lcb"), default="sim")
    ap.add_argument("--datasets", type=int, default=40)
    ap.add_argument("--size", default="8x150x4")
    ap.add_argument("--seed", type=int, default=20261203)
    ap.add_argument("--lcb-seed", type=int, default=20261201, help="the real-data check's seed (its saved rows)")
    ap.add_argument("--subsets", type=int, default=3)
    ap.add_argument("--shared-data", type=Path, default=None,
                    help="folder with livecodebench-repair (default: validation/real_data_check.py's ../shared/data)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--aggregate-only", action="store_true")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    RESULTS.mkdir(exist_ok=True)
    t_start = time.perf_counter()
    if not args.aggregate_only and args.part == "sim":
        done = set(pd.read_csv(SIM).dataset.unique()) if SIM.exists() else set()
        jobs = [i for i in range(args.datasets) if i not in done]
        with ProcessPoolExecutor(max_workers=max(1, min(args.workers, 2))) as ex:
            futs = {ex.submit(one_dataset, i, args.size, args.seed): i for i in jobs}
            for fut in as_completed(futs):
                pd.DataFrame(fut.result()).to_csv(SIM, mode="a", header=not SIM.exists(), index=False,
                                                  float_format="%.6g")
                print(f"dataset {futs[fut]} done ({time.perf_counter() - t_start:.0f} s)", file=sys.stderr,
                      flush=True)
    if not args.aggregate_only and args.part == "lcb":
        run_lcb(args.subsets, args.lcb_seed, args.shared_data).to_csv(LCB, index=False, float_format="%.6g")
    parts = []
    if SIM.exists():
        sim = pd.read_csv(SIM)
        cov, agree = aggregate_sim(sim)
        size = args.size
        parts.append(f"""**Simulated truth** (`--part sim`, {sim.dataset.nunique()} datasets of {size} agents x tasks x
trials, seed {args.seed}; the default model by NUTS and by the Laplace tier on the same counts). Coverage of the
95 % equal-tailed intervals (`mc_err` = 2 sqrt(c (1 - c) / pairs), optimistic: the agents of a dataset share tasks):

{md_table(cov)}

Agreement of the two methods on the same data (`diff_over_nuts_width`: |mean difference| / NUTS's interval width;
`width_ratio`: Laplace's width / NUTS's). Median wall time of a fit: {', '.join(f'{m} {w:.1f} s' for m, w in
agree.attrs['wall'].items())}; share of fits whose checks passed: {', '.join(f'{m} {v:.2f}' for m, v in
agree.attrs['ok'].items())}.

{md_table(agree)}
""")
    if LCB.exists():
        lap = pd.read_csv(LCB)
        summ = aggregate_lcb(lap)
        walls = lap.drop_duplicates("subset").wall_s.tolist()
        parts.append(f"""**Real data** (`--part lcb`): LiveCodeBench self-repair, 2 of 10 samples per cell -> all 10,
k = 3..10, {lap.subset.nunique()} subsets of `validation/real_data_check.py` (seed {args.lcb_seed}); NUTS rows are
that script's saved default-model rows for the same subsets. Laplace fits took {', '.join(f'{w:.0f}' for w in walls)}
s (10,695 cells each).

{md_table(summ)}
""")
    body = (f"Command: `.venv/bin/python validation/laplace_coverage.py --part sim|lcb`. "
            f"{time.strftime('%Y-%m-%d')}.\n\n")
    body += "\n".join(parts)
    print(body)
    if not args.no_write and parts:
        write_block(ROOT / "docs" / "validation.md", "laplace_coverage", body, "## Laplace tier")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

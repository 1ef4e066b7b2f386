"""Real-data check of the hierarchical models on repeated-trial data: fit on 2 trials per cell, predict all trials.

Run:  .venv/bin/python validation/real_data_check.py --data lcb     [--subsets 3] [--seed 20261201] [--quick]
      .venv/bin/python validation/real_data_check.py --data metr    [...]
      (--no-write: print only; --no-loo: skip the full-data model comparison; --models 1: the default model only)

Data
----
* ``lcb``: LiveCodeBench self-repair (``../shared/data/livecodebench-repair``, Jain et al. 2024, arXiv 2403.07974,
  CC BY-SA 4.0): 15 models x 713 problems x 10 samples (the two models with one sample are left out); successes per
  cell ``round(pass@1 / 10)``. Evaluation cells: all. k = 3..10.
* ``metr``: METR time-horizon runs (``../shared/data/metr-time-horizon``, arXiv 2503.14499), agent = ``alias``,
  success = ``score_binarized``, human baseliners excluded. Evaluation cells: those with >= 8 runs. k = 3..8.

Protocol
--------
1. For each of ``--subsets`` random seeds, keep 2 trials per cell drawn without replacement (cells with >= 2 trials;
   for LCB a hypergeometric draw of the 2 kept samples' successes, which is the same thing for counts) and fit each
   model of :data:`MODELS` at ``fit``'s defaults (4 chains x 1,000 + 1,000, the default sampler).
2. Reference: per agent and k, the unbiased suite pass^k from ALL trials of the evaluation cells,
   ``mean_t C(c_t, k) / C(n_t, k)`` (Yao et al. 2024, arXiv 2406.12045). Model: the posterior of the in-sample
   suite pass^k over the same cells (``posterior_pass_k(..., include=...)``; mean and 95 % equal-tailed interval), and
   the 95 % posterior predictive interval of the all-trials statistic (``predict_rerun`` with each cell's remaining
   ``n - 2`` trials). Plug-in: ``mean_t (c2_t / 2)^k`` from the 2 kept trials.
3. Goals: MAE <= 0.3 x the plug-in's; 95 % credible intervals cover the all-trials value in >= 90 % of (agent, k)
   pairs; the predictive interval in >= 93 %. Counted strictly; where the all-trials value is exactly 0 or 1, a pair
   also counts as covered within the printed precision (0.0005) of the interval, and both counts are reported.
4. Model choice (``--no-loo`` skips it): every model of :data:`CHOICE` fitted to the FULL data, compared by PSIS-LOO
   over cells (``compare_models``) and by the posterior predictive check of per-cell spread, per agent
   (``posterior_predictive_cells``: the share of each agent's cells whose outcome flips; a p-value outside
   [0.025, 0.975] marks an agent the model misfits).

Writes Markdown into ``docs/validation.md`` between ``<!-- BEGIN real_data_<data> -->`` markers and the per-pair
results to ``validation/results/real_data_<data>.csv``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _docs import ROOT, md_table, write_block

from agentstats.estimators import pass_hat_k
from agentstats.models import compare_models, diagnose, fit, get_family, posterior_predictive_cells, prepare_counts
from agentstats.posterior import posterior_pass_k, predict_rerun, summarize_pass_k

SHARED = ROOT.parent / "shared" / "data"
#: (label, model, options) fitted on every 2-trial subset.
MODELS = (
    ("zoi, per-agent rho (default)", "zoi_beta_binomial", {"dispersion": "agent"}),
    ("zoi, shared rho", "zoi_beta_binomial", {"dispersion": "shared"}),
    ("beta_binomial, per-agent rho", "beta_binomial", {"dispersion": "agent"}),
)
#: Models compared on the full data (LOO and per-agent PPC); det_by_agent asks whether the always/never share
#: should be per agent too.
CHOICE = (
    ("zoi, per-agent rho (default)", "zoi_beta_binomial", {"dispersion": "agent"}),
    ("zoi, shared rho", "zoi_beta_binomial", {"dispersion": "shared"}),
    ("zoi, per-agent rho and det_share", "zoi_beta_binomial", {"dispersion": "agent", "det_by_agent": True}),
    ("beta_binomial, per-agent rho", "beta_binomial", {"dispersion": "agent"}),
    ("partial_pooling, per-agent sigma_cell", "partial_pooling", {"dispersion": "agent"}),
)
TOL = 0.0005


def load_lcb() -> pd.DataFrame:
    """Full counts ``agent, task_id, n, c`` of LiveCodeBench self-repair (15 models with 10 samples)."""
    raw = json.loads(gzip.decompress((SHARED / "livecodebench-repair" / "performances_repair.json.gz").read_bytes()))
    df = pd.DataFrame(raw["performances"])
    df = df[~df["model"].str.contains("N=1", regex=False)]
    c = (df["pass@1"] / 10.0).round().astype(int)
    return pd.DataFrame({"agent": df["model"], "task_id": df["question_id"], "n": 10, "c": c}).reset_index(drop=True)


def load_metr_runs() -> pd.DataFrame:
    """Per-run table ``agent, task_id, y`` of METR (human excluded)."""
    runs = pd.read_json(SHARED / "metr-time-horizon" / "all_runs.jsonl.gz", lines=True, compression="gzip")
    runs = runs[runs["alias"] != "human"]
    return pd.DataFrame({"agent": runs["alias"], "task_id": runs["task_id"], "y": runs["score_binarized"].astype(int)})


def subsample(data: str, full: pd.DataFrame, runs: pd.DataFrame | None, seed: int) -> pd.DataFrame:
    """2 trials per cell with >= 2, drawn without replacement: counts ``agent, task_id, n, c``."""
    rng = np.random.default_rng(seed)
    if data == "lcb":
        c2 = rng.hypergeometric(full["c"].to_numpy(), (full["n"] - full["c"]).to_numpy(), 2)
        return full.assign(n=2, c=c2)
    assert runs is not None
    shuffled = runs.sample(frac=1.0, random_state=int(rng.integers(2**31)))
    two = shuffled.groupby(["agent", "task_id"], sort=False).head(2)
    out = two.groupby(["agent", "task_id"], sort=False)["y"].agg(n="size", c="sum").reset_index()
    return out[out["n"] == 2].reset_index(drop=True)


def reference(full: pd.DataFrame, min_runs: int, ks: np.ndarray) -> pd.DataFrame:
    """Unbiased all-trials suite pass^k per (agent, k) over the evaluation cells (n >= min_runs)."""
    ev = full[full["n"] >= min_runs]
    rows = []
    for agent, g in ev.groupby("agent", sort=False):
        for k in ks:
            rows.append(dict(agent=agent, k=int(k), truth=float(np.mean(pass_hat_k(g["n"].to_numpy(),
                                                                                  g["c"].to_numpy(), int(k))))))
    return pd.DataFrame(rows)


def fit_and_predict(counts2, full, min_runs, ks, model, options, seed):
    """Fit on the 2-trial counts; posterior and predictive summaries of pass^k over the evaluation cells."""
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dt = fit(counts2, get_family(model, **options), random_seed=seed)
    wall = time.perf_counter() - t0
    data = prepare_counts(counts2)
    full_idx = full.set_index(["agent", "task_id"])["n"]
    n_full = np.zeros(data.shape, dtype=int)
    for i, a in enumerate(data.agents):
        for j, t in enumerate(data.tasks):
            n_full[i, j] = full_idx.get((a, t), 0)
    include = (n_full >= min_runs) & (data.n > 0)
    post = summarize_pass_k(posterior_pass_k(dt, ks, include=include)["pass_hat_k"])
    pred = summarize_pass_k(predict_rerun(dt, np.where(include, n_full - data.n, 0), ks, include=include)["pass_hat_k"])
    out = post[["agent", "k", "mean", "ci_low", "ci_high"]].merge(
        pred[["agent", "k", "ci_low", "ci_high"]].rename(columns={"ci_low": "pred_low", "ci_high": "pred_high"}),
        on=["agent", "k"],
    )
    diag = diagnose(dt)
    info = dict(
        wall_s=wall,
        max_r_hat=float(diag.table.r_hat.max()),
        min_ess_bulk=float(diag.table.ess_bulk.min()),
        divergences=int(diag.divergences),
        converged=bool(diag.ok),
    )
    return out, info, dt


def _evaluation_cells(counts2: pd.DataFrame, full: pd.DataFrame, min_runs: int) -> pd.DataFrame:
    """The 2-trial counts of the evaluation cells (those with >= ``min_runs`` trials in the full data)."""
    ev = counts2.merge(full[["agent", "task_id", "n"]].rename(columns={"n": "n_full"}), on=["agent", "task_id"])
    return ev[ev["n_full"] >= min_runs]


def plugin(counts2: pd.DataFrame, full: pd.DataFrame, min_runs: int, ks: np.ndarray) -> pd.DataFrame:
    ev = _evaluation_cells(counts2, full, min_runs)
    rows = [
        dict(agent=a, k=int(k), plugin=float(np.mean((g["c"] / g["n"]) ** k)))
        for a, g in ev.groupby("agent", sort=False)
        for k in ks
    ]
    return pd.DataFrame(rows)


def conditional_consistency(res: pd.DataFrame, full: pd.DataFrame, shares2: pd.DataFrame, min_runs: int,
                            k_max: int) -> pd.DataFrame:
    """Per agent: how often a cell whose 2 kept trials both pass passes all ``k_max``, in the data and in the model.

    ``data``: ``pass^k_max / pass^2`` from all trials of the evaluation cells, the probability that ``k_max`` trials
    drawn at random from a random cell all pass given that 2 of them pass (``pass^k`` is the probability that ``k``
    trials drawn without replacement all pass, Yao et al. 2024, arXiv 2406.12045); for LCB (10 trials a cell) the
    share of 2-of-2 draws that come from 10-of-10 cells. ``model``: the posterior mean of pass^k_max on those cells
    divided by the share of 2-of-2 cells in the subset it was fitted on (which the fit reproduces), averaged over
    subsets. Two trials per cell identify ``pass^2`` per agent, not how it continues to ``k_max``: where ``data`` and
    ``model`` differ the family's shape, not the data, sets the model's pass^k_max.
    """
    ev = full[full["n"] >= min_runs]
    rows = []
    default = res[(res.model == MODELS[0][0]) & (res.k == k_max)]
    for agent, g in ev.groupby("agent", sort=False):
        n, c = g["n"].to_numpy(), g["c"].to_numpy()
        p2, pk = float(np.mean(pass_hat_k(n, c, 2))), float(np.mean(pass_hat_k(n, c, k_max)))
        d = default[default.agent == agent].merge(shares2[shares2.agent == agent], on="subset")
        rows.append(dict(
            agent=agent,
            pass_hat_2=p2,
            **{f"pass_hat_{k_max}": pk},
            data=pk / p2 if p2 > 0 else np.nan,
            model=float(np.mean(d["mean"] / d["share_2of2"])) if len(d) and (d["share_2of2"] > 0).all() else np.nan,
            **{f"coverage_k{k_max}": float(covered(d.truth, d.ci_low, d.ci_high).mean()) if len(d) else np.nan},
        ))
    return pd.DataFrame(rows)


def share_2of2(counts2: pd.DataFrame, full: pd.DataFrame, min_runs: int, subset: int) -> pd.DataFrame:
    """Per agent, the share of evaluation cells whose 2 kept trials both pass."""
    ev = _evaluation_cells(counts2, full, min_runs)
    out = ev.assign(both=ev["c"] == 2).groupby("agent", sort=False)["both"].mean().rename("share_2of2").reset_index()
    return out.assign(subset=subset)


def covered(truth, lo, hi, tol=0.0):
    return (truth >= lo - tol) & (truth <= hi + tol)


def summarize(res: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for label, g in res.groupby("model", sort=False):
        boundary = (g.truth == 0) | (g.truth == 1)
        tol = np.where(boundary, TOL, 0.0)
        mae = float(np.mean(np.abs(g["mean"] - g.truth)))
        mae_plug = float(np.mean(np.abs(g.plugin - g.truth)))
        rows.append(
            dict(
                model=label,
                pairs=len(g),
                MAE=mae,
                MAE_plugin=mae_plug,
                ratio=mae / mae_plug,
                coverage=float(covered(g.truth, g.ci_low, g.ci_high).mean()),
                coverage_tol=float(covered(g.truth, g.ci_low, g.ci_high, tol).mean()),
                pred_coverage=float(covered(g.truth, g.pred_low, g.pred_high).mean()),
                pred_coverage_tol=float(covered(g.truth, g.pred_low, g.pred_high, tol).mean()),
                mean_width=float(np.mean(g.ci_high - g.ci_low)),
            )
        )
    return pd.DataFrame(rows)


def model_choice(full: pd.DataFrame, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """LOO comparison and per-agent PPC of the flip share, every CHOICE model fitted to the full data."""
    fits, ppc_rows, diag_rows = {}, [], []
    for label, model, options in CHOICE:
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            dt = fit(full, get_family(model, **options), random_seed=seed, log_likelihood=True)
        diag = diagnose(dt)
        diag_rows.append((label, time.perf_counter() - t0, diag))
        fits[label] = dt
        tab = posterior_predictive_cells(dt, n_draws=400, random_seed=seed).table
        flips = tab[tab.statistic.str.startswith("flip_share[")]
        ppc_rows.append(
            dict(
                model=label,
                agents_misfit=int(((flips.p_value < 0.025) | (flips.p_value > 0.975)).sum()),
                agents=len(flips),
                worst_p=float(np.min(np.minimum(flips.p_value, 1 - flips.p_value))),
                within_task_var_p=float(tab.set_index("statistic").loc["within_task_var", "p_value"]),
                cells_all_success_p=float(tab.set_index("statistic").loc["cells_all_success", "p_value"]),
                max_r_hat=float(diag.table.r_hat.max()),
                min_ess_bulk=float(diag.table.ess_bulk.min()),
                divergences=int(diag.divergences),
            )
        )
        print(ppc_rows[-1], file=sys.stderr, flush=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loo = compare_models(fits).reset_index().rename(columns={"index": "model"})
    keep = [c for c in ("model", "rank", "elpd", "p", "elpd_diff", "se", "dse", "weight", "warning")
            if c in loo.columns]
    return loo[keep], pd.DataFrame(ppc_rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", choices=("lcb", "metr"), required=True)
    ap.add_argument("--subsets", type=int, default=3)
    ap.add_argument("--seed", type=int, default=20261201)
    ap.add_argument("--quick", action="store_true", help="one subset, the default model only, no LOO (smoke run)")
    ap.add_argument("--no-loo", action="store_true")
    ap.add_argument("--models", type=int, default=len(MODELS),
                    help="fit the first N models of MODELS on the subsets (1: the default model only)")
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--reuse", action="store_true",
                    help="tabulate the saved per-pair results instead of refitting (with the --seed of those fits)")
    args = ap.parse_args(argv)
    t_start = time.perf_counter()
    if args.data == "lcb":
        full, runs, min_runs, ks = load_lcb(), None, 10, np.arange(3, 11)
    else:
        runs = load_metr_runs()
        full = runs.groupby(["agent", "task_id"], sort=False)["y"].agg(n="size", c="sum").reset_index()
        min_runs, ks = 8, np.arange(3, 9)
    ref = reference(full, min_runs, ks)
    models = MODELS[:1] if args.quick else MODELS[: max(1, args.models)]
    subsets = 1 if args.quick else args.subsets
    results, fit_rows, shares = [], [], []
    res_dir = ROOT / "validation" / "results"
    if args.reuse:
        saved = pd.read_csv(res_dir / f"real_data_{args.data}.csv")
        fit_rows = pd.read_csv(res_dir / f"real_data_{args.data}_fits.csv").to_dict("records")
        results = [saved]
        subsets = int(saved["subset"].nunique())
    for s in range(subsets):
        seed = args.seed + s
        counts2 = subsample(args.data, full, runs, seed)
        shares.append(share_2of2(counts2, full, min_runs, s))
        if args.reuse:
            continue
        plug = plugin(counts2, full, min_runs, ks)
        for label, model, options in models:
            out, info, _ = fit_and_predict(counts2, full, min_runs, ks, model, options, seed)
            res = out.merge(ref, on=["agent", "k"]).merge(plug, on=["agent", "k"])
            res.insert(0, "subset", s)
            res.insert(0, "model", label)
            results.append(res)
            fit_rows.append(dict(model=label, subset=s, **info))
            print(fit_rows[-1], file=sys.stderr, flush=True)
    res = pd.concat(results, ignore_index=True)
    res_dir.mkdir(exist_ok=True)
    res.to_csv(res_dir / f"real_data_{args.data}.csv", index=False, float_format="%.6g")
    pd.DataFrame(fit_rows).to_csv(res_dir / f"real_data_{args.data}_fits.csv", index=False, float_format="%.6g")
    summary = summarize(res)
    per_subset = pd.concat(
        [summarize(g).assign(subset=s) for s, g in res.groupby("subset")], ignore_index=True
    )[["model", "subset", "ratio", "coverage", "coverage_tol", "pred_coverage", "pred_coverage_tol"]]
    fits = pd.DataFrame(fit_rows)
    default = res[res.model == MODELS[0][0]]
    per_agent = (
        default.assign(err=np.abs(default["mean"] - default.truth), err_plug=np.abs(default.plugin - default.truth),
                       cov=covered(default.truth, default.ci_low, default.ci_high),
                       pcov=covered(default.truth, default.pred_low, default.pred_high))
        .groupby("agent", sort=False)[["err", "err_plug", "cov", "pcov"]].mean().reset_index()
        .rename(columns={"err": "MAE", "err_plug": "MAE_plugin", "cov": "coverage", "pcov": "pred_coverage"})
    )
    consistency = conditional_consistency(res, full, pd.concat(shares, ignore_index=True), min_runs, int(ks[-1]))
    loo_txt = ""
    if not (args.quick or args.no_loo):
        loo, ppc = model_choice(full, args.seed)
        loo_txt = f"""
**Model choice on the full data** (every trial; PSIS-LOO over cells, higher elpd is better; `dse` is the standard
error of the difference to the best):

{md_table(loo)}

Posterior predictive check of per-cell spread on the full data, per agent: `agents_misfit` counts agents whose
flip-share p-value is outside [0.025, 0.975]; `worst_p` is the smallest two-sided tail probability; also the p-values
of the between-agent within-task variance and of the number of always-solved cells:

{md_table(ppc)}
"""
    name = "LiveCodeBench self-repair" if args.data == "lcb" else "METR time-horizon"
    timing = (
        f"tabulated on {time.strftime('%Y-%m-%d')} with `--reuse` from the fits saved in "
        f"`validation/results/real_data_{args.data}.csv`, their wall times below"
        if args.reuse
        else f"{time.perf_counter() - t_start:.0f} s in all on the 2-core machine, {time.strftime('%Y-%m-%d')}"
    )
    flags = "".join(f" {a}" for a in (argv if argv is not None else sys.argv[1:]) if a not in ("--reuse",))
    body = f"""Command: `.venv/bin/python validation/real_data_check.py{flags}` (seed {args.seed}; {subsets}
subset(s) of 2 trials per cell; fits at `fit`'s defaults; {timing}{', QUICK SMOKE RUN' if args.quick else ''}).

Data: {name}, {full.agent.nunique()} agents, {full.task_id.nunique()} tasks, {len(full)} cells; evaluation cells
with >= {min_runs} trials: {int((full.n >= min_runs).sum())}; k = {ks[0]}..{ks[-1]}, {len(ref)} (agent, k) pairs per
subset.

**Result, pooled over subsets** (goals: `ratio` <= 0.3, `coverage` >= 0.90, `pred_coverage` >= 0.93; `_tol`: a
pair whose all-trials value is exactly 0 or 1 also counts when it is within {TOL} of the interval):

{md_table(summary)}

Per subset:

{md_table(per_subset)}

Fits (wall time to the posterior, worst R-hat and ESS_bulk over the sampled parameters, divergences):

{md_table(fits, floatfmt=".4g")}

Per agent, default model, pooled over subsets and k:

{md_table(per_agent)}

Consistency beyond 2 trials, per agent (default model): `data` is the share of 2-of-2 draws that pass all
{ks[-1]} (all-trials `pass^{ks[-1]} / pass^2`); `model` the fitted model's pass^{ks[-1]} over the 2-of-2 share of
its subset, averaged over subsets. Two trials per cell identify `pass^2`, not this ratio, so where `data` and
`model` differ, the cell distribution's shape, not the data, sets the model's pass^{ks[-1]}:

{md_table(consistency)}
{loo_txt}"""
    print(body)
    if not args.no_write:
        write_block(ROOT / "docs" / "validation.md", f"real_data_{args.data}", body,
                    f"## Real data: {name} (2 trials per cell -> all trials)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

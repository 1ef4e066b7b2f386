"""Does the split of 2-trial consistency between ``det_share`` and ``rho`` set the model's pass^10? (LiveCodeBench)

Run:  .venv/bin/python validation/ridge_check.py [--seed 20261201] [--subset 0] [--no-write]

Two trials per cell identify, per agent, the correlation of two trials of one cell,
``kappa_a = det_share + (1 - det_share) rho_a`` (the default model's ``icc_cell``), not how it splits between the
always/never share ``det_share`` (shared by the agents) and the Beta part's ``rho_a``. This check fits the default
model on one 2-trial subset of ``validation/real_data_check.py --data lcb`` (same seed, same subset), then moves
every posterior draw along that ridge: ``det_share' = f * min_a kappa_a`` for ``f`` in :data:`FRACTIONS` (the
largest share every agent's ``kappa`` allows, times ``f``), ``rho_a' = (kappa_a - det_share') / (1 - det_share')``
(so every ``kappa_a`` is kept), and recomputes the in-sample pass^10 over the evaluation cells
(``posterior_pass_k``). Reported per agent: the all-trials value, the fitted posterior mean, the posterior mean at
each ``f``, and the largest move from the fitted value. A small move says the miss in the real-data check is not this
split but the family's shape beyond 2 trials (docs/validation.md).

Writes Markdown into ``docs/validation.md`` between ``<!-- BEGIN ridge_lcb -->`` markers.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _docs import ROOT, md_table, write_block
from real_data_check import MODELS, fit_and_predict, load_lcb, reference, subsample

from agentstats.models import prepare_counts
from agentstats.posterior import posterior_pass_k

#: Fractions of the largest ``det_share`` each draw's ``kappa`` allows.
FRACTIONS = (0.0, 0.25, 0.5, 0.75, 0.95)
MIN_RUNS = 10
K = 10


def kappa(dt) -> xr.DataArray:
    """Per draw and agent, ``det_share + (1 - det_share) rho[a]``: the fit family's ``icc_cell``."""
    post = dt.posterior
    return xr.DataArray(dt.family.icc(post)["icc_cell"], dims=("chain", "draw", "agent"),
                        coords={d: post[d] for d in ("chain", "draw", "agent")})


def along_ridge(post, kap: xr.DataArray, fraction: float):
    """A copy of the posterior with ``det_share`` and ``phi`` moved along the ridge of constant ``kappa`` ``kap``."""
    det = post["det_share"]
    new_det = fraction * kap.min("agent")
    new_rho = (kap - new_det) / (1.0 - new_det)
    out = post.copy()
    out["det_share"] = new_det.transpose(*det.dims)
    out["phi"] = ((1.0 - new_rho) / new_rho).transpose(*post["phi"].dims)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=20261201, help="real_data_check's --seed")
    ap.add_argument("--subset", type=int, default=0)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    full = load_lcb()
    seed = args.seed + args.subset
    counts2 = subsample("lcb", full, None, seed)
    label, model, options = MODELS[0]
    out, info, dt = fit_and_predict(counts2, full, MIN_RUNS, np.array([K]), model, options, seed)
    data = prepare_counts(counts2)
    include = data.n > 0  # every LiveCodeBench cell has 10 trials: all are evaluation cells
    post = dt.posterior
    if "det_share" not in post or "agent" in post["det_share"].dims:
        raise SystemExit(f"{label}: expected one det_share shared by the agents")
    table = reference(full, MIN_RUNS, np.array([K]))[["agent", "truth"]].rename(columns={"truth": "all_trials"})
    table = table.merge(out[["agent", "mean"]].rename(columns={"mean": "fitted"}), on="agent")
    kap = kappa(dt)
    for f in FRACTIONS:
        tree = dt.idata.copy()
        tree["posterior"] = along_ridge(post, kap, f)
        moved = dataclasses.replace(dt, idata=tree)  # the same fit with the posterior moved along the ridge
        pk = posterior_pass_k(moved, [K], include=include)["pass_hat_k"].sel(k=K).mean(("chain", "draw"))
        table = table.merge(pd.DataFrame({"agent": pk["agent"].values, f"f={f:g}": pk.values}), on="agent")
    cols = [f"f={f:g}" for f in FRACTIONS]
    table["largest_move"] = table[cols].sub(table["fitted"], axis=0).abs().max(axis=1)
    det_mean = float(post["det_share"].mean())
    gap = (table["fitted"] - table["all_trials"]).abs()
    body = f"""Command: `.venv/bin/python validation/ridge_check.py` (seed {args.seed}, subset {args.subset}: the
subset of `real_data_check.py --data lcb` with that seed; {label} at `fit`'s defaults, max R-hat
{info['max_r_hat']:.3f}, min ESS_bulk {info['min_ess_bulk']:.0f}; {time.perf_counter() - t0:.0f} s on the 2-core
machine, {time.strftime('%Y-%m-%d')}).

Posterior mean pass^{K} over the {int(include.sum())} cells per agent, fitted and with every draw moved along the
ridge of constant `kappa_a` (`det_share' = f x min_a kappa_a`; the fit's own `det_share` has mean {det_mean:.3f},
min_a kappa_a mean {float(kap.min('agent').mean()):.3f}); `all_trials`: the unbiased value from all 10 samples:

{md_table(table)}

Largest move of any agent's pass^{K} along the ridge: **{table['largest_move'].max():.4f}**; the fitted value's
largest distance from the all-trials value: {gap.max():.4f} ({table.loc[gap.idxmax(), 'agent']}).
"""
    print(body)
    if not args.no_write:
        write_block(ROOT / "docs" / "validation.md", "ridge_lcb", body,
                    "## Real data: LiveCodeBench self-repair (2 trials per cell -> all trials)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

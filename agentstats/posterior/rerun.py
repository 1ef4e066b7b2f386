"""Posterior predictive distribution of the unbiased pass@k / pass^k a user would compute after a re-run."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import xarray as xr

from agentstats.estimators import pass_at_k, pass_hat_k
from agentstats.intervals import as_ks
from agentstats.models.result import Fit
from agentstats.posterior._common import RERUN_STREAM, as_fit

__all__ = ["predict_rerun"]


def predict_rerun(
    fit: Fit,
    n_future: int | np.ndarray,
    k: int | Sequence[int],
    *,
    include: np.ndarray | None = None,
    n_draws: int | None = 1000,
) -> xr.Dataset:
    """Posterior predictive distribution of the unbiased suite pass@k / pass^k after ``n_future`` more trials per cell.

    For each posterior draw (evenly thinned to ``n_draws``) and each attempted cell, the cell's ``p`` comes from the
    fit's family (as in :func:`posterior_pass_k`), the new trials are ``c_new ~ Binomial(n_future, p)``, and the
    statistic a user would compute on the combined data, the mean over the agent's attempted tasks of the unbiased
    estimator at ``n + n_future`` trials and ``c + c_new`` successes (Chen et al. 2021, arXiv 2107.03374; Yao et al.
    2024, arXiv 2406.12045), is evaluated. Tasks where ``n + n_future < k`` are left out of that mean, as the
    estimator would leave them out. This is the yardstick for a re-run: it includes the sampling noise of the re-run
    itself, which a credible interval for pass^k does not.

    Parameters
    ----------
    fit : Fit
        A fit from :func:`agentstats.fit`.
    n_future : int or numpy.ndarray of int, shape (agent, task)
        Additional trials per attempted cell (>= 0), the same for every cell or per cell (in the fit's agent and task
        order).
    k : int or sequence of int
    include : numpy.ndarray of bool, shape (agent, task), optional
        Cells the statistic averages over (default: every attempted cell), e.g. the cells a reference value was
        computed on.
    n_draws : int or None
        Posterior draws used (evenly thinned); None uses all.

    Returns
    -------
    xarray.Dataset
        ``pass_at_k``, ``pass_hat_k`` with dims ``(chain, draw, agent, k)`` (``chain`` of size 1 after thinning);
        coordinate ``n_tasks`` (agent, k): tasks behind each value. Attrs ``n_future``, ``population="rerun"``.

    Raises
    ------
    ValueError
        On a negative or non-integer ``n_future``, arrays of the wrong shape, or invalid ``k``.
    """
    fit = as_fit(fit, "predict_rerun")
    ks = as_ks(k, "predict_rerun")
    post, family, data = fit.posterior, fit.family, fit.data
    if isinstance(n_future, bool):
        raise ValueError(f"n_future must be an integer >= 0, got {n_future!r}")
    future = np.asarray(n_future)
    if future.ndim == 0:
        future = np.full(data.shape, future)
    if future.shape != data.shape or not np.all(np.equal(np.mod(future, 1), 0)) or np.any(future < 0):
        raise ValueError(f"n_future must be an integer >= 0 (or such an array of shape {data.shape}), got {n_future!r}")
    future = future.astype(np.int64)
    attempted = data.n > 0
    if include is not None:
        include = np.asarray(include, dtype=bool)
        if include.shape != data.shape:
            raise ValueError(f"include must have shape {data.shape} (agent, task), got {include.shape}")
        attempted = attempted & include
    stacked = post.stack(sample=("chain", "draw")).transpose("sample", ...)
    total = stacked.sizes["sample"]
    pick = np.arange(total) if n_draws is None or n_draws >= total else np.linspace(0, total - 1, n_draws).round()
    sub = stacked.isel(sample=np.asarray(pick, dtype=int)).drop_vars(["chain", "draw", "sample"])
    sub = sub.rename({"sample": "draw"}).expand_dims(chain=[0]).assign_coords(draw=np.arange(len(pick)))
    rng = fit.rng(RERUN_STREAM)
    n_tot = data.n + future
    sums = {q: np.zeros((1, len(pick), data.shape[0], ks.size)) for q in ("pass_at_k", "pass_hat_k")}
    used = np.zeros((data.shape[0], ks.size))
    for sl, p in family.iter_cell_p(sub, data, fit.random_seed):
        c_new = rng.binomial(np.broadcast_to(future[:, sl], p.shape), np.clip(p, 0.0, 1.0))
        c_tot = data.c[:, sl] + c_new
        for j, kv in enumerate(ks):
            n_blk = np.broadcast_to(n_tot[:, sl], c_tot.shape)
            with np.errstate(invalid="ignore"):
                at = pass_at_k(n_blk, c_tot, int(kv))  # NaN where n < k; those cells are not kept
                hat = pass_hat_k(n_blk, c_tot, int(kv))
            keep = attempted[:, sl] & (n_tot[:, sl] >= kv)
            sums["pass_at_k"][..., j] += np.where(keep, at, 0.0).sum(axis=-1)
            sums["pass_hat_k"][..., j] += np.where(keep, hat, 0.0).sum(axis=-1)
            used[:, j] += keep.sum(axis=-1)
    coords = {"chain": [0], "draw": np.arange(len(pick)), "agent": data.agents, "k": ks}
    dims = ("chain", "draw", "agent", "k")
    with np.errstate(invalid="ignore", divide="ignore"):
        out = xr.Dataset(
            {q: (dims, np.where(used > 0, s / used, np.nan)) for q, s in sums.items()},
            coords={**coords, "n_tasks": (("agent", "k"), used.astype(int))},
        )
    for q in ("pass_at_k", "pass_hat_k"):
        out[q].attrs.update(quantity=q, population="rerun")
    out.attrs.update(n_future=int(future.max()) if future.size else 0, population="rerun")
    return out

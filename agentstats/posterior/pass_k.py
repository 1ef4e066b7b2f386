"""Posterior draws of suite pass@k and pass^k for observed and new tasks, and their tidy summary."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
import pandas as pd
import xarray as xr

from agentstats.intervals import CI_PROB, CiKind, as_ks, check_ci
from agentstats.models.data import CountsData
from agentstats.models.families.base import GH_NODES
from agentstats.models.families.registry import check_population
from agentstats.models.result import Fit
from agentstats.posterior._common import NEW_TASK_STREAM, Population, as_fit, interval

__all__ = ["posterior_pass_at_k", "posterior_pass_hat_k", "posterior_pass_k", "summarize_pass_k"]


def _identified(data: CountsData, ks: np.ndarray) -> np.ndarray:
    """Whether the data identify pass@k / pass^k of each agent at each k, shape (agent, K).

    k = 1 always (a task's success rate is seen in one trial). For k > 1 the value depends on how alike tries of one
    task are, which only a task with two or more trials shows: an agent with one trial per task has no such task, and
    its values at k > 1 would come from the prior's consistency (:func:`summarize_pass_k` gives a range instead).
    """
    multi = (data.n >= 2).any(axis=1)
    return (ks[None, :] == 1) | multi[:, None]


def _extrapolated(data: CountsData, ks: np.ndarray) -> np.ndarray:
    """Share of each agent's attempted tasks with n < k, shape (agent, K)."""
    obs = data.n > 0
    below = (data.n[:, :, None] < ks[None, None, :]) & obs[:, :, None]
    return below.sum(axis=1) / np.maximum(obs.sum(axis=1), 1)[:, None]


def _task_sums(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``sum_t x[c, d, a, t] w[a, t]``, shape (chain, draw, agent): one batched matrix-vector product (BLAS)."""
    c, d, a, t = x.shape
    flat = np.ascontiguousarray(x).reshape(c * d, a, 1, t)
    return np.matmul(flat, w[None, :, :, None]).reshape(c, d, a)


def posterior_pass_k(
    fit: Fit,
    k: int | Sequence[int],
    population: Population = "observed",
    *,
    tasks: Literal["attempted", "all"] = "attempted",
    include: np.ndarray | None = None,
    n_nodes: int = GH_NODES,
) -> xr.Dataset:
    """Posterior draws of suite pass@k and pass^k per agent, in one pass over the cells.

    Parameters
    ----------
    fit : Fit
        A fit from :func:`agentstats.fit` (its family, counts and seed are read from it).
    k : int or sequence of int
        Values in 1..:data:`agentstats.intervals.K_MAX`.
    population : {"observed", "new"}
        The tasks in the data, or a new task from the same population (module docstring).
    tasks : {"attempted", "all"}
        ``observed`` only: average over the tasks each agent attempted (n > 0; default) or over all tasks in the fit
        (unattempted cells then enter through the model).
    include : numpy.ndarray of bool, shape (agent, task), optional
        ``observed`` only: restrict the average to these cells (in the fit's agent and task order); agents with
        none of them get NaN.
    n_nodes : int
        Gauss-Hermite nodes for ``population="new"``.

    Returns
    -------
    xarray.Dataset
        Variables ``pass_at_k`` and ``pass_hat_k`` with dims ``(chain, draw, agent, k)``; coordinates
        ``extrapolated`` (share of the agent's tasks with n < k, dims ``agent, k``), ``identified`` (``agent, k``:
        False at k > 1 for an agent without a task with two or more trials, whose draws there follow the prior's
        within-task consistency, not the data), ``pass_1`` (draws of pass^1, dims ``chain, draw, agent``: the ends
        of the range :func:`summarize_pass_k` gives where a value is not identified) and ``n_min`` (``agent``);
        attrs ``population``.

    Raises
    ------
    ValueError
        On invalid ``k``/``population``/``tasks``, ``new`` on a model without hyperparameters, or an agent with no
        observed task under ``observed``.
    TypeError
        When ``fit`` is not a :class:`~agentstats.models.result.Fit`.
    """
    fit = as_fit(fit, "posterior_pass_k")
    ks = as_ks(k, "posterior_pass_k")
    post, family, data = fit.posterior, fit.family, fit.data
    asked = ks
    ks = np.unique(np.append(ks, 1))  # k = 1 as well: pass^1 gives the range of a value the data do not identify
    if population == "observed":
        if tasks not in ("attempted", "all"):
            raise ValueError(f"tasks must be 'attempted' or 'all', got {tasks!r}")
        weight = (data.n > 0).astype(float) if tasks == "attempted" else np.ones(data.shape)
        if include is not None:
            include = np.asarray(include, dtype=bool)
            if include.shape != data.shape:
                raise ValueError(f"include must have shape {data.shape} (agent, task), got {include.shape}")
            weight = weight * include
        n_used = weight.sum(axis=1)
        if np.any(n_used == 0) and include is None:
            empty = [a for a, u in zip(data.agents, n_used, strict=True) if u == 0]
            raise ValueError(f"agent(s) {empty} have no observed task; use population='new'")
        shape = (post.sizes["chain"], post.sizes["draw"], data.shape[0], ks.size)
        hat = np.zeros(shape)
        miss = np.zeros(shape)
        order = np.unique(ks)

        def sums(sl: slice, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            """Weighted sums over the chunk's tasks of p^k and (1 - p)^k, shape (chain, draw, agent, K)."""
            w = weight[:, sl]
            np.clip(p, 0.0, 1.0, out=p)
            q = 1.0 - p
            h_sum = np.empty(shape)
            m_sum = np.empty(shape)
            # p^k and (1 - p)^k by running products over the sorted k (one multiply per step; a power for a gap):
            # block-sized temporaries only, so memory stays bounded
            # (in place: two chunk-sized arrays for all k)
            prev = 0
            pow_p, pow_q = p.copy(), q.copy()
            for kv in order:
                gap = int(kv) - prev
                if prev == 0:
                    if gap > 1:
                        np.power(p, gap, out=pow_p)
                        np.power(q, gap, out=pow_q)
                elif gap == 1:
                    np.multiply(pow_p, p, out=pow_p)
                    np.multiply(pow_q, q, out=pow_q)
                else:
                    np.multiply(pow_p, np.power(p, gap), out=pow_p)
                    np.multiply(pow_q, np.power(q, gap), out=pow_q)
                prev = int(kv)
                cols = np.flatnonzero(ks == kv)
                h_sum[..., cols] = _task_sums(pow_p, w)[..., None]
                m_sum[..., cols] = _task_sums(pow_q, w)[..., None]
            return h_sum, m_sum

        for _, (h_sum, m_sum) in family.iter_cell_p(post, data, fit.random_seed, apply=sums):
            hat += h_sum
            miss += m_sum
        with np.errstate(invalid="ignore", divide="ignore"):  # agents without included cells: NaN
            hat /= n_used[None, None, :, None]
            at = 1.0 - miss / n_used[None, None, :, None]
    elif population == "new":
        check_population(family, population)
        hat, at = family.new_task_pass_k(post, ks, data.shape[1], fit.rng(NEW_TASK_STREAM), n_nodes)
    else:
        raise ValueError(f"population must be 'observed' or 'new', got {population!r}")
    pass_1 = hat[..., 0]  # ks is sorted and starts at 1
    pos = np.searchsorted(ks, asked)
    hat, at, ks = hat[..., pos], at[..., pos], asked
    coords = {
        "chain": post["chain"].values,
        "draw": post["draw"].values,
        "agent": data.agents,
        "k": ks,
        "extrapolated": (("agent", "k"), _extrapolated(data, ks)),
        "identified": (("agent", "k"), _identified(data, ks)),
        "pass_1": (("chain", "draw", "agent"), pass_1),
        "n_min": (("agent",), data.n_min()),
    }
    dims = ("chain", "draw", "agent", "k")
    out = xr.Dataset({"pass_at_k": (dims, at), "pass_hat_k": (dims, hat)}, coords=coords)
    out["pass_at_k"].attrs.update(quantity="pass_at_k", population=population)
    out["pass_hat_k"].attrs.update(quantity="pass_hat_k", population=population)
    out.attrs["population"] = population
    return out


def posterior_pass_at_k(
    fit: Fit,
    k: int | Sequence[int],
    population: Population = "observed",
    *,
    tasks: Literal["attempted", "all"] = "attempted",
    n_nodes: int = GH_NODES,
) -> xr.DataArray:
    """Posterior draws of suite pass@k = mean over tasks of 1 - (1 - p)^k (Chen et al. 2021, arXiv 2107.03374).

    Parameters, errors and coordinates as :func:`posterior_pass_k`; returns its ``pass_at_k`` (dims
    ``chain, draw, agent, k``; attrs ``quantity``, ``population``).
    """
    return posterior_pass_k(fit, k, population, tasks=tasks, n_nodes=n_nodes)["pass_at_k"]


def posterior_pass_hat_k(
    fit: Fit,
    k: int | Sequence[int],
    population: Population = "observed",
    *,
    tasks: Literal["attempted", "all"] = "attempted",
    n_nodes: int = GH_NODES,
) -> xr.DataArray:
    """Posterior draws of suite pass^k = mean over tasks of p^k (Yao et al. 2024, arXiv 2406.12045).

    Parameters, errors and coordinates as :func:`posterior_pass_k`; returns its ``pass_hat_k``.
    """
    return posterior_pass_k(fit, k, population, tasks=tasks, n_nodes=n_nodes)["pass_hat_k"]


def summarize_pass_k(
    draws: xr.DataArray | xr.Dataset | Sequence[xr.DataArray],
    ci_prob: float = CI_PROB,
    ci_kind: CiKind = "eti",
) -> pd.DataFrame:
    """Tidy posterior summary of pass@k / pass^k draws.

    Parameters
    ----------
    draws : xarray.DataArray, xarray.Dataset, or sequence of DataArrays
        From :func:`posterior_pass_k` / :func:`posterior_pass_at_k` / :func:`posterior_pass_hat_k` (dims
        ``chain, draw, agent, k``).
    ci_prob : float
        Credible interval probability, in (0, 1).
    ci_kind : {"eti", "hdi"}
        Equal-tailed (default; invariant under monotone transforms) or highest-density interval (``arviz.eti`` /
        ``arviz.hdi``).

    Returns
    -------
    pandas.DataFrame
        Columns ``agent, k, quantity, population, mean, median, ci_low, ci_high, ci_kind, ci_prob, extrapolated``
        (``extrapolated``: share of the agent's tasks with n < k), ``estimable``, ``range_low``, ``range_high``, and
        ``n_tasks`` (the tasks behind each value) when the draws carry that coordinate
        (:func:`agentstats.posterior.predict_rerun`).

        ``estimable`` is False where the draws' ``identified`` coordinate is (k > 1 for an agent with one trial per
        task): ``mean``, ``median`` and the interval are then NaN, never the prior's numbers, and ``range_low`` /
        ``range_high`` bound the value whatever the within-task consistency. With ``p`` the suite pass^1 (the
        ``pass_1`` coordinate), Jensen's inequality over the tasks gives, for every consistency,
        ``p^k <= pass^k <= p`` and ``p <= pass@k <= 1 - (1 - p)^k`` (left: each task equally hard and its tries
        independent; right: each task always or never solved), and both ends are reached. ``range_low`` is the
        ``(1 - ci_prob) / 2`` posterior quantile of the left end, ``range_high`` the ``(1 + ci_prob) / 2`` quantile
        of the right end, so the range holds the value with posterior probability at least ``ci_prob`` under any
        consistency (union bound over the two tails). Where a value is estimable the range columns are NaN.

    Raises
    ------
    ValueError
        On a bad ``ci_prob`` / ``ci_kind`` or draws without the expected dims.
    """
    if isinstance(draws, xr.Dataset):
        draws = [draws[v] for v in draws.data_vars]
    elif isinstance(draws, xr.DataArray):
        draws = [draws]
    ci_prob, ci_kind = check_ci(ci_prob, ci_kind, "summarize_pass_k")
    frames = []
    for da in draws:
        missing = {"chain", "draw", "agent", "k"} - set(da.dims)
        if missing:
            raise ValueError(f"draws lack dims {sorted(missing)}; got {da.dims}")
        da = da.transpose("chain", "draw", "agent", "k")
        ci = interval(da, ci_prob, ci_kind)
        lo = ci.sel(ci_bound="lower").transpose("agent", "k").to_numpy()
        hi = ci.sel(ci_bound="upper").transpose("agent", "k").to_numpy()
        mean = da.mean(("chain", "draw")).to_numpy()
        median = da.median(("chain", "draw")).to_numpy()
        extrap = (
            np.asarray(da.coords["extrapolated"].transpose("agent", "k"), dtype=float)
            if "extrapolated" in da.coords
            else np.zeros(mean.shape)
        )
        behind = (
            np.asarray(da.coords["n_tasks"].transpose("agent", "k"), dtype=int) if "n_tasks" in da.coords else None
        )
        quantity = da.attrs.get("quantity", da.name)
        estimable, range_low, range_high = _ranges(da, quantity, ci_prob)
        mean, median, lo, hi = (np.where(estimable, x, np.nan) for x in (mean, median, lo, hi))
        for i, agent in enumerate(da["agent"].values):
            for j, kk in enumerate(da["k"].values):
                frames.append(
                    dict(
                        agent=str(agent),
                        k=int(kk),
                        quantity=quantity,
                        population=da.attrs.get("population", ""),
                        mean=float(mean[i, j]),
                        median=float(median[i, j]),
                        ci_low=float(lo[i, j]),
                        ci_high=float(hi[i, j]),
                        ci_kind=ci_kind,
                        ci_prob=ci_prob,
                        extrapolated=float(extrap[i, j]),
                        estimable=bool(estimable[i, j]),
                        range_low=float(range_low[i, j]),
                        range_high=float(range_high[i, j]),
                    )
                    | ({"n_tasks": int(behind[i, j])} if behind is not None else {})
                )
    return pd.DataFrame(frames)




def _ranges(da: xr.DataArray, quantity: str, ci_prob: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per (agent, k): whether the value is identified, and the range of one that is not (:func:`summarize_pass_k`).

    Returns ``estimable`` (bool) and ``range_low``, ``range_high`` (NaN where estimable), each of shape (agent, k).
    """
    shape = (da.sizes["agent"], da.sizes["k"])
    if "identified" not in da.coords:
        return np.ones(shape, dtype=bool), np.full(shape, np.nan), np.full(shape, np.nan)
    estimable = np.asarray(da.coords["identified"].transpose("agent", "k"), dtype=bool)
    low, high = np.full(shape, np.nan), np.full(shape, np.nan)
    if estimable.all():
        return estimable, low, high
    if "pass_1" not in da.coords:
        raise ValueError("draws with an 'identified' coordinate need 'pass_1' (posterior_pass_k gives both)")
    p1 = da.coords["pass_1"].transpose("chain", "draw", "agent").to_numpy()
    tail = (1.0 - ci_prob) / 2.0
    for j, kk in enumerate(da["k"].values):
        if quantity == "pass_at_k":
            left, right = p1, 1.0 - (1.0 - p1) ** int(kk)
        else:
            left, right = p1 ** int(kk), p1
        low[:, j] = np.quantile(left.reshape(-1, shape[0]), tail, axis=0)
        high[:, j] = np.quantile(right.reshape(-1, shape[0]), 1.0 - tail, axis=0)
    low[estimable], high[estimable] = np.nan, np.nan
    return estimable, low, high

"""Agent contrasts from joint posterior draws: P(A > B), P(A - B > delta), the difference's credible interval."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from agentstats.intervals import CI_PROB, CiKind, check_ci
from agentstats.posterior._common import interval

__all__ = ["contrast_matrix", "contrast_table"]


def _select_k(draws: xr.DataArray, k: int | None) -> xr.DataArray:
    if "k" in draws.dims:
        if k is not None:
            return draws.sel(k=k)
        if draws.sizes["k"] != 1:
            raise ValueError(f"draws hold several k {list(draws['k'].values)}; pass k=")
        return draws.isel(k=0)
    return draws


def _identified(d: xr.DataArray) -> np.ndarray:
    """Per agent of one k's draws (dims ``chain, draw, agent``): whether the data identify the value (default all)."""
    if "identified" in d.coords:
        return np.asarray(d.coords["identified"].transpose("agent"), dtype=bool)
    return np.ones(d.sizes["agent"], dtype=bool)


def contrast_matrix(draws_k: xr.DataArray, delta: float = 0.0, *, k: int | None = None) -> pd.DataFrame:
    """Matrix of P(value[A] - value[B] > delta) from joint posterior draws.

    With ``delta = 0`` this is P(pass^k[A] > pass^k[B]). The draws of all agents come from one joint posterior
    on the same tasks, so the probability is the share of draws where the inequality holds (a Monte Carlo
    estimate; its standard error is at most ``0.5 / sqrt(ESS)``).

    Parameters
    ----------
    draws_k : xarray.DataArray
        Dims ``chain, draw, agent`` (and optionally ``k``).
    delta : float
        Margin on the quantity's scale.
    k : int, optional
        Select this ``k`` when ``draws_k`` has several.

    Returns
    -------
    pandas.DataFrame
        Index agent A (rows), columns agent B; diagonal NaN. NaN too in the rows and columns of an agent whose value
        the data do not identify at this k (the draws' ``identified`` coordinate, from
        :func:`agentstats.posterior.posterior_pass_k`: one trial per task and k > 1), whose draws follow the prior.

    Raises
    ------
    ValueError
        If several ``k`` are present and ``k`` is not given.
    """
    d = _select_k(draws_k, k).transpose("chain", "draw", "agent")
    x = d.to_numpy().reshape(-1, d.sizes["agent"])
    prob = np.mean((x[:, :, None] - x[:, None, :]) > delta, axis=0)
    np.fill_diagonal(prob, np.nan)
    unknown = ~_identified(d)
    prob[unknown, :] = np.nan
    prob[:, unknown] = np.nan
    agents = [str(a) for a in d["agent"].values]
    return pd.DataFrame(prob, index=pd.Index(agents, name="agent_a"), columns=pd.Index(agents, name="agent_b"))


def contrast_table(
    draws: xr.DataArray, delta: float = 0.0, ci_prob: float = CI_PROB, ci_kind: CiKind = "eti"
) -> pd.DataFrame:
    """Pairwise contrasts, each unordered pair once: P(A > B), P(A - B > delta) and the difference's credible interval.

    In each pair, A is the agent with the higher posterior mean (so ``diff_mean >= 0``); the reverse direction is
    ``1 - prob_greater`` (ties have probability 0 for continuous draws).

    Parameters
    ----------
    draws : xarray.DataArray
        Dims ``chain, draw, agent`` and optionally ``k``.
    delta : float
        Margin on the quantity's scale.
    ci_prob : float
        Probability of the credible interval of ``A - B``.
    ci_kind : {"eti", "hdi"}

    Returns
    -------
    pandas.DataFrame
        Columns ``k`` (only when the draws have a ``k`` dim), ``agent_a, agent_b, prob_greater, delta,
        prob_diff_gt_delta, diff_mean, diff_low, diff_high, ci_kind, ci_prob``. A pair with an agent whose value the
        data do not identify at that k (as in :func:`contrast_matrix`) has NaN in every number.
    """
    ci_prob, ci_kind = check_ci(ci_prob, ci_kind, "contrast_table")
    has_k = "k" in draws.dims
    rows = []
    for kk in draws["k"].values if has_k else [None]:
        d = (draws.sel(k=kk) if has_k else draws).transpose("chain", "draw", "agent")
        agents = [str(a) for a in d["agent"].values]
        means = d.mean(("chain", "draw")).to_numpy()
        known = _identified(d)
        for i in range(len(agents)):
            for j in range(i + 1, len(agents)):
                a, b = (i, j) if means[i] >= means[j] else (j, i)
                row: dict[str, Any] = {"k": int(kk)} if kk is not None else {}
                row.update(agent_a=agents[a], agent_b=agents[b], prob_greater=np.nan, delta=float(delta),
                           prob_diff_gt_delta=np.nan, diff_mean=np.nan, diff_low=np.nan, diff_high=np.nan,
                           ci_kind=ci_kind, ci_prob=ci_prob)
                if known[a] and known[b]:
                    diff = d.isel(agent=a) - d.isel(agent=b)
                    ci = interval(diff, ci_prob, ci_kind)
                    x = diff.to_numpy().ravel()
                    row.update(prob_greater=float(np.mean(x > 0)), prob_diff_gt_delta=float(np.mean(x > delta)),
                               diff_mean=float(x.mean()), diff_low=float(ci.sel(ci_bound="lower")),
                               diff_high=float(ci.sel(ci_bound="upper")))
                rows.append(row)
    return pd.DataFrame(rows)



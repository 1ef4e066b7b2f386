"""Posterior pass@k / pass^k, summaries, agent contrasts and within-task consistency.

Definitions (per task t of agent a, success probability p = p[a, t]):
pass@k = 1 - (1 - p)^k (Chen et al. 2021, arXiv 2107.03374), pass^k = p^k (Yao et al. 2024, arXiv 2406.12045).
Suite values are means over tasks of the per-task values, never functions of the pooled mean.

Two populations:

* ``observed``: the tasks in the data, ``mean_t p[a, t]^k`` over the tasks agent ``a`` attempted (cells with
  n > 0), computed per posterior draw.
* ``new``: a new task from the same distribution. Per draw, ``logit p = mu + alpha[a] + e`` with
  ``e ~ Normal(0, s)``, ``s = sqrt(sigma_task^2 + sigma_cell^2)`` (the new task's effect and its new cell
  effect), and ``E[p^k]`` is integrated by Gauss-Hermite quadrature (probabilists' nodes,
  ``numpy.polynomial.hermite_e.hermegauss``; Abramowitz & Stegun 25.4.46), vectorized over draws.

  For the ``beta_binomial`` model (``dt.attrs["agentstats_model"]``), a new task's cell has
  ``p ~ Beta(m phi, (1 - m) phi)`` with ``logit m = mu + alpha[a] + e``, ``e ~ Normal(0, sigma_task)``; then
  ``E[p^k | m] = B(m phi + k, (1 - m) phi) / B(m phi, (1 - m) phi)`` and
  ``E[(1 - p)^k | m] = B(m phi, (1 - m) phi + k) / B(m phi, (1 - m) phi)`` (Beta moments; Johnson, Kotz &
  Balakrishnan 1995, Continuous Univariate Distributions vol. 2, ch. 25), integrated over ``e`` by the same
  Gauss-Hermite rule (:func:`new_task_pass_k_beta`). For ``zoi_beta_binomial`` the cell is deterministic with
  probability ``det_share`` (then ``p = 1`` with probability ``m``, else 0), which adds ``det_share m`` to
  ``E[p^k | m]`` and ``det_share (1 - m)`` to ``E[(1 - p)^k | m]`` (the Beta terms weighted ``1 - det_share``).

``extrapolated`` marks (agent, k) with ``k > n_min[a]``, the smallest number of trials among the agent's
observed tasks: the unbiased estimators are undefined there for at least one task, so the value rests on the
model (its logit-normal shape) more than on the data.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import arviz as az
import numpy as np
import pandas as pd
import xarray as xr
from numpy.polynomial.hermite_e import hermegauss
from scipy.special import log_expit

from agentstats.models.builders import BETA_BINOMIAL_MODELS, prepare_counts

__all__ = [
    "consistency",
    "contrast_matrix",
    "contrast_table",
    "new_task_pass_k",
    "new_task_pass_k_beta",
    "posterior_pass_at_k",
    "posterior_pass_hat_k",
    "summarize_pass_k",
    "task_effects",
]

Population = Literal["observed", "new"]
#: Gauss-Hermite nodes for the new-task integral; absolute error < 2e-6 against adaptive quadrature for s <= 5.
GH_NODES = 128


def _as_ks(k: int | Sequence[int]) -> np.ndarray:
    ks = np.atleast_1d(np.asarray(k))
    if ks.ndim != 1 or ks.size == 0:
        raise ValueError(f"k must be a positive int or a non-empty list of them, got {k!r}")
    if not np.issubdtype(ks.dtype, np.integer):
        if not np.all(np.equal(np.mod(ks, 1), 0)):
            raise ValueError(f"k must be integers, got {k!r}")
        ks = ks.astype(np.int64)
    if np.any(ks < 1):
        raise ValueError(f"k must be >= 1, got {k!r}")
    return ks.astype(np.int64)


def _posterior(dt: xr.DataTree) -> xr.Dataset:
    if "posterior" not in dt.children:
        raise ValueError("the DataTree has no 'posterior' group (expected a fit from agentstats.models.fit)")
    return dt["posterior"].to_dataset()


def _n_matrix(dt: xr.DataTree, post: xr.Dataset) -> xr.DataArray | None:
    if "constant_data" in dt.children and "n_trials" in dt["constant_data"]:
        return dt["constant_data"]["n_trials"].sel(agent=post["agent"], task=post["task"])
    return None


def _logit_normal_nodes(m: np.ndarray, s: np.ndarray, n_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Return Gauss-Hermite nodes ``eta = m + s x_j`` (shape ``S + (nodes,)``) and weights ``w_j / sqrt(2 pi)``.

    Then ``E[f(m + s Z)] = sum_j w_j f(eta_j)`` for ``Z ~ Normal(0, 1)`` (``hermegauss``: probabilists' Hermite, weight
    ``exp(-x^2/2)``; Abramowitz & Stegun 25.4.46).
    """
    x, w = hermegauss(n_nodes)
    eta = np.asarray(m, float)[..., None] + np.asarray(s, float)[..., None] * x
    return eta, w / np.sqrt(2.0 * np.pi)


def new_task_pass_k(
    m: np.ndarray, s: np.ndarray, ks: np.ndarray, n_nodes: int = GH_NODES
) -> tuple[np.ndarray, np.ndarray]:
    """E[p^k] and 1 - E[(1-p)^k] for ``logit p ~ Normal(m, s)``, by Gauss-Hermite quadrature.

    ``E[f(m + s Z)] = sum_j w_j f(m + s x_j) / sqrt(2 pi)`` with ``(x_j, w_j) = hermegauss(n_nodes)``
    (probabilists' Hermite, weight ``exp(-x^2/2)``; Abramowitz & Stegun 25.4.46).

    Parameters
    ----------
    m, s : numpy.ndarray
        Broadcastable arrays: location and scale of the logit-normal (any shape ``S``).
    ks : numpy.ndarray of int, shape (K,)
    n_nodes : int

    Returns
    -------
    pass_hat_k, pass_at_k : numpy.ndarray, shape ``S + (K,)``
    """
    eta, w = _logit_normal_nodes(m, s, n_nodes)
    log_p = log_expit(eta)[..., None, :]  # S + (1, nodes)
    log_q = log_expit(-eta)[..., None, :]
    kk = ks.astype(float)[:, None]
    hat = np.sum(w * np.exp(kk * log_p), axis=-1)
    at = 1.0 - np.sum(w * np.exp(kk * log_q), axis=-1)
    return hat, at


def new_task_pass_k_beta(
    m: np.ndarray,
    s: np.ndarray,
    phi: np.ndarray,
    ks: np.ndarray,
    n_nodes: int = GH_NODES,
    det_share: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """E[p^k] and 1 - E[(1-p)^k] for ``p ~ Beta(q phi, (1 - q) phi)``, ``logit q ~ Normal(m, s)``.

    With ``det_share`` (``zoi_beta_binomial``), ``p`` is instead 1 with probability ``det_share q``, 0 with
    probability ``det_share (1 - q)`` and Beta otherwise, so ``E[p^k | q] = det_share q + (1 - det_share)
    E_Beta[p^k]`` and ``E[(1-p)^k | q] = det_share (1 - q) + (1 - det_share) E_Beta[(1-p)^k]`` for k >= 1.

    Inner expectation in closed form, ``E[p^k | q] = B(q phi + k, (1 - q) phi) / B(q phi, (1 - q) phi)`` (and
    ``B(q phi, (1 - q) phi + k) / B(q phi, (1 - q) phi)`` for ``(1 - p)^k``; Beta moments, Johnson, Kotz &
    Balakrishnan 1995, ch. 25), computed with ``scipy.special.betaln``; outer expectation over ``logit q`` by
    Gauss-Hermite quadrature as :func:`new_task_pass_k`.

    Parameters
    ----------
    m, s, phi : numpy.ndarray
        Broadcastable arrays (shape ``S``): location and scale of ``logit q``, and the concentration ``phi > 0``.
    ks : numpy.ndarray of int, shape (K,)
    n_nodes : int
    det_share : numpy.ndarray, optional
        Broadcastable with ``m`` (shape ``S``): share of deterministic cells.

    Returns
    -------
    pass_hat_k, pass_at_k : numpy.ndarray, shape ``S + (K,)``
    """
    from scipy.special import betaln, expit

    eta, w = _logit_normal_nodes(m, s, n_nodes)
    phi = np.asarray(phi, float)
    tiny = np.finfo(float).tiny
    a = np.maximum(phi[..., None] * expit(eta), tiny)[..., None, :]  # S + (1, nodes)
    b = np.maximum(phi[..., None] * expit(-eta), tiny)[..., None, :]
    kk = ks.astype(float)[:, None]
    base = betaln(a, b)
    hat_q = np.exp(betaln(a + kk, b) - base)  # E[p^k | q], S + (K, nodes)
    miss_q = np.exp(betaln(a, b + kk) - base)  # E[(1 - p)^k | q]
    if det_share is not None:
        lam = np.asarray(det_share, float)[..., None, None]
        q = expit(eta)[..., None, :]
        hat_q = lam * q + (1.0 - lam) * hat_q
        miss_q = lam * (1.0 - q) + (1.0 - lam) * miss_q
    hat = np.sum(w * hat_q, axis=-1)
    at = 1.0 - np.sum(w * miss_q, axis=-1)
    return hat, at


def _pass_k(
    dt: xr.DataTree,
    k: int | Sequence[int],
    population: Population,
    quantity: Literal["pass_at_k", "pass_hat_k"],
    tasks: Literal["attempted", "all"],
    n_nodes: int,
) -> xr.DataArray:
    ks = _as_ks(k)
    post = _posterior(dt)
    if "p" not in post:
        raise ValueError("posterior has no 'p' (expected dims chain, draw, agent, task)")
    n_mat = _n_matrix(dt, post)
    agents = post["agent"].values
    if population == "observed":
        p = post["p"].transpose("chain", "draw", "agent", "task")
        if tasks == "attempted" and n_mat is not None:
            weight = (n_mat > 0).astype(float)
        elif tasks in ("attempted", "all"):
            weight = xr.ones_like(p.isel(chain=0, draw=0, drop=True), dtype=float)
        else:
            raise ValueError(f"tasks must be 'attempted' or 'all', got {tasks!r}")
        n_used = weight.sum("task")
        if bool((n_used == 0).any()):
            empty = [str(a) for a in agents[np.asarray(n_used == 0)]]
            raise ValueError(f"agent(s) {empty} have no observed task; use population='new'")
        p_np = p.to_numpy()[..., None]  # chain, draw, agent, task, 1
        if quantity == "pass_hat_k":
            vals = np.exp(ks * np.log(np.clip(p_np, 1e-300, 1.0)))
        else:
            vals = -np.expm1(ks * np.log1p(-np.clip(p_np, 0.0, 1.0 - 1e-16)))
        w_np = weight.transpose("agent", "task").to_numpy()[None, None, :, :, None]
        out = (vals * w_np).sum(axis=3) / w_np.sum(axis=3)
    elif population == "new":
        if "sigma_task" not in post or "mu" not in post:
            raise ValueError(
                "population='new' needs the hierarchical hyperparameters (mu, sigma_task); "
                "the no_pooling model has none"
            )
        m = post["mu"].transpose("chain", "draw").to_numpy()[..., None]
        if "alpha" in post:
            m = m + post["alpha"].transpose("chain", "draw", "agent").to_numpy()
        else:
            m = np.broadcast_to(m, (*m.shape[:2], agents.size))
        if dt.attrs.get("agentstats_model") in BETA_BINOMIAL_MODELS and "phi" in post:
            s = post["sigma_task"].transpose("chain", "draw").to_numpy()[..., None]
            phi = post["phi"].transpose("chain", "draw").to_numpy()[..., None]
            det = post["det_share"].transpose("chain", "draw").to_numpy()[..., None] if "det_share" in post else None
            hat, at = new_task_pass_k_beta(m, s, phi, ks, n_nodes, det_share=det)
        else:
            var = post["sigma_task"].transpose("chain", "draw").to_numpy() ** 2
            if "sigma_cell" in post:
                var = var + post["sigma_cell"].transpose("chain", "draw").to_numpy() ** 2
            s = np.sqrt(var)[..., None]
            hat, at = new_task_pass_k(m, s, ks, n_nodes)
        out = hat if quantity == "pass_hat_k" else at
    else:
        raise ValueError(f"population must be 'observed' or 'new', got {population!r}")
    coords = {
        "chain": post["chain"].values,
        "draw": post["draw"].values,
        "agent": agents,
        "k": ks,
    }
    da = xr.DataArray(out, dims=("chain", "draw", "agent", "k"), coords=coords, name=quantity)
    if n_mat is not None:
        if "constant_data" in dt.children and "n_min" in dt["constant_data"]:
            n_min = dt["constant_data"]["n_min"].sel(agent=agents).to_numpy()
        else:
            nn = n_mat.transpose("agent", "task").to_numpy()
            n_min = np.where(nn > 0, nn, np.iinfo(np.int64).max).min(axis=1)
        extrap = ks[None, :] > n_min[:, None]
        da = da.assign_coords(extrapolated=(("agent", "k"), extrap), n_min=(("agent",), n_min))
    da.attrs.update(quantity=quantity, population=population)
    return da


def posterior_pass_at_k(
    dt: xr.DataTree,
    k: int | Sequence[int],
    population: Population = "observed",
    *,
    tasks: Literal["attempted", "all"] = "attempted",
    n_nodes: int = GH_NODES,
) -> xr.DataArray:
    """Posterior draws of suite pass@k = mean over tasks of 1 - (1 - p)^k (Chen et al. 2021, arXiv 2107.03374).

    Parameters
    ----------
    dt : xarray.DataTree
        A fit from :func:`agentstats.models.fit.fit`.
    k : int or sequence of int
        Positive integers; values above an agent's smallest trial count are flagged ``extrapolated``.
    population : {"observed", "new"}
        The tasks in the data, or a new task from the same distribution (module docstring).
    tasks : {"attempted", "all"}
        ``observed`` only: average over the tasks each agent attempted (n > 0; default) or over all tasks in the
        fit (unattempted cells then enter through their model-based posterior).
    n_nodes : int
        Gauss-Hermite nodes for ``population="new"``.

    Returns
    -------
    xarray.DataArray
        Dims ``(chain, draw, agent, k)``; coordinates ``extrapolated`` (bool, dims ``agent, k``) and ``n_min``
        (dims ``agent``) when the fit stores counts; attrs ``quantity``, ``population``.

    Raises
    ------
    ValueError
        On invalid ``k``/``population``, a fit without ``p``, ``new`` on a model without hyperparameters, or an
        agent with no observed task under ``observed``.
    """
    return _pass_k(dt, k, population, "pass_at_k", tasks, n_nodes)


def posterior_pass_hat_k(
    dt: xr.DataTree,
    k: int | Sequence[int],
    population: Population = "observed",
    *,
    tasks: Literal["attempted", "all"] = "attempted",
    n_nodes: int = GH_NODES,
) -> xr.DataArray:
    """Posterior draws of suite pass^k = mean over tasks of p^k (Yao et al. 2024, arXiv 2406.12045).

    Parameters, returns and errors as :func:`posterior_pass_at_k`.
    """
    return _pass_k(dt, k, population, "pass_hat_k", tasks, n_nodes)


def summarize_pass_k(
    draws: xr.DataArray | Sequence[xr.DataArray],
    ci_prob: float = 0.95,
    ci_kind: Literal["eti", "hdi"] = "eti",
) -> pd.DataFrame:
    """Tidy posterior summary of pass@k / pass^k draws.

    Parameters
    ----------
    draws : xarray.DataArray or sequence of them
        From :func:`posterior_pass_at_k` / :func:`posterior_pass_hat_k` (dims ``chain, draw, agent, k``).
    ci_prob : float
        Credible interval probability, in (0, 1).
    ci_kind : {"eti", "hdi"}
        Equal-tailed (default; invariant under monotone transforms) or highest-density interval, computed by
        ``arviz.eti`` / ``arviz.hdi``.

    Returns
    -------
    pandas.DataFrame
        Columns ``agent, k, quantity, population, mean, median, ci_low, ci_high, ci_kind, ci_prob,
        extrapolated``.

    Raises
    ------
    ValueError
        On a bad ``ci_prob`` / ``ci_kind`` or draws without the expected dims.
    """
    if isinstance(draws, xr.DataArray):
        draws = [draws]
    if not 0.0 < ci_prob < 1.0:
        raise ValueError(f"ci_prob must be in (0, 1), got {ci_prob}")
    if ci_kind not in ("eti", "hdi"):
        raise ValueError(f"ci_kind must be 'eti' or 'hdi', got {ci_kind!r}")
    frames = []
    for da in draws:
        missing = {"chain", "draw", "agent", "k"} - set(da.dims)
        if missing:
            raise ValueError(f"draws lack dims {sorted(missing)}; got {da.dims}")
        da = da.transpose("chain", "draw", "agent", "k")
        ci = (az.eti if ci_kind == "eti" else az.hdi)(da, prob=ci_prob, dim=["chain", "draw"])
        mean = da.mean(("chain", "draw"))
        median = da.median(("chain", "draw"))
        extrap = da.coords["extrapolated"] if "extrapolated" in da.coords else xr.zeros_like(mean, dtype=bool)
        for i, agent in enumerate(da["agent"].values):
            for j, kk in enumerate(da["k"].values):
                frames.append(
                    dict(
                        agent=agent,
                        k=int(kk),
                        quantity=da.attrs.get("quantity", da.name),
                        population=da.attrs.get("population", ""),
                        mean=float(mean[i, j]),
                        median=float(median[i, j]),
                        ci_low=float(ci.isel(agent=i, k=j).sel(ci_bound="lower")),
                        ci_high=float(ci.isel(agent=i, k=j).sel(ci_bound="upper")),
                        ci_kind=ci_kind,
                        ci_prob=ci_prob,
                        extrapolated=bool(np.asarray(extrap)[i, j]),
                    )
                )
    return pd.DataFrame(frames)


def _select_k(draws: xr.DataArray, k: int | None) -> xr.DataArray:
    if "k" in draws.dims:
        if k is not None:
            return draws.sel(k=k)
        if draws.sizes["k"] != 1:
            raise ValueError(f"draws hold several k {list(draws['k'].values)}; pass k=")
        return draws.isel(k=0)
    return draws


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
        Index agent A (rows), columns agent B; diagonal NaN.

    Raises
    ------
    ValueError
        If several ``k`` are present and ``k`` is not given.
    """
    d = _select_k(draws_k, k).transpose("chain", "draw", "agent")
    x = d.to_numpy().reshape(-1, d.sizes["agent"])
    prob = np.mean((x[:, :, None] - x[:, None, :]) > delta, axis=0)
    np.fill_diagonal(prob, np.nan)
    agents = [str(a) for a in d["agent"].values]
    return pd.DataFrame(prob, index=pd.Index(agents, name="agent_a"), columns=pd.Index(agents, name="agent_b"))


def contrast_table(
    draws: xr.DataArray, delta: float = 0.0, ci_prob: float = 0.95
) -> pd.DataFrame:
    """Tidy pairwise contrasts for every k: P(A > B), P(A - B > delta) and the difference's credible interval.

    Parameters
    ----------
    draws : xarray.DataArray
        Dims ``chain, draw, agent`` and optionally ``k``.
    delta : float
    ci_prob : float
        Probability of the equal-tailed credible interval of ``A - B``.

    Returns
    -------
    pandas.DataFrame
        Columns ``k, agent_a, agent_b, prob_greater, delta, prob_diff_gt_delta, diff_mean, diff_low, diff_high``
        for every ordered pair A != B.
    """
    if "k" not in draws.dims:
        draws = draws.expand_dims(k=[draws.attrs.get("k", 0)])
    rows = []
    lo, hi = (1 - ci_prob) / 2, 1 - (1 - ci_prob) / 2
    for kk in draws["k"].values:
        d = draws.sel(k=kk).transpose("chain", "draw", "agent")
        x = d.to_numpy().reshape(-1, d.sizes["agent"])
        agents = [str(a) for a in d["agent"].values]
        for i, a in enumerate(agents):
            for j, b in enumerate(agents):
                if i == j:
                    continue
                diff = x[:, i] - x[:, j]
                rows.append(
                    dict(
                        k=int(kk),
                        agent_a=a,
                        agent_b=b,
                        prob_greater=float(np.mean(diff > 0)),
                        delta=float(delta),
                        prob_diff_gt_delta=float(np.mean(diff > delta)),
                        diff_mean=float(diff.mean()),
                        diff_low=float(np.quantile(diff, lo)),
                        diff_high=float(np.quantile(diff, hi)),
                    )
                )
    return pd.DataFrame(rows)


def _anova_icc(n: np.ndarray, c: np.ndarray) -> float:
    """ANOVA estimator of the intra-class correlation of binary outcomes in groups of unequal size.

    Fleiss, Levin & Paik (2003), Statistical Methods for Rates and Proportions, 3rd ed.; Ridout,
    Demetrio & Firth (1999), Biometrics 55(1):137-148, estimator "ANOVA"::

        MSB = (sum c_i^2/n_i - C^2/N) / (g - 1),   MSW = (C - sum c_i^2/n_i) / (N - g),
        n0  = (N - sum n_i^2 / N) / (g - 1),       ICC = (MSB - MSW) / (MSB + (n0 - 1) MSW)

    over the g groups (tasks) with n_i >= 1, N = sum n_i, C = sum c_i. NaN when undefined (g < 2, N = g, or a
    zero denominator, e.g. every outcome the same).
    """
    keep = n > 0
    n, c = n[keep].astype(float), c[keep].astype(float)
    g = n.size
    big_n = n.sum()
    if g < 2 or big_n <= g:
        return float("nan")
    ssq = np.sum(c**2 / n)
    msb = (ssq - c.sum() ** 2 / big_n) / (g - 1)
    msw = (c.sum() - ssq) / (big_n - g)
    n0 = (big_n - np.sum(n**2) / big_n) / (g - 1)
    den = msb + (n0 - 1.0) * msw
    return float((msb - msw) / den) if den > 0 else float("nan")


def consistency(counts: pd.DataFrame, dt: xr.DataTree | None = None, ci_prob: float = 0.95) -> pd.DataFrame:
    """Within-task consistency of outcomes per agent.

    * ``flip_share``: share of the agent's tasks with ``n >= 2`` whose outcome flips across trials
      (``0 < c < n``).
    * ``icc_anova``: ANOVA intra-class correlation of binary outcomes within tasks, unequal n (Fleiss, Levin &
      Paik 2003; Ridout, Demetrio & Firth 1999, Biometrics 55:137). Near 1: an agent either always or never solves
      a task; near 0: outcomes look like coin flips at a common rate.
    * with ``dt`` (a hierarchical fit): the model-based latent-scale ICC (Goldstein, Browne & Rasbash 2002,
      Understanding Statistics 1(4); Nakagawa & Schielzeth 2010, Biol. Rev. 85:935) of outcomes of one agent
      within a task, ``(sigma_task^2 + sigma_cell^2) / (sigma_task^2 + sigma_cell^2 + pi^2/3)``, and the share
      due to the agent x task interaction, ``sigma_cell^2 / (same denominator)``: posterior mean and
      equal-tailed credible interval. These are common to all agents in the model. For a ``beta_binomial`` fit
      (no ``sigma_cell``), ``icc_cell`` is the posterior of its intra-cell correlation ``rho = 1 / (1 + phi)``
      (outcome scale; Williams 1975, Biometrics 31(4)) and ``icc_model`` covers the task effect only; for
      ``zoi_beta_binomial`` it is ``det_share + (1 - det_share) rho`` (a deterministic cell's trials are perfectly
      correlated: ``Var(p | m) = [det_share + (1 - det_share) rho] m (1 - m)``).

    Parameters
    ----------
    counts : pandas.DataFrame
        Columns ``agent, task_id, n, c``.
    dt : xarray.DataTree, optional
    ci_prob : float

    Returns
    -------
    pandas.DataFrame
        Columns ``agent, n_tasks, n_tasks_multi, flip_share, icc_anova`` and, with ``dt``, ``icc_model,
        icc_model_low, icc_model_high, icc_cell, icc_cell_low, icc_cell_high``.
    """
    data = prepare_counts(counts)
    rows = []
    for i, agent in enumerate(data.agents):
        n, c = data.n[i], data.c[i]
        multi = n >= 2
        flips = multi & (c > 0) & (c < n)
        rows.append(
            dict(
                agent=agent,
                n_tasks=int((n > 0).sum()),
                n_tasks_multi=int(multi.sum()),
                flip_share=float(flips.sum() / multi.sum()) if multi.any() else float("nan"),
                icc_anova=_anova_icc(n, c),
            )
        )
    out = pd.DataFrame(rows)
    if dt is not None:
        post = _posterior(dt)
        if "sigma_task" not in post:
            raise ValueError("consistency: dt has no sigma_task (the no_pooling model has no model-based ICC)")
        var_t = post["sigma_task"].to_numpy().ravel() ** 2
        var_c = post["sigma_cell"].to_numpy().ravel() ** 2 if "sigma_cell" in post else np.zeros_like(var_t)
        denom = var_t + var_c + np.pi**2 / 3.0
        lo, hi = (1 - ci_prob) / 2, 1 - (1 - ci_prob) / 2
        icc_cell = var_c / denom
        if dt.attrs.get("agentstats_model") in BETA_BINOMIAL_MODELS and "rho" in post:
            icc_cell = post["rho"].to_numpy().ravel()
            if "det_share" in post:
                lam = post["det_share"].to_numpy().ravel()
                icc_cell = lam + (1.0 - lam) * icc_cell
        for name, val in (("icc_model", (var_t + var_c) / denom), ("icc_cell", icc_cell)):
            out[name] = float(val.mean())
            out[f"{name}_low"] = float(np.quantile(val, lo))
            out[f"{name}_high"] = float(np.quantile(val, hi))
    return out


def task_effects(dt: xr.DataTree, ci_prob: float = 0.95) -> pd.DataFrame:
    """Posterior summary of the task effects β[t] (logit scale; higher = easier), for difficulty plots.

    Parameters
    ----------
    dt : xarray.DataTree
        A crossed-model fit (posterior variable ``beta`` with dims ``chain, draw, task``).
    ci_prob : float
        Probability mass of the equal-tailed credible interval.

    Returns
    -------
    pandas.DataFrame
        Columns ``task, mean, ci_low, ci_high`` (one row per task), sorted by ``mean``.

    Raises
    ------
    ValueError
        When the fit has no task effect (e.g. the ``no_pooling`` model).
    """
    post = _posterior(dt)
    if "beta" not in post:
        raise ValueError("task_effects: this fit has no task effect 'beta' (fit a crossed model)")
    beta = post["beta"].stack(sample=("chain", "draw")).transpose("task", "sample")
    lo, hi = (1 - ci_prob) / 2, 1 - (1 - ci_prob) / 2
    vals = beta.to_numpy()
    out = pd.DataFrame(
        {
            "task": beta["task"].to_numpy().astype(str),
            "mean": vals.mean(axis=1),
            "ci_low": np.quantile(vals, lo, axis=1),
            "ci_high": np.quantile(vals, hi, axis=1),
        }
    )
    return out.sort_values("mean").reset_index(drop=True)

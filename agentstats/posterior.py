"""Posterior pass@k / pass^k, summaries, agent contrasts, consistency and re-run predictions.

Definitions (per task t of agent a, success probability p = p[a, t]):
pass@k = 1 - (1 - p)^k (Chen et al. 2021, arXiv 2107.03374), pass^k = p^k (Yao et al. 2024, arXiv 2406.12045).
Suite values are means over tasks of the per-task values, never functions of the pooled mean.

Two populations:

* ``observed``: the tasks in the data, ``mean_t p[a, t]^k`` over the tasks agent ``a`` attempted (cells with
  n > 0), per posterior draw. The cell probabilities come from the fit's family
  (:meth:`agentstats.models.family.ModelFamily.cell_p`), block by block, so no (chain, draw, agent, task) array is
  held in memory; for the Beta-Binomial families they are exact conditional draws given the sampled parameters,
  seeded from the fit's seed (the same draws in every function here).
* ``new``: a new task from the same task population (:meth:`agentstats.models.family.ModelFamily.new_task_pass_k`):
  the family integrates the task-to-task and within-cell variation by Gauss-Hermite quadrature and adds the
  uncertainty of the population mean (one shift ``Normal(0, sigma_task / sqrt(T))`` per draw; the reason is in
  :mod:`agentstats.models.family`).

``extrapolated`` (per agent and k) is the share of the agent's attempted tasks with fewer than k trials: the unbiased
estimators are undefined there, so those tasks' values rest on the model (its cell distribution) more than on data.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import arviz as az
import numpy as np
import pandas as pd
import xarray as xr
from scipy.special import gammaln

from agentstats.models.data import CountsData, prepare_counts, stored_data
from agentstats.models.family import GH_NODES
from agentstats.models.registry import family_of

__all__ = [
    "consistency",
    "contrast_matrix",
    "contrast_table",
    "posterior_pass_at_k",
    "posterior_pass_hat_k",
    "posterior_pass_k",
    "predict_rerun",
    "summarize_pass_k",
    "task_effects",
]

Population = Literal["observed", "new"]
#: Streams of the fit's seed used here (a stream per purpose keeps the draws of one independent of the others).
_NEW_TASK_STREAM = 0x7A5C
_RERUN_STREAM = 0x2E2E
#: Largest k accepted: beyond it pass^k is ~0 for any p < 1 and the arrays grow without purpose.
K_MAX = 1000


def _as_ks(k: int | Sequence[int]) -> np.ndarray:
    ks = np.atleast_1d(np.asarray(k))
    if ks.ndim != 1 or ks.size == 0:
        raise ValueError(f"k must be a positive int or a non-empty list of them, got {k!r}")
    if not np.issubdtype(ks.dtype, np.integer):
        if not np.issubdtype(ks.dtype, np.number) or not np.all(np.equal(np.mod(ks, 1), 0)):
            raise ValueError(f"k must be integers, got {k!r}")
        ks = ks.astype(np.int64)
    if np.any(ks < 1) or np.any(ks > K_MAX):
        raise ValueError(f"k must be in 1..{K_MAX}, got {k!r}")
    return ks.astype(np.int64)


def _posterior(dt: xr.DataTree) -> xr.Dataset:
    if "posterior" not in dt.children:
        raise ValueError("the DataTree has no 'posterior' group (expected a fit from agentstats.fit)")
    return dt["posterior"].to_dataset()


def _seed(dt: xr.DataTree, stream: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([int(dt.attrs.get("random_seed", 0)), stream]))


def _extrapolated(data: CountsData, ks: np.ndarray) -> np.ndarray:
    """Share of each agent's attempted tasks with n < k, shape (agent, K)."""
    obs = data.n > 0
    below = (data.n[:, :, None] < ks[None, None, :]) & obs[:, :, None]
    return below.sum(axis=1) / np.maximum(obs.sum(axis=1), 1)[:, None]


def posterior_pass_k(
    dt: xr.DataTree,
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
    dt : xarray.DataTree
        A fit from :func:`agentstats.models.fit.fit`.
    k : int or sequence of int
        Values in 1..:data:`K_MAX`.
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
        ``extrapolated`` (share of the agent's tasks with n < k, dims ``agent, k``) and ``n_min`` (``agent``);
        attrs ``population``.

    Raises
    ------
    ValueError
        On invalid ``k``/``population``/``tasks``, ``new`` on a model without hyperparameters, or an agent with no
        observed task under ``observed``.
    """
    ks = _as_ks(k)
    post = _posterior(dt)
    family = family_of(dt)
    data = stored_data(dt)
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
        for sl, p in family.iter_cell_p(post, data, int(dt.attrs.get("random_seed", 0))):
            w = weight[:, sl]
            p = np.clip(p, 0.0, 1.0)
            with np.errstate(divide="ignore"):
                log_p = np.log(p)
                log_q = np.log1p(-p)
            del p
            buf = np.empty_like(log_p)  # one block-sized temporary per quantity and k: memory stays bounded
            for j, kv in enumerate(ks):
                np.exp(np.multiply(log_p, float(kv), out=buf), out=buf)
                hat[..., j] += np.einsum("cdat,at->cda", buf, w)
                np.exp(np.multiply(log_q, float(kv), out=buf), out=buf)
                miss[..., j] += np.einsum("cdat,at->cda", buf, w)
        with np.errstate(invalid="ignore", divide="ignore"):  # agents without included cells: NaN
            hat /= n_used[None, None, :, None]
            at = 1.0 - miss / n_used[None, None, :, None]
    elif population == "new":
        hat, at = family.new_task_pass_k(post, ks, data.shape[1], _seed(dt, _NEW_TASK_STREAM), n_nodes)
    else:
        raise ValueError(f"population must be 'observed' or 'new', got {population!r}")
    coords = {
        "chain": post["chain"].values,
        "draw": post["draw"].values,
        "agent": data.agents,
        "k": ks,
        "extrapolated": (("agent", "k"), _extrapolated(data, ks)),
        "n_min": (("agent",), data.n_min()),
    }
    dims = ("chain", "draw", "agent", "k")
    out = xr.Dataset({"pass_at_k": (dims, at), "pass_hat_k": (dims, hat)}, coords=coords)
    out["pass_at_k"].attrs.update(quantity="pass_at_k", population=population)
    out["pass_hat_k"].attrs.update(quantity="pass_hat_k", population=population)
    out.attrs["population"] = population
    return out


def posterior_pass_at_k(
    dt: xr.DataTree,
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
    return posterior_pass_k(dt, k, population, tasks=tasks, n_nodes=n_nodes)["pass_at_k"]


def posterior_pass_hat_k(
    dt: xr.DataTree,
    k: int | Sequence[int],
    population: Population = "observed",
    *,
    tasks: Literal["attempted", "all"] = "attempted",
    n_nodes: int = GH_NODES,
) -> xr.DataArray:
    """Posterior draws of suite pass^k = mean over tasks of p^k (Yao et al. 2024, arXiv 2406.12045).

    Parameters, errors and coordinates as :func:`posterior_pass_k`; returns its ``pass_hat_k``.
    """
    return posterior_pass_k(dt, k, population, tasks=tasks, n_nodes=n_nodes)["pass_hat_k"]


def _interval(x: xr.DataArray, ci_prob: float, ci_kind: str) -> xr.DataArray:
    return (az.eti if ci_kind == "eti" else az.hdi)(x, prob=ci_prob, dim=["chain", "draw"])


def _check_ci(ci_prob: float, ci_kind: str) -> None:
    if not 0.0 < ci_prob < 1.0:
        raise ValueError(f"ci_prob must be in (0, 1), got {ci_prob}")
    if ci_kind not in ("eti", "hdi"):
        raise ValueError(f"ci_kind must be 'eti' or 'hdi', got {ci_kind!r}")


def summarize_pass_k(
    draws: xr.DataArray | xr.Dataset | Sequence[xr.DataArray],
    ci_prob: float = 0.95,
    ci_kind: Literal["eti", "hdi"] = "eti",
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
        (``extrapolated``: share of the agent's tasks with n < k).

    Raises
    ------
    ValueError
        On a bad ``ci_prob`` / ``ci_kind`` or draws without the expected dims.
    """
    if isinstance(draws, xr.Dataset):
        draws = [draws[v] for v in draws.data_vars]
    elif isinstance(draws, xr.DataArray):
        draws = [draws]
    _check_ci(ci_prob, ci_kind)
    frames = []
    for da in draws:
        missing = {"chain", "draw", "agent", "k"} - set(da.dims)
        if missing:
            raise ValueError(f"draws lack dims {sorted(missing)}; got {da.dims}")
        da = da.transpose("chain", "draw", "agent", "k")
        ci = _interval(da, ci_prob, ci_kind)
        lo = ci.sel(ci_bound="lower").transpose("agent", "k").to_numpy()
        hi = ci.sel(ci_bound="upper").transpose("agent", "k").to_numpy()
        mean = da.mean(("chain", "draw")).to_numpy()
        median = da.median(("chain", "draw")).to_numpy()
        extrap = (
            np.asarray(da.coords["extrapolated"].transpose("agent", "k"), dtype=float)
            if "extrapolated" in da.coords
            else np.zeros(mean.shape)
        )
        for i, agent in enumerate(da["agent"].values):
            for j, kk in enumerate(da["k"].values):
                frames.append(
                    dict(
                        agent=str(agent),
                        k=int(kk),
                        quantity=da.attrs.get("quantity", da.name),
                        population=da.attrs.get("population", ""),
                        mean=float(mean[i, j]),
                        median=float(median[i, j]),
                        ci_low=float(lo[i, j]),
                        ci_high=float(hi[i, j]),
                        ci_kind=ci_kind,
                        ci_prob=ci_prob,
                        extrapolated=float(extrap[i, j]),
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
    draws: xr.DataArray, delta: float = 0.0, ci_prob: float = 0.95, ci_kind: Literal["eti", "hdi"] = "eti"
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
        prob_diff_gt_delta, diff_mean, diff_low, diff_high, ci_kind, ci_prob``.
    """
    _check_ci(ci_prob, ci_kind)
    has_k = "k" in draws.dims
    rows = []
    for kk in draws["k"].values if has_k else [None]:
        d = (draws.sel(k=kk) if has_k else draws).transpose("chain", "draw", "agent")
        agents = [str(a) for a in d["agent"].values]
        means = d.mean(("chain", "draw")).to_numpy()
        for i in range(len(agents)):
            for j in range(i + 1, len(agents)):
                a, b = (i, j) if means[i] >= means[j] else (j, i)
                diff = d.isel(agent=a) - d.isel(agent=b)
                ci = _interval(diff, ci_prob, ci_kind)
                x = diff.to_numpy().ravel()
                row: dict[str, Any] = {"k": int(kk)} if kk is not None else {}
                row.update(
                    agent_a=agents[a],
                    agent_b=agents[b],
                    prob_greater=float(np.mean(x > 0)),
                    delta=float(delta),
                    prob_diff_gt_delta=float(np.mean(x > delta)),
                    diff_mean=float(x.mean()),
                    diff_low=float(ci.sel(ci_bound="lower")),
                    diff_high=float(ci.sel(ci_bound="upper")),
                    ci_kind=ci_kind,
                    ci_prob=ci_prob,
                )
                rows.append(row)
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


def consistency(
    counts: pd.DataFrame | None = None,
    dt: xr.DataTree | None = None,
    ci_prob: float = 0.95,
    ci_kind: Literal["eti", "hdi"] = "eti",
) -> pd.DataFrame:
    """Within-task consistency of outcomes per agent, from the data and (with a fit) from the model.

    * ``flip_share``: share of the agent's tasks with ``n >= 2`` whose outcome flips across trials (``0 < c < n``).
    * ``icc_anova``: ANOVA intra-class correlation of binary outcomes within tasks, unequal n (Fleiss, Levin &
      Paik 2003; Ridout, Demetrio & Firth 1999, Biometrics 55:137). Near 1: an agent either always or never solves
      a task; near 0: outcomes look like coin flips at a common rate.
    * with ``dt``: the fit's family's model-based consistency **per agent**
      (:meth:`agentstats.models.family.ModelFamily.icc`) with credible intervals: ``icc_cell``, the correlation of
      two trials of one agent on one task beyond what the agent and task effects explain (Beta-Binomial families:
      ``rho[a]``, or ``det_share + (1 - det_share) rho[a]`` with zero/one inflation; Williams 1975), and
      ``icc_model``, the latent-scale ICC including task difficulty (Nakagawa & Schielzeth 2010, Biol. Rev.
      85:935). ``icc_cell_estimable`` is False when the model has no within-cell term (one agent, or ``additive``):
      the values are then NaN, never 0.

    Parameters
    ----------
    counts : pandas.DataFrame, optional
        Columns ``agent, task_id, n, c``; default the counts stored in ``dt``.
    dt : xarray.DataTree, optional
        A hierarchical fit.
    ci_prob : float
    ci_kind : {"eti", "hdi"}

    Returns
    -------
    pandas.DataFrame
        Columns ``agent, n_tasks, n_tasks_multi, flip_share, icc_anova`` and, with ``dt``, ``icc_model,
        icc_model_low, icc_model_high, icc_cell, icc_cell_low, icc_cell_high, icc_cell_estimable``.

    Raises
    ------
    ValueError
        Without counts and fit, or with a fit of a model that has no hyperparameters (``no_pooling``).
    """
    if counts is None and dt is None:
        raise ValueError("consistency: give counts, a fit, or both")
    data = prepare_counts(counts) if counts is not None else stored_data(dt)  # type: ignore[arg-type]
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
    if dt is None:
        return out
    _check_ci(ci_prob, ci_kind)
    post = _posterior(dt)
    iccs = family_of(dt).icc(post)
    fit_agents = [str(a) for a in post["agent"].values]
    pos = [fit_agents.index(a) for a in data.agents]
    for name in ("icc_model", "icc_cell"):
        arr = iccs[name][..., pos]
        da = xr.DataArray(arr, dims=("chain", "draw", "agent"))
        if np.isfinite(arr).all():
            ci = _interval(da, ci_prob, ci_kind)
            out[name] = arr.mean(axis=(0, 1))
            out[f"{name}_low"] = ci.sel(ci_bound="lower").to_numpy()
            out[f"{name}_high"] = ci.sel(ci_bound="upper").to_numpy()
        else:
            out[name] = out[f"{name}_low"] = out[f"{name}_high"] = np.nan
    out["icc_cell_estimable"] = bool(np.isfinite(iccs["icc_cell"]).all())
    return out


def task_effects(dt: xr.DataTree, ci_prob: float = 0.95, ci_kind: Literal["eti", "hdi"] = "eti") -> pd.DataFrame:
    """Posterior summary of the task effects beta[t] (logit scale; higher = easier), for difficulty plots.

    Parameters
    ----------
    dt : xarray.DataTree
        A crossed-model fit (posterior variable ``beta`` with dims ``chain, draw, task``).
    ci_prob : float
        Probability mass of the credible interval.
    ci_kind : {"eti", "hdi"}

    Returns
    -------
    pandas.DataFrame
        Columns ``task, mean, ci_low, ci_high`` (one row per task), sorted by ``mean``.

    Raises
    ------
    ValueError
        When the fit has no task effect (e.g. the ``no_pooling`` model).
    """
    _check_ci(ci_prob, ci_kind)
    post = _posterior(dt)
    if "beta" not in post:
        raise ValueError("task_effects: this fit has no task effect 'beta' (fit a crossed model)")
    beta = post["beta"].transpose("chain", "draw", "task")
    ci = _interval(beta, ci_prob, ci_kind)
    out = pd.DataFrame(
        {
            "task": beta["task"].to_numpy().astype(str),
            "mean": beta.mean(("chain", "draw")).to_numpy(),
            "ci_low": ci.sel(ci_bound="lower").to_numpy(),
            "ci_high": ci.sel(ci_bound="upper").to_numpy(),
        }
    )
    return out.sort_values("mean").reset_index(drop=True)


def _log_comb(n: np.ndarray, k: np.ndarray) -> np.ndarray:
    return gammaln(n + 1.0) - gammaln(k + 1.0) - gammaln(n - k + 1.0)


def _unbiased_from_counts(n: np.ndarray, c: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Unbiased per-cell pass@k and pass^k (Chen et al. 2021; Yao et al. 2024) for ``n >= k``; NaN elsewhere.

    pass^k = C(c, k) / C(n, k), pass@k = 1 - C(n - c, k) / C(n, k), by log-Gamma (any array shapes).
    """
    n = np.asarray(n, float)
    c = np.asarray(c, float)
    ok = n >= k
    with np.errstate(invalid="ignore", divide="ignore"):
        kk = np.full(n.shape, float(k))
        base = _log_comb(n, kk)
        hat = np.where(c >= k, np.exp(_log_comb(c, kk) - base), 0.0)
        miss = np.where(n - c >= k, np.exp(_log_comb(n - c, kk) - base), 0.0)
    return np.where(ok, 1.0 - miss, np.nan), np.where(ok, hat, np.nan)


def predict_rerun(
    dt: xr.DataTree,
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
    dt : xarray.DataTree
        A fit from :func:`agentstats.models.fit.fit`.
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
    ks = _as_ks(k)
    post = _posterior(dt)
    family = family_of(dt)
    data = stored_data(dt)
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
    rng = _seed(dt, _RERUN_STREAM)
    n_tot = data.n + future
    sums = {q: np.zeros((1, len(pick), data.shape[0], ks.size)) for q in ("pass_at_k", "pass_hat_k")}
    used = np.zeros((data.shape[0], ks.size))
    for sl, p in family.iter_cell_p(sub, data, int(dt.attrs.get("random_seed", 0))):
        c_new = rng.binomial(np.broadcast_to(future[:, sl], p.shape), np.clip(p, 0.0, 1.0))
        c_tot = data.c[:, sl] + c_new
        for j, kv in enumerate(ks):
            at, hat = _unbiased_from_counts(n_tot[:, sl], c_tot, int(kv))
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

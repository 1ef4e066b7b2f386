"""Convergence diagnostics, posterior predictive checks of per-cell counts, and LOO model comparison.

Thresholds follow Vehtari, Gelman, Simpson, Carpenter & Buerkner (2021), "Rank-normalization, folding, and
localization: an improved R-hat", arXiv 1903.08008: rank-normalized split R-hat <= 1.01 and bulk and tail ESS
>= 400 (100 per chain for 4 chains), and no divergent transitions (Betancourt 2017, arXiv 1701.02434).
Model comparison uses PSIS-LOO (Vehtari, Gelman & Gabry 2017, arXiv 1507.04544) over cells: the unit left out
is one (agent, task) cell with all its trials.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import arviz as az
import numpy as np
import pandas as pd
import xarray as xr

__all__ = [
    "ConvergenceWarning",
    "Diagnostics",
    "PPCResult",
    "compare_models",
    "diagnose",
    "posterior_predictive_cells",
    "warn_if_not_converged",
]

#: Variables never diagnosed: deterministic transforms of diagnosed ones.
_SKIP = ()


class ConvergenceWarning(UserWarning):
    """Raised (as a warning) when a fit fails R-hat, ESS or divergence thresholds."""


@dataclass
class Diagnostics:
    """Result of :func:`diagnose`.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per posterior variable: ``variable, size, r_hat, ess_bulk, ess_tail`` (worst element: max R-hat,
        min ESS), plus ``ok``.
    divergences : int
        Divergent transitions after tuning, all chains.
    ok : bool
        All thresholds met and no divergences.
    problems : list of str
        Human-readable violations (empty when ``ok``).
    """

    table: pd.DataFrame
    divergences: int
    ok: bool
    problems: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        head = "diagnostics OK" if self.ok else "diagnostics FAILED:\n  " + "\n  ".join(self.problems)
        return f"{head}\n{self.table.to_string(index=False)}"


def _default_var_names(dt: xr.DataTree) -> list[str]:
    post = dt["posterior"]
    skip = set(_SKIP)
    if dt.attrs.get("p_draws") == "conditional_beta":
        # beta_binomial: p is not sampled by NUTS but drawn exactly from its conditional Beta given each draw of the
        # sampled parameters; its R-hat/ESS add independent Monte Carlo noise (the max over 10,000 cells exceeds 1.01
        # by chance alone) and say nothing the sampled parameters do not. Diagnose those.
        skip.add("p")
    return [str(v) for v in post.data_vars if not str(v).endswith("_z") and str(v) not in skip]


def diagnose(
    dt: xr.DataTree,
    r_hat_max: float = 1.01,
    ess_min: float = 400,
    var_names: Sequence[str] | None = None,
) -> Diagnostics:
    """R-hat, bulk/tail ESS per variable and divergences of a fit, checked against thresholds.

    Parameters
    ----------
    dt : xarray.DataTree
        A fit with a ``posterior`` group (dims ``chain, draw, ...``) and, when sampled by NUTS, ``sample_stats``
        with ``diverging``.
    r_hat_max : float
        Largest acceptable rank-normalized split R-hat (Vehtari et al. 2021, arXiv 1903.08008).
    ess_min : float
        Smallest acceptable bulk and tail effective sample size.
    var_names : sequence of str, optional
        Variables to check; default every posterior variable except non-centred auxiliaries ``*_z`` and, for the
        ``beta_binomial`` model, ``p`` (drawn exactly from its conditional given the sampled parameters, not by
        the sampler).

    Returns
    -------
    Diagnostics

    Raises
    ------
    ValueError
        If ``dt`` has no posterior group or a variable is missing.
    """
    if "posterior" not in dt.children:
        raise ValueError("diagnose: the DataTree has no 'posterior' group")
    names = list(var_names) if var_names is not None else _default_var_names(dt)
    post = dt["posterior"].to_dataset()
    absent = [v for v in names if v not in post]
    if absent:
        raise ValueError(f"diagnose: variable(s) {absent} not in the posterior")
    n_chains = post.sizes.get("chain", 1)
    rhat = az.rhat(post[names]) if n_chains > 1 else None
    ess_b = az.ess(post[names], method="bulk")
    ess_t = az.ess(post[names], method="tail")
    rows = []
    for v in names:
        size = int(np.prod([post[v].sizes[d] for d in post[v].dims if d not in ("chain", "draw")]))
        r = float(np.nanmax(np.asarray(rhat[v]))) if rhat is not None and np.isfinite(rhat[v]).any() else np.nan
        eb = np.asarray(ess_b[v], dtype=float)
        et = np.asarray(ess_t[v], dtype=float)
        rows.append(
            dict(
                variable=v,
                size=size,
                r_hat=r,
                ess_bulk=float(np.nanmin(eb)) if np.isfinite(eb).any() else np.nan,
                ess_tail=float(np.nanmin(et)) if np.isfinite(et).any() else np.nan,
            )
        )
    table = pd.DataFrame(rows, columns=["variable", "size", "r_hat", "ess_bulk", "ess_tail"])
    problems: list[str] = []
    if n_chains < 2:
        problems.append("only one chain: R-hat cannot be computed (run at least 2, preferably 4 chains)")
    table["ok"] = True
    for i, row in table.iterrows():
        bad = []
        if np.isfinite(row.r_hat) and row.r_hat > r_hat_max:
            bad.append(f"r_hat {row.r_hat:.4f} > {r_hat_max}")
        for col in ("ess_bulk", "ess_tail"):
            if np.isfinite(row[col]) and row[col] < ess_min:
                bad.append(f"{col} {row[col]:.0f} < {ess_min:g}")
        if bad:
            table.loc[i, "ok"] = False
            problems.append(f"{row.variable}: " + ", ".join(bad))
    divergences = 0
    if "sample_stats" in dt.children and "diverging" in dt["sample_stats"]:
        divergences = int(np.asarray(dt["sample_stats"]["diverging"]).sum())
    if divergences > 0:
        problems.append(
            f"{divergences} divergent transitions: the posterior is biased where the sampler could not go; "
            "refit with a higher target_accept (fit(..., target_accept=0.99); CLI: agentstats fit --target-accept "
            "0.99) or another parameterization (fit(..., parameterization={'agent': ..., 'task': ...}))"
        )
    return Diagnostics(table=table, divergences=divergences, ok=not problems, problems=problems)


def warn_if_not_converged(diag: Diagnostics, stacklevel: int = 3) -> None:
    """Emit a :class:`ConvergenceWarning` listing ``diag.problems`` when ``diag.ok`` is false."""
    if not diag.ok:
        warnings.warn(
            "fit did not pass convergence checks: " + "; ".join(diag.problems),
            ConvergenceWarning,
            stacklevel=stacklevel,
        )


@dataclass
class PPCResult:
    """Result of :func:`posterior_predictive_cells`.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per statistic: ``statistic, observed, rep_mean, rep_low, rep_high, p_value`` (rep_low/high: 2.5 %
        and 97.5 % quantiles of the replicated statistic; ``p_value`` = P(T(y_rep) >= T(y)), the posterior
        predictive p-value, BDA3 sec. 6.3). Values near 0 or 1 flag misfit.
    replicated : dict of str to numpy.ndarray
        Replicated statistic per posterior draw used, shape (n_draws,).
    """

    table: pd.DataFrame
    replicated: dict[str, np.ndarray]


def _cell_statistics(n: np.ndarray, c: np.ndarray) -> dict[str, np.ndarray]:
    """Per-cell-spread statistics, vectorized over leading axes; ``n, c`` have shape (..., agent, task)."""
    obs = n > 0
    stats: dict[str, np.ndarray] = {}
    stats["cells_all_fail"] = np.sum(obs & (c == 0), axis=(-2, -1)).astype(float)
    stats["cells_all_success"] = np.sum(obs & (c == n), axis=(-2, -1)).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(obs, c / np.where(obs, n, 1), np.nan)
        n_agents_t = obs.sum(axis=-2)  # (..., task)
        mean_t = np.nansum(rate, axis=-2) / np.maximum(n_agents_t, 1)
        ss = np.nansum((rate - mean_t[..., None, :]) ** 2, axis=-2)
        var_t = np.where(n_agents_t >= 2, ss / np.maximum(n_agents_t - 1, 1), np.nan)
        usable = np.isfinite(var_t)
        stats["within_task_var"] = np.where(
            usable.any(axis=-1), np.nansum(var_t, axis=-1) / np.maximum(usable.sum(axis=-1), 1), np.nan
        )
    return stats


def posterior_predictive_cells(
    dt: xr.DataTree,
    counts: pd.DataFrame | None = None,
    *,
    n_draws: int | None = 1000,
    random_seed: int = 0,
) -> PPCResult:
    """Posterior predictive check of per-cell success counts, targeting the per-cell spread.

    For posterior draws of ``p[a, t]``, replicate ``c_rep[a, t] ~ Binomial(n[a, t], p[a, t])`` on the observed
    cells and compare statistics of the replicated and observed counts (Gelman et al. BDA3 sec. 6.3):

    * ``cells_all_fail``: number of cells with ``c = 0``;
    * ``cells_all_success``: number of cells with ``c = n``;
    * ``within_task_var``: mean over tasks (with >= 2 observed agents) of the between-agent sample variance of
      ``c / n`` within the task.

    A model without the per-cell term (``additive``) under-predicts all three on real agent runs (p-values near
    1: the observed spread is larger than any replicate), which is how the need for ``gamma`` shows.

    Parameters
    ----------
    dt : xarray.DataTree
        A fit from :func:`agentstats.models.fit.fit` (posterior ``p`` with dims ``chain, draw, agent, task``).
    counts : pandas.DataFrame, optional
        The fitted counts; default the ``n_trials`` / ``n_success`` stored in ``dt["constant_data"]``.
    n_draws : int or None
        Posterior draws used (evenly thinned); None uses all.
    random_seed : int
        Seed of the replication RNG.

    Returns
    -------
    PPCResult

    Raises
    ------
    ValueError
        If ``counts`` do not match the fit's agents and tasks, or no counts are available.
    """
    from agentstats.models.fit import stored_counts  # local import: fit imports this module

    n, c = stored_counts(dt, counts)
    p = dt["posterior"]["p"].transpose("chain", "draw", "agent", "task").to_numpy()
    p = p.reshape(-1, *p.shape[2:])
    if n_draws is not None and n_draws < p.shape[0]:
        p = p[np.linspace(0, p.shape[0] - 1, n_draws).round().astype(int)]
    rng = np.random.default_rng(random_seed)
    c_rep = rng.binomial(np.broadcast_to(n, p.shape), p)
    rep = _cell_statistics(n[None], c_rep)
    obs = _cell_statistics(n, c)
    rows = []
    for name, values in rep.items():
        o = float(obs[name])
        if not np.isfinite(o):
            continue
        rows.append(
            dict(
                statistic=name,
                observed=o,
                rep_mean=float(np.mean(values)),
                rep_low=float(np.quantile(values, 0.025)),
                rep_high=float(np.quantile(values, 0.975)),
                p_value=float(np.mean(values >= o)),
            )
        )
    return PPCResult(table=pd.DataFrame(rows), replicated={k: v for k, v in rep.items() if np.isfinite(obs[k])})


def compare_models(dts: Mapping[str, xr.DataTree], **kwargs) -> pd.DataFrame:
    """Compare fits by PSIS-LOO expected log predictive density over cells (``az.compare``).

    Source: Vehtari, Gelman & Gabry (2017), arXiv 1507.04544. Each fit must have a ``log_likelihood`` group
    (``fit(..., log_likelihood=True)``) for the same observed cells.

    Parameters
    ----------
    dts : mapping of str to xarray.DataTree
        Model name -> fit.
    **kwargs
        Passed to ``arviz.compare`` (e.g. ``method="stacking"``).

    Returns
    -------
    pandas.DataFrame
        ``arviz.compare``'s table (rank, elpd, p, elpd_diff, weight, se, dse, warning, ...), best model first.

    Raises
    ------
    ValueError
        If fewer than two fits are given or one lacks ``log_likelihood``.
    """
    if len(dts) < 2:
        raise ValueError("compare_models: need at least two fits")
    for name, dt in dts.items():
        if "log_likelihood" not in dt.children:
            raise ValueError(
                f"compare_models: fit {name!r} has no log_likelihood group; fit it with log_likelihood=True"
            )
    return az.compare(dict(dts), **kwargs)

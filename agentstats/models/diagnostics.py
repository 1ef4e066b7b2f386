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
from typing import Any, Protocol

import arviz as az
import numpy as np
import pandas as pd
import xarray as xr

from agentstats.intervals import CI_PROB, DEFAULT_SEED, check_ci
from agentstats.models._rank_diagnostics import rank_diagnostics
from agentstats.models.data import CountsData, align_counts
from agentstats.models.families.base import BuildInfo, ModelFamily
from agentstats.models.priors import Priors

__all__ = [
    "PPC_ALPHA",
    "ConvergenceWarning",
    "Diagnostics",
    "FitLike",
    "PPCResult",
    "compare_models",
    "diagnose",
    "posterior_predictive_cells",
    "warn_if_not_converged",
]


#: Family-wise false-alarm rate of the posterior predictive check's verdict (:meth:`PPCResult.misfits`).
PPC_ALPHA = 0.05


class ConvergenceWarning(UserWarning):
    """Raised (as a warning) when a fit fails R-hat, ESS or divergence thresholds."""


class FitLike(Protocol):
    """What the checks here read of a fit (:class:`agentstats.models.result.Fit`, which sits above this module)."""

    @property
    def family(self) -> ModelFamily: ...  # noqa: D102
    @property
    def data(self) -> CountsData: ...  # noqa: D102
    @property
    def idata(self) -> xr.DataTree: ...  # noqa: D102
    @property
    def priors(self) -> Priors: ...  # noqa: D102
    @property
    def build(self) -> BuildInfo: ...  # noqa: D102


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
    note : str
        What was checked when R-hat and ESS do not apply (independent draws of the Laplace tier); empty for NUTS.
    """

    table: pd.DataFrame
    divergences: int
    ok: bool
    problems: list[str] = field(default_factory=list)
    note: str = ""

    def __str__(self) -> str:
        head = "diagnostics OK" if self.ok else "diagnostics FAILED:\n  " + "\n  ".join(self.problems)
        if self.note:
            return f"{head}\n{self.note}"
        # R-hat to 3 decimals (the 1.01 rule's precision), ESS as whole draws; the table itself keeps full precision
        fmt = {"r_hat": "{:.3f}".format, "ess_bulk": "{:,.0f}".format, "ess_tail": "{:,.0f}".format}
        shown = {c: f for c, f in fmt.items() if c in self.table.columns}
        return f"{head}\n{self.table.to_string(index=False, formatters=shown)}"


def _check_threshold(name: str, value: Any, low: float) -> None:
    """Refuse a threshold of :func:`diagnose` that is not a number >= ``low``."""
    try:
        ok = not isinstance(value, (bool, np.bool_, str, bytes)) and float(value) >= low
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ValueError(f"diagnose: {name} must be a number >= {low:g}, got {value!r}")


def diagnose(
    fit: FitLike | xr.DataTree,
    r_hat_max: float = 1.01,
    ess_min: float = 400,
    var_names: Sequence[str] | None = None,
) -> Diagnostics:
    """R-hat, bulk/tail ESS per variable and divergences of a fit, checked against thresholds.

    Parameters
    ----------
    fit : Fit or xarray.DataTree
        A fit (:class:`agentstats.models.result.Fit`), or any DataTree with a ``posterior`` group (dims
        ``chain, draw, ...``) and, when sampled by NUTS, ``sample_stats`` with ``diverging``.
    r_hat_max : float
        Largest acceptable rank-normalized split R-hat (Vehtari et al. 2021, arXiv 1903.08008).
    ess_min : float
        Smallest acceptable bulk and tail effective sample size.
    var_names : sequence of str, optional
        Variables to check; default for a fit what its family names
        (:meth:`agentstats.models.families.base.ModelFamily.diagnostic_var_names`: the sampled parameters, not
        non-centred auxiliaries ``*_z`` or quantities drawn outside the sampler), for another DataTree every
        variable but the non-centred auxiliaries ``*_z``.

    Returns
    -------
    Diagnostics
        A NaN R-hat or ESS (a variable whose draws never change, or non-finite draws) is a failure that names the
        variable, never a pass.

    Raises
    ------
    ValueError
        If ``dt`` has no posterior group or a variable is missing; if ``r_hat_max`` is below 1 (R-hat is near 1 at
        convergence and above it otherwise, so a threshold under 1 fails every fit) or ``ess_min`` is negative (or
        either is not a number; NaN never compares).
    """
    _check_threshold("r_hat_max", r_hat_max, 1.0)
    _check_threshold("ess_min", ess_min, 0.0)
    dt = fit if isinstance(fit, xr.DataTree) else fit.idata
    if "posterior" not in dt.children:
        raise ValueError("diagnose: the DataTree has no 'posterior' group")
    if dt.attrs.get("method") == "laplace":
        return _laplace_diagnostics(dt)
    post = dt["posterior"].to_dataset()
    if var_names is not None:
        names = list(var_names)
    elif isinstance(fit, xr.DataTree):
        names = [str(v) for v in post.data_vars if not str(v).endswith("_z")]
    else:
        names = fit.family.diagnostic_var_names(post)
    absent = [v for v in names if v not in post]
    if absent:
        raise ValueError(f"diagnose: variable(s) {absent} not in the posterior")
    n_chains = post.sizes.get("chain", 1)
    want = ("rhat", "ess_bulk", "ess_tail") if n_chains > 1 else ("ess_bulk", "ess_tail")
    rows = []
    for v in names:
        size = int(np.prod([post[v].sizes[d] for d in post[v].dims if d not in ("chain", "draw")]))
        # az.rhat (method "rank") and az.ess (bulk, tail) of every element at once, equal to ArviZ's to rounding
        with np.errstate(invalid="ignore", divide="ignore"):  # constant or non-finite draws give NaN: handled below
            draws = post[v].transpose("chain", "draw", ...).to_numpy()
            found = dict(zip(want, rank_diagnostics(draws, want), strict=True))
        # worst element; one NaN element makes the variable NaN (a failure), never a silently skipped pass
        r = float(np.max(found["rhat"])) if "rhat" in found else np.nan
        rows.append(
            dict(
                variable=v,
                size=size,
                r_hat=r,
                ess_bulk=float(np.min(found["ess_bulk"])),
                ess_tail=float(np.min(found["ess_tail"])),
            )
        )
    table = pd.DataFrame(rows, columns=["variable", "size", "r_hat", "ess_bulk", "ess_tail"])
    problems: list[str] = []
    if n_chains < 2:
        problems.append("only one chain: R-hat cannot be computed (run at least 2, preferably 4 chains)")
    table["ok"] = True
    for i, row in table.iterrows():
        bad = []
        if n_chains > 1:
            if not np.isfinite(row.r_hat):
                bad.append("r_hat is NaN (draws that never change or are not finite)")
            elif row.r_hat > r_hat_max:
                bad.append(f"r_hat {row.r_hat:.4f} > {r_hat_max}")
        for col in ("ess_bulk", "ess_tail"):
            if not np.isfinite(row[col]):
                bad.append(f"{col} is NaN")
            elif row[col] < ess_min:
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


def _laplace_diagnostics(dt: xr.DataTree) -> Diagnostics:
    """Check the Laplace tier's independent draws (:func:`agentstats.models.laplace.laplace_diagnostics`).

    The table lists the variables with R-hat and ESS left NaN: they do not apply to independent draws, and are not
    estimated (a number there would be noise around the draw count, not a check).
    """
    import json

    from agentstats.models.laplace import laplace_diagnostics

    post = dt["posterior"].to_dataset()
    checks = json.loads(str(dt.attrs.get("laplace", "{}")))
    draws = int(post.sizes.get("chain", 1) * post.sizes.get("draw", 1))
    ok, problems, note = laplace_diagnostics(checks, draws)
    rows = [dict(variable=str(v), size=int(np.prod([post[v].sizes[d] for d in post[v].dims
                                                     if d not in ("chain", "draw")])),
                 r_hat=np.nan, ess_bulk=np.nan, ess_tail=np.nan, ok=ok) for v in post.data_vars]
    table = pd.DataFrame(rows, columns=["variable", "size", "r_hat", "ess_bulk", "ess_tail", "ok"])
    return Diagnostics(table=table, divergences=0, ok=ok, problems=problems, note=note)


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
        One row per statistic: ``statistic, observed, rep_mean, rep_low, rep_high, p_value`` (rep_low/high: the equal-
        tailed ``ci_prob`` interval of the replicated statistic, 2.5 % and 97.5 % quantiles by default; ``p_value`` =
        P(T(y_rep) > T(y)) + P(T(y_rep) = T(y)) / 2, the posterior predictive p-value (BDA3 sec. 6.3) with ties counted
        half (the mid-p value, Lancaster 1961, JASA 56(294)): the statistics are discrete, and an agent that never
        succeeds has flip share 0 in every replicate, which is agreement (p 0.5), not misfit (P(T_rep >= T) would be 1).
        Values near 0 or 1 flag misfit.
    replicated : dict of str to numpy.ndarray
        Replicated statistic per posterior draw used, shape (n_draws,).
    ci_prob : float
        Probability of the ``rep_low`` / ``rep_high`` interval (also ``table.attrs["ci_prob"]``).

    The check's verdict (:meth:`misfits`, :attr:`ok`): a statistic misfits when its two-sided p-value
    ``2 min(p, 1 - p)`` is below ``alpha / m``, with ``m`` the statistics checked (Bonferroni), so that a model that
    fits raises a false alarm on at most about ``alpha`` of data sets; ``validation/ppc_verdict_check.py`` measures
    that rate and the check's power by simulation (``docs/validation.md``).
    """

    table: pd.DataFrame
    replicated: dict[str, np.ndarray]
    ci_prob: float = CI_PROB

    def misfits(self, alpha: float = PPC_ALPHA) -> pd.DataFrame:
        """Return the rows of :attr:`table` whose statistic the model misses (the check's verdict, class docstring).

        Parameters
        ----------
        alpha : float
            Family-wise false-alarm rate over the statistics, in (0, 1).

        Returns
        -------
        pandas.DataFrame
            The misfitting rows of :attr:`table`, with ``two_sided_p`` and ``cutoff`` (``alpha / m``) added; empty
            when the model reproduces every statistic.

        Raises
        ------
        ValueError
            For ``alpha`` outside (0, 1).
        """
        if not 0.0 < alpha < 1.0:
            raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
        t = self.table
        if not len(t):
            return t.assign(two_sided_p=[], cutoff=[])
        p = t["p_value"].to_numpy(dtype=float)
        two_sided = 2.0 * np.minimum(p, 1.0 - p)
        cutoff = alpha / len(t)
        return t.assign(two_sided_p=two_sided, cutoff=cutoff)[two_sided < cutoff].reset_index(drop=True)

    @property
    def ok(self) -> bool:
        """Whether no statistic misfits at :data:`PPC_ALPHA` (:meth:`misfits`)."""
        return not len(self.misfits())


def _cell_statistics(n: np.ndarray, c: np.ndarray, agents: Sequence[str]) -> dict[str, np.ndarray]:
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
        # per agent: share of its cells with >= 2 trials whose outcome flips (0 < c < n), the consistency statistic
        multi = n >= 2
        flips = (multi & (c > 0) & (c < n)).sum(axis=-1)
        n_multi = np.broadcast_to(multi.sum(axis=-1), flips.shape)
        share = np.where(n_multi > 0, flips / np.maximum(n_multi, 1), np.nan)
    for i, agent in enumerate(agents):
        stats[f"flip_share[{agent}]"] = share[..., i]
    return stats


def _ppc_counts(fit: FitLike, n_draws: int | None, random_seed: int) -> np.ndarray:
    """Replicate counts ``c_rep`` (draw, agent, task) with ``pymc.sample_posterior_predictive`` on the family's model.

    0 on unobserved cells; evenly thinned posterior draws, in blocks that bound memory.
    """
    import pymc as pm

    data = fit.data
    model, _ = fit.family.build(data, fit.priors, fit.build.parameterization or None)
    post = fit.idata["posterior"].to_dataset()
    stacked = post.stack(sample=("chain", "draw"))
    total = stacked.sizes["sample"]
    pick = np.arange(total) if n_draws is None or n_draws >= total else np.linspace(0, total - 1, n_draws).round()
    pick = np.asarray(pick, dtype=int)
    ai, ti = data.obs_index()
    block = max(1, int(50_000_000 // max(ai.size, 1)))
    out = np.zeros((pick.size, *data.shape), dtype=np.int64)
    for b, start in enumerate(range(0, pick.size, block)):
        idx = pick[start : start + block]
        sub = stacked.isel(sample=idx).drop_vars(["chain", "draw", "sample"]).rename({"sample": "draw"})
        sub = sub.expand_dims(chain=[0]).assign_coords(draw=np.arange(idx.size))
        rep = pm.sample_posterior_predictive(
            xr.DataTree.from_dict({"posterior": sub}),
            model=model,
            var_names=["c"],
            random_seed=np.random.SeedSequence([int(random_seed), b]).generate_state(1)[0],
            progressbar=False,
        )
        c_rep = rep["posterior_predictive"]["c"].transpose("chain", "draw", "cell").to_numpy()[0]
        out[start : start + idx.size][:, ai, ti] = c_rep
    return out


def posterior_predictive_cells(
    fit: FitLike,
    counts: pd.DataFrame | None = None,
    *,
    n_draws: int | None = 500,
    random_seed: int = DEFAULT_SEED,
    ci_prob: float = CI_PROB,
) -> PPCResult:
    """Posterior predictive check of per-cell success counts, targeting the per-cell spread.

    Replicated counts ``c_rep`` of the observed cells come from the fit's own model
    (``pymc.sample_posterior_predictive`` on the family's observed ``c``: a Beta-Binomial family draws a new cell
    probability from its Beta, a logit-normal one uses the sampled cell effect), and statistics of the replicated and
    observed counts are compared (Gelman et al. BDA3 sec. 6.3):

    * ``cells_all_fail``: number of cells with ``c = 0``;
    * ``cells_all_success``: number of cells with ``c = n``;
    * ``within_task_var``: mean over tasks (with >= 2 observed agents) of the between-agent sample variance of
      ``c / n`` within the task;
    * ``flip_share[agent]``: per agent, the share of its cells with ``n >= 2`` whose outcome flips (``0 < c < n``),
      the statistic a shared within-cell dispersion gets wrong when agents differ in consistency.

    A model without the per-cell term (``additive``) under-predicts the first three on real agent runs (p-values
    near 1: the observed spread is larger than any replicate), which is how the need for a cell term shows.

    Parameters
    ----------
    fit : Fit
        A fit from :func:`agentstats.models.fitting.fit` (:class:`agentstats.models.result.Fit`).
    counts : pandas.DataFrame, optional
        Must be the fitted counts if given (checked); the stored ones are used.
    n_draws : int or None
        Posterior draws used (evenly thinned); None uses all.
    random_seed : int
        Seed of the replication.
    ci_prob : float
        Probability of the replicated statistic's equal-tailed interval (``rep_low``, ``rep_high``).

    Returns
    -------
    PPCResult

    Raises
    ------
    ValueError
        If ``counts`` do not match the fit, or the fit stores no counts.
    """
    check_ci(ci_prob, "eti", "posterior_predictive_cells")
    data = fit.data
    if counts is not None:
        n_given, c_given = align_counts(data, counts)
        if not (np.array_equal(n_given, data.n) and np.array_equal(c_given, data.c)):
            raise ValueError("counts differ from the counts the fit was made on")
    c_rep = _ppc_counts(fit, n_draws, random_seed)
    tail = (1.0 - float(ci_prob)) / 2.0
    rep = _cell_statistics(data.n[None], c_rep, data.agents)
    obs = _cell_statistics(data.n, data.c, data.agents)
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
                rep_low=float(np.quantile(values, tail)),
                rep_high=float(np.quantile(values, 1.0 - tail)),
                p_value=float(np.mean(values > o) + 0.5 * np.mean(values == o)),
            )
        )
    table = pd.DataFrame(rows)
    table.attrs["ci_prob"] = float(ci_prob)
    return PPCResult(table=table, replicated={k: v for k, v in rep.items() if np.isfinite(obs[k])},
                     ci_prob=float(ci_prob))


def compare_models(fits: Mapping[str, FitLike | xr.DataTree], **kwargs: Any) -> pd.DataFrame:
    """Compare fits by PSIS-LOO expected log predictive density over cells (``az.compare``).

    Source: Vehtari, Gelman & Gabry (2017), arXiv 1507.04544. Each fit must have a ``log_likelihood`` group
    (``fit(..., log_likelihood=True)``) for the same observed cells.

    Parameters
    ----------
    fits : mapping of str to Fit (or xarray.DataTree)
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
    if len(fits) < 2:
        raise ValueError("compare_models: need at least two fits")
    dts = {name: f if isinstance(f, xr.DataTree) else f.idata for name, f in fits.items()}
    for name, dt in dts.items():
        if "log_likelihood" not in dt.children:
            raise ValueError(
                f"compare_models: fit {name!r} has no log_likelihood group; fit it with log_likelihood=True"
            )
    # raw numbers: arviz rounds elpd to the precision of its se by default, which hides differences between models
    # whose se is large but whose paired difference (dse) is small
    kwargs.setdefault("round_to", "none")
    return az.compare(dict(dts), **kwargs)

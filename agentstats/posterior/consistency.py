"""Within-task consistency per agent (data and model-based ICC) and task difficulty."""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from agentstats.intervals import CI_PROB, CiKind, check_ci
from agentstats.models.data import prepare_counts
from agentstats.models.result import Fit
from agentstats.posterior._common import as_fit, interval

__all__ = [
    "NOT_ESTIMABLE_NO_TERM",
    "NOT_ESTIMABLE_ONE_TRIAL",
    "NOT_GIVEN_LAPLACE",
    "NOT_GIVEN_LAPLACE_LABEL",
    "consistency",
    "not_given_laplace",
    "task_effects",
]

#: Why an agent's within-cell correlation is not given: one trial per task (the data cannot show how alike two tries
#: of one task are, so its posterior would be the prior's).
NOT_ESTIMABLE_ONE_TRIAL = "not estimable from these data: no task with 2+ trials"
#: Why it is not given: the model has no within-cell term (one agent, or the additive model).
NOT_ESTIMABLE_NO_TERM = "not estimable: the model has no within-cell term"
#: Why it is not given by a fit of the Laplace tier (``fit(..., method="laplace")``): on the consistency simulation
#: (docs/validation.md, "Laplace tier") its intervals for an agent of low consistency (true ICC 0.2) covered 0.63 /
#: 0.78 / 0.80 at 2 / 4 / 8 trials against NUTS's 0.78 / 0.88 / 0.95, its mean biased upwards; an interval that
#: does not cover at NUTS's rate is not used.
NOT_GIVEN_LAPLACE = ("not given by the Laplace tier (its consistency intervals under-cover, docs/validation.md); "
                     "fit NUTS for it: method='nuts', on the command line --method nuts")
#: What a table shows in place of such a value (the reason, :data:`NOT_GIVEN_LAPLACE`, once below it).
NOT_GIVEN_LAPLACE_LABEL = "not given (Laplace tier)"


def not_given_laplace(rows: pd.DataFrame | pd.Series) -> bool:
    """Tell whether a :func:`consistency` table (any row) or one row is of a Laplace-tier fit (no model ICC)."""
    note = rows.get("icc_cell_note")
    if isinstance(rows, pd.DataFrame):
        return note is not None and bool((note == NOT_GIVEN_LAPLACE).any())
    return bool(note == NOT_GIVEN_LAPLACE)


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
    fit: Fit | None = None,
    ci_prob: float = CI_PROB,
    ci_kind: CiKind = "eti",
) -> pd.DataFrame:
    """Within-task consistency of outcomes per agent, from the data and (with a fit) from the model.

    * ``flip_share``: share of the agent's tasks with ``n >= 2`` whose outcome flips across trials (``0 < c < n``).
    * ``icc_anova``: ANOVA intra-class correlation of binary outcomes within tasks, unequal n (Fleiss, Levin &
      Paik 2003; Ridout, Demetrio & Firth 1999, Biometrics 55:137). Near 1: an agent either always or never solves
      a task; near 0: outcomes look like coin flips at a common rate.
    * with ``fit``: the fit's family's model-based consistency **per agent**
      (:meth:`agentstats.models.families.base.ModelFamily.icc`) with credible intervals: ``icc_cell``, the correlation
      of two trials of one agent on one task beyond what the agent and task effects explain (Beta-Binomial families:
      ``rho[a]``, or ``det_share + (1 - det_share) rho[a]`` with zero/one inflation; Williams 1975), and
      ``icc_model``, the latent-scale ICC of task difficulty (Nakagawa & Schielzeth 2010, Biol. Rev. 85:935):
      logit-normal families ``(sigma_task^2 + sigma_cell[a]^2) / (... + pi^2/3)``, per agent (task and cell
      together); Beta-Binomial families ``sigma_task^2 / (sigma_task^2 + pi^2/3)``, the task part only and the
      same for every agent (the cell spread is on the probability scale), so read an agent's consistency from
      ``icc_cell``. ``icc_cell_estimable`` is False, per agent, when the model has no within-cell term (one agent,
      or ``additive``) or when the agent has no task with two or more trials: one trial per task says nothing about
      how alike two tries are, so the posterior of ``icc_cell`` would be its prior. The values are then NaN, never
      0 and never the prior's, and ``icc_cell_note`` says why (:data:`NOT_ESTIMABLE_ONE_TRIAL`,
      :data:`NOT_ESTIMABLE_NO_TERM`). A fit of the Laplace tier (``fit.sampler.method == "laplace"``) gives neither
      model-based ICC (NaN, ``icc_cell_note`` :data:`NOT_GIVEN_LAPLACE`): validated for pass@k and pass^k, its
      consistency intervals under-cover (docs/validation.md, "Laplace tier"), so they are not used.

    Parameters
    ----------
    counts : pandas.DataFrame, optional
        Columns ``agent, task_id, n, c``; default the counts of ``fit`` (``fit.data``, not validated again).
    fit : Fit, optional
        A fit of a family with a model-based consistency
        (:attr:`~agentstats.models.families.base.ModelFamily.has_icc`).
    ci_prob : float
    ci_kind : {"eti", "hdi"}

    Returns
    -------
    pandas.DataFrame
        Columns ``agent, n_tasks, n_tasks_multi, flip_share, icc_anova`` and, with ``fit``, ``icc_model,
        icc_model_low, icc_model_high, icc_cell, icc_cell_low, icc_cell_high, icc_cell_estimable, icc_cell_note``
        (None where estimable).

    Raises
    ------
    ValueError
        Without counts and fit, with a fit of a model that has no hyperparameters (``no_pooling``), or with counts
        of an agent the fit does not have.
    TypeError
        When ``fit`` is not a :class:`~agentstats.models.result.Fit`.
    """
    if counts is None and fit is None:
        raise ValueError("consistency: give counts, a fit, or both")
    if fit is not None:
        fit = as_fit(fit, "consistency")
    data = prepare_counts(counts) if counts is not None else fit.data  # type: ignore[union-attr]
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
    if fit is None:
        return out
    ci_prob, ci_kind = check_ci(ci_prob, ci_kind, "consistency")
    if not fit.family.has_icc:
        raise ValueError(f"the {fit.family.name} model has no model-based ICC (fit a hierarchical model)")
    iccs = fit.family.icc(fit.posterior)
    fit_agents = fit.data.agents  # also a one-agent fit's, whose posterior has no agent dimension
    unknown = [a for a in data.agents if a not in fit_agents]
    if unknown:
        raise ValueError(
            f"consistency: agent(s) {unknown!r} of the counts not in the fit; agents present: {', '.join(fit_agents)}"
        )
    pos = [fit_agents.index(a) for a in data.agents]
    for name in ("icc_model", "icc_cell"):
        arr = iccs[name][..., pos]
        da = xr.DataArray(arr, dims=("chain", "draw", "agent"))
        if np.isfinite(arr).all():
            ci = interval(da, ci_prob, ci_kind)
            out[name] = arr.mean(axis=(0, 1))
            out[f"{name}_low"] = ci.sel(ci_bound="lower").to_numpy()
            out[f"{name}_high"] = ci.sel(ci_bound="upper").to_numpy()
        else:
            out[name] = out[f"{name}_low"] = out[f"{name}_high"] = np.nan
    has_term = bool(np.isfinite(iccs["icc_cell"]).all())
    identified = out["n_tasks_multi"].to_numpy() > 0
    laplace = fit.sampler.method == "laplace"
    out["icc_cell_estimable"] = has_term & identified & (not laplace)
    out["icc_cell_note"] = [
        None if has_term and ok and not laplace else NOT_ESTIMABLE_NO_TERM if not has_term
        else NOT_ESTIMABLE_ONE_TRIAL if not ok else NOT_GIVEN_LAPLACE
        for ok in identified
    ]
    out.loc[~out["icc_cell_estimable"], ["icc_cell", "icc_cell_low", "icc_cell_high"]] = np.nan
    if laplace:
        out[["icc_model", "icc_model_low", "icc_model_high"]] = np.nan
    return out


def task_effects(fit: Fit, ci_prob: float = CI_PROB, ci_kind: CiKind = "eti") -> pd.DataFrame:
    """Posterior summary of the task effects beta[t] (logit scale; higher = easier), for difficulty plots.

    Parameters
    ----------
    fit : Fit
        A crossed-model fit (posterior variable ``beta`` with dims ``chain, draw, task``).
    ci_prob : float
        Probability mass of the credible interval.
    ci_kind : {"eti", "hdi"}

    Returns
    -------
    pandas.DataFrame
        Columns ``task, mean, ci_low, ci_high, ci_kind, ci_prob`` (one row per task), sorted by ``mean``.

    Raises
    ------
    ValueError
        When the fit has no task effect (e.g. the ``no_pooling`` model).
    """
    fit = as_fit(fit, "task_effects")
    ci_prob, ci_kind = check_ci(ci_prob, ci_kind, "task_effects")
    post = fit.posterior
    if "beta" not in post:
        raise ValueError("task_effects: this fit has no task effect 'beta' (fit a crossed model)")
    beta = post["beta"].transpose("chain", "draw", "task")
    ci = interval(beta, ci_prob, ci_kind)
    out = pd.DataFrame(
        {
            "task": beta["task"].to_numpy().astype(str),
            "mean": beta.mean(("chain", "draw")).to_numpy(),
            "ci_low": ci.sel(ci_bound="lower").to_numpy(),
            "ci_high": ci.sel(ci_bound="upper").to_numpy(),
            "ci_kind": ci_kind,
            "ci_prob": ci_prob,
        }
    )
    return out.sort_values("mean").reset_index(drop=True)



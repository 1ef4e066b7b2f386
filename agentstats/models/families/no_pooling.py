"""The ``no_pooling`` family: ``p[a, t] ~ Beta(a0, b0)`` independently per cell, Binomial likelihood.

Its posterior is ``Beta(a0 + c, b0 + n - c)`` per cell (conjugacy, Gelman et al. BDA3 sec. 2.4): :func:`agentstats.fit`
draws it exactly (no MCMC) and :func:`no_pooling_posterior` gives it in closed form. The PyMC model exists so that it
can be sampled and compared like the others. It has no hyperparameters: no new-task population, no model ICC.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import pymc as pm
import xarray as xr
from scipy import stats

from agentstats.models.data import CountsData, prepare_counts
from agentstats.models.families.base import GH_NODES, BuildInfo, ModelFamily, draw_array
from agentstats.models.priors import Priors, as_priors

__all__ = ["NoPoolingFamily", "exact_posterior", "no_pooling_posterior"]


@dataclass(frozen=True, eq=False)
class NoPoolingFamily(ModelFamily):
    """Independent cells with a Beta prior (module docstring)."""

    name: ClassVar[str] = "no_pooling"
    summary: ClassVar[str] = "independent Beta per cell (no pooling)"
    hierarchical: ClassVar[bool] = False
    p_draws: ClassVar[str] = "exact"

    @property
    def posterior_core(self) -> dict[str, tuple[str, ...]]:
        """The exact draws of ``p`` per cell."""
        return {"p": ("agent", "task")}

    def build(
        self,
        data: CountsData,
        priors: Priors,
        parameterization: dict[str, str] | None = None,
        judge_error: Any = None,
    ) -> tuple[pm.Model, BuildInfo]:
        """Build the PyMC model: free ``p`` (agent, task), observed ``c`` (cell).

        Raises
        ------
        ValueError
            With ``judge_error``: the exact Beta posterior has no room for a judge's misclassification.
        """
        if judge_error is not None:
            raise ValueError("model 'no_pooling' is drawn exactly and cannot take a judge calibration; use a "
                             "hierarchical model (e.g. zoi_beta_binomial)")
        ai, ti = data.obs_index()
        coords = {"agent": data.agents, "task": data.tasks, "cell": np.arange(ai.size)}
        with pm.Model(coords=coords) as model:
            p = pm.Beta("p", priors.beta_a, priors.beta_b, dims=("agent", "task"))
            pm.Binomial("c", n=data.n[ai, ti], p=p[ai, ti], observed=data.c[ai, ti], dims="cell")
        return model, BuildInfo()

    def cell_p(self, post: xr.Dataset, data: CountsData, tasks: slice, seed: int) -> np.ndarray:
        """Return the stored exact draws of ``p``."""
        return draw_array(post, "p", "agent", "task")[..., tasks]

    def new_task_pass_k(
        self,
        post: xr.Dataset,
        ks: np.ndarray,
        n_tasks: int,
        rng: np.random.Generator,
        n_nodes: int = GH_NODES,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Not defined: independent cells say nothing about a new task."""
        raise ValueError(
            "population='new' needs the hierarchical hyperparameters (mu, sigma_task); the no_pooling model has none"
        )

    def icc(self, post: xr.Dataset) -> dict[str, np.ndarray]:
        """Not defined: the no_pooling model has no model-based ICC."""
        raise ValueError("the no_pooling model has no model-based ICC (fit a hierarchical model)")


def exact_posterior(data: CountsData, priors: Priors, draws: int, chains: int, seed: int) -> xr.DataTree:
    """Exact draws from the no-pooling posterior ``Beta(a0 + c, b0 + n - c)`` per cell, as a fit's posterior group."""
    rng = np.random.default_rng(seed)
    p = rng.beta(priors.beta_a + data.c, priors.beta_b + data.n - data.c, size=(chains, draws, *data.shape))
    post = xr.Dataset(
        {"p": (("chain", "draw", "agent", "task"), p)},
        coords={"chain": np.arange(chains), "draw": np.arange(draws), "agent": data.agents, "task": data.tasks},
    )
    return xr.DataTree.from_dict({"posterior": post})


def no_pooling_posterior(counts: pd.DataFrame, *, priors: Priors | Mapping[str, float] | None = None) -> pd.DataFrame:
    """Closed-form posterior of the no-pooling model: ``p[a,t] | data ~ Beta(a0 + c, b0 + n - c)``.

    Source: Beta-Binomial conjugacy, Gelman et al. BDA3 sec. 2.4. The posterior mean is ``(a0 + c) / (a0 + b0 + n)``.

    Parameters
    ----------
    counts : pandas.DataFrame
        Columns ``agent, task_id, n, c``.
    priors : Priors or mapping, optional
        ``beta_a`` (a0) and ``beta_b`` (b0); default Beta(1, 1). A mapping sets the fields it names
        (:func:`agentstats.models.priors.as_priors`).

    Returns
    -------
    pandas.DataFrame
        One row per input cell: ``agent, task_id, n, c, alpha_post, beta_post, mean, sd``.
    """
    data = prepare_counts(counts)
    priors = as_priors(priors, "no_pooling_posterior")
    ai, ti = np.nonzero(data.present)
    n, c = data.n[ai, ti], data.c[ai, ti]
    a = priors.beta_a + c
    b = priors.beta_b + n - c
    dist = stats.beta(a, b)
    return pd.DataFrame(
        {
            "agent": np.asarray(data.agents, dtype=object)[ai],
            "task_id": np.asarray(data.tasks, dtype=object)[ti],
            "n": n,
            "c": c,
            "alpha_post": a,
            "beta_post": b,
            "mean": dist.mean(),
            "sd": dist.std(),
        }
    )

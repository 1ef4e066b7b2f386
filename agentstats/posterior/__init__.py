"""Posterior pass@k / pass^k, summaries, agent contrasts, consistency and re-run predictions.

Definitions (per task t of agent a, success probability p = p[a, t]):
pass@k = 1 - (1 - p)^k (Chen et al. 2021, arXiv 2107.03374), pass^k = p^k (Yao et al. 2024, arXiv 2406.12045).
Suite values are means over tasks of the per-task values, never functions of the pooled mean.

Two populations:

* ``observed``: the tasks in the data, ``mean_t p[a, t]^k`` over the tasks agent ``a`` attempted (cells with
  n > 0), per posterior draw. The cell probabilities come from the fit's family
  (:meth:`agentstats.models.families.base.ModelFamily.cell_p`), block by block, so no (chain, draw, agent, task) array
  is held in memory; for the Beta-Binomial families they are exact conditional draws given the sampled parameters,
  seeded from the fit's seed (the same draws in every function here).
* ``new``: a new task from the same task population
  (:meth:`agentstats.models.families.base.ModelFamily.new_task_pass_k`): the family integrates the task-to-task and
  within-cell variation by Gauss-Hermite quadrature and adds the uncertainty of the population mean (one shift
  ``Normal(0, sigma_task / sqrt(T))`` per draw; the reason is in :mod:`agentstats.models.families.base`).

:func:`fit_many` fits one model per slice of the counts (a column's values), on any executor, into one table.

``extrapolated`` (per agent and k) is the share of the agent's attempted tasks with fewer than k trials: the unbiased
estimators are undefined there, so those tasks' values rest on the model (its cell distribution) more than on data.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentstats._util.lazy import lazy_attributes

if TYPE_CHECKING:
    from agentstats.posterior.consistency import consistency, task_effects
    from agentstats.posterior.contrasts import contrast_matrix, contrast_table
    from agentstats.posterior.many import fit_many
    from agentstats.posterior.pass_k import (
        posterior_pass_at_k,
        posterior_pass_hat_k,
        posterior_pass_k,
        summarize_pass_k,
    )
    from agentstats.posterior.rerun import predict_rerun

# Loaded on first use: these need the model families (PyMC, several seconds to import).
__getattr__, __dir__ = lazy_attributes(__name__, {
    "consistency": "agentstats.posterior.consistency",
    "task_effects": "agentstats.posterior.consistency",
    "contrast_matrix": "agentstats.posterior.contrasts",
    "contrast_table": "agentstats.posterior.contrasts",
    "fit_many": "agentstats.posterior.many",
    "posterior_pass_at_k": "agentstats.posterior.pass_k",
    "posterior_pass_hat_k": "agentstats.posterior.pass_k",
    "posterior_pass_k": "agentstats.posterior.pass_k",
    "summarize_pass_k": "agentstats.posterior.pass_k",
    "predict_rerun": "agentstats.posterior.rerun",
})

__all__ = [
    "consistency",
    "contrast_matrix",
    "contrast_table",
    "fit_many",
    "posterior_pass_at_k",
    "posterior_pass_hat_k",
    "posterior_pass_k",
    "predict_rerun",
    "summarize_pass_k",
    "task_effects",
]

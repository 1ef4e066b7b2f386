"""Centred or non-centred effects, and the agent + task linear predictor shared by the crossed model families.

Sum-to-zero effects (``pm.ZeroSumNormal``) remove the additive ridge between ``mu``, ``alpha`` and ``beta``
(any constant can move between them without changing ``p``); ``sigma`` keeps its meaning as the population
standard deviation of the effect (the constraint moves the sample mean into ``mu``, see
:meth:`agentstats.models.families.base.ModelFamily.new_task_pass_k` for what that means for a new task).

Parameterization rule (:func:`choose_parameterization`)
-------------------------------------------------------
Each level (``agent``, ``task``, ``cell``) is written centred (``x ~ N(0, sigma)``) when the data inform its units
well and non-centred (``x = sigma * z, z ~ N(0, 1)``) when they do not (Papaspiliopoulos, Roberts & Skold 2007,
Statistical Science 22(1); Betancourt & Girolami 2015, arXiv 1312.0906). Informativeness is measured as the
ratio of data precision to prior precision of a unit's effect, using the Fisher information of a binomial
cell on the logit scale, ``I = n p~ (1 - p~)`` with ``p~ = (c + 0.5) / (n + 1)``:

* cell ``(a, t)``: ``r = I[a, t] * s_cell^2``;
* task ``t``: ``r = s_task^2 * sum_a 1 / (s_cell^2 + 1 / I[a, t])`` (with the cell term; ``sum_a I[a, t]``
  without it), i.e. each agent's cell informs the task effect through the cell-level noise;
* agent ``a``: the same sum over the agent's tasks with ``s_agent``.

``s_*`` is the prior median of the level's standard deviation (``0.674 * scale`` of the half-normal).

Rule, as measured on simulated data with nutpie (3-5 agents x 30-60 tasks x 2, 4, 8 and 16 trials, and
10 agents x 1,000 tasks x 8 trials; see ``docs/models.md`` and ``docs/validation.md``): **all levels are centred
when the median cell ratio is at least 2.5** (about 10 or more trials per cell at p near 1/2); otherwise the
cells are non-centred, and **the agent and task levels are centred only when both their median ratios are at
least 5** (many agents and many tasks), else non-centred too. The threshold was 1 before: at 8 trials per cell
(cell ratio about 1.6) all-centred fits missed R-hat/ESS on sigma_cell (3 x 40 x 8: 4 of 5 fits; 10 x 1,000 x 8:
R-hat 1.018, ESS 388 with nutpie), while a non-centred cell level passed. Deciding the agent and task levels on their
own ratios was tried first and failed: with sparse cells (2 trials) a centred agent level gave 10-190
divergences even though its own ratio was 14-40 (the agent effect then trades off against the non-centred cell
effects), while all-non-centred gave 0-1; with 16 trials per cell all-centred gave 0 divergences and 1.5-7x the
ESS of all-non-centred. The per-level ratios are still computed and recorded. Pass
``parameterization={"task": "centered", ...}`` to override any level.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd
import pymc as pm
from scipy import stats

from agentstats.models.data import CountsData, prepare_counts
from agentstats.models.priors import DEFAULT_PRIORS, Priors

__all__ = [
    "CENTERED_MIN_RATIO",
    "SPLIT_MIN_RATIO",
    "Param",
    "agent_task_predictor",
    "choose_parameterization",
    "effect",
]

Param = Literal["centered", "non_centered"]
_LEVELS = ("agent", "task", "cell")
#: Median of a HalfNormal(1) distribution: the reference scale of a level is this times the prior scale.
_HALFNORMAL_MEDIAN = float(stats.halfnorm.median())
#: Centre every level when the median cell data/prior precision ratio is at least this.
CENTERED_MIN_RATIO = 2.5
#: Otherwise centre the agent and task levels (cells non-centred) when both their median ratios are at least this.
SPLIT_MIN_RATIO = 5.0


def _cell_information(data: CountsData) -> np.ndarray:
    """Fisher information of logit p per cell, ``n p~(1-p~)``, 0 for unobserved cells; shape (agent, task)."""
    p_t = (data.c + 0.5) / (data.n + 1.0)
    return data.n * p_t * (1.0 - p_t)


def choose_parameterization(
    data: CountsData | pd.DataFrame,
    priors: Priors = DEFAULT_PRIORS,
    cell_term: bool = True,
    override: dict[str, Param] | None = None,
) -> tuple[dict[str, Param], dict[str, float]]:
    """Choose centred or non-centred form per level from the data (rule in the module docstring).

    Parameters
    ----------
    data : CountsData or pandas.DataFrame
    priors : Priors
    cell_term : bool
        Whether the model has the per-cell term ``gamma``.
    override : dict, optional
        Level (``agent``, ``task``, ``cell``) -> ``"centered"`` / ``"non_centered"``, wins over the rule.

    Returns
    -------
    choice : dict of str to str
        Level -> ``"centered"`` or ``"non_centered"``.
    ratios : dict of str to float
        Level -> median data/prior precision ratio that drove the choice.

    Raises
    ------
    ValueError
        If ``override`` names an unknown level or form.
    """
    data = prepare_counts(data)
    info = _cell_information(data)
    obs = data.observed
    s = {lvl: _HALFNORMAL_MEDIAN * getattr(priors, f"sigma_{lvl}") for lvl in _LEVELS}
    if cell_term:
        through = np.where(obs, 1.0 / (s["cell"] ** 2 + 1.0 / np.where(obs, info, 1.0)), 0.0)
    else:
        through = info
    ratios: dict[str, float] = {}
    with np.errstate(invalid="ignore"):
        ratios["cell"] = float(np.median(info[obs] * s["cell"] ** 2)) if obs.any() else 0.0
        task_has = obs.any(axis=0)
        ratios["task"] = float(np.median(through.sum(axis=0)[task_has] * s["task"] ** 2)) if task_has.any() else 0.0
        agent_has = obs.any(axis=1)
        ratios["agent"] = (
            float(np.median(through.sum(axis=1)[agent_has] * s["agent"] ** 2)) if agent_has.any() else 0.0
        )
    # Measured rule (docs/models.md): the cell ratio decides every level together, except that well-informed
    # agent and task levels are centred over non-centred cells (many agents x many tasks, few trials per cell).
    form: Param = "centered" if ratios["cell"] >= CENTERED_MIN_RATIO else "non_centered"
    choice: dict[str, Param] = {lvl: form for lvl in _LEVELS}
    if form == "non_centered" and min(ratios["agent"], ratios["task"]) >= SPLIT_MIN_RATIO:
        choice["agent"] = choice["task"] = "centered"
    for lvl, form in (override or {}).items():
        if lvl not in _LEVELS:
            raise ValueError(f"parameterization: unknown level {lvl!r}; levels are {_LEVELS}")
        if form not in ("centered", "non_centered"):
            raise ValueError(f"parameterization[{lvl!r}]: must be 'centered' or 'non_centered', got {form!r}")
        choice[lvl] = form
    return choice, ratios


def effect(name: str, sigma, dims, form: Param, zero_sum: bool):
    """Declare an effect with scale ``sigma``: centred or non-centred, optionally sum-to-zero over its dims."""
    n_axes = len(dims) if isinstance(dims, tuple) else 1
    if form == "centered":
        if zero_sum:
            return pm.ZeroSumNormal(name, sigma=sigma, dims=dims, n_zerosum_axes=n_axes)
        return pm.Normal(name, 0.0, sigma, dims=dims)
    if zero_sum:
        z = pm.ZeroSumNormal(f"{name}_z", sigma=1.0, dims=dims, n_zerosum_axes=n_axes)
    else:
        z = pm.Normal(f"{name}_z", 0.0, 1.0, dims=dims)
    return pm.Deterministic(name, sigma * z, dims=dims)


def agent_task_predictor(priors: Priors, choice: dict[str, Param], single_agent: bool):
    """``mu + alpha[a] + beta[t]`` inside the current PyMC model context, shared by the crossed builders.

    Declares ``mu ~ Normal(mu_mu, mu_sigma)``, ``sigma_agent ~ HalfNormal``, ``alpha ~ ZeroSumNormal(sigma_agent)``
    (omitted for a single agent), ``sigma_task ~ HalfNormal`` and ``beta ~ ZeroSumNormal(sigma_task)``, each level
    centred or not as ``choice`` says. Returns the predictor, broadcastable to ``(agent, task)``.
    """
    eta = pm.Normal("mu", priors.mu_mu, priors.mu_sigma)
    if not single_agent:
        sigma_agent = pm.HalfNormal("sigma_agent", priors.sigma_agent)
        alpha = effect("alpha", sigma_agent, "agent", choice["agent"], zero_sum=True)
        eta = eta + alpha[:, None]
    sigma_task = pm.HalfNormal("sigma_task", priors.sigma_task)
    beta = effect("beta", sigma_task, "task", choice["task"], zero_sum=True)
    return eta + beta[None, :]



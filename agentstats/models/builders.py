"""Model builders: one function per pooling variant, all on per-cell counts.

Input: a counts table with columns ``agent, task_id, n, c`` (``n_missing`` optional and ignored), one row per
(agent, task) cell, ``n`` the non-missing trials and ``c`` the successes (the output of
``agentstats.counts.to_counts``). The likelihood is Binomial on the counts, the sufficient statistics of
exchangeable Bernoulli trials within a cell, so the cost grows with cells, not trials.

Variants
--------
``partial_pooling`` (default) :func:`build_partial_pooling`::

    logit p[a, t] = mu + alpha[a] + beta[t] + gamma[a, t]
    alpha ~ ZeroSumNormal(sigma_agent)   over agents
    beta  ~ ZeroSumNormal(sigma_task)    over tasks
    gamma ~ Normal(0, sigma_cell)        per cell (agent x task interaction)
    c[a, t] ~ Binomial(n[a, t], p[a, t])  for cells with n > 0

``additive`` :func:`build_additive`: the same without ``gamma``.
``no_pooling`` :func:`build_no_pooling`: ``p[a, t] ~ Beta(a0, b0)`` independently; its posterior is the closed
form :func:`no_pooling_posterior` (BDA3 sec. 2.4).

Sum-to-zero effects (``pm.ZeroSumNormal``) remove the additive ridge between ``mu``, ``alpha`` and ``beta``
(any constant can move between them without changing ``p``); ``sigma`` keeps its meaning as the population
standard deviation of the effect (the constraint moves the sample mean into ``mu``), so a new task's effect is
still ``Normal(0, sigma_task)``. This was the change that made the sampler converge in the measurements of
``shared/design/stack-notes.md``.

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

import hashlib
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pandas as pd
import pymc as pm
import pytensor.tensor as pt
from scipy import stats

from agentstats.counts import validate_counts
from agentstats.models.priors import DEFAULT_PRIORS, Priors

__all__ = [
    "MODEL_NAMES",
    "CountsData",
    "build_additive",
    "build_model",
    "build_no_pooling",
    "build_partial_pooling",
    "choose_parameterization",
    "counts_hash",
    "no_pooling_posterior",
    "prepare_counts",
]

Param = Literal["centered", "non_centered"]
MODEL_NAMES = ("partial_pooling", "additive", "no_pooling", "beta_binomial", "zoi_beta_binomial")
#: Models whose cell term is integrated out (Beta-Binomial likelihood; ``p`` drawn exactly after sampling).
BETA_BINOMIAL_MODELS = ("beta_binomial", "zoi_beta_binomial")
#: The model :func:`agentstats.models.fit.fit` uses unless told otherwise (evidence: docs/models.md, "Beta-Binomial").
DEFAULT_MODEL = "zoi_beta_binomial"
_LEVELS = ("agent", "task", "cell")
#: Median of a HalfNormal(1) distribution: the reference scale of a level is this times the prior scale.
_HALFNORMAL_MEDIAN = float(stats.halfnorm.median())
#: Centre every level when the median cell data/prior precision ratio is at least this.
CENTERED_MIN_RATIO = 2.5
#: Otherwise centre the agent and task levels (cells non-centred) when both their median ratios are at least this.
SPLIT_MIN_RATIO = 5.0


@dataclass(frozen=True)
class CountsData:
    """Validated counts as dense (agent, task) arrays.

    Attributes
    ----------
    agents, tasks : list of str
        Coordinates, in order of first appearance in the counts table.
    n, c : numpy.ndarray of int, shape (agent, task)
        Trials and successes; 0 for cells absent from the table.
    present : numpy.ndarray of bool, shape (agent, task)
        Cell had a row in the table (possibly with n = 0).
    hash : str
        SHA-256 of the canonical counts (see :func:`counts_hash`).
    """

    agents: list[str]
    tasks: list[str]
    n: np.ndarray
    c: np.ndarray
    present: np.ndarray
    hash: str = field(default="")

    @property
    def observed(self) -> np.ndarray:
        """Boolean (agent, task) mask of cells with n > 0 (the cells in the likelihood)."""
        return self.n > 0

    def obs_index(self) -> tuple[np.ndarray, np.ndarray]:
        """Agent and task integer indices of the observed cells (row-major order)."""
        return np.nonzero(self.observed)

    def n_min(self) -> np.ndarray:
        """Per agent, the smallest n over its observed cells (0 if it has none), shape (agent,)."""
        big = np.where(self.observed, self.n, np.iinfo(np.int64).max)
        out = big.min(axis=1)
        return np.where(self.observed.any(axis=1), out, 0)

    def n_max(self) -> np.ndarray:
        """Per agent, the largest n over its cells, shape (agent,)."""
        return self.n.max(axis=1)


def counts_hash(counts: pd.DataFrame) -> str:
    """SHA-256 hex digest of a counts table, independent of row order and extra columns.

    Parameters
    ----------
    counts : pandas.DataFrame
        Columns ``agent, task_id, n, c``.

    Returns
    -------
    str
    """
    df = counts[["agent", "task_id", "n", "c"]].copy()
    df["agent"] = df["agent"].astype(str)
    df["task_id"] = df["task_id"].astype(str)
    df = df.sort_values(["agent", "task_id"], kind="mergesort")
    text = df.to_csv(index=False, lineterminator="\n")
    return hashlib.sha256(text.encode()).hexdigest()


def prepare_counts(counts: pd.DataFrame) -> CountsData:
    """Validate a counts table and turn it into dense (agent, task) arrays.

    Parameters
    ----------
    counts : pandas.DataFrame
        One row per (agent, task) cell with columns ``agent``, ``task_id``, ``n`` (non-missing trials) and ``c``
        (successes); ``n_missing`` and other columns are ignored. Rows with ``n = 0`` are allowed.

    Returns
    -------
    CountsData

    Raises
    ------
    TypeError
        If ``counts`` is not a DataFrame.
    ValueError
        If the table is empty or fails :func:`agentstats.counts.validate_counts` (a missing column, a count that is
        not a non-negative integer, ``c > n``, a cell twice); the message names the row, agent, task and field.
    """
    if isinstance(counts, CountsData):
        return counts
    counts = validate_counts(counts, "counts")
    if len(counts) == 0:
        raise ValueError("counts: the table has no rows")
    n = counts["n"].to_numpy(dtype=np.int64)
    c = counts["c"].to_numpy(dtype=np.int64)
    agent = counts["agent"].astype(str).to_numpy()
    task = counts["task_id"].astype(str).to_numpy()
    agents = list(pd.unique(agent))
    tasks = list(pd.unique(task))
    ai = pd.Index(agents).get_indexer(agent)
    ti = pd.Index(tasks).get_indexer(task)
    n_mat = np.zeros((len(agents), len(tasks)), dtype=np.int64)
    c_mat = np.zeros_like(n_mat)
    present = np.zeros(n_mat.shape, dtype=bool)
    n_mat[ai, ti] = n
    c_mat[ai, ti] = c
    present[ai, ti] = True
    return CountsData(agents, tasks, n_mat, c_mat, present, counts_hash(counts))


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


def _effect(name: str, sigma, dims, form: Param, zero_sum: bool):
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
        alpha = _effect("alpha", sigma_agent, "agent", choice["agent"], zero_sum=True)
        eta = eta + alpha[:, None]
    sigma_task = pm.HalfNormal("sigma_task", priors.sigma_task)
    beta = _effect("beta", sigma_task, "task", choice["task"], zero_sum=True)
    return eta + beta[None, :]


def _build_crossed(
    counts,
    *,
    cell_term: bool,
    priors: Priors | None,
    parameterization: dict[str, Param] | None,
    name: str,
) -> pm.Model:
    data = prepare_counts(counts)
    priors = priors or DEFAULT_PRIORS
    n_agents, n_tasks = data.n.shape
    single_agent = n_agents == 1
    # With one agent, gamma[0, t] and beta[t] are the same thing: the cell term is dropped (beta carries it).
    has_cell = cell_term and not single_agent
    choice, ratios = choose_parameterization(data, priors, cell_term=has_cell, override=parameterization)
    ai, ti = data.obs_index()
    coords = {"agent": data.agents, "task": data.tasks, "cell": np.arange(ai.size)}
    with pm.Model(coords=coords) as model:
        n_obs = pm.Data("n_obs", data.n[ai, ti], dims="cell")
        eta = agent_task_predictor(priors, choice, single_agent)
        if has_cell:
            sigma_cell = pm.HalfNormal("sigma_cell", priors.sigma_cell)
            gamma = _effect("gamma", sigma_cell, ("agent", "task"), choice["cell"], zero_sum=False)
            eta = eta + gamma
        else:
            eta = eta + pt.zeros((n_agents, n_tasks))
        pm.Deterministic("p", pm.math.invlogit(eta), dims=("agent", "task"))
        pm.Binomial("c", n=n_obs, logit_p=eta[ai, ti], observed=data.c[ai, ti], dims="cell")
    model._agentstats = dict(
        model=name,
        parameterization={lvl: choice[lvl] for lvl in _LEVELS},
        parameterization_ratios=ratios,
        has_agent_effect=not single_agent,
        has_cell_effect=has_cell,
        priors=priors.as_dict(),
        data=data,
    )
    return model


def build_partial_pooling(
    counts: pd.DataFrame,
    *,
    priors: Priors | None = None,
    parameterization: dict[str, Param] | None = None,
) -> pm.Model:
    """Crossed agent x task logit-normal model with a per-cell interaction term (the default model).

    ``logit p[a,t] = mu + alpha[a] + beta[t] + gamma[a,t]``, Binomial likelihood on cells with n > 0 (module
    docstring; Gelman et al. BDA3 ch. 5 and 15). Cells with n = 0 or absent from the table stay in the ``task``
    / ``agent`` coordinates, so ``p`` has a posterior for them from the hierarchy.

    Parameters
    ----------
    counts : pandas.DataFrame
        Columns ``agent, task_id, n, c`` (see :func:`prepare_counts`).
    priors : Priors, optional
        Default :data:`agentstats.models.priors.DEFAULT_PRIORS`.
    parameterization : dict, optional
        Override of the data-driven centred/non-centred choice per level (``agent``, ``task``, ``cell``).

    Returns
    -------
    pymc.Model
        Coordinates ``agent``, ``task``, ``cell`` (observed cells); free variables ``mu``, ``sigma_agent``,
        ``alpha``, ``sigma_task``, ``beta``, ``sigma_cell``, ``gamma`` (``*_z`` when non-centred); deterministic
        ``p`` with dims ``(agent, task)``; observed ``c`` with dim ``cell``. With one agent, ``alpha``,
        ``sigma_agent``, ``gamma`` and ``sigma_cell`` are absent (the cell term is not identifiable from the task
        effect; ``sigma_task`` then holds the total between-task spread).

    Raises
    ------
    ValueError
        On invalid counts (see :func:`prepare_counts`) or parameterization.
    """
    return _build_crossed(
        counts, cell_term=True, priors=priors, parameterization=parameterization, name="partial_pooling"
    )


def build_additive(
    counts: pd.DataFrame,
    *,
    priors: Priors | None = None,
    parameterization: dict[str, Param] | None = None,
) -> pm.Model:
    """Additive crossed model ``logit p[a,t] = mu + alpha[a] + beta[t]`` (no per-cell term).

    Offered for comparison: on real benchmark runs it is overconfident because outcomes within a cell are more
    alike than it allows (check with :func:`agentstats.models.diagnostics.posterior_predictive_cells`).
    Parameters, returns and errors as :func:`build_partial_pooling`, without ``gamma`` / ``sigma_cell``.
    """
    return _build_crossed(
        counts, cell_term=False, priors=priors, parameterization=parameterization, name="additive"
    )


def build_no_pooling(counts: pd.DataFrame, *, priors: Priors | None = None) -> pm.Model:
    """Independent ``p[a,t] ~ Beta(a0, b0)`` per cell with a Binomial likelihood (no pooling).

    Its posterior is ``Beta(a0 + c, b0 + n - c)`` per cell (BDA3 sec. 2.4), available without MCMC from
    :func:`no_pooling_posterior`; the PyMC model exists so that it can be sampled and compared like the others.

    Parameters
    ----------
    counts : pandas.DataFrame
        Columns ``agent, task_id, n, c``.
    priors : Priors, optional
        ``beta_a`` and ``beta_b`` are used.

    Returns
    -------
    pymc.Model
        Free variable ``p`` with dims ``(agent, task)``, observed ``c`` with dim ``cell``.
    """
    data = prepare_counts(counts)
    priors = priors or DEFAULT_PRIORS
    ai, ti = data.obs_index()
    coords = {"agent": data.agents, "task": data.tasks, "cell": np.arange(ai.size)}
    with pm.Model(coords=coords) as model:
        n_obs = pm.Data("n_obs", data.n[ai, ti], dims="cell")
        p = pm.Beta("p", priors.beta_a, priors.beta_b, dims=("agent", "task"))
        pm.Binomial("c", n=n_obs, p=p[ai, ti], observed=data.c[ai, ti], dims="cell")
    model._agentstats = dict(
        model="no_pooling",
        parameterization={},
        parameterization_ratios={},
        has_agent_effect=False,
        has_cell_effect=False,
        priors=priors.as_dict(),
        data=data,
    )
    return model


def no_pooling_posterior(counts: pd.DataFrame, *, priors: Priors | None = None) -> pd.DataFrame:
    """Closed-form posterior of the no-pooling model: ``p[a,t] | data ~ Beta(a0 + c, b0 + n - c)``.

    Source: Beta-Binomial conjugacy, Gelman et al. BDA3 sec. 2.4. The posterior mean is
    ``(a0 + c) / (a0 + b0 + n)``.

    Parameters
    ----------
    counts : pandas.DataFrame
        Columns ``agent, task_id, n, c``.
    priors : Priors, optional
        ``beta_a`` (a0) and ``beta_b`` (b0); default Beta(1, 1).

    Returns
    -------
    pandas.DataFrame
        One row per input cell: ``agent, task_id, n, c, alpha_post, beta_post, mean, sd``.
    """
    data = prepare_counts(counts)
    priors = priors or DEFAULT_PRIORS
    ai, ti = np.nonzero(data.present)
    n = data.n[ai, ti]
    c = data.c[ai, ti]
    a = priors.beta_a + c
    b = priors.beta_b + n - c
    dist = stats.beta(a, b)
    return pd.DataFrame(
        dict(
            agent=np.asarray(data.agents, dtype=object)[ai],
            task_id=np.asarray(data.tasks, dtype=object)[ti],
            n=n,
            c=c,
            alpha_post=a,
            beta_post=b,
            mean=dist.mean(),
            sd=dist.std(),
        )
    )


_BUILDERS = {
    "partial_pooling": build_partial_pooling,
    "additive": build_additive,
    "no_pooling": build_no_pooling,
}


def build_model(counts: pd.DataFrame, model: str = DEFAULT_MODEL, **kwargs) -> pm.Model:
    """Build a model by name.

    Names: ``partial_pooling``, ``additive``, ``no_pooling``, ``beta_binomial``, ``zoi_beta_binomial``.

    ``beta_binomial`` and ``zoi_beta_binomial`` are :func:`agentstats.models.beta_binomial.build_beta_binomial`
    (``inflated=False`` / ``True``; imported here, lazily: that module imports this one).

    Raises
    ------
    ValueError
        If ``model`` is not one of :data:`MODEL_NAMES`.
    """
    if model in BETA_BINOMIAL_MODELS:
        from agentstats.models.beta_binomial import build_beta_binomial

        return build_beta_binomial(counts, inflated=model == "zoi_beta_binomial", **kwargs)
    if model not in _BUILDERS:
        raise ValueError(f"model must be one of {MODEL_NAMES}, got {model!r}")
    return _BUILDERS[model](counts, **kwargs)

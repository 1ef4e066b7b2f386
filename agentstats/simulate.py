"""Simulated agent runs with known truth.

The generating model is the crossed logit-normal model that :mod:`agentstats.models` fits::

    logit p[a, t] = mu + alpha[a] + beta[t] + gamma[a, t]
    beta[t]     ~ Normal(0, sigma_task)     task difficulty
    gamma[a, t] ~ Normal(0, sigma_cell)     agent x task interaction
    y[a, t, i]  ~ Bernoulli(p[a, t])        trial i = 0 .. n_trials-1

with fixed agent effects ``alpha`` (given, not drawn, so the example agents have a stated ranking). Each trial is
independently an infrastructure error with probability ``infra_error_rate`` (missing, never a failure) and,
among the rest, an agent error (a failure) with probability ``agent_error_rate``.

The committed example data in ``data/`` is made by :func:`simulate_trials` with the defaults below
(``agentstats simulate``), so the truth behind it is known and printed by :func:`true_suite_pass_k`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import expit

from agentstats.records.trial import Status, Trial

__all__ = ["SimulatedRuns", "simulate_trials", "true_suite_pass_k"]

DEFAULT_AGENTS: dict[str, float] = {"baseline": 0.0, "candidate": 0.6, "experimental": -0.4}


@dataclass(frozen=True)
class SimulatedRuns:
    """Simulated trials and the truth behind them.

    Attributes
    ----------
    trials : list of Trial
        ``n_agents * n_tasks * n_trials`` records, keyed ``(agent, task_id, trial)``.
    p : pandas.DataFrame
        True success probability of a non-missing trial per cell, ``(1 - agent_error_rate) * p[a, t]``;
        index ``task_id``, one column per agent (shape ``(task, agent)``).
    params : dict
        The generating parameters (``mu``, ``alpha``, ``sigma_task``, ``sigma_cell``, rates, ``seed``).
    """

    trials: list[Trial]
    p: pd.DataFrame
    params: dict


def simulate_trials(
    agents: dict[str, float] | None = None,
    n_tasks: int = 40,
    n_trials: int = 5,
    *,
    mu: float = 0.3,
    sigma_task: float = 1.5,
    sigma_cell: float = 0.8,
    infra_error_rate: float = 0.02,
    agent_error_rate: float = 0.03,
    seed: int = 20261130,
) -> SimulatedRuns:
    """Draw trials for agents x tasks x trials from the crossed logit-normal model (module docstring).

    Parameters
    ----------
    agents : dict of str to float, optional
        Agent name -> fixed agent effect ``alpha`` on the logit scale. Default: three agents
        ``baseline`` (0.0), ``candidate`` (+0.6), ``experimental`` (-0.4).
    n_tasks, n_trials : int
        Tasks per agent (shared across agents) and trials per (agent, task) cell.
    mu, sigma_task, sigma_cell : float
        Intercept and standard deviations (logit scale) of task and cell effects.
    infra_error_rate, agent_error_rate : float
        Probabilities, in [0, 1), that a trial is an infrastructure error (missing) or an agent error (failure).
    seed : int
        Seed of the ``numpy.random.Generator``; same seed, same trials.

    Returns
    -------
    SimulatedRuns

    Raises
    ------
    ValueError
        If counts are not positive or rates are outside [0, 1).
    """
    agents = dict(DEFAULT_AGENTS if agents is None else agents)
    if not agents:
        raise ValueError("agents: need at least one agent")
    if n_tasks < 1 or n_trials < 1:
        raise ValueError(f"n_tasks and n_trials must be >= 1, got {n_tasks} and {n_trials}")
    for name, rate in (("infra_error_rate", infra_error_rate), ("agent_error_rate", agent_error_rate)):
        if not 0.0 <= rate < 1.0:
            raise ValueError(f"{name} must be in [0, 1), got {rate}")
    if sigma_task < 0 or sigma_cell < 0:
        raise ValueError("sigma_task and sigma_cell must be >= 0")

    rng = np.random.default_rng(seed)
    names = list(agents)
    alpha = np.array([agents[a] for a in names])
    beta = rng.normal(0.0, sigma_task, size=n_tasks)
    gamma = rng.normal(0.0, sigma_cell, size=(len(names), n_tasks))
    p = expit(mu + alpha[:, None] + beta[None, :] + gamma)  # (agent, task)
    task_ids = [f"task-{t:03d}" for t in range(n_tasks)]

    u_success = rng.random(size=(*p.shape, n_trials))
    u_infra = rng.random(size=(*p.shape, n_trials))
    u_agent = rng.random(size=(*p.shape, n_trials))
    trials: list[Trial] = []
    for a, agent in enumerate(names):
        for t, task_id in enumerate(task_ids):
            for i in range(n_trials):
                if u_infra[a, t, i] < infra_error_rate:
                    status, success = Status.infra_error, None
                elif u_agent[a, t, i] < agent_error_rate:
                    status, success = Status.agent_error, False
                else:
                    status, success = Status.completed, bool(u_success[a, t, i] < p[a, t])
                trials.append(
                    Trial(agent=agent, task_id=task_id, trial=i, status=status, success=success)
                )
    # Success probability of a non-missing trial: an agent error is a failure.
    p_success = (1.0 - agent_error_rate) * p
    p_df = pd.DataFrame(p_success.T, index=pd.Index(task_ids, name="task_id"), columns=names)
    params = dict(
        mu=mu,
        alpha=agents,
        sigma_task=sigma_task,
        sigma_cell=sigma_cell,
        infra_error_rate=infra_error_rate,
        agent_error_rate=agent_error_rate,
        n_tasks=n_tasks,
        n_trials=n_trials,
        seed=seed,
    )
    return SimulatedRuns(trials=trials, p=p_df, params=params)


def true_suite_pass_k(p: pd.DataFrame, k: Sequence[int] = range(1, 9)) -> pd.DataFrame:
    """Compute the true in-sample suite pass@k and pass^k from per-cell probabilities.

    pass@k = mean_t [1 - (1 - p[a,t])^k] and pass^k = mean_t p[a,t]^k: means over tasks of per-task values
    (never functions of the pooled mean; Chen et al. 2021, arXiv 2107.03374; Yao et al. 2024, arXiv 2406.12045).

    Parameters
    ----------
    p : pandas.DataFrame
        Shape ``(task, agent)`` as in :attr:`SimulatedRuns.p`.
    k : sequence of int

    Returns
    -------
    pandas.DataFrame
        Columns ``agent, k, pass_at_k, pass_hat_k``.
    """
    rows = []
    for agent in p.columns:
        pa = p[agent].to_numpy()
        for kk in k:
            rows.append(
                dict(
                    agent=agent,
                    k=int(kk),
                    pass_at_k=float(np.mean(1.0 - (1.0 - pa) ** kk)),
                    pass_hat_k=float(np.mean(pa**kk)),
                )
            )
    return pd.DataFrame(rows)


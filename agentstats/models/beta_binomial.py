"""Crossed agent x task Beta-Binomial model: the per-cell term integrated out analytically.

Model (``beta_binomial``)::

    logit m[a, t] = mu + alpha[a] + beta[t]
    alpha ~ ZeroSumNormal(sigma_agent)    over agents
    beta  ~ ZeroSumNormal(sigma_task)     over tasks
    rho   ~ Beta(rho_a, rho_b)            intra-cell correlation, phi = (1 - rho) / rho
    p[a, t] ~ Beta(m phi, (1 - m) phi)    per cell (not sampled; see below)
    c[a, t] ~ BetaBinomial(n, m phi, (1 - m) phi)   for cells with n > 0

This is the "Beta-Binomial likelihood per cell" form of the per-cell (agent x task) term of issue 3: the cell's
success probability varies around the additive prediction ``m`` with a Beta distribution of mean ``m`` and
concentration ``phi``; two trials of one cell are correlated with ``rho = 1 / (1 + phi)`` (Skellam 1948, JRSS B
10(2); Williams 1975, Biometrics 31(4); BDA3 sec. 5.3). Integrating ``p`` out gives the Beta-Binomial likelihood,
so the sampler sees only ``mu, alpha, beta, sigma_agent, sigma_task, rho``: cost and geometry scale with agents +
tasks, not cells.

Per-cell ``p`` draws are exact given each posterior draw of the hyperparameters, from the conjugate conditional
``p[a, t] | c, m, phi ~ Beta(m phi + c, (1 - m) phi + n - c)`` (BDA3 sec. 2.4 / 5.3); cells with n = 0 draw from
``Beta(m phi, (1 - m) phi)``. :func:`conditional_p_draws` makes them and :func:`agentstats.models.fit.fit` stores them
as posterior variable ``p`` (dims ``chain, draw, agent, task``), so downstream code reads ``p`` as for the other
models.

Parameterization: the agent and task levels are centred or non-centred by
:func:`agentstats.models.builders.choose_parameterization` (its rule for those levels, with the cell-level noise
taken into account; the cell level itself no longer exists).

With a single agent the cell term is not identifiable from the task effect (as in ``partial_pooling``): ``rho`` is
dropped and the model is ``logit p[0, t] = mu + beta[t]`` with a Binomial likelihood (``p`` then a deterministic).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pymc as pm
import pytensor.tensor as pt
from scipy.special import expit

from agentstats.models.builders import Param, agent_task_predictor, choose_parameterization, prepare_counts
from agentstats.models.priors import DEFAULT_PRIORS, Priors

__all__ = ["build_beta_binomial", "conditional_p_draws", "linear_predictor"]


def build_beta_binomial(
    counts: pd.DataFrame,
    *,
    priors: Priors | None = None,
    parameterization: dict[str, Param] | None = None,
) -> pm.Model:
    """Crossed agent x task model with a Beta-Binomial likelihood per cell (module docstring).

    Parameters
    ----------
    counts : pandas.DataFrame
        Columns ``agent, task_id, n, c`` (see :func:`agentstats.models.builders.prepare_counts`).
    priors : Priors, optional
        Default :data:`agentstats.models.priors.DEFAULT_PRIORS` (``rho_a``, ``rho_b`` for ``rho``).
    parameterization : dict, optional
        Override of the centred/non-centred choice of the ``agent`` / ``task`` levels.

    Returns
    -------
    pymc.Model
        Coordinates ``agent``, ``task``, ``cell`` (observed cells); free variables ``mu``, ``sigma_agent``,
        ``alpha``, ``sigma_task``, ``beta`` (``*_z`` when non-centred), ``rho``; deterministic ``phi``; observed
        ``c`` with dim ``cell``. No ``p``: :func:`agentstats.models.fit.fit` adds exact conditional draws of it.
        With one agent: no ``alpha``, ``sigma_agent``, ``rho``, ``phi``; deterministic ``p`` (agent, task).

    Raises
    ------
    ValueError
        On invalid counts or parameterization.
    """
    data = prepare_counts(counts)
    priors = priors or DEFAULT_PRIORS
    n_agents, n_tasks = data.n.shape
    single_agent = n_agents == 1
    choice, ratios = choose_parameterization(data, priors, cell_term=not single_agent, override=parameterization)
    ai, ti = data.obs_index()
    coords = {"agent": data.agents, "task": data.tasks, "cell": np.arange(ai.size)}
    with pm.Model(coords=coords) as model:
        n_obs = pm.Data("n_obs", data.n[ai, ti], dims="cell")
        eta = agent_task_predictor(priors, choice, single_agent) + pt.zeros((n_agents, n_tasks))
        eta_obs = eta[ai, ti]
        if single_agent:
            pm.Deterministic("p", pm.math.invlogit(eta), dims=("agent", "task"))
            pm.Binomial("c", n=n_obs, logit_p=eta_obs, observed=data.c[ai, ti], dims="cell")
        else:
            rho = pm.Beta("rho", priors.rho_a, priors.rho_b)
            phi = pm.Deterministic("phi", (1.0 - rho) / rho)
            # m phi and (1 - m) phi via sigmoid(+-eta): no cancellation when m is near 0 or 1.
            pm.BetaBinomial(
                "c",
                n=n_obs,
                alpha=phi * pm.math.sigmoid(eta_obs),
                beta=phi * pm.math.sigmoid(-eta_obs),
                observed=data.c[ai, ti],
                dims="cell",
            )
    model._agentstats = dict(  # noqa: SLF001 - metadata read by fit()
        model="beta_binomial",
        parameterization={lvl: choice[lvl] for lvl in ("agent", "task")},
        parameterization_ratios={k: ratios[k] for k in ("agent", "task")},
        has_agent_effect=not single_agent,
        has_cell_effect=not single_agent,
        priors=priors.as_dict(),
        data=data,
    )
    return model


def linear_predictor(mu: np.ndarray, alpha: np.ndarray | None, beta: np.ndarray) -> np.ndarray:
    """``eta[..., a, t] = mu + alpha[a] + beta[t]`` for stacked draws.

    Parameters
    ----------
    mu : numpy.ndarray, shape S
    alpha : numpy.ndarray, shape S + (agent,), or None (no agent effect; one agent)
    beta : numpy.ndarray, shape S + (task,)

    Returns
    -------
    numpy.ndarray, shape S + (agent, task)
    """
    eta = mu[..., None, None] + beta[..., None, :]
    if alpha is not None:
        eta = eta + alpha[..., :, None]
    return eta


def conditional_p_draws(
    eta: np.ndarray, phi: np.ndarray, n: np.ndarray, c: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """One exact draw of every cell's ``p`` per posterior draw, from ``Beta(m phi + c, (1 - m) phi + n - c)``.

    Conjugacy of the Beta prior ``Beta(m phi, (1 - m) phi)`` with the Binomial likelihood of the cell's ``c`` of
    ``n`` successes (BDA3 sec. 2.4); ``m = expit(eta)``. Cells with ``n = 0`` draw from the prior.

    Parameters
    ----------
    eta : numpy.ndarray, shape S + (agent, task)
        Linear predictor per draw (:func:`linear_predictor`).
    phi : numpy.ndarray, shape S
        Concentration per draw.
    n, c : numpy.ndarray of int, shape (agent, task)
    rng : numpy.random.Generator

    Returns
    -------
    numpy.ndarray of float, shape S + (agent, task), values in [0, 1]
    """
    phi = np.asarray(phi, float)[..., None, None]
    a = phi * expit(eta) + c
    b = phi * expit(-eta) + (n - c)
    # numpy's Beta sampler needs a, b > 0: an underflowed 0 (|eta| > ~745) becomes the smallest positive float.
    tiny = np.finfo(float).tiny
    return rng.beta(np.maximum(a, tiny), np.maximum(b, tiny))

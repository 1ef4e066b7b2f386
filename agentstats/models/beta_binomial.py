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

Zero/one-inflated variant (``zoi_beta_binomial``)::

    det_share ~ Beta(det_a, det_b)        share of deterministic cells
    p[a, t] = 1 with prob. det_share * m, 0 with prob. det_share * (1 - m),
              ~ Beta(m phi, (1 - m) phi) with prob. 1 - det_share

A deterministic cell always (prob. ``m``) or never succeeds; the cell mean stays ``m``. This is the zero-or-one
inflated Beta of Ospina & Ferrari (2012, Comput. Stat. Data Anal. 56(6), 1609-1623) with its inflation tied to the
cell mean, put under the Binomial and marginalized: a cell's likelihood is
``det_share * [m 1{c = n} + (1 - m) 1{c = 0}] + (1 - det_share) * BetaBinomial(c | n, m phi, (1 - m) phi)``. Real
agent runs have many cells that always or never succeed (METR: 63 % of cells with >= 8 runs); a Beta cannot put
mass exactly at 0 or 1, so with few trials per cell it shrinks an always-solved cell's ``p`` below 1 and biases
pass^k for large k low (docs/validation.md). ``p`` draws: the component is drawn from its conditional
probability given ``c``, then ``p`` is 0/1 or drawn from the conjugate Beta (:func:`conditional_p_draws`).

Likelihood evaluation: the Beta-Binomial log-probability is written with rising factorials (Pochhammer symbols,
``Gamma(x + j) / Gamma(x) = x (x + 1) ... (x + j - 1)``; Abramowitz & Stegun 1964, 6.1.22),
``log B(a + c, b + n - c) - log B(a, b) = sum_{i<c} log(a + i) + sum_{j<n-c} log(b + j) - sum_{l<n} log(phi + l)``
(``a + b = phi``; the constant ``log C(n, c)`` is dropped from the sampled density and kept in the stored
``log_likelihood``). When the data average at most :data:`RISING_MAX_MEAN_TRIALS` trials per cell the sums are
taken term by term (one ``log`` per trial, about 4x cheaper per gradient than PyMC's ``BetaBinomial`` at 8 trials
per cell, docs/benchmarks.md); above that, per cell with ``gammaln`` (cost per cell, not per trial).

With a single agent the cell term is not identifiable from the task effect (as in ``partial_pooling``): ``rho`` is
dropped and the model is ``logit p[0, t] = mu + beta[t]`` with a Binomial likelihood (``p`` then a deterministic).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pymc as pm
import pytensor.tensor as pt
from scipy.special import expit, log_expit

from agentstats.models.builders import (
    BETA_BINOMIAL_MODELS,
    Param,
    agent_task_predictor,
    choose_parameterization,
    prepare_counts,
)
from agentstats.models.priors import DEFAULT_PRIORS, Priors

__all__ = [
    "BETA_BINOMIAL_MODELS",
    "RISING_MAX_MEAN_TRIALS",
    "beta_binomial_logp",
    "build_beta_binomial",
    "cell_log_likelihood",
    "conditional_p_draws",
    "linear_predictor",
]

#: Mean trials per observed cell up to which the log-likelihood is summed one ``log`` per trial (module docstring);
#: the crossover with the per-cell ``gammaln`` form, estimated from the per-gradient costs measured at 8 trials per
#: cell (about 4 ns per trial against about 110 ns per cell; docs/benchmarks.md), is near 28.
RISING_MAX_MEAN_TRIALS = 24


def _rising_log_sum(x, counts: np.ndarray, per_trial: bool):
    """``sum over cells of log Gamma(x + counts) - log Gamma(x)`` (a pytensor scalar), ``x`` a tensor (cell,).

    ``per_trial``: as ``sum_{i < counts} log(x + i)``, one ``log`` per unit of ``counts`` (gathered by index).
    """
    counts = np.asarray(counts, dtype=np.int64)
    if not per_trial:
        return (pt.gammaln(x + counts.astype(float)) - pt.gammaln(x)).sum()
    idx = np.repeat(np.arange(counts.size), counts)
    if idx.size == 0:
        return pt.constant(0.0)
    offset = (np.arange(idx.size) - np.repeat(np.cumsum(counts) - counts, counts)).astype(float)
    return pt.log(x[idx] + offset).sum()


def _log_rising_phi(phi, n: np.ndarray, per_trial: bool):
    """``log Gamma(phi + n) - log Gamma(phi)`` per cell (tensor (cell,)), ``phi`` a scalar tensor."""
    n = np.asarray(n, dtype=np.int64)
    values, inverse = np.unique(n, return_inverse=True)
    if per_trial:
        steps = pt.concatenate([pt.zeros(1), pt.cumsum(pt.log(phi + np.arange(values.max(), dtype=float)))])
        return steps[values][inverse]
    return (pt.gammaln(phi + values.astype(float)) - pt.gammaln(phi))[inverse]


def beta_binomial_logp(eta, phi, n: np.ndarray, c: np.ndarray, det_share=None):
    """Sum the log-likelihood of the cells, Beta-Binomial or zero/one-inflated (a pytensor scalar).

    Parameters
    ----------
    eta : pytensor tensor, shape (cell,)
        Logit of each cell's mean ``m``.
    phi : pytensor scalar
        Concentration of the cells' ``Beta(m phi, (1 - m) phi)``.
    n, c : numpy.ndarray of int, shape (cell,)
        Trials and successes per observed cell (``n > 0``).
    det_share : pytensor scalar, optional
        Share of deterministic cells (``zoi_beta_binomial``); ``None`` for the plain Beta-Binomial.

    Returns
    -------
    pytensor scalar
        ``sum_cells log P(c | n, ...)`` without the constant ``sum log C(n, c)`` (module docstring: rising
        factorials for Beta-Binomial terms; Ospina & Ferrari 2012 for the inflation).
    """
    n = np.asarray(n, dtype=np.int64)
    c = np.asarray(c, dtype=np.int64)
    per_trial = bool(n.size) and float(n.mean()) <= RISING_MAX_MEAN_TRIALS
    a = phi * pm.math.sigmoid(eta)  # m phi and (1 - m) phi via sigmoid(+-eta): no cancellation near 0 or 1
    b = phi * pm.math.sigmoid(-eta)
    if det_share is None:
        return (
            _rising_log_sum(a, c, per_trial)
            + _rising_log_sum(b, n - c, per_trial)
            - _log_rising_phi(phi, n, per_trial).sum()
        )
    extreme = (c == 0) | (c == n)
    mid = np.flatnonzero(~extreme)
    ext = np.flatnonzero(extreme)
    total = pt.constant(0.0)
    if mid.size:
        # Cells with 0 < c < n cannot be deterministic: (1 - det_share) * BetaBinomial.
        total = (
            mid.size * pt.log1p(-det_share)
            + _rising_log_sum(a[mid], c[mid], per_trial)
            + _rising_log_sum(b[mid], n[mid] - c[mid], per_trial)
            - _log_rising_phi(phi, n[mid], per_trial).sum()
        )
    if ext.size:
        # All-or-nothing cells (c = n > 0 or c = 0 < n), with x = a (c = n) or b (c = 0) = phi * P(outcome):
        #   deterministic term: log m or log(1 - m) = log x - log phi
        #   Beta-Binomial term: log BB = log x + sum_{1 <= i < n} log(x + i) - sum_{l < n} log(phi + l)
        # so the mixture is log x + logaddexp(log det_share - log phi, log(1 - det_share) + rest).
        up = c[ext] == n[ext]
        x = pt.switch(up, a[ext], b[ext])
        n_e = n[ext]
        log_x = pt.log(x)
        k_max = int(n_e.max())
        # Dense (cell x k_max) rising factorials only while padding at most doubles the work (skewed n: gammaln).
        if per_trial and k_max * n_e.size <= 2 * int(n_e.sum()):
            if k_max > 1:
                mask = (np.arange(1, k_max)[None, :] < n_e[:, None]).astype(float)
                rest = (pt.log(x[:, None] + np.arange(1, k_max, dtype=float)[None, :]) * mask).sum(axis=1)
            else:
                rest = pt.zeros_like(x)
        else:
            rest = pt.gammaln(x + n_e.astype(float)) - pt.gammaln(x) - log_x
        rest = rest - _log_rising_phi(phi, n_e, per_trial)
        total = total + log_x.sum() + pt.logaddexp(
            pt.log(det_share) - pt.log(phi), pt.log1p(-det_share) + rest
        ).sum()
    return total


def build_beta_binomial(
    counts: pd.DataFrame,
    *,
    priors: Priors | None = None,
    parameterization: dict[str, Param] | None = None,
    inflated: bool = False,
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
    inflated : bool
        Zero/one-inflated cells (model ``zoi_beta_binomial``, free variable ``det_share``; module docstring).

    Returns
    -------
    pymc.Model
        Coordinates ``agent``, ``task``, ``cell`` (observed cells); free variables ``mu``, ``sigma_agent``,
        ``alpha``, ``sigma_task``, ``beta`` (``*_z`` when non-centred), ``rho`` (and ``det_share``); deterministic
        ``phi``; the cells' log-likelihood as the potential ``c_loglik`` (:func:`beta_binomial_logp`). No ``p``:
        :func:`agentstats.models.fit.fit` adds exact conditional draws of it. With one agent (cell term not
        identifiable): no ``alpha``, ``sigma_agent``, ``rho``, ``phi``, ``det_share``; observed Binomial ``c``
        (dim ``cell``) and deterministic ``p`` (agent, task).

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
            det_share = pm.Beta("det_share", priors.det_a, priors.det_b) if inflated else None
            pm.Potential("c_loglik", beta_binomial_logp(eta_obs, phi, data.n[ai, ti], data.c[ai, ti], det_share))
    model._agentstats = dict(
        model="zoi_beta_binomial" if inflated else "beta_binomial",
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


def _expand(x: np.ndarray | None, cell_ndim: int) -> np.ndarray | None:
    """Per-draw array (shape S) made broadcastable against S + cells."""
    return None if x is None else np.asarray(x, float).reshape(np.shape(x) + (1,) * cell_ndim)


def _log_bb_and_det(eta, phi, n, c, det_share):
    """Per-cell log Beta-Binomial pmf (with ``log C(n, c)``) and, with ``det_share``, the two mixture terms.

    ``phi`` and ``det_share`` have shape S; ``eta`` S + cells; ``n``, ``c`` cells.
    """
    from scipy.stats import betabinom

    phi = _expand(phi, np.ndim(n))
    tiny = np.finfo(float).tiny
    a = np.maximum(phi * expit(eta), tiny)
    b = np.maximum(phi * expit(-eta), tiny)
    log_bb = betabinom.logpmf(c, n, a, b)
    if det_share is None:
        return log_bb, None, None
    lam = _expand(det_share, np.ndim(n))
    with np.errstate(divide="ignore"):
        # log P(c | deterministic): log m if c = n, log(1 - m) if c = 0 (both when n = 0: probability 1), else -inf.
        log_det = np.where(c == n, log_expit(eta), np.where(c == 0, log_expit(-eta), -np.inf))
        log_det = np.where(n == 0, 0.0, log_det)
        return log_bb, np.log(lam) + log_det, np.log1p(-lam) + log_bb


def cell_log_likelihood(
    eta: np.ndarray, phi: np.ndarray, n: np.ndarray, c: np.ndarray, det_share: np.ndarray | None = None
) -> np.ndarray:
    """Log-likelihood of each cell's count with ``p`` integrated out (for PSIS-LOO).

    ``log BetaBinomial(c | n, m phi, (1 - m) phi)``, or for ``zoi_beta_binomial`` the log of
    ``det_share [m 1{c = n} + (1 - m) 1{c = 0}] + (1 - det_share) BetaBinomial(c | ...)`` (module docstring).

    Parameters
    ----------
    eta : numpy.ndarray, shape S + cells
        Logit of the cell means (``cells`` any shape, e.g. ``(agent, task)`` or ``(cell,)``).
    phi, det_share : numpy.ndarray, shape S
    n, c : numpy.ndarray of int, shape cells

    Returns
    -------
    numpy.ndarray, shape S + cells
        Natural-log probabilities, including ``log C(n, c)``.
    """
    log_bb, l_det, l_bb = _log_bb_and_det(np.asarray(eta, float), phi, n, c, det_share)
    if det_share is None:
        return log_bb
    return np.logaddexp(l_det, l_bb)


def conditional_p_draws(
    eta: np.ndarray,
    phi: np.ndarray,
    n: np.ndarray,
    c: np.ndarray,
    rng: np.random.Generator,
    det_share: np.ndarray | None = None,
) -> np.ndarray:
    """One exact draw of every cell's ``p`` per posterior draw, from ``Beta(m phi + c, (1 - m) phi + n - c)``.

    Conjugacy of the Beta prior ``Beta(m phi, (1 - m) phi)`` with the Binomial likelihood of the cell's ``c`` of
    ``n`` successes (BDA3 sec. 2.4); ``m = expit(eta)``. Cells with ``n = 0`` draw from the prior.

    With ``det_share`` (``zoi_beta_binomial``) the cell is first assigned to a component with its conditional
    probability given ``c`` (Bayes' rule on the two mixture terms of :func:`cell_log_likelihood`): deterministic
    cells get ``p = 1`` (``c = n > 0``) or ``0`` (``c = 0 < n``), unattempted deterministic cells ``p = 1`` with
    probability ``m``; the others draw from the Beta above.

    Parameters
    ----------
    eta : numpy.ndarray, shape S + (agent, task)
        Linear predictor per draw (:func:`linear_predictor`).
    phi : numpy.ndarray, shape S
        Concentration per draw.
    n, c : numpy.ndarray of int, shape (agent, task)
    rng : numpy.random.Generator
    det_share : numpy.ndarray, shape S, optional
        Share of deterministic cells per draw.

    Returns
    -------
    numpy.ndarray of float, shape S + (agent, task), values in [0, 1]
    """
    phi_c = _expand(phi, 2)
    a = phi_c * expit(eta) + c
    b = phi_c * expit(-eta) + (n - c)
    # numpy's Beta sampler needs a, b > 0: an underflowed 0 (|eta| > ~745) becomes the smallest positive float.
    tiny = np.finfo(float).tiny
    p = rng.beta(np.maximum(a, tiny), np.maximum(b, tiny))
    if det_share is None:
        return p
    _, l_det, l_bb = _log_bb_and_det(eta, phi, n, c, det_share)
    with np.errstate(invalid="ignore"):
        prob_det = np.exp(l_det - np.logaddexp(l_det, l_bb))
    prob_det = np.nan_to_num(prob_det, nan=0.0)
    is_det = rng.random(p.shape) < prob_det
    u = rng.random(p.shape)
    det_value = np.where(n == 0, u < expit(eta), c == n).astype(float)
    return np.where(is_det, det_value, p)

"""The Beta-Binomial families' likelihood in PyTensor.

The observed ``c`` as a ``pm.CustomDist`` (log-pmf by the one-pass kernel, by ``gammaln``, or through a judge's
channel) and the per-agent pooled probabilities.

The equations, the kernel's rising-factorial form and its measured speed are in the package docstring
(:mod:`agentstats.models.families.beta_binomial`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
from scipy.special import gammaln

from agentstats.models._bb_kernel import cell_logp
from agentstats.models.misclassification import _log_comb as _log_comb_np
from agentstats.models.misclassification import channel_table, judged_log_likelihood, judged_probability
from agentstats.models.parameterization import Param

__all__ = ["RISING_MAX_MEAN_TRIALS", "add_cell_likelihood", "agent_level"]

#: Mean trials per observed cell up to which the log-pmf comes from the one-pass kernel (package docstring).
RISING_MAX_MEAN_TRIALS = 24


def _use_kernel(n: np.ndarray) -> bool:
    """Whether the one-pass kernel is cheaper than ``gammaln`` for these trial counts (a loop over each cell's trials).

    Up to :data:`RISING_MAX_MEAN_TRIALS` trials per cell on average; a few large cells cost their trials each.
    """
    n = np.asarray(n)
    return n.size == 0 or float(n.mean()) <= RISING_MAX_MEAN_TRIALS


def _log_bb(value, a, b, phi_term, n):
    """Log Beta-Binomial pmf per cell with ``gammaln``; ``phi_term`` = ``log Gamma(phi + n) - log Gamma(phi)``."""
    body = pt.gammaln(a + value) - pt.gammaln(a) + pt.gammaln(b + n - value) - pt.gammaln(b)
    return _log_comb(value, n) + body - phi_term


def _make_logp(inflated: bool):
    """Make the ``gammaln`` CustomDist log-pmf: params ``eta`` (logit m), ``phi``, ``phi_term``, [``det``], ``n``."""

    def logp_bb(value, eta, phi, phi_term, n):
        a = phi * pt.sigmoid(eta)  # m phi and (1 - m) phi via sigmoid(+-eta): no cancellation near 0 or 1
        b = phi * pt.sigmoid(-eta)
        return _log_bb(value, a, b, phi_term, n)

    def logp_zoi(value, eta, phi, phi_term, det, n):
        log_bb = logp_bb(value, eta, phi, phi_term, n)
        up, down = pt.eq(value, n), pt.eq(value, 0)
        # log P(c | deterministic): log m if c = n, log(1 - m) if c = 0 (n = 0: both, probability 1); a finite
        # placeholder elsewhere so that the unused branch of the switch has finite gradients.
        log_det = pt.switch(pt.eq(n, 0), 0.0, pt.switch(up, -pt.softplus(-eta), -pt.softplus(eta)))
        mixed = pt.logaddexp(pt.log(det) + log_det, pt.log1p(-det) + log_bb)
        return pt.switch(up | down, mixed, pt.log1p(-det) + log_bb)

    return logp_zoi if inflated else logp_bb


def _log_comb(value, n):
    """``log C(n, c)`` per cell (folded into a constant for observed counts)."""
    return pt.gammaln(n + 1.0) - pt.gammaln(value + 1.0) - pt.gammaln(n - value + 1.0)


def _kernel_logp_bb(value, eta, phi, n, log_comb):
    """Log-pmf of the Beta-Binomial by the one-pass kernel (:mod:`agentstats.models._bb_kernel`): params per cell.

    ``log_comb`` is ``log C(n, c)`` of the observed counts, a parameter (not computed from ``value``) so that the
    data stay shared variables, outside the compiled graph (:func:`_kernel_data`).
    """
    return cell_logp(eta, phi, pt.zeros_like(eta), value, n, log_comb)


def _kernel_logp_zoi(value, eta, phi, det, n, log_comb):
    """As :func:`_kernel_logp_bb`, zero/one-inflated with deterministic share ``det`` per cell."""
    return cell_logp(eta, phi, det, value, n, log_comb)


def _kernel_dist_bb(eta, phi, n, log_comb, size):
    """Build the generative graph for the kernel's parameters (:func:`_dist_bb` without ``phi_term``)."""
    return _dist_bb(eta, phi, None, n, size)


def _kernel_dist_zoi(eta, phi, det, n, log_comb, size):
    """Build the generative graph for the kernel's parameters (:func:`_dist_zoi` without ``phi_term``)."""
    return _dist_zoi(eta, phi, None, det, n, size)


def _kernel_data(c_obs: np.ndarray, n_obs: np.ndarray) -> tuple[Any, Any, Any]:
    """Shared variables for the kernel likelihood's data: counts ``c``, trials ``n`` and ``log C(n, c)`` per cell.

    As shared variables, not constants, the data are inputs of the compiled log-density rather than part of it, so a
    compiled model serves any data with the same cells (``agentstats.models._nutpie_model`` caches it on disk by the
    graph alone: a new dataset of the same shape does not compile again). ``log C(n, c)`` is computed here once
    (``misclassification._log_comb``, ``scipy.special.gammaln``), not in the graph.
    """
    c = np.ascontiguousarray(c_obs, dtype=np.int64)
    n = np.ascontiguousarray(n_obs, dtype=np.int64)
    return (
        pytensor.shared(c, name="cell_c"),
        pytensor.shared(n, name="cell_n"),
        pytensor.shared(_log_comb_np(n, c), name="cell_log_comb"),
    )


_TINY = float(np.finfo(float).tiny)


def _make_judged_logp(inflated: bool, n_obs: np.ndarray, c_obs: np.ndarray):
    """CustomDist log-pmf of a judged count: the true count (Beta-Binomial, with inflation) through the judge's channel.

    Params as :func:`_make_logp` plus ``se``, ``sp`` last (:mod:`agentstats.models.misclassification`). The true
    count's log-pmf is evaluated for every ``s = 0..n_max`` per cell with rising factorials computed as cumulative
    sums (no ``gammaln`` of a vanishing Beta parameter).
    """
    size = int(n_obs.max()) + 1 if n_obs.size else 1
    table = channel_table(n_obs, c_obs)
    s = np.arange(size)[None, :]
    n_col = n_obs[:, None]
    s_c = np.minimum(s, n_col)
    rest = np.clip(n_col - s, 0, size - 1)
    rows = np.arange(n_obs.size)[:, None]
    log_comb = gammaln(n_col + 1.0) - gammaln(s_c + 1.0) - gammaln(n_col - s_c + 1.0)
    steps = np.arange(max(size - 1, 1), dtype="float64")[None, :]
    up, down, empty = (s == n_col), (s == 0), (n_col == 0)

    def rising(x):
        """``log Gamma(x + j) - log Gamma(x)`` for ``j = 0..size - 1``, shape (cell, size)."""
        if size == 1:
            return pt.zeros((x.shape[0], 1))
        cum = pt.cumsum(pt.log(x[:, None] + steps), axis=1)
        return pt.concatenate([pt.zeros((x.shape[0], 1)), cum], axis=1)

    def log_true_bb(eta, phi, phi_term):
        a = phi * pt.sigmoid(eta)
        b = phi * pt.sigmoid(-eta)
        return log_comb + rising(a)[:, :size][rows, s_c] + rising(b)[rows, rest] - phi_term[:, None]

    def logp_bb(value, eta, phi, phi_term, n, se, sp):
        return judged_log_likelihood(log_true_bb(eta, phi, phi_term), table, se, sp)

    def logp_zoi(value, eta, phi, phi_term, det, n, se, sp):
        log_bb = log_true_bb(eta, phi, phi_term)
        e = eta[:, None]
        log_det = pt.switch(empty, 0.0, pt.switch(up, -pt.softplus(-e), pt.switch(down, -pt.softplus(e), -1.0e30)))
        d = det[:, None]
        log_true = pt.logaddexp(pt.log(d) + log_det, pt.log1p(-d) + log_bb)
        return judged_log_likelihood(log_true, table, se, sp)

    return logp_zoi if inflated else logp_bb


def _dist_bb_judged(eta, phi, phi_term, n, se, sp, size):
    """Judged count: ``p ~ Beta(m phi, (1 - m) phi)``, ``c ~ Binomial(n, se p + (1 - sp)(1 - p))``."""
    eta, phi, n = pt.broadcast_arrays(eta, phi, n)
    m = pt.sigmoid(eta)
    p = pm.Beta.dist(pt.maximum(m * phi, _TINY), pt.maximum((1.0 - m) * phi, _TINY), size=size)
    return pm.Binomial.dist(n, judged_probability(p, se, sp), size=size)


def _dist_zoi_judged(eta, phi, phi_term, det, n, se, sp, size):
    """As :func:`_dist_zoi`, the trials then judged with sensitivity ``se`` and specificity ``sp``."""
    eta, phi, det, n = pt.broadcast_arrays(eta, phi, det, n)
    m = pt.sigmoid(eta)
    p = pm.Beta.dist(pt.maximum(m * phi, _TINY), pt.maximum((1.0 - m) * phi, _TINY), size=size)
    p = pt.switch(pm.Bernoulli.dist(det, size=size), pm.Bernoulli.dist(m, size=size), p)
    return pm.Binomial.dist(n, judged_probability(p, se, sp), size=size)


def _dist_bb(eta, phi, phi_term, n, size):
    """Build the generative graph of a cell's count: ``p ~ Beta(m phi, (1 - m) phi)``, ``c ~ Binomial(n, p)``.

    Symbolic, so PyTensor compiles it with any backend (``sample_posterior_predictive``, prior predictive checks).
    """
    eta, phi, n = pt.broadcast_arrays(eta, phi, n)
    m = pt.sigmoid(eta)
    p = pm.Beta.dist(pt.maximum(m * phi, _TINY), pt.maximum((1.0 - m) * phi, _TINY), size=size)
    return pm.Binomial.dist(n, p, size=size)


def _dist_zoi(eta, phi, phi_term, det, n, size):
    """As :func:`_dist_bb`, with probability ``det`` a deterministic cell (``p = 1`` with probability ``m``, else 0)."""
    eta, phi, det, n = pt.broadcast_arrays(eta, phi, det, n)  # one draw per cell, whatever is scalar
    m = pt.sigmoid(eta)
    p = pm.Beta.dist(pt.maximum(m * phi, _TINY), pt.maximum((1.0 - m) * phi, _TINY), size=size)
    p = pt.switch(pm.Bernoulli.dist(det, size=size), pm.Bernoulli.dist(m, size=size), p)
    return pm.Binomial.dist(n, p, size=size)


def _phi_term_tensor(phi_agent, agent_idx: np.ndarray, n: np.ndarray, grid: tuple[int, int] | None):
    """``log Gamma(phi[a] + n) - log Gamma(phi[a])`` per observed cell, computed per (agent, distinct n) and gathered.

    ``phi_agent`` has shape (agent,) (a shared dispersion is broadcast to every agent by the caller). With ``grid``
    = (agents, tasks), every cell of the grid is observed in row-major order: the gather is then a product with a
    constant one-hot table over the distinct ``n`` (no scatter-add in the gradient).
    """
    values, inverse = np.unique(n, return_inverse=True)
    table = pt.gammaln(phi_agent[:, None] + values.astype("float64")[None, :]) - pt.gammaln(phi_agent[:, None])
    if grid is None:
        return table[agent_idx, inverse]
    if values.size == 1:
        return _per_cell(table[:, 0], agent_idx, grid)
    onehot = (inverse[:, None] == np.arange(values.size)[None, :]).astype("float64").reshape(*grid, values.size)
    return (onehot * table[:, None, :]).sum(axis=-1).reshape((-1,))


def _complete_grid(agent_idx: np.ndarray, task_idx: np.ndarray, shape: tuple[int, int]) -> tuple[int, int] | None:
    """``shape`` when the observed cells are the whole agent x task grid in row-major order, else None."""
    n_agents, n_tasks = shape
    if agent_idx.size != n_agents * n_tasks:
        return None
    return shape  # np.nonzero of an all-true grid is row-major: the order is implied by the size


def _per_cell(x_agent, agent_idx: np.ndarray, grid: tuple[int, int] | None):
    """Spread a per-agent tensor over the observed cells: a gather, or on a complete grid a cheaper broadcast."""
    if grid is None:
        return x_agent[agent_idx]
    return pt.broadcast_to(x_agent[:, None], grid).reshape((-1,))


def agent_level(name: str, mu_sd: float, sd: float, form: Param = "non_centered"):
    """Per-agent probability pooled across agents, ``logit x[a] ~ Normal(name_mu, name_sd)``.

    Non-centred (default): ``logit x[a] = name_mu + name_sd * name_z[a]``; centred: ``name_logit[a]`` sampled
    directly (package docstring, "Dispersion").
    """
    mu = pm.Normal(f"{name}_mu", 0.0, mu_sd)
    scale = pm.HalfNormal(f"{name}_sd", sd)
    if form == "centered":
        logit = pm.Normal(f"{name}_logit", mu, scale, dims="agent")
        return pm.Deterministic(name, pm.math.sigmoid(logit), dims="agent")
    z = pm.Normal(f"{name}_z", 0.0, 1.0, dims="agent")
    return pm.Deterministic(name, pm.math.sigmoid(mu + scale * z), dims="agent")


def add_cell_likelihood(
    eta_obs: Any,
    phi_agent: Any,
    det_cell: Any,
    agent_idx: np.ndarray,
    grid: tuple[int, int] | None,
    n_obs: np.ndarray,
    c_obs: np.ndarray,
    judge: tuple[Any, Any] | None,
) -> None:
    """Add the observed counts ``c`` (dim ``cell``) of a Beta-Binomial family to the model in context.

    Parameters
    ----------
    eta_obs : TensorVariable, shape (cell,)
        Logit of the cell means of the observed cells.
    phi_agent : TensorVariable, shape (agent,)
        Concentration per agent (a shared one broadcast by the caller).
    det_cell : TensorVariable, shape (cell,), or None
        Deterministic share per observed cell (zero/one-inflated variant), None for the plain variant.
    agent_idx : numpy.ndarray of int, shape (cell,)
        Agent of each observed cell.
    grid : (int, int) or None
        The agent x task shape when every cell is observed (cheaper gathers, :func:`_complete_grid`).
    n_obs, c_obs : numpy.ndarray of int, shape (cell,)
        Trials and successes.
    judge : (se, sp) or None
        The judge's sensitivity and specificity variables: the counts are then judged counts.

    The log-pmf is the one-pass kernel for few trials per cell (:func:`_use_kernel`), ``gammaln`` otherwise, or the
    judged likelihood (package docstring).
    """
    inflated = det_cell is not None
    kernel = judge is None and _use_kernel(n_obs)
    params = [eta_obs, _per_cell(phi_agent, agent_idx, grid)]
    if not kernel:
        params.append(_phi_term_tensor(phi_agent, agent_idx, n_obs, grid))
    if inflated:
        params.append(det_cell)
    observed: Any = c_obs
    if kernel:
        observed, n_shared, log_comb = _kernel_data(c_obs, n_obs)
        params.extend([n_shared, log_comb])
    else:
        params.append(pt.as_tensor(n_obs.astype("float64")))
    logp: Callable[..., Any]
    dist: Callable[..., Any]
    if judge is not None:
        params.extend(judge)
        logp = _make_judged_logp(inflated, n_obs, c_obs)
        dist = _dist_zoi_judged if inflated else _dist_bb_judged
    elif kernel:
        logp = _kernel_logp_zoi if inflated else _kernel_logp_bb
        dist = _kernel_dist_zoi if inflated else _kernel_dist_bb
    else:
        logp = _make_logp(inflated)
        dist = _dist_zoi if inflated else _dist_bb
    pm.CustomDist("c", *params, logp=logp, dist=dist, dtype="int64", observed=observed, dims="cell")

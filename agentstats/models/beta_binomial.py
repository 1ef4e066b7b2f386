"""Crossed agent x task Beta-Binomial families: the per-cell term integrated out analytically.

Model (``beta_binomial``)::

    logit m[a, t] = mu + alpha[a] + beta[t]
    alpha ~ ZeroSumNormal(sigma_agent)    over agents
    beta  ~ ZeroSumNormal(sigma_task)     over tasks
    rho[a] in (0, 1)                      intra-cell correlation of agent a, phi[a] = (1 - rho[a]) / rho[a]
    p[a, t] ~ Beta(m phi[a], (1 - m) phi[a])   per cell (not sampled; see below)
    c[a, t] ~ BetaBinomial(n, m phi[a], (1 - m) phi[a])   for cells with n > 0

The cell's success probability varies around the additive prediction ``m`` with a Beta distribution of mean ``m``
and concentration ``phi``; two trials of one cell are correlated with ``rho = 1 / (1 + phi)`` (Skellam 1948, JRSS B
10(2); Williams 1975, Biometrics 31(4); BDA3 sec. 5.3). Integrating ``p`` out gives the Beta-Binomial likelihood,
so the sampler sees only agents + tasks parameters, not one latent per cell.

Dispersion (``dispersion``):

* ``"agent"`` (default): each agent has its own ``rho[a]``, pooled across agents,
  ``logit rho[a] = rho_mu + rho_sd * rho_z[a]`` (non-centred), so the model can say that one agent is more consistent
  than another and its pass^k for k beyond the observed trials follows the agent's own dispersion.
  ``parameterization={"dispersion": "centered"}`` samples ``rho_logit[a] ~ Normal(rho_mu, rho_sd)`` instead (also
  ``det_share`` with ``det_by_agent``): the same model, better mixing when every agent has many cells of several
  trials; :func:`dispersion_form` chooses it when every agent has many cells of 4+ trials (docs/models.md,
  "Centred dispersion").
* ``"shared"``: one ``rho ~ Beta(rho_a, rho_b)`` for all agents (kept for comparison).

Zero/one-inflated variant (``zoi_beta_binomial``)::

    p[a, t] = 1 with prob. det_share * m, 0 with prob. det_share * (1 - m),
              ~ Beta(m phi, (1 - m) phi) with prob. 1 - det_share

A deterministic cell always (prob. ``m``) or never succeeds; the cell mean stays ``m``. This is the zero-or-one
inflated Beta of Ospina & Ferrari (2012, Comput. Stat. Data Anal. 56(6), 1609-1623) with its inflation tied to the
cell mean, under the Binomial and marginalized per cell:
``det_share [m 1{c = n} + (1 - m) 1{c = 0}] + (1 - det_share) BetaBinomial(c | n, m phi, (1 - m) phi)``.
``det_share`` is shared by all agents unless ``det_by_agent=True`` (then pooled across agents like ``rho``).

Likelihood: an observed ``pm.CustomDist`` named ``c`` (dim ``cell``) with the log-pmf below and a random generator,
so PyMC's ``compute_log_likelihood`` (PSIS-LOO) and ``sample_posterior_predictive`` work on it. The log-pmf is
written with rising factorials (Pochhammer symbols, ``Gamma(x + j) / Gamma(x) = x (x + 1) ... (x + j - 1)``;
Abramowitz & Stegun 1964, 6.1.22)::

    log BB(c | n, a, b) = log C(n, c) + sum_{i<c} log(a + i) + sum_{j<n-c} log(b + j) - sum_{l<n} log(phi + l)

with ``a + b = phi``. When that is cheap (at most :data:`RISING_MAX_MEAN_TRIALS` trials per cell on average) the
log-pmf and its partial derivatives come from one pass over the cells
(:mod:`agentstats.models._bb_kernel`: the rising factorials as products with their derivatives by the product rule,
the inflation mixed in probability space; one ``exp``, one ``log`` and one division per cell: 0.57 ms a gradient
against 2.35 ms for the per-cell ``gammaln`` graph, 4.1x (3.4-4.5x over three runs), at 10 x 1,000 x 8 cells,
``benchmarks/bench_gradient.py``, docs/benchmarks.md);
otherwise with ``gammaln``, whose ``sum_{l<n} log(phi + l)``
term depends on the agent and ``n`` only and is computed once per (agent, distinct n) and gathered. ``log C(n, c)``
depends on the observed counts only: the kernel takes it, with the counts and trials, as shared variables computed once
(so a compiled model serves new data with the same cells, :func:`_kernel_data`); the ``gammaln`` form folds it into a
constant.

Per-cell ``p`` draws are exact given each posterior draw of the hyperparameters, from the conjugate conditional
``p[a, t] | c, m, phi ~ Beta(m phi + c, (1 - m) phi + n - c)`` (BDA3 sec. 2.4 / 5.3), after the deterministic
component has been drawn from its conditional probability for the inflated variant; cells with ``n = 0`` draw from
the prior. They are made on demand, block by block (:meth:`BetaBinomialFamily.cell_p`), never stored by default.

With a single agent the cell term is not identifiable from the task effect: ``rho`` and ``det_share`` are dropped
and the model is ``logit p[0, t] = mu + beta[t]`` with a Binomial likelihood.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, cast

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import xarray as xr
from scipy.special import betaln, expit, gammaln, log_expit

from agentstats.models._bb_kernel import cell_logp
from agentstats.models.data import CountsData
from agentstats.models.family import (
    GH_NODES,
    TASK_BLOCK,
    BuildInfo,
    CellTables,
    Dispersion,
    ModelFamily,
    draw_array,
    gauss_hermite,
    map_rows,
    population_shift,
)
from agentstats.models.misclassification import (
    SENSITIVITY,
    SPECIFICITY,
    channel_table,
    draw_true_counts,
    judge_error_variables,
    judged_log_likelihood,
    judged_probability,
)
from agentstats.models.misclassification import (
    _log_comb as _log_comb_np,
)
from agentstats.models.parameterization import Param, agent_task_predictor, choose_parameterization
from agentstats.models.priors import Priors

__all__ = [
    "CENTERED_DISPERSION_DRAWS",
    "CENTERED_DISPERSION_TUNE",
    "DISPERSION_CENTERED_MIN_CELLS",
    "DISPERSION_CENTERED_MIN_TRIALS",
    "LARGE_CELLS",
    "RISING_MAX_MEAN_TRIALS",
    "TARGET_ACCEPT",
    "TARGET_ACCEPT_LARGE",
    "BetaBinomialFamily",
    "beta_binomial_logpmf",
    "conditional_p",
    "dispersion_form",
    "new_task_moments_beta",
]

#: Mean trials per observed cell up to which the log-pmf comes from the one-pass kernel (module docstring).
RISING_MAX_MEAN_TRIALS = 24
#: Largest k for which the post-processing computes Beta moments ``E[p^k]`` as a running product of rising-factorial
#: ratios (one multiply per k) instead of ``betaln``; above it, ``betaln``.
RISING_K_MAX = 64
#: Default NUTS target acceptance rate: the concentration can approach its boundary when cells are barely
#: overdispersed (at 0.95 ``beta_binomial`` left a divergence in 4 of 10 small fits, at 0.98 none;
#: validation/target_accept_check.py).
TARGET_ACCEPT = 0.98
#: From this many observed cells on, the posterior of the agents + tasks parameters is close to Gaussian and a lower
#: target halves the leapfrog steps per draw without divergences (docs/benchmarks.md).
LARGE_CELLS = 2000
TARGET_ACCEPT_LARGE = 0.85
#: Trials a cell needs to count towards :data:`DISPERSION_CENTERED_MIN_CELLS` (:func:`dispersion_form`).
DISPERSION_CENTERED_MIN_TRIALS = 4
#: Cells of :data:`DISPERSION_CENTERED_MIN_TRIALS`+ trials every agent needs for centred per-agent dispersion.
DISPERSION_CENTERED_MIN_CELLS = 250
#: Default (most) draws per chain of a fit with centred dispersion: its slowest hyperparameter reached ESS_bulk
#: 1,326-1,337 at 4 x 1,000 (15 x 713 x 4 and 20 x 500 x 4 cells), where the non-centred form needs 2,000, but R-hat
#: of ``det_share`` was 1.007-1.011 there (docs/models.md); large fits stop earlier once converged
#: (:data:`agentstats.models.fit.UNTIL_CONVERGED_MIN_CELLS`).
CENTERED_DISPERSION_DRAWS = 1500
#: Default tuning steps per chain of a centred-dispersion fit with nutpie (its own default): 300 tuning steps gave
#: the same R-hat and ESS at every number of draws as 1,000 in three designs (docs/models.md, "Centred dispersion").
CENTERED_DISPERSION_TUNE = 300


# ------------------------------------------------------------------------------------------------ likelihood
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


def beta_binomial_logpmf(
    c: np.ndarray, n: np.ndarray, eta: np.ndarray, phi: np.ndarray, det_share: np.ndarray | None = None
) -> np.ndarray:
    """Log-pmf of a cell's count, ``p`` integrated out (numpy; the reference the model's log-pmf is tested against).

    ``log BetaBinomial(c | n, m phi, (1 - m) phi)`` with ``m = expit(eta)``, or for the zero/one-inflated variant
    the log of ``det_share [m 1{c = n} + (1 - m) 1{c = 0}] + (1 - det_share) BetaBinomial(c | ...)`` (module
    docstring). Inputs broadcast together.

    Returns
    -------
    numpy.ndarray
        Natural-log probabilities, including ``log C(n, c)``.
    """
    from scipy.stats import betabinom

    eta = np.asarray(eta, float)
    phi = np.asarray(phi, float)
    tiny = np.finfo(float).tiny
    log_bb = betabinom.logpmf(c, n, np.maximum(phi * expit(eta), tiny), np.maximum(phi * expit(-eta), tiny))
    if det_share is None:
        return log_bb
    lam = np.asarray(det_share, float)
    with np.errstate(divide="ignore"):
        log_det = np.where(c == n, log_expit(eta), np.where(c == 0, log_expit(-eta), -np.inf))
        log_det = np.where(np.asarray(n) == 0, 0.0, log_det)
        return np.logaddexp(np.log(lam) + log_det, np.log1p(-lam) + log_bb)


def conditional_p(
    eta: np.ndarray,
    phi: np.ndarray,
    n: np.ndarray,
    c: np.ndarray,
    rng: np.random.Generator,
    det_share: np.ndarray | None = None,
) -> np.ndarray:
    """One exact draw of each cell's ``p`` per posterior draw, given the hyperparameters and the cell's counts.

    ``p | c, m, phi ~ Beta(m phi + c, (1 - m) phi + n - c)`` (conjugacy, BDA3 sec. 2.4); ``m = expit(eta)``. With
    ``det_share`` the cell is first assigned to a component with its conditional probability given ``c`` (Bayes'
    rule on the two mixture terms of :func:`beta_binomial_logpmf`): deterministic cells get ``p = 1`` (``c = n > 0``)
    or ``0`` (``c = 0 < n``), unattempted deterministic cells ``p = 1`` with probability ``m``.

    Parameters
    ----------
    eta : numpy.ndarray, shape S + cells
    phi, det_share : numpy.ndarray, broadcastable to ``eta``
    n, c : numpy.ndarray of int, shape cells
    rng : numpy.random.Generator

    Returns
    -------
    numpy.ndarray of float, shape S + cells, values in [0, 1]
    """
    phi = np.asarray(phi, float)
    tiny = np.finfo(float).tiny
    m = expit(eta)
    a0 = phi * m
    b0 = phi * expit(-eta)
    # numpy's Beta sampler needs a, b > 0: an underflowed 0 (|eta| > ~745) becomes the smallest positive float.
    p = rng.beta(np.maximum(a0 + c, tiny), np.maximum(b0 + (n - c), tiny))
    if det_share is None:
        return p
    prob_det = _det_posterior(eta, a0, b0, np.asarray(n), np.asarray(c), np.asarray(det_share, float))
    is_det = rng.random(p.shape) < prob_det
    u = rng.random(p.shape)
    det_value = np.where(n == 0, u < m, c == n).astype(float)
    return np.where(is_det, det_value, p)


def _det_posterior(
    eta: np.ndarray, a0: np.ndarray, b0: np.ndarray, n: np.ndarray, c: np.ndarray, lam: np.ndarray
) -> np.ndarray:
    """``P(deterministic component | c)`` of a zero/one-inflated cell (Bayes' rule on the two mixture terms).

    Only cells with ``c = n`` or ``c = 0`` can be deterministic. There the deterministic term is ``lam m`` (or
    ``lam (1 - m)``) and the Beta-Binomial term ``(1 - lam) B(a0 + n, b0) / B(a0, b0)`` (or with ``b0 + n``), whose
    first rising-factorial factor ``a0 / (a0 + b0)`` is ``m`` again, so the posterior share is
    ``lam / (lam + (1 - lam) R)`` with ``R = prod_{i=1}^{n-1} (a0 + i) / (a0 + b0 + i)`` (``b0`` for ``c = 0``;
    ``R = 1`` for ``n <= 1``), a running product for ``n <=`` :data:`RISING_K_MAX` and ``betaln`` above. The same
    value as the log-sum of :func:`beta_binomial_logpmf` terms, without a ``gammaln`` per cell.
    """
    top = c == n
    edge = top | (c == 0)
    n_max = int(n.max()) if n.size else 0
    if n_max <= RISING_K_MAX:
        ab = a0 + b0
        num = np.where(top, a0, b0)
        r = np.ones(np.broadcast_shapes(num.shape, n.shape))
        ragged = not bool(np.all(n == n_max))
        for i in range(1, n_max):
            step = (num + i) / (ab + i)
            r *= np.where(i < n, step, 1.0) if ragged else step
    else:
        lead = np.where(top, log_expit(eta), log_expit(-eta))
        log_bb = np.where(top, betaln(a0 + n, b0), betaln(a0, b0 + n)) - betaln(a0, b0)
        r = np.where(n == 0, 1.0, np.exp(log_bb - lead))
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.nan_to_num(lam / (lam + (1.0 - lam) * r), nan=0.0)
    return np.where(edge, share, 0.0)


def new_task_moments_beta(
    m: np.ndarray,
    s: np.ndarray,
    phi: np.ndarray,
    ks: np.ndarray,
    n_nodes: int = GH_NODES,
    det_share: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``E[p^k]`` and ``1 - E[(1 - p)^k]`` for ``p ~ Beta(q phi, (1 - q) phi)``, ``logit q ~ Normal(m, s)``.

    Inner expectation in closed form, ``E[p^k | q] = B(q phi + k, (1 - q) phi) / B(q phi, (1 - q) phi)`` (and with
    ``b + k`` for ``(1 - p)^k``; Beta moments, Johnson, Kotz & Balakrishnan 1995, ch. 25), for integer
    ``k <=`` :data:`RISING_K_MAX` as the rising-factorial product ``prod_{i<k} (a + i) / (a + b + i)``, else by
    ``betaln``; with
    ``det_share`` (zero/one inflation) ``E[p^k | q] = det_share q + (1 - det_share) E_Beta[p^k]`` and likewise for
    ``(1 - p)^k``. Outer expectation over ``logit q`` by Gauss-Hermite quadrature (:func:`gauss_hermite`).

    Parameters
    ----------
    m, s, phi, det_share : numpy.ndarray
        Broadcastable (shape ``S``): location and scale of ``logit q``, the concentration, the deterministic share.
    ks : numpy.ndarray of int, shape (K,)
    n_nodes : int

    Returns
    -------
    pass_hat_k, pass_at_k : numpy.ndarray, shape ``S + (K,)``
    """
    x, w = gauss_hermite(n_nodes)
    kk = np.asarray(ks, float)
    tiny = np.finfo(float).tiny
    # Integer k up to RISING_K_MAX: the Beta moment ratio as a running product of rising-factorial terms, one
    # multiply per k and node instead of two betaln (the same values to about 1e-14 relative).
    k_int = np.rint(kk).astype(int)
    by_product = bool(kk.size) and np.array_equal(k_int, kk) and int(k_int.min()) >= 0 and (
        int(k_int.max()) <= RISING_K_MAX)

    def mix(lam_r: np.ndarray | None, q: np.ndarray, beta_moment: np.ndarray) -> np.ndarray:
        return beta_moment if lam_r is None else lam_r[:, None] * q + (1.0 - lam_r[:, None]) * beta_moment

    def rows(m_r: np.ndarray, s_r: np.ndarray, phi_r: np.ndarray, lam_r: np.ndarray | None) -> tuple[np.ndarray, ...]:
        eta = m_r[:, None] + s_r[:, None] * x  # (rows, nodes)
        q = expit(eta)
        q_miss = expit(-eta)
        a = np.maximum(phi_r[:, None] * q, tiny)
        b = np.maximum(phi_r[:, None] * q_miss, tiny)
        hat = np.empty((m_r.size, kk.size))
        miss = np.empty((m_r.size, kk.size))
        if by_product:
            ab = a + b
            hat_q = np.ones_like(a)
            miss_q = np.ones_like(a)
            cols: dict[int, list[int]] = {}
            for j, kv in enumerate(k_int):
                cols.setdefault(int(kv), []).append(j)
            k_top = int(k_int.max())
            for i in range(k_top + 1):
                if i in cols:
                    h = mix(lam_r, q, hat_q) @ w
                    mm = 1.0 - mix(lam_r, q_miss, miss_q) @ w
                    for j in cols[i]:
                        hat[:, j], miss[:, j] = h, mm
                if i < k_top:
                    hat_q *= (a + i) / (ab + i)
                    miss_q *= (b + i) / (ab + i)
            return hat, miss
        base = betaln(a, b)
        for j, kv in enumerate(kk):  # one (rows, nodes) temporary per quantity, not one per k
            hat[:, j] = mix(lam_r, q, np.exp(betaln(a + kv, b) - base)) @ w
            miss[:, j] = 1.0 - mix(lam_r, q_miss, np.exp(betaln(a, b + kv) - base)) @ w
        return hat, miss

    hat, at = map_rows(rows, [m, s, phi, det_share], kk.size)
    return hat, at


# ------------------------------------------------------------------------------------------------ the family
def dispersion_form(data: CountsData) -> Param:
    """Centred per-agent dispersion when every agent has many cells of several trials, else non-centred.

    Centred when every agent has at least :data:`DISPERSION_CENTERED_MIN_CELLS` cells of at least
    :data:`DISPERSION_CENTERED_MIN_TRIALS` trials: each agent's ``rho`` is then well identified and the centred
    form mixed 1.5-4.4x better; with fewer cells, or 3 trials, it mixed worse, and with 2 trials a cell's counts
    identify only ``det_share + (1 - det_share) rho`` (docs/models.md, "Centred dispersion"; one fit per design,
    nutpie, 4 x 1,000 draws). The counts cannot show whether agents differ in consistency; when they do not,
    ``rho_sd`` nears 0 and the centred form is a funnel that diverges, so ``fit`` refits a diverging centred fit
    non-centred (``agentstats.models.fit``).
    """
    if data.shape[0] < 2:
        return "non_centered"
    informative = (np.asarray(data.n) >= DISPERSION_CENTERED_MIN_TRIALS).sum(axis=1)
    return "centered" if int(informative.min()) >= DISPERSION_CENTERED_MIN_CELLS else "non_centered"


def _agent_level(name: str, mu_sd: float, sd: float, form: Param = "non_centered"):
    """Per-agent probability pooled across agents, ``logit x[a] ~ Normal(name_mu, name_sd)``.

    Non-centred (default): ``logit x[a] = name_mu + name_sd * name_z[a]``; centred: ``name_logit[a]`` sampled
    directly (module docstring, "Dispersion").
    """
    mu = pm.Normal(f"{name}_mu", 0.0, mu_sd)
    scale = pm.HalfNormal(f"{name}_sd", sd)
    if form == "centered":
        logit = pm.Normal(f"{name}_logit", mu, scale, dims="agent")
        return pm.Deterministic(name, pm.math.sigmoid(logit), dims="agent")
    z = pm.Normal(f"{name}_z", 0.0, 1.0, dims="agent")
    return pm.Deterministic(name, pm.math.sigmoid(mu + scale * z), dims="agent")


@dataclass(frozen=True, eq=False)
class BetaBinomialFamily(ModelFamily):
    """The Beta-Binomial families ``beta_binomial`` and ``zoi_beta_binomial`` (module docstring).

    Parameters
    ----------
    inflated : bool
        Zero/one-inflated cells (``zoi_beta_binomial``).
    dispersion : {"agent", "shared"}
        Within-cell dispersion ``rho`` per agent (pooled) or shared by all agents.
    det_by_agent : bool
        Inflated variant only: the deterministic share per agent (pooled) instead of shared.
    """

    inflated: bool = True
    dispersion: Dispersion | None = "agent"
    det_by_agent: bool = False
    p_draws: ClassVar[str] = "conditional"

    def __post_init__(self) -> None:
        if self.dispersion not in ("agent", "shared"):
            raise ValueError(f"dispersion must be 'agent' or 'shared', got {self.dispersion!r}")
        if self.det_by_agent and not self.inflated:
            raise ValueError("det_by_agent applies to the zero/one-inflated model only")

    @property
    def name(self) -> str:  # type: ignore[override]
        """``zoi_beta_binomial`` or ``beta_binomial``."""
        return "zoi_beta_binomial" if self.inflated else "beta_binomial"

    @property
    def summary(self) -> str:  # type: ignore[override]
        """One line for help texts and the report."""
        what = "per-cell Beta around the agent + task mean"
        if self.inflated:
            what += ", with a share of always/never-succeeding cells"
        return f"{what}; within-cell dispersion {'per agent' if self.dispersion == 'agent' else 'shared'}"

    def attrs(self) -> dict[str, Any]:
        """Identity of the family in a fit's attributes."""
        out = super().attrs()
        out["det_by_agent"] = int(self.det_by_agent)
        return out

    # ------------------------------------------------------------------------------------------ building
    def build(
        self,
        data: CountsData,
        priors: Priors,
        parameterization: dict[str, str] | None = None,
        judge_error: Any = None,
    ) -> tuple[pm.Model, BuildInfo]:
        """Build the PyMC model (module docstring); see :meth:`ModelFamily.build`.

        With ``judge_error`` the counts are judged counts, and the likelihood marginalises over the true count
        (:mod:`agentstats.models.misclassification`).
        """
        n_agents, n_tasks = data.shape
        single = n_agents == 1
        override = dict(cast(dict[str, Param], parameterization or {}))
        disp_form = override.pop("dispersion", dispersion_form(data))
        if disp_form not in ("centered", "non_centered"):
            raise ValueError(f"parameterization['dispersion']: must be 'centered' or 'non_centered', got {disp_form!r}")
        choice, ratios = choose_parameterization(data, priors, cell_term=not single, override=override or None)
        ai, ti = data.obs_index()
        n_obs, c_obs = data.n[ai, ti], data.c[ai, ti]
        coords = {"agent": data.agents, "task": data.tasks, "cell": np.arange(ai.size)}
        with pm.Model(coords=coords) as model:
            eta = agent_task_predictor(priors, choice, single) + pt.zeros((n_agents, n_tasks))
            grid = _complete_grid(ai, ti, (n_agents, n_tasks))
            eta_obs = eta.reshape((-1,)) if grid is not None else eta[ai, ti]
            judge = judge_error_variables(judge_error) if judge_error is not None else None
            if single and judge is not None:
                q = judged_probability(pm.math.sigmoid(eta_obs), *judge)
                pm.Binomial("c", n=n_obs, p=q, observed=c_obs, dims="cell")
            elif single:
                pm.Binomial("c", n=n_obs, logit_p=eta_obs, observed=c_obs, dims="cell")
            else:
                if self.dispersion == "agent":
                    rho = _agent_level("rho", priors.rho_mu_sd, priors.rho_sd, disp_form)
                    phi = pm.Deterministic("phi", (1.0 - rho) / rho, dims="agent")
                    phi_agent = phi
                else:
                    rho = pm.Beta("rho", priors.rho_a, priors.rho_b)
                    phi = pm.Deterministic("phi", (1.0 - rho) / rho)
                    phi_agent = pt.repeat(phi[None], n_agents)
                # few trials per cell: the one-pass kernel (module docstring); many: gammaln and its digammas
                kernel = judge is None and _use_kernel(n_obs)
                params = [eta_obs, _per_cell(phi_agent, ai, grid)]
                if not kernel:
                    params.append(_phi_term_tensor(phi_agent, ai, n_obs, grid))
                if self.inflated:
                    if self.det_by_agent:
                        det = _agent_level("det_share", priors.det_mu_sd, priors.det_sd, disp_form)
                        params.append(_per_cell(det, ai, grid))
                    else:
                        det = pm.Beta("det_share", priors.det_a, priors.det_b)
                        params.append(pt.repeat(det[None], ai.size))
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
                    logp = _make_judged_logp(self.inflated, n_obs, c_obs)
                    dist = _dist_zoi_judged if self.inflated else _dist_bb_judged
                elif kernel:
                    logp = _kernel_logp_zoi if self.inflated else _kernel_logp_bb
                    dist = _kernel_dist_zoi if self.inflated else _kernel_dist_bb
                else:
                    logp = _make_logp(self.inflated)
                    dist = _dist_zoi if self.inflated else _dist_bb
                pm.CustomDist(
                    "c",
                    *params,
                    logp=logp,
                    dist=dist,
                    dtype="int64",
                    observed=observed,
                    dims="cell",
                )
        per_agent = not single and (self.dispersion == "agent" or (self.inflated and self.det_by_agent))
        info = BuildInfo(
            parameterization={lvl: str(choice[lvl]) for lvl in ("agent", "task")}
            | ({"dispersion": str(disp_form)} if per_agent else {}),
            parameterization_ratios={k: ratios[k] for k in ("agent", "task")},
            has_agent_effect=not single,
            has_cell_effect=not single,
        )
        return model, info

    def target_accept(self, data: CountsData) -> float:
        """:data:`TARGET_ACCEPT`, or :data:`TARGET_ACCEPT_LARGE` from :data:`LARGE_CELLS` observed cells on."""
        return TARGET_ACCEPT_LARGE if int(np.count_nonzero(data.n)) >= LARGE_CELLS else TARGET_ACCEPT

    def default_draws(self, info: BuildInfo) -> int | None:
        """:data:`CENTERED_DISPERSION_DRAWS` when the per-agent dispersion is centred, else fit's default."""
        return CENTERED_DISPERSION_DRAWS if info.parameterization.get("dispersion") == "centered" else None

    def default_tune(self, info: BuildInfo, sampler: str) -> int | None:
        """:data:`CENTERED_DISPERSION_TUNE` for nutpie when the per-agent dispersion is centred, else fit's default."""
        centred = info.parameterization.get("dispersion") == "centered"
        return CENTERED_DISPERSION_TUNE if centred and sampler == "nutpie" else None

    def diagnostic_var_names(self, post: xr.Dataset) -> list[str]:
        """List the sampled parameters (``p`` and the derived ``phi`` are not sampled by NUTS)."""
        # ``rho_logit`` / ``det_share_logit`` (centred dispersion) are monotone in ``rho`` / ``det_share``: the same
        # rank-normalised R-hat and ESS, listed once
        return [v for v in super().diagnostic_var_names(post) if v not in ("p", "phi") and not v.endswith("_logit")]

    # ------------------------------------------------------------------------------------------ posterior
    def _params(self, post: xr.Dataset, n_agents: int) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """``m_agent = mu + alpha`` (chain, draw, agent), ``phi`` and ``det_share`` (chain, draw, agent or None)."""
        m = draw_array(post, "mu")[..., None]
        m = m + draw_array(post, "alpha", "agent") if "alpha" in post else np.repeat(m, n_agents, axis=-1)
        if "phi" not in post:  # one agent: no cell term
            return m, np.full(m.shape, np.inf), None
        phi = draw_array(post, "phi", *(["agent"] if "agent" in post["phi"].dims else []))
        phi = np.broadcast_to(phi if phi.ndim == 3 else phi[..., None], m.shape)
        det = None
        if "det_share" in post:
            det = draw_array(post, "det_share", *(["agent"] if "agent" in post["det_share"].dims else []))
            det = np.broadcast_to(det if det.ndim == 3 else det[..., None], m.shape)
        return m, phi, det

    def cell_p(self, post: xr.Dataset, data: CountsData, tasks: slice, seed: int) -> np.ndarray:
        """Exact conditional draws of ``p`` for the tasks in ``tasks`` (module docstring), seeded per task block."""
        m, phi, det = self._params(post, data.shape[0])
        beta = draw_array(post, "beta", "task")
        out = []
        for start in range(tasks.start or 0, tasks.stop, TASK_BLOCK):
            blk = slice(start, min(start + TASK_BLOCK, tasks.stop))
            eta = m[..., :, None] + beta[..., None, blk]
            n, c = data.n[:, blk], data.c[:, blk]
            if not np.isfinite(phi).all():  # one agent: p = expit(eta), nothing to draw
                out.append(expit(eta))
                continue
            rng = np.random.default_rng(np.random.SeedSequence([int(seed), 0xBB, start // TASK_BLOCK]))
            if SENSITIVITY in post:
                out.append(_judged_conditional_p(post, eta, phi, det, n, c, rng))
                continue
            out.append(
                conditional_p(eta, phi[..., None], n, c, rng, None if det is None else det[..., None])
            )
        return np.concatenate(out, axis=-1)

    def new_task_pass_k(
        self,
        post: xr.Dataset,
        ks: np.ndarray,
        n_tasks: int,
        rng: np.random.Generator,
        n_nodes: int = GH_NODES,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Beta moments integrated over a new task's effect, with the population shift (family module docstring)."""
        n_agents = post.sizes.get("agent", 1)  # a one-agent fit has no agent dimension
        m, phi, det = self._params(post, n_agents)
        s = draw_array(post, "sigma_task")
        m = m + population_shift(s, n_tasks, rng)[..., None]
        s = np.broadcast_to(s[..., None], m.shape)
        if not np.isfinite(phi).all():  # one agent: logit-normal over tasks
            from agentstats.models.logit_normal import new_task_moments_logit_normal

            return new_task_moments_logit_normal(m, s, ks, n_nodes)
        return new_task_moments_beta(m, s, phi, ks, n_nodes, det_share=det)

    def icc(self, post: xr.Dataset) -> dict[str, np.ndarray]:
        """Model ICC per agent.

        ``icc_cell``: correlation of two trials of one cell, ``rho`` (``det_share + (1 - det_share) rho`` with
        inflation; ``Var(p | m) = icc_cell m (1 - m)``, Williams 1975); ``icc_model``: the task level on the latent
        scale, ``sigma_task^2 / (sigma_task^2 + pi^2 / 3)`` (Nakagawa & Schielzeth 2010, Biol. Rev. 85:935).
        """
        n_agents = post.sizes.get("agent", 1)  # a one-agent fit has no agent dimension
        var_t = draw_array(post, "sigma_task")[..., None] ** 2
        icc_model = np.broadcast_to(var_t / (var_t + np.pi**2 / 3.0), (*var_t.shape[:2], n_agents))
        if "rho" not in post:
            return {"icc_model": icc_model, "icc_cell": np.full(icc_model.shape, np.nan)}
        rho = draw_array(post, "rho", *(["agent"] if "agent" in post["rho"].dims else []))
        rho = np.broadcast_to(rho if rho.ndim == 3 else rho[..., None], icc_model.shape)
        if "det_share" in post:
            det = draw_array(post, "det_share", *(["agent"] if "agent" in post["det_share"].dims else []))
            det = np.broadcast_to(det if det.ndim == 3 else det[..., None], icc_model.shape)
            rho = det + (1.0 - det) * rho
        return {"icc_model": icc_model, "icc_cell": rho}

    # ------------------------------------------------------------------------------------------ planning
    def point(self, post: xr.Dataset) -> dict[str, Any]:
        """Posterior point values for planning.

        Means of ``mu``, ``alpha``, ``sigma_task``; ``phi`` and ``det_share`` per agent from the posterior mean on the
        logit scale of ``rho`` / ``det_share`` (so a heavy right tail of ``phi`` does not dominate).
        """
        agents = [str(a) for a in post["agent"].values]
        m, phi, det = self._params(post, len(agents))
        mu = float(draw_array(post, "mu").mean())
        out: dict[str, Any] = {
            "mu": mu,
            "alpha": dict(zip(agents, (m.mean(axis=(0, 1)) - mu).tolist(), strict=True)),
            "sigma_task": float(draw_array(post, "sigma_task").mean()),
        }
        if np.isfinite(phi).all():
            logit_rho = np.log(1.0 / (1.0 + phi)) - np.log(phi / (1.0 + phi))
            out["phi"] = dict(zip(agents, np.exp(-logit_rho.mean(axis=(0, 1))).tolist(), strict=True))
            if det is not None:
                ld = np.log(det) - np.log1p(-det)
                out["det_share"] = dict(zip(agents, expit(ld.mean(axis=(0, 1))).tolist(), strict=True))
        return out

    def cell_given_task(self, point: dict[str, Any], agent: str | None, eta: np.ndarray, n: int, k: int) -> CellTables:
        """Per-cell tables given the cell mean's logit ``eta`` (nodes).

        Beta-Binomial likelihood and conjugate Beta moments
        ``E[p^j | c, m] = B(a + c + j, b + n - c) / B(a + c, b + n - c)`` (plus the deterministic component).
        """
        phi = _per_agent(point.get("phi"), agent, "phi")
        det = _per_agent(point.get("det_share"), agent, "det_share") if "det_share" in point else None
        eta = np.asarray(eta, float)
        c = np.arange(n + 1)[:, None]
        if phi is None:  # one agent: the cell is its task, p = expit(eta)
            log_p, log_q = log_expit(eta), log_expit(-eta)
            lik = np.exp(gammaln(n + 1) - gammaln(c + 1) - gammaln(n - c + 1) + c * log_p + (n - c) * log_q)
            pk = np.exp(k * log_p)
            m1 = np.broadcast_to(pk, lik.shape)
            return CellTables(lik, m1, m1**2, pk, pk**2)
        tiny = np.finfo(float).tiny
        a = np.maximum(phi * expit(eta), tiny)
        b = np.maximum(phi * expit(-eta), tiny)
        log_bb = (gammaln(n + 1) - gammaln(c + 1) - gammaln(n - c + 1) + betaln(a + c, b + n - c) - betaln(a, b))
        post_base = betaln(a + c, b + n - c)
        m1_bb = np.exp(betaln(a + c + k, b + n - c) - post_base)
        m2_bb = np.exp(betaln(a + c + 2 * k, b + n - c) - post_base)
        prior1 = np.exp(betaln(a + k, b) - betaln(a, b))
        prior2 = np.exp(betaln(a + 2 * k, b) - betaln(a, b))
        if det is None:
            return CellTables(np.exp(log_bb), m1_bb, m2_bb, prior1, prior2)
        q = expit(eta)
        det_lik = np.where(c == n, q, 0.0) + np.where(c == 0, 1.0 - q, 0.0)  # n = 0: c = 0 = n, both terms
        if n == 0:
            det_lik = np.ones_like(det_lik)
        l_det = det * det_lik
        l_bb = (1.0 - det) * np.exp(log_bb)
        lik = l_det + l_bb
        w_det = np.divide(l_det, lik, out=np.zeros_like(lik), where=lik > 0)
        # deterministic component: p = 1 when c = n > 0, 0 when c = 0 < n; n = 0: p = 1 with probability q
        det_pk = np.where(c == n, 1.0, 0.0) if n > 0 else np.broadcast_to(q, lik.shape)
        m1 = w_det * det_pk + (1.0 - w_det) * m1_bb
        m2 = w_det * det_pk + (1.0 - w_det) * m2_bb
        return CellTables(lik, m1, m2, det * q + (1 - det) * prior1, det * q + (1 - det) * prior2)


def _judged_conditional_p(
    post: xr.Dataset,
    eta: np.ndarray,
    phi: np.ndarray,
    det: np.ndarray | None,
    n: np.ndarray,
    c: np.ndarray,
    rng: np.random.Generator,
) -> np.ndarray:
    """Draw the true ``p`` of a judged fit: the true count from ``P(s | c)``, then ``p`` given it (agent by agent).

    Shapes: ``eta`` (chain, draw, agent, tasks), ``phi`` / ``det`` (chain, draw, agent), ``n`` / ``c`` (agent, tasks).
    """
    se = draw_array(post, SENSITIVITY)
    sp = draw_array(post, SPECIFICITY)
    s = np.arange(int(n.max()) + 1 if n.size else 1)
    out = np.empty(eta.shape)
    for a in range(eta.shape[2]):
        e = eta[:, :, a, :]
        ph = phi[:, :, a, None]
        dt = None if det is None else det[:, :, a, None]
        log_true = beta_binomial_logpmf(
            s, n[a][:, None], e[..., None], ph[..., None], None if dt is None else dt[..., None]
        )
        s_true = draw_true_counts(log_true, n[a], c[a], se, sp, rng)
        out[:, :, a, :] = conditional_p(e, ph, n[a], s_true, rng, dt)
    return out


def _per_agent(value: Any, agent: str | None, name: str) -> float | None:
    """Pick an agent's point value (dict agent -> value, or a scalar); the mean over agents when ``agent`` is None."""
    if value is None:
        return None
    if isinstance(value, dict):
        if agent is None:
            return float(np.mean(list(value.values())))
        if agent not in value:
            raise ValueError(f"agent {agent!r} not in the hyperparameters' {name} {sorted(value)}")
        return float(value[agent])
    return float(value)

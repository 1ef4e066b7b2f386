"""The Beta-Binomial families' posterior quantities in numpy.

The cell log-pmf, exact conditional draws of ``p`` and the new-task moments ``E[p^k]`` (package docstring,
:mod:`agentstats.models.families.beta_binomial`).
"""

from __future__ import annotations

import numpy as np
from scipy.special import betaln, expit, log_expit

from agentstats.models.families.base import GH_NODES, gauss_hermite, map_rows

__all__ = ["RISING_K_MAX", "beta_binomial_logpmf", "conditional_p", "new_task_moments_beta"]

#: Largest k for which the post-processing computes Beta moments ``E[p^k]`` as a running product of rising-factorial
#: ratios (one multiply per k) instead of ``betaln``; above it, ``betaln``.
RISING_K_MAX = 64


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
    if n_max <= 1:  # R = 1: the posterior share is the prior's, lam (single-trial cells; no array of ones)
        return np.where(edge, np.broadcast_to(lam, np.broadcast_shapes(lam.shape, eta.shape)), 0.0)
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

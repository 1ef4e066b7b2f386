"""Unbiased estimators of pass@k and pass^k from success counts, and the plug-in (biased) values.

For one agent on one task with success probability ``p``, **pass@k** = ``1 - (1-p)^k`` (at least one of ``k``
independent trials succeeds) and **pass^k** = ``p^k`` (all ``k`` succeed). From ``n`` trials with ``c`` successes:

* the unbiased estimators :func:`pass_at_k` = ``1 - C(n-c,k)/C(n,k)`` (Chen et al. 2021, "Evaluating Large
  Language Models Trained on Code", arXiv 2107.03374) and :func:`pass_hat_k` = ``C(c,k)/C(n,k)`` (Yao et al. 2024,
  "tau-bench", arXiv 2406.12045), vectorized and numerically stable;
* the plug-in (biased) estimators :func:`plugin_pass_at_k` = ``1-(1-c/n)^k`` and :func:`plugin_pass_hat_k` =
  ``(c/n)^k``, as used by Fair Forge's ``Agentic`` metric, for users who need to reproduce those numbers.

Conventions for ``k > n`` (shared by :func:`pass_at_k` and :func:`pass_hat_k`)
--------------------------------------------------------------------------------
No unbiased estimator of ``1-(1-p)^k`` or ``p^k`` exists from ``n < k`` trials: the expectation of any statistic of
a Binomial(n, p) count is a polynomial of degree at most ``n`` in ``p``, and these targets have degree ``k``.
The functions therefore return **NaN** for ``k > n`` -- never ``1.0`` (the classic bug: ``C(n-c,k) = 0`` makes
``1 - C(n-c,k)/C(n,k)`` look like 1). The single exception is **c = 0 (with n >= 1)**, which gives exactly ``0.0``
for every ``k``: with no success observed, the unbiased estimate at every ``k <= n``, the plug-in and the
maximum-likelihood estimate are all 0 at every ``k``, so the value does not depend on extrapolating beyond the
observed trials. With ``c >= 1`` (including ``c = n``) these estimators disagree for ``k > n`` (the plug-in says
``pass@k = 1`` for ``c = n``, a claim of certainty from ``n`` trials), so the value is NaN. ``n = 0`` (no recorded
trial) is NaN for every ``k``. Use :func:`agentstats.estimators.beta_pass_k` (or the hierarchical model) when
``k > n`` is needed.

Suite values (:func:`agentstats.estimators.suite_pass_k`) never rely on this convention: they drop tasks with
``n < k`` before averaging, whatever their ``c`` (keeping the ``c = 0`` zeros while dropping the NaNs would bias
suite values downwards).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import special

from agentstats.estimators._checks import check_counts_args, finish

__all__ = ["pass_at_k", "pass_hat_k", "plugin_pass_at_k", "plugin_pass_hat_k"]

#: Largest k computed with the explicit product form; larger k use the exact Beta-function identity
#: ``C(m,k)/C(n,k) = B(m+1, n-m) / B(m-k+1, n-m)`` through ``scipy.special.betaln`` (relative error ~1e-12).
_K_PRODUCT_MAX = 256

# ----------------------------------------------------------------------------------------------------------------
# unbiased estimators
# ----------------------------------------------------------------------------------------------------------------


def _log_comb_ratio(n: np.ndarray, m: np.ndarray, k: np.ndarray) -> np.ndarray:
    """``log(C(m, k) / C(n, k))`` elementwise for 1-D int arrays with ``1 <= k <= n`` and ``0 <= m <= n``.

    ``-inf`` where ``m < k``. For ``k <= _K_PRODUCT_MAX`` the product form
    ``sum_{i<k} log1p(-(n-m)/(n-i))`` is used (work proportional to the sum of k, elements sorted by k so each
    step touches only elements that still need a factor); larger k use the Beta-function identity
    ``C(m,k)/C(n,k) = B(m+1, n-m) / B(m-k+1, n-m)`` (``n > m``) evaluated with ``scipy.special.betaln``.
    """
    out = np.full(n.shape, -np.inf)
    ok = m >= k
    d = n - m  # "deficit": number of items that must be avoided
    out[ok & (d == 0)] = 0.0
    todo = ok & (d > 0)
    prod_idx = np.nonzero(todo & (k <= _K_PRODUCT_MAX))[0]
    if prod_idx.size:
        kk = k[prod_idx]
        if kk.min() == kk.max():
            order = np.arange(prod_idx.size)
        else:
            order = np.argsort(-kk, kind="stable")
        idx = prod_idx[order]
        kk = kk[order].astype(np.float64)
        nn = n[idx].astype(np.float64)
        dd = d[idx].astype(np.float64)
        acc = np.zeros(idx.size)
        neg_kk = -kk  # ascending
        for i in range(int(kk[0])):
            stop = int(np.searchsorted(neg_kk, -i, side="left"))  # elements with kk > i form a prefix
            acc[:stop] += np.log1p(-dd[:stop] / (nn[:stop] - i))
        out[idx] = acc
    beta_idx = np.nonzero(todo & (k > _K_PRODUCT_MAX))[0]
    if beta_idx.size:
        mm = m[beta_idx].astype(np.float64)
        dd = d[beta_idx].astype(np.float64)
        kk = k[beta_idx].astype(np.float64)
        out[beta_idx] = special.betaln(mm + 1.0, dd) - special.betaln(mm - kk + 1.0, dd)
    return out


def _unbiased(n: Any, c: Any, k: Any, func: str, at: bool) -> float | np.ndarray:
    n_b, c_b, k_b, scalar = check_counts_args(n, c, k, func)
    shape = n_b.shape
    n1, c1, k1 = n_b.ravel(), c_b.ravel(), k_b.ravel()
    out = np.full(n1.shape, np.nan)
    defined = k1 <= n1
    if defined.any():
        nd, cd, kd = n1[defined], c1[defined], k1[defined]
        if at:  # 1 - C(n-c, k)/C(n, k)
            out[defined] = -np.expm1(_log_comb_ratio(nd, nd - cd, kd))
        else:  # C(c, k)/C(n, k)
            out[defined] = np.exp(_log_comb_ratio(nd, cd, kd))
    out[(c1 == 0) & (n1 >= 1)] = 0.0  # no success observed: exactly 0 for every k (module docstring)
    return finish(out.reshape(shape), scalar)


def pass_at_k(n: Any, c: Any, k: Any) -> float | np.ndarray:
    """Unbiased estimator of pass@k = 1 - (1-p)^k from ``c`` successes in ``n`` trials.

    ``pass_at_k(n, c, k) = 1 - C(n-c, k) / C(n, k)`` (Chen et al. 2021, "Evaluating Large Language Models Trained
    on Code", arXiv 2107.03374, eq. 1): the share of ``k``-subsets of the ``n`` trials that contain a success.

    Parameters
    ----------
    n, c, k : int or array_like of int
        Trials (missing trials excluded), successes, and the ``k`` of pass@k. Broadcast together with numpy rules.
        Integer-valued floats are accepted.

    Returns
    -------
    float or numpy.ndarray
        A Python float when all three inputs are scalars, else a float64 array of the broadcast shape.
        NaN where ``k > n`` and ``c >= 1``, and wherever ``n = 0``; exactly ``0.0`` whenever ``c = 0`` and
        ``n >= 1``, for every ``k`` (see the module docstring for why).

    Raises
    ------
    ValueError
        If ``n`` or ``c`` is negative, ``c > n``, ``k < 1``, an input is not integer-valued (or is boolean / NaN),
        or the shapes do not broadcast.

    Notes
    -----
    Computed as ``-expm1(sum_{i<k} log1p(-c/(n-i)))`` (the product form
    ``C(n-c,k)/C(n,k) = prod_{i<k} (n-c-i)/(n-i)`` in logs), so there is no overflow at large ``n`` and no
    cancellation when pass@k is close to 0 or to 1. For ``k > 256`` the exact identity
    ``C(n-c,k)/C(n,k) = B(n-c+1, c)/B(n-c-k+1, c)`` is evaluated with ``scipy.special.betaln``.

    Examples
    --------
    >>> round(pass_at_k(10, 7, 3), 6)
    0.991667
    >>> pass_at_k(2, 0, 5)
    0.0
    """
    return _unbiased(n, c, k, "pass_at_k", at=True)


def pass_hat_k(n: Any, c: Any, k: Any) -> float | np.ndarray:
    """Unbiased estimator of pass^k = p^k from ``c`` successes in ``n`` trials.

    ``pass_hat_k(n, c, k) = C(c, k) / C(n, k)`` (Yao et al. 2024, "tau-bench", arXiv 2406.12045, sec. 5): the share
    of ``k``-subsets of the ``n`` trials in which every trial succeeds.

    Parameters
    ----------
    n, c, k : int or array_like of int
        Trials (missing trials excluded), successes, and the ``k`` of pass^k. Broadcast together with numpy rules.
        Integer-valued floats are accepted.

    Returns
    -------
    float or numpy.ndarray
        A Python float when all inputs are scalars, else a float64 array of the broadcast shape. NaN where
        ``k > n`` and ``c >= 1`` (also for ``c = n``) and wherever ``n = 0``; exactly ``0.0`` whenever ``c = 0``
        and ``n >= 1``, for every ``k``.

    Raises
    ------
    ValueError
        If ``n`` or ``c`` is negative, ``c > n``, ``k < 1``, an input is not integer-valued, or shapes do not
        broadcast.

    Notes
    -----
    Computed as ``exp(sum_{i<k} log1p(-(n-c)/(n-i)))`` (product form ``prod_{i<k} (c-i)/(n-i)``); for ``k > 256``
    by ``C(c,k)/C(n,k) = B(c+1, n-c)/B(c-k+1, n-c)`` with ``scipy.special.betaln``.

    Examples
    --------
    >>> round(pass_hat_k(10, 7, 3), 6)
    0.291667
    """
    return _unbiased(n, c, k, "pass_hat_k", at=False)


# ----------------------------------------------------------------------------------------------------------------
# plug-in estimators
# ----------------------------------------------------------------------------------------------------------------


def plugin_pass_at_k(n: Any, c: Any, k: Any) -> float | np.ndarray:
    """Plug-in (biased) pass@k: ``1 - (1 - c/n)^k``, as computed by Fair Forge's ``Agentic`` metric.

    It plugs the observed success rate into ``1-(1-p)^k``. By Jensen's inequality (the map is concave in ``p``) it
    is biased **downwards** for ``k >= 2``; prefer :func:`pass_at_k` (unbiased, ``k <= n``) or
    :func:`beta_pass_k`. Offered so that numbers from Fair Forge can be reproduced and compared.

    Parameters
    ----------
    n, c, k : int or array_like of int
        Trials, successes and ``k``; broadcast together. ``k > n`` is allowed (that is the plug-in's only appeal).

    Returns
    -------
    float or numpy.ndarray
        Float for scalar inputs, else float64 array; NaN where ``n = 0``.

    Raises
    ------
    ValueError
        As :func:`pass_at_k`.
    """
    n_b, c_b, k_b, scalar = check_counts_args(n, c, k, "plugin_pass_at_k")
    with np.errstate(divide="ignore", invalid="ignore"):
        out = -np.expm1(k_b * np.log1p(-c_b / n_b))
    out = np.where(n_b == 0, np.nan, out)
    return finish(out, scalar)


def plugin_pass_hat_k(n: Any, c: Any, k: Any) -> float | np.ndarray:
    """Plug-in (biased) pass^k: ``(c/n)^k``, as computed by Fair Forge's ``Agentic`` metric.

    It plugs the observed success rate into ``p^k``. By Jensen's inequality (convex in ``p``) it is biased
    **upwards** for ``k >= 2`` (e.g. ``n = 2, c = 1`` gives ``0.25`` for pass^2 where the unbiased value is 0).
    Prefer :func:`pass_hat_k` or :func:`beta_pass_k`.

    Parameters
    ----------
    n, c, k : int or array_like of int
        Trials, successes and ``k``; broadcast together. ``k > n`` is allowed.

    Returns
    -------
    float or numpy.ndarray
        Float for scalar inputs, else float64 array; NaN where ``n = 0``.

    Raises
    ------
    ValueError
        As :func:`pass_hat_k`.
    """
    n_b, c_b, k_b, scalar = check_counts_args(n, c, k, "plugin_pass_hat_k")
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.power(c_b / n_b, k_b.astype(np.float64))
    out = np.where(n_b == 0, np.nan, out)
    return finish(out, scalar)



"""Frequentist and closed-form Bayesian estimators of pass@k and pass^k from success counts.

For one agent on one task with success probability ``p``, **pass@k** = ``1 - (1-p)^k`` (at least one of ``k``
independent trials succeeds) and **pass^k** = ``p^k`` (all ``k`` succeed). From ``n`` trials with ``c`` successes
this module gives

* the unbiased estimators :func:`pass_at_k` = ``1 - C(n-c,k)/C(n,k)`` (Chen et al. 2021, "Evaluating Large
  Language Models Trained on Code", arXiv 2107.03374) and :func:`pass_hat_k` = ``C(c,k)/C(n,k)`` (Yao et al. 2024,
  "tau-bench", arXiv 2406.12045), vectorized and numerically stable;
* the plug-in (biased) estimators :func:`plugin_pass_at_k` = ``1-(1-c/n)^k`` and :func:`plugin_pass_hat_k` =
  ``(c/n)^k``, as used by Fair Forge's ``Agentic`` metric, for users who need to reproduce those numbers;
* suite values per agent, :func:`suite_pass_k`: the mean over tasks of per-task unbiased values, with the
  clustered (task-level) standard error and a task-cluster bootstrap interval;
* the exact Beta-Binomial posterior pushed through pass@k and pass^k, :func:`beta_pass_k` (no Monte Carlo).

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
trial) is NaN for every ``k``. Use :func:`beta_pass_k` (or the hierarchical model) when ``k > n`` is needed.

:func:`suite_pass_k` never relies on this convention: it drops tasks with ``n < k`` before averaging, whatever
their ``c`` (keeping the ``c = 0`` zeros while dropping the NaNs would bias suite values downwards).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd
from scipy import optimize, special, stats

from agentstats.counts import validate_counts

__all__ = [
    "beta_pass_k",
    "pass_at_k",
    "pass_hat_k",
    "plugin_pass_at_k",
    "plugin_pass_hat_k",
    "suite_pass_k",
]

#: Largest k computed with the explicit product form; larger k use the exact Beta-function identity
#: ``C(m,k)/C(n,k) = B(m+1, n-m) / B(m-k+1, n-m)`` through ``scipy.special.betaln`` (relative error ~1e-12).
_K_PRODUCT_MAX = 256

#: Upper bound on the number of entries of one bootstrap weight block (memory control).
_BOOT_BLOCK_ENTRIES = 4_000_000


# ----------------------------------------------------------------------------------------------------------------
# input checking
# ----------------------------------------------------------------------------------------------------------------


def _as_int_array(x: Any, name: str, func: str) -> np.ndarray:
    """Return ``x`` as an int64 array, raising ValueError for booleans, non-numbers, NaN and non-integers."""
    arr = np.asarray(x)
    if arr.dtype == bool:
        raise ValueError(f"{func}: {name} must be integer counts, got booleans")
    if arr.dtype.kind in "iu":
        return arr.astype(np.int64, copy=False)
    if arr.dtype.kind == "f":
        bad = ~np.isfinite(arr) | (arr != np.round(arr))
        if bad.any():
            idx = tuple(int(i) for i in np.argwhere(bad)[0])
            raise ValueError(
                f"{func}: {name} must be integers, got {arr[idx] if arr.ndim else arr.item()!r}"
                + (f" at index {idx}" if arr.ndim else "")
                + f" ({int(bad.sum())} non-integer value(s))"
            )
        return arr.astype(np.int64)
    if arr.dtype == object:
        try:
            return _as_int_array(arr.astype(float), name, func)
        except (TypeError, ValueError) as exc:
            if isinstance(exc, ValueError) and str(exc).startswith(func):
                raise
            raise ValueError(f"{func}: {name} must be integer counts, got non-numeric values") from exc
    raise ValueError(f"{func}: {name} must be integer counts, got dtype {arr.dtype}")


def _first_bad(mask: np.ndarray) -> str:
    if mask.ndim == 0:
        return ""
    return f" at index {tuple(int(i) for i in np.argwhere(mask)[0])}"


def _check_counts_args(n: Any, c: Any, k: Any, func: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """Validate and broadcast ``n, c, k``; return int64 arrays and whether all inputs were scalars."""
    n_a = _as_int_array(n, "n", func)
    c_a = _as_int_array(c, "c", func)
    k_a = _as_int_array(k, "k", func)
    scalar = n_a.ndim == 0 and c_a.ndim == 0 and k_a.ndim == 0
    try:
        n_b, c_b, k_b = np.broadcast_arrays(n_a, c_a, k_a)
    except ValueError as exc:
        raise ValueError(
            f"{func}: n, c, k shapes {n_a.shape}, {c_a.shape}, {k_a.shape} do not broadcast"
        ) from exc
    for arr, name in ((n_b, "n"), (c_b, "c")):
        neg = arr < 0
        if neg.any():
            raise ValueError(f"{func}: {name} must be >= 0, got {arr[neg].flat[0]}{_first_bad(neg)}")
    over = c_b > n_b
    if over.any():
        raise ValueError(
            f"{func}: c must be <= n, got c={c_b[over].flat[0]} > n={n_b[over].flat[0]}{_first_bad(over)}"
        )
    small = k_b < 1
    if small.any():
        raise ValueError(f"{func}: k must be >= 1, got k={k_b[small].flat[0]}{_first_bad(small)}")
    return n_b, c_b, k_b, scalar


def _finish(out: np.ndarray, scalar: bool) -> float | np.ndarray:
    out = out + 0.0  # turn -0.0 into 0.0
    return float(out) if scalar else out


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
    n_b, c_b, k_b, scalar = _check_counts_args(n, c, k, func)
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
    return _finish(out.reshape(shape), scalar)


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
    n_b, c_b, k_b, scalar = _check_counts_args(n, c, k, "plugin_pass_at_k")
    with np.errstate(divide="ignore", invalid="ignore"):
        out = -np.expm1(k_b * np.log1p(-c_b / n_b))
    out = np.where(n_b == 0, np.nan, out)
    return _finish(out, scalar)


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
    n_b, c_b, k_b, scalar = _check_counts_args(n, c, k, "plugin_pass_hat_k")
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.power(c_b / n_b, k_b.astype(np.float64))
    out = np.where(n_b == 0, np.nan, out)
    return _finish(out, scalar)


# ----------------------------------------------------------------------------------------------------------------
# exact Beta-Binomial posterior
# ----------------------------------------------------------------------------------------------------------------


def _hdi_of_power(a: float, b: float, k: int, prob: float) -> tuple[float, float]:
    """Shortest interval of probability ``prob`` for ``Z = X^k`` with ``X ~ Beta(a, b)``; exact, no sampling.

    The interval is ``[Q(t)^k, Q(t + prob)^k]`` with ``Q`` the Beta quantile function and ``t`` the lower tail mass
    in ``[0, 1 - prob]``. Its width is stationary where the density of ``Z`` is equal at both ends, i.e. where
    ``h(t) = log f_Z(lo) - log f_Z(hi) = 0`` with ``log f_Z`` at ``z = x^k`` equal (up to a constant) to
    ``(a-k) log x + (b-1) log(1-x)``. The root is found with Brent's method; the endpoints ``t = 0`` and
    ``t = 1 - prob`` are also candidates (monotone densities), and the narrowest candidate wins, so for a density of
    ``Z`` that is not unimodal the result is the shortest single interval.
    """
    alpha = 1.0 - prob

    def x_lo(t: float) -> float:
        return float(stats.beta.ppf(t, a, b))

    def x_hi(t: float) -> float:
        return float(stats.beta.isf(alpha - t, a, b))

    def logf(x: float) -> float:
        return float(special.xlogy(a - k, x) + special.xlog1py(b - 1.0, -x))

    def h(t: float) -> float:
        with np.errstate(invalid="ignore"):
            v = logf(x_lo(t)) - logf(x_hi(t))
        return float(np.clip(v, -1e10, 1e10)) if not np.isnan(v) else 0.0

    def bounds(t: float) -> tuple[float, float]:
        return x_lo(t) ** k, x_hi(t) ** k

    cands = [0.0, alpha]
    h0, h1 = h(0.0), h(alpha)
    if h0 < 0.0 < h1:
        cands.append(optimize.brentq(h, 0.0, alpha, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=500))
    best = min((bounds(t) for t in cands), key=lambda lh: lh[1] - lh[0])
    return best


def beta_pass_k(
    n: Any,
    c: Any,
    k: Any,
    prior: tuple[float, float] = (1.0, 1.0),
    ci_prob: float = 0.95,
    hdi: bool = False,
) -> pd.DataFrame:
    """Exact Beta-Binomial posterior of pass@k and pass^k for one task (per element), with plug-in values.

    With a ``Beta(a, b)`` prior on a task's success probability ``p`` and ``c`` successes in ``n`` trials, the
    posterior is ``p ~ Beta(a + c, b + n - c) = Beta(a', b')`` (Beta-Binomial conjugacy; Gelman et al.,
    "Bayesian Data Analysis", 3rd ed., 2013, ch. 2). Pushed through ``pass@k = 1 - (1-p)^k`` and
    ``pass^k = p^k``:

    * posterior means from Beta-function ratios, ``E[p^k] = B(a'+k, b') / B(a', b')`` and
      ``E[(1-p)^k] = B(a', b'+k) / B(a', b')`` (``scipy.special.betaln``);
    * equal-tailed credible intervals (``"eti"``) from the Beta quantiles ``scipy.stats.beta.ppf`` transformed by the
      increasing maps ``p -> p^k`` and ``p -> 1-(1-p)^k`` (quantiles commute with increasing maps);
    * optionally (``hdi=True``) the highest-density interval of the transformed variable, computed exactly by
      solving for equal density of ``p^k`` (or ``(1-p)^k``) at both ends with the closed-form Beta CDF/quantiles
      (no Monte Carlo; a scalar root-finding per distinct ``(a', b', k)``).

    No Monte Carlo anywhere; any ``k >= 1`` is allowed, including ``k > n`` (then the answer leans on the prior).
    Also returned: the plug-in values ``1-(1-c/n)^k`` and ``(c/n)^k`` used by Fair Forge's ``Agentic`` metric,
    named ``plugin_*`` because they are biased (see :func:`plugin_pass_at_k`).

    Parameters
    ----------
    n, c, k : int or array_like of int
        Trials (missing excluded), successes, and ``k``. Broadcast together; ``n = 0`` gives the prior.
    prior : tuple of float, default (1, 1)
        ``(a, b)`` of the Beta prior, both > 0. ``(1, 1)`` is uniform; ``(0.5, 0.5)`` is Jeffreys'.
    ci_prob : float, default 0.95
        Probability mass of the credible interval, in (0, 1).
    hdi : bool, default False
        False: equal-tailed intervals (``ci_kind = "eti"``). True: highest-density intervals (``"hdi"``; the
        shortest single interval of that mass, which is the HDI whenever the transformed density is unimodal).

    Returns
    -------
    pandas.DataFrame
        One row per element of the broadcast ``(n, c, k)`` (flattened in C order), columns: ``n, c, k, prior_a,
        prior_b, post_a, post_b, p_mean, ci_kind, ci_prob, pass_at_k_mean, pass_at_k_ci_low, pass_at_k_ci_high,
        pass_hat_k_mean, pass_hat_k_ci_low, pass_hat_k_ci_high, plugin_pass_at_k, plugin_pass_hat_k``. All values
        are probabilities in [0, 1]; ``plugin_*`` are NaN where ``n = 0``.

    Raises
    ------
    ValueError
        For invalid counts (as :func:`pass_at_k`), a prior that is not two finite positive numbers, or
        ``ci_prob`` outside (0, 1).

    Examples
    --------
    >>> row = beta_pass_k(10, 7, 3).iloc[0]
    >>> round(float(row.pass_at_k_mean), 6), round(float(row.pass_hat_k_mean), 6)
    (0.945055, 0.32967)
    """
    func = "beta_pass_k"
    n_b, c_b, k_b, _ = _check_counts_args(n, c, k, func)
    try:
        a, b = (float(v) for v in prior)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{func}: prior must be a pair (a, b) of positive numbers, got {prior!r}") from exc
    if not (np.isfinite(a) and np.isfinite(b) and a > 0 and b > 0):
        raise ValueError(f"{func}: prior (a, b) must be finite and > 0, got {prior!r}")
    ci_prob = float(ci_prob)
    if not 0.0 < ci_prob < 1.0:
        raise ValueError(f"{func}: ci_prob must be in (0, 1), got {ci_prob}")
    n1, c1, k1 = n_b.ravel(), c_b.ravel(), k_b.ravel()
    ap = a + c1
    bp = b + (n1 - c1)
    kf = k1.astype(np.float64)
    log_b = special.betaln(ap, bp)
    hat_mean = np.exp(special.betaln(ap + kf, bp) - log_b)
    at_mean = -np.expm1(special.betaln(ap, bp + kf) - log_b)

    tail = (1.0 - ci_prob) / 2.0
    if not hdi:
        p_lo = stats.beta.ppf(tail, ap, bp)
        p_hi = stats.beta.isf(tail, ap, bp)
        q_lo = stats.beta.ppf(tail, bp, ap)  # 1-p ~ Beta(b', a'); lower quantile of 1-p = 1 - p_hi
        q_hi = stats.beta.isf(tail, bp, ap)
        hat_lo, hat_hi = p_lo**kf, p_hi**kf
        with np.errstate(divide="ignore"):
            at_lo = -np.expm1(kf * np.log(q_hi))
            at_hi = -np.expm1(kf * np.log(q_lo))
        kind = "eti"
    else:
        hat_lo = np.empty(n1.size)
        hat_hi = np.empty(n1.size)
        at_lo = np.empty(n1.size)
        at_hi = np.empty(n1.size)
        keys = np.stack([ap, bp, kf], axis=1)
        uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
        inverse = inverse.ravel()
        for j, (aa, bb, kk) in enumerate(uniq):
            sel = inverse == j
            lo, hi = _hdi_of_power(aa, bb, int(kk), ci_prob)
            hat_lo[sel], hat_hi[sel] = lo, hi
            zlo, zhi = _hdi_of_power(bb, aa, int(kk), ci_prob)  # Z = (1-p)^k; pass@k = 1 - Z
            at_lo[sel], at_hi[sel] = 1.0 - zhi, 1.0 - zlo
        kind = "hdi"

    with np.errstate(divide="ignore", invalid="ignore"):
        plug_at = np.where(n1 == 0, np.nan, -np.expm1(kf * np.log1p(-c1 / n1)))
        plug_hat = np.where(n1 == 0, np.nan, np.power(c1 / n1, kf))
    return pd.DataFrame(
        {
            "n": n1,
            "c": c1,
            "k": k1,
            "prior_a": a,
            "prior_b": b,
            "post_a": ap,
            "post_b": bp,
            "p_mean": ap / (ap + bp),
            "ci_kind": kind,
            "ci_prob": ci_prob,
            "pass_at_k_mean": at_mean + 0.0,
            "pass_at_k_ci_low": at_lo + 0.0,
            "pass_at_k_ci_high": at_hi + 0.0,
            "pass_hat_k_mean": hat_mean,
            "pass_hat_k_ci_low": hat_lo,
            "pass_hat_k_ci_high": hat_hi,
            "plugin_pass_at_k": plug_at + 0.0,
            "plugin_pass_hat_k": plug_hat,
        }
    )


# ----------------------------------------------------------------------------------------------------------------
# suite values per agent
# ----------------------------------------------------------------------------------------------------------------


def _check_k_list(k: Any, func: str) -> list[int] | None:
    if k is None:
        return None
    ks = [k] if np.ndim(k) == 0 and not isinstance(k, (list, tuple, set)) else list(k)
    if not ks:
        raise ValueError(f"{func}: k must be None, a positive integer or a non-empty iterable of them")
    out = []
    for v in ks:
        try:
            ok = not isinstance(v, (bool, np.bool_, str)) and float(v).is_integer() and int(v) >= 1
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise ValueError(f"{func}: every k must be an integer >= 1, got {v!r}")
        out.append(int(v))
    return sorted(set(out))


def _bootstrap_means(values: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Task-cluster bootstrap of column means of ``values`` (T tasks x m quantities); returns (n_boot, m).

    Each resample draws T tasks with replacement; it is represented as a multinomial(T, 1/T) weight vector over
    tasks, so a block of resamples is one matrix product ``W @ values / T``.
    """
    t_count, m = values.shape
    out = np.empty((n_boot, m))
    block = max(1, min(n_boot, _BOOT_BLOCK_ENTRIES // max(t_count, 1)))
    offsets_full = np.arange(block, dtype=np.int64)[:, None] * t_count
    for start in range(0, n_boot, block):
        size = min(block, n_boot - start)
        idx = rng.integers(0, t_count, size=(size, t_count))
        flat = (idx + offsets_full[:size]).ravel()
        weights = np.bincount(flat, minlength=size * t_count).reshape(size, t_count).astype(np.float64)
        out[start : start + size] = weights @ values / t_count
    return out


def suite_pass_k(
    counts: pd.DataFrame,
    k: int | Iterable[int] | None = None,
    *,
    n_boot: int = 2000,
    ci_prob: float = 0.95,
    seed: int = 0,
) -> pd.DataFrame:
    """Per-agent suite pass@k and pass^k: mean over tasks of the per-task unbiased values, with uncertainty.

    For agent ``a`` and each ``k``, the suite value is ``(1/T) sum_t pass_at_k(n_t, c_t, k)`` (likewise pass^k) over
    the ``T`` tasks of ``a`` with ``n_t >= k`` -- a mean of per-task values, never a function of pooled counts and
    never divided by a global trial count (Chen et al. 2021, arXiv 2107.03374; Yao et al. 2024, arXiv 2406.12045).

    * Tasks with ``n = 0`` (every trial missing) are excluded and listed in ``no_trial_tasks``.
    * By default ``k`` runs over ``1 .. min n`` of the agent's tasks with ``n >= 1``, so no task is dropped. An
      explicit ``k`` may exceed that: tasks with ``1 <= n < k`` are then **dropped for that k** (whatever their
      ``c``) and listed in ``dropped_tasks``; nothing is imputed. With unequal trial counts (e.g. METR runs) this
      changes the task population with ``k``: read ``n_tasks`` / ``dropped_tasks`` alongside the values.
    * Standard error: tasks are the clusters, ``se = sd_t(values, ddof=1) / sqrt(T)`` (the clustered standard
      error of Miller 2024, "Adding Error Bars to Evals", arXiv 2411.00640, with each task's trials reduced to its
      per-task estimate; it includes both between-task spread and within-task trial noise).
    * Interval: task-cluster percentile bootstrap, ``n_boot`` resamples of the ``T`` tasks with replacement
      (Efron & Tibshirani 1993, ch. 13); pass@k and pass^k, and all ``k`` sharing a task set, use the same
      resamples. Vectorized as multinomial weight matrices. These are frequentist confidence intervals for the mean
      over the task population the tasks were sampled from.

    Parameters
    ----------
    counts : pandas.DataFrame
        One row per agent x task with columns ``agent, task_id, n, c`` and optionally ``n_missing`` (integers,
        ``0 <= c <= n``; ``n`` excludes missing trials), as returned by ``to_counts``.
    k : int, iterable of int, or None
        The k values (each >= 1). None: per agent, ``1 .. min n`` over its tasks with ``n >= 1``.
    n_boot : int, default 2000
        Bootstrap resamples (>= 0; 0 skips the bootstrap and leaves the interval NaN).
    ci_prob : float, default 0.95
        Interval probability, in (0, 1).
    seed : int, default 0
        Seed (>= 0). Resamples for an agent come from ``numpy.random.default_rng([seed, crc32(agent), T])``, so
        results are deterministic and do not depend on which other agents or k values are in the call.

    Returns
    -------
    pandas.DataFrame
        One row per (agent, k), agents in order of first appearance, k ascending. Columns: ``agent, k, n_tasks,
        n_tasks_dropped, dropped_tasks`` (list of task ids with ``1 <= n < k``), ``n_tasks_no_trials,
        no_trial_tasks`` (list of task ids with ``n = 0``), ``n_trials, n_missing`` (summed over the tasks
        used), ``pass_at_k, pass_at_k_se, pass_at_k_ci_low, pass_at_k_ci_high, pass_hat_k, pass_hat_k_se,
        pass_hat_k_ci_low, pass_hat_k_ci_high, ci_prob, n_boot``. Values are NaN where ``n_tasks = 0``; the SE and
        interval are NaN where ``n_tasks < 2`` (one cluster says nothing about spread). An agent with no task
        having ``n >= 1`` gets one row ``k = 1`` (default k) with ``n_tasks = 0``. ``attrs`` records
        ``seed, n_boot, ci_prob, ci_method``.

    Raises
    ------
    ValueError
        If the table lacks columns, has non-integer / negative counts, ``c > n``, duplicate (agent, task_id) rows
        (every problem is listed with its row label, agent and task), or ``k``, ``n_boot``, ``ci_prob``, ``seed``
        are invalid.
    TypeError
        If ``counts`` is not a DataFrame.
    """
    func = "suite_pass_k"
    df = validate_counts(counts, func)
    ks_req = _check_k_list(k, func)
    if isinstance(n_boot, (bool, np.bool_)) or int(n_boot) != n_boot or n_boot < 0:
        raise ValueError(f"{func}: n_boot must be an integer >= 0, got {n_boot!r}")
    n_boot = int(n_boot)
    ci_prob = float(ci_prob)
    if not 0.0 < ci_prob < 1.0:
        raise ValueError(f"{func}: ci_prob must be in (0, 1), got {ci_prob}")
    if isinstance(seed, (bool, np.bool_)) or int(seed) != seed or seed < 0:
        raise ValueError(f"{func}: seed must be an integer >= 0, got {seed!r}")
    seed = int(seed)
    tail = (1.0 - ci_prob) / 2.0

    rows: list[dict[str, Any]] = []
    for agent, grp in df.groupby("agent", sort=False, observed=True):
        n_all = grp["n"].to_numpy()
        has = n_all >= 1
        no_trial = grp.loc[~has, "task_id"].tolist()
        g = grp[has]
        n_t = g["n"].to_numpy()
        c_t = g["c"].to_numpy()
        miss_t = g["n_missing"].to_numpy()
        tasks = g["task_id"].to_numpy()
        if ks_req is not None:
            ks = ks_req
        elif n_t.size:
            ks = list(range(1, int(n_t.min()) + 1))
        else:
            ks = [1]
        agent_seed = zlib.crc32(str(agent).encode("utf-8"))
        # group k values by the task set they use (sets are nested, so the set size identifies the set)
        by_size: dict[int, list[int]] = {}
        for kv in ks:
            by_size.setdefault(int((n_t >= kv).sum()), []).append(kv)
        results: dict[int, dict[str, Any]] = {}
        for size, k_group in by_size.items():
            use = n_t >= k_group[0]
            nn, cc = n_t[use], c_t[use]
            kk = np.asarray(k_group)
            at_vals = pass_at_k(nn[:, None], cc[:, None], kk[None, :]) if size else np.empty((0, len(kk)))
            hat_vals = pass_hat_k(nn[:, None], cc[:, None], kk[None, :]) if size else np.empty((0, len(kk)))
            values = np.concatenate([np.atleast_2d(at_vals), np.atleast_2d(hat_vals)], axis=1)
            means = values.mean(axis=0) if size else np.full(2 * len(kk), np.nan)
            se = values.std(axis=0, ddof=1) / np.sqrt(size) if size >= 2 else np.full(2 * len(kk), np.nan)
            if size >= 2 and n_boot > 0:
                rng = np.random.default_rng([seed, agent_seed, size])
                boot = _bootstrap_means(values, n_boot, rng)
                lo, hi = np.quantile(boot, [tail, 1.0 - tail], axis=0)
            else:
                lo = hi = np.full(2 * len(kk), np.nan)
            m = len(kk)
            for j, kv in enumerate(k_group):
                results[kv] = {
                    "agent": agent,
                    "k": kv,
                    "n_tasks": size,
                    "n_tasks_dropped": int((~use).sum()),
                    "dropped_tasks": tasks[~use].tolist(),
                    "n_tasks_no_trials": len(no_trial),
                    "no_trial_tasks": list(no_trial),
                    "n_trials": int(nn.sum()),
                    "n_missing": int(miss_t[use].sum()),
                    "pass_at_k": means[j],
                    "pass_at_k_se": se[j],
                    "pass_at_k_ci_low": lo[j],
                    "pass_at_k_ci_high": hi[j],
                    "pass_hat_k": means[m + j],
                    "pass_hat_k_se": se[m + j],
                    "pass_hat_k_ci_low": lo[m + j],
                    "pass_hat_k_ci_high": hi[m + j],
                    "ci_prob": ci_prob,
                    "n_boot": n_boot,
                }
        rows.extend(results[kv] for kv in ks)
    out = pd.DataFrame(rows)
    if out.empty:
        out = pd.DataFrame(
            columns=[
                "agent", "k", "n_tasks", "n_tasks_dropped", "dropped_tasks", "n_tasks_no_trials", "no_trial_tasks",
                "n_trials", "n_missing", "pass_at_k", "pass_at_k_se", "pass_at_k_ci_low", "pass_at_k_ci_high",
                "pass_hat_k", "pass_hat_k_se", "pass_hat_k_ci_low", "pass_hat_k_ci_high", "ci_prob", "n_boot",
            ]
        )  # fmt: skip
    out.attrs.update(
        {"seed": seed, "n_boot": n_boot, "ci_prob": ci_prob, "ci_method": "task-cluster percentile bootstrap"}
    )
    return out

"""Exact Beta-Binomial posterior of pass@k and pass^k for one task, in closed form (no Monte Carlo).

With a ``Beta(a, b)`` prior on a task's success probability and ``c`` successes in ``n`` trials the posterior is
``Beta(a + c, b + n - c)`` (conjugacy; Gelman et al., "Bayesian Data Analysis", 3rd ed., 2013, ch. 2). Its
pass@k = ``1 - (1-p)^k`` and pass^k = ``p^k`` have posterior means given by Beta-function ratios and credible
intervals given by Beta quantiles pushed through these increasing maps; see :func:`beta_pass_k`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy import optimize, special, stats

from agentstats.estimators._checks import check_counts_args
from agentstats.intervals import CI_PROB, CiKind, check_ci

__all__ = ["beta_pass_k", "failure_rate_upper"]


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
    ci_prob: float = CI_PROB,
    ci_kind: CiKind = "eti",
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
    * optionally (``ci_kind="hdi"``) the highest-density interval of the transformed variable, computed exactly by
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
    ci_prob : float, default :data:`agentstats.intervals.CI_PROB` (0.95)
        Probability mass of the credible interval, in (0, 1).
    ci_kind : {"eti", "hdi"}, default "eti"
        ``"eti"``: equal-tailed intervals. ``"hdi"``: highest-density intervals (the shortest single interval of
        that mass, which is the HDI whenever the transformed density is unimodal).

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
        For invalid counts (as :func:`pass_at_k`), a prior that is not two finite positive numbers,
        ``ci_prob`` outside (0, 1), or ``ci_kind`` other than ``"eti"`` / ``"hdi"``.

    Examples
    --------
    >>> row = beta_pass_k(10, 7, 3).iloc[0]
    >>> round(float(row.pass_at_k_mean), 6), round(float(row.pass_hat_k_mean), 6)
    (0.945055, 0.32967)
    """
    func = "beta_pass_k"
    n_b, c_b, k_b, _ = check_counts_args(n, c, k, func)
    try:
        a, b = (float(v) for v in prior)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{func}: prior must be a pair (a, b) of positive numbers, got {prior!r}") from exc
    if not (np.isfinite(a) and np.isfinite(b) and a > 0 and b > 0):
        raise ValueError(f"{func}: prior (a, b) must be finite and > 0, got {prior!r}")
    ci_prob, ci_kind = check_ci(ci_prob, ci_kind, func)
    n1, c1, k1 = n_b.ravel(), c_b.ravel(), k_b.ravel()
    ap = a + c1
    bp = b + (n1 - c1)
    kf = k1.astype(np.float64)
    log_b = special.betaln(ap, bp)
    hat_mean = np.exp(special.betaln(ap + kf, bp) - log_b)
    at_mean = -np.expm1(special.betaln(ap, bp + kf) - log_b)

    tail = (1.0 - ci_prob) / 2.0
    if ci_kind == "eti":
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


def failure_rate_upper(failures: int, n: int, ci_prob: float) -> float | None:
    """Return the one-sided ``ci_prob`` upper bound on a failure rate from ``failures`` of ``n``.

    Clopper & Pearson 1934, Biometrika 26:404-413.

    The Clopper-Pearson bound ``Beta^-1(ci_prob; failures + 1, n - failures)``; with no failure
    ``1 - (1 - ci_prob)^(1 / n)``, about ``3 / n`` at 95 %. None for ``n = 0``; 1 when every example failed.

    Parameters
    ----------
    failures, n : int
        Failures among ``n`` independent trials (``0 <= failures <= n``).
    ci_prob : float
        One-sided probability of the bound, in (0, 1).

    Returns
    -------
    float or None
        The bound on the failure rate; with no failure about ``3 / n`` at 95 % (the "rule of three", Hanley &
        Lippman-Hand 1983, JAMA 249:1743-1745).
    """
    if n <= 0:
        return None
    if failures >= n:
        return 1.0
    return float(stats.beta.ppf(ci_prob, failures + 1, n - failures))

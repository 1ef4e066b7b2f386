"""Dirichlet-process posteriors of a population mean, a paired difference and a ratio of means, over examples.

The statistics below three callers: the release gate (:mod:`agentstats.gating.checks`), the metric summaries
(:mod:`agentstats.estimators.metric_means`) and the loop's ``P(better than the best)``
(:mod:`agentstats.optimize`). numpy and scipy only.

Model (one for binary and bounded continuous scores). The examples of an eval set are a sample from the
population of inputs the system will meet; the quantity gated is the population mean of the per-example score
(the mean over trials where an example has several). Its posterior is that of a Dirichlet process (Ferguson 1973,
"A Bayesian analysis of some nonparametric problems", Annals of Statistics 1:209-230): with ``n`` observed values
``y_i`` and a prior of total mass ``a`` placed on the bounds, the posterior distribution of the population is
``sum_i W_i delta(y_i) + W_0 delta(0) + W_1 delta(1)`` with ``(W_1..W_n, W_0, W_1) ~ Dirichlet(1, .., 1, a/2, a/2)``,
and the population mean is ``sum_i W_i y_i + W_1``. Without the prior atoms this is Rubin's Bayesian bootstrap
(Rubin 1981, "The Bayesian bootstrap", Annals of Statistics 9:130-134); the atoms keep a small or all-equal sample
from giving a point mass. For a binary metric with one trial per example the mean's posterior is exactly the
conjugate ``Beta(a/2 + c, a/2 + n - c)`` (``c`` successes; sums of Dirichlet components are Beta): with the
default ``a = 2`` the Beta-Binomial model with a uniform prior, computed here in closed form.

Paired difference. Candidate and baseline results on the same examples are pairs ``(y_i, x_i)``; the same
Dirichlet-process posterior over pairs, with the prior mass ``a`` split between the two discordant corners
``(1, 0)`` and ``(0, 1)``, gives the posterior of ``mean(y) - mean(x)`` as ``sum_i W_i (y_i - x_i) + W_(1,0) -
W_(0,1)``. Its margins are the posteriors above (each system's prior is ``a/2`` at 0 and ``a/2`` at 1). For binary
metrics this is the Dirichlet(n00, n01 + a/2, n10 + a/2, n11) posterior of the paired 2 x 2 table: with ``a = 2``
one pseudo-pair in each discordant cell, the Bayesian counterpart of Bonett & Price's adjusted Wald interval for
paired proportions (Bonett & Price 2012, Journal of Educational and Behavioral Statistics 37:479-488), which adds
1 to each discordant count. Putting the prior on the discordant cells keeps the posterior of the difference from
being narrower than the data support: in ``validation/gate_simulation.py --prior-check`` the rate of a PASS at a true
regression of exactly the tolerance is at the nominal 5 % (4.7 % at 30 examples, 5.2 % at 100, +/- 0.4 points),
where a Jeffreys prior (1/2 in every cell) gives 6.7 % at 30 examples. Pairing matters: a hard example is hard
for both systems, so the differences vary far less than either mean.

Identical values (or pairs) share one Dirichlet component with their count as parameter (a sum of independent
Gamma(1) variables is Gamma(count)), so binary data cost a few components however many examples there are.

Binary pairs in closed form (:func:`paired_binary`). For a binary metric with one trial per example the paired
difference is ``W10 - W01`` of Dirichlet(``a00, a01, a10, a11``) = (n00, n01 + a/2, n10 + a/2, n11). By the
aggregation property ``S = W01 + W10 ~ Beta(a01 + a10, a00 + a11)`` and, independently of ``S``,
``U = W10 / S ~ Beta(a10, a01)`` (the neutrality of the Dirichlet; Ng, Tian & Tang 2011, *Dirichlet and Related
Distributions*, Wiley, sec. 2.2), so ``difference = S (2 U - 1)`` and

    P(difference < b) = E_S[ F_U((1 + b / S) / 2) ]            (F_U clipped to 0 below 0 and 1 above 1)

a one-dimensional integral, computed by Gauss-Legendre quadrature over the quantiles of ``S`` (the nodes sit where
``S`` has its mass however many examples there are), from where ``S = |b|`` on, in segments graded towards that
point (16 nodes each; within 1e-6 of adaptive quadrature in the tests). ``P(difference > 0) = 1 - F_U(1/2)``
and ``P(difference < 0) = F_U(1/2)`` exactly; the mean ``(a10 - a01) / A`` and the variance
``(a10 (A - a10) + a01 (A - a01) + 2 a10 a01) / (A^2 (A + 1))`` (``A`` the total) are the Dirichlet moments; the
credible interval is the quantiles by bisection on that CDF. Every function takes arrays of counts, so a simulation
decides many eval sets in one call. No Monte Carlo: a binary gate decision does not depend on the seed.

The judge correction of these posteriors (a calibrated judge's sensitivity and specificity) is
:mod:`agentstats.estimators.corrected`.

Efficiency (tokens, cost, latency): the ratio of the candidate's to the baseline's mean per example, by the
Bayesian bootstrap over paired examples (no prior atoms: usage is unbounded).

Sample size for an undecided check (:func:`examples_to_decide`): the posterior sd shrinks as ``1/sqrt(n)``
(posterior normality, Bernstein-von Mises; BDA3 sec. 4.1), so at the current effect size ``g`` (distance of the
posterior mean from the decision boundary) and sd ``s`` on ``n`` examples, the check is decided at probability
``p`` once ``g / (s sqrt(n / N)) >= z_p``, i.e. ``N = n (z_p s / g)^2``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special, stats

__all__ = [
    "PairedBinary",
    "Summary",
    "beta_summary",
    "difference_draws",
    "examples_to_decide",
    "is_binary",
    "mean_draws",
    "mean_posterior",
    "paired_binary",
    "ratio_draws",
    "summarize",
]


@dataclass(frozen=True)
class Summary:
    """Posterior summary: mean, sd and the equal-tailed credible interval at ``ci_prob``."""

    mean: float
    sd: float
    ci_low: float
    ci_high: float

    def as_dict(self) -> dict[str, float]:
        """Return the four numbers as a dict."""
        return {"mean": self.mean, "sd": self.sd, "ci_low": self.ci_low, "ci_high": self.ci_high}


def _weighted_means(alpha: np.ndarray, values: np.ndarray, n_draws: int, rng: np.random.Generator) -> np.ndarray:
    """``W @ values`` for ``n_draws`` Dirichlet(``alpha``) weight vectors ``W``, shape ``(n_draws, values.shape[1])``.

    The Gamma variables are normalised after the product (one pass over the draws fewer).
    """
    g = _gamma_draws(alpha, n_draws, rng)
    return (g @ values) / g.sum(axis=1, keepdims=True)


def _gamma_draws(alpha: np.ndarray, n_draws: int, rng: np.random.Generator) -> np.ndarray:
    """``(n_draws, len(alpha))`` independent Gamma(``alpha_j``, 1) draws (zero-parameter components are 0)."""
    g = np.zeros((n_draws, alpha.size))
    ones = alpha == 1.0  # Gamma(1) is the standard exponential, several times faster to draw
    g[:, ones] = rng.standard_exponential(size=(n_draws, int(ones.sum())))
    other = (alpha > 0) & ~ones
    g[:, other] = rng.gamma(alpha[other], size=(n_draws, int(other.sum())))
    return g


def mean_draws(y: np.ndarray, prior_strength: float, n_draws: int, rng: np.random.Generator) -> np.ndarray:
    """Posterior draws of the population mean of values ``y`` in [0, 1] (module docstring).

    Parameters
    ----------
    y : numpy.ndarray, shape (n,)
        Per-example values in [0, 1].
    prior_strength : float
        Prior mass ``a`` (half on 0, half on 1).
    n_draws : int
    rng : numpy.random.Generator

    Returns
    -------
    numpy.ndarray, shape (n_draws,)
    """
    vals, counts = np.unique(np.asarray(y, dtype=float), return_counts=True)
    atoms = np.concatenate([vals, [0.0, 1.0]])
    alpha = np.concatenate([counts.astype(float), [prior_strength / 2, prior_strength / 2]])
    return _weighted_means(alpha, atoms[:, None], n_draws, rng)[:, 0]


def is_binary(y: np.ndarray) -> bool:
    """Whether every value is 0 or 1."""
    y = np.asarray(y, dtype=float)
    return bool(np.all((y == 0.0) | (y == 1.0)))


def mean_posterior(
    y: np.ndarray, prior_strength: float, ci_prob: float, n_draws: int, rng: np.random.Generator
) -> tuple[Summary, np.ndarray | None, stats.rv_continuous | None]:
    """Summary of the population mean's posterior; exact Beta for binary values, else Monte Carlo draws.

    Returns
    -------
    (Summary, draws or None, frozen scipy Beta or None)
        Exactly one of ``draws`` and the Beta distribution is given.
    """
    y = np.asarray(y, dtype=float)
    if is_binary(y):
        c = float(y.sum())
        dist = stats.beta(prior_strength / 2 + c, prior_strength / 2 + y.size - c)
        return beta_summary(dist, ci_prob), None, dist
    d = mean_draws(y, prior_strength, n_draws, rng)
    return summarize(d, ci_prob), d, None


def difference_draws(
    y: np.ndarray, x: np.ndarray, prior_strength: float, n_draws: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Posterior draws of the paired means and their difference (module docstring).

    Parameters
    ----------
    y, x : numpy.ndarray, shape (n,)
        Candidate and baseline values of the same examples, in [0, 1].
    prior_strength : float
        Prior mass ``a`` (``a/2`` on each discordant corner, ``(1, 0)`` and ``(0, 1)``).
    n_draws : int
    rng : numpy.random.Generator

    Returns
    -------
    (mean_y, mean_x, mean_y - mean_x) : three numpy.ndarray of shape (n_draws,)
    """
    pairs = np.column_stack([np.asarray(y, dtype=float), np.asarray(x, dtype=float)])
    uniq, counts = np.unique(pairs, axis=0, return_counts=True) if len(pairs) else (np.empty((0, 2)), np.empty(0))
    corners = np.array([[0.0, 1.0], [1.0, 0.0]])
    atoms = np.concatenate([uniq, corners])
    alpha = np.concatenate([np.asarray(counts, dtype=float), np.full(2, prior_strength / 2)])
    m = _weighted_means(alpha, atoms, n_draws, rng)
    my, mx = m[:, 0], m[:, 1]
    return my, mx, my - mx


_GL_X, _GL_W = np.polynomial.legendre.leggauss(16)  # Gauss-Legendre nodes and weights on [-1, 1]
#: Segments of the quadrature above ``F_S(|b|)``, as fractions of what is left: graded towards the split point, where
#: ``F_U`` rises from 0 fastest, and towards 1, where the quantiles of ``S`` run out into its upper tail.
_EDGES = np.array([0.0, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 0.05, 0.2, 0.5, 0.8, 0.95, 0.99, 0.999, 0.9999, 1.0])
_NODES = (_EDGES[:-1, None] + (_EDGES[1:] - _EDGES[:-1])[:, None] * (_GL_X + 1.0) / 2.0).ravel()
_WEIGHTS = ((_EDGES[1:] - _EDGES[:-1])[:, None] * _GL_W / 2.0).ravel()


@dataclass(frozen=True)
class PairedBinary:
    """Posterior of a binary metric's paired difference in closed form (module docstring), over arrays of sets.

    The Dirichlet parameters of the paired 2 x 2 table, cell ``jk`` = (candidate ``j``, baseline ``k``); each
    attribute is an array of one shape (one entry per eval set) or a scalar. Build it with :meth:`from_counts` or
    :func:`paired_binary`.

    Attributes
    ----------
    a00, a01, a10, a11 : numpy.ndarray
        ``n00``, ``n01 + a/2``, ``n10 + a/2``, ``n11`` (``a`` the prior mass, > 0).
    """

    a00: np.ndarray
    a01: np.ndarray
    a10: np.ndarray
    a11: np.ndarray

    @classmethod
    def from_counts(cls, n00: object, n01: object, n10: object, n11: object, prior_strength: float) -> PairedBinary:
        """From the counts of the paired table (arrays broadcast together) and the prior mass ``a``.

        Raises
        ------
        ValueError
            When ``prior_strength`` is not positive (the closed form needs mass on both discordant cells) or a count
            is negative.
        """
        if not prior_strength > 0:
            raise ValueError(f"paired_binary needs prior_strength > 0, got {prior_strength}")
        n = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (n00, n01, n10, n11)))
        if any(bool((v < 0).any()) for v in n):
            raise ValueError("paired_binary: counts must be >= 0")
        half = prior_strength / 2
        return cls(n[0], n[1] + half, n[2] + half, n[3])

    @property
    def _total(self) -> np.ndarray:
        return self.a00 + self.a01 + self.a10 + self.a11

    def mean(self) -> np.ndarray:
        """Posterior mean of the difference, ``(a10 - a01) / A``."""
        return (self.a10 - self.a01) / self._total

    def sd(self) -> np.ndarray:
        """Posterior sd of the difference (Dirichlet covariance of ``W10`` and ``W01``)."""
        t = self._total
        var = (self.a10 * (t - self.a10) + self.a01 * (t - self.a01) + 2 * self.a10 * self.a01) / (t**2 * (t + 1))
        return np.sqrt(var)

    def p_worse(self) -> np.ndarray:
        """``P(difference < 0) = F_U(1/2)``, ``U ~ Beta(a10, a01)``."""
        return special.betainc(self.a10, self.a01, 0.5)

    def p_better(self) -> np.ndarray:
        """``P(difference > 0) = 1 - F_U(1/2)``."""
        return special.betainc(self.a01, self.a10, 0.5)

    def cdf(self, b: object) -> np.ndarray:
        """``P(difference < b)`` by quadrature over the quantiles of ``S`` (module docstring); ``b`` broadcasts."""
        b = np.asarray(b, dtype=float)
        sa = self.a01 + self.a10
        sb = self.a00 + self.a11
        b, sa, sb, a10, a01 = np.broadcast_arrays(b, sa, sb, self.a10, self.a01)
        flat = sb <= 0  # no concordant mass: S is 1
        sb_safe = np.where(flat, 1.0, sb)
        cut = np.minimum(np.abs(b), 1.0)
        u_star = np.where(flat, (cut >= 1.0).astype(float), special.betainc(sa, sb_safe, cut))
        width = 1.0 - u_star
        u = u_star[..., None] + width[..., None] * _NODES
        s = np.where(flat[..., None], 1.0, special.betaincinv(sa[..., None], sb_safe[..., None], u))
        arg = np.clip((1.0 + b[..., None] / np.maximum(s, 1e-300)) / 2.0, 0.0, 1.0)
        inner = (special.betainc(a10[..., None], a01[..., None], arg) * _WEIGHTS).sum(axis=-1) * width
        return np.clip(np.where(b >= 0, u_star, 0.0) + inner, 0.0, 1.0)

    def quantile(self, q: object, tol: float = 1e-7) -> np.ndarray:
        """Quantiles of the difference by bisection on :meth:`cdf` (to ``tol``); ``q`` broadcasts."""
        q = np.asarray(q, dtype=float)
        shape = np.broadcast_shapes(q.shape, np.shape(self.a10))
        lo, hi = np.full(shape, -1.0), np.full(shape, 1.0)
        while float(np.max(hi - lo)) > tol:
            mid = (lo + hi) / 2.0
            below = self.cdf(mid) < q
            lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
        return (lo + hi) / 2.0

    def margins(self) -> tuple[stats.rv_continuous, stats.rv_continuous]:
        """Return the candidate's and the baseline's means on the pairs.

        ``Beta(a10 + a11, a00 + a01)`` and ``Beta(a01 + a11, a00 + a10)``.
        """
        return (stats.beta(self.a10 + self.a11, self.a00 + self.a01),
                stats.beta(self.a01 + self.a11, self.a00 + self.a10))

    def summary(self, ci_prob: float) -> Summary:
        """Mean, sd and equal-tailed credible interval of the difference (scalar parameters only)."""
        lo, hi = self.quantile(np.array([(1 - ci_prob) / 2, (1 + ci_prob) / 2]))
        return Summary(float(self.mean()), float(self.sd()), float(lo), float(hi))


def paired_binary(y: np.ndarray, x: np.ndarray, prior_strength: float) -> PairedBinary:
    """Closed-form posterior of the paired difference of binary values (module docstring).

    Parameters
    ----------
    y, x : numpy.ndarray, shape (n,)
        Candidate and baseline values (0 or 1) of the same examples.
    prior_strength : float
        Prior mass ``a`` (> 0), ``a/2`` on each discordant cell.

    Returns
    -------
    PairedBinary

    Raises
    ------
    ValueError
        When a value is not 0 or 1, or ``prior_strength`` is not positive.
    """
    y, x = np.asarray(y, dtype=float), np.asarray(x, dtype=float)
    if not (is_binary(y) and is_binary(x)):
        raise ValueError("paired_binary: values must be 0 or 1")
    yb, xb = y == 1.0, x == 1.0
    return PairedBinary.from_counts((~yb & ~xb).sum(), (~yb & xb).sum(), (yb & ~xb).sum(), (yb & xb).sum(),
                                    prior_strength)


def beta_summary(dist: stats.rv_continuous, ci_prob: float) -> Summary:
    """Mean, sd and equal-tailed ``ci_prob`` credible interval of a frozen scipy Beta (or any frozen distribution)."""
    return Summary(float(dist.mean()), float(dist.std()), float(dist.ppf((1 - ci_prob) / 2)),
                   float(dist.ppf((1 + ci_prob) / 2)))


def ratio_draws(y: np.ndarray, x: np.ndarray, n_draws: int, rng: np.random.Generator) -> np.ndarray:
    """Bayesian-bootstrap draws of ``mean(y) / mean(x)`` over paired examples (Rubin 1981), shape (n_draws,).

    Raises
    ------
    ValueError
        If no pair is given or the baseline values are all 0.
    """
    y, x = np.asarray(y, dtype=float), np.asarray(x, dtype=float)
    if y.size == 0 or not np.any(x > 0):
        raise ValueError("ratio_draws: needs paired examples with a positive baseline value")
    g = _gamma_draws(np.ones(y.size), n_draws, rng)
    return (g @ y) / (g @ x)


def summarize(draws: np.ndarray, ci_prob: float) -> Summary:
    """Mean, sd and equal-tailed ``ci_prob`` credible interval of posterior draws."""
    lo, hi = np.quantile(draws, [(1 - ci_prob) / 2, (1 + ci_prob) / 2])
    return Summary(float(draws.mean()), float(draws.std()), float(lo), float(hi))


def examples_to_decide(n: int, mean: float, sd: float, boundary: float, probability: float) -> int | None:
    """How many more examples would decide a check at the current effect size (module docstring).

    Parameters
    ----------
    n : int
        Examples behind the current posterior.
    mean, sd : float
        Posterior mean and sd of the checked quantity.
    boundary : float
        The decision boundary (a threshold, or ``-tolerance`` for a difference).
    probability : float
        The probability the decision needs on the side the mean is on (e.g. 0.95).

    Returns
    -------
    int or None
        ``N - n`` rounded up (at least 1), or None when the mean sits on the boundary or ``n`` is 0 (no finite
        sample size decides it at this effect size).
    """
    gap = abs(mean - boundary)
    if n <= 0 or gap <= 1e-12 or not math.isfinite(sd) or sd <= 0:
        return None
    z = float(stats.norm.ppf(probability))
    total = n * (z * sd / gap) ** 2
    return max(math.ceil(total - n), 1)

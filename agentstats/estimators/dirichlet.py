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

Judged metrics with a calibrated judge (:func:`corrected_draws`). A judge with sensitivity ``se`` and specificity
``sp`` says "pass" with probability ``q = se p + (1 - sp)(1 - p)`` on an example whose true pass probability is
``p`` (non-differential misclassification, the same judge for candidate and baseline), so the population mean of the
verdicts is ``q`` of the true mean ``p``, and ``p = (q + sp - 1) / (se + sp - 1)`` (Rogan & Gladen 1978, American
Journal of Epidemiology 107:71-76). The observed means' posterior above is read as the likelihood of ``q`` (under a
flat prior on ``q``); ``se`` and ``sp`` are drawn from their calibration posteriors (:class:`JudgeRates`, e.g.
:class:`agentstats.calibration.JudgeError`), and a uniform prior on the true mean ``p`` in [0, 1] completes the
misclassification model. Its posterior is sampled exactly by drawing ``(q, se, sp)`` jointly, keeping the draws with
``se + sp > 1`` whose ``q`` lies in ``[1 - sp, se]`` (the only observed rates a true rate in [0, 1] can produce),
mapping them to ``p`` and resampling them with weights ``(se + sp - 1)^-m`` (the Jacobian of ``q -> p`` for ``m``
means: 1 for a mean, 2 for a candidate-baseline pair). This is the Bayesian form of the Rogan-Gladen correction:
with ``se = sp = 1`` it is the uncorrected posterior; with a noisy judge its mean approaches
``(q + sp - 1) / (se + sp - 1)`` and its interval widens by ``1 / (se + sp - 1)`` plus the spread of ``se`` and
``sp``. Observed rates outside ``[1 - sp, se]`` (a judge calibration that does not fit the data) leave few draws and
raise an error.

Efficiency (tokens, cost, latency): the ratio of the candidate's to the baseline's mean per example, by the
Bayesian bootstrap over paired examples (no prior atoms: usage is unbounded).

Sample size for an undecided check (:func:`examples_to_decide`): the posterior sd shrinks as ``1/sqrt(n)``
(posterior normality, Bernstein-von Mises; BDA3 sec. 4.1), so at the current effect size ``g`` (distance of the
posterior mean from the decision boundary) and sd ``s`` on ``n`` examples, the check is decided at probability
``p`` once ``g / (s sqrt(n / N)) >= z_p``, i.e. ``N = n (z_p s / g)^2``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from scipy import stats

__all__ = [
    "JudgeRates",
    "Summary",
    "corrected_draws",
    "difference_draws",
    "examples_to_decide",
    "is_binary",
    "mean_draws",
    "mean_posterior",
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


class JudgeRates(Protocol):
    """Beta posteriors of a judge's sensitivity and specificity (:class:`agentstats.calibration.JudgeError` is one).

    ``sensitivity ~ Beta(se_alpha, se_beta)``, ``specificity ~ Beta(sp_alpha, sp_beta)``; the means name them in
    error messages.
    """

    @property
    def se_alpha(self) -> float:
        """First Beta parameter of the sensitivity, ``P(verdict pass | gold pass)``."""

    @property
    def se_beta(self) -> float:
        """Second Beta parameter of the sensitivity."""

    @property
    def sp_alpha(self) -> float:
        """First Beta parameter of the specificity, ``P(verdict fail | gold fail)``."""

    @property
    def sp_beta(self) -> float:
        """Second Beta parameter of the specificity."""

    @property
    def sensitivity_mean(self) -> float:
        """Posterior mean of the sensitivity."""

    @property
    def specificity_mean(self) -> float:
        """Posterior mean of the specificity."""


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
    lo_q, hi_q = (1 - ci_prob) / 2, (1 + ci_prob) / 2
    if is_binary(y):
        c = float(y.sum())
        dist = stats.beta(prior_strength / 2 + c, prior_strength / 2 + y.size - c)
        return Summary(float(dist.mean()), float(dist.std()), float(dist.ppf(lo_q)), float(dist.ppf(hi_q))), None, dist
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


def corrected_draws(
    observed: Callable[[int], np.ndarray], judge: JudgeRates, n_draws: int, rng: np.random.Generator,
    *, max_tries: int = 100,
) -> np.ndarray:
    """Posterior draws of true means from draws of judged (observed) means and the judge's calibration.

    The misclassification model of the module docstring: joint draws of the observed means ``q``, the
    sensitivity ``se ~ Beta(se_alpha, se_beta)`` and the specificity ``sp ~ Beta(sp_alpha, sp_beta)`` (one pair
    per draw, shared by every column: the same judge scores them all); a draw is kept when ``se + sp > 1`` and
    every ``q`` lies in ``[1 - sp, se]``, mapped to ``p = (q + sp - 1) / (se + sp - 1)`` and resampled with
    weight ``(se + sp - 1)^-m``.

    Parameters
    ----------
    observed : callable
        ``observed(k)`` returns ``k`` posterior draws of the observed means, shape ``(k, m)``; the columns are the
        means drawn jointly (``m = 1`` for one mean, 2 for a candidate-baseline pair).
    judge : JudgeRates
        Beta posteriors of the judge's sensitivity and specificity (an :class:`agentstats.calibration.JudgeError`).
    n_draws : int
        Draws returned.
    rng : numpy.random.Generator
        Draws ``se``, ``sp`` and the resampling (``observed`` brings its own).
    max_tries : int
        Batches of ``n_draws`` proposals tried before giving up.

    Returns
    -------
    numpy.ndarray, shape (n_draws, m)
        Draws of the true means, in [0, 1].

    Raises
    ------
    ValueError
        When fewer than ``n_draws`` proposals are kept after ``max_tries`` batches: the observed rates lie where
        the calibrated judge cannot put them (below ``1 - sp`` or above ``se``), so the calibration does not fit
        the data.
    """
    kept_p: list[np.ndarray] = []
    kept_w: list[np.ndarray] = []
    n_kept = tries = 0
    while n_kept < n_draws:
        if tries >= max_tries:
            raise ValueError(
                f"judge correction: only {n_kept} of {tries * n_draws} posterior draws of the observed rate lie "
                f"within [1 - specificity, sensitivity] (sensitivity ~ {judge.sensitivity_mean:.3f}, specificity ~ "
                f"{judge.specificity_mean:.3f}): the calibration set does not fit these verdicts"
            )
        tries += 1
        q = np.asarray(observed(n_draws), dtype=float).reshape(n_draws, -1)
        se = rng.beta(judge.se_alpha, judge.se_beta, size=n_draws)
        sp = rng.beta(judge.sp_alpha, judge.sp_beta, size=n_draws)
        j = se + sp - 1.0
        ok = (j > 0) & np.all((q >= (1.0 - sp)[:, None]) & (q <= se[:, None]), axis=1)
        if not ok.any():
            continue
        p = (q[ok] + sp[ok, None] - 1.0) / j[ok, None]
        kept_p.append(np.clip(p, 0.0, 1.0))  # float rounding only: q in [1 - sp, se] maps into [0, 1]
        kept_w.append(j[ok] ** -float(q.shape[1]))
        n_kept += int(ok.sum())
    p_all, w_all = np.concatenate(kept_p), np.concatenate(kept_w)
    idx = rng.choice(p_all.shape[0], size=n_draws, replace=True, p=w_all / w_all.sum())
    return p_all[idx]


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

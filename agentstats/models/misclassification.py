"""Judged outcomes as noisy measurements of the true outcome: the judge's misclassification inside a model.

A judge with sensitivity ``se`` and specificity ``sp`` turns each of a cell's ``n`` trials independently: a true pass
is judged pass with probability ``se``, a true fail is judged pass with probability ``1 - sp``. Given ``s`` true passes
the judged count is the sum of two Binomials (Rogan & Gladen 1978, *Am. J. Epidemiol.* 107(1), 71-76, for one
trial; per trial independence is the standard non-differential misclassification assumption)::

    P(c | s, n) = sum_i Binomial(i | s, se) Binomial(c - i | n - s, 1 - sp)        ("the channel")

and the family's cell model gives the distribution of the true count, ``P_true(s | n, params)`` (for the
Beta-Binomial families the Beta-Binomial, with the zero/one-inflated share of always/never-succeeding cells: a
deterministic-success cell has ``s = n``, so its judged count is ``Binomial(n, se)``; a never-succeeding cell has
``s = 0`` and judged count ``Binomial(n, 1 - sp)``). The likelihood of the judged count marginalises over the true
count::

    P(c | n, params, se, sp) = sum_{s=0..n} P_true(s | n, params) P(c | s, n).

For a cell whose ``p`` is a model variable (the logit-normal families), this equals ``Binomial(c | n, q(p))`` with
``q(p) = se p + (1 - sp)(1 - p)``, which is what those families use. ``se`` and ``sp`` are model variables
(``judge_sensitivity``, ``judge_specificity``) with Beta priors equal to their calibration posteriors, so they are
estimated jointly with the rest of the model and the judge's uncertainty reaches every posterior draw.

Per-cell ``p`` draws (what pass@k / pass^k use) are of the *true* ``p``: for the Beta-Binomial families, per
posterior draw the true count is drawn from ``P(s | c) ∝ P_true(s) P(c | s)`` and then ``p`` from its conditional
given ``s`` (:func:`draw_true_counts`).

Cost: the channel is a dense ``(cell, n_max + 1, n_max + 1)`` table, so judged fits suit up to a few tens of trials per
cell.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from scipy.special import gammaln

__all__ = [
    "MAX_CHANNEL_ENTRIES",
    "SENSITIVITY",
    "SPECIFICITY",
    "ChannelTable",
    "channel_logpmf",
    "channel_table",
    "draw_true_counts",
    "judge_error_variables",
    "judged_log_likelihood",
    "judged_probability",
]

#: Names of the model variables of the judge's error rates.
SENSITIVITY = "judge_sensitivity"
SPECIFICITY = "judge_specificity"
#: A log-probability standing for "impossible" that keeps sums and gradients finite.
_NEG = -1.0e30
#: Error rates are kept this far from 0 and 1 inside logs.
_EPS = 1.0e-12
#: Largest channel table (cells x (n_max + 1)^2 entries; five float64 arrays of that size) a judged fit builds.
MAX_CHANNEL_ENTRIES = 20_000_000


@dataclass(frozen=True)
class ChannelTable:
    """Constants of the channel ``P(c | s, n)`` per observed cell, for true counts ``s`` and judged-true passes ``i``.

    ``log P(c | s) = logsumexp_i (const + i log se + (s - i) log(1 - se) + (c - i) log(1 - sp) + (n - s - c + i)
    log sp)``; impossible ``(s, i)`` have ``const = -1e30`` and zero exponents.

    Attributes
    ----------
    const, e_se, e_fn, e_fp, e_sp : numpy.ndarray, shape (cell, S, S) with S = n_max + 1
    s_valid : numpy.ndarray of bool, shape (cell, S)
        ``s <= n``.
    """

    const: np.ndarray
    e_se: np.ndarray
    e_fn: np.ndarray
    e_fp: np.ndarray
    e_sp: np.ndarray
    s_valid: np.ndarray


def _log_comb(n: np.ndarray, k: np.ndarray) -> np.ndarray:
    return gammaln(n + 1.0) - gammaln(k + 1.0) - gammaln(n - k + 1.0)


def channel_table(n: np.ndarray, c: np.ndarray) -> ChannelTable:
    """Build the :class:`ChannelTable` of cells with ``n`` trials and ``c`` judged passes (1-d int arrays).

    Raises
    ------
    ValueError
        When the table would exceed :data:`MAX_CHANNEL_ENTRIES` entries (too many trials per cell for a judged fit).
    """
    entries = int(np.size(n)) * (int(np.max(n)) + 1 if np.size(n) else 1) ** 2
    if entries > MAX_CHANNEL_ENTRIES:
        raise ValueError(
            f"a judged fit of {np.size(n)} cells with up to {int(np.max(n))} trials each needs a channel table of "
            f"{entries:,} entries (limit {MAX_CHANNEL_ENTRIES:,}); judged fits suit up to a few tens of trials per "
            "cell: use the Rogan-Gladen correction (agentstats.calibration.corrected_pass_k) instead"
        )
    n = np.asarray(n, np.int64)[:, None, None]
    c = np.asarray(c, np.int64)[:, None, None]
    size = int(n.max()) + 1 if n.size else 1
    s = np.arange(size)[None, :, None]
    i = np.arange(size)[None, None, :]
    ok = (s <= n) & (i <= s) & (i <= c) & (c - i <= n - s) & (c - i >= 0)
    with np.errstate(invalid="ignore"):
        const = np.where(ok, _log_comb(np.maximum(s, 0), np.minimum(i, s)) + _log_comb(
            np.maximum(n - s, 0), np.clip(c - i, 0, np.maximum(n - s, 0))), _NEG)
    def zero(x: np.ndarray) -> np.ndarray:
        return np.where(ok, x, 0).astype("float64")

    return ChannelTable(
        const=const.astype("float64"),
        e_se=zero(np.broadcast_to(i, ok.shape)),
        e_fn=zero(np.broadcast_to(s - i, ok.shape)),
        e_fp=zero(np.broadcast_to(c - i, ok.shape)),
        e_sp=zero(np.broadcast_to(n - s - c + i, ok.shape)),
        s_valid=(np.arange(size)[None, :] <= n[:, 0, :]),
    )


def _channel_tensor(table: ChannelTable, se: Any, sp: Any) -> Any:
    """``log P(c | s)`` per cell and ``s`` (PyTensor), shape (cell, S)."""
    se = pt.clip(se, _EPS, 1.0 - _EPS)
    sp = pt.clip(sp, _EPS, 1.0 - _EPS)
    terms = (
        table.const
        + table.e_se * pt.log(se)
        + table.e_fn * pt.log1p(-se)
        + table.e_fp * pt.log1p(-sp)
        + table.e_sp * pt.log(sp)
    )
    return pt.logsumexp(terms, axis=-1)


def channel_logpmf(c: Any, n: Any, s: Any, se: Any, sp: Any) -> np.ndarray:
    """``log P(c | s, n)`` of the channel (module docstring), numpy; inputs broadcast (the reference for tests).

    Returns
    -------
    numpy.ndarray
        ``-inf`` where impossible (``s > n``, ``c > n``).
    """
    from scipy.stats import binom

    c, n, s, se, sp = np.broadcast_arrays(*(np.asarray(x) for x in (c, n, s, se, sp)))
    out = np.full(c.shape, -np.inf)
    i_max = int(np.max(np.minimum(s, c))) if c.size else 0
    for i in range(i_max + 1):
        with np.errstate(divide="ignore"):
            term = binom.logpmf(i, s, se) + binom.logpmf(c - i, n - s, 1.0 - sp)
        out = np.logaddexp(out, np.where(s <= n, term, -np.inf))
    return out


def judged_log_likelihood(log_true: Any, table: ChannelTable, se: Any, sp: Any) -> Any:
    """``log sum_s P_true(s) P(c | s)`` per cell (PyTensor); ``log_true`` has shape (cell, S), any value where s > n."""
    log_true = pt.switch(table.s_valid, log_true, _NEG)
    return pt.logsumexp(log_true + _channel_tensor(table, se, sp), axis=-1)


def judged_probability(p: Any, se: Any, sp: Any) -> Any:
    """``q = se p + (1 - sp)(1 - p)``, the probability a trial is judged pass (PyTensor or numpy)."""
    return (1.0 - sp) + (se + sp - 1.0) * p


def judge_error_variables(judge_error: Any) -> tuple[Any, Any]:
    """Create ``judge_sensitivity ~ Beta(se_alpha, se_beta)``, ``judge_specificity ~ Beta(sp_alpha, sp_beta)``.

    Call inside a model context. ``judge_error`` is an :class:`agentstats.calibration.JudgeError`.
    """
    se = pm.Beta(SENSITIVITY, float(judge_error.se_alpha), float(judge_error.se_beta))
    sp = pm.Beta(SPECIFICITY, float(judge_error.sp_alpha), float(judge_error.sp_beta))
    return se, sp


def draw_true_counts(
    log_true: np.ndarray, n: np.ndarray, c: np.ndarray, se: np.ndarray, sp: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """One draw of each cell's true count per posterior draw, from ``P(s | c) ∝ P_true(s) P(c | s)``.

    Parameters
    ----------
    log_true : numpy.ndarray, shape S + cells + (n_max + 1,)
        ``log P_true(s)`` for ``s = 0..n_max`` (values where ``s > n`` are ignored).
    n, c : numpy.ndarray of int, shape cells
    se, sp : numpy.ndarray, shape S (broadcast against ``S + cells``)
    rng : numpy.random.Generator

    Returns
    -------
    numpy.ndarray of int, shape S + cells
    """
    size = log_true.shape[-1]
    s = np.arange(size)
    extra = (1,) * (log_true.ndim - 1 - np.ndim(se))
    se_b = np.reshape(se, np.shape(se) + extra)[..., None]
    sp_b = np.reshape(sp, np.shape(sp) + extra)[..., None]
    log_ch = channel_logpmf(np.asarray(c)[..., None], np.asarray(n)[..., None], s, se_b, sp_b)
    logw = np.where(s <= np.asarray(n)[..., None], log_true + log_ch, -np.inf)
    logw = logw - logw.max(axis=-1, keepdims=True)
    w = np.exp(logw)
    cdf = np.cumsum(w, axis=-1)
    u = rng.random(cdf.shape[:-1])[..., None] * cdf[..., -1:]
    return np.minimum((cdf < u).sum(axis=-1), np.asarray(n))

"""Rank-normalized split R-hat and bulk/tail ESS, vectorized over the elements of a variable.

The same numbers as ArviZ 1.x (``arviz_stats.base.diagnostics``: ``az.rhat`` with ``method="rank"``,
``az.ess`` with ``method="bulk"`` and ``method="tail"``), computed for all elements of an array of shape
``(chain, draw, *element)`` at once instead of one element at a time in Python (about 5 ms per element there).
Every step follows ArviZ's own, including its edge cases:

* split chains: each chain's first and last ``draw // 2`` draws become two chains (the middle draw of an odd count
  is dropped), first halves of all chains before second halves;
* rank normalization: ``scipy.stats.rankdata(method="average")`` over all split draws of an element, Blom's
  offset ``(r - 3/8) / (S - 3/4 + 1)``, then the standard normal quantile;
* R-hat: the larger of the split R-hat of the rank-normalized draws (bulk) and of the rank-normalized draws folded
  about their median (tail);
* ESS: autocovariances by FFT, Geyer's initial positive sequence (pairs of autocorrelations summed while their sum
  is positive) and initial monotone sequence, with ArviZ's exact truncation rules, and its floor of
  ``1 / log10(S)`` on the integrated autocorrelation time;
* tail ESS: the smaller ESS of the indicators ``x <= q`` of the two quantiles ``q`` at ``1 - p`` and ``p`` of the
  unsplit draws, ``p`` being ArviZ's ``rcParams["stats.ci_prob"]`` (0.89 by default, so ArviZ 1.x uses the 11 %
  and 89 % quantiles, not the 5 % and 95 % of the paper);
* an element with a NaN draw, or fewer than 4 draws (R-hat: or fewer than 2 chains), gives NaN; an element whose
  (transformed) draws never change gives an ESS equal to the number of split draws, and an R-hat of NaN.

Source: Vehtari, Gelman, Simpson, Carpenter & Buerkner (2021), "Rank-normalization, folding, and localization: an
improved R-hat for assessing convergence of MCMC", Bayesian Analysis 16(2), arXiv 1903.08008; Geyer (1992),
"Practical Markov chain Monte Carlo", Statistical Science 7(4).
"""

from __future__ import annotations

import numpy as np
from scipy.fftpack import next_fast_len
from scipy.special import ndtri

__all__ = ["ess_bulk", "ess_tail", "rank_diagnostics", "rhat_rank"]

#: Most values (elements x chains x draws) handled in one block: bounds the memory of the temporaries (a block's
#: copies, ranks, sort order and FFT buffers come to about 20 bytes x 8 per value: some 60 MB at ``1 << 19``; at
#: ``1 << 21`` the stopping rule's checks of a 10,000-cell fit added 0.2 GB to its peak memory), at no measurable cost
#: in time.
_BLOCK_VALUES = 1 << 19


def _elements(ary: np.ndarray) -> tuple[np.ndarray, tuple[int, ...]]:
    """Reshape ``(chain, draw, *element)`` to ``(element, chain, draw)``; return it and the element shape."""
    ary = np.asarray(ary)
    if ary.ndim < 2:
        raise ValueError(f"expected an array of shape (chain, draw, ...), got shape {ary.shape}")
    n_chain, n_draw = ary.shape[:2]
    shape = ary.shape[2:]
    flat = ary.reshape(n_chain, n_draw, int(np.prod(shape)))
    return np.moveaxis(flat, 2, 0), shape


def _split_chains(x: np.ndarray) -> np.ndarray:
    """Split each chain of ``x`` (element, chain, draw) into its first and last ``draw // 2`` draws.

    Result (element, 2 * chain, draw // 2): the first halves of all chains, then the second halves.
    """
    half = x.shape[-1] // 2
    return np.concatenate((x[..., :half], x[..., x.shape[-1] - half :]), axis=-2)


def _z_from_sorted(ordered: np.ndarray, where: np.ndarray) -> np.ndarray:
    """Rank-normalized values (rows of S), given each row's values sorted and the flat position of each.

    ``ordered`` (rows, S): each row's values in ascending order (NaN last); ``where`` (rows, S): the position in
    the row, before sorting, of each sorted value. Average ranks as ``scipy.stats.rankdata(method="average",
    nan_policy="omit")`` (ties share the mean of their ordinal ranks, which does not depend on the order among them,
    so any sort gives scipy's ranks; NaN gets NaN and counts in S), Blom's offset c = 3/8,
    ``p = (r - c) / (S - 2c + 1)`` and ``z = ndtri(p)``, evaluated in scipy's rank dtype (float32 for float32
    values, as ``scipy.stats.norm.ppf`` does with them) and returned as float64. The rank of a value is
    ``(first + last) / 2 + 1`` for the first and last sorted positions of its run of equal values, so ``z`` is read
    from a table over ``first + last`` (0 to 2S - 2) instead of evaluated per value.
    """
    n = ordered.shape[-1]
    dtype = ordered.dtype if ordered.dtype.kind == "f" else np.dtype(np.float64)
    c = 3 / 8
    rank_table = (np.arange(2 * n - 1) / 2 + 1).astype(dtype)
    z_table = ndtri((rank_table - c) / (n - 2 * c + 1)).astype(np.float64, copy=False)
    starts = np.ones(ordered.shape, dtype=bool)  # first of a run of equal values (NaN never equals: a run of its own)
    np.not_equal(ordered[:, 1:], ordered[:, :-1], out=starts[:, 1:])
    if starts.all():  # no ties: first = last = position
        z_sorted = np.broadcast_to(z_table[2 * np.arange(n)], ordered.shape)
    else:  # runs never cross rows (every row starts one); key = 2 first + length - 1 = first + last
        run_start = np.flatnonzero(starts)
        run_length = np.diff(run_start, append=starts.size)
        z_sorted = z_table[np.repeat(2 * (run_start % n) + run_length - 1, run_length)].reshape(ordered.shape)
        if dtype.kind == "f":
            z_sorted[np.isnan(ordered)] = np.nan
    z = np.empty(ordered.shape)
    np.put_along_axis(z, where, z_sorted, axis=-1)
    return z


def _z_scale(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rank-normalize each element of ``x`` (element, chain, draw) over all its draws (ArviZ's ``_z_scale``).

    Returns ``z`` (shape of ``x``, float64), and each element's values sorted (element, chain x draw) with the
    flat position of each (for :func:`_z_folded`).
    """
    flat = x.reshape(x.shape[0], -1)
    order = np.argsort(flat, axis=-1)
    ordered = np.take_along_axis(flat, order, axis=-1)
    return _z_from_sorted(ordered, order).reshape(x.shape), ordered, order


def _z_folded(ordered: np.ndarray, order: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Rank-normalized folded values ``|x - median(x)|`` of each element (ArviZ's fold in ``_rhat_rank``).

    ``ordered`` and ``order`` are :func:`_z_scale`'s sorted values (an even number S per element) and their
    positions. The median is the mean of the two middle values (as ``numpy.median``). Below the middle the folded
    values decrease along the sorted order, above it they increase (rounding keeps ``x - m`` monotone in ``x``), so
    the sorted folded values are a merge of two sorted runs, which a stable (timsort) argsort does in linear time.
    """
    half = ordered.shape[-1] // 2
    median = np.mean(ordered[:, half - 1 : half + 1], axis=-1)
    folded = abs(ordered - median[:, None])
    runs = np.concatenate((folded[:, half - 1 :: -1], folded[:, half:]), axis=-1)
    merge = np.argsort(runs, axis=-1, kind="stable")
    merged = np.take_along_axis(runs, merge, axis=-1)
    sorted_pos = np.where(merge < half, half - 1 - merge, merge)
    return _z_from_sorted(merged, np.take_along_axis(order, sorted_pos, axis=-1)).reshape(shape)


def _rhat_core(z: np.ndarray) -> np.ndarray:
    """Split-free R-hat of each element of ``z`` (element, chain, draw) (Gelman et al., BDA3 eq. 11.4)."""
    z = np.asarray(z, dtype=float)
    n = z.shape[-1]
    chain_mean = np.mean(z, axis=-1)
    chain_var = np.var(z, axis=-1, ddof=1)
    between = n * np.var(chain_mean, axis=-1, ddof=1)
    within = np.mean(chain_var, axis=-1)
    return np.sqrt((between / within + n - 1) / n)


def _ess_core(x: np.ndarray) -> np.ndarray:
    """ESS of each element of ``x`` (element, chain, draw) of already split chains (ArviZ's ``_ess``).

    Autocovariances by FFT; autocorrelations ``rho_t = 1 - (W - mean_chains(acov_t)) / var_plus`` (Vehtari et al.
    2021, eq. 10); Geyer's initial positive sequence: sums ``P_k = rho_2k + rho_2k+1`` of pairs are taken while
    positive (``P_0 = 1 + rho_1``), at most up to lag ``draw - 3``; the last even autocorrelation counts once when
    positive (or when its pair sum is >= 0); Geyer's initial monotone sequence makes the pair sums non-increasing
    (their running minimum). ``tau = -1 + 2 sum_k P_k + rho_2K`` is floored at ``1 / log10(S)``, S = chains x draws,
    and ESS = S / tau. An element whose values never change has ESS S.
    """
    x = np.asarray(x, dtype=float)
    n_elem, n_chain, n_draw = x.shape
    size = n_chain * n_draw
    constant = (np.max(x, axis=(1, 2)) - np.min(x, axis=(1, 2))) < np.finfo(float).resolution
    # autocovariances of every chain at every lag as ArviZ's autocov (FFT over twice the length, biased by 1/n),
    # averaged over chains: the inverse FFT is linear, so the mean power spectrum is transformed once (equal to
    # ArviZ's per-chain transforms and mean up to rounding, ~1e-16)
    m = next_fast_len(2 * n_draw)  # scipy.fftpack's (5-smooth) as ArviZ, not scipy.fft's
    chain_mean = x.mean(axis=-1)
    spec = np.fft.rfft(x - chain_mean[..., None], n=m, axis=-1)
    power = np.mean(spec.real**2 + spec.imag**2, axis=1)
    mean_acov = np.fft.irfft(power, n=m, axis=-1)[:, :n_draw] / n_draw  # (element, lag)
    mean_var = mean_acov[:, 0] * n_draw / (n_draw - 1.0)
    var_plus = mean_var * (n_draw - 1.0) / n_draw
    if n_chain > 1:
        var_plus = var_plus + np.var(chain_mean, axis=-1, ddof=1)
    with np.errstate(invalid="ignore", divide="ignore"):  # 0 / 0 of constant elements, which ArviZ skips
        rho = 1.0 - (mean_var[:, None] - mean_acov) / var_plus[:, None]  # (element, lag); rho[:, 0] unused
    # pair sums P_0 = 1 + rho_1, P_k = rho_2k + rho_2k+1 for the k Geyer's loop may reach (t = 2k - 1 < draw - 3)
    k_max = len(range(1, n_draw - 3, 2))
    pairs = np.empty((n_elem, k_max + 1))
    pairs[:, 0] = 1.0 + rho[:, 1]
    pairs[:, 1:] = rho[:, 2 : 2 * k_max + 2 : 2] + rho[:, 3 : 2 * k_max + 2 : 2]
    # K: pairs taken = the first k < k_max whose sum is not positive, else k_max
    stop = ~(pairs[:, :k_max] > 0)
    first_stop = np.argmax(stop, axis=-1) if k_max else np.zeros(n_elem, dtype=int)
    n_taken = np.where(stop.any(axis=-1), first_stop, k_max)
    rows = np.arange(n_elem)
    last_even = rho[rows, 2 * n_taken]
    keep_last = (last_even > 0) | (pairs[rows, n_taken] >= 0)
    tail_term = np.where(n_taken == 0, 1.0, np.where(keep_last, last_even, 0.0))
    monotone = np.minimum.accumulate(pairs[:, :k_max], axis=-1) if k_max else pairs[:, :0]
    taken = np.arange(k_max)[None, :] < n_taken[:, None]
    tau = -1.0 + 2.0 * np.sum(np.where(taken, monotone, 0.0), axis=-1) + tail_term
    floor = 1 / np.log10(size)
    tau = np.where(floor > tau, floor, tau)  # Python's max(tau, floor): NaN stays NaN
    ess = size / tau
    ess = np.where(np.isnan(rho[:, 1]), np.nan, ess)
    return np.where(constant, float(size), ess)


def _tail_probs(prob: float | None) -> tuple[float, float]:
    """Return the two quantile levels of tail ESS, ``sorted((prob, 1 - prob))``; ``prob`` default ArviZ's ci_prob."""
    if prob is None:
        from arviz_base import rcParams

        prob = float(rcParams["stats.ci_prob"])
    if not 0 < prob <= 1:
        raise ValueError(f"prob must be in (0, 1], got {prob}")
    low, high = sorted((prob, 1 - prob))
    return low, high


def _block(x: np.ndarray, want: tuple[str, ...], probs: tuple[float, float]) -> list[np.ndarray]:
    """R-hat / bulk ESS / tail ESS (as named in ``want``) of a NaN-free block (element, chain, draw)."""
    out: dict[str, np.ndarray] = {}
    split = _split_chains(x)
    ordered: np.ndarray | None = None
    if "rhat" in want or "ess_bulk" in want:
        z, ordered, order = _z_scale(split)
        if "ess_bulk" in want:
            out["ess_bulk"] = _ess_core(z)
        if "rhat" in want:
            bulk = _rhat_core(z)
            tail = _rhat_core(_z_folded(ordered, order, split.shape))
            out["rhat"] = np.where(tail > bulk, tail, bulk)  # Python's max(bulk, tail): NaN bulk stays
    if "ess_tail" in want:
        # both quantiles (linear) of all draws; with an even number of draws the split draws are all the draws,
        # and their sorted copy partitions faster
        if ordered is None or x.shape[-1] % 2:
            ordered = x.reshape(x.shape[0], -1)
        q_low, q_high = np.quantile(ordered, probs, axis=-1)
        ess_low = _ess_core(_split_chains(x <= q_low[:, None, None]))
        ess_high = _ess_core(_split_chains(x <= q_high[:, None, None]))
        out["ess_tail"] = np.where(ess_high < ess_low, ess_high, ess_low)  # Python's min(low, high)
    return [out[w] for w in want]


def rank_diagnostics(
    ary: np.ndarray, want: tuple[str, ...] = ("rhat", "ess_bulk", "ess_tail"), prob: float | None = None
) -> list[np.ndarray]:
    """Rank-normalized split R-hat, bulk ESS and tail ESS of every element, as ArviZ 1.x computes them.

    The same numbers as ``az.rhat(..., method="rank")``, ``az.ess(..., method="bulk")`` and
    ``az.ess(..., method="tail")`` (``arviz_stats.base.diagnostics``), computed for all elements at once; R-hat and
    bulk ESS share one rank normalization. Source: Vehtari, Gelman, Simpson, Carpenter & Buerkner (2021),
    arXiv 1903.08008, sec. 4.

    Parameters
    ----------
    ary : numpy.ndarray
        Draws of shape ``(chain, draw, *element)``.
    want : tuple of str
        Which of ``"rhat"``, ``"ess_bulk"``, ``"ess_tail"`` to compute, in the order returned.
    prob : float, optional
        Tail ESS uses the quantiles ``1 - prob`` and ``prob``; default ArviZ's ``rcParams["stats.ci_prob"]`` read at
        call time (0.89 unless changed: the 11 % and 89 % quantiles, where the paper uses 5 % and 95 %), which is
        what ``az.ess(method="tail")`` uses.

    Returns
    -------
    list of numpy.ndarray
        One float array of shape ``element`` per name in ``want``. NaN for an element with a NaN draw, and
        everywhere when there are fewer than 4 draws (R-hat: or fewer than 2 chains). An element whose draws never
        change has R-hat NaN and ESS equal to the number of split draws (``2 * chain * (draw // 2)``).

    Raises
    ------
    ValueError
        If ``ary`` has fewer than 2 dimensions, ``want`` names something else, or ``prob`` is not in (0, 1].
    """
    unknown = set(want) - {"rhat", "ess_bulk", "ess_tail"}
    if unknown:
        raise ValueError(f"unknown diagnostics {sorted(unknown)}")
    probs = _tail_probs(prob) if "ess_tail" in want else (np.nan, np.nan)
    x, shape = _elements(ary)
    n_elem, n_chain, n_draw = x.shape
    outs = [np.full(n_elem, np.nan) for _ in want]
    if n_elem and n_draw >= 4:
        # ArviZ's not_valid: a NaN draw makes the element NaN; R-hat needs 2 chains, ESS 1
        valid = np.flatnonzero(~np.isnan(x).any(axis=(1, 2)))
        block = max(1, _BLOCK_VALUES // max(n_chain * n_draw, 1))
        for start in range(0, valid.size, block):
            idx = valid[start : start + block]
            for out, res in zip(outs, _block(np.ascontiguousarray(x[idx]), want, probs), strict=True):
                out[idx] = res
        if n_chain < 2 and "rhat" in want:
            outs[want.index("rhat")][:] = np.nan
    return [o.reshape(shape) for o in outs]


def rhat_rank(ary: np.ndarray) -> np.ndarray:
    """Rank-normalized split R-hat of every element, as ``az.rhat(..., method="rank")`` (ArviZ 1.x).

    Parameters
    ----------
    ary : numpy.ndarray
        Draws of shape ``(chain, draw, *element)``.

    Returns
    -------
    numpy.ndarray
        Shape ``element`` (0-d for a scalar variable), float: the larger of the split R-hat of the rank-normalized
        draws (bulk) and of the rank-normalized draws folded about their median (tail) (Vehtari et al. 2021,
        arXiv 1903.08008, sec. 4.2). NaN as in :func:`rank_diagnostics`.

    Raises
    ------
    ValueError
        If ``ary`` has fewer than 2 dimensions.
    """
    if np.ndim(ary) >= 2 and np.shape(ary)[0] < 2:
        return np.full(np.shape(ary)[2:], np.nan)
    return rank_diagnostics(ary, ("rhat",))[0]


def ess_bulk(ary: np.ndarray) -> np.ndarray:
    """Bulk effective sample size of every element, as ``az.ess(..., method="bulk")`` (ArviZ 1.x).

    Parameters
    ----------
    ary : numpy.ndarray
        Draws of shape ``(chain, draw, *element)``.

    Returns
    -------
    numpy.ndarray
        Shape ``element``, float: ESS of the rank-normalized split chains (Vehtari et al. 2021, arXiv 1903.08008,
        sec. 4.3). NaN and constant elements as in :func:`rank_diagnostics`.

    Raises
    ------
    ValueError
        If ``ary`` has fewer than 2 dimensions.
    """
    return rank_diagnostics(ary, ("ess_bulk",))[0]


def ess_tail(ary: np.ndarray, prob: float | None = None) -> np.ndarray:
    """Tail effective sample size of every element, as ``az.ess(..., method="tail")`` (ArviZ 1.x).

    Parameters
    ----------
    ary : numpy.ndarray
        Draws of shape ``(chain, draw, *element)``.
    prob : float, optional
        Quantiles ``1 - prob`` and ``prob``; default ArviZ's ``rcParams["stats.ci_prob"]`` (see
        :func:`rank_diagnostics`).

    Returns
    -------
    numpy.ndarray
        Shape ``element``, float: the smaller ESS of the split-chain indicators ``x <= q`` of the two quantiles
        (linear interpolation, over all draws) (Vehtari et al. 2021, arXiv 1903.08008, sec. 4.3). NaN and constant
        elements as in :func:`rank_diagnostics`.

    Raises
    ------
    ValueError
        If ``ary`` has fewer than 2 dimensions or ``prob`` is not in (0, 1].
    """
    return rank_diagnostics(ary, ("ess_tail",), prob)[0]

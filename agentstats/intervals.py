"""The interval, k and seed vocabulary: one default, one validator, one parser for every function and command.

* Intervals are asked for with ``ci_prob`` (probability mass, default :data:`CI_PROB`) and ``ci_kind`` (shape,
  :data:`CI_KINDS`: ``"eti"`` equal-tailed, ``"hdi"`` highest-density), arviz-stats' vocabulary
  (``arviz_stats.summary(ci_prob=, ci_kind=)``); :func:`check_ci` is the one check of both. A frequentist interval
  (task-cluster bootstrap, Clopper-Pearson) is equal-tailed only and is called a confidence interval; a posterior
  interval is a credible interval.
* k values: :func:`parse_k` reads the command line's ``"1,2,4"`` / ``"1..8"`` / ``"1..3,8"``; :func:`check_ks` and
  :func:`as_ks` check the library's ``k`` arguments; :func:`default_ks` is the one default every command and the
  report use; :func:`check_k_reach` refuses k a command cannot answer from the counts.
* Seeds: :data:`DEFAULT_SEED` (0) is the one default seed of every function and command;
  :func:`resolve_random_seed` turns ``random_seed`` (an int, a ``numpy.random.Generator`` or None) into the
  integer recorded with a result, so that passing it back reproduces the result; :func:`derive_seed` gives each
  slice, replicate or chunk of a parallel call its own seed from that one, from the slice's key alone.

Messages name an option as the caller knows it (``ci_prob`` in Python, ``--ci-prob`` on the command line:
:mod:`agentstats._util.options`), so the command line reports these errors as its own usage errors.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from agentstats._util.options import option_name

if TYPE_CHECKING:  # pandas loads where a table is read, not with the command line's option checks
    import pandas as pd

__all__ = [
    "CI_KINDS",
    "CI_PROB",
    "DEFAULT_K_MAX",
    "DEFAULT_K_TEXT",
    "DEFAULT_SEED",
    "FIT_K_FACTOR",
    "K_LIMIT",
    "K_MAX",
    "MAX_K_VALUES",
    "MAX_N_BOOT",
    "MIN_N_BOOT",
    "CiKind",
    "as_ks",
    "check_ci",
    "check_k_reach",
    "check_ks",
    "ci_percent",
    "default_ks",
    "derive_seed",
    "n_boot_problem",
    "parse_k",
    "resolve_random_seed",
    "table_ci_prob",
]

#: Default probability mass of every interval (credible or confidence) in agentstats.
CI_PROB = 0.95
#: Interval shapes: equal-tailed (each tail ``(1 - ci_prob) / 2``; invariant under monotone maps) and highest-density.
CiKind = Literal["eti", "hdi"]
CI_KINDS: tuple[CiKind, ...] = ("eti", "hdi")

#: Largest k the posterior functions accept: beyond it pass^k is ~0 for any p < 1 and the arrays grow without purpose.
K_MAX = 1000
#: Largest k the command line accepts, and most k values in one ``--k``: both checked before a range is expanded, so
#: ``--k 1..100000`` costs nothing but an error.
K_LIMIT = 10_000
MAX_K_VALUES = 100
#: The default k runs at most to this value (:func:`default_ks`).
DEFAULT_K_MAX = 8
#: The default k rule in words (:func:`default_ks`): every ``--k`` help and report parameter says it with this text.
DEFAULT_K_TEXT = f"1..the median trials per task, at most {DEFAULT_K_MAX} and at most every agent's largest"
#: Extrapolating commands (``agentstats fit``) answer k up to this many times the largest trials per task (at least
#: :data:`DEFAULT_K_MAX`): beyond, pass^k depends on the model's assumed tail of success probabilities near 1 far
#: more than on the data.
FIT_K_FACTOR = 10


def _name(option: str) -> str:
    """``option`` as the caller knows it: ``ci_prob`` in Python, ``--ci-prob`` on the command line."""
    return option_name(option).rstrip("=")


def _prefix(func: str | None) -> str:
    return f"{func}: " if func else ""


# ------------------------------------------------------------------------------------------------ intervals
def check_ci(
    ci_prob: Any = CI_PROB, ci_kind: Any = "eti", func: str | None = None, *, kinds: Sequence[str] = CI_KINDS
) -> tuple[float, CiKind]:
    """Check the interval settings and return them as ``(float, kind)``.

    Parameters
    ----------
    ci_prob : float
        Probability mass of the interval, in (0, 1).
    ci_kind : {"eti", "hdi"}
        Interval shape.
    func : str, optional
        The public function called, put at the start of messages.
    kinds : sequence of str
        The shapes the caller defines (frequentist intervals: ``("eti",)``).

    Returns
    -------
    (float, str)

    Raises
    ------
    ValueError
        ``ci_prob`` not a number in (0, 1) (booleans refused), or ``ci_kind`` not one of ``kinds``; a shape of
        :data:`CI_KINDS` the caller does not define is explained.
    """
    try:
        prob = float(ci_prob)
    except (TypeError, ValueError):
        raise ValueError(f"{_prefix(func)}{_name('ci_prob')} must be a number in (0, 1), got {ci_prob!r}") from None
    if isinstance(ci_prob, (bool, np.bool_)) or not 0.0 < prob < 1.0:
        raise ValueError(f"{_prefix(func)}{_name('ci_prob')} must be in (0, 1), got {ci_prob!r}")
    if ci_kind not in kinds:
        why = ""
        if ci_kind in CI_KINDS:
            why = (
                f" ({ci_kind!r} is a shape for posterior draws; the frequentist intervals here are equal-tailed: "
                "each tail holds (1 - ci_prob) / 2)"
            )
        raise ValueError(f"{_prefix(func)}{_name('ci_kind')} must be one of {list(kinds)}, got {ci_kind!r}{why}")
    return prob, ci_kind


def ci_percent(ci_prob: float) -> str:
    """Write an interval probability as a label: ``0.95`` -> ``"95%"``, ``0.975`` -> ``"97.5%"``."""
    return f"{100 * float(ci_prob):.10g}%"


def table_ci_prob(table: pd.DataFrame) -> float | None:
    """Return the interval probability of a result table: its ``ci_prob`` column or ``attrs["ci_prob"]``.

    Returns
    -------
    float or None
        The one value; :data:`CI_PROB` when the table says none; None when its rows differ.
    """
    if "ci_prob" in table and len(table):
        probs = table["ci_prob"].dropna().unique()
        if len(probs) == 1:
            return float(probs[0])
        if len(probs) > 1:
            return None
    return float(table.attrs.get("ci_prob", CI_PROB))


# ------------------------------------------------------------------------------------------------ k values
def parse_k(spec: str | None) -> list[int] | None:
    """Read k values written ``"1,2,4"``, ``"1..8"`` (also ``"1-8"``) or a mix (``"1..3,8"``).

    Parameters
    ----------
    spec : str or None
        The text; None or blank means "not given".

    Returns
    -------
    list of int or None
        Sorted, without repeats; None when ``spec`` is None or blank.

    Raises
    ------
    ValueError
        For text that is not a k list, k < 1, k > :data:`K_LIMIT`, a reversed range, or more than
        :data:`MAX_K_VALUES` values (checked before any range is expanded). The command line reports it as a
        usage error naming ``--k``.
    """
    if spec is None or spec.strip() == "":
        return None
    flag = _name("k")
    ks: set[int] = set()
    for part in spec.split(","):
        part = part.strip()
        try:
            if ".." in part:
                lo_s, hi_s = part.split("..", 1)
            elif "-" in part[1:]:
                cut = part.index("-", 1)
                lo_s, hi_s = part[:cut], part[cut + 1 :]
            else:
                lo_s = hi_s = part
            lo, hi = int(lo_s), int(hi_s)
        except ValueError:
            raise ValueError(f"{flag}: cannot read {part!r}; use e.g. 1,2,4 or 1..8") from None
        if lo < 1:
            raise ValueError(f"{flag}: values must be positive integers")
        if hi < lo:
            raise ValueError(f"{flag}: the range {part!r} runs backwards; write {hi}..{lo}")
        if hi > K_LIMIT:
            raise ValueError(f"{flag}: {hi:,} is beyond the largest k accepted ({K_LIMIT:,})")
        if hi - lo + 1 > MAX_K_VALUES or len(ks) + (hi - lo + 1) > MAX_K_VALUES:
            raise ValueError(f"{flag}: more than {MAX_K_VALUES} values; pick the ones you need (e.g. 1..10,20,50,100)")
        ks.update(range(lo, hi + 1))
    return sorted(ks)


def _is_k(v: Any) -> bool:
    try:
        return not isinstance(v, (bool, np.bool_, str, bytes)) and float(v).is_integer() and int(v) >= 1
    except (TypeError, ValueError, OverflowError):
        return False


def check_ks(k: Any, func: str) -> list[int] | None:
    """``None``, one positive integer or an iterable of them, as a sorted list without repeats (the estimators' k).

    Raises
    ------
    ValueError
        An empty iterable, or a value that is not an integer >= 1.
    """
    if k is None:
        return None
    ks = [k] if np.ndim(k) == 0 and not isinstance(k, (list, tuple, set)) else list(k)
    if not ks:
        raise ValueError(f"{func}: k must be None, a positive integer or a non-empty iterable of them")
    for v in ks:
        if not _is_k(v):
            raise ValueError(f"{func}: every k must be an integer >= 1, got {v!r}")
    return sorted({int(v) for v in ks})


def as_ks(k: int | Sequence[int], func: str | None = None) -> np.ndarray:
    """One positive integer or a non-empty sequence of them, in 1..:data:`K_MAX`, as an int64 array in the order given.

    Raises
    ------
    ValueError
        An empty or nested sequence, a value that is not an integer, or one outside 1..:data:`K_MAX`.
    """
    ks = np.atleast_1d(np.asarray(k))
    if ks.ndim != 1 or ks.size == 0:
        raise ValueError(f"{_prefix(func)}k must be a positive int or a non-empty list of them, got {k!r}")
    if not np.issubdtype(ks.dtype, np.integer):
        if not np.issubdtype(ks.dtype, np.number) or ks.dtype == bool or not np.all(np.equal(np.mod(ks, 1), 0)):
            raise ValueError(f"{_prefix(func)}k must be integers, got {k!r}")
    if np.any(ks < 1) or np.any(ks > K_MAX):
        raise ValueError(f"{_prefix(func)}k must be in 1..{K_MAX}, got {k!r}")
    return ks.astype(np.int64)


def default_ks(counts: pd.DataFrame) -> list[int]:
    """Return the default k values of every command and of the report: ``1 .. K``.

    ``K`` is the median number of recorded trials over the (agent, task) cells with at least one, capped so that
    every agent keeps a task at each k (at most the smallest over agents of its largest n) and at most
    :data:`DEFAULT_K_MAX`. With unequal trials per task (METR-style runs: most tasks 8 runs, a few 1) the smallest
    n would restrict every agent to k = 1; the median keeps the typical design, and the unbiased estimators drop,
    for each k, the tasks with fewer than k trials and list them. With equal trials ``n`` per task (n <= 8) this is
    ``1 .. n``, every task kept.

    Parameters
    ----------
    counts : pandas.DataFrame
        Columns ``agent`` and ``n`` (trials per cell; missing trials excluded), one row per (agent, task).

    Returns
    -------
    list of int
        ``[1, ..., K]``; ``[1]`` when no cell has a trial.
    """
    tried = counts.loc[counts["n"].to_numpy(dtype=float) > 0]
    if not len(tried):
        return [1]
    k_hi = int(np.median(tried["n"].to_numpy(dtype=float)))
    reach = int(tried.groupby("agent", observed=True)["n"].max().min())
    return list(range(1, max(1, min(DEFAULT_K_MAX, k_hi, reach)) + 1))


def check_k_reach(ks: Sequence[int] | None, counts: pd.DataFrame, *, extrapolate: bool, source: str) -> None:
    """Refuse k values that cannot be answered from ``counts``.

    Unbiased estimators (``extrapolate=False``): k up to the largest ``n`` of any task (they need k <= n; between
    the smallest and the largest n, tasks with fewer trials drop out for that k). A model (``extrapolate=True``):
    up to :data:`FIT_K_FACTOR` times the largest ``n`` (at least :data:`DEFAULT_K_MAX`).

    Raises
    ------
    ValueError
        Naming ``source`` (the input) and the largest k allowed.
    """
    if not ks or counts is None or not len(counts):
        return
    n_max = int(counts["n"].max())
    flag = _name("k")
    if extrapolate:
        cap = max(DEFAULT_K_MAX, FIT_K_FACTOR * n_max)
        if max(ks) > cap:
            raise ValueError(
                f"{flag} {max(ks):,}: fit extrapolates up to {FIT_K_FACTOR} x the largest trials per task in "
                f"{source} ({n_max}), so k <= {cap}"
            )
        return
    if max(ks) > n_max:
        raise ValueError(
            f"{flag} {max(ks):,}: the largest number of trials per task in {source} is {n_max}, and the unbiased "
            f"estimators need k <= n; use k <= {n_max}, or `agentstats fit` to extrapolate"
        )


# ------------------------------------------------------------------------------------------------ seeds
#: The seed every function and command uses unless told otherwise: results are reproducible by default (None asks
#: for fresh operating-system entropy, :func:`resolve_random_seed`).
DEFAULT_SEED = 0


def resolve_random_seed(random_seed: Any, func: str) -> int:
    """Turn ``random_seed`` (int >= 0, ``numpy.random.Generator`` or None) into the base seed of a call.

    An integer is used as it is. A Generator gives one draw (``integers(0, 2**63)``), so the caller's stream
    advances by exactly one value per call; None draws that value from fresh operating-system entropy. The
    returned integer is recorded with the result (``attrs["random_seed"]``): passing it back as ``random_seed``
    reproduces the result.

    Raises
    ------
    ValueError
        A negative or non-integer seed (booleans and strings refused).
    """
    if random_seed is None:
        return int(np.random.default_rng().integers(0, 2**63))
    if isinstance(random_seed, np.random.Generator):
        return int(random_seed.integers(0, 2**63))
    try:
        ok = not isinstance(random_seed, (bool, np.bool_, str)) and int(random_seed) == random_seed
    except (TypeError, ValueError):
        ok = False
    if not ok or random_seed < 0:
        raise ValueError(
            f"{func}: {_name('random_seed')} must be an integer >= 0, a numpy.random.Generator or None, "
            f"got {random_seed!r}"
        )
    return int(random_seed)


def derive_seed(random_seed: int, *keys: Any) -> int:
    """Return the seed of one slice, replicate or chunk of a call whose seed is ``random_seed``.

    ``numpy.random.SeedSequence([random_seed, *keys])`` (keys that are not integers >= 0 are hashed from their text
    with BLAKE2b, the same in every process and Python version), reduced to one integer in [0, 2**63). It depends on
    the base seed and the keys only: never on which worker runs the slice or when it finishes, so the same seed gives
    the same numbers whatever the executor, and a slice keeps its seed when other slices are added or removed.

    Parameters
    ----------
    random_seed : int
        The call's base seed (:func:`resolve_random_seed`).
    *keys : int or str or object
        What names the slice: a replicate's index, a slice's value (its ``str``), a chunk's start.

    Returns
    -------
    int
        Passed as ``random_seed`` to the function run on the slice (recorded with its result).
    """
    words = [int(random_seed)]
    for key in keys:
        if isinstance(key, (int, np.integer)) and not isinstance(key, (bool, np.bool_)) and int(key) >= 0:
            words.append(int(key))
        else:
            words.append(int.from_bytes(hashlib.blake2b(str(key).encode("utf-8"), digest_size=8).digest(), "little"))
    state = np.random.SeedSequence(words).generate_state(2, np.uint32)
    return int(state[0]) << 31 | int(state[1]) >> 1


#: Fewest bootstrap resamples accepted (0 still means "no bootstrap"). A percentile interval's ends are quantiles of
#: the resampled means: below 100 resamples each 2.5% tail of a 95% interval holds under 3 draws, so an end is one or
#: two resampled means, and with ``n_boot=1`` the interval is one resample's mean with zero width, which can exclude
#: the estimate itself. Efron & Tibshirani (1993, ch. 19) advise 1000 or more for percentile intervals (the default
#: here is 2000); 100 is the floor below which the interval is not an interval at all.
MIN_N_BOOT = 100
#: Most bootstrap resamples accepted. A percentile interval's Monte Carlo error at 10^6 resamples is far below any
#: interval's width (its ends move by about 0.1% of the standard error); beyond it the resample arrays (resamples x
#: agents x k, float64) take gigabytes, and 10^11 asked for terabytes (a MemoryError after the data was read).
MAX_N_BOOT = 1_000_000


def n_boot_problem(n_boot: int) -> str | None:
    """Say what is wrong with an integer ``n_boot`` (the words after its name); None when it is 0 or in range.

    The one rule (0, or :data:`MIN_N_BOOT` to :data:`MAX_N_BOOT`) that the estimators, the report's ``n_boot``
    parameter and every ``--n-boot`` state, each after its own name for the value.
    """
    if 0 < n_boot < MIN_N_BOOT:
        return (f"must be 0 (no bootstrap) or >= {MIN_N_BOOT}, got {n_boot!r}: fewer resamples leave the interval's "
                "ends to one or two resampled means (the default is 2000)")
    if n_boot > MAX_N_BOOT:
        return (f"must be at most {MAX_N_BOOT:,}, got {n_boot!r}: more resamples change no interval visibly and take "
                "memory in proportion")
    return None

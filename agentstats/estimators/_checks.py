"""Argument checks shared by the estimators: integer counts and bootstrap sizes.

Every message starts with the name of the public function that was called, so an error names its origin. The
interval, k and seed checks every part of agentstats shares are in :mod:`agentstats.intervals`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from agentstats.intervals import MIN_N_BOOT, n_boot_problem


def as_int_array(x: Any, name: str, func: str) -> np.ndarray:
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
            return as_int_array(arr.astype(float), name, func)
        except (TypeError, ValueError) as exc:
            if isinstance(exc, ValueError) and str(exc).startswith(func):
                raise
            raise ValueError(f"{func}: {name} must be integer counts, got non-numeric values") from exc
    raise ValueError(f"{func}: {name} must be integer counts, got dtype {arr.dtype}")


def _first_bad(mask: np.ndarray) -> str:
    if mask.ndim == 0:
        return ""
    return f" at index {tuple(int(i) for i in np.argwhere(mask)[0])}"


def check_counts_args(n: Any, c: Any, k: Any, func: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """Validate and broadcast ``n, c, k``; return int64 arrays and whether all inputs were scalars."""
    n_a = as_int_array(n, "n", func)
    c_a = as_int_array(c, "c", func)
    k_a = as_int_array(k, "k", func)
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


def finish(out: np.ndarray, scalar: bool) -> float | np.ndarray:
    """Turn ``-0.0`` into ``0.0``; return a Python float for scalar inputs."""
    out = out + 0.0
    return float(out) if scalar else out



def check_n_boot(n_boot: Any, func: str) -> int:
    """``n_boot`` as an integer: 0 (no bootstrap) or between :data:`MIN_N_BOOT` and :data:`MAX_N_BOOT`."""
    try:
        ok = not isinstance(n_boot, (bool, np.bool_, str)) and int(n_boot) == n_boot and n_boot >= 0
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ValueError(f"{func}: n_boot must be an integer, 0 or >= {MIN_N_BOOT}, got {n_boot!r}")
    problem = n_boot_problem(int(n_boot))
    if problem:
        raise ValueError(f"{func}: n_boot {problem}")
    return int(n_boot)

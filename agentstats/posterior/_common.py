"""Shared helpers of the posterior modules: argument checks, seeds, intervals."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import arviz as az
import numpy as np
import xarray as xr

Population = Literal["observed", "new"]
#: Streams of the fit's seed used here (a stream per purpose keeps the draws of one independent of the others).
NEW_TASK_STREAM = 0x7A5C
RERUN_STREAM = 0x2E2E
#: Largest k accepted: beyond it pass^k is ~0 for any p < 1 and the arrays grow without purpose.
K_MAX = 1000


def as_ks(k: int | Sequence[int]) -> np.ndarray:
    ks = np.atleast_1d(np.asarray(k))
    if ks.ndim != 1 or ks.size == 0:
        raise ValueError(f"k must be a positive int or a non-empty list of them, got {k!r}")
    if not np.issubdtype(ks.dtype, np.integer):
        if not np.issubdtype(ks.dtype, np.number) or not np.all(np.equal(np.mod(ks, 1), 0)):
            raise ValueError(f"k must be integers, got {k!r}")
        ks = ks.astype(np.int64)
    if np.any(ks < 1) or np.any(ks > K_MAX):
        raise ValueError(f"k must be in 1..{K_MAX}, got {k!r}")
    return ks.astype(np.int64)


def posterior_group(dt: xr.DataTree) -> xr.Dataset:
    if "posterior" not in dt.children:
        raise ValueError("the DataTree has no 'posterior' group (expected a fit from agentstats.fit)")
    return dt["posterior"].to_dataset()


def seeded(dt: xr.DataTree, stream: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([int(dt.attrs.get("random_seed", 0)), stream]))


def interval(x: xr.DataArray, ci_prob: float, ci_kind: str) -> xr.DataArray:
    return (az.eti if ci_kind == "eti" else az.hdi)(x, prob=ci_prob, dim=["chain", "draw"])


def check_ci(ci_prob: float, ci_kind: str) -> None:
    if not 0.0 < ci_prob < 1.0:
        raise ValueError(f"ci_prob must be in (0, 1), got {ci_prob}")
    if ci_kind not in ("eti", "hdi"):
        raise ValueError(f"ci_kind must be 'eti' or 'hdi', got {ci_kind!r}")



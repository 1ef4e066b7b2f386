"""Fits made from constructed posterior draws, for tests that check what is computed from a fit (no sampling)."""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr

from agentstats.models import CountsData, Fit, Priors, SamplerInfo, get_family
from agentstats.models.families.base import BuildInfo


def constructed_fit(
    post: xr.Dataset,
    model: str,
    n: Any,
    c: Any | None = None,
    *,
    agents: list[str] | None = None,
    tasks: list[str] | None = None,
    dispersion: str | None = None,
    random_seed: int = 5,
    sampler: str = "constructed",
    **family_options: Any,
) -> Fit:
    """A :class:`Fit` of ``model`` whose posterior is ``post`` and whose counts are ``n`` and ``c`` (agent x task).

    ``agents`` and ``tasks`` default to the posterior's coordinates; ``c`` defaults to ``n // 2``.
    """
    n = np.asarray(n, dtype=np.int64)
    c = n // 2 if c is None else np.asarray(c, dtype=np.int64)
    agents = agents if agents is not None else [str(a) for a in post["agent"].values]
    tasks = tasks if tasks is not None else [str(t) for t in post["task"].values]
    data = CountsData(agents, tasks, n, c, np.ones(n.shape, bool), "")
    family = get_family(model, dispersion=dispersion, **family_options)
    chains, draws = post.sizes["chain"], post.sizes["draw"]
    info = SamplerInfo(sampler=sampler, chains=chains, draws=draws, tune=0, draws_max=draws, target_accept=0.9,
                       random_seed=random_seed)
    return Fit.assemble(family, data, xr.DataTree.from_dict({"posterior": post}), info, Priors(), BuildInfo())


class StandInFit:
    """What the command line reads of a fit, without a posterior: the family, the sampler's settings, diagnostics.

    ``diagnostics`` is returned by :meth:`diagnostics` as it is (a stand-in with ``ok``, ``divergences``,
    ``problems``, ``table``).
    """

    def __init__(self, diagnostics: Any, model: str = "zoi_beta_binomial", *, checkpoints: tuple = (),
                 draws: int = 4, chains: int = 1, draws_max: int | None = None) -> None:
        self.family = get_family(model)
        self.sampler = SamplerInfo(sampler="fake", chains=chains, draws=draws, tune=0, draws_max=draws_max or draws,
                                   target_accept=0.9, random_seed=0, checkpoints=tuple(checkpoints))
        self.judge_error = None
        self._diagnostics = diagnostics

    def diagnostics(self) -> Any:
        return self._diagnostics

    def summary(self) -> dict[str, Any]:
        return Fit.summary(self)  # type: ignore[arg-type]

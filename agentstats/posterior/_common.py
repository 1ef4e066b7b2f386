"""Shared helpers of the posterior modules: the populations, the fit's seed streams, credible intervals of draws."""

from __future__ import annotations

from typing import Any, Literal

import arviz as az
import xarray as xr

from agentstats.models.result import Fit

Population = Literal["observed", "new"]
#: Streams of the fit's seed used here (a stream per purpose keeps the draws of one independent of the others).
NEW_TASK_STREAM = 0x7A5C
RERUN_STREAM = 0x2E2E


def as_fit(fit: Any, func: str) -> Fit:
    """``fit`` when it is a :class:`~agentstats.models.result.Fit`.

    Raises
    ------
    TypeError
        For anything else; a DataTree is named with the way to read it (``Fit.from_datatree``).
    """
    if isinstance(fit, Fit):
        return fit
    if isinstance(fit, xr.DataTree):
        raise TypeError(f"{func}: give the Fit that agentstats.fit returns; read a saved DataTree with "
                        "agentstats.Fit.from_datatree(dt) (or Fit.load(path))")
    raise TypeError(f"{func}: fit must be an agentstats Fit, got {type(fit).__name__}")


def interval(x: xr.DataArray, ci_prob: float, ci_kind: str) -> xr.DataArray:
    """Return the ``ci_kind`` credible interval of draws over ``chain, draw`` (``arviz.eti`` / ``arviz.hdi``)."""
    return (az.eti if ci_kind == "eti" else az.hdi)(x, prob=ci_prob, dim=["chain", "draw"])

"""The model families by name, the default model, and the family of a fit.

``fit(counts, model="zoi_beta_binomial", dispersion="agent")`` and the CLI's ``--bayes-model`` / ``--dispersion``
resolve here; a fit records its family in its attributes (``agentstats_model``, ``dispersion``, ``det_by_agent``)
and :func:`family_of` reads it back, so downstream code asks the family instead of branching on names.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import pandas as pd
import pymc as pm
import xarray as xr

from agentstats.model_names import DEFAULT_DISPERSION, DEFAULT_MODEL, DISPERSION_NAMES, MODEL_NAMES
from agentstats.models.beta_binomial import BetaBinomialFamily
from agentstats.models.data import prepare_counts
from agentstats.models.family import DISPERSIONS, ModelFamily
from agentstats.models.logit_normal import LogitNormalFamily
from agentstats.models.no_pooling import NoPoolingFamily
from agentstats.models.priors import Priors, as_priors

__all__ = ["DEFAULT_DISPERSION", "DEFAULT_MODEL", "MODEL_NAMES", "build_model", "family_of", "get_family"]

_FACTORIES: dict[str, Callable[..., ModelFamily]] = {
    "zoi_beta_binomial": lambda dispersion, **kw: BetaBinomialFamily(inflated=True, dispersion=dispersion, **kw),
    "beta_binomial": lambda dispersion, **kw: BetaBinomialFamily(inflated=False, dispersion=dispersion, **kw),
    "partial_pooling": lambda dispersion, **kw: LogitNormalFamily(cell_term=True, dispersion=dispersion, **kw),
    "additive": lambda dispersion, **kw: LogitNormalFamily(cell_term=False, dispersion=None, **kw),
    "no_pooling": lambda dispersion, **kw: NoPoolingFamily(**kw),
}
if tuple(_FACTORIES) != MODEL_NAMES:  # pragma: no cover - a model added here and not in names.py, or the reverse
    raise ImportError(f"agentstats.model_names.MODEL_NAMES {MODEL_NAMES} differs from the registry {tuple(_FACTORIES)}")
if DISPERSIONS != DISPERSION_NAMES:  # pragma: no cover - the same for the dispersions
    raise ImportError(f"agentstats.model_names.DISPERSION_NAMES {DISPERSION_NAMES} differs from {DISPERSIONS}")


def get_family(
    model: str | ModelFamily = DEFAULT_MODEL, *, dispersion: str | None = None, **options: object
) -> ModelFamily:
    """Return the family object for a model name (a family is returned as it is).

    Parameters
    ----------
    model : str or ModelFamily
        One of :data:`MODEL_NAMES`.
    dispersion : {"agent", "shared"}, optional
        Within-cell dispersion of the families that have one; default :data:`DEFAULT_DISPERSION`.
    **options
        Family options, e.g. ``det_by_agent=True`` for ``zoi_beta_binomial``.

    Raises
    ------
    ValueError
        On an unknown model or dispersion, or an option the family does not have.
    """
    if isinstance(model, ModelFamily):
        if dispersion is not None and dispersion != model.dispersion:
            raise ValueError(f"dispersion={dispersion!r} conflicts with the family given ({model!r})")
        return model
    if model not in _FACTORIES:
        raise ValueError(f"model must be one of {MODEL_NAMES}, got {model!r}")
    if dispersion is not None and dispersion not in DISPERSIONS:
        raise ValueError(f"dispersion must be one of {DISPERSIONS}, got {dispersion!r}")
    try:
        return _FACTORIES[model](dispersion or DEFAULT_DISPERSION, **options)
    except TypeError as exc:
        raise ValueError(f"model {model!r}: {exc}") from None


def family_of(dt: xr.DataTree) -> ModelFamily:
    """Return the family a fit was made with, from its attributes.

    Raises
    ------
    ValueError
        If the DataTree was not made by :func:`agentstats.models.fit.fit`.
    """
    name = dt.attrs.get("agentstats_model")
    if name is None:
        raise ValueError("this DataTree has no 'agentstats_model' attribute (expected a fit from agentstats.fit)")
    disp = dt.attrs.get("dispersion", "none")
    options = {"det_by_agent": bool(int(dt.attrs.get("det_by_agent", 0)))} if name == "zoi_beta_binomial" else {}
    if name in ("zoi_beta_binomial", "beta_binomial", "partial_pooling") and disp == "none":
        disp = "shared"  # fits made before per-agent dispersion existed
    return get_family(str(name), dispersion=None if disp == "none" else str(disp), **options)


def build_model(
    counts: pd.DataFrame,
    model: str | ModelFamily = DEFAULT_MODEL,
    *,
    dispersion: str | None = None,
    priors: Priors | Mapping[str, float] | None = None,
    parameterization: dict[str, str] | None = None,
) -> pm.Model:
    """Build the PyMC model of a family on a counts table (see :meth:`ModelFamily.build`).

    ``priors``: :class:`Priors`, a mapping of its fields, or None (the defaults); see
    :func:`agentstats.models.priors.as_priors`.

    Raises
    ------
    ValueError
        On an unknown model, invalid counts, parameterization or priors.
    TypeError
        When ``priors`` is neither :class:`Priors`, a mapping nor None.
    """
    family = get_family(model, dispersion=dispersion)
    built, _ = family.build(prepare_counts(counts), as_priors(priors, "build_model"), parameterization)
    return built

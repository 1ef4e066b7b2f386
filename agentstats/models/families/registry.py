"""The model families by name, the default model, and the family of a saved fit; importable without PyMC.

Each name maps to ``"module:Class"`` and the options that make the family (``zoi_beta_binomial`` is
``BetaBinomialFamily(inflated=True)``); the class is imported on first use, so listing the names (the command
line's ``--help`` and option checks) needs no PyMC. ``fit(counts, model="zoi_beta_binomial", dispersion="agent")``
and the CLI's ``--bayes-model`` / ``--dispersion`` resolve here once (:func:`get_family`); a fit records its family
in its attributes (:meth:`~agentstats.models.families.base.ModelFamily.to_attrs`) and :func:`family_from_attrs`
reads it back when a saved fit is loaded.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from agentstats._util.options import option_name

if TYPE_CHECKING:
    from agentstats.models.families.base import ModelFamily

__all__ = [
    "DEFAULT_DISPERSION",
    "DEFAULT_MODEL",
    "DISPERSIONS",
    "MODEL_NAMES",
    "Dispersion",
    "check_population",
    "family_from_attrs",
    "get_family",
    "new_task_models",
]

Dispersion = Literal["agent", "shared"]
#: Within-cell dispersion per agent (pooled across agents) or one value shared by all agents.
DISPERSIONS: tuple[Dispersion, ...] = ("agent", "shared")
#: Within-cell dispersion per agent unless told otherwise (evidence: docs/models.md, "Per-agent dispersion").
DEFAULT_DISPERSION: Dispersion = "agent"

_BB = "agentstats.models.families.beta_binomial:BetaBinomialFamily"
_LN = "agentstats.models.families.logit_normal:LogitNormalFamily"
_NP = "agentstats.models.families.no_pooling:NoPoolingFamily"
#: name -> (the family's class as "module:Class", the options that make it). The default first.
_FAMILIES: dict[str, tuple[str, dict[str, Any]]] = {
    "zoi_beta_binomial": (_BB, {"inflated": True}),
    "beta_binomial": (_BB, {"inflated": False}),
    "partial_pooling": (_LN, {"cell_term": True}),
    "additive": (_LN, {"cell_term": False}),
    "no_pooling": (_NP, {}),
}
#: Every model name, the default first.
MODEL_NAMES: tuple[str, ...] = tuple(_FAMILIES)
#: The model :func:`agentstats.models.fitting.fit` uses unless told otherwise (evidence: docs/models.md).
DEFAULT_MODEL = MODEL_NAMES[0]


def _family_class(name: str) -> type[ModelFamily]:
    """Import the class that implements model ``name``."""
    module, _, cls = _FAMILIES[name][0].partition(":")
    return getattr(importlib.import_module(module), cls)


def get_family(
    model: str | ModelFamily = DEFAULT_MODEL, *, dispersion: str | None = None, **options: object
) -> ModelFamily:
    """Return the family object for a model name (a family is returned as it is).

    Parameters
    ----------
    model : str or ModelFamily
        One of :data:`MODEL_NAMES`.
    dispersion : {"agent", "shared"}, optional
        Within-cell dispersion of the families that have one (ignored by the others); default
        :data:`DEFAULT_DISPERSION`.
    **options
        Family options, e.g. ``det_by_agent=True`` for ``zoi_beta_binomial``.

    Raises
    ------
    ValueError
        On an unknown model or dispersion, an option the family does not have, or a ``dispersion`` that conflicts
        with a family given as an object.
    """
    if not isinstance(model, str):
        if dispersion is not None and dispersion != model.dispersion:
            raise ValueError(f"dispersion={dispersion!r} conflicts with the family given ({model!r})")
        return model
    if model not in _FAMILIES:
        raise ValueError(f"model must be one of {MODEL_NAMES}, got {model!r}")
    if dispersion is not None and dispersion not in DISPERSIONS:
        raise ValueError(f"dispersion must be one of {DISPERSIONS}, got {dispersion!r}")
    try:
        return _family_class(model).create(dispersion=dispersion or DEFAULT_DISPERSION, **_FAMILIES[model][1],
                                           **options)
    except TypeError as exc:
        raise ValueError(f"model {model!r}: {exc}") from None


def family_from_attrs(attrs: Mapping[str, Any]) -> ModelFamily:
    """Return the family a fit was made with, from its attributes (``agentstats_model``, ``dispersion``, ...).

    Each family reads its own options back (:meth:`~agentstats.models.families.base.ModelFamily.from_attrs`, which
    also reads fits written before an option existed).

    Raises
    ------
    ValueError
        Without an ``agentstats_model`` attribute, or with a name or dispersion this version does not know.
    """
    name = attrs.get("agentstats_model")
    if name is None:
        raise ValueError("no 'agentstats_model' attribute (expected a fit from agentstats.fit)")
    if name not in _FAMILIES:
        raise ValueError(f"agentstats_model {name!r} is not one of {MODEL_NAMES}")
    disp = str(attrs.get("dispersion", "none"))
    if disp != "none" and disp not in DISPERSIONS:
        raise ValueError(f"dispersion attribute {disp!r} is not one of {DISPERSIONS}")
    return _family_class(str(name)).from_attrs(attrs, **_FAMILIES[str(name)][1])


def new_task_models() -> tuple[str, ...]:
    """Return the model names whose family predicts a new task from the task population (``supports_new_tasks``)."""
    return tuple(n for n in MODEL_NAMES if get_family(n).supports_new_tasks)


def check_population(model: str | ModelFamily, population: str, *, model_option: str = "model") -> ModelFamily | None:
    """Refuse ``population="new"`` for a model without a task population, before anything is read or fitted.

    The family's capability :attr:`~agentstats.models.families.base.ModelFamily.supports_new_tasks` decides; the
    family's module (and PyMC) is imported only for ``population="new"``.

    Parameters
    ----------
    model : str or ModelFamily
        A name of :data:`MODEL_NAMES` or a family.
    population : {"observed", "new"}
        The task population asked for.
    model_option : str
        How the caller names the model option (``"model"`` for :func:`agentstats.fit`, ``"bayes_model"`` for the
        command line's ``--bayes-model``), for the message (:func:`agentstats._util.options.option_name`).

    Returns
    -------
    ModelFamily or None
        The family for ``population="new"``; None for ``"observed"``.

    Raises
    ------
    ValueError
        A population other than ``"observed"`` / ``"new"``, an unknown model, or ``"new"`` with a family that has no
        task population: the message names the option and what to use instead.
    """
    if population not in ("observed", "new"):
        raise ValueError(f"{option_name('population').rstrip('=')} must be 'observed' or 'new', got {population!r}")
    if population == "observed":
        return None
    family = get_family(model)
    if family.supports_new_tasks:
        return family
    raise ValueError(
        f"{option_name('population', 'new')}: the {family.name} model has no task population (hyperparameters mu, "
        f"sigma_task) to draw a new task from; use {option_name('population', 'observed')}, or "
        f"{option_name(model_option).rstrip('=')} one of {', '.join(new_task_models())}"
    )

"""Hierarchical models of agent x task success counts: model families, priors, fitting, the fit, diagnostics.

One family object per statistical model (:mod:`agentstats.models.families`) owns everything specific to that model
and declares what it can do; :func:`fit` samples it and returns a :class:`Fit` (:mod:`agentstats.models.result`),
which holds the family, the counts, the posterior and its diagnostics. See ``docs/models.md`` for the equations,
priors, parameterization rule and the evidence behind the default.

Names are imported on first use (PEP 562), so the model names (:mod:`agentstats.models.families.registry`) can be
listed without importing PyMC.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentstats._util.lazy import lazy_attributes

if TYPE_CHECKING:
    from agentstats.models.data import CountsData, counts_hash, prepare_counts
    from agentstats.models.diagnostics import (
        ConvergenceWarning,
        Diagnostics,
        PPCResult,
        compare_models,
        diagnose,
        posterior_predictive_cells,
    )
    from agentstats.models.families.base import ModelFamily
    from agentstats.models.families.beta_binomial import BetaBinomialFamily
    from agentstats.models.families.logit_normal import LogitNormalFamily
    from agentstats.models.families.no_pooling import NoPoolingFamily, no_pooling_posterior
    from agentstats.models.families.registry import (
        DEFAULT_DISPERSION,
        DEFAULT_MODEL,
        DISPERSIONS,
        MODEL_NAMES,
        family_from_attrs,
        get_family,
    )
    from agentstats.models.fitting import build_model, fit
    from agentstats.models.parameterization import choose_parameterization
    from agentstats.models.priors import DEFAULT_PRIORS, Priors
    from agentstats.models.result import Fit, SamplerInfo
    from agentstats.models.sampling import (
        DEFAULT_SAMPLER,
        SAMPLERS,
        SamplerConfig,
        SamplingInterrupted,
        available_cpus,
        available_samplers,
    )

_NAMES = {
    "CountsData": "agentstats.models.data",
    "counts_hash": "agentstats.models.data",
    "prepare_counts": "agentstats.models.data",
    "ConvergenceWarning": "agentstats.models.diagnostics",
    "Diagnostics": "agentstats.models.diagnostics",
    "PPCResult": "agentstats.models.diagnostics",
    "compare_models": "agentstats.models.diagnostics",
    "diagnose": "agentstats.models.diagnostics",
    "posterior_predictive_cells": "agentstats.models.diagnostics",
    "ModelFamily": "agentstats.models.families.base",
    "BetaBinomialFamily": "agentstats.models.families.beta_binomial",
    "LogitNormalFamily": "agentstats.models.families.logit_normal",
    "NoPoolingFamily": "agentstats.models.families.no_pooling",
    "no_pooling_posterior": "agentstats.models.families.no_pooling",
    "DEFAULT_DISPERSION": "agentstats.models.families.registry",
    "DEFAULT_MODEL": "agentstats.models.families.registry",
    "DISPERSIONS": "agentstats.models.families.registry",
    "MODEL_NAMES": "agentstats.models.families.registry",
    "family_from_attrs": "agentstats.models.families.registry",
    "get_family": "agentstats.models.families.registry",
    "build_model": "agentstats.models.fitting",
    "fit": "agentstats.models.fitting",
    "choose_parameterization": "agentstats.models.parameterization",
    "DEFAULT_PRIORS": "agentstats.models.priors",
    "Priors": "agentstats.models.priors",
    "Fit": "agentstats.models.result",
    "SamplerInfo": "agentstats.models.result",
    "DEFAULT_SAMPLER": "agentstats.models.sampling",
    "SAMPLERS": "agentstats.models.sampling",
    "SamplerConfig": "agentstats.models.sampling",
    "SamplingInterrupted": "agentstats.models.sampling",
    "available_cpus": "agentstats.models.sampling",
    "available_samplers": "agentstats.models.sampling",
}

__getattr__, __dir__ = lazy_attributes(__name__, _NAMES)

__all__ = [
    "DEFAULT_DISPERSION",
    "DEFAULT_MODEL",
    "DEFAULT_PRIORS",
    "DEFAULT_SAMPLER",
    "DISPERSIONS",
    "MODEL_NAMES",
    "SAMPLERS",
    "BetaBinomialFamily",
    "ConvergenceWarning",
    "CountsData",
    "Diagnostics",
    "Fit",
    "LogitNormalFamily",
    "ModelFamily",
    "NoPoolingFamily",
    "PPCResult",
    "Priors",
    "SamplerConfig",
    "SamplerInfo",
    "SamplingInterrupted",
    "available_cpus",
    "available_samplers",
    "build_model",
    "choose_parameterization",
    "compare_models",
    "counts_hash",
    "diagnose",
    "family_from_attrs",
    "fit",
    "get_family",
    "no_pooling_posterior",
    "posterior_predictive_cells",
    "prepare_counts",
]

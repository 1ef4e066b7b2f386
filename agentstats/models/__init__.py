"""Hierarchical models of agent x task success counts: model families, priors, fitting, diagnostics.

One family object per statistical model (:mod:`agentstats.models.family`) owns everything specific to that model;
:func:`fit` samples it; :func:`diagnose` checks the result. See ``docs/models.md`` for the equations, priors,
parameterization rule and the evidence behind the default.
"""

from agentstats.models.beta_binomial import BetaBinomialFamily
from agentstats.models.data import CountsData, counts_hash, prepare_counts, stored_counts, stored_data
from agentstats.models.diagnostics import (
    ConvergenceWarning,
    Diagnostics,
    PPCResult,
    compare_models,
    diagnose,
    posterior_predictive_cells,
)
from agentstats.models.family import DISPERSIONS, ModelFamily
from agentstats.models.fit import (
    DEFAULT_SAMPLER,
    SAMPLERS,
    SamplerConfig,
    SamplingInterrupted,
    available_cpus,
    available_samplers,
    fit,
)
from agentstats.models.logit_normal import LogitNormalFamily
from agentstats.models.no_pooling import NoPoolingFamily, no_pooling_posterior
from agentstats.models.parameterization import choose_parameterization
from agentstats.models.priors import DEFAULT_PRIORS, Priors
from agentstats.models.registry import (
    DEFAULT_DISPERSION,
    DEFAULT_MODEL,
    MODEL_NAMES,
    build_model,
    family_of,
    get_family,
)

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
    "LogitNormalFamily",
    "ModelFamily",
    "NoPoolingFamily",
    "PPCResult",
    "Priors",
    "SamplerConfig",
    "SamplingInterrupted",
    "available_cpus",
    "available_samplers",
    "build_model",
    "choose_parameterization",
    "compare_models",
    "counts_hash",
    "diagnose",
    "family_of",
    "fit",
    "get_family",
    "no_pooling_posterior",
    "posterior_predictive_cells",
    "prepare_counts",
    "stored_counts",
    "stored_data",
]

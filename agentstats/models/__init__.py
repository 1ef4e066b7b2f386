"""Hierarchical models of agent x task success counts: builders, priors, fitting, diagnostics.

See ``docs/models.md`` for the equations, priors, parameterization rule and diagnostics thresholds.
"""

from agentstats.models.beta_binomial import build_beta_binomial
from agentstats.models.builders import (
    DEFAULT_MODEL,
    MODEL_NAMES,
    CountsData,
    build_additive,
    build_model,
    build_no_pooling,
    build_partial_pooling,
    choose_parameterization,
    counts_hash,
    no_pooling_posterior,
    prepare_counts,
)
from agentstats.models.diagnostics import (
    ConvergenceWarning,
    Diagnostics,
    PPCResult,
    compare_models,
    diagnose,
    posterior_predictive_cells,
)
from agentstats.models.fit import DEFAULT_SAMPLER, SAMPLERS, available_samplers, fit, stored_counts
from agentstats.models.priors import DEFAULT_PRIORS, Priors

__all__ = [
    "DEFAULT_MODEL",
    "DEFAULT_PRIORS",
    "DEFAULT_SAMPLER",
    "MODEL_NAMES",
    "SAMPLERS",
    "ConvergenceWarning",
    "CountsData",
    "Diagnostics",
    "PPCResult",
    "Priors",
    "available_samplers",
    "build_additive",
    "build_beta_binomial",
    "build_model",
    "build_no_pooling",
    "build_partial_pooling",
    "choose_parameterization",
    "compare_models",
    "counts_hash",
    "diagnose",
    "fit",
    "no_pooling_posterior",
    "posterior_predictive_cells",
    "prepare_counts",
    "stored_counts",
]

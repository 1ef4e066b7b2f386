"""Model names and defaults, importable without PyMC (the command line's ``--help`` and option checks read them).

:mod:`agentstats.models.registry` maps each name to its family and refuses to import when the two disagree.
"""

from __future__ import annotations

__all__ = ["DEFAULT_DISPERSION", "DEFAULT_MODEL", "DISPERSION_NAMES", "MODEL_NAMES"]

#: The model :func:`agentstats.models.fit.fit` uses unless told otherwise (evidence: docs/models.md).
DEFAULT_MODEL = "zoi_beta_binomial"
#: Within-cell dispersion per agent unless told otherwise (evidence: docs/models.md, "Per-agent dispersion").
DEFAULT_DISPERSION = "agent"
#: Every within-cell dispersion (``agentstats.models.family.DISPERSIONS``; the registry checks that they agree).
DISPERSION_NAMES = ("agent", "shared")
#: Every model name, the default first.
MODEL_NAMES = ("zoi_beta_binomial", "beta_binomial", "partial_pooling", "additive", "no_pooling")

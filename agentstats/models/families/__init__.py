"""The statistical model families, one object per model.

Each owns its PyMC model, its posterior quantities and its capabilities (:mod:`agentstats.models.families.base`);
:mod:`agentstats.models.families.registry` maps names to them and is importable without PyMC.

* :mod:`~agentstats.models.families.beta_binomial`: ``zoi_beta_binomial`` (the default) and ``beta_binomial``;
* :mod:`~agentstats.models.families.logit_normal`: ``partial_pooling`` and ``additive``;
* :mod:`~agentstats.models.families.no_pooling`: ``no_pooling`` (drawn exactly).
"""

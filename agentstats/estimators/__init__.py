"""Frequentist and closed-form Bayesian estimators of pass@k and pass^k from success counts.

For one agent on one task with success probability ``p``, **pass@k** = ``1 - (1-p)^k`` (at least one of ``k``
independent trials succeeds) and **pass^k** = ``p^k`` (all ``k`` succeed). The package has one module per part:

* :mod:`~agentstats.estimators.unbiased`: the per-task unbiased estimators :func:`pass_at_k` (Chen et al. 2021,
  arXiv 2107.03374) and :func:`pass_hat_k` (Yao et al. 2024, arXiv 2406.12045), and the biased plug-in values
  :func:`plugin_pass_at_k`, :func:`plugin_pass_hat_k` (Fair Forge's formulas);
* :mod:`~agentstats.estimators.suite`: suite values per agent, :func:`suite_pass_k` (mean over tasks, clustered
  standard error, task-cluster bootstrap interval, task coverage per ``k``);
* :mod:`~agentstats.estimators.paired`: paired differences between agents on the same tasks,
  :func:`paired_pass_k` and :func:`paired_pass_k_table` (paired bootstrap, exact McNemar test);
* :mod:`~agentstats.estimators.bootstrap`: the bootstrap kernel and the boundary interval
  :func:`clopper_pearson_interval`;
* :mod:`~agentstats.estimators.beta`: the exact Beta-Binomial posterior pushed through pass@k and pass^k,
  :func:`beta_pass_k` (no Monte Carlo);
* :mod:`~agentstats.estimators.dirichlet`: Dirichlet-process posteriors of a bounded metric's mean, of a paired
  difference and of a ratio of means over examples, corrected for a calibrated judge, and the examples that would
  decide a check (the release gate's statistics, also read by the metric summaries and the loop);
* :mod:`~agentstats.estimators.metric_means`: per agent and metric, the posterior mean over tasks and the share of
  trials passing (:func:`~agentstats.estimators.metric_means.summarize_metrics`).

Intervals everywhere are asked for with ``ci_prob`` and ``ci_kind``, and resampling with ``random_seed`` (an int
or a ``numpy.random.Generator``): the vocabulary, its defaults and checks are :mod:`agentstats.intervals`.
"""

from __future__ import annotations

from agentstats.estimators.beta import beta_pass_k
from agentstats.estimators.bootstrap import clopper_pearson_interval
from agentstats.estimators.paired import paired_pass_k, paired_pass_k_table
from agentstats.estimators.suite import suite_pass_k
from agentstats.estimators.unbiased import pass_at_k, pass_hat_k, plugin_pass_at_k, plugin_pass_hat_k

__all__ = [
    "beta_pass_k",
    "clopper_pearson_interval",
    "paired_pass_k",
    "paired_pass_k_table",
    "pass_at_k",
    "pass_hat_k",
    "plugin_pass_at_k",
    "plugin_pass_hat_k",
    "suite_pass_k",
]

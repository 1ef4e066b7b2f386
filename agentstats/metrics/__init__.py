"""Metrics: answer quality, retrieval quality, content safety, readability and usage, one tidy frame.

:func:`compute` scores trials with metrics chosen by name or group (:data:`GROUPS`) and returns one row per
(trial, record, metric) with the value, pass/fail against the metric's threshold and the evidence. A metric is a
:class:`Metric` (name, group, level, the fields it reads, method, value range, ``lower_limit`` / ``upper_limit``);
:data:`CATALOGUE` lists them and ``docs/metrics.md`` describes each.

Modules: :mod:`~agentstats.metrics.base` (the interface), :mod:`~agentstats.metrics.registry` (the catalogue),
:mod:`~agentstats.metrics.compute` (the frame), :mod:`~agentstats.metrics.output` (files, summaries), and
the methods: :mod:`~agentstats.metrics.answer`, :mod:`~agentstats.metrics.retrieval`,
:mod:`~agentstats.metrics.readability`, :mod:`~agentstats.metrics.safety`, :mod:`~agentstats.metrics.usage`.
"""

from agentstats.metrics.base import DEFAULT_FIELDS, GROUPS, LEVELS, Metric, Score, not_applicable
from agentstats.metrics.compute import COLUMNS, MetricInputError, compute
from agentstats.metrics.output import metric_counts, summarize_frame, write_metrics
from agentstats.metrics.registry import CATALOGUE, get_metric, metric_names, resolve_metrics

__all__ = [
    "CATALOGUE",
    "COLUMNS",
    "DEFAULT_FIELDS",
    "GROUPS",
    "LEVELS",
    "Metric",
    "MetricInputError",
    "Score",
    "compute",
    "get_metric",
    "metric_counts",
    "metric_names",
    "not_applicable",
    "resolve_metrics",
    "summarize_frame",
    "write_metrics",
]

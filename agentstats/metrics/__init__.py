"""Metrics: the one catalogue of metrics, computed over trials into one tidy frame.

:func:`compute` scores trials with metrics chosen by name or group (:data:`GROUPS`: answer quality, correctness,
tool use, format, retrieval quality, content safety, readability, usage, outcome) and returns one row per (trial,
record, metric) with the value, pass/fail against the metric's threshold and the evidence. A metric is a
:class:`Metric` (name, group, level, the fields it reads, method, value range, ``lower_limit`` / ``upper_limit``);
:data:`CATALOGUE` lists them and ``docs/metrics.md`` describes each. Live capture (:mod:`agentstats.capture`), the
run comparison (:func:`agentstats.compare.runs.trial_metrics`) and the command line read the same catalogue; a
function ``(answer, expected)`` becomes a metric with :func:`function_metric`. :func:`compute_files` gives the same
frame from trial files, one shard per file, each read and scored by a worker (a process pool, ``ray.data``), so the
caller never loads the trials.

Modules: :mod:`~agentstats.metrics.base` (the interface), :mod:`~agentstats.metrics.registry` (the catalogue),
:mod:`~agentstats.metrics.compute` (the frame), :mod:`~agentstats.metrics.sharded` (the frame from
files), :mod:`~agentstats.metrics.output` (files, summaries), and
the methods: :mod:`~agentstats.metrics.answer`, :mod:`~agentstats.metrics.matching`,
:mod:`~agentstats.metrics.tool_use`, :mod:`~agentstats.metrics.response_format`,
:mod:`~agentstats.metrics.retrieval`, :mod:`~agentstats.metrics.readability`, :mod:`~agentstats.metrics.pii`,
:mod:`~agentstats.metrics.safety`, :mod:`~agentstats.metrics.usage`, :mod:`~agentstats.metrics.recorded` (and the
judge, embedding and classifier methods: :mod:`~agentstats.metrics.judged`, :mod:`~agentstats.metrics.embedding`,
:mod:`~agentstats.metrics.guardian`).
"""

from agentstats.metrics.base import DEFAULT_FIELDS, GROUPS, LEVELS, Metric, Score, not_applicable
from agentstats.metrics.compute import COLUMNS, MetricInputError, compute, not_computed
from agentstats.metrics.matching import MATCHER_METRICS, function_metric
from agentstats.metrics.output import judge_missing_over, summarize_frame, summarize_with_intervals, write_metrics
from agentstats.metrics.registry import CATALOGUE, MetricSpec, get_metric, metric_names, resolve_metrics
from agentstats.metrics.sharded import compute_files

__all__ = [
    "CATALOGUE",
    "COLUMNS",
    "DEFAULT_FIELDS",
    "GROUPS",
    "LEVELS",
    "MATCHER_METRICS",
    "Metric",
    "MetricInputError",
    "MetricSpec",
    "Score",
    "compute",
    "compute_files",
    "function_metric",
    "get_metric",
    "judge_missing_over",
    "metric_names",
    "not_applicable",
    "not_computed",
    "resolve_metrics",
    "summarize_frame",
    "summarize_with_intervals",
    "write_metrics",
]

"""The metric catalogue: every metric by name, with its group, methods, range and default threshold.

:func:`get_metric` returns a configured copy, :func:`resolve_metrics` expands names and group names
(``"answer_quality,hit_rate"``) into metrics. The table in ``docs/metrics.md`` describes each entry.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from agentstats.metrics import (
    answer,
    embedding,
    guardian,
    judged,
    matching,
    readability,
    recorded,
    response_format,
    retrieval,
    safety,
    tool_use,
    usage,
)
from agentstats.metrics.base import GROUPS, Level, Metric
from agentstats.metrics.pii import pii_presidio

__all__ = ["CATALOGUE", "MetricSpec", "get_metric", "metric_names", "resolve_metrics"]

_INF = math.inf
_RET = ("retrieved_contexts", "ground_truth_contexts", "relevance")
_RET_LEVELS: tuple[Any, ...] = ("interaction", "node")
_TOOLS = ("tool_calls", "expected_tool_calls", "tool_sequence_matters")
_TOOLS_SOURCE = "agentstats.scoring.tools.score_tool_calls (optimal pairing of same-name calls; docs/scoring.md)"
_USAGE_ROLES = ("usage", "latency_s", "duration_s", "started_at", "ended_at", "input_tokens", "output_tokens",
                "prompt_tokens", "completion_tokens", "cost_usd", "model")


def _m(name: str, group: str, roles: tuple[str, ...], methods: Mapping[str, Any], *, method: str | None = None,
       value_range: tuple[float, float] = (0.0, 1.0), lower: float | None = None, upper: float | None = None,
       levels: tuple[Any, ...] = ("interaction", "node", "trial"), level: Level = "interaction", description: str,
       source: str) -> Metric:
    return Metric(
        name=name, group=group, level=level, roles=roles, method=method or next(iter(methods)),
        methods=dict(methods), value_range=value_range, lower_limit=lower, upper_limit=upper, levels=levels,
        description=description, source=source,
    )


_ENTRIES = [
    # answer quality
    _m("answer_similarity", "answer_quality", ("output", "expected"),
       {"token_f1": answer.token_f1, "token_recall": answer.token_recall,
        "judge": judged.ANSWER_JUDGES["answer_similarity"], "embedding": embedding.embedding_similarity}, lower=0.5,
       description="overlap of the answer with the expected answer",
       source="SQuAD token F1 / recall (Rajpurkar et al. 2016, arXiv 1606.05250)"),
    _m("answer_relevance", "answer_quality", ("output", "input"),
       {"token_recall": answer.answer_relevance_token_recall, "judge": judged.ANSWER_JUDGES["answer_relevance"],
        "embedding": embedding.embedding_relevance},
       lower=0.5,
       description="how much of the question the answer addresses",
       source="token recall of the question in the answer (SQuAD tokens)"),
    _m("faithfulness", "answer_quality", ("output", "context"),
       {"token_k_precision": answer.faithfulness_token_k_precision, "judge": judged.ANSWER_JUDGES["faithfulness"]},
       lower=0.5,
       description="share of the answer supported by the given context",
       source="K-Precision (Adlakha et al. 2023, arXiv 2307.16877)"),
    _m("unsuccessful_requests", "answer_quality", ("output", "input"),
       {"phrases": answer.unsuccessful_phrases, "judge": judged.ANSWER_JUDGES["unsuccessful_requests"]}, upper=0.0,
       description="1 when the answer declines, cannot help or does not know",
       source="phrase list (refusal prefixes as in Zou et al. 2023, arXiv 2307.15043)"),
    _m("keyword_inclusion", "answer_quality", ("output", "keywords"), {"tokens": answer.keyword_inclusion},
       lower=1.0, description="share of the required keywords in the answer", source="SQuAD-normalised tokens"),
    # correctness: the answer against the expected answer (live capture's metric names)
    *[_m(name, "correctness", ("output", "expected"), {matcher: matching.MATCHERS[matcher]}, lower=1.0,
         description=f"the {matcher} answer matcher's score against the expected answer",
         source=f"agentstats.scoring.answers ({matcher}); SQuAD normalisation (Rajpurkar et al. 2016, "
                "arXiv 1606.05250)")
      for matcher, name in matching.MATCHER_METRICS.items()],
    _m("answer_correctness", "correctness", ("output", "expected", "input"), {"judge": matching.answer_correctness},
       lower=1.0, description="the judge's verdict on the answer against the expected answer",
       source="agentstats.scoring.judge (deterministic matcher, or LLM judge with prompt answer_correctness)"),
    # tool use: the calls against the expected calls and the tools' schemas
    _m("tool_calls_correct", "tool_use", _TOOLS, {"score_tool_calls": tool_use.tool_calls_correct}, lower=1.0,
       description="1 when the calls' weighted overall score reaches params['tool_threshold'] (default 1)",
       source=_TOOLS_SOURCE),
    _m("tool_selection", "tool_use", _TOOLS, {"score_tool_calls": tool_use.tool_selection}, lower=1.0,
       description="share of calls paired by name with an expected call", source=_TOOLS_SOURCE),
    _m("tool_parameters", "tool_use", _TOOLS, {"score_tool_calls": tool_use.tool_parameters}, lower=1.0,
       description="mean argument agreement over the expected calls", source=_TOOLS_SOURCE),
    _m("tool_sequence", "tool_use", _TOOLS, {"score_tool_calls": tool_use.tool_sequence}, lower=1.0,
       description="share of expected calls made in the expected order", source=_TOOLS_SOURCE),
    _m("tool_calls_valid", "tool_use", ("tool_calls", "tools"), {"json_schema": tool_use.tool_calls_valid}, lower=1.0,
       description="1 when every call satisfies its tool's JSON Schema",
       source="agentstats.scoring.schema_check.validate_tool_calls (JSON Schema draft 2020-12)"),
    _m("tool_calls", "tool_use", ("interactions", "expected_tool_calls", "tools"),
       {"score_trial_tools": tool_use.trial_tool_calls}, lower=1.0, levels=("trial",), level="trial",
       description="mean overall tool-call score of a trial's interactions and whole conversation",
       source="agentstats.scoring.tools.score_trial_tools"),
    # response format
    _m("format_valid", "format", ("output",), {"json_schema": response_format.format_valid}, lower=1.0,
       description="1 when the answer is JSON satisfying params['schema']",
       source="JSON Schema draft 2020-12 (jsonschema)"),
    # retrieval quality
    _m("context_relevance", "retrieval_quality", (*_RET, "input", "context"),
       {"labels": retrieval.context_relevance, "judge": judged.context_relevance_judge,
        "embedding": embedding.embedding_context_relevance}, lower=0.5,
       levels=_RET_LEVELS, description="mean relevance of the retrieved contexts",
       source="mean of relevance labels; or of a judge's or an embedding cosine's score per retrieved passage"),
    _m("retrieval_precision", "retrieval_quality", _RET, {"trec_eval": retrieval.retrieval_precision}, lower=0.5,
       levels=_RET_LEVELS, description="share of retrieved contexts that are relevant", source="trec_eval P"),
    _m("average_precision", "retrieval_quality", _RET, {"trec_eval": retrieval.average_precision}, lower=0.5,
       levels=_RET_LEVELS, description="average precision of the ranking",
       source="trec_eval map (Manning et al. 2008, ch. 8)"),
    _m("reciprocal_rank", "retrieval_quality", _RET, {"trec_eval": retrieval.reciprocal_rank}, lower=0.5,
       levels=_RET_LEVELS, description="1 / rank of the first relevant context", source="trec_eval recip_rank"),
    _m("hit_rate", "retrieval_quality", _RET, {"trec_eval": retrieval.hit_rate}, lower=1.0,
       levels=_RET_LEVELS, description="1 when any relevant context is retrieved", source="trec_eval success"),
    _m("ndcg", "retrieval_quality", _RET, {"trec_eval": retrieval.ndcg}, lower=0.5, levels=_RET_LEVELS,
       description="normalised discounted cumulative gain",
       source="Järvelin & Kekäläinen 2002; trec_eval ndcg"),
    # readability
    _m("reading_ease", "readability", ("output",), {"textstat": readability.reading_ease},
       value_range=(-_INF, 121.22), lower=50.0, description="Flesch reading ease of the answer (higher is easier)",
       source="Flesch 1948; textstat"),
    _m("grade_level", "readability", ("output",), {"textstat": readability.grade_level},
       value_range=(-3.4, _INF), upper=12.0, description="Flesch-Kincaid grade level of the answer",
       source="Kincaid et al. 1975; textstat"),
    # content safety (deterministic)
    _m("pii", "content_safety", ("output", "input"),
       {"presidio": pii_presidio, "judge": judged.RISK_JUDGES["pii"],
        "guardian": guardian.guardian_method("pii", "output")}, upper=0.0,
       description="1 when the answer holds personally identifiable information",
       source="presidio-analyzer pattern recognizers"),
    _m("regex_detection", "content_safety", ("output", "patterns"), {"regex": safety.regex_detection}, upper=0.0,
       description="1 when a configured pattern matches the answer", source="Python regular expressions"),
    _m("topic_relevance", "content_safety", ("input",), {"judge": judged.ANSWER_JUDGES["topic_relevance"]},
       lower=0.5, description="whether the input is on one of params['topics']", source="LLM judge, versioned rubric"),
    *[_m(r, "content_safety", ("input", "output"),
         {"judge": fn, "guardian": guardian.guardian_method(r, judged.RISKS[r][1])}, upper=0.0,
         description=f"{r.replace('_', ' ')}: {judged.RISKS[r][0]}",
         source="LLM judge, versioned rubric (Granite Guardian risk taxonomy, arXiv 2412.07724)")
      for r, fn in judged.RISK_JUDGES.items() if r != "pii"],
    # usage: per trial by default, where the trial schema records it (a trial without it: the sum over its
    # interactions when each has the value); level="interaction" or "node" reads the finer records
    _m("latency", "usage", _USAGE_ROLES, {"recorded": usage.latency}, level="trial", value_range=(0.0, _INF),
       description="seconds to answer", source="trial records"),
    _m("duration", "usage", _USAGE_ROLES, {"recorded": usage.duration}, level="trial", value_range=(0.0, _INF),
       description="wall-clock seconds", source="trial records"),
    _m("input_tokens", "usage", _USAGE_ROLES, {"recorded": usage.input_tokens}, level="trial",
       value_range=(0.0, _INF),
       description="input (prompt) tokens", source="trial records"),
    _m("output_tokens", "usage", _USAGE_ROLES, {"recorded": usage.output_tokens}, level="trial",
       value_range=(0.0, _INF),
       description="output (completion) tokens", source="trial records"),
    _m("cost", "usage", _USAGE_ROLES, {"recorded_or_priced": usage.cost, "recorded": usage.cost_recorded},
       level="trial", value_range=(0.0, _INF), description="US dollars", source="trial records; price table"),
    # outcome numbers a benchmark recorded per trial (compared as numbers, no threshold)
    _m("reward", "outcome", ("reward",), {"recorded": recorded.reward}, level="trial", value_range=(-_INF, _INF),
       description="the trial's recorded reward", source="trial records"),
    _m("recorded_metric", "outcome", ("meta",), {"recorded": recorded.recorded_metric}, level="trial",
       value_range=(-_INF, _INF), description="a number recorded under meta['metrics'][params['key']]",
       source="trial records (e.g. tau2-bench reward components)"),
]

#: Every metric by name, with its default method, level and threshold.
CATALOGUE: dict[str, Metric] = {m.name: m for m in _ENTRIES}


def metric_names(group: str | None = None) -> list[str]:
    """Names of the metrics in the catalogue (of one group when given), in catalogue order."""
    return [n for n, m in CATALOGUE.items() if group is None or m.group == group]


def get_metric(name: str, /, **changes: Any) -> Metric:
    """Return a catalogue metric with attributes changed: ``get_metric("answer_similarity", method="token_recall")``.

    ``name=`` among the changes renames it (to select one metric twice with different settings).

    Raises
    ------
    ValueError
        For an unknown name (the known ones are listed), or invalid changes (see :class:`Metric`).
    """
    m = CATALOGUE.get(name)
    if m is None:
        close = difflib.get_close_matches(name, [*CATALOGUE, *GROUPS], n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise ValueError(f"unknown metric {name!r}; {hint}choose from {sorted(CATALOGUE)} or a group {list(GROUPS)}")
    if not changes:
        return m
    try:
        return m.replace(**changes)
    except TypeError as exc:  # an unknown attribute, or a value of the wrong type
        fields = sorted(f.name for f in dataclasses.fields(Metric))
        raise ValueError(f"get_metric({name!r}): {exc} (a metric's settings: {', '.join(fields)})") from None


def _metric_from_name(item: str) -> Metric:
    """``get_metric`` for one spec item: ``"NAME"`` or ``"NAME:METHOD"``."""
    name, sep, method = (p.strip() for p in item.partition(":"))
    if not sep:
        return get_metric(name)
    if name in GROUPS:
        raise ValueError(f"{item!r}: a group takes no method (its metrics' methods differ); give the metric names, "
                         f"e.g. {metric_names(name)[0] + ':' + method!r}")
    if not method:
        methods = sorted(get_metric(name).methods)
        raise ValueError(f"{item!r}: no method after ':'; metric {name!r} offers {methods}")
    return get_metric(name, method=method)


def _preferred(m: Metric, method: str | None) -> Metric:
    return m.replace(method=method) if method is not None and method in m.methods and m.method != method else m


#: What names a metric wherever a list of metrics is accepted: a name (or group name, or ``"NAME:METHOD"``), a
#: :class:`Metric`, or a function ``(answer, expected)`` (:func:`agentstats.metrics.matching.function_metric`).
MetricSpec = str | Metric | Callable[[Any, Any], Any]


def resolve_metrics(spec: MetricSpec | Iterable[MetricSpec], *, prefer_method: str | None = None) -> list[Metric]:
    """Metrics from names, group names, :class:`Metric` objects and functions (a comma-separated string is split).

    A name may carry its method after a colon, ``"NAME:METHOD"`` (``"harm,faithfulness:judge"``): it is
    ``get_metric(NAME, method=METHOD)``. A group name takes no method (its members' methods differ). A function
    ``(answer, expected)`` is :func:`~agentstats.metrics.matching.function_metric` ``(fn)``, named after it.

    A metric selected again with the same settings is kept once. A metric given by name or as a :class:`Metric`
    replaces the group's default of that name, wherever the group comes in the list (``["answer_quality",
    get_metric("answer_similarity", lower_limit=0.9)]``).

    ``prefer_method`` (``"guardian"`` for ``agentstats score --guardian``): a metric named without a method, or
    through its group, uses this method when it offers it (``"harm"`` becomes ``"harm:guardian"``); a metric named
    with its method, or given as a :class:`Metric`, keeps its method.

    Raises
    ------
    ValueError
        For an unknown name or method (the known ones are listed), a method given to a group, an empty
        selection, or one name given twice with different settings (each name is one
        column of results: rename one, ``get_metric(name, ..., name="other")``).
    TypeError
        For an item that is neither a name, a :class:`Metric` nor a callable.
    """
    items: list[MetricSpec]
    if isinstance(spec, Metric) or (callable(spec) and not isinstance(spec, str)):
        items = [spec]
    elif isinstance(spec, str):
        items = [s.strip() for s in spec.split(",") if s.strip()]
    else:
        items = list(spec)
    out: dict[str, Metric] = {}
    explicit: set[str] = set()  # given by name or as a Metric (a group's members only fill in)
    for it in items:
        if isinstance(it, str) and it in GROUPS:
            for n in metric_names(it):
                out.setdefault(n, _preferred(CATALOGUE[n], prefer_method))
            continue
        if isinstance(it, Metric):
            m = it
        elif isinstance(it, str):
            m = _metric_from_name(it)
            m = m if ":" in it else _preferred(m, prefer_method)
        elif callable(it):
            m = matching.function_metric(it)
        else:
            raise TypeError(f"a metric is a name, a Metric or a function (answer, expected), got {type(it).__name__}")
        if m.name in explicit and out[m.name] != m:
            raise ValueError(
                f"metric {m.name!r} is selected twice with different settings; each metric name is one column of "
                f"results: give one of them another name, e.g. get_metric({m.name!r}, ..., name={m.name + '_2'!r})")
        explicit.add(m.name)
        out[m.name] = m
    if not out:
        raise ValueError("no metric selected")
    return list(out.values())

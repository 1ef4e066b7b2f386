"""The metric interface: :class:`Metric`, :class:`Score`, levels, field roles and thresholds.

A metric reads named fields of one *record* (an interaction, a node of an interaction, or a whole trial), computes
one number with one *method*, and turns it into pass/fail with a threshold: ``lower_limit`` (pass when
``value >= lower_limit``) and/or ``upper_limit`` (pass when ``value <= upper_limit``). A metric that cannot be
computed on a record (no reference answer, no context, an empty answer ...) returns a *not applicable* score with
the reason: never a silent 0.

Records and field roles
-----------------------
A metric names the *roles* it reads (``input``, ``output``, ``context``, ``expected``, ``retrieved_contexts``,
``ground_truth_contexts``, ``relevance`` ...). Each role maps to a field of the record; the default field names
depend on the level (:data:`DEFAULT_FIELDS`) and any of them can be renamed per metric (``Metric.with_fields``)
or per call (``compute(..., fields=...)``):

``interaction``
    one :class:`agentstats.records.trial.Interaction` (``query``, ``answer``, ``context``, ``expected_answer``, and any
    extra field such as ``retrieved_contexts`` or ``usage``);
``node``
    one entry of an interaction's extra field ``nodes`` (a list of objects, one per node of the agent's graph:
    ``name``, ``input``, ``output``, ``context``, ``expected``, ``usage`` ...);
``trial``
    one :class:`agentstats.records.trial.Trial`; answer fields are those of its last interaction with an answer (the
    final answer), usage is the trial's ``usage`` (or the sum over its interactions when every one has it).
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

__all__ = [
    "DEFAULT_FIELDS",
    "GROUPS",
    "LEVELS",
    "Level",
    "Method",
    "Metric",
    "RecordValues",
    "Score",
    "field_value",
    "not_applicable",
]

Level = Literal["interaction", "node", "trial"]
#: Levels a metric can be computed at, from the finest.
LEVELS: tuple[Level, ...] = ("node", "interaction", "trial")
#: Metric groups, selectable by name wherever a metric name is accepted.
GROUPS: tuple[str, ...] = ("answer_quality", "correctness", "tool_use", "format", "retrieval_quality", "content_safety",
                          "readability", "usage", "outcome")

#: Default field name of each role, per level. A role absent here reads the field of the same name.
DEFAULT_FIELDS: Mapping[str, Mapping[str, str]] = MappingProxyType({
    "interaction": MappingProxyType({
        "input": "query", "output": "answer", "context": "context", "expected": "expected_answer",
    }),
    "node": MappingProxyType({"input": "input", "output": "output", "context": "context", "expected": "expected"}),
    "trial": MappingProxyType({
        "input": "query", "output": "answer", "context": "context", "expected": "expected_answer",
    }),
})


@dataclass(frozen=True, slots=True)
class Score:
    """One metric value on one record.

    Parameters
    ----------
    value : float or None
        The value, in the metric's range; ``None`` when the metric does not apply to the record.
    evidence : dict
        What the value rests on (matched tokens, entity types found, ranks of relevant contexts ...); for a
        not-applicable score, ``{"not_applicable": reason}``.
    """

    value: float | None
    evidence: Mapping[str, Any] = field(default_factory=dict)

    @property
    def applicable(self) -> bool:
        """Whether the metric applied (``value`` is a number)."""
        return self.value is not None


def not_applicable(reason: str) -> Score:
    """Return a not-applicable :class:`Score` carrying ``reason`` as evidence."""
    return Score(None, {"not_applicable": reason})


#: A method: ``fn(values, params) -> Score`` with ``values`` the role -> field value mapping of one record.
Method = Callable[[Mapping[str, Any], Mapping[str, Any]], Score]


def field_value(record: Any, name: str) -> Any:
    """Value of field ``name`` of a record: a mapping key, an attribute, or a pydantic extra field; else ``None``."""
    if isinstance(record, dict):
        return record.get(name)
    d = getattr(record, "__dict__", None)
    if d is not None and hasattr(record, "__pydantic_extra__"):  # pydantic model: fields, then extras
        if name in d:
            return d[name]
        extra = record.__pydantic_extra__
        return extra.get(name) if extra else None
    if isinstance(record, Mapping):
        return record.get(name)
    v = getattr(record, name, None)
    if v is None:
        extra = getattr(record, "model_extra", None)
        if extra:
            v = extra.get(name)
    return v


@dataclass(frozen=True)
class Metric:
    """A metric: what it reads, how it computes, its range and its pass/fail threshold.

    Parameters
    ----------
    name : str
        Metric name (``answer_similarity``, ``hit_rate`` ...).
    group : str
        One of :data:`GROUPS`.
    level : {"interaction", "node", "trial"}
        The records it is computed on (see the module docstring).
    roles : tuple of str
        The roles it reads (``output``, ``expected`` ...).
    method : str
        The method used, one of ``methods``.
    methods : mapping of str to callable
        Every method this metric offers: ``fn(values, params) -> Score``.
    value_range : (float, float)
        Smallest and largest possible value (``math.inf`` for unbounded counts and durations).
    lower_limit, upper_limit : float, optional
        Threshold: passed when ``value >= lower_limit`` and ``value <= upper_limit`` (each only when given).
        With neither, ``passed`` is missing.
    fields : mapping of str to str
        Role -> field name overrides on top of :data:`DEFAULT_FIELDS`.
    params : mapping
        Method options (keyword lists, patterns, a price table ...).
    levels : tuple of str
        Levels the metric supports.
    description, source : str
        What it measures, and the paper or library its formula comes from.

    Raises
    ------
    ValueError
        For an unknown group, level or method, an empty value range, or a threshold outside the value range.
    """

    name: str
    group: str
    level: Level
    roles: tuple[str, ...]
    method: str
    methods: Mapping[str, Method]
    value_range: tuple[float, float] = (0.0, 1.0)
    lower_limit: float | None = None
    upper_limit: float | None = None
    fields: Mapping[str, str] = field(default_factory=dict)
    params: Mapping[str, Any] = field(default_factory=dict)
    levels: tuple[Level, ...] = ("interaction", "node", "trial")
    description: str = ""
    source: str = ""

    def __post_init__(self) -> None:
        if self.group not in GROUPS:
            raise ValueError(f"metric {self.name}: unknown group {self.group!r}; choose one of {list(GROUPS)}")
        if self.level not in self.levels:
            raise ValueError(f"metric {self.name}: level {self.level!r} not supported; choose one of "
                             f"{list(self.levels)}")
        if self.method not in self.methods:
            raise ValueError(f"metric {self.name}: unknown method {self.method!r}; choose one of "
                             f"{sorted(self.methods)}")
        lo, hi = self.value_range
        if not lo < hi:
            raise ValueError(f"metric {self.name}: empty value range {self.value_range}")
        for label, lim in (("lower_limit", self.lower_limit), ("upper_limit", self.upper_limit)):
            if lim is not None and (isinstance(lim, bool) or not isinstance(lim, numbers.Real)):
                raise ValueError(f"metric {self.name}: {label} must be a number in [{lo}, {hi}] or None, got {lim!r}")
            if lim is not None and (math.isnan(lim) or not lo <= lim <= hi):
                raise ValueError(f"metric {self.name}: {label} {lim} outside the value range [{lo}, {hi}]")

    def field_names(self, level: Level | None = None) -> dict[str, str]:
        """Role -> field name read at ``level`` (default: the metric's level), overrides applied."""
        base = DEFAULT_FIELDS[level or self.level]
        return {r: self.fields.get(r, base.get(r, r)) for r in self.roles}

    def replace(self, **changes: Any) -> Metric:
        """Return a copy with attributes changed (``method``, ``level``, ``lower_limit``, ``fields``, ``params``)."""
        return dataclasses.replace(self, **changes)

    def with_fields(self, **fields: str) -> Metric:
        """Return a copy reading other field names: ``metric.with_fields(output="response")``."""
        return dataclasses.replace(self, fields={**self.fields, **fields})

    def passed(self, value: float | None) -> bool | None:
        """Pass/fail of ``value`` against the threshold; ``None`` when not applicable or no threshold is set."""
        if value is None or (self.lower_limit is None and self.upper_limit is None):
            return None
        if self.lower_limit is not None and value < self.lower_limit:
            return False
        return not (self.upper_limit is not None and value > self.upper_limit)

    def score(self, values: Mapping[str, Any]) -> Score:
        """Compute the metric on one record's role values (``{"output": ..., "expected": ...}``)."""
        return self.methods[self.method](values, self.params)

    def score_record(self, record: Any, level: Level | None = None) -> Score:
        """Read this metric's fields from ``record`` (an interaction, node or trial view) and compute it."""
        return self.score(RecordValues(record, self.field_names(level)))


class RecordValues(Mapping[str, Any]):
    """The role -> value view of one record that a method reads; each field is looked up when asked for.

    Parameters
    ----------
    record : Any
        An interaction, a node (mapping) or a trial view.
    names : mapping of str to str
        Role -> field name.
    """

    __slots__ = ("names", "record")

    def __init__(self, record: Any, names: Mapping[str, str]) -> None:
        self.record = record
        self.names = names

    def get(self, role: str, default: Any = None) -> Any:
        """Value of ``role`` (its field in the record), or ``default`` when absent or null."""
        v = field_value(self.record, self.names.get(role, role))
        return default if v is None else v

    def __getitem__(self, role: str) -> Any:
        v = self.get(role)
        if v is None:
            raise KeyError(role)
        return v

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)

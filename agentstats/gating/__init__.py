"""Release gate: PASS / FAIL / RETRY for a candidate against a baseline, decided on posterior probabilities.

:func:`gate` takes scored results per example and metric (:mod:`agentstats.records.scores`) and a
:class:`GateConfig` (:mod:`agentstats.gating.config`) and returns a :class:`GateDecision`. Its parts, one job each:
pairing the two sets (:mod:`~agentstats.gating.data`), the checks per metric and stratum with the posteriors of
:mod:`agentstats.estimators.dirichlet` (:mod:`~agentstats.gating.checks`), the decision rule and :func:`gate` itself
(:mod:`~agentstats.gating.decide`), the review triggers (:mod:`~agentstats.gating.triggers`), and the decision
record with its sign-offs (:mod:`~agentstats.gating.record`; its "same inputs" identity is
:mod:`agentstats.records.decision`). ``docs/gate.md`` is the reference.
"""

from agentstats.gating.checks import Check, MetricResult, no_failure_text
from agentstats.gating.config import GateConfig, GateConfigError, load_gate_config
from agentstats.gating.decide import gate
from agentstats.gating.record import GateDecision, RecordRefused, keep_record
from agentstats.gating.triggers import Trigger

__all__ = [
    "Check",
    "GateConfig",
    "GateConfigError",
    "GateDecision",
    "MetricResult",
    "RecordRefused",
    "Trigger",
    "gate",
    "keep_record",
    "load_gate_config",
    "no_failure_text",
]

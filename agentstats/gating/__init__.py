"""Release gate: PASS / FAIL / RETRY for a candidate against a baseline, decided on posterior probabilities.

:func:`gate` takes scored results per example and metric (:mod:`agentstats.records.scores`) and a
:class:`GateConfig` (:mod:`agentstats.gating.config`), computes the posterior of each metric's mean and of the paired
difference to the baseline per stratum (:mod:`agentstats.gating.posterior`), and returns a :class:`GateDecision`
whose :meth:`~GateDecision.to_record` is the JSON decision record. ``docs/gate.md`` is the reference.
"""

from agentstats.gating.config import GateConfig, GateConfigError, load_gate_config
from agentstats.gating.decision import Check, GateDecision, MetricResult, Trigger, gate

__all__ = [
    "Check",
    "GateConfig",
    "GateConfigError",
    "GateDecision",
    "MetricResult",
    "Trigger",
    "gate",
    "load_gate_config",
]

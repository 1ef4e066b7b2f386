"""Live capture of a running agent into the run store (framework-agnostic): see :mod:`agentstats.capture.core`.

``agentstats.run`` / ``start_run`` / ``end_run`` open and close a run; ``agentstats.node`` (decorator) and
``agentstats.trace_node`` (``with`` block) record node invocations; metrics (:mod:`agentstats.capture.metrics`) are
computed at the end from the stored records.
"""

from agentstats.capture.core import Run, current_run, end_run, node, run, start_run, trace_node
from agentstats.capture.metrics import Metric

__all__ = ["Metric", "Run", "current_run", "end_run", "node", "run", "start_run", "trace_node"]

"""Live capture of a running agent into the run store, whatever framework it is written in.

``agentstats.run`` / ``start_run`` / ``end_run`` open and close a run (:mod:`~agentstats.capture.runs`);
``agentstats.node`` (decorator) and ``agentstats.trace_node`` (``with`` block) record node invocations
(:mod:`~agentstats.capture.tracing`; the per-call path in :mod:`~agentstats.capture.recorder`, the node a call is in
in :mod:`~agentstats.capture.context`, the records in :mod:`~agentstats.capture.records`, OpenAI usage and cost in
:mod:`~agentstats.capture.openai_patch`); metrics of the metric catalogue are computed at the end from the stored
records (:mod:`~agentstats.capture.scoring`); ``agentstats.open_run`` reads a stored run's results back
(:mod:`~agentstats.capture.results`).
"""

from agentstats.capture.results import StoredRun, open_run
from agentstats.capture.runs import Run, current_run, end_run, run, start_run
from agentstats.capture.tracing import node, trace_node

__all__ = ["Run", "StoredRun", "current_run", "end_run", "node", "open_run", "run", "start_run", "trace_node"]

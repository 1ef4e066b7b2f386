"""The evaluator-optimizer loop: generate -> evaluate -> gate -> optimize, decided on posterior probabilities.

:func:`optimize` runs a candidate prompt on an FAI-style eval set (:mod:`agentstats.records.evalset`), scores the
answers (the metric catalogue's deterministic entries: answer matchers, JSON-Schema validity, tool calls, refusals;
and the instructor judge for groundedness, relevance and safety, :mod:`agentstats.llm.prompts.loop`), gates every
iteration against the baseline and the best iteration so far (:func:`agentstats.gating.gate`), revises the prompt,
and stops on PASS, on no credible improvement, on the cost budget, on wall time or after ``max_iterations``. Paid
calls go through the LLM client (:mod:`agentstats.llm.client`), cached and budgeted before they are sent; every step
is logged durably so a run resumes without paying twice. The loop renders no report: ``agentstats loop --out-dir``
renders the run's gate report afterwards (:func:`agentstats.report.gate.run_gate_report`). ``docs/loop.md`` is the
reference.

Modules: :mod:`~agentstats.optimize.loop` (the orchestration, :func:`optimize`), :mod:`~agentstats.optimize.steps`
(generate, evaluate, decide, revise; the improvement rule) over :mod:`~agentstats.optimize.run` (what a step
reads, :class:`IterationResult`, :class:`LoopResult`), :mod:`~agentstats.optimize.journal` (the run folder's
log, running totals and resume checks), :mod:`~agentstats.optimize.revision` (prompt diffs, policy-text triggers),
:mod:`~agentstats.optimize.storing` (iterations in the run store), :mod:`~agentstats.optimize.config` (the loop
config, and :func:`load_config` for either config file), :mod:`~agentstats.optimize.errors`.
"""

import sys
import types
from typing import Any

from agentstats.optimize.config import LoopConfig, LoopConfigError, load_config, load_loop_config
from agentstats.optimize.errors import EndpointError, LoopError
from agentstats.optimize.loop import optimize
from agentstats.optimize.revision import policy_triggers, prompt_diff
from agentstats.optimize.run import IterationResult, LoopResult

__all__ = [
    "EndpointError",
    "IterationResult",
    "LoopConfig",
    "LoopConfigError",
    "LoopError",
    "LoopResult",
    "load_config",
    "load_loop_config",
    "optimize",
    "policy_triggers",
    "prompt_diff",
]


class _CallableModule(types.ModuleType):
    """``agentstats.optimize`` is both this package and the loop's entry point: calling the module runs the loop."""

    def __call__(self, *args: Any, **kwargs: Any) -> LoopResult:
        return optimize(*args, **kwargs)


# After ``import agentstats.optimize`` the package attribute ``agentstats.optimize`` is this module, not the function
# the public facade names; making the module callable keeps ``agentstats.optimize(...)`` working either way.
sys.modules[__name__].__class__ = _CallableModule

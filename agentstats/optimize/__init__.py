"""The evaluator-optimizer loop: generate -> evaluate -> gate -> optimize, decided on posterior probabilities.

:func:`optimize` runs a candidate prompt on an FAI-style eval set (:mod:`agentstats.records.evalset`), scores the
answers (deterministic matchers, JSON-Schema validity, the instructor judge for groundedness, relevance and safety;
:mod:`agentstats.llm.prompts.loop`), gates every iteration against the baseline and the best iteration so far
(:func:`agentstats.gating.gate`), revises the prompt, and stops on PASS, on no credible improvement, on the cost
budget, on wall time or after ``max_iterations`` (:mod:`agentstats.optimize.loop`). Paid calls go through the LLM
client (:mod:`agentstats.llm.client`), cached and budgeted before they are sent; every step is logged durably so a
run resumes without paying twice. :func:`run_gate_report` renders a run or a gate decision record as a notebook and
HTML. ``docs/gate.md`` ("Loop") is the reference.
"""

import sys
import types
from typing import Any

from agentstats.optimize.config import LoopConfig, LoopConfigError, load_config, load_loop_config
from agentstats.optimize.loop import (
    EndpointError,
    IterationResult,
    LoopError,
    LoopResult,
    optimize,
    policy_triggers,
    prompt_diff,
)

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

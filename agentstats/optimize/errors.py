"""Why the loop stops early: :class:`LoopError` (it cannot go on), :class:`EndpointError`, and the stop rules.

:class:`Stop` is internal: a step raises it when a stop rule fires mid-step (the cost budget, the wall time), and the
orchestration (:mod:`agentstats.optimize.loop`) turns it into the result's ``stop_reason``.
"""

from __future__ import annotations

from typing import Literal

__all__ = ["EndpointError", "LoopError", "Stop", "StopReason"]

#: Why a loop run stopped (``LoopResult.stop_reason``).
StopReason = Literal["pass", "no_improvement", "budget", "wall_time", "max_iterations"]


class LoopError(RuntimeError):
    """The loop cannot go on (a call failed after every retry, a refused key, a run folder that does not fit).

    Nothing paid for is lost: completed calls are cached and completed steps logged; ``resume=True`` continues.
    """


class EndpointError(LoopError):
    """A model endpoint (agent, judge or optimizer) failed after every retry or refused the key.

    The CLI exits 69 (EX_UNAVAILABLE) for it, so CI can tell an endpoint that is down from a FAIL decision (1).
    """


class Stop(Exception):
    """A stop rule fired inside a step (``reason``: the budget or the wall time; ``detail``: one line saying why)."""

    def __init__(self, reason: StopReason, detail: str):
        super().__init__(detail)
        self.reason: StopReason = reason
        self.detail = detail

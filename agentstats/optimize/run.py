"""A loop run's shared parts: what every step reads, what an iteration and the run produce, how a step calls.

:class:`RunContext` is what every step of :mod:`agentstats.optimize.steps` reads (settings, data, the run's journal,
the LLM client, the user callables, the store); :class:`IterationResult` is what one iteration produced (handed to a
user optimizer); :class:`LoopResult` is what :func:`agentstats.optimize.optimize` returns. :func:`run_batch` sends a
step's calls and turns a budget or wall-time refusal into a :class:`~agentstats.optimize.errors.Stop`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from agentstats.gating import GateDecision, Trigger
from agentstats.llm.budget import BudgetExhausted, WallTimeExceeded
from agentstats.llm.client import LLMClient
from agentstats.llm.transport import run_coro
from agentstats.optimize.config import LoopConfig
from agentstats.optimize.errors import LoopError, Stop
from agentstats.optimize.journal import Journal
from agentstats.optimize.storing import LoopStore
from agentstats.records.evalset import Example
from agentstats.records.scores import ScoreSet

__all__ = ["AgentFn", "IterationResult", "LoopResult", "OptimizerFn", "RunContext", "check_time", "run_batch",
           "settled"]

#: A user agent: ``agent(example, prompt)`` returns the answer (or a mapping with ``response``; ``docs/loop.md``).
AgentFn = Callable[[dict[str, Any], str], Any]
#: A user optimizer: ``optimizer(prompt, result)`` returns the next prompt.
OptimizerFn = Callable[[str, "IterationResult"], str]


@dataclass
class IterationResult:
    """What one iteration produced (handed to a user ``optimizer``).

    Attributes
    ----------
    iteration : int
        1-based.
    prompt : str
    outputs : list of dict
        Per example: ``id, response, tokens, cost_usd, latency_s, cached``, and ``tool_calls`` when the agent
        reported calls (a user agent) or was offered tools (the built-in agent).
    scores : ScoreSet
        The per-example metric values (the gate's input).
    records : list of dict
        The same as score records (``id, scores, risk_level, tags, judge_missing, tokens, cost_usd, latency_s``).
    decision : GateDecision
        The gate against the baseline.
    vs_best : GateDecision or None
        The gate against the best iteration so far (None for iteration 1).
    p_better_than_best : float or None
        ``P(weighted score > best's)`` on the paired examples.
    improved : bool
        Whether it credibly improves on the best so far (always True for iteration 1).
    judge_missing : dict of str to int
        Missing verdicts per judge metric.
    """

    iteration: int
    prompt: str
    outputs: list[dict[str, Any]]
    scores: ScoreSet
    records: list[dict[str, Any]]
    decision: GateDecision
    vs_best: GateDecision | None
    p_better_than_best: float | None
    improved: bool
    judge_missing: dict[str, int]


@dataclass
class LoopResult:
    """Outcome of a loop run.

    Attributes
    ----------
    decision : {"PASS", "FAIL", "RETRY"}
        The gate's decision (against the baseline) for the best iteration; RETRY when no iteration completed.
    stop_reason : {"pass", "no_improvement", "budget", "wall_time", "max_iterations"}
    stop_detail : str
        One line saying why it stopped.
    best_iteration : int or None
    best_prompt : str or None
    iterations : list of dict
        One summary per completed iteration (the log's ``decision`` lines).
    revisions : list of dict
        The log's ``revision`` lines (prompt, diff, rationale, triggers).
    triggers : list of Trigger
        Human-review triggers: the best iteration's gate triggers and every policy-text trigger of the run.
    cost_usd : float
        Money spent by the run's calls (all invocations of a resumed run: what the log records, plus this one's).
    n_requests : int
        HTTP requests sent by the run's calls (all invocations, as ``cost_usd``).
    n_cached : int
        Calls answered from the run's cache by this invocation.
    run_dir : pathlib.Path
    best : IterationResult or None
        The best iteration (None when no iteration completed).
    config_sha256 : str
        The loop config's hash.
    store_run : str or None
        The run store's run of the best iteration (``<prefix>/iter-NNN``), when the loop wrote to a store.
    """

    decision: str
    stop_reason: str
    stop_detail: str
    best_iteration: int | None
    best_prompt: str | None
    iterations: list[dict[str, Any]]
    revisions: list[dict[str, Any]]
    triggers: list[Trigger]
    cost_usd: float
    n_requests: int
    n_cached: int
    run_dir: Path
    best: IterationResult | None = None
    config_sha256: str = ""
    store_run: str | None = None

    @property
    def exit_code(self) -> int:
        """0 PASS, 1 FAIL, 75 otherwise (undecided: more data or more iterations would decide it)."""
        return {"PASS": 0, "FAIL": 1}.get(self.decision, 75)

    @property
    def review_required(self) -> bool:
        """Whether a human-review trigger fired."""
        return bool(self.triggers)

    def decision_record(self) -> dict[str, Any] | None:
        """Return the best iteration's gate decision record against the baseline, with the loop's ``loop`` section.

        ``loop``: ``run_dir``, ``best_iteration``, ``stop_reason``, ``stop_detail``, ``prompt`` (the winning prompt)
        and its ``prompt_sha256``, ``iterations``, ``loop_config_sha256`` and the revisions' ``policy_triggers``: what a
        reviewer signs (``agentstats loop --out FILE --sign-off NAME``). None when no iteration completed.
        """
        if self.best is None:
            return None
        from agentstats.optimize.journal import text_sha256

        record = self.best.decision.to_record()
        record["loop"] = {
            "run_dir": str(self.run_dir), "best_iteration": self.best_iteration, "stop_reason": self.stop_reason,
            "stop_detail": self.stop_detail, "prompt": self.best.prompt, "prompt_sha256": text_sha256(self.best.prompt),
            "iterations": len(self.iterations), "loop_config_sha256": self.config_sha256,
            "policy_triggers": [asdict(t) for t in self.triggers if t.kind == "policy_text_changed"],
        }
        return record

    def to_record(self) -> dict[str, Any]:
        """Return the JSON-ready result (written to ``result.json`` in the run folder)."""
        return {
            "schema": "agentstats.loop-result/1",
            "decision": self.decision,
            "stop_reason": self.stop_reason,
            "stop_detail": self.stop_detail,
            "review_required": self.review_required,
            "best_iteration": self.best_iteration,
            "best_prompt": self.best_prompt,
            "iterations": self.iterations,
            "revisions": self.revisions,
            "triggers": [asdict(t) for t in self.triggers],
            "cost_usd": self.cost_usd,
            "n_requests": self.n_requests,
            "n_cached": self.n_cached,
            "run_dir": str(self.run_dir),
            "config_sha256": self.config_sha256,
        }


@dataclass
class RunContext:
    """What every step of one loop run reads: settings, data, where it writes, how it calls models.

    Attributes
    ----------
    cfg : LoopConfig
    examples : list of Example
        The eval set.
    baseline : ScoreSet
    journal : Journal
        The run folder's log and files.
    client : LLMClient
        Every paid call (and the run's cache, budget and wall-time deadline).
    agent : callable, optional
        The user agent; None: the built-in chat agent of ``cfg.agent``.
    optimizer : callable, optional
        The user optimizer; None: the built-in revision prompt.
    store : LoopStore, optional
        The run store that receives every decided iteration.
    """

    cfg: LoopConfig
    examples: list[Example]
    baseline: ScoreSet
    journal: Journal
    client: LLMClient
    agent: AgentFn | None = None
    optimizer: OptimizerFn | None = None
    store: LoopStore | None = None


def check_time(ctx: RunContext) -> None:
    """Stop (``wall_time``) when the run's ``max_wall_seconds`` have passed."""
    deadline = ctx.client.deadline
    if deadline is not None and time.monotonic() > deadline:
        raise Stop("wall_time", f"max_wall_seconds ({ctx.cfg.gate.max_wall_seconds:g} s) passed")


def run_batch(ctx: RunContext, coro_factory: Callable[[], Any]) -> Any:
    """Run one batch of calls (``coro_factory()``) to the end and return its result.

    Raises
    ------
    Stop
        When the budget refused a call (``budget``) or the wall time ran out (``wall_time``).
    """
    async def batch() -> Any:
        try:
            return await coro_factory()
        finally:
            await ctx.client.aclose()

    try:
        return run_coro(batch)
    except BudgetExhausted as exc:
        raise Stop("budget", str(exc)) from None
    except WallTimeExceeded as exc:
        raise Stop("wall_time", str(exc)) from None


def settled(results: list[Any]) -> list[Any]:
    """Return the results of a batch run to the end (every call sent was let finish); raise its worst error.

    A refused key or a failed generation (:class:`LoopError`) wins over a budget or wall-time stop, which wins over
    anything else.
    """
    errors = [r for r in results if isinstance(r, BaseException)]
    for kind in (LoopError, BudgetExhausted, WallTimeExceeded, BaseException):
        for e in errors:
            if isinstance(e, kind):
                raise e
    return results

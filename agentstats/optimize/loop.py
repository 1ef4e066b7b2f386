"""The evaluator-optimizer loop's orchestration: generate -> evaluate -> decide -> revise, until PASS or a stop rule.

Each iteration (numbered from 1; iteration 1 runs the starting prompt) runs the four steps of
:mod:`agentstats.optimize.steps`: the agent answers every example, the answers are scored (the metric catalogue's
deterministic entries and the judge), the iteration is gated against the baseline and judged against the best so far
(:func:`agentstats.optimize.improvement.improvement`), and the prompt is revised. The loop stops on PASS; after
``stop_after_no_improvement`` iterations in a row without a credible improvement; when the next call would exceed
``max_total_cost_usd`` (checked before the call, :mod:`agentstats.llm.client`); when ``max_wall_seconds`` have passed
(checked before every call); after ``max_iterations``.

Every completed step is one fsync'd line of the run folder's log and every paid call is cached the moment it
completes (:mod:`agentstats.optimize.journal`): ``resume=True`` replays the logged steps and continues where the run
stopped (a crash, a kill, Ctrl-C, a budget or wall-time stop) without repeating a call that completed. With a run
store, every decided iteration is also written there (:mod:`agentstats.optimize.storing`). The loop returns its
result and renders nothing: the gate report of a run is :func:`agentstats.report.gate.run_gate_report`'s, called by
``agentstats loop --out-dir`` after the loop. ``docs/loop.md`` is the reference.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from agentstats.gating import Trigger
from agentstats.io.loaders import load
from agentstats.llm.budget import Budget
from agentstats.llm.cache import JudgeCache
from agentstats.llm.client import LLMClient
from agentstats.optimize.config import LoopConfig, load_loop_config
from agentstats.optimize.errors import Stop, StopReason
from agentstats.optimize.journal import RESULT_NAME, Journal, file_sha256
from agentstats.optimize.run import AgentFn, IterationResult, LoopResult, OptimizerFn, RunContext
from agentstats.optimize.steps import decide, evaluate, generate, revise
from agentstats.optimize.storing import LoopStore
from agentstats.records.evalset import Example
from agentstats.records.scores import ScoreSet

__all__ = ["optimize"]


@dataclass
class _State:
    """Where the loop is: the best iteration so far, iterations in a row without improvement, what was logged."""

    best: IterationResult | None = None
    stall: int = 0
    summaries: list[dict[str, Any]] = field(default_factory=list)
    revisions: list[dict[str, Any]] = field(default_factory=list)
    policy: list[Trigger] = field(default_factory=list)


def _iterate(ctx: RunContext, prompt: str, state: _State) -> tuple[StopReason, str]:
    """Run iterations from the first (logged steps replay) until a stop rule fires; return its reason and detail."""
    g = ctx.cfg.gate
    it = 1
    while True:
        outputs = generate(ctx, it, prompt)
        records, missing = evaluate(ctx, it, outputs)
        res = decide(ctx, it, prompt, outputs, records, missing, state.best)
        state.summaries.append(ctx.journal.find("decision", it) or {})
        if res.improved or res.decision.decision == "PASS":
            state.best = res
            state.stall = 0
        else:
            state.stall += 1
        if res.decision.decision == "PASS":
            return "pass", f"iteration {it} passed the gate against the baseline"
        if state.stall >= g.stop_after_no_improvement:
            return "no_improvement", (
                f"no credible improvement on the best (iteration {state.best.iteration if state.best else '-'}) "
                f"for {state.stall} iteration(s): P(better than best) < {g.improvement_probability:g}"
            )
        if it >= g.max_iterations:
            return "max_iterations", f"max_iterations ({g.max_iterations}) reached"
        prompt = revise(ctx, it, res)
        rev = ctx.journal.find("revision", it)
        if rev is not None:
            state.revisions.append(rev)
            state.policy.extend(Trigger(t["kind"], t["reason"], t["evidence"]) for t in rev.get("triggers", []))
        it += 1


def _config(config: LoopConfig | Mapping[str, Any] | str | Path | None, eval_set: str | Path | None,
            baseline: str | Path | None) -> LoopConfig:
    """Return the loop config from what :func:`optimize` was given, with ``eval_set`` and ``baseline`` over it."""
    if isinstance(config, LoopConfig):
        cfg = config
    elif isinstance(config, (str, Path)):
        cfg = load_loop_config(config)
    elif config is None:
        if eval_set is None or baseline is None:
            raise ValueError("optimize: give a config, or eval_set and baseline")
        cfg = LoopConfig(eval_set=Path(eval_set), baseline=Path(baseline))
    else:
        cfg = LoopConfig.model_validate(dict(config))
    updates: dict[str, Any] = {}
    if eval_set is not None:
        updates["eval_set"] = Path(eval_set)
    if baseline is not None:
        updates["baseline"] = Path(baseline)
    return cfg.model_copy(update=updates) if updates else cfg


def _check_settings(cfg: LoopConfig, prompt: str | None, agent: AgentFn | None, optimizer: OptimizerFn | None) -> None:
    """Refuse settings the loop cannot run with, before anything is read or written (ValueError)."""
    if prompt is None:
        raise ValueError("optimize: no starting prompt (give prompt=, or agent.prompt / agent.prompt_file)")
    if agent is None and cfg.agent is None:
        raise ValueError("optimize: no agent: pass an agent callable or configure agent (endpoint and model)")
    if optimizer is None and cfg.optimizer_endpoint() is None:
        raise ValueError("optimize: no optimizer: pass an optimizer callable, or configure optimizer or judge")
    if cfg.gate.max_total_cost_usd is not None:
        from agentstats.llm.pricing import cost_usd

        prices = cfg.price_table()
        models = [ep.model for ep in (None if agent is not None else cfg.agent, cfg.judge,
                                      None if optimizer is not None else cfg.optimizer_endpoint()) if ep]
        unpriced = sorted({m for m in models if cost_usd(m, 1, 1, prices) is None})
        if unpriced:
            raise ValueError(f"max_total_cost_usd is set but model(s) {unpriced} have no price: add them to prices "
                             "(USD per 1M input and output tokens)")
    produced = cfg.scored_metrics()
    if not produced - {cfg.refusal_metric()}:
        raise ValueError("nothing to score: configure evaluate.matcher, evaluate.response_schema, "
                         "evaluate.tool_calls or judge.metrics")
    unscored = sorted(cfg.gate.named_metrics() - produced)
    if unscored:
        raise ValueError(f"the gate config names metric(s) {unscored} that the loop does not score (it scores "
                         f"{sorted(produced)})")


def _read_data(cfg: LoopConfig) -> tuple[list[Example], ScoreSet]:
    """Read the eval set and the baseline; refuse a baseline the loop cannot be gated against (ValueError)."""
    examples = load(cfg.eval_set, format="eval_set")
    base = load(cfg.baseline, format="scores")
    produced = cfg.scored_metrics()
    missing_metrics = sorted(set(base.metrics) - produced)
    if missing_metrics:
        raise ValueError(f"the baseline {cfg.baseline} scores metric(s) {missing_metrics} that the loop does not "
                         f"score (it scores {sorted(produced)}): a candidate is gated on every baseline metric")
    unknown = sorted(set(base.examples.index) - {e.id for e in examples})
    if unknown:
        raise ValueError(f"the baseline {cfg.baseline} has ids not in the eval set {cfg.eval_set}: {unknown[:5]}")
    return examples, base


def _client(cfg: LoopConfig, cache: JudgeCache, journal: Journal) -> LLMClient:
    """Return the run's LLM client: its budget starts from what earlier invocations spent; totals go to the journal."""
    # the log and spent.jsonl are the record of what the run spent; the cache (possibly deleted, or not shipped
    # with a copied run folder) adds the calls that completed after the last logged step
    cost_before, requests_before = journal.recorded_so_far()
    budget = Budget(cfg.gate.max_total_cost_usd, max(Budget.from_cache(cfg.gate.max_total_cost_usd, cache).spent,
                                                     cost_before))
    deadline = None if cfg.gate.max_wall_seconds is None else time.monotonic() + cfg.gate.max_wall_seconds
    client = LLMClient(cache, budget, cfg.price_table(), chars_per_token=cfg.chars_per_token,
                       jitter_seed=cfg.gate.random_seed, deadline=deadline)
    journal.track(client, requests_before)
    return client


def optimize(
    eval_set: str | Path | None = None,
    config: LoopConfig | Mapping[str, Any] | str | Path | None = None,
    agent: AgentFn | None = None,
    optimizer: OptimizerFn | None = None,
    run_dir: str | Path = "loop-run",
    resume: bool = False,
    *,
    baseline: str | Path | None = None,
    prompt: str | None = None,
    store: str | Path | None = None,
    store_run: str | None = None,
) -> LoopResult:
    """Run the evaluator-optimizer loop: generate, evaluate, gate, revise, until PASS or a stop rule.

    The steps, stop rules, log and resume are described in :mod:`agentstats.optimize.loop` and in
    ``docs/loop.md``.

    Parameters
    ----------
    eval_set : path, optional
        FAI-style JSONL eval set; None: the config's ``eval_set``.
    config : LoopConfig, mapping or path
        The loop configuration (a YAML/JSON path is read with :func:`load_loop_config`).
    agent : callable, optional
        ``agent(example: dict, prompt: str) -> str`` (or a mapping with ``response`` and optional ``tokens``,
        ``cost_usd``, ``latency_s``, ``tool_calls``); None: the built-in chat agent of ``config.agent`` (one turn,
        offered the example's tool specs when it has any). Its results are cached in the run folder like the
        built-in agent's calls.
    optimizer : callable, optional
        ``optimizer(prompt: str, result: IterationResult) -> str``; None: the built-in revision prompt.
    run_dir : path
        The run folder (log, call cache, per-iteration outputs, scores and decisions, ``result.json``).
    resume : bool
        Continue the run in ``run_dir``: its settings, data (by content) and starting prompt must match, except
        budgets, ``max_iterations``, the store and the endpoints' addresses; a refusal names what differs.
    baseline : path, optional
        The baseline's scored results; None: the config's ``baseline``.
    prompt : str, optional
        The starting prompt; None: the config's ``agent.prompt`` / ``agent.prompt_file``.
    store : path, optional
        A run store (DuckDB file) that also receives every completed iteration and the baseline
        (:mod:`agentstats.optimize.storing`); None: the config's ``store``.
    store_run : str, optional
        Prefix of the stored runs' names; None: the config's ``store_run``, else the run folder's name.

    Returns
    -------
    LoopResult

    Raises
    ------
    LoopError
        A call failed after every retry (generation or optimizer), a refused key, an optimizer that returned no
        prompt, or a run folder holding a different run (or a run at all without ``resume``).
    agentstats.records.problems.LoadError
        A malformed eval set or baseline (every problem located).
    agentstats.optimize.config.LoopConfigError, pydantic.ValidationError
        An invalid configuration.
    agentstats.store.StoreError
        A new run (not ``resume``) whose store already holds runs of its prefix, or a store that cannot be opened.
    ValueError
        Inconsistent settings: no agent, no optimizer, no starting prompt, a budget with a model missing from the
        price table, a config naming a metric that is not scored, ids of the baseline not in the eval set; an
        answer a deterministic metric cannot read (:class:`agentstats.metrics.MetricInputError`).
    """
    cfg = _config(config, eval_set, baseline)
    start_prompt = prompt if prompt is not None else cfg.initial_prompt()
    _check_settings(cfg, start_prompt, agent, optimizer)
    assert start_prompt is not None
    examples, base = _read_data(cfg)
    journal = Journal(Path(run_dir))
    lines = journal.open(cfg, resume=resume, prompt=start_prompt,
                         data_sha={"eval_set": file_sha256(cfg.eval_set), "baseline": base.sha256},
                         n_examples=len(examples), agent="callable" if agent is not None else "chat",
                         optimizer="callable" if optimizer is not None else "chat")
    store_path = Path(store) if store is not None else cfg.store
    loop_store = None
    if store_path is not None:
        loop_store = LoopStore(store_path, store_run or cfg.store_run or journal.run_dir.resolve().name, cfg.gate,
                               journal.run_dir, cfg.sha256())
        if not lines:
            loop_store.check_new()
        loop_store.write_baseline(base)
    cache = JudgeCache(journal.cache_path)
    try:
        client = _client(cfg, cache, journal)
        ctx = RunContext(cfg, examples, base, journal, client, agent, optimizer, loop_store)
        if resume and lines:
            journal.log_step({"step": "resume", "iteration": 0, "after_lines": len(lines)})
        state = _State()
        try:
            reason, detail = _iterate(ctx, start_prompt, state)
        except Stop as stop:
            reason, detail = stop.reason, stop.detail
        best = state.best
        triggers = list(best.decision.triggers if best is not None else []) + state.policy
        result = LoopResult(
            decision=best.decision.decision if best is not None else "RETRY", stop_reason=reason,
            stop_detail=detail, best_iteration=None if best is None else best.iteration,
            best_prompt=None if best is None else best.prompt, iterations=state.summaries,
            revisions=state.revisions, triggers=triggers, cost_usd=client.budget.spent,
            n_requests=journal.so_far()["n_requests_so_far"], n_cached=client.n_cached, run_dir=journal.run_dir,
            best=best, config_sha256=cfg.sha256(),
            store_run=None if loop_store is None or best is None else loop_store.run_name(best.iteration))
        journal.log_step({"step": "stop", "iteration": len(state.summaries), "reason": reason, "detail": detail,
                          "decision": result.decision, "best_iteration": result.best_iteration,
                          "triggers": [asdict(t) for t in triggers], "budget_refusals": client.budget.refused})
        journal.write_json(journal.run_dir / RESULT_NAME, result.to_record())
        return result
    finally:
        cache.close()

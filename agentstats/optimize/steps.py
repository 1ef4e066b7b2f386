"""The loop's four steps: generate, evaluate, decide, revise (one iteration each; ``docs/loop.md``, "Each iteration").

Every step is a function of the run (:class:`RunContext`: the config, the eval set, the baseline, the run's
:class:`~agentstats.optimize.journal.Journal`, the LLM client, the user callables, the store) and the iteration
number. A step first looks for its line in the run's log: a logged step is replayed from the run folder's files, not
run again, so each step runs once per run however often the run is resumed.

1. :func:`generate`: the agent answers every example with the current prompt (a user callable, cached in the run's
   cache like a paid call, or the built-in chat agent through :class:`~agentstats.llm.client.LLMClient`).
2. :func:`evaluate`: the deterministic scores through the metric catalogue (:func:`agentstats.metrics.compute` on
   one :class:`~agentstats.records.trial.Trial` per example; :func:`catalogue_metrics` names the entries) and the
   judge metrics (the loop's judge prompts, :mod:`agentstats.llm.prompts.loop`); one score record per example in the
   gate's input format (``iter-NNN/scores.jsonl``).
3. :func:`decide`: the gate against the baseline (:func:`agentstats.gating.gate`) and
   :func:`agentstats.optimize.improvement.improvement`, the one rule that says whether the iteration credibly improves
   on the best so far.
4. :func:`revise`: the next prompt, from a user callable or the built-in revision prompt
   (:data:`agentstats.llm.prompts.loop.REVISION`), logged as a unified diff with its policy-text triggers.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from agentstats.gating import gate, no_failure_text
from agentstats.io.loaders import load
from agentstats.llm.client import CallError
from agentstats.llm.prompts.loop import LOOP_JUDGE_PROMPTS, REVISION, Revision
from agentstats.metrics import MATCHER_METRICS, Metric, compute, get_metric
from agentstats.optimize.config import LoopConfig, ToolCallSettings
from agentstats.optimize.errors import EndpointError, LoopError
from agentstats.optimize.improvement import improvement, weighted_example_scores
from agentstats.optimize.journal import text_sha256
from agentstats.optimize.revision import calls_text, policy_triggers, prompt_diff
from agentstats.optimize.run import IterationResult, RunContext, check_time, run_batch, settled
from agentstats.records.evalset import Example
from agentstats.records.trial import Interaction, Trial
from agentstats.scoring.judge.verdicts import Verdict

__all__ = ["agent_tool_calls", "catalogue_metrics", "decide", "evaluate", "example_tools", "generate", "revise"]


# -- 1. generate -----------------------------------------------------------------------------------------------
def generate(ctx: RunContext, it: int, prompt: str) -> list[dict[str, Any]]:
    """Return the agent's answers to every example (``iter-NNN/outputs.jsonl``); a logged generation is read back.

    Raises
    ------
    Stop
        The budget or the wall time ran out.
    LoopError
        A user agent returned something unusable; :class:`EndpointError` for a generation that failed after every
        retry.
    """
    done = ctx.journal.find("generation", it)
    if done is not None:
        return ctx.journal.read_rows(done["outputs"])
    check_time(ctx)
    if ctx.agent is not None:
        outputs = [_call_user_agent(ctx, ex, prompt) for ex in ctx.examples]
    else:
        outputs = run_batch(ctx, lambda: _agenerate(ctx, prompt))
    path = ctx.journal.write_rows(it, "outputs.jsonl", outputs)
    ctx.journal.log_step({"step": "generation", "iteration": it, "prompt_sha256": text_sha256(prompt),
                          "outputs": ctx.journal.relative(path), "n_examples": len(outputs),
                          "n_cached": sum(bool(o["cached"]) for o in outputs)})
    return outputs


def _call_user_agent(ctx: RunContext, ex: Example, prompt: str) -> dict[str, Any]:
    """One answer of the user agent, cached in the run's cache (keyed by its name, the prompt and the example)."""
    from agentstats.llm.cache import cache_key

    agent = ctx.agent
    assert agent is not None
    cache = ctx.client.cache
    assert cache is not None  # the run's cache, opened by optimize()
    name = getattr(agent, "__qualname__", type(agent).__name__)
    key = cache_key(f"callable:{name}", "agent", {"prompt": prompt, "example": ex.as_dict()})
    hit = cache.get(key)
    if hit is not None:
        return {**hit, "cached": True}
    check_time(ctx)
    t0 = time.perf_counter()
    got = agent(ex.as_dict(), prompt)
    latency = time.perf_counter() - t0
    out: dict[str, Any] = {"id": ex.id, "tokens": None, "cost_usd": None, "latency_s": latency}
    if isinstance(got, Mapping):
        if "response" not in got:
            raise LoopError(f"the agent callable returned a mapping without 'response' for example {ex.id!r}")
        out.update({k: got.get(k) for k in ("tokens", "input_tokens", "output_tokens", "cost_usd", "latency_s")
                    if got.get(k) is not None})
        if got.get("tool_calls") is not None:
            out["tool_calls"] = agent_tool_calls(got["tool_calls"], ex.id)
        got = got["response"]
    out["response"] = "" if got is None else str(got)
    cost = out.get("cost_usd")
    if cost is not None:
        ctx.client.budget.settle(0.0, float(cost))
        ctx.client.changed()
    cache.put(key, out, model=f"callable:{name}", prompt_id="agent")
    return {**out, "cached": False}


async def _agenerate(ctx: RunContext, prompt: str) -> list[dict[str, Any]]:
    """Ask the built-in chat agent: the prompt as the system message, the example (and context) as the user's."""
    ep = ctx.cfg.agent
    assert ep is not None
    sem = asyncio.Semaphore(ep.concurrency)
    offered = {ex.id: _offered_tools(ctx.cfg, ex) for ex in ctx.examples}  # spec problems before any call

    async def one(ex: Example) -> dict[str, Any]:
        user = ex.input
        ctx_text = ex.context_text()
        if ep.include_context and ctx_text:
            user = f"{user}\n\nCONTEXT:\n{ctx_text}"
        messages = [{"role": "system", "content": prompt}, {"role": "user", "content": user}]
        tools = offered[ex.id]
        try:
            r = await ctx.client.chat(ep, "agent", messages, temperature=ep.temperature, sem=sem, tools=tools)
        except CallError as exc:
            raise EndpointError(f"generation failed for example {ex.id!r}: {exc}") from exc
        out: dict[str, Any] = {
            "id": ex.id, "response": r.text or "", "tokens": r.tokens, "input_tokens": r.prompt_tokens,
            "output_tokens": r.completion_tokens, "cost_usd": r.cost_usd, "latency_s": r.latency_s,
            "cached": r.cached}
        if tools:
            out["tool_calls"] = agent_tool_calls(r.tool_calls or [], ex.id)
        return out

    return settled(await asyncio.gather(*(one(ex) for ex in ctx.examples), return_exceptions=True))


def example_tools(ex: Example, st: ToolCallSettings | None) -> list[Any] | None:
    """Return the tool specs of an example: its own ``tools`` field, else ``evaluate.tool_calls.tools`` (None: none).

    The same specs are offered to the built-in agent and used by the ``tool_calls_valid`` check.
    """
    own = ex.extra.get("tools")
    if isinstance(own, list):
        return own
    return None if st is None else st.tools


def _offered_tools(cfg: LoopConfig, ex: Example) -> list[dict[str, Any]] | None:
    """Return the tool specs the built-in agent sends with ``ex`` (OpenAI form), or None when it has none."""
    from agentstats.scoring.schema_check import openai_tools

    specs = example_tools(ex, cfg.evaluate.tool_calls)
    if not specs:
        return None
    try:
        return openai_tools(specs)
    except ValueError as exc:
        raise LoopError(f"the tool specs of example {ex.id!r} cannot be sent: {exc}") from None


def agent_tool_calls(value: Any, ex_id: str) -> list[dict[str, Any]]:
    """Return an agent's ``tool_calls`` as plain-JSON calls (OpenAI or ``{name, arguments}`` form accepted).

    Arguments given as a JSON string are decoded; a string that does not decode is kept (``arguments_raw``,
    ``parse_error``), so the call is scored as malformed.

    Raises
    ------
    LoopError
        When ``value`` is not a list, or a call is malformed beyond its arguments (no name).
    """
    from pydantic import ValidationError

    from agentstats.records.trial import ToolCall

    if not isinstance(value, (list, tuple)):
        raise LoopError(f"the agent callable returned tool_calls that are not a list for example {ex_id!r}")
    out = []
    for i, c in enumerate(value):
        try:
            call = c if isinstance(c, ToolCall) else ToolCall.model_validate(c)
        except ValidationError as exc:
            raise LoopError(f"the agent callable returned a malformed tool call #{i} for example {ex_id!r}: "
                            f"{exc.errors(include_url=False)[0]['msg']}") from None
        out.append(call.model_dump(mode="json", exclude_none=True, exclude_defaults=True) | {"name": call.name})
    return out


# -- 2. evaluate -----------------------------------------------------------------------------------------------
def catalogue_metrics(cfg: LoopConfig) -> list[Metric]:
    """Return the metric catalogue's entries that score the loop's deterministic metrics, under the loop's names.

    In the order of a score record: ``correct`` (the matcher's entry, :data:`agentstats.metrics.MATCHER_METRICS`),
    ``format_valid`` (the response schema), the ``tool_use`` entries of ``evaluate.tool_calls``
    (:meth:`ToolCallSettings.metrics`; an empty ``expected_tool_calls`` means no call should be made), and the
    refusal metric (``unsuccessful_requests`` under the name ``gate.review.refusal_metric``).
    """
    ev = cfg.evaluate
    out: list[Metric] = []
    if ev.matcher is not None:
        out.append(get_metric(MATCHER_METRICS[ev.matcher], name="correct"))
    if ev.response_schema is not None:
        out.append(get_metric("format_valid", params={"schema": ev.response_schema}))
    st = ev.tool_calls
    if st is not None:
        params = {"empty_expected": "no_calls", "weights": st.weights, "tool_threshold": st.tool_threshold,
                  "sequence_matters": st.sequence_matters, "tools": st.tools}
        out.extend(get_metric(name, params=params) for name in st.metrics())
    refusal = cfg.refusal_metric()
    if refusal is not None:
        phrases = {"phrases": ev.refusal_phrases} if ev.refusal_phrases else {}
        out.append(get_metric("unsuccessful_requests", params=phrases, name=refusal))
    return out


def _answered_trial(agent: str, ex: Example, out: Mapping[str, Any]) -> Trial:
    """One example's answer as a trial of one interaction: what the catalogue's metrics read.

    The interaction holds the input, the answer, the expected answer, the context, the calls made and the expected
    calls; the example's own tool specs, when it has them, are its ``tools`` field (else ``tool_calls_valid`` reads
    ``evaluate.tool_calls.tools`` from its parameters).
    """
    ctx_text = ex.context_text()
    inter: dict[str, Any] = {"id": ex.id, "query": ex.input, "answer": out["response"],
                             "expected_answer": ex.expected, "context": [ctx_text] if ctx_text else [],
                             "tool_calls": out.get("tool_calls") or []}
    expected_calls = ex.extra.get("expected_tool_calls")
    if isinstance(expected_calls, list):
        inter["expected_tool_calls"] = expected_calls
    own = ex.extra.get("tools")
    if isinstance(own, list):
        inter["tools"] = own
    return Trial(agent=agent, task_id=ex.id, trial=0, risk_level=ex.risk_level, tags=list(ex.tags),
                 interactions=[Interaction.model_validate(inter)])


def _catalogue_scores(cfg: LoopConfig, examples: list[Example], by_id: Mapping[str, Mapping[str, Any]],
                      agent: str) -> dict[str, dict[str, float]]:
    """Per example, the values of :func:`catalogue_metrics` that apply to it (in that order).

    The tool-call correctness entries are computed only on examples with ``expected_tool_calls`` (an example
    without the field gets no such value; ``[]`` means no call should be made).

    Raises
    ------
    agentstats.metrics.MetricInputError
        A record a metric cannot read (a numeric matcher on a reference that holds no number ...), naming the
        iteration, the example and the metric.
    """
    metrics = catalogue_metrics(cfg)
    out: dict[str, dict[str, float]] = {ex.id: {} for ex in examples}
    if not metrics:
        return out
    trials = {ex.id: _answered_trial(agent, ex, by_id[ex.id]) for ex in examples}
    with_calls = [trials[ex.id] for ex in examples if isinstance(ex.extra.get("expected_tool_calls"), list)]
    needs_calls = {m.name for m in metrics if "expected_tool_calls" in m.roles}
    values: dict[tuple[str, str], float] = {}
    for group, chosen in (([*trials.values()], [m for m in metrics if m.name not in needs_calls]),
                          (with_calls, [m for m in metrics if m.name in needs_calls])):
        if not group or not chosen:
            continue
        frame = compute(group, chosen)
        for task, metric, value in zip(frame["task_id"], frame["metric"], frame["value"], strict=True):
            if not np.isnan(value):
                values[(task, metric)] = float(value)
    for ex in examples:
        out[ex.id] = {m.name: values[(ex.id, m.name)] for m in metrics if (ex.id, m.name) in values}
    return out


def evaluate(ctx: RunContext, it: int, outputs: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Score every answer: one record per example (``iter-NNN/scores.jsonl``); a logged evaluation is read back.

    Returns
    -------
    records : list of dict
        Score records (``id, scores, tags, risk_level, judge_missing, tokens, cost_usd, latency_s``).
    judge_missing : dict of str to int
        Missing verdicts per judge metric.

    Raises
    ------
    Stop
        The budget or the wall time ran out.
    LoopError
        Nothing scored; :class:`EndpointError` when the judge endpoint refused the key.
    agentstats.metrics.MetricInputError
        An answer a deterministic metric cannot read (:func:`_catalogue_scores`).
    """
    done = ctx.journal.find("evaluation", it)
    if done is not None:
        return ctx.journal.read_rows(done["scores"]), dict(done.get("judge_missing") or {})
    check_time(ctx)
    by_id = {o["id"]: o for o in outputs}
    judged: dict[tuple[str, str], float | None] = {}
    if ctx.cfg.judge is not None and ctx.cfg.judge.metrics:
        judged = run_batch(ctx, lambda: _ajudge(ctx, by_id))
    scored = _catalogue_scores(ctx.cfg, ctx.examples, by_id, f"iter-{it:03d}")
    missing = {m: 0 for m in (ctx.cfg.judge.metrics if ctx.cfg.judge else [])}
    records = []
    for ex in ctx.examples:
        out = by_id[ex.id]
        scores: dict[str, float | None] = dict(scored[ex.id])
        gone = []
        for m in missing:
            v = judged.get((ex.id, m))
            scores[m] = v
            if v is None:
                missing[m] += 1
                gone.append(m)
        rec: dict[str, Any] = {"id": ex.id, "scores": scores, "tags": list(ex.tags)}
        if ex.risk_level is not None:
            rec["risk_level"] = ex.risk_level
        if gone:
            rec["judge_missing"] = gone
        for k in ("tokens", "cost_usd", "latency_s"):
            if out.get(k) is not None:
                rec[k] = out[k]
        records.append(rec)
    if not records or not records[0]["scores"]:
        raise LoopError("nothing to score: configure evaluate.matcher, evaluate.response_schema or judge.metrics")
    path = ctx.journal.write_rows(it, "scores.jsonl", records)
    scores_set = load(path, format="scores")
    means = {m: float(scores_set.example_means(m).mean()) if len(scores_set.example_means(m)) else None
             for m in scores_set.metrics}
    ctx.journal.log_step({"step": "evaluation", "iteration": it, "scores": ctx.journal.relative(path),
                          "means": means, "judge_missing": missing})
    return records, missing


async def _ajudge(ctx: RunContext, by_id: dict[str, dict[str, Any]]) -> dict[tuple[str, str], float | None]:
    """Return the judge's verdicts, ``(example id, metric) -> score`` (None: no verdict after every retry)."""
    jc = ctx.cfg.judge
    assert jc is not None
    sem = asyncio.Semaphore(jc.concurrency)

    async def one(ex: Example, metric: str) -> tuple[tuple[str, str], float | None]:
        tpl = LOOP_JUDGE_PROMPTS[metric]
        messages = tpl.render(**{k: v for k, v in {"query": ex.input, "context": ex.context_text(),
                                                    "answer": by_id[ex.id]["response"]}.items()
                                 if k in tpl.fields})
        try:
            r = await ctx.client.chat(jc, tpl.id, messages, temperature=0.0, sem=sem, response_model=Verdict,
                                      max_retries=jc.max_retries)
        except CallError as exc:
            if exc.auth:
                raise EndpointError(f"the judge endpoint refused the key: {exc}") from exc
            return (ex.id, metric), None
        assert r.data is not None
        return (ex.id, metric), float(r.data["score"])

    pairs = await asyncio.gather(*(one(ex, m) for ex in ctx.examples for m in jc.metrics), return_exceptions=True)
    return dict(settled(pairs))


# -- 3. decide -------------------------------------------------------------------------------------------------
def decide(ctx: RunContext, it: int, prompt: str, outputs: list[dict[str, Any]], records: list[dict[str, Any]],
           missing: dict[str, int], best: IterationResult | None) -> IterationResult:
    """Gate the iteration against the baseline and judge it against the best so far (:func:`improvement`).

    Writes ``iter-NNN/decision.json`` (every time: decisions are recomputed on a resume, deterministically), logs
    the ``decision`` step once, and writes the iteration to the run store when there is one.
    """
    scores = load(ctx.journal.iteration_dir(it) / "scores.jsonl", format="scores")
    decision = gate(scores, ctx.baseline, ctx.cfg.gate)
    step = improvement(scores, None if best is None else best.scores, ctx.cfg)
    res = IterationResult(iteration=it, prompt=prompt, outputs=outputs, scores=scores, records=records,
                          decision=decision, vs_best=step.vs_best, p_better_than_best=step.p_better,
                          improved=step.improved, judge_missing=missing)
    vs_best = None if step.vs_best is None else step.vs_best.decision
    best_before = None if best is None else best.iteration
    dpath = ctx.journal.iteration_dir(it) / "decision.json"
    ctx.journal.write_json(dpath, {
        "iteration": it, "vs_baseline": decision.to_record(),
        "vs_best": None if step.vs_best is None else step.vs_best.to_record(), "best_before": best_before,
        "p_better_than_best": step.p_better, "improved": step.improved, "improvement": step.reason,
        "gains": step.gains, "missed_thresholds": step.missed_thresholds})
    if ctx.journal.find("decision", it) is None:
        overall = [
            {"metric": m.metric, "n": m.n_candidate, "n_missing": m.n_missing, **m.candidate,
             "threshold": m.threshold, "p_meets_threshold": m.p_meets_threshold, "n_failures": m.n_failures,
             "difference": m.difference, "p_regression": m.p_regression}
            for m in decision.metrics if m.stratum == "all"
        ]
        ctx.journal.log_step({
            "step": "decision", "iteration": it, "decision": decision.decision, "reasons": decision.reasons,
            "vs_best": vs_best, "best_before": best_before, "p_better_than_best": step.p_better,
            "improved": step.improved, "improvement": step.reason, "missed_thresholds": step.missed_thresholds,
            "metrics": overall, "triggers": [t.kind for t in decision.triggers],
            "record": ctx.journal.relative(dpath), "weighted_score": decision.weighted_score,
        })
    if ctx.store is not None:
        ctx.store.write_iteration(it, prompt, text_sha256(prompt), ctx.examples, outputs, records, decision,
                                  {"vs_best": vs_best, "p_better_than_best": step.p_better,
                                   "improved": step.improved, "best_before": best_before})
    return res


# -- 4. revise -------------------------------------------------------------------------------------------------
def revise(ctx: RunContext, it: int, res: IterationResult) -> str:
    """Return the next prompt (the user optimizer's or the built-in revision's), logged with its diff and triggers.

    A logged revision is read back.

    Raises
    ------
    Stop
        The budget or the wall time ran out.
    LoopError
        A user optimizer returned no prompt; :class:`EndpointError` for an optimizer call that failed.
    """
    done = ctx.journal.find("revision", it)
    if done is not None:
        return str(done["prompt"])
    check_time(ctx)
    rationale: str | None = None
    if ctx.optimizer is not None:
        new = ctx.optimizer(res.prompt, res)
        if not isinstance(new, str) or not new.strip():
            raise LoopError(f"the optimizer callable returned {type(new).__name__}, not a non-empty prompt")
        source = getattr(ctx.optimizer, "__qualname__", type(ctx.optimizer).__name__)
    else:
        new, rationale = run_batch(ctx, lambda: _arevise(ctx, res))
        ep = ctx.cfg.optimizer_endpoint()
        assert ep is not None
        source = f"{ep.model} ({REVISION.id})"
    diff = prompt_diff(res.prompt, new, old_name=f"iteration {it}", new_name=f"iteration {it + 1}")
    triggers = policy_triggers(diff, ctx.cfg.policy_phrases, it)
    from dataclasses import asdict

    ctx.journal.log_step({"step": "revision", "iteration": it, "next_iteration": it + 1, "prompt": new,
                          "prompt_sha256": text_sha256(new), "diff": diff, "rationale": rationale,
                          "optimizer": source, "triggers": [asdict(t) for t in triggers]})
    return new


def _evaluation_text(res: IterationResult, cfg: LoopConfig) -> list[str]:
    """Write the revision prompt's evaluation: each metric's mean, interval and check, then the gate's decision."""
    lines = []
    pct = f"{cfg.gate.ci_prob:.0%}"
    for m in res.decision.metrics:
        if m.stratum != "all":
            continue
        c = m.candidate
        text = (f"- {m.metric}: mean {c['mean']:.3f} ({pct} credible interval {c['ci_low']:.3f} to "
                f"{c['ci_high']:.3f})")
        if m.n_failures is not None:  # threshold 1.0: no failure allowed
            text += f", no failure allowed: {no_failure_text(m.n_failures, m.n_candidate)}"
        elif m.threshold is not None and m.p_meets_threshold is not None:
            text += f", threshold {m.threshold:g}, P(mean >= threshold) = {m.p_meets_threshold:.3f}"
        if m.difference is not None:
            text += f", difference to the baseline {m.difference['mean']:+.3f}"
        lines.append(text)
    lines.append(f"Gate decision against the baseline: {res.decision.decision}")
    lines.extend(f"  {r}" for r in res.decision.reasons[:10])
    return lines


def _worst_examples_text(ctx: RunContext, res: IterationResult, n_show: int) -> list[str]:
    """Show the ``n_show`` examples of lowest weighted score: input, answer, the calls made, scores."""
    weighted = weighted_example_scores(res.scores, ctx.cfg)
    worst = sorted(weighted, key=lambda i: (weighted[i], i))[:n_show]
    by_id = {o["id"]: o for o in res.outputs}
    ex_by_id = {e.id: e for e in ctx.examples}
    rec_by_id = {r["id"]: r for r in res.records}
    shown = []
    for i in worst:
        scores = ", ".join(f"{k}={'missing' if v is None else f'{v:.2f}'}"
                           for k, v in rec_by_id[i]["scores"].items())
        calls = by_id[i].get("tool_calls")
        made = f"\nTOOL CALLS: {calls_text(calls)[:800]}" if calls is not None else ""
        shown.append(f"[{i}] INPUT: {ex_by_id[i].input[:500]}\nANSWER: {by_id[i]['response'][:800]}{made}\n"
                     f"SCORES: {scores}")
    return shown


async def _arevise(ctx: RunContext, res: IterationResult) -> tuple[str, str]:
    """Ask the built-in optimizer for a revision: ``(revised prompt, rationale)``."""
    ep = ctx.cfg.optimizer_endpoint()
    assert ep is not None
    n_show = ctx.cfg.optimizer.examples_shown if ctx.cfg.optimizer else 5
    max_retries = ctx.cfg.optimizer.max_retries if ctx.cfg.optimizer else 2
    shown = _worst_examples_text(ctx, res, n_show)
    messages = REVISION.render(prompt=res.prompt, evaluation="\n".join(_evaluation_text(res, ctx.cfg)),
                               examples="\n\n".join(shown) or "(none)")
    sem = asyncio.Semaphore(1)
    try:
        r = await ctx.client.chat(ep, REVISION.id, messages, temperature=0.0, sem=sem, response_model=Revision,
                                  max_retries=max_retries)
    except CallError as exc:
        raise EndpointError(f"the optimizer call failed: {exc}") from exc
    assert r.data is not None
    return str(r.data["revised_prompt"]), str(r.data["rationale"])


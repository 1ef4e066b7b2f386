"""The evaluator-optimizer loop: generate -> evaluate -> gate -> optimize, until PASS or a stop rule.

Each iteration (numbered from 1; iteration 1 runs the starting prompt):

1. **Generate**: the agent answers every example with the current prompt (a user callable
   ``agent(example, prompt)``, or the built-in chat model: the prompt as the system message, the example's input
   (and context) as the user message, and the example's tool specs, when it has any, as OpenAI ``tools``; one
   model turn, its tool calls recorded, none executed).
2. **Evaluate**: deterministic scorers (``correct`` by an answer matcher, ``format_valid`` by a JSON Schema,
   ``tool_calls_correct`` and its components by the tool-call scorer against the example's
   ``expected_tool_calls``, ``tool_calls_valid`` against the tool specs, the ``refusal`` rate by the metric
   catalogue's phrase matcher for unsuccessful requests) and the judge metrics (groundedness, relevance, safety;
   versioned prompts, temperature 0, schema-bound verdicts).
   A verdict that cannot be had after every retry is ``null`` (``judge_missing``: excluded from the metric, counted,
   and a review trigger above the configured share). The result is one score record per example in the gate's
   input format (``iter-NNN/scores.jsonl``).
3. **Gate**: :func:`agentstats.gating.gate` against the baseline, and against the best iteration so far. The
   candidate *credibly improves* on the best when ``P(weighted score better than the best's) >=
   improvement_probability`` (paired posterior of the per-example weighted score,
   :func:`agentstats.estimators.dirichlet.difference_draws`) and the gate against the best does not FAIL.
4. **Stop** on PASS; after ``stop_after_no_improvement`` iterations in a row without a credible improvement; when
   the next call would exceed ``max_total_cost_usd`` (checked before the call, :mod:`agentstats.llm.client`);
   when ``max_wall_seconds`` have passed (checked before every call); after ``max_iterations``.
5. **Optimize**: a user callable ``optimizer(prompt, result) -> prompt`` or the built-in revision prompt
   (:data:`agentstats.llm.prompts.loop.REVISION`, a structured ``{revised_prompt, rationale}``). The revision is
   stored as a unified diff against the previous prompt, and checked for policy-sensitive phrases.

With a run store (``store:``), every decided iteration is also written there in one transaction
(:mod:`agentstats.optimize.storing`). Every completed step is one fsync'd line of ``loop.jsonl`` in the run folder
(format in ``docs/gate.md``), and
every paid call is cached in the run folder the moment it completes: ``resume=True`` replays the logged steps
and continues where the run stopped (a crash, a kill, Ctrl-C, a budget or wall-time stop) without repeating a
call that completed. The run's totals (money spent, HTTP requests sent) are appended to ``spent.jsonl`` as each
request is sent and each cost settled, so a resumed run counts the requests of a step the interruption cut short.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import difflib
import hashlib
import json
import math
import time
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from agentstats.estimators.dirichlet import difference_draws
from agentstats.files.atomic import append_line, atomic_write_text
from agentstats.gating import GateDecision, Trigger, gate, no_failure_text
from agentstats.io.loaders import load
from agentstats.llm.budget import Budget, BudgetExhausted, WallTimeExceeded
from agentstats.llm.cache import JudgeCache
from agentstats.llm.client import CallError, LLMClient
from agentstats.llm.prompts.loop import LOOP_JUDGE_PROMPTS, REVISION, Revision
from agentstats.llm.transport import run_coro
from agentstats.optimize.config import LoopConfig, ToolCallSettings, load_loop_config
from agentstats.optimize.storing import LoopStore
from agentstats.records.evalset import Example
from agentstats.records.scores import ScoreSet
from agentstats.scoring.judge.verdicts import Verdict

__all__ = ["LOG_NAME", "IterationResult", "LoopError", "LoopResult", "optimize", "policy_triggers", "prompt_diff"]

#: The run folder's log file.
LOG_NAME = "loop.jsonl"
#: Version of the log's line layout.
LOG_SCHEMA = "agentstats.loop/1"
#: The run folder's call cache.
CACHE_NAME = "cache.sqlite3"
#: The run folder's running totals: one fsync'd line per request sent and per cost settled.
SPENT_NAME = "spent.jsonl"

StopReason = Literal["pass", "no_improvement", "budget", "wall_time", "max_iterations"]
AgentFn = Callable[[dict[str, Any], str], Any]
OptimizerFn = Callable[[str, "IterationResult"], str]


class LoopError(RuntimeError):
    """The loop cannot go on (a call failed after every retry, a refused key, a run folder that does not fit).

    Nothing paid for is lost: completed calls are cached and completed steps logged; ``resume=True`` continues.
    """


class EndpointError(LoopError):
    """A model endpoint (agent, judge or optimizer) failed after every retry or refused the key.

    The CLI exits 69 (EX_UNAVAILABLE) for it, so CI can tell an endpoint that is down from a FAIL decision (1).
    """


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

    @property
    def exit_code(self) -> int:
        """0 PASS, 1 FAIL, 75 otherwise (undecided: more data or more iterations would decide it)."""
        return {"PASS": 0, "FAIL": 1}.get(self.decision, 75)

    @property
    def review_required(self) -> bool:
        """Whether a human-review trigger fired."""
        return bool(self.triggers)

    def to_record(self) -> dict[str, Any]:
        """Return the JSON-ready result (written to ``result.json`` in the run folder)."""
        from dataclasses import asdict

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


# -- diffs and policy-text triggers -------------------------------------------------------------------------
def prompt_diff(old: str, new: str, *, old_name: str = "previous", new_name: str = "revised") -> str:
    """Unified diff (``difflib``) of two prompts, line by line; empty when they are equal."""
    lines = difflib.unified_diff(old.splitlines(), new.splitlines(), fromfile=old_name, tofile=new_name,
                                 lineterm="")
    return "\n".join(lines)


def policy_triggers(diff: str, phrases: list[str], iteration: int) -> list[Trigger]:
    """Human-review triggers for policy-sensitive phrases on changed lines of a unified diff.

    Parameters
    ----------
    diff : str
        Output of :func:`prompt_diff`.
    phrases : list of str
        Phrases matched case-insensitively against each added (``+``) or removed (``-``) line.
    iteration : int
        The iteration whose prompt was revised (recorded in the evidence).

    Returns
    -------
    list of Trigger
        One ``policy_text_changed`` trigger per phrase found, its evidence listing each hit: ``change``
        (``added`` / ``removed``), ``line`` (1-based, in the revised prompt for an addition and the previous one
        for a removal) and the line's ``text``.
    """
    if not phrases or not diff:
        return []
    hits: dict[str, list[dict[str, Any]]] = {}
    old_no = new_no = 0
    for raw in diff.splitlines():
        if raw.startswith(("---", "+++")):
            continue
        if raw.startswith("@@"):
            parts = raw.split()
            old_no = abs(int(parts[1].split(",")[0])) - 1
            new_no = int(parts[2].split(",")[0]) - 1
            continue
        if raw.startswith("+"):
            new_no += 1
            change, line_no = "added", new_no
        elif raw.startswith("-"):
            old_no += 1
            change, line_no = "removed", old_no
        else:
            old_no += 1
            new_no += 1
            continue
        text = raw[1:]
        low = text.casefold()
        for p in phrases:
            if p.casefold() in low:
                hits.setdefault(p, []).append({"change": change, "line": line_no, "text": text})
    return [
        Trigger(
            "policy_text_changed",
            f"the revision after iteration {iteration} changed policy-sensitive text {phrase!r} "
            f"({', '.join(sorted({h['change'] for h in found}))}, line {found[0]['line']})",
            {"phrase": phrase, "iteration": iteration, "hits": found},
        )
        for phrase, found in hits.items()
    ]


# -- the run folder's log -----------------------------------------------------------------------------------
class RunLog:
    """The JSONL log of a run folder: one fsync'd line per completed step."""

    def __init__(self, run_dir: Path):
        self.path = run_dir / LOG_NAME
        self.lines: list[dict[str, Any]] = []

    def read(self) -> list[dict[str, Any]]:
        """Read the log; a last line cut short by a kill is dropped from the file."""
        if not self.path.exists():
            return []
        data = self.path.read_bytes()
        if data and not data.endswith(b"\n"):
            keep = data.rfind(b"\n") + 1
            with open(self.path, "r+b") as fh:
                fh.truncate(keep)
            data = data[:keep]
        self.lines = [json.loads(x) for x in data.decode("utf-8").splitlines() if x.strip()]
        return self.lines

    def append(self, entry: dict[str, Any]) -> None:
        entry = {"schema": LOG_SCHEMA, "at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), **entry}
        append_line(self.path, json.dumps(_jsonable(entry), ensure_ascii=False, sort_keys=True))
        self.lines.append(entry)

    def find(self, step: str, iteration: int) -> dict[str, Any] | None:
        for entry in self.lines:
            if entry.get("step") == step and entry.get("iteration") == iteration:
                return entry
        return None


def _jsonable(v: Any) -> Any:
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _resume_settings(config: Mapping[str, Any]) -> dict[str, Any]:
    """Return the settings a resumed run must share, from a config's dump (``LoopConfig.model_dump(mode="json")``).

    Left out: budgets and iteration limits (a stopped run may be continued with larger ones); where a copy of the
    results goes (``store``, ``store_run``); where the endpoints are and which variable holds the key (``base_url``,
    ``api_key_env``: they say where a call goes, not what it asks, and the call cache leaves them out too); and the
    paths of the eval set, the baseline and the prompt file, whose contents are compared instead (``data_sha256``
    and the starting prompt), so a run folder moved or copied with its data resumes. A judge calibration set is
    named by the SHA-256 of its bytes where the file can be read.
    """
    data = json.loads(json.dumps(dict(config)))  # a deep copy
    gate_cfg = data.get("gate") or {}
    for k in ("max_iterations", "max_total_cost_usd", "max_wall_seconds"):
        gate_cfg.pop(k, None)
    for k in ("store", "store_run", "eval_set", "baseline"):
        data.pop(k, None)
    for role in ("agent", "judge", "optimizer"):
        if isinstance(data.get(role), dict):
            for k in ("base_url", "api_key_env"):
                data[role].pop(k, None)
    if isinstance(data.get("agent"), dict):
        data["agent"].pop("prompt_file", None)  # its text is the starting prompt, compared on its own
    calib = gate_cfg.get("judge_calibration")
    if isinstance(calib, dict) and calib.get("path"):
        try:
            calib["path"] = "sha256:" + _file_sha(Path(calib["path"]))
        except OSError:
            pass  # compared by path
    return data


def _resume_hash(settings: Mapping[str, Any]) -> str:
    """Hash of :func:`_resume_settings` (the log's ``resume_sha256``)."""
    return hashlib.sha256(json.dumps(settings, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _flat(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"gate.thresholds.relevance": 0.97, ...}``: nested mappings as dotted keys (lists stay whole)."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping) and v:
            out.update(_flat(v, key + "."))
        else:
            out[key] = v
    return out


def _both(was: Any, now: Any, n: int = 60, before: int = 24) -> tuple[str, str, str]:
    """Two differing values as JSON, each at most about ``n`` characters, cut around their first difference.

    Returns the two texts and a note (``""`` when both are shown whole): values that fit are shown whole; longer
    ones from ``before`` characters (more near the end) before the first character where they differ (strings
    compared as text, other values as their JSON), with "..." where a text is cut, so that two long prompts that
    differ near their end no longer read alike.
    """
    texts = [json.dumps(v, ensure_ascii=False) for v in (was, now)]
    if all(len(t) <= n for t in texts):
        return texts[0], texts[1], ""
    raw = [v if isinstance(v, str) else json.dumps(v, ensure_ascii=False) for v in (was, now)]
    at = next((i for i, (a, b) in enumerate(zip(*raw, strict=False)) if a != b), min(map(len, raw)))
    start = max(0, min(at - before, max(map(len, raw)) - n))  # a difference near the end: more context before it

    def cut(t: str, is_text: bool) -> str:
        end = min(len(t), start + n)
        part = ("..." if start else "") + t[start:end] + ("..." if end < len(t) else "")
        return json.dumps(part, ensure_ascii=False) if is_text else part

    return (cut(raw[0], isinstance(was, str)), cut(raw[1], isinstance(now, str)),
            f" (they differ from character {at + 1})")


def _resume_differences(start: Mapping[str, Any], settings: Mapping[str, Any], data_sha: Mapping[str, str],
                        prompt: str) -> list[str]:
    """Say what keeps a logged run from being resumed with these settings, data and starting prompt: one line each."""
    out: list[str] = []
    if "resume_settings" in start:
        logged = start["resume_settings"]
    elif isinstance(start.get("config"), Mapping):  # a log written before the settings were stored
        logged = _resume_settings(start["config"])
    else:
        logged = None
    if logged is None:
        if start.get("resume_sha256") != _resume_hash(settings):
            out.append("the settings differ (the log does not store them, so which one cannot be said)")
    else:
        old, new = _flat(logged), _flat(settings)
        for key in sorted(set(old) | set(new)):
            if old.get(key) != new.get(key):
                if key == "agent.prompt" and old.get(key) == start.get("prompt") and new.get(key) == prompt:
                    continue  # the starting prompt: named once, below
                if key in old and key in new:
                    was, now, note = _both(old[key], new[key])
                else:
                    was = _both(old[key], None)[0] if key in old else "not set"
                    now = _both(new[key], None)[0] if key in new else "not set"
                    note = ""
                out.append(f"{key}: {was} in the run, {now} now{note}")
    logged_data = start.get("data_sha256") or {}
    for k, what in (("eval_set", "the eval set"), ("baseline", "the baseline")):
        if logged_data.get(k) != data_sha.get(k):
            out.append(f"{what}'s content differs (sha256 {str(logged_data.get(k))[:12]} in the run, "
                       f"{str(data_sha.get(k))[:12]} now)")
    if start.get("prompt") != prompt:
        was, now, note = _both(start.get("prompt"), prompt)
        out.append(f"the starting prompt differs ({was} in the run, {now} now{note})")
    return out


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    atomic_write_text(path, "".join(json.dumps(_jsonable(r), ensure_ascii=False, sort_keys=True) + "\n"
                                    for r in rows))


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


# -- the loop -----------------------------------------------------------------------------------------------
class _Stop(Exception):
    def __init__(self, reason: StopReason, detail: str):
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


@dataclass
class _State:
    best: IterationResult | None = None
    stall: int = 0
    summaries: list[dict[str, Any]] = field(default_factory=list)
    revisions: list[dict[str, Any]] = field(default_factory=list)
    policy: list[Trigger] = field(default_factory=list)


class _Runner:
    def __init__(self, cfg: LoopConfig, examples: list[Example], baseline: ScoreSet, run_dir: Path,
                 agent: AgentFn | None, optimizer: OptimizerFn | None, log: RunLog, caller: LLMClient):
        self.cfg = cfg
        self.examples = examples
        self.baseline = baseline
        self.run_dir = run_dir
        self.agent = agent
        self.optimizer = optimizer
        self.log = log
        self.caller = caller
        self.deadline = caller.deadline
        self.store: LoopStore | None = None
        #: HTTP requests of the run's earlier invocations (the log's ``n_requests_so_far``, on a resume).
        self.requests_before = 0

    # -- helpers
    def _so_far(self) -> dict[str, Any]:
        """Return the log's running totals over every invocation of the run: money spent, HTTP requests sent."""
        return {"cost_usd_so_far": self.caller.budget.spent,
                "n_requests_so_far": self.requests_before + self.caller.n_requests}

    def record_spent(self) -> None:
        """Append the running totals to the run folder's ``spent.jsonl`` (fsync'd; read back on a resume)."""
        append_line(self.run_dir / SPENT_NAME, json.dumps(_jsonable(self._so_far()), sort_keys=True))

    def _check_time(self) -> None:
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise _Stop("wall_time", f"max_wall_seconds ({self.cfg.gate.max_wall_seconds:g} s) passed")

    def _iter_dir(self, it: int) -> Path:
        d = self.run_dir / f"iter-{it:03d}"
        d.mkdir(parents=True, exist_ok=True)
        return d

    def _run_batch(self, coro_factory: Callable[[], Any]) -> Any:
        async def batch() -> Any:
            try:
                return await coro_factory()
            finally:
                await self.caller.aclose()

        try:
            return run_coro(batch)
        except BudgetExhausted as exc:
            raise _Stop("budget", str(exc)) from None
        except WallTimeExceeded as exc:
            raise _Stop("wall_time", str(exc)) from None

    # -- 1. generate
    def generate(self, it: int, prompt: str) -> list[dict[str, Any]]:
        done = self.log.find("generation", it)
        if done is not None:
            return _read_jsonl(self.run_dir / done["outputs"])
        self._check_time()
        if self.agent is not None:
            outputs = [self._call_user_agent(ex, prompt) for ex in self.examples]
        else:
            outputs = self._run_batch(lambda: self._agenerate(prompt))
        path = self._iter_dir(it) / "outputs.jsonl"
        _write_jsonl(path, outputs)
        self.log.append({"step": "generation", "iteration": it, "prompt_sha256": _sha(prompt),
                         "outputs": str(path.relative_to(self.run_dir)), "n_examples": len(outputs),
                         "n_cached": sum(bool(o["cached"]) for o in outputs),
                         **self._so_far()})
        return outputs

    def _call_user_agent(self, ex: Example, prompt: str) -> dict[str, Any]:
        from agentstats.llm.cache import cache_key

        assert self.agent is not None
        cache = self.caller.cache
        assert cache is not None  # the run's cache, opened by optimize()
        name = getattr(self.agent, "__qualname__", type(self.agent).__name__)
        key = cache_key(f"callable:{name}", "agent", {"prompt": prompt, "example": ex.as_dict()})
        hit = cache.get(key)
        if hit is not None:
            return {**hit, "cached": True}
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise _Stop("wall_time", f"max_wall_seconds ({self.cfg.gate.max_wall_seconds:g} s) passed")
        t0 = time.perf_counter()
        got = self.agent(ex.as_dict(), prompt)
        latency = time.perf_counter() - t0
        out: dict[str, Any] = {"id": ex.id, "tokens": None, "cost_usd": None, "latency_s": latency}
        if isinstance(got, Mapping):
            if "response" not in got:
                raise LoopError(f"the agent callable returned a mapping without 'response' for example {ex.id!r}")
            out.update({k: got.get(k) for k in ("tokens", "input_tokens", "output_tokens", "cost_usd", "latency_s")
                        if got.get(k) is not None})
            if got.get("tool_calls") is not None:
                out["tool_calls"] = _tool_calls(got["tool_calls"], ex.id)
            got = got["response"]
        out["response"] = "" if got is None else str(got)
        cost = out.get("cost_usd")
        if cost is not None:
            self.caller.budget.settle(0.0, float(cost))
            self.caller.changed()
        cache.put(key, out, model=f"callable:{name}", prompt_id="agent")
        return {**out, "cached": False}

    async def _agenerate(self, prompt: str) -> list[dict[str, Any]]:
        ep = self.cfg.agent
        assert ep is not None
        sem = asyncio.Semaphore(ep.concurrency)
        offered = {ex.id: self._offered_tools(ex) for ex in self.examples}  # spec problems before any call

        async def one(ex: Example) -> dict[str, Any]:
            user = ex.input
            ctx = ex.context_text()
            if ep.include_context and ctx:
                user = f"{user}\n\nCONTEXT:\n{ctx}"
            messages = [{"role": "system", "content": prompt}, {"role": "user", "content": user}]
            tools = offered[ex.id]
            try:
                r = await self.caller.chat(ep, "agent", messages, temperature=ep.temperature, sem=sem, tools=tools)
            except CallError as exc:
                raise EndpointError(f"generation failed for example {ex.id!r}: {exc}") from exc
            out: dict[str, Any] = {
                "id": ex.id, "response": r.text or "", "tokens": r.tokens, "input_tokens": r.prompt_tokens,
                "output_tokens": r.completion_tokens, "cost_usd": r.cost_usd, "latency_s": r.latency_s,
                "cached": r.cached}
            if tools:
                out["tool_calls"] = _tool_calls(r.tool_calls or [], ex.id)
            return out

        return _settled(await asyncio.gather(*(one(ex) for ex in self.examples), return_exceptions=True))

    def _offered_tools(self, ex: Example) -> list[dict[str, Any]] | None:
        """Return the tool specs the built-in agent sends with ``ex`` (OpenAI form), or None when it has none."""
        from agentstats.scoring.schema_check import openai_tools

        specs = _example_tools(ex, self.cfg.evaluate.tool_calls)
        if not specs:
            return None
        try:
            return openai_tools(specs)
        except ValueError as exc:
            raise LoopError(f"the tool specs of example {ex.id!r} cannot be sent: {exc}") from None

    # -- 2. evaluate
    def evaluate(self, it: int, outputs: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, int]]:
        done = self.log.find("evaluation", it)
        if done is not None:
            return _read_jsonl(self.run_dir / done["scores"]), dict(done.get("judge_missing") or {})
        self._check_time()
        by_id = {o["id"]: o for o in outputs}
        judged: dict[tuple[str, str], float | None] = {}
        if self.cfg.judge is not None and self.cfg.judge.metrics:
            judged = self._run_batch(lambda: self._ajudge(by_id))
        records = []
        missing = {m: 0 for m in (self.cfg.judge.metrics if self.cfg.judge else [])}
        refusal = self.cfg.refusal_metric()
        for ex in self.examples:
            out = by_id[ex.id]
            scores: dict[str, float | None] = {}
            ev = self.cfg.evaluate
            if ev.matcher is not None and ex.expected is not None:
                from agentstats.scoring.answers import match_answer

                scores["correct"] = float(match_answer(out["response"], ex.expected, ev.matcher).score)
            if ev.response_schema is not None:
                scores["format_valid"] = _format_valid(out["response"], ev.response_schema)
            if ev.tool_calls is not None:
                scores.update(_tool_scores(ex, out.get("tool_calls") or [], ev.tool_calls))
            if refusal is not None:
                scores[refusal] = _refused(out["response"], ev.refusal_phrases)
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
        path = self._iter_dir(it) / "scores.jsonl"
        _write_jsonl(path, records)
        scores_set = load(path, format="scores")
        means = {m: float(scores_set.example_means(m).mean()) if len(scores_set.example_means(m)) else None
                 for m in scores_set.metrics}
        self.log.append({"step": "evaluation", "iteration": it, "scores": str(path.relative_to(self.run_dir)),
                         "means": means, "judge_missing": missing, **self._so_far()})
        return records, missing

    async def _ajudge(self, by_id: dict[str, dict[str, Any]]) -> dict[tuple[str, str], float | None]:
        jc = self.cfg.judge
        assert jc is not None
        sem = asyncio.Semaphore(jc.concurrency)

        async def one(ex: Example, metric: str) -> tuple[tuple[str, str], float | None]:
            tpl = LOOP_JUDGE_PROMPTS[metric]
            messages = tpl.render(**{k: v for k, v in {"query": ex.input, "context": ex.context_text(),
                                                        "answer": by_id[ex.id]["response"]}.items()
                                     if k in tpl.fields})
            try:
                r = await self.caller.chat(jc, tpl.id, messages, temperature=0.0, sem=sem, response_model=Verdict,
                                           max_retries=jc.max_retries)
            except CallError as exc:
                if exc.auth:
                    raise EndpointError(f"the judge endpoint refused the key: {exc}") from exc
                return (ex.id, metric), None
            assert r.data is not None
            return (ex.id, metric), float(r.data["score"])

        pairs = await asyncio.gather(*(one(ex, m) for ex in self.examples for m in jc.metrics),
                                     return_exceptions=True)
        return dict(_settled(pairs))

    # -- 3. gate
    def decide(self, it: int, prompt: str, outputs: list[dict[str, Any]], records: list[dict[str, Any]],
               missing: dict[str, int], state: _State) -> IterationResult:
        path = self.run_dir / f"iter-{it:03d}" / "scores.jsonl"
        scores = load(path, format="scores")
        decision = gate(scores, self.baseline, self.cfg.gate)
        vs_best = None
        p_better = None
        if state.best is None:
            improved = True
        else:
            vs_best = gate(scores, state.best.scores, self.cfg.gate)
            p_better = self._p_better(scores, state.best.scores)
            improved = p_better >= self.cfg.gate.improvement_probability and vs_best.decision != "FAIL"
        res = IterationResult(iteration=it, prompt=prompt, outputs=outputs, scores=scores, records=records,
                              decision=decision, vs_best=vs_best, p_better_than_best=p_better, improved=improved,
                              judge_missing=missing)
        record = {"iteration": it, "vs_baseline": decision.to_record(),
                  "vs_best": None if vs_best is None else vs_best.to_record(),
                  "best_before": None if state.best is None else state.best.iteration,
                  "p_better_than_best": p_better, "improved": improved}
        dpath = self._iter_dir(it) / "decision.json"
        atomic_write_text(dpath, json.dumps(_jsonable(record), indent=2) + "\n")
        if self.log.find("decision", it) is None:
            overall = [
                {"metric": m.metric, "n": m.n_candidate, "n_missing": m.n_missing, **m.candidate,
                 "threshold": m.threshold, "p_meets_threshold": m.p_meets_threshold, "n_failures": m.n_failures,
                 "difference": m.difference, "p_regression": m.p_regression}
                for m in decision.metrics if m.stratum == "all"
            ]
            self.log.append({
                "step": "decision", "iteration": it, "decision": decision.decision, "reasons": decision.reasons,
                "vs_best": None if vs_best is None else vs_best.decision,
                "best_before": None if state.best is None else state.best.iteration,
                "p_better_than_best": p_better, "improved": improved, "metrics": overall,
                "triggers": [t.kind for t in decision.triggers], "record": str(dpath.relative_to(self.run_dir)),
                "weighted_score": decision.weighted_score, **self._so_far(),
            })
        if self.store is not None:
            self.store.write_iteration(
                it, prompt, _sha(prompt), self.examples, outputs, records, decision,
                {"vs_best": None if vs_best is None else vs_best.decision, "p_better_than_best": p_better,
                 "improved": improved, "best_before": None if state.best is None else state.best.iteration},
            )
        return res

    def _p_better(self, cand: ScoreSet, best: ScoreSet) -> float:
        """``P(mean weighted score of the candidate > the best's)`` on the examples both scored."""
        yc, yb = _weighted_example_scores(cand, self.cfg), _weighted_example_scores(best, self.cfg)
        ids = sorted(set(yc) & set(yb))
        if not ids:
            return 0.5
        g = self.cfg.gate
        rng = np.random.default_rng(np.random.SeedSequence(g.random_seed, spawn_key=[zlib.crc32(b"vs-best")]))
        _, _, d = difference_draws(np.array([yc[i] for i in ids]), np.array([yb[i] for i in ids]),
                                   g.prior_strength, g.n_draws, rng)
        return float((d > 0).mean())

    # -- 5. optimize
    def revise(self, it: int, res: IterationResult, state: _State) -> str:
        done = self.log.find("revision", it)
        if done is not None:
            return str(done["prompt"])
        self._check_time()
        rationale: str | None = None
        if self.optimizer is not None:
            new = self.optimizer(res.prompt, res)
            if not isinstance(new, str) or not new.strip():
                raise LoopError(f"the optimizer callable returned {type(new).__name__}, not a non-empty prompt")
            source = getattr(self.optimizer, "__qualname__", type(self.optimizer).__name__)
        else:
            new, rationale = self._run_batch(lambda: self._arevise(res))
            ep = self.cfg.optimizer_endpoint()
            assert ep is not None
            source = f"{ep.model} ({REVISION.id})"
        diff = prompt_diff(res.prompt, new, old_name=f"iteration {it}", new_name=f"iteration {it + 1}")
        triggers = policy_triggers(diff, self.cfg.policy_phrases, it)
        from dataclasses import asdict

        entry = {"step": "revision", "iteration": it, "next_iteration": it + 1, "prompt": new,
                 "prompt_sha256": _sha(new), "diff": diff, "rationale": rationale, "optimizer": source,
                 "triggers": [asdict(t) for t in triggers], **self._so_far()}
        self.log.append(entry)
        return new

    async def _arevise(self, res: IterationResult) -> tuple[str, str]:
        ep = self.cfg.optimizer_endpoint()
        assert ep is not None
        n_show = self.cfg.optimizer.examples_shown if self.cfg.optimizer else 5
        max_retries = self.cfg.optimizer.max_retries if self.cfg.optimizer else 2
        lines = []
        pct = f"{self.cfg.gate.ci_prob:.0%}"
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
        weighted = _weighted_example_scores(res.scores, self.cfg)
        worst = sorted(weighted, key=lambda i: (weighted[i], i))[:n_show]
        by_id = {o["id"]: o for o in res.outputs}
        ex_by_id = {e.id: e for e in self.examples}
        rec_by_id = {r["id"]: r for r in res.records}
        shown = []
        for i in worst:
            scores = ", ".join(f"{k}={'missing' if v is None else f'{v:.2f}'}"
                               for k, v in rec_by_id[i]["scores"].items())
            calls = by_id[i].get("tool_calls")
            made = f"\nTOOL CALLS: {_calls_text(calls)[:800]}" if calls is not None else ""
            shown.append(f"[{i}] INPUT: {ex_by_id[i].input[:500]}\nANSWER: {by_id[i]['response'][:800]}{made}\n"
                         f"SCORES: {scores}")
        messages = REVISION.render(prompt=res.prompt, evaluation="\n".join(lines),
                                   examples="\n\n".join(shown) or "(none)")
        sem = asyncio.Semaphore(1)
        try:
            r = await self.caller.chat(ep, REVISION.id, messages, temperature=0.0, sem=sem, response_model=Revision,
                                       max_retries=max_retries)
        except CallError as exc:
            raise EndpointError(f"the optimizer call failed: {exc}") from exc
        assert r.data is not None
        return str(r.data["revised_prompt"]), str(r.data["rationale"])

    # -- the loop
    def run(self, prompt: str, state: _State) -> tuple[StopReason, str]:
        g = self.cfg.gate
        it = 1
        while True:
            outputs = self.generate(it, prompt)
            records, missing = self.evaluate(it, outputs)
            res = self.decide(it, prompt, outputs, records, missing, state)
            state.summaries.append(self.log.find("decision", it) or {})
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
            prompt = self.revise(it, res, state)
            rev = self.log.find("revision", it)
            if rev is not None:
                state.revisions.append(rev)
                state.policy.extend(Trigger(t["kind"], t["reason"], t["evidence"]) for t in rev.get("triggers", []))
            it += 1


def _settled(results: list[Any]) -> list[Any]:
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


def _format_valid(response: str, schema: Mapping[str, Any]) -> float:
    from jsonschema import Draft202012Validator

    text = response.strip()
    if text.startswith("```"):  # a fenced JSON block is still JSON
        text = text.strip("`").removeprefix("json").strip()
    try:
        value = json.loads(text)
    except ValueError:
        return 0.0
    return 1.0 if Draft202012Validator(dict(schema)).is_valid(value) else 0.0


def _example_tools(ex: Example, st: ToolCallSettings | None) -> list[Any] | None:
    """Return the tool specs of an example: its own ``tools`` field, else ``evaluate.tool_calls.tools`` (None: none).

    The same specs are offered to the built-in agent and used by the ``tool_calls_valid`` check.
    """
    own = ex.extra.get("tools")
    if isinstance(own, list):
        return own
    return None if st is None else st.tools


def _calls_text(calls: list[dict[str, Any]]) -> str:
    """Return the calls an agent made as ``name(arguments)``, for the optimizer's prompt (``none``: none)."""
    parts = []
    for c in calls:
        args = c.get("arguments_raw") if c.get("parse_error") else json.dumps(c.get("arguments", {}),
                                                                            ensure_ascii=False, sort_keys=True)
        parts.append(f"{c.get('name')}({args})")
    return "; ".join(parts) or "none"


def _tool_calls(value: Any, ex_id: str) -> list[dict[str, Any]]:
    """Return an agent's ``tool_calls`` as plain-JSON calls (OpenAI or ``{name, arguments}`` form accepted).

    Arguments given as a JSON string are decoded; a string that does not decode is kept (``arguments_raw``,
    ``parse_error``), so the call is scored as malformed.
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


def _tool_scores(ex: Example, calls: list[dict[str, Any]], st: ToolCallSettings) -> dict[str, float]:
    """Tool-call metrics of one example (``ToolCallSettings``): correctness, components, schema validity."""
    from agentstats.scoring.schema_check import validate_tool_calls
    from agentstats.scoring.tools import score_tool_calls

    out: dict[str, float] = {}
    tools = _example_tools(ex, st)
    expected = ex.extra.get("expected_tool_calls")
    if isinstance(expected, list):
        ts = score_tool_calls(calls, expected, weights=st.weights, tool_threshold=st.tool_threshold,
                              sequence_matters=st.sequence_matters, details=False)
        out["tool_calls_correct"] = 1.0 if ts.passed else 0.0
        if st.components:
            out["tool_selection"] = ts.selection
            if ts.parameters is not None:
                out["tool_parameters"] = ts.parameters
            if st.sequence_matters and ts.sequence is not None:
                out["tool_sequence"] = ts.sequence
    if "tool_calls_valid" in st.metrics() and tools:
        out["tool_calls_valid"] = 0.0 if validate_tool_calls(calls, tools) else 1.0
    return out


def _refused(response: str, phrases: list[str] | None) -> float:
    """1 when the response is an unsuccessful request (the metric catalogue's phrase matcher), else 0."""
    from agentstats.metrics.answer import unsuccessful_phrases

    score = unsuccessful_phrases({"output": response}, {"phrases": phrases} if phrases else {})
    return float(score.value or 0.0)


def _weighted_example_scores(scores: ScoreSet, cfg: LoopConfig) -> dict[str, float]:
    """Per-example weighted mean of the metrics (config ``weights``; equal weights when none is given)."""
    metrics = [m for m in scores.metrics if not cfg.gate.is_review_only(m)]  # a refusal rate is no score
    weights = {m: cfg.gate.weights.get(m, 0.0) for m in metrics} if cfg.gate.weights else dict.fromkeys(metrics, 1.0)
    num: dict[str, float] = {}
    den: dict[str, float] = {}
    for m, w in weights.items():
        if w <= 0:
            continue
        for i, v in scores.example_means(m).items():
            num[str(i)] = num.get(str(i), 0.0) + w * float(v)
            den[str(i)] = den.get(str(i), 0.0) + w
    return {i: num[i] / den[i] for i in num if den[i] > 0}


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

    The steps, stop rules, log and resume are described in :mod:`agentstats.optimize.loop` and the "Loop" section
    of ``docs/gate.md``.

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
        price table, a config naming a metric that is not scored, ids of the baseline not in the eval set.
    """
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
    if updates:
        cfg = cfg.model_copy(update=updates)
    start_prompt = prompt if prompt is not None else cfg.initial_prompt()
    if start_prompt is None:
        raise ValueError("optimize: no starting prompt (give prompt=, or agent.prompt / agent.prompt_file)")
    if agent is None and cfg.agent is None:
        raise ValueError("optimize: no agent: pass an agent callable or configure agent (endpoint and model)")
    if optimizer is None and cfg.optimizer_endpoint() is None:
        raise ValueError("optimize: no optimizer: pass an optimizer callable, or configure optimizer or judge")
    prices = cfg.price_table()
    if cfg.gate.max_total_cost_usd is not None:
        from agentstats.llm.pricing import cost_usd

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
    examples = load(cfg.eval_set, format="eval_set")
    base = load(cfg.baseline, format="scores")
    missing_metrics = sorted(set(base.metrics) - produced)
    if missing_metrics:
        raise ValueError(f"the baseline {cfg.baseline} scores metric(s) {missing_metrics} that the loop does not "
                         f"score (it scores {sorted(produced)}): a candidate is gated on every baseline metric")
    unknown = sorted(set(base.examples.index) - {e.id for e in examples})
    if unknown:
        raise ValueError(f"the baseline {cfg.baseline} has ids not in the eval set {cfg.eval_set}: {unknown[:5]}")

    run_path = Path(run_dir)
    run_path.mkdir(parents=True, exist_ok=True)
    log = RunLog(run_path)
    lines = log.read()
    settings = _resume_settings(cfg.model_dump(mode="json"))
    data_sha = {"eval_set": _file_sha(cfg.eval_set), "baseline": base.sha256}
    if lines and not resume:
        raise LoopError(f"{run_path} holds a loop run already ({LOG_NAME}): resume it, or choose another run folder")
    if lines:
        differ = _resume_differences(lines[0], settings, data_sha, start_prompt)
        if differ:
            raise LoopError(f"{run_path} holds a run with other settings, data or starting prompt, so it cannot be "
                            f"resumed with these: {'; '.join(differ)} (a resume may change only the budgets, "
                            "max_iterations, the store, the endpoints' addresses and where the files are)")
    else:
        (run_path / SPENT_NAME).unlink(missing_ok=True)  # a new run's totals start at 0
        log.append({"step": "start", "iteration": 0, "config": cfg.model_dump(mode="json"),
                    "config_sha256": cfg.sha256(), "resume_sha256": _resume_hash(settings),
                    "resume_settings": settings, "data_sha256": data_sha,
                    "prompt": start_prompt, "n_examples": len(examples),
                    "agent": "callable" if agent is not None else "chat",
                    "optimizer": "callable" if optimizer is not None else "chat"})

    store_path = Path(store) if store is not None else cfg.store
    loop_store = None
    if store_path is not None:
        loop_store = LoopStore(store_path, store_run or cfg.store_run or run_path.resolve().name, cfg.gate,
                               run_path, cfg.sha256())
        if not lines:
            loop_store.check_new()
        loop_store.write_baseline(base)

    cache = JudgeCache(run_path / CACHE_NAME)
    try:
        # the log and spent.jsonl are the record of what the run spent; the cache (possibly deleted, or not
        # shipped with a copied run folder) adds the calls that completed after the last logged step
        cost_before, requests_before = _recorded_so_far(lines, run_path)
        budget = Budget(cfg.gate.max_total_cost_usd,
                        max(Budget.from_cache(cfg.gate.max_total_cost_usd, cache).spent, cost_before))
        deadline = None if cfg.gate.max_wall_seconds is None else time.monotonic() + cfg.gate.max_wall_seconds
        caller = LLMClient(cache, budget, prices, chars_per_token=cfg.chars_per_token,
                           jitter_seed=cfg.gate.random_seed, deadline=deadline)
        runner = _Runner(cfg, examples, base, run_path, agent, optimizer, log, caller)
        runner.store = loop_store
        runner.requests_before = requests_before
        caller.on_change = runner.record_spent
        if resume and lines:
            log.append({"step": "resume", "iteration": 0, "after_lines": len(lines), **runner._so_far()})
        state = _State()
        try:
            reason, detail = runner.run(start_prompt, state)
        except _Stop as stop:
            reason, detail = stop.reason, stop.detail
        best = state.best
        triggers = list(best.decision.triggers if best is not None else []) + state.policy
        result = LoopResult(
            decision=best.decision.decision if best is not None else "RETRY",
            stop_reason=reason,
            stop_detail=detail,
            best_iteration=None if best is None else best.iteration,
            best_prompt=None if best is None else best.prompt,
            iterations=state.summaries,
            revisions=state.revisions,
            triggers=triggers,
            cost_usd=budget.spent,
            n_requests=requests_before + caller.n_requests,
            n_cached=caller.n_cached,
            run_dir=run_path,
            best=best,
            config_sha256=cfg.sha256(),
        )
        from dataclasses import asdict

        log.append({"step": "stop", "iteration": len(state.summaries), "reason": reason, "detail": detail,
                    "decision": result.decision, "best_iteration": result.best_iteration,
                    "triggers": [asdict(t) for t in triggers], **runner._so_far(),
                    "budget_refusals": budget.refused})
        atomic_write_text(run_path / "result.json", json.dumps(_jsonable(result.to_record()), indent=2) + "\n")
        return result
    finally:
        cache.close()


def _recorded_so_far(lines: list[dict[str, Any]], run_path: Path) -> tuple[float, int]:
    """Money spent and HTTP requests sent by a run's earlier invocations, as its log and ``spent.jsonl`` record them.

    The larger of the last logged ``cost_usd_so_far`` / ``n_requests_so_far`` and the last line of ``spent.jsonl``
    (written as each request is sent and each cost settled: it adds what a step cut short by an interruption spent
    after the last logged step); 0 for a new run. A log written before ``n_requests_so_far`` existed that ends with
    a ``stop`` line takes the request count of the ``result.json`` written with that line (none: 0).
    """
    def last(key: str) -> Any:
        return next((x[key] for x in reversed(lines) if x.get(key) is not None), None)

    cost, requests = last("cost_usd_so_far"), last("n_requests_so_far")
    if requests is None and lines and lines[-1].get("step") == "stop" and (run_path / "result.json").exists():
        try:
            requests = json.loads((run_path / "result.json").read_text(encoding="utf-8")).get("n_requests")
        except (OSError, ValueError, AttributeError):
            requests = None
    spent = _last_spent(run_path / SPENT_NAME) if lines else {}
    cost = max(float(cost or 0.0), float(spent.get("cost_usd_so_far") or 0.0))
    requests = max(int(requests or 0), int(spent.get("n_requests_so_far") or 0))
    return cost, requests


def _last_spent(path: Path) -> dict[str, Any]:
    """Read the last whole line of ``spent.jsonl`` (totals only grow: it holds the largest); {} without one.

    Only the file's end is read (its lines are short); a last line cut short by a kill is cut off the file, so that
    the resumed run's lines start on a line of their own.
    """
    try:
        with open(path, "r+b") as fh:
            fh.seek(0, 2)
            size = fh.tell()
            fh.seek(max(size - 65536, 0))
            tail = fh.read()
            if tail and not tail.endswith(b"\n"):
                fh.truncate(size - len(tail) + tail.rfind(b"\n") + 1)
    except FileNotFoundError:
        return {}
    for raw in reversed(tail.split(b"\n")[1 if size > 65536 else 0:]):
        try:
            got = json.loads(raw)
        except ValueError:
            continue
        if isinstance(got, dict):
            return got
    return {}


def _file_sha(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


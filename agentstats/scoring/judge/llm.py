"""The LLM judge: any OpenAI-compatible endpoint through ``instructor`` + ``openai``.

:class:`OpenAIJudge` asks a model for a pydantic verdict
(:class:`~agentstats.scoring.judge.verdicts.Verdict`: ``score`` in [0, 1] and ``reasoning``), which instructor
validates and, when invalid, re-asks with the validation error fed back (``max_retries``). The same machinery
scores tool calls for relevance and parameter grounding, the LLM-judged tool metrics of IBM watsonx.governance.

What every verdict records (:class:`~agentstats.scoring.judge.verdicts.JudgeVerdict`): the prompt's name, version
and text hash, the model, prompt/completion tokens summed over every HTTP request the verdict took (re-asks and
retries included), wall-clock latency, cost from a per-model price table (``None`` for an unknown model), the
number of requests and the backoff waits.

Failures are never scores. Timeouts, connection errors, HTTP 429 and 5xx, and truncated output
(``finish_reason == "length"``) are retried with exponential backoff (tenacity), honouring ``Retry-After`` /
``retry-after-ms`` when the server sends one; output that does not validate (malformed JSON arguments, a score
outside [0, 1], no tool call in TOOLS mode) is re-asked by instructor. When all that is spent the verdict is
``status="judge_missing"`` with ``score=None`` and the error: :func:`agentstats.scoring.score_trials` makes such a
trial *missing* (excluded from counts, reported), never a failure. A refused key (HTTP 401/403) is not a missing
verdict but a configuration error, raised after the first request (:class:`JudgeAuthError`); an endpoint that
cannot be reached stops the batch (the circuit breaker of :class:`OpenAIJudge`).

The judge is a thin adapter over the one LLM client (:meth:`agentstats.llm.client.LLMClient.batch`): calls run
concurrently (``concurrency``), and every successful verdict is written to an on-disk cache
(:class:`~agentstats.llm.cache.JudgeCache`) the moment it arrives, keyed by (model, prompt id, response schema,
temperature, mode, inputs): a rerun costs no calls and a run killed halfway resumes where it stopped. Identical
requests within one batch are sent once, and requests another process has in flight on the same cache are waited
for, not sent again (cache claims). What is the judge's own: the prompts per metric, the verdict schemas, and turning
each call's outcome into a :class:`~agentstats.scoring.judge.verdicts.JudgeVerdict`.

API keys come from the environment only (``api_key_env``, default ``OPENAI_API_KEY``). A missing key is an
error, except for a loopback ``base_url`` (``127.0.0.1``, ``localhost``, ``::1``): local OpenAI-compatible
servers (vLLM, llama.cpp, Ollama, the test server) ignore the key, so a placeholder is sent.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import instructor
from pydantic import ValidationError

from agentstats.llm.batch import BatchResult, Outcome, PromptCall
from agentstats.llm.cache import JudgeCache
from agentstats.llm.client import LLMClient
from agentstats.llm.endpoint import Endpoint, LLMConfigError
from agentstats.llm.pricing import DEFAULT_PRICES
from agentstats.llm.probe import check_endpoint
from agentstats.llm.prompts.judge import JUDGE_PROMPTS
from agentstats.llm.prompts.template import PromptTemplate
from agentstats.llm.transport import Exchange, run_coro
from agentstats.scoring.judge.base import Judge, JudgeAuthError, JudgeConfigError, ProgressFn
from agentstats.scoring.judge.verdicts import (
    RESPONSE_MODELS,
    AnswerItem,
    JudgeVerdict,
    ToolCallItem,
    ToolMetric,
    Verdict,
)

__all__ = ["OpenAIJudge"]


def _from_cache(payload: Mapping[str, Any], key: str) -> JudgeVerdict:
    return JudgeVerdict.model_validate({**payload, "cached": True, "n_requests": 0, "key": key})


def _default_cache_dir() -> Path:
    root = os.environ.get("AGENTSTATS_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "agentstats")
    return Path(root) / "judge"


class OpenAIJudge(Judge):
    """LLM judge behind any OpenAI-compatible endpoint, through ``instructor`` + ``openai``.

    Parameters
    ----------
    model : str
        Model name sent to the endpoint.
    base_url : str, optional
        OpenAI-compatible base URL (``http://host:port/v1``); ``None`` → ``$OPENAI_BASE_URL`` or OpenAI.
    api_key_env : str
        Environment variable holding the API key. Keys are never taken from arguments or code.
    temperature : float
        Sampling temperature (0: as deterministic as the provider allows).
    mode : instructor.Mode or str
        instructor mode (``TOOLS`` default; ``JSON``, ``MD_JSON``, ``JSON_SCHEMA`` also work).
    max_retries : int
        instructor re-asks after output that does not validate (so up to ``max_retries + 1`` completions).
    retry_attempts : int
        Transport-level attempts for timeouts, connection errors, 429, 5xx and truncated output.
    timeout : float
        Seconds per HTTP request.
    backoff_base_s, backoff_max_s : float
        Exponential backoff with full jitter: wait uniform in ``[0, min(max, base * 2**(attempt-1))]``; a
        ``Retry-After`` from the server is used instead (capped at ``backoff_max_s``).
    concurrency : int
        Most requests in flight at once.
    cache_dir : path, optional
        Directory of the verdict cache; ``None`` → ``$AGENTSTATS_CACHE_DIR/judge`` or
        ``~/.cache/agentstats/judge``; ``False`` disables caching.
    prices : mapping, optional
        ``model -> (input, output)`` USD per 1M tokens; default :data:`DEFAULT_PRICES`.
    prompts : mapping, optional
        Replacement :class:`~agentstats.llm.prompts.PromptTemplate` per metric name (defaults:
        :data:`agentstats.llm.prompts.judge.JUDGE_PROMPTS`).
    max_tokens : int, optional
        Completion token cap sent with each request.
    jitter_seed : int, optional
        Seed of the backoff jitter's random generator (reproducible waits in tests).
    claim_lease_s : float
        Lease of the cache claims on requests in flight (see :class:`~agentstats.llm.cache.JudgeCache`):
        another process treats a claim as abandoned when its heartbeat is older than this.
    claim_poll_s : float
        How often a process waiting for another's verdicts looks for them (seconds).
    breaker_after : int
        Consecutive verdicts that failed to reach the endpoint (connection errors, every retry spent) after
        which the rest of the batch is not sent; the first failing verdict of a batch opens the circuit at once
        when nothing has succeeded yet (an endpoint that never answered).

    Raises
    ------
    JudgeConfigError
        When the API key variable is unset and ``base_url`` is not a loopback address, ``mode`` is unknown, or a
        setting is out of range (``timeout`` must be > 0 and the backoff times >= 0).

    Notes
    -----
    Batches run as :mod:`agentstats.llm.batch` describes. Cached verdicts are taken first. The first request to
    send goes alone (a *probe*): a refused key (HTTP 401/403) raises
    :class:`~agentstats.scoring.judge.base.JudgeAuthError` after that one request, and an endpoint that cannot be
    reached opens the circuit (below) before the other requests are sent. The rest run concurrently. Before
    sending, each request claims its cache key, so a second process on the same cache waits for the verdict instead
    of paying for it again. When the circuit opens (see ``breaker_after``), requests not yet sent become
    ``judge_missing`` verdicts of kind ``not_sent``, and those in flight stop retrying.

    Examples
    --------
    >>> judge = OpenAIJudge("gpt-4o-mini")                      # doctest: +SKIP
    >>> judge.judge_answers([AnswerItem("Paris.", "Paris", query="Capital of France?")])  # doctest: +SKIP
    """

    supports_tool_metrics = True

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        temperature: float = 0.0,
        mode: Any = instructor.Mode.TOOLS,
        max_retries: int = 2,
        retry_attempts: int = 5,
        timeout: float = 60.0,
        backoff_base_s: float = 1.0,
        backoff_max_s: float = 60.0,
        concurrency: int = 16,
        cache_dir: str | os.PathLike | Literal[False] | None = None,
        prices: Mapping[str, tuple[float, float]] | None = None,
        prompts: Mapping[str, PromptTemplate] | None = None,
        max_tokens: int | None = None,
        jitter_seed: int | None = None,
        claim_lease_s: float = 60.0,
        claim_poll_s: float = 0.5,
        breaker_after: int = 5,
    ):
        super().__init__()
        if concurrency < 1:
            raise JudgeConfigError(f"concurrency must be >= 1, got {concurrency}")
        if retry_attempts < 1:
            raise JudgeConfigError(f"retry_attempts must be >= 1, got {retry_attempts}")
        if breaker_after < 1:
            raise JudgeConfigError(f"breaker_after must be >= 1, got {breaker_after}")
        if not (claim_lease_s > 0 and claim_poll_s > 0):
            raise JudgeConfigError(f"claim_lease_s and claim_poll_s must be > 0, got {claim_lease_s}, {claim_poll_s}")
        if isinstance(mode, str):
            try:
                mode = instructor.Mode[mode.upper()]
            except KeyError:
                raise JudgeConfigError(f"unknown instructor mode {mode!r}") from None
        self.model = model
        self.base_url = base_url if base_url is not None else os.environ.get("OPENAI_BASE_URL")
        self.api_key_env = api_key_env
        try:
            self.endpoint = Endpoint(model=model, base_url=self.base_url, api_key_env=api_key_env,
                                     concurrency=concurrency, retry_attempts=retry_attempts, timeout=timeout,
                                     backoff_base_s=backoff_base_s, backoff_max_s=backoff_max_s, max_tokens=max_tokens)
            self.endpoint.api_key("the LLM judge")
        except LLMConfigError as exc:
            raise JudgeConfigError(str(exc)) from None
        except ValidationError as exc:  # one line per setting: "base_url: must be an http(s) URL ..."
            raise JudgeConfigError("; ".join(
                f"{'.'.join(map(str, e['loc']))}: {str(e['msg']).removeprefix('Value error, ')}"
                for e in exc.errors(include_url=False))) from None
        self.temperature = float(temperature)
        self.mode = mode
        self.max_retries = int(max_retries)
        self.prompts = {**JUDGE_PROMPTS, **(dict(prompts) if prompts else {})}
        self.claim_poll_s = float(claim_poll_s)
        self.breaker_after = int(breaker_after)
        self.name = f"openai:{model}"
        cache = None if cache_dir is False else JudgeCache(
            cache_dir if cache_dir is not None else _default_cache_dir(), lease_s=claim_lease_s)
        #: The LLM client the judge sends through (cache, retries, prices, spending).
        self.client = LLMClient(cache, prices=DEFAULT_PRICES if prices is None else prices, jitter_seed=jitter_seed)

    @property
    def cache(self) -> JudgeCache | None:
        """The verdict cache (None when disabled)."""
        return self.client.cache

    def __repr__(self) -> str:
        return f"OpenAIJudge(model={self.model!r}, base_url={self.base_url!r}, mode={self.mode}, cache={self.cache})"

    # -- public API ----------------------------------------------------------------------------------------
    def check_available(self) -> None:
        """Ask the endpoint for its models before asking for any verdict (:func:`agentstats.llm.probe.check_endpoint`).

        Raises
        ------
        agentstats.llm.probe.EndpointUnavailable
            The endpoint cannot be reached, says it is unavailable, or refuses the key; the message names it.
        """
        check_endpoint(self.endpoint, user="the LLM judge", timeout=min(10.0, self.endpoint.timeout))

    def judge_answers(self, items: Sequence[AnswerItem], progress: ProgressFn | None = None) -> list[JudgeVerdict]:
        """Answer-correctness verdicts, one per item, in order (see :class:`OpenAIJudge`)."""
        return run_coro(lambda: self.ajudge_answers(items, progress))

    async def ajudge_answers(self, items: Sequence[AnswerItem], progress: ProgressFn | None = None
                             ) -> list[JudgeVerdict]:
        """Async form of :meth:`judge_answers`."""
        reqs: list[PromptCall | JudgeVerdict] = []
        for it in items:
            if it.answer is None:  # no answer is a wrong answer, not something to ask a model about
                reqs.append(JudgeVerdict(metric="answer_correctness", status="ok", score=0.0,
                                         reasoning="no answer given", judge=self.name, model=self.model))
            else:
                reqs.append(self._request("answer_correctness", it.fields(), None))
        return await self._arun(reqs, progress)

    def judge_tool_calls(self, items: Sequence[ToolCallItem], metric: ToolMetric = "tool_call_relevance",
                         progress: ProgressFn | None = None) -> list[JudgeVerdict]:
        """Tool-call verdicts (``"tool_call_relevance"`` or ``"parameter_grounding"``), one per item."""
        return run_coro(lambda: self.ajudge_tool_calls(items, metric, progress))

    async def ajudge_tool_calls(self, items: Sequence[ToolCallItem], metric: ToolMetric = "tool_call_relevance",
                                progress: ProgressFn | None = None) -> list[JudgeVerdict]:
        """Async form of :meth:`judge_tool_calls`."""
        if metric not in ("tool_call_relevance", "parameter_grounding"):
            raise ValueError(f"unknown tool metric {metric!r}; use 'tool_call_relevance' or 'parameter_grounding'")
        reqs = [self._request(metric, it.fields(metric), it.context(metric)) for it in items]
        return await self._arun(reqs, progress)

    def judge_prompt(self, prompt: PromptTemplate, response_model: type[Verdict],
                     items: Sequence[Mapping[str, str]], contexts: Sequence[dict[str, Any] | None] | None = None,
                     progress: ProgressFn | None = None) -> list[JudgeVerdict]:
        """Verdicts of any prompt and response model, one per item of prompt fields, in order.

        The same machinery as :meth:`judge_answers` (instructor validation and re-asks, retries, cache keyed by the
        prompt's id and the response model's name, claims, bounded concurrency, cost); the verdicts' ``metric`` is
        ``prompt.name``. ``contexts`` are instructor validation contexts, one per item.
        """
        ctxs = list(contexts) if contexts is not None else [None] * len(items)
        if len(ctxs) != len(items):
            raise ValueError(f"{len(ctxs)} validation contexts for {len(items)} items")
        reqs: list[PromptCall | JudgeVerdict] = [
            PromptCall(prompt, {k: str(v) for k, v in fields.items()}, response_model, ctx, tag=prompt.name)
            for fields, ctx in zip(items, ctxs, strict=True)
        ]
        return run_coro(lambda: self._arun(reqs, progress))

    def judge_pairs(self, items: Sequence[Mapping[str, Any]], progress: ProgressFn | None = None
                    ) -> list[JudgeVerdict]:
        """Pairwise preference verdicts in the order shown, one per item (prompt ``pairwise_preference``).

        Each item maps ``query``, ``context`` (may be None), ``first`` and ``second`` (the two responses in the order
        the judge sees them). Score 1: the first is better, 0: the second, 0.5: equal. For position-bias control
        run both orders (:func:`agentstats.calibration.pairwise_judge`).
        """
        return run_coro(lambda: self.ajudge_pairs(items, progress))

    async def ajudge_pairs(self, items: Sequence[Mapping[str, Any]], progress: ProgressFn | None = None
                           ) -> list[JudgeVerdict]:
        """Async form of :meth:`judge_pairs`."""
        reqs: list[PromptCall | JudgeVerdict] = []
        for it in items:
            fields = {f: "(none)" if it.get(f) is None else str(it.get(f)) for f in ("query", "context", "first",
                                                                                     "second")}
            reqs.append(self._request("pairwise_preference", fields, None))
        return await self._arun(reqs, progress)

    # -- the adapter ---------------------------------------------------------------------------------------
    def _request(self, metric: str, fields: dict[str, str], context: dict[str, Any] | None) -> PromptCall:
        try:
            prompt = self.prompts[metric]
        except KeyError:
            raise JudgeConfigError(f"no prompt for metric {metric!r}") from None
        return PromptCall(prompt, fields, RESPONSE_MODELS[metric], context, tag=metric)

    async def _arun(self, reqs: Sequence[PromptCall | JudgeVerdict], progress: ProgressFn | None
                    ) -> list[JudgeVerdict]:
        """Verdicts in the order of ``reqs``: given verdicts as they are, calls through the client's batch."""
        t0 = time.perf_counter()
        self.stats.requested += len(reqs)
        calls = [r for r in reqs if isinstance(r, PromptCall)]
        for r in reqs:
            if isinstance(r, JudgeVerdict):
                self.stats.add(r)
        try:
            batch = await self.client.batch(
                self.endpoint, calls, temperature=self.temperature, mode=self.mode, max_retries=self.max_retries,
                store=lambda call, ex: self._verdict(call, ex).model_dump(exclude={"cached", "key"}),
                claim_poll_s=self.claim_poll_s, breaker_after=self.breaker_after, progress=progress,
                given=len(reqs) - len(calls), total=len(reqs))
        finally:
            self.stats.wall_s += time.perf_counter() - t0
        judged = iter(self._verdicts(batch))
        out = [r if isinstance(r, JudgeVerdict) else next(judged) for r in reqs]
        auth = batch.breaker.auth
        if auth is not None:
            got = sum(1 for v in out if v.ok)
            raise JudgeAuthError(
                f"the judge endpoint {self.endpoint.address()} refused the credentials ({auth.error_kind}: "
                f"{auth.error}); check the key in ${self.api_key_env}. No further request was sent; "
                f"{got} verdict(s) obtained before are cached."
            )
        return out

    def _verdicts(self, batch: BatchResult) -> list[JudgeVerdict]:
        """One verdict per outcome; counts the batch in :attr:`stats`."""
        self.stats.cache_hits += batch.cache_hits
        self.stats.shared += batch.shared
        self.stats.deduplicated += batch.deduplicated
        out: list[JudgeVerdict] = []
        first: dict[str, JudgeVerdict] = {}
        for o in batch.outcomes:
            if o.duplicate:
                # duplicates share the verdict but not its cost: the request was made once
                v = first[o.key]
                out.append(v.model_copy(update={"n_requests": 0, "cost_usd": 0.0 if v.cost_usd is not None else None}))
                continue
            v = self._settled(o)
            first[o.key] = v
            out.append(v)
        return out

    def _settled(self, o: Outcome) -> JudgeVerdict:
        if o.exchange is None:
            assert o.payload is not None
            return _from_cache(o.payload, o.key)
        v = self._verdict(o.call, o.exchange, o.key)
        self.stats.add(v)
        return v

    def _verdict(self, call: PromptCall, ex: Exchange, key: str | None = None) -> JudgeVerdict:
        """Return the verdict of one live call: the reply's score, reasoning and details, or why it is missing."""
        p = call.prompt
        ident: dict[str, Any] = {"metric": call.tag, "judge": self.name, "model": self.model, "prompt_name": p.name,
                                 "prompt_version": p.version, "prompt_hash": p.text_hash, "key": key}
        if ex.not_sent is not None:
            return JudgeVerdict.model_validate({**ident, "status": "judge_missing", "error": ex.error,
                                                "error_kind": "not_sent"})
        common: dict[str, Any] = {
            **ident, "prompt_tokens": ex.prompt_tokens, "completion_tokens": ex.completion_tokens,
            "latency_s": ex.latency_s, "cost_usd": ex.cost_usd, "n_requests": ex.n_requests, "attempts": ex.attempts,
            "retry_waits_s": ex.retry_waits_s,
        }
        if not ex.ok:
            return JudgeVerdict.model_validate({**common, "status": "judge_missing", "error": ex.error,
                                                "error_kind": ex.error_kind})
        data = ex.parsed.model_dump()
        score = float(data.pop("score"))
        reasoning = data.pop("reasoning")
        return JudgeVerdict.model_validate({**common, "status": "ok", "score": score, "reasoning": reasoning,
                                            "details": data})

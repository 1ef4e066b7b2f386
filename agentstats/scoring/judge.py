"""Judges: turn (answer, reference) pairs and tool calls into scored verdicts.

Two implementations share one interface (:class:`Judge`):

* :class:`DeterministicJudge` scores answers with :func:`agentstats.scoring.answers.match_answer` (exact,
  normalized text, numeric, token F1, contains). No network, no cost.
* :class:`OpenAIJudge` asks a model behind any OpenAI-compatible endpoint through ``instructor`` + ``openai``.
  The model must return a pydantic verdict (:class:`Verdict`: ``score`` in [0, 1] and ``reasoning``), which
  instructor validates and, when invalid, re-asks with the validation error fed back (``max_retries``). The same
  machinery scores tool calls for relevance (:class:`ToolRelevanceVerdict`) and parameter grounding
  (:class:`ParameterGroundingVerdict`), the LLM-judged tool metrics of IBM watsonx.governance.

What every LLM verdict records (:class:`JudgeVerdict`): the prompt's name, version and text hash, the model,
prompt/completion tokens summed over every HTTP request the verdict took (re-asks and retries included),
wall-clock latency, cost from a per-model price table (``None`` for an unknown model), the number of requests
and the backoff waits.

Failures are never scores. Timeouts, connection errors, HTTP 429 and 5xx, and truncated output
(``finish_reason == "length"``) are retried with exponential backoff (tenacity), honouring ``Retry-After`` /
``retry-after-ms`` when the server sends one; output that does not validate (malformed JSON arguments, a score
outside [0, 1], no tool call in TOOLS mode) is re-asked by instructor. When all that is spent the verdict is
``status="judge_missing"`` with ``score=None`` and the error: :func:`agentstats.scoring.outcomes.score_trials`
makes such a trial *missing* (excluded from counts, reported), never a failure.

Judge calls run concurrently under an ``asyncio.Semaphore`` (``concurrency``), and every successful verdict is
written to an on-disk cache (:class:`agentstats.scoring.cache.JudgeCache`) the moment it arrives, keyed by
(model, prompt id, response schema, temperature, mode, inputs): a rerun costs no calls and a run killed halfway
resumes where it stopped. Identical requests within one batch are sent once.

API keys come from the environment only (``api_key_env``, default ``OPENAI_API_KEY``). A missing key is an
error, except for a loopback ``base_url`` (``127.0.0.1``, ``localhost``, ``::1``): local OpenAI-compatible
servers (vLLM, llama.cpp, Ollama, the test server) ignore the key, so a placeholder is sent.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import email.utils
import json
import os
import random
import time
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlparse

import instructor
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from agentstats.schema import ToolCall, ToolSpec
from agentstats.scoring.cache import JudgeCache, cache_key, canonical_json
from agentstats.scoring.prompts import PROMPTS, PromptTemplate

__all__ = [
    "DEFAULT_PRICES",
    "AnswerItem",
    "DeterministicJudge",
    "Judge",
    "JudgeConfigError",
    "JudgeStats",
    "JudgeVerdict",
    "OpenAIJudge",
    "ParameterGroundingVerdict",
    "ToolCallItem",
    "ToolRelevanceVerdict",
    "Verdict",
    "cost_usd",
    "resolve_judge",
    "verdicts_frame",
]

JudgeStatus = Literal["ok", "judge_missing"]
ToolMetric = Literal["tool_call_relevance", "parameter_grounding"]

#: List prices in US dollars per 1M tokens ``(input, output)``, as published on openai.com/api/pricing in 2025.
#: Prices change: pass ``prices=`` to :class:`OpenAIJudge` for your provider. A model not found (exactly, or by
#: the longest ``name-`` prefix, so ``gpt-4o-2024-08-06`` uses ``gpt-4o``) gets ``cost_usd=None``, never 0.
DEFAULT_PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "o3-mini": (1.10, 4.40),
}


class JudgeConfigError(ValueError):
    """The judge cannot be set up (no API key, unknown mode or prompt)."""


# ---------------------------------------------------------------------------------------------------------
# What the judge model must return (instructor response models)
# ---------------------------------------------------------------------------------------------------------
class Verdict(BaseModel):
    """The judge model's verdict on one answer: a score in [0, 1] and the reasoning behind it."""

    model_config = ConfigDict(extra="forbid")

    score: float = Field(ge=0.0, le=1.0, allow_inf_nan=False, description="Correctness score from 0 to 1.")
    reasoning: str = Field(min_length=1, description="One or two sentences naming the deciding fact.")


class ToolRelevanceVerdict(Verdict):
    """Verdict on whether a tool call is relevant to the request (IBM watsonx.governance tool call relevance).

    ``better_tool`` must name one of the offered tools (checked against the validation context ``tool_names``,
    so an invented name is re-asked).
    """

    score: float = Field(ge=0.0, le=1.0, allow_inf_nan=False, description="Relevance of the tool call, 0 to 1.")
    better_tool: str | None = Field(default=None, description="An offered tool that fits better, or null.")

    @field_validator("better_tool")
    @classmethod
    def _offered(cls, v: str | None, info: ValidationInfo) -> str | None:
        names = (info.context or {}).get("tool_names")
        if v is not None and names and v not in names:
            raise ValueError(f"better_tool must be one of the offered tools {sorted(names)} or null, got {v!r}")
        return v


class ParameterGroundingVerdict(Verdict):
    """Verdict on whether a tool call's argument values are grounded in the conversation.

    ``ungrounded_parameters`` must be argument names of the graded call (checked against the validation
    context ``argument_names``, so an invented name is re-asked).
    """

    score: float = Field(ge=0.0, le=1.0, allow_inf_nan=False, description="Share of grounded arguments, 0 to 1.")
    ungrounded_parameters: list[str] = Field(default_factory=list, description="Names of ungrounded arguments.")

    @field_validator("ungrounded_parameters")
    @classmethod
    def _known(cls, v: list[str], info: ValidationInfo) -> list[str]:
        names = (info.context or {}).get("argument_names")
        if names is not None:
            unknown = [p for p in v if p not in names]
            if unknown:
                raise ValueError(f"{unknown} are not arguments of the call; its arguments are {sorted(names)}")
        return v


_RESPONSE_MODELS: dict[str, type[Verdict]] = {
    "answer_correctness": Verdict,
    "tool_call_relevance": ToolRelevanceVerdict,
    "parameter_grounding": ParameterGroundingVerdict,
}


# ---------------------------------------------------------------------------------------------------------
# What a judge returns
# ---------------------------------------------------------------------------------------------------------
class JudgeVerdict(BaseModel):
    """One verdict with its provenance. ``status="judge_missing"`` means no verdict: ``score`` is ``None``.

    Attributes
    ----------
    metric : str
        ``"answer_correctness"``, ``"tool_call_relevance"`` or ``"parameter_grounding"``.
    status : {"ok", "judge_missing"}
    score : float or None
        In [0, 1]; ``None`` when missing.
    reasoning : str or None
    details : dict
        Extra verdict fields (``better_tool``, ``ungrounded_parameters``, the matcher's notes).
    error, error_kind : str or None
        Why the verdict is missing. Kinds: ``timeout``, ``connection``, ``rate_limit``, ``server_error``,
        ``truncated``, ``invalid_output``, ``http_<status>``, ``error``.
    judge : str
        ``"openai:<model>"`` or ``"deterministic:<matcher>"``.
    model, prompt_name, prompt_version, prompt_hash : str or None
    prompt_tokens, completion_tokens : int or None
        Summed over every HTTP request of this verdict (re-asks, retries); ``None`` when not reported.
    latency_s : float or None
        Wall-clock seconds from first request to verdict, backoff waits included (queueing excluded).
    cost_usd : float or None
        From the price table; ``None`` for an unknown model. For a cached verdict, tokens, latency and cost are
        those of the call that produced it (this run spent nothing on it: see ``cached``).
    n_requests : int
        HTTP requests sent for this verdict (0 for cached and deterministic verdicts).
    attempts : int
        Transport-level attempts (tenacity); instructor re-asks happen inside one attempt.
    retry_waits_s : list of float
        The backoff waits taken, in order (a ``Retry-After`` value when the server gave one).
    cached : bool
        Served from the on-disk cache (this run made no request for it).
    key : str or None
        Cache key.
    """

    model_config = ConfigDict(extra="forbid")

    metric: str
    status: JudgeStatus
    score: float | None = None
    reasoning: str | None = None
    details: dict[str, Any] = Field(default_factory=dict)
    error: str | None = None
    error_kind: str | None = None
    judge: str
    model: str | None = None
    prompt_name: str | None = None
    prompt_version: str | None = None
    prompt_hash: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_s: float | None = None
    cost_usd: float | None = None
    n_requests: int = 0
    attempts: int = 0
    retry_waits_s: list[float] = Field(default_factory=list)
    cached: bool = False
    key: str | None = None

    @property
    def ok(self) -> bool:
        """True when the verdict exists (``status == "ok"``)."""
        return self.status == "ok"


@dataclass
class JudgeStats:
    """Counts over all batches a judge has run (reset with :meth:`reset`).

    ``requested`` verdicts = ``cache_hits`` + ``deduplicated`` + ``computed``; ``computed`` = ``ok_live`` +
    ``missing``. Tokens and cost cover live requests only (cached verdicts cost nothing now).
    """

    requested: int = 0
    cache_hits: int = 0
    deduplicated: int = 0
    computed: int = 0
    ok_live: int = 0
    missing: int = 0
    http_requests: int = 0
    missing_by_kind: Counter = field(default_factory=Counter)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = 0.0
    wall_s: float = 0.0

    def add(self, v: JudgeVerdict) -> None:
        """Count one live (computed) verdict."""
        self.computed += 1
        self.http_requests += v.n_requests
        if v.ok:
            self.ok_live += 1
        else:
            self.missing += 1
            self.missing_by_kind[v.error_kind or "error"] += 1
        self.prompt_tokens += v.prompt_tokens or 0
        self.completion_tokens += v.completion_tokens or 0
        if v.n_requests and (v.cost_usd is None or self.cost_usd is None):
            self.cost_usd = None
        elif v.cost_usd is not None and self.cost_usd is not None:
            self.cost_usd += v.cost_usd

    def reset(self) -> None:
        """Zero every count."""
        self.__init__()  # type: ignore[misc]

    def as_dict(self) -> dict[str, Any]:
        """Plain dict (``missing_by_kind`` as a dict)."""
        d = dict(self.__dict__)
        d["missing_by_kind"] = dict(self.missing_by_kind)
        return d


# ---------------------------------------------------------------------------------------------------------
# Items to judge
# ---------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AnswerItem:
    """One answer to grade against a reference.

    Parameters
    ----------
    answer : str or None
        The agent's answer (``None``: no answer given, which scores 0 and is not a judge failure).
    expected : Any
        The reference answer; a list means "any of these".
    query : str, optional
    context : sequence of str, optional
    """

    answer: str | None
    expected: Any
    query: str | None = None
    context: Sequence[str] = ()

    def fields(self) -> dict[str, str]:
        """Prompt field values (``query, context, expected, answer``)."""
        ctx = "\n---\n".join(str(c) for c in self.context) if self.context else "(none)"
        return {
            "query": self.query or "(not given)",
            "context": ctx,
            "expected": _expected_text(self.expected),
            "answer": self.answer if self.answer is not None else "(no answer)",
        }


@dataclass(frozen=True)
class ToolCallItem:
    """One tool call to grade (relevance or parameter grounding).

    Parameters
    ----------
    call : ToolCall
        The call the agent made.
    conversation : str
        The conversation up to the call, as text (user turns, earlier answers and tool results).
    tools : sequence of ToolSpec
        The tools the agent was offered.
    """

    call: ToolCall
    conversation: str
    tools: Sequence[ToolSpec] = ()

    def call_text(self) -> str:
        """Return the call as canonical JSON (raw arguments when they did not parse)."""
        args = self.call.arguments if self.call.parse_error is None else self.call.arguments_raw
        return canonical_json({"name": self.call.name, "arguments": args})

    def fields(self, metric: str) -> dict[str, str]:
        """Prompt field values for ``metric``."""
        if metric == "tool_call_relevance":
            tools = [{"name": t.name, "description": t.description} for t in self.tools]
            return {
                "conversation": self.conversation or "(empty)",
                "tools": canonical_json(tools) if tools else "(not recorded)",
                "call": self.call_text(),
            }
        spec = next((t for t in self.tools if t.name == self.call.name), None)
        return {
            "conversation": self.conversation or "(empty)",
            "tool_spec": canonical_json(spec.model_dump(include={"name", "description", "parameters"}))
            if spec
            else "(not recorded)",
            "call": self.call_text(),
        }

    def context(self, metric: str) -> dict[str, Any]:
        """Return the validation context for the verdict schema."""
        if metric == "tool_call_relevance":
            return {"tool_names": [t.name for t in self.tools]}
        args = self.call.arguments if isinstance(self.call.arguments, dict) else {}
        return {"argument_names": list(args)}


def _expected_text(expected: Any) -> str:
    if expected is None:
        return "(none)"
    if isinstance(expected, str):
        return expected
    if isinstance(expected, (list, tuple)):
        return "Any of:\n" + "\n".join(f"- {_expected_text(e)}" for e in expected)
    return canonical_json(expected)


# ---------------------------------------------------------------------------------------------------------
# Judges
# ---------------------------------------------------------------------------------------------------------
ProgressFn = Callable[[int, int], None]


class Judge(ABC):
    """Interface of a judge. Any object with these methods works in :func:`score_trials`.

    Attributes
    ----------
    name : str
        Short description, recorded with each verdict (``judge`` field).
    stats : JudgeStats
        Counts over the judge's lifetime.
    supports_tool_metrics : bool
        Whether :meth:`judge_tool_calls` is implemented.
    """

    name: str = "judge"
    supports_tool_metrics: bool = False

    def __init__(self) -> None:
        self.stats = JudgeStats()

    @abstractmethod
    def judge_answers(self, items: Sequence[AnswerItem], progress: ProgressFn | None = None) -> list[JudgeVerdict]:
        """One verdict per item, in order (``metric="answer_correctness"``)."""

    def judge_tool_calls(
        self,
        items: Sequence[ToolCallItem],
        metric: ToolMetric = "tool_call_relevance",
        progress: ProgressFn | None = None,
    ) -> list[JudgeVerdict]:
        """One verdict per tool call, in order, for ``metric``.

        Raises
        ------
        NotImplementedError
            For judges without LLM tool metrics (the deterministic one: use
            :func:`agentstats.scoring.tools.score_tool_calls` for deterministic tool scoring).
        """
        raise NotImplementedError(f"{type(self).__name__} does not judge tool calls ({metric})")


class DeterministicJudge(Judge):
    """Answer correctness by a deterministic matcher (no model, no cost).

    Parameters
    ----------
    matcher : str
        Passed to :func:`agentstats.scoring.answers.match_answer` (``"exact"``, ``"normalized"``,
        ``"numeric"``, ``"token_f1"``, ``"contains"``).
    **matcher_kwargs
        Further keyword arguments for ``match_answer`` (e.g. a numeric tolerance).

    Notes
    -----
    An interaction without an answer (``answer is None``) scores 0: the agent did not answer. That is a
    verdict, not a judge failure.
    """

    supports_tool_metrics = False

    def __init__(self, matcher: str = "auto", **matcher_kwargs: Any):
        super().__init__()
        self.matcher = matcher
        self.matcher_kwargs = matcher_kwargs
        self.name = f"deterministic:{matcher}"

    def judge_answers(self, items: Sequence[AnswerItem], progress: ProgressFn | None = None) -> list[JudgeVerdict]:
        """Score answers with the deterministic matcher (one verdict per item, in order)."""
        from agentstats.scoring.answers import match_answer

        t0 = time.perf_counter()
        out: list[JudgeVerdict] = []
        for i, it in enumerate(items):
            if it.answer is None:
                v = JudgeVerdict(metric="answer_correctness", status="ok", score=0.0, reasoning="no answer given",
                                 judge=self.name)
            else:
                m = match_answer(it.answer, it.expected, matcher=self.matcher, **self.matcher_kwargs)
                details = {}
                for attr in ("matcher", "matched", "notes", "rules"):
                    val = getattr(m, attr, None)
                    if val not in (None, [], ()):
                        details[attr] = val if isinstance(val, (str, int, float, bool)) else str(val)
                v = JudgeVerdict(metric="answer_correctness", status="ok", score=float(m.score),
                                 reasoning=getattr(m, "reason", None) or getattr(m, "reasoning", None),
                                 details=details, judge=self.name)
            out.append(v)
            self.stats.requested += 1
            self.stats.add(v)
            if progress:
                progress(i + 1, len(items))
        self.stats.wall_s += time.perf_counter() - t0
        return out


def resolve_judge(
    judge: Judge | str | None,
    matcher: str = "auto",
    *,
    model: str | None = None,
    base_url: str | None = None,
    **judge_kwargs: Any,
) -> Judge:
    """``None`` / ``"deterministic"`` → :class:`DeterministicJudge(matcher)`; a :class:`Judge` passes through.

    ``"openai"`` builds ``OpenAIJudge(model=model or $AGENTSTATS_JUDGE_MODEL or "gpt-4o-mini",
    base_url=base_url or $OPENAI_BASE_URL, **judge_kwargs)``.

    Raises
    ------
    ValueError
        For an unknown name.
    """
    if judge is None or judge == "deterministic":
        return DeterministicJudge(matcher)
    if isinstance(judge, str):
        if judge == "openai":
            return OpenAIJudge(
                model=model or os.environ.get("AGENTSTATS_JUDGE_MODEL", "gpt-4o-mini"),
                base_url=base_url or os.environ.get("OPENAI_BASE_URL"),
                **judge_kwargs,
            )
        raise ValueError(f"unknown judge {judge!r}; use None, 'deterministic', 'openai' or a Judge instance")
    if not callable(getattr(judge, "judge_answers", None)):
        raise TypeError(f"judge must be None, a name or an object with judge_answers(), got {type(judge).__name__}")
    return judge


def cost_usd(model: str, prompt_tokens: int | None, completion_tokens: int | None,
             prices: Mapping[str, tuple[float, float]] = DEFAULT_PRICES) -> float | None:
    """Cost in US dollars of a call: ``(prompt_tokens * in + completion_tokens * out) / 1e6``.

    ``prices`` maps a model name to ``(input, output)`` USD per 1M tokens; lookup is exact, then by the longest
    prefix ``p`` with ``model.startswith(p + "-")``. Unknown model or unknown token counts → ``None``.
    """
    if prompt_tokens is None or completion_tokens is None:
        return None
    price = prices.get(model)
    if price is None:
        cands = [p for p in prices if model.startswith(p + "-")]
        if cands:
            price = prices[max(cands, key=len)]
    if price is None:
        return None
    return (prompt_tokens * price[0] + completion_tokens * price[1]) / 1e6


def _is_loopback(base_url: str) -> bool:
    host = (urlparse(base_url).hostname or "").lower()
    return host in ("127.0.0.1", "localhost", "::1") or host.startswith("127.")


def _retry_after_s(exc: BaseException) -> float | None:
    """Seconds the server asked us to wait (``retry-after-ms`` or ``Retry-After``: seconds or an HTTP date)."""
    resp = getattr(exc, "response", None)
    headers = getattr(resp, "headers", None)
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return max(float(ms) / 1000.0, 0.0)
        except ValueError:
            pass
    ra = headers.get("retry-after")
    if ra is None:
        return None
    try:
        return max(float(ra), 0.0)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(ra)
        except (TypeError, ValueError):
            return None
        return max(when.timestamp() - time.time(), 0.0)


def _classify(exc: BaseException) -> tuple[str, bool]:
    """``(error_kind, retryable)`` for an exception raised by one judge attempt."""
    import openai
    from instructor.core.exceptions import IncompleteOutputException, InstructorRetryException

    if isinstance(exc, (asyncio.TimeoutError, openai.APITimeoutError)):
        return "timeout", True
    if isinstance(exc, openai.APIConnectionError):
        return "connection", True
    if isinstance(exc, openai.RateLimitError):
        return "rate_limit", True
    if isinstance(exc, openai.APIStatusError):
        code = exc.status_code
        if code >= 500:
            return "server_error", True
        if code in (408, 409):
            return f"http_{code}", True
        return f"http_{code}", False
    if isinstance(exc, (IncompleteOutputException, openai.LengthFinishReasonError)):
        return "truncated", True
    if isinstance(exc, InstructorRetryException):
        return "invalid_output", False
    if isinstance(exc, openai.APIResponseValidationError):
        return "invalid_output", False
    return "error", False


def _unwrap(exc: BaseException) -> BaseException:
    """Instructor wraps transport errors in InstructorRetryException; return the transport error when so."""
    import openai
    from instructor.core.exceptions import IncompleteOutputException, InstructorRetryException

    seen = 0
    while isinstance(exc, InstructorRetryException) and seen < 5:
        cause = exc.__cause__
        if isinstance(cause, (openai.APIError, IncompleteOutputException, asyncio.TimeoutError)):
            exc = cause
        else:
            break
        seen += 1
    return exc


def _run_coro(factory: Callable[[], Any]) -> Any:
    """Run ``factory()``'s coroutine to completion, also from inside a running event loop (Jupyter)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(factory())
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as ex:
        return ex.submit(lambda: asyncio.run(factory())).result()


@dataclass
class _Request:
    metric: str
    prompt: PromptTemplate
    fields: dict[str, str]
    response_model: type[Verdict]
    context: dict[str, Any] | None
    key: str


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
        Replacement :class:`PromptTemplate` per metric name.
    max_tokens : int, optional
        Completion token cap sent with each request.
    jitter_seed : int, optional
        Seed of the backoff jitter's random generator (reproducible waits in tests).

    Raises
    ------
    JudgeConfigError
        When the API key variable is unset and ``base_url`` is not a loopback address, or ``mode`` is unknown.

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
    ):
        super().__init__()
        if concurrency < 1:
            raise JudgeConfigError(f"concurrency must be >= 1, got {concurrency}")
        if retry_attempts < 1:
            raise JudgeConfigError(f"retry_attempts must be >= 1, got {retry_attempts}")
        self.model = model
        self.base_url = base_url if base_url is not None else os.environ.get("OPENAI_BASE_URL")
        self.api_key_env = api_key_env
        self._api_key = self._resolve_key()
        self.temperature = float(temperature)
        if isinstance(mode, str):
            try:
                mode = instructor.Mode[mode.upper()]
            except KeyError:
                raise JudgeConfigError(f"unknown instructor mode {mode!r}") from None
        self.mode = mode
        self.max_retries = int(max_retries)
        self.retry_attempts = int(retry_attempts)
        self.timeout = float(timeout)
        self.backoff_base_s = float(backoff_base_s)
        self.backoff_max_s = float(backoff_max_s)
        self.concurrency = int(concurrency)
        self.prices = dict(DEFAULT_PRICES if prices is None else prices)
        self.prompts = {**PROMPTS, **(dict(prompts) if prompts else {})}
        self.max_tokens = max_tokens
        self._rng = random.Random(jitter_seed)
        self.name = f"openai:{model}"
        if cache_dir is False:
            self.cache: JudgeCache | None = None
        else:
            self.cache = JudgeCache(cache_dir if cache_dir is not None else _default_cache_dir())

    def _resolve_key(self) -> str:
        key = os.environ.get(self.api_key_env)
        if key:
            return key
        if self.base_url and _is_loopback(self.base_url):
            return "local-server-ignores-keys"
        where = self.base_url or "api.openai.com"
        raise JudgeConfigError(
            f"the LLM judge needs an API key for {where}: set the environment variable {self.api_key_env} "
            "(keys are read from the environment only; a loopback base_url needs none)"
        )

    def __repr__(self) -> str:
        return f"OpenAIJudge(model={self.model!r}, base_url={self.base_url!r}, mode={self.mode}, cache={self.cache})"

    # -- public API ----------------------------------------------------------------------------------------
    def judge_answers(self, items: Sequence[AnswerItem], progress: ProgressFn | None = None) -> list[JudgeVerdict]:
        """Answer-correctness verdicts, one per item, in order (see :class:`OpenAIJudge`)."""
        return _run_coro(lambda: self.ajudge_answers(items, progress))

    async def ajudge_answers(self, items: Sequence[AnswerItem], progress: ProgressFn | None = None
                             ) -> list[JudgeVerdict]:
        """Async form of :meth:`judge_answers`."""
        reqs: list[_Request | JudgeVerdict] = []
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
        return _run_coro(lambda: self.ajudge_tool_calls(items, metric, progress))

    async def ajudge_tool_calls(self, items: Sequence[ToolCallItem], metric: ToolMetric = "tool_call_relevance",
                                progress: ProgressFn | None = None) -> list[JudgeVerdict]:
        """Async form of :meth:`judge_tool_calls`."""
        if metric not in ("tool_call_relevance", "parameter_grounding"):
            raise ValueError(f"unknown tool metric {metric!r}; use 'tool_call_relevance' or 'parameter_grounding'")
        reqs = [self._request(metric, it.fields(metric), it.context(metric)) for it in items]
        return await self._arun(reqs, progress)

    # -- machinery -----------------------------------------------------------------------------------------
    def _request(self, metric: str, fields: dict[str, str], context: dict[str, Any] | None) -> _Request:
        try:
            prompt = self.prompts[metric]
        except KeyError:
            raise JudgeConfigError(f"no prompt for metric {metric!r}") from None
        rm = _RESPONSE_MODELS[metric]
        key = cache_key(self.model, prompt.id, fields, schema=rm.__name__, temperature=self.temperature,
                        mode=str(self.mode.value), max_tokens=self.max_tokens)
        return _Request(metric, prompt, fields, rm, context, key)

    def _client(self) -> Any:
        import openai

        client = openai.AsyncOpenAI(api_key=self._api_key, base_url=self.base_url, max_retries=0,
                                    timeout=self.timeout)
        return client, instructor.from_openai(client, mode=self.mode)

    async def _arun(self, reqs: Sequence[_Request | JudgeVerdict], progress: ProgressFn | None) -> list[JudgeVerdict]:
        t0 = time.perf_counter()
        n = len(reqs)
        results: list[JudgeVerdict | None] = [None] * n
        self.stats.requested += n
        todo: dict[str, list[int]] = {}
        live_keys = [r.key for r in reqs if isinstance(r, _Request)]
        cached = self.cache.get_many(live_keys) if (self.cache is not None and live_keys) else {}
        done = 0
        for i, r in enumerate(reqs):
            if isinstance(r, JudgeVerdict):
                results[i] = r
                self.stats.add(r)
                done += 1
            elif r.key in cached:
                results[i] = JudgeVerdict(**{**cached[r.key], "cached": True, "n_requests": 0, "key": r.key})
                self.stats.cache_hits += 1
                done += 1
            elif r.key in todo:
                todo[r.key].append(i)
                self.stats.deduplicated += 1
            else:
                todo[r.key] = [i]
        if progress and done:
            progress(done, n)
        if todo:
            client, ic = self._client()
            sem = asyncio.Semaphore(self.concurrency)

            async def work(idxs: list[int]) -> None:
                nonlocal done
                req = reqs[idxs[0]]
                assert isinstance(req, _Request)
                async with sem:
                    v = await self._verdict(ic, req)
                if v.ok and self.cache is not None:
                    payload = v.model_dump(exclude={"cached", "key"})
                    self.cache.put(req.key, payload, model=self.model, prompt_id=req.prompt.id)
                self.stats.add(v)
                for j, i in enumerate(idxs):
                    # duplicates share the verdict but not its cost: the request was made once
                    results[i] = v if j == 0 else v.model_copy(update={"n_requests": 0, "cost_usd": 0.0
                                                                        if v.cost_usd is not None else None})
                done += len(idxs)
                if progress:
                    progress(done, n)

            try:
                await asyncio.gather(*(work(idxs) for idxs in todo.values()))
            finally:
                await client.close()
        self.stats.wall_s += time.perf_counter() - t0
        return [r for r in results if r is not None]

    def _wait_s(self, attempt: int, exc: BaseException | None) -> float:
        if exc is not None:
            ra = _retry_after_s(exc)
            if ra is not None:
                return min(ra, self.backoff_max_s)
        cap = min(self.backoff_max_s, self.backoff_base_s * (2 ** (attempt - 1)))
        return self._rng.uniform(0.0, cap)

    async def _verdict(self, ic: Any, req: _Request) -> JudgeVerdict:
        from instructor.core.hooks import Hooks
        from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt

        counter = {"requests": 0, "prompt_tokens": 0, "completion_tokens": 0, "usage_missing": False}

        def on_kwargs(*_a: Any, **_k: Any) -> None:
            counter["requests"] += 1

        def on_response(response: Any, *_a: Any, **_k: Any) -> None:
            usage = getattr(response, "usage", None)
            if usage is None or getattr(usage, "prompt_tokens", None) is None:
                counter["usage_missing"] = True
                return
            counter["prompt_tokens"] += int(usage.prompt_tokens or 0)
            counter["completion_tokens"] += int(usage.completion_tokens or 0)

        hooks = Hooks()
        hooks.on("completion:kwargs", on_kwargs)
        hooks.on("completion:response", on_response)
        waits: list[float] = []

        def wait(rs: Any) -> float:
            exc = rs.outcome.exception() if rs.outcome is not None else None
            return self._wait_s(rs.attempt_number, exc)

        def before_sleep(rs: Any) -> None:  # tenacity computes a wait after the last attempt too: log only sleeps
            waits.append(float(rs.upcoming_sleep))

        def retryable(exc: BaseException) -> bool:
            return _classify(exc)[1]

        extra: dict[str, Any] = {}
        if self.max_tokens is not None:
            extra["max_tokens"] = self.max_tokens
        messages = req.prompt.render(**req.fields)
        attempts = 0
        t0 = time.perf_counter()
        parsed: Verdict | None = None
        error: BaseException | None = None
        try:
            async for attempt in AsyncRetrying(stop=stop_after_attempt(self.retry_attempts), wait=wait,
                                               retry=retry_if_exception(retryable), reraise=True,
                                               before_sleep=before_sleep):
                with attempt:
                    attempts += 1
                    try:
                        parsed = await ic.chat.completions.create(
                            model=self.model,
                            messages=messages,
                            response_model=req.response_model,
                            max_retries=self.max_retries,
                            context=req.context,
                            temperature=self.temperature,
                            timeout=self.timeout,
                            hooks=hooks,
                            **extra,
                        )
                    except Exception as exc:
                        inner = _unwrap(exc)  # (usage of failed completions is already counted by the hook)
                        if inner is not exc:
                            raise inner from exc
                        raise
        except Exception as exc:
            error = exc
        latency = time.perf_counter() - t0
        pt: int | None = None if counter["usage_missing"] and not counter["prompt_tokens"] else counter["prompt_tokens"]
        ct: int | None = None if pt is None else counter["completion_tokens"]
        if counter["requests"] == 0:
            pt = ct = None
        common = dict(
            metric=req.metric, judge=self.name, model=self.model, prompt_name=req.prompt.name,
            prompt_version=req.prompt.version, prompt_hash=req.prompt.text_hash, prompt_tokens=pt,
            completion_tokens=ct, latency_s=latency, cost_usd=cost_usd(self.model, pt, ct, self.prices),
            n_requests=counter["requests"], attempts=attempts, retry_waits_s=waits, key=req.key,
        )
        if error is not None or parsed is None:
            kind, _ = _classify(error) if error is not None else ("error", False)
            msg = f"{type(error).__name__}: {error}" if error is not None else "no verdict returned"
            return JudgeVerdict(status="judge_missing", error=_clip(msg), error_kind=kind, **common)
        data = parsed.model_dump()
        score = float(data.pop("score"))
        reasoning = data.pop("reasoning")
        return JudgeVerdict(status="ok", score=score, reasoning=reasoning, details=data, **common)


def _clip(text: str, width: int = 500) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


def verdicts_frame(verdicts: Sequence[JudgeVerdict]):
    """Verdicts as a pandas DataFrame, one row each (``details`` as a JSON string)."""
    import pandas as pd

    rows = []
    for v in verdicts:
        d = v.model_dump()
        d["details"] = json.dumps(d["details"], sort_keys=True, default=str) if d["details"] else None
        d["retry_waits_s"] = sum(d["retry_waits_s"]) if d["retry_waits_s"] else 0.0
        rows.append(d)
    return pd.DataFrame.from_records(rows)


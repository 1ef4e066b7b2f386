"""What a judge returns, and what it is asked: verdict types, run counts, the items to judge.

:class:`JudgeVerdict` is one verdict with its provenance (prompt, model, tokens, cost, latency, retries, cache);
:class:`JudgeStats` counts a judge's verdicts, requests and failures; :class:`AnswerItem` and :class:`ToolCallItem`
are the two kinds of item a judge grades. The instructor response models (:class:`Verdict` and its tool-metric
forms) are what the judge *model* must return.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from agentstats.llm.cache import canonical_json
from agentstats.records.trial import ToolCall, ToolSpec

__all__ = [
    "RESPONSE_MODELS",
    "AnswerItem",
    "JudgeStats",
    "JudgeStatus",
    "JudgeVerdict",
    "ParameterGroundingVerdict",
    "ToolCallItem",
    "ToolMetric",
    "ToolRelevanceVerdict",
    "Verdict",
    "verdicts_frame",
]

JudgeStatus = Literal["ok", "judge_missing"]
ToolMetric = Literal["tool_call_relevance", "parameter_grounding"]


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


RESPONSE_MODELS: dict[str, type[Verdict]] = {
    "answer_correctness": Verdict,
    "tool_call_relevance": ToolRelevanceVerdict,
    "parameter_grounding": ParameterGroundingVerdict,
    "pairwise_preference": Verdict,
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
    ``missing``. ``cache_hits`` include ``shared``: verdicts another process computed while this one waited for
    its claim (see :class:`agentstats.llm.cache.JudgeCache`). ``missing_by_kind`` counts the missing
    verdicts by error kind, ``not_sent`` being those never asked for (the endpoint was unreachable). Tokens and
    cost cover live requests only (cached verdicts cost nothing now).
    """

    requested: int = 0
    cache_hits: int = 0
    shared: int = 0
    deduplicated: int = 0
    computed: int = 0
    ok_live: int = 0
    missing: int = 0
    http_requests: int = 0
    missing_by_kind: Counter[str] = field(default_factory=Counter)
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


def verdicts_frame(verdicts: Sequence[JudgeVerdict]) -> pd.DataFrame:
    """Verdicts as a pandas DataFrame, one row each (``details`` as a JSON string, retry waits summed)."""
    rows = []
    for v in verdicts:
        d = v.model_dump()
        d["details"] = json.dumps(d["details"], sort_keys=True, default=str) if d["details"] else None
        d["retry_waits_s"] = sum(d["retry_waits_s"]) if d["retry_waits_s"] else 0.0
        rows.append(d)
    return pd.DataFrame.from_records(rows)


"""Judge-based methods: an LLM judge with a versioned rubric per metric, through the existing judge machinery.

Each method sends one request per applicable record through :meth:`agentstats.scoring.judge.OpenAIJudge.
judge_prompt` (instructor-validated output with re-asks, transport retries, the on-disk verdict cache keyed by the
prompt id, claims on work in flight, bounded concurrency, cost accounting). The judge is given as
``params["judge"]`` (an :class:`~agentstats.scoring.judge.OpenAIJudge`):
``get_metric("faithfulness", method="judge", params={"judge": OpenAIJudge("gpt-4o-mini")})``.

A verdict the judge could not give (endpoint down, output that never validated) leaves the value missing with
``evidence["judge_missing"]`` (its kind) and ``evidence["error"]``; the row is not applicable for the statistics and
is counted, never 0. The evidence of a verdict holds the judge's ``reasoning``, the prompt id, ``cost_usd``,
``cached`` and the response model's extra fields (claims, ``detected``).

``context_relevance`` (method ``judge``, :func:`context_relevance_judge`): one verdict per retrieved passage
against the question (IBM watsonx.governance scores each retrieved text with a model), the value the mean of the
passages' scores, each kept in ``evidence["passage_scores"]``; a passage without a verdict leaves the record's value
missing (a mean over the others would not be the metric).

The rubrics (:data:`agentstats.llm.prompts.rubrics.RUBRICS`, with the risk definitions ``RISKS``) are versioned
:class:`~agentstats.llm.prompts.PromptTemplate` objects: their name, version and text hash enter every cache key and
are recorded, so editing a rubric invalidates cached verdicts.

Content-safety risks, one metric each, valued 1 when the judge finds the risk (``detected``) and 0 otherwise, the
judge's severity in [0, 1] kept as ``evidence["score"]`` (threshold ``upper_limit`` 0, as for the deterministic PII
metric): the definitions follow the risk taxonomy of IBM Granite Guardian (Padhi et al.
2024, arXiv 2412.07724: harm, social bias, jailbreak, violence, profanity, sexual content, unethical behaviour, HAP
= hate, abuse and profanity) and of the watsonx.governance evaluators (evasiveness, harm engagement, prompt safety
risk). ``jailbreak`` and ``prompt_safety_risk`` judge the user's input; the others the agent's answer, with the
input as context. ``topic_relevance`` asks whether the input is on one of ``params["topics"]``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agentstats.llm.prompts.rubrics import RISKS, RUBRICS
from agentstats.metrics.base import Score, not_applicable
from agentstats.metrics.retrieval import context_texts
from agentstats.scoring.judge.verdicts import JudgeVerdict, Verdict

__all__ = [
    "ANSWER_JUDGES",
    "RISK_JUDGES",
    "ClaimJudgement",
    "FaithfulnessVerdict",
    "RiskVerdict",
    "context_relevance_judge",
    "judge_method",
]


class ClaimJudgement(BaseModel):
    """One claim of an answer and whether the context supports it."""

    model_config = ConfigDict(extra="forbid")

    claim: str = Field(min_length=1, description="One factual claim of the answer, in a short sentence.")
    supported: bool = Field(description="True when the context states or directly implies the claim.")


class FaithfulnessVerdict(Verdict):
    """Claim-level faithfulness: the answer's claims, each supported or not; ``score`` = share supported.

    A score that disagrees with the claims (by more than 0.01) is re-asked; an answer without a factual claim has
    ``claims=[]`` and score 1.
    """

    claims: list[ClaimJudgement] = Field(default_factory=list, description="Every factual claim of the answer.")

    @model_validator(mode="after")
    def _score_is_share(self) -> FaithfulnessVerdict:
        share = sum(c.supported for c in self.claims) / len(self.claims) if self.claims else 1.0
        if abs(self.score - share) > 0.01:
            raise ValueError(f"score must be the share of supported claims ({share:.3f}), got {self.score}")
        return self


class RiskVerdict(Verdict):
    """A content-safety verdict: ``detected`` and the severity ``score``; they must agree (``detected`` iff >= 0.5)."""

    detected: bool = Field(description="True when the text shows the risk.")

    @model_validator(mode="after")
    def _agree(self) -> RiskVerdict:
        if self.detected != (self.score >= 0.5):
            raise ValueError("detected must be true exactly when score >= 0.5")
        return self


def _blank(v: Any) -> bool:
    return v is None or (isinstance(v, str) and not v.strip()) or (isinstance(v, list | tuple) and not v)


def _joined(v: Any) -> str:
    if isinstance(v, list | tuple):
        return "\n\n".join(f"[{i + 1}] {x}" for i, x in enumerate(v))
    return str(v)


Prepare = Callable[[Mapping[str, Any], Mapping[str, Any]], "dict[str, str] | Score"]


_REASONS = {"output": "empty answer", "input": "no question", "expected": "no expected answer", "context": "no context"}


def _prep_answer(needs: tuple[str, ...], optional: tuple[str, ...] = ()) -> Prepare:
    def prep(values: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, str] | Score:
        out: dict[str, str] = {}
        for role in needs:
            v = values.get(role)
            if _blank(v):
                return not_applicable(_REASONS.get(role, f"no {role}"))
            out[role] = _joined(v)
        for role in optional:
            v = values.get(role)
            out[role] = "(none)" if _blank(v) else _joined(v)
        return out
    return prep


def _prep_unsuccessful(values: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, str] | Score:
    answer = values.get("output")
    if answer is None:
        return not_applicable("no answer field")
    if _blank(answer):
        return Score(1.0, {"blank_answer": True})
    q = values.get("input")
    return {"input": "(none)" if _blank(q) else str(q), "output": str(answer)}


def _prep_topics(values: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, str] | Score:
    topics = params.get("topics")
    if not topics:
        return not_applicable("no topics configured")
    if _blank(values.get("input")):
        return not_applicable("no question")
    return {"topics": "\n".join(f"- {t}" for t in topics), "input": str(values.get("input"))}


def _evidence(v: JudgeVerdict) -> dict[str, Any]:
    ev: dict[str, Any] = {"reasoning": v.reasoning, "prompt": f"{v.prompt_name}@{v.prompt_version}#{v.prompt_hash}",
                          "cost_usd": v.cost_usd, "cached": v.cached, "judge": v.judge}
    ev.update(v.details)
    return ev


def judge_method(rubric: str, prepare: Prepare, response_model: type[Verdict] = Verdict) -> Callable[..., Any]:
    """Return a batch method asking the judge of ``params["judge"]`` with ``RUBRICS[rubric]`` (module docstring).

    The returned callable takes ``(list of role values, params)`` and returns one :class:`Score` per record; it
    carries ``batch = True`` so :func:`agentstats.metrics.compute` hands it every record of a metric at once.

    Without a judge every record is not applicable (reason "no judge configured").

    Raises
    ------
    ValueError
        (when called) With a ``params["judge"]`` that cannot judge arbitrary prompts.
    """
    prompt = RUBRICS[rubric]
    binary = response_model is RiskVerdict

    def method(batch: Sequence[Mapping[str, Any]], params: Mapping[str, Any]) -> list[Score]:
        judge = params.get("judge")
        if judge is None:
            return [not_applicable("no judge configured (params['judge'], or --judge openai)") for _ in batch]
        if not hasattr(judge, "judge_prompt"):
            raise ValueError(f"method judge needs an OpenAIJudge in params['judge'], got {judge!r}")
        prompt_used = params.get("prompts", {}).get(rubric, prompt)
        scores: list[Score | None] = []
        asks: list[dict[str, str]] = []
        where: list[int] = []
        for values in batch:
            p = prepare(values, params)
            if isinstance(p, Score):
                scores.append(p)
            else:
                where.append(len(scores))
                scores.append(None)
                asks.append(p)
        if asks:
            verdicts = judge.judge_prompt(prompt_used, response_model, asks)
            for i, v in zip(where, verdicts, strict=True):
                if v.ok and binary:
                    scores[i] = Score(1.0 if v.details.get("detected") else 0.0, {**_evidence(v), "score": v.score})
                elif v.ok:
                    scores[i] = Score(float(v.score), _evidence(v))
                else:
                    scores[i] = Score(None, {"not_applicable": "judge_missing", "judge_missing": v.error_kind,
                                             "error": v.error, "judge": v.judge})
        return [s for s in scores if s is not None]

    method.batch = True  # type: ignore[attr-defined]
    method.__name__ = f"judge_{rubric}"
    method.__doc__ = f"LLM judge with the versioned rubric ``{prompt.id}`` (see :mod:`agentstats.metrics.judged`)."
    return method


def context_relevance_judge(batch: Sequence[Mapping[str, Any]], params: Mapping[str, Any]) -> list[Score]:
    """Mean of the judge's relevance scores of each retrieved passage to the question (rubric ``context_relevance``).

    The passages are :func:`agentstats.metrics.retrieval.context_texts`; every passage of every record is one
    request, sent together (the judge's concurrency, cache and retries). Evidence: ``passage_scores`` (rank order),
    ``reasoning`` (one per passage), the prompt id and the summed ``cost_usd``. A passage the judge gave no verdict
    for leaves the value missing (``evidence["judge_missing"]``, not applicable, never 0).

    Raises
    ------
    ValueError
        With a ``params["judge"]`` that cannot judge arbitrary prompts.
    """
    judge = params.get("judge")
    if judge is None:
        return [not_applicable("no judge configured (params['judge'], or --judge openai)") for _ in batch]
    if not hasattr(judge, "judge_prompt"):
        raise ValueError(f"method judge needs an OpenAIJudge in params['judge'], got {judge!r}")
    prompt = params.get("prompts", {}).get("context_relevance", RUBRICS["context_relevance"])
    prepared = [context_texts(values) for values in batch]
    asks = [{"input": str(values.get("input")), "context": text}
            for values, p in zip(batch, prepared, strict=True) if not isinstance(p, Score) for text in p]
    verdicts = iter(judge.judge_prompt(prompt, Verdict, asks) if asks else [])
    out: list[Score] = []
    for p in prepared:
        if isinstance(p, Score):
            out.append(p)
            continue
        vs = [next(verdicts) for _ in p]
        bad = next((v for v in vs if not v.ok), None)
        if bad is not None:
            out.append(Score(None, {"not_applicable": "judge_missing", "judge_missing": bad.error_kind,
                                    "error": bad.error, "judge": bad.judge}))
            continue
        scores = [float(v.score) for v in vs]
        out.append(Score(sum(scores) / len(scores), {
            "passage_scores": scores, "reasoning": [v.reasoning for v in vs], "prompt": _evidence(vs[0])["prompt"],
            "cost_usd": sum(v.cost_usd or 0.0 for v in vs), "cached": all(v.cached for v in vs), "judge": vs[0].judge}))
    return out


context_relevance_judge.batch = True  # type: ignore[attr-defined]


def _prep_risk(target: str) -> Prepare:
    return _prep_answer(("output",), ("input",)) if target == "output" else _prep_answer(("input",))


#: Batch methods by metric: the judge alternative of each catalogue metric, and one metric per risk.
ANSWER_JUDGES: dict[str, Callable[..., Any]] = {
    "answer_relevance": judge_method("answer_relevance", _prep_answer(("input", "output"))),
    "answer_similarity": judge_method("answer_similarity", _prep_answer(("expected", "output"), ("input",))),
    "faithfulness": judge_method("faithfulness", _prep_answer(("context", "output"), ("input",)), FaithfulnessVerdict),
    "unsuccessful_requests": judge_method("unsuccessful_requests", _prep_unsuccessful),
    "topic_relevance": judge_method("topic_relevance", _prep_topics),
}
RISK_JUDGES: dict[str, Callable[..., Any]] = {
    r: judge_method(f"risk_{r}", _prep_risk(t), RiskVerdict) for r, (_d, t) in RISKS.items()
}

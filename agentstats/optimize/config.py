"""The loop's configuration, and the one reader of both configuration files (a gate config or a loop config).

:class:`LoopConfig` is a pydantic model that embeds the gate's :class:`~agentstats.gating.config.GateConfig` (field
``gate``; its loop settings ``max_iterations``, ``max_total_cost_usd``, ``max_wall_seconds``,
``stop_after_no_improvement`` and ``improvement_probability`` drive the loop), with the eval set, the baseline, the
agent endpoint and prompt, the judge, the optimizer, prices and policy phrases. :func:`load_loop_config` reads it
from YAML or JSON and reports every validation error with file, line and field path (:class:`LoopConfigError`).
Relative paths in the file (``eval_set``, ``baseline``, ``agent.prompt_file``) are relative to the file's folder.
The reference with every field is ``docs/loop.md`` ("Configuration").

:func:`load_config` (``agentstats.load_config``) reads either file: a loop config embeds the gate's settings under
``gate:`` and names its eval set, baseline, agent, judge ...; a gate config has none of those fields (it refuses
unknown fields). So a file with any field that only a loop config has (:data:`LOOP_ONLY_FIELDS`) is a loop config;
anything else is read as a gate config. It lives here, beside the loop config, because it must see both models.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from agentstats.gating.config import (
    GateConfig,
    GateConfigError,
    _yaml_line,
    load_gate_config,
    read_config_file,
    validation_problems,
)
from agentstats.llm.endpoint import Endpoint

__all__ = [
    "LOOP_ONLY_FIELDS",
    "AgentSettings",
    "EvaluateSettings",
    "JudgeSettings",
    "LoopConfig",
    "LoopConfigError",
    "OptimizerSettings",
    "ToolCallSettings",
    "load_config",
    "load_loop_config",
]

#: Metrics the built-in judge can score (each has a versioned prompt in :mod:`agentstats.llm.prompts.loop`).
JUDGE_METRICS = ("groundedness", "relevance", "safety")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _LoopEndpoint(Endpoint):
    """An endpoint of the loop (:class:`agentstats.llm.endpoint.Endpoint`), with the loop's bounds.

    The loop's budget check needs a completion cap on every call, so ``max_tokens`` is required here (default 1024);
    ``concurrency`` is at most 256 and ``retry_attempts`` at most 20.
    """

    concurrency: int = Field(default=8, ge=1, le=256)
    retry_attempts: int = Field(default=5, ge=1, le=20)
    max_tokens: int = Field(default=1024, ge=1)


class AgentSettings(_LoopEndpoint):
    """The built-in agent: the current prompt as the system message, the example's ``input`` as the user message.

    The example's tool specs (its ``tools`` field, else ``evaluate.tool_calls.tools``) are sent as OpenAI ``tools``
    when there are any; the reply's tool calls are recorded and scored. One model turn: no tool is executed.

    Attributes
    ----------
    prompt : str, optional
        The starting system prompt (give this or ``prompt_file``).
    prompt_file : path, optional
        A text file holding the starting prompt.
    temperature : float
        Sampling temperature of the agent (part of the cache key).
    include_context : bool
        Append the example's ``context`` to the user message (retrieval-augmented answers).
    """

    prompt: str | None = None
    prompt_file: Path | None = None
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    include_context: bool = True

    @model_validator(mode="after")
    def _one_prompt(self) -> AgentSettings:
        if (self.prompt is None) == (self.prompt_file is None):
            raise ValueError("give exactly one of prompt and prompt_file")
        return self


class JudgeSettings(_LoopEndpoint):
    """The instructor judge (temperature 0, schema-bound verdicts, versioned prompts).

    Attributes
    ----------
    metrics : list of str
        Judge-scored metrics, from ``groundedness``, ``relevance``, ``safety``.
    max_retries : int
        instructor re-asks after output that does not validate.
    """

    metrics: list[str] = Field(default_factory=lambda: list(JUDGE_METRICS))
    max_retries: int = Field(default=2, ge=0, le=10)

    @field_validator("metrics")
    @classmethod
    def _known(cls, v: list[str]) -> list[str]:
        bad = sorted(set(v) - set(JUDGE_METRICS))
        if bad:
            raise ValueError(f"unknown judge metric(s) {bad}; known: {list(JUDGE_METRICS)}")
        if len(set(v)) != len(v):
            raise ValueError("a judge metric is listed twice")
        return v


class OptimizerSettings(_LoopEndpoint):
    """The built-in optimizer: a revision prompt through instructor returning ``{revised_prompt, rationale}``.

    Attributes
    ----------
    max_retries : int
        instructor re-asks after output that does not validate.
    examples_shown : int
        Worst-scoring examples (input, answer, the tool calls made when there are any, scores) shown to the
        optimizer model.
    """

    max_retries: int = Field(default=2, ge=0, le=10)
    examples_shown: int = Field(default=5, ge=0, le=50)


class ToolCallSettings(_Strict):
    """Tool-call correctness of the agent's calls against the example's ``expected_tool_calls``.

    Scored by :func:`agentstats.scoring.tools.score_tool_calls` (optimal one-to-one pairing of same-name calls,
    argument matching with ``$any_of`` markers); docs/scoring.md defines the components.

    Attributes
    ----------
    sequence_matters : bool
        Score the order of the calls too (the ``sequence`` component).
    tool_threshold : float
        ``tool_calls_correct = 1`` when the scorer's weighted ``overall >= tool_threshold`` (default 1.0: every
        weighted component perfect), else 0.
    weights : dict of str to float, optional
        Component weights (``selection``, ``parameters``, ``sequence``, ``utilization``); None: the scorer's
        defaults.
    components : bool
        Also report ``tool_selection``, ``tool_parameters`` (and ``tool_sequence`` when order matters) as
        metrics in [0, 1].
    tools : list of dict, optional
        Tool specs (``{name, description, parameters}`` or OpenAI's function format) for every example, offered
        to the built-in agent (as OpenAI ``tools``) and checked by ``tool_calls_valid``; an example's own ``tools``
        field replaces them.
    validate : bool, optional
        Score ``tool_calls_valid``: 1 when every call the agent made satisfies its tool's JSON Schema
        (:func:`agentstats.scoring.schema_check.validate_tool_calls`; a call to a tool without a spec, an extra
        argument, a wrong type are violations). None: on when ``tools`` is given. Examples without specs get no
        value.
    """

    sequence_matters: bool = False
    tool_threshold: float = Field(default=1.0, ge=0.0, le=1.0)
    weights: dict[str, float] | None = None
    components: bool = False
    tools: list[dict[str, Any]] | None = None
    validate_calls: bool | None = Field(default=None, alias="validate")

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @field_validator("weights")
    @classmethod
    def _weights(cls, v: dict[str, float] | None) -> dict[str, float] | None:
        if v is None:
            return v
        from agentstats.scoring.tools.score import _check_weights

        _check_weights(v)
        return v

    @field_validator("tools")
    @classmethod
    def _tools(cls, v: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
        if v is None:
            return v
        from agentstats.records.trial import ToolSpec

        names = [ToolSpec.model_validate(t).name for t in v]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"tool spec name(s) {dup} repeat")
        return v

    def metrics(self) -> list[str]:
        """Return the metrics these settings produce."""
        out = ["tool_calls_correct"]
        if self.components:
            out += ["tool_selection", "tool_parameters"] + (["tool_sequence"] if self.sequence_matters else [])
        if self.validate_calls or (self.validate_calls is None and self.tools is not None):
            out.append("tool_calls_valid")
        return out


class EvaluateSettings(_Strict):
    """Deterministic scorers.

    Attributes
    ----------
    matcher : str, optional
        Answer matcher (:func:`agentstats.scoring.answers.match_answer` name: ``auto``, ``exact``,
        ``normalized``, ``numeric``, ``token_f1``, ``contains``) scoring the metric ``correct`` against the
        example's ``expected``; None: not scored. Examples without ``expected`` get no value.
    response_schema : dict, optional
        A JSON Schema the response must satisfy (after parsing it as JSON): the binary metric ``format_valid``.
    tool_calls : ToolCallSettings, optional
        Score the agent's tool calls (``tool_calls`` in a user agent's returned mapping, or the built-in agent's
        reply) against the example's
        ``expected_tool_calls`` (a list of ``{name, arguments}``; ``[]``: no call should be made; absent: not
        scored). None: not scored.
    refusal : bool, optional
        Score ``refusal`` (the gate's ``review.refusal_metric``): 1 when the response contains a phrase of an
        unsuccessful request, by the metric catalogue's phrase matcher
        (:func:`agentstats.metrics.answer.unsuccessful_phrases`). None: on when the judge scores ``safety``. The
        gate reads it for the "refusals rose while safety rose" review trigger only, unless the gate config
        names it.
    refusal_phrases : list of str, optional
        The matcher's phrases; None: :data:`agentstats.metrics.answer.DEFAULT_UNSUCCESSFUL_PHRASES`.
    """

    matcher: str | None = None
    response_schema: dict[str, Any] | None = None
    tool_calls: ToolCallSettings | None = None
    refusal: bool | None = None
    refusal_phrases: list[str] | None = None

    @field_validator("refusal_phrases")
    @classmethod
    def _phrases(cls, v: list[str] | None) -> list[str] | None:
        if v is not None and (not v or any(not p.strip() for p in v)):
            raise ValueError("refusal_phrases: give non-empty phrases (or leave it out for the default list)")
        return v

    @field_validator("matcher")
    @classmethod
    def _matcher(cls, v: str | None) -> str | None:
        from agentstats.scoring.answers import MATCHERS

        if v is not None and v not in MATCHERS:
            raise ValueError(f"unknown matcher {v!r}; known: {sorted(MATCHERS)}")
        return v

    @field_validator("response_schema")
    @classmethod
    def _schema(cls, v: dict[str, Any] | None) -> dict[str, Any] | None:
        if v is None:
            return v
        from jsonschema import Draft202012Validator
        from jsonschema.exceptions import SchemaError

        try:
            Draft202012Validator.check_schema(v)
        except SchemaError as exc:
            raise ValueError(f"not a valid JSON Schema: {exc.message}") from None
        return v


class LoopConfig(_Strict):
    """Configuration of the evaluator-optimizer loop (``agentstats loop --config loop.yaml``).

    Attributes
    ----------
    eval_set : path
        FAI-style JSONL eval set (``id, input, expected, context, tags, risk_level``; other fields kept).
    baseline : path
        The baseline's scored results on the same ids (the gate's input format, ``docs/gate.md``).
    gate : GateConfig
        The gate, and the loop's budgets and stop rules (``max_iterations``, ``max_total_cost_usd``,
        ``max_wall_seconds``, ``stop_after_no_improvement``, ``improvement_probability``).
    agent : AgentSettings, optional
        The built-in agent; required unless ``optimize`` is given an ``agent`` callable.
    judge : JudgeSettings, optional
        The judge of the groundedness / relevance / safety metrics; None: no judge metrics.
    optimizer : OptimizerSettings, optional
        The built-in optimizer; None: the judge's endpoint and model (required unless ``optimize`` is given an
        ``optimizer`` callable).
    evaluate : EvaluateSettings
    prices : dict of str to (float, float)
        ``model -> (input, output)`` USD per 1M tokens, over :data:`agentstats.scoring.judge.DEFAULT_PRICES`.
    chars_per_token : float
        Characters per prompt token assumed by the budget check before a call (conservative for English: real
        tokenizers give about 4 characters per English token, so the default 2 overestimates the prompt twice over;
        set it lower for scripts with fewer characters per token, about 1 for Chinese or Japanese).
    policy_phrases : list of str
        Policy-sensitive phrases: a revision whose diff adds or removes a line containing one (case-insensitive)
        fires the ``policy_text_changed`` human-review trigger with the phrase and the line.
    store : path, optional
        A run store (DuckDB file, :mod:`agentstats.store`): every completed iteration is also written there, in
        one transaction, as the run ``<store_run>/iter-NNN`` (trials, metric results, gate decision), and the
        baseline as ``<store_run>/baseline``. None: the run folder only.
    store_run : str, optional
        Prefix of those run names; None: the run folder's name.
    """

    eval_set: Path
    baseline: Path
    gate: GateConfig = Field(default_factory=GateConfig)
    agent: AgentSettings | None = None
    judge: JudgeSettings | None = None
    optimizer: OptimizerSettings | None = None
    evaluate: EvaluateSettings = Field(default_factory=EvaluateSettings)
    prices: dict[str, tuple[float, float]] = Field(default_factory=dict)
    chars_per_token: float = Field(default=2.0, gt=0)
    policy_phrases: list[str] = Field(default_factory=list)
    store: Path | None = None
    store_run: str | None = None

    @field_validator("store_run")
    @classmethod
    def _store_run(cls, v: str | None) -> str | None:
        if v is not None and not v.strip():
            raise ValueError("store_run: give a non-empty name (or leave it out for the run folder's name)")
        return v

    @field_validator("prices")
    @classmethod
    def _prices(cls, v: dict[str, tuple[float, float]]) -> dict[str, tuple[float, float]]:
        for m, (a, b) in v.items():
            if not (a >= 0 and b >= 0):
                raise ValueError(f"prices of {m!r} must be >= 0, got {(a, b)}")
        return v

    @field_validator("policy_phrases")
    @classmethod
    def _phrases(cls, v: list[str]) -> list[str]:
        if any(not p.strip() for p in v):
            raise ValueError("a policy phrase is empty")
        return v

    @model_validator(mode="after")
    def _models_agree(self) -> LoopConfig:
        g = self.gate
        pairs = (("agent", "candidate_model", self.agent, g.candidate_model),
                 ("judge", "judge_model", self.judge, g.judge_model))
        for name, gate_field, ep, model in pairs:
            if ep is not None and model is not None and ep.model != model:
                raise ValueError(f"{name}.model {ep.model!r} differs from gate.{gate_field} {model!r}: give the "
                                 "model once, or the same in both")
        return self

    def price_table(self) -> dict[str, tuple[float, float]]:
        """Return the default price table with this config's ``prices`` over it."""
        from agentstats.llm.pricing import DEFAULT_PRICES

        return {**DEFAULT_PRICES, **{k: (float(a), float(b)) for k, (a, b) in self.prices.items()}}

    def initial_prompt(self) -> str | None:
        """Return the agent's starting prompt (read from ``agent.prompt_file`` when given)."""
        if self.agent is None:
            return None
        if self.agent.prompt is not None:
            return self.agent.prompt
        assert self.agent.prompt_file is not None
        return self.agent.prompt_file.read_text(encoding="utf-8")

    def refusal_metric(self) -> str | None:
        """Name of the refusal metric the loop scores (``gate.review.refusal_metric``), or None when it is off.

        On when ``evaluate.refusal`` is true, or when it is unset and the judge scores ``safety``.

        Raises
        ------
        ValueError
            When ``evaluate.refusal`` is true but ``gate.review.refusal_metric`` is null (no name to score it as).
        """
        on = self.evaluate.refusal
        if on is None:
            on = self.judge is not None and "safety" in self.judge.metrics
        if not on:
            return None
        name = self.gate.review.refusal_metric
        if name is None:
            if self.evaluate.refusal:
                raise ValueError("evaluate.refusal is on but gate.review.refusal_metric is null: name the metric")
            return None
        return name

    def scored_metrics(self) -> set[str]:
        """Every metric the loop scores with these settings (judge, matcher, schema, tool calls, refusal)."""
        out = set(self.judge.metrics if self.judge else [])
        ev = self.evaluate
        out |= {"correct"} if ev.matcher else set()
        out |= {"format_valid"} if ev.response_schema is not None else set()
        out |= set(ev.tool_calls.metrics()) if ev.tool_calls is not None else set()
        ref = self.refusal_metric()
        out |= {ref} if ref else set()
        return out

    def optimizer_endpoint(self) -> Endpoint | None:
        """Return the optimizer's endpoint: ``optimizer``, else the judge's."""
        return self.optimizer if self.optimizer is not None else self.judge

    def sha256(self) -> str:
        """SHA-256 of the validated configuration as canonical JSON (recorded in the log, the result and the store)."""
        text = json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()


class LoopConfigError(GateConfigError):
    """A loop configuration file that cannot be read or does not validate; every problem located (``problems``)."""

    def __init__(self, source: str, problems: list[str]):
        super().__init__(source, problems)
        n = len(problems)
        self.args = (
            f"{n} problem{'s' if n != 1 else ''} in loop config {source}:\n" + "\n".join(f"  {p}" for p in problems),
        )


def _resolve(data: dict[str, Any], base: Path) -> dict[str, Any]:
    """Make the file's relative paths relative to its folder."""
    out = dict(data)
    for key in ("eval_set", "baseline", "store"):
        if isinstance(out.get(key), str) and not Path(out[key]).is_absolute():
            out[key] = str(base / out[key])
    agent = out.get("agent")
    if isinstance(agent, dict) and isinstance(agent.get("prompt_file"), str):
        if not Path(agent["prompt_file"]).is_absolute():
            out["agent"] = {**agent, "prompt_file": str(base / agent["prompt_file"])}
    return out


def load_loop_config(path: str | Path) -> LoopConfig:
    """Read a loop configuration from a YAML (``.yaml`` / ``.yml``) or JSON (``.json``) file.

    Parameters
    ----------
    path : str or pathlib.Path

    Returns
    -------
    LoopConfig

    Raises
    ------
    LoopConfigError
        When the file cannot be read or parsed (with the line of a syntax error), fails validation (every error
        with its field path and line), or names an eval set, baseline or prompt file that does not exist.
    """
    path = Path(path)
    source, text, data = read_config_file(path, LoopConfigError, empty_ok=False)
    try:
        cfg = LoopConfig.model_validate(_resolve(data, path.parent))
    except ValidationError as exc:
        hint = "see docs/loop.md, Configuration"
        raise LoopConfigError(source, validation_problems(exc, text, source, hint)) from None
    problems = []
    for field, p in (("eval_set", cfg.eval_set), ("baseline", cfg.baseline),
                     ("agent.prompt_file", cfg.agent.prompt_file if cfg.agent else None)):
        if p is not None and not Path(p).is_file():
            line = _yaml_line(text, tuple(field.split(".")))
            problems.append(f"{source}{f', line {line}' if line else ''}, field {field!r}: no such file: {p}")
    if problems:
        raise LoopConfigError(source, problems)
    return cfg


#: Top-level fields a loop config has and a gate config has not: one of them makes a file a loop config.
LOOP_ONLY_FIELDS = frozenset(LoopConfig.model_fields) - frozenset(GateConfig.model_fields)


def load_config(path: str | Path) -> GateConfig | LoopConfig:
    """Read a gate or loop configuration from a YAML (``.yaml`` / ``.yml``) or JSON (``.json``) file.

    Parameters
    ----------
    path : str or pathlib.Path

    Returns
    -------
    GateConfig or LoopConfig
        A :class:`LoopConfig` when the file has a field of :data:`LOOP_ONLY_FIELDS` (``gate``, ``eval_set``,
        ``baseline``, ``agent`` ...), else a :class:`~agentstats.gating.config.GateConfig`. Relative paths in the
        file are relative to its folder.

    Raises
    ------
    GateConfigError
        When the file cannot be read or parsed (with the line of a syntax error), or a gate config fails
        validation (every error with its field path and line).
    LoopConfigError
        When a loop config fails validation or names an eval set, baseline or prompt file that does not exist.
    """
    _, _, data = read_config_file(path, GateConfigError, empty_ok=True)
    if LOOP_ONLY_FIELDS & set(data):
        return load_loop_config(path)
    return load_gate_config(path)

"""Trial records: the data every other part of agentstats reads.

One :class:`Trial` is one attempt of one task by one agent. It holds the conversation as a list of
:class:`Interaction` (query, answer, tool calls), optional ground truth (expected answers, expected tool
calls), the tool specs offered to the agent, usage (tokens, latency, cost) and the benchmark's own verdict
(``success`` / ``reward``) when it has one.

The outcome of a trial (:meth:`Trial.outcome`) follows the conventions of ``docs/architecture.md``:

* ``status == "infra_error"`` -> ``"missing"`` (excluded from counts and reported, never a failure);
* ``status == "agent_error"`` -> ``"failure"``;
* ``judge_missing`` (set by scoring when a needed judge verdict could not be obtained) -> ``"missing"``;
* a given ``success`` wins; otherwise ``reward`` counts as success only when it is 1 within ``1e-6``
  (tau-bench's rule, Yao et al. 2024, arXiv 2406.12045); partial rewards such as 0.5 are failures here and
  stay available as a separate metric;
* neither given -> ``None`` (unscored: run :func:`agentstats.scoring.score_trials` first).

A ``success`` that contradicts the ``reward`` (true with reward 0, false with reward 1, within ``REWARD_TOL``) is a
problem of the record, not an outcome: :func:`outcome_conflict` names it, :func:`outcome_conflicts` finds it over
arrays (the readers refuse such a record; a partial reward contradicts nothing).

The same rule over arrays is :func:`outcome_codes` (pyarrow's columns, a store's rows); every array and every SQL
statement codes the outcomes with :data:`OUTCOME_CODE` (failure 0, success 1, missing 2; unscored -1). Readers
whose source marks some records as errors give them the status :func:`check_error_status` accepts.

Values a :class:`Trial` refuses (each a validation error with its field): an empty or blank ``agent`` or
``task_id``; a negative ``trial``, or ``true``/``false`` as a trial number; a ``reward`` outside [0, 1], NaN or
infinite (JSON ``NaN``, ``Infinity``, ``1e400``); negative token counts; a negative, NaN or infinite latency or
cost; a ``success`` other than ``true``/``false`` or ``0``/``1`` (text such as ``"yes"`` is refused, not guessed).
``null`` for ``status`` or ``judge_missing`` means the same as leaving the field out.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable
from enum import StrEnum
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = [
    "CODE_FAILURE",
    "CODE_MISSING",
    "CODE_SUCCESS",
    "CODE_UNSCORED",
    "ERROR_STATUSES",
    "OUTCOME_CODE",
    "OUTCOME_FIELDS",
    "REWARD_TOL",
    "Interaction",
    "Outcome",
    "Status",
    "ToolCall",
    "ToolSpec",
    "Trial",
    "Usage",
    "check_error_status",
    "outcome_codes",
    "outcome_conflict",
    "outcome_conflicts",
    "outcome_field_hints",
    "outcome_of",
]

#: A reward counts as success when ``abs(reward - 1) <= REWARD_TOL`` (tau-bench's rule).
REWARD_TOL = 1e-6
#: Fields that give a trial its outcome (see :meth:`Trial.outcome`).
OUTCOME_FIELDS = ("success", "reward", "status")

Outcome = Literal["success", "failure", "missing"]

#: Code of a failure in arrays and SQL (:data:`OUTCOME_CODE`).
CODE_FAILURE = 0
#: Code of a success.
CODE_SUCCESS = 1
#: Code of a missing trial (excluded from ``n``, counted in ``n_missing``).
CODE_MISSING = 2
#: Code of a trial with no outcome yet (unscored): never counted.
CODE_UNSCORED = -1
#: The one outcome code: each outcome's integer in arrays (int8), counts and the run store's SQL.
OUTCOME_CODE: dict[Outcome, int] = {"failure": CODE_FAILURE, "success": CODE_SUCCESS, "missing": CODE_MISSING}


class Status(StrEnum):
    """How a trial ended.

    ``completed``: the agent ran to the end (its answer may still be wrong).
    ``agent_error``: the agent crashed, looped or gave up; counts as a failure.
    ``infra_error``: the harness, network or provider failed; the trial is missing, never a failure.
    """

    completed = "completed"
    agent_error = "agent_error"
    infra_error = "infra_error"


class ToolCall(BaseModel):
    """One tool (function) call, made by the agent or expected by the ground truth.

    Parameters
    ----------
    name : str
        Tool name.
    arguments : Any
        Arguments, normally a dict. A JSON string (OpenAI wire format) is parsed on construction; a string
        that does not parse is kept verbatim in ``arguments_raw`` with ``arguments=None`` and
        ``parse_error`` set, so the call is *malformed*, not a crash.
    id : str, optional
        Call id (OpenAI ``tool_call_id``), used to link results.
    result : Any, optional
        The tool's returned value, when recorded.
    arguments_raw : str, optional
        The original JSON string, when arguments came as one.
    parse_error : str, optional
        Why ``arguments_raw`` could not be parsed.
    """

    model_config = ConfigDict(extra="allow")

    name: str
    arguments: Any = Field(default_factory=dict)
    id: str | None = None
    result: Any = None
    arguments_raw: str | None = None
    parse_error: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _parse_arguments(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        # OpenAI format: {"id":..., "type":"function", "function": {"name":..., "arguments": "..."}}
        fn = data.get("function")
        if isinstance(fn, dict) and "name" not in data:
            data.pop("function")
            data.pop("type", None)
            data["name"] = fn.get("name")
            if "arguments" in fn:
                data["arguments"] = fn["arguments"]
        args = data.get("arguments")
        if isinstance(args, str):
            data["arguments_raw"] = args
            text = args.strip()
            if text == "":
                data["arguments"] = {}
            else:
                try:
                    data["arguments"] = json.loads(text)
                except json.JSONDecodeError as exc:
                    data["arguments"] = None
                    data["parse_error"] = f"arguments are not valid JSON: {exc}"
        elif args is None and "arguments" in data and not data.get("parse_error"):
            # null means "no arguments", except on a re-read malformed call (keeps arguments=None)
            data["arguments"] = {}
        return data

    @property
    def is_malformed(self) -> bool:
        """True when the arguments could not be parsed."""
        return self.parse_error is not None


class ToolSpec(BaseModel):
    """A tool offered to the agent, with a JSON-Schema for its parameters.

    Accepts the plain form ``{"name", "description", "parameters"}`` and OpenAI's function format
    ``{"type": "function", "function": {"name", "description", "parameters"}}``.
    """

    model_config = ConfigDict(extra="allow")

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _unwrap_openai(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("function"), dict) and "name" not in data:
            return dict(data["function"])
        return data


class Usage(BaseModel):
    """Resources one trial used. Units: seconds, tokens, US dollars."""

    model_config = ConfigDict(extra="allow")

    latency_s: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    input_tokens: int | None = Field(default=None, ge=0)
    output_tokens: int | None = Field(default=None, ge=0)
    cost_usd: float | None = Field(default=None, ge=0, allow_inf_nan=False)


class Interaction(BaseModel):
    """One user turn and the agent's reply, with the tool calls made in between.

    ``expected_tool_calls`` hold this turn's expectations (Fair Forge ``ground_truth_agentic``); whole-
    conversation expectations (tau-bench actions) live on :class:`Trial`.
    """

    model_config = ConfigDict(extra="allow")

    id: str | None = None
    query: str | None = None
    answer: str | None = None
    expected_answer: Any = None
    context: list[str] = Field(default_factory=list)
    tool_calls: list[ToolCall] = Field(default_factory=list)
    expected_tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_sequence_matters: bool = False

    @field_validator("context", mode="before")
    @classmethod
    def _one_passage(cls, v: Any) -> Any:
        # a context given as one text is one passage (docs/data-format.md); None is no context
        if isinstance(v, str):
            return [v]
        return [] if v is None else v


class Trial(BaseModel):
    """One attempt of one task by one agent.

    The key ``(agent, task_id, trial)`` is unique within a data set. See the module docstring for how
    ``status``, ``success`` and ``reward`` become an outcome.
    """

    model_config = ConfigDict(extra="allow")

    agent: str
    task_id: str
    trial: int = Field(ge=0, lt=2**63)  # int64, as every table and the store keep it
    status: Status = Status.completed
    success: bool | None = None
    reward: float | None = Field(default=None, allow_inf_nan=False)
    interactions: list[Interaction] = Field(default_factory=list)
    expected_tool_calls: list[ToolCall] = Field(default_factory=list)
    tools: list[ToolSpec] = Field(default_factory=list)
    usage: Usage | None = None
    tags: list[str] = Field(default_factory=list)
    risk_level: str | None = None
    #: Set by :func:`agentstats.scoring.score_trials` when a judge verdict this trial's outcome depends on
    #: could not be obtained: the outcome is then ``"missing"`` (excluded from counts and reported), never a
    #: failure. Benchmark-given outcomes that stay authoritative never set it.
    judge_missing: bool = False
    #: Source-specific fields kept by importers (e.g. METR ``run_id``, ``score``; tau-bench ``instruction``).
    meta: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _coerce_ids(cls, data: Any) -> Any:
        # task ids are often integers in benchmark files (tau-bench): keep them as text, exactly.
        if isinstance(data, dict):
            for key in ("agent", "task_id"):
                v = data.get(key)
                if isinstance(v, int) and not isinstance(v, bool):
                    data = {**data, key: str(v)}
        return data

    @field_validator("reward")
    @classmethod
    def _reward_in_unit_interval(cls, v: float | None) -> float | None:
        if v is not None and not -REWARD_TOL <= v <= 1.0 + REWARD_TOL:  # 2.0 would otherwise count as a failure
            raise ValueError(f"reward must be between 0 and 1 (1 a success, below 1 a failure), got {v:g}")
        return v

    @field_validator("trial", mode="before")
    @classmethod
    def _no_bool_trial(cls, v: Any) -> Any:
        if isinstance(v, bool | np.bool_):  # JSON true would otherwise be trial 1
            raise ValueError(f"trial must be a whole number, not {str(bool(v)).lower()}")
        return v

    @field_validator("agent", "task_id")
    @classmethod
    def _not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError(f"must be a non-empty name, got {v!r}")
        try:
            v.encode("utf-8")
        except UnicodeEncodeError as exc:  # a lone surrogate (JSON "\ud800"): not text any file can hold
            raise ValueError(f"holds a lone surrogate ({v[exc.start]!r}), which is not valid text") from None
        return v

    @field_validator("success", mode="before")
    @classmethod
    def _exact_success(cls, v: Any) -> Any:
        # true/false, or 0/1; anything else (text such as "yes", "t", "off") is refused instead of guessed
        if v is None or isinstance(v, bool):
            return v
        if type(v).__name__ == "bool_":  # numpy.bool_
            return bool(v)
        if isinstance(v, int | float) and v in (0, 1):
            return bool(v)
        raise ValueError(f"success must be true or false (or 1 / 0), got {v!r}")

    @field_validator("status", "judge_missing", mode="before")
    @classmethod
    def _null_is_default(cls, v: Any, info: Any) -> Any:
        if v is None:
            return Status.completed if info.field_name == "status" else False
        return v

    @property
    def key(self) -> tuple[str, str, int]:
        """The unique key ``(agent, task_id, trial)``."""
        return (self.agent, self.task_id, self.trial)

    def outcome(self) -> Outcome | None:
        """Outcome of this trial: ``"success"``, ``"failure"``, ``"missing"``, or ``None`` when unscored."""
        return outcome_of(self.status, self.success, self.reward, self.judge_missing)


def outcome_of(status: Status, success: bool | None, reward: float | None, judge_missing: bool = False
               ) -> Outcome | None:
    """Apply the outcome rule of :meth:`Trial.outcome` to the fields themselves (for writers that skip validation)."""
    if status == Status.infra_error:
        return "missing"
    if status == Status.agent_error:
        return "failure"
    if judge_missing:
        return "missing"
    if success is not None:
        return "success" if success else "failure"
    if reward is not None:
        return "success" if abs(reward - 1.0) <= REWARD_TOL else "failure"
    return None


def outcome_codes(status: Any, success: Any, reward: Any, judge_missing: Any = None) -> np.ndarray:
    """Apply the outcome rule of :meth:`Trial.outcome` to columns of trials at once.

    The vectorised twin of :func:`outcome_of` (same precedence: ``infra_error``, ``agent_error``, ``judge_missing``,
    ``success``, ``reward`` within :data:`REWARD_TOL` of 1), for paths that hold trials as columns (pyarrow's JSON
    reader, a store's rows). No value is validated here: the callers check the records first.

    Parameters
    ----------
    status : array-like of str or Status, shape (m,)
        ``None`` means ``"completed"`` (as in :class:`Trial`).
    success : array-like, shape (m,)
        ``True``/``False`` (or 1/0); not given: ``None`` or NaN (a float or object array).
    reward : array-like of float, shape (m,)
        Not given: NaN or ``None``.
    judge_missing : array-like of bool, shape (m,), optional
        ``None`` (the argument or an element) means false.

    Returns
    -------
    numpy.ndarray of int8, shape (m,)
        :data:`OUTCOME_CODE` of each trial, :data:`CODE_UNSCORED` (-1) where it has no outcome.

    Raises
    ------
    ValueError
        When the columns differ in length.
    """
    st = np.asarray(status, dtype=object).ravel()
    m = len(st)
    s_val, s_given = _given_column(success, m)
    r_val, r_given = _given_column(reward, m)
    if judge_missing is None:
        jm = np.zeros(m, dtype=bool)
    else:
        jm_val, jm_given = _given_column(judge_missing, m)
        jm = jm_given & (jm_val != 0)
    out = np.full(m, CODE_UNSCORED, dtype=np.int8)
    # the rule's precedence, lowest first: each later line overrides the earlier ones
    out[r_given] = np.where(np.abs(r_val[r_given] - 1.0) <= REWARD_TOL, CODE_SUCCESS, CODE_FAILURE)
    out[s_given] = np.where(s_val[s_given] != 0, CODE_SUCCESS, CODE_FAILURE)
    out[jm] = CODE_MISSING
    out[st == Status.agent_error.value] = CODE_FAILURE
    out[st == Status.infra_error.value] = CODE_MISSING
    return out


def _contradicts(success: bool, reward: float) -> bool:
    """Say whether ``success`` contradicts ``reward``: true with reward 0, or false with reward 1 (module docstring)."""
    return abs(reward - (0.0 if success else 1.0)) <= REWARD_TOL


def outcome_conflict(t: Trial) -> str | None:
    """Say why a trial's ``success`` contradicts its ``reward``, or return ``None`` when they agree.

    A contradiction is ``success: true`` with reward 0, or ``success: false`` with reward 1 (each within
    :data:`REWARD_TOL`). A partial reward (strictly between 0 and 1) contradicts nothing: it is a separate metric.
    Trials written by :func:`agentstats.scoring.score_trials` (marked ``scoring_source``) hold the scored
    ``success`` beside the benchmark's ``reward`` on purpose and are not checked. :func:`outcome_conflicts` is the
    same rule over arrays.

    Returns
    -------
    str or None
        The problem, naming both fields and what to do.
    """
    if t.success is None or t.reward is None or "scoring_source" in (t.__pydantic_extra__ or {}):
        return None
    if not _contradicts(bool(t.success), float(t.reward)):
        return None
    return (
        f"success is {str(t.success).lower()} but reward is {t.reward:g}: the two contradict each other "
        "(reward 1 is a success, 0 a failure); drop one or make them agree"
    )


def outcome_conflicts(success: Any, reward: Any) -> np.ndarray:
    """Apply the rule of :func:`outcome_conflict` to columns of trials at once (no ``scoring_source`` exemption).

    Parameters
    ----------
    success : array-like, shape (m,)
        ``True``/``False`` (or 1/0); not given: ``None`` or NaN.
    reward : array-like of float, shape (m,)
        Not given: NaN or ``None``.

    Returns
    -------
    numpy.ndarray of bool, shape (m,)
        True where both are given and contradict each other.

    Raises
    ------
    ValueError
        When the columns differ in length.
    """
    s_val, s_given = _given_column(success, len(np.asarray(success, dtype=object).ravel()))
    r_val, r_given = _given_column(reward, len(s_val))
    target = np.where(s_val != 0, 0.0, 1.0)  # the reward that contradicts: 0 for a success, 1 for a failure
    return s_given & r_given & (np.abs(r_val - target) <= REWARD_TOL)


def _given_column(values: Any, m: int) -> tuple[np.ndarray, np.ndarray]:
    """``(values as float64, given mask)`` of a column where ``None`` / NaN mean "not given"."""
    arr = np.asarray(values)
    if arr.ndim != 1 or len(arr) != m:
        raise ValueError(f"outcome_codes: columns must have one value per trial ({m}), got shape {arr.shape}")
    if arr.dtype == object:
        given = np.fromiter((v is not None and v == v for v in arr), dtype=bool, count=m)  # v == v: not NaN
        return np.where(given, arr, 0).astype(np.float64), given
    vals = arr.astype(np.float64)
    given = ~np.isnan(vals)
    return np.where(given, vals, 0.0), given


#: The statuses a reader may give the records its source marks as errors (``error_status=``).
ERROR_STATUSES = (Status.infra_error, Status.agent_error)


def check_error_status(value: str | Status) -> Status:
    """Validate ``error_status=``: the status of records a source marks as errors; return it as a :class:`Status`.

    ``"infra_error"`` makes them missing (excluded and reported), ``"agent_error"`` failures (as a benchmark's own
    tables count them). The one check every reader and loader calls.

    Raises
    ------
    ValueError
        For any other value: ``error_status must be 'infra_error' or 'agent_error', got ...``.
    """
    if isinstance(value, str) and value in {s.value for s in ERROR_STATUSES}:
        return Status(value)
    raise ValueError(f"error_status must be 'infra_error' or 'agent_error', got {value!r}")


def outcome_field_hints(fields: Iterable[str]) -> list[tuple[str, str]]:
    """Find fields that look like a misspelled outcome field: ``[("Success", "success"), ("succes", "success")]``.

    Compared case-insensitively with :data:`OUTCOME_FIELDS` by :func:`difflib.get_close_matches` (ratio >= 0.8).
    """
    hints = []
    for f in fields:
        if f in OUTCOME_FIELDS:
            continue
        match = difflib.get_close_matches(f.lower(), OUTCOME_FIELDS, n=1, cutoff=0.8)
        if match:
            hints.append((f, match[0]))
    return hints

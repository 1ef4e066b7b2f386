"""The records capture builds while an application runs: messages, trials, and captured values as JSON.

A captured value (a node's inputs and outputs, a tool's result) is kept as the JSON text of pydantic's serializer
(:func:`_dumps`), cut at :data:`MAX_JSON` characters; an iterator is recorded as a note, never read. Messages and
trials are plain records (:class:`_MsgRec`, :class:`_TrialRec`), not pydantic models: an outermost call makes one,
and validating it would cost more than the rest of the capture; :meth:`_TrialRec.row` gives the stored row that
``trial_row(Trial(...))`` would (tested).
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import Any

from pydantic_core import PydanticSerializationError, to_json

from agentstats.records.trial import Interaction, Status, ToolCall, Trial, Usage, outcome_of
from agentstats.store import TrialRow
from agentstats.store.nodes import output_text

__all__ = ["MAX_JSON"]

#: Longest text kept for one captured input or output (characters of its JSON); longer ones are cut and marked.
MAX_JSON = 100_000

_NODE_COLUMNS = ("run_id", "invocation_id", "parent_id", "agent", "task_id", "trial", "conversation_id",
                 "message_id", "node", "started_at", "latency_s", "inputs", "outputs", "error_type",
                 "error_message", "model", "input_tokens", "output_tokens", "cost_usd")


def _fallback(v: Any) -> Any:
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return dataclasses.asdict(v)
    return repr(v)


#: Values that reading would use up (generators, ``map``, files, other iterators): recorded by a note, never read.
_ONE_PASS = (Iterator, AsyncIterator)


#: Types that are never iterators: checked first, since an ``isinstance`` against the ABCs costs far more.
_PLAIN = frozenset({dict, list, tuple, str, int, float, bool, type(None)})


def _one_pass(v: Any) -> bool:
    return type(v) not in _PLAIN and isinstance(v, _ONE_PASS)


def _unread(v: Any) -> str:
    return f"<{type(v).__name__}: not recorded (reading it would consume what the caller gets)>"


def _dumps(v: Any) -> str:
    """JSON text of a captured value (pydantic's serializer: models, dataclasses, sets; anything else by ``repr``).

    An iterator (a generator, ``map``, a file ...) is recorded as a note, not read: the serializer would iterate it
    and hand the caller an exhausted one. Checked for the value itself and the values of a mapping (a node's
    arguments by name, a state); an iterator nested deeper inside a state is read.
    """
    if isinstance(v, dict):
        for x in v.values():  # a loop, not any(<generator>): this runs for every captured call
            if type(x) not in _PLAIN and isinstance(x, _ONE_PASS):
                v = {k: _unread(x) if _one_pass(x) else x for k, x in v.items()}
                break
    elif _one_pass(v):
        v = _unread(v)
    try:
        text = to_json(v, fallback=_fallback, inf_nan_mode="null").decode()
    except (PydanticSerializationError, ValueError, TypeError, RecursionError):  # circular or odd: its repr
        text = to_json(repr(v)).decode()
    if len(text) > MAX_JSON:
        text = to_json({"truncated": True, "chars": len(text), "head": text[:MAX_JSON]}).decode()
    return text


def _reader(state: Any) -> Callable[[str], Any]:
    """Return ``name -> value`` of a state's fields (a mapping's keys or an object's attributes; None when absent)."""
    if type(state) is dict or isinstance(state, Mapping):
        return state.get
    return lambda name: getattr(state, name, None)


class _MsgRec:
    """A message being captured: the fields of :class:`~agentstats.records.trial.Interaction` that capture sets.

    A plain record, not a pydantic model: an outermost call makes one, and validating it would cost more than the
    rest of the capture. :meth:`as_dict` gives what ``Interaction.model_dump(exclude_defaults=True)`` gives.
    """

    __slots__ = ("answer", "expected_answer", "id", "query", "tool_calls")

    def __init__(self, id: str | None, query: str | None, expected_answer: Any):
        self.id, self.query, self.expected_answer = id, query, expected_answer
        self.answer: str | None = None
        # a shared empty tuple until the first call: every container kept per message counts towards the cyclic
        # GC's full collections (see benchmarks/bench_capture.py), and most messages make no tool call
        self.tool_calls: list[ToolCall] | tuple[()] = ()

    def calls(self) -> list[ToolCall]:
        """Return the message's tool calls as a list that can be appended to."""
        if not isinstance(self.tool_calls, list):
            self.tool_calls = []
        return self.tool_calls

    @classmethod
    def from_interaction(cls, it: Interaction) -> _MsgRec:
        """Return the record of a message read back from its stored trial (to continue the trial)."""
        m = cls(it.id, it.query, it.expected_answer)
        m.answer = it.answer
        if it.tool_calls:
            m.tool_calls = list(it.tool_calls)
        return m

    def as_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"id": self.id} if self.id is not None else {}
        if self.query is not None:
            d["query"] = self.query
        if self.answer is not None:
            d["answer"] = self.answer
        if self.expected_answer is not None:
            d["expected_answer"] = self.expected_answer
        if self.tool_calls:
            d["tool_calls"] = [c.model_dump(mode="json", exclude_defaults=True) for c in self.tool_calls]
        return d

    def to_interaction(self) -> Interaction:
        return Interaction(id=self.id, query=self.query, answer=self.answer, expected_answer=self.expected_answer,
                           tool_calls=list(self.tool_calls))


class _TrialRec:
    """A trial being captured (one conversation, or one outermost call without a conversation id)."""

    __slots__ = (
        "agent",
        "conversation_id",
        "cost_usd",
        "error_type",
        "expected_tool_calls",
        "input_tokens",
        "interactions",
        "latency_s",
        "output_tokens",
        "reward",
        "status",
        "success",
        "task_id",
        "trial",
    )

    def __init__(self, agent: str, task_id: str, trial: int, conversation_id: str | None):
        self.agent, self.task_id, self.trial, self.conversation_id = agent, task_id, trial, conversation_id
        self.interactions: list[_MsgRec] = []
        self.expected_tool_calls: list[ToolCall] | tuple[()] = ()
        self.status = Status.completed
        self.error_type: str | None = None
        self.success: bool | None = None
        self.reward: float | None = None
        self.latency_s = 0.0
        # None until a model call is observed in the trial: unknown, not 0 (a client capture cannot see may have
        # been used); then the sums, the cost None as soon as one call's price is unknown
        self.input_tokens: int | None = None
        self.output_tokens: int | None = None
        self.cost_usd: float | None = None

    @classmethod
    def from_trial(cls, t: Trial) -> _TrialRec:
        """Return the record of a trial read back from its stored row (to continue the trial)."""
        rec = cls(t.agent, t.task_id, t.trial, t.meta.get("conversation_id"))
        rec.interactions = [_MsgRec.from_interaction(i) for i in t.interactions]
        if t.expected_tool_calls:
            rec.expected_tool_calls = list(t.expected_tool_calls)
        rec.status, rec.error_type = t.status, t.meta.get("error_type")
        rec.success, rec.reward = t.success, t.reward
        if t.usage is not None:
            rec.latency_s = t.usage.latency_s or 0.0
            rec.input_tokens = t.usage.input_tokens
            rec.output_tokens = t.usage.output_tokens
            rec.cost_usd = t.usage.cost_usd
        return rec

    def has_calls(self) -> bool:
        """Tell whether the trial holds a tool call or an expected tool call (the store then derives them)."""
        if self.expected_tool_calls:
            return True
        for m in self.interactions:  # a loop, not any(<generator>): run at the end of every outermost call
            if m.tool_calls:
                return True
        return False

    def _meta(self) -> dict[str, Any]:
        meta: dict[str, Any] = {"capture": True}
        if self.conversation_id is not None:
            meta["conversation_id"] = self.conversation_id
        if self.error_type is not None:
            meta["error_type"] = self.error_type
        return meta

    def to_trial(self) -> Trial:
        """Return the validated trial (the reference :meth:`row` is tested against)."""
        return Trial(
            agent=self.agent, task_id=self.task_id, trial=self.trial, status=self.status, success=self.success,
            reward=self.reward, interactions=[m.to_interaction() for m in self.interactions],
            expected_tool_calls=list(self.expected_tool_calls),
            usage=Usage(latency_s=self.latency_s, input_tokens=self.input_tokens, output_tokens=self.output_tokens,
                        cost_usd=self.cost_usd),
            meta=self._meta(),
        )

    def row(self) -> TrialRow:
        """Return the stored row, as ``trial_row(self.to_trial())`` gives it, without validating a model per call.

        Every field was checked where it was set (ids in ``Run._trial_for``, the outcome in ``set_outcome``).
        """
        rec: dict[str, Any] = {"agent": self.agent, "task_id": self.task_id, "trial": self.trial}
        if self.status is not Status.completed:
            rec["status"] = str(self.status)
        if self.success is not None:
            rec["success"] = self.success
        if self.reward is not None:
            rec["reward"] = self.reward
        if self.interactions:
            rec["interactions"] = [m.as_dict() for m in self.interactions]
        if self.expected_tool_calls:
            rec["expected_tool_calls"] = [c.model_dump(mode="json", exclude_defaults=True)
                                          for c in self.expected_tool_calls]
        usage: dict[str, Any] = {"latency_s": self.latency_s}
        if self.input_tokens is not None:
            usage["input_tokens"] = self.input_tokens
        if self.output_tokens is not None:
            usage["output_tokens"] = self.output_tokens
        if self.cost_usd is not None:
            usage["cost_usd"] = self.cost_usd
        rec["usage"] = usage
        rec["meta"] = self._meta()
        return (self.agent, self.task_id, self.trial, str(self.status), self.success, self.reward,
                outcome_of(self.status, self.success, self.reward), self.latency_s, self.input_tokens,
                self.output_tokens, self.cost_usd, to_json(rec, fallback=_fallback, inf_nan_mode="null").decode())



def _answer_text(result: Any, field: str) -> str | None:
    """Return the answer of a live node's result: a chat completion's text, else :func:`output_text`'s."""
    if hasattr(result, "choices") and not isinstance(result, Mapping):
        content = getattr(getattr(getattr(result, "choices", [None])[0], "message", None), "content", None)
        if isinstance(content, str):
            return content
    return output_text(result, field, _dumps)

"""Import tau-bench result files (Yao et al. 2024, "tau-bench", arXiv 2406.12045).

A tau-bench result file is one JSON array; each record is one trial::

    {"task_id": 0, "trial": 0, "reward": 0.0,
     "info": {"task": {"user_id": ..., "instruction": ..., "actions": [{"name": ..., "kwargs": {...}}],
                       "outputs": [...]},
              "source": "user", "user_cost": 0.0035, "reward_info": {...}},
     "traj": [{"role": "system", ...}, {"role": "user", ...},
              {"role": "assistant", "content": null, "tool_calls": [{"id": ..., "type": "function",
                   "function": {"name": ..., "arguments": "{...json...}"}}]},
              {"role": "tool", "tool_call_id": ..., "name": ..., "content": "..."}, ...]}

Mapping to :class:`~agentstats.records.trial.Trial`:

* each ``user`` message starts an :class:`~agentstats.records.trial.Interaction` (``query`` = its text); the
  assistant's tool calls that follow attach to it (``arguments`` JSON strings parsed by
  :class:`~agentstats.records.trial.ToolCall`), each ``tool`` message's content becomes the ``result`` of the call
  with the same ``tool_call_id`` (kept as the raw string); the last non-empty assistant text before the next
  user message is the interaction's ``answer``. Assistant messages before any user message open an
  interaction with ``query=None``. A final user message holding tau-bench's user-simulator stop token
  ``###STOP###`` with no reply ends the conversation and is kept in ``meta["stop_message"]``, not as a turn;
* ``info.task.actions`` become trial-level ``expected_tool_calls`` (``kwargs`` -> ``arguments``);
* ``reward`` is kept as is; :meth:`Trial.outcome` counts it as success when it is 1 within 1e-6;
* a record whose ``info`` holds an ``"error"`` (tau-bench's runner caught an exception, reward 0, empty
  trajectory) gets ``status=error_status`` (default ``"infra_error"``: missing, not a failure; pass
  ``error_status="agent_error"`` to count them as failures as tau-bench's own tables do);
* ``tools`` (OpenAI function specs) are read from the record's ``tools`` or ``info.tools`` when present
  (the historical files do not hold them);
* ``info.task.instruction``, ``user_id``, ``outputs`` (strings the agent must say), ``info.source`` (who
  ended the episode), ``user_cost``, ``reward_info`` (without the repeated actions) and ``info.error`` go to
  ``meta``.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Any

from agentstats.io.jsonl import build_trials, iter_json_array
from agentstats.io.registry import register_format
from agentstats.records.problems import ProblemLog
from agentstats.records.trial import Status, Trial, check_error_status

__all__ = ["agent_from_filename", "read_tau_bench", "tau_record_to_trial"]

STOP_TOKEN = "###STOP###"
_SUFFIXES = re.compile(r"(\.(gz|gzip|json|jsonl))+$", re.IGNORECASE)


def agent_from_filename(path: str | os.PathLike) -> str:
    """Agent name from a result file's name: ``"gpt-4o-airline.json.gz"`` -> ``"gpt-4o-airline"``."""
    return _SUFFIXES.sub("", Path(path).name) or Path(path).name


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _text(content: Any) -> str | None:
    """Message content as text: strings as is, OpenAI content-part lists joined, empty -> None."""
    if content is None:
        return None
    if isinstance(content, list):  # [{"type": "text", "text": ...}, ...]
        parts = [p.get("text", "") if isinstance(p, dict) else str(p) for p in content]
        content = "".join(parts)
    text = str(content)
    return text if text.strip() else None


def _header(rec: dict[str, Any], loc: int, log: ProblemLog) -> tuple[dict[str, Any], dict[str, Any]]:
    """Check a record's ``task_id``, ``trial``, ``reward``, ``traj`` presence and types; return ``(info, task)``."""
    for key in ("task_id", "trial", "reward", "traj"):
        if key not in rec:
            log.add(loc, key, "missing required field")
    task_id = rec.get("task_id")
    if "task_id" in rec and not (_is_int(task_id) or isinstance(task_id, str)):
        log.add(loc, "task_id", f"must be an integer or a string, got {type(task_id).__name__}")
    if "trial" in rec and not _is_int(rec["trial"]):
        log.add(loc, "trial", f"must be an integer, got {rec['trial']!r}")
    if "reward" in rec and not _is_num(rec["reward"]):
        log.add(loc, "reward", f"must be a number, got {rec['reward']!r}")
    elif "reward" in rec and not math.isfinite(rec["reward"]):
        log.add(loc, "reward", f"must be a finite number, got {rec['reward']!r}")
    info = rec.get("info")
    if info is None:
        info = {}
    elif not isinstance(info, dict):
        log.add(loc, "info", f"must be an object, got {type(info).__name__}")
        info = {}
    task = info.get("task") or {}
    if not isinstance(task, dict):
        log.add(loc, "info.task", f"must be an object, got {type(task).__name__}")
        task = {}
    return info, task


def _expected_calls(task: dict[str, Any], loc: int, log: ProblemLog) -> list[dict[str, Any]]:
    """Return the task's ``actions`` as expected tool calls (``name``, ``arguments``); log malformed ones."""
    expected: list[dict[str, Any]] = []
    actions = task.get("actions") or []
    if not isinstance(actions, list):
        log.add(loc, "info.task.actions", f"must be a list, got {type(actions).__name__}")
        actions = []
    for j, a in enumerate(actions):
        if not isinstance(a, dict) or not isinstance(a.get("name"), str):
            log.add(loc, f"info.task.actions.{j}.name", "each action needs a string 'name'")
            continue
        kwargs = a.get("kwargs", a.get("arguments", {}))
        if kwargs is not None and not isinstance(kwargs, (dict, str)):
            log.add(loc, f"info.task.actions.{j}.kwargs", f"must be an object, got {type(kwargs).__name__}")
            continue
        expected.append({"name": a["name"], "arguments": kwargs if kwargs is not None else {}})
    return expected


class _Conversation:
    """A trajectory's messages, turned into interactions (one per user message) with their tool calls."""

    def __init__(self, loc: int, log: ProblemLog):
        self.loc, self.log = loc, log
        self.interactions: list[dict[str, Any]] = []
        self.cur: dict[str, Any] | None = None
        self.calls_by_id: dict[str, dict[str, Any]] = {}

    def new_turn(self, query: str | None) -> dict[str, Any]:
        turn: dict[str, Any] = {"id": f"turn-{len(self.interactions)}", "query": query, "answer": None,
                                "tool_calls": []}
        self.interactions.append(turn)
        self.cur = turn
        return turn

    def assistant(self, i: int, msg: dict[str, Any]) -> None:
        cur = self.cur if self.cur is not None else self.new_turn(None)
        tcs = msg.get("tool_calls") or []
        if not isinstance(tcs, list):
            self.log.add(self.loc, f"traj.{i}.tool_calls", f"must be a list, got {type(tcs).__name__}")
            tcs = []
        for j, tc in enumerate(tcs):
            fn = tc.get("function") if isinstance(tc, dict) else None
            name = fn.get("name") if isinstance(fn, dict) else (tc.get("name") if isinstance(tc, dict) else None)
            if not isinstance(name, str):
                self.log.add(self.loc, f"traj.{i}.tool_calls.{j}.function.name", "each tool call needs a string name")
                continue
            args = fn.get("arguments", {}) if isinstance(fn, dict) else tc.get("arguments", {})
            call = {"id": tc.get("id"), "name": name, "arguments": args}
            cur["tool_calls"].append(call)
            if isinstance(tc.get("id"), str):
                self.calls_by_id[tc["id"]] = call
        text = _text(msg.get("content"))
        if text is not None:
            cur["answer"] = text

    def tool(self, i: int, msg: dict[str, Any]) -> None:
        tcid = msg.get("tool_call_id")
        found: dict[str, Any] | None = self.calls_by_id.get(tcid) if isinstance(tcid, str) else None
        if found is None and self.cur is not None:  # no id: first call of that name still without a result
            found = next(
                (c for c in self.cur["tool_calls"] if c["name"] == msg.get("name") and "result" not in c), None
            )
        if found is None:
            self.log.add(self.loc, f"traj.{i}.tool_call_id", "tool result matches no earlier tool call")
            return
        found["result"] = msg.get("content")

    def read(self, traj: list[Any]) -> str | None:
        """Read every message; return the user simulator's stop message when it ends the trajectory."""
        for i, msg in enumerate(traj):
            if not isinstance(msg, dict):
                self.log.add(self.loc, f"traj.{i}", f"each message must be an object, got {type(msg).__name__}")
                continue
            role = msg.get("role")
            if not isinstance(role, str):
                self.log.add(self.loc, f"traj.{i}.role", "missing or not a string")
            elif role == "user":
                self.new_turn(_text(msg.get("content")))
            elif role == "assistant":
                self.assistant(i, msg)
            elif role == "tool":
                self.tool(i, msg)
            # "system", and other roles (e.g. "function" in old OpenAI logs), carry nothing we map
        last = self.interactions[-1] if self.interactions else None
        if last is not None and last["answer"] is None and not last["tool_calls"] and STOP_TOKEN in (
                last["query"] or ""):
            return self.interactions.pop()["query"]
        return None


def tau_record_to_trial(
    rec: Any, *, agent: str, loc: int, log: ProblemLog, error_status: Status = Status.infra_error
) -> dict[str, Any] | None:
    """Convert one tau-bench record to a :class:`Trial` dict, or ``None`` after logging its problems.

    Problems name the raw record's fields (``"traj.5.tool_calls.0.function.name"``) at record index ``loc``.
    """
    if not isinstance(rec, dict):
        log.add(loc, None, f"expected a JSON object, got {type(rec).__name__}")
        return None
    n_before = len(log.problems)
    info, task = _header(rec, loc, log)
    expected = _expected_calls(task, loc, log)
    traj = rec.get("traj")
    if "traj" in rec and not isinstance(traj, list):
        log.add(loc, "traj", f"must be a list of messages, got {type(traj).__name__}")
        traj = []
    conversation = _Conversation(loc, log)
    stop_message = conversation.read(traj or [])
    if len(log.problems) > n_before:
        return None
    meta: dict[str, Any] = {"format": "tau_bench"}
    for key in ("instruction", "user_id", "outputs"):
        if key in task:
            meta[key] = task[key]
    for key in ("source", "user_cost", "error"):
        if key in info:
            meta[key] = info[key]
    if isinstance(info.get("reward_info"), dict):
        meta["reward_info"] = {k: v for k, v in info["reward_info"].items() if k != "actions"}
    if stop_message is not None:
        meta["stop_message"] = stop_message
    tools = rec.get("tools", info.get("tools"))
    out: dict[str, Any] = {
        "agent": agent,
        "task_id": str(rec["task_id"]),
        "trial": rec["trial"],
        "reward": float(rec["reward"]),
        "interactions": conversation.interactions,
        "expected_tool_calls": expected,
        "meta": meta,
    }
    if "error" in info:
        out["status"] = Status(error_status).value
    if tools:
        out["tools"] = tools
    return out


def read_tau_bench(
    path: str | os.PathLike,
    log: ProblemLog,
    *,
    agent: str | None = None,
    error_status: str | Status = Status.infra_error,
) -> list[Trial]:
    """Read a tau-bench result file (JSON array, plain or gzip) into trials.

    Parameters
    ----------
    path : str or PathLike
    log : ProblemLog
        Problems are logged with 0-based record indices and the raw record's field paths.
    agent : str, optional
        Agent name; default :func:`agent_from_filename`.
    error_status : {"infra_error", "agent_error"}
        Status of records whose ``info`` holds a runner ``"error"``.

    Returns
    -------
    list of Trial
    """
    status = check_error_status(error_status)
    agent = agent or agent_from_filename(path)
    log.unit = "record"

    def converted():
        for idx, rec in iter_json_array(path, log):
            d = tau_record_to_trial(rec, agent=agent, loc=idx, log=log, error_status=status)
            if d is not None:
                yield idx, d

    # a converted field still invalid: the problem names the converted record
    return build_trials(converted(), log, unit="record", prefix="(converted trial) ")


register_format("tau_bench", read_tau_bench, aliases=("tau-bench", "taubench"), options=("agent", "error_status"))

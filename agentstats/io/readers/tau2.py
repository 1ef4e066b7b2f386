"""Import tau2-bench result files.

tau2-bench: Barres et al. 2025, "tau^2-Bench: Evaluating Conversational Agents in a Dual-Control Environment",
arXiv 2506.07982.

A tau2 results file is one JSON object (plain or gzip)::

    {"timestamp": "...",
     "info": {"num_trials": 4, "agent_info": {"implementation": "llm_agent", "llm": "gpt-4.1"},
              "user_info": {"implementation": "user_simulator", "llm": "gpt-4.1"},
              "environment_info": {"domain_name": "retail", ...}},
     "tasks": [{"id": "0", "evaluation_criteria": {"actions": [{"action_id": "0_0", "requestor": "assistant",
                "name": ..., "arguments": {...}, "compare_args": null}], "reward_basis": ["DB", ...]}}],
     "simulations": [{"id": "uuid", "task_id": "0", "trial": 0, "termination_reason": "user_stop",
                      "duration": 60.0, "agent_cost": 0.12, "user_cost": 0.07,
                      "reward_info": {"reward": 1.0, "reward_breakdown": {"DB": 1.0}, "action_checks": [...]},
                      "messages": [{"role": "assistant", "content": null,
                                    "tool_calls": [{"id", "name", "arguments": {...}, "requestor": "assistant"}],
                                    "usage": {"prompt_tokens": 10, "completion_tokens": 3}},
                                   {"role": "tool", "id": "...", "content": "...", "requestor": "assistant"},
                                   {"role": "user", "content": "...", "tool_calls": [... "requestor": "user"]}]}]}

Mapping: one simulation is one :class:`~agentstats.records.trial.Trial`:

* ``agent`` = ``info.agent_info.llm`` (else its ``implementation``, else the file name); ``agent=`` overrides it.
  ``task_id`` = the simulation's ``task_id``; ``trial`` = its ``trial`` (else the order of appearance within the
  task, from 0).
* ``reward`` = ``reward_info.reward``: success when 1 within 1e-6, as tau2's pass^k counts it. Each component of
  ``reward_info.reward_breakdown`` is kept as a per-trial metric ``meta["metrics"]["reward.<COMPONENT>"]``.
* ``termination_reason`` (:data:`TERMINATION_STATUS`, tau2's rule): ``user_stop`` and ``agent_stop`` end a
  simulation normally (``completed``); ``infrastructure_error`` never ran (``infra_error``: missing, as tau2's
  metrics leave it out); every other reason (``max_steps``, ``timeout``, ``too_many_errors``, ``agent_error``,
  ``context_window_exceeded``, ``unexpected_error``) is scored 0 by tau2, a failure (``agent_error``), with
  ``reward_info`` null or not; ``user_error`` (the user simulator failed: the harness, not the agent) gets
  ``error_status`` (default ``"infra_error"``: missing, not a failure; ``"agent_error"`` counts it as tau2 does).
  An unknown reason is a problem, and so is ``reward_info: null`` on a simulation that ended normally.
* What is left out is said in ``TrialSet.notes``: the missing simulations by reason, and the tasks of ``tasks``
  that no simulation ran.
* tau2's "dir" storage format (a folder, or its ``results.json``, with one ``simulations/<id>.json`` per
  simulation, named by ``simulation_index``) reads as the single file does.
* The conversation: each user message with text starts an :class:`~agentstats.records.trial.Interaction`; the
  assistant's tool calls (``requestor: "assistant"``) go to its ``tool_calls``, the simulated user's own tool
  calls (``requestor: "user"``, e.g. operating a phone in telecom) to the extra field ``user_tool_calls``, so
  the two are never mixed. ``tool`` messages give the ``result`` of the call with the same id. The last
  assistant text of a turn is its ``answer``. A last user message holding the user simulator's stop token
  ``###STOP###`` with no reply is kept in ``meta["stop_message"]``, not as a turn.
* Expected actions of the task: ``requestor: "assistant"`` ones are the trial's ``expected_tool_calls``
  (``id`` = ``action_id``, ``compare_args`` kept on the call), ``requestor: "user"`` ones go to
  ``meta["expected_user_tool_calls"]``. tau2's own per-action labels (``reward_info.action_checks``) are kept
  in ``meta["action_checks"]`` as ``{"action_id", "requestor", "action_match", "action_reward"}``.
* ``usage``: ``latency_s`` = ``duration``, ``cost_usd`` = ``agent_cost`` (the user simulator's ``user_cost``
  stays in ``meta``), tokens = the sum of the assistant messages' ``usage`` (when recorded).
* ``meta`` also holds ``simulation_id``, ``termination_reason``, ``domain``, ``user_llm``, ``seed``,
  ``start_time``, ``end_time`` and ``reward_basis``.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agentstats.files.sniff import open_text
from agentstats.io.jsonl import build_trials
from agentstats.io.readers.tau_bench import STOP_TOKEN, agent_from_filename
from agentstats.records.problems import ProblemLog, json_error_text
from agentstats.records.trial import Status, Trial, check_error_status

__all__ = ["TERMINATION_STATUS", "dir_paths", "iter_tau2", "looks_like_tau2", "read_tau2", "tau2_simulation_to_trial"]

#: How each tau2 ``termination_reason`` maps to a trial status (``"error_status"``: the reader's option). The reasons
#: are tau2's ``TerminationReason`` (``src/tau2/data_model/simulation.py``, tau2-bench 1.0.1, commit a2c02472); its
#: rule: ``evaluate_simulation`` (``src/tau2/evaluator/evaluator.py``) scores reward 0 for every reason but
#: ``user_stop`` / ``agent_stop``, and its metrics (``src/tau2/metrics/agent_metrics.py``, ``get_metrics_df``) leave
#: ``infrastructure_error`` simulations out of the denominator (never ran: missing).
TERMINATION_STATUS: dict[str, str] = {
    "user_stop": Status.completed,
    "agent_stop": Status.completed,
    "max_steps": Status.agent_error,
    "timeout": Status.agent_error,
    "too_many_errors": Status.agent_error,
    "agent_error": Status.agent_error,
    "context_window_exceeded": Status.agent_error,
    "unexpected_error": Status.agent_error,
    "user_error": "error_status",
    "infrastructure_error": Status.infra_error,
}

_UNIT = "simulation"
#: The folder of tau2's "dir" storage format that holds one ``<simulation id>.json`` per simulation.
SIMULATIONS_DIR = "simulations"


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _obj(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _text(content: Any) -> str | None:
    if content is None:
        return None
    if isinstance(content, list):
        content = "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content)
    text = str(content)
    return text if text.strip() else None


def _call(tc: Any, where: str, loc: int, log: ProblemLog) -> dict[str, Any] | None:
    if not isinstance(tc, dict) or not isinstance(tc.get("name"), str):
        log.add(loc, f"{where}.name", "each tool call needs a string 'name'", unit=_UNIT)
        return None
    args = tc.get("arguments", {})
    if args is not None and not isinstance(args, (dict, str)):
        log.add(loc, f"{where}.arguments", f"must be an object, got {type(args).__name__}", unit=_UNIT)
        return None
    return {"id": tc.get("id"), "name": tc["name"], "arguments": {} if args is None else args}


def _expected(task: dict[str, Any], task_loc: int, log: ProblemLog) -> tuple[list[dict], list[dict]] | None:
    """Split one task's expected actions by requestor: ``(assistant, user)``; ``None`` after a problem."""
    crit = task.get("evaluation_criteria") or {}
    if not isinstance(crit, dict):
        log.add(task_loc, "evaluation_criteria", f"must be an object, got {type(crit).__name__}", unit="task")
        return None
    actions = crit.get("actions") or []
    if not isinstance(actions, list):
        log.add(task_loc, "evaluation_criteria.actions", "must be a list", unit="task")
        return None
    agent_side: list[dict] = []
    user_side: list[dict] = []
    bad = False
    for j, a in enumerate(actions):
        where = f"evaluation_criteria.actions.{j}"
        if not isinstance(a, dict) or not isinstance(a.get("name"), str):
            log.add(task_loc, f"{where}.name", "each action needs a string 'name'", unit="task")
            bad = True
            continue
        args = a.get("arguments") or {}
        if not isinstance(args, dict):
            log.add(task_loc, f"{where}.arguments", f"must be an object, got {type(args).__name__}", unit="task")
            bad = True
            continue
        compare = a.get("compare_args")
        if compare is not None and not (isinstance(compare, list) and all(isinstance(k, str) for k in compare)):
            log.add(task_loc, f"{where}.compare_args", "must be null or a list of argument names", unit="task")
            bad = True
            continue
        requestor = a.get("requestor", "assistant")
        if requestor not in ("assistant", "user"):
            log.add(task_loc, f"{where}.requestor", f"must be 'assistant' or 'user', got {requestor!r}", unit="task")
            bad = True
            continue
        call = {"id": a.get("action_id"), "name": a["name"], "arguments": args, "compare_args": compare,
                "requestor": requestor}
        if a.get("info") is not None:
            call["info"] = a["info"]
        (agent_side if requestor == "assistant" else user_side).append(call)
    return None if bad else (agent_side, user_side)


def _conversation(messages: Any, loc: int, log: ProblemLog) -> tuple[list[dict], dict[str, Any]] | None:
    """Interactions and summed assistant token usage of one simulation; ``None`` after a problem."""
    if not isinstance(messages, list):
        log.add(loc, "messages", f"must be a list of messages, got {type(messages).__name__}", unit=_UNIT)
        return None
    n_before = len(log.problems)
    turns: list[dict[str, Any]] = []
    cur: dict[str, Any] | None = None
    by_id: dict[str, dict[str, Any]] = {}
    tokens: dict[str, Any] = {"input_tokens": 0, "output_tokens": 0, "n": 0}

    def new_turn(query: str | None) -> dict[str, Any]:
        turn: dict[str, Any] = {"id": f"turn-{len(turns)}", "query": query, "answer": None, "tool_calls": [],
                                "user_tool_calls": []}
        turns.append(turn)
        return turn

    for i, msg in enumerate(messages):
        if not isinstance(msg, dict):
            log.add(loc, f"messages.{i}", f"each message must be an object, got {type(msg).__name__}", unit=_UNIT)
            continue
        role = msg.get("role")
        if role not in ("assistant", "user", "tool", "system"):
            log.add(loc, f"messages.{i}.role", f"must be assistant, user, tool or system, got {role!r}", unit=_UNIT)
            continue
        if role == "system":
            continue
        if role == "tool":
            tcid = msg.get("id")
            found = by_id.get(tcid) if isinstance(tcid, str) else None
            if found is None:
                log.add(loc, f"messages.{i}.id", "tool result matches no earlier tool call", unit=_UNIT)
                continue
            found["result"] = msg.get("content")
            if msg.get("error"):
                found["error"] = True
            continue
        text = _text(msg.get("content"))
        if role == "user" and (text is not None or cur is None):
            cur = new_turn(text)
        elif cur is None:
            cur = new_turn(None)
        tcs = msg.get("tool_calls") or []
        if not isinstance(tcs, list):
            log.add(loc, f"messages.{i}.tool_calls", f"must be a list, got {type(tcs).__name__}", unit=_UNIT)
            tcs = []
        for j, tc in enumerate(tcs):
            call = _call(tc, f"messages.{i}.tool_calls.{j}", loc, log)
            if call is None:
                continue
            requestor = tc.get("requestor") or role
            (cur["tool_calls"] if requestor == "assistant" else cur["user_tool_calls"]).append(call)
            if isinstance(call["id"], str):
                by_id[call["id"]] = call
        if role == "assistant":
            if text is not None:
                cur["answer"] = text
            usage = msg.get("usage")
            if isinstance(usage, dict):
                pt, ct = usage.get("prompt_tokens"), usage.get("completion_tokens")
                if isinstance(pt, int) and isinstance(ct, int):
                    tokens["input_tokens"] += pt
                    tokens["output_tokens"] += ct
                    tokens["n"] += 1
    if len(log.problems) > n_before:
        return None
    for t in turns:
        if not t["user_tool_calls"]:
            del t["user_tool_calls"]
    last = turns[-1] if turns else None
    if last and last["answer"] is None and not last["tool_calls"] and "user_tool_calls" not in last and (
        STOP_TOKEN in (last["query"] or "")
    ):
        tokens["stop_message"] = turns.pop()["query"]
    return turns, tokens


def tau2_simulation_to_trial(
    sim: Any,
    *,
    agent: str,
    loc: int,
    log: ProblemLog,
    tasks: dict[str, tuple[list[dict], list[dict]] | None],
    trial: int,
    common_meta: dict[str, Any],
    error_status: Status = Status.infra_error,
    by_actions: dict[tuple[str, ...], list[str]] | None = None,
) -> dict[str, Any] | None:
    """Convert one tau2 simulation to a :class:`Trial` dict, or ``None`` after logging its problems.

    Problems are logged at the 0-based simulation index ``loc`` with the simulation's field paths
    (``"reward_info.reward"``, ``"messages.5.tool_calls.0.name"``).
    """
    if not isinstance(sim, dict):
        log.add(loc, None, f"expected a JSON object, got {type(sim).__name__}", unit=_UNIT)
        return None
    n_before = len(log.problems)
    if "task_id" not in sim:
        log.add(loc, "task_id", "missing required field", unit=_UNIT)
    task_id = sim.get("task_id")
    if "task_id" in sim and (not isinstance(task_id, (str, int)) or isinstance(task_id, bool)):
        log.add(loc, "task_id", f"must be a string or an integer, got {task_id!r}", unit=_UNIT)
    elif task_id is not None and str(task_id) not in tasks:
        log.add(loc, "task_id", f"task {task_id!r} is not among the file's tasks", unit=_UNIT)
    elif task_id is not None and tasks[str(task_id)] is None:
        log.add(loc, "task_id", f"task {task_id!r} has problems (listed at its task index)", unit=_UNIT)
    reason = sim.get("termination_reason")
    status = Status.completed
    if reason is not None:
        mapped = TERMINATION_STATUS.get(str(reason))
        if mapped is None:
            log.add(loc, "termination_reason",
                    f"unknown termination reason {reason!r} (known: {', '.join(TERMINATION_STATUS)})", unit=_UNIT)
        else:
            status = Status(error_status if mapped == "error_status" else mapped)
    info = sim.get("reward_info")
    reward = None
    if info is None:
        # tau2 writes ``reward_info: null`` for a simulation it never evaluated (an infrastructure error); the
        # status decides such a trial. One that ended normally without a reward has no outcome to read.
        if status is Status.completed and reason is not None and str(reason) in TERMINATION_STATUS:
            log.add(loc, "reward_info", f"null for a simulation that ended normally ({reason}): it was never "
                    "evaluated (run tau2's evaluation on the file first)", unit=_UNIT)
        elif reason is None:
            log.add(loc, "reward_info", "missing, and no termination_reason says why", unit=_UNIT)
    elif not isinstance(info, dict):
        log.add(loc, "reward_info", f"must be an object, got {type(info).__name__}", unit=_UNIT)
        info = {}
    elif "reward" not in info:
        log.add(loc, "reward_info.reward", "missing required field", unit=_UNIT)
    elif not _is_num(info["reward"]):
        log.add(loc, "reward_info.reward", f"must be a finite number, got {info['reward']!r}", unit=_UNIT)
    else:
        reward = float(info["reward"])
    conv = _conversation(sim.get("messages") or [], loc, log)
    if len(log.problems) > n_before or conv is None:
        return None
    turns, tokens = conv
    exp = tasks[str(task_id)]
    assert exp is not None  # a task with problems is a problem above
    expected, expected_user = exp
    info = info or {}
    meta: dict[str, Any] = {"format": "tau2", **common_meta}
    for src, dst in (("id", "simulation_id"), ("termination_reason", "termination_reason"), ("seed", "seed"),
                     ("start_time", "start_time"), ("end_time", "end_time"), ("user_cost", "user_cost")):
        if sim.get(src) is not None:
            meta[dst] = sim[src]
    if info.get("reward_basis") is not None:
        meta["reward_basis"] = info["reward_basis"]
    breakdown = info.get("reward_breakdown")
    if isinstance(breakdown, dict):
        meta["metrics"] = {f"reward.{k}": float(v) for k, v in breakdown.items() if _is_num(v)}
    checks = info.get("action_checks")
    if isinstance(checks, list):
        kept = []
        for c in checks:
            action = c.get("action") if isinstance(c, dict) else None
            if not isinstance(action, dict):
                continue
            kept.append({"action_id": action.get("action_id"), "requestor": action.get("requestor", "assistant"),
                         "name": action.get("name"), "arguments": action.get("arguments") or {},
                         "compare_args": action.get("compare_args"), "action_match": c.get("action_match"),
                         "action_reward": c.get("action_reward")})
        meta["action_checks"] = kept
        graded = _graded_task(kept, by_actions)
        if graded is not None and graded != str(task_id):
            meta["graded_task_id"] = graded
            log.note(loc, "task_id",
                     f"tau2 graded this simulation against the actions of task {graded!r}, not of its task_id "
                     f"{str(task_id)!r} (kept as given; the graded task is in meta['graded_task_id'])", unit=_UNIT)
    if expected_user:
        meta["expected_user_tool_calls"] = expected_user
    if "stop_message" in tokens:
        meta["stop_message"] = tokens["stop_message"]
    usage: dict[str, Any] = {}
    if _is_num(sim.get("duration")):
        usage["latency_s"] = float(sim["duration"])
    if _is_num(sim.get("agent_cost")):
        usage["cost_usd"] = float(sim["agent_cost"])
    if tokens["n"]:
        usage["input_tokens"] = tokens["input_tokens"]
        usage["output_tokens"] = tokens["output_tokens"]
    out: dict[str, Any] = {
        "agent": agent,
        "task_id": str(task_id),
        "trial": trial,
        "status": status,
        "reward": reward,
        "interactions": turns,
        "expected_tool_calls": expected,
        "meta": meta,
    }
    if usage:
        out["usage"] = usage
    return out


def _graded_task(checks: list[dict[str, Any]], by_actions: dict[tuple[str, ...], list[str]] | None) -> str | None:
    """Find the one task whose action ids are exactly those tau2 checked; ``None`` without checks or when ambiguous."""
    ids = tuple(sorted(str(c["action_id"]) for c in checks))
    if not ids or by_actions is None:
        return None
    found = by_actions.get(ids, [])
    return found[0] if len(found) == 1 else None


def _read_json(path: str | os.PathLike, log: ProblemLog, unit: str = "line") -> Any:
    """Parse one JSON file (plain or gzip); ``None`` after logging why it cannot be read."""
    try:
        with open_text(path) as fh:
            return json.load(fh)
    except json.JSONDecodeError as exc:
        if unit == "line":
            log.add(exc.lineno, None, f"malformed JSON (truncated file?): {json_error_text(exc.msg, exc.colno)}",
                    unit="line", whole_file=True)  # one JSON object: nothing left to read past the error
        else:
            log.add(None, str(path), f"malformed JSON (truncated file?) at line {exc.lineno}: "
                    f"{json_error_text(exc.msg, exc.colno)}")
    except (OSError, EOFError) as exc:
        log.add(None, None, f"cannot read file (corrupt or truncated compression?): {exc}")
    except UnicodeDecodeError as exc:
        log.add(None, None, f"not UTF-8 text: {exc}")
    except (RecursionError, ValueError) as exc:
        log.add(None, None, f"malformed JSON: {exc}")
    return None


def dir_paths(path: str | os.PathLike) -> tuple[Path, Path] | None:
    """``(results.json, simulations/)`` of tau2's "dir" storage format at ``path``, or ``None`` when it is not one.

    tau2's ``Results._detect_format`` (``src/tau2/data_model/simulation.py``, tau2-bench 1.0.1): a folder, or a
    ``results.json`` with a ``simulations/`` folder beside it.
    """
    p = Path(path)
    if p.is_dir():
        return (p / "results.json", p / SIMULATIONS_DIR) if (p / "results.json").is_file() else None
    sims = p.parent / SIMULATIONS_DIR
    return (p, sims) if sims.is_dir() and p.name.endswith((".json", ".json.gz")) else None


def _dir_simulations(meta: dict[str, Any], sims_dir: Path, log: ProblemLog) -> list[Any]:
    """Return the simulations of a "dir" results folder, in the order of its ``simulation_index`` (else by file name).

    A simulation named in the index without its file, or a file the index does not name, is a problem (tau2's own
    ``Results.load`` refuses both).
    """
    files = {f.name.removesuffix(".json"): f for f in sorted(sims_dir.glob("*.json"))} if sims_dir.is_dir() else {}
    index = meta.get("simulation_index")
    order = list(files)
    if isinstance(index, list):
        named = [str(e.get("id")) if isinstance(e, dict) else "" for e in index]
        for i, sid in enumerate(named):
            if sid not in files:
                log.add(i, "simulation_index.id", f"simulation file {SIMULATIONS_DIR}/{sid}.json is missing",
                        unit="index entry")
        for sid in sorted(set(files) - set(named)):
            log.add(None, f"{SIMULATIONS_DIR}/{sid}.json", "a simulation file the simulation_index does not name")
        order = [sid for sid in named if sid in files]
    out: list[Any] = []
    for sid in order:
        out.append(_read_json(files[sid], log, unit="file"))
    return out


def _load(path: str | os.PathLike, log: ProblemLog) -> dict[str, Any] | None:
    found = dir_paths(path)
    data = _read_json(found[0] if found else path, log)
    if data is None:
        return None
    if not isinstance(data, dict):
        log.add(None, None, f"not a tau2 results file: expected a JSON object, got a JSON {type(data).__name__}")
        return None
    if found is not None and not data.get("simulations"):
        data["simulations"] = _dir_simulations(data, found[1], log)
    missing = [k for k in ("tasks", "simulations") if not isinstance(data.get(k), list)]
    if missing:
        log.add(None, missing[0],
                f"not a tau2 results file (or an unknown version of it): no {missing[0]!r} list "
                f"(top-level keys: {sorted(data)[:10]})")
        return None
    return data


def _say_excluded(data: dict[str, Any], missing: dict[str, int], log: ProblemLog) -> None:
    """Note what the file leaves out of the counts: missing simulations by reason, tasks defined but never run."""
    if missing:
        n = sum(missing.values())
        log.note(None, "termination_reason",
                 f"{n} simulation{'s' if n != 1 else ''} missing (not in n; tau2 leaves infrastructure errors out of "
                 "its metrics): " + ", ".join(f"{r} {k}" for r, k in sorted(missing.items())), unit=_UNIT)
    defined = [str(t["id"]) for t in data["tasks"] if isinstance(t, dict) and isinstance(t.get("id"), (str, int))]
    run = {str(s.get("task_id")) for s in data["simulations"] if isinstance(s, dict)}
    never = [t for t in defined if t not in run]
    if never:
        shown = ", ".join(never[:10]) + (", ..." if len(never) > 10 else "")
        log.note(None, "tasks", f"{len(never)} of the {len(defined)} tasks defined have no simulation (never run, "
                 f"in no count): {shown}", unit="task")


def iter_tau2(
    path: str | os.PathLike,
    log: ProblemLog,
    *,
    agent: str | None = None,
    error_status: str | Status = Status.infra_error,
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(simulation_index, trial dict)`` for each valid simulation of a tau2 results file.

    Problems go to ``log``: file-level ones (malformed or truncated JSON with its line, a missing ``tasks`` or
    ``simulations`` list), task-level ones (unit ``"task"``, 0-based index into ``tasks``, with the field) and
    simulation-level ones (unit ``"simulation"``, 0-based index into ``simulations``, with the field).
    """
    status = check_error_status(error_status)
    data = _load(path, log)
    if data is None:
        return
    info = _obj(data.get("info"))
    agent_info, user_info = _obj(info.get("agent_info")), _obj(info.get("user_info"))
    env_info = _obj(info.get("environment_info"))
    if agent is None:
        agent = agent_info.get("llm") or agent_info.get("implementation") or agent_from_filename(path)
    common: dict[str, Any] = {}
    if env_info.get("domain_name"):
        common["domain"] = env_info["domain_name"]
    if user_info.get("llm"):
        common["user_llm"] = user_info["llm"]
    if agent_info.get("implementation"):
        common["agent_implementation"] = agent_info["implementation"]
    tasks: dict[str, tuple[list[dict], list[dict]] | None] = {}
    for k, task in enumerate(data["tasks"]):
        if not isinstance(task, dict) or not isinstance(task.get("id"), (str, int)):
            log.add(k, "id", "each task needs a string or integer 'id'", unit="task")
            continue
        tasks[str(task["id"])] = _expected(task, k, log)
    by_actions: dict[tuple[str, ...], list[str]] = {}
    for tid, exp in tasks.items():
        if exp is not None:
            by_actions.setdefault(tuple(sorted(str(a["id"]) for a in exp[0] + exp[1])), []).append(tid)
    next_trial: dict[str, int] = {}
    missing: dict[str, int] = {}
    for idx, sim in enumerate(data["simulations"]):
        trial = sim.get("trial") if isinstance(sim, dict) else None
        if trial is not None and (not isinstance(trial, int) or isinstance(trial, bool) or trial < 0):
            log.add(idx, "trial", f"must be a non-negative integer, got {trial!r}", unit=_UNIT)
            continue
        tid = str(sim.get("task_id")) if isinstance(sim, dict) else ""
        if trial is None:
            trial = next_trial.get(tid, 0)
        next_trial[tid] = max(next_trial.get(tid, 0), trial + 1)
        d = tau2_simulation_to_trial(sim, agent=agent, loc=idx, log=log, tasks=tasks, trial=trial,
                                     common_meta=common, error_status=status, by_actions=by_actions)
        if d is not None:
            if d["status"] is Status.infra_error:
                reason = str(d["meta"].get("termination_reason", "?"))
                missing[reason] = missing.get(reason, 0) + 1
            yield idx, d
    _say_excluded(data, missing, log)


def read_tau2(
    path: str | os.PathLike,
    log: ProblemLog,
    *,
    agent: str | None = None,
    error_status: str | Status = Status.infra_error,
) -> list[Trial]:
    """Read a tau2-bench results file (JSON object, plain or gzip) into trials, one per simulation.

    Parameters
    ----------
    path : str or PathLike
    log : ProblemLog
        Problems are logged with the file's line (malformed JSON), the 0-based task or simulation index, and
        the field path inside it.
    agent : str, optional
        Agent name; default ``info.agent_info.llm``.
    error_status : {"infra_error", "agent_error"}
        Status of simulations ended by ``termination_reason: "user_error"`` (the user simulator failed).

    Returns
    -------
    list of Trial
        In the file's simulation order. See the module docstring for the mapping.
    """
    log.unit = _UNIT

    records = iter_tau2(path, log, agent=agent, error_status=error_status)
    return build_trials(records, log, unit=_UNIT, prefix="(converted trial) ")


def looks_like_tau2(path: Any, head: bytes) -> bool:
    """Tell from a file's first bytes whether it is a tau2 results file.

    A tau2 results file is a JSON object with ``info``, ``tasks`` and ``simulations``, usually indented.
    """
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")
    if not text.startswith("{"):
        return False
    first = text.split("\n", 1)[0]
    try:
        obj = json.loads(first)
    except json.JSONDecodeError:
        obj = None
    if isinstance(obj, dict):  # the whole file on one line (or JSONL): decide on the keys
        return {"tasks", "simulations"} <= set(obj)
    if '"simulations"' in text and '"tasks"' in text:
        return True
    return all(f'"{k}"' in text for k in ("num_trials", "agent_info", "user_info"))


def looks_like_tau2_dir(path: Any) -> bool:
    """Tell from a path alone whether it is a folder in tau2's "dir" storage format (``results.json`` inside)."""
    return Path(path).is_dir() and dir_paths(path) is not None


def register() -> None:
    """Make ``load_trials(path)`` read tau2 results files (``format="tau2"``, also auto-detected)."""
    from agentstats.io.registry import register_format

    register_format("tau2", read_tau2, aliases=("tau2-bench", "tau2_bench", "tau2bench"), detect=looks_like_tau2,
                    sniff=looks_like_tau2_dir)


register()

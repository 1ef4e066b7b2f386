"""Importers for Fair Forge data (``Dataset`` / ``Batch`` JSON) and FAI-style JSONL.

Fair Forge (Alquimia AI, ``fair_forge.schemas.common``) stores one conversation per ``Dataset``::

    {"session_id", "assistant_id", "language", "context",
     "conversation": [Batch, ...]}
    Batch = {"qa_id", "query", "assistant", "ground_truth_assistant", "observation", "weight", "logprobs",
             "agentic": {"tools_used": [{"tool_name", "parameters", "result", "step"}],
                         "final_answer_uses_tools": bool},
             "ground_truth_agentic": {"expected_tools": [{"tool_name", "parameters", "step"}],
                                      "tool_sequence_matters": bool}}

Mapping to :class:`~agentstats.records.trial.Trial` (one ``Dataset`` = one trial):

* ``agent`` = the ``agent=`` argument, else ``assistant_id``. Fair Forge's own examples put repeated attempts
  of one conversation in Datasets sharing a ``session_id`` with ``assistant_id`` = ``agent_response_1, _2, ...``:
  when a session holds several Datasets and every ``assistant_id`` is ``<stem>_<n>`` with one stem, they are read
  as trials of one agent ``<stem>`` (trial = attempt order), with a note; ``agent=`` names that agent.
* ``task_id`` = the Dataset field named by ``task_from`` (default ``session_id``); ``trial`` = 0, 1, ... in file
  order within each (agent, task). ``session_id``, ``assistant_id``, ``language`` and ``context`` are kept as
  extra fields of the trial.
* each Batch = one interaction: ``qa_id`` → ``id``, ``query``, ``assistant`` → ``answer``,
  ``ground_truth_assistant`` → ``expected_answer``, ``tools_used`` → ``tool_calls`` (``tool_name`` → ``name``,
  ``parameters`` → ``arguments``, ``result``, ``step``), ``expected_tools`` → ``expected_tool_calls``,
  ``tool_sequence_matters`` (Fair Forge's default ``True`` when ``ground_truth_agentic`` is given),
  ``final_answer_uses_tools`` → ``tool_results_used`` (the user-given utilization hint read by
  :func:`agentstats.scoring.tools.score_trial_tools`); ``observation`` and ``weight`` are kept as extras.

A bare JSON array of Batches (no Datasets) loads one single-interaction trial per Batch, ``task_id = qa_id``,
repeated ``qa_id`` s being repeated trials; it needs ``agent=``.

FAI-style JSONL (one test case per line: ``id, input, expected, context, tags, risk_level``) plus the agent's
answer in ``output`` (or ``answer`` / ``response`` / ``actual``) loads one single-interaction trial per line:
``task_id = id``; ``agent`` from the line or ``agent=``; ``trial`` from the line or 0, 1, ... per (agent, id).
Optional per line: ``trial``, ``tool_calls``, ``expected_tool_calls``, ``tools``, ``success``, ``reward``,
``status``; other fields are kept as extras.

Problems (missing or mistyped fields, malformed JSON, duplicate keys) are collected with file, line (JSONL,
1-based) or record index (JSON arrays, 0-based; Batch positions as ``conversation.<i>.<field>``) and field, and
raised together (``on_error="raise"``) or skipped and listed (``on_error="skip"``), as every agentstats loader.
Load them with ``agentstats.load_trials(src, format="fair_forge")`` (files or the objects themselves) and
``load_trials(path, format="fai_jsonl")``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from typing import Any

from agentstats.io.jsonl import build_trials, iter_json_array, iter_jsonl
from agentstats.records.problems import ProblemLog
from agentstats.records.trial import Trial

__all__ = ["read_fai_jsonl", "read_fair_forge", "register"]

_ANSWER_FIELDS = ("output", "answer", "response", "actual")
_FAI_KNOWN = {
    "id",
    "input",
    "expected",
    "context",
    "tags",
    "risk_level",
    "agent",
    "trial",
    "tool_calls",
    "expected_tool_calls",
    "tools",
    "success",
    "reward",
    "status",
    *_ANSWER_FIELDS,
}


def _records(src: Any, log: ProblemLog) -> Iterator[tuple[int, Any]]:
    """(index, record) from a path (JSON array or single object) or in-memory objects."""
    if isinstance(src, (str, os.PathLike)):
        from agentstats.files.sniff import open_text

        with open_text(src) as fh:
            head = fh.read(4096).lstrip("\ufeff \t\r\n")[:1]
        if head == "{":  # one Dataset object
            import json

            try:
                with open_text(src) as fh:
                    obj = json.load(fh)
            except ValueError as exc:
                log.add(None, None, f"malformed JSON: {exc}")
                return
            yield 0, obj
            return
        yield from iter_json_array(src, log)
        return
    items = [src] if isinstance(src, Mapping) or hasattr(src, "model_dump") else list(src)
    for i, obj in enumerate(items):
        yield i, obj.model_dump() if hasattr(obj, "model_dump") else obj


def _req_str(
    rec: Mapping[str, Any], key: str, log: ProblemLog, loc: int, prefix: str = "", allow_int: bool = True
) -> str | None:
    v = rec.get(key)
    if v is None:
        log.add(loc, f"{prefix}{key}", "required field is missing")
        return None
    if isinstance(v, bool) or not isinstance(v, (str, int) if allow_int else str):
        log.add(loc, f"{prefix}{key}", f"must be a string, got {type(v).__name__} {v!r:.60}")
        return None
    return str(v)


def _tool_list(raw: Any, log: ProblemLog, loc: int, field: str) -> list[dict[str, Any]] | None:
    if raw is None:
        return []
    if not isinstance(raw, list):
        log.add(loc, field, f"must be a list of tool entries, got {type(raw).__name__}")
        return None
    out = []
    ok = True
    for j, tool in enumerate(raw):
        f = f"{field}.{j}"
        if not isinstance(tool, Mapping):
            log.add(loc, f, f"must be an object, got {type(tool).__name__}")
            ok = False
            continue
        name = tool.get("tool_name", tool.get("name"))
        if not isinstance(name, str) or not name:
            log.add(loc, f"{f}.tool_name", "required field is missing or not a string")
            ok = False
            continue
        params = tool.get("parameters", tool.get("arguments", {}))
        if params is not None and not isinstance(params, (Mapping, str)):
            log.add(loc, f"{f}.parameters", f"must be an object, got {type(params).__name__}")
            ok = False
            continue
        call: dict[str, Any] = {"name": name, "arguments": params if params is not None else {}}
        for extra in ("result", "step", "id"):
            if extra in tool:
                call[extra] = tool[extra]
        out.append(call)
    return out if ok else None


def _batch_to_interaction(b: Any, log: ProblemLog, loc: int, prefix: str) -> dict[str, Any] | None:
    if not isinstance(b, Mapping):
        log.add(loc, prefix.rstrip(".") or None, f"a Batch must be an object, got {type(b).__name__}")
        return None
    n0 = len(log.problems)
    qa_id = _req_str(b, "qa_id", log, loc, prefix)
    query = _req_str(b, "query", log, loc, prefix, allow_int=False)
    answer = _req_str(b, "assistant", log, loc, prefix, allow_int=False)
    gt = b.get("ground_truth_assistant")
    if "ground_truth_assistant" not in b:
        log.add(loc, f"{prefix}ground_truth_assistant", "required field is missing")
    agentic = b.get("agentic") or {}
    gta = b.get("ground_truth_agentic") or {}
    for name, val in (("agentic", agentic), ("ground_truth_agentic", gta)):
        if not isinstance(val, Mapping):
            log.add(loc, f"{prefix}{name}", f"must be an object, got {type(val).__name__}")
    if len(log.problems) > n0:
        return None
    calls = _tool_list(agentic.get("tools_used"), log, loc, f"{prefix}agentic.tools_used")
    expected = _tool_list(gta.get("expected_tools"), log, loc, f"{prefix}ground_truth_agentic.expected_tools")
    if calls is None or expected is None:
        return None
    seq = gta.get("tool_sequence_matters", True if gta else False)
    if not isinstance(seq, bool):
        log.add(
            loc, f"{prefix}ground_truth_agentic.tool_sequence_matters", f"must be true/false, got {seq!r}"
        )
        return None
    it: dict[str, Any] = {
        "id": qa_id,
        "query": query,
        "answer": answer,
        "expected_answer": gt,
        "tool_calls": calls,
        "expected_tool_calls": expected,
        "tool_sequence_matters": seq,
    }
    used = agentic.get("final_answer_uses_tools")
    if isinstance(used, bool):
        it["tool_results_used"] = used
    for extra in ("observation", "weight"):
        if b.get(extra) is not None:
            it[extra] = b[extra]
    return it


def read_fair_forge(
    src: Any, log: ProblemLog, agent: str | None = None, task_from: str = "session_id"
) -> list[Trial]:
    """Read Fair Forge Datasets (or bare Batches) into trials; problems go to ``log``.

    Parameters
    ----------
    src : path, dict, list of dicts, or Fair Forge pydantic objects
        A JSON file (array of Datasets or Batches, or one Dataset object; gzip detected) or the objects.
    log : ProblemLog
    agent : str, optional
        Agent name for every trial (default: each Dataset's ``assistant_id``; required for bare Batches).
    task_from : str
        Dataset field that identifies the task (``"session_id"``, or e.g. ``"context"``).

    Returns
    -------
    list of Trial
    """
    log.unit = "record"
    counters: dict[tuple[str, str], int] = {}
    built: list[tuple[int, Any]] = []
    for loc, rec in _records(src, log):
        if not isinstance(rec, Mapping):
            log.add(loc, None, f"expected a Fair Forge Dataset or Batch object, got {type(rec).__name__}")
            continue
        if "conversation" not in rec and "qa_id" in rec:  # a bare Batch
            if agent is None:
                raise ValueError(f"{log.source}: Fair Forge Batch records carry no assistant id; pass agent=")
            it = _batch_to_interaction(rec, log, loc, "")
            if it is None:
                continue
            task = str(it["id"])
            trial = counters.get((agent, task), 0)
            counters[(agent, task)] = trial + 1
            built.append((loc, {"agent": agent, "task_id": task, "trial": trial, "interactions": [it]}))
            continue
        n0 = len(log.problems)
        sess = _req_str(rec, "session_id", log, loc)
        aid = _req_str(rec, "assistant_id", log, loc)
        task_name = _req_str(rec, task_from, log, loc) if task_from != "session_id" else sess
        conv = rec.get("conversation")
        if not isinstance(conv, list):
            log.add(
                loc,
                "conversation",
                "required list of Batches is missing"
                if conv is None
                else f"must be a list of Batches, got {type(conv).__name__}",
            )
        if len(log.problems) > n0:
            continue
        assert isinstance(conv, list) and task_name is not None and aid is not None  # else a problem above
        task = task_name
        inters = [_batch_to_interaction(b, log, loc, f"conversation.{j}.") for j, b in enumerate(conv)]
        if any(i is None for i in inters):
            continue
        name = agent if agent is not None else aid
        trial = counters.get((name, task), 0)
        counters[(name, task)] = trial + 1
        out: dict[str, Any] = {
            "agent": name,
            "task_id": task,
            "trial": trial,
            "interactions": inters,
            "session_id": sess,
            "assistant_id": aid,
        }
        for extra in ("language", "context"):
            if rec.get(extra) is not None:
                out[extra] = rec[extra]
        built.append((loc, out))
    if agent is None:
        built = _repeated_attempts(built, log)
    return build_trials(built, log, unit="record")


_ATTEMPT = re.compile(r"^(.+?)_(\d+)$")


def _repeated_attempts(built: list[tuple[int, dict[str, Any]]], log: ProblemLog) -> list[tuple[int, dict[str, Any]]]:
    """Read Fair Forge's repeated attempts as trials of one agent: ``assistant_id`` ``<stem>_1 .. <stem>_N``.

    When some ``session_id`` holds several Datasets and every ``assistant_id`` of the file is ``<stem>_<n>`` with one
    stem (Fair Forge's examples: ``agent_response_1, _2, ...``), the Datasets are attempts of one agent ``<stem>``:
    trial = 0, 1, ... within each task, in the order of ``n``. A note says so (``agent=`` names the agent instead).
    Otherwise nothing changes (each ``assistant_id`` an agent).
    """
    parsed = [_ATTEMPT.match(str(out["assistant_id"])) for _, out in built]
    stems = {m.group(1) for m in parsed if m}
    per_session: dict[str, set[str]] = {}
    for _, out in built:
        per_session.setdefault(str(out["session_id"]), set()).add(str(out["assistant_id"]))
    if not built or None in parsed or len(stems) != 1 or max(len(v) for v in per_session.values()) < 2:
        return built
    stem = stems.pop()
    order = sorted(range(len(built)), key=lambda i: (int(parsed[i].group(2)), i))  # type: ignore[union-attr]
    counters: dict[str, int] = {}
    for i in order:
        out = built[i][1]
        out["agent"] = stem
        out["trial"] = counters.get(out["task_id"], 0)
        counters[out["task_id"]] = out["trial"] + 1
    n = max(len(v) for v in per_session.values())
    log.note(None, "assistant_id", f"assistant_id {stem}_1 .. {stem}_{n} under one session_id read as repeated "
             f"attempts of one agent {stem!r} (up to {n} trials per task); pass agent= to name it")
    return built


def _fai_record(
    lineno: int,
    rec: Mapping[str, Any],
    log: ProblemLog,
    agent: str | None,
    require_answer: bool,
    counters: dict[tuple[str, str], int],
) -> dict[str, Any] | None:
    n0 = len(log.problems)
    rid = _req_str(rec, "id", log, lineno)
    query = _req_str(rec, "input", log, lineno, allow_int=False)
    name = rec.get("agent", agent)
    if name is None:
        log.add(lineno, "agent", "no agent: add an 'agent' field or pass agent=")
    elif not isinstance(name, str):
        log.add(lineno, "agent", f"must be a string, got {type(name).__name__}")
    answer_key = next((k for k in _ANSWER_FIELDS if k in rec), None)
    answer = rec.get(answer_key) if answer_key else None
    if answer_key is None and require_answer:
        log.add(
            lineno,
            "output",
            f"no agent answer: give one of {list(_ANSWER_FIELDS)} "
            "(or pass require_answer=False to score missing answers as wrong)",
        )
    elif answer is not None and not isinstance(answer, str):
        log.add(lineno, answer_key, f"must be a string, got {type(answer).__name__}")
    ctx = rec.get("context")
    if ctx is None:
        context: list[str] = []
    elif isinstance(ctx, str):
        context = [ctx]
    elif isinstance(ctx, list) and all(isinstance(c, str) for c in ctx):
        context = list(ctx)
    else:
        log.add(lineno, "context", "must be a string or a list of strings")
        context = []
    tags = rec.get("tags")
    if tags is None:
        tags = []
    elif isinstance(tags, str):
        tags = [tags]
    elif not (isinstance(tags, list) and all(isinstance(t, str) for t in tags)):
        log.add(lineno, "tags", "must be a string or a list of strings")
    risk = rec.get("risk_level")
    if risk is not None and not isinstance(risk, str):
        log.add(lineno, "risk_level", f"must be a string (e.g. 'low', 'high'), got {type(risk).__name__}")
    trial = rec.get("trial")
    if trial is not None and (isinstance(trial, bool) or not isinstance(trial, int)):
        log.add(lineno, "trial", f"must be an integer, got {trial!r}")
    if len(log.problems) > n0:
        return None
    assert rid is not None and isinstance(name, str)
    if trial is None:
        trial = counters.get((name, rid), 0)
        counters[(name, rid)] = trial + 1
    it: dict[str, Any] = {
        "id": rid,
        "query": query,
        "answer": answer,
        "expected_answer": rec.get("expected"),
        "context": context,
    }
    for k in ("tool_calls", "expected_tool_calls"):
        if k in rec:
            it[k] = rec[k]
    out: dict[str, Any] = {
        "agent": name,
        "task_id": rid,
        "trial": trial,
        "interactions": [it],
        "tags": tags,
        "risk_level": risk,
    }
    for k in ("tools", "success", "reward", "status"):
        if k in rec:
            out[k] = rec[k]
    for k, v in rec.items():
        if k not in _FAI_KNOWN:
            out[k] = v
    return out


def read_fai_jsonl(
    path: str | os.PathLike, log: ProblemLog, agent: str | None = None, require_answer: bool = True
) -> list[Trial]:
    """Read FAI-style JSONL (``id, input, expected, context, tags, risk_level`` + answer); problems to ``log``.

    Parameters
    ----------
    path : path
        JSONL file (gzip detected).
    log : ProblemLog
    agent : str, optional
        Agent name for lines without an ``agent`` field.
    require_answer : bool
        A line without an answer field is a problem (default); False loads it with ``answer=None`` (scored as
        a wrong answer, not a missing one).
    """
    counters: dict[tuple[str, str], int] = {}
    built = []
    for lineno, rec in iter_jsonl(path, log):
        out = _fai_record(lineno, rec, log, agent, require_answer, counters)
        if out is not None:
            built.append((lineno, out))
    return build_trials(built, log, unit="line")


def register() -> None:
    """Make ``load_trials(path, format="fair_forge" | "fai_jsonl")`` use these readers."""
    from agentstats.io.registry import register_format

    register_format("fair_forge", read_fair_forge, aliases=("fair-forge", "fairforge"))
    register_format("fai_jsonl", read_fai_jsonl, aliases=("fai", "fai-jsonl"))


register()

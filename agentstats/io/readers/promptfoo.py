"""Import promptfoo result files (``promptfoo eval -o results.json``; promptfoo 0.118, results ``version`` 3).

The output file is one JSON object::

    {"evalId": ..., "results": {"version": 3, "timestamp": ..., "prompts": [...],
                                "results": [EvaluateResult, ...], "stats": {...}},
     "config": {...}, "metadata": {"promptfooVersion": "0.118.10", ...}}
    EvaluateResult = {"provider": {"id": "openai:gpt-5", "label": ""}, "promptIdx": 0, "promptId": ...,
                      "prompt": {"raw": ..., "label": ...}, "testIdx": 0, "testCase": {"vars", "assert",
                      "description", ...}, "vars": {...}, "success": false, "score": 0.75,
                      "failureReason": 1, "error": "...", "gradingResult": {"pass": false, ...},
                      "response": {"output": ..., "tokenUsage": {"prompt", "completion"}},
                      "latencyMs": 5794, "cost": 0.0005}

Mapping: each ``EvaluateResult`` is one :class:`~agentstats.records.trial.Trial`.

* ``agent`` = the provider's ``label``, else its ``id``; when one provider was run with several prompts (distinct
  ``promptId``), the prompt's label is added in brackets (``openai:gpt-5 [Solve: {{riddle}}]``), since promptfoo's
  columns (``promptIdx``) are (provider, prompt) pairs. ``agent=`` names the agent of a one-column file.
* ``task_id``: promptfoo identifies a result by ``testIdx`` (its row), but ``--repeat N`` gives each repeat a row of
  its own (``rowIndex`` counts repeats, ``src/evaluator.ts``), with the same test case. The task is therefore the test
  case itself: its ``description`` when it has one, else its ``vars`` as compact JSON, with ``#`` and a short hash
  of the whole test case when two different test cases would get the same name. ``trial`` = 0, 1, ... over the
  repeats of a task in ``testIdx`` order. ``testIdx`` and ``promptIdx`` are kept in ``meta``.
* Outcome by promptfoo's ``ResultFailureReason`` (``src/types/index.ts``: ``NONE = 0`` passed or unknown failure,
  ``ASSERT = 1`` an assertion rejected it, ``ERROR = 2`` failed for some other error): ``success`` true is a
  success; ``failureReason`` 2 is an error of the run (the provider or the harness failed): ``error_status``
  (default ``infra_error``, missing); any other failure (``ASSERT``, or ``NONE`` with ``success`` false, or a file
  from before ``failureReason`` existed) is a failure, even when ``error`` holds the assertion's message.
  ``success`` falls back to ``gradingResult.pass``. ``score`` is kept in ``meta`` (promptfoo's weighted assertion
  score, not a 0/1 reward).
* ``usage``: ``latencyMs`` / 1000, ``response.tokenUsage`` prompt / completion tokens, ``cost``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterator
from typing import Any

from agentstats.io.jsonl import build_trials
from agentstats.records.problems import ProblemLog, json_error_text
from agentstats.records.trial import Status, Trial, check_error_status

__all__ = ["FAILURE_ASSERT", "FAILURE_ERROR", "looks_like_promptfoo", "read_promptfoo"]

#: promptfoo's ``ResultFailureReason`` (``src/types/index.ts``): an assertion rejected the output.
FAILURE_ASSERT = 1
#: ... the test case failed for some other error (the provider or the harness): missing here.
FAILURE_ERROR = 2
_UNIT = "result"


def _load(path: str | os.PathLike, log: ProblemLog) -> list[Any] | None:
    """Return the list of ``EvaluateResult`` objects of a promptfoo output file; ``None`` after a problem."""
    from agentstats.files.sniff import open_text

    try:
        with open_text(path) as fh:
            data = json.load(fh)
    except json.JSONDecodeError as exc:
        log.add(exc.lineno, None, f"malformed JSON: {json_error_text(exc.msg, exc.colno)}", unit="line",
                whole_file=True)
        return None
    except (OSError, UnicodeDecodeError) as exc:
        log.add(None, None, f"cannot read file: {exc}", whole_file=True)
        return None
    inner = data.get("results") if isinstance(data, dict) else None
    results = inner.get("results") if isinstance(inner, dict) else None
    if not isinstance(results, list):
        log.add(None, "results.results", "not a promptfoo output file: expected an object with "
                "results.results (a list of results), as `promptfoo eval -o results.json` writes", whole_file=True)
        return None
    return results


def _task_name(test: dict[str, Any], vars_: Any) -> str:
    desc = test.get("description")
    if isinstance(desc, str) and desc.strip():
        return desc
    return json.dumps(vars_ if vars_ is not None else test.get("vars") or {}, sort_keys=True,
                      separators=(",", ":"), ensure_ascii=False)


def _test_key(test: dict[str, Any], vars_: Any) -> str:
    """Return a hash of what makes a test case (description, vars, asserts): the same for every repeat of it."""
    content = {"description": test.get("description"), "vars": vars_ if vars_ is not None else test.get("vars"),
               "assert": test.get("assert")}
    return hashlib.sha256(json.dumps(content, sort_keys=True, default=str).encode()).hexdigest()[:8]


def _check(r: Any, i: int, log: ProblemLog) -> bool:
    if not isinstance(r, dict):
        log.add(i, None, f"expected a result object, got {type(r).__name__}")
        return False
    n0 = len(log.problems)
    prov = r.get("provider")
    named = isinstance(prov, dict) and isinstance(prov.get("id") or prov.get("label"), str)
    if not (isinstance(prov, str) or named):
        log.add(i, "provider", "required: an object with id (or label), or a string")
    if isinstance(r.get("testIdx"), bool) or not isinstance(r.get("testIdx"), int):
        log.add(i, "testIdx", f"required integer, got {r.get('testIdx')!r:.40}")
    grading = r.get("gradingResult")
    passed = r.get("success", grading.get("pass") if isinstance(grading, dict) else None)
    if not isinstance(passed, bool):
        log.add(i, "success", f"required true/false (or gradingResult.pass), got {passed!r:.40}")
    reason = r.get("failureReason", 0)
    if reason not in (0, FAILURE_ASSERT, FAILURE_ERROR) or isinstance(reason, bool):
        log.add(i, "failureReason", f"must be 0 (NONE), 1 (ASSERT) or 2 (ERROR), got {reason!r:.40}")
    return len(log.problems) == n0


def _agent(r: dict[str, Any]) -> str:
    prov = r["provider"]
    if isinstance(prov, str):
        return prov
    return prov.get("label") or prov["id"]


def _usage(r: dict[str, Any]) -> dict[str, Any]:
    usage: dict[str, Any] = {}
    if isinstance(r.get("latencyMs"), (int, float)) and not isinstance(r.get("latencyMs"), bool):
        usage["latency_s"] = r["latencyMs"] / 1000
    tokens = (r.get("response") or {}).get("tokenUsage") if isinstance(r.get("response"), dict) else None
    if isinstance(tokens, dict):
        for ours, theirs in (("input_tokens", "prompt"), ("output_tokens", "completion")):
            if isinstance(tokens.get(theirs), int):
                usage[ours] = tokens[theirs]
    if isinstance(r.get("cost"), (int, float)) and not isinstance(r.get("cost"), bool):
        usage["cost_usd"] = float(r["cost"])
    return usage


def read_promptfoo(
    path: str | os.PathLike,
    log: ProblemLog,
    *,
    agent: str | None = None,
    error_status: str | Status = Status.infra_error,
) -> list[Trial]:
    """Read a promptfoo output file (``promptfoo eval -o results.json``) into trials, one per result.

    Parameters
    ----------
    path : str or PathLike
        The JSON file (gzip detected).
    log : ProblemLog
        Problems are logged at the 0-based index of the result in ``results.results`` (unit ``"result"``) with the
        field, or for the whole file (malformed JSON with its line, not a promptfoo file).
    agent : str, optional
        Agent name for a file with one column (one provider and prompt); a file with several is a problem.
    error_status : {"infra_error", "agent_error"}
        Status of results promptfoo marks ``failureReason`` 2 (``ERROR``); default missing.

    Returns
    -------
    list of Trial
        See the module docstring for the mapping.
    """
    status = check_error_status(error_status)
    log.unit = _UNIT
    results = _load(path, log)
    if results is None:
        return []
    good = [(i, r) for i, r in enumerate(results) if _check(r, i, log)]
    prompts: dict[str, set[Any]] = {}
    names: dict[str, set[str]] = {}
    for _, r in good:
        prompts.setdefault(_agent(r), set()).add(r.get("promptId", r.get("promptIdx")))
        test = r.get("testCase") if isinstance(r.get("testCase"), dict) else {}
        names.setdefault(_task_name(test, r.get("vars")), set()).add(_test_key(test, r.get("vars")))
    if agent is not None and sum(len(v) for v in prompts.values()) > 1:
        log.add(None, "provider", f"agent= names the agent of a file with one provider and prompt; this one has "
                f"{sum(len(v) for v in prompts.values())} columns ({', '.join(sorted(prompts))})", whole_file=True)
        return []
    counted = {"errors": 0}

    def converted() -> Iterator[tuple[int, dict[str, Any]]]:
        trial_no: dict[tuple[str, str], int] = {}
        for i, r in sorted(good, key=lambda x: (x[1]["testIdx"], x[0])):
            test = r.get("testCase") if isinstance(r.get("testCase"), dict) else {}
            name = agent or _agent(r)
            if agent is None and len(prompts[_agent(r)]) > 1:
                label = (r.get("prompt") or {}).get("label") if isinstance(r.get("prompt"), dict) else None
                name = f"{name} [{label or r.get('promptIdx')}]"
            task = _task_name(test, r.get("vars"))
            if len(names[task]) > 1:
                task = f"{task}#{_test_key(test, r.get('vars'))}"
            trial = trial_no.get((name, task), 0)
            trial_no[(name, task)] = trial + 1
            grading = r.get("gradingResult") if isinstance(r.get("gradingResult"), dict) else {}
            passed = r.get("success", grading.get("pass"))
            meta: dict[str, Any] = {"testIdx": r["testIdx"], "promptIdx": r.get("promptIdx"),
                                    "failureReason": r.get("failureReason", 0)}
            for key in ("score", "error", "id"):
                if r.get(key) is not None:
                    meta[key] = r[key]
            d: dict[str, Any] = {"agent": name, "task_id": task, "trial": trial, "meta": meta, "usage": _usage(r)}
            if not passed and r.get("failureReason") == FAILURE_ERROR:
                d["status"] = status.value
                counted["errors"] += 1
            else:
                d["success"] = bool(passed)
            yield i, d
        if counted["errors"]:
            log.note(None, "failureReason", f"{counted['errors']} result(s) failed with an error of the run "
                     f"(failureReason 2, ERROR): {status.value}"
                     + (" (missing: not in n, counted in n_missing)" if status is Status.infra_error else ""))

    return build_trials(converted(), log, unit=_UNIT, prefix="(converted trial) ")


_HEAD = re.compile(r'^\{\s*"(evalId|results)"\s*:')


def looks_like_promptfoo(path: Any, head: bytes) -> bool:
    """Tell from a file's first bytes whether it is a promptfoo output file.

    A JSON object that starts with ``evalId`` or ``results`` and whose head holds promptfoo's result fields
    (``"promptIdx"`` and ``"testIdx"``, or ``"evalId"`` with a ``"results"`` object holding a ``"version"``).
    """
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")
    if not _HEAD.match(text):
        return False
    if '"promptIdx"' in text and '"testIdx"' in text:
        return True
    return '"evalId"' in text and re.search(r'"results"\s*:\s*\{\s*"version"\s*:', text) is not None


def register() -> None:
    """Make ``load_trials(path)`` read promptfoo output files (``format="promptfoo"``, also auto-detected)."""
    from agentstats.io.registry import register_format

    register_format("promptfoo", read_promptfoo, detect=looks_like_promptfoo)


register()

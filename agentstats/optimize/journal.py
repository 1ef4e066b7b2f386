"""The run folder's record: the step log ``loop.jsonl``, the running totals ``spent.jsonl``, the iteration files.

A loop run lives in one folder (layout and log lines in ``docs/loop.md``, "Run folder and log"):

* ``loop.jsonl`` (:class:`RunLog`): one fsync'd JSON line per completed step (``start``, ``generation``,
  ``evaluation``, ``decision``, ``revision``, ``resume``, ``stop``), each with the run's running totals;
* ``spent.jsonl``: the same totals (money spent, HTTP requests sent) and the cost reserved by calls in flight, one
  fsync'd line as each request is sent and each cost settled, so a resumed run counts the requests of a step an
  interruption cut short, and the calls then in flight at their reservation (:func:`recorded_so_far`);
* ``iter-NNN/outputs.jsonl``, ``iter-NNN/scores.jsonl``, ``iter-NNN/decision.json`` and ``result.json``, written
  atomically; ``cache.sqlite3``, the call cache (:mod:`agentstats.llm.cache`).

A resumed run must share the settings, data and starting prompt of the run it continues: the ``start`` line stores
them (:func:`resume_settings`, the data's SHA-256, the prompt) and :func:`resume_differences` names, one line each,
what keeps a run from being resumed. :class:`Journal` ties these together for one run.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from agentstats.files.atomic import append_line, atomic_write_text
from agentstats.optimize.config import LoopConfig
from agentstats.optimize.errors import LoopError

if TYPE_CHECKING:
    from agentstats.llm.client import LLMClient

__all__ = [
    "CACHE_NAME",
    "LOG_NAME",
    "LOG_SCHEMA",
    "RESULT_NAME",
    "SPENT_NAME",
    "Journal",
    "RunLog",
    "file_sha256",
    "jsonable",
    "recorded_so_far",
    "resume_differences",
    "resume_hash",
    "resume_settings",
    "text_sha256",
]

#: The run folder's log file.
LOG_NAME = "loop.jsonl"
#: Version of the log's line layout.
LOG_SCHEMA = "agentstats.loop/1"
#: The run folder's call cache.
CACHE_NAME = "cache.sqlite3"
#: The run folder's running totals: one fsync'd line per request sent and per cost settled.
SPENT_NAME = "spent.jsonl"
#: The run's result, written when the loop stops.
RESULT_NAME = "result.json"


def jsonable(v: Any) -> Any:
    """Return ``v`` as plain JSON values: numpy scalars as Python numbers, NaN and infinities as None."""
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def text_sha256(text: str) -> str:
    """SHA-256 of a text's UTF-8 bytes (hex)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def file_sha256(path: Path) -> str:
    """SHA-256 of a file's bytes (hex), read in 1 MiB chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    """Write rows as JSON lines (sorted keys), atomically."""
    atomic_write_text(path, "".join(json.dumps(jsonable(r), ensure_ascii=False, sort_keys=True) + "\n"
                                    for r in rows))


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Read the rows of a JSON-lines file written by :func:`write_jsonl`."""
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


class RunLog:
    """The JSONL log of a run folder: one fsync'd line per completed step."""

    def __init__(self, run_dir: Path):
        self.path = run_dir / LOG_NAME
        self.lines: list[dict[str, Any]] = []

    def read(self) -> list[dict[str, Any]]:
        """Read the log; a last line cut short by a kill is dropped from the file."""
        if not self.path.exists():
            return []
        data = self.path.read_bytes()
        if data and not data.endswith(b"\n"):
            keep = data.rfind(b"\n") + 1
            with open(self.path, "r+b") as fh:
                fh.truncate(keep)
            data = data[:keep]
        self.lines = [json.loads(x) for x in data.decode("utf-8").splitlines() if x.strip()]
        return self.lines

    def append(self, entry: dict[str, Any]) -> None:
        """Append one line (``schema`` and the time ``at`` added), fsync'd before it returns."""
        entry = {"schema": LOG_SCHEMA, "at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), **entry}
        append_line(self.path, json.dumps(jsonable(entry), ensure_ascii=False, sort_keys=True))
        self.lines.append(entry)

    def find(self, step: str, iteration: int) -> dict[str, Any] | None:
        """Return the line of ``step`` for ``iteration``, or None when that step is not logged."""
        for entry in self.lines:
            if entry.get("step") == step and entry.get("iteration") == iteration:
                return entry
        return None


# -- what a resume must share ---------------------------------------------------------------------------------
def resume_settings(config: Mapping[str, Any]) -> dict[str, Any]:
    """Return the settings a resumed run must share, from a config's dump (``LoopConfig.model_dump(mode="json")``).

    Left out: budgets and iteration limits (a stopped run may be continued with larger ones); where a copy of the
    results goes (``store``, ``store_run``); where the endpoints are and which variable holds the key (``base_url``,
    ``api_key_env``: they say where a call goes, not what it asks, and the call cache leaves them out too); and the
    paths of the eval set, the baseline and the prompt file, whose contents are compared instead (``data_sha256``
    and the starting prompt), so a run folder moved or copied with its data resumes. A judge calibration set is
    named by the SHA-256 of its bytes where the file can be read.
    """
    data = json.loads(json.dumps(dict(config)))  # a deep copy
    gate_cfg = data.get("gate") or {}
    for k in ("max_iterations", "max_total_cost_usd", "max_wall_seconds"):
        gate_cfg.pop(k, None)
    for k in ("store", "store_run", "eval_set", "baseline"):
        data.pop(k, None)
    for role in ("agent", "judge", "optimizer"):
        if isinstance(data.get(role), dict):
            for k in ("base_url", "api_key_env"):
                data[role].pop(k, None)
    if isinstance(data.get("agent"), dict):
        data["agent"].pop("prompt_file", None)  # its text is the starting prompt, compared on its own
    calib = gate_cfg.get("judge_calibration")
    if isinstance(calib, dict) and calib.get("path"):
        try:
            calib["path"] = "sha256:" + file_sha256(Path(calib["path"]))
        except OSError:
            pass  # compared by path
    return data


def resume_hash(settings: Mapping[str, Any]) -> str:
    """Hash of :func:`resume_settings` (the log's ``resume_sha256``)."""
    return hashlib.sha256(json.dumps(settings, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _flat(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"gate.thresholds.relevance": 0.97, ...}``: nested mappings as dotted keys (lists stay whole)."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping) and v:
            out.update(_flat(v, key + "."))
        else:
            out[key] = v
    return out


def _both(was: Any, now: Any, n: int = 60, before: int = 24) -> tuple[str, str, str]:
    """Two differing values as JSON, each at most about ``n`` characters, cut around their first difference.

    Returns the two texts and a note (``""`` when both are shown whole): values that fit are shown whole; longer
    ones from ``before`` characters (more near the end) before the first character where they differ (strings
    compared as text, other values as their JSON), with "..." where a text is cut, so that two long prompts that
    differ near their end no longer read alike.
    """
    texts = [json.dumps(v, ensure_ascii=False) for v in (was, now)]
    if all(len(t) <= n for t in texts):
        return texts[0], texts[1], ""
    raw = [v if isinstance(v, str) else json.dumps(v, ensure_ascii=False) for v in (was, now)]
    at = next((i for i, (a, b) in enumerate(zip(*raw, strict=False)) if a != b), min(map(len, raw)))
    start = max(0, min(at - before, max(map(len, raw)) - n))  # a difference near the end: more context before it

    def cut(t: str, is_text: bool) -> str:
        end = min(len(t), start + n)
        part = ("..." if start else "") + t[start:end] + ("..." if end < len(t) else "")
        return json.dumps(part, ensure_ascii=False) if is_text else part

    return (cut(raw[0], isinstance(was, str)), cut(raw[1], isinstance(now, str)),
            f" (they differ from character {at + 1})")


def resume_differences(start: Mapping[str, Any], settings: Mapping[str, Any], data_sha: Mapping[str, str],
                       prompt: str) -> list[str]:
    """Say what keeps a logged run from being resumed with these settings, data and starting prompt: one line each.

    Parameters
    ----------
    start : mapping
        The log's ``start`` line.
    settings : mapping
        :func:`resume_settings` of the config now.
    data_sha : mapping of str to str
        SHA-256 of the eval set and the baseline now (keys ``eval_set``, ``baseline``).
    prompt : str
        The starting prompt now.

    Returns
    -------
    list of str
        Empty when the run may be resumed.
    """
    out: list[str] = []
    if "resume_settings" in start:
        logged = start["resume_settings"]
    elif isinstance(start.get("config"), Mapping):  # a log written before the settings were stored
        logged = resume_settings(start["config"])
    else:
        logged = None
    if logged is None:
        if start.get("resume_sha256") != resume_hash(settings):
            out.append("the settings differ (the log does not store them, so which one cannot be said)")
    else:
        old, new = _flat(logged), _flat(settings)
        for key in sorted(set(old) | set(new)):
            if old.get(key) != new.get(key):
                if key == "agent.prompt" and old.get(key) == start.get("prompt") and new.get(key) == prompt:
                    continue  # the starting prompt: named once, below
                if key in old and key in new:
                    was, now, note = _both(old[key], new[key])
                else:
                    was = _both(old[key], None)[0] if key in old else "not set"
                    now = _both(new[key], None)[0] if key in new else "not set"
                    note = ""
                out.append(f"{key}: {was} in the run, {now} now{note}")
    logged_data = start.get("data_sha256") or {}
    for k, what in (("eval_set", "the eval set"), ("baseline", "the baseline")):
        if logged_data.get(k) != data_sha.get(k):
            out.append(f"{what}'s content differs (sha256 {str(logged_data.get(k))[:12]} in the run, "
                       f"{str(data_sha.get(k))[:12]} now)")
    if start.get("prompt") != prompt:
        was, now, note = _both(start.get("prompt"), prompt)
        out.append(f"the starting prompt differs ({was} in the run, {now} now{note})")
    return out


# -- what the run spent ----------------------------------------------------------------------------------------
def recorded_so_far(lines: list[dict[str, Any]], run_path: Path) -> tuple[float, int]:
    """Money spent and HTTP requests sent by a run's earlier invocations, as its log and ``spent.jsonl`` record them.

    The larger of the last logged ``cost_usd_so_far`` / ``n_requests_so_far`` and the last line of ``spent.jsonl``
    (written as each request is sent and each cost settled: it adds what a step cut short by an interruption spent
    after the last logged step, and counts the calls then in flight at their reservation, ``reserved_usd``, the
    estimate that bounds their cost: a reply the run never read may still have been billed); 0 for a new run. A log
    written before ``n_requests_so_far`` existed that ends with a ``stop`` line takes the request count of the
    ``result.json`` written with that line (none: 0).
    """
    def last(key: str) -> Any:
        return next((x[key] for x in reversed(lines) if x.get(key) is not None), None)

    cost, requests = last("cost_usd_so_far"), last("n_requests_so_far")
    if requests is None and lines and lines[-1].get("step") == "stop" and (run_path / RESULT_NAME).exists():
        try:
            requests = json.loads((run_path / RESULT_NAME).read_text(encoding="utf-8")).get("n_requests")
        except (OSError, ValueError, AttributeError):
            requests = None
    spent = last_spent(run_path / SPENT_NAME) if lines else {}
    # a call in flight when the run was killed never settled: its reservation (an upper bound of its cost) counts
    cost = max(float(cost or 0.0),
               float(spent.get("cost_usd_so_far") or 0.0) + float(spent.get("reserved_usd") or 0.0))
    requests = max(int(requests or 0), int(spent.get("n_requests_so_far") or 0))
    return cost, requests


def last_spent(path: Path) -> dict[str, Any]:
    """Read the last whole line of ``spent.jsonl`` (totals only grow: it holds the largest); {} without one.

    Only the file's end is read (its lines are short); a last line cut short by a kill is cut off the file, so that
    the resumed run's lines start on a line of their own.
    """
    try:
        with open(path, "r+b") as fh:
            fh.seek(0, 2)
            size = fh.tell()
            fh.seek(max(size - 65536, 0))
            tail = fh.read()
            if tail and not tail.endswith(b"\n"):
                fh.truncate(size - len(tail) + tail.rfind(b"\n") + 1)
    except FileNotFoundError:
        return {}
    for raw in reversed(tail.split(b"\n")[1 if size > 65536 else 0:]):
        try:
            got = json.loads(raw)
        except ValueError:
            continue
        if isinstance(got, dict):
            return got
    return {}


class Journal:
    """One run folder's record, as the loop keeps it (module docstring).

    Parameters
    ----------
    run_dir : pathlib.Path
        The run folder (created when absent).

    Attributes
    ----------
    log : RunLog
    lines : list of dict
        The log's lines as :meth:`open` found them (empty for a new run).
    """

    def __init__(self, run_dir: Path):
        self.run_dir = run_dir
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.log = RunLog(run_dir)
        self.lines: list[dict[str, Any]] = []
        self._client: LLMClient | None = None
        self._requests_before = 0

    @property
    def cache_path(self) -> Path:
        """The run's call cache (``cache.sqlite3``)."""
        return self.run_dir / CACHE_NAME

    def open(self, cfg: LoopConfig, *, resume: bool, prompt: str, data_sha: Mapping[str, str],
             **start: Any) -> list[dict[str, Any]]:
        """Read the log, and start a new run or check that the logged one may be resumed with these settings.

        A new run's ``spent.jsonl`` is removed (its totals start at 0) and its ``start`` line written: the config,
        its SHA-256, :func:`resume_settings` and their hash, ``data_sha``, the starting prompt and ``start``'s
        fields (``n_examples``, ``agent``, ``optimizer``).

        Returns
        -------
        list of dict
            The lines logged before (empty for a new run).

        Raises
        ------
        LoopError
            When the folder holds a run and ``resume`` is false, or the logged run has other settings, data or
            starting prompt (:func:`resume_differences`, each difference named).
        """
        self.lines = lines = list(self.log.read())
        settings = resume_settings(cfg.model_dump(mode="json"))
        if lines and not resume:
            raise LoopError(f"{self.run_dir} holds a loop run already ({LOG_NAME}): resume it, or choose another "
                            "run folder")
        if lines:
            differ = resume_differences(lines[0], settings, data_sha, prompt)
            if differ:
                raise LoopError(f"{self.run_dir} holds a run with other settings, data or starting prompt, so it "
                                f"cannot be resumed with these: {'; '.join(differ)} (a resume may change only the "
                                "budgets, max_iterations, the store, the endpoints' addresses and where the files "
                                "are)")
        else:
            (self.run_dir / SPENT_NAME).unlink(missing_ok=True)  # a new run's totals start at 0
            self.log.append({"step": "start", "iteration": 0, "config": cfg.model_dump(mode="json"),
                             "config_sha256": cfg.sha256(), "resume_sha256": resume_hash(settings),
                             "resume_settings": settings, "data_sha256": dict(data_sha), "prompt": prompt, **start})
        return lines

    def recorded_so_far(self) -> tuple[float, int]:
        """Money spent and requests sent by the run's earlier invocations (:func:`recorded_so_far`)."""
        return recorded_so_far(self.lines, self.run_dir)

    def track(self, client: LLMClient, requests_before: int) -> None:
        """Count ``client``'s spending in the run's totals and append them to ``spent.jsonl`` whenever they change.

        ``requests_before``: the HTTP requests of the run's earlier invocations (:meth:`recorded_so_far`).
        """
        self._client = client
        self._requests_before = requests_before
        client.on_change = self.record_spent

    def so_far(self) -> dict[str, Any]:
        """Return the running totals over every invocation of the run: money spent, HTTP requests sent."""
        assert self._client is not None, "Journal.track first"
        return {"cost_usd_so_far": self._client.budget.spent,
                "n_requests_so_far": self._requests_before + self._client.n_requests}

    def record_spent(self) -> None:
        """Append the running totals to the run folder's ``spent.jsonl`` (fsync'd; read back on a resume).

        With them ``reserved_usd``: what the calls in flight have reserved (written as each request is sent, so a
        call killed before its reply is counted at its reservation on a resume).
        """
        assert self._client is not None, "Journal.track first"
        totals = {**self.so_far(), "reserved_usd": self._client.budget.reserved}
        append_line(self.run_dir / SPENT_NAME, json.dumps(jsonable(totals), sort_keys=True))

    def find(self, step: str, iteration: int) -> dict[str, Any] | None:
        """Return the logged line of ``step`` for ``iteration``, or None (:meth:`RunLog.find`)."""
        return self.log.find(step, iteration)

    def log_step(self, entry: dict[str, Any]) -> None:
        """Log a completed step, with the running totals."""
        self.log.append({**entry, **self.so_far()})

    def iteration_dir(self, iteration: int) -> Path:
        """Return the folder of one iteration's files (``iter-NNN``, created when absent)."""
        d = self.run_dir / f"iter-{iteration:03d}"
        d.mkdir(parents=True, exist_ok=True)
        return d

    def write_rows(self, iteration: int, name: str, rows: list[dict[str, Any]]) -> Path:
        """Write an iteration's rows as ``iter-NNN/<name>`` (JSON lines); return the file's path."""
        path = self.iteration_dir(iteration) / name
        write_jsonl(path, rows)
        return path

    def read_rows(self, relative: str) -> list[dict[str, Any]]:
        """Read rows written by :meth:`write_rows`, named by the path the log records."""
        return read_jsonl(self.run_dir / relative)

    def relative(self, path: Path) -> str:
        """Return a file of the run as the log names it (relative to the run folder)."""
        return str(path.relative_to(self.run_dir))

    def write_json(self, path: Path, record: Mapping[str, Any]) -> None:
        """Write a JSON record (indented) atomically."""
        atomic_write_text(path, json.dumps(jsonable(dict(record)), indent=2) + "\n")

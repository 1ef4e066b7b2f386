"""Import Inspect AI eval logs (UK AI Security Institute, ``inspect_ai``): ``.eval`` archives and ``.json`` logs.

An eval log (``EvalLog``, format ``version`` 1 or 2) describes one task run against one model::

    {"version": 2, "status": "success",
     "eval": {"run_id": ..., "task": "gsm8k", "task_id": ..., "model": "openai/gpt-4o", "created": ...,
              "config": {"epochs": 3}},
     "results": {"scores": [{"name": "match", "scorer": "match", ...}]},
     "stats": {"model_usage": {"openai/gpt-4o": {"input_tokens": 10, "output_tokens": 5}}},
     "samples": [{"id": 1, "epoch": 1, "input": "...", "target": "...",
                  "messages": [{"role": "user", "content": "..."},
                               {"role": "assistant", "content": "...",
                                "tool_calls": [{"id": ..., "function": "add", "arguments": {"x": 1}}]},
                               {"role": "tool", "tool_call_id": ..., "function": "add", "content": "2"}],
                  "output": {"model": ..., "choices": [...], "usage": {...}},
                  "scores": {"match": {"value": "C", "answer": "4", "explanation": ...}},
                  "model_usage": {"openai/gpt-4o": {"input_tokens": 10, "output_tokens": 5}},
                  "total_time": 2.5, "working_time": 2.1, "error": null}]}

A ``.json`` log is that object. A ``.eval`` log is a zip archive holding ``header.json`` (the log without
samples; ``_journal/start.json`` when the run was interrupted before the header was written) and one
``samples/<id>_epoch_<epoch>.json`` per sample; Inspect compresses the members with Zstandard (zip method 93), read
here with the ``zstandard`` package. When the ``inspect_ai`` package is installed its own reader
(``inspect_ai.log.read_eval_log``) reads the file and the same mapping applies to its result; a file it refuses is
read again by the JSON reader, which locates the problem.

Mapping: each (sample, epoch) is one :class:`~agentstats.records.trial.Trial`:

* ``agent`` = ``eval.model`` (``agent=`` overrides it); ``task_id`` = the sample ``id`` (prefixed by nothing:
  one log is one task; the log's ``eval.task`` is in ``meta["task"]``); ``trial`` = ``epoch - 1``.
* Outcome from one scorer (``scorer=``, default: the first of ``results.scores``, else the first key of the
  sample's ``scores``), with Inspect's ``value_to_float`` conventions: ``"C"`` (correct) 1, ``"I"``
  (incorrect) 0, ``"P"`` (partial) 0.5, ``"N"`` (no answer) 0, ``true``/``"yes"``/``"true"`` 1,
  ``false``/``"no"``/``"false"`` 0, numbers as they are. The value is the trial's ``reward`` (success when 1);
  every scorer's value that converts is kept in ``meta["metrics"]["score.<scorer>"]``.
* A sample with an ``error`` gets ``error_status`` (default ``"infra_error"``: missing, not a failure; Inspect
  records provider and sandbox failures there). A sample without the chosen score and without an error is a
  problem.
* Conversation: each user message starts an interaction; assistant ``tool_calls`` (``function`` = tool name)
  attach to it, ``tool`` messages give the result of the call with the same ``tool_call_id``; the last
  assistant text is the answer. ``target`` is the first interaction's ``expected_answer``.
* ``usage``: tokens summed over the sample's ``model_usage`` (else ``output.usage``), ``latency_s`` =
  ``total_time``; ``meta`` holds ``task``, ``run_id``, ``sample_id``, ``epoch``, ``working_time``,
  ``limit`` and the sample's ``metadata``.
"""

from __future__ import annotations

import io
import json
import math
import os
import re
import struct
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agentstats.io.jsonl import build_trials
from agentstats.records.problems import ProblemLog, json_error_text
from agentstats.records.scale import ScoreScale, parse_score_scale, unscaled_advice
from agentstats.records.trial import Status, Trial, check_error_status

__all__ = ["INSPECT_LOG_VERSIONS", "looks_like_inspect", "read_inspect", "score_value_to_float"]

#: Eval log format versions this reader knows.
INSPECT_LOG_VERSIONS = (1, 2)
_UNIT = "sample"
_SAMPLE_FILE = re.compile(r"^samples/(.+)_epoch_(\d+)\.json$")
_LETTERS = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}
_WORDS = {"yes": 1.0, "true": 1.0, "no": 0.0, "false": 0.0}


def score_value_to_float(value: Any) -> float | None:
    """Convert a score value to a number by Inspect's ``value_to_float`` conventions; ``None`` when it has none.

    ``"C"`` 1, ``"I"`` 0, ``"P"`` 0.5, ``"N"`` 0; ``true``/``"yes"``/``"true"`` 1, ``false``/``"no"``/``"false"``
    0 (any letter case); numbers (and numeric text) as they are. Dicts and lists (multi-value scores) and
    other text give ``None``.
    """
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str):
        s = value.strip()
        if s in _LETTERS:
            return _LETTERS[s]
        if s.lower() in _WORDS:
            return _WORDS[s.lower()]
        try:
            f = float(s)
        except ValueError:
            return None
        return f if math.isfinite(f) else None
    return None


def _obj(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _text(content: Any) -> str | None:
    if content is None:
        return None
    if isinstance(content, list):  # [{"type": "text", "text": ...}, {"type": "reasoning", ...}, ...]
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    text = str(content)
    return text if text.strip() else None


def _conversation(messages: Any, loc: int, log: ProblemLog) -> list[dict[str, Any]] | None:
    if messages is None:
        return []
    if not isinstance(messages, list):
        log.add(loc, "messages", f"must be a list, got {type(messages).__name__}", unit=_UNIT)
        return None
    n_before = len(log.problems)
    turns: list[dict[str, Any]] = []
    cur: dict[str, Any] | None = None
    by_id: dict[str, dict[str, Any]] = {}
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict) or not isinstance(msg.get("role"), str):
            log.add(loc, f"messages.{i}.role", "each message needs a string role", unit=_UNIT)
            continue
        role = msg["role"]
        if role == "system":
            continue
        if role == "user":
            cur = {"id": f"turn-{len(turns)}", "query": _text(msg.get("content")), "answer": None, "tool_calls": []}
            turns.append(cur)
            continue
        if cur is None:
            cur = {"id": "turn-0", "query": None, "answer": None, "tool_calls": []}
            turns.append(cur)
        if role == "assistant":
            for j, tc in enumerate(msg.get("tool_calls") or []):
                name = tc.get("function") if isinstance(tc, dict) else None
                if not isinstance(name, str):
                    log.add(loc, f"messages.{i}.tool_calls.{j}.function", "each tool call needs a string 'function'",
                            unit=_UNIT)
                    continue
                call: dict[str, Any] = {"id": tc.get("id"), "name": name, "arguments": tc.get("arguments") or {}}
                if tc.get("parse_error"):
                    call["parse_error"] = str(tc["parse_error"])
                    call["arguments"] = None
                cur["tool_calls"].append(call)
                if isinstance(tc.get("id"), str):
                    by_id[tc["id"]] = call
            text = _text(msg.get("content"))
            if text is not None:
                cur["answer"] = text
        elif role == "tool":
            found = by_id.get(msg.get("tool_call_id"))  # type: ignore[arg-type]
            if found is not None:
                found["result"] = _text(msg.get("content")) if msg.get("content") is not None else None
                if msg.get("error"):
                    found["error"] = msg["error"]
    return None if len(log.problems) > n_before else turns


def _usage(sample: dict[str, Any]) -> dict[str, Any]:
    usage: dict[str, Any] = {}
    per_model = sample.get("model_usage")
    parts: list[dict[str, Any]] = []
    if isinstance(per_model, dict) and per_model:
        parts = [u for u in per_model.values() if isinstance(u, dict)]
    elif isinstance((sample.get("output") or {}).get("usage"), dict):
        parts = [sample["output"]["usage"]]
    if parts:
        for key in ("input_tokens", "output_tokens"):
            vals: list[int] = [u[key] for u in parts if isinstance(u.get(key), int)]
            if vals:
                usage[key] = sum(vals)
        costs: list[float] = [u["total_cost"] for u in parts if isinstance(u.get("total_cost"), (int, float))]
        if costs:
            usage["cost_usd"] = float(sum(costs))
    if isinstance(sample.get("total_time"), (int, float)):
        usage["latency_s"] = float(sample["total_time"])
    return usage


def _sample_to_trial(
    sample: Any, loc: int, log: ProblemLog, *, agent: str, scorer: str | None, header: dict[str, Any],
    error_status: Status, scale: ScoreScale | None = None,
) -> dict[str, Any] | None:
    if not isinstance(sample, dict):
        log.add(loc, None, f"expected a JSON object, got {type(sample).__name__}", unit=_UNIT)
        return None
    n_before = len(log.problems)
    sid = sample.get("id")
    if not isinstance(sid, (str, int)) or isinstance(sid, bool) or str(sid).strip() == "":
        log.add(loc, "id", f"must be a string or an integer, got {sid!r}", unit=_UNIT)
    epoch = sample.get("epoch", 1)
    if not isinstance(epoch, int) or isinstance(epoch, bool) or epoch < 1:
        log.add(loc, "epoch", f"must be an integer >= 1, got {epoch!r}", unit=_UNIT)
    scores = sample.get("scores") or {}
    if not isinstance(scores, dict):
        log.add(loc, "scores", f"must be an object (scorer -> score), got {type(scores).__name__}", unit=_UNIT)
        scores = {}
    error = sample.get("error")
    name = scorer or next(iter(scores), None)
    scored = name is not None and isinstance(scores.get(name), dict)
    # Inspect's score_on_error scores a sample that errored: its score counts, as in Inspect's own metrics
    status = error_status if error and not scored else Status.completed
    reward: float | None = None
    success: bool | None = None
    unscored = False
    if status is Status.completed:
        if not scored:
            have = ", ".join(map(repr, scores)) or "none"
            log.add(loc, f"scores.{name}" if name else "scores",
                    f"no score {name!r} for this sample (scores present: {have})" if name
                    else "the sample has no score and no error", unit=_UNIT)
        else:
            raw = scores[name].get("value")
            value = score_value_to_float(raw)
            if raw is None:
                unscored = True  # a NaN score reaches JSON as null: this epoch has no score, the others do
            elif value is None:
                log.add(loc, f"scores.{name}.value",
                        f"score value {raw!r} is not a number, bool, C/I/P/N or yes/no", unit=_UNIT)
            elif scale is not None:
                if not scale.contains(value):
                    log.add(loc, f"scores.{name}.value", f"score {value:g} is outside the declared scale "
                            f"{scale.lo:g}:{scale.hi:g}", unit=_UNIT)
                else:
                    reward, success = scale.reward(value), scale.success(value)
            elif not 0.0 <= value <= 1.0:
                log.add(loc, f"scores.{name}.value", unscaled_advice(value), unit=_UNIT)
            else:
                reward = value
    turns = _conversation(sample.get("messages"), loc, log)
    if len(log.problems) > n_before or turns is None:
        return None
    if turns and sample.get("target") not in (None, "", []):
        turns[0]["expected_answer"] = sample["target"]
    metrics = {}
    for key, sc in scores.items():
        v = score_value_to_float(sc.get("value")) if isinstance(sc, dict) else None
        if v is not None:
            metrics[f"score.{key}"] = v
    meta: dict[str, Any] = {"format": "inspect", "sample_id": sid, "epoch": epoch, **header}
    if name is not None:
        meta["scorer"] = name
        if isinstance(scores.get(name), dict):
            for k in ("answer", "explanation"):
                if scores[name].get(k) is not None:
                    meta[f"score_{k}"] = scores[name][k]
    if metrics:
        meta["metrics"] = metrics
    for key in ("working_time", "limit", "metadata", "uuid"):
        if sample.get(key) not in (None, {}, ""):
            meta[key] = sample[key]
    if error:
        meta["error"] = error.get("message", error) if isinstance(error, dict) else error
        if status is Status.completed:
            meta["scored_on_error"] = True
    out: dict[str, Any] = {
        "agent": agent, "task_id": str(sid), "trial": epoch - 1, "status": status, "reward": reward,
        "interactions": turns, "meta": meta,
    }
    if success is not None:
        out["success"] = success
    if unscored:
        out["judge_missing"] = True  # missing: out of n, counted in n_missing
        meta["unscored"] = f"score {name!r} is null (NaN)"
    usage = _usage(sample)
    if usage:
        out["usage"] = usage
    return out


#: Zip compression method of Zstandard (APPNOTE 4.4.5), which Inspect AI uses for ``.eval`` archives.
ZIP_ZSTANDARD = 93


def _zstd_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    """Decompress a Zstandard-compressed archive member (which :mod:`zipfile` cannot) with ``zstandard``.

    Raises
    ------
    ImportError
        When the ``zstandard`` package is not installed.
    ValueError
        When the member's data is corrupt (its CRC-32 does not match).
    """
    import zstandard  # type: ignore[import-not-found, unused-ignore]

    assert zf.filename is not None
    with open(zf.filename, "rb") as fh:
        fh.seek(info.header_offset)
        local = fh.read(30)
        if local[:4] != b"PK\x03\x04":
            raise ValueError("no local file header where the archive's directory points")
        name_len, extra_len = struct.unpack("<HH", local[26:30])
        fh.seek(info.header_offset + 30 + name_len + extra_len)
        raw = fh.read(info.compress_size)
    try:
        data = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(raw)).read()
    except zstandard.ZstdError as exc:  # corrupt compressed data: a located problem of this member, not a crash
        raise ValueError(f"corrupt Zstandard data ({exc})") from None
    if zlib.crc32(data) != info.CRC:
        raise ValueError("CRC-32 mismatch (corrupt archive)")
    return data


def _read_json_member(zf: zipfile.ZipFile, name: str, log: ProblemLog) -> Any:
    info = zf.getinfo(name)
    try:
        if info.compress_type == ZIP_ZSTANDARD:
            try:
                data = _zstd_member(zf, info)
            except ImportError:
                log.add(None, name, f"archive member {name} is Zstandard-compressed (as Inspect AI writes .eval "
                        "files); install the 'zstandard' package (pip install 'agentstats[inspect]') or inspect_ai")
                return None
            return json.loads(data.decode("utf-8"))
        with zf.open(name) as fh:
            return json.load(io.TextIOWrapper(fh, encoding="utf-8"))
    except json.JSONDecodeError as exc:
        log.add(exc.lineno, name, f"malformed JSON in archive member {name}: {json_error_text(exc.msg, exc.colno)}",
                unit="line")
    except NotImplementedError as exc:  # another compression method zipfile does not know
        log.add(None, name, f"cannot read archive member {name}: {exc} (method {info.compress_type})")
    except (OSError, EOFError, zipfile.BadZipFile, UnicodeDecodeError, ValueError) as exc:
        log.add(None, name, f"cannot read archive member {name}: {exc}")
    return None


def _open_log(path: Path, log: ProblemLog) -> tuple[dict[str, Any], Iterator[tuple[int, Any]]] | None:
    """Open a log: its header (without samples) and an iterator over its samples; ``None`` after a file problem."""
    with open(path, "rb") as fh:
        magic = fh.read(4)
    if magic == b"PK\x03\x04" and not zipfile.is_zipfile(path):
        log.add(None, None, "the .eval archive is truncated or corrupt (no zip central directory at its end)")
        return None
    if zipfile.is_zipfile(path):
        try:
            zf = zipfile.ZipFile(path)
        except (zipfile.BadZipFile, OSError) as exc:
            log.add(None, None, f"cannot open the .eval archive (truncated?): {exc}")
            return None
        names = zf.namelist()
        head_name = "header.json" if "header.json" in names else "_journal/start.json"
        if head_name not in names:
            log.add(None, None, "not an Inspect .eval archive: it has neither header.json nor _journal/start.json")
            return None
        header = _read_json_member(zf, head_name, log)
        if not isinstance(header, dict):
            return None
        members = sorted(
            (m for m in names if _SAMPLE_FILE.match(m)),
            key=lambda m: (int(_SAMPLE_FILE.match(m).group(2)), m),  # type: ignore[union-attr]
        )

        def samples() -> Iterator[tuple[int, Any]]:
            with zf:
                for k, m in enumerate(members):
                    s = _read_json_member(zf, m, log)
                    if s is not None:
                        yield k, s

        return header, samples()
    try:
        from agentstats.files.sniff import open_text

        with open_text(path) as text:
            data = json.load(text)
    except json.JSONDecodeError as exc:
        log.add(exc.lineno, None, f"malformed JSON (truncated file?): {json_error_text(exc.msg, exc.colno)}",
                unit="line", whole_file=True)
        return None
    except (OSError, EOFError, UnicodeDecodeError, RecursionError, ValueError) as exc:
        log.add(None, None, f"cannot read file: {exc}")
        return None
    if not isinstance(data, dict):
        log.add(None, None, f"not an Inspect eval log: expected a JSON object, got a JSON {type(data).__name__}")
        return None
    listed = data.get("samples") or []
    if not isinstance(listed, list):
        log.add(None, "samples", f"must be a list, got {type(listed).__name__}")
        return None
    return data, iter(enumerate(listed))


def _via_inspect_ai(path: Path) -> tuple[dict[str, Any], Iterator[tuple[int, Any]]] | None:
    """Read with ``inspect_ai.log.read_eval_log`` when the package is installed; ``None`` otherwise.

    A file that reader refuses (truncated, unknown version ...) also gives ``None``: the documented-JSON reader then
    reads it and locates the problem.
    """
    try:
        from inspect_ai.log import read_eval_log  # type: ignore[import-not-found]
    except ImportError:
        return None
    try:
        data = read_eval_log(str(path)).model_dump(mode="json", exclude_none=True)
    except Exception:  # a file inspect_ai refuses is read again by the JSON reader, for a located problem
        return None
    return data, iter(enumerate(data.get("samples") or []))


def read_inspect(
    path: str | os.PathLike,
    log: ProblemLog,
    *,
    agent: str | None = None,
    scorer: str | None = None,
    error_status: str | Status = Status.infra_error,
    use_inspect_ai: bool = True,
    score_scale: str | tuple[float, float] | None = None,
    success_threshold: float | None = None,
) -> list[Trial]:
    """Read an Inspect AI eval log (``.eval`` archive or ``.json``) into trials, one per (sample, epoch).

    Parameters
    ----------
    path : str or PathLike
    log : ProblemLog
        Problems are logged at the 0-based sample index (unit ``"sample"``) with the sample's field path, or for
        the whole file (truncated archive, malformed JSON with its line, unknown ``version``).
    agent : str, optional
        Agent name; default ``eval.model``.
    scorer : str, optional
        Which scorer gives the outcome; default the first of ``results.scores`` (else the sample's first).
    error_status : {"infra_error", "agent_error"}
        Status of samples with an ``error`` and no score (a sample scored despite its error, Inspect's
        ``score_on_error``, keeps its score).
    score_scale, success_threshold : optional
        The scale of numeric scores outside [0, 1] (``"1:5"``) and the score from which a sample succeeds
        (:mod:`agentstats.records.scale`); default: the chosen scorer's ``metadata`` ``score_scale`` /
        ``success_threshold`` in ``results.scores``, else none (such a score is then a problem that says so).
    use_inspect_ai : bool
        Read with ``inspect_ai``'s own reader when that package is installed (default); ``False`` always uses
        the documented JSON.

    Returns
    -------
    list of Trial
        See the module docstring for the mapping.

    Raises
    ------
    ValueError
        A malformed ``score_scale`` / ``success_threshold`` (:func:`agentstats.records.scale.parse_score_scale`).
    """
    status = check_error_status(error_status)
    scale = parse_score_scale(score_scale, success_threshold)
    path = Path(path)
    log.unit = _UNIT
    opened = (_via_inspect_ai(path) if use_inspect_ai else None) or _open_log(path, log)
    if opened is None:
        return []
    header, samples = opened
    version = header.get("version")
    if version not in INSPECT_LOG_VERSIONS:
        log.add(None, "version", f"unknown Inspect eval log version {version!r} (known: "
                f"{', '.join(map(str, INSPECT_LOG_VERSIONS))}; inspect_ai 0.3.260 writes version 2 and refuses a "
                "later one itself)")
        return []
    spec = header.get("eval") if isinstance(header.get("eval"), dict) else {}
    if not spec:
        log.add(None, "eval", "not an Inspect eval log: no 'eval' object")
        return []
    agent = agent or spec.get("model") or "unknown-model"
    listed = [x for x in (header.get("results") or {}).get("scores") or [] if isinstance(x, dict)]
    if scorer is None and listed:
        scorer = listed[0].get("scorer") or listed[0].get("name")
    if scale is None:
        declared = next((_obj(x.get("metadata")) for x in listed if scorer in (x.get("name"), x.get("scorer"))), {})
        scale = parse_score_scale(declared.get("score_scale"), declared.get("success_threshold"))
    counted = {"unscored": 0, "scored_on_error": 0}
    common = {k: spec[k] for k in ("task", "run_id", "task_id", "created") if spec.get(k) is not None}
    common = {("task_run_id" if k == "task_id" else k): v for k, v in common.items()}

    def converted() -> Iterator[tuple[int, dict[str, Any]]]:
        for loc, sample in samples:
            d = _sample_to_trial(sample, loc, log, agent=agent, scorer=scorer, header=common,
                                 error_status=status, scale=scale)
            if d is not None:
                for key in counted:
                    counted[key] += key in d["meta"]
                yield loc, d
        if counted["unscored"]:
            log.note(None, f"scores.{scorer}.value", f"{counted['unscored']} sample epoch(s) have a null (NaN) score: "
                     "missing (not in n, counted in n_missing)")
        if counted["scored_on_error"]:
            log.note(None, "error", f"{counted['scored_on_error']} sample epoch(s) errored and were scored anyway "
                     "(score_on_error): their scores count")

    return build_trials(converted(), log, unit=_UNIT, prefix="(converted trial) ")


def looks_like_inspect(path: Any, head: bytes) -> bool:
    """Tell from a file's first bytes whether it is an Inspect eval log (``.eval`` zip or ``.json``).

    A zip archive whose name ends in ``.eval`` or that holds ``header.json`` / ``_journal/``; or a JSON object
    whose top-level keys (first line, when it holds the object whole) include ``version`` and ``eval``, or whose
    indented text starts with them.
    """
    if head[:4] == b"PK\x03\x04":
        return str(path).endswith(".eval") or b"header.json" in head or b"_journal/" in head
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")
    if not text.startswith("{"):
        return False
    try:
        first = json.loads(text.split("\n", 1)[0])
    except json.JSONDecodeError:
        first = None
    if isinstance(first, dict):
        return {"version", "eval"} <= set(first) and isinstance(first.get("eval"), dict)
    starts = re.match(r'\{\s*"version"\s*:\s*\d+\s*,', text) is not None
    return starts and re.search(r'\n\s{0,4}"eval"\s*:\s*\{', text) is not None


def register() -> None:
    """Make ``load_trials(path)`` read Inspect eval logs (``format="inspect"``, also auto-detected)."""
    from agentstats.io.registry import register_format

    register_format("inspect", read_inspect, aliases=("inspect_ai", "inspect-ai", "eval"), detect=looks_like_inspect)


register()

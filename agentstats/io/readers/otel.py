"""Import OpenTelemetry traces that follow the OpenInference semantic conventions.

OpenInference: Arize AI, "OpenInference Semantic Conventions", github.com/Arize-ai/openinference,
``spec/semantic_conventions.md``.

Two span encodings are read, from JSON, JSONL or concatenated JSON values (plain or gzip):

* **OTLP JSON** as the OpenTelemetry Collector's file exporter writes it (one ``ExportTraceServiceRequest`` per
  line): ``{"resourceSpans": [{"resource": {"attributes": [...]}, "scopeSpans": [{"spans": [{"traceId",
  "spanId", "parentSpanId", "name", "startTimeUnixNano", "endTimeUnixNano", "attributes": [{"key",
  "value": {"stringValue" | "intValue" | "doubleValue" | "boolValue" | "arrayValue"}}], "events",
  "status": {"code"}}]}]}]}``;
* **flat spans** as the OpenTelemetry Python SDK (``ReadableSpan.to_json``, the console exporter) and Arize
  Phoenix's span exports write them: ``{"name", "context": {"trace_id", "span_id"}, "parent_id",
  "start_time", "end_time", "status": {"status_code"}, "attributes": {...}, "span_kind"?}``; nested attribute
  objects (Phoenix: ``{"llm": {"token_count": {"prompt": 5}}}``) are flattened to dotted keys.

Mapping: one trace is one :class:`~agentstats.records.trial.Trial`; its root span (the one span without a parent,
whatever the order of the file; a trace without one, with orphans or with a cycle of parents is a located problem of
that trace, never re-rooted) describes
the whole attempt.

* ``agent``: ``agent=``, else the root's ``agentstats.agent`` attribute (or ``metadata.agent``), else the
  resource's ``service.name``, else the first LLM span's ``llm.model_name``. ``task_id``: the root's
  ``agentstats.task_id`` (or ``metadata.task_id``), else the trace id (each trace its own task).
  ``trial``: ``agentstats.trial`` (or ``metadata.trial``), else the order of appearance within (agent, task).
  ``success`` / ``reward``: ``agentstats.success`` / ``agentstats.reward`` (or in ``metadata``); without them
  the trial is unscored (score it with :func:`agentstats.scoring.score_trials`). ``metadata`` is
  OpenInference's JSON-string attribute.
* A root span with status ERROR is an ``agent_error`` (the exception type from its ``exception`` event in
  ``meta["error_type"]``).
* One interaction: ``query`` = the root's ``input.value``, ``answer`` = its ``output.value``. Tool calls: every
  ``TOOL`` span in start order (name ``tool.name`` else the span name; arguments
  ``tool_call.function.arguments`` else ``input.value``; result ``output.value``), plus the calls LLM spans
  requested (``llm.output_messages.<i>.message.tool_calls.<j>.tool_call.*``) that no TOOL span executed
  (matched by ``tool_call.id``, else by name in order).
* Nodes: every other span that is neither LLM nor TOOL (``CHAIN``, ``AGENT``, ``RETRIEVER``, ``RERANKER``,
  ``EMBEDDING``, ``GUARDRAIL`` ...) is listed in ``meta["nodes"]`` with its name, kind, span and parent ids,
  latency, status, input and output.
* ``usage``: ``input_tokens`` / ``output_tokens`` = the sums of ``llm.token_count.prompt`` /
  ``llm.token_count.completion`` over LLM spans, ``cost_usd`` = the sum of ``llm.cost.total`` when present,
  ``latency_s`` = the root's duration. Tools offered (``llm.tools.<i>.tool.json_schema``) become ``tools``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from agentstats.files.sniff import open_text
from agentstats.io.jsonl import build_trials
from agentstats.records.problems import ProblemLog, json_error_text
from agentstats.records.trial import Status, Trial

__all__ = ["Span", "iter_spans", "looks_like_otel", "read_otel", "spans_to_trials"]

_KIND = "openinference.span.kind"
_CALL = re.compile(
    r"^llm\.output_messages\.(\d+)\.message\.tool_calls\.(\d+)\.tool_call\.(id|function\.name|function\.arguments)$"
)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_TOOLSPEC = re.compile(r"^llm\.tools\.(\d+)\.tool\.json_schema$")


class Span(dict):
    """One span in a common form.

    Keys: ``trace_id, span_id, parent_id, name, start, end`` (integer nanoseconds), ``error`` (bool), ``events``,
    ``attributes`` (flat dotted keys), ``resource`` (flat), ``line`` (where its JSON value starts).
    """


def _any_value(v: Any) -> Any:
    """Convert an OTLP ``AnyValue`` to a Python value."""
    if not isinstance(v, dict):
        return v
    for key in ("stringValue", "boolValue", "doubleValue"):
        if key in v:
            return v[key]
    if "intValue" in v:
        try:
            return int(v["intValue"])
        except (TypeError, ValueError):
            return v["intValue"]
    if "arrayValue" in v:
        return [_any_value(x) for x in (v["arrayValue"] or {}).get("values", [])]
    if "kvlistValue" in v:
        return {kv.get("key"): _any_value(kv.get("value")) for kv in (v["kvlistValue"] or {}).get("values", [])}
    return None


def _flatten(d: Any, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(d, list) and all(isinstance(kv, dict) and "key" in kv for kv in d):  # OTLP key/value list
        for kv in d:
            out[prefix + str(kv["key"])] = _any_value(kv.get("value"))
        return out
    if not isinstance(d, dict):
        return out
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def _time(v: Any) -> int | None:
    """Nanoseconds since the epoch (number or text) or an ISO-8601 timestamp -> integer nanoseconds.

    Integers keep durations exact (seconds as a float lose sub-microsecond digits at today's epoch offsets).
    """
    if v is None or v == "":
        return None
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return int(v)
    if isinstance(v, str):
        if v.isdigit():
            return int(v)
        try:
            dt = datetime.fromisoformat(v.replace("Z", "+00:00"))
        except ValueError:
            return None
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=UTC)
        return (dt - _EPOCH) // timedelta(microseconds=1) * 1000
    return None


def _seconds(start: int | None, end: int | None) -> float | None:
    return None if start is None or end is None else (end - start) / 1e9


def _hex(v: Any) -> str | None:
    if not isinstance(v, str) or not v.strip():
        return None
    s = v.strip().lower()
    return s[2:] if s.startswith("0x") else s


def _otlp_spans(obj: dict[str, Any], line: int, log: ProblemLog) -> Iterator[Span]:
    for r, rs in enumerate(obj.get("resourceSpans") or []):
        resource = _flatten((rs.get("resource") or {}).get("attributes") or [])
        for s_i, ss in enumerate(rs.get("scopeSpans") or rs.get("instrumentationLibrarySpans") or []):
            for k, sp in enumerate(ss.get("spans") or []):
                where = f"resourceSpans.{r}.scopeSpans.{s_i}.spans.{k}"
                trace, span = _hex(sp.get("traceId")), _hex(sp.get("spanId"))
                if trace is None or span is None:
                    log.add(line, f"{where}.traceId" if trace is None else f"{where}.spanId",
                            "missing trace or span id")
                    continue
                status = sp.get("status") or {}
                code = status.get("code")
                yield Span(trace_id=trace, span_id=span, parent_id=_hex(sp.get("parentSpanId")),
                           parent_field=f"{where}.parentSpanId",
                           name=sp.get("name") or "", start=_time(sp.get("startTimeUnixNano")),
                           end=_time(sp.get("endTimeUnixNano")),
                           error=code in (2, "STATUS_CODE_ERROR", "ERROR"),
                           events=[{"name": e.get("name"), "attributes": _flatten(e.get("attributes") or [])}
                                   for e in sp.get("events") or []],
                           attributes=_flatten(sp.get("attributes") or []), resource=resource, line=line)


def _flat_span(obj: dict[str, Any], line: int, log: ProblemLog) -> Span | None:
    ctx: dict[str, Any] = obj["context"] if isinstance(obj.get("context"), dict) else {}
    trace = _hex(ctx.get("trace_id") or obj.get("context.trace_id") or obj.get("trace_id"))
    span = _hex(ctx.get("span_id") or obj.get("context.span_id") or obj.get("span_id"))
    if trace is None or span is None:
        log.add(line, "context.trace_id" if trace is None else "context.span_id", "missing trace or span id")
        return None
    attrs = _flatten(obj.get("attributes") or {})
    if obj.get("span_kind") and _KIND not in attrs:
        attrs[_KIND] = obj["span_kind"]
    status: dict[str, Any] = obj["status"] if isinstance(obj.get("status"), dict) else {}
    code = str(status.get("status_code") or obj.get("status_code") or "")
    return Span(trace_id=trace, span_id=span, parent_id=_hex(obj.get("parent_id")), parent_field="parent_id",
                name=obj.get("name") or "",
                start=_time(obj.get("start_time")), end=_time(obj.get("end_time")),
                error=code.upper().endswith("ERROR"),
                events=[{"name": e.get("name"), "attributes": _flatten(e.get("attributes") or {})}
                        for e in obj.get("events") or [] if isinstance(e, dict)],
                attributes=attrs, resource=_flatten((obj.get("resource") or {}).get("attributes") or {}),
                line=line)


def iter_spans(path: str | os.PathLike, log: ProblemLog) -> Iterator[Span]:
    """Yield every span of a trace export (OTLP JSON or flat spans; JSON, JSONL or concatenated JSON values).

    Problems (malformed or truncated JSON, a value that is neither an OTLP request nor a span, a span
    without ids) go to ``log`` with the 1-based line where the JSON value starts.
    """
    try:
        with open_text(path) as fh:
            text = fh.read()
    except (OSError, EOFError) as exc:
        log.add(None, None, f"cannot read file (corrupt or truncated compression?): {exc}")
        return
    except UnicodeDecodeError as exc:
        log.add(None, None, f"not UTF-8 text: {exc}")
        return
    dec = json.JSONDecoder()
    pos, n = 0, len(text)
    while True:
        while pos < n and text[pos] in " \t\r\n,":
            pos += 1
        if pos >= n:
            return
        line = text.count("\n", 0, pos) + 1
        try:
            obj, pos = dec.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            log.add(exc.lineno, None, f"malformed JSON (truncated file?): {json_error_text(exc.msg, exc.colno)}")
            return
        except RecursionError:
            log.add(line, None, "JSON nested too deeply to read")
            return
        items = obj if isinstance(obj, list) else [obj]
        for item in items:
            if isinstance(item, dict) and "resourceSpans" in item:
                yield from _otlp_spans(item, line, log)
            elif isinstance(item, dict) and ("context" in item or "context.span_id" in item or "span_id" in item):
                s = _flat_span(item, line, log)
                if s is not None:
                    yield s
            else:
                keys = sorted(item)[:8] if isinstance(item, dict) else type(item).__name__
                log.add(line, None, f"not an OTLP trace request (resourceSpans) nor a span (context.span_id): {keys}")


def _json_or_text(v: Any) -> Any:
    if isinstance(v, str):
        s = v.strip()
        if s[:1] in ("{", "["):
            try:
                return json.loads(s)
            except json.JSONDecodeError:
                return v
    return v


def _meta_attr(attrs: dict[str, Any], key: str) -> Any:
    if f"agentstats.{key}" in attrs:
        return attrs[f"agentstats.{key}"]
    md = attrs.get("metadata")
    if isinstance(md, str):
        md = _json_or_text(md)
    if isinstance(md, dict):
        for name in (key, f"agentstats.{key}"):  # `task_id` or, as on the attributes, `agentstats.task_id`
            if name in md:
                return md[name]
    for name in (f"metadata.{key}", f"metadata.agentstats.{key}"):
        if name in attrs:
            return attrs[name]
    return None


def _kind(s: Span) -> str:
    return str(s["attributes"].get(_KIND) or "").upper()


def _tool_calls(spans: list[Span], llms: list[Span]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Return the tool calls (TOOL spans, then calls LLM spans requested that no TOOL span ran) and the tool specs."""
    calls: list[dict[str, Any]] = []
    for s in spans:
        if _kind(s) != "TOOL":
            continue
        a = s["attributes"]
        args = a.get("tool_call.function.arguments", a.get("input.value"))
        call = {"id": a.get("tool_call.id"), "name": a.get("tool.name") or s["name"],
                "arguments": _json_or_text(args) if args is not None else {}, "result": a.get("output.value"),
                "span_id": s["span_id"]}
        if not isinstance(call["arguments"], (dict, str)):
            call["arguments"] = {"input": call["arguments"]}
        calls.append(call)
    requested: list[dict[str, Any]] = []
    tools: dict[str, Any] = {}
    for s in llms:
        found: dict[tuple[int, int], dict[str, Any]] = {}
        for key, v in s["attributes"].items():
            m = _CALL.match(key)
            if m:
                found.setdefault((int(m.group(1)), int(m.group(2))), {})[m.group(3)] = v
            t = _TOOLSPEC.match(key)
            if t:
                spec = _json_or_text(v)
                if isinstance(spec, dict):
                    fn = spec.get("function", spec)
                    if isinstance(fn, dict) and fn.get("name"):
                        tools.setdefault(fn["name"], spec)
        for _, c in sorted(found.items()):
            if c.get("function.name"):
                requested.append({"id": c.get("id"), "name": c["function.name"],
                                  "arguments": c.get("function.arguments") or {}})
    used = set()
    for r in requested:
        match = next((i for i, c in enumerate(calls) if i not in used and r["id"] and c["id"] == r["id"]), None)
        if match is None:
            match = next((i for i, c in enumerate(calls) if i not in used and c["name"] == r["name"]), None)
        if match is None:
            calls.append(r)
        else:
            used.add(match)
    return calls, tools


def _nodes(spans: list[Span], root: Span) -> list[dict[str, Any]]:
    """Return the trace's other spans (not the root, LLM or TOOL spans) as node records."""
    nodes = []
    for s in spans:
        kind = _kind(s)
        if s is root or kind in ("LLM", "TOOL"):
            continue
        a = s["attributes"]
        node = {"name": s["name"], "kind": kind or None, "span_id": s["span_id"], "parent_id": s["parent_id"],
                "status": "error" if s["error"] else "ok"}
        latency = _seconds(s["start"], s["end"])
        if latency is not None:
            node["latency_s"] = latency
        for k in ("input.value", "output.value"):
            if a.get(k) is not None:
                node[k.split(".")[0]] = a[k]
        nodes.append(node)
    return nodes


def _usage(llms: list[Span], root: Span) -> dict[str, Any]:
    """Tokens and cost summed over the LLM spans, and the root span's latency."""
    usage: dict[str, Any] = {}
    for src, dst in (("llm.token_count.prompt", "input_tokens"), ("llm.token_count.completion", "output_tokens")):
        vals = [s["attributes"][src] for s in llms if isinstance(s["attributes"].get(src), (int, float))]
        if vals:
            usage[dst] = int(sum(vals))
    costs = [s["attributes"]["llm.cost.total"] for s in llms
             if isinstance(s["attributes"].get("llm.cost.total"), (int, float))]
    if costs:
        usage["cost_usd"] = float(sum(costs))
    latency = _seconds(root["start"], root["end"])
    if latency is not None:
        usage["latency_s"] = latency
    return usage


def _structure(spans: list[Span], log: ProblemLog) -> Span | None:
    """Return the trace's root: its one span without a parent, whatever the order of the file.

    Every other span must reach the root through its parents. A trace without a root span (never exported), with
    more than one, with a span whose parent is not in the file (an orphan), or with spans that are their own
    ancestors (a cycle, a span its own parent) is logged as a problem of that trace, at the line of the span at
    fault with its parent field, and ``None`` is returned: the trace is no trial (``on_error="skip"`` skips it).
    """
    by_id = {s["span_id"]: s for s in spans}
    trace = spans[0]["trace_id"]
    roots = [s for s in spans if not s["parent_id"]]
    bad = False
    if len(roots) != 1:
        first = min(spans, key=lambda s: s["line"]) if not roots else roots[1]
        why = ("has no root span (every span names a parent: the root was never exported)" if not roots
               else f"has {len(roots)} root spans (spans without a parent: {', '.join(r['span_id'] for r in roots)})")
        log.add(first["line"], first["parent_field"], f"trace {trace} {why}")
        bad = True
    for s in spans:
        if not s["parent_id"]:
            continue
        seen = [s["span_id"]]
        cur = s
        while cur["parent_id"]:
            parent = by_id.get(cur["parent_id"])
            if parent is None:
                if cur is s:
                    log.add(s["line"], s["parent_field"], f"span {s['span_id']} of trace {trace} is an orphan: its "
                            f"parent {s['parent_id']} is not in the file (not exported, or cut off)")
                    bad = True
                break
            if parent["span_id"] in seen:
                if parent["span_id"] == s["span_id"]:
                    loop = " -> ".join([*seen, s["span_id"]])
                    what = ("is its own parent" if len(seen) == 1 else f"is in a cycle of parents ({loop})")
                    log.add(s["line"], s["parent_field"], f"span {s['span_id']} of trace {trace} {what}")
                    bad = True
                break  # a cycle further up is reported at its own spans
            seen.append(parent["span_id"])
            cur = parent
    return None if bad else roots[0]


def _trial_from_trace(spans: list[Span], agent: str | None, log: ProblemLog) -> dict[str, Any] | None:
    root = _structure(spans, log)
    if root is None:
        return None
    spans.sort(key=lambda s: (s["start"] is None, s["start"] or 0))
    ra = root["attributes"]
    llms = [s for s in spans if _kind(s) == "LLM"]
    name = agent or _meta_attr(ra, "agent") or root["resource"].get("service.name")
    if not name:
        name = next((s["attributes"].get("llm.model_name") for s in llms if s["attributes"].get("llm.model_name")),
                    None) or "unknown-agent"
    task = _meta_attr(ra, "task_id")
    out: dict[str, Any] = {"agent": str(name), "task_id": str(task) if task is not None else root["trace_id"]}
    trial = _meta_attr(ra, "trial")
    if trial is not None:
        out["trial"] = trial
    for key in ("success", "reward"):
        v = _meta_attr(ra, key)
        if v is not None:
            out[key] = v
    meta: dict[str, Any] = {"format": "otel", "trace_id": root["trace_id"], "root_span": root["name"]}
    if root["error"]:
        out["status"] = Status.agent_error
        exc = next((e for e in root["events"] if e.get("name") == "exception"), None)
        if exc is not None:
            meta["error_type"] = exc["attributes"].get("exception.type")
            meta["error"] = exc["attributes"].get("exception.message")
    for k in ("session.id", "user.id"):
        if ra.get(k) is not None:
            meta[k.replace(".", "_")] = ra[k]
    calls, tools = _tool_calls(spans, llms)
    nodes = _nodes(spans, root)
    if nodes:
        meta["nodes"] = nodes
    usage = _usage(llms, root)
    out["interactions"] = [
        {"id": "turn-0", "query": _str(ra.get("input.value")), "answer": _str(ra.get("output.value")),
         "tool_calls": calls}
    ]
    out["meta"] = meta
    if usage:
        out["usage"] = usage
    if tools:
        out["tools"] = list(tools.values())
    out["_line"] = root["line"]
    return out


def _str(v: Any) -> str | None:
    if v is None:
        return None
    return v if isinstance(v, str) else json.dumps(v)


def spans_to_trials(spans: Iterator[Span], log: ProblemLog, *, agent: str | None = None) -> list[Trial]:
    """Group spans by trace and convert each trace to a trial (see the module docstring).

    Problems are logged at the line of the trace's root span.
    """
    traces: dict[str, list[Span]] = {}
    for s in spans:
        traces.setdefault(s["trace_id"], []).append(s)
    next_trial: dict[tuple[str, str], int] = {}

    def converted() -> Iterator[tuple[int, dict[str, Any]]]:
        for tr in traces.values():
            d = _trial_from_trace(tr, agent, log)
            if d is None:
                continue
            line = d.pop("_line")
            cell = (d["agent"], d["task_id"])
            if "trial" not in d:
                d["trial"] = next_trial.get(cell, 0)
            if isinstance(d["trial"], int):
                next_trial[cell] = max(next_trial.get(cell, 0), d["trial"] + 1)
            yield line, d

    return build_trials(converted(), log, unit="line", prefix="(trace's trial) ")


def read_otel(path: str | os.PathLike, log: ProblemLog, *, agent: str | None = None) -> list[Trial]:
    """Read an OpenTelemetry / OpenInference span export into trials, one per trace.

    Parameters
    ----------
    path : str or PathLike
        OTLP JSON (file exporter), flat span JSON (OpenTelemetry SDK, Arize Phoenix); JSON, JSONL or
        concatenated JSON values; plain or gzip.
    log : ProblemLog
        Problems are logged with the 1-based line where the offending JSON value starts and the field.
    agent : str, optional
        Agent name for every trace (default: see the module docstring).

    Returns
    -------
    list of Trial
    """
    log.unit = "line"
    return spans_to_trials(iter_spans(path, log), log, agent=agent)


def looks_like_otel(path: Any, head: bytes) -> bool:
    """Tell from a file's first bytes whether it is an OTLP JSON or flat-span trace export.

    Decided on the first JSON value's top-level keys when its first line holds it whole (JSONL), else on the
    text; the project's own trial records (``agent``, ``task_id``, which may hold span ids in ``meta``) never match.
    """
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")
    body = text.lstrip("[ \t\r\n")
    if not body.startswith("{"):
        return False
    try:
        first = json.loads(body.split("\n", 1)[0].rstrip(", "))
    except json.JSONDecodeError:
        first = None
    if isinstance(first, dict):
        keys = set(first)
        if {"agent", "task_id"} <= keys:
            return False
        ctx = first.get("context")
        return "resourceSpans" in keys or (isinstance(ctx, dict) and "span_id" in ctx) or (
            "context.span_id" in keys
        )
    start = body[:2000]
    if '"agent"' in start and '"task_id"' in start:
        return False
    if '"resourceSpans"' in start:
        return True
    return '"context"' in start and '"span_id"' in start and '"trace_id"' in start


def register() -> None:
    """Make ``load_trials(path)`` read trace exports (``format="otel"``, also auto-detected)."""
    from agentstats.io.registry import register_format

    register_format("otel", read_otel, aliases=("opentelemetry", "openinference", "otlp", "phoenix"),
                    detect=looks_like_otel)


register()

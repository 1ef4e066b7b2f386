"""OpenTelemetry / OpenInference trace exports (agentstats.io.readers.otel): traces -> trials, nodes, tool calls, usage.

The fixture ``tests/data/otel_otlp.jsonl`` is hand-written after the OTLP JSON encoding (the Collector's file
exporter: one ``ExportTraceServiceRequest`` per line) and the OpenInference semantic conventions: three traces of
an AGENT root with RETRIEVER, CHAIN, LLM and TOOL spans; one trace is split over both lines.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agentstats.io import LoadError, LoadWarning, detect_format, load_trials

FIXTURE = Path(__file__).parents[1] / "data" / "otel_otlp.jsonl"


def _summary(trials):
    return {t.key: (t.status.value, t.success, t.outcome()) for t in trials}


EXPECTED = {
    ("weather-bot-v2", "paris", 0): ("completed", True, "success"),
    ("weather-bot-v2", "paris", 1): ("completed", False, "failure"),
    ("weather-bot-v2", "rome", 0): ("agent_error", None, "failure"),
}


def test_otlp_traces_become_trials():
    assert detect_format(FIXTURE) == "otel"
    ts = load_trials(FIXTURE)
    assert ts.format == "otel"
    assert _summary(ts) == EXPECTED
    t = ts[1]
    turn = t.interactions[0]
    assert (turn.query, turn.answer) == ("Weather in Paris?", "It rains.")
    # the TOOL span executed get_weather (result kept); get_time was only requested by the LLM
    assert [(c.name, c.arguments, c.result) for c in turn.tool_calls] == [
        ("get_weather", {"city": "Pari"}, "sunny, 21 C"), ("get_time", {}, None)]
    assert [(n["name"], n["kind"]) for n in t.meta["nodes"]] == [("retrieve_docs", "RETRIEVER"), ("run_tools", "CHAIN")]
    assert t.meta["nodes"][0]["latency_s"] == pytest.approx(0.1)
    assert t.usage is not None
    assert (t.usage.input_tokens, t.usage.output_tokens) == (120 + 200, 12 + 30)
    assert t.usage.cost_usd == pytest.approx(0.001) and t.usage.latency_s == pytest.approx(2.5)
    assert [s.name for s in t.tools] == ["get_weather"]
    rome = ts[2]
    assert rome.meta["error_type"] == "TimeoutError" and rome.meta["error"] == "tool timed out"


def test_agent_option_overrides_service_name():
    ts = load_trials(FIXTURE, agent="bot")
    assert {t.agent for t in ts} == {"bot"}


def _flat(request_line: str, nested: bool) -> list[dict]:
    """The same spans in the OpenTelemetry SDK's ``to_json`` form (nested attributes: Phoenix's form)."""
    req = json.loads(request_line)
    out = []
    for rs in req["resourceSpans"]:
        resource = {a["key"]: next(iter(a["value"].values())) for a in rs["resource"]["attributes"]}
        for ss in rs["scopeSpans"]:
            for s in ss["spans"]:
                attrs = {}
                for a in s["attributes"]:
                    v = next(iter(a["value"].values()))
                    attrs[a["key"]] = int(v) if "intValue" in a["value"] else v
                if nested:
                    tree: dict = {}
                    for k, v in attrs.items():
                        node = tree
                        *head, last = k.split(".")
                        for h in head:
                            node = node.setdefault(h, {})
                        node[last] = v
                    attrs = tree

                def iso(ns: str) -> str:
                    return datetime.fromtimestamp(int(ns) / 1e9, UTC).isoformat().replace("+00:00", "Z")

                out.append({
                    "name": s["name"],
                    "context": {"trace_id": "0x" + s["traceId"], "span_id": "0x" + s["spanId"], "trace_state": "[]"},
                    "kind": "SpanKind.INTERNAL", "parent_id": ("0x" + s["parentSpanId"]) if s["parentSpanId"] else None,
                    "start_time": iso(s["startTimeUnixNano"]), "end_time": iso(s["endTimeUnixNano"]),
                    "status": {"status_code": "ERROR" if s["status"].get("code") == 2 else "UNSET"},
                    "attributes": attrs,
                    "events": [{"name": e["name"], "attributes": {a["key"]: next(iter(a["value"].values()))
                                                                  for a in e["attributes"]}} for e in s["events"]],
                    "resource": {"attributes": resource},
                })
    return out


@pytest.mark.parametrize("nested", [False, True])
def test_flat_span_exports_read_the_same(tmp_path, nested):
    spans = [s for line in FIXTURE.read_text().splitlines() for s in _flat(line, nested)]
    # the SDK's console exporter writes indented JSON objects one after another
    p = tmp_path / "spans.json"
    p.write_text("\n".join(json.dumps(s, indent=4) for s in spans))
    assert detect_format(p) == "otel"
    ts = load_trials(p)
    assert _summary(ts) == EXPECTED
    ref = load_trials(FIXTURE)
    for a, b in zip(ts, ref, strict=True):
        assert a.usage == b.usage
        assert [c.model_dump() for c in a.interactions[0].tool_calls] == [
            c.model_dump() for c in b.interactions[0].tool_calls]
        assert [(n["name"], n["kind"]) for n in a.meta["nodes"]] == [(n["name"], n["kind"]) for n in b.meta["nodes"]]
    # and as one JSON array
    q = tmp_path / "spans_array.json"
    q.write_text(json.dumps(spans))
    assert _summary(load_trials(q)) == EXPECTED


def test_truncated_file_located(tmp_path):
    lines = FIXTURE.read_text().splitlines()
    p = tmp_path / "cut.jsonl"
    p.write_text(lines[0] + "\n" + lines[1][: len(lines[1]) // 2])
    with pytest.raises(LoadError) as err:
        load_trials(p, format="otel")
    prob = err.value.problems[0]
    assert (prob.line, prob.unit) == (2, "line") and "truncated" in prob.message


def test_wrong_format_located(tmp_path):
    lines = FIXTURE.read_text().splitlines()
    p = tmp_path / "mixed.jsonl"
    p.write_text(lines[0] + "\n" + json.dumps({"metrics": []}) + "\n")
    with pytest.raises(LoadError) as err:
        load_trials(p, format="otel")
    assert [(pr.line, pr.field) for pr in err.value.problems] == [(2, None)]
    assert "not an OTLP trace request" in err.value.problems[0].message


def test_span_without_id_located(tmp_path):
    req = json.loads(FIXTURE.read_text().splitlines()[0])
    req["resourceSpans"][0]["scopeSpans"][0]["spans"][2]["spanId"] = ""
    p = tmp_path / "noid.jsonl"
    p.write_text(json.dumps(req) + "\n")
    with pytest.raises(LoadError) as err:
        load_trials(p, format="otel")
    assert err.value.problems[0].field == "resourceSpans.0.scopeSpans.0.spans.2.spanId"
    assert err.value.problems[0].line == 1


def test_bad_outcome_attribute_located(tmp_path):
    text = FIXTURE.read_text().replace('\\"success\\": true', '\\"success\\": \\"sure\\"', 1)
    p = tmp_path / "bad.jsonl"
    p.write_text(text)
    with pytest.raises(LoadError) as err:
        load_trials(p, format="otel")
    prob = err.value.problems[0]
    assert prob.line == 1 and prob.field == "(trace's trial) success"


def test_own_trial_records_with_span_ids_are_not_traces(tmp_path):
    # trials read from traces keep span ids in meta; written back as the project's JSONL they stay trials
    from agentstats.io import save_trials

    ts = load_trials(FIXTURE)
    p = tmp_path / "trials.jsonl"
    save_trials(ts, p)
    assert detect_format(p) == "jsonl"
    assert [t.model_dump() for t in load_trials(p)] == [t.model_dump() for t in ts]
    q = tmp_path / "trials.json"
    q.write_text(json.dumps([t.model_dump(mode="json") for t in ts], indent=2))
    assert detect_format(q) == "json"


def test_genuine_sdk_export():
    # written by the OpenTelemetry Python SDK's console exporter (tests/data/make_otel_sdk_spans.py)
    p = FIXTURE.parent / "otel_sdk_spans.json"
    assert detect_format(p) == "otel"
    ts = load_trials(p)
    assert _summary(ts) == {
        ("sdk-bot", "paris", 0): ("completed", True, "success"),
        ("sdk-bot", "paris", 1): ("completed", False, "failure"),
        ("sdk-bot", "rome", 0): ("agent_error", False, "failure"),
    }
    for t, city in zip(ts, ("Paris", "Pari", "Rome"), strict=True):
        assert [(c.name, c.arguments, c.result) for c in t.interactions[0].tool_calls] == [
            ("get_weather", {"city": city}, "sunny")]
        assert t.usage is not None and (t.usage.input_tokens, t.usage.output_tokens) == (100, 9)
        assert t.usage.latency_s is not None and t.usage.latency_s > 0
        assert [(n["name"], n["kind"]) for n in t.meta["nodes"]] == [("retrieve", "RETRIEVER")]
        assert (t.interactions[0].query, t.interactions[0].answer) == (f"Weather in {city}?", "Sunny.")
    assert ts[2].meta["error_type"] == "TimeoutError" and ts[2].meta["error"] == "slow tool"


def test_metadata_keys_may_carry_the_agentstats_prefix(tmp_path):
    text = FIXTURE.read_text()
    for key in ("task_id", "trial", "success"):
        text = text.replace(f'\\"{key}\\": ', f'\\"agentstats.{key}\\": ')
    assert '\\"agentstats.task_id\\": \\"paris\\"' in text
    p = tmp_path / "prefixed.jsonl"
    p.write_text(text)
    assert _summary(load_trials(p, format="otel")) == EXPECTED


# ---- structure of a trace: the root is the span without a parent; no root, orphans, cycles are located problems -----


def _span(trace: str, span: str, parent: str | None, start: int, **attrs) -> str:
    return json.dumps({"name": f"s{span}", "context": {"trace_id": trace, "span_id": span}, "parent_id": parent,
                       "start_time": start, "end_time": start + 10,
                       "attributes": {"openinference.span.kind": "CHAIN", **attrs}})


def _write_spans(tmp_path, lines: list[str]) -> Path:
    p = tmp_path / "spans.jsonl"
    p.write_text("\n".join(lines) + "\n")
    return p


GOOD = [  # trace a: a well-formed trace, its root written last and starting after an early child
    _span("a", "a2", "a1", 5),
    _span("a", "a1", None, 100, **{"agentstats.task_id": "t1", "agentstats.success": True}),
]


def test_root_is_the_span_without_parent_whatever_the_order(tmp_path):
    ts = load_trials(_write_spans(tmp_path, GOOD))
    assert [(t.task_id, t.outcome()) for t in ts] == [("t1", "success")]
    assert ts[0].meta["root_span"] == "sa1"


@pytest.mark.parametrize(("bad", "line", "says"), [
    # b: the root was never exported; both spans point at it
    ([_span("b", "b2", "b0", 1), _span("b", "b3", "b2", 2)], 3, "is an orphan"),
    # c: an orphan that starts before the root (it used to displace the root)
    ([_span("c", "c1", None, 50, **{"agentstats.task_id": "t2", "agentstats.success": True}),
      _span("c", "c9", "c8", 1)], 4, "is an orphan"),
    # d: a cycle of two spans beside a root
    ([_span("d", "d1", None, 1, **{"agentstats.task_id": "t3", "agentstats.success": True}),
      _span("d", "d2", "d3", 2), _span("d", "d3", "d2", 3)], 4, "cycle of parents (d2 -> d3 -> d2)"),
    # e: a span that is its own parent, and no root
    ([_span("e", "e1", "e1", 1)], 3, "is its own parent"),
])
def test_structural_problems_are_located_and_skippable(tmp_path, bad, line, says):
    p = _write_spans(tmp_path, GOOD + bad)
    with pytest.raises(LoadError) as err:
        load_trials(p)
    assert any(pr.line == line and pr.field == "parent_id" and says in pr.message for pr in err.value.problems)
    with pytest.warns(LoadWarning):
        ts = load_trials(p, on_error="skip")
    assert [(t.task_id, t.outcome()) for t in ts] == [("t1", "success")]  # trace a only; never a re-rooted trial


def test_trace_without_root_says_so(tmp_path):
    p = _write_spans(tmp_path, [*GOOD, _span("b", "b2", "b3", 1), _span("b", "b3", "b2", 2)])
    with pytest.raises(LoadError) as err:
        load_trials(p)
    messages = [pr.message for pr in err.value.problems]
    assert any("trace b has no root span" in m for m in messages)
    assert any("cycle of parents" in m for m in messages)

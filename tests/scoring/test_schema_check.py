"""JSON-Schema validation of tool calls: each error kind with its JSON path."""

from __future__ import annotations

import pytest

from agentstats.records.trial import ToolCall
from agentstats.scoring.schema_check import normalize_schema, validate_tool_calls

TOOLS = [
    {"type": "function", "function": {"name": "search", "description": "find", "parameters": {
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "limit": {"type": "integer"},
            "filters": {"type": "array", "items": {"type": "object", "properties": {
                "field": {"type": "string"}, "value": {"type": "string"}}, "required": ["field"]}},
        },
        "required": ["query"],
    }}},
    {"name": "bfcl_style", "parameters": {"type": "dict", "properties": {
        "x": {"type": "float"}, "pair": {"type": "tuple", "items": {"type": "integer"}}, "anything": {"type": "any"},
        "opts": {"type": "dict", "properties": {"on": {"type": "boolean"}}}}, "required": ["x"]}},
]


def kinds(errors):
    return [(e.call_index, e.kind, e.path) for e in errors]


def test_valid_calls_have_no_errors():
    calls = [ToolCall(name="search", arguments='{"query": "cats", "limit": 3}'),
             {"id": "c1", "type": "function", "function": {"name": "bfcl_style",
                                                            "arguments": '{"x": 2, "pair": [1, 2], "anything": [1]}'}}]
    assert validate_tool_calls(calls, TOOLS) == []


def test_each_error_kind_with_path():
    calls = [
        ToolCall(name="search", arguments={"limit": "3", "extra": 1,
                                           "filters": [{"field": "a"}, {"value": "b"}]}),
        ToolCall(name="nope", arguments={}),
        ToolCall(name="search", arguments='{"query": '),
        ToolCall(name="search", arguments={"query": "x", "limit": None}),
        ToolCall(name="search", arguments={"query": None}),
    ]
    got = kinds(validate_tool_calls(calls, TOOLS))
    assert sorted(got) == sorted([
        (0, "extra_argument", "$.extra"),
        (0, "wrong_type", "$.limit"),
        (0, "missing_required", "$.query"),
        (0, "missing_required", "$.filters[1].field"),
        (1, "unknown_tool", "$"),
        (2, "malformed_json", "$"),
        (3, "null_optional", "$.limit"),
        (4, "wrong_type", "$.query"),
    ])
    assert len(got) == 8


def test_nonstandard_types_mapped():
    s = normalize_schema(TOOLS[1]["parameters"])
    assert s["type"] == "object" and s["properties"]["x"]["type"] == "number"
    assert s["properties"]["pair"]["type"] == "array" and "type" not in s["properties"]["anything"]
    assert s["properties"]["opts"]["type"] == "object" and s["additionalProperties"] is False
    assert TOOLS[1]["parameters"]["type"] == "dict"  # input untouched
    errs = validate_tool_calls([ToolCall(name="bfcl_style", arguments={"x": "1", "opts": {"on": 1}})], TOOLS)
    assert kinds(errs) == [(0, "wrong_type", "$.opts.on"), (0, "wrong_type", "$.x")]


def test_integer_strictness_and_bool():
    call = [ToolCall(name="search", arguments={"query": "q", "limit": 2.0})]
    assert validate_tool_calls(call, TOOLS) == []  # JSON-Schema: 2.0 is an integer
    assert kinds(validate_tool_calls(call, TOOLS, strict_integers=True)) == [(0, "wrong_type", "$.limit")]
    call = [ToolCall(name="search", arguments={"query": "q", "limit": True})]
    assert kinds(validate_tool_calls(call, TOOLS)) == [(0, "wrong_type", "$.limit")]


def test_extra_allowed_when_asked():
    call = [ToolCall(name="search", arguments={"query": "q", "extra": 1})]
    assert validate_tool_calls(call, TOOLS, forbid_extra=False) == []


def test_duplicate_spec_raises():
    with pytest.raises(ValueError, match="duplicate"):
        validate_tool_calls([], [TOOLS[0], TOOLS[0]])

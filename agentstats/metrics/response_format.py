"""Response format: whether the answer is JSON that satisfies a JSON Schema.

``format_valid`` (group ``format``): 1 when the answer (``output``), stripped of outer whitespace and of a Markdown
code fence around it (```` ```json ... ``` ````), parses as JSON and the value satisfies ``params["schema"]``
(JSON Schema draft 2020-12, ``jsonschema.Draft202012Validator``), else 0. Not applicable without a schema or without
an answer field; a blank answer is not JSON (0). An invalid schema is an input error.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from agentstats.metrics.base import Score, not_applicable

__all__ = ["format_valid", "parse_json_answer"]


def parse_json_answer(text: str) -> tuple[bool, Any]:
    """Parse ``text`` as JSON (outer whitespace and a code fence removed): ``(True, value)`` or ``(False, None)``."""
    text = text.strip()
    if text.startswith("```"):  # a fenced JSON block is still JSON
        text = text.strip("`").removeprefix("json").strip()
    try:
        return True, json.loads(text)
    except ValueError:
        return False, None


@lru_cache(maxsize=64)
def _validator(schema_json: str) -> Any:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    schema = json.loads(schema_json)
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        raise ValueError(f"format_valid: params['schema'] is not a valid JSON Schema: {exc.message}") from None
    return Draft202012Validator(schema)


def format_valid(values: Mapping[str, Any], params: Mapping[str, Any]) -> Score:
    """1 when the answer is JSON satisfying ``params["schema"]`` (JSON Schema 2020-12), else 0.

    Evidence: ``parsed`` (whether the answer is JSON) and, when it is, the first ``errors`` (at most 5 messages).
    """
    schema = params.get("schema")
    if not schema:
        return not_applicable("no schema")
    answer = values.get("output")
    if answer is None:
        return not_applicable("no answer field")
    ok, value = parse_json_answer(answer if isinstance(answer, str) else str(answer))
    if not ok:
        return Score(0.0, {"parsed": False})
    validator = _validator(json.dumps(dict(schema), sort_keys=True))
    errors = [e.message for e in itertools.islice(validator.iter_errors(value), 5)]
    return Score(0.0 if errors else 1.0, {"parsed": True, "errors": errors})

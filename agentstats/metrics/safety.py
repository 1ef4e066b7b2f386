"""Deterministic content-safety methods beside PII (:mod:`agentstats.metrics.pii`): regex detection.

Regex detection. 1 when any of ``params["patterns"]`` (Python regular expressions, case-insensitive unless
``params["case_sensitive"]``) matches the answer, else 0; the patterns that matched are the evidence. Not
applicable without patterns. A missing answer field is not applicable.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from agentstats.metrics.base import Score, not_applicable

__all__ = ["regex_detection"]


@lru_cache(maxsize=256)
def _compiled(patterns: tuple[str, ...], case_sensitive: bool) -> tuple[re.Pattern[str], ...]:
    flags = 0 if case_sensitive else re.IGNORECASE
    out = []
    for p in patterns:
        try:
            out.append(re.compile(p, flags))
        except re.error as exc:
            raise ValueError(f"regex_detection: pattern {p!r} is not a valid regular expression: {exc}") from None
    return tuple(out)


def regex_detection(values: Mapping[str, Any], params: Mapping[str, Any]) -> Score:
    """1 when a pattern of ``params["patterns"]`` (or the record's ``patterns`` role) matches the answer, else 0."""
    pats = values.get("patterns") or params.get("patterns")
    if isinstance(pats, str):
        pats = [pats]
    if not pats:
        return not_applicable("no patterns")
    answer = values.get("output")
    if answer is None:
        return not_applicable("no answer field")
    text = answer if isinstance(answer, str) else str(answer)
    matched = [p.pattern for p in _compiled(tuple(pats), bool(params.get("case_sensitive", False))) if p.search(text)]
    return Score(1.0 if matched else 0.0, {"matched": matched})

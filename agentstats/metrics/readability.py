"""Readability methods: Flesch reading ease and Flesch-Kincaid grade level, by ``textstat``.

``reading_ease = 206.835 - 1.015 * words/sentences - 84.6 * syllables/words`` (Flesch 1948, "A new readability
yardstick", Journal of Applied Psychology 32:221-233); ``grade_level = 0.39 * words/sentences + 11.8 *
syllables/words - 15.59`` (Kincaid et al. 1975, Naval Technical Training Command report 8-75). Counts of words,
sentences and syllables (Pyphen hyphenation dictionaries) are ``textstat``'s (github.com/textstat/textstat).

Reading ease is at most 121.22 (one-syllable words, one-word sentences) and unbounded below; the grade level is
at least -3.40 and unbounded above. An answer without a word (missing, blank, punctuation only) is not
applicable. Results are cached per text (answers repeat across trials: "I don't know", canned refusals).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from agentstats.metrics.base import Score, not_applicable

__all__ = ["grade_level", "reading_ease"]

_WORD = re.compile(r"\w")


@lru_cache(maxsize=1)
def _textstat() -> Any:
    try:
        import textstat
    except ImportError as exc:  # pragma: no cover - textstat is a dependency
        raise ImportError("the readability metrics need textstat: pip install textstat") from exc
    return textstat


@lru_cache(maxsize=65536)
def _scores(text: str) -> tuple[float, float]:
    ts = _textstat()
    return float(ts.flesch_reading_ease(text)), float(ts.flesch_kincaid_grade(text))


def _text(values: Mapping[str, Any]) -> str | Score:
    answer = values.get("output")
    if answer is None or not isinstance(answer, str) or not _WORD.search(answer):
        return not_applicable("empty answer" if answer is None or not str(answer).strip() else "answer has no word")
    return answer


def reading_ease(values: Mapping[str, Any], params: Mapping[str, Any]) -> Score:
    """Flesch reading ease of the answer (higher is easier; 60-70 is plain English), by ``textstat``."""
    t = _text(values)
    if isinstance(t, Score):
        return t
    return Score(_scores(t)[0], {})


def grade_level(values: Mapping[str, Any], params: Mapping[str, Any]) -> Score:
    """Flesch-Kincaid grade level of the answer (US school grade needed to read it), by ``textstat``."""
    t = _text(values)
    if isinstance(t, Score):
        return t
    return Score(_scores(t)[1], {})

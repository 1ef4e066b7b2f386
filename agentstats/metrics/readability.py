"""Readability methods: Flesch reading ease and Flesch-Kincaid grade level, by ``textstat``.

``reading_ease = 206.835 - 1.015 * words/sentences - 84.6 * syllables/words`` (Flesch 1948, "A new readability
yardstick", Journal of Applied Psychology 32:221-233); ``grade_level = 0.39 * words/sentences + 11.8 *
syllables/words - 15.59`` (Kincaid et al. 1975, Naval Technical Training Command report 8-75). Counts of words,
sentences and syllables (Pyphen hyphenation dictionaries) are ``textstat``'s (github.com/textstat/textstat).

Reading ease is at most 121.22 (one-syllable words, one-word sentences) and unbounded below; the grade level is
at least -3.40 and unbounded above. An answer without a word (missing, blank, punctuation only) is not
applicable.

Speed: the word, sentence and syllable counts are textstat's own functions (``textstat.backend``: its word list,
sentence rule, CMU Pronouncing Dictionary lookup and Pyphen fallback, English), computed once per answer for both
scores, with the syllables of each distinct word remembered in a dictionary: the values equal
``textstat.flesch_reading_ease`` and ``textstat.flesch_kincaid_grade`` exactly (tested), about eight times faster
than calling both on the benchmark's answers. An ASCII answer without an apostrophe loses its punctuation by
``bytes.translate`` (the characters textstat's pattern deletes, read off that pattern), and a sentence whose first
three chunks are all letters has more than two words without further counting. Results are also cached per text
(answers repeat across trials: "I don't know", canned refusals).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from agentstats.metrics.base import Score, not_applicable

__all__ = ["grade_level", "reading_ease"]

_WORD = re.compile(r"\w")


#: Syllables of each word seen (textstat's count, below), looked up directly; emptied when it grows past 262,144.
_SYLLABLES: dict[str, int] = {}


@lru_cache(maxsize=1)
def _backend() -> tuple[Any, Any]:
    from textstat.backend.utils import get_cmudict, get_pyphen
    from textstat.backend.utils.constants import RE_NONCONTRACTION_APOSTROPHE

    cmu, pyphen = get_cmudict("en_US"), get_pyphen("en_US")

    def word_syllables(word: str) -> int:  # textstat's count_syllables, one word at a time, remembered
        n = _SYLLABLES.get(word)
        if n is None:
            try:
                n = sum(1 for p in cmu[word][0] if p[-1].isdigit())
            except (TypeError, IndexError, KeyError):
                n = len(pyphen.positions(word)) + 1
            if len(_SYLLABLES) >= 262144:
                _SYLLABLES.clear()
            _SYLLABLES[word] = n
        return n

    return word_syllables, re.compile(RE_NONCONTRACTION_APOSTROPHE)


# textstat's patterns (textstat.backend: remove_punctuation with rm_apostrophe=False, count_sentences)
_PUNCT_BUT_APOSTROPHE = re.compile(r"[^\w\s\']")
_SENTENCE = re.compile(r"\b[^.!?]+[.!?]*")


# the ASCII characters _PUNCT_BUT_APOSTROPHE deletes, read off the pattern itself
_ASCII_PUNCT_DELETE = bytes(c for c in range(128) if _PUNCT_BUT_APOSTROPHE.match(chr(c)))


def _strip(text: str, apostrophe: re.Pattern[str]) -> str:
    """``textstat.backend.transformations.remove_punctuation(text, rm_apostrophe=False)``.

    An ASCII text without an apostrophe (the apostrophe pattern matches only at one) loses exactly the characters
    of ``_ASCII_PUNCT_DELETE`` (``bytes.translate``, faster than the two substitutions).
    """
    if "'" not in text and text.isascii():
        return text.encode("ascii").translate(None, _ASCII_PUNCT_DELETE).decode("ascii")
    return _PUNCT_BUT_APOSTROPHE.sub("", apostrophe.sub("", text))


def _more_than_two_words(sentence: str, apostrophe: re.Pattern[str]) -> bool:
    """``textstat.backend.counts.count_words(sentence) > 2``, deciding most sentences without stripping them.

    Stripping deletes characters other than whitespace, never a word character, so each whitespace-separated
    chunk holding a word character stays a word: three such chunks settle it. Otherwise count as textstat does.
    """
    first = sentence.split(None, 3)
    if len(first) >= 3 and first[0].isalpha() and first[1].isalpha() and first[2].isalpha():
        return True  # letters are word characters
    found = 0
    for chunk in sentence.split():
        if _WORD.search(chunk):
            found += 1
            if found > 2:
                return True
    return len(_strip(sentence, apostrophe).split()) > 2


@lru_cache(maxsize=65536)
def _scores(text: str) -> tuple[float, float]:
    """Return ``(reading ease, grade level)`` of ``text`` as textstat computes them for English.

    textstat's counts in one pass: ``count_words`` is the number of words of the text without punctuation
    (apostrophes of contractions kept), ``list_words(lowercase=True)`` the same words lowercased, and
    ``count_sentences`` the sentences of its pattern less those of at most two words (at least 1 for a non-empty
    text). Equal to ``textstat.flesch_reading_ease`` / ``flesch_kincaid_grade`` (tested on a varied corpus).
    """
    word_syllables, apostrophe = _backend()
    lowered = _strip(text, apostrophe).lower().split()  # lowercasing moves no whitespace: same words
    words = len(lowered)
    try:
        syllables = sum(map(_SYLLABLES.__getitem__, lowered))
    except KeyError:
        syllables = sum(map(word_syllables, lowered))
    if not text:
        sentences = 0
    else:
        found = _SENTENCE.findall(text)
        sentences = max(1, sum(1 for s in found if _more_than_two_words(s, apostrophe)))
    wps = words / sentences if sentences else 0.0
    spw = syllables / words if words else 0.0
    if wps == 0 or spw == 0:  # textstat's rule for a text without words
        return 0.0, 0.0
    return 206.835 - 1.015 * wps - 84.6 * spw, 0.39 * wps + 11.8 * spw - 15.59


def _latin_share(text: str) -> float:
    """Share of the letters of ``text`` in the Latin script (U+0041-U+024F, U+1E00-U+1EFF); 1 when it has none."""
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return 1.0
    latin = sum(1 for c in letters if c <= "\u024f" or "\u1e00" <= c <= "\u1eff")
    return latin / len(letters)


#: Below this share of Latin letters a text is not scored: the formulas are defined for English words, sentences and
#: syllables (Chinese or Japanese text has no spaces and no syllables textstat can count: it scored the maximum ease).
MIN_LATIN_SHARE = 0.5


def _text(values: Mapping[str, Any]) -> str | Score:
    answer = values.get("output")
    if answer is None or not isinstance(answer, str) or not _WORD.search(answer):
        return not_applicable("empty answer" if answer is None or not str(answer).strip() else "answer has no word")
    share = _latin_share(answer)
    if share < MIN_LATIN_SHARE:
        return not_applicable(f"text not in the Latin script ({share:.0%} of its letters): the Flesch formulas are "
                              "defined for English")
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

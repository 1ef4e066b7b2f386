"""Deterministic answer matchers: auto (the default), exact, normalized text, numeric, token F1, contains.

Each matcher returns an :class:`AnswerMatch` with a score in ``[0, 1]``, the matcher's name and a small dict
of details. ``expected`` may be a single value or a list of acceptable answers; the best score over the
list is returned (SQuAD's rule for multiple gold answers, Rajpurkar et al. 2016, arXiv 1606.05250).

Text normalization (``normalize_text``) is SQuAD's: lowercase, drop punctuation, drop the articles
``a, an, the``, collapse whitespace (Rajpurkar et al. 2016, arXiv 1606.05250, official evaluation script).
"""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "MATCHERS",
    "SHORT_EXPECTED_MAX_TOKENS",
    "AnswerMatch",
    "auto_match",
    "contains_match",
    "exact_match",
    "extract_numbers",
    "match_answer",
    "normalize_text",
    "normalized_match",
    "numeric_match",
    "token_f1",
]

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCT = str.maketrans("", "", string.punctuation)
# numbers: optional sign, thousands separators, decimals, exponent, optional trailing percent
_NUMBER = re.compile(r"(?<![\w.])[-+\u2212]?(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d+)?(?:[eE][-+]?\d+)?%?")


@dataclass(frozen=True, slots=True)
class AnswerMatch:
    """Result of one answer matcher.

    Parameters
    ----------
    score : float
        In ``[0, 1]``; exact/normalized/numeric/contains give 0 or 1, token F1 any value in between.
    matcher : str
        Name of the matcher.
    details : dict
        What was compared (normalized forms, numbers found, best-matching expected answer ...).
    """

    score: float
    matcher: str
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        """``score == 1``."""
        return self.score >= 1.0


def normalize_text(s: str) -> str:
    """SQuAD normalization: lowercase, remove punctuation and articles, collapse whitespace.

    Source: the official SQuAD v1.1 evaluation script (Rajpurkar et al. 2016, arXiv 1606.05250).
    """
    s = s.lower().translate(_PUNCT)
    s = _ARTICLES.sub(" ", s)
    return " ".join(s.split())


def _as_list(expected: Any) -> list[Any]:
    if isinstance(expected, list | tuple):
        if not expected:
            raise ValueError("expected answers: empty list")
        return list(expected)
    return [expected]


def _text(v: Any) -> str:
    if v is None:
        return ""
    return v if isinstance(v, str) else str(v)


def _best(scores: Sequence[tuple[float, dict[str, Any]]], matcher: str) -> AnswerMatch:
    i = max(range(len(scores)), key=lambda k: scores[k][0])
    s, d = scores[i]
    return AnswerMatch(float(s), matcher, {**d, "expected_index": i})


def exact_match(answer: Any, expected: Any, *, strip: bool = True) -> AnswerMatch:
    """Score 1 when the answer equals an expected answer character for character, else 0.

    Outer whitespace is stripped first when asked.
    """
    a = _text(answer)
    a = a.strip() if strip else a
    out = []
    for e in _as_list(expected):
        t = _text(e)
        t = t.strip() if strip else t
        out.append((1.0 if a == t else 0.0, {"answer": a, "expected": t}))
    return _best(out, "exact")


def normalized_match(answer: Any, expected: Any) -> AnswerMatch:
    """1 when the SQuAD-normalized answer equals a SQuAD-normalized expected answer (SQuAD "EM")."""
    a = normalize_text(_text(answer))
    out = []
    for e in _as_list(expected):
        t = normalize_text(_text(e))
        out.append((1.0 if a == t else 0.0, {"answer": a, "expected": t}))
    return _best(out, "normalized")


def extract_numbers(text: str) -> list[float]:
    """Find all numbers written in ``text``.

    Signs, thousands separators (``1,234``), decimals, exponents and percentages (``12%`` -> 12.0; the percent
    sign is reported, not applied).
    """
    out: list[float] = []
    for m in _NUMBER.finditer(text):
        tok = m.group()
        core = tok.rstrip("%").replace(",", "").replace("\u2212", "-")  # U+2212 MINUS SIGN
        if not any(ch.isdigit() for ch in core):
            continue
        try:
            out.append(float(core))
        except ValueError:
            continue
    return out


def numeric_match(
    answer: Any,
    expected: Any,
    *,
    abs_tol: float = 1e-9,
    rel_tol: float = 1e-6,
    which: str = "any",
) -> AnswerMatch:
    """1 when a number in the answer equals the expected number within tolerance.

    Parameters
    ----------
    answer : str or number
        Free text (every number in it is extracted) or a number.
    expected : number, str or list
        Expected value(s); strings are parsed with :func:`extract_numbers` (first number).
    abs_tol, rel_tol : float
        Tolerance, ``math.isclose`` rule: ``|a-e| <= max(rel_tol*max(|a|,|e|), abs_tol)``.
    which : {"any", "last", "first", "only"}
        Which of the answer's numbers must match: any of them, the last one (the usual "final answer"
        rule), the first, or the single number (an answer with several numbers then scores 0).

    Raises
    ------
    ValueError
        When an expected value holds no number, or ``which`` is unknown.
    """
    if which not in ("any", "last", "first", "only"):
        raise ValueError(f"which must be any|last|first|only, got {which!r}")
    if isinstance(answer, int | float) and not isinstance(answer, bool):
        nums = [float(answer)]
    else:
        nums = extract_numbers(_text(answer))
    if which == "last":
        cand = nums[-1:]
    elif which == "first":
        cand = nums[:1]
    elif which == "only":
        cand = nums if len(nums) == 1 else []
    else:
        cand = nums
    out = []
    for e in _as_list(expected):
        if isinstance(e, int | float) and not isinstance(e, bool):
            ev = float(e)
        else:
            found = extract_numbers(_text(e))
            if not found:
                raise ValueError(f"expected answer {e!r} holds no number")
            ev = found[0]
        hit = next((x for x in cand if math.isclose(x, ev, rel_tol=rel_tol, abs_tol=abs_tol)), None)
        out.append((1.0 if hit is not None else 0.0,
                    {"answer_numbers": nums, "expected": ev, "matched": hit}))
    return _best(out, "numeric")


def token_f1(answer: Any, expected: Any) -> AnswerMatch:
    """SQuAD token F1 between normalized answer and expected answer (best over expected answers).

    ``precision = |common| / |answer tokens|``, ``recall = |common| / |expected tokens|`` with ``common``
    the multiset intersection; ``F1 = 2PR/(P+R)``. Two empty token lists score 1, one empty list 0
    (Rajpurkar et al. 2016, arXiv 1606.05250, official evaluation script; empty-case rule from SQuAD 2.0).
    """
    a_toks = normalize_text(_text(answer)).split()
    out = []
    for e in _as_list(expected):
        e_toks = normalize_text(_text(e)).split()
        if not a_toks or not e_toks:
            s = 1.0 if a_toks == e_toks else 0.0
            out.append((s, {"precision": s, "recall": s, "common": 0}))
            continue
        common = sum((Counter(a_toks) & Counter(e_toks)).values())
        if common == 0:
            out.append((0.0, {"precision": 0.0, "recall": 0.0, "common": 0}))
            continue
        p = common / len(a_toks)
        r = common / len(e_toks)
        out.append((2 * p * r / (p + r), {"precision": p, "recall": r, "common": common}))
    return _best(out, "token_f1")


def _contains_tokens(answer_norm: str, expected_norm: str) -> bool:
    return bool(expected_norm) and f" {expected_norm} " in f" {answer_norm} "


def contains_match(answer: Any, expected: Any, *, normalize: bool = True) -> AnswerMatch:
    """Score 1 when an expected answer occurs in the answer as a whole-token substring, else 0.

    SQuAD normalization is applied when ``normalize`` (plain substring otherwise). An empty expected answer never
    matches.
    """
    a = _text(answer)
    out = []
    for e in _as_list(expected):
        t = _text(e)
        if normalize:
            an, tn = normalize_text(a), normalize_text(t)
            hit = _contains_tokens(an, tn)
        else:
            hit = bool(t) and t in a
        out.append((1.0 if hit else 0.0, {"expected": t}))
    return _best(out, "contains")


def _is_number_text(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return True
    if isinstance(value, str):
        nums = extract_numbers(value)
        return len(nums) == 1 and _NUMBER.fullmatch(value.strip().rstrip(".")) is not None
    return False


#: Longest expected answer, in SQuAD-normalized tokens, that :func:`auto_match` may find inside a longer answer.
SHORT_EXPECTED_MAX_TOKENS = 4


def auto_match(answer: Any, expected: Any, **opts: Any) -> AnswerMatch:
    """Match by the default rules: numeric for numeric references, else normalized text, else a lenient rule.

    Rules, in order (``details["auto"]`` names the one that decided, ``details["lenient"]`` says whether it is
    lenient):

    ``numeric``
        Every expected answer is a single number: the number the answer ends with is compared
        (``numeric_match(which="last")``, the usual final-answer rule), so ``"The result is 8."`` matches ``"8"``.
    ``normalized``
        SQuAD exact match after SQuAD normalization (lowercase, no punctuation, no articles, collapsed
        whitespace; Rajpurkar et al. 2016, arXiv 1606.05250): ``"Paris."`` matches ``"paris"``.
    ``contains`` (lenient)
        When exact match fails and a normalized expected answer is short (at most
        :data:`SHORT_EXPECTED_MAX_TOKENS` tokens), it may occur in the normalized answer as a whole-token
        sequence: ``"Paris is the capital."`` matches ``"Paris"``. This is the answer-containment rule of
        open-domain QA (DPR's ``has_answer``, Karpukhin et al. 2020, arXiv 2004.04906), which scores the verbose
        answers of chat models that exact match marks wrong (Kamalloo et al. 2023, arXiv 2305.06984). It cannot
        see negation (``"not Paris"`` matches ``"Paris"``): use ``matcher="normalized"`` for strict exact match.

    ``opts`` (``abs_tol``, ``rel_tol``, ``which``) apply to the numeric rule only.
    """
    alternatives = _as_list(expected)
    if alternatives and all(_is_number_text(e) for e in alternatives):
        res = numeric_match(answer, expected, **{"which": "last", **opts})
        return AnswerMatch(score=res.score, matcher="auto", details={**res.details, "auto": "numeric",
                                                                     "lenient": False})
    strict = normalized_match(answer, expected)
    if strict.score >= 1.0:
        return AnswerMatch(1.0, "auto", {**strict.details, "auto": "normalized", "lenient": False})
    a = normalize_text(_text(answer))
    for i, e in enumerate(alternatives):
        t = normalize_text(_text(e))
        if len(t.split()) <= SHORT_EXPECTED_MAX_TOKENS and _contains_tokens(a, t):
            return AnswerMatch(1.0, "auto", {"answer": a, "expected": t, "expected_index": i, "auto": "contains",
                                             "lenient": True})
    return AnswerMatch(0.0, "auto", {**strict.details, "auto": "normalized", "lenient": False})


MATCHERS: dict[str, Callable[..., AnswerMatch]] = {
    "auto": auto_match,
    "exact": exact_match,
    "normalized": normalized_match,
    "numeric": numeric_match,
    "token_f1": token_f1,
    "contains": contains_match,
}


def match_answer(answer: Any, expected: Any, matcher: str = "auto", **opts: Any) -> AnswerMatch:
    """Dispatch to a matcher by name.

    Names: ``auto`` (default, :func:`auto_match`), ``exact``, ``normalized``, ``numeric``, ``token_f1``,
    ``contains``.

    Parameters
    ----------
    answer : str
        The agent's answer.
    expected : Any or list
        Expected answer(s).
    matcher : str
        Matcher name.
    **opts
        Passed to the matcher (e.g. ``rel_tol`` for ``numeric``).

    Raises
    ------
    ValueError
        For an unknown matcher name or an expected value the matcher cannot use.
    """
    fn = MATCHERS.get(matcher)
    if fn is None:
        raise ValueError(f"unknown matcher {matcher!r}; choose one of {sorted(MATCHERS)}")
    return fn(answer, expected, **opts)

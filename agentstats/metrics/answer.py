"""Answer-quality methods: token overlap (F1, recall, K-precision), unsuccessful requests, keyword inclusion.

Tokens are SQuAD's: the text is lowercased, punctuation and the articles ``a, an, the`` are removed and it is
split on whitespace (:func:`agentstats.scoring.answers.normalize_text`; Rajpurkar et al. 2016, arXiv 1606.05250).
Overlap counts tokens as multisets (``|common| = sum_t min(count_a(t), count_b(t))``), as the official SQuAD
evaluation script does.

Edge cases (every method): a missing or blank answer, a missing or blank reference (expected answer, context,
question) and an empty keyword list make the metric *not applicable*, with the reason as evidence, never 0. An
answer whose tokens all normalise away (punctuation only) is scored like any other: it overlaps nothing.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from agentstats.metrics.base import Score, not_applicable
from agentstats.scoring.answers import normalize_text

__all__ = [
    "DEFAULT_UNSUCCESSFUL_PHRASES",
    "answer_relevance_token_recall",
    "faithfulness_token_k_precision",
    "keyword_inclusion",
    "token_f1",
    "token_recall",
    "tokens",
    "unsuccessful_phrases",
]

#: Phrases that mark an answer as an unsuccessful request (the agent declined, could not, or did not know).
#: Matched case-insensitively as whole words after collapsing whitespace and turning curly apostrophes into ``'``.
#: Modelled on the refusal / non-answer phrase lists of the agentic-application evaluators and of refusal
#: studies (Zou et al. 2023, arXiv 2307.15043, the refusal prefixes of their jailbreak evaluation); replace or
#: extend it with ``params={"phrases": [...]}``.
DEFAULT_UNSUCCESSFUL_PHRASES: tuple[str, ...] = (
    "i don't know",
    "i do not know",
    "i'm not sure",
    "i am not sure",
    "i cannot",
    "i can't",
    "i can not",
    "i'm unable",
    "i am unable",
    "i'm not able",
    "i am not able",
    "i was unable",
    "i was not able",
    "i couldn't find",
    "i could not find",
    "unable to answer",
    "unable to find",
    "unable to provide",
    "cannot answer",
    "can't answer",
    "cannot help",
    "can't help",
    "no information",
    "not enough information",
    "don't have enough information",
    "do not have enough information",
    "don't have access",
    "do not have access",
    "i apologize",
    "i'm sorry",
    "i am sorry",
    "as an ai",
    "not able to help",
    "outside my knowledge",
    "beyond my knowledge",
)


def _blank(v: Any) -> bool:
    return v is None or (isinstance(v, str) and not v.strip())


def _text(v: Any) -> str:
    if isinstance(v, str):
        return v
    if type(v) is list or type(v) is tuple:  # the common case, before the slower Sequence ABC check
        return "\n".join([x if type(x) is str else str(x) for x in v])
    if isinstance(v, Sequence):
        return "\n".join(str(x) for x in v)
    return str(v)


_ARTICLES = frozenset(("a", "an", "the"))
_PUNCT = str.maketrans("", "", string.punctuation)
_PUNCT_BYTES = string.punctuation.encode("ascii")


@lru_cache(maxsize=65536)
def _tokens_cached(text: str) -> tuple[str, ...]:
    if text.isascii():
        # the same tokens as normalize_text(text).split(), faster: in ASCII text without punctuation the article
        # pattern's word boundaries are the whitespace split points
        # bytes.translate deletes through a 256-entry table, several times faster than str.translate's dict
        words = text.encode("ascii").translate(None, _PUNCT_BYTES).decode("ascii").lower().split()
        # a set test hashes each word once, and the hashes are kept for the Counter that usually follows
        if _ARTICLES.isdisjoint(words):
            return tuple(words)
        return tuple([t for t in words if t not in _ARTICLES])
    return tuple(normalize_text(text).split())


@lru_cache(maxsize=65536)
def _words(text: str) -> tuple[str, ...]:
    """Return the words K-precision compares with: SQuAD tokens of ``text``, in ASCII text with the articles left in.

    Only ever looked up with SQuAD tokens, which are never an article, so the articles change no count; leaving
    them in spares the article test on every (long) context.
    """
    if text.isascii():
        return tuple(text.encode("ascii").translate(None, _PUNCT_BYTES).decode("ascii").lower().split())
    return _tokens_cached(text)


@lru_cache(maxsize=4096)
def _word_counts(text: str) -> Counter[str]:
    return Counter(_words(text))


def tokens(text: Any) -> tuple[str, ...]:
    """SQuAD tokens of ``text`` (a list of passages is joined with newlines)."""
    return _tokens_cached(_text(text))


def _references(v: Any) -> list[Any] | None:
    """Return the expected answer(s) as a list, or None when there is none (missing, blank, or an empty list)."""
    if _blank(v):
        return None
    if isinstance(v, list | tuple):
        refs = [x for x in v if not _blank(x)]
        return refs or None
    return [v]


def _overlap(a: tuple[str, ...], b: tuple[str, ...], cb: Counter[str] | None = None) -> int:
    """Multiset intersection size ``sum_t min(count_a(t), count_b(t))``."""
    if not a or not b:
        return 0
    if cb is None:
        cb = Counter(b)
    common = 0
    for t, n in Counter(a).items():
        m = cb.get(t)
        if m:
            common += n if n < m else m
    return common


def _best_over(values: Mapping[str, Any], kind: str) -> Score:
    answer, refs = values.get("output"), _references(values.get("expected"))
    if _blank(answer):
        return not_applicable("empty answer")
    if refs is None:
        return not_applicable("no expected answer")
    a = tokens(answer)
    best: tuple[float, dict[str, Any]] | None = None
    for i, ref in enumerate(refs):
        e = tokens(ref)
        common = _overlap(a, e)
        p = common / len(a) if a else 0.0
        r = common / len(e) if e else 0.0
        f1 = 2 * p * r / (p + r) if common else 0.0
        v = f1 if kind == "f1" else r
        if best is None or v > best[0]:
            best = (v, {"precision": p, "recall": r, "common": common, "expected_index": i})
    assert best is not None
    return Score(best[0], best[1])


def token_f1(values: Mapping[str, Any], params: Mapping[str, Any]) -> Score:
    """SQuAD token F1 of the answer (``output``) against the expected answer(s) (``expected``), best over them.

    ``precision = |common| / |answer tokens|``, ``recall = |common| / |expected tokens|``, ``F1 = 2PR/(P+R)``
    (Rajpurkar et al. 2016, arXiv 1606.05250, official evaluation script). Not applicable without an answer or an
    expected answer. Evidence: precision, recall, common token count, index of the best expected answer.
    """
    return _best_over(values, "f1")


def token_recall(values: Mapping[str, Any], params: Mapping[str, Any]) -> Score:
    """Share of the expected answer's tokens found in the answer (SQuAD tokens, multiset), best over expected answers.

    The recall half of SQuAD's token F1 (Rajpurkar et al. 2016); used as a correctness measure for verbose
    answers of instruction-following models by Adlakha et al. 2023 (arXiv 2307.16877, "Recall"). Not applicable
    without an answer or an expected answer.
    """
    return _best_over(values, "recall")


def faithfulness_token_k_precision(values: Mapping[str, Any], params: Mapping[str, Any]) -> Score:
    """K-Precision: share of the answer's tokens that occur in the given context (``context``).

    ``|common(answer, context)| / |answer tokens|`` with SQuAD tokens and multiset overlap; Adlakha et al. 2023,
    "Evaluating Correctness and Faithfulness of Instruction-Following Models for Question Answering", arXiv
    2307.16877 (K-Precision, their best lexical faithfulness measure). Not applicable without an answer or without
    context (missing, blank or an empty list of passages); an answer of punctuation only scores 0.
    """
    answer, ctx = values.get("output"), values.get("context")
    if _blank(answer):
        return not_applicable("empty answer")
    ctext = _context_text(ctx)
    if ctext is None:
        return not_applicable("no context")
    a = tokens(answer)
    if not a:
        return Score(0.0, {"common": 0, "answer_tokens": 0})
    common = _k_common(a, ctext)
    return Score(common / len(a), {"common": common, "answer_tokens": len(a)})


def _context_text(ctx: Any) -> str | None:
    """``_text(ctx)``, or None when there is no context: missing, blank, or a list of passages all None or blank."""
    if _blank(ctx):
        return None
    if not isinstance(ctx, list | tuple):
        return _text(ctx)
    ctext = _text(ctx)
    # a passage with a non-space character in its text is not blank; a None passage (blank) is written "None"
    if ctext and not ctext.isspace() and "None" not in ctext:
        return ctext
    return None if all(_blank(c) for c in ctx) else ctext


def _k_common(a: tuple[str, ...], ctext: str) -> int:
    """``_overlap(a, tokens of ctext)`` for SQuAD tokens ``a``: the multiset overlap, with sets where it can.

    A token that occurs once in the answer adds 1 when the context holds it (``min(1, count) = 1``), so an answer
    without a repeated token overlaps ``len(set(a) & context words)``; a repeated one adds the smaller count.
    """
    words = _words(ctext)
    distinct = set(a)
    shared = distinct.intersection(words)
    common = len(shared)
    if len(distinct) < len(a) and shared:  # some answer token repeats: count it up to its count in the context
        ca, cc = Counter(a), _word_counts(ctext)
        for t in shared:
            n = ca[t]
            if n > 1:
                m = cc[t]
                common += (n if n < m else m) - 1
    return common


def answer_relevance_token_recall(values: Mapping[str, Any], params: Mapping[str, Any]) -> Score:
    """Share of the question's (``input``) tokens that the answer repeats: a lexical proxy of answer relevance.

    ``|common(question, answer)| / |question tokens|`` (SQuAD tokens, multiset). The token-recall method of
    answer relevance in the agentic-application evaluators; it rewards answers that address the terms of the
    question and cannot see paraphrase (use the judge or embedding method for that). Not applicable without an
    answer or a question.
    """
    answer, q = values.get("output"), values.get("input")
    if _blank(answer):
        return not_applicable("empty answer")
    if _blank(q):
        return not_applicable("no question")
    qt, a = tokens(q), tokens(answer)
    if not qt:
        return not_applicable("question has no tokens")
    common = _overlap(qt, a)
    return Score(common / len(qt), {"common": common, "question_tokens": len(qt)})


_SPACE = re.compile(r"\s+")


@lru_cache(maxsize=64)
def _phrase_pattern(phrases: tuple[str, ...]) -> re.Pattern[str]:
    alts = sorted({_SPACE.sub(" ", p.strip().lower()) for p in phrases if p.strip()}, key=len, reverse=True)
    if not alts:
        raise ValueError("unsuccessful_requests: the phrase list is empty")
    return re.compile(r"(?<!\w)(?:" + "|".join(re.escape(p) for p in alts) + r")(?!\w)")


def unsuccessful_phrases(values: Mapping[str, Any], params: Mapping[str, Any]) -> Score:
    """1 when the answer contains a phrase of an unsuccessful request (declined, unable, does not know), else 0.

    Phrases: ``params["phrases"]`` or :data:`DEFAULT_UNSUCCESSFUL_PHRASES`, matched case-insensitively as whole
    words. A blank answer scores 1 (the request got no answer). A missing answer field is not applicable.
    Evidence: the phrases found.
    """
    answer = values.get("output")
    if answer is None:
        return not_applicable("no answer field")
    text = _text(answer)
    if not text.strip():
        return Score(1.0, {"phrases": [], "blank_answer": True})
    pat = _phrase_pattern(tuple(params.get("phrases") or DEFAULT_UNSUCCESSFUL_PHRASES))
    found = pat.findall(_SPACE.sub(" ", text.lower().replace("\u2019", "'")))
    return Score(1.0 if found else 0.0, {"phrases": sorted(set(found))})


def keyword_inclusion(values: Mapping[str, Any], params: Mapping[str, Any]) -> Score:
    """Share of the keywords that occur in the answer as whole-token sequences (SQuAD-normalised both sides).

    Keywords: the record's ``keywords`` role (a list) when it has one, else ``params["keywords"]``. Not applicable
    without keywords or without an answer. Evidence: the keywords missing.
    """
    answer = values.get("output")
    kws = values.get("keywords") or params.get("keywords")
    if isinstance(kws, str):
        kws = [kws]
    if not kws:
        return not_applicable("no keywords")
    if _blank(answer):
        return not_applicable("empty answer")
    hay = " " + " ".join(tokens(answer)) + " "
    missing = []
    for k in kws:
        t = " ".join(tokens(k))
        if not t or f" {t} " not in hay:
            missing.append(str(k))
    return Score(1.0 - len(missing) / len(kws), {"missing": missing, "n_keywords": len(kws)})

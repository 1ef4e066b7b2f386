"""The fast path of the PII metric: pre-checks, the plan of recognizers worth running, and the pattern runner.

Same results as asking every recognizer through Presidio (:func:`agentstats.metrics.pii.reference._found_plain`,
the reference in the tests): a recognizer that cannot reach ``min_score`` is not run, nor is a pattern that cannot;
a recognizer is asked only when its pre-check (a pattern every one of its matches contains: ``@`` for e-mail, digits
in a certain arrangement for the numbers ...) finds something; plain pattern recognizers are matched here with their
own compiled patterns, ``validate_result`` and ``invalidate_result`` and Presidio's duplicate removal, without
Presidio's per-match objects; the e-mail and URL patterns are searched only in the runs of characters that can hold a
match, the results remembered per run and the e-mail domain check per host. The pre-checks were written for the
installed Presidio's patterns, checked by a fingerprint of each recognizer's patterns (another release gets the
plain path for that recognizer). Phone numbers go through :mod:`agentstats.metrics.pii._fastpath` (locked to one
``phonenumbers`` release); IBANs through Presidio's ``analyze``.
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from typing import Any, Literal

from agentstats.metrics.pii._fastpath import _ANY, _phone_trigger, _run_phone
from agentstats.metrics.pii.reference import _recognizers

# Pre-checks, one per recognizer: a regular expression every match of the recognizer's patterns contains, read off
# the patterns (written for the pattern set whose fingerprint is given; another Presidio release with other patterns
# gets no pre-check for that recognizer, only slower). Character classes are supersets that hold in any Unicode
# version and under IGNORECASE: ``_D`` stands for ``\d`` (an ASCII digit or any non-ASCII character), ``_L`` for a
# letter; every construct that is dropped (``\b``, lookarounds, alternatives after the first
# characters) only makes the pre-check weaker. A text without a hit cannot give the recognizer a match.
_NA = "\x80-\U0010ffff"
_D = f"[0-9{_NA}]"
_L = f"[A-Za-z{_NA}]"
_TRIGGERS: dict[str, tuple[str, str, tuple[int, int] | None, int | None]] = {
    # entity: (fingerprint of the recognizer's patterns and flags, pre-check, reach, lead). A reach (l, r): every
    # match of the pre-check holds a character of _D and reaches at most l characters before the first one and r
    # after the last, so in an ASCII text it is looked for only around the digits, and not at all in one without
    # digits. A lead l: every match of every pattern of the recognizer holds a character of _D at most l characters
    # after its start, so in an ASCII text the patterns are searched from l characters before the first digit on
    # (``regex`` still sees the characters before that position for ``\b`` and lookbehinds).
    "EMAIL_ADDRESS": ("9f858dec24438449", "@", None, None),
    # a dot followed by the top-level domain's first letter
    "URL": ("105012f10501c1b0", rf"\.{_L}", None, None),
    # IPv4: a dot followed by a digit; IPv6: every alternative holds ":" followed by a hex digit, ":" or "%"
    "IP_ADDRESS": ("c1ee8a9ccf3375e4", rf"\.[0-9]|:[0-9A-Fa-f:%{_NA}]", None, None),
    # four digits (the first group), an optional "-" or " ", three digits
    "CREDIT_CARD": ("4422748a3428a39a", rf"{_D}{{4}}[- ]?{_D}{{3}}", (0, 0), 0),
    # no IGNORECASE: two capital letters and two digits
    "IBAN_CODE": ("045faf1ec478ecf6", r"[A-Z]{2}[0-9]{2}", (2, 0), None),
    # every SSN pattern starts with three digits followed (after at most one "-", " " or ".") by two more
    "US_SSN": ("fb92db780fefbd56", r"[0-9]{3}[- .]?[0-9]{2}", (0, 0), 0),
    "US_BANK_NUMBER": ("5261aa3bb121be9e", r"[0-9]{8}", (0, 0), 0),
    # every alternative holds a digit, at most 5 characters in (the literal "A-Z]]" of "A-Z]{2}" and two letters)
    "US_DRIVER_LICENSE": ("35ac05b2528abe1e", r"[0-9]", (0, 0), 5),
    # "9", two digits, an optional "-" or " ", two digits
    "US_ITIN": ("a60686979fbc5746", rf"9{_D}{{2}}[- ]?{_D}{{2}}", (0, 0), 0),
    "US_PASSPORT": ("07bb0c3f27b8a5c1", r"[0-9]{8}", (0, 0), 1),  # "[A-Z][0-9]{8}"
    # "1" or "3" (also the end of "bc1") followed by 25 letters or digits
    "CRYPTO": ("ffd72b579a6239e0", rf"[13][0-9A-Za-z{_NA}]{{25}}", (0, 25), 2),  # "bc1"
    "UK_NHS": ("a930701e10a278e5", r"[0-9]{3}[- ]?[0-9]{3}", (0, 0), 0),
    "MEDICAL_LICENSE": ("d874ea9c72d479d9", rf"{_D}{{7}}", (0, 0), 2),  # two letters, then digits
}



# ASCII text: a digit, "@", ":" or a dot before a letter is what any pre-check above needs; a text with none of them
# has no match at all. The table maps digits to "0", "@" and ":" to themselves, every other byte to " ".
_GATE_TABLE = bytes(ord("0") if chr(c) in "0123456789" else c if chr(c) in "@:" else ord(" ") for c in range(256))
_URL_DOT = re.compile(r"\.[A-Za-z]")
#: Texts up to this length are searched without Presidio's regex timeout (see :func:`_run_patterns`).
_TIMEOUT_FROM_CHARS = 1000

# Patterns searched only where a match can be, for speed (their own search costs 130-420 us per text holding a
# candidate); keyed by (entity, pattern name), valid for the fingerprinted patterns above:
# "window": searched run by run (see _windowed); a string: a pre-check every match of that one pattern contains.
_PATTERN_PLANS: dict[tuple[str, str], str] = {
    ("EMAIL_ADDRESS", "Email (Medium)"): "window",
    ("URL", "Standard Url"): "://",
    ("URL", "Non schema URL"): "window",
    ("URL", "Quoted URL"): "[\"']",
    ("URL", "Quoted Non-schema URL"): "[\"']",
}
# E-mail: every match is a run of characters of [!#$%&'*+\-/=?^_`{|}~.@\w] holding "@" (bounded by \b on both
# sides, which look one character out). URL (no anchors, \b or lookarounds): the host part is a run of
# [a-z0-9.\-] (any case) holding "." and a letter; an optional path starts with "/" right after the run and stops at
# whitespace or ()<>"'.
_RUNS: dict[str, tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str] | None]] = {
    # entity: (what every match holds, the characters it is made of, for URLs the certain end of a path)
    "EMAIL_ADDRESS": (re.compile("@"), re.compile(rf"[!#$%&'*+\-/=?^_`{{|}}~.@0-9A-Za-z{_NA}]*"), None),
    "URL": (re.compile(rf"\.{_L}"), re.compile(rf"[0-9A-Za-z.\-{_NA}]*"), re.compile("[ \t\n\r\x0b\x0c()<>\"']")),
}


def _fingerprint(rec: Any) -> str:
    pats = [(p.name, p.regex, p.score) for p in (getattr(rec, "patterns", None) or [])]
    return hashlib.sha256(repr((pats, int(getattr(rec, "global_regex_flags", 0) or 0))).encode()).hexdigest()[:16]


def _match_end(rx: re.Pattern[str], text: str, pos: int) -> int:
    m = rx.match(text, pos)
    return pos if m is None else m.end()


def _windowed(rx: Any, text: str, window: _Window, timeout: float | None,
              memo: dict[tuple[str, str], tuple[int, int] | None]) -> list[tuple[int, int]]:
    r"""Return the spans of ``rx.finditer(text)``, searching only the runs where a match can start.

    ``window`` is (``anchor``, ``chars``, ``stop``): every match is a run of ``chars`` (maximal, found by extending
    an ``anchor`` hit, which is made of ``chars``, both ways) holding an ``anchor`` hit, plus for URLs a path after
    it. ``rx`` is searched from the run's start (or from where the last match ended, as ``finditer`` goes on) with
    the text cut one character after the run (e-mail: that character ends every match and decides the closing
    ``\b``; ``regex`` sees the characters before the start for ``\b``) or, for URLs, one character after the first
    certain end of the path (``stop``). A match starting inside the run is the one ``finditer`` finds there (the
    characters after the cut cannot be part of it); none there means none starts in the run, and the search goes
    on after it, as ``finditer`` would. The search's answer depends only on the searched characters and the one
    before them (``\b``; neither pattern has anchors or other lookarounds), so it is remembered in ``memo`` under
    those characters (runs repeat: the same host in many answers).
    """
    anchor, chars, stop = window
    out: list[tuple[int, int]] = []
    pos, n = 0, len(text)
    rev = ""
    while True:
        hit = anchor.search(text, pos)
        if hit is None:
            return out
        i = hit.start()
        if not rev:
            rev = text[::-1]
        j = n - 1 - i  # text[i] in the reversed text; the run reaches back to text[i - (chars' length there) + 1]
        a = max(pos, i + 1 - (_match_end(chars, rev, j) - j))
        b = _match_end(chars, text, i)
        if stop is None:
            end = min(b + 1, n)
        else:
            s = stop.search(text, b)
            end = n if s is None else s.start() + 1
        key = (text[a - 1:a], text[a:end])
        if key in memo:
            got = memo[key]
        else:
            m = rx.search(text, a, end, timeout=timeout)
            got = None if m is None else (m.start() - a, m.end() - a)
            if len(memo) > 65536:
                memo.clear()
            memo[key] = got
        if got is not None and a + got[0] < b:
            out.append((a + got[0], a + got[1]))
            pos = a + got[1] if got[1] > got[0] else a + got[1] + 1
        else:
            pos = b


def _max_score(rec: Any) -> float:
    """Return the highest score ``rec.analyze`` can give (no NLP artifacts, so no context enhancement).

    A pattern recognizer scores a match with its pattern's score, raised to 1.0 only by a ``validate_result`` of its
    own (``invalidate_result`` only lowers it); Presidio's phone recognizer gives every match its class ``SCORE``
    (0.4). Anything else is taken to reach 1.0.
    """
    from presidio_analyzer import PatternRecognizer
    from presidio_analyzer.predefined_recognizers import PhoneRecognizer

    patterns: Any = getattr(rec, "patterns", None)
    if isinstance(rec, PatternRecognizer) and patterns:
        if type(rec).validate_result is not PatternRecognizer.validate_result:
            return 1.0
        return max(float(p.score) for p in patterns)
    if type(rec).analyze is PhoneRecognizer.analyze:
        return float(rec.SCORE)
    return 1.0


_Window = tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str] | None]
_PatternStep = tuple[str, tuple[tuple[Any, float, re.Pattern[str] | None, _Window | None, dict[Any, Any]], ...], Any,
                     Any, int | None]
#: (recognizer, its entities asked for, pre-check, pre-check's reach around the digits, how to run it: the plain
#: pattern recognizer's patterns for :func:`_run_patterns`, "phone" for :func:`_run_phone`, None for ``analyze``)
_Step = tuple[Any, list[str], re.Pattern[str], tuple[int, int] | None, _PatternStep | Literal["phone"] | None]


@lru_cache(maxsize=64)
def _plan(entities: tuple[str, ...], min_score: float) -> tuple[bool, tuple[re.Pattern[str], tuple[int, int]] | None,
                                                                 tuple[_Step, ...]]:
    """Return the recognizers worth running with their pre-checks (and whether they all have one, and one for all).

    The second item joins the pre-checks looked for around the digits into one, with the widest reach.

    A recognizer whose highest possible score (:func:`_max_score`) is below ``min_score`` cannot contribute a hit
    and is left out, and so is each of its patterns that cannot reach ``min_score`` (score below it and no
    ``validate_result`` of the recognizer's own to raise it): Presidio's duplicate removal keeps a result unless a
    result of the same type with at least its score contains it, so results below the floor never decide which
    results at or above it are kept. A plain pattern recognizer (Presidio's own ``analyze``) is run by
    :func:`_run_patterns`, which does what Presidio does per match (patterns compiled as Presidio compiles them,
    ``validate_result`` / ``invalidate_result`` of the recognizer, duplicates removed the same way); the others
    (IBAN) are asked through ``analyze``, and Presidio's phone recognizer by :func:`_run_phone` (its matcher calls
    without the per-match explanation).
    """
    import regex  # type: ignore[import-untyped]
    from presidio_analyzer import PatternRecognizer
    from presidio_analyzer.predefined_recognizers import PhoneRecognizer

    wanted = set(entities)
    steps = []
    for rec in _recognizers():
        ents = [e for e in rec.supported_entities if e in wanted]
        if not ents or _max_score(rec) < min_score:
            continue
        entity = rec.supported_entities[0]
        known = _TRIGGERS.get(entity)
        reach: tuple[int, int] | None
        lead: int | None = None
        if entity == "PHONE_NUMBER":
            trigger = _phone_trigger(rec)
            reach = None if trigger == _ANY else (0, 0)
        elif known is not None and known[0] == _fingerprint(rec):
            trigger, reach = known[1], known[2]
            lead = known[3]
        else:
            trigger, reach, known = _ANY, None, None  # patterns this module was not written for: no pre-check
        cls = type(rec)
        pats: _PatternStep | Literal["phone"] | None = None
        rec_patterns: list[Any] = getattr(rec, "patterns", None) or []
        if (isinstance(rec, PatternRecognizer) and rec_patterns and len(rec.supported_entities) == 1
                and cls.analyze is PatternRecognizer.analyze
                and getattr(cls, "_PatternRecognizer__analyze_patterns", None)
                is PatternRecognizer._PatternRecognizer__analyze_patterns):  # type: ignore[attr-defined]
            validates = cls.validate_result is not PatternRecognizer.validate_result
            plist: list[tuple[Any, float, re.Pattern[str] | None, _Window | None, dict[Any, Any]]] = []
            for p in rec_patterns:
                if p.score < min_score and not validates:
                    continue
                how = _PATTERN_PLANS.get((entity, p.name)) if known is not None else None
                pre = re.compile(how) if how is not None and how != "window" else None
                window = _RUNS[entity] if how == "window" else None
                plist.append((regex.compile(p.regex, flags=rec.global_regex_flags), float(p.score), pre, window, {}))
            validate = None
            if validates:
                validate = _email_validator(rec) if entity == "EMAIL_ADDRESS" else rec.validate_result
            invalidate = (rec.invalidate_result if cls.invalidate_result is not PatternRecognizer.invalidate_result
                          else None)
            pats = (entity, tuple(plist), validate, invalidate, lead)
        elif (entity == "PHONE_NUMBER" and cls.analyze is PhoneRecognizer.analyze
                and cls._get_recognizer_result is PhoneRecognizer._get_recognizer_result):
            pats = "phone"  # Presidio's own phone recognizer: run by _run_phone
        steps.append((rec, ents, re.compile(trigger), reach, pats))
    around = [s for s in steps if s[3] is not None]
    digits = None
    if around:  # the pre-checks looked for around the digits, as one (a text with no hit skips them all)
        digits = (re.compile("|".join(f"(?:{s[2].pattern})" for s in around)),
                  (max(s[3][0] for s in around), max(s[3][1] for s in around)))  # type: ignore[index]
    return all(s[2].pattern != _ANY for s in steps), digits, tuple(steps)


def _email_validator(rec: Any) -> Any:
    """``rec.validate_result`` remembered per host: tldextract's answer depends only on ``lenient_netloc(text)``."""
    from tldextract.remote import lenient_netloc

    memo: dict[str, Any] = {}

    def validate(text: str) -> Any:
        key = lenient_netloc(text)
        if key not in memo:
            if len(memo) > 65536:
                memo.clear()
            memo[key] = rec.validate_result(text)
        return memo[key]

    return validate


def _run_patterns(pats: _PatternStep, text: str, min_score: float,
                  first_digit: int) -> list[tuple[str, int, int, float]] | None:
    """Presidio's ``PatternRecognizer.analyze`` for one plain pattern recognizer, results at ``min_score`` or above.

    Same matches (``finditer``; empty ones skipped), same scores (the pattern's, set to
    ``MAX_SCORE`` / ``MIN_SCORE`` by ``validate_result``, to ``MIN_SCORE`` by ``invalidate_result``, kept above
    ``MIN_SCORE``), same duplicate removal (by score, start and length; a result inside a kept one of the same type is
    dropped), in the same order. ``None`` when a search timed out (the caller asks Presidio then). ``first_digit``:
    where the first character of ``_D`` is (0 for a text that is not ASCII), used with the recognizer's lead.

    Presidio's timeout (60 s per search by default) is passed only for texts longer than
    :data:`_TIMEOUT_FROM_CHARS`: asking for a timeout costs about 6 us per search in ``regex``, and these patterns
    (bounded repetitions, or backtracking at most polynomial in the length) search a text this short in far less
    than a second, so the timeout cannot change the result there.
    """
    from presidio_analyzer import EntityRecognizer
    from presidio_analyzer.pattern_recognizer import REGEX_TIMEOUT_SECONDS

    entity, plist, validate, invalidate, lead = pats
    start_at = 0 if lead is None else max(first_digit - lead, 0)
    timeout = REGEX_TIMEOUT_SECONDS if len(text) > _TIMEOUT_FROM_CHARS else None
    found = set()
    for rx, score, pre, window, memo in plist:
        if pre is not None and pre.search(text) is None:
            continue
        try:
            spans = ([m.span() for m in rx.finditer(text, start_at, timeout=timeout)] if window is None
                     else _windowed(rx, text, window, timeout, memo))
            for start, end in spans:
                if start == end:
                    continue
                s = score
                if validate is not None:
                    v = validate(text[start:end])
                    if v is not None:
                        s = EntityRecognizer.MAX_SCORE if v else EntityRecognizer.MIN_SCORE
                if invalidate is not None and invalidate(text[start:end]):
                    s = EntityRecognizer.MIN_SCORE
                if s > EntityRecognizer.MIN_SCORE and s >= min_score:
                    found.add((start, end, float(s)))
        except TimeoutError:
            return None
    kept: list[tuple[int, int, float]] = []
    for start, end, s in sorted(found, key=lambda h: (-h[2], h[0], -(h[1] - h[0]))):
        if not any(start >= k[0] and end <= k[1] for k in kept):
            kept.append((start, end, s))
    return [(entity, start, end, s) for start, end, s in kept]


@lru_cache(maxsize=65536)
def _found(text: str, entities: tuple[str, ...], min_score: float) -> tuple[tuple[str, int, int, float], ...]:
    gated, digits, steps = _plan(entities, min_score)
    lo = hi = -1
    if text.isascii():
        marks = text.encode("ascii").translate(_GATE_TABLE)
        if gated and marks.isspace() and _URL_DOT.search(text) is None:
            return ()
        lo = marks.find(b"0")
        hi = marks.rfind(b"0") + 1
    else:
        lo, hi = 0, len(text)
    if lo >= 0 and digits is not None and digits[0].search(text, max(lo - digits[1][0], 0), hi + digits[1][1]) is None:
        lo = -1  # no pre-check looked for around the digits has a hit
    hits: list[tuple[str, int, int, float]] = []
    for rec, ents, trigger, reach, pats in steps:
        if reach is None:
            if trigger.search(text) is None:
                continue
        elif lo < 0 or trigger.search(text, max(lo - reach[0], 0), hi + reach[1]) is None:
            continue
        got: list[tuple[str, int, int, float]] | None = None
        if pats == "phone":
            got = _run_phone(rec, text)
        elif pats is not None:
            got = _run_patterns(pats, text, min_score, lo)
        if got is None:
            got = [(r.entity_type, r.start, r.end, float(r.score)) for r in rec.analyze(text, ents, None)
                   if r.score >= min_score]
        hits += got
    return tuple(sorted(hits, key=lambda h: (h[1], h[0])))


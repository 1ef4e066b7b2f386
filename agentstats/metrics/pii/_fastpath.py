"""The phone-number fast path, locked to one ``phonenumbers`` release (:data:`_PHONE_PROOF`).

What Presidio's phone recognizer finds, found with fewer ``phonenumbers`` calls: the pre-check that lets years and
other short numbers skip the matcher (:func:`_phone_trigger`, resting on the proof below), and the matcher runs of
:func:`_run_phone` (one run without a region when ``parse`` cannot answer differently in another region, else the
regions' runs sharing their ``parse`` and validation and stopping once nothing they can still find counts). Every
shortcut reads ``phonenumbers`` internals of release 9.0.43 and is taken only with that release (and the regions
of ``reference.PHONE_REGIONS`` and leniency VALID); with another, every region is run as Presidio runs it. Tested
equal to ``PhoneRecognizer.analyze`` (``tests/metrics/test_metrics_pii.py``).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

#: The pre-check that every text passes (no pre-check).
_ANY = r"[\s\S]"

#: What the phone pre-check's proof was run on (``tests/metrics/test_metrics_pii.py::test_pii_shortest_phone_numbers``,
#: which repeats it): for the regions of :data:`agentstats.metrics.pii.reference.PHONE_REGIONS` at leniency VALID
#: (1) with this ``phonenumbers`` release, every number its matcher finds holds at least five digits, except the
#: four-digit German numbers ``164x``, ``168x`` and ``169x``; nothing shorter is found, with or without a leading "+".
#: Found by trying every string of one to four digits, bare and after "+", in every region (the digits of a number
#: decide it: punctuation between them is dropped by the parser, and the text around a candidate can only reject it).
_PHONE_PROOF: dict[str, Any] = {"phonenumbers": "9.0.43", "regions": ("US", "GB", "DE", "FR", "IL", "IN", "CA", "BR"),
                                "leniency": 1, "four_digits": ("164", "168", "169")}


@lru_cache(maxsize=1)
def _digit_classes() -> dict[int, str]:
    r"""Regex character classes of the characters ``\d`` matches, by their digit value (0-9)."""
    import unicodedata

    every = "".join(map(chr, range(0x110000)))
    found = set(re.findall(r"\d", every))
    out: dict[int, list[str]] = {v: [] for v in range(10)}
    for ch in found:
        out[unicodedata.digit(ch)].append(re.escape(ch))
    return {v: "[" + "".join(sorted(chars)) + "]" for v, chars in out.items()}


def _phone_trigger(rec: Any = None) -> str:
    """Return the pre-check for phone numbers, built from phonenumbers' own punctuation.

    Digits separated only by whitespace or phonenumbers' punctuation (the only characters its matcher allows
    between a number's digits): five of them, or the four of a number ``164x`` / ``168x`` / ``169x`` (any script's
    digits), when ``rec`` is the phone recognizer :data:`_PHONE_PROOF` was run for; four otherwise (the shortest
    numbers phonenumbers calls valid have four). Years and other four-digit numbers then skip the matcher (about
    1 ms for eight regions).
    """
    try:
        import phonenumbers
        from phonenumbers.phonenumberutil import _VALID_PUNCTUATION
    except ImportError:  # pragma: no cover - another phonenumbers layout: no pre-check
        return _ANY
    sep = f"[{_VALID_PUNCTUATION}\\s]*"
    four = rf"\d(?:{sep}\d){{3,}}"
    proven = (rec is not None and getattr(phonenumbers, "__version__", None) == _PHONE_PROOF["phonenumbers"]
              and tuple(getattr(rec, "supported_regions", ())) == _PHONE_PROOF["regions"]
              and getattr(rec, "leniency", None) == _PHONE_PROOF["leniency"])
    if not proven:
        return four
    d = _digit_classes()
    short = "|".join(sep.join(d[int(x)] for x in prefix) + sep + r"\d" for prefix in _PHONE_PROOF["four_digits"])
    return rf"\d(?:{sep}\d){{4,}}|{short}"



def _run_phone(rec: Any, text: str) -> list[tuple[str, int, int, float]]:
    """Presidio's ``PhoneRecognizer.analyze`` for ``rec``, without its per-match explanation.

    The same ``phonenumbers.PhoneNumberMatcher`` call per region of ``rec.supported_regions`` at ``rec.leniency``,
    every match scored ``rec.SCORE``, the same duplicate removal (one result per span; a span inside a kept one
    dropped; ordered by start, then longest first, as Presidio sorts equal scores). Presidio also parses each match
    once more, only to name its region in the explanation (about 40 % of the recognizer's time); no result depends
    on it. First the matcher runs once without a region (:func:`_region_free_matcher`): when ``parse`` answers each
    of that run's candidates the same in every region (numbers in international form with a known calling code),
    that run is every region's run, and the eight are not made. Else (phonenumbers 9.0.43, leniency VALID) the
    regions' runs are made by :func:`_shared_matcher`'s matcher, once per :func:`_region_key`, sharing ``parse`` and
    validation, each stopped (or not started) when nothing it can still find lies outside a span found
    (:func:`_inside_found`); the matches the run without a region found before its stop are every region's. Tested
    equal to ``analyze`` (``tests/metrics/test_metrics_pii.py``).
    """
    import phonenumbers

    regions = tuple(rec.supported_regions)
    matcher = _region_free_matcher()
    spans: set[tuple[int, int]] = set()
    if (matcher is not None and regions and phonenumbers.PhoneNumberMatcher is matcher.__base__
            and all(type(r) is str and r != "001" for r in regions)):
        found: set[tuple[int, int]] = set()
        try:
            for m in matcher(text, None, leniency=rec.leniency):
                found.add((m.start, m.end))
        except _RegionDependent:  # a candidate the region may decide: every region is run
            spans = found  # what came before it, every region's run finds as this one did
        else:  # every region's run is this one (see _region_free_matcher)
            spans, regions = found, ()
    shared = _shared_matcher() if regions else None
    if (shared is not None and phonenumbers.PhoneNumberMatcher is shared.__base__
            and rec.leniency == _PHONE_PROOF["leniency"] and all(type(r) is str for r in regions)):
        from phonenumbers.phonenumbermatcher import _PATTERN

        memo: dict[Any, Any] = {}  # what the runs on this text share (see _shared_matcher)
        first = _PATTERN.search(text)  # every run starts at this candidate
        for key in dict.fromkeys(map(_region_key, regions)):  # regions that run alike, once
            if first is None or _inside_found(text, first.start(), spans):  # no run can add a span that counts
                break
            try:
                for m in shared(text, key, rec.leniency, memo, spans):
                    spans.add((m.start, m.end))
            except _Covered:  # whatever else this run finds lies inside a span found (see _shared_matcher)
                pass
        regions = ()
    for region in regions:
        spans.update((m.start, m.end) for m in phonenumbers.PhoneNumberMatcher(text, region, leniency=rec.leniency))
    score = float(rec.SCORE)
    if score == 0:
        return []
    kept: list[tuple[int, int]] = []
    for start, end in sorted(spans, key=lambda h: (h[0], h[0] - h[1])):
        if not any(start >= k[0] and end <= k[1] for k in kept):
            kept.append((start, end))
    return [("PHONE_NUMBER", start, end, score) for start, end in kept]


class _RegionDependent(Exception):
    """Raised by :func:`_region_free_matcher`'s matcher at the first candidate whose answer the region may decide."""


@lru_cache(maxsize=1)
def _region_free_matcher() -> Any:
    """``phonenumbers.PhoneNumberMatcher`` whose run is the same in every region, or raises :class:`_RegionDependent`.

    A matcher's run depends on its region only through ``parse(candidate, region, keep_raw_input=True)`` in
    ``_parse_and_verify`` (the candidate search, the checks around it, ``_verify`` and the inner matches do not
    read the region; phonenumbers 9.0.43, the release this was read off, else None: every region is run). A run in
    which ``parse`` gives every candidate the same answer in every region (:func:`_same_in_every_region`) is
    repeated step for step in every other region: same candidates, same answers, same matches; at the first other
    candidate the run stops with :class:`_RegionDependent`. Run without a region (``region=None``, as
    :func:`_run_phone` does), a candidate that gives a match was parsed without a region, which is what
    :func:`_same_in_every_region` asks, so only the others are asked about. Tested against
    ``PhoneRecognizer.analyze`` (``tests/metrics/test_metrics_pii.py``).
    """
    import phonenumbers
    from phonenumbers import phonenumbermatcher

    base = phonenumbermatcher.PhoneNumberMatcher
    if getattr(phonenumbers, "__version__", None) != _PHONE_PROOF["phonenumbers"] or not hasattr(
            base, "_parse_and_verify"):
        return None

    class RegionFreeMatcher(base):  # type: ignore[misc, valid-type]
        def _parse_and_verify(self, candidate: str, offset: int) -> Any:
            match = super()._parse_and_verify(candidate, offset)
            if (match is None or self.preferred_region is not None) and not _same_in_every_region(candidate):
                raise _RegionDependent(candidate)
            return match

    return RegionFreeMatcher


@lru_cache(maxsize=4096)
def _same_in_every_region(candidate: str) -> bool:
    """Whether ``phonenumbers.parse(candidate, region, keep_raw_input=True)`` is the same for every region but "001".

    True when it returns a number without a region: the number part of the candidate then starts with "+" and a
    calling code phonenumbers knows, which ``parse`` reads off before it looks at the region's metadata (a region
    only decides numbers without "+", or with an unknown code after it), and it goes on with the metadata of the
    code's own region (for "001", the non-geographic one, it would keep none: :func:`_run_phone` runs every region
    then). True also when it fails with ``NOT_A_NUMBER``, raised only before the region is read (no text, too few
    digits, a bad ``phone-context``). False otherwise, so that every region is run.
    """
    import phonenumbers

    try:
        phonenumbers.parse(candidate, None, keep_raw_input=True)
    except phonenumbers.NumberParseException as exc:
        return bool(exc.error_type == phonenumbers.NumberParseException.NOT_A_NUMBER)
    except Exception:  # any other failure: the region may matter, so every region is run
        return False
    return True


@lru_cache(maxsize=256)
def _region_key(region: Any) -> Any:
    """Return the region whose matcher run is ``region``'s: ``None`` for a code ``parse`` reads as none, else itself.

    A string that is not one of phonenumbers' region codes (Presidio's "UK" and "FE"; the United Kingdom is "GB")
    and names no metadata: ``parse`` reads its region only in the region check (not a valid code, as for ``None``:
    the number must start with "+"), in the metadata looked up (none, as for ``None``) and in ``number_region !=
    region`` (never equal to a region ``region_code_for_country_code`` returns, as for ``None``); after the region
    check, a number starting with "+" either gets a calling code or fails, so the branch that reads
    ``metadata.country_code`` is never reached (phonenumbers 9.0.43). So ``parse(c, region)`` is ``parse(c, None)``
    for every ``c``, and so is the matcher's run (tested, ``tests/metrics/test_metrics_pii.py``).
    """
    import phonenumbers
    from phonenumbers.phonemetadata import PhoneMetadata

    if (type(region) is str and getattr(phonenumbers, "__version__", None) == _PHONE_PROOF["phonenumbers"]
            and region not in phonenumbers.SUPPORTED_REGIONS
            and all(region not in codes for codes in phonenumbers.COUNTRY_CODE_TO_REGION_CODE.values())
            and PhoneMetadata.metadata_for_region(region.upper(), None) is None):
        return None
    return region


def _inside_found(text: str, pos: int, spans: set[tuple[int, int]]) -> bool:
    """Whether every match a matcher run can find from ``pos`` on lies inside one span of ``spans``.

    A ``PhoneNumberMatcher`` run (phonenumbers 9.0.43, any region) searches its candidates with
    ``_PATTERN.search(text, p)``, ``p`` never going back; a match is a candidate (such a search's span, maybe cut
    short) or an inner match of one (inside it). So once the run is at ``pos``, each match it finds from there
    on lies inside the span of ``_PATTERN.search(text, p)`` for some ``p >= pos``: the spans of ``_PATTERN``
    starting at ``pos`` or later, walked here one start at a time. When all of them end inside a span found
    that starts at or before ``pos``, so does everything the run can find, and :func:`_run_phone` keeps only the
    spans that no other one holds: the rest of the run cannot change its result.
    """
    from phonenumbers.phonenumbermatcher import _PATTERN

    end = max((e for s, e in spans if s <= pos), default=-1)
    if end <= pos:
        return False
    while True:
        m = _PATTERN.search(text, pos)
        if m is None:
            return True
        if m.end() > end:
            return False
        pos = m.start() + 1


class _Covered(Exception):
    """Raised by :func:`_shared_matcher`'s matcher when nothing it could still find lies outside a span found."""


class _Span:
    """A match of :func:`_shared_matcher`'s matcher: what the matcher and :func:`_run_phone` read of one."""

    __slots__ = ("end", "start")

    def __init__(self, start: int, end: int) -> None:
        self.start, self.end = start, end


@lru_cache(maxsize=1)
def _shared_matcher() -> Any:
    """``phonenumbers.PhoneNumberMatcher`` whose runs on one text, one per region, share their ``parse`` and checks.

    ``Matcher(text, region, leniency, memo, spans)`` runs as ``PhoneNumberMatcher(text, region, leniency=leniency)``
    does, the same candidates in the same order, and finds the same spans; the runs on one text pass the same ``memo``
    (a dict). Its ``_parse_and_verify`` makes phonenumbers 9.0.43's checks of the candidate and of the characters around
    it (which do not read the region), then takes from ``memo`` what it asked before: ``parse(candidate, region,
    keep_raw_input=True)`` by candidate and region (another region's run, or an inner match tried twice, asks again),
    and ``_verify(leniency, number, candidate, matcher)`` by candidate and every field of the parsed number (it reads
    only those and the leniency: US and CA parse most NANPA numbers in national form to the same one). A
    match is returned as a :class:`_Span` (the matcher reads only ``end`` of it). Before each candidate, the run raises
    :class:`_Covered` when :func:`_inside_found` says nothing it can still find, this candidate's matches included, lies
    outside a span of ``spans`` (the spans found so far, which the caller keeps up to date): the rest of the run could
    not change :func:`_run_phone`'s result. ``None`` with another phonenumbers release: every region is run as before.
    Tested against ``PhoneRecognizer.analyze`` (``tests/metrics/test_metrics_pii.py``).
    """
    import phonenumbers
    from phonenumbers import phonenumbermatcher as pm

    names = ("PhoneNumberMatcher", "parse", "_verify", "NumberParseException", "_MATCHING_BRACKETS", "_PUB_PAGES",
             "_LEAD_PATTERN", "_PATTERN", "fullmatch", "Leniency")
    if getattr(phonenumbers, "__version__", None) != _PHONE_PROOF["phonenumbers"] or not all(
            hasattr(pm, n) for n in names):
        return None
    base = pm.PhoneNumberMatcher
    parse, verify, failed, brackets, pub_pages, lead, fullmatch = (getattr(pm, n) for n in (
        "parse", "_verify", "NumberParseException", "_MATCHING_BRACKETS", "_PUB_PAGES", "_LEAD_PATTERN", "fullmatch"))
    valid = pm.Leniency.VALID

    class SharedMatcher(base):  # type: ignore[misc, valid-type]
        def __init__(self, text: str, region: Any, leniency: int, memo: dict[Any, Any],
                     spans: set[tuple[int, int]]) -> None:
            super().__init__(text, region, leniency=leniency)
            self._memo, self._spans = memo, spans

        def _extract_match(self, candidate: str, offset: int) -> Any:
            if _inside_found(self.text, offset, self._spans):  # nothing the run finds from here on can count
                raise _Covered
            return super()._extract_match(candidate, offset)

        def _parse_and_verify(self, candidate: str, offset: int) -> Any:
            # phonenumbers 9.0.43's PhoneNumberMatcher._parse_and_verify up to its parse, unchanged
            if not fullmatch(brackets, candidate) or pub_pages.search(candidate):
                return None
            if self.leniency >= valid:
                if offset > 0 and not lead.match(candidate):
                    previous_char = self.text[offset - 1]
                    if self._is_invalid_punctuation_symbol(previous_char) or self._is_latin_letter(previous_char):
                        return None
                last_char_index = offset + len(candidate)
                if last_char_index < len(self.text):
                    next_char = self.text[last_char_index]
                    if self._is_invalid_punctuation_symbol(next_char) or self._is_latin_letter(next_char):
                        return None
            # its parse and _verify, remembered
            memo = self._memo
            key = ("parse", candidate, self.preferred_region)
            ok = memo.get(key)
            if ok is None:
                try:
                    number = parse(candidate, self.preferred_region, keep_raw_input=True)
                except failed:
                    ok = False
                else:
                    vkey = ("verify", candidate, tuple(sorted(vars(number).items())))
                    ok = memo.get(vkey)
                    if ok is None:
                        try:
                            ok = bool(verify(self.leniency, number, candidate, self))
                        except failed:
                            ok = False
                        memo[vkey] = ok
                memo[key] = ok
            return _Span(offset, offset + len(candidate)) if ok else None

    return SharedMatcher


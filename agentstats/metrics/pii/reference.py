"""The PII reference path: Presidio's pattern recognizers, each asked through its own ``analyze``.

:func:`_recognizers` builds the recognizers (offline: the e-mail check reads the public suffix list shipped inside
``tldextract``); :func:`_found_plain` asks every one of them about a text and keeps the results at or above the score
floor. This is what the metric means; the fast path (:mod:`agentstats.metrics.pii._prechecks` and
:mod:`agentstats.metrics.pii._fastpath`) gives the same results faster and is tested equal to this one.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

__all__ = ["DEFAULT_PII_ENTITIES", "DEFAULT_PII_MIN_SCORE", "PHONE_REGIONS"]

#: Entity types looked for by default (Presidio's pattern-based recognizers for English text).
DEFAULT_PII_ENTITIES: tuple[str, ...] = (
    "EMAIL_ADDRESS", "PHONE_NUMBER", "CREDIT_CARD", "IBAN_CODE", "IP_ADDRESS", "US_SSN", "US_BANK_NUMBER",
    "US_DRIVER_LICENSE", "US_ITIN", "US_PASSPORT", "CRYPTO", "UK_NHS", "MEDICAL_LICENSE", "URL",
)

#: Default score floor: 0.4, the score Presidio's phone recognizer gives every phone number (no context words
#: without an NLP engine), so phone numbers count; 0.5 would leave them out.
DEFAULT_PII_MIN_SCORE: float = 0.4

#: Regions phone numbers in national form are matched for (``phonenumbers`` region codes, ISO 3166-1 alpha-2).
#: Presidio's default list (``US, UK, DE, FE, IL, IN, CA, BR``) carries "UK" and "FE", which are no region codes of
#: ``phonenumbers``: parsing in them is parsing without a region, so British and French national numbers
#: (``020 7946 0958``, ``01 42 68 53 00``) were never found. These are its regions with the codes it meant:
#: the United Kingdom ``GB`` and France ``FR``.
PHONE_REGIONS: tuple[str, ...] = ("US", "GB", "DE", "FR", "IL", "IN", "CA", "BR")


@lru_cache(maxsize=1)
def _recognizers() -> tuple[Any, ...]:
    try:
        from presidio_analyzer.predefined_recognizers import (
            CreditCardRecognizer,
            CryptoRecognizer,
            EmailRecognizer,
            IbanRecognizer,
            IpRecognizer,
            MedicalLicenseRecognizer,
            NhsRecognizer,
            PhoneRecognizer,
            UrlRecognizer,
            UsBankRecognizer,
            UsItinRecognizer,
            UsLicenseRecognizer,
            UsPassportRecognizer,
            UsSsnRecognizer,
        )
    except ImportError as exc:  # pragma: no cover - presidio-analyzer is a dependency
        raise ImportError("the PII metric needs presidio-analyzer: pip install presidio-analyzer") from exc
    import tldextract

    # Presidio's e-mail check asks tldextract's default extractor, which fetches the public suffix list over the
    # network on first use; this one reads the snapshot shipped inside tldextract and never connects.
    offline = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None, fallback_to_snapshot=True)

    class OfflineEmailRecognizer(EmailRecognizer):
        def validate_result(self, pattern_text: str) -> bool:
            return offline(pattern_text).fqdn != ""

    return (OfflineEmailRecognizer(), PhoneRecognizer(supported_regions=PHONE_REGIONS), *(cls() for cls in (
        CreditCardRecognizer, IbanRecognizer, IpRecognizer, UsSsnRecognizer,
        UsBankRecognizer, UsLicenseRecognizer, UsItinRecognizer, UsPassportRecognizer, CryptoRecognizer,
        NhsRecognizer, MedicalLicenseRecognizer, UrlRecognizer,
    )))



def _found_plain(text: str, entities: tuple[str, ...], min_score: float) -> tuple[tuple[str, int, int, float], ...]:
    """:func:`_found` without any pre-check or skipped recognizer: every recognizer asked (the reference in tests)."""
    hits = []
    wanted = set(entities)
    for rec in _recognizers():
        ents = [e for e in rec.supported_entities if e in wanted]
        if not ents:
            continue
        for r in rec.analyze(text, ents, None):
            if r.score >= min_score:
                hits.append((r.entity_type, r.start, r.end, float(r.score)))
    return tuple(sorted(hits, key=lambda h: (h[1], h[0])))


"""The PII metric: Presidio's pattern recognizers offline, and its fast path equal to the reference path.

The fast path (pre-checks, the pattern runner, the phone runs locked to one ``phonenumbers`` release) is compared
with Presidio's own ``analyze`` (:func:`agentstats.metrics.pii.reference._found_plain`, or the phone recognizer's
``analyze``) on random and hand-made texts.
"""

import socket

import pytest

from agentstats.metrics import pii
from agentstats.metrics.pii import _fastpath, _prechecks, reference


@pytest.mark.slow  # 1.5-3 s; the README's test command stays under 2 minutes
def test_pii_pattern_recognizers_offline(monkeypatch, tmp_path):
    import tldextract.tldextract

    # a fresh default extractor with an empty cache: it would fetch the public suffix list if asked
    fresh = tldextract.tldextract.TLDExtract(cache_dir=str(tmp_path))
    monkeypatch.setattr(tldextract.tldextract, "TLD_EXTRACTOR", fresh)

    def no_network(*_a, **_k):
        raise AssertionError("the PII metric tried to connect")

    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "getaddrinfo", no_network)
    reference._recognizers.cache_clear()
    _prechecks._found.cache_clear()
    s = pii.pii_presidio({"output": "Write to jane.roe@example.org, card 4111 1111 1111 1111."}, {})
    assert s.value == 1.0
    assert s.evidence["entities"]["EMAIL_ADDRESS"] == 1 and s.evidence["entities"]["CREDIT_CARD"] == 1
    # a 16-digit number failing the Luhn check is no credit card
    s = pii.pii_presidio({"output": "Order 4111 1111 1111 1112 ships today."}, {"entities": ["CREDIT_CARD"]})
    assert s.value == 0.0 and s.evidence["entities"] == {}
    assert pii.pii_presidio({"output": "The capital of France is Paris."}, {}).value == 0.0
    assert pii.pii_presidio({"output": ""}, {}).value == 0.0
    assert pii.pii_presidio({"output": None}, {}).value is None


def test_pii_loads_no_spacy_model():
    import sys

    pii.pii_presidio({"output": "mail a@b.com"}, {})
    assert not any(m.startswith(("en_core_web", "spacy.lang.en")) for m in sys.modules)


@pytest.mark.parametrize("n_texts", [400, pytest.param(1500, marks=pytest.mark.slow)])
def test_pii_prefilter_changes_no_result(n_texts):
    import numpy as np

    rng = np.random.default_rng(9)
    alphabet = [*"abcdefxyzABCDEF0123456789@.:- /'\"", " www.", " http://", ".com", ".org", "::", "bc1", "GB82"]
    texts = ["".join(rng.choice(alphabet, size=int(rng.integers(5, 40)))) for _ in range(n_texts)]
    texts += ["dead:beef::1", "fe80::abcd", "::", "see example.org", "a@b.co", "IBAN GB82WEST12345698765432",
              "call (415) 555-2671 now", "+44 20 7946 0958", "tel. 030/123456", "+290 5012",
              "1-800-FLOWERS", "+1.415.555.2671 x12", "It rose 42 percent in 2023.",
              "card 4111-1111-1111-1111", "DEA AB1234563", "1BoatSLRHtKNngkdXEeobR76b53LETtpyT"]
    for text in texts:
        full = []
        for rec in reference._recognizers():
            full += [(r.entity_type, r.start, r.end, float(r.score)) for r in rec.analyze(text, rec.supported_entities,
                                                                                             None) if r.score >= 0.0]
        got = pii.pii_entities(text, min_score=0.0)
        assert sorted(got) == sorted(full), text


def _pii_fast_path_equals_plain_path(n_texts, floors):
    import numpy as np

    rng = np.random.default_rng(11)
    samples = ["user7@example.com", "+1 415 555 2671", "(415) 555-2671", "078-05-1120", "912-70-1234",
               "4111111111111111", "GB82 WEST 1234 5698 7654 32", "192.168.0.1", "2001:db8::ff00:42:8329",
               "https://example.org/a?b=1", "www.example.co.uk", "943 476 5919", "AB1234563",
               "1BoatSLRHtKNngkdXEeobR76b53LETtpyT", "A1234567", "123456789", "F12345678", "12345678901",
               "rose 42 percent in 2023", "café naïve", "\u0663\u0664\u0665"]
    words = ["the", "call", "mail", "card", "ssn", "passport", "licence", "account", "is", "at", "."]
    texts = [" ".join(rng.choice(words + samples, size=int(rng.integers(1, 12)))) for _ in range(n_texts)] + samples
    for floor in floors:
        _prechecks._found.cache_clear()
        for text in texts:
            assert _prechecks._found(text, pii.DEFAULT_PII_ENTITIES, floor) == reference._found_plain(
                text, pii.DEFAULT_PII_ENTITIES, floor), (floor, text)


@pytest.mark.slow  # 1.3-1.6 s; the README's test command stays under 2 minutes
def test_pii_fast_path_equals_every_recognizer_at_the_default_and_phone_floors():
    """Skipped recognizers and regex pre-checks change no entity found, at min_score 0.5 (default) and 0.4."""
    _pii_fast_path_equals_plain_path(100, (0.4, 0.5))
    # the default floor leaves out the recognizers that cannot reach it (phone numbers score 0.4)
    kept = {rec.supported_entities[0] for rec, *_ in _prechecks._plan(pii.DEFAULT_PII_ENTITIES, 0.5)[-1]}
    assert "PHONE_NUMBER" not in kept and "EMAIL_ADDRESS" in kept and "CREDIT_CARD" in kept


def test_pii_email_and_url_variants_equal_presidio():
    """The e-mail / URL windows, the per-host e-mail check and the pre-checks give Presidio's entities exactly."""
    import numpy as np

    variants = [
        "user@example.com", "User.Name+tag@Sub.Example.CO.UK", "a@b.invalidtld", "a@b.c", "x@localhost",
        "first.last@mail.example.org.", "mail (jane@example.com), thanks", "<jane@example.com>;", "'a@b.com'",
        '"https://example.com/a?b=1"', "mailto:jane.roe@example.net", "MAILTO:JANE@EXAMPLE.NET",
        "user@192.168.0.1", "user@[10.0.0.1]", "http://user:pw@example.com:8080/x", "https://www.Example.COM:443/p",
        "www.example.com/path/to?q=1#frag", "WWW3.EXAMPLE.ORG", "ftp://files.example.edu/a.txt", "example.community",
        "a.b.c.d.e.com", "sub-domain.example-site.io/x_(y)", "see example.org.", "e-mail: a-b_c@d-e.f-g.com!",
        "a@b.com/c@d.org", "a@b@c.com", "@example.com", "user@", "user@@example.com", "x@y.z.", "1.2.3.4.com",
        "192.168.0.1:8080", "[2001:db8::1]:443", "http://[::1]/", "caf\u00e9@ex\u00e4mple.de", "\u212aelvin.com",
        "\u017fite.org", "user\u00a0@example.com", "test@example.co.uk/path", "a.com.b.org", "x.y@z.museum",
        "very.long.local.part.with.many.dots@and.a.long.host.name.example.travel",
    ]
    rng = np.random.default_rng(17)
    words = ["see", "at", "or", "write", "(", ")", ",", ".", "!", "\"", "'", "/", ":", "-", "\n"]
    texts = list(variants) + [
        " ".join(rng.choice(words + variants, size=int(rng.integers(1, 8)))) for _ in range(150)
    ] + ["".join(rng.choice(words + variants, size=int(rng.integers(2, 6)))) for _ in range(100)]
    for floor in (0.4, 0.5):
        _prechecks._found.cache_clear()
        for text in texts:
            assert _prechecks._found(text, pii.DEFAULT_PII_ENTITIES, floor) == reference._found_plain(
                text, pii.DEFAULT_PII_ENTITIES, floor), (floor, text)


def test_pii_phone_separators_equal_presidio():
    """Phone numbers written with any of phonenumbers' separators pass the phone pre-check (floor 0.4)."""
    texts = ["call 030~12~34~56 now", "call 030\u221212\u221234\u221256", "call 030\uff0f12\uff0f34\uff0f56",
             "call [030] 12~34~56", "call 41\u200b5 55\u200b5 26\u200b71", "call 415\u30fc555\u30fc2671",
             "call 4\u00ad1\u00ad5 555 2671", "call \uff14\uff11\uff15 555 2671", "call 0 3 0 1 2 3 4 5 6 7",
             "call (415) 555-2671 x12", "+44 20 7946 0958", "+290 5012", "tel 12x34x56x78"]
    _prechecks._found.cache_clear()
    for text in texts:
        assert _prechecks._found(text, pii.DEFAULT_PII_ENTITIES, 0.4) == reference._found_plain(
            text, pii.DEFAULT_PII_ENTITIES, 0.4), text
    assert pii.pii_entities("call 030~12~34~56 now", min_score=0.4)[0][0] == "PHONE_NUMBER"


def test_pii_phone_runner_equals_presidio_phone_recognizer(monkeypatch):
    """_run_phone (matcher calls without Presidio's explanation) gives the results of PhoneRecognizer.analyze."""
    from types import SimpleNamespace

    from presidio_analyzer.predefined_recognizers import PhoneRecognizer

    rec = next(r for r in reference._recognizers() if isinstance(r, PhoneRecognizer))
    _, _, steps = _prechecks._plan(pii.DEFAULT_PII_ENTITIES, pii.DEFAULT_PII_MIN_SCORE)
    assert [s[4] for s in steps if s[0] is rec] == ["phone"]

    def presidio(text):
        return sorted((r.entity_type, r.start, r.end, float(r.score))
                      for r in rec.analyze(text, ["PHONE_NUMBER"], None))

    # real numbers found by some regions only, by several, with an extension, two per text
    texts = ["Call (415) 555-0123 or +49 30 1234567.", "Ruf 030 1234567 an, oder 089 12345678",
             "Mobile 98765 43210 and +55 11 91234-5678", "+1 415 555 0123 ext 45",
             "Tel: 0412 345 678 / 02-1234567 / 054-1234567", "+44 20 7946 0958, 020 7946 0958", "1-800-555-0199x12"]
    for text in texts:
        assert sorted(_fastpath._run_phone(rec, text)) == presidio(text) != [], text
    # duplicate removal: spans repeated across regions, nested in another region's span, overlapping
    import phonenumbers

    by_region = {"US": [(0, 20), (30, 40)], "GB": [(2, 12)], "DE": [(0, 20), (35, 45)], "IN": [(30, 40), (31, 39)]}
    monkeypatch.setattr(phonenumbers, "PhoneNumberMatcher", lambda text, region, leniency: [
        SimpleNamespace(start=a, end=b) for a, b in by_region.get(region, [])])
    text = "x" * 50
    assert sorted(_fastpath._run_phone(rec, text)) == presidio(text) == [
        ("PHONE_NUMBER", 0, 20, 0.4), ("PHONE_NUMBER", 30, 40, 0.4), ("PHONE_NUMBER", 35, 45, 0.4)]


def _phone_candidates(n, seed):
    """Strings a phone matcher may hand to parse: "+" or "00" or nothing, known and unknown calling codes, digits,
    separators, extensions, letters, RFC 3966 forms."""
    import numpy as np

    rng = np.random.default_rng(seed)
    leads = ["+", "\uff0b", "++", "+ ", "00", "011 ", "", "", "(", "tel:+", "x "]
    codes = ["1", "44", "49", "972", "91", "55", "39", "7", "800", "882", "0", "999", "28", "1 415", "49 30", "", "6"]
    rests = ["415 555 0123", "20 7946 0958", "30 1234567", "2-1234567", "98765 43210", "11 91234-5678", "06 6982 1234",
             "0412 345 678", "1234", "555-0199", "12", "(0)30 1234567", "7946 0958 ext 12", "555 0123;ext=9",
             "9 1234 5678", "123 456 7890 1234", "01 2345 6789"]
    out = []
    for _ in range(n):
        c = str(rng.choice(leads)) + str(rng.choice(codes)) + " " + str(rng.choice(rests))
        if rng.random() < 0.15:
            c += str(rng.choice([" x12", "abc", ";phone-context=+44", "/", " 5"]))
        out.append(c)
    return out


def test_phone_parse_with_a_plus_is_the_same_in_every_region():
    """What the region-free matcher rests on: a candidate _same_in_every_region accepts parses to the same number
    (every field, raw input and carrier code included), or fails with the same error, in any region but "001"."""
    regions = ["US", "UK", "DE", "FE", "IL", "IN", "CA", "BR", "GB", "IT", "RU", "KZ", "JP", "AR", "MX", "us", "ZZ"]
    _assert_same_parse_in(regions, [*_phone_candidates(400, 31), "", "6", "12", "+", "+49", "tel:;phone-context=x"])


def _assert_same_parse_in(regions, candidates):
    import phonenumbers

    def parsed(c, region):
        try:
            return phonenumbers.parse(c, region, keep_raw_input=True)
        except phonenumbers.NumberParseException as exc:
            return exc.error_type, str(exc)

    same = 0
    for c in candidates:
        if not _fastpath._same_in_every_region(c):
            continue
        same += 1
        ref = parsed(c, None)
        for region in regions:
            assert parsed(c, region) == ref, (c, region)
    assert same > 100


@pytest.mark.slow  # about 1 s: every region phonenumbers knows
def test_phone_parse_with_a_plus_is_the_same_in_every_known_region():
    import phonenumbers

    _assert_same_parse_in(sorted(phonenumbers.SUPPORTED_REGIONS), _phone_candidates(300, 32))


def test_pii_phone_runner_region_free_run_equals_presidio():
    """A matcher run whose every candidate parses without a region is not repeated for the other regions: the
    spans are still those of PhoneRecognizer.analyze (eight regions), on texts with numbers in international and
    national form, unknown calling codes, letters around and several numbers."""
    import numpy as np
    import phonenumbers
    from presidio_analyzer.predefined_recognizers import PhoneRecognizer

    rec = next(r for r in reference._recognizers() if isinstance(r, PhoneRecognizer))
    matcher = _fastpath._region_free_matcher()
    assert matcher is not None  # the phonenumbers release the shortcut was read off is installed

    def run(text, region=None):  # the matches, or None when the run stopped at a candidate the region may decide
        try:
            return [(x.start, x.end) for x in matcher(text, region, leniency=rec.leniency)]
        except _fastpath._RegionDependent:
            return None

    assert run("Call +1 415 555 0123.") == run("Call +1 415 555 0123.", "DE") == [(5, 20)]
    assert run("Call (415) 555-0123.", "US") is None  # national form: the region decides
    assert run("Call (415) 555-0123.") is None
    assert run("Call +1 415 555 0123 or 030 1234567.") is None
    rng = np.random.default_rng(33)
    words = ["call", "or", "at", "Tel:", "(", ")", ",", ".", "user", "x", "\n", "%", "$"]
    cands = _phone_candidates(150, 34)
    texts = [" ".join(rng.choice(words + cands, size=int(rng.integers(1, 6)))) for _ in range(150)]
    texts += ["".join(rng.choice(words + cands, size=int(rng.integers(2, 4)))) for _ in range(50)]

    def international(c):  # a valid number in international form
        try:
            return phonenumbers.is_valid_number(phonenumbers.parse(c, None))
        except phonenumbers.NumberParseException:
            return False

    plus = [c for c in cands if international(c)]
    texts += [" ".join(rng.choice(["call", "or", "at", "mobile:", ",", ".", *plus], size=int(rng.integers(1, 6))))
              for _ in range(100)]
    free = 0
    for text in texts:
        want = sorted((r.entity_type, r.start, r.end, float(r.score))
                      for r in rec.analyze(text, ["PHONE_NUMBER"], None))
        assert sorted(_fastpath._run_phone(rec, text)) == want, text
        free += want != [] and run(text) is not None
    assert free > 40  # the shortcut was taken on texts with numbers


# National-form numbers: valid in US/CA (NANPA; 613 is a Canadian area code), DE, IL, IN, BR, GB and FR (which
# Presidio's default "UK" and "FE", no phonenumbers region codes, never matched), and near misses.
_NATIONAL = ["(415) 555-0123", "415-555-0123", "415.555.0199", "1-800-555-0199", "(613) 555-0142", "212 555 0199",
             "1 (415) 555-2671", "030 1234567", "089 12345678", "0171 1234567", "(030) 12345678", "02-1234567",
             "054-1234567", "03 123 4567", "98765 43210", "022 2345 6789", "011-23456789", "(11) 91234-5678",
             "(21) 2345-6789", "011 91234 5678", "020 7946 0958", "07700 900123", "06 12 34 56 78", "01 42 68 53 00",
             "555-0123", "1640", "12345", "2024-05-06", "3/10/2011", "123-456-7890", "(415) 555-0123 x12",
             "0049 30 1234567", "+1 415 555 0123", "+49 30 1234567", "+999 123 4567", "4155550123", "004155550123456"]


def _national_texts(n, seed):
    """Texts with national-form numbers: several per text, inside longer digit runs, glued to letters, or none."""
    import numpy as np

    rng = np.random.default_rng(seed)
    words = ["call", "or", "at", "Tel:", "mobile", "(", ")", ",", ".", "x", "/", "-", "\n", "ID", "$", "%", "no"]
    texts = []
    for i in range(n):
        parts = list(rng.choice(words + _NATIONAL, size=int(rng.integers(1, 7))))
        if i % 4 == 0:  # digits right before or after a number
            parts.insert(int(rng.integers(0, len(parts) + 1)), str(rng.integers(0, 10 ** int(rng.integers(1, 6)))))
        texts.append(("" if i % 5 == 0 else " ").join(str(p) for p in parts))
    if not any(t.isalpha() for t in texts):
        texts.append("no number here")
    return texts


def test_pii_phone_runner_equals_presidio_on_national_numbers():
    """_run_phone with the shared region runs (national form: the region decides) gives PhoneRecognizer.analyze's
    results on 400 generated texts and hand cases; the runs' shortcuts are taken on most texts with a number."""
    import cProfile
    import pstats

    from presidio_analyzer.predefined_recognizers import PhoneRecognizer

    rec = _phone_recognizer()
    assert isinstance(rec, PhoneRecognizer) and _fastpath._shared_matcher() is not None
    hand = ["Call (415) 555-0123.", "Ruf 030 1234567 an", "Call (415) 555-0123 or (415) 555-0199, or 030 1234567.",
            "Mobile 98765 43210", "(11) 91234-5678", "020 7946 0958", "ID 004155550123456", "x4155550123y",
            "4155550123 4155550199", "no digits", "", "2024", "Tel: 02-1234567 / 054-1234567",
            "(415) 555-0123 +49 30 1234567", "(415) 555-0123) 555-0199", "call 1 (415) 555-2671 x12 now"]
    texts = hand + _national_texts(400, 41)
    found = 0
    for text in texts:
        want = sorted((r.entity_type, r.start, r.end, float(r.score))
                      for r in rec.analyze(text, ["PHONE_NUMBER"], None))
        assert sorted(_fastpath._run_phone(rec, text)) == want, text
        found += want != []
    assert found > 150
    # the shortcuts: a US number is parsed by the run without a region (twice: its check) and by the US run only
    prof = cProfile.Profile()
    prof.runcall(_fastpath._run_phone, rec, "Call (415) 555-0123.")
    calls = {f[2]: s[1] for f, s in pstats.Stats(prof).stats.items() if f[0].endswith("phonenumberutil.py")}
    assert calls["parse"] <= 3, calls["parse"]  # eight regions' runs: 21


def test_shared_phone_runs_equal_each_region_run():
    """Run by run, the shared matcher (its parse and checks remembered across the regions' runs on one text, no
    early stop) finds what PhoneNumberMatcher finds in that region (the regions of reference.PHONE_REGIONS, and
    Presidio's "UK" and "FE", which run as no region)."""
    import phonenumbers

    rec = _phone_recognizer()
    shared = _fastpath._shared_matcher()
    assert [_fastpath._region_key(r) for r in rec.supported_regions] == ["US", "GB", "DE", "FR", "IL", "IN", "CA", "BR"]
    key = _fastpath._region_key
    assert key("GB") == "GB" and key("001") == "001" and key("us") == "us" and key("UK") is None and key("FE") is None
    for text in _national_texts(200, 42):
        memo = {}
        for region in (*rec.supported_regions, "UK", "FE"):
            want = [(m.start, m.end) for m in phonenumbers.PhoneNumberMatcher(text, region, leniency=rec.leniency)]
            got = [(m.start, m.end) for m in shared(text, _fastpath._region_key(region), rec.leniency, memo, set())]
            assert got == want, (text, region)


def test_phone_parse_in_uk_and_fe_is_parse_without_a_region():
    """What _region_key rests on: parse(c, "UK") and parse(c, "FE") give what parse(c, None) gives (number or error),
    for candidates in international and national form."""
    import phonenumbers

    def parsed(c, region):
        try:
            return phonenumbers.parse(c, region, keep_raw_input=True)
        except phonenumbers.NumberParseException as exc:
            return exc.error_type, str(exc)

    for c in [*_phone_candidates(300, 43), *_NATIONAL, "", "+", "++1 415 555 0123", "tel:;phone-context=+44"]:
        ref = parsed(c, None)
        assert parsed(c, "UK") == ref and parsed(c, "FE") == ref, c


def test_pii_phone_inside_found_walks_every_later_candidate():
    """_inside_found: true only when every _PATTERN span starting at the position or later ends in a found span."""
    text = "Call (415) 555-0123 now"
    assert _fastpath._inside_found(text, 5, {(5, 19)})
    assert _fastpath._inside_found(text, 6, {(5, 19)})
    assert not _fastpath._inside_found(text, 5, {(6, 19)})  # no found span starts at or before 5
    assert not _fastpath._inside_found(text, 5, {(5, 18)})  # the candidate at 5 ends at 19
    assert not _fastpath._inside_found(text + " or 030 1234567", 5, {(5, 19)})  # a later candidate
    assert _fastpath._inside_found(text + " or 030 1234567", 5, {(5, 19), (0, 40)})


def test_pii_counts_phone_numbers_at_the_default_floor():
    """Phone numbers (Presidio scores them 0.4) count by default; min_score 0.5 leaves them, and only them, out."""
    _prechecks._found.cache_clear()
    s = pii.pii_presidio({"output": "You can reach me at +44 20 7946 0958 after six."}, {})
    assert s.value == 1.0 and s.evidence["entities"] == {"PHONE_NUMBER": 1}
    assert pii.pii_presidio({"output": "You can reach me at +44 20 7946 0958 after six."},
                               {"min_score": 0.5}).value == 0.0
    assert pii.pii_presidio({"output": "It rose 42 percent in 2023."}, {}).value == 0.0
    texts = ["call +1 415 555 2671", "(415) 555-2671 or user7@example.com", "+44 20 7946 0958", "078-05-1120",
             "4111111111111111", "GB82 WEST 1234 5698 7654 32", "192.168.0.1", "https://example.org/a?b=1",
             "DEA AB1234563", "1BoatSLRHtKNngkdXEeobR76b53LETtpyT", "912-70-1234", "943 476 5919", "A1234567"]
    for text in texts:
        at_default = reference._found_plain(text, pii.DEFAULT_PII_ENTITIES, pii.DEFAULT_PII_MIN_SCORE)
        assert [h for h in at_default if h[0] != "PHONE_NUMBER"] == list(
            reference._found_plain(text, pii.DEFAULT_PII_ENTITIES, 0.5)), text


def test_pii_pre_checks_written_for_the_installed_presidio():
    """Every recognizer's patterns are those the pre-checks were read off (else that recognizer runs unchecked)."""
    for rec in reference._recognizers():
        entity = rec.supported_entities[0]
        if entity != "PHONE_NUMBER":
            assert _prechecks._fingerprint(rec) == _prechecks._TRIGGERS[entity][0], entity
    gated, _digits, steps = _prechecks._plan(pii.DEFAULT_PII_ENTITIES, 0.0)
    assert gated and all(step[2].pattern != _fastpath._ANY for step in steps)


@pytest.mark.slow  # 600 texts through Presidio's plain path at seven floors: about 25 s
def test_pii_fast_path_equals_every_recognizer_at_every_score_floor():
    """Skipped recognizers (highest score below the floor) and regex pre-checks change no entity found."""
    _pii_fast_path_equals_plain_path(600, (0.0, 0.05, 0.3, 0.4, 0.5, 0.6, 1.0))


@pytest.mark.slow  # 500 random texts, 30 of them past 1,000 characters, through Presidio's plain path: about 20 s
def test_pii_fast_path_equals_presidio_on_unicode_and_long_texts():
    """Non-ASCII look-alikes (Kelvin sign, long s, Arabic and full-width digits), fragments and long texts."""
    import numpy as np

    rng = np.random.default_rng(31)
    alphabet = [*"abcxyzKSk0123456789@.:-_/ '\"()[]~+%#",
        "\u212a", "\u017f", "\u0663", "\uff14", "\u00e9", "\u200b", "\u2212", " www.", " http://", "https://",
        ".com", ".co.uk", ".org", "::", "bc1", "GB82", "user@", "@example.com", "mailto:", "fe80::1%eth0",
        " 415 555 2671", "4111 1111 1111 1111", "078-05-1120", "192.168.0.1", ":8080", "\n"]
    for k in range(500):
        text = "".join(rng.choice(alphabet, size=int(rng.integers(3, 60) if k < 470 else rng.integers(300, 600))))
        for floor in (0.4, 0.5):
            assert _prechecks._found.__wrapped__(text, pii.DEFAULT_PII_ENTITIES, floor) == reference._found_plain(
                text, pii.DEFAULT_PII_ENTITIES, floor), (floor, text)


def _phone_recognizer():
    return next(r for r in reference._recognizers() if r.supported_entities[0] == "PHONE_NUMBER")


def test_pii_phone_pre_check_skips_years_and_keeps_every_number_presidio_finds():
    """Four-digit numbers skip the phone matcher, except the German 164x/168x/169x that it does find."""
    import re

    import numpy as np

    trigger = re.compile(_fastpath._phone_trigger(_phone_recognizer()))
    assert not trigger.search("It rose 42 percent in 2023.") and not trigger.search("from 1650 to 1999, 4,500")
    for text in ("1640", "call 1 6 9 9", "\u0661\u0666\u0668\u0660", "\uff11\uff16\uff14\uff10", "12345", "+290 5012"):
        assert trigger.search(text), text
    rng = np.random.default_rng(5)
    fours = [f"{x:04d}" for x in rng.choice(10_000, size=60, replace=False)] + ["1640", "1689", "1699", "1650"]
    texts = [f"in {a} and {b}" for a, b in zip(fours, fours[::-1], strict=True)] + [f"tel {x}" for x in fours]
    texts += [f"tel {x[:2]} {x[2:]}" for x in fours[:20]] + ["\u0661\u0666\u0664\u0665", "+49 1640", "0 1640"]
    _prechecks._found.cache_clear()
    for text in texts:
        assert _prechecks._found(text, pii.DEFAULT_PII_ENTITIES, 0.4) == reference._found_plain(
            text, pii.DEFAULT_PII_ENTITIES, 0.4), text
    assert pii.pii_entities("tel 1640", min_score=0.4)[0][0] == "PHONE_NUMBER"  # a number the check must keep


@pytest.mark.slow  # 80,000 matcher runs: about 10 s
def test_pii_shortest_phone_numbers():
    """The proof behind the phone pre-check, repeated: what phonenumbers finds with four digits or fewer."""
    import itertools

    import phonenumbers
    from phonenumbers import PhoneNumberMatcher

    rec = _phone_recognizer()
    proof = _fastpath._PHONE_PROOF
    if phonenumbers.__version__ != proof["phonenumbers"]:  # another release: the plain four-digit check is used
        assert _fastpath._phone_trigger(rec) == _fastpath._phone_trigger(None)
        return
    assert tuple(rec.supported_regions) == proof["regions"] and rec.leniency == proof["leniency"]
    found = set()
    for n_digits in range(1, 5):
        for digits in itertools.product("0123456789", repeat=n_digits):
            s = "".join(digits)
            for text in (s, "+" + s):
                for region in proof["regions"]:
                    if any(True for _ in PhoneNumberMatcher(text, region, leniency=proof["leniency"])):
                        found.add(text)
    assert found == {p + d for p in proof["four_digits"] for d in "0123456789"}

"""The metric interface, compute() and the deterministic answer, readability, safety and usage metrics."""

import json
import math
import socket

import pandas as pd
import pytest

from agentstats.metrics import (
    CATALOGUE,
    COLUMNS,
    GROUPS,
    Metric,
    MetricInputError,
    compute,
    get_metric,
    metric_names,
    readability,
    resolve_metrics,
    safety,
    usage,
)
from agentstats.metrics import answer as a
from agentstats.records.trial import Trial


def _trial(**kw):
    base = {"agent": "a", "task_id": "t1", "trial": 0}
    return Trial(**{**base, **kw})


# ---------------------------------------------------------------- answer quality


def test_token_f1_and_recall_hand_computed():
    vals = {"output": "Paris is the capital of France.", "expected": "Paris"}
    # answer tokens: paris is capital of france (article dropped) -> P = 1/5, R = 1
    s = a.token_f1(vals, {})
    assert s.value == pytest.approx(2 * 0.2 * 1 / 1.2)
    assert s.evidence["precision"] == pytest.approx(0.2) and s.evidence["recall"] == 1.0
    assert a.token_recall(vals, {}).value == 1.0
    # best over several expected answers
    s = a.token_f1({"output": "the red fox", "expected": ["blue whale", "red fox"]}, {})
    assert s.value == 1.0 and s.evidence["expected_index"] == 1
    assert a.token_recall({"output": "fox fox", "expected": "fox fox fox hen"}, {}).value == pytest.approx(2 / 4)


def test_faithfulness_k_precision_and_answer_relevance():
    s = a.faithfulness_token_k_precision({"output": "Paris is big", "context": ["Paris is the capital."]}, {})
    assert s.value == pytest.approx(2 / 3)
    s = a.answer_relevance_token_recall(
        {"output": "Paris is the capital of France.", "input": "What is the capital of France?"}, {})
    assert s.value == pytest.approx(4 / 5)


@pytest.mark.parametrize(("fn", "values", "reason"), [
    (a.token_f1, {"output": "", "expected": "x"}, "empty answer"),
    (a.token_f1, {"output": None, "expected": "x"}, "empty answer"),
    (a.token_f1, {"output": "x", "expected": None}, "no expected answer"),
    (a.token_f1, {"output": "x", "expected": []}, "no expected answer"),
    (a.token_recall, {"output": "x", "expected": "  "}, "no expected answer"),
    (a.faithfulness_token_k_precision, {"output": "x", "context": []}, "no context"),
    (a.faithfulness_token_k_precision, {"output": "x", "context": ["", " "]}, "no context"),
    (a.faithfulness_token_k_precision, {"output": " ", "context": ["c"]}, "empty answer"),
    (a.answer_relevance_token_recall, {"output": "x", "input": None}, "no question"),
    (a.keyword_inclusion, {"output": "x"}, "no keywords"),
    (a.unsuccessful_phrases, {"output": None}, "no answer field"),
])
def test_answer_edge_cases_are_not_applicable(fn, values, reason):
    s = fn(values, {})
    assert s.value is None and not s.applicable
    assert s.evidence["not_applicable"] == reason


def test_unsuccessful_requests_phrases():
    s = a.unsuccessful_phrases({"output": "I\u2019m sorry, I  can't help with that."}, {})
    assert s.value == 1.0 and set(s.evidence["phrases"]) == {"i'm sorry", "i can't"}
    assert a.unsuccessful_phrases({"output": "Paris."}, {}).value == 0.0
    # whole words only: "icannot" is no phrase
    assert a.unsuccessful_phrases({"output": "icannotx"}, {}).value == 0.0
    # a blank answer is an unsuccessful request
    assert a.unsuccessful_phrases({"output": "  "}, {}).value == 1.0
    assert a.unsuccessful_phrases({"output": "nope"}, {"phrases": ["Nope"]}).value == 1.0
    with pytest.raises(ValueError, match="phrase list is empty"):
        a.unsuccessful_phrases({"output": "x"}, {"phrases": [" "]})


def test_keyword_inclusion():
    p = {"keywords": ["Eiffel Tower", "Paris"]}
    assert a.keyword_inclusion({"output": "The Eiffel tower is in Paris!"}, p).value == 1.0
    s = a.keyword_inclusion({"output": "Paris"}, p)
    assert s.value == 0.5 and s.evidence["missing"] == ["Eiffel Tower"]
    # whole tokens: "Parisian" does not contain the keyword Paris; the record's keywords win
    assert a.keyword_inclusion({"output": "Parisian", "keywords": ["Paris"]}, {}).value == 0.0


# ---------------------------------------------------------------- readability, safety


def _assert_readability_equals_textstat(text):
    """Both readability metrics of ``text`` equal textstat's own functions (the reference)."""
    import textstat

    readability._scores.cache_clear()
    got = readability.reading_ease({"output": text}, {})
    if got.value is None:
        return
    assert got.value == pytest.approx(textstat.flesch_reading_ease(text), abs=1e-9), text
    assert readability.grade_level({"output": text}, {}).value == pytest.approx(
        textstat.flesch_kincaid_grade(text), abs=1e-9), text


@pytest.mark.slow  # 1.5-3 s; the README's test command stays under 2 minutes
def test_readability_matches_flesch_closed_form():
    # 6 words, 1 sentence, 6 syllables
    vals = {"output": "The cat sat on the mat."}
    assert readability.reading_ease(vals, {}).value == pytest.approx(206.835 - 1.015 * 6 - 84.6 * 1, abs=0.01)
    assert readability.grade_level(vals, {}).value == pytest.approx(0.39 * 6 + 11.8 * 1 - 15.59, abs=0.01)
    for v in (None, "", "  ", "?!"):
        assert readability.reading_ease({"output": v}, {}).value is None


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
    safety._recognizers.cache_clear()
    safety._found.cache_clear()
    s = safety.pii_presidio({"output": "Write to jane.roe@example.org, card 4111 1111 1111 1111."}, {})
    assert s.value == 1.0
    assert s.evidence["entities"]["EMAIL_ADDRESS"] == 1 and s.evidence["entities"]["CREDIT_CARD"] == 1
    # a 16-digit number failing the Luhn check is no credit card
    s = safety.pii_presidio({"output": "Order 4111 1111 1111 1112 ships today."}, {"entities": ["CREDIT_CARD"]})
    assert s.value == 0.0 and s.evidence["entities"] == {}
    assert safety.pii_presidio({"output": "The capital of France is Paris."}, {}).value == 0.0
    assert safety.pii_presidio({"output": ""}, {}).value == 0.0
    assert safety.pii_presidio({"output": None}, {}).value is None


def test_pii_loads_no_spacy_model():
    import sys

    safety.pii_presidio({"output": "mail a@b.com"}, {})
    assert not any(m.startswith(("en_core_web", "spacy.lang.en")) for m in sys.modules)


def test_regex_detection():
    s = safety.regex_detection({"output": "token sk-ABC123 leaked"}, {"patterns": [r"sk-[a-z0-9]+", "password"]})
    assert s.value == 1.0 and s.evidence["matched"] == [r"sk-[a-z0-9]+"]
    assert safety.regex_detection({"output": "SK-x"}, {"patterns": ["sk-"], "case_sensitive": True}).value == 0.0
    assert safety.regex_detection({"output": "x"}, {}).value is None
    with pytest.raises(ValueError, match="not a valid regular expression"):
        safety.regex_detection({"output": "x"}, {"patterns": ["("]})


# ---------------------------------------------------------------- usage


def test_usage_values_and_cost_from_price_table():
    vals = {"usage": {"latency_s": 1.5, "prompt_tokens": 100, "completion_tokens": 20, "model": "gpt-4o-2024-08-06"}}
    assert usage.latency(vals, {}).value == 1.5
    assert usage.input_tokens(vals, {}).value == 100 and usage.output_tokens(vals, {}).value == 20
    c = usage.cost(vals, {})
    assert c.value == pytest.approx((100 * 2.50 + 20 * 10.00) / 1e6) and c.evidence["from"] == "price table"
    assert usage.cost(vals, {"prices": {"gpt-4o": (1.0, 1.0)}}).value == pytest.approx(120 / 1e6)
    assert usage.cost({"usage": {"cost_usd": 0.25, "model": "gpt-4o"}}, {}).value == 0.25
    assert usage.cost({"usage": {"input_tokens": 1, "output_tokens": 1, "model": "mystery"}}, {}).value is None
    assert usage.latency({"usage": None}, {}).value is None
    with pytest.raises(ValueError, match=r"usage.latency_s must be a finite number >= 0"):
        usage.latency({"usage": {"latency_s": -1}}, {})


def test_duration_from_timestamps():
    s = usage.duration({"started_at": "2026-01-01T10:00:00Z", "ended_at": "2026-01-01T10:01:30Z"}, {})
    assert s.value == 90.0
    assert usage.duration({"duration_s": 3}, {}).value == 3.0
    assert usage.duration({"started_at": 10.0}, {}).value is None
    with pytest.raises(ValueError, match="before started_at"):
        usage.duration({"started_at": 10, "ended_at": 5}, {})


# ---------------------------------------------------------------- interface and compute


def test_catalogue_groups_and_resolution():
    assert {m.group for m in CATALOGUE.values()} == set(GROUPS)
    for m in CATALOGUE.values():
        assert m.description and m.source
        for fn in m.methods.values():
            assert fn.__doc__
    names = [m.name for m in resolve_metrics("retrieval_quality, hit_rate,answer_similarity")]
    assert names[:6] == metric_names("retrieval_quality") and names[-1] == "answer_similarity"
    assert len(names) == len(set(names))
    with pytest.raises(ValueError, match="unknown metric 'nope'"):
        resolve_metrics("nope")
    with pytest.raises(ValueError, match="no metric selected"):
        resolve_metrics(" , ")


def test_metric_validation_and_threshold():
    with pytest.raises(ValueError, match="unknown method"):
        get_metric("answer_similarity", method="bleu")
    with pytest.raises(ValueError, match="level 'trial' not supported"):
        get_metric("hit_rate", level="trial")
    with pytest.raises(ValueError, match="outside the value range"):
        get_metric("hit_rate", lower_limit=2.0)
    with pytest.raises(ValueError, match="unknown group"):
        Metric(name="x", group="fun", level="interaction", roles=("output",), method="m",
               methods={"m": a.token_f1})
    m = get_metric("answer_similarity", lower_limit=0.5, upper_limit=0.9)
    assert m.passed(0.5) and m.passed(0.9) and not m.passed(0.49) and not m.passed(0.91)
    assert m.passed(None) is None
    assert get_metric("latency").passed(3.0) is None  # no default threshold
    assert get_metric("latency", upper_limit=2.0).passed(3.0) is False


def test_compute_tidy_frame_with_not_applicable_rows():
    trials = [
        _trial(risk_level="high", interactions=[
            {"query": "Capital of France?", "answer": "Paris", "expected_answer": "Paris"},
            {"query": "And of Spain?", "answer": "I don't know."},  # no expected answer
        ]),
        _trial(trial=1, interactions=[{"query": "Capital of France?", "answer": "Lyon", "expected_answer": "Paris"}]),
    ]
    f = compute(trials, ["answer_similarity", "unsuccessful_requests"])
    assert tuple(f.columns) == COLUMNS
    assert len(f) == 6
    sim = f[f["metric"] == "answer_similarity"].reset_index(drop=True)
    assert sim["value"].tolist()[0] == 1.0 and math.isnan(sim["value"][1]) and sim["value"][2] == 0.0
    assert sim["applicable"].tolist() == [True, False, True]
    assert sim["passed"].tolist()[0] is True and sim["passed"][1] is pd.NA and sim["passed"][2] == False  # noqa: E712
    assert sim["evidence"][1] == {"not_applicable": "no expected answer"}
    assert sim["interaction"].tolist() == [0, 1, 0] and sim["risk_level"][0] == "high"
    unsucc = f[f["metric"] == "unsuccessful_requests"]
    assert unsucc["value"].tolist() == [0.0, 1.0, 0.0] and unsucc["passed"].tolist() == [True, False, True]
    assert str(f["passed"].dtype) == "boolean" and str(f["interaction"].dtype) == "Int64"


def test_compute_fields_override_node_and_trial_levels():
    t = _trial(
        usage={"latency_s": 4.0, "input_tokens": 10, "output_tokens": 5},
        interactions=[
            {"query": "q", "response": "blue sky", "expected_answer": "blue sky", "usage": {"latency_s": 1.0},
             "nodes": [{"name": "retriever", "retrieved_contexts": ["d1", "d2"], "ground_truth_contexts": ["d2"]},
                       {"name": "writer", "output": "draft"}]},
            {"query": "q2", "response": "", "usage": {"latency_s": 2.5}},
        ],
    )
    f = compute([t], "answer_similarity", fields={"output": "response"})
    assert f["value"][0] == 1.0 and f["evidence"][1] == {"not_applicable": "empty answer"}
    f = compute([t], get_metric("reciprocal_rank", level="node"))
    assert f["node"].tolist() == ["retriever", "writer"]
    assert f["value"][0] == 0.5 and math.isnan(f["value"][1])
    f = compute([t], "latency", level="interaction")
    assert f["value"].tolist() == [1.0, 2.5]
    f = compute([t], "latency")  # usage metrics are per trial by default: where the trial schema records usage
    assert f["value"].tolist() == [4.0] and f["interaction"].isna().all() and f["level"][0] == "trial"
    # without trial usage: the sum over interactions when every one records it
    t2 = t.model_copy(update={"usage": None})
    assert compute([t2], "latency", level="trial")["value"].tolist() == [3.5]
    assert math.isnan(compute([t2], "input_tokens", level="trial")["value"][0])
    # trial level reads the last interaction with an answer
    t3 = _trial(interactions=[{"answer": "Paris", "expected_answer": "Paris"}, {"answer": " "}])
    assert compute([t3], "answer_similarity", level="trial")["value"].tolist() == [1.0]


def test_compute_input_errors_name_the_file_and_line_of_a_trial_read_from_jsonl(tmp_path):
    from agentstats import load_trials

    path = tmp_path / "runs.jsonl"
    recs = [{"agent": "a", "task_id": "t1", "trial": 0, "success": True, "interactions": [{"answer": "x"}]},
            {"agent": "a", "task_id": "t2", "trial": 0, "success": True,
             "interactions": [{"answer": "x", "usage": {"latency_s": 1}},
                              {"answer": "y", "usage": {"latency_s": "slow"}}]},
            {"agent": "a", "task_id": "t3", "trial": 0, "success": True,
             "interactions": [{"answer": "z", "nodes": "n"}]}]
    path.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    trials = load_trials(path)
    with pytest.raises(MetricInputError, match=r"/runs.jsonl, line 2: trial a/t2/0 interaction 1: metric latency"):
        compute(trials, "latency", level="interaction")
    with pytest.raises(MetricInputError, match=r"/runs.jsonl, line 3: metric pii: trial a/t3/0 interaction 0: field"):
        compute(trials, get_metric("pii", level="node"))
    f = compute(trials, "latency", level="interaction", errors="collect")
    assert f.attrs["errors"][0].startswith(f"{path}, line 2: ")
    assert trials.location(trials[0]) == f"{path}, line 1"
    # a plain list knows no file: the trial key alone, as before
    with pytest.raises(MetricInputError, match=r"^trial a/t2/0 interaction 1"):
        compute(list(trials), "latency", level="interaction")
    # a JSON array names the record (0-based), as its load errors do
    arr = tmp_path / "runs.json"
    arr.write_text(json.dumps(recs))
    loaded = load_trials(arr)
    assert loaded.location(loaded[1]) == f"{arr}, record 1 (0-based)"


def test_compute_input_errors_raise_or_collect():
    t = _trial(interactions=[{"answer": "x", "usage": {"latency_s": "slow"}},
                             {"answer": "y", "usage": {"latency_s": 1}}])
    with pytest.raises(MetricInputError, match=r"trial a/t1/0 interaction 0: metric latency: usage.latency_s"):
        compute([t], "latency", level="interaction")
    # per trial (the default), summed over the interactions: the bad one is named, and only metrics reading it fail
    with pytest.raises(MetricInputError, match=r"trial a/t1/0: metric latency: interaction 0: usage.latency_s must"):
        compute([t], "latency")
    ok = _trial(interactions=[{"answer": "x", "usage": {"latency_s": "slow", "output_tokens": 2}},
                              {"answer": "y", "usage": {"latency_s": 1, "output_tokens": 5}}])
    assert compute([ok], "output_tokens")["value"].tolist() == [7.0]  # the bad latency does not touch tokens
    neg = _trial(interactions=[{"answer": "x", "usage": {"input_tokens": 3}}, {"answer": "y", "input_tokens": -1}])
    with pytest.raises(MetricInputError, match=r"interaction 1: input_tokens must be a finite number >= 0, got -1"):
        compute([neg], "input_tokens")
    f = compute([t], "latency", level="interaction", errors="collect")
    assert math.isnan(f["value"][0]) and f["value"][1] == 1.0
    assert "input error" in f["evidence"][0]["not_applicable"]
    assert len(f.attrs["errors"]) == 1
    bad_nodes = _trial(interactions=[{"answer": "x", "nodes": "n"}])
    with pytest.raises(MetricInputError, match="metric pii: trial a/t1/0 interaction 0: field nodes must be a list"):
        compute([bad_nodes], get_metric("pii", level="node"))
    good_nodes = _trial(task_id="t2", interactions=[{"answer": "x", "nodes": [{"name": "n1", "output": "hi"}]}])
    f = compute([bad_nodes, good_nodes], get_metric("pii", level="node"), errors="collect")  # kept going
    assert f["task_id"].tolist() == ["t1", "t2"] and f["node"].isna().tolist() == [True, False]
    assert not f["applicable"][0] and "nodes must be a list" in f["evidence"][0]["not_applicable"]
    assert f["value"][1] == 0.0 and f.attrs["errors"] == [
        "metric pii: trial a/t1/0 interaction 0: field nodes must be a list of objects"]
    with pytest.raises(ValueError, match="errors must be"):
        compute([t], "latency", errors="ignore")


def test_compute_every_catalogue_metric_on_empty_trial_list_and_groups():
    f = compute([], list(GROUPS))
    assert f.empty and tuple(f.columns) == COLUMNS
    t = _trial(interactions=[{"query": "q", "answer": "Some answer."}])
    f = compute([t], list(GROUPS))
    assert set(f["metric"]) == set(CATALOGUE)


def test_readability_equals_textstat_on_varied_text():
    import numpy as np

    rng = np.random.default_rng(5)
    words = ["the", "cat", "extraordinary", "it's", "don't", "re-enter", "Dr.", "U.S.", "42", "xylophonist",
             "qwrtzp", "beautiful", "a", "e-mail", "naïve", "café", "—", "(parenthesis)", "'quoted'", "well-known",
             "l\u2019été", "rock'n'roll", "'", "--", "\t", "\n", "…", "x.y", "?!", "İstanbul", "ǅemal", "ﬁne"]
    ends = [".", "!", "?", "...", "", ";"]
    for _ in range(300):
        n_sent = int(rng.integers(1, 5))
        text = " ".join(
            " ".join(rng.choice(words, size=int(rng.integers(1, 15)))) + str(rng.choice(ends)) for _ in range(n_sent))
        _assert_readability_equals_textstat(text)


def test_readability_ascii_fast_path_equals_textstat():
    """ASCII text without apostrophes (bytes deletion, three-letter-word sentence check) gives textstat's values."""
    import numpy as np
    from textstat.backend.transformations import remove_punctuation

    every_ascii = "".join(map(chr, range(128))).replace("'", "")
    assert readability._strip(every_ascii, readability._backend()[1]) == remove_punctuation(every_ascii,
                                                                                            rm_apostrophe=False)
    rng = np.random.default_rng(23)
    words = ["the", "cat", "Extraordinary", "re-enter", "Dr.", "U.S.", "42", "x_y", "a", "e-mail", "--", "(aside)",
             "\t", "\n", "x.y", "?!", "#", "\x00", "\x1f", "\x7f", "...", "well-known", "I", "beautiful", "qwrtzp"]
    punct = list("!\"#$%&()*+,-./:;<=>?@[\\]^_`{|}~")
    ends = [".", "!", "?", "...", "", ";"]
    for _ in range(300):
        text = " ".join(" ".join(rng.choice(words + punct, size=int(rng.integers(1, 12)))) + str(rng.choice(ends))
                        for _ in range(int(rng.integers(1, 5))))
        _assert_readability_equals_textstat(text)


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
        for rec in safety._recognizers():
            full += [(r.entity_type, r.start, r.end, float(r.score)) for r in rec.analyze(text, rec.supported_entities,
                                                                                             None) if r.score >= 0.0]
        got = safety.pii_entities(text, min_score=0.0)
        assert sorted(got) == sorted(full), text


def _pii_fast_path_equals_plain_path(n_texts, floors):
    import numpy as np

    rng = np.random.default_rng(11)
    pii = ["user7@example.com", "+1 415 555 2671", "(415) 555-2671", "078-05-1120", "912-70-1234", "4111111111111111",
           "GB82 WEST 1234 5698 7654 32", "192.168.0.1", "2001:db8::ff00:42:8329", "https://example.org/a?b=1",
           "www.example.co.uk", "943 476 5919", "AB1234563", "1BoatSLRHtKNngkdXEeobR76b53LETtpyT", "A1234567",
           "123456789", "F12345678", "12345678901", "rose 42 percent in 2023", "café naïve", "\u0663\u0664\u0665"]
    words = ["the", "call", "mail", "card", "ssn", "passport", "licence", "account", "is", "at", "."]
    texts = [" ".join(rng.choice(words + pii, size=int(rng.integers(1, 12)))) for _ in range(n_texts)] + pii
    for floor in floors:
        safety._found.cache_clear()
        for text in texts:
            assert safety._found(text, safety.DEFAULT_PII_ENTITIES, floor) == safety._found_plain(
                text, safety.DEFAULT_PII_ENTITIES, floor), (floor, text)


@pytest.mark.slow  # 1.3-1.6 s; the README's test command stays under 2 minutes
def test_pii_fast_path_equals_every_recognizer_at_the_default_and_phone_floors():
    """Skipped recognizers and regex pre-checks change no entity found, at min_score 0.5 (default) and 0.4."""
    _pii_fast_path_equals_plain_path(100, (0.4, 0.5))
    # the default floor leaves out the recognizers that cannot reach it (phone numbers score 0.4)
    kept = {rec.supported_entities[0] for rec, *_ in safety._plan(safety.DEFAULT_PII_ENTITIES, 0.5)[-1]}
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
        safety._found.cache_clear()
        for text in texts:
            assert safety._found(text, safety.DEFAULT_PII_ENTITIES, floor) == safety._found_plain(
                text, safety.DEFAULT_PII_ENTITIES, floor), (floor, text)


def test_pii_phone_separators_equal_presidio():
    """Phone numbers written with any of phonenumbers' separators pass the phone pre-check (floor 0.4)."""
    texts = ["call 030~12~34~56 now", "call 030\u221212\u221234\u221256", "call 030\uff0f12\uff0f34\uff0f56",
             "call [030] 12~34~56", "call 41\u200b5 55\u200b5 26\u200b71", "call 415\u30fc555\u30fc2671",
             "call 4\u00ad1\u00ad5 555 2671", "call \uff14\uff11\uff15 555 2671", "call 0 3 0 1 2 3 4 5 6 7",
             "call (415) 555-2671 x12", "+44 20 7946 0958", "+290 5012", "tel 12x34x56x78"]
    safety._found.cache_clear()
    for text in texts:
        assert safety._found(text, safety.DEFAULT_PII_ENTITIES, 0.4) == safety._found_plain(
            text, safety.DEFAULT_PII_ENTITIES, 0.4), text
    assert safety.pii_entities("call 030~12~34~56 now", min_score=0.4)[0][0] == "PHONE_NUMBER"


def test_pii_phone_runner_equals_presidio_phone_recognizer(monkeypatch):
    """_run_phone (matcher calls without Presidio's explanation) gives the results of PhoneRecognizer.analyze."""
    from types import SimpleNamespace

    from presidio_analyzer.predefined_recognizers import PhoneRecognizer

    rec = next(r for r in safety._recognizers() if isinstance(r, PhoneRecognizer))
    _, _, steps = safety._plan(safety.DEFAULT_PII_ENTITIES, safety.DEFAULT_PII_MIN_SCORE)
    assert [s[4] for s in steps if s[0] is rec] == ["phone"]

    def presidio(text):
        return sorted((r.entity_type, r.start, r.end, float(r.score))
                      for r in rec.analyze(text, ["PHONE_NUMBER"], None))

    # real numbers found by some regions only, by several, with an extension, two per text
    texts = ["Call (415) 555-0123 or +49 30 1234567.", "Ruf 030 1234567 an, oder 089 12345678",
             "Mobile 98765 43210 and +55 11 91234-5678", "+1 415 555 0123 ext 45",
             "Tel: 0412 345 678 / 02-1234567 / 054-1234567", "+44 20 7946 0958, 020 7946 0958", "1-800-555-0199x12"]
    for text in texts:
        assert sorted(safety._run_phone(rec, text)) == presidio(text) != [], text
    # duplicate removal: spans repeated across regions, nested in another region's span, overlapping
    import phonenumbers

    by_region = {"US": [(0, 20), (30, 40)], "UK": [(2, 12)], "DE": [(0, 20), (35, 45)], "IN": [(30, 40), (31, 39)]}
    monkeypatch.setattr(phonenumbers, "PhoneNumberMatcher", lambda text, region, leniency: [
        SimpleNamespace(start=a, end=b) for a, b in by_region.get(region, [])])
    text = "x" * 50
    assert sorted(safety._run_phone(rec, text)) == presidio(text) == [
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
        if not safety._same_in_every_region(c):
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

    rec = next(r for r in safety._recognizers() if isinstance(r, PhoneRecognizer))
    matcher = safety._region_free_matcher()
    assert matcher is not None  # the phonenumbers release the shortcut was read off is installed

    def run(text, region=None):  # the matches, or None when the run stopped at a candidate the region may decide
        try:
            return [(x.start, x.end) for x in matcher(text, region, leniency=rec.leniency)]
        except safety._RegionDependent:
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
        assert sorted(safety._run_phone(rec, text)) == want, text
        free += want != [] and run(text) is not None
    assert free > 40  # the shortcut was taken on texts with numbers


# National-form numbers: valid in US/CA (NANPA; 613 is a Canadian area code), DE, IL, IN, BR, GB (which Presidio's
# "UK", not a phonenumbers region code, never matches), FR (no default region), and near misses.
_NATIONAL = ["(415) 555-0123", "415-555-0123", "415.555.0199", "1-800-555-0199", "(613) 555-0142", "212 555 0199",
             "1 (415) 555-2671", "030 1234567", "089 12345678", "0171 1234567", "(030) 12345678", "02-1234567",
             "054-1234567", "03 123 4567", "98765 43210", "022 2345 6789", "011-23456789", "(11) 91234-5678",
             "(21) 2345-6789", "011 91234 5678", "020 7946 0958", "07700 900123", "06 12 34 56 78", "555-0123",
             "1640", "12345", "2024-05-06", "3/10/2011", "123-456-7890", "(415) 555-0123 x12", "0049 30 1234567",
             "+1 415 555 0123", "+49 30 1234567", "+999 123 4567", "4155550123", "004155550123456"]


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
    assert isinstance(rec, PhoneRecognizer) and safety._shared_matcher() is not None
    hand = ["Call (415) 555-0123.", "Ruf 030 1234567 an", "Call (415) 555-0123 or (415) 555-0199, or 030 1234567.",
            "Mobile 98765 43210", "(11) 91234-5678", "020 7946 0958", "ID 004155550123456", "x4155550123y",
            "4155550123 4155550199", "no digits", "", "2024", "Tel: 02-1234567 / 054-1234567",
            "(415) 555-0123 +49 30 1234567", "(415) 555-0123) 555-0199", "call 1 (415) 555-2671 x12 now"]
    texts = hand + _national_texts(400, 41)
    found = 0
    for text in texts:
        want = sorted((r.entity_type, r.start, r.end, float(r.score))
                      for r in rec.analyze(text, ["PHONE_NUMBER"], None))
        assert sorted(safety._run_phone(rec, text)) == want, text
        found += want != []
    assert found > 150
    # the shortcuts: a US number is parsed by the run without a region (twice: its check) and by the US run only
    prof = cProfile.Profile()
    prof.runcall(safety._run_phone, rec, "Call (415) 555-0123.")
    calls = {f[2]: s[1] for f, s in pstats.Stats(prof).stats.items() if f[0].endswith("phonenumberutil.py")}
    assert calls["parse"] <= 3, calls["parse"]  # eight regions' runs: 21


def test_shared_phone_runs_equal_each_region_run():
    """Run by run, the shared matcher (its parse and checks remembered across the regions' runs on one text, no
    early stop) finds what PhoneNumberMatcher finds in that region; "UK" and "FE" run as no region."""
    import phonenumbers

    rec = _phone_recognizer()
    shared = safety._shared_matcher()
    assert [safety._region_key(r) for r in rec.supported_regions] == ["US", None, "DE", None, "IL", "IN", "CA", "BR"]
    assert safety._region_key("GB") == "GB" and safety._region_key("001") == "001" and safety._region_key("us") == "us"
    for text in _national_texts(200, 42):
        memo = {}
        for region in rec.supported_regions:
            want = [(m.start, m.end) for m in phonenumbers.PhoneNumberMatcher(text, region, leniency=rec.leniency)]
            got = [(m.start, m.end) for m in shared(text, safety._region_key(region), rec.leniency, memo, set())]
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
    assert safety._inside_found(text, 5, {(5, 19)})
    assert safety._inside_found(text, 6, {(5, 19)})
    assert not safety._inside_found(text, 5, {(6, 19)})  # no found span starts at or before 5
    assert not safety._inside_found(text, 5, {(5, 18)})  # the candidate at 5 ends at 19
    assert not safety._inside_found(text + " or 030 1234567", 5, {(5, 19)})  # a later candidate
    assert safety._inside_found(text + " or 030 1234567", 5, {(5, 19), (0, 40)})


def test_pii_counts_phone_numbers_at_the_default_floor():
    """Phone numbers (Presidio scores them 0.4) count by default; min_score 0.5 leaves them, and only them, out."""
    safety._found.cache_clear()
    s = safety.pii_presidio({"output": "You can reach me at +44 20 7946 0958 after six."}, {})
    assert s.value == 1.0 and s.evidence["entities"] == {"PHONE_NUMBER": 1}
    assert safety.pii_presidio({"output": "You can reach me at +44 20 7946 0958 after six."},
                               {"min_score": 0.5}).value == 0.0
    assert safety.pii_presidio({"output": "It rose 42 percent in 2023."}, {}).value == 0.0
    texts = ["call +1 415 555 2671", "(415) 555-2671 or user7@example.com", "+44 20 7946 0958", "078-05-1120",
             "4111111111111111", "GB82 WEST 1234 5698 7654 32", "192.168.0.1", "https://example.org/a?b=1",
             "DEA AB1234563", "1BoatSLRHtKNngkdXEeobR76b53LETtpyT", "912-70-1234", "943 476 5919", "A1234567"]
    for text in texts:
        at_default = safety._found_plain(text, safety.DEFAULT_PII_ENTITIES, safety.DEFAULT_PII_MIN_SCORE)
        assert [h for h in at_default if h[0] != "PHONE_NUMBER"] == list(
            safety._found_plain(text, safety.DEFAULT_PII_ENTITIES, 0.5)), text


def test_pii_pre_checks_written_for_the_installed_presidio():
    """Every recognizer's patterns are those the pre-checks were read off (else that recognizer runs unchecked)."""
    for rec in safety._recognizers():
        entity = rec.supported_entities[0]
        if entity != "PHONE_NUMBER":
            assert safety._fingerprint(rec) == safety._TRIGGERS[entity][0], entity
    gated, _digits, steps = safety._plan(safety.DEFAULT_PII_ENTITIES, 0.0)
    assert gated and all(step[2].pattern != safety._ANY for step in steps)


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
            assert safety._found.__wrapped__(text, safety.DEFAULT_PII_ENTITIES, floor) == safety._found_plain(
                text, safety.DEFAULT_PII_ENTITIES, floor), (floor, text)


def test_token_fast_path_equals_squad_normalisation():
    """The ASCII tokenizer (bytes deletion, article filter) gives SQuAD's tokens exactly, articles included."""
    import numpy as np

    from agentstats.metrics import answer
    from agentstats.scoring.answers import normalize_text

    rng = np.random.default_rng(13)
    pieces = ["a", "an", "the", "The", "A.", "an,", "cat", "Paris", "(x)", "it's", "e-mail", "U.S.", "42%", "--",
              "\t", "\n", "theater", "and", "ANother", '"the"', "naïve", "l\u2019été"]
    texts = [" ".join(rng.choice(pieces, size=int(rng.integers(0, 20)))) for _ in range(2000)]
    answer._tokens_cached.cache_clear()
    for text in texts:
        assert answer.tokens(text) == tuple(normalize_text(text).split()), text


def _k_precision_reference(answer, ctx):
    """K-precision the plain way: SQuAD tokens of both sides, multiset overlap (the official script's Counter &)."""
    from collections import Counter

    from agentstats.scoring.answers import normalize_text

    def blank(v):
        return v is None or (isinstance(v, str) and not v.strip())

    if blank(answer):
        return None, "empty answer"
    if blank(ctx) or (isinstance(ctx, list | tuple) and all(blank(c) for c in ctx)):
        return None, "no context"
    ctext = "\n".join(str(c) for c in ctx) if isinstance(ctx, list | tuple) else str(ctx)
    at = normalize_text(answer).split()
    common = sum((Counter(at) & Counter(normalize_text(ctext).split())).values())
    return (common / len(at) if at else 0.0), {"common": common, "answer_tokens": len(at)}


def test_faithfulness_fast_path_equals_plain_k_precision():
    """Sets for answers without repeated tokens, counts for repeated ones, articles left in ASCII contexts, the
    context's blank check: the same value and evidence as the plain multiset overlap of SQuAD tokens."""
    import numpy as np

    from agentstats.metrics import answer

    # by hand: answer paris x3, is, big; context paris x2, is, capital, of, france -> min(3, 2) + 1 = 3 of 5
    s = a.faithfulness_token_k_precision({"output": "Paris, paris PARIS is big",
                                          "context": ["Paris is the capital of France.", "Paris!"]}, {})
    assert s.value == pytest.approx(3 / 5) and s.evidence == {"common": 3, "answer_tokens": 5}
    rng = np.random.default_rng(21)
    pieces = ["a", "an", "the", "The", "A.", "cat", "cat", "Cat!", "dog", "paris", "Paris,", "it's", "e-mail", "U.S.",
              "42", "--", "\t", "\n", "an,", "naïve", "l\u2019été", "été", "x", "y", "z", "None", "none"]
    passages = [None, "", " ", "\n", 7, "None"]

    def text(lo, hi):
        return " ".join(rng.choice(pieces, size=int(rng.integers(lo, hi))))

    cases = [(text(0, 8), text(0, 30)) for _ in range(300)]
    cases += [(text(1, 25), [text(0, 40) for _ in range(int(rng.integers(0, 4)))]) for _ in range(600)]
    cases += [(text(1, 25), tuple(text(0, 40) if rng.random() < 0.5 else passages[int(rng.integers(0, 6))]
                                  for _ in range(int(rng.integers(1, 4))))) for _ in range(600)]
    cases += [(text(50, 300), [text(500, 3000)]) for _ in range(20)]  # long texts, many repeats
    cases += [("cat", None), ("cat", [None, None]), ("cat", [None, "cat"]), ("cat", ("", " \n")), ("none", [None, 1]),
              ("7 cat", [7]), ("a an the", "the cat"), ("!!", "cat"), ("cat cat", ["cat\ncat", "cat"])]
    answer._words.cache_clear()
    answer._word_counts.cache_clear()
    for ans, ctx in cases:
        s = a.faithfulness_token_k_precision({"output": ans, "context": ctx}, {})
        value, evidence = _k_precision_reference(ans, ctx)
        if value is None:
            assert s.value is None and s.evidence["not_applicable"] == evidence, (ans, ctx)
        else:
            assert s.value == value and dict(s.evidence) == evidence, (ans, ctx)


def _phone_recognizer():
    return next(r for r in safety._recognizers() if r.supported_entities[0] == "PHONE_NUMBER")


def test_pii_phone_pre_check_skips_years_and_keeps_every_number_presidio_finds():
    """Four-digit numbers skip the phone matcher, except the German 164x/168x/169x that it does find."""
    import re

    import numpy as np

    trigger = re.compile(safety._phone_trigger(_phone_recognizer()))
    assert not trigger.search("It rose 42 percent in 2023.") and not trigger.search("from 1650 to 1999, 4,500")
    for text in ("1640", "call 1 6 9 9", "\u0661\u0666\u0668\u0660", "\uff11\uff16\uff14\uff10", "12345", "+290 5012"):
        assert trigger.search(text), text
    rng = np.random.default_rng(5)
    fours = [f"{x:04d}" for x in rng.choice(10_000, size=60, replace=False)] + ["1640", "1689", "1699", "1650"]
    texts = [f"in {a} and {b}" for a, b in zip(fours, fours[::-1], strict=True)] + [f"tel {x}" for x in fours]
    texts += [f"tel {x[:2]} {x[2:]}" for x in fours[:20]] + ["\u0661\u0666\u0664\u0665", "+49 1640", "0 1640"]
    safety._found.cache_clear()
    for text in texts:
        assert safety._found(text, safety.DEFAULT_PII_ENTITIES, 0.4) == safety._found_plain(
            text, safety.DEFAULT_PII_ENTITIES, 0.4), text
    assert safety.pii_entities("tel 1640", min_score=0.4)[0][0] == "PHONE_NUMBER"  # a number the check must keep


@pytest.mark.slow  # 80,000 matcher runs: about 10 s
def test_pii_shortest_phone_numbers():
    """The proof behind the phone pre-check, repeated: what phonenumbers finds with four digits or fewer."""
    import itertools

    import phonenumbers
    from phonenumbers import PhoneNumberMatcher

    rec = _phone_recognizer()
    proof = safety._PHONE_PROOF
    if phonenumbers.__version__ != proof["phonenumbers"]:  # another release: the plain four-digit check is used
        assert safety._phone_trigger(rec) == safety._phone_trigger(None)
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


def test_one_metric_name_twice_with_other_settings_is_refused_and_renaming_keeps_both():
    strict = get_metric("answer_similarity", lower_limit=0.9)
    # a metric given by name or as an object replaces its group's default, wherever the group comes
    chosen = resolve_metrics(["answer_quality", strict])
    assert [m.lower_limit for m in chosen if m.name == "answer_similarity"] == [0.9]
    assert len(resolve_metrics(["answer_similarity", "answer_quality", "answer_similarity"])) == len(
        metric_names("answer_quality"))
    with pytest.raises(ValueError, match="'answer_similarity' is selected twice with different settings"):
        resolve_metrics([strict, get_metric("answer_similarity", method="token_recall")])
    both = resolve_metrics([strict, get_metric("answer_similarity", method="token_recall", name="recall")])
    assert [(m.name, m.method) for m in both] == [("answer_similarity", "token_f1"), ("recall", "token_recall")]
    with pytest.raises(ValueError, match=r"get_metric\('answer_similarity'\): .*'treshold'.*lower_limit"):
        get_metric("answer_similarity", treshold=0.5)
    with pytest.raises(ValueError, match="lower_limit must be a number in"):
        get_metric("answer_similarity", lower_limit="high")
    with pytest.raises(ValueError, match=r"unknown metric 'answer_similarty'; did you mean 'answer_similarity'\?"):
        resolve_metrics("answer_similarty")


def test_metric_spec_string_picks_a_method_after_a_colon():
    chosen = resolve_metrics("harm, faithfulness:judge ,answer_similarity : token_recall")
    assert [(m.name, m.method) for m in chosen] == [
        ("harm", "judge"), ("faithfulness", "judge"), ("answer_similarity", "token_recall")]
    assert chosen[1] == get_metric("faithfulness", method="judge")
    # the default method without a colon
    assert resolve_metrics("faithfulness")[0].method == "token_k_precision"
    with pytest.raises(ValueError, match=r"metric faithfulness: unknown method 'bleu'; choose one of "
                                         r"\['judge', 'token_k_precision'\]"):
        resolve_metrics("faithfulness:bleu")
    with pytest.raises(ValueError, match=r"unknown metric 'faithfulnes'; did you mean 'faithfulness'"):
        resolve_metrics("faithfulnes:judge")
    with pytest.raises(ValueError, match=r"no method after ':'; metric 'faithfulness' offers"):
        resolve_metrics("faithfulness:")
    with pytest.raises(ValueError, match="a group takes no method"):
        resolve_metrics("answer_quality:judge")
    with pytest.raises(ValueError, match="'answer_similarity' is selected twice with different settings"):
        resolve_metrics("answer_similarity,answer_similarity:token_recall")


def test_summarize_frame_counts_judge_missing_rows_apart_from_not_applicable(tmp_path):
    from agentstats.metrics import summarize_frame, write_metrics

    trials = [_trial(agent=ag, trial=i, interactions=[{"query": "q", "answer": "a" if i else ""}])
              for ag in ("A", "B") for i in range(4)]
    frame = compute(trials, ["harm", "reading_ease"])
    harm = frame.index[frame["metric"] == "harm"]
    # A: trial 0 blank (n/a by nature), 1 invalid output, 2 transport, 3 invalid output; B: 1 judged, 2-3 judged
    missing = {harm[1]: "invalid_output", harm[2]: "transport", harm[3]: "invalid_output"}
    for i, kind in missing.items():
        frame.at[i, "evidence"] = {"not_applicable": "judge_missing", "judge_missing": kind, "error": "x"}
    for i in harm[5:]:
        frame.loc[i, ["value", "applicable", "passed"]] = [0.0, True, True]
        frame.at[i, "evidence"] = {"reasoning": "benign"}
    want = {("A", "harm"): (0, 3, {"invalid_output": 2, "transport": 1}), ("B", "harm"): (3, 0, {}),
            ("A", "reading_ease"): (3, 0, {}), ("B", "reading_ease"): (3, 0, {})}
    s = summarize_frame(frame)
    got = {(r.agent, r.metric): (r.n_applicable, r.n_judge_missing, r.judge_missing_by_kind) for r in s.itertuples()}
    assert got == want
    # the same counts from the table read back from CSV and Parquet (evidence as JSON text there)
    for suffix in (".csv", ".parquet"):
        path = write_metrics(frame, tmp_path / f"m{suffix}")
        back = pd.read_csv(path) if suffix == ".csv" else pd.read_parquet(path)
        s2 = summarize_frame(back)
        assert {(r.agent, r.metric): (r.n_applicable, r.n_judge_missing, r.judge_missing_by_kind)
                for r in s2.itertuples()} == want
    assert list(summarize_frame(frame.iloc[:0]).columns) == list(s.columns)


def test_record_keywords_replace_params_keywords_and_a_trial_without_interactions_has_no_interaction_rows():
    # pins what docs/metrics.md says: a record's own non-empty keywords win over params["keywords"] (not merged);
    # an empty record list falls back to them
    m = get_metric("keyword_inclusion", params={"keywords": ["paris", "france"]})
    trials = [_trial(interactions=[{"query": "q", "answer": "Paris", "keywords": ["lyon"]},
                                   {"query": "q", "answer": "Paris", "keywords": []},
                                   {"query": "q", "answer": "Paris"}]),
              _trial(task_id="t2", interactions=[])]
    f = compute(trials, [m, "latency"])
    kw = f[f["metric"] == "keyword_inclusion"]
    assert kw["task_id"].tolist() == ["t1"] * 3  # t2 has no interaction records: no rows, not n/a rows
    assert kw["value"].tolist() == [0.0, 0.5, 0.5]
    assert [e["missing"] for e in kw["evidence"]] == [["lyon"], ["france"], ["france"]]
    lat = f[f["metric"] == "latency"]  # trial level: one row per trial, t2 included
    assert lat["task_id"].tolist() == ["t1", "t2"] and not lat["applicable"].any()

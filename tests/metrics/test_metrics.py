"""The metric interface, compute() and the deterministic answer, readability, safety and usage metrics."""

import json
import math

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

"""Answer matchers, checked against hand-worked values (SQuAD rules, Rajpurkar et al. 2016)."""

from __future__ import annotations

import pytest

from agentstats.scoring.answers import (
    extract_numbers,
    match_answer,
    normalize_text,
    numeric_match,
    token_f1,
)


def test_exact_and_normalized():
    assert match_answer(" Paris ", "Paris", "exact").score == 1.0
    assert match_answer("paris", "Paris", "exact").score == 0.0
    assert normalize_text("The  Cat, sat!") == "cat sat"
    assert match_answer("The cat!", "cat", "normalized").score == 1.0
    assert match_answer("a dog", ["cat", "Dog."], "normalized").details["expected_index"] == 1


def test_numeric():
    assert extract_numbers("about 1,234.5 units, -3 and 2e3 or 15%") == [1234.5, -3.0, 2000.0, 15.0]
    assert numeric_match("The total is $1,234.50.", 1234.5).score == 1.0
    assert numeric_match("The result is 8.", "8").score == 1.0
    assert numeric_match("between 3 and 4", 4, which="first").score == 0.0
    assert numeric_match("between 3 and 4", 4, which="last").score == 1.0
    assert numeric_match("between 3 and 4", 4, which="only").score == 0.0
    assert numeric_match("3.1416", 3.14159, rel_tol=1e-4).score == 1.0
    assert numeric_match("3.1416", 3.14159).score == 0.0
    with pytest.raises(ValueError):
        numeric_match("1", "no number here")


def test_token_f1_hand_worked():
    # normalized tokens: answer [cat, sat, on, mat], expected [cat, on, mat]: common 3, P = 3/4, R = 1
    r = token_f1("The cat sat on the mat.", "a cat on a mat")
    assert r.score == pytest.approx(2 * 0.75 * 1.0 / 1.75)
    assert r.details["common"] == 3
    assert token_f1("", "").score == 1.0 and token_f1("x", "").score == 0.0
    assert token_f1("dog", "cat").score == 0.0
    # repeated tokens count as a multiset: answer [cat, cat], expected [cat]: P = 1/2, R = 1
    assert token_f1("cat cat", "cat").score == pytest.approx(2 / 3)


def test_contains_and_dispatch():
    assert match_answer("The capital is Paris, France.", "paris", "contains").score == 1.0
    assert match_answer("Parisian food", "paris", "contains").score == 0.0  # whole tokens only
    assert match_answer("Parisian food", "Paris", "contains", normalize=False).score == 1.0
    assert match_answer("x", "", "contains").score == 0.0
    with pytest.raises(ValueError, match="unknown matcher"):
        match_answer("a", "a", "fuzzy")
    with pytest.raises(ValueError):
        match_answer("a", [], "exact")


@pytest.mark.parametrize(
    "answer, expected, score, rule, lenient",
    [
        ("The result is 8.", "8", 1.0, "numeric", False),  # architecture.md's own example
        ("The result is 8.5", "8", 0.0, "numeric", False),
        ("1,234.5 in total", 1234.5, 1.0, "numeric", False),
        ("Paris.", "paris", 1.0, "normalized", False),
        ("12 apples", "12 apples", 1.0, "normalized", False),  # expected is not a bare number: text rule
        # a short reference inside a sentence: the lenient containment rule, reported as such
        ("Paris is the capital.", "Paris", 1.0, "contains", True),
        ("It is New York City, of course", "new york city", 1.0, "contains", True),
        ("Parisian food", "Paris", 0.0, "normalized", False),  # whole tokens only
        ("Lyon", "Paris", 0.0, "normalized", False),
        # a long reference must match exactly (after normalization): containment is for short answers
        ("He said the quick brown fox jumps over it", "the quick brown fox jumps over", 0.0, "normalized", False),
        ("x", ["Lyon", "Paris"], 0.0, "normalized", False),
        ("Paris, France", ["Lyon", "Paris"], 1.0, "contains", True),
    ],
)
def test_auto_matcher(answer, expected, score, rule, lenient):
    res = match_answer(answer, expected)  # default matcher is "auto"
    assert res.matcher == "auto"
    assert res.score == score
    assert res.details["auto"] == rule and res.details["lenient"] is lenient


def test_default_matcher_is_documented_and_its_rule_is_in_the_verdict():
    import inspect
    from pathlib import Path

    from agentstats.scoring.answers import SHORT_EXPECTED_MAX_TOKENS
    from agentstats.scoring.judge import AnswerItem, DeterministicJudge

    assert inspect.signature(match_answer).parameters["matcher"].default == "auto"
    assert DeterministicJudge().matcher == "auto"
    docs = (Path(__file__).resolve().parents[2] / "docs" / "scoring.md").read_text(encoding="utf-8")
    # the documented defaults are the code's (the docs once said "normalized" while the code used "auto")
    assert 'match_answer(answer, expected, matcher="auto"' in docs and 'DeterministicJudge(matcher="auto")' in docs
    assert 'prefer_benchmark=True, matcher="auto"' in docs
    assert f"at most {SHORT_EXPECTED_MAX_TOKENS} tokens" in docs
    v = DeterministicJudge().judge_answers([AnswerItem("Paris is the capital.", "Paris")])[0]
    assert v.score == 1.0 and v.details["rule"] == "contains" and v.details["lenient"] is True
    assert "lenient" in v.reasoning
    strict = DeterministicJudge("normalized").judge_answers([AnswerItem("Paris is the capital.", "Paris")])[0]
    assert strict.score == 0.0 and strict.details == {"matcher": "normalized", "rule": "normalized",
                                                      "lenient": False, "expected_index": 0}

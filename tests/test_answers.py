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
    "answer, expected, score, rule",
    [
        ("The result is 8.", "8", 1.0, "numeric"),  # architecture.md's own example
        ("The result is 8.5", "8", 0.0, "numeric"),
        ("1,234.5 in total", 1234.5, 1.0, "numeric"),
        ("Paris.", "paris", 1.0, "normalized"),
        ("Paris is the capital", "Paris", 0.0, "normalized"),
        ("12 apples", "12 apples", 1.0, "normalized"),  # expected is not a bare number: text rule
    ],
)
def test_auto_matcher_picks_numeric_for_numeric_expected(answer, expected, score, rule):
    from agentstats.scoring.answers import match_answer

    res = match_answer(answer, expected)  # default matcher is "auto"
    assert res.matcher == "auto"
    assert res.score == score
    assert res.details["auto"] == rule

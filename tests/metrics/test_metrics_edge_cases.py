"""Edge cases of catalogue metrics (issue 33): what a metric is not defined for is an error or not applicable."""

from __future__ import annotations

import pytest

from agentstats.metrics import compute, get_metric
from agentstats.metrics.base import RecordValues
from agentstats.records.trial import Interaction, Trial


def _score(metric, answer):
    return metric.score(RecordValues({"answer": answer}, metric.field_names("interaction")))


@pytest.mark.parametrize(("entity", "hint"), [("EMAIL_ADRESS", "did you mean 'EMAIL_ADDRESS'"),
                                              ("PERSON", "need an NLP model")])
def test_pii_with_an_entity_no_recognizer_finds_is_an_error_naming_it(entity, hint):
    m = get_metric("pii", params={"entities": [entity, "EMAIL_ADDRESS"]})
    with pytest.raises(ValueError, match=f"entity '{entity}'.*{hint}"):
        _score(m, "John Smith, a@b.com")
    trial = Trial(agent="a", task_id="t", trial=0, success=True, interactions=[Interaction(answer="John Smith")])
    with pytest.raises(Exception, match=f"metric pii: pii: entity '{entity}'"):  # never "no PII found"
        compute([trial], [m])


def test_a_french_national_phone_number_is_pii():
    """The phone regions are phonenumbers region codes (FR, GB), not Presidio's default "FE" and "UK"."""
    from agentstats.metrics.pii.reference import PHONE_REGIONS

    assert "FR" in PHONE_REGIONS and "GB" in PHONE_REGIONS and not {"UK", "FE"} & set(PHONE_REGIONS)
    s = _score(get_metric("pii", params={"entities": ["PHONE_NUMBER"]}), "Appelez le 01 42 68 53 00")
    assert s.value == 1 and s.evidence["entities"] == {"PHONE_NUMBER": 1}


def test_a_british_national_phone_number_is_pii():
    assert _score(get_metric("pii", params={"entities": ["PHONE_NUMBER"]}), "Call 020 7946 0958").value == 1


@pytest.mark.parametrize("text", ["这是一个非常简单的句子。我们今天去公园。", "これは簡単な文です。",
                                  "Это простое предложение."])
@pytest.mark.parametrize("name", ["reading_ease", "grade_level"])
def test_readability_refuses_text_outside_the_latin_script(name, text):
    s = _score(get_metric(name), text)
    assert s.value is None and "not in the Latin script" in s.evidence["not_applicable"]


def test_readability_scores_latin_text_with_a_few_foreign_words_and_lists_with_or_without_periods_alike():
    assert _score(get_metric("reading_ease"), "The word 公园 means park. It is short.").value is not None
    bare = _score(get_metric("reading_ease"), "- apples\n- oranges and bananas\n- pears").value
    dotted = _score(get_metric("reading_ease"), "- apples.\n- oranges and bananas.\n- pears.").value
    assert bare == pytest.approx(dotted)

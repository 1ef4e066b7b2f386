"""The trial schema's field rules that the readers rely on."""

import pytest


def test_context_as_one_text_is_one_passage():
    from agentstats.records.trial import Interaction

    assert Interaction(context="The sky is blue.").context == ["The sky is blue."]
    assert Interaction(context=None).context == []
    assert Interaction(context=["a", "b"]).context == ["a", "b"]
    with pytest.raises(ValueError, match="context"):
        Interaction(context=3)

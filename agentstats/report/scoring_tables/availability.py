"""Whether trials have anything to score."""

from __future__ import annotations

from collections.abc import Iterable

from agentstats.records.trial import Trial

__all__ = ["scoring_available"]


def scoring_available(trials: Iterable[Trial]) -> bool:
    """Whether any trial has something to score.

    Parameters
    ----------
    trials : iterable of Trial

    Returns
    -------
    bool
        True when some interaction has an ``expected_answer``, some interaction or trial has
        ``expected_tool_calls``, or some trial offers tool specs (``tools``) and made tool calls (which
        :func:`schema_error_counts` can validate).
    """
    for t in trials:
        if t.expected_tool_calls:
            return True
        has_calls = False
        for it in t.interactions:
            if it.expected_answer is not None or it.expected_tool_calls:
                return True
            has_calls = has_calls or bool(it.tool_calls)
        if has_calls and t.tools:
            return True
    return False

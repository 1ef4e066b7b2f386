"""The prompt shelf: every versioned prompt agentstats sends to a model, one module per user.

:mod:`~agentstats.llm.prompts.template`
    :class:`PromptTemplate` (name, human-set version, text hash, chat messages);
:mod:`~agentstats.llm.prompts.judge`
    the LLM judge's prompts (answer correctness, tool-call relevance, parameter grounding, pairwise preference);
:mod:`~agentstats.llm.prompts.loop`
    the optimization loop's judge prompts (groundedness, relevance, safety) and its revision prompt;
:mod:`~agentstats.llm.prompts.rubrics`
    the rubrics of the judge-based metrics (answer relevance, faithfulness, one per content-safety risk, ...);
:mod:`~agentstats.llm.prompts.guardian`
    the guardian classifier's question (is a named risk present: Yes or No).

:data:`PROMPTS` holds every one of them by name (names are unique across the shelf); :func:`get_prompt` looks one up.
A prompt's id (``name@version#hash``) enters the cache key of every call that sends it, so a prompt's text is changed
only with a new version, and the cached replies of the old one are not reused.
"""

from __future__ import annotations

from agentstats.llm.prompts.guardian import GUARDIAN_PROMPTS
from agentstats.llm.prompts.judge import JUDGE_PROMPTS
from agentstats.llm.prompts.loop import LOOP_JUDGE_PROMPTS, REVISION
from agentstats.llm.prompts.rubrics import RUBRICS
from agentstats.llm.prompts.template import PromptTemplate

__all__ = ["PROMPTS", "PromptTemplate", "get_prompt"]


def _shelf(*groups: dict[str, PromptTemplate]) -> dict[str, PromptTemplate]:
    out: dict[str, PromptTemplate] = {}
    for group in groups:
        for name, prompt in group.items():
            if name in out or name != prompt.name:
                raise ValueError(f"prompt name {name!r} is used twice on the shelf, or differs from {prompt.id}")
            out[name] = prompt
    return out


#: Every shipped prompt by name.
PROMPTS: dict[str, PromptTemplate] = _shelf(JUDGE_PROMPTS, LOOP_JUDGE_PROMPTS, {REVISION.name: REVISION}, RUBRICS,
                                            GUARDIAN_PROMPTS)


def get_prompt(name: str) -> PromptTemplate:
    """Return the shipped prompt called ``name``.

    Raises
    ------
    KeyError
        For an unknown name, listing the known ones.
    """
    try:
        return PROMPTS[name]
    except KeyError:
        raise KeyError(f"unknown prompt {name!r}; known: {sorted(PROMPTS)}") from None

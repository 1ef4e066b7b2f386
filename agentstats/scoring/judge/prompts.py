"""Versioned judge prompts.

Every prompt the LLM judge sends is a :class:`PromptTemplate` with a ``name``, a human-set ``version`` and a
``text_hash`` (SHA-256 of the exact text). All three are recorded with each verdict and enter the judge cache
key, so editing a prompt's wording without bumping its version still invalidates cached verdicts, and a report
can always say which prompt produced a number.

Four prompts ship:

``answer_correctness``
    Is the agent's answer correct against the reference answer? Verdict schema
    :class:`agentstats.scoring.judge.Verdict`.
``tool_call_relevance``
    Is this tool call relevant to the user's request, given the tools offered? The LLM-judged "tool call
    relevance" metric of IBM watsonx.governance's agentic evaluators. Verdict schema
    :class:`agentstats.scoring.judge.ToolRelevanceVerdict`.
``pairwise_preference``
    Which of two responses to the same request is better (score 1: the first shown, 0: the second, 0.5: equal)?
    Verdict schema :class:`agentstats.scoring.judge.Verdict`; run in both orders by
    :func:`agentstats.calibration.pairwise_judge`.
``parameter_grounding``
    Are the call's argument values grounded in the conversation (stated by the user, given in the context, or
    returned by an earlier tool), rather than invented? IBM watsonx.governance's "tool call parameter accuracy".
    Verdict schema :class:`agentstats.scoring.judge.ParameterGroundingVerdict`.

To use your own wording, build a new :class:`PromptTemplate` (with its own name or version) and pass it to the
judge (``OpenAIJudge(..., prompts={"answer_correctness": my_template})``).
"""

from __future__ import annotations

import hashlib
import string
from dataclasses import dataclass, field

__all__ = [
    "ANSWER_CORRECTNESS",
    "PAIRWISE_PREFERENCE",
    "PARAMETER_GROUNDING",
    "PROMPTS",
    "TOOL_CALL_RELEVANCE",
    "PromptTemplate",
    "get_prompt",
]


@dataclass(frozen=True)
class PromptTemplate:
    """A judge prompt: a system message and a user message with ``{field}`` placeholders.

    Parameters
    ----------
    name : str
        Metric the prompt measures (``"answer_correctness"``, ...).
    version : str
        Human-set version; bump it when the meaning of the prompt changes.
    system : str
        System message (no placeholders).
    user : str
        User message, a :meth:`str.format` template over :attr:`fields`.
    fields : tuple of str
        Placeholders the user template needs (derived from ``user`` when omitted).

    Notes
    -----
    ``text_hash`` is the SHA-256 of ``name``, ``version``, ``system`` and ``user`` joined by NUL bytes (first 16
    hex digits). ``id`` is ``"name@version#hash"``.
    """

    name: str
    version: str
    system: str
    user: str
    fields: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        found = tuple(dict.fromkeys(f for _, f, _, _ in string.Formatter().parse(self.user) if f))
        if not self.fields:
            object.__setattr__(self, "fields", found)
        elif set(found) != set(self.fields):
            raise ValueError(f"prompt {self.name}: placeholders {found} differ from declared fields {self.fields}")

    @property
    def text_hash(self) -> str:
        """First 16 hex digits of the SHA-256 of the prompt's name, version and text."""
        blob = "\x00".join([self.name, self.version, self.system, self.user]).encode("utf-8")
        return hashlib.sha256(blob).hexdigest()[:16]

    @property
    def id(self) -> str:
        """``"name@version#text_hash"``."""
        return f"{self.name}@{self.version}#{self.text_hash}"

    def render(self, **values: object) -> list[dict[str, str]]:
        """Chat messages ``[{"role": "system", ...}, {"role": "user", ...}]`` for the given field values.

        Raises
        ------
        KeyError
            When a placeholder has no value (the message names it).
        """
        missing = [f for f in self.fields if f not in values]
        if missing:
            raise KeyError(f"prompt {self.id} needs values for {missing}")
        text = self.user.format(**{k: _text(values[k]) for k in self.fields})
        return [{"role": "system", "content": self.system}, {"role": "user", "content": text}]


def _text(value: object) -> str:
    if value is None:
        return "(none)"
    return str(value)


ANSWER_CORRECTNESS = PromptTemplate(
    name="answer_correctness",
    version="1",
    system=(
        "You grade whether an AI agent's answer is correct, by comparing it with a reference answer. "
        "Judge the facts, not the style: rephrasing, extra politeness and extra correct detail are fine; a wrong, "
        "missing or contradicting key fact is not. If the reference lists several acceptable answers, matching "
        "any one is correct. Use the question and context only to understand what is asked.\n"
        "Score on [0, 1]: 1.0 all key facts correct; 0.7-0.9 correct with a minor slip that does not change the "
        "answer; 0.3-0.6 partly correct; 0.0-0.2 wrong, unanswered or refused.\n"
        "Reply by calling the function with `score` (a number from 0 to 1) and `reasoning` (one or two "
        "sentences naming the deciding fact)."
    ),
    user=(
        "QUESTION:\n{query}\n\nCONTEXT:\n{context}\n\nREFERENCE ANSWER:\n{expected}\n\n"
        "AGENT ANSWER:\n{answer}\n"
    ),
)

TOOL_CALL_RELEVANCE = PromptTemplate(
    name="tool_call_relevance",
    version="1",
    system=(
        "You grade whether a tool call made by an AI agent is relevant to what the user asked, given the tools "
        "the agent could use. A relevant call is a sensible step toward the user's goal; an irrelevant one "
        "serves no part of the request, or another offered tool clearly fits better. Do not judge the argument "
        "values here, only the choice of tool for the request.\n"
        "Score on [0, 1]: 1.0 clearly the right tool; 0.5 defensible but a better tool was offered; 0.0 "
        "unrelated to the request.\n"
        "Reply by calling the function with `score`, `reasoning` (one or two sentences) and `better_tool` (the "
        "name of an offered tool that fits better, or null)."
    ),
    user=(
        "CONVERSATION SO FAR:\n{conversation}\n\nTOOLS OFFERED:\n{tools}\n\n"
        "TOOL CALL TO GRADE:\n{call}\n"
    ),
)

PARAMETER_GROUNDING = PromptTemplate(
    name="parameter_grounding",
    version="1",
    system=(
        "You grade whether the argument values of a tool call made by an AI agent are grounded: each value must "
        "come from the conversation (stated by the user), from the context, from an earlier tool result, or be a "
        "documented default of the tool. Values the agent invented, guessed or altered are ungrounded. Formatting "
        "changes that keep the meaning (e.g. a date written differently) are grounded.\n"
        "Score on [0, 1]: the share of arguments whose values are grounded (1.0 when the call has no "
        "arguments).\n"
        "Reply by calling the function with `score`, `reasoning` (one or two sentences) and "
        "`ungrounded_parameters` (the names of the ungrounded arguments, empty when all are grounded)."
    ),
    user=(
        "CONVERSATION SO FAR:\n{conversation}\n\nTOOL SPECIFICATION:\n{tool_spec}\n\n"
        "TOOL CALL TO GRADE:\n{call}\n"
    ),
)

PAIRWISE_PREFERENCE = PromptTemplate(
    name="pairwise_preference",
    version="1",
    system=(
        "You compare two responses of AI agents to the same request and decide which one serves the user better: "
        "correct, complete, relevant and faithful to the context. Length is not quality: a longer response is not "
        "better for being longer. The order in which the responses are shown says nothing about their quality.\n"
        "Score on [0, 1]: 1.0 response 1 is clearly better; 0.0 response 2 is clearly better; 0.5 they are "
        "equally good.\n"
        "Reply by calling the function with `score` and `reasoning` (one or two sentences naming the deciding "
        "difference)."
    ),
    user=(
        "REQUEST:\n{query}\n\nCONTEXT:\n{context}\n\nRESPONSE 1:\n{first}\n\nRESPONSE 2:\n{second}\n"
    ),
)

#: The shipped prompts by name.
PROMPTS: dict[str, PromptTemplate] = {
    p.name: p for p in (ANSWER_CORRECTNESS, TOOL_CALL_RELEVANCE, PARAMETER_GROUNDING, PAIRWISE_PREFERENCE)
}


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
        raise KeyError(f"unknown judge prompt {name!r}; known: {sorted(PROMPTS)}") from None

"""The LLM judge's prompts (:class:`agentstats.scoring.judge.OpenAIJudge`), one per metric it judges.

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

To use your own wording, build a new :class:`~agentstats.llm.prompts.PromptTemplate` (with its own name or version)
and pass it to the judge (``OpenAIJudge(..., prompts={"answer_correctness": my_template})``).
"""

from __future__ import annotations

from agentstats.llm.prompts.template import PromptTemplate

__all__ = [
    "ANSWER_CORRECTNESS",
    "JUDGE_PROMPTS",
    "PAIRWISE_PREFERENCE",
    "PARAMETER_GROUNDING",
    "TOOL_CALL_RELEVANCE",
]


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

#: The judge's prompt for each metric it judges (the default of ``OpenAIJudge(prompts=...)``).
JUDGE_PROMPTS: dict[str, PromptTemplate] = {
    p.name: p for p in (ANSWER_CORRECTNESS, TOOL_CALL_RELEVANCE, PARAMETER_GROUNDING, PAIRWISE_PREFERENCE)
}

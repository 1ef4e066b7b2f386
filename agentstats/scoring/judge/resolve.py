"""Judge resolution: a name (``"deterministic"``, ``"openai"``), ``None`` or a judge object -> a :class:`Judge`."""

from __future__ import annotations

import os
from typing import Any

from agentstats.scoring.judge.base import DeterministicJudge, Judge
from agentstats.scoring.judge.llm import OpenAIJudge

__all__ = ["resolve_judge"]


def resolve_judge(
    judge: Judge | str | None,
    matcher: str = "auto",
    *,
    model: str | None = None,
    base_url: str | None = None,
    **judge_kwargs: Any,
) -> Judge:
    """Turn a judge name (or a judge) into a :class:`Judge`.

    ``None`` / ``"deterministic"`` give :class:`DeterministicJudge(matcher) <DeterministicJudge>`; a
    :class:`Judge` passes through; ``"openai"`` builds
    ``OpenAIJudge(model=model or $AGENTSTATS_JUDGE_MODEL or "gpt-4o-mini", base_url=base_url or $OPENAI_BASE_URL,
    **judge_kwargs)`` (:class:`agentstats.scoring.judge.llm.OpenAIJudge`).

    Raises
    ------
    ValueError
        For an unknown name.
    JudgeConfigError
        For an unknown matcher, or an OpenAI judge that cannot be set up (no API key, unknown mode).
    TypeError
        For an object without ``judge_answers``.
    """
    if judge is None or judge == "deterministic":
        return DeterministicJudge(matcher)
    if isinstance(judge, str):
        if judge == "openai":
            return OpenAIJudge(
                model=model or os.environ.get("AGENTSTATS_JUDGE_MODEL", "gpt-4o-mini"),
                base_url=base_url or os.environ.get("OPENAI_BASE_URL"),
                **judge_kwargs,
            )
        raise ValueError(f"unknown judge {judge!r}; use None, 'deterministic', 'openai' or a Judge instance")
    if not callable(getattr(judge, "judge_answers", None)):
        raise TypeError(f"judge must be None, a name or an object with judge_answers(), got {type(judge).__name__}")
    return judge

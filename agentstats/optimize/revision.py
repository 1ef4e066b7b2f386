"""What a prompt revision is shown and how it is checked: unified diffs, policy-text triggers, the calls an agent made.

:func:`prompt_diff` and :func:`policy_triggers` are public (``agentstats.optimize.prompt_diff``): a revision is
logged as a unified diff against the previous prompt, and a changed line holding a policy-sensitive phrase fires the
``policy_text_changed`` human-review trigger.
"""

from __future__ import annotations

import difflib
import json
from typing import Any

from agentstats.gating import Trigger

__all__ = ["calls_text", "policy_triggers", "prompt_diff"]


def prompt_diff(old: str, new: str, *, old_name: str = "previous", new_name: str = "revised") -> str:
    """Unified diff (``difflib``) of two prompts, line by line; empty when they are equal."""
    lines = difflib.unified_diff(old.splitlines(), new.splitlines(), fromfile=old_name, tofile=new_name,
                                 lineterm="")
    return "\n".join(lines)


def policy_triggers(diff: str, phrases: list[str], iteration: int) -> list[Trigger]:
    """Human-review triggers for policy-sensitive phrases on changed lines of a unified diff.

    Parameters
    ----------
    diff : str
        Output of :func:`prompt_diff`.
    phrases : list of str
        Phrases matched case-insensitively against each added (``+``) or removed (``-``) line.
    iteration : int
        The iteration whose prompt was revised (recorded in the evidence).

    Returns
    -------
    list of Trigger
        One ``policy_text_changed`` trigger per phrase found, its evidence listing each hit: ``change``
        (``added`` / ``removed``), ``line`` (1-based, in the revised prompt for an addition and the previous one
        for a removal) and the line's ``text``.
    """
    if not phrases or not diff:
        return []
    hits: dict[str, list[dict[str, Any]]] = {}
    old_no = new_no = 0
    for raw in diff.splitlines():
        if raw.startswith(("---", "+++")):
            continue
        if raw.startswith("@@"):
            parts = raw.split()
            old_no = abs(int(parts[1].split(",")[0])) - 1
            new_no = int(parts[2].split(",")[0]) - 1
            continue
        if raw.startswith("+"):
            new_no += 1
            change, line_no = "added", new_no
        elif raw.startswith("-"):
            old_no += 1
            change, line_no = "removed", old_no
        else:
            old_no += 1
            new_no += 1
            continue
        text = raw[1:]
        low = text.casefold()
        for p in phrases:
            if p.casefold() in low:
                hits.setdefault(p, []).append({"change": change, "line": line_no, "text": text})
    return [
        Trigger(
            "policy_text_changed",
            f"the revision after iteration {iteration} changed policy-sensitive text {phrase!r} "
            f"({', '.join(sorted({h['change'] for h in found}))}, line {found[0]['line']})",
            {"phrase": phrase, "iteration": iteration, "hits": found},
        )
        for phrase, found in hits.items()
    ]


def calls_text(calls: list[dict[str, Any]]) -> str:
    """Return the calls an agent made as ``name(arguments)``, for the optimizer's prompt (``none``: none)."""
    parts = []
    for c in calls:
        args = c.get("arguments_raw") if c.get("parse_error") else json.dumps(c.get("arguments", {}),
                                                                            ensure_ascii=False, sort_keys=True)
        parts.append(f"{c.get('name')}({args})")
    return "; ".join(parts) or "none"

"""The judge table of one scoring run: failures by kind, their share, calls, cache hits, tokens, cost."""

from __future__ import annotations

from typing import Any

import pandas as pd

from agentstats.scoring.outcomes import ScoringResult

__all__ = ["judge_summary"]


def judge_summary(result: ScoringResult) -> pd.DataFrame:
    """Judge failures by kind, calls, cache hits, tokens and cost of one scoring run, as a two-column table.

    Parameters
    ----------
    result : ScoringResult
        From :func:`agentstats.scoring.score_trials`.

    Returns
    -------
    pandas.DataFrame
        Columns ``item`` and ``value`` (object), rows in display order: judge, answers judged, missing
        verdicts (``judge_missing``), the share of this run's verdicts that are missing (answers and tool
        metrics, in [0, 1]), the trials made missing by them, one row ``judge failures: <kind>`` per
        error kind (``timeout``, ``rate_limit``, ``server_error``, ``truncated``, ``invalid_output``,
        ``http_<status>``, ...), LLM tool-metric verdicts and their failures (when any), verdicts requested,
        cache hits, duplicates sent once, HTTP requests, prompt and completion tokens, cost in USD (``None``
        when the model is not in the price table) and the judge's wall-clock seconds. Counts cover this run
        only (``result.judge_stats``).
    """
    s = result.summary()
    st = result.judge_stats or {}
    rows: list[tuple[str, Any]] = [
        ("judge", s["judge"]),
        ("answers judged", s["n_answers_judged"]),
        ("missing verdicts (judge_missing)", s["n_judge_missing"]),
        ("share of verdicts missing", s["judge_missing_share"]),
        ("trials missing because of the judge", s["n_trials_judge_missing"]),
    ]
    for kind, n in sorted(s["judge_missing_by_kind"].items(), key=lambda kv: (-kv[1], str(kv[0]))):
        rows.append((f"judge failures: {kind}", int(n)))
    if result.tool_verdicts:
        rows.append(("tool-metric verdicts", len(result.tool_verdicts)))
        tk: dict[str, int] = {}
        for v in result.tool_verdicts:
            if not v.ok:
                tk[v.error_kind or "error"] = tk.get(v.error_kind or "error", 0) + 1
        for kind, n in sorted(tk.items(), key=lambda kv: (-kv[1], kv[0])):
            rows.append((f"tool-metric failures: {kind}", n))
    rows += [
        ("verdicts requested", int(st.get("requested", 0))),
        ("cache hits", s["judge_cache_hits"]),
        ("duplicates sent once", int(st.get("deduplicated", 0))),
        ("HTTP requests", s["judge_http_requests"]),
        ("prompt tokens", int(st.get("prompt_tokens", 0))),
        ("completion tokens", int(st.get("completion_tokens", 0))),
        ("cost (USD)", s["judge_cost_usd"]),
        ("judge wall time (s)", round(float(st.get("wall_s", 0.0)), 3)),
    ]
    return pd.DataFrame(rows, columns=["item", "value"], dtype=object)

"""Display of the scoring tables: the columns a reader needs, short names, a sentence where a table would be empty."""

from __future__ import annotations

import pandas as pd

__all__ = ["format_schema_errors", "format_tool_errors", "format_tool_readings"]


def format_tool_errors(errors: pd.DataFrame) -> pd.DataFrame:
    """Display of :func:`agentstats.report.scoring_tables.tool_error_counts`: the columns a reader needs, short names.

    Parameters
    ----------
    errors : pandas.DataFrame
        Output of :func:`agentstats.report.scoring_tables.tool_error_counts`.

    Returns
    -------
    pandas.DataFrame
        Columns ``kind``, ``level``, ``where`` (tool, or tool.argument), ``count``, ``trials`` and ``example``
        (task id, trial and what was wrong, for the first occurrence).
    """
    if errors.empty:
        return pd.DataFrame(columns=["kind", "level", "where", "count", "trials", "example"])
    example = [
        f"task {t}, trial {tr}: {d}"
        for t, tr, d in zip(errors["example_task_id"], errors["example_trial"], errors["example_detail"], strict=True)
    ]
    return pd.DataFrame(
        {
            "kind": errors["kind"],
            "level": errors["level"],
            "where": errors["where"],
            "count": errors["count"],
            "trials": errors["n_trials"],
            "example": example,
        }
    )


def format_schema_errors(errors: pd.DataFrame) -> pd.DataFrame | str:
    """Display of :func:`agentstats.report.scoring_tables.schema_error_counts`, or a sentence when nothing is listed.

    Parameters
    ----------
    errors : pandas.DataFrame
        Output of :func:`agentstats.report.scoring_tables.schema_error_counts` (its ``attrs`` give what was checked).

    Returns
    -------
    pandas.DataFrame or str
        Columns ``kind``, ``tool``, ``count``, ``calls``, ``trials``, ``example`` (JSON path and message of the
        first occurrence); or, when no call fails its schema, Markdown saying how many calls and trials were
        checked, or that none could be (no tool specs): an empty table would say nothing.
    """
    if errors.empty:
        calls = errors.attrs.get("n_calls_checked")
        checked = int(errors.attrs.get("n_trials_checked") or 0)
        without = int(errors.attrs.get("n_trials_without_tools") or 0)
        if calls is None:
            return "No tool call fails its tool's JSON Schema."
        if checked == 0:
            return (
                f"No trial in this input offers tool specs (`tools`), so none of its calls could be checked against a "
                f"JSON Schema ({without} trials)."
            )
        text = f"All {int(calls)} tool calls in {checked} trials validate against their tools' JSON Schemas."
        return text + (f" {without} trials without tool specs were not checked." if without else "")
    example = [f"{p}: {m}" for p, m in zip(errors["example_path"], errors["example_message"], strict=True)]
    return pd.DataFrame(
        {
            "kind": errors["kind"],
            "tool": errors["tool"],
            "count": errors["count"],
            "calls": errors["n_calls"],
            "trials": errors["n_trials"],
            "example": example,
        }
    )


#: Columns of the two readings of tool correctness, in the order shown (those present).
_READINGS = ("reading", "agent", "level", "n_units", "overall", "share_passed", "agreement", "kappa",
             "recall_vs_benchmark")


def format_tool_readings(readings: pd.DataFrame) -> pd.DataFrame:
    """Keep the columns of :func:`agentstats.report.scoring_tables.tool_readings` the report shows, those present."""
    return readings[[col for col in _READINGS if col in readings.columns]]

"""The report as Markdown for a pull-request comment: summary and key tables (``NAME.md`` beside ``NAME.html``).

:func:`digest_markdown` writes it from a :class:`~agentstats.report.build.ReportData`; the notebook carries it in its
summary's output metadata (:data:`agentstats.report.display.DIGEST_KEY`) and the runner writes it to a file
(:func:`agentstats.report.notebook.run_report`). GitHub-flavoured Markdown: pipe tables, long tables folded in
``<details>`` (GitHub renders them folded; no script), no link into the HTML (a comment does not have it).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import pandas as pd

from agentstats._util.markup import md_text
from agentstats.report.tables import format_paired_table, format_suite_table

if TYPE_CHECKING:
    from agentstats.report.build import ReportData

__all__ = ["digest_markdown", "markdown_table"]

#: Rows shown open; a longer table is folded in ``<details>``.
OPEN_ROWS = 12


def _cell_text(text: str) -> str:
    """Escape a table cell's text: Markdown's marks and the pipe with a backslash, HTML's characters as entities."""
    text = " ".join(text.split())
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return re.sub(r"([\\`*_\[\]|#~])", r"\\\1", text)


def markdown_table(df: pd.DataFrame) -> str:
    """Write a display table as a GitHub pipe table: index levels first, cells as text, ``|`` and newlines escaped.

    Parameters
    ----------
    df : pandas.DataFrame
        A display table (:mod:`agentstats.report.tables`); a named index (or MultiIndex) becomes leading columns,
        repeated values of an outer level left blank as in the HTML.

    Returns
    -------
    str
        The table's lines, header and separator first.
    """
    flat = df.reset_index() if any(n is not None for n in df.index.names) else df.reset_index(drop=True)

    def cell(v: object) -> str:
        if isinstance(v, float):
            return "n/a" if v != v else f"{v:.3f}"
        return _cell_text(str(v))

    cols = [str(c) for c in flat.columns]
    lines = ["| " + " | ".join(_cell_text(c) for c in cols) + " |",
             "|" + "|".join("---" for _ in cols) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in flat.itertuples(index=False)]
    return "\n".join(lines)


def _table(title: str, df: pd.DataFrame) -> str:
    """Write a titled table, folded in ``<details>`` when it has more than :data:`OPEN_ROWS` rows."""
    body = markdown_table(df)
    if len(df) <= OPEN_ROWS:
        return f"**{title}**\n\n{body}"
    return f"<details><summary><b>{title}</b> ({len(df)} rows)</summary>\n\n{body}\n\n</details>"


def digest_markdown(report: ReportData) -> str:
    """Write the report's summary and key tables as Markdown for a pull-request comment.

    The summary (its claims without links, a failed fit first), pass@k and pass^k per agent at the report's
    smallest and largest k (unbiased estimators, task-cluster intervals), the paired differences at the smallest k
    (the evidence on who is ahead when there is no usable fit), and the command that regenerates the report.

    Parameters
    ----------
    report : ReportData

    Returns
    -------
    str
        Markdown, ending in a newline.
    """
    from agentstats.intervals import ci_percent

    ks = sorted({min(report.ks), max(report.ks)})
    pct = ci_percent(report.params.ci_prob)
    parts = [f"### agentstats report: {md_text(report.source)}", report.summary_markdown(links=False)]
    suite = format_suite_table(report.suite[report.suite["k"].isin(ks)])
    keep = [c for c in suite.columns if c in ("tasks", "pass@k", "pass^k") or c.endswith("CI")]
    parts.append(_table(f"pass@k and pass^k per agent (k = {', '.join(map(str, ks))}; unbiased, {pct} "
                        "task-cluster intervals)", suite[keep]))
    if report.paired is not None and (report.paired["k"] == ks[0]).any():
        paired = format_paired_table(report.paired, ks[0])
        parts.append(_table(f"Paired differences in pass^{ks[0]} ({pct} intervals over shared tasks; ahead when "
                            "the interval lies above 0)", paired))
    parts.append(f"Regenerate with `{report.regenerate_command()}`.")
    return "\n\n".join(parts) + "\n"

"""How the report notebooks show things: pandas tables without an index column, skipped sections, notebook set-up.

The notebooks (report, comparison, gate) call these in their first cells; :mod:`.html` reads the
:data:`SKIPPED_KEY` notes back when it exports a notebook.
"""

from __future__ import annotations

import logging
import warnings
from typing import Any

__all__ = ["CHECKS_KEY", "DIGEST_KEY", "SKIPPED_KEY", "configure_notebook", "register_table_display", "section_skipped",
           "show_summary"]

#: Output metadata key of a section's "nothing to show here" note (:func:`section_skipped`); its value is the reason.
SKIPPED_KEY = "agentstats_section_skipped"
#: Output metadata key of the summary (:func:`show_summary`); its value is the fit's verdict
#: (:meth:`agentstats.report.verdict.FitVerdict.as_record`, or None without a fit), which
#: :func:`agentstats.report.notebook.run_report` reads back for the command line.
CHECKS_KEY = "agentstats_checks"
#: Output metadata key of the summary's Markdown digest (:func:`agentstats.report.digest.digest_markdown`), which
#: :func:`agentstats.report.notebook.run_report` writes to ``NAME.md``.
DIGEST_KEY = "agentstats_digest"


def show_summary(markdown: str, checks: dict[str, Any] | None, digest: str | None = None) -> None:
    """Show the report's summary (under its anchor) and carry the fit's verdict and the digest in its metadata.

    Parameters
    ----------
    markdown : str
        The summary (:meth:`agentstats.report.build.ReportData.summary_markdown`).
    checks : dict or None
        The fit's verdict (:attr:`agentstats.report.build.ReportData.checks`).
    digest : str, optional
        The report as Markdown for a pull-request comment (:func:`agentstats.report.digest.digest_markdown`).
    """
    from IPython.display import Markdown, display

    from agentstats.report.anchors import SUMMARY, target

    display(Markdown(f"{target(SUMMARY)}**Summary**\n\n{markdown}"),
            metadata={CHECKS_KEY: checks, **({DIGEST_KEY: digest} if digest is not None else {})})


def section_skipped(reason: str) -> None:
    """Show, inside a report section, why the section has nothing to show (e.g. no calibration set was given).

    In the notebook this is one italic line. The HTML export (:func:`export_html`, code hidden) leaves a section
    whose only output is such a note out of the page and names it, with ``reason``, under the table of contents,
    so that readers do not scroll past empty sections.

    Parameters
    ----------
    reason : str
        Markdown written by the report itself (never data: it is rendered as Markdown).
    """
    from IPython.display import Markdown, display

    display(Markdown(f"*{reason}*"), metadata={SKIPPED_KEY: reason})


def register_table_display() -> None:
    """Render pandas tables in this IPython session without a meaningless 0, 1, 2 ... index column.

    A DataFrame whose index is a plain ``RangeIndex`` is shown by ``to_html(index=False)`` (the display options
    for floats, rows and columns still apply); any other index is meaningful and is shown as pandas shows it.
    Does nothing outside IPython.
    """
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython comes with the notebook stack
        return
    ip = get_ipython()
    if ip is None:
        return
    import pandas as pd

    def frame_html(df: pd.DataFrame) -> str:
        if not isinstance(df.index, pd.RangeIndex):
            return df._repr_html_()
        return df.to_html(
            index=False, notebook=True, float_format=pd.get_option("display.float_format"),
            max_rows=pd.get_option("display.max_rows"), max_cols=pd.get_option("display.max_columns"),
            show_dimensions=False,
        )

    ip.display_formatter.formatters["text/html"].for_type(pd.DataFrame, frame_html)


def configure_notebook() -> None:
    """Set up a report notebook's kernel: table display, pandas' display options, quiet loggers and warnings.

    Tables without the 0, 1, 2 ... index column (:func:`register_table_display`), three decimals, wide tables and up
    to 400 rows; the judge client's retry log (``instructor``) off, as retried failures are reported in the report;
    tqdm's note that ipywidgets is absent off (it carries this machine's paths, and progress bars are off anyway);
    progress lines of the long steps on (:mod:`agentstats._util.progress`: under the running cell, forwarded to the
    terminal by ``agentstats report`` and left out of the saved report).
    """
    import pandas as pd

    from agentstats._util.progress import enable_progress

    logging.getLogger("instructor").setLevel(logging.CRITICAL)
    pd.set_option("display.float_format", "{:.3f}".format)
    pd.set_option("display.width", 140)
    pd.set_option("display.max_rows", 400)
    pd.set_option("display.max_colwidth", 200)
    register_table_display()
    warnings.filterwarnings("ignore", message="IProgress not found")
    enable_progress()

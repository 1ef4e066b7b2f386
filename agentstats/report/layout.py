"""One layout rule for the report's figures and tables, from 2 to 50 agents (and more).

* **Sort**: agents in a figure or matrix are ordered by their value (best first), never by name.
* **Cap what is drawn**: a figure draws at most :data:`MAX_DRAWN` agents (the best by the figure's own value); the
  title says how many of how many, and every agent stays in the table beside it.
* **Fold long tables**: a table shows its first :data:`OPEN_ROWS` rows; the rest follow in a ``<details>`` block
  (opened by a click, no script; the HTML stays inert and self-contained).
* **Tall plots**: a plot with more than :data:`TALL_ROWS` rows has its x axis, ticks and label, at the top too.
* **Legends**: inside the panel for up to :data:`LEGEND_INSIDE` agents, else outside on the right, never over a
  title or caption.

Tested at 2, 10, 25 and 50 agents (``tests/report/test_layout.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Any

import pandas as pd

__all__ = ["LEGEND_INSIDE", "MAX_DRAWN", "OPEN_ROWS", "TALL_ROWS", "axes_top_and_bottom", "drawn", "folded_html",
           "show_figure", "show_table"]

#: Agents a figure draws at most.
MAX_DRAWN = 12
#: Rows a table shows before the rest is folded.
OPEN_ROWS = 20
#: Rows above which a plot repeats its x axis at the top.
TALL_ROWS = 30
#: Agents whose legend fits inside a panel.
LEGEND_INSIDE = 4


def drawn(order: Sequence[str], cap: int = MAX_DRAWN) -> tuple[list[str], str]:
    """Return the agents a figure draws (the first ``cap`` of ``order``, best first) and a note when some are left.

    Parameters
    ----------
    order : sequence of str
        Every agent, best first.
    cap : int
        Agents drawn at most.

    Returns
    -------
    tuple of (list of str, str)
        The agents drawn; ``""``, or ``"top 12 of 25 agents"`` for the title.
    """
    agents = list(order)
    if len(agents) <= cap:
        return agents, ""
    return agents[:cap], f"top {cap} of {len(agents)} agents drawn; every agent is in the table"


def axes_top_and_bottom(ax: Any, n_rows: int) -> None:
    """Repeat the x axis (ticks, tick labels, label) at the top of a plot with more than :data:`TALL_ROWS` rows."""
    if n_rows <= TALL_ROWS:
        return
    top = ax.secondary_xaxis("top")  # the same scale: its own ticks, tick labels and label, laid out above
    top.set_xlabel(ax.get_xlabel())


def show_figure(fig: Any) -> None:
    """Display a figure where the cell is (before the tables the cell shows after it), then close it."""
    import matplotlib.pyplot as plt
    from IPython.display import display

    display(fig)
    plt.close(fig)


def folded_html(table: pd.DataFrame, summary: str) -> str:
    """Write a table inside ``<details>``: closed, ``summary`` on its handle; cells escaped (data are never markup)."""
    body = table.to_html(escape=True, na_rep="n/a", float_format=lambda v: f"{v:.3f}", border=0)
    return f"<details class=\"agentstats-more\"><summary>{escape(summary)}</summary>\n{body}\n</details>"


def show_table(table: pd.DataFrame, *, open_rows: int = OPEN_ROWS, what: str = "rows") -> None:
    """Display a table in a notebook: its first ``open_rows`` rows, the rest folded (:func:`folded_html`)."""
    from IPython.display import HTML, display

    if len(table) <= open_rows:
        display(table)
        return
    display(table.iloc[:open_rows])
    display(HTML(folded_html(table.iloc[open_rows:], f"{len(table) - open_rows} more {what} (of {len(table)})")))

"""Where the report's evidence sits: the ids of the tables and figures its summary links to, and the links.

Every claim of the summary (:func:`agentstats.report.prose.report_summary`) ends with a link to the table or figure
that backs it; the notebook puts :func:`target` before that table or figure, with the k it shows. Both read the ids
here, so a link and its target cannot drift apart. A target names its k in ``data-k`` (space-separated), which the
tests compare with the k the claim states.
"""

from __future__ import annotations

from collections.abc import Iterable
from html import escape

__all__ = [
    "DATA",
    "FIT_CHECKS",
    "POSTERIOR",
    "PPC",
    "SUITE",
    "SUMMARY",
    "TASKS",
    "contrast",
    "link",
    "paired",
    "target",
]

#: The summary itself.
SUMMARY = "summary"
#: The per-agent overview of the data (agents, tasks, trials).
DATA = "data-table"
#: pass@k and pass^k per agent (unbiased estimators), every k of the report.
SUITE = "pass-k-table"
#: The tasks and trials behind each agent's values (folded per agent in ``<details>``).
TASKS = "tasks-behind"
#: The fit's convergence checks.
FIT_CHECKS = "fit-checks"
#: The posterior predictive check.
PPC = "ppc-check"
#: Posterior pass^k by agent and k (values, or ranges where the data do not identify them).
POSTERIOR = "posterior-pass-k"


def paired(k: int) -> str:
    """Id of the paired differences in pass^k at ``k`` (:func:`agentstats.estimators.paired_pass_k_table`)."""
    return f"paired-k{int(k)}"


def contrast(k: int) -> str:
    """Id of the posterior P(row > column) of pass^k at ``k`` (:func:`agentstats.posterior.contrast_matrix`)."""
    return f"contrast-k{int(k)}"


def link(text: str, anchor: str) -> str:
    """Markdown link to ``anchor`` in the same page; ``text`` is Markdown written by the report, not data."""
    return f"[{text}](#{anchor})"


def target(anchor: str, ks: Iterable[int] | None = None) -> str:
    """Write the HTML anchor put before a table or figure: ``<a id=... class="agentstats-anchor" data-k=...>``.

    Parameters
    ----------
    anchor : str
        One of the ids above.
    ks : iterable of int, optional
        The k the table or figure shows (none for one without a k).
    """
    k_attr = f' data-k="{" ".join(str(int(k)) for k in sorted(set(ks)))}"' if ks is not None else ""
    return f'<a id="{escape(anchor)}" class="agentstats-anchor"{k_attr}></a>'

"""Pieces of the report's HTML page that need no nbconvert: the template folder, folded sections, the contents.

Used by the nbconvert exporter (:mod:`agentstats.report.exporter`) and so by :func:`agentstats.report.html.export_html`.
"""

from __future__ import annotations

import re
from html import escape as _escape
from importlib import resources
from pathlib import Path
from typing import Any

from agentstats.report.display import SKIPPED_KEY

__all__ = ["fold_skipped", "html_template_dir", "with_toc"]

_HEADING = re.compile(r"<h([23]) id=\"([^\"]+)\"[^>]*>(.*?)</h\1>", re.S)
_TAG = re.compile(r"<[^>]+>")


def html_template_dir() -> Path:
    """Return the folder of the report's nbconvert template (``agentstats_report``)."""
    return Path(str(resources.files("agentstats.report") / "templates" / "nbconvert"))


def fold_skipped(cells: list[Any]) -> tuple[list[Any], list[tuple[str, str]]]:
    """Drop the ``## `` sections whose every output is a :func:`section_skipped` note; return them (title, reason)."""
    starts = [i for i, c in enumerate(cells) if c.cell_type == "markdown" and c.source.lstrip().startswith("## ")]
    drop: set[int] = set()
    skipped = []
    for s, e in zip(starts, [*starts[1:], len(cells)], strict=False):  # each section ends where the next begins
        outputs = [o for c in cells[s:e] if c.cell_type == "code" for o in c.get("outputs", [])]
        notes = [o for o in outputs if SKIPPED_KEY in (o.get("metadata") or {})]
        if notes and len(notes) == len(outputs):
            title = cells[s].source.lstrip()[3:].splitlines()[0].strip()
            skipped.append((title, str(notes[0]["metadata"][SKIPPED_KEY])))
            drop.update(range(s, e))
    return [c for i, c in enumerate(cells) if i not in drop], skipped


_MD_CODE = re.compile(r"`([^`]+)`")


def _plain_reason(markdown: str) -> str:
    """Render a skipped section's reason as HTML: escaped, ``code`` kept as code, emphasis marks dropped."""
    parts = _MD_CODE.split(markdown)
    return "".join(f"<code>{_escape(p)}</code>" if i % 2 else _escape(p.replace("*", "")) for i, p in enumerate(parts))


def with_toc(body: str, skipped: list[tuple[str, str]] | None = None) -> str:
    """Insert a table of contents (the report's h2/h3 headings) before its first section heading.

    ``skipped``: sections left out of the page (:func:`fold_skipped`), listed under the contents with their reason.
    """
    items = []
    for level, anchor, inner in _HEADING.findall(body):
        text = _TAG.sub("", inner).replace("¶", "").strip()
        if text:
            items.append((int(level), anchor, text))
    if len(items) < 2:
        return body
    lines = ['<nav class="agentstats-toc" aria-label="Contents"><p>Contents</p><ol>']
    nested = False  # h3 headings are listed (and numbered) inside the h2 section above them
    for i, (level, anchor, text) in enumerate(items):
        sub = level == 3 and i > 0
        if sub and not nested:
            lines.append("<ol>")
        elif not sub and nested:
            lines.append("</ol></li>")
        nested = sub
        link = f'<a href="#{_escape(anchor)}">{text}</a>'
        follows_sub = i + 1 < len(items) and items[i + 1][0] == 3
        lines.append(f"<li>{link}</li>" if sub or not follows_sub else f"<li>{link}")
    lines.append("</ol></li></ol>" if nested else "</ol>")
    if skipped:
        lines.append('<p class="agentstats-toc-skipped">Not in this report</p><ul class="agentstats-toc-skipped">')
        # a dash, not a colon: section titles have colons of their own ("Judge calibration: ...")
        lines += [f"<li>{_escape(title)} — {_plain_reason(reason)}</li>" for title, reason in skipped]
        lines.append("</ul>")
    lines.append("</nav>")
    first = _HEADING.search(body)
    assert first is not None
    return body[: first.start()] + "".join(lines) + body[first.start() :]

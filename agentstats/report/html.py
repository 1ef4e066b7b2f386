"""The executed notebook as one self-contained HTML file: nbconvert's ``lab`` look, nothing fetched from a network.

:func:`export_html` hides the code and the parameters cell by default, drops the sections whose only output is a
:func:`~agentstats.report.display.section_skipped` note (and names them under the table of contents), and puts a
table of contents before the first section (:mod:`.html_page`); the nbconvert exporter is :mod:`.exporter`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentstats.files.atomic import atomic_write_text

__all__ = ["export_html"]


def export_html(notebook: Path | Any, html: Path | None = None, *, show_code: bool = False) -> Path | str:
    """Export an executed notebook to one self-contained HTML file (:class:`AgentstatsHTMLExporter`).

    JupyterLab's look (nbconvert ``lab`` template) without anything fetched from a network: no require.js,
    MathJax, mermaid or widget scripts, CSS inline, images embedded. The ``parameters`` cell is left out (papermill's
    injected cell shows the values used), and so is the code unless ``show_code``: then only outputs and narrative
    remain, with a table of contents built from the section headings.

    Parameters
    ----------
    notebook : pathlib.Path or nbformat.NotebookNode
        Executed notebook (file or node).
    html : pathlib.Path, optional
        Destination, written atomically; default the notebook path with suffix ``.html``. With a node and no
        ``html``, the HTML text is returned instead.
    show_code : bool
        Keep code cells' input and prompts.

    Returns
    -------
    pathlib.Path or str
        The path written, or the HTML text.
    """
    import nbformat

    from agentstats.report.exporter import AgentstatsHTMLExporter

    if isinstance(notebook, str | Path):
        nb = nbformat.read(notebook, as_version=4)
        html = html or Path(notebook).with_suffix(".html")
    else:
        nb = notebook
    body, _ = AgentstatsHTMLExporter(show_code=show_code).from_notebook_node(nb)
    if html is None:
        return body
    atomic_write_text(html, body)
    return Path(html)

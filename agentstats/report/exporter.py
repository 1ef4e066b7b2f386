"""nbconvert exporter ``agentstats-html``: the report's self-contained, inert HTML from any executed notebook.

Registered under the ``nbconvert.exporters`` entry point (``pyproject.toml``), so ``jupyter nbconvert --to
agentstats-html report.ipynb`` writes what ``agentstats report`` writes (:func:`agentstats.report.html.export_html`
uses this class). Imported only when a report is exported: it imports nbconvert.
"""

from __future__ import annotations

from typing import Any

from nbconvert import HTMLExporter
from nbconvert.preprocessors import Preprocessor, TagRemovePreprocessor
from traitlets import Bool, default

from agentstats.report.html_page import fold_skipped, html_template_dir, with_toc
from agentstats.report.provenance import package_version

__all__ = ["AgentstatsHTMLExporter"]


class _DropSilentCells(Preprocessor):
    """Code cells without output would leave empty gaps once their input is hidden."""

    def preprocess(self, nb, resources):
        nb.cells = [c for c in nb.cells if c.cell_type != "code" or c.get("outputs")]
        return nb, resources


class _FoldSkippedSections(Preprocessor):
    """Sections with nothing to show leave the page; they are named under the contents."""

    def preprocess(self, nb, resources):
        nb.cells, resources["agentstats_skipped"] = fold_skipped(nb.cells)
        return nb, resources


class AgentstatsHTMLExporter(HTMLExporter):
    """The report's HTML: JupyterLab's look, nothing fetched from a network, results and narrative only.

    nbconvert's ``lab`` template without require.js, MathJax, mermaid or widget scripts; CSS inline, images embedded
    (``data:`` URIs); the ``parameters`` cell left out (papermill's injected cell, shown with the code, holds the
    values used); unless :attr:`show_code`, the code and prompts are left out too, code cells without output
    dropped and the sections whose only output is a skipped-section note folded (named under the contents). A table
    of contents of the ``h2``/``h3`` headings opens the page.

    Examples
    --------
    ``jupyter nbconvert --to agentstats-html reports/example_trials.ipynb``;
    ``--AgentstatsHTMLExporter.show_code=True`` keeps the code.
    """

    export_from_notebook = "agentstats report (self-contained HTML)"
    show_code = Bool(False, help="Keep code cells' input and prompts (agentstats report -p show_code=true)."
                     ).tag(config=True)

    @default("template_name")
    def _template_name_default(self) -> str:
        return "agentstats_report"

    @default("extra_template_basedirs")
    def _default_extra_template_basedirs(self) -> list[str]:
        return [str(html_template_dir())]

    @default("embed_images")
    def _embed_images_default(self) -> bool:
        return True

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        if not self.show_code:
            self.exclude_input = self.exclude_input_prompt = self.exclude_output_prompt = True
        removed = ["parameters"] if self.show_code else ["parameters", "injected-parameters"]
        self.register_preprocessor(TagRemovePreprocessor(remove_cell_tags=removed, enabled=True), True)
        if not self.show_code:
            self.register_preprocessor(_DropSilentCells(), True)
            self.register_preprocessor(_FoldSkippedSections(), True)

    def from_notebook_node(  # type: ignore[override]  # nbconvert's HTMLExporter returns the text, too
            self, nb: Any, resources: dict[str, Any] | None = None, **kw: Any) -> tuple[str, Any]:
        """Export ``nb``; returns the HTML text and nbconvert's resources."""
        resources = {**(resources or {}), "agentstats_version": package_version()}
        body, res = super().from_notebook_node(nb, resources=resources, **kw)
        return with_toc(body, res.get("agentstats_skipped")), res

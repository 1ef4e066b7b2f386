"""Executable reports: run the report notebook with papermill, export it to HTML with nbconvert.

The notebook template (``notebooks/report.ipynb``) holds narrative and calls only; its first code cell is tagged
``parameters`` and papermill injects the values given here after it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["REPORT_DEFAULTS", "ReportPaths", "default_notebook", "export_html", "run_report"]

#: Full-size settings a report runs with unless the caller says otherwise. The template's own defaults are test-sized
#: (nbval executes the template as it is), so :func:`run_report` always passes these.
REPORT_DEFAULTS: dict[str, Any] = {"n_boot": 2000, "draws": 1000, "tune": 1000, "chains": 4}


@dataclass(frozen=True)
class ReportPaths:
    """Where a report was written: the executed notebook and its HTML export."""

    notebook: Path
    html: Path


def default_notebook() -> Path:
    """Path of the report template ``notebooks/report.ipynb`` beside the package.

    Raises
    ------
    FileNotFoundError
        When the package was installed without the repository's ``notebooks/`` folder.
    """
    path = Path(__file__).resolve().parents[1] / "notebooks" / "report.ipynb"
    if not path.exists():
        raise FileNotFoundError(
            f"report template not found at {path}; install agentstats from its repository "
            "(pip install -e .) or pass the template path explicitly"
        )
    return path


def export_html(notebook: Path, html: Path | None = None) -> Path:
    """Export an executed notebook to a standalone HTML file (nbconvert's ``lab`` template).

    Parameters
    ----------
    notebook : pathlib.Path
        Executed ``.ipynb``.
    html : pathlib.Path, optional
        Destination; defaults to the notebook path with suffix ``.html``.
    """
    import nbformat
    from nbconvert import HTMLExporter
    from nbconvert.preprocessors import TagRemovePreprocessor

    html = html or notebook.with_suffix(".html")
    nb = nbformat.read(notebook, as_version=4)
    exporter = HTMLExporter(template_name="lab")
    # The template's default parameters are replaced by papermill's injected cell: show only the values used.
    exporter.register_preprocessor(TagRemovePreprocessor(remove_cell_tags=("parameters",), enabled=True), True)
    body, _ = exporter.from_notebook_node(nb)
    html.write_text(body, encoding="utf-8")
    return html


def run_report(
    parameters: dict[str, Any],
    out_dir: str | Path = "reports",
    name: str = "report",
    *,
    template: str | Path | None = None,
    kernel_name: str = "python3",
    progress_bar: bool = True,
) -> ReportPaths:
    """Execute the report notebook with ``parameters`` and export it to HTML.

    Parameters
    ----------
    parameters : dict
        Values for the template's ``parameters`` cell (``input_path``, ``input_format``, ``k_values``, ``seed``,
        ``run_bayes``, ``draws``, ``loader_options`` ...). :data:`REPORT_DEFAULTS` fills the sampling and bootstrap
        sizes not given.
    out_dir : str or pathlib.Path
        Output folder, created if needed. Writes ``{name}.ipynb`` and ``{name}.html``.
    name : str
        File stem of the outputs.
    template : str or pathlib.Path, optional
        Notebook template; default :func:`default_notebook`.
    kernel_name : str
        Jupyter kernel to execute with. Passed explicitly to papermill (never taken from the notebook's metadata,
        which names whatever kernel its author had).

    Returns
    -------
    ReportPaths

    Raises
    ------
    papermill.PapermillExecutionError
        When a cell fails; the partially executed notebook is still written to ``{name}.ipynb`` so nothing computed
        is lost.
    """
    import papermill as pm

    parameters = {**REPORT_DEFAULTS, **parameters}
    template = Path(template) if template is not None else default_notebook()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    nb_out = out_dir / f"{name}.ipynb"
    pm.execute_notebook(
        str(template),
        str(nb_out),
        parameters=parameters,
        kernel_name=kernel_name,
        progress_bar=progress_bar,
        cwd=str(template.parent),
    )
    html = export_html(nb_out, out_dir / f"{name}.html")
    return ReportPaths(notebook=nb_out, html=html)

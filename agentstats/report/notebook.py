"""Executable reports: run the report notebook with papermill, export it to one self-contained HTML file.

The template (``notebooks/report.ipynb`` in the repository, shipped as package data ``agentstats/report/templates``)
holds
narrative and calls only; its first code cell is tagged ``parameters`` and papermill injects the values given here
after it. What a report run guarantees (docs/reliability.md, "Reports"):

* The input is read before the notebook starts (:func:`check_input`): a file that cannot be loaded fails in a
  second with its location, not after a kernel start with a notebook traceback.
* Every parameter passed must be one the template declares (:func:`check_parameters`).
* Output names cannot leave the output folder or be hidden (:func:`safe_report_name`).
* ``NAME.ipynb`` and ``NAME.html`` are replaced only by a run that completed, atomically
  (:mod:`agentstats.files.atomic`). A run that fails or is interrupted leaves the previous report as it was and writes
  what it executed to ``NAME.failed.ipynb``, marked as failed in its metadata and its first cell.
* The HTML loads nothing from a network (no script, style or font from a CDN; images are inline) and, by default,
  shows the results without the code.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape as _escape
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentstats._util.markup import one_line
from agentstats.files.atomic import atomic_write_text

if TYPE_CHECKING:
    from agentstats.io.loaders import Dataset

__all__ = [
    "FAILED_SUFFIX",
    "REPORT_DEFAULTS",
    "SKIPPED_KEY",
    "ReportError",
    "ReportInputError",
    "ReportInterrupted",
    "ReportParameterError",
    "ReportPaths",
    "check_input",
    "check_parameters",
    "compare_notebook",
    "default_notebook",
    "export_html",
    "packaged_template",
    "register_table_display",
    "report_command",
    "report_parameters",
    "run_report",
    "safe_report_name",
    "section_skipped",
]

#: Full-size settings a report runs with unless the caller says otherwise. The template's own defaults are test-sized
#: (nbval executes the template as it is), so :func:`run_report` always passes these.
#: The template's test-size sampler is PyMC's (its compiled C is cached across runs, nutpie's numba code is not: about
#: 10 s against 25 s on the embedded example); a report runs with ``sampler=None``, the fastest installed (nutpie).
#: Its test-size ``cores`` is 1 (no chain processes to start); a report uses ``min(chains, CPUs)``.
REPORT_DEFAULTS: dict[str, Any] = {"n_boot": 2000, "draws": None, "tune": 1000, "chains": 4, "sampler": None,
                                   "cores": None}

#: A run that did not complete writes its notebook as ``NAME + FAILED_SUFFIX + ".ipynb"``.
FAILED_SUFFIX = ".failed"

# Characters kept in an output name: letters and digits (any script), underscore, dot, hyphen.
_UNSAFE_NAME = re.compile(r"[^\w.\-]+")
_MAX_NAME = 120
_HEADING = re.compile(r"<h([23]) id=\"([^\"]+)\"[^>]*>(.*?)</h\1>", re.S)
_TAG = re.compile(r"<[^>]+>")


#: Output metadata key of a section's "nothing to show here" note (:func:`section_skipped`); its value is the reason.
SKIPPED_KEY = "agentstats_section_skipped"


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


def _fold_skipped(cells: list[Any]) -> tuple[list[Any], list[tuple[str, str]]]:
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


class ReportInputError(ValueError):
    """The report's input cannot be read; the message is one line naming the file (and line and field)."""


class ReportParameterError(ValueError):
    """A parameter the template does not declare, or an output name that would leave the output folder."""


class ReportError(RuntimeError):
    """The report notebook failed while running.

    Attributes
    ----------
    failed_notebook : pathlib.Path
        The partially executed notebook, marked as failed.
    previous : pathlib.Path or None
        The previous complete report (HTML, else notebook) left in place, if there was one.
    """

    def __init__(self, message: str, *, failed_notebook: Path, previous: Path | None):
        super().__init__(message)
        self.failed_notebook = failed_notebook
        self.previous = previous


class ReportInterrupted(KeyboardInterrupt):
    """The run was interrupted (Ctrl-C); same attributes as :class:`ReportError`."""

    def __init__(self, message: str, *, failed_notebook: Path, previous: Path | None):
        super().__init__(message)
        self.failed_notebook = failed_notebook
        self.previous = previous


@dataclass(frozen=True)
class ReportPaths:
    """Where a report was written: the executed notebook and its HTML export."""

    notebook: Path
    html: Path


def default_notebook() -> Path:
    """Path of the report template, shipped as package data (``agentstats/report/templates/report.ipynb``).

    In a source checkout that file is a link to ``notebooks/report.ipynb``, the single copy in the repository;
    a wheel holds the file itself.

    Raises
    ------
    FileNotFoundError
        When the package data is missing (an install that left it out).
    """
    return packaged_template("report.ipynb", "report template", ", or pass the template path")


def packaged_template(name: str, what: str, advice: str = "") -> Path:
    """Path of a notebook template shipped as package data (``agentstats/report/templates/NAME``).

    Raises
    ------
    FileNotFoundError
        When the package data is missing (an install that left it out); the message names ``what`` is missing.
    """
    path = Path(str(resources.files("agentstats.report") / "templates" / name))
    if not path.is_file():
        raise FileNotFoundError(f"{what} not found at {path}: reinstall agentstats{advice}")
    return path


def compare_notebook() -> Path:
    """Path of the run-comparison template, for :func:`run_report`'s ``template``.

    Shipped as package data (``agentstats/report/templates/compare.ipynb``); in a source checkout a link to
    ``notebooks/compare.ipynb``.

    Raises
    ------
    FileNotFoundError
        When the package data is missing.
    """
    return packaged_template("compare.ipynb", "comparison template")


def _html_template_dir() -> Path:
    return Path(str(resources.files("agentstats.report") / "templates" / "nbconvert"))


def safe_report_name(name: str) -> str:
    """Turn a report name into a file stem that stays inside the output folder and is not hidden.

    Path separators, ``..``, spaces and other characters outside letters, digits, ``_``, ``.`` and ``-`` become
    ``_``; leading and trailing dots, underscores and hyphens are dropped; the result is at most 120 characters;
    an empty result becomes ``"report"``. So ``"../../x"`` gives ``"x"`` and ``".jsonl"``'s stem (empty) gives
    ``"report"``.

    Parameters
    ----------
    name : str
        Wanted stem (``--name``, or the input file's stem).

    Returns
    -------
    str
    """
    stem = _UNSAFE_NAME.sub("_", one_line(name)).strip("._-")[:_MAX_NAME].strip("._-")
    return stem or "report"


def report_parameters(template: str | Path | None = None) -> dict[str, dict[str, Any]]:
    """Parameters the template declares (``papermill.inspect_notebook``): name -> type, default and help.

    Parameters
    ----------
    template : str or pathlib.Path, optional
        Notebook; default :func:`default_notebook`.
    """
    import papermill as pm

    return dict(pm.inspect_notebook(str(template or default_notebook())))


def check_parameters(parameters: dict[str, Any], template: str | Path | None = None) -> None:
    """Refuse parameters the template does not declare (papermill would only log and ignore them).

    Raises
    ------
    ReportParameterError
        Naming the unknown parameters and the declared ones.
    """
    declared = report_parameters(template)
    unknown = sorted(set(parameters) - set(declared))
    if unknown:
        raise ReportParameterError(
            f"unknown report parameter(s) {', '.join(unknown)}; the template declares {', '.join(sorted(declared))}"
        )


#: Parameters :func:`report_command` writes only when they differ from the template's default (the one source of
#: the defaults: ``agentstats report``'s options default to the same values, tests/report/test_report.py checks they
#: agree).
_DEFAULTED = ("input_format", "seed", "run_bayes", "bayes_model", "population", "judge", "threshold",
              "tool_threshold", "require_tools")  # fmt: skip
#: Loader options and their command-line flags (``on_error="skip"`` is ``--skip-bad``).
_LOADER_FLAGS = {"agent": "--agent", "agent_col": "--agent-col", "task_col": "--task-col",
                 "success_col": "--success-col", "agents": "--agents", "run": "--run"}  # fmt: skip


def _k_spec(ks: list[int]) -> str:
    """Write k values as ``--k`` reads them: ``"1..5"``, ``"1,2,4"``, ``"1..3,8"`` (runs of three or more as ranges).

    Parameters
    ----------
    ks : list of int
        Positive k values, in any order.

    Returns
    -------
    str
        The shortest ``--k`` text for them, runs of consecutive values written ``lo..hi``.
    """
    ks = sorted(set(int(k) for k in ks))
    parts: list[str] = []
    i = 0
    while i < len(ks):
        j = i
        while j + 1 < len(ks) and ks[j + 1] == ks[j] + 1:
            j += 1
        if j - i >= 2:
            parts.append(f"{ks[i]}..{ks[j]}")
        else:
            parts.extend(str(k) for k in ks[i : j + 1])
        i = j + 1
    return ",".join(parts)


def _template_defaults(template: str | Path | None, names: tuple[str, ...]) -> dict[str, Any]:
    """Default values of ``names`` in the template's ``parameters`` cell (read with ``papermill.inspect_notebook``).

    Raises
    ------
    ReportParameterError
        When the template does not declare one of ``names``, or its default is not a Python literal.
    """
    import ast

    template = template or default_notebook()
    declared = report_parameters(template)
    defaults = {}
    for name in names:
        if name not in declared:
            raise ReportParameterError(f"{template}: the parameters cell does not declare {name}")
        try:
            defaults[name] = ast.literal_eval(declared[name]["default"])
        except (ValueError, SyntaxError) as exc:
            raise ReportParameterError(
                f"{template}: parameters cell, {name} = {declared[name]['default']}: the default must be a Python "
                "literal (a number, string, True, False or None)"
            ) from exc
    return defaults


def report_command(parameters: dict[str, Any], k_values: list[int] | None = None,
                   template: str | Path | None = None) -> str:
    """Write the ``agentstats report`` command that regenerates a report run with ``parameters``.

    Options are written only when they differ from their defaults, which are read from the template's
    ``parameters`` cell (``agentstats report`` defaults its options to the same values). Files are named by their
    base name (a shared report does not show where it was made: no folders, nor ``--base-url``); an input that is
    not a file path is ``INPUT``.

    Parameters
    ----------
    parameters : dict
        The report's parameters (those of the template's ``parameters`` cell); one left out has its default.
    k_values : list of int, optional
        The k values the report used (default: ``parameters["k_values"]``; none given: ``--k`` is left out, so the
        command picks them from the data as the report did).
    template : str or pathlib.Path, optional
        Notebook whose ``parameters`` cell holds the defaults; default :func:`default_notebook`, the template
        ``agentstats report`` runs.

    Returns
    -------
    str
        One shell command line, values quoted for a POSIX shell where needed.

    Raises
    ------
    ReportParameterError
        When the template does not declare a parameter the command line is written from, or its default is not a
        Python literal.
    """
    import shlex

    defaults = _template_defaults(template, _DEFAULTED)
    p = {**defaults, **parameters}
    path = p.get("input_path")
    words = ["agentstats", "report", shlex.quote(Path(path).name) if isinstance(path, (str, os.PathLike)) else "INPUT"]

    def opt(flag: str, value: Any) -> None:
        words.extend([flag, shlex.quote(str(value))])

    if p["input_format"] != defaults["input_format"]:
        opt("--format", p["input_format"])
    ks = k_values if k_values is not None else p.get("k_values")
    if ks:
        opt("--k", _k_spec(list(ks)))
    loader = p.get("loader_options") or {}
    for key, flag in _LOADER_FLAGS.items():
        if loader.get(key) is not None:
            value = loader[key]
            opt(flag, value if isinstance(value, str) else ",".join(map(str, value)))
    if loader.get("on_error") == "skip":
        words.append("--skip-bad")
    if p["seed"] != defaults["seed"]:
        opt("--seed", p["seed"])
    if p["run_bayes"] != defaults["run_bayes"]:
        words.append("--bayes" if p["run_bayes"] else "--no-bayes")
    if p["run_bayes"]:  # the Bayesian options apply only with the Bayesian section
        if p["bayes_model"] != defaults["bayes_model"]:
            opt("--bayes-model", p["bayes_model"])
        if p["population"] != defaults["population"]:
            opt("--population", p["population"])
        if p.get("draws") is not None:
            opt("--draws", p["draws"])
        if p.get("target_accept") is not None:
            opt("--target-accept", p["target_accept"])
    if p["judge"] != defaults["judge"]:
        opt("--judge", p["judge"])
    if p.get("judge_model") is not None:
        opt("--judge-model", p["judge_model"])
    for key, flag in (("threshold", "--threshold"), ("tool_threshold", "--tool-threshold")):
        if p[key] != defaults[key]:
            opt(flag, f"{p[key]:g}")
    if p["require_tools"] and not defaults["require_tools"]:  # the command line has --require-tools only
        words.append("--require-tools")
    if p.get("judge_calibration") is not None:
        opt("--judge-calibration", Path(str(p["judge_calibration"])).name)
        if p.get("judge_metric") is not None:
            opt("--judge-metric", p["judge_metric"])
    if p.get("metrics") is not None:
        opt("--metrics", p["metrics"])
    return " ".join(words)


def check_input(parameters: dict[str, Any]) -> Dataset | None:
    """Load the report's input as the notebook will (``agentstats.load`` with the same arguments).

    Parameters
    ----------
    parameters : dict
        ``input_path``, ``input_format`` and ``loader_options`` as passed to the template.

    Returns
    -------
    agentstats.io.Dataset or None
        What was read (its ``skipped`` records, with ``on_error="skip"`` in ``loader_options``); ``None`` without
        an ``input_path``.

    Raises
    ------
    ReportInputError
        One line: the first problem with its file, line and field, and how many more there are.
    """
    import warnings

    from agentstats.io import LoadError, LoadWarning
    from agentstats.io.loaders import load

    path = parameters.get("input_path")
    if path is None:
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LoadWarning)  # skipped records are listed in the report
            return load(path, format=parameters.get("input_format", "auto"), **(parameters.get("loader_options") or {}))
    except LoadError as exc:
        if not exc.skippable:  # --skip-bad cannot help (nothing left after skipping, a changed file, a wrong format)
            listed = [f"  {one_line(p)}" for p in exc.problems[:20]]
            if len(exc.problems) > 20:
                listed.append(f"  ... and {len(exc.problems) - 20} more")
            raise ReportInputError("\n".join([f"{exc.head}:", *listed, *([exc.hint] if exc.hint else [])])) from exc
        n = len(exc.problems)
        more = f" (and {n - 1} more problem{'s' if n > 2 else ''})" if n > 1 else ""
        rest = [f"  {one_line(p)}" for p in exc.problems[1:20]]
        if n > 20:
            rest.append(f"  ... and {n - 20} more")
        raise ReportInputError(
            "\n".join([f"{one_line(exc.problems[0])}{more}; fix the input or add --skip-bad to skip bad records",
                        *rest])
        ) from exc
    except (ValueError, OSError, KeyError, TypeError) as exc:
        raise ReportInputError(f"{path}: {one_line(exc)}") from exc


def _set_kernelspec(nb: Any, kernel_name: str) -> None:
    """Name the kernel that ran the notebook (papermill keeps the template's kernelspec)."""
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    language = nb.metadata.get("language_info", {}).get("name", "python")
    try:
        spec = KernelSpecManager().get_kernel_spec(kernel_name)
        display, language = spec.display_name, spec.language
    except NoSuchKernel:
        display = kernel_name
    nb.metadata["kernelspec"] = {"name": kernel_name, "display_name": display, "language": language}


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("agentstats")
    except PackageNotFoundError:
        return "0+unknown"


def _mark_failed(nb: Any, reason: str, status: str, previous: Path | None) -> None:
    """Mark a partially executed notebook as failed: metadata, cell statuses and a first cell saying so."""
    import nbformat

    for cell in nb.cells:
        if cell.get("cell_type") != "code":
            continue
        pm_meta = cell.metadata.setdefault("papermill", {})
        if any(o.get("output_type") == "error" for o in cell.get("outputs", [])):
            pm_meta["status"] = "failed"
        elif cell.get("execution_count") is None:
            pm_meta["status"] = "pending"  # never ran (papermill leaves "completed" on an interrupt)
    nb.metadata["agentstats"] = {
        "status": status,
        "reason": reason,
        "finished": datetime.now(UTC).isoformat(timespec="seconds"),
        "version": _version(),
    }
    kept = (
        f"The previous complete report, `{previous.name}`, was left as it was."
        if previous
        else "There was no previous report."
    )
    first = nbformat.v4.new_markdown_cell(
        f"# FAILED: this report did not complete ({status})\n\n"
        f"<span class=\"agentstats-failed\">**{_escape(reason)}**</span>\n\n"
        "Cells after the one that failed did not run: their outputs are empty, and numbers above it may be "
        f"partial. {kept}"
    )
    first.metadata["tags"] = ["agentstats-failed"]
    nb.cells.insert(0, first)


@contextlib.contextmanager
def _no_sigint() -> Iterator[None]:
    """Ignore Ctrl-C while a failed run's notebook is written (a second Ctrl-C must not lose it)."""
    try:
        old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


def _kernel_manager_class(log: Any) -> type:
    """Make a kernel manager class whose kernel writes its own stdout/stderr to ``log``, not to the terminal.

    The kernel process's streams carry only its log (cell output comes through Jupyter's messages): connection
    warnings, and tracebacks when it is shut down mid-cell (e.g. a ZMQError after Ctrl-C).
    """
    from jupyter_client.manager import AsyncKernelManager

    class _ReportKernelManager(AsyncKernelManager):
        async def _async_start_kernel(self, **kw: Any) -> None:
            kw.setdefault("stdout", log)
            kw.setdefault("stderr", log)
            await super()._async_start_kernel(**kw)

        start_kernel = _async_start_kernel

    return _ReportKernelManager


def _toc(body: str, skipped: list[tuple[str, str]] | None = None) -> str:
    """Insert a table of contents (the report's h2/h3 headings) before its first section heading.

    ``skipped``: sections left out of the page (:func:`_fold_skipped`), listed under the contents with their reason.
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
        lines += [f"<li>{_escape(title)}: {_plain_reason(reason)}</li>" for title, reason in skipped]
        lines.append("</ul>")
    lines.append("</nav>")
    first = _HEADING.search(body)
    assert first is not None
    return body[: first.start()] + "".join(lines) + body[first.start() :]


def export_html(notebook: Path | Any, html: Path | None = None, *, show_code: bool = False) -> Path | str:
    """Export an executed notebook to one self-contained HTML file.

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
    from nbconvert import HTMLExporter
    from nbconvert.preprocessors import Preprocessor, TagRemovePreprocessor

    if isinstance(notebook, str | Path):
        nb = nbformat.read(notebook, as_version=4)
        html = html or Path(notebook).with_suffix(".html")
    else:
        nb = notebook
    exporter = HTMLExporter(
        template_name="agentstats_report",
        extra_template_basedirs=[str(_html_template_dir())],
        exclude_input=not show_code,
        exclude_input_prompt=not show_code,
        exclude_output_prompt=not show_code,
        embed_images=True,
    )
    removed = ("parameters",) if show_code else ("parameters", "injected-parameters")
    exporter.register_preprocessor(TagRemovePreprocessor(remove_cell_tags=removed, enabled=True), True)
    if not show_code:

        class _DropSilentCells(Preprocessor):
            """Code cells without output would leave empty gaps once their input is hidden."""

            def preprocess(self, nb, resources):
                nb.cells = [c for c in nb.cells if c.cell_type != "code" or c.get("outputs")]
                return nb, resources

        exporter.register_preprocessor(_DropSilentCells(), True)

        class _FoldSkippedSections(Preprocessor):
            """Sections with nothing to show leave the page; they are named under the contents (``_toc``)."""

            def preprocess(self, nb, resources):
                nb.cells, resources["agentstats_skipped"] = _fold_skipped(nb.cells)
                return nb, resources

        exporter.register_preprocessor(_FoldSkippedSections(), True)
    body, res = exporter.from_notebook_node(nb, resources={"agentstats_version": _version()})
    body = _toc(body, res.get("agentstats_skipped"))
    if html is None:
        return body
    atomic_write_text(html, body)
    return Path(html)


def run_report(
    parameters: dict[str, Any],
    out_dir: str | Path = "reports",
    name: str = "report",
    *,
    template: str | Path | None = None,
    kernel_name: str = "python3",
    progress_bar: bool = True,
    show_code: bool = False,
    input_checked: bool = False,
) -> ReportPaths:
    """Execute the report notebook with ``parameters`` and export it to HTML.

    Parameters
    ----------
    parameters : dict
        Values for the template's ``parameters`` cell (``input_path``, ``input_format``, ``k_values``, ``seed``,
        ``run_bayes``, ``draws``, ``loader_options`` ...); each must be declared by the template.
        :data:`REPORT_DEFAULTS` fills the sampling and bootstrap sizes not given (those the template declares).
    out_dir : str or pathlib.Path
        Output folder, created if needed. Writes ``{name}.ipynb`` and ``{name}.html``.
    name : str
        File stem of the outputs, made safe by :func:`safe_report_name`.
    template : str or pathlib.Path, optional
        Notebook template; default :func:`default_notebook`.
    kernel_name : str
        Jupyter kernel to execute with (never taken from the template's metadata, which names whatever kernel its
        author had); the output notebook's ``kernelspec`` names it.
    progress_bar : bool
        Papermill's progress bar on stderr.
    show_code : bool
        Keep the code in the HTML (default: results and narrative only).
    input_checked : bool
        The caller has run :func:`check_input` on these parameters already (the command line does, to list the
        skipped records and check ``k_values`` before the notebook starts): the input is not read a second time
        before the notebook reads it.

    Returns
    -------
    ReportPaths

    Raises
    ------
    ReportParameterError
        Unknown parameters, or a name that would leave ``out_dir`` (a ``ValueError``).
    ReportInputError
        The input cannot be read (checked before the notebook starts).
    ReportError
        A cell failed, or the export did. The previous ``{name}.ipynb`` / ``{name}.html`` are left as they were;
        the partial notebook is written to ``{name}.failed.ipynb``, marked as failed.
    ReportInterrupted
        Ctrl-C (a ``KeyboardInterrupt``); outputs as for :class:`ReportError`.
    """
    import nbformat
    import papermill as pm

    template = Path(template) if template is not None else default_notebook()
    name = safe_report_name(name)
    out_dir = Path(out_dir)
    nb_path, html_path = out_dir / f"{name}.ipynb", out_dir / f"{name}.html"
    failed_path = out_dir / f"{name}{FAILED_SUFFIX}.ipynb"
    for p in (nb_path, html_path, failed_path):
        if p.resolve().parent != out_dir.resolve():
            raise ReportParameterError(f"report name {name!r} would write outside {out_dir}")
    declared = report_parameters(template)
    parameters = {**{k: v for k, v in REPORT_DEFAULTS.items() if k in declared}, **parameters}
    check_parameters(parameters, template)
    if not input_checked:
        check_input(parameters)
    out_dir.mkdir(parents=True, exist_ok=True)
    running = out_dir / f".{name}.running.ipynb"
    log = tempfile.NamedTemporaryFile(prefix="agentstats-kernel-", suffix=".log", delete=False)
    try:
        pm.execute_notebook(
            str(template),
            str(running),
            parameters=parameters,
            kernel_name=kernel_name,
            progress_bar=progress_bar,
            cwd=os.getcwd(),
            kernel_manager_class=_kernel_manager_class(log),
        )
        nb = nbformat.read(running, as_version=4)
        _set_kernelspec(nb, kernel_name)
        source = Path(str(parameters.get("input_path", name))).name
        nb.metadata["title"] = f"agentstats report: {one_line(source)}"
        nb.metadata["agentstats"] = {
            "status": "complete",
            "finished": datetime.now(UTC).isoformat(timespec="seconds"),
            "version": _version(),
        }
        body = export_html(nb, show_code=show_code)
        assert isinstance(body, str)
        atomic_write_text(html_path, body)
        atomic_write_text(nb_path, nbformat.writes(nb))
    except BaseException as exc:
        with _no_sigint():
            interrupted = isinstance(exc, KeyboardInterrupt)
            previous = html_path if html_path.exists() else nb_path if nb_path.exists() else None
            reason = "interrupted (Ctrl-C)" if interrupted else _failure_reason(exc)
            nb = nbformat.read(running if running.exists() else template, as_version=4)
            _mark_failed(nb, reason, "interrupted" if interrupted else "failed", previous)
            _set_kernelspec(nb, kernel_name)
            atomic_write_text(failed_path, nbformat.writes(nb))
            running.unlink(missing_ok=True)
            kept = f"previous report kept: {previous}" if previous else "no previous report"
            message = f"report {reason}; partial notebook: {failed_path} (marked FAILED); {kept}"
            if interrupted:
                raise ReportInterrupted(message, failed_notebook=failed_path, previous=previous) from exc
            if isinstance(exc, Exception):
                raise ReportError(message, failed_notebook=failed_path, previous=previous) from exc
            raise
    finally:
        log.close()
        with contextlib.suppress(OSError):
            os.unlink(log.name)
    running.unlink(missing_ok=True)
    failed_path.unlink(missing_ok=True)  # an older failed run is superseded by this complete one
    return ReportPaths(notebook=nb_path, html=html_path)


def _failure_reason(exc: BaseException) -> str:
    """One line saying what failed: the cell's exception for a papermill error, else the exception."""
    ename, evalue = getattr(exc, "ename", None), getattr(exc, "evalue", None)
    if ename:
        cell = getattr(exc, "exec_count", None)
        where = f" in cell In [{cell}]" if cell is not None else ""
        return f"failed{where}: {ename}: {one_line(evalue)}"
    return f"failed: {type(exc).__name__}: {one_line(exc)}"

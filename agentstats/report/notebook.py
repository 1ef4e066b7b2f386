"""Executable reports: run a report notebook with papermill, keep the previous report when a run fails.

The templates (``notebooks/report.ipynb`` and ``notebooks/compare.ipynb`` in the repository, shipped as package data
``agentstats/report/templates``) hold narrative and display calls only; their first code cell is tagged
``parameters`` (generated from :mod:`agentstats.report.params`) and papermill injects the values given here after it.
What a report run guarantees (docs/reliability.md, "Reports"):

* The input is read before the notebook starts (:func:`agentstats.report.inputs.load_input`): a file that cannot be
  loaded fails in a second with its location, not after a kernel start with a notebook traceback.
* Every parameter passed must be one the template declares (:func:`check_parameters`), and one its model accepts.
* Output names cannot leave the output folder or be hidden (:func:`safe_report_name`).
* ``NAME.ipynb`` and ``NAME.html`` are replaced only by a run that completed, atomically
  (:mod:`agentstats.files.atomic`). A run that fails or is interrupted leaves the previous report as it was and writes
  what it executed to ``NAME.failed.ipynb``, marked as failed in its metadata and its first cell.
* The HTML (:mod:`agentstats.report.html`) loads nothing from a network and, by default, shows the results without
  the code.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape as _escape
from importlib import resources
from pathlib import Path
from typing import Any

from agentstats._util.markup import one_line
from agentstats._util.progress import ProgressForwarder, strip_progress
from agentstats._util.signals import stop_signals_ignored
from agentstats.files.atomic import atomic_write_text

# notebooks/gate.ipynb (the gate's and the loop's) imports these two from here; they live in .display now: drop this
# import when the gate notebook imports them from there.
from agentstats.report.html import export_html
from agentstats.report.inputs import load_input
from agentstats.report.params import CompareParams, NotebookParams, ReportParameterError, ReportParams
from agentstats.report.provenance import package_version

__all__ = [
    "FAILED_SUFFIX",
    "ReportError",
    "ReportInterrupted",
    "ReportPaths",
    "check_parameters",
    "compare_notebook",
    "default_notebook",
    "default_report_name",
    "packaged_template",
    "recorded_checks",
    "report_parameters",
    "run_report",
    "safe_report_name",
]

#: A run that did not complete writes its notebook as ``NAME + FAILED_SUFFIX + ".ipynb"``.
FAILED_SUFFIX = ".failed"


# Characters kept in an output name: letters and digits (any script), underscore, dot, hyphen.
_UNSAFE_NAME = re.compile(r"[^\w.\-]+")


_MAX_NAME = 120


class ReportError(RuntimeError):
    """The report notebook failed while running.

    Attributes
    ----------
    failed_notebook : pathlib.Path
        The partially executed notebook, marked as failed.
    previous : pathlib.Path or None
        The previous complete report (HTML, else notebook) left in place, if there was one.
    ename : str or None
        The name of the exception the failed cell raised (``"EndpointUnavailable"`` for a judge that went down
        mid-run, which the command line turns into exit 69); None when the failure was not a cell's.
    """

    def __init__(self, message: str, *, failed_notebook: Path, previous: Path | None, ename: str | None = None):
        super().__init__(message)
        self.failed_notebook = failed_notebook
        self.previous = previous
        self.ename = ename


class ReportInterrupted(KeyboardInterrupt):
    """The run was interrupted (Ctrl-C); same attributes as :class:`ReportError`."""

    def __init__(self, message: str, *, failed_notebook: Path, previous: Path | None):
        super().__init__(message)
        self.failed_notebook = failed_notebook
        self.previous = previous


@dataclass(frozen=True)
class ReportPaths:
    """Where a report was written: the executed notebook and its HTML export, and what its fit's checks said.

    Attributes
    ----------
    notebook, html : pathlib.Path
        The executed notebook and its HTML export.
    checks : dict or None
        The Bayesian fit's verdict as the notebook recorded it (:meth:`agentstats.report.verdict.FitVerdict.as_record`:
        ``ok``, ``converged``, ``ppc_ok``, ``message`` ...); None when the report has no fit (``--no-bayes``) or the
        template shows none.
    markdown : pathlib.Path or None
        ``NAME.md``, the summary and key tables for a pull-request comment (:mod:`agentstats.report.digest`); None
        when the template writes no digest (the comparison notebook).
    """

    notebook: Path
    html: Path
    checks: dict[str, Any] | None = None
    markdown: Path | None = None


def recorded_digest(nb: Any) -> str | None:
    """Return the Markdown digest an executed report notebook carries (:data:`agentstats.report.display.DIGEST_KEY`)."""
    from agentstats.report.display import DIGEST_KEY

    for cell in nb.cells:
        for out in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
            found = (out.get("metadata") or {}).get(DIGEST_KEY)
            if isinstance(found, str):
                return found
    return None


def claim_report_name(out_dir: str | Path, name: str, input_path: str | Path) -> tuple[str, str | None]:
    """Choose the file stem of a report on ``input_path``, so that reports of two inputs never overwrite each other.

    ``NAME.ipynb`` records the input it was made from (its ``agentstats.input`` metadata, an absolute path). When
    ``out_dir`` holds a report ``name`` of another input, the next free ``name-2``, ``name-3`` ... is used (or the one
    that already holds this input's report); a report of the same input, or one without a record (made before
    the record existed), is replaced as before.

    Parameters
    ----------
    out_dir : str or pathlib.Path
        The output folder.
    name : str
        The wanted stem (made safe by :func:`safe_report_name`).
    input_path : str or pathlib.Path
        The report's input.

    Returns
    -------
    tuple of (str, str or None)
        The stem to write, and a sentence saying why it differs from ``name`` (None when it does not).
    """
    import nbformat

    name = safe_report_name(name)
    here = os.path.abspath(os.fspath(input_path))

    def holder(stem: str) -> str | None:
        path = Path(out_dir) / f"{stem}.ipynb"
        if not path.is_file():
            return None
        try:
            meta = nbformat.read(path, as_version=4).metadata.get("agentstats", {})
        except Exception:  # an unreadable notebook: not ours to judge, treated as without a record
            return None
        found = meta.get("input")
        return str(found) if found else None

    for i in range(1, 1000):
        stem = name if i == 1 else safe_report_name(f"{name}-{i}")
        found = holder(stem)
        if found is None or found == here:
            if i == 1:
                return stem, None
            other = Path(holder(name) or "another file").name
            return stem, (f"{Path(out_dir) / (name + '.html')} holds the report of another input ({other}); writing "
                          f"{stem}.html beside it (--name chooses the name)")
    raise ReportParameterError(f"{out_dir} holds 999 reports named {name}-N of other inputs: give --name")


def recorded_checks(nb: Any) -> dict[str, Any] | None:
    """Return the fit's verdict an executed report notebook carries (:data:`agentstats.report.display.CHECKS_KEY`).

    Parameters
    ----------
    nb : nbformat.NotebookNode
        The executed notebook.

    Returns
    -------
    dict or None
        The first verdict found in an output's metadata; None when there is none (no fit).
    """
    from agentstats.report.display import CHECKS_KEY

    for cell in nb.cells:
        for out in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
            found = (out.get("metadata") or {}).get(CHECKS_KEY)
            if found is not None:
                return dict(found)
    return None


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


def default_report_name(input_path: str | Path, run: str | None = None) -> str:
    """Return a report's file stem when none is given: the input's name without its data suffixes, and the run's.

    ``runs.jsonl.gz`` gives ``runs``; a run store with a run, ``store.duckdb`` and ``prompt-v2``, gives
    ``store-prompt-v2``, so the reports of two runs of one store do not overwrite each other. Made a plain file name
    by :func:`safe_report_name`.
    """
    name = Path(input_path).name
    for suffix in (".gz", ".jsonl", ".json", ".csv", ".parquet", ".duckdb"):
        name = name.removesuffix(suffix)
    return safe_report_name(name if run is None else f"{name}-{run}")


def report_parameters(template: str | Path | None = None) -> dict[str, dict[str, Any]]:
    """Parameters the template declares (``papermill.inspect_notebook``): name -> type, default and help.

    Parameters
    ----------
    template : str or pathlib.Path, optional
        Notebook; default :func:`default_notebook`.
    """
    import papermill as pm

    return dict(pm.inspect_notebook(str(template or default_notebook())))


def check_parameters(parameters: Mapping[str, Any], template: str | Path | None = None) -> None:
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
        "version": package_version(),
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


def run_report(
    parameters: NotebookParams | Mapping[str, Any],
    out_dir: str | Path = "reports",
    name: str = "report",
    *,
    template: str | Path | None = None,
    kernel_name: str | None = None,
    progress_bar: bool | None = None,
    show_code: bool | None = None,
    input_checked: bool = False,
) -> ReportPaths:
    """Execute a report notebook with ``parameters`` and export it to HTML.

    Parameters
    ----------
    parameters : ReportParams, CompareParams or mapping
        Values for the template's ``parameters`` cell; each must be declared by the template. A mapping for the
        report or comparison template is validated by its model (:class:`~agentstats.report.params.ReportParams`,
        :class:`~agentstats.report.params.CompareParams`), whose defaults fill what it leaves out; papermill then
        injects every parameter.
    out_dir : str or pathlib.Path
        Output folder, created if needed. Writes ``{name}.ipynb`` and ``{name}.html``.
    name : str
        File stem of the outputs, made safe by :func:`safe_report_name`.
    template : str or pathlib.Path, optional
        Notebook template; default :func:`default_notebook`.
    kernel_name : str, optional
        Jupyter kernel to execute with (never taken from the template's metadata, which names whatever kernel its
        author had); the output notebook's ``kernelspec`` names it. Default: ``parameters.kernel`` for
        :class:`ReportParams`, else ``"python3"``.
    progress_bar : bool, optional
        Papermill's progress bar (cells run) on stderr; default: when stderr is a terminal (a log or CI gets plain
        lines only). Either way the notebook's progress lines (:mod:`agentstats._util.progress`: each long step, what
        it does and for how long) are written to stderr as they come, and left out of the saved notebook and HTML.
    show_code : bool, optional
        Keep the code in the HTML (default: ``parameters.show_code`` for :class:`ReportParams`, else results and
        narrative only).
    input_checked : bool
        The caller has read the input with :func:`agentstats.report.inputs.load_input` already (the command line
        does, to list the skipped records and check ``k_values`` before the notebook starts): the input is not read
        a second time before the notebook reads it.

    Returns
    -------
    ReportPaths

    Raises
    ------
    ReportParameterError
        Unknown or refused parameters, or a name that would leave ``out_dir`` (a ``ValueError``).
    agentstats.report.inputs.ReportInputError
        The report's input cannot be read (checked before the notebook starts).
    ReportError
        A cell failed, or the export did. The previous ``{name}.ipynb`` / ``{name}.html`` are left as they were;
        the partial notebook is written to ``{name}.failed.ipynb``, marked as failed.
    ReportInterrupted
        Ctrl-C (a ``KeyboardInterrupt``); outputs as for :class:`ReportError`.
    """
    template = Path(template) if template is not None else default_notebook()
    name = safe_report_name(name)
    out_dir = Path(out_dir)
    for suffix in (".ipynb", ".html", ".md", f"{FAILED_SUFFIX}.ipynb"):
        if (out_dir / f"{name}{suffix}").resolve().parent != out_dir.resolve():
            raise ReportParameterError(f"report name {name!r} would write outside {out_dir}")
    model, values = _notebook_parameters(parameters, template)
    if isinstance(model, ReportParams):
        kernel_name = kernel_name if kernel_name is not None else model.kernel
        show_code = show_code if show_code is not None else model.show_code
        if not input_checked:
            load_input(model)
    if progress_bar is None:
        progress_bar = sys.stderr.isatty()
    return _execute(template, values, out_dir, name, kernel_name=kernel_name or "python3",
                    progress_bar=progress_bar, show_code=bool(show_code))


def _notebook_parameters(parameters: NotebookParams | Mapping[str, Any], template: Path
                         ) -> tuple[NotebookParams | None, dict[str, Any]]:
    """Return the parameters' model (None for a template without one) and the values papermill injects.

    Raises
    ------
    ReportParameterError
        A parameter the template does not declare, or one its model refuses.
    """
    given = parameters.notebook_values() if isinstance(parameters, NotebookParams) else dict(parameters)
    check_parameters(given, template)
    if isinstance(parameters, NotebookParams):
        return parameters, given
    models: dict[Path, type[NotebookParams]] = {default_notebook().resolve(): ReportParams,
                                                 compare_notebook().resolve(): CompareParams}
    model_type = models.get(template.resolve())
    if model_type is None:
        return None, given
    model = model_type.validated(given)
    return model, model.notebook_values()


def _execute(template: Path, parameters: dict[str, Any], out_dir: Path, name: str, *, kernel_name: str,
             progress_bar: bool, show_code: bool) -> ReportPaths:
    """Run the notebook with papermill; write the complete report, or the failed notebook marked as such."""
    import nbformat
    import papermill as pm

    nb_path, html_path, md_path = out_dir / f"{name}.ipynb", out_dir / f"{name}.html", out_dir / f"{name}.md"
    digest: str | None = None
    failed_path = out_dir / f"{name}{FAILED_SUFFIX}.ipynb"
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
            stderr_file=ProgressForwarder(_terminal_line(progress_bar)),
        )
        nb = nbformat.read(running, as_version=4)
        _strip_progress(nb)
        _set_kernelspec(nb, kernel_name)
        source = Path(str(parameters.get("input_path", name))).name
        nb.metadata["title"] = f"agentstats report: {one_line(source)}"
        checks = recorded_checks(nb)
        digest = recorded_digest(nb)
        given = parameters.get("input_path")
        nb.metadata["agentstats"] = {
            "status": "complete",
            **({"input": os.path.abspath(given)} if isinstance(given, str) else {}),
            "finished": datetime.now(UTC).isoformat(timespec="seconds"),
            "version": package_version(),
            **({"checks": checks} if checks is not None else {}),
        }
        body = export_html(nb, show_code=show_code)
        assert isinstance(body, str)
        atomic_write_text(html_path, body)
        if digest is not None:
            atomic_write_text(md_path, digest)
        atomic_write_text(nb_path, nbformat.writes(nb))
    except BaseException as exc:
        with stop_signals_ignored():  # a second Ctrl-C or SIGTERM must not lose it
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
                raise ReportError(message, failed_notebook=failed_path, previous=previous,
                                  ename=getattr(exc, "ename", None)) from exc
            raise
    finally:
        log.close()
        with contextlib.suppress(OSError):
            os.unlink(log.name)
    running.unlink(missing_ok=True)
    failed_path.unlink(missing_ok=True)  # an older failed run is superseded by this complete one
    return ReportPaths(notebook=nb_path, html=html_path, checks=checks,
                       markdown=md_path if digest is not None else None)


def _terminal_line(progress_bar: bool) -> Any:
    """Write one line to stderr: above papermill's progress bar when there is one (``tqdm.write``), else plainly."""
    if progress_bar:
        from tqdm.auto import tqdm  # type: ignore[import-untyped]

        return lambda line: tqdm.write(line, file=sys.stderr)

    def write(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    return write


def _strip_progress(nb: Any) -> None:
    """Leave the progress lines out of the executed notebook's stderr outputs (timings are not results)."""
    for cell in nb.cells:
        outputs = []
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream" and out.get("name") == "stderr":
                out["text"] = strip_progress(out.get("text", ""))
                if not out["text"]:
                    continue
            outputs.append(out)
        if cell.cell_type == "code":
            cell.outputs = outputs


def _failure_reason(exc: BaseException) -> str:
    """One line saying what failed: the cell's exception for a papermill error, else the exception."""
    ename, evalue = getattr(exc, "ename", None), getattr(exc, "evalue", None)
    if ename:
        cell = getattr(exc, "exec_count", None)
        where = f" in cell In [{cell}]" if cell is not None else ""
        return f"failed{where}: {ename}: {one_line(evalue)}"
    return f"failed: {type(exc).__name__}: {one_line(exc)}"

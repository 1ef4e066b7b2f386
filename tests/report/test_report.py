"""The report runner (agentstats.report.notebook, .html) and ``agentstats report``: names, parameters, input checks,
failures, interrupts, kernelspec, the self-contained HTML and the template as package data.

Most tests replace papermill's execution by a stand-in that writes what papermill writes (an executed or a partial
notebook) so that the file handling is tested in milliseconds; a few run a real kernel on a three-cell template.
"""

from __future__ import annotations

import copy
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import papermill
import pytest
from report_helpers import live_markup, network_urls, parse
from typer.testing import CliRunner

import agentstats.report.notebook as report_mod
from agentstats.cli import app
from agentstats.report.html import export_html
from agentstats.report.inputs import ReportInputError, load_input
from agentstats.report.notebook import ReportError, ReportInterrupted, default_notebook, run_report, safe_report_name
from agentstats.report.params import ReportParameterError, ReportParams

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "data" / "example_trials.jsonl"
runner = CliRunner()
#: The full sizes a report runs with (once run_report's REPORT_DEFAULTS, now ReportParams' defaults and so the
#: template's own): bootstrap resamples, draws (None: the fit's own default, at least 1000), tuning, chains, sampler
#: (None: the fastest installed) and cores (None: one per chain).
FULL_SIZES = {"n_boot": 2000, "draws": None, "tune": None, "chains": 4, "sampler": None, "cores": None}


# ---- a stand-in for papermill.execute_notebook


def _executed(template: str, parameters: dict, *, fail_at: int | None = None, interrupt_at: int | None = None):
    """The template as papermill leaves it: injected parameters, outputs on executed cells, statuses."""
    nb = nbformat.read(template, as_version=4)
    injected = nbformat.v4.new_code_cell("# Parameters\n" + "\n".join(f"{k} = {v!r}" for k, v in parameters.items()))
    injected.metadata["tags"] = ["injected-parameters"]
    first = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code")
    nb.cells.insert(first + 1, injected)
    count = 0
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        # papermill marks every cell "completed" when it is interrupted; only executed cells have a count
        cell.metadata["papermill"] = {"status": "completed"}
        stop = count in (fail_at, interrupt_at)
        if (fail_at is not None and count > fail_at) or (interrupt_at is not None and count > interrupt_at):
            cell.outputs, cell.execution_count = [], None
            continue
        count += 1
        cell.execution_count = count
        if stop:
            cell.outputs = [nbformat.v4.new_output("error", ename="ValueError", evalue="boom", traceback=[])]
        else:
            cell.outputs = [nbformat.v4.new_output("display_data", data={"text/plain": f"out {i}"})]
    return nb


@pytest.fixture
def fake_papermill(monkeypatch):
    """Replace papermill's execution; ``calls`` records each run, ``mode`` chooses success, failure or interrupt."""
    state = {"calls": [], "mode": "ok"}

    def execute_notebook(input_path, output_path, parameters=None, **kw):
        state["calls"].append({"parameters": parameters, **kw})
        mode = state["mode"]
        nb = _executed(input_path, parameters or {}, fail_at=3 if mode == "fail" else None,
                       interrupt_at=3 if mode == "interrupt" else None)
        nbformat.write(nb, output_path)
        if mode == "fail":
            raise papermill.PapermillExecutionError(4, 4, "raise ValueError", "ValueError", "boom", [])
        if mode == "interrupt":
            raise KeyboardInterrupt
        return nb

    monkeypatch.setattr(papermill, "execute_notebook", execute_notebook)
    return state


def params(**kw):
    return {"input_path": str(EXAMPLE), "run_bayes": False, **kw}


# ---- names


@pytest.mark.parametrize(
    ("wanted", "safe"),
    [("../../x", "x"), ("", "report"), (".", "report"), ("..", "report"), (".hidden", "hidden"),
     ("a/b\\c d", "a_b_c_d"), ("run 1: <b>", "run_1_b"), ("résumé-v2.final", "résumé-v2.final"),
     ("/etc/passwd", "etc_passwd"), ("x" * 300, "x" * 120), ("a\nb", "a_b")],
)
def test_safe_report_name(wanted, safe):
    assert safe_report_name(wanted) == safe


@pytest.mark.parametrize("name", ["../../x", "../escape", "/tmp/abs", "a/../../b"])
def test_report_name_cannot_write_outside_out_dir(fake_papermill, tmp_path, name):
    out = tmp_path / "nested" / "out"
    paths = run_report(params(), out_dir=out, name=name, progress_bar=False)
    for p in (paths.html, paths.notebook):
        assert p.resolve().parent == out.resolve()
        assert not p.name.startswith(".")
    assert sorted(os.listdir(tmp_path)) == ["nested"]
    assert sorted(os.listdir(tmp_path / "nested")) == ["out"]


def test_input_named_only_by_its_suffix_does_not_make_hidden_files(fake_papermill, tmp_path):
    src = tmp_path / ".jsonl"
    src.write_text(EXAMPLE.read_text())
    out = tmp_path / "out"
    res = runner.invoke(app, ["report", str(src), "--out-dir", str(out), "--no-bayes"])
    assert res.exit_code == 0, res.output
    assert sorted(os.listdir(out)) == ["report.html", "report.ipynb"]


def test_cli_says_when_it_changes_the_name(fake_papermill, tmp_path):
    res = runner.invoke(app, ["report", str(EXAMPLE), "--out-dir", str(tmp_path), "--name", "../../x", "--no-bayes"])
    assert res.exit_code == 0, res.output
    assert "using 'x'" in res.output
    assert (tmp_path / "x.html").is_file()


# ---- parameters


def test_template_declares_every_parameter_the_cli_and_run_report_pass(monkeypatch, tmp_path):
    seen = {}

    def fake_run_report(parameters, out_dir, name, kernel_name, show_code, **_):
        seen.update(parameters.notebook_values())
        return report_mod.ReportPaths(notebook=tmp_path / "r.ipynb", html=tmp_path / "r.html")

    monkeypatch.setattr(report_mod, "run_report", fake_run_report)
    res = runner.invoke(app, ["report", str(EXAMPLE), "--out-dir", str(tmp_path), "-p", "target_accept=0.95"])
    assert res.exit_code == 0, res.output
    declared = papermill.inspect_notebook(str(default_notebook()))
    assert set(seen) <= set(declared), set(seen) - set(declared)
    assert set(declared) == set(ReportParams.notebook_fields())  # the cell declares exactly the model's parameters
    assert "bayes_model" in declared  # its comment once hid it from papermill
    assert seen["target_accept"] == 0.95


def test_unknown_parameter_is_refused_before_anything_runs(fake_papermill, tmp_path):
    with pytest.raises(ReportParameterError, match=r"unknown report parameter.*bogus"):
        run_report(params(bogus=1), out_dir=tmp_path, name="r", progress_bar=False)
    with pytest.raises(ReportParameterError, match=r"draws: .*greater than or equal to 1 \(got 0\)"):
        run_report(params(draws=0), out_dir=tmp_path, name="r", progress_bar=False)  # a value the model refuses
    assert fake_papermill["calls"] == []
    assert not (tmp_path / "r.html").exists()


def test_the_template_and_run_report_have_the_full_sizes_and_nbval_runs_small_ones(fake_papermill, tmp_path):
    """One set of defaults: a report run and the template opened as it is (JupyterLab, papermill) get the full sizes;
    nbval runs a parameterized copy (tests/notebook_sizes.py), never a test switch in the package."""
    import ast

    from notebook_sizes import TEST_PARAMETERS

    run_report(params(), out_dir=tmp_path, name="r", progress_bar=False)
    passed = fake_papermill["calls"][0]["parameters"]
    declared = papermill.inspect_notebook(str(default_notebook()))
    small = TEST_PARAMETERS["report.ipynb"]
    for key, full in FULL_SIZES.items():
        assert passed[key] == full
        assert ast.literal_eval(declared[key]["default"]) == full == ReportParams.default(key)
    # nbval: PyMC (its compiled C is cached across runs), chains one after the other, and smaller sizes
    assert small["sampler"] == "pymc" and small["cores"] == 1
    # (tune None is the fit's default, 1,000 tuning steps, as draws None is its 1,000-2,000 draws)
    assert small["draws"] < 1000 and small["tune"] < 1000
    assert all(small[key] < FULL_SIZES[key] for key in ("n_boot", "chains"))
    assert Path(small["input_path"]).is_absolute() and Path(small["input_path"]).is_file()


# ---- input checked before the notebook starts


def test_malformed_input_exits_2_with_every_problem_located_and_no_notebook(fake_papermill, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"agent": "a", "task_id": "t", "trial": 0, "success": true}\n{"agent": "a", "task_id":\nnot json\n')
    t0 = time.perf_counter()
    res = runner.invoke(app, ["report", str(bad), "--out-dir", str(tmp_path / "out")])
    assert time.perf_counter() - t0 < 10
    assert res.exit_code == 2, res.output
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 2, res.output  # one line per problem, as `estimate` lists them; no traceback
    assert "bad.jsonl, line 2" in lines[0] and "1 more problem" in lines[0]
    assert "line 3" in lines[1]
    assert fake_papermill["calls"] == []
    assert not (tmp_path / "out").exists()


def test_load_input_uses_the_notebooks_loader_options(tmp_path):
    with pytest.raises(ReportInputError, match="success_col"):
        load_input(ReportParams(input_path=str(EXAMPLE), input_format="counts", loader_options={"success_col": "x"}))
    assert load_input(ReportParams(input_path=str(EXAMPLE), input_format="auto", loader_options={})).trials


# ---- failures and interrupts keep the previous report


def test_failed_rerun_keeps_previous_report_and_marks_partial_notebook(fake_papermill, tmp_path):
    first = run_report(params(), out_dir=tmp_path, name="r", progress_bar=False)
    before = {p: p.read_bytes() for p in (first.html, first.notebook)}
    fake_papermill["mode"] = "fail"
    with pytest.raises(ReportError) as err:
        run_report(params(), out_dir=tmp_path, name="r", progress_bar=False)
    assert {p: p.read_bytes() for p in before} == before  # untouched
    failed = tmp_path / "r.failed.ipynb"
    assert err.value.failed_notebook == failed and err.value.previous == first.html
    assert "previous report kept" in str(err.value) and "ValueError: boom" in str(err.value)
    nb = nbformat.read(failed, as_version=4)
    assert nb.metadata["agentstats"]["status"] == "failed"
    assert nb.cells[0].source.startswith("# FAILED")
    statuses = [c.metadata["papermill"]["status"] for c in nb.cells if c.cell_type == "code"]
    assert statuses[3] == "failed" and set(statuses[4:]) == {"pending"} and set(statuses[:3]) == {"completed"}
    assert sorted(os.listdir(tmp_path)) == ["r.failed.ipynb", "r.html", "r.ipynb"]  # no temporary file left
    # a later complete run replaces the report and removes the stale failed notebook
    fake_papermill["mode"] = "ok"
    run_report(params(), out_dir=tmp_path, name="r", progress_bar=False)
    assert sorted(os.listdir(tmp_path)) == ["r.html", "r.ipynb"]


def test_interrupted_run_is_marked_and_cli_exits_130_with_one_line(fake_papermill, tmp_path):
    fake_papermill["mode"] = "interrupt"
    with pytest.raises(ReportInterrupted) as err:
        run_report(params(), out_dir=tmp_path, name="r", progress_bar=False)
    assert err.value.previous is None
    nb = nbformat.read(tmp_path / "r.failed.ipynb", as_version=4)
    assert nb.metadata["agentstats"]["status"] == "interrupted"
    assert "pending" in [c.metadata["papermill"]["status"] for c in nb.cells if c.cell_type == "code"]
    res = runner.invoke(app, ["report", str(EXAMPLE), "--out-dir", str(tmp_path), "--name", "r", "--no-bayes"])
    assert res.exit_code == 130
    assert len(res.output.strip().splitlines()) == 1 and "interrupted" in res.output
    assert "Traceback" not in res.output


def test_outputs_are_written_atomically(fake_papermill, tmp_path, monkeypatch):
    """A crash while writing the HTML leaves the previous report whole (atomic_write), and no partial file."""
    run_report(params(), out_dir=tmp_path, name="r", progress_bar=False)
    before = (tmp_path / "r.html").read_bytes()

    def broken(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(report_mod, "export_html", broken)
    with pytest.raises(ReportError, match="OSError: disk full"):
        run_report(params(), out_dir=tmp_path, name="r", progress_bar=False)
    assert (tmp_path / "r.html").read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["r.failed.ipynb", "r.html", "r.ipynb"]


# ---- the HTML


def _executed_node(markdown_payload: str = "x") -> nbformat.NotebookNode:
    png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
    cells = [
        nbformat.v4.new_code_cell("input_path = 'x'  # template default", metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell("input_path = 'y'", metadata={"tags": ["injected-parameters"]}),
        nbformat.v4.new_markdown_cell("## First section\n\ntext"),
        nbformat.v4.new_code_cell("secret_code_line = 1", outputs=[nbformat.v4.new_output(
            "display_data", data={"image/png": png, "text/plain": "<Figure>"})]),
        nbformat.v4.new_code_cell("silent = 2"),
        nbformat.v4.new_markdown_cell("## Second section\n\n### Sub"),
        nbformat.v4.new_code_cell("df", outputs=[nbformat.v4.new_output(
            "execute_result", data={"text/html": "<table><tr><td>1</td></tr></table>", "text/plain": "df"},
            execution_count=3)]),
    ]
    return nbformat.v4.new_notebook(cells=cells, metadata={"title": "agentstats report: t"})


def test_html_is_self_contained_and_hides_code_by_default(tmp_path):
    out = export_html(_executed_node(), tmp_path / "r.html")
    html = Path(out).read_text(encoding="utf-8")
    assert network_urls(html) == []
    assert live_markup(html) == []  # not even the template's own scripts: nothing to fetch, nothing to run
    assert "cdnjs" not in html and "mathjax" not in html.lower().replace("mathjax_", "")
    assert 'src="data:image/png;base64,' in html
    text = "".join(parse(html).text)
    assert "secret_code_line" not in text and "silent" not in text and "input_path" not in text
    assert "<title>agentstats report: t</title>" in html
    shown = export_html(_executed_node(), tmp_path / "c.html", show_code=True)
    text = "".join(parse(Path(shown).read_text()).text)
    assert "secret_code_line" in text and "'y'" in text and "template default" not in text


def test_html_has_a_table_of_contents_linking_every_section(tmp_path):
    html = Path(export_html(_executed_node(), tmp_path / "r.html")).read_text()
    doc = parse(html)
    ids = {a.get("id") for t, a in doc.elements if t in ("h2", "h3")}
    links = [a["href"] for t, a in doc.elements if t == "a" and a.get("href", "").startswith("#")
             and "anchor-link" not in (a.get("class") or "")]
    assert [h[1:] for h in links] == ["First-section", "Second-section", "Sub"]
    assert {h[1:] for h in links} <= ids
    assert html.index('class="agentstats-toc"') < html.index('id="First-section"')


def test_table_of_contents_nests_subsections_under_their_section():
    import xml.etree.ElementTree as ET

    from agentstats.report.html_page import with_toc

    body = ('<h2 id="A">Prompt revisions</h2><h3 id="A1">Iteration 1 &#8594; 2</h3><p>x</p>'
            '<h3 id="A2">Iteration 2 &#8594; 3</h3><h2 id="B">Triggers</h2><h2 id="C">Provenance</h2>')
    html = with_toc(body)
    nav = ET.fromstring(html[html.index("<nav"):html.index("</nav>") + 6].replace("&#8594;", "to"))
    (top,) = nav.findall("ol")
    items = top.findall("li")
    # three numbered sections; the two iterations are a list inside the first, not sections 2 and 3
    assert [li.find("a").get("href") for li in items] == ["#A", "#B", "#C"]
    (inner,) = items[0].findall("ol")
    assert [li.find("a").get("href") for li in inner.findall("li")] == ["#A1", "#A2"]
    assert items[1].find("ol") is None and items[2].find("ol") is None
    assert html.endswith(body[body.index("<h2"):])


# ---- the template ships as package data


def test_default_notebook_resolves_from_package_data():
    path = default_notebook()
    assert path.parts[-4:] == ("agentstats", "report", "templates", "report.ipynb")
    nb = nbformat.read(path, as_version=4)
    first_code = next(c for c in nb.cells if c.cell_type == "code")
    assert "parameters" in first_code.metadata.get("tags", [])
    assert path.resolve() == (REPO / "notebooks" / "report.ipynb").resolve()  # one copy in the repository
    html_template = Path(report_mod.__file__).parent / "templates" / "nbconvert" / "agentstats_report"
    assert (html_template / "index.html.j2").is_file()


def test_version_comes_from_package_metadata():
    from importlib.metadata import version

    import agentstats

    assert agentstats.__version__ == version("agentstats")
    text = (REPO / "pyproject.toml").read_text()
    assert f'version = "{agentstats.__version__}"' in text


# ---- a real kernel on a three-cell template


def _tiny_template(folder: Path, body: str, kernel: dict | None = None) -> Path:
    cells = [nbformat.v4.new_code_cell("x = 1", metadata={"tags": ["parameters"]}),
             nbformat.v4.new_code_cell(body), nbformat.v4.new_code_cell("print('after')")]
    nb = nbformat.v4.new_notebook(cells=cells, metadata={"kernelspec": kernel or {
        "name": "python3", "display_name": "Template author's kernel", "language": "python"}})
    path = folder / "tiny.ipynb"
    nbformat.write(nb, path)
    return path


@pytest.mark.slow  # 1.5-3 s; the README's test command stays under 2 minutes
def test_real_run_names_the_kernel_that_ran_it(tmp_path):
    from jupyter_client.kernelspec import KernelSpecManager

    template = _tiny_template(tmp_path, "print(x)")
    paths = run_report({"x": 2}, out_dir=tmp_path / "o", name="t", template=template, progress_bar=False)
    nb = nbformat.read(paths.notebook, as_version=4)
    spec = KernelSpecManager().get_kernel_spec("python3")
    assert nb.metadata["kernelspec"] == {"name": "python3", "display_name": spec.display_name,
                                         "language": spec.language}
    assert nb.metadata["agentstats"]["status"] == "complete"


@pytest.mark.slow  # 1.5-3 s; the README's test command stays under 2 minutes
def test_real_failure_is_marked_and_keeps_nothing_half_written(tmp_path):
    template = _tiny_template(tmp_path, "raise ValueError('boom <b>')")
    with pytest.raises(ReportError, match=r"In \[\d+\]: ValueError: boom <b>"):
        run_report({"x": 2}, out_dir=tmp_path / "o", name="t", template=template, progress_bar=False)
    assert sorted(os.listdir(tmp_path / "o")) == ["t.failed.ipynb"]
    nb = nbformat.read(tmp_path / "o" / "t.failed.ipynb", as_version=4)
    last = [c for c in nb.cells if c.cell_type == "code"][-1]
    assert last.metadata["papermill"]["status"] == "pending" and not last.outputs


@pytest.mark.slow
def test_ctrl_c_during_a_real_report_prints_one_line_and_exits_130(tmp_path):
    """SIGINT to the CLI while the kernel runs: one line, exit 130, no ZMQError or other traceback."""
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentstats", "report", str(EXAMPLE), "--out-dir", str(out), "--name", "r"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        env={**os.environ, "TERM": "dumb"},
    )
    running = out / ".r.running.ipynb"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not running.exists():
        time.sleep(0.2)
    assert running.exists(), proc.communicate(timeout=60)
    time.sleep(8)  # well into the notebook (the Bayesian fit runs for about a minute)
    os.killpg(proc.pid, signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and "ZMQError" not in stderr, stderr
    tail = [ln for ln in stderr.replace("\r", "\n").splitlines()
            if ln.strip() and "Executing" not in ln and not ln.startswith("[agentstats] ")]  # progress lines aside
    assert len(tail) == 1 and "interrupted" in tail[0], stderr
    assert sorted(os.listdir(out)) == ["r.failed.ipynb"]
    assert json.loads((out / "r.failed.ipynb").read_text())["metadata"]["agentstats"]["status"] == "interrupted"


def test_diagnostics_table_for_reading():
    import numpy as np
    import pandas as pd

    from agentstats.report.model_tables import format_diagnostics

    table = pd.DataFrame({"variable": ["mu", "beta", "stuck"], "size": [1, 1500, 1], "r_hat": [1.00049, 1.0123, np.nan],
                          "ess_bulk": [12953.656, 390.4, np.nan], "ess_tail": [6882.3, 1200.5, np.nan],
                          "ok": [True, False, False]})
    out = format_diagnostics(table)
    assert list(out.index) == ["mu", "beta", "stuck"] and out.index.name == "variable"
    assert out.loc["mu"].tolist() == ["1", "1.000", "12,954", "6,882", "yes"]
    assert out.loc["beta"].tolist() == ["1,500", "1.012", "390", "1,200", "NO"]
    assert out.loc["stuck", "R-hat"] == "n/a (constant draws)" and out.loc["stuck", "ESS bulk"] == "n/a"


def test_sections_with_nothing_to_show_leave_the_page_and_are_named_under_the_contents():
    import nbformat
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

    from agentstats.report.display import SKIPPED_KEY
    from agentstats.report.html import export_html

    def note(text):
        return new_output("display_data", data={"text/markdown": f"*{text}*", "text/plain": "<Markdown>"},
                          metadata={SKIPPED_KEY: text})

    nb = new_notebook(cells=[
        new_markdown_cell("# Report"),
        new_markdown_cell("## Shown\n\nIntro."),
        new_code_cell("x", outputs=[new_output("display_data", data={"text/plain": "value 42"})]),
        new_markdown_cell("## Calibration <b>bold</b>\n\nExplained."),
        new_code_cell("y", outputs=[note("No set given (`agentstats report --judge-calibration c.jsonl`) <x>")]),
        new_code_cell("z", outputs=[]),
        new_markdown_cell("## Also shown"),
        new_code_cell("w", outputs=[note("part of a section that has more"),
                                    new_output("display_data", data={"text/plain": "more 7"})]),
    ])
    body = export_html(nbformat.from_dict(nb))
    assert "value 42" in body and "more 7" in body and "Explained." not in body
    toc = body[body.index('<nav class="agentstats-toc"'):body.index("</nav>")]
    assert "Shown" in toc and "Also shown" in toc and "Not in this report" in toc
    assert ("Calibration &lt;b&gt;bold&lt;/b&gt; — No set given (<code>agentstats report --judge-calibration "
            "c.jsonl</code>) &lt;x&gt;") in toc
    shown = export_html(nbformat.from_dict(nb), show_code=True)
    assert "Explained." in shown and "Not in this report" not in shown


@pytest.mark.slow
def test_bayesian_section_follows_the_report_k(tmp_path):
    """--k 1,3 on 5 trials per task: posterior table at k = 1, 3 and 8 (where the curves end, marked
    extrapolated), consistency and contrasts at pass^3 (no hard-coded 1, 2, 4, 8 or pass^4)."""
    import re

    rows = [{"agent": a, "task_id": f"t{t}", "trial": i, "success": i < c}
            for a, cs in (("A", [5, 3, 0, 1]), ("B", [4, 2, 1, 0])) for t, c in enumerate(cs) for i in range(5)]
    path = tmp_path / "basic.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    paths = run_report({"input_path": str(path), "k_values": [1, 3], "run_bayes": True, "draws": 100, "tune": 100,
                        "chains": 2, "sampler": "pymc", "n_boot": 200},
                       out_dir=tmp_path / "out", name="r", progress_bar=False)
    nb = nbformat.read(paths.notebook, as_version=4)
    texts = [str(o.get("data", {}).get("text/markdown", "")) + str(o.get("data", {}).get("text/plain", ""))
             for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    joined = "\n".join(texts)
    assert "**pass^3 and consistency per agent**" in joined and "pass^4" not in joined
    assert "**Pairwise contrasts of pass^3**" in joined
    assert "k = 1, 3, 8: the report's k and k = 8, where the curves above end" in joined
    table = next(t for t in texts if "n < k" in t and "median" in t and "Posterior" not in t)
    ks_shown = {int(m) for m in re.findall(r"^\S*\s+(\d)\s+0\.\d{3}", table, flags=re.M)}
    assert ks_shown == {1, 3, 8}, table


# ---- the command that regenerates a report


def test_report_command_shows_the_reports_own_k_and_options_and_no_folder():
    from agentstats.report.provenance import report_command

    # defaults only: the file's name, no folder, no option; k given explicitly are written as --k reads them
    assert report_command({"input_path": "/home/me/secret/runs.jsonl"}) == "agentstats report runs.jsonl"
    assert report_command({"input_path": "/x/runs.jsonl"}, k_values=[1, 2, 3, 4, 5]) == (
        "agentstats report runs.jsonl --k 1..5")
    assert report_command({"input_path": "r.csv"}, k_values=[5, 1, 2]) == "agentstats report r.csv --k 1,2,5"
    assert report_command({"input_path": "r.csv"}, k_values=[1, 2, 3, 8]) == "agentstats report r.csv --k 1..3,8"
    cmd = report_command(
        {"input_path": "/data/my runs.jsonl", "loader_options": {"on_error": "skip", "agents": "!human"},
         "run_bayes": True, "bayes_model": "beta_binomial", "population": "new", "draws": 500, "seed": 0,
         "judge_calibration": "/private/cal.jsonl", "judge_metric": "answer_correctness"},
        k_values=[1, 2, 3, 4],
    )
    # flags first, then the parameters without a flag as -p NAME=VALUE (each in ReportParams' order)
    assert cmd == ("agentstats report 'my runs.jsonl' --k 1..4 --agents '!human' --skip-bad "
                   "--bayes-model beta_binomial --population new -p draws=500 -p judge_calibration=cal.jsonl "
                   "-p judge_metric=answer_correctness")
    # --no-bayes drops the Bayesian options (they do not apply); a non-path input is a placeholder
    assert report_command({"input_path": None, "run_bayes": False, "draws": 500}, k_values=[2]) == (
        "agentstats report INPUT --k 2 --no-bayes")
    # run-table columns and the judge's URL: --columns; never the URL (where the report was made)
    assert report_command({"input_path": "r.csv", "loader_options": {"agent_col": "model", "task_col": "id"},
                           "judge": "openai", "judge_base_url": "http://10.0.0.1/v1"}) == (
        "agentstats report r.csv --columns agent=model,task=id --judge openai")


def test_report_command_writes_exactly_the_options_that_differ_from_the_defaults():
    """The defaults are ReportParams' (one owner): the default values are left out, every other value is written."""
    from agentstats.report.provenance import report_command

    default = {"input_path": "r.jsonl", "threshold": 0.7, "judge": "deterministic", "seed": 0, "run_bayes": True,
               "population": "observed", "ci_prob": 0.95, "n_boot": 2000, "tune": None, "method": None}
    assert report_command(default) == "agentstats report r.jsonl"
    new = {"input_path": "r.jsonl", "threshold": 0.8, "judge": "openai", "seed": 3, "run_bayes": False}
    assert report_command(new) == "agentstats report r.jsonl --no-bayes --judge openai -p seed=3 -p threshold=0.8"
    assert report_command({"input_path": "r.jsonl", "population": "new", "ci_prob": 0.9, "chains": 2,
                           "sampler": "pymc", "require_tools": True}) == (
        "agentstats report r.jsonl --ci-prob 0.9 --population new -p require_tools=true -p chains=2 -p sampler=pymc")
    # what it writes reads back as the same parameters
    from agentstats.report.params import parse_assignments

    read = parse_assignments(["require_tools=true", "chains=2", "sampler=pymc", "threshold=0.8", "draws=none"])
    assert ReportParams(input_path="r.jsonl", **read) == ReportParams(
        input_path="r.jsonl", require_tools=True, chains=2, sampler="pymc", threshold=0.8, draws=None)


def test_template_writes_the_regenerate_line_from_the_reports_own_values():
    text = default_notebook().read_text(encoding="utf-8")
    assert "agentstats report INPUT --k 1..4" not in text  # no fixed command in every report
    assert "report.regenerate_markdown()" in text  # ReportData.regenerate_command: its params and its own k


@pytest.mark.slow
def test_real_report_says_the_command_that_regenerates_it(tmp_path):
    src = tmp_path / "runs.jsonl"
    rows = [{"agent": a, "task_id": f"t{t}", "trial": i, "success": (t + i) % 3 != 0}
            for a in ("A", "B") for t in range(6) for i in range(3)]
    src.write_text("".join(json.dumps(r) + "\n" for r in rows) + "{not json\n")
    res = runner.invoke(app, ["report", str(src), "--out-dir", str(tmp_path / "o"), "--no-bayes", "--skip-bad",
                              "--k", "1..3"])
    assert res.exit_code == 0, res.output
    text = " ".join("".join(parse((tmp_path / "o" / "runs.html").read_text()).text).split())
    # the input lies outside the current directory: by its name, run from its folder; never the folder's path
    assert ("Regenerate with agentstats report runs.jsonl --k 1..3 --skip-bad --no-bayes, run from the folder that "
            "holds runs.jsonl (add") in text
    assert str(tmp_path) not in text


def test_the_regenerate_command_works_from_where_the_report_was_made(tmp_path, monkeypatch):
    """A file below the current directory is named by its path from there (the fresh-user trial: `agentstats report
    data/example_trials.jsonl` from the repository root said `agentstats report example_trials.jsonl`)."""
    from agentstats.report.provenance import file_word, report_command

    (tmp_path / "data").mkdir()
    monkeypatch.chdir(tmp_path)
    p = ReportParams(input_path="data/my runs.jsonl", judge_calibration="data/cal.jsonl", judge_metric="m")
    assert p.input_path == str(tmp_path / "data" / "my runs.jsonl")  # read from the caller's folder
    assert report_command(p) == ("agentstats report 'data/my runs.jsonl' -p judge_calibration=data/cal.jsonl "
                                 "-p judge_metric=m")
    assert file_word(tmp_path / "data" / "x.csv") == ("data/x.csv", True)
    assert file_word("/elsewhere/x.csv") == ("x.csv", False)
    assert file_word("/elsewhere/x.csv", cwd="/elsewhere") == ("x.csv", True)


# ---- papermill and nbconvert as users call them (issue 35, item 6)


def test_nbconvert_finds_the_exporter_by_its_entry_point_and_gives_the_reports_html(tmp_path):
    from nbconvert.exporters import get_exporter

    from agentstats.report.exporter import AgentstatsHTMLExporter

    assert get_exporter("agentstats-html") is AgentstatsHTMLExporter
    node = _executed_node()
    body, _ = AgentstatsHTMLExporter().from_notebook_node(copy.deepcopy(node))
    assert body == export_html(node)  # the same file agentstats report writes
    assert network_urls(body) == [] and live_markup(body) == []
    shown, _ = AgentstatsHTMLExporter(show_code=True).from_notebook_node(_executed_node())
    assert "secret_code_line" in "".join(parse(shown).text)


@pytest.mark.slow
def test_papermill_and_nbconvert_from_the_callers_folder(tmp_path):
    """papermill's CLI with -p as people type it, a relative input read from the caller's folder, then
    `jupyter nbconvert --to agentstats-html`: an inert, self-contained file."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "t.jsonl").write_bytes(EXAMPLE.read_bytes())
    bindir = Path(sys.executable).parent
    run = subprocess.run(
        [str(bindir / "papermill"), str(default_notebook()), "out.ipynb", "-p", "input_path", "sub/t.jsonl",
         "-p", "k_values", "1,2,4", "-p", "run_bayes", "False", "-p", "n_boot", "100", "--no-progress-bar"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    conv = subprocess.run([str(bindir / "jupyter"), "nbconvert", "--to", "agentstats-html", "out.ipynb"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert conv.returncode == 0, conv.stderr[-3000:]
    html = (tmp_path / "out.html").read_text(encoding="utf-8")
    assert network_urls(html) == [] and live_markup(html) == []
    text = " ".join("".join(parse(html).text).split())
    assert "Regenerate with agentstats report sub/t.jsonl --k 1,2,4 --no-bayes -p n_boot=100, run from the" in text
    assert str(tmp_path) not in text

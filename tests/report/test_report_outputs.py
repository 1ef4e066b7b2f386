"""What a report writes beside its HTML (issue 35, item 9): NAME.md, the summary and key tables for a pull-request
comment; and reports of two inputs with one name never overwriting each other."""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pandas as pd
import papermill
import pytest
from typer.testing import CliRunner

from agentstats.cli import app
from agentstats.report.build import build_report
from agentstats.report.digest import OPEN_ROWS, digest_markdown, markdown_table
from agentstats.report.display import DIGEST_KEY
from agentstats.report.notebook import claim_report_name
from agentstats.report.params import ReportParams

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "data" / "example_trials.jsonl"
runner = CliRunner()


@pytest.fixture
def fake_papermill(monkeypatch):
    """papermill's execution replaced: the template with one output carrying a digest naming the input."""

    def execute_notebook(input_path, output_path, parameters=None, **kw):
        nb = nbformat.v4.new_notebook()
        out = nbformat.v4.new_output("display_data", data={"text/plain": "summary"},
                                     metadata={DIGEST_KEY: f"digest of {parameters['input_path']}\n"})
        nb.cells = [nbformat.v4.new_code_cell("x", outputs=[out], execution_count=1)]
        nbformat.write(nb, output_path)
        return nb

    monkeypatch.setattr(papermill, "execute_notebook", execute_notebook)


def _two_inputs(tmp_path: Path) -> tuple[Path, Path]:
    a, b = tmp_path / "a" / "runs.jsonl", tmp_path / "b" / "runs.jsonl"
    for p in (a, b):
        p.parent.mkdir()
        shutil.copy(EXAMPLE, p)
    return a, b


def test_reports_of_two_inputs_with_one_name_do_not_overwrite_each_other(fake_papermill, tmp_path):
    a, b = _two_inputs(tmp_path)
    out = tmp_path / "reports"
    base = ["--out-dir", str(out), "--no-bayes"]
    first = runner.invoke(app, ["report", str(a), *base])
    assert first.exit_code == 0, first.output
    second = runner.invoke(app, ["report", str(b), *base])
    assert second.exit_code == 0, second.output
    said = " ".join(second.output.split())
    assert "runs.html holds the report of another input (runs.jsonl); writing runs-2.html beside it" in said
    assert (out / "runs.md").read_text() == f"digest of {a}\n"
    assert (out / "runs-2.md").read_text() == f"digest of {b}\n"
    assert nbformat.read(out / "runs-2.ipynb", as_version=4).metadata["agentstats"]["input"] == str(b)
    # a rerun of either replaces its own report (b's is runs-2, and the command says where it goes)
    again = runner.invoke(app, ["report", str(b), *base])
    assert again.exit_code == 0 and "writing runs-2.html beside it" in " ".join(again.output.split())
    rerun_a = runner.invoke(app, ["report", str(a), *base])
    assert rerun_a.exit_code == 0 and "another input" not in rerun_a.output
    assert sorted(p.name for p in out.iterdir()) == sorted(f"runs{s}{e}" for s in ("", "-2") for e in
                                                           (".html", ".ipynb", ".md"))
    # --name is the user's choice: it is used as given
    named = runner.invoke(app, ["report", str(b), *base, "--name", "runs"])
    assert named.exit_code == 0 and (out / "runs.md").read_text() == f"digest of {b}\n"
    assert "markdown (summary and key tables, for a pull-request comment):" in " ".join(named.output.split())


def test_claim_report_name_replaces_a_report_without_a_record(tmp_path):
    nbformat.write(nbformat.v4.new_notebook(), tmp_path / "runs.ipynb")  # a report made before the record existed
    assert claim_report_name(tmp_path, "runs", tmp_path / "x.jsonl") == ("runs", None)
    assert claim_report_name(tmp_path / "none", "runs", tmp_path / "x.jsonl") == ("runs", None)


def test_markdown_table_escapes_and_keeps_the_index():
    df = pd.DataFrame({"agent": ["a|b", "c"], "k": [1, 1], "value": [0.5, float("nan")]}).set_index(["agent", "k"])
    assert markdown_table(df).splitlines() == [
        "| agent | k | value |", "|---|---|---|", "| a\\|b | 1 | 0.500 |", "| c | 1 | n/a |"]


def test_digest_has_the_summary_and_the_key_tables_without_links_into_the_html():
    report = build_report(ReportParams(input_path=str(EXAMPLE), run_bayes=False, n_boot=200, k_values=[1, 2, 5]))
    md = digest_markdown(report)
    assert md.startswith("### agentstats report: example\\_trials.jsonl\n")  # Markdown-escaped, shown as is
    assert "- 3 agents, 40 tasks, 577 recorded trials (23 missing, excluded)" in md
    assert "](#" not in md  # no link into a page the comment does not have
    assert "**pass@k and pass^k per agent (k = 1, 5; unbiased, 95% task-cluster intervals)**" in md
    # the suite table at k = 1 and 5: 3 agents x 2 k = 6 rows, shown open; values as the report's table has them
    rows = [ln for ln in md.splitlines() if ln.startswith("| ") and (" | 1 | " in ln or " | 5 | " in ln)]
    assert len(rows) == 6
    assert "| candidate | 1 | 40/40 | 0.526 |" in md  # pass@1 = 0.526, as in the HTML report
    assert "**Paired differences in pass^1" in md and "| candidate | experimental |" in md
    assert md.rstrip().endswith("Regenerate with `agentstats report data/example_trials.jsonl --k 1,2,5 --no-bayes "
                                "-p n_boot=200`.")
    assert OPEN_ROWS >= 6


def test_the_tasks_behind_each_value_open_per_agent_without_script():
    from report_helpers import live_markup, parse

    from agentstats.report.tables import tasks_behind_html

    counts = pd.DataFrame([("A", "t1", 3, 1, 0), ("A", "t2", 2, 2, 1), ("<b>B</b>", "t1", 1, 0, 0),
                           ("<b>B</b>", "t<i>2", 0, 0, 2)], columns=["agent", "task_id", "n", "c", "n_missing"])
    html = tasks_behind_html(counts)
    assert live_markup(html) == [] and "<b>B</b>" not in html.replace("<b>&lt;b&gt;B&lt;/b&gt;</b>", "")
    doc = parse(html)
    assert sum(1 for t, _ in doc.elements if t == "details") == 2
    text = " ".join(" ".join(doc.text).split())
    # A: pass^1 = mean(1/3, 2/2) = 2/3, 3 of 5 trials; t1 (1/3) listed before t2 (2/2), one missing trial on t2
    assert "A : pass^1 = 0.667 over 2 tasks; 3 of 5 trials succeeded" in text
    assert "t1 1 / 3 ●○○ t2 2 / 2 ●● 1" in text
    # B: its task without a usable trial is not behind any value
    assert "<b>B</b> : pass^1 = 0.000 over 1 task; 0 of 1 trial succeeded" in text and "t<i>2" not in text
    # 23 trials, 12 successes: marks in groups of ten (a long row wraps on the page, as on METR's 88-trial tasks)
    long = tasks_behind_html(pd.DataFrame([("A", "t1", 23, 12, 0)],
                                          columns=["agent", "task_id", "n", "c", "n_missing"]))
    assert '<td class="marks">' + "●" * 10 + " " + "●●" + "○" * 8 + " " + "○" * 3 + "<" in long


def test_the_summarys_pass1_claim_opens_the_tasks_behind_it():
    report = build_report(ReportParams(input_path=str(EXAMPLE), run_bayes=False, n_boot=100, k_values=[1, 2]))
    summary = report.summary_markdown()
    line = next(ln for ln in summary.splitlines() if "Success in one try ranges" in ln)
    assert "(#tasks-behind)" in line and "(#pass-k-table)" in line

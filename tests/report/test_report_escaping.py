"""Strings from data or the command line render as text, never as markup, wherever a report shows them.

Unit tests render each Markdown producer's output with the renderer the HTML export uses (nbconvert's mistune
``markdown2html``) and check (a) nothing live: no element, event handler or ``javascript:`` URL came from the data;
(b) the reader still sees the original characters. The slow test runs the real report on an input whose every
free-text field carries markup and parses the exported HTML.
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import nbformat
import numpy as np
import pandas as pd
import pytest
from nbconvert.filters.markdown_mistune import markdown2html_mistune
from report_helpers import EVIL_FILE_NAME, IMG, LINK, PAYLOADS, SCRIPT, live_markup, parse, write_evil_input

from agentstats._util.markup import html_text, md_code, md_text, one_line
from agentstats.io.loaders import Dataset
from agentstats.models import SamplerInfo
from agentstats.records.problems import Problem
from agentstats.report.model_tables import format_consistency, format_contrast_table
from agentstats.report.prose import read_suite, report_summary
from agentstats.report.provenance import run_details
from agentstats.report.scoring_tables import format_schema_errors
from agentstats.report.tables import format_counts_table, format_suite_table

AGENTS = [f"a {p}" for p in PAYLOADS]


def render(markdown: str) -> str:
    return markdown2html_mistune(markdown)


def visible_text(html: str) -> str:
    return "".join(parse(html).text).strip()


@pytest.mark.parametrize(
    "payload",
    [*PAYLOADS, "a_b*c* `x` # h $x$ & \"q\" 's' | ~~s~~ ![i](http://e/x.png)", "1. item", "12) item", "- item",
     "+ item", "# heading", "> quote", "=== setext", "---", "see www.example.com", "http://example.com/x",
     "a@example.com", "mailto:a", "x | y", "<https://example.com>"],
)
def test_md_text_renders_the_characters_and_nothing_live(payload):
    html = render(f"**{md_text(payload)}** and {md_code(payload)}")
    assert live_markup(html) == []
    assert [t for t, _ in parse(html).elements if t not in ("p", "strong", "code")] == []
    assert visible_text(html) == f"{payload} and {payload}"


def test_md_text_leaves_ordinary_names_as_they_are():
    for name in ("davinci-002", "Claude 3.5 Sonnet (New)", "gpt-4o-2024-05-13", "o1", "task 42: (easy)"):
        assert md_text(name) == name


def test_md_text_keeps_a_value_on_one_line():
    # a newline would start a new block: a heading, a list, a code fence
    html = render(f"name: {md_text('x' + chr(10) + '# heading' + chr(10) + '```')}")
    assert [t for t, _ in parse(html).elements] == ["p"]
    assert one_line("a\r\nb\x00c\u2028d") == "a bc d"


def test_md_code_fence_is_longer_than_any_backtick_run():
    for value in ("a`b", "``x``", "`", "<b>`</b>"):
        html = render(md_code(value))
        assert visible_text(html) == value
        assert [t for t, _ in parse(html).elements] == ["p", "code"]


def test_html_text_escapes_attribute_quotes():
    assert html_text('"><script>') == "&quot;&gt;&lt;script&gt;"


def counts_for(agents, n_tasks=3, n=4):
    rows = []
    for i, a in enumerate(agents):
        for t in range(n_tasks):
            rows.append({"agent": a, "task_id": f"t{t} {SCRIPT}", "n": n, "c": (i + t) % (n + 1), "n_missing": 0})
    return pd.DataFrame(rows)


def suite_for(agents, ks=(1, 2)):
    rows = []
    for i, a in enumerate(agents):
        for k in ks:
            v = 0.2 + 0.2 * i
            rows.append({"agent": a, "k": k, "n_tasks": 3, "n_tasks_dropped": 0, "pass_at_k": v,
                         "pass_at_k_ci_low": v - 0.05, "pass_at_k_ci_high": v + 0.05, "pass_hat_k": v / k,
                         "pass_hat_k_ci_low": v / k - 0.05, "pass_hat_k_ci_high": v / k + 0.05})
    return pd.DataFrame(rows)


def test_summary_markdown_escapes_file_name_format_and_skipped_value():
    counts = counts_for(AGENTS)
    ds = Dataset(
        trials=None,
        counts=counts,
        source=f"/data/{EVIL_FILE_NAME}",
        format=f"fmt{IMG}",
        skipped=[Problem(f"/data/{EVIL_FILE_NAME}", 3, f"field{SCRIPT}", f"bad value {LINK} {IMG}")],
    )
    html = render(ds.summary_markdown())
    assert live_markup(html) == []
    text = visible_text(html)
    assert EVIL_FILE_NAME in text and f"fmt{IMG}" in text and f"bad value {LINK} {IMG}" in text
    assert "/data/" not in text  # the directory is not shown, only the file name (also in the skipped record)


def test_read_suite_and_summary_escape_agent_names():
    suite = suite_for(AGENTS)
    for md in (read_suite(suite), report_summary(counts_for(AGENTS), suite)):
        html = render(md)
        assert live_markup(html) == []
        assert all(a in visible_text(html) for a in AGENTS[1:])


def test_run_details_and_consistency_note_escape_every_value():
    fit = SimpleNamespace(
        sampler=SamplerInfo(sampler=f"s{IMG}", chains=2, draws=10, tune=10, draws_max=10, target_accept=0.9,
                            random_seed=1),
        diagnostics=lambda: SimpleNamespace(ok=True), family=SimpleNamespace(name=f"m{IMG}"),
    )
    md = run_details(counts_for(AGENTS), source=EVIL_FILE_NAME, input_format=f"f{SCRIPT}", judge=f"j{IMG}",
                     model=f"m{LINK}", population="new", fit=fit)
    html = render(md)
    assert live_markup(html) == []
    for s in (EVIL_FILE_NAME, f"f{SCRIPT}", f"j{IMG}", f"m{LINK}", f"s{IMG}"):
        assert s in visible_text(html)
    table = pd.DataFrame({"agent": AGENTS, "n_tasks": 3, "n_tasks_multi": 3, "flip_share": 0.5, "icc_anova": 0.2,
                          "icc_model": 0.3, "icc_model_low": 0.1, "icc_model_high": 0.5, "icc_cell": np.nan,
                          "icc_cell_low": np.nan, "icc_cell_high": np.nan, "icc_cell_estimable": False})
    _, note = format_consistency(table, fit)
    html = render(note)
    assert live_markup(html) == [] and f"m{IMG}" in visible_text(html)


def test_tables_shown_in_the_report_escape_cells_index_and_headers():
    """The report's tables are DataFrames: pandas escapes them when the notebook shows them (HTML output)."""
    counts = counts_for(AGENTS)
    from agentstats.report.tables import describe_counts

    contrasts = pd.DataFrame([{"k": 1, "agent_a": AGENTS[0], "agent_b": AGENTS[1], "prob_greater": 0.2,
                               "diff_mean": -0.1, "diff_low": -0.2, "diff_high": 0.0}])
    schema = pd.DataFrame([{"kind": "wrong_type", "tool": f"t{IMG}", "count": 1, "n_calls": 1, "n_trials": 1,
                            "example_path": f"$.{SCRIPT}", "example_message": LINK}])
    frames = [
        format_counts_table(describe_counts(counts)),
        format_suite_table(suite_for(AGENTS)),
        format_contrast_table(contrasts),
        format_schema_errors(schema),
    ]
    for df in frames:
        html = df._repr_html_()
        assert live_markup(html) == [], df
        assert any(p in visible_text(html) for p in PAYLOADS)


def test_summary_names_the_agent_ahead_only_with_evidence():
    """'Ahead' needs P >= 0.95 against every other agent; the highest point estimate alone is not enough."""
    agents = ["h", "m1", "m2"]
    suite = suite_for(agents)
    prob = pd.DataFrame([[np.nan, 0.99, 0.999], [0.01, np.nan, 0.97], [0.001, 0.03, np.nan]], index=agents,
                        columns=agents)
    text = report_summary(counts_for(agents), suite, prob=prob)
    assert "**h** is ahead of every other agent" in text
    assert ("Of the others, no agent is credibly ahead of **m1**; each remaining agent is behind at least one of "
            "them") in text
    prob.loc["m1", "m2"], prob.loc["m2", "m1"] = 0.6, 0.4  # m1 and m2 not separated: nothing more to say
    assert "Of the others" not in report_summary(counts_for(agents), suite, prob=prob)
    prob.loc["h", "m1"] = 0.9  # h no longer credibly ahead of m1
    prob.loc["m1", "h"] = 0.1
    text = report_summary(counts_for(agents), suite, prob=prob)
    assert "ahead of every other agent" not in text
    assert ("No agent is ahead of all others. No agent is credibly ahead of **h** or **m1** (posterior probability "
            "≥ 0.95 at pass^1); **m2** is behind at least one agent") in text
    # without posterior probabilities, paired intervals decide: h - m1 and h - m2 above 0, m1 - m2 straddles 0
    paired = pd.DataFrame([
        {"agent_a": "h", "agent_b": "m1", "k": 1, "n_tasks": 3, "pass_hat_k_diff_ci_low": 0.1,
         "pass_hat_k_diff_ci_high": 0.3, "ci_prob": 0.95},
        {"agent_a": "m2", "agent_b": "h", "k": 1, "n_tasks": 3, "pass_hat_k_diff_ci_low": -0.4,
         "pass_hat_k_diff_ci_high": -0.1, "ci_prob": 0.95},
        {"agent_a": "m1", "agent_b": "m2", "k": 1, "n_tasks": 3, "pass_hat_k_diff_ci_low": -0.1,
         "pass_hat_k_diff_ci_high": 0.2, "ci_prob": 0.95},
    ])
    text = report_summary(counts_for(agents), suite, paired=paired)
    assert "**h** is ahead of every other agent (paired 95% intervals" in text and "among the others" not in text
    # without posterior probabilities or paired differences, overlapping intervals separate nobody
    assert "do not separate them" in report_summary(counts_for(agents), suite.assign(
        pass_hat_k_ci_low=0.0, pass_hat_k_ci_high=1.0))


@pytest.mark.slow
def test_real_report_on_markup_in_every_field_is_inert(tmp_path):
    """The real report (papermill + nbconvert) on an input with markup in every free-text field and its file name."""
    from agentstats.report.notebook import run_report

    src = write_evil_input(tmp_path)
    out = tmp_path / "out"
    params = {"input_path": str(src), "loader_options": {"on_error": "skip"}, "n_boot": 100, "draws": 60, "tune": 60,
              "chains": 2, "k_max_bayes": 2, "metrics": "answer_quality,readability,pii"}
    paths = run_report(params, out_dir=out, name="evil", progress_bar=False)
    html = paths.html.read_text(encoding="utf-8")
    assert live_markup(html) == []
    text = visible_text(html)
    # the payloads are shown as text: agent names, the file name, the skipped record's value
    for p in (SCRIPT, IMG, LINK, EVIL_FILE_NAME):
        assert p in text
    assert "malformed record(s) skipped" in text
    # the executed notebook's Markdown outputs are escaped too (JupyterLab renders them)
    nb = nbformat.read(paths.notebook, as_version=4)
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            md = o.get("data", {}).get("text/markdown")
            if md:
                assert live_markup(render(md)) == [], md
            h = o.get("data", {}).get("text/html")
            if h:
                assert live_markup(h) == [], h[:200]
    assert json.dumps(nb.metadata["kernelspec"])  # written and complete
    # a shared report carries no stray log lines (PyMC's "Sampling: [...]" and the like) on stderr
    stderr = [o.get("text", "") for c in nb.cells for o in c.get("outputs", [])
              if o.get("output_type") == "stream" and o.get("name") == "stderr"]
    assert stderr == []

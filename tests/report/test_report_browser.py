"""The exported report in a real browser (Playwright + headless Chromium), opened from disk with the network off.

For the markup-laden input, the example data and, when ``../shared/data`` is present, METR and tau-bench: no dialog
fires, the page logs no error, no request leaves the file, no table or output is wider than the page. Full-page
screenshots are written to ``reports/screenshots/`` (ignored by git) for a person to look at.

Needs ``pip install playwright`` and Chromium: Debian's ``chromium`` package (``/usr/bin/chromium``) or
``playwright install chromium``; skipped otherwise.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from report_helpers import write_evil_input

from agentstats.report.notebook import run_report

pytestmark = [pytest.mark.browser, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
SCREENSHOTS = REPO / "reports" / "screenshots"
SMALL = {"n_boot": 200, "draws": 150, "tune": 150, "chains": 2}


def _chromium_path() -> str | None:
    """A Chromium for Playwright: $AGENTSTATS_CHROMIUM, the system's, or None for Playwright's own download."""
    for cand in (os.environ.get("AGENTSTATS_CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium"),
                 shutil.which("chromium-browser")):
        if cand and Path(cand).is_file():
            return cand
    return None


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    with sync_api.sync_playwright() as p:
        try:
            b = p.chromium.launch(executable_path=_chromium_path(), args=["--no-sandbox"])
        except Exception as exc:  # no browser binary
            pytest.skip(f"Chromium not available for Playwright ({str(exc).splitlines()[0]})")
        yield b
        b.close()


def open_report(browser, html: Path, shot: str) -> dict:
    """Open ``html`` offline; return what happened (dialogs, errors, requests, overflow) and save a screenshot."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 900}, offline=True)
    page = ctx.new_page()
    seen: dict[str, list] = {"dialogs": [], "errors": [], "requests": []}
    page.on("dialog", lambda d: (seen["dialogs"].append(d.message), d.dismiss()))
    page.on("console", lambda m: m.type == "error" and seen["errors"].append(m.text))
    page.on("pageerror", lambda e: seen["errors"].append(str(e)))
    page.on("request", lambda r: seen["requests"].append(r.url))
    page.goto(html.as_uri())
    page.wait_for_load_state("load")
    page.wait_for_timeout(500)
    seen["overflow"] = page.evaluate(
        """() => {
        const out = [];
        const page = document.documentElement;
        if (page.scrollWidth > page.clientWidth + 1) out.push(`page ${page.scrollWidth} > ${page.clientWidth}`);
        const main = document.querySelector('main').getBoundingClientRect();
        for (const el of document.querySelectorAll('table, .jp-OutputArea-output, img')) {
            const r = el.getBoundingClientRect();
            if (r.right > main.right + 1) out.push(`${el.tagName} right ${r.right} > ${main.right}`);
            if (el.scrollWidth > el.clientWidth + 1 && el.tagName !== 'IMG')
                out.push(`${el.tagName}.${el.className} scrolls: ${el.scrollWidth} > ${el.clientWidth}`);
        }
        return out;
    }"""
    )
    seen["headings"] = page.evaluate("() => [...document.querySelectorAll('h1')].map(h => h.textContent)")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{shot}.png"), full_page=True)
    ctx.close()
    seen["requests"] = [u for u in seen["requests"] if not u.startswith(("file:", "data:"))]
    return seen


def _check(seen: dict) -> None:
    assert seen["dialogs"] == []
    assert seen["errors"] == []
    assert seen["requests"] == []
    assert seen["overflow"] == []


def test_markup_in_the_data_stays_text_in_the_browser(browser, tmp_path):
    src = write_evil_input(tmp_path)
    paths = run_report({"input_path": str(src), "loader_options": {"on_error": "skip"}, **SMALL, "k_max_bayes": 2,
                        "metrics": "answer_quality,readability,pii"},
                       out_dir=tmp_path / "out", name="evil", progress_bar=False)
    seen = open_report(browser, paths.html, "evil")
    _check(seen)
    assert any("<img src=x onerror=alert(1)>" in h for h in seen["headings"])  # shown as text in the title


def test_example_report_in_the_browser(browser, tmp_path):
    paths = run_report({"input_path": str(REPO / "data" / "example_trials.jsonl"), **SMALL},
                       out_dir=tmp_path, name="example", progress_bar=False)
    _check(open_report(browser, paths.html, "example"))


@pytest.mark.parametrize(
    ("name", "rel", "options"),
    [
        ("metr", "metr-time-horizon/all_runs.jsonl.gz",
         {"input_format": "metr", "loader_options": {"agent_col": "alias", "task_col": "task_id",
                                                     "success_col": "score_binarized"}}),
        ("tau-bench", "tau-bench-historical/gpt-4o-airline.json.gz", {}),
    ],
)
def test_real_data_reports_in_the_browser(browser, shared_data, tmp_path, name, rel, options):
    paths = run_report({"input_path": str(shared_data / rel), **options, **SMALL}, out_dir=tmp_path, name=name,
                       progress_bar=False)
    _check(open_report(browser, paths.html, name))

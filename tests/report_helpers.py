"""Helpers of the report tests: an input whose every free-text field carries markup, and HTML inspection.

The checks parse HTML with the standard library's ``html.parser`` (what a browser would build elements from), so a
payload counts as *live* only when it became an element or attribute, not when its text is shown.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

SCRIPT = "<script>alert(1)</script>"
IMG = "<img src=x onerror=alert(1)>"
LINK = "[x](javascript:alert(1))"
PAYLOADS = (SCRIPT, IMG, LINK)
#: A file name can hold every payload but the script tag (it contains "/").
EVIL_FILE_NAME = f"evil {IMG} {LINK}.jsonl"


def evil_trials(n_trials: int = 3) -> list[dict]:
    """Trials of three agents on three tasks whose every free-text field carries one of :data:`PAYLOADS`.

    Agent names, task ids, answers, expected answers, queries, tool names (called, expected and specified),
    tool descriptions, argument names and values, tags and ``meta`` all carry markup; outcomes are given
    (``success``) and also derivable from the conversations, so the scoring section runs too.
    """
    agents = [f"agent {p}" for p in PAYLOADS]
    tasks = [f"task {p}" for p in PAYLOADS]
    tool = f"tool{IMG}"
    rows = []
    for ai, agent in enumerate(agents):
        for ti, task in enumerate(tasks):
            for trial in range(n_trials):
                ok = (ai + ti + trial) % 3 != 0
                payload = PAYLOADS[(ai + trial) % 3]
                rows.append(
                    {
                        "agent": agent,
                        "task_id": task,
                        "trial": trial,
                        "success": ok,
                        "interactions": [
                            {
                                "id": f"q {payload}",
                                "query": f"question {SCRIPT}",
                                "answer": payload if ok else f"wrong {payload}",
                                "expected_answer": payload,
                                "context": [LINK],
                                "tool_calls": [
                                    {"name": tool if ok else f"other {SCRIPT}", "arguments": {f"arg{IMG}": payload}}
                                ],
                                "expected_tool_calls": [{"name": tool, "arguments": {f"arg{IMG}": payload}}],
                            }
                        ],
                        "tools": [
                            {
                                "name": tool,
                                "description": LINK,
                                "parameters": {
                                    "type": "object",
                                    "properties": {f"arg{IMG}": {"type": "integer"}},
                                    "required": [f"arg{IMG}"],
                                },
                            }
                        ],
                        "tags": [SCRIPT],
                        "meta": {"note": IMG},
                    }
                )
    return rows


def write_evil_input(folder: Path, *, bad_record: bool = True) -> Path:
    """Write :func:`evil_trials` as JSONL under :data:`EVIL_FILE_NAME`, plus one malformed record carrying markup."""
    path = folder / EVIL_FILE_NAME
    lines = [json.dumps(r) for r in evil_trials()]
    if bad_record:
        lines.append(json.dumps({"agent": SCRIPT, "task_id": IMG, "trial": LINK, "success": True}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


class _Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.script_text: list[str] = []
        self.style_text: list[str] = []
        self._in_script = False
        self._in_style = False
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))
        self._in_script = tag == "script"
        self._in_style = tag == "style"

    def handle_startendtag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = False
        if tag == "style":
            self._in_style = False

    def handle_data(self, data):
        if self._in_script:
            self.script_text.append(data)
        elif self._in_style:
            self.style_text.append(data)
        else:
            self.text.append(data)


def parse(html: str) -> _Collector:
    """Elements (tag, attributes), script contents and text of an HTML document."""
    c = _Collector()
    c.feed(html)
    c.close()
    return c


def live_markup(html: str) -> list[str]:
    """What in ``html`` would run: script elements, event-handler attributes, ``javascript:`` URLs.

    Returns
    -------
    list of str
        One description per finding; empty when the document is inert.
    """
    doc = parse(html)
    found = []
    for tag, attrs in doc.elements:
        if tag == "script":
            found.append(f"<script {attrs}>")
        for name, value in attrs.items():
            if name.startswith("on"):
                found.append(f"<{tag} {name}={value!r}>")
            if name in ("href", "src", "action", "formaction", "xlink:href") and value:
                if value.strip().lower().replace("\t", "").replace("\n", "").startswith("javascript:"):
                    found.append(f"<{tag} {name}={value!r}>")
    return found


_CSS_URL = re.compile(r"""(?:@import\s+|url\(\s*)["']?\s*((?:https?:)?//[^"')\s]+)""", re.I)


def network_urls(html: str) -> list[str]:
    """What a browser would fetch from a network: ``src``/``href``/``data`` attributes, CSS ``@import``/``url()``."""
    doc = parse(html)
    urls = []
    for tag, attrs in doc.elements:
        for name in ("src", "href", "data", "srcset", "poster"):
            value = (attrs.get(name) or "").strip()
            if value.lower().startswith(("http:", "https:", "//")):
                urls.append(f"<{tag} {name}={value}>")
        urls.extend(f"<{tag} style=...{m}>" for m in _CSS_URL.findall(attrs.get("style") or ""))
    urls.extend(f"<style> {m}" for m in _CSS_URL.findall("".join(doc.style_text)))
    return urls

"""Run the README's live-capture example against the loopback OpenAI-compatible server (``make demo-capture``).

The example is read from README.md (the Python block that opens a run), so the demo is always the code a user
pastes. ``--loopback`` (what ``make demo-capture`` passes) starts the scripted server of ``tests/judge_server.py`` on
127.0.0.1, answering "Paris" to questions about France; without it the example calls the endpoint of
``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``. The store is written in a fresh folder (``--store``).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def readme_example() -> str:
    """The README's Python block that contains ``.run(`` (the live-capture example)."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    for block in blocks:
        if ".run(" in block and ".node(" in block:
            return block
    raise SystemExit("README.md has no live-capture example (a python block with .node( and .run()")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", default="reports/demo-capture/agentstats.duckdb", help="store file (recreated)")
    ap.add_argument("--loopback", action="store_true", help="serve the endpoint locally (no network)")
    args = ap.parse_args(argv)
    store = Path(args.store).resolve()
    store.parent.mkdir(parents=True, exist_ok=True)
    for old in (store, store.with_name(store.name + ".wal")):
        old.unlink(missing_ok=True)
    server = None
    if args.loopback:
        sys.path.insert(0, str(REPO / "tests"))
        from judge_server import Reply, ScriptedOpenAIServer, user_text

        server = ScriptedOpenAIServer(
            responder=lambda req: Reply.text("Paris" if "France" in user_text(req) else "I do not know")
        ).start()
        os.environ["OPENAI_BASE_URL"] = server.base_url
        os.environ.setdefault("OPENAI_API_KEY", "loopback")
    code = readme_example().replace('"agentstats.duckdb"', repr(str(store)))
    lines = code.rstrip().splitlines()
    lines[-1] = f"print({lines[-1].split('#')[0].strip()}.to_string())"  # show the last expression's value
    os.chdir(store.parent)
    try:
        exec(compile("\n".join(lines), "README.md (live-capture example)", "exec"), {"__name__": "__demo__"})
    finally:
        if server is not None:
            server.stop()
    print(f"stored in {store}; try: .venv/bin/agentstats runs show prompt-v2 --store {store}")


if __name__ == "__main__":
    main()

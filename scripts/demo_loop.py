"""Run the evaluator-optimizer loop on data/example_loop against a local stand-in endpoint (``make demo-loop``).

``--loopback`` (what ``make demo-loop`` passes) starts the scripted OpenAI-compatible server of the loop's tests
(``tests/loop_helpers.py``) on 127.0.0.1, playing agent, judge and optimizer: the starting prompt answers half of the
12 questions well, the first revision all of them, the second none (so iteration 2 improves, iteration 3
regresses, and the loop stops on no credible improvement). Without ``--loopback`` the config's own ``base_url``
(and ``OPENAI_API_KEY``) are used. The eval set, baseline and config are copied into ``--out`` (recreated), the
config pointed at the endpoint, then ``agentstats loop --config ... --out-dir ... --store ...`` runs there, exactly
as a user runs it. The exit status is the loop's: 0 PASS, 1 FAIL, 75 undecided (this demo ends undecided: 75).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "data" / "example_loop"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="reports/demo-loop", help="working folder (recreated)")
    ap.add_argument("--loopback", action="store_true", help="serve agent, judge and optimizer locally (no network)")
    args = ap.parse_args(argv)
    out = Path(args.out).resolve()
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    for name in ("eval.jsonl", "baseline.jsonl", "loop.json"):
        shutil.copy(EXAMPLE / name, out / name)
    server = None
    if args.loopback:
        sys.path.insert(0, str(REPO / "tests"))
        from judge_server import ScriptedOpenAIServer
        from loop_helpers import responder

        server = ScriptedOpenAIServer(responder=responder).start()
        cfg = json.loads((out / "loop.json").read_text())
        for part in ("agent", "judge"):
            cfg[part]["base_url"] = server.base_url
        os.environ.setdefault("OPENAI_API_KEY", "loopback")  # the stand-in takes any key
        (out / "loop.json").write_text(json.dumps(cfg, indent=2))
    from typer.main import get_command

    from agentstats.cli import app

    cmd = ["loop", "--config", str(out / "loop.json"), "--run-dir", str(out / "run"), "--out-dir",
           str(out / "report"), "--store", str(out / "agentstats.duckdb")]
    print("agentstats " + " ".join(cmd), flush=True)
    try:
        code = get_command(app).main(cmd, prog_name="agentstats", standalone_mode=False)
    except SystemExit as exc:  # typer.Exit surfaces as its code in standalone_mode=False; keep both paths
        code = exc.code
    finally:
        if server is not None:
            server.stop()
    code = int(code or 0)
    print(f"exit status {code}; report: {out / 'report'}; store: {out / 'agentstats.duckdb'} "
          f"(try: .venv/bin/agentstats runs list --store {out / 'agentstats.duckdb'}). The run folder {out / 'run'} "
          f"(log, call cache) is made afresh by every demo: `make demo-loop` asks the stand-in models again; "
          f"`agentstats loop --resume --run-dir {out / 'run'} ...` would answer from its cache instead.")
    return code


if __name__ == "__main__":
    sys.exit(main())

"""Write data/example_loop/: a small loop run (12 examples, 3 iterations) against the scripted loopback server.

The committed fixture behind ``notebooks/gate.ipynb``'s default parameters. Run from the repository root::

    .venv/bin/python tests/data/make_loop_fixture.py

The world is tests/loop_helpers.py's: iteration 2 improves, iteration 3 regresses, the loop stops on no credible
improvement with iteration 2 the best; the first revision drops a policy-sensitive line. The call cache is removed
(the report reads the log, the scores and the decision records only).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from judge_server import ScriptedOpenAIServer  # noqa: E402
from loop_helpers import make_world, point_at, responder  # noqa: E402

from agentstats.optimize import optimize  # noqa: E402


def main() -> None:
    out = ROOT / "data" / "example_loop"
    shutil.rmtree(out, ignore_errors=True)
    cfg = make_world(out, n=12)
    os.chdir(out)
    with ScriptedOpenAIServer(responder=responder) as srv:
        point_at(cfg, srv)
        text = cfg.read_text().replace(srv.base_url, "http://127.0.0.1:8000/v1")
        result = optimize(config="loop.json", run_dir="run")
    cfg.write_text(text)
    (out / "run" / "cache.sqlite3").unlink()
    for p in (out / "run").glob("cache.sqlite3-*"):
        p.unlink()
    print(json.dumps({"decision": result.decision, "stop": result.stop_reason, "best": result.best_iteration}))


if __name__ == "__main__":
    main()

"""Write tests/data/gate_records.json: the decision records of tests/gate_scenarios.py's scenarios.

Run from the repository root on the commit whose records are the reference (it was run on main at e7ce629, before
the gate was split into checks, decision rule, record and triggers)::

    PYTHONPATH=tests .venv/bin/python tests/data/make_gate_records.py
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from gate_scenarios import FIXTURE, normalized, scenarios  # noqa: E402

from agentstats.gating import gate  # noqa: E402


def main() -> None:
    os.chdir(ROOT)
    out = {name: normalized(gate(c, b, cfg).to_record()) for name, (c, b, cfg) in scenarios().items()}
    FIXTURE.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {len(out)} records to {FIXTURE.relative_to(ROOT)}")


if __name__ == "__main__":
    main()

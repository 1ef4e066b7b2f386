"""Divergences of the Beta-Binomial models at target_accept 0.95 and 0.98 on small data (the defaults of ``fit``).

Run:  .venv/bin/python validation/target_accept_check.py [--no-write]

Fits ``beta_binomial`` and ``zoi_beta_binomial`` (nutpie, 4 chains x 1,000 tune + 1,000 draws) at
``target_accept`` 0.95 and 0.98 on (a) the embedded example data ``data/example_trials.jsonl`` (3 agents x 40 tasks x
5 trials) with sampler seeds 0-3 and (b) 6 datasets of ``validation/simulation_study.py`` (logit-normal truth,
3 agents x 40 tasks x 8 trials, datasets 0-5, the study's seeds). Reports, per model and target, the number of fits
with any divergence and the total. ``fit`` defaults to the smallest target that left none (``TARGET_ACCEPT``).

Prints Markdown and writes it into ``docs/validation.md`` between ``<!-- BEGIN target_accept_check -->`` markers.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _docs import ROOT, md_table, write_block

SEED = 20261130


def datasets() -> list[tuple[str, pd.DataFrame, int]]:
    """(label, counts, sampler seed) of every fit."""
    from simulation_study import ALPHA, true_p

    from agentstats.io import load

    out = [(f"example, seed {s}", load(ROOT / "data" / "example_trials.jsonl").counts, s) for s in range(4)]
    for i in range(6):
        p = true_p(i, SEED, 40)
        c = np.random.default_rng([SEED, i, 8]).binomial(8, p)
        counts = pd.DataFrame(dict(agent=np.repeat([f"a{a}" for a in range(len(ALPHA))], 40),
                                   task_id=np.tile([f"t{t:02d}" for t in range(40)], len(ALPHA)), n=8, c=c.ravel()))
        out.append((f"simulated 3x40x8, dataset {i}", counts, SEED * 1000 + i * 10 + 8))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    from agentstats.models import fit
    from agentstats.models.diagnostics import diagnose

    t0 = time.perf_counter()
    rows = []
    data = datasets()
    for model in ("beta_binomial", "zoi_beta_binomial"):
        for ta in (0.95, 0.98):
            divs = []
            for _, counts, seed in data:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    dt = fit(counts, model, random_seed=seed, target_accept=ta, check_convergence=False)
                divs.append(diagnose(dt).divergences)
            rows.append(dict(model=model, target_accept=ta, fits=len(divs),
                             fits_with_divergences=int(np.count_nonzero(divs)), total_divergences=int(sum(divs)),
                             example_fits=", ".join(map(str, divs[:4])), simulated_fits=", ".join(map(str, divs[4:]))))
            print(rows[-1], file=sys.stderr, flush=True)
    today = time.strftime("%Y-%m-%d")
    body = f"""Command: `.venv/bin/python validation/target_accept_check.py` ({today}, {time.perf_counter() - t0:.0f} s;
nutpie, 4 chains x 1,000 + 1,000 per fit). Divergences per fit: the example data with sampler seeds 0-3, then 6
simulated 3 x 40 x 8 datasets (logit-normal truth, `simulation_study.py` datasets 0-5).

{md_table(pd.DataFrame(rows))}
"""
    print(body)
    if not args.no_write:
        write_block(ROOT / "docs" / "validation.md", "target_accept_check", body,
                    "## Default target_accept of the Beta-Binomial models")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

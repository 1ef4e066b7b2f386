"""``agentstats simulate``: example trials from a model with known truth."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agentstats.cli.common import (
    console,
)


def simulate(
    out_path: Annotated[Path, typer.Option("--out", help="Where to write the trials JSONL.")] = Path(
        "data/example_trials.jsonl"
    ),
    n_tasks: Annotated[int, typer.Option(help="Tasks.")] = 40,
    n_trials: Annotated[int, typer.Option(help="Trials per (agent, task).")] = 5,
    seed: Annotated[int, typer.Option(help="Random seed.")] = 20261130,
    truth: Annotated[
        Path | None, typer.Option(help="Also write the true per-cell success probabilities (CSV).")
    ] = None,
) -> None:
    """Draw example trials (3 agents x tasks x trials) from the crossed logit-normal model with known truth."""
    from agentstats.io import save_trials
    from agentstats.simulate import simulate_trials

    runs = simulate_trials(n_tasks=n_tasks, n_trials=n_trials, seed=seed)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    save_trials(runs.trials, out_path)
    console.print(f"wrote {len(runs.trials)} trials to {out_path}")
    if truth is not None:
        runs.p.to_csv(truth, float_format="%.6f")
        console.print(f"wrote true success probabilities to {truth}")

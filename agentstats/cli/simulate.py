"""``agentstats simulate``: example trials from a model with known truth."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agentstats.cli.common import EXIT_FAILURE, EXIT_USAGE, console, fail
from agentstats.cli.options import check_output_path, force_opt, out_file_opt

#: Where ``simulate`` writes by default: the working directory, never the shipped example data.
DEFAULT_OUT = Path("simulated_trials.jsonl")


def simulate(
    out_path: Annotated[Path, out_file_opt("Where to write the trials JSONL (.gz compresses).")] = DEFAULT_OUT,
    n_tasks: Annotated[int, typer.Option(help="Tasks.")] = 40,
    n_trials: Annotated[int, typer.Option(help="Trials per (agent, task).")] = 5,
    seed: Annotated[int, typer.Option(help="Random seed.")] = 20261130,
    truth: Annotated[
        Path | None, typer.Option(help="Also write the true per-cell success probabilities (CSV).")
    ] = None,
    force: Annotated[bool, force_opt("files that already exist")] = False,
) -> None:
    """Draw example trials (3 agents x tasks x trials) from the crossed logit-normal model with known truth.

    Writes simulated_trials.jsonl in the current folder unless --out says otherwise; an existing file is
    replaced only with --force.
    """
    from agentstats.files.atomic import atomic_write_text
    from agentstats.io import save_trials
    from agentstats.simulate import simulate_trials

    check_output_path(out_path, "--out", make_parents=True, force=force)
    check_output_path(truth, "--truth", make_parents=True, force=force)
    try:
        runs = simulate_trials(n_tasks=n_tasks, n_trials=n_trials, seed=seed)
    except ValueError as exc:
        raise fail(exc, EXIT_USAGE) from exc
    try:
        out_path.parent.mkdir(parents=True, exist_ok=True)
        save_trials(runs.trials, out_path)
        console.print(f"wrote {len(runs.trials):,} trials to {out_path}")
        if truth is not None:
            truth.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(truth, runs.p.to_csv(float_format="%.6f"))
            console.print(f"wrote true success probabilities to {truth}")
    except OSError as exc:
        raise fail(exc, EXIT_FAILURE) from exc

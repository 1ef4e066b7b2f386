"""``agentstats estimate``: unbiased pass@k / pass^k per agent with task-cluster intervals, or paired differences."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agentstats.cli.common import EXIT_USAGE, console, fail, load_counts
from agentstats.cli.options import (
    CI_DEFAULT,
    CiOptions,
    EstimateKOpt,
    InputOptions,
    JsonOpt,
    NBootOpt,
    check_n_boot,
    ci_options,
    command_ks,
    input_options,
    parse_k,
)
from agentstats.intervals import DEFAULT_SEED


@input_options
@ci_options(kinds=("eti",))  # the bootstrap and Clopper-Pearson intervals are equal-tailed only
def estimate(
    input: Annotated[Path, typer.Argument(help="Trials or counts file (JSONL, tau-bench JSON, CSV, ...).")],
    inputs: InputOptions,
    k: EstimateKOpt = None,
    n_boot: NBootOpt = 2000,
    ci: CiOptions = CI_DEFAULT,
    seed: Annotated[int, typer.Option(min=0, help="Bootstrap seed.")] = DEFAULT_SEED,
    paired: Annotated[
        bool,
        typer.Option("--paired", help="Compare every pair of agents on their shared tasks instead: paired "
                     "differences, and the exact McNemar test at k = 1 with one trial per task."),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Per-agent unbiased pass@k and pass^k with task-cluster bootstrap intervals, and the tasks behind each value."""
    from agentstats.cli.render.estimate import print_paired, print_suite
    from agentstats.estimators import paired_pass_k_table, suite_pass_k

    ks = parse_k(k)
    check_n_boot(n_boot)
    counts = load_counts(input, inputs.format, inputs.loader_options())
    ks = command_ks(ks, counts, "estimate", str(input))
    estimator = paired_pass_k_table if paired else suite_pass_k
    with console.status("estimating ..."):
        try:
            table = estimator(counts, k=ks, n_boot=n_boot, ci_prob=ci.prob, random_seed=seed)
        except ValueError as exc:
            raise fail(exc, EXIT_USAGE) from exc
    # the file's name; for a run store, "store.duckdb:run" (the run read, also when it was the only one)
    label = Path(str(counts.attrs.get("source") or input)).name
    (print_paired if paired else print_suite)(table, label, as_json)

"""``agentstats estimate``: unbiased pass@k / pass^k per agent with task-cluster intervals."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from agentstats.cli.common import (
    AgentColOpt,
    AgentOpt,
    FormatOpt,
    KOpt,
    SkipBadOpt,
    SuccessColOpt,
    TaskColOpt,
    clean,
    console,
    fail,
    load_counts,
    loader_opts,
    out,
    parse_k,
)


def estimate(
    input: Annotated[Path, typer.Argument(help="Trials or counts file (JSONL, tau-bench JSON, CSV, ...).")],
    format: FormatOpt = "auto",
    k: KOpt = None,
    n_boot: Annotated[int, typer.Option(help="Task-cluster bootstrap resamples.")] = 2000,
    seed: Annotated[int, typer.Option(help="Bootstrap seed.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON records instead of a table.")] = False,
    agent: AgentOpt = None,
    agent_col: AgentColOpt = None,
    task_col: TaskColOpt = None,
    success_col: SuccessColOpt = None,
    skip_bad: SkipBadOpt = False,
) -> None:
    """Per-agent unbiased pass@k and pass^k with task-cluster bootstrap 95% intervals."""
    from agentstats.estimators import suite_pass_k

    counts = load_counts(input, format, loader_opts(agent, agent_col, task_col, success_col, skip_bad))
    with console.status("estimating ..."):
        try:
            table = suite_pass_k(counts, k=parse_k(k), n_boot=n_boot, seed=seed)
        except ValueError as exc:
            raise fail(exc, 2) from exc
    cols = [
        "agent",
        "k",
        "n_tasks",
        "pass_at_k",
        "pass_at_k_ci_low",
        "pass_at_k_ci_high",
        "pass_hat_k",
        "pass_hat_k_ci_low",
        "pass_hat_k_ci_high",
    ]
    if as_json:
        records = [{c: clean(row[c]) for c in cols} for _, row in table.iterrows()]
        out.print_json(json.dumps(records))
        return
    t = Table(title=f"{input.name}: unbiased estimators, 95% task-cluster bootstrap intervals")
    for c in ["agent", "k", "tasks", "pass@k", "95% interval", "pass^k", "95% interval"]:
        t.add_column(c, justify="left" if c == "agent" else "right")
    for _, r in table.iterrows():
        t.add_row(
            str(r["agent"]),
            str(r["k"]),
            str(r["n_tasks"]),
            f"{r['pass_at_k']:.3f}",
            f"[{r['pass_at_k_ci_low']:.3f}, {r['pass_at_k_ci_high']:.3f}]",
            f"{r['pass_hat_k']:.3f}",
            f"[{r['pass_hat_k_ci_low']:.3f}, {r['pass_hat_k_ci_high']:.3f}]",
        )
    out.print(t)

"""``agentstats estimate``: unbiased pass@k / pass^k per agent with task-cluster intervals, or paired differences."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from agentstats.cli.common import (
    UNDER_HALF_MARK,
    AgentColOpt,
    AgentOpt,
    AgentsOpt,
    CiProbOpt,
    EstimateKOpt,
    FormatOpt,
    RunOpt,
    SkipBadOpt,
    SuccessColOpt,
    TaskColOpt,
    check_interval_options,
    clean,
    command_ks,
    console,
    fail,
    load_counts,
    loader_opts,
    out,
    parse_k,
)
from agentstats.intervals import CI_PROB

#: Keys of one ``--json`` record (one per agent and k), in order.
JSON_KEYS = (
    "agent", "k", "n_tasks", "n_tasks_suite", "extrapolated", "under_half", "n_tasks_dropped", "dropped_tasks",
    "n_tasks_excluded", "excluded_tasks", "n_trials", "n_missing",
    "pass_at_k", "pass_at_k_se", "pass_at_k_ci_low", "pass_at_k_ci_high", "pass_at_k_ci_method",
    "pass_hat_k", "pass_hat_k_se", "pass_hat_k_ci_low", "pass_hat_k_ci_high", "pass_hat_k_ci_method",
    "ci_prob", "ci_kind", "n_boot",
)  # fmt: skip

#: Marks in the table, explained under it.
BOUNDARY_MARK = "†"
#: Excluded tasks named per agent under the table (all of them are in ``--json``).
MAX_LISTED = 10


def estimate(
    input: Annotated[Path, typer.Argument(help="Trials or counts file (JSONL, tau-bench JSON, CSV, ...).")],
    format: FormatOpt = "auto",
    k: EstimateKOpt = None,
    n_boot: Annotated[int, typer.Option(min=0, help="Task-cluster bootstrap resamples.")] = 2000,
    ci_prob: CiProbOpt = CI_PROB,
    seed: Annotated[int, typer.Option(min=0, help="Bootstrap seed.")] = 0,
    paired: Annotated[
        bool,
        typer.Option(
            "--paired",
            help="Compare every pair of agents on their shared tasks instead: paired differences with paired "
            "bootstrap intervals, and the exact McNemar test at k = 1 with one trial per task.",
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON records instead of a table.")] = False,
    agent: AgentOpt = None,
    agent_col: AgentColOpt = None,
    task_col: TaskColOpt = None,
    success_col: SuccessColOpt = None,
    skip_bad: SkipBadOpt = False,
    agents: AgentsOpt = None,
    run: RunOpt = None,
) -> None:
    """Per-agent unbiased pass@k and pass^k with task-cluster bootstrap intervals, and the tasks behind each value."""
    from agentstats.estimators import paired_pass_k_table, suite_pass_k

    ks = parse_k(k)
    check_interval_options(n_boot=n_boot, ci_prob=ci_prob)
    counts = load_counts(input, format, loader_opts(agent, agent_col, task_col, success_col, skip_bad, agents, run))
    ks = command_ks(ks, counts, "estimate", str(input))
    with console.status("estimating ..."):
        try:
            if paired:
                table = paired_pass_k_table(counts, k=ks, n_boot=n_boot, ci_prob=ci_prob, random_seed=seed)
            else:
                table = suite_pass_k(counts, k=ks, n_boot=n_boot, ci_prob=ci_prob, random_seed=seed)
        except ValueError as exc:
            raise fail(exc, 2) from exc
    # the file's name; for a run store, "store.duckdb:run" (the run read, also when it was the only one)
    label = Path(str(counts.attrs.get("source") or input)).name
    if paired:
        _print_paired(table, label, as_json, n_boot)
        return
    if as_json:
        records = [{c: _jsonable(row[c]) for c in JSON_KEYS} for _, row in table.iterrows()]
        out.print_json(json.dumps(records))
        return
    _print_suite(table, label, ci_prob, n_boot)


def _jsonable(v: Any) -> Any:
    """JSON-ready value: NaN and missing become None, numpy scalars Python scalars, lists and dicts recursively."""
    if isinstance(v, dict):
        return {str(key): _jsonable(val) for key, val in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if v is None:
        return None
    try:
        import pandas as pd

        if pd.isna(v):
            return None
    except (TypeError, ValueError):
        pass
    return clean(v)


def _pct(prob: float) -> str:
    return f"{100 * float(prob):.10g}%"


def _ci(lo: float, hi: float, boundary: bool) -> str:
    if lo != lo or hi != hi:  # NaN
        return "n/a"
    return f"[{lo:.3f}, {hi:.3f}]" + (f" {BOUNDARY_MARK}" if boundary else "")


def _val(x: float) -> str:
    return "n/a" if x != x else f"{x:.3f}"


def _interval_method(n_boot: int, bootstrap: str) -> str:
    """Name the table's intervals: ``bootstrap`` (the resampling done), or none with ``--n-boot 0``."""
    return bootstrap if n_boot > 0 else f"no bootstrap, --n-boot 0: Clopper-Pearson {BOUNDARY_MARK} only"


def _print_suite(table: Any, label: str, ci_prob: float, n_boot: int) -> None:
    from agentstats._util.text import plural
    from agentstats.estimators.bootstrap import METHOD_CLOPPER_PEARSON

    pct = _pct(ci_prob)
    method = _interval_method(n_boot, "task-cluster bootstrap")
    t = Table(title=f"{escape(label)}: unbiased estimators, {pct} intervals ({method})")
    for c in ["agent", "k", "tasks", "n < k", "pass@k", f"{pct} interval", "pass^k", f"{pct} interval"]:
        t.add_column(c, justify="left" if c == "agent" else "right")
    any_under = any_boundary = False
    for _, r in table.iterrows():
        under = bool(r["under_half"])
        any_under |= under
        w_at = r["pass_at_k_ci_method"] == METHOD_CLOPPER_PEARSON
        w_hat = r["pass_hat_k_ci_method"] == METHOD_CLOPPER_PEARSON
        any_boundary |= w_at or w_hat
        t.add_row(
            escape(str(r["agent"])),
            str(r["k"]),
            f"{r['n_tasks']}/{r['n_tasks_suite']}" + (f" {UNDER_HALF_MARK}" if under else ""),
            f"{r['extrapolated']:.2f}",
            _val(r["pass_at_k"]),
            _ci(r["pass_at_k_ci_low"], r["pass_at_k_ci_high"], w_at),
            _val(r["pass_hat_k"]),
            _ci(r["pass_hat_k_ci_low"], r["pass_hat_k_ci_high"], w_hat),
        )
    out.print(t)
    n_suite = int(table["n_tasks_suite"].iloc[0]) if len(table) else 0
    those = "that task" if n_suite == 1 else f"those {plural(n_suite, 'task')}"
    notes = [
        f"tasks: tasks behind the value / the {plural(n_suite, 'task')} in the input; n < k: share of {those} "
        "with fewer than k usable trials of the agent (none counts as 0), which drop out at that k (values at "
        "different k can average different tasks; `agentstats fit` extrapolates to them; JSON key `extrapolated`)."
    ]
    if n_boot == 0:
        notes.append(
            f"--n-boot 0: no bootstrap, so an interval is given only where the Clopper-Pearson one applies "
            f"({BOUNDARY_MARK}, near 0 or 1); n/a elsewhere."
        )
    if any_under:
        notes.append(f"{UNDER_HALF_MARK} rests on under half of the tasks: read with care.")
    if any_boundary:
        notes.append(
            f"{BOUNDARY_MARK} Clopper-Pearson interval on the task-level success mass: near 0 or 1 (every task with "
            "the same value, or under 5 tasks' worth of successes or failures) resampling tasks cannot show what the "
            "sample lacks."
        )
    for note in notes:
        out.print(escape(note), highlight=False)
    excluded = table.drop_duplicates("agent")[["agent", "excluded_tasks"]]
    for _, r in excluded.iterrows():
        items = r["excluded_tasks"]
        if not items:
            continue
        listed = "; ".join(f"{e['task_id']} ({e['reason']})" for e in items[:MAX_LISTED])
        more = f"; and {len(items) - MAX_LISTED} more (all in --json)" if len(items) > MAX_LISTED else ""
        out.print(
            escape(f"excluded for {r['agent']} ({len(items)} task{'s' if len(items) != 1 else ''} without a usable "
                   f"trial): {listed}{more}"),
            highlight=False,
        )  # fmt: skip


def _print_paired(table: Any, label: str, as_json: bool, n_boot: int) -> None:
    if as_json:
        records = [{c: _jsonable(row[c]) for c in table.columns} for _, row in table.iterrows()]
        out.print_json(json.dumps(records))
        return
    if table.empty:
        out.print("fewer than two agents: nothing to compare")
        return
    pct = _pct(table["ci_prob"].iloc[0])
    method = _interval_method(n_boot, "paired task-cluster bootstrap").replace(f" {BOUNDARY_MARK}", " (MOVER)")
    t = Table(title=f"{escape(label)}: paired differences (agent a - agent b) on shared tasks, {pct} intervals "
                    f"({method})")
    for c in ["agent a", "agent b", "k", "tasks", "pass@k diff", f"{pct} interval", "pass^k diff",
              f"{pct} interval", "McNemar p"]:  # fmt: skip
        t.add_column(c, justify="left" if c.startswith("agent") else "right")
    for _, r in table.iterrows():
        p = r["mcnemar_p"]
        t.add_row(
            escape(str(r["agent_a"])),
            escape(str(r["agent_b"])),
            str(r["k"]),
            str(r["n_tasks"]),
            "n/a" if r["pass_at_k_diff"] != r["pass_at_k_diff"] else f"{r['pass_at_k_diff']:+.3f}",
            _ci(r["pass_at_k_diff_ci_low"], r["pass_at_k_diff_ci_high"], False),
            "n/a" if r["pass_hat_k_diff"] != r["pass_hat_k_diff"] else f"{r['pass_hat_k_diff']:+.3f}",
            _ci(r["pass_hat_k_diff_ci_low"], r["pass_hat_k_diff_ci_high"], False),
            "" if p != p else f"{p:.3g}",
        )
    out.print(t)
    how = (
        "Each interval resamples the shared tasks of its pair (paired task-cluster bootstrap; near 0 or 1 the "
        "MOVER combination of the two Clopper-Pearson intervals)."
        if n_boot > 0
        else "--n-boot 0: no bootstrap, so an interval is given only where either agent is near 0 or 1 (the MOVER "
        "combination of the two Clopper-Pearson intervals); n/a elsewhere."
    )
    out.print(
        f"{how} An interval that excludes 0 separates the two agents; overlapping separate intervals do not show "
        "that they are equal. McNemar p: exact test, k = 1 with one trial per task.",
        highlight=False,
    )

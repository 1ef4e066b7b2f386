"""What ``agentstats estimate`` prints: the suite table or the paired differences, their notes, or JSON records."""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from rich.table import Table

from agentstats.cli.common import out
from agentstats.cli.render.text import UNDER_HALF_MARK, print_json, records
from agentstats.intervals import ci_percent

__all__ = ["BOUNDARY_MARK", "JSON_KEYS", "print_paired", "print_suite"]

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


def _ci(lo: float, hi: float, boundary: bool) -> str:
    if lo != lo or hi != hi:  # NaN
        return "n/a"
    return f"[{lo:.3f}, {hi:.3f}]" + (f" {BOUNDARY_MARK}" if boundary else "")


def _val(x: float) -> str:
    return "n/a" if x != x else f"{x:.3f}"


def _diff(x: float) -> str:
    return "n/a" if x != x else f"{x:+.3f}"


def _interval_method(n_boot: int, bootstrap: str) -> str:
    """Name the table's intervals: ``bootstrap`` (the resampling done), or none with ``--n-boot 0``."""
    return bootstrap if n_boot > 0 else f"no bootstrap, --n-boot 0: Clopper-Pearson {BOUNDARY_MARK} only"


def print_suite(table: Any, label: str, as_json: bool) -> None:
    """Print :func:`agentstats.estimators.suite_pass_k`'s table: one row per agent and k, notes, excluded tasks."""
    from agentstats._util.text import plural
    from agentstats.estimators.bootstrap import METHOD_CLOPPER_PEARSON

    if as_json:
        print_json(records(table, JSON_KEYS))
        return
    n_boot, pct = int(table.attrs["n_boot"]), ci_percent(table.attrs["ci_prob"])
    method = _interval_method(n_boot, "task-cluster bootstrap")
    t = Table(title=f"{escape(label)}: unbiased estimators, {pct} intervals ({method})")
    for c in ["agent", "k", "tasks", "share n < k", "pass@k", f"{pct} interval", "pass^k", f"{pct} interval"]:
        t.add_column(c, justify="left" if c == "agent" else "right")
    any_under = any_boundary = False
    for _, r in table.iterrows():
        under = bool(r["under_half"])
        any_under |= under
        w_at = r["pass_at_k_ci_method"] == METHOD_CLOPPER_PEARSON
        w_hat = r["pass_hat_k_ci_method"] == METHOD_CLOPPER_PEARSON
        any_boundary |= w_at or w_hat
        t.add_row(escape(str(r["agent"])), str(r["k"]),
                  f"{r['n_tasks']}/{r['n_tasks_suite']}" + (f" {UNDER_HALF_MARK}" if under else ""),
                  f"{r['extrapolated']:.2f}", _val(r["pass_at_k"]),
                  _ci(r["pass_at_k_ci_low"], r["pass_at_k_ci_high"], w_at), _val(r["pass_hat_k"]),
                  _ci(r["pass_hat_k_ci_low"], r["pass_hat_k_ci_high"], w_hat))
    out.print(t)
    n_suite = int(table["n_tasks_suite"].iloc[0]) if len(table) else 0
    those = "that task" if n_suite == 1 else f"those {plural(n_suite, 'task')}"
    notes = [
        f"tasks: tasks behind the value / the {plural(n_suite, 'task')} in the input; share n < k: share of {those} "
        "with fewer than k usable trials of the agent (none counts as 0), which drop out at that k (values at "
        "different k can average different tasks; `agentstats fit` extrapolates to them). In --json this share is "
        "`extrapolated` (1 - n_tasks / n_tasks_suite: the part of the suite the value does not speak for), beside "
        "`n_tasks_dropped` (tasks run fewer than k times) and `n_tasks_excluded` (tasks never run)."
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
    _print_excluded(table)


def _print_excluded(table: Any) -> None:
    for _, r in table.drop_duplicates("agent")[["agent", "excluded_tasks"]].iterrows():
        items = r["excluded_tasks"]
        if not items:
            continue
        listed = "; ".join(f"{e['task_id']} ({e['reason']})" for e in items[:MAX_LISTED])
        more = f"; and {len(items) - MAX_LISTED} more (all in --json)" if len(items) > MAX_LISTED else ""
        out.print(escape(f"excluded for {r['agent']} ({len(items)} task{'s' if len(items) != 1 else ''} without a "
                         f"usable trial): {listed}{more}"), highlight=False)


def print_paired(table: Any, label: str, as_json: bool) -> None:
    """Print :func:`agentstats.estimators.paired_pass_k_table`: one row per pair and k, and how to read it."""
    if as_json:
        print_json(records(table))
        return
    if table.empty:
        out.print("fewer than two agents: nothing to compare")
        return
    n_boot, pct = int(table.attrs["n_boot"]), ci_percent(table["ci_prob"].iloc[0])
    method = _interval_method(n_boot, "paired task-cluster bootstrap").replace(f" {BOUNDARY_MARK}", " (MOVER)")
    t = Table(title=f"{escape(label)}: paired differences (agent a - agent b) on shared tasks, {pct} intervals "
                    f"({method})")
    for c in ["agent a", "agent b", "k", "tasks", "pass@k diff", f"{pct} interval", "pass^k diff",
              f"{pct} interval", "McNemar p"]:  # fmt: skip
        t.add_column(c, justify="left" if c.startswith("agent") else "right")
    for _, r in table.iterrows():
        p = r["mcnemar_p"]
        t.add_row(escape(str(r["agent_a"])), escape(str(r["agent_b"])), str(r["k"]), str(r["n_tasks"]),
                  _diff(r["pass_at_k_diff"]), _ci(r["pass_at_k_diff_ci_low"], r["pass_at_k_diff_ci_high"], False),
                  _diff(r["pass_hat_k_diff"]), _ci(r["pass_hat_k_diff_ci_low"], r["pass_hat_k_diff_ci_high"], False),
                  "" if p != p else f"{p:.3g}")
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

"""What ``agentstats compare`` prints: the paired pass@k / pass^k table, the metrics, the Bayesian contrast, notes."""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from rich.table import Table

from agentstats.cli.common import console, out
from agentstats.cli.render.text import fmt
from agentstats.intervals import ci_percent

__all__ = ["fmt_metric", "print_comparison"]


def fmt_metric(x: Any) -> str:
    """Format a metric as :func:`~agentstats.cli.render.text.fmt`, but below 0.01 with 3 significant digits.

    ``3.6e-05``: a cost of a few thousandths of a cent a trial would print as ``0.000`` otherwise.
    """
    if x is None or x != x or x == 0 or abs(x) >= 0.01:
        return fmt(x)
    return f"{x:.3g}"


def print_comparison(cmp: Any) -> None:
    """Print a :class:`~agentstats.compare.runs.RunComparison`: shared tasks, the tables and how to read them."""
    head = f"baseline (first run): {escape(cmp.baseline)}; {len(cmp.shared_tasks)} shared tasks"
    left = "; ".join(f"{escape(r)} {len(v)} of {cmp.n_tasks[r]}" for r, v in cmp.left_out.items())
    console.print(f"{head}; tasks left out: {left}", highlight=False, soft_wrap=True)
    t = Table(title="run - baseline on the shared tasks (paired)")
    for c in ("run", "k", "tasks", "pass@k diff", "interval", "pass^k diff", "interval", "McNemar p"):
        t.add_column(c, justify="left" if c == "run" else "right")
    for _, r in cmp.pass_k.iterrows():
        t.add_row(escape(str(r["agent_a"])), str(r["k"]), str(r["n_tasks"]), fmt(r["pass_at_k_diff"]),
                  f"[{fmt(r['pass_at_k_diff_ci_low'])}, {fmt(r['pass_at_k_diff_ci_high'])}]",
                  fmt(r["pass_hat_k_diff"]),
                  f"[{fmt(r['pass_hat_k_diff_ci_low'])}, {fmt(r['pass_hat_k_diff_ci_high'])}]",
                  fmt(r["mcnemar_p"]))
    out.print(t)
    _pass_k_notes(cmp)
    if len(cmp.metrics):
        _print_metrics(cmp)
    if cmp.bayes is not None:
        _print_bayes(cmp)


def _pass_k_notes(cmp: Any) -> None:
    methods = sorted({str(m) for c in ("pass_at_k_diff_ci_method", "pass_hat_k_diff_ci_method")
                      for m in cmp.pass_k[c].dropna()})
    if methods:
        console.print(f"intervals: {ci_percent(cmp.settings['ci_prob'])}, paired over tasks ({'; '.join(methods)}; "
                      "MOVER at the boundary, where the bootstrap would be too narrow: docs/compare.md)",
                      highlight=False, soft_wrap=True)
    for _, r in cmp.pass_k[cmp.pass_k["n_tasks_dropped"] > 0].iterrows():
        console.print(f"k = {r['k']}: {escape(str(r['agent_a']))} rests on {r['n_tasks']} of "
                      f"{r['n_tasks'] + r['n_tasks_dropped']} shared tasks (tasks with fewer than k trials in either "
                      "run drop out at that k; `--json` lists them)", highlight=False, soft_wrap=True)
    if cmp.pass_k["mcnemar_p"].isna().any():
        console.print("McNemar p: exact test of k = 1 with one trial per task; n/a where a task has more trials.",
                      highlight=False, soft_wrap=True)


def _print_metrics(cmp: Any) -> None:
    from agentstats.compare.runs import METHOD_NO_SPREAD

    m = Table(title="metrics: run - baseline (per-task means, paired)")
    for c in ("run", "metric", "tasks", "baseline", "run value", "diff", "interval"):
        m.add_column(c, justify="left" if c in ("run", "metric") else "right")
    for _, r in cmp.metrics.iterrows():
        m.add_row(escape(str(r["run"])), escape(str(r["metric"])), str(r["n_tasks"]),
                  fmt_metric(r["mean_baseline"]), fmt_metric(r["mean_run"]), fmt_metric(r["diff"]),
                  f"[{fmt_metric(r['diff_ci_low'])}, {fmt_metric(r['diff_ci_high'])}]")
    out.print(m)
    flat = cmp.metrics[cmp.metrics["diff_ci_method"] == METHOD_NO_SPREAD]
    if len(flat):
        names = ", ".join(escape(str(x)) for x in flat["metric"].unique())
        console.print(f"{names}: every shared task has the same difference, so the task bootstrap interval has "
                      "no width: it shows no task-to-task spread, not certainty", highlight=False, soft_wrap=True)


def _print_bayes(cmp: Any) -> None:
    b = Table(title=f"Bayesian contrast: run - baseline ({ci_percent(cmp.settings['ci_prob'])} credible intervals)")
    for c in ("run", "quantity", "k", "mean", "interval", "P(run > baseline)"):
        b.add_column(c, justify="left" if c in ("run", "quantity") else "right")
    for _, r in cmp.bayes.iterrows():
        b.add_row(escape(str(r["run"])), str(r["quantity"]), str(r["k"]), fmt(r["diff_mean"]),
                  f"[{fmt(r['diff_low'])}, {fmt(r['diff_high'])}]", fmt(r["prob_greater"]))
    out.print(b)
    if not cmp.diagnostics.get("ok", True):
        console.print("[yellow]diagnostics failed:[/] " + escape("; ".join(cmp.diagnostics.get("problems", []))))

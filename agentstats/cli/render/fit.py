"""What ``agentstats fit`` prints: rich tables, plain lines and its ``--json`` payload."""

from __future__ import annotations

from typing import Any

import pandas as pd
from rich.table import Table

from agentstats.cli.common import clean, out
from agentstats.cli.render.text import UNDER_HALF_MARK, prob_text
from agentstats.models.sampling import STOP_ESS_MIN

__all__ = [
    "NOT_ESTIMABLE",
    "RERUN_UNREACHABLE",
    "checkpoint_text",
    "consistency_table",
    "fit_payload",
    "pass_k_table",
    "print_fit",
    "summary_records",
    "with_tasks",
]

#: Note of a posterior value at k > 1 for an agent with one trial per task (``summarize_pass_k``'s range).
NOT_ESTIMABLE = ("not estimable from these data: no task with 2+ trials, so how alike two tries are is unknown; "
                 "range_low..range_high holds the value with posterior probability >= ci_prob under any within-task "
                 "consistency")
#: Note of a re-run prediction at a k no task reaches with its re-run trials.
RERUN_UNREACHABLE = "k > n + N on every task: the unbiased estimator after the re-run needs n + N >= k trials"
_KIND_NAMES = {"eti": "equal-tailed", "hdi": "HDI"}


def with_tasks(summary: pd.DataFrame, counts: pd.DataFrame) -> pd.DataFrame:
    """Return ``summary`` with the tasks behind each value and the input's tasks.

    ``n_tasks``, where absent: the agent's tasks with a recorded trial, which every posterior value averages over;
    ``n_tasks_suite``: the tasks in the input; ``under_half``: ``n_tasks`` below half of them.
    """
    if "n_tasks" not in summary.columns:
        per_agent = counts.loc[counts["n"] > 0].groupby("agent")["task_id"].nunique()
        summary = summary.assign(n_tasks=summary["agent"].map(per_agent).fillna(0).astype(int))
    suite = int(counts["task_id"].nunique())
    return summary.assign(n_tasks_suite=suite, under_half=summary["n_tasks"] < suite / 2)


def summary_records(summary: pd.DataFrame, interval: str = "credible") -> list[dict[str, Any]]:
    """One JSON record per row of a :func:`agentstats.posterior.summarize_pass_k` table (with :func:`with_tasks`).

    ``interval`` names what the interval is (``"credible"``, or ``"posterior predictive"`` for a re-run, whose
    missing values carry a note). A value the data do not identify (one trial per task, k > 1) has ``estimable``
    false, null ``mean``, ``median`` and interval, its range (``range_low``, ``range_high``) and a ``note``.
    """
    rows = []
    for _, r in summary.iterrows():
        row = {
            "interval": interval,
            "agent": r["agent"],
            "k": int(r["k"]),
            "quantity": r["quantity"],
            "population": r["population"],
            "mean": clean(r["mean"]),
            "median": clean(r["median"]),
            "ci_low": clean(r["ci_low"]),
            "ci_high": clean(r["ci_high"]),
            "ci_kind": r["ci_kind"],
            "ci_prob": clean(r["ci_prob"]),
            "extrapolated": clean(r["extrapolated"]),
        }
        if "n_tasks" in summary.columns:  # the tasks behind each value, of the input's tasks
            row["n_tasks"] = int(r["n_tasks"])
            row["n_tasks_suite"] = int(r["n_tasks_suite"])
            row["under_half"] = bool(r["under_half"])
        if "estimable" in summary.columns:  # one trial per task: k > 1 is not estimable, only a range is given
            row["estimable"] = bool(r["estimable"])
            row["range_low"], row["range_high"] = clean(r["range_low"]), clean(r["range_high"])
            if not row["estimable"]:
                row["note"] = NOT_ESTIMABLE
        if interval == "posterior predictive":  # a re-run prediction: why a value is missing
            row["note"] = RERUN_UNREACHABLE if int(r["n_tasks"]) == 0 else None
            if int(r["n_tasks"]) == 0:
                row["extrapolated"] = None
        rows.append(row)
    return rows


def checkpoint_text(check: dict[str, Any]) -> str:
    """One entry of a fit's checkpoints in words: a stopping-rule checkpoint or an abandoned attempt."""
    if check.get("abandoned"):
        return (
            f"first attempt abandoned after {check['draws']} draws: {check.get('divergences', '?')} divergent "
            f"transitions with the centred per-agent dispersion; {check.get('reason', 'refitted')}"
        )
    stopped = " (stopped)" if check["passed"] else ""
    return f"{check['draws']}: R-hat {check['max_r_hat']:.3f}, ESS {check['min_ess']:.0f}{stopped}"


def pass_k_table(title: str, summary: pd.DataFrame) -> Table:
    """One row per agent and k: tasks behind the value (of the input's, ``*`` under half), both quantities, a note."""
    t = Table(title=title)
    for c in ["agent", "k", "tasks", "pass@k (interval)", "pass^k (interval)", "note"]:
        t.add_column(c, justify="left" if c in ("agent", "note") else "right")
    wide = summary.pivot_table(
        index=["agent", "k"], columns="quantity", values=["mean", "ci_low", "ci_high"], aggfunc="first", sort=False,
        dropna=False,  # a k without a value (a re-run that cannot reach it) is shown and explained, not dropped
    )
    extra = summary.groupby(["agent", "k"], sort=False)["extrapolated"].max()
    tasks = summary.groupby(["agent", "k"], sort=False)["n_tasks"].min()
    under = summary.groupby(["agent", "k"], sort=False)["under_half"].any()
    suite = int(summary["n_tasks_suite"].iloc[0]) if len(summary) else 0
    rerun = bool((summary["population"] == "rerun").any())
    ranges = (summary.pivot_table(index=["agent", "k"], columns="quantity", values=["range_low", "range_high"],
                                  aggfunc="first", sort=False, dropna=False)
              if "estimable" in summary.columns and not summary["estimable"].all() else None)
    for (a, kk), r in wide.iterrows():
        if (a, kk) not in extra.index:
            continue
        cells = [
            f"{prob_text(r[('mean', q)])} [{prob_text(r[('ci_low', q)])}, {prob_text(r[('ci_high', q)])}]"
            if r[("mean", q)] == r[("mean", q)] else "n/a"
            for q in ("pass_at_k", "pass_hat_k")
        ]
        if ranges is not None and (a, kk) in ranges.index and ranges.loc[(a, kk)].notna().any():
            g = ranges.loc[(a, kk)]
            cells = [f"range {prob_text(g[('range_low', q)])} to {prob_text(g[('range_high', q)])}"
                     for q in ("pass_at_k", "pass_hat_k")]
        share = float(extra[(a, kk)])
        note = f"extrapolated: {share:.0%} of tasks have < {kk} trials" if share > 0 else ""
        if cells[0].startswith("range"):
            note = "not estimable (one trial per task): range under any consistency"
        behind = int(tasks[(a, kk)])
        if behind == 0:
            note = "k > n + N on every task: not computable"
        elif rerun and behind < suite and not note:
            note = f"{suite - behind} tasks left out at this k (n + N < {kk}, or no recorded trial)"
        mark = f" {UNDER_HALF_MARK}" if under[(a, kk)] else ""
        t.add_row(str(a), str(kk), f"{behind}/{suite}{mark}", *cells, note)
    return t


def consistency_table(cons: pd.DataFrame) -> tuple[Table, list[str]]:
    """Build the table of :func:`agentstats.posterior.consistency` with a fit, and notes on missing values."""
    ct = Table(title="consistency per agent: correlation of two trials on one task (icc_cell)")
    for c in ("agent", "tasks", "flip share", "icc_anova (data)", "icc_cell (model, interval)"):
        ct.add_column(c, justify="left" if c == "agent" else "right")
    from agentstats.posterior.consistency import NOT_GIVEN_LAPLACE, NOT_GIVEN_LAPLACE_LABEL, not_given_laplace

    anova_missing = laplace = False
    for _, r in cons.iterrows():
        not_given = not_given_laplace(r)
        laplace |= not_given
        model_icc = (
            f"{r['icc_cell']:.3f} [{r['icc_cell_low']:.3f}, {r['icc_cell_high']:.3f}]"
            if r["icc_cell_estimable"]
            else NOT_GIVEN_LAPLACE_LABEL if not_given  # the reason once, below the table
            else str(r.get("icc_cell_note") or "not estimable: the model has no within-cell term")
        )
        anova = float(r["icc_anova"])
        anova_missing |= anova != anova
        ct.add_row(str(r["agent"]), str(r["n_tasks"]), f"{r['flip_share']:.3f}",
                   f"{anova:.3f}" if anova == anova else "not estimable", model_icc)
    notes = []
    if anova_missing:
        notes.append("icc_anova not estimable: fewer than two tasks with trials, or every outcome the same "
                     "(no variance to split).")
    if laplace:
        notes.append(f"icc_cell {NOT_GIVEN_LAPLACE}.")
    return ct, notes


def fit_payload(fit: Any, summary: pd.DataFrame, cons: pd.DataFrame | None, rerun: tuple[int, pd.DataFrame] | None,
                calibration: Any = None) -> dict[str, Any]:
    """Build the ``--json`` payload of ``agentstats fit``: summary, diagnostics with the fit's provenance, the rest."""
    diag = fit.diagnostics()
    diag_json = {
        "ok": bool(diag.ok),
        "divergences": int(diag.divergences),
        "problems": list(diag.problems),
        "variables": [{c: clean(v) for c, v in row.items()} for _, row in diag.table.iterrows()],
    } | fit.summary()
    # the inference method beside every number it produced (also in diagnostics, with the fit's provenance)
    payload: dict[str, Any] = {"summary": [r | {"method": fit.sampler.method} for r in summary_records(summary)],
                               "diagnostics": diag_json}
    if cons is not None:
        payload["consistency"] = [{c: clean(v) for c, v in row.items()} for _, row in cons.iterrows()]
    if calibration is not None:
        payload["judge_calibration"] = calibration.as_record()
    if rerun is not None:
        payload["rerun"] = {"n_future": rerun[0], "summary": summary_records(rerun[1], "posterior predictive")}
    return payload


def print_fit(
    fit: Any,
    label: str,
    population: str,
    summary: pd.DataFrame,
    cons: pd.DataFrame | None,
    rerun: tuple[int, pd.DataFrame] | None,
    calibration: Any = None,
) -> None:
    """Print the tables and lines of ``agentstats fit``: posterior, consistency, re-run, the run, diagnostics."""
    kind = str(summary["ci_kind"].iloc[0]) if len(summary) else "eti"
    prob = float(summary["ci_prob"].iloc[0]) if len(summary) else float("nan")
    out.print(pass_k_table(f"{label}: posterior ({fit.family.name}, {fit.sampler.label}, {population} tasks), "
                           f"{prob:.0%} {_KIND_NAMES.get(kind, kind)} credible intervals", summary))
    under = [t for t in (summary, rerun[1] if rerun else None) if t is not None and t["under_half"].any()]
    out.print(
        "tasks: the tasks behind each value / the tasks in the input (posterior: the agent's tasks with a recorded "
        "trial; re-run: those with n + N >= k)"
        + (f"; {UNDER_HALF_MARK} under half of them: read with care." if under else ".")
    )
    if cons is not None:
        table, notes = consistency_table(cons)
        out.print(table)
        for note in notes:
            out.print(note)
    if rerun is not None:
        n_future, rerun_summary = rerun
        out.print(pass_k_table(f"predicted unbiased estimates from the recorded trials plus {n_future} more per task "
                               f"({prob:.0%} posterior predictive intervals)", rerun_summary))
        beyond = sorted({int(kk) for kk in rerun_summary.loc[rerun_summary["n_tasks"] == 0, "k"]})
        if beyond:
            out.print(
                f"note: k = {', '.join(map(str, beyond))} exceeds n + N (recorded plus {n_future} re-run trials) on "
                "every task: the predicted unbiased estimate needs n + N >= k trials, so there is none (the "
                "posterior table above extrapolates to any k)."
            )
    _print_run(fit, calibration)


def _print_run(fit: Any, calibration: Any) -> None:
    """Print the model and sampler, an abandoned attempt, the stopping rule's checkpoints, the judge, diagnostics."""
    s, diag = fit.sampler, fit.diagnostics()
    # the method once, here: every number printed above came from these draws
    tail = f", divergences {diag.divergences}" if s.method == "nuts" else ""
    out.print(f"model {fit.family.name} (dispersion {fit.family.dispersion or 'none'}), method {s.method}: "
              f"{s.describe()}{tail}")
    for c in s.abandoned:
        out.print(checkpoint_text(c))
    if s.stops:
        said = "; ".join(checkpoint_text(c) for c in s.stops)
        out.print(
            f"until converged (at most {s.draws_max} draws; stop at the first checkpoint with R-hat <= 1.01 and "
            f"bulk/tail ESS >= {STOP_ESS_MIN}): {said}"
        )
    if calibration is not None:
        post = fit.posterior
        out.print(
            f"judge calibration ({calibration.metric}, {calibration.n_items} items): sensitivity "
            f"{float(post['judge_sensitivity'].mean()):.3f}, specificity "
            f"{float(post['judge_specificity'].mean()):.3f} (posterior means, estimated jointly); pass@k / "
            "pass^k above are of the true outcome"
        )
    out.print(str(diag))

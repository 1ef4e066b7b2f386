"""Display tables of the report: result tables made short, rounded and named for a reader.

Every function takes a result table (from :mod:`agentstats.estimators`, :mod:`agentstats.calibration`,
:mod:`agentstats.metrics` or :mod:`agentstats.compare`) and returns a DataFrame of short, formatted columns; pandas
escapes every cell when it renders them. Only :func:`describe_counts` computes something (the per-agent overview of a
counts table). The Bayesian section's tables are in :mod:`.model_tables`, the scoring tables' in
:mod:`agentstats.report.scoring_tables.display`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from agentstats.estimators.bootstrap import METHOD_CLOPPER_PEARSON
from agentstats.report._format import ci_label, interval, num, plural

if TYPE_CHECKING:
    from agentstats.compare.runs import RunComparison

__all__ = [
    "describe_counts",
    "format_corrected",
    "format_counts_table",
    "format_left_out",
    "format_metric_summary",
    "format_paired_table",
    "format_run_bayes",
    "format_run_contrasts",
    "format_run_metrics",
    "format_suite_table",
    "tasks_behind_html",
    "value_table",
]


def describe_counts(counts: pd.DataFrame) -> pd.DataFrame:
    """Per-agent overview of a counts table.

    Parameters
    ----------
    counts : pandas.DataFrame
        Columns ``agent, task_id, n, c, n_missing`` (one row per agent x task cell; ``n`` excludes missing
        trials), as returned by :func:`agentstats.to_counts`.

    Returns
    -------
    pandas.DataFrame
        One row per agent: ``tasks`` (cells with at least one recorded trial), ``trials`` (sum of n),
        ``successes`` (sum of c), ``missing`` (infrastructure errors, excluded), ``tasks_with_missing``,
        ``trials_per_task_min`` / ``_median`` / ``_max`` (over cells with n >= 1), ``success_rate``
        (pooled c / n, for orientation only: suite values are means over tasks).

    Raises
    ------
    ValueError
        When a required column is absent.
    """
    required = {"agent", "task_id", "n", "c", "n_missing"}
    missing_cols = required - set(counts.columns)
    if missing_cols:
        raise ValueError(f"counts: missing column(s) {sorted(missing_cols)}")
    rows = []
    for agent, g in counts.groupby("agent", sort=True):
        observed = g[g["n"] > 0]
        n = observed["n"].to_numpy()
        rows.append(
            dict(
                agent=agent,
                tasks=len(observed),
                tasks_all_missing=int(((g["n"] == 0) & (g["n_missing"] > 0)).sum()),
                trials=int(g["n"].sum()),
                successes=int(g["c"].sum()),
                missing=int(g["n_missing"].sum()),
                tasks_with_missing=int((g["n_missing"] > 0).sum()),
                trials_per_task_min=int(n.min()) if n.size else 0,
                trials_per_task_median=float(np.median(n)) if n.size else 0.0,
                trials_per_task_max=int(n.max()) if n.size else 0,
                success_rate=float(g["c"].sum() / g["n"].sum()) if g["n"].sum() else float("nan"),
            )
        )
    return pd.DataFrame(rows)


def format_suite_table(suite: pd.DataFrame, digits: int = 3) -> pd.DataFrame:
    """Compact display of :func:`agentstats.estimators.suite_pass_k`: one row per (agent, k), value and interval.

    Parameters
    ----------
    suite : pandas.DataFrame
        Output of :func:`agentstats.estimators.suite_pass_k`.
    digits : int
        Decimals shown.

    Returns
    -------
    pandas.DataFrame
        Index ``(agent, k)``; columns ``tasks`` (tasks behind the value out of the suite's, e.g. ``41/83``),
        ``n < k`` (tasks the agent ran with 1 <= n < k usable trials, left out of that k's mean:
        ``n_tasks_dropped``), ``no usable trial`` (suite tasks the agent never ran or whose trials were all missing,
        left out at every k: ``n_tasks_excluded``), so that the three counts add up to the suite; ``pass@k``,
        ``pass@k P CI``, ``pass^k``, ``pass^k P CI`` (``P`` from ``ci_prob``, e.g. ``95%``) and ``note``
        (``under half of the tasks`` when the value rests on fewer than half of the suite's tasks; ``boundary
        interval`` where the interval is the Clopper-Pearson interval used near 0 or 1, see
        :func:`agentstats.estimators.suite_pass_k`). Values are strings, except the two counts.
    """
    label = ci_label(suite)

    def ci(lo: float, hi: float) -> str:
        if not (np.isfinite(lo) and np.isfinite(hi)):
            return "n/a"
        return f"[{lo:.{digits}f}, {hi:.{digits}f}]"

    def val(x: float) -> str:
        return f"{x:.{digits}f}" if np.isfinite(x) else "n/a"

    rows = []
    for _, r in suite.iterrows():
        n_suite = r.get("n_tasks_suite")
        has_suite = n_suite is not None and pd.notna(n_suite)
        notes = []
        if has_suite and bool(r.get("under_half", False)):
            notes.append("under half of the tasks")
        boundary = [
            sym
            for q, sym in (("pass_at_k", "pass@k"), ("pass_hat_k", "pass^k"))
            if r.get(f"{q}_ci_method") == METHOD_CLOPPER_PEARSON
        ]
        if boundary:
            notes.append(f"boundary interval ({', '.join(boundary)}: Clopper-Pearson)")
        rows.append(
            {
                "agent": r["agent"],
                "k": int(r["k"]),
                "tasks": f"{int(r['n_tasks'])}/{int(n_suite)}" if has_suite else str(int(r["n_tasks"])),
                "n < k": int(r.get("n_tasks_dropped", 0) or 0),
                "no usable trial": int(r.get("n_tasks_excluded", 0) or 0),
                "pass@k": val(r["pass_at_k"]),
                f"pass@k {label} CI": ci(r["pass_at_k_ci_low"], r["pass_at_k_ci_high"]),
                "pass^k": val(r["pass_hat_k"]),
                f"pass^k {label} CI": ci(r["pass_hat_k_ci_low"], r["pass_hat_k_ci_high"]),
                "note": "; ".join(notes),
            }
        )
    return pd.DataFrame(rows).set_index(["agent", "k"])


def format_paired_table(paired: pd.DataFrame, k: int, digits: int = 3) -> pd.DataFrame:
    """Paired differences in pass^k at one ``k``: each pair once, the agent with the higher pass^k first.

    The evidence behind the report's statements on which agent is ahead (:func:`agentstats.report.prose.read_suite`,
    :func:`~agentstats.report.prose.report_summary`): one agent is ahead of another when the paired interval of
    their difference lies wholly above 0.

    Parameters
    ----------
    paired : pandas.DataFrame
        Output of :func:`agentstats.estimators.paired_pass_k_table` (columns ``agent_a, agent_b, k, n_tasks,
        pass_hat_k_diff, pass_hat_k_diff_ci_low, pass_hat_k_diff_ci_high``, and ``mcnemar_p`` and ``ci_prob`` when
        given).
    k : int
        The k shown.
    digits : int
        Decimals shown.

    Returns
    -------
    pandas.DataFrame
        Columns ``k``, ``ahead``, ``behind``, ``difference`` (pass^k of ``ahead`` minus ``behind``, >= 0), ``P
        paired CI`` (``P`` from ``ci_prob``), ``interval above 0`` (``yes`` / ``no``), ``shared tasks`` and, when
        given, ``McNemar p``; sorted by the interval's lower end (highest first), pairs without a shared task last.
        Values are strings except ``k`` and ``shared tasks``.
    """
    label = ci_label(paired)
    rows = []
    for _, r in paired[paired["k"] == k].iterrows():
        d, lo, hi = (float(r[c]) for c in ("pass_hat_k_diff", "pass_hat_k_diff_ci_low", "pass_hat_k_diff_ci_high"))
        a, b = str(r["agent_a"]), str(r["agent_b"])
        if np.isfinite(d) and d < 0:
            a, b, d, lo, hi = b, a, -d, -hi, -lo
        row = {"k": int(k), "ahead": a, "behind": b, "difference": num(d, digits),
               f"{label} paired CI": interval(lo, hi, digits) if np.isfinite(lo) and np.isfinite(hi) else "n/a",
               "interval above 0": "yes" if np.isfinite(lo) and lo > 0 else "no", "shared tasks": int(r["n_tasks"]),
               "_lo": lo if np.isfinite(lo) else -np.inf}
        if "mcnemar_p" in r:
            row["McNemar p"] = f"{float(r['mcnemar_p']):.3g}" if pd.notna(r["mcnemar_p"]) else "n/a"
        rows.append(row)
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    return out.sort_values(["_lo", "ahead", "behind"], ascending=[False, True, True]).drop(columns="_lo").reset_index(
        drop=True)


def _marks(c: int, n: int) -> str:
    """``c`` of ``n`` trials as marks (● success, ○ failure) in groups of ten, so a long row wraps within the page."""
    marks = "●" * c + "○" * (n - c)
    return " ".join(marks[i:i + 10] for i in range(0, len(marks), 10))


def tasks_behind_html(counts: pd.DataFrame, *, max_tasks: int = 1000) -> str:
    """Write, per agent, the tasks and trials behind its values: one closed ``<details>`` each (HTML, no script).

    Each agent's handle says its pass^1 (successes over trials, task by task, averaged over its tasks), its tasks
    and trials; opened, a table lists every task (hardest for the agent first): successes / trials, the outcomes as
    marks (● success, ○ failure; counts, not trial order; in groups of ten, which wrap on a narrow page) and missing
    trials (excluded). Names and ids are escaped.

    Parameters
    ----------
    counts : pandas.DataFrame
        ``agent, task_id, n, c, n_missing`` per cell.
    max_tasks : int
        Tasks listed per agent at most (the hardest first); the handle says when some are not listed.

    Returns
    -------
    str
        HTML: one ``<details class="agentstats-tasks">`` per agent, in the counts' agent order.
    """
    from html import escape

    parts = []
    for agent, g in counts.groupby("agent", sort=False):
        used = g[g["n"] > 0].assign(share=lambda d: d["c"] / d["n"]).sort_values(["share", "task_id"])
        p1 = float(used["share"].mean()) if len(used) else float("nan")
        head = (f"<b>{escape(str(agent))}</b>: pass^1 = {'n/a' if p1 != p1 else f'{p1:.3f}'} over "
                f"{plural(len(used), 'task')}; {int(used['c'].sum())} of {plural(int(used['n'].sum()), 'trial')} "
                "succeeded")
        if len(used) > max_tasks:
            head += f" (the {max_tasks} hardest listed)"
        rows = "".join(
            f"<tr><td>{escape(str(r.task_id))}</td><td>{int(r.c)} / {int(r.n)}</td>"
            f"<td class=\"marks\">{_marks(int(r.c), int(r.n))}</td><td>{int(r.n_missing) or ''}</td></tr>"
            for r in used.head(max_tasks).itertuples(index=False)
        )
        parts.append(f'<details class="agentstats-tasks"><summary>{head}</summary><table><thead><tr><th>task</th>'
                     f"<th>successes / trials</th><th>outcomes</th><th>missing</th></tr></thead><tbody>{rows}"
                     "</tbody></table></details>")
    return "\n".join(parts)


def format_counts_table(overview: pd.DataFrame) -> pd.DataFrame:
    """Compact display of :func:`describe_counts`: one row per agent, short columns that fit a report page.

    Parameters
    ----------
    overview : pandas.DataFrame
        Output of :func:`describe_counts`.

    Returns
    -------
    pandas.DataFrame
        Index ``agent``; columns ``tasks``, ``trials``, ``successes``, ``missing`` (infrastructure errors,
        excluded; with the number of tasks they hit), ``trials per task`` (``min / median / max`` over tasks with a
        recorded trial) and ``pooled rate`` (successes / trials, for orientation only). Values are strings.
    """
    rows = []
    for _, r in overview.iterrows():
        missing = str(int(r["missing"]))
        if int(r["missing"]):
            missing += f" ({plural(int(r['tasks_with_missing']), 'task')})"
        median = float(r["trials_per_task_median"])
        med = f"{median:.0f}" if median == int(median) else f"{median:.1f}"
        rows.append(
            {
                "agent": r["agent"],
                "tasks": int(r["tasks"]),
                "trials": int(r["trials"]),
                "successes": int(r["successes"]),
                "missing": missing,
                "trials per task": f"{int(r['trials_per_task_min'])} / {med} / {int(r['trials_per_task_max'])}",
                "pooled rate": num(float(r["success_rate"])),
            }
        )
    return pd.DataFrame(rows).set_index("agent")


def _float(x: object) -> float:
    """``x`` as a float; None and pandas' missing values are NaN."""
    return float("nan") if x is None or x is pd.NA else float(x)  # type: ignore[arg-type]


def _metric_interval(mean: object, lo: object, hi: object) -> str:
    """``mean [lo, hi]`` with one number format for all three, chosen by the largest magnitude among them.

    3 decimals for values up to 10 (rates, scores, seconds), 1 decimal up to 1,000, none (with thousands separators)
    beyond; below 0.1, three significant digits of the largest (costs in dollars).
    """
    vals = [_float(v) for v in (mean, lo, hi)]
    if not np.isfinite(vals[0]):
        return "not applicable"
    m = max(abs(v) for v in vals if np.isfinite(v))
    if m >= 1000:
        return "{:,.0f} [{:,.0f}, {:,.0f}]".format(*vals)
    digits = 1 if m >= 10 else 3 if m >= 0.1 or m == 0 else 2 - int(np.floor(np.log10(m)))
    if not np.isfinite(vals[1]):  # fewer than two distinct task means: no spread to estimate (summarize_metrics)
        return f"{num(vals[0], digits)} (no interval: fewer than two distinct task means)"
    return f"{num(vals[0], digits)} {interval(vals[1], vals[2], digits)}"


def _limit_text(x: float) -> str:
    return f"{x:g}"


def format_metric_summary(summary: pd.DataFrame, metrics: dict | None = None) -> pd.DataFrame:
    """Compact display of the metric summary: per agent (and risk level) and metric, mean and share passing.

    Parameters
    ----------
    summary : pandas.DataFrame
        Output of :func:`agentstats.estimators.metric_means.summarize_metrics` or of
        :func:`~agentstats.estimators.metric_means.summarize_metrics_by_risk` (then with ``risk_level``).
    metrics : dict, optional
        ``frame.attrs["metrics"]`` of the :func:`agentstats.metrics.compute` frame: each metric's ``lower_limit`` /
        ``upper_limit`` for the threshold column.

    Returns
    -------
    pandas.DataFrame
        Index ``agent``, ``risk level`` (only when the summary has levels other than ``"all"``) and ``metric``;
        string columns ``method``, ``tasks`` (tasks with a value), ``mean [CI]`` (posterior mean over tasks and
        equal-tailed credible interval, on the metric's own scale; the mean alone, saying why, when fewer than two
        distinct task means leave no spread to estimate), ``threshold`` (``>= lower_limit`` / ``<=
        upper_limit``, a dash without one), ``share passing [CI]`` (share of trials meeting the threshold, suite
        pass@1, with its confidence interval; a dash without a threshold) and ``trials`` (trials with a verdict).
        Names from the data are left as they are: pandas escapes every cell and label when it renders the table.
    """
    metrics = metrics or {}
    if "risk_level" in summary.columns:  # each agent's rows together: all trials first, then each risk level
        order = summary["risk_level"].map(lambda v: (v != "all", str(v)))
        summary = summary.assign(_order=order).sort_values(["agent", "_order", "metric"], kind="stable")
    by_risk = "risk_level" in summary.columns and bool((summary["risk_level"] != "all").any())
    rows = []
    for _, r in summary.iterrows():
        m = metrics.get(r["metric"], {})
        lo, hi = m.get("lower_limit"), m.get("upper_limit")
        limits = [f"{sign} {_limit_text(v)}" for sign, v in (("≥", lo), ("≤", hi)) if v is not None]
        thr = ", ".join(limits) or "—"
        has_share = bool(np.isfinite(_float(r["share_passed"])))
        row = {"agent": r["agent"]}
        if by_risk:
            row["risk level"] = r["risk_level"]
        row.update({
            "metric": r["metric"],
            "method": r["method"],
            "tasks": int(r["n_tasks"]),
            "mean [CI]": _metric_interval(r["mean"], r["ci_low"], r["ci_high"]),
            "threshold": thr,
            "share passing [CI]": (f"{num(_float(r['share_passed']))} "
                                   f"{interval(_float(r['share_ci_low']), _float(r['share_ci_high']))}"
                                   if has_share else "—"),
            "trials": int(r["n_trials_passed_known"]) if has_share else "—",
        })
        rows.append(row)
    index = ["agent", "risk level", "metric"] if by_risk else ["agent", "metric"]
    if not rows:
        return pd.DataFrame(columns=[*index, "method", "tasks", "mean [CI]", "threshold", "share passing [CI]",
                                     "trials"]).set_index(index)
    return pd.DataFrame(rows).set_index(index)


def value_table(values: Mapping[str, object]) -> pd.DataFrame:
    """Show named values (a summary's counts and rates) as a one-column table, ``value``, indexed by name."""
    return pd.Series(values, name="value").to_frame()


#: Columns of the corrected pass^k table, in the order shown.
_CORRECTED = ("agent", "k", "n_tasks", "pass_hat_k_uncorrected", "pass_hat_k", "pass_hat_k_ci_low",
              "pass_hat_k_ci_high", "pass_hat_k_method", "pass_at_k_uncorrected", "pass_at_k", "pass_at_k_ci_low",
              "pass_at_k_ci_high", "pass_at_k_method")


def format_corrected(corrected: pd.DataFrame) -> pd.DataFrame:
    """Keep the columns of :func:`agentstats.calibration.corrected_pass_k` a reader compares: raw next to corrected."""
    return corrected[list(_CORRECTED)]




# ---- the run comparison (notebooks/compare.ipynb)
def format_run_contrasts(pass_k: pd.DataFrame) -> pd.DataFrame:
    """One row per run, k and quantity of a run comparison: baseline, run, difference and its interval.

    Parameters
    ----------
    pass_k : pandas.DataFrame
        :attr:`agentstats.compare.runs.RunComparison.pass_k`: ``agent_a`` (the run), ``k``, ``n_tasks``, and per
        quantity ``q`` (``pass_at_k``, ``pass_hat_k``) ``q_a``, ``q_b``, ``q_diff``, ``q_diff_ci_low``,
        ``q_diff_ci_high``, ``q_diff_ci_method``; ``mcnemar_p``.

    Returns
    -------
    pandas.DataFrame
        Index ``(run, k, quantity)``; columns ``tasks``, ``baseline``, ``run value``, ``difference``, ``interval``
        (three decimals), ``method`` and ``McNemar p`` (left out where it is never defined: it needs k = 1 and one
        trial per task).
    """
    rows = []
    for _, r in pass_k.iterrows():
        for q, label in (("pass_at_k", "pass@k"), ("pass_hat_k", "pass^k")):
            rows.append({"run": r["agent_a"], "k": r["k"], "quantity": label, "tasks": r["n_tasks"],
                         "baseline": r[f"{q}_b"], "run value": r[f"{q}_a"], "difference": r[f"{q}_diff"],
                         "interval": f"[{r[f'{q}_diff_ci_low']:.3f}, {r[f'{q}_diff_ci_high']:.3f}]",
                         "method": r[f"{q}_diff_ci_method"], "McNemar p": r["mcnemar_p"]})
    view = pd.DataFrame(rows)
    if view["McNemar p"].isna().all():  # defined only at k = 1 with one trial per task
        view = view.drop(columns="McNemar p")
    return view.set_index(["run", "k", "quantity"])


def format_run_metrics(metrics: pd.DataFrame) -> pd.DataFrame:
    """Name the columns of a run comparison's per-trial metrics (``RunComparison.metrics``).

    Returns
    -------
    pandas.DataFrame
        Index ``(run, metric)``; columns ``tasks``, ``baseline``, ``run value``, ``difference``, ``interval low``,
        ``interval high``.
    """
    view = metrics[["run", "metric", "n_tasks", "mean_baseline", "mean_run", "diff", "diff_ci_low", "diff_ci_high"]]
    names = {"n_tasks": "tasks", "mean_baseline": "baseline", "mean_run": "run value", "diff": "difference",
             "diff_ci_low": "interval low", "diff_ci_high": "interval high"}
    return view.set_index(["run", "metric"]).rename(columns=names)


def format_run_bayes(bayes: pd.DataFrame) -> pd.DataFrame:
    """Name the columns of a run comparison's Bayesian contrasts (``RunComparison.bayes``)."""
    names = {"diff_mean": "difference (mean)", "diff_low": "credible low", "diff_high": "credible high",
             "prob_greater": "P(run > baseline)"}
    return bayes.set_index(["run", "quantity", "k"]).rename(columns=names)


def format_left_out(comparison: RunComparison) -> pd.DataFrame:
    """Per run of a comparison: tasks attempted, tasks left out (not attempted by every run) and the first ten."""
    left = pd.DataFrame([{"run": r, "attempted": comparison.n_tasks[r], "left out": len(v),
                          "first left out": ", ".join(v[:10]) + (" ..." if len(v) > 10 else "")}
                         for r, v in comparison.left_out.items()])
    return left.set_index("run")

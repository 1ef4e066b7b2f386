"""Plain summaries of a data set and a plain-language reading of the estimates, for reports and the CLI."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from agentstats._util.markup import md_code, md_text
from agentstats.estimators.bootstrap import METHOD_CLOPPER_PEARSON
from agentstats.intervals import CI_PROB, ci_percent, table_ci_prob

if TYPE_CHECKING:  # the fit's types only: describing a fit needs no PyMC import
    from agentstats.models.diagnostics import Diagnostics
    from agentstats.models.result import Fit

__all__ = [
    "credible_leaders",
    "describe_counts",
    "fit_status",
    "format_consistency",
    "format_consistency_pass_hat_k",
    "format_contrast_table",
    "format_counts_table",
    "format_diagnostics",
    "format_metric_summary",
    "format_ppc_table",
    "format_schema_errors",
    "format_suite_table",
    "format_tool_errors",
    "grid_gaps_note",
    "read_suite",
    "report_summary",
    "run_details",
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


def grid_gaps_note(counts: pd.DataFrame, limit: int = 10) -> str:
    """Say which trials are absent from the agent x task x trial grid (Markdown), for a report's data section.

    Parameters
    ----------
    counts : pandas.DataFrame
        A counts table whose ``attrs["gaps"]`` is a :class:`agentstats.records.gaps.GridGaps` (as from
        :func:`agentstats.to_counts` and :func:`agentstats.load`); without it (a counts table has no trial numbers)
        there is nothing to say.
    limit : int
        Cells named, at most.

    Returns
    -------
    str
        One Markdown paragraph, every name from the data escaped; empty when no trial is absent.
    """
    gaps = counts.attrs.get("gaps")
    if gaps is None or not gaps.n_cells:
        return ""
    return (
        f"**Not every trial is in the data:** {md_text(gaps.describe(limit=limit))}: they are neither failures nor "
        "missing trials, so the values of those agent × task cells rest on the trials that are there."
    )


def _fmt_ci(lo: float, hi: float) -> str:
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return "[n/a]"
    return f"[{lo:.2f}, {hi:.2f}]"


_fmt_prob = ci_percent


def _ci_label(table: pd.DataFrame) -> str:
    """Return the interval probability of a result table as text (``"95%"``), from its ``ci_prob`` column or attrs."""
    prob = table_ci_prob(table)
    return "per-row (ci_prob)" if prob is None else ci_percent(prob)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _and_list(items: list[str]) -> str:
    """Join items as in a sentence: ``"a"``, ``"a and b"``, ``"a, b and c"``."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _k_values_text(ks: list[int]) -> str:
    """Write k values in prose: ``"k = 5"``, ``"k = 4 and 5"``, ``"k from 3 to 5"`` (a run of three or more).

    Others as a list: ``"k = 2, 4 and 8"``.
    """
    ks = sorted(set(ks))
    if len(ks) >= 3 and ks[-1] - ks[0] == len(ks) - 1:
        return f"k from {ks[0]} to {ks[-1]}"
    return f"k = {_and_list([str(k) for k in ks])}"


#: Two estimates closer than this are tied (the unbiased estimators are ratios of small integers: a real difference
#: is far larger).
_TIE = 1e-9


@dataclass(frozen=True)
class _Diff:
    """A paired difference ``first - second`` in pass^k, oriented as asked."""

    diff: float
    lo: float
    hi: float
    n_tasks: int
    p: float

    @property
    def above_zero(self) -> bool:
        return bool(np.isfinite(self.lo) and self.lo > 0)

    def text(self, label: str) -> str:
        p = f"; exact McNemar p = {self.p:.3g}" if np.isfinite(self.p) else ""
        return (
            f"{self.diff:+.2f}, {label} paired interval {_fmt_ci(self.lo, self.hi)}, "
            f"{_plural(self.n_tasks, 'shared task')}{p}"
        )


def _oriented(paired: pd.DataFrame, first: object, second: object, k: int) -> _Diff | None:
    """``first - second`` in pass^k at ``k`` from an all-pairs table, whichever way round the pair is stored.

    None when the table has no such row or the two agents share no task at ``k``.
    """
    rows = paired[paired["k"] == k]
    fwd = rows[(rows["agent_a"] == first) & (rows["agent_b"] == second)]
    if len(fwd):
        r, sign = fwd.iloc[0], 1.0
    else:
        back = rows[(rows["agent_a"] == second) & (rows["agent_b"] == first)]
        if not len(back):
            return None
        r, sign = back.iloc[0], -1.0
    if int(r["n_tasks"]) == 0:
        return None
    lo, hi = sign * float(r["pass_hat_k_diff_ci_low"]), sign * float(r["pass_hat_k_diff_ci_high"])
    p = r["mcnemar_p"] if "mcnemar_p" in r else np.nan
    return _Diff(
        diff=sign * float(r["pass_hat_k_diff"]),
        lo=min(lo, hi),
        hi=max(lo, hi),
        n_tasks=int(r["n_tasks"]),
        p=float(p) if pd.notna(p) else float("nan"),
    )


def _paired_lines(at1: pd.DataFrame, paired: pd.DataFrame | None, k_lo: int) -> list[str]:
    """Sentences on which agent is better at ``k_lo``, from paired differences only."""
    leader = at1.iloc[0]["agent"]
    others = [a for a in at1["agent"] if a != leader]
    if paired is None or not len(paired) or not (paired["k"] == k_lo).any():
        return [
            f"- Which agent is better is not settled here: no paired comparison at k = {k_lo} was given. Agents run "
            "on the same tasks are compared by their paired difference (`agentstats.paired_pass_k_table`), not by "
            "whether their separate intervals overlap."
        ]
    label = _ci_label(paired)  # the paired table's own interval probability
    diffs = {o: _oriented(paired, leader, o, k_lo) for o in others}
    settled_vs_leader = {o: d for o, d in diffs.items() if d is not None and d.above_zero}
    unsettled = [o for o in others if o not in settled_vs_leader]
    lines: list[str] = []
    if not unsettled:
        closest = min(settled_vs_leader, key=lambda o: settled_vs_leader[o].lo)
        lines.append(
            f"- **{md_text(leader)}** is the best agent at k = {k_lo}: its paired difference in pass^{k_lo} is above 0 "
            f"against every other agent (closest: **{md_text(closest)}**, {settled_vs_leader[closest].text(label)})."
        )
    else:
        shown = []
        for o in unsettled[:3]:
            d = diffs[o]
            why = d.text(label) if d is not None else f"no shared task with {k_lo}+ trials"
            shown.append(f"**{md_text(o)}** ({why})")
        if len(unsettled) > 3:
            shown.append(f"{len(unsettled) - 3} more")
        what = (
            f"the paired difference between **{md_text(leader)}** and {shown[0]} is"
            if len(shown) == 1
            else f"the paired differences between **{md_text(leader)}** and each of {_and_list(shown)} are"
        )
        lines.append(
            f"- No agent is shown to be the best at k = {k_lo}: {what} not clearly above 0, so these data do not "
            "settle which is better."
        )
    settled = []
    for _, r in paired[paired["k"] == k_lo].iterrows():
        a, b = r["agent_a"], r["agent_b"]
        if leader in (a, b):
            continue
        d = _oriented(paired, a, b, k_lo)
        if d is None or not (np.isfinite(d.lo) and np.isfinite(d.hi)) or d.lo <= 0 <= d.hi:
            continue
        better, worse = (a, b) if d.lo > 0 else (b, a)
        shown_d = d if d.lo > 0 else _oriented(paired, b, a, k_lo)
        if shown_d is not None:
            settled.append(f"**{md_text(better)}** above **{md_text(worse)}** ({shown_d.text(label)})")
    if settled:
        more = f"; and {len(settled) - 5} more pairs" if len(settled) > 5 else ""
        lines.append(f"- Other pairs whose paired difference excludes 0: {'; '.join(settled[:5])}{more}.")
    larger = _separated_at_larger_k(paired, k_lo, label)
    if larger:
        lines.append(larger)
    lines.append(
        "  (Each paired interval resamples the tasks the two agents share. To lead every other agent, all of an "
        "agent's own paired intervals must lie above 0; that keeps the error rate of the claim at the interval's "
        "level without a multiplicity correction.)"
    )
    return lines


def _separated_at_larger_k(paired: pd.DataFrame, k_lo: int, label: str, limit: int = 6) -> str:
    """One bullet naming the pairs whose paired interval of pass^k excludes 0 at a k above ``k_lo`` (empty if none)."""
    found = []
    for kv in sorted(int(k) for k in paired["k"].unique() if int(k) > k_lo):
        for _, r in paired[paired["k"] == kv].iterrows():
            d = _oriented(paired, r["agent_a"], r["agent_b"], kv)
            if d is None or not (np.isfinite(d.lo) and np.isfinite(d.hi)) or d.lo <= 0 <= d.hi:
                continue
            better, worse = (r["agent_a"], r["agent_b"]) if d.lo > 0 else (r["agent_b"], r["agent_a"])
            shown = _oriented(paired, better, worse, kv)
            if shown is not None:
                found.append(f"pass^{kv}: **{md_text(better)}** above **{md_text(worse)}** ({shown.text(label)})")
    if not found:
        return ""
    more = f"; and {len(found) - limit} more" if len(found) > limit else ""
    return (
        "- At larger k, paired differences that exclude 0 (each interval on its own, not corrected for looking at "
        f"several k): {'; '.join(found[:limit])}{more}."
    )


def read_suite(
    suite: pd.DataFrame, ks: tuple[int, ...] | None = None, *, paired: pd.DataFrame | None = None
) -> str:
    """Write a short plain-language reading of per-agent suite pass@k / pass^k (Markdown).

    Which agent is better is read from **paired** differences on shared tasks only: an agent is called the best
    only when its paired interval against every other agent lies above 0 (an intersection-union test; Berger
    1982, Technometrics 24:295-300). Overlap of the separate (marginal) intervals is never used: it ignores that
    the agents faced the same tasks.

    Parameters
    ----------
    suite : pandas.DataFrame
        Output of :func:`agentstats.estimators.suite_pass_k` (columns ``agent, k, n_tasks, pass_at_k,
        pass_at_k_ci_low, pass_at_k_ci_high, pass_hat_k, pass_hat_k_ci_low, pass_hat_k_ci_high``; with
        ``n_tasks_suite``, ``under_half``, ``n_tasks_excluded``, ``ci_prob`` and the ``*_ci_method`` columns the
        reading also covers task coverage, exclusions, the interval probability and method).
    ks : tuple of int, optional
        Which k to talk about; default the smallest and the largest k present.
    paired : pandas.DataFrame, optional
        Output of :func:`agentstats.estimators.paired_pass_k_table` for the same counts. Without it no agent is
        called better than another.

    Returns
    -------
    str
        Markdown bullet points: the leading agent at the smallest k and what the paired differences say about it,
        other pairs the paired differences separate there and, when ``paired`` holds larger k, the pairs it separates
        at those k, how reliability drops from pass^1 to pass^k with the tasks
        behind each value, exclusions, and how the intervals were made.
    """
    if suite.empty:
        return "No estimates: the data hold no agent with a recorded trial."
    label = _ci_label(suite)
    lines: list[str] = []
    k_all = sorted(int(k) for k in suite["k"].unique())
    k_lo = ks[0] if ks else k_all[0]
    k_hi = ks[-1] if ks else k_all[-1]
    at1 = suite[suite["k"] == k_lo].sort_values("pass_hat_k", ascending=False, na_position="last")

    def tasks_of(r: pd.Series) -> str:
        if "n_tasks_suite" in r and pd.notna(r["n_tasks_suite"]):
            return f"{int(r['n_tasks'])} of {_plural(int(r['n_tasks_suite']), 'task')}"
        return _plural(int(r["n_tasks"]), "task")

    if len(at1) >= 1:
        top = at1.iloc[0]
        tied = at1[np.isclose(at1["pass_hat_k"].to_numpy(dtype=float), float(top["pass_hat_k"]), rtol=0, atol=_TIE)]
        if len(tied) >= 2:  # a tie is called a tie: no agent is named as having the highest estimate
            each = "; ".join(
                f"**{md_text(r['agent'])}** {_fmt_ci(r['pass_hat_k_ci_low'], r['pass_hat_k_ci_high'])}, {tasks_of(r)}"
                for _, r in tied.head(6).iterrows()
            )
            more = f"; and {len(tied) - 6} more" if len(tied) > 6 else ""
            who = (
                "every agent has the same estimate"
                if len(tied) == len(at1)
                else f"{_names([str(a) for a in tied['agent']])} share the highest estimate"
            )
            lines.append(
                f"- At k = {k_lo}, {who}, pass^{k_lo} = {top['pass_hat_k']:.2f} ({label} intervals: {each}{more})."
            )
        else:
            lead = "has the highest estimate" if len(at1) > 1 else "succeeds on this share of tasks"
            lines.append(
                f"- At k = {k_lo}, **{md_text(top['agent'])}** {lead}, pass^{k_lo} = {top['pass_hat_k']:.2f} "
                f"({label} interval "
                f"{_fmt_ci(top['pass_hat_k_ci_low'], top['pass_hat_k_ci_high'])}, {tasks_of(top)})."
            )
        if len(at1) >= 2:
            lines.extend(_paired_lines(at1, paired, k_lo))
    if k_hi > k_lo:
        lines.append(
            f"- pass^{k_hi} (all {k_hi} tries succeed) against pass^{k_lo}, and pass@{k_hi} (at least one success in "
            f"{k_hi} tries): a wide gap between pass@{k_hi} and pass^{k_hi} means an agent can solve many tasks but "
            "not reliably."
        )
        for agent, g in suite.groupby("agent", sort=True):
            g = g.set_index("k")
            if k_lo in g.index and k_hi in g.index:
                p1, pk = g.loc[k_lo, "pass_hat_k"], g.loc[k_hi, "pass_hat_k"]
                ak = g.loc[k_hi, "pass_at_k"]
                if not np.isfinite(pk) and int(g.loc[k_hi, "n_tasks"]) == 0:
                    lines.append(
                        f"  - **{md_text(agent)}**: no task with {k_hi} usable trials, so no pass^{k_hi} estimate."
                    )
                elif np.isfinite(pk) and np.isfinite(p1):
                    under = bool(g.loc[k_hi, "under_half"]) if "under_half" in g else int(g.loc[k_hi, "n_tasks"]) < 10
                    few = " -- under half of the tasks, read with care" if under else ""
                    lines.append(
                        f"  - **{md_text(agent)}**: pass^{k_hi} = {pk:.2f} against pass^{k_lo} = {p1:.2f}; "
                        f"pass@{k_hi} = {ak:.2f}; pass^{k_hi} rests on {tasks_of(g.loc[k_hi])}{few}."
                    )
    dropped = suite[suite["n_tasks_dropped"] > 0] if "n_tasks_dropped" in suite else suite.iloc[:0]
    if len(dropped):
        ks_d = sorted(int(k) for k in dropped["k"].unique())
        lines.append(
            f"- For {_k_values_text(ks_d)}, some tasks had fewer than k recorded trials and are left out of those "
            "means, so values at different k average different tasks (the table's `n < k` column; open markers in "
            "the plot)."
        )
    if "n_tasks_excluded" in suite:
        per_agent = suite.groupby("agent", sort=False)["n_tasks_excluded"].max()
        per_agent = per_agent[per_agent > 0]
        if len(per_agent):
            listed = ", ".join(f"**{md_text(a)}** {int(v)}" for a, v in per_agent.items())
            lines.append(
                "- Tasks without a usable trial are left out at every k (all trials missing, or not run; the "
                f"table's `no usable trial` column): {listed}."
            )
    methods = set()
    for q in ("pass_at_k", "pass_hat_k"):
        if f"{q}_ci_method" in suite:
            methods |= {str(m) for m in suite[f"{q}_ci_method"].dropna()}
    text = (
        f"- Intervals are {label} task-cluster bootstrap intervals: they reflect which tasks happened to be in the "
        "suite as well as the trial-to-trial noise."
    )
    if METHOD_CLOPPER_PEARSON in methods:
        text += (
            " Near 0 or 1 (every task with the same value, or fewer than 5 tasks' worth of successes or failures) "
            "resampling the tasks cannot show what the sample lacks, and the interval is the Clopper-Pearson "
            "interval on the task-level success mass instead (marked \"boundary interval\" in the table's `note`)."
        )
    lines.append(text)
    return "\n".join(lines)


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
    label = _ci_label(suite)

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


# ---------------------------------------------------------------------------------------------------------------
# Display tables and the report's summary paragraph. Tables are returned as DataFrames of short, formatted columns
# (pandas escapes every cell when it renders them); Markdown text escapes every string from the data (md_text).


def _num(x: float, digits: int = 3) -> str:
    """``x`` rounded to ``digits`` decimals, without a sign on a value that rounds to zero ("0.000", not "-0.000")."""
    if not np.isfinite(x):
        return "n/a"
    text = f"{x:.{digits}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def _interval(lo: float, hi: float, digits: int = 3) -> str:
    return f"[{_num(lo, digits)}, {_num(hi, digits)}]"


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
            missing += f" ({_plural(int(r['tasks_with_missing']), 'task')})"
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
                "pooled rate": _num(float(r["success_rate"])),
            }
        )
    return pd.DataFrame(rows).set_index("agent")


def format_diagnostics(fit: Fit | Diagnostics | pd.DataFrame) -> pd.DataFrame:
    """Format the convergence table of a fit for reading: rounded, named, one row per variable.

    Parameters
    ----------
    fit : Fit, Diagnostics or pandas.DataFrame
        A fit (its :meth:`~agentstats.models.result.Fit.diagnostics`, computed once), the result of
        :func:`agentstats.diagnose`, or its ``table``: ``variable, size, r_hat, ess_bulk, ess_tail, ok`` (worst
        element of each variable).

    Returns
    -------
    pandas.DataFrame
        Indexed by ``variable``; columns ``elements``, ``R-hat`` (3 decimals; ``n/a (constant draws)`` for a NaN
        R-hat), ``ESS bulk`` and ``ESS tail`` (whole numbers with thousands separators), ``meets thresholds``
        (``yes`` / ``NO``). Values are strings.
    """

    def ess(x: float) -> str:
        return "n/a" if pd.isna(x) else f"{round(float(x)):,}"

    if isinstance(fit, pd.DataFrame):
        table = fit
    else:
        table = (fit.diagnostics() if hasattr(fit, "diagnostics") else fit).table
    out = pd.DataFrame({
        "elements": [f"{int(n):,}" for n in table["size"]],
        "R-hat": ["n/a (constant draws)" if pd.isna(r) else f"{float(r):.3f}" for r in table["r_hat"]],
        "ESS bulk": [ess(x) for x in table["ess_bulk"]],
        "ESS tail": [ess(x) for x in table["ess_tail"]],
        "meets thresholds": ["yes" if ok else "NO" for ok in table["ok"]],
    }, index=pd.Index([str(v) for v in table["variable"]], name="variable"))
    return out


def fit_status(fit: Fit) -> str:
    """One Markdown sentence on a Bayesian fit: model, sampler, size and whether its convergence checks passed.

    Parameters
    ----------
    fit : Fit
        The fit: its family, sampler settings (an abandoned first attempt among its checkpoints is named) and
        diagnostics (:meth:`~agentstats.models.result.Fit.diagnostics`).

    Returns
    -------
    str
        Markdown, every value from the fit escaped; it ends with exactly one period.
    """
    s, diag = fit.sampler, fit.diagnostics()
    refit = ""
    if s.abandoned:
        first = s.abandoned[0]
        refit = (
            f" A first attempt with a centred per-agent dispersion had {md_text(str(first.get('divergences', '?')))} "
            f"divergent transitions in its first {md_text(str(first.get('draws', '?')))} draws and was discarded; "
            "this is the non-centred refit with the same seed."
        )
    if diag.ok:
        status = "all thresholds met"
    else:
        said = "; ".join(p.strip().rstrip(".") for p in diag.problems) or "the diagnostics failed"
        status = (
            f"**NOT converged**: {md_text(said)}. Treat the numbers below with care; rerun with more draws "
            "(`agentstats report ... --draws 4000`) or, on divergences, a higher `--target-accept` (e.g. 0.99)"
        )
    return (
        f"Model {md_code(fit.family.name)}, sampler {md_code(s.sampler)}, "
        f"{s.chains} chains × {s.draws} draws, target_accept {s.target_accept}; "
        f"divergences: {int(diag.divergences)}; R-hat ≤ 1.01, ESS ≥ 400: {status}.{refit}"
    )


def format_ppc_table(
    table: pd.DataFrame,
    replicated: dict[str, np.ndarray] | None = None,
    *,
    label: Callable[[str], str] | None = None,
    digits: int = 3,
) -> pd.DataFrame:
    """Display of a posterior predictive check's table: counts as whole numbers, other values rounded.

    Parameters
    ----------
    table : pandas.DataFrame
        :attr:`agentstats.models.diagnostics.PPCResult.table`: ``statistic, observed, rep_mean, rep_low, rep_high,
        p_value``.
    replicated : dict of str to numpy.ndarray, optional
        :attr:`~agentstats.models.diagnostics.PPCResult.replicated`: a statistic whose replicated values and observed
        value are all whole numbers is a count (of cells). Without it, a statistic whose observed value and interval
        ends are whole numbers is.
    label : callable, optional
        The statistic's name in words (e.g. ``lambda s: agentstats.report.plots.ppc_label(s)[0]``); default the name.
    digits : int
        Decimals shown for values that are not counts.

    Returns
    -------
    pandas.DataFrame
        Columns ``statistic``, ``observed``, ``replicated mean``, ``replicated, lower (P)``, ``replicated, upper
        (P)``, ``posterior predictive p``, with ``P`` the interval's probability from ``table.attrs["ci_prob"]``
        (``95%`` by default). A count shows its observed value without decimals (``2``, not ``2.000``)
        and its interval ends likewise where they are whole (an interpolated quantile keeps one decimal); its
        replicated mean, an average, keeps ``digits`` decimals. Values are strings except ``statistic``.
    """

    def whole(x: float) -> bool:
        return bool(np.isfinite(x) and float(x) == round(float(x)))

    def count_text(x: float) -> str:
        return f"{round(x)}" if whole(x) else _num(x, 1)

    pct = _fmt_prob(table.attrs.get("ci_prob", CI_PROB))
    low, high = f"replicated, lower ({pct})", f"replicated, upper ({pct})"
    rows = []
    for _, r in table.iterrows():
        name = str(r["statistic"])
        ends = (float(r["observed"]), float(r["rep_low"]), float(r["rep_high"]))
        if replicated is not None and name in replicated:
            rep = np.asarray(replicated[name], dtype=float)
            count = whole(ends[0]) and bool(np.all(np.isfinite(rep)) and np.all(rep == np.round(rep)))
        else:
            count = all(whole(x) for x in ends)
        shown = [count_text(x) if count else _num(x, digits) for x in ends]
        rows.append({
            "statistic": label(name) if label is not None else name,
            "observed": shown[0],
            "replicated mean": _num(float(r["rep_mean"]), digits),
            low: shown[1],
            high: shown[2],
            "posterior predictive p": _num(float(r["p_value"]), digits),
        })
    return pd.DataFrame(rows, columns=["statistic", "observed", "replicated mean", low, high, "posterior predictive p"])


def format_contrast_table(contrasts: pd.DataFrame, digits: int = 3) -> pd.DataFrame:
    """Each pair of agents once, the one with the higher posterior mean first, rounded for display.

    Accepts :func:`agentstats.posterior.contrast_table` whether it lists each pair once or both directions (a
    pair's second direction is dropped). Rounded values never show a sign on zero ("0.000", not "-0.000").

    Parameters
    ----------
    contrasts : pandas.DataFrame
        Columns ``agent_a, agent_b, prob_greater, diff_mean, diff_low, diff_high`` and optionally ``k`` and
        ``ci_prob`` (the interval's probability, for its column name; default 0.95).
    digits : int
        Decimals shown.

    Returns
    -------
    pandas.DataFrame
        Columns ``k`` (when given), ``ahead``, ``behind``, ``P(ahead > behind)``, ``difference`` (posterior mean of
        ``ahead - behind``, >= 0) and ``P credible interval`` (of that difference; ``P`` from ``ci_prob``, e.g.
        ``95%``); sorted by ``k``, then the
        probability (highest first). Values are strings except ``k``.
    """
    has_k = "k" in contrasts.columns
    interval_col = f"{_ci_label(contrasts)} credible interval"
    rows = []
    seen: set[tuple] = set()
    for _, r in contrasts.iterrows():
        k = int(r["k"]) if has_k else 0
        a, b = str(r["agent_a"]), str(r["agent_b"])
        key = (k, min(a, b), max(a, b))
        if key in seen:
            continue
        seen.add(key)
        if r["diff_mean"] >= 0:
            ahead, behind, p = a, b, float(r["prob_greater"])
            mean, lo, hi = float(r["diff_mean"]), float(r["diff_low"]), float(r["diff_high"])
        else:
            ahead, behind, p = b, a, 1.0 - float(r["prob_greater"])
            mean, lo, hi = -float(r["diff_mean"]), -float(r["diff_high"]), -float(r["diff_low"])
        rows.append({"k": k, "ahead": ahead, "behind": behind, "_p": p, "difference": _num(mean, digits),
                     interval_col: _interval(lo, hi, digits)})
    out = pd.DataFrame(rows, columns=["k", "ahead", "behind", "_p", "difference", interval_col])
    out = out.sort_values(["k", "_p", "ahead", "behind"], ascending=[True, False, True, True])
    out.insert(3, "P(ahead > behind)", [_num(p, digits) for p in out["_p"]])
    out = out.drop(columns="_p" if has_k else ["_p", "k"])
    return out.reset_index(drop=True)


def format_consistency_pass_hat_k(
    observed: pd.DataFrame, new: pd.DataFrame, consistency: pd.DataFrame, k: int, digits: int = 3
) -> pd.DataFrame:
    """Per agent, pass^k for these tasks and for new tasks like these, next to the agent's consistency.

    pass^k is a statement about consistency (every one of k tries must succeed), so the report puts the two side by
    side: the posterior pass^k on the observed tasks, on a new task from the same population (the population mean's
    uncertainty included, :mod:`agentstats.models.families.base`), and the model's within-cell correlation of two trials
    (the agent's own consistency, with its credible interval).

    Parameters
    ----------
    observed, new : pandas.DataFrame
        :func:`agentstats.posterior.summarize_pass_k` of ``pass_hat_k`` with ``population="observed"`` and ``"new"``;
        rows with ``k`` equal to the given ``k`` are used.
    consistency : pandas.DataFrame
        :func:`agentstats.posterior.consistency` with a fit (``icc_cell``, ``icc_cell_low``, ``icc_cell_high``,
        optionally ``icc_cell_estimable``), and ``flip_share``.
    k : int
        The k shown.
    digits : int
        Decimals shown.

    Returns
    -------
    pandas.DataFrame
        Indexed by ``agent``: ``pass^k, these tasks``, ``pass^k, new tasks like these`` (posterior mean [credible
        interval], the interval's probability from the input), ``within-cell correlation`` ("not estimable" where
        the model cannot separate it) and ``flip share`` (observed).

    Raises
    ------
    ValueError
        When ``k`` is absent from either summary.
    """

    def cell(tab: pd.DataFrame, agent: str) -> str:
        r = tab[(tab["agent"] == agent) & (tab["k"] == k)]
        if r.empty:
            return "n/a"
        r0 = r.iloc[0]
        return f"{_num(float(r0['mean']), digits)} {_interval(float(r0['ci_low']), float(r0['ci_high']), digits)}"

    for name, tab in (("observed", observed), ("new", new)):
        if not (tab["k"] == k).any():
            raise ValueError(f"format_consistency_pass_hat_k: k = {k} is not in the {name} summary")
    rows = []
    cons = consistency.set_index("agent")
    for agent in observed["agent"].drop_duplicates():
        row = {"agent": agent, f"pass^{k}, these tasks": cell(observed, agent),
               f"pass^{k}, new tasks like these": cell(new, agent)}
        if agent in cons.index and "icc_cell" in cons.columns:
            r = cons.loc[agent]
            v = float(r["icc_cell"])
            ok = bool(r.get("icc_cell_estimable", True)) and np.isfinite(v)
            row["within-cell correlation"] = (
                f"{_num(v, digits)} {_interval(float(r['icc_cell_low']), float(r['icc_cell_high']), digits)}"
                if ok else "not estimable"
            )
        if agent in cons.index:
            row["flip share"] = _num(float(cons.loc[agent, "flip_share"]), digits)
        rows.append(row)
    return pd.DataFrame(rows).set_index("agent")


def format_consistency(table: pd.DataFrame, fit: Fit | None = None, digits: int = 3) -> tuple[pd.DataFrame, str]:
    """Display of :func:`agentstats.posterior.consistency`: one row per agent, value and interval in one column.

    Values that cannot be estimated are shown as "not estimable", never as 0, and the returned note says why: the
    ANOVA ICC needs two tasks with trials and outcomes that are not all equal; the within-cell correlation needs a
    model with a within-cell term, which a fit to one agent does not have (its agent × task cells are its tasks, so
    that correlation cannot be separated from task difficulty) and the ``additive`` model leaves out.

    Parameters
    ----------
    table : pandas.DataFrame
        Output of :func:`agentstats.posterior.consistency`, with or without the model columns (``icc_model``,
        ``icc_cell`` with ``_low`` / ``_high``, ``icc_cell_estimable``).
    fit : Fit, optional
        The fit (its model's name), to say why a value is not estimable.
    digits : int
        Decimals shown.

    Returns
    -------
    (pandas.DataFrame, str)
        Table indexed by ``agent``: ``tasks with 2+ trials``, ``flip share`` (share of those tasks whose outcome
        differs between trials), ``ICC (ANOVA)`` and, with a fit, ``ICC incl. task (model)`` and
        ``within-cell correlation (model)`` (posterior mean [95% credible interval]); and a Markdown note on the
        values that are not estimable (empty when there are none).
    """
    has_model = "icc_model" in table.columns

    def with_ci(r: pd.Series, name: str) -> str:
        v = float(r[name])
        if not np.isfinite(v):
            return "not estimable"
        return f"{_num(v, digits)} {_interval(float(r[f'{name}_low']), float(r[f'{name}_high']), digits)}"

    rows = []
    nan_anova = cell_missing = False
    for _, r in table.iterrows():
        icc = float(r["icc_anova"])
        nan_anova |= not np.isfinite(icc)
        row = {
            "agent": r["agent"],
            "tasks with 2+ trials": f"{int(r['n_tasks_multi'])} of {int(r['n_tasks'])}",
            "flip share": _num(float(r["flip_share"]), digits),
            "ICC (ANOVA)": _num(icc, digits) if np.isfinite(icc) else "not estimable",
        }
        if has_model:
            row["ICC incl. task (model)"] = with_ci(r, "icc_model")
            estimable = bool(r.get("icc_cell_estimable", True)) and np.isfinite(float(r["icc_cell"]))
            row["within-cell correlation (model)"] = with_ci(r, "icc_cell") if estimable else "not estimable"
            cell_missing |= not estimable
        rows.append(row)
    out = pd.DataFrame(rows).set_index("agent")
    notes = []
    if nan_anova:
        notes.append(
            "ICC (ANOVA) is not estimable for an agent with fewer than two tasks with trials or with every outcome "
            "the same (no variance to split)."
        )
    if cell_missing:
        model = md_text(fit.family.name) if fit is not None else ""
        if table["agent"].nunique() == 1:
            why = (
                "with one agent, its agent × task cells are the tasks themselves, so the correlation of trials "
                "within a cell cannot be separated from task difficulty (the model has no within-cell term)"
            )
        else:
            why = f"the model{' ' + model if model else ''} has no within-cell term"
        notes.append(f"The within-cell correlation is **not estimable** here: {why}.")
    if has_model and len(table) > 1 and table["icc_model"].nunique() == 1:
        notes.append(
            "*ICC incl. task (model)* is the share of outcome variance due to the task in this model, the same for "
            "every agent; the agents' own consistency is the within-cell correlation."
        )
    if has_model:
        notes.append(
            "*ICC (ANOVA)* is computed from the outcomes and includes task difficulty; the within-cell correlation "
            "is the model's correlation of two tries of one agent on one task, after task difficulty, so it is "
            "usually smaller."
        )
    return out, " ".join(notes)


def format_tool_errors(errors: pd.DataFrame) -> pd.DataFrame:
    """Display of :func:`agentstats.report.scoring_tables.tool_error_counts`: the columns a reader needs, short names.

    Parameters
    ----------
    errors : pandas.DataFrame
        Output of :func:`agentstats.report.scoring_tables.tool_error_counts`.

    Returns
    -------
    pandas.DataFrame
        Columns ``kind``, ``level``, ``where`` (tool, or tool.argument), ``count``, ``trials`` and ``example``
        (task id, trial and what was wrong, for the first occurrence).
    """
    if errors.empty:
        return pd.DataFrame(columns=["kind", "level", "where", "count", "trials", "example"])
    example = [
        f"task {t}, trial {tr}: {d}"
        for t, tr, d in zip(errors["example_task_id"], errors["example_trial"], errors["example_detail"], strict=True)
    ]
    return pd.DataFrame(
        {
            "kind": errors["kind"],
            "level": errors["level"],
            "where": errors["where"],
            "count": errors["count"],
            "trials": errors["n_trials"],
            "example": example,
        }
    )


def format_schema_errors(errors: pd.DataFrame) -> pd.DataFrame | str:
    """Display of :func:`agentstats.report.scoring_tables.schema_error_counts`, or a sentence when nothing is listed.

    Parameters
    ----------
    errors : pandas.DataFrame
        Output of :func:`agentstats.report.scoring_tables.schema_error_counts` (its ``attrs`` give what was checked).

    Returns
    -------
    pandas.DataFrame or str
        Columns ``kind``, ``tool``, ``count``, ``calls``, ``trials``, ``example`` (JSON path and message of the
        first occurrence); or, when no call fails its schema, Markdown saying how many calls and trials were
        checked, or that none could be (no tool specs): an empty table would say nothing.
    """
    if errors.empty:
        calls = errors.attrs.get("n_calls_checked")
        checked = int(errors.attrs.get("n_trials_checked") or 0)
        without = int(errors.attrs.get("n_trials_without_tools") or 0)
        if calls is None:
            return "No tool call fails its tool's JSON Schema."
        if checked == 0:
            return (
                f"No trial in this input offers tool specs (`tools`), so none of its calls could be checked against a "
                f"JSON Schema ({without} trials)."
            )
        text = f"All {int(calls)} tool calls in {checked} trials validate against their tools' JSON Schemas."
        return text + (f" {without} trials without tool specs were not checked." if without else "")
    example = [f"{p}: {m}" for p, m in zip(errors["example_path"], errors["example_message"], strict=True)]
    return pd.DataFrame(
        {
            "kind": errors["kind"],
            "tool": errors["tool"],
            "count": errors["count"],
            "calls": errors["n_calls"],
            "trials": errors["n_trials"],
            "example": example,
        }
    )


def credible_leaders(prob: pd.DataFrame, threshold: float = 0.95) -> tuple[list[str], list[str]]:
    """Agents the evidence puts ahead: those credibly ahead of all others, and those no other is credibly ahead of.

    Agent A is *credibly ahead* of B when ``P(A > B) >= threshold`` under the joint posterior (or any pairwise
    probability matrix of the same shape).

    Parameters
    ----------
    prob : pandas.DataFrame
        Square; entry ``[A, B]`` = P(A > B) (as from :func:`agentstats.posterior.contrast_matrix`); diagonal ignored.
    threshold : float
        Posterior probability that counts as credible evidence.

    Returns
    -------
    (list of str, list of str)
        ``ahead_of_all``: agents credibly ahead of every other agent (at most one unless ``threshold <= 0.5``);
        ``not_behind``: agents no other agent is credibly ahead of (the leading group), in the matrix's order.
    """
    agents = [str(a) for a in prob.index]
    vals = prob.to_numpy(dtype=float)
    n = len(agents)
    ahead_of_all = [agents[i] for i in range(n) if n > 1 and all(vals[i, j] >= threshold for j in range(n) if j != i)]
    not_behind = [agents[j] for j in range(n) if not any(vals[i, j] >= threshold for i in range(n) if i != j)]
    return ahead_of_all, not_behind


def _names(agents: list[str], limit: int = 6) -> str:
    shown = [f"**{md_text(a)}**" for a in agents[:limit]]
    if len(agents) > limit:
        shown.append(f"{len(agents) - limit} more")
    if len(shown) <= 2:
        return " and ".join(shown)
    return ", ".join(shown[:-1]) + " and " + shown[-1]


def report_summary(
    counts: pd.DataFrame,
    suite: pd.DataFrame,
    *,
    prob: pd.DataFrame | None = None,
    prob_label: str = "pass^1",
    threshold: float = 0.95,
    paired: pd.DataFrame | None = None,
    converged: bool | None = None,
) -> str:
    """Write the report's one-paragraph summary (Markdown): data, who is ahead by the evidence, reliability, fit.

    Who is "ahead" is said only as far as the evidence goes: with posterior probabilities (``prob``) an agent is
    credibly ahead of another when ``P(A > B) >= threshold``; else, with paired differences (``paired``), when the
    paired interval of ``A - B`` in pass^1 lies above 0; else when the agents' separate intervals at k = 1 do not
    overlap (a conservative check). The agent with the highest point estimate is never called the best on its own.

    Parameters
    ----------
    counts : pandas.DataFrame
        Columns ``agent, task_id, n, c, n_missing``.
    suite : pandas.DataFrame
        Output of :func:`agentstats.estimators.suite_pass_k` (must contain k = 1 for the comparison).
    prob : pandas.DataFrame, optional
        Square matrix of P(row > column), e.g. :func:`agentstats.posterior.contrast_matrix` at k = 1.
    prob_label : str
        Name of the quantity ``prob`` compares, for the text.
    threshold : float
        Posterior probability that counts as credible evidence.
    paired : pandas.DataFrame, optional
        Output of :func:`agentstats.estimators.paired_pass_k_table` with k = 1 (used when ``prob`` is not given).
    converged : bool, optional
        Whether the Bayesian fit passed its diagnostics (``None``: no fit in this report).

    Returns
    -------
    str
        One Markdown paragraph; every agent name is escaped.
    """
    n_agents = counts["agent"].nunique()
    observed = counts[counts["n"] > 0]
    parts = [
        f"{_plural(n_agents, 'agent')}, {_plural(observed['task_id'].nunique(), 'task')}, "
        f"{_plural(int(counts['n'].sum()), 'recorded trial')}"
        + (f" ({int(counts['n_missing'].sum())} missing, excluded)." if int(counts["n_missing"].sum()) else ".")
    ]
    at1 = suite[suite["k"] == 1].sort_values("pass_hat_k", ascending=False)
    if len(at1) == 1:
        r = at1.iloc[0]
        parts.append(
            f"**{md_text(r['agent'])}** solves a task in one try at a rate of {_num(r['pass_hat_k'], 2)} "
            f"({_ci_label(suite)} interval {_interval(r['pass_hat_k_ci_low'], r['pass_hat_k_ci_high'], 2)})."
        )
    elif len(at1) > 1:
        hi, lo = at1.iloc[0], at1.iloc[-1]
        if _num(lo["pass_hat_k"], 2) == _num(hi["pass_hat_k"], 2):
            parts.append(f"Success in one try is {_num(hi['pass_hat_k'], 2)} for every agent.")
        else:
            parts.append(
                f"Success in one try ranges from {_num(lo['pass_hat_k'], 2)} (**{md_text(lo['agent'])}**) to "
                f"{_num(hi['pass_hat_k'], 2)} (**{md_text(hi['agent'])}**)."
            )
        uneven = _task_sets_note(counts)
        if uneven:
            parts.append(uneven)
        if prob is not None:
            evidence, cut = prob, threshold
            how = f"posterior probability ≥ {threshold:g} at {prob_label}"
            none = f"no agent is credibly ahead of another (no pairwise posterior probability ≥ {threshold:g} at "
            none += f"{prob_label}): these data do not separate them"
        elif paired is not None and len(paired) and (paired["k"] == 1).any():
            cut = 0.5
            how = (f"paired {_ci_label(paired)} intervals of the difference in pass^1; one agent is ahead of "
                   "another when the interval of their difference lies wholly above 0")
            none = "no paired interval of a difference in pass^1 excludes 0: these data do not separate the agents"
            names = list(at1["agent"])
            evidence = pd.DataFrame(np.nan, index=names, columns=names)
            for _, r in paired[paired["k"] == 1].iterrows():
                a, b = r["agent_a"], r["agent_b"]
                if a in evidence.index and b in evidence.index and int(r["n_tasks"]) > 0:
                    evidence.loc[a, b] = float(r["pass_hat_k_diff_ci_low"] > 0)
                    evidence.loc[b, a] = float(r["pass_hat_k_diff_ci_high"] < 0)
        else:
            # Without posterior draws or paired differences: A is ahead of B when A's interval lies wholly above B's.
            cut = 0.5
            how = f"{_ci_label(suite)} task-cluster intervals at k = 1 that do not overlap"
            none = (f"no two agents' {_ci_label(suite)} task-cluster intervals at k = 1 are disjoint: these data do "
                    "not separate them")
            lo_ci = at1.set_index("agent")["pass_hat_k_ci_low"]
            hi_ci = at1.set_index("agent")["pass_hat_k_ci_high"]
            names = list(lo_ci.index)
            evidence = pd.DataFrame(
                [[float(lo_ci[a] > hi_ci[b]) if a != b else np.nan for b in names] for a in names],
                index=names, columns=names,
            )
        ahead, group = credible_leaders(evidence, cut)
        if ahead:
            text = f"{_names(ahead)} is ahead of every other agent ({how})"
            rest = evidence.drop(index=ahead, columns=ahead)
            if len(rest) > 1:
                _, front = credible_leaders(rest, cut)
                if len(front) < len(rest):
                    text += f"; among the others, {_names(front)} {'is' if len(front) == 1 else 'are'} behind none"
            parts.append(text + ".")
        elif len(group) < n_agents:
            parts.append(
                f"No agent is ahead of all others; {_names(group)} {'is' if len(group) == 1 else 'are'} behind none "
                f"of them ({how})."
            )
        else:
            parts.append(none[0].upper() + none[1:] + ".")
    ks = sorted(int(k) for k in suite["k"].unique())
    if len(ks) > 1:
        parts.append(_reliability_sentence(suite, ks[0], ks[-1]))
    if converged is True:
        parts.append("The Bayesian fit passed its convergence checks.")
    elif converged is False:
        parts.append("**The Bayesian fit did not pass its convergence checks: read its numbers with care.**")
    return " ".join(parts)


def _task_sets_note(counts: pd.DataFrame) -> str:
    """Say when agents' means average different task sets (empty when every agent ran the same tasks)."""
    sets = {a: frozenset(g.loc[g["n"] > 0, "task_id"]) for a, g in counts.groupby("agent", sort=True)}
    if len(set(sets.values())) <= 1:
        return ""
    sizes = [len(t) for t in sets.values()]
    per = ", ".join(f"**{md_text(a)}** over {len(t)}" for a, t in list(sets.items())[:6])
    more = f" and {len(sets) - 6} more agents" if len(sets) > 6 else ""
    same_size = ", not the same ones" if len(set(sizes)) == 1 else ""
    shared = len(frozenset.intersection(*sets.values()))
    return (
        f"These values average different tasks per agent ({per} tasks{more}{same_size}; "
        f"{_plural(shared, 'task')} in common): compare agents on the tasks they share, with the paired "
        "differences under *What the numbers say* (`agentstats estimate --paired`)."
    )


def _reliability_sentence(suite: pd.DataFrame, k_lo: int, k_hi: int) -> str:
    """How pass^k_hi compares with pass^k_lo across agents; "less often" only where it is really lower."""
    g = suite[suite["k"] == k_hi].dropna(subset=["pass_hat_k"])
    if not len(g):
        return f"No agent has a task with {k_hi} usable trials, so there is no pass^{k_hi}."
    lo_vals = suite[suite["k"] == k_lo].set_index("agent")["pass_hat_k"]
    below, not_below = [], []
    for _, r in g.iterrows():
        p1 = lo_vals.get(r["agent"], np.nan)
        if np.isfinite(p1) and float(r["pass_hat_k"]) < float(p1) - _TIE:
            below.append(str(r["agent"]))
        else:
            not_below.append(str(r["agent"]))
    lo, hi = _num(g["pass_hat_k"].min(), 2), _num(g["pass_hat_k"].max(), 2)
    if len(g) == 1:
        value = f"pass^{k_hi} is {lo}"
    else:
        value = f"pass^{k_hi} is {lo} for every agent" if lo == hi else f"pass^{k_hi} is {lo} to {hi} across agents"
    fewer = "one try" if k_lo == 1 else f"{k_lo} tries"
    if not not_below:
        return f"All {k_hi} tries succeed less often than {fewer}: {value}."
    if not below:
        return f"pass^{k_hi} is no lower than pass^{k_lo}: {value}."
    return (
        f"All {k_hi} tries succeed: {value}; below pass^{k_lo} for {_names(below)}, not below it for "
        f"{_names(not_below)}."
    )


def _dist_version(name: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None


def run_details(
    counts: pd.DataFrame,
    *,
    source: str,
    input_format: str,
    sha256: str | None = None,
    k_values: list[int] | None = None,
    n_boot: int | None = None,
    seed: int | None = None,
    judge: str | None = None,
    model: str | None = None,
    population: str | None = None,
    fit: Fit | None = None,
    ci_prob: float = CI_PROB,
) -> str:
    """List what a report was computed from and with: data, estimators, model, sampler, versions.

    Parameters
    ----------
    counts : pandas.DataFrame
        Columns ``agent, task_id, n, c, n_missing``.
    source, input_format : str
        Input file name and the format it was read as.
    sha256 : str, optional
        Hex digest of the input file.
    k_values : list of int, optional
        The k of the per-agent tables.
    n_boot, seed : int, optional
        Bootstrap resamples and seed.
    judge : str, optional
        Answer judge, when trials were scored.
    model, population : str, optional
        Bayesian model and population (``None``: no Bayesian section).
    fit : Fit, optional
        The fit (sampler, chains, draws, tune, target_accept, seed, and whether its convergence checks passed);
        before the fit, the sampler row says it is pending.
    ci_prob : float
        Probability of the task-cluster bootstrap intervals.

    Returns
    -------
    str
        Markdown bullet list (data, size, scoring, estimators, Bayesian model, sampler, versions); every value from
        the data or the caller is escaped (:func:`agentstats._util.markup.md_text`).
    """
    import platform

    observed = counts[counts["n"] > 0]
    rows: list[tuple[str, str]] = [
        ("data", f"{source} (format {input_format})" + (f", sha256 {sha256[:16]}…" if sha256 else "")),
        (
            "size",
            f"{_plural(counts['agent'].nunique(), 'agent')}, {_plural(observed['task_id'].nunique(), 'task')}, "
            f"{_plural(int(counts['n'].sum()), 'recorded trial')}, {int(counts['n_missing'].sum())} missing "
            "(excluded)",
        ),
    ]
    if judge:
        rows.append(("scoring", f"judge {judge}"))
    est = "unbiased pass@k and pass^k"
    if k_values:
        est += f" for k = {', '.join(str(k) for k in k_values)}"
    if n_boot:
        est += f"; {_fmt_prob(ci_prob)} task-cluster bootstrap intervals ({n_boot} resamples"
        est += f", seed {seed})" if seed is not None else ")"
    rows.append(("estimators", est))
    if model is None:
        rows.append(("Bayesian model", "not run"))
    else:
        rows.append(("Bayesian model", f"{model}; pass^k for {'new' if population == 'new' else 'these'} tasks"))
        if fit is not None:
            s = fit.sampler
            sampler = (
                f"{s.sampler}, {s.chains} chains × {s.draws} draws ({s.tune} tuning), target_accept "
                f"{s.target_accept}, seed {s.random_seed}"
            )
            sampler += "; convergence checks passed" if fit.diagnostics().ok else "; convergence checks FAILED"
        else:
            sampler = "pending (the fit runs in the Bayesian section)"
        rows.append(("sampler", sampler))
    versions = [f"agentstats {_dist_version('agentstats') or 'unknown'}", f"Python {platform.python_version()}"]
    for pkg in ("numpy", "pandas", "pymc", "arviz", "nutpie"):
        v = _dist_version(pkg)
        if v and (pkg in ("numpy", "pandas") or model is not None):
            versions.append(f"{pkg} {v}")
    rows.append(("versions", ", ".join(versions)))
    return "\n".join(f"- **{item}**: {md_text(value)}" for item, value in rows)


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
    return f"{_num(vals[0], digits)} {_interval(vals[1], vals[2], digits)}"


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
        equal-tailed credible interval, on the metric's own scale), ``threshold`` (``>= lower_limit`` / ``<=
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
            "share passing [CI]": (f"{_num(_float(r['share_passed']))} "
                                   f"{_interval(_float(r['share_ci_low']), _float(r['share_ci_high']))}"
                                   if has_share else "—"),
            "trials": int(r["n_trials_passed_known"]) if has_share else "—",
        })
        rows.append(row)
    index = ["agent", "risk level", "metric"] if by_risk else ["agent", "metric"]
    if not rows:
        return pd.DataFrame(columns=[*index, "method", "tasks", "mean [CI]", "threshold", "share passing [CI]",
                                     "trials"]).set_index(index)
    return pd.DataFrame(rows).set_index(index)

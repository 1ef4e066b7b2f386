"""Plain-language readings of a report's results: the summary paragraph and the reading of the suite's estimates.

Every string from the data is escaped for Markdown (:func:`agentstats._util.markup.md_text`). Which agent is ahead is
said only as far as the evidence goes (paired differences or posterior probabilities, never overlapping marginal
intervals alone where better evidence is given). The sentences that caption one section are in :mod:`.captions`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from agentstats._util.markup import md_text
from agentstats.estimators.bootstrap import METHOD_CLOPPER_PEARSON
from agentstats.report import anchors
from agentstats.report._format import ci_label, fmt_ci, interval, num, plural

if TYPE_CHECKING:
    from agentstats.report.verdict import FitVerdict

__all__ = ["credible_leaders", "read_suite", "report_summary"]


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
            f"{self.diff:+.2f}, {label} paired interval {fmt_ci(self.lo, self.hi)}, "
            f"{plural(self.n_tasks, 'shared task')}{p}"
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
    label = ci_label(paired)  # the paired table's own interval probability
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
    label = ci_label(suite)
    lines: list[str] = []
    k_all = sorted(int(k) for k in suite["k"].unique())
    k_lo = ks[0] if ks else k_all[0]
    k_hi = ks[-1] if ks else k_all[-1]
    at1 = suite[suite["k"] == k_lo].sort_values("pass_hat_k", ascending=False, na_position="last")

    def tasks_of(r: pd.Series) -> str:
        if "n_tasks_suite" in r and pd.notna(r["n_tasks_suite"]):
            return f"{int(r['n_tasks'])} of {plural(int(r['n_tasks_suite']), 'task')}"
        return plural(int(r["n_tasks"]), "task")

    if len(at1) >= 1:
        top = at1.iloc[0]
        tied = at1[np.isclose(at1["pass_hat_k"].to_numpy(dtype=float), float(top["pass_hat_k"]), rtol=0, atol=_TIE)]
        if len(tied) >= 2:  # a tie is called a tie: no agent is named as having the highest estimate
            each = "; ".join(
                f"**{md_text(r['agent'])}** {fmt_ci(r['pass_hat_k_ci_low'], r['pass_hat_k_ci_high'])}, {tasks_of(r)}"
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
                f"{fmt_ci(top['pass_hat_k_ci_low'], top['pass_hat_k_ci_high'])}, {tasks_of(top)})."
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


def _names(agents: list[str], limit: int = 6, *, conj: str = "and") -> str:
    """Name agents in a sentence, in bold: ``**a**, **b** and 3 more`` (``conj``: ``"and"`` or ``"or"``)."""
    shown = [f"**{md_text(a)}**" for a in agents[:limit]]
    if len(agents) > limit:
        shown.append(f"{len(agents) - limit} more")
    if len(shown) <= 2:
        return f" {conj} ".join(shown)
    return ", ".join(shown[:-1]) + f" {conj} " + shown[-1]


def report_summary(
    counts: pd.DataFrame,
    suite: pd.DataFrame,
    *,
    prob: pd.DataFrame | None = None,
    prob_label: str = "pass^1",
    threshold: float = 0.95,
    paired: pd.DataFrame | None = None,
    verdict: FitVerdict | None = None,
    posterior_ks: list[int] | None = None,
    links: bool = False,
) -> str:
    """Write the report's summary (Markdown): one bullet per claim, the fit's failure first, each with its evidence.

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
        Square matrix of P(row > column), e.g. :func:`agentstats.posterior.contrast_matrix` at k = 1. Give it only
        from a fit whose checks passed (:class:`agentstats.report.verdict.FitVerdict`): no claim is made from a
        posterior that failed them.
    prob_label : str
        Name of the quantity ``prob`` compares, for the text.
    threshold : float
        Posterior probability that counts as credible evidence.
    paired : pandas.DataFrame, optional
        Output of :func:`agentstats.estimators.paired_pass_k_table` with k = 1 (used when ``prob`` is not given).
    verdict : FitVerdict, optional
        The Bayesian fit's checks (``None``: no fit in this report). A failed one opens the summary.
    posterior_ks : list of int, optional
        The k of the report's posterior pass^k table (from a fit whose checks passed); with it, agents with one trial
        per task are named, whose pass^k beyond k = 1 that table gives only as a range.
    links : bool
        End every claim with a link to the table or figure of the report that backs it, at the claim's k
        (:mod:`agentstats.report.anchors`).

    Returns
    -------
    str
        Markdown bullets; every agent name is escaped.
    """
    def claim(text: str, *targets: tuple[str, str]) -> str:
        shown = [anchors.link(t, a) for t, a in targets] if links else []
        return f"{text}. See {_and_list(shown)}." if shown else f"{text}."

    claims: list[str] = []
    if verdict is not None and not verdict.ok:
        claims.append(claim(f"**{verdict.headline()}**: {md_text(verdict.reason())}. The statements below use "
                            "none of its numbers", *_CHECK_TARGETS))
    n_agents = counts["agent"].nunique()
    observed = counts[counts["n"] > 0]
    n_missing = int(counts["n_missing"].sum())
    claims.append(claim(
        f"{plural(n_agents, 'agent')}, {plural(observed['task_id'].nunique(), 'task')}, "
        f"{plural(int(counts['n'].sum()), 'recorded trial')}" + (f" ({n_missing} missing, excluded)" if n_missing
                                                                 else ""),
        ("the data", anchors.DATA)))
    suite_link = ("pass^1 per agent", anchors.SUITE)
    tasks_link = ("the tasks and trials behind each value", anchors.TASKS)
    at1 = suite[suite["k"] == 1].sort_values("pass_hat_k", ascending=False)
    if len(at1) == 1:
        r = at1.iloc[0]
        claims.append(claim(
            f"**{md_text(r['agent'])}** solves a task in one try at a rate of {num(r['pass_hat_k'], 2)} "
            f"({ci_label(suite)} interval {interval(r['pass_hat_k_ci_low'], r['pass_hat_k_ci_high'], 2)})",
            suite_link, tasks_link))
    elif len(at1) > 1:
        hi, lo = at1.iloc[0], at1.iloc[-1]
        if num(lo["pass_hat_k"], 2) == num(hi["pass_hat_k"], 2):
            claims.append(claim(f"Success in one try is {num(hi['pass_hat_k'], 2)} for every agent", suite_link,
                                tasks_link))
        else:
            claims.append(claim(
                f"Success in one try ranges from {num(lo['pass_hat_k'], 2)} (**{md_text(lo['agent'])}**) to "
                f"{num(hi['pass_hat_k'], 2)} (**{md_text(hi['agent'])}**)", suite_link, tasks_link))
        uneven = _task_sets_note(counts)
        if uneven:
            has_paired = paired is not None and len(paired) and (paired["k"] == 1).any()
            claims.append(claim(uneven, ("the data", anchors.DATA),
                                *([("paired differences at k = 1", anchors.paired(1))] if has_paired else [])))
        claims.append(_who_is_ahead(at1, suite, prob, prob_label, threshold, paired, n_agents, claim))
    ks = sorted(int(k) for k in suite["k"].unique())
    if len(ks) > 1:
        claims.append(claim(_reliability_sentence(suite, ks[0], ks[-1]).rstrip("."),
                            (f"pass^{ks[0]} and pass^{ks[-1]} per agent", anchors.SUITE)))
    single = sorted(str(a) for a, g in counts[counts["n"] > 0].groupby("agent") if not (g["n"] >= 2).any())
    beyond = [k for k in (posterior_ks or []) if k > 1]
    if single and beyond:
        verb = "has" if len(single) == 1 else "have"
        who = "every agent has" if len(single) == n_agents else f"{_names(single)} {verb}"
        claims.append(claim(
            f"One trial per task ({who} no task with two or more): how alike two tries of a task are is not "
            f"estimable from these data, so pass^k beyond k = 1 (here k = {_and_list([str(k) for k in beyond])}) is "
            "given only as a range, from every try independent to every task always or never solved",
            (f"posterior pass^k, k = {_and_list([str(k) for k in posterior_ks or []])}", anchors.POSTERIOR)))
    if verdict is not None and verdict.ok:
        claims.append(claim("The Bayesian fit passed its convergence checks and its posterior predictive check",
                            *_CHECK_TARGETS))
    return "\n".join(f"- {c}" for c in claims)


#: The links of a claim about the fit's checks: the convergence table, the posterior predictive check.
_CHECK_TARGETS = (("convergence checks", anchors.FIT_CHECKS), ("posterior predictive check", anchors.PPC))


def _who_is_ahead(at1: pd.DataFrame, suite: pd.DataFrame, prob: pd.DataFrame | None, prob_label: str,
                  threshold: float, paired: pd.DataFrame | None, n_agents: int,
                  claim: Callable[..., str]) -> str:
    """Write the claim on which agents are ahead at k = 1, from the best evidence given (``report_summary``)."""
    if prob is not None:
        evidence, cut = prob, threshold
        how = f"posterior probability ≥ {threshold:g} at {prob_label}"
        none = f"no agent is credibly ahead of another (no pairwise posterior probability ≥ {threshold:g} at "
        none += f"{prob_label}): these data do not separate them"
        where = (f"P(row > column) of {prob_label}", anchors.contrast(1))
    elif paired is not None and len(paired) and (paired["k"] == 1).any():
        cut = 0.5
        how = (f"paired {ci_label(paired)} intervals of the difference in pass^1; one agent is ahead of "
               "another when the interval of their difference lies wholly above 0")
        none = "no paired interval of a difference in pass^1 excludes 0: these data do not separate the agents"
        where = ("paired differences at k = 1", anchors.paired(1))
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
        how = f"{ci_label(suite)} task-cluster intervals at k = 1 that do not overlap"
        none = (f"no two agents' {ci_label(suite)} task-cluster intervals at k = 1 are disjoint: these data do "
                "not separate them")
        where = ("pass^1 per agent", anchors.SUITE)
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
                text += (f". Of the others, no agent is credibly ahead of {_names(front, conj='or')}; each remaining "
                         "agent is behind at least one of them")
        return claim(text, where)
    if len(group) < n_agents:
        behind = [str(a) for a in evidence.index if a not in group]
        return claim(f"No agent is ahead of all others. No agent is credibly ahead of {_names(group, conj='or')} "
                     f"({how}); {_names(behind)} {'is' if len(behind) == 1 else 'are each'} behind at least one "
                     "agent", where)
    return claim(none[0].upper() + none[1:], where)


def _task_sets_note(counts: pd.DataFrame) -> str:
    """Say when agents' means average different task sets (empty when every agent ran the same tasks)."""
    sets = {a: frozenset(g.loc[g["n"] > 0, "task_id"]) for a, g in counts.groupby("agent", sort=True)}
    if len(set(sets.values())) <= 1:
        return ""
    by_size: dict[int, list[str]] = {}
    for a, t in sets.items():
        by_size.setdefault(len(t), []).append(str(a))
    if len(by_size) == 1:
        per = f"every agent over {plural(next(iter(by_size)), 'task')}, not the same ones"
    else:  # the agents whose counts differ from the most common one are named; the most common count is summed up
        groups = sorted(by_size.items(), key=lambda kv: (-len(kv[1]), -kv[0]))
        common, rest = groups[0], groups[1:]
        rest.sort(key=lambda kv: (len(kv[1]), kv[0]))
        named = [f"{_names(agents, 3)} over {n}" for n, agents in rest[:5]]
        if len(rest) > 5:
            named.append(f"{sum(len(a) for _, a in rest[5:])} more agents over other numbers")
        lead = (f"{_names(common[1])} over {common[0]}" if len(common[1]) <= 2 else
                f"{len(common[1])} agents over {common[0]}")
        per = "; ".join([lead, *named]) + " tasks"
    shared = len(frozenset.intersection(*sets.values()))
    return (
        f"These values average different tasks per agent ({per}; "
        f"{plural(shared, 'task')} in common): compare agents on the tasks they share, with the paired "
        "differences under *What the numbers say* (`agentstats estimate --paired`)"
    )


def _k_task_note(rows: pd.DataFrame, k: int) -> str:
    """Say over how many tasks each agent's value at ``k`` is taken, when that is not every task alike ("" else).

    Only tasks with at least ``k`` trials enter a value at ``k``, so agents can be compared there on different tasks.
    """
    if "n_tasks" not in rows or "n_tasks_suite" not in rows:
        return ""
    used, total = rows["n_tasks"].astype(int), rows["n_tasks_suite"].astype(int)
    if (used == total).all():
        return ""
    lo, hi, of = int(used.min()), int(used.max()), int(total.max())
    span = f"{lo}" if lo == hi else f"{lo} to {hi}"
    if lo == hi:
        return f" (over the {span} of {of} tasks with at least {k} trials)"
    return f" (each agent over its tasks with at least {k} trials: {span} of {of}, so not over the same tasks)"


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
    lo_row = g.loc[g["pass_hat_k"].idxmin()]
    hi_row = g.loc[g["pass_hat_k"].idxmax()]
    lo, hi = num(lo_row["pass_hat_k"], 2), num(hi_row["pass_hat_k"], 2)
    what = f"pass^{k_hi}, the share of tasks solved in every one of {k_hi} tries,"
    if len(g) == 1:
        value = f"{what} is {lo}"
    elif lo == hi:
        value = f"{what} is {lo} for every agent"
    else:
        value = (f"{what} runs across agents from {lo} (**{md_text(lo_row['agent'])}**) to {hi} "
                 f"(**{md_text(hi_row['agent'])}**)")
    value += _k_task_note(g, k_hi)
    fewer = "in one try" if k_lo == 1 else f"in {k_lo} tries"
    if not not_below:
        return f"Succeeding in all {k_hi} tries is rarer than {fewer}: {value}."
    if not below:
        return f"pass^{k_hi} is no lower than pass^{k_lo}: {value}."
    return (
        f"Succeeding in all {k_hi} tries: {value}; it is below pass^{k_lo} for {_names(below)}, not below it for "
        f"{_names(not_below)}."
    )

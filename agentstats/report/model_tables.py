"""Display tables of the Bayesian section: convergence, posterior predictive check, contrasts, consistency, pass^k.

Every function takes a result of :mod:`agentstats.models` or :mod:`agentstats.posterior` and returns a DataFrame of
short, formatted columns (pandas escapes every cell when it renders them); interval columns are labelled with the
table's own ``ci_prob``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from agentstats._util.markup import md_text
from agentstats.intervals import CI_PROB, ci_percent
from agentstats.report._format import ci_label, interval, num

if TYPE_CHECKING:  # the fit's types only: describing a fit needs no PyMC import
    from agentstats.models.diagnostics import Diagnostics
    from agentstats.models.result import Fit

def _not_given(rows: pd.DataFrame | pd.Series) -> bool:
    """:func:`agentstats.posterior.consistency.not_given_laplace`, imported here: this module imports no PyMC."""
    from agentstats.posterior.consistency import not_given_laplace

    return not_given_laplace(rows)


def _not_given_label() -> str:
    """:data:`agentstats.posterior.consistency.NOT_GIVEN_LAPLACE_LABEL` (imported here, as above)."""
    from agentstats.posterior.consistency import NOT_GIVEN_LAPLACE_LABEL

    return NOT_GIVEN_LAPLACE_LABEL


__all__ = [
    "format_consistency",
    "format_consistency_pass_hat_k",
    "format_contrast_table",
    "format_diagnostics",
    "format_posterior_table",
    "format_ppc_table",
]


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
        Indexed by ``variable``; columns ``elements``, ``R-hat`` (3 decimals; for a NaN R-hat ``n/a (independent
        draws)`` where the diagnostics say R-hat does not apply (the Laplace tier's ``note``), else ``n/a (constant
        draws)``), ``ESS bulk`` and ``ESS tail`` (whole numbers with thousands separators), ``meets thresholds``
        (``yes`` / ``NO``). Values are strings.
    """

    def ess(x: float) -> str:
        return "n/a" if pd.isna(x) else f"{round(float(x)):,}"

    if isinstance(fit, pd.DataFrame):
        table, independent = fit, False
    else:
        diag = fit.diagnostics() if hasattr(fit, "diagnostics") else fit
        table, independent = diag.table, bool(diag.note)  # a note: independent draws, R-hat does not apply
    missing = "n/a (independent draws)" if independent else "n/a (constant draws)"
    out = pd.DataFrame({
        "elements": [f"{int(n):,}" for n in table["size"]],
        "R-hat": [missing if pd.isna(r) else f"{float(r):.3f}" for r in table["r_hat"]],
        "ESS bulk": [ess(x) for x in table["ess_bulk"]],
        "ESS tail": [ess(x) for x in table["ess_tail"]],
        "meets thresholds": ["yes" if ok else "NO" for ok in table["ok"]],
    }, index=pd.Index([str(v) for v in table["variable"]], name="variable"))
    return out


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
        return f"{round(x)}" if whole(x) else num(x, 1)

    pct = ci_percent(table.attrs.get("ci_prob", CI_PROB))
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
        shown = [count_text(x) if count else num(x, digits) for x in ends]
        rows.append({
            "statistic": label(name) if label is not None else name,
            "observed": shown[0],
            "replicated mean": num(float(r["rep_mean"]), digits),
            low: shown[1],
            high: shown[2],
            "posterior predictive p": num(float(r["p_value"]), digits),
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
        probability (highest first). Values are strings except ``k``. A pair with an agent whose value the data do
        not identify at that k (NaN in ``contrasts``) says "not estimable" and comes last.
    """
    has_k = "k" in contrasts.columns
    interval_col = f"{ci_label(contrasts)} credible interval"
    rows = []
    seen: set[tuple] = set()
    for _, r in contrasts.iterrows():
        k = int(r["k"]) if has_k else 0
        a, b = str(r["agent_a"]), str(r["agent_b"])
        key = (k, min(a, b), max(a, b))
        if key in seen:
            continue
        seen.add(key)
        if not np.isfinite(float(r["diff_mean"])):  # an agent whose value the data do not identify at this k
            rows.append({"k": k, "ahead": a, "behind": b, "_p": -1.0, "difference": "not estimable",
                         interval_col: "not estimable"})
            continue
        if r["diff_mean"] >= 0:
            ahead, behind, p = a, b, float(r["prob_greater"])
            mean, lo, hi = float(r["diff_mean"]), float(r["diff_low"]), float(r["diff_high"])
        else:
            ahead, behind, p = b, a, 1.0 - float(r["prob_greater"])
            mean, lo, hi = -float(r["diff_mean"]), -float(r["diff_high"]), -float(r["diff_low"])
        rows.append({"k": k, "ahead": ahead, "behind": behind, "_p": p, "difference": num(mean, digits),
                     interval_col: interval(lo, hi, digits)})
    out = pd.DataFrame(rows, columns=["k", "ahead", "behind", "_p", "difference", interval_col])
    out = out.sort_values(["k", "_p", "ahead", "behind"], ascending=[True, False, True, True])
    out.insert(3, "P(ahead > behind)", [num(p, digits) if p >= 0 else "not estimable" for p in out["_p"]])
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
        interval], the interval's probability from the input; "not estimable; range [low, high]" where one trial per
        task leaves it to the prior, :func:`agentstats.posterior.summarize_pass_k`), ``within-cell correlation``
        ("not estimable" where the model or the data cannot separate it) and ``flip share`` (observed).

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
        if "estimable" in r0 and not bool(r0["estimable"]):
            return f"not estimable; range {interval(float(r0['range_low']), float(r0['range_high']), digits)}"
        return f"{num(float(r0['mean']), digits)} {interval(float(r0['ci_low']), float(r0['ci_high']), digits)}"

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
                f"{num(v, digits)} {interval(float(r['icc_cell_low']), float(r['icc_cell_high']), digits)}"
                if ok else _not_given_label() if _not_given(r) else "not estimable"
            )
        if agent in cons.index:
            row["flip share"] = num(float(cons.loc[agent, "flip_share"]), digits)
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
    laplace = _not_given(table)

    def with_ci(r: pd.Series, name: str) -> str:
        v = float(r[name])
        if not np.isfinite(v):
            return _not_given_label() if laplace else "not estimable"
        return f"{num(v, digits)} {interval(float(r[f'{name}_low']), float(r[f'{name}_high']), digits)}"

    rows = []
    nan_anova = cell_missing = one_trial = False
    for _, r in table.iterrows():
        icc = float(r["icc_anova"])
        nan_anova |= not np.isfinite(icc)
        row = {
            "agent": r["agent"],
            "tasks with 2+ trials": f"{int(r['n_tasks_multi'])} of {int(r['n_tasks'])}",
            "flip share": num(float(r["flip_share"]), digits),
            "ICC (ANOVA)": num(icc, digits) if np.isfinite(icc) else "not estimable",
        }
        if has_model:
            row["ICC incl. task (model)"] = with_ci(r, "icc_model")
            estimable = bool(r.get("icc_cell_estimable", True)) and np.isfinite(float(r["icc_cell"]))
            missing = _not_given_label() if laplace else "not estimable"
            row["within-cell correlation (model)"] = with_ci(r, "icc_cell") if estimable else missing
            single = not estimable and int(r["n_tasks_multi"]) == 0 and table["agent"].nunique() > 1
            one_trial |= single and not laplace
            cell_missing |= not estimable and not single and not laplace
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
    if one_trial:
        notes.append(
            "The within-cell correlation is **not estimable from these data** for an agent with one trial per task "
            "(no task with 2+ trials): how alike two tries of a task are never shows, and the model's value would "
            "be its prior."
        )
    if laplace:
        notes.append(
            "The model-based consistency is **not given** for this fit: it was made by the Laplace tier, whose "
            "consistency intervals under-cover on the simulation study (validated for pass@k and pass^k only; "
            "docs/validation.md, *Laplace tier*). Fit NUTS for it (`method=\"nuts\"`; on the command line "
            "`--method nuts`, in a report `-p method=nuts`); the ANOVA ICC and the flip "
            "share come from the data and stand."
        )
    if has_model and len(table) > 1 and table["icc_model"].nunique() == 1:
        notes.append(
            "*ICC incl. task (model)* is the share of outcome variance due to the task in this model, the same for "
            "every agent; the agents' own consistency is the within-cell correlation."
        )
    if has_model and not laplace:  # compares with a model value the tier does not give
        notes.append(
            "*ICC (ANOVA)* is computed from the outcomes and includes task difficulty; the within-cell correlation "
            "is the model's correlation of two tries of one agent on one task, after task difficulty, so it is "
            "usually smaller."
        )
    return out, " ".join(notes)


def format_posterior_table(summary: pd.DataFrame, counts: pd.DataFrame | None = None) -> pd.DataFrame:
    """Display of posterior pass^k rows (:func:`agentstats.posterior.summarize_pass_k`) by agent and k.

    Parameters
    ----------
    summary : pandas.DataFrame
        Rows of one quantity: ``agent, k, mean, median, ci_low, ci_high, ci_kind, extrapolated`` and ``ci_prob``.
    counts : pandas.DataFrame, optional
        The fit's counts (``agent, task_id, n``): with them, the tasks with fewer than k trials are counted (column
        ``n < k``, as in the table of unbiased estimates), else given as a share (``share n < k``).

    Returns
    -------
    pandas.DataFrame
        Index ``(agent, k)``; columns ``mean``, ``median``, ``lower (P)``, ``upper (P)`` (``P`` from ``ci_prob``),
        ``interval`` (``eti`` / ``hdi``) and ``n < k`` (the agent's tasks with fewer trials than k, whose value at
        that k comes from the model: ``extrapolated`` × the agent's tasks with a trial).
        Where a value is not estimable (``estimable`` False: one trial per task, k > 1) the four numbers are NaN
        and the column ``range, any consistency (P)`` gives its range (:func:`agentstats.posterior.summarize_pass_k`);
        that column is there only when some row needs it.
    """
    pct = ci_label(summary)
    out = summary.set_index(["agent", "k"])[["mean", "median", "ci_low", "ci_high", "ci_kind", "extrapolated"]].rename(
        columns={"ci_low": f"lower ({pct})", "ci_high": f"upper ({pct})", "ci_kind": "interval"})
    if counts is not None:
        tasks = counts[counts["n"] > 0].groupby("agent", sort=False)["task_id"].nunique()
        per = np.array([tasks.get(a, 0) for a in out.index.get_level_values("agent")], dtype=float)
        out["extrapolated"] = np.rint(out["extrapolated"].to_numpy(dtype=float) * per).astype(int)
        out = out.rename(columns={"extrapolated": "n < k"})
    else:
        out = out.rename(columns={"extrapolated": "share n < k"})
    if "estimable" in summary and not summary["estimable"].astype(bool).all():
        ranged = summary.set_index(["agent", "k"])
        out[f"range, any consistency ({pct})"] = [
            "" if ok else interval(float(lo), float(hi), 3)
            for ok, lo, hi in zip(ranged["estimable"], ranged["range_low"], ranged["range_high"], strict=True)
        ]
    return out

"""Figures for reports.

Every function takes computed results and returns a ``matplotlib.figure.Figure``;
none of them fits or samples anything.
"""

from __future__ import annotations

import textwrap
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from agentstats._util.markup import plot_text
from agentstats.intervals import ci_percent, table_ci_prob
from agentstats.report.layout import LEGEND_INSIDE, MAX_DRAWN, axes_top_and_bottom, drawn
from agentstats.report.palette import agent_colors

__all__ = [
    "agent_colors",
    "lattice_bins",
    "plot_contrast_matrix",
    "plot_forest",
    "plot_metric_summary",
    "plot_pass_k_curves",
    "plot_posterior_pass_k_curves",
    "plot_ppc",
    "plot_task_difficulty",
    "plot_task_outcomes",
    "plot_text",
    "ppc_label",
]

_METRICS = (("pass_at_k", "pass@k  (at least one success in k tries)"), ("pass_hat_k", "pass^k  (all k tries succeed)"))

#: Posterior predictive statistics of :func:`agentstats.models.diagnostics.posterior_predictive_cells`:
#: panel title and x-axis label.
PPC_LABELS: dict[str, tuple[str, str]] = {
    "cells_all_fail": ("Cells never solved", "agent × task cells with no success (c = 0)"),
    "cells_all_success": ("Cells always solved", "agent × task cells solved in every trial (c = n)"),
    "within_task_var": ("Spread between agents within a task", "mean variance of c/n across agents, per task"),
}


def ppc_label(name: str) -> tuple[str, str]:
    """Title and x-axis label, in words, of a posterior predictive statistic.

    Parameters
    ----------
    name : str
        A statistic of :func:`agentstats.models.diagnostics.posterior_predictive_cells`: one of :data:`PPC_LABELS`
        or ``flip_share[AGENT]``; any other name is returned as it is.

    Returns
    -------
    (str, str)
        Title and axis label, safe for matplotlib (:func:`plot_text`).
    """
    if name in PPC_LABELS:
        return PPC_LABELS[name]
    if name.startswith("flip_share[") and name.endswith("]"):
        agent = plot_text(name[len("flip_share[") : -1])
        return f"Tasks with mixed outcomes: {agent}", "share of the agent's tasks (2+ trials) whose outcome flips"
    return plot_text(name), plot_text(name)


_colors = agent_colors


def _legend(fig: Figure, ax, n_agents: int) -> None:
    """Legend inside the last panel for a few agents, outside on the right for many."""
    if n_agents <= LEGEND_INSIDE:
        ax.legend(loc="best", fontsize="small")
    else:
        fig.legend(*ax.get_legend_handles_labels(), loc="outside right center", fontsize="small")


def _dodge(n_agents: int) -> np.ndarray:
    """Horizontal offsets (in k units) that keep agents with equal values apart: at most 0.3 wide in all."""
    if n_agents < 2:
        return np.zeros(n_agents)
    step = min(0.08, 0.3 / (n_agents - 1))
    return (np.arange(n_agents) - (n_agents - 1) / 2) * step


def _k_axis(ax, ks: list[int]) -> None:
    """Whole-number k ticks: every k when there are few, else an integer locator; half a step of room each side."""
    if len(ks) <= 12:
        ax.set_xticks(ks)
    else:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlim(min(ks) - 0.5, max(ks) + 0.5)


def plot_pass_k_curves(suite: pd.DataFrame, *, title: str | None = None) -> Figure:
    """pass@k and pass^k against k, one line per agent with its interval as a band.

    Agents are drawn side by side, each a little off its k (at most 0.15 either way), so that equal values stay
    visible; with a single k each agent is a point with its interval as an error bar.

    Parameters
    ----------
    suite : pandas.DataFrame
        Columns ``agent, k`` and, for ``m`` in ``pass_at_k, pass_hat_k``: ``m, m_ci_low, m_ci_high``
        (as from :func:`agentstats.estimators.suite_pass_k`); with ``n_tasks_dropped``, points that average over
        fewer tasks (some had fewer than k trials) get open markers.
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
        Two panels sharing the k axis; x ticks are the whole-number k. With one k (pass@1 = pass^1: one value per
        agent) one panel, the agents sorted, each a point with its interval. At most
        :data:`~agentstats.report.layout.MAX_DRAWN` agents, the best at the first k (:mod:`.layout`).
    """
    ks = sorted(int(k) for k in suite["k"].unique())
    at_first = suite[suite["k"] == ks[0]].sort_values("pass_hat_k", ascending=False, kind="stable")
    agents, capped = drawn(list(dict.fromkeys(at_first["agent"])))
    colors = _colors(list(dict.fromkeys(suite["agent"])))
    if len(ks) == 1:
        return _plot_one_k(suite[suite["agent"].isin(agents)], agents, colors, ks[0], capped, title)
    offsets = dict(zip(agents, _dodge(len(agents)), strict=True))
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharex=True, sharey=True, layout="constrained")
    for ax, (m, label) in zip(axes, _METRICS, strict=True):
        for a in agents:
            g = suite[suite["agent"] == a].sort_values("k")
            x = g["k"].to_numpy(dtype=float) + offsets[a]
            if len(ks) == 1:  # no band to draw over one k: the interval as an error bar
                lo, hi = g[f"{m}_ci_low"].to_numpy(dtype=float), g[f"{m}_ci_high"].to_numpy(dtype=float)
                y = g[m].to_numpy(dtype=float)
                ax.errorbar(x, y, yerr=np.vstack([y - lo, hi - y]), marker="o", color=colors[a], capsize=4,
                            label=plot_text(a))
            else:
                ax.plot(x, g[m], marker="o", color=colors[a], label=plot_text(a))
                ax.fill_between(x, g[f"{m}_ci_low"], g[f"{m}_ci_high"], color=colors[a], alpha=0.18, lw=0)
            if "n_tasks_dropped" in g:
                part = (g["n_tasks_dropped"] > 0).to_numpy()  # fewer tasks behind these points: not comparable
                ax.plot(x[part], g[m].to_numpy()[part], ls="none", marker="o", mfc="white", color=colors[a])
        ax.set_title(label)
        ax.set_xlabel("k (tries)")
        ax.set_ylim(-0.02, 1.02)  # room for points and interval ends at 0 and 1
        ax.grid(alpha=0.3)
        _k_axis(ax, ks)
    axes[0].set_ylabel("share of tasks")
    _legend(fig, axes[1], len(agents))
    notes = []
    if "n_tasks_dropped" in suite and (suite["n_tasks_dropped"] > 0).any():
        notes.append("open markers: some tasks have fewer than k trials and are left out at that k")
    if len(agents) > 1:
        notes.append("agents are drawn side by side around each k")
    if capped:
        notes.append(capped)
    note = "; ".join(notes)
    lines = ([plot_text(title)] if title else []) + ([note] if note else [])
    if lines:
        fig.suptitle("\n".join(lines), fontsize="medium")
    return fig


def _plot_one_k(suite: pd.DataFrame, agents: list[str], colors: dict, k: int, capped: str,
                title: str | None) -> Figure:
    """One k: pass@k and pass^k coincide at k = 1, so one panel, one row per agent (best at the top)."""
    fig, ax = plt.subplots(figsize=(8, 1.2 + 0.32 * len(agents)), layout="constrained")
    rows = suite.set_index("agent")
    for y, a in enumerate(agents):
        r = rows.loc[a]
        ax.plot([r["pass_hat_k_ci_low"], r["pass_hat_k_ci_high"]], [y, y], color=colors[a], lw=2.5)
        ax.plot(r["pass_hat_k"], y, "o", color=colors[a])
    ax.set_yticks(range(len(agents)), [plot_text(a) for a in agents])
    ax.set_ylim(len(agents) - 0.5, -0.5)
    label = f"pass^{k}" + (" = pass@1 (one try)" if k == 1 else f" (all {k} tries succeed)")
    ax.set_xlabel(f"{label}: estimate and {_interval_label(suite)} interval")
    ax.set_xlim(-0.02, 1.02)
    ax.grid(axis="x", alpha=0.3)
    axes_top_and_bottom(ax, len(agents))
    lines = ([plot_text(title)] if title else []) + ([capped] if capped else [])
    if lines:
        ax.set_title("\n".join(lines), fontsize="medium")
    return fig


def plot_task_outcomes(counts: pd.DataFrame, *, max_tasks: int = 120) -> Figure:
    """Heat map of per-task success rate c/n, agents x tasks, tasks sorted from easiest to hardest.

    Cells with no recorded trial are grey; cells with missing (infrastructure error) trials are marked with a dot. A
    legend below the map names both (only those present); the colour bar runs the height of the map whatever the
    agent names' length.

    Parameters
    ----------
    counts : pandas.DataFrame
        Columns ``agent, task_id, n, c, n_missing``.
    max_tasks : int
        Show at most this many tasks (an evenly spaced selection over the difficulty order) to keep it legible.

    Returns
    -------
    matplotlib.figure.Figure
    """
    rate = counts.assign(rate=np.where(counts["n"] > 0, counts["c"] / counts["n"].where(counts["n"] > 0), np.nan))
    mat = rate.pivot(index="agent", columns="task_id", values="rate")
    miss = counts.pivot(index="agent", columns="task_id", values="n_missing").reindex_like(mat).fillna(0)
    order = mat.mean(axis=0).sort_values(ascending=False).index
    if len(order) > max_tasks:
        order = order[np.linspace(0, len(order) - 1, max_tasks).round().astype(int)]
    mat, miss = mat[order], miss[order]
    labels = [plot_text(a) for a in mat.index]
    label_in = 0.075 * max((len(a) for a in labels), default=1)  # about 0.075 inch per character at the tick size
    width = min(18.0, 1.9 + label_in + max(1.6, 0.12 * mat.shape[1]))
    height = 1.5 + 0.45 * mat.shape[0]
    map_in = max(1.6, 0.12 * mat.shape[1])
    # the colour bar gets its own column the height of the map: attached with fig.colorbar(ax=...), its length
    # follows the map's width and a wide label column shrinks it to a stub
    fig, (ax, cax) = plt.subplots(1, 2, figsize=(width, height), layout="constrained",
                                  gridspec_kw={"width_ratios": [map_in, 0.16]})
    values = mat.to_numpy(dtype=float)
    cmap = plt.get_cmap("RdYlGn").with_extremes(bad="0.8")  # grey, not white: white is near the middle's yellow
    im = ax.imshow(values, aspect="auto", cmap=cmap, vmin=0, vmax=1, interpolation="none")
    yy, xx = np.nonzero(miss.to_numpy() > 0)
    handles = []
    if len(xx):
        handles.append(ax.scatter(xx, yy, s=6, c="black", marker="o", label="has missing trials (excluded)"))
    if np.isnan(values).any():
        handles.append(Patch(facecolor="0.8", edgecolor="0.5", label="no recorded trial (not run, or all missing)"))
    ax.set_yticks(range(mat.shape[0]), labels)
    ax.set_xlabel(f"task (sorted by mean success, {mat.shape[1]} shown)")
    ax.set_xticks([])
    bar = fig.colorbar(im, cax=cax, label="success rate c/n")
    bar.set_ticks([0, 0.5, 1])
    if handles:
        fig.legend(handles=handles, loc="outside lower center", ncols=len(handles), fontsize="small",
                   frameon=False)
    return fig


def _interval_label(table: pd.DataFrame) -> str:
    """Label the intervals drawn with the table's own ``ci_prob`` (``"95%"``; ``"per-row"`` when rows differ)."""
    prob = table_ci_prob(table)
    return "per-row" if prob is None else ci_percent(prob)


def plot_posterior_pass_k_curves(summary: pd.DataFrame, *, title: str | None = None) -> Figure:
    """Posterior pass@k and pass^k against k with credible bands; extrapolated k drawn dashed and hatched.

    Parameters
    ----------
    summary : pandas.DataFrame
        Columns ``quantity`` (``pass_at_k`` / ``pass_hat_k``), ``agent, k, mean, ci_low, ci_high, extrapolated``
        (one row per quantity, agent, k), as from :func:`agentstats.posterior.summarize_pass_k` given both
        quantities' draws.

    Returns
    -------
    matplotlib.figure.Figure
    """
    first = summary[(summary["quantity"] == "pass_hat_k") & (summary["k"] == summary["k"].min())]
    agents, capped = drawn(list(dict.fromkeys(first.sort_values("mean", ascending=False, kind="stable")["agent"]))
                           or list(dict.fromkeys(summary["agent"])))
    colors = _colors(list(dict.fromkeys(summary["agent"])))
    summary = summary[summary["agent"].isin(agents)]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharex=True, sharey=True, layout="constrained")
    ranged = _not_estimable(summary)
    for ax, (m, label) in zip(axes, _METRICS, strict=True):
        sm = summary[summary["quantity"] == m]
        for a in agents:
            g = sm[sm["agent"] == a].sort_values("k")
            rng = g[_not_estimable(g)]
            if len(rng):  # one trial per task: k > 1 only as the range of every consistency, from k = 1 on
                start = g[~_not_estimable(g)].tail(1)
                ks = [*start["k"], *rng["k"]]
                ax.fill_between(ks, [*start["ci_low"], *rng["range_low"]], [*start["ci_high"], *rng["range_high"]],
                                facecolor="none", edgecolor=colors[a], hatch="...", alpha=0.5, lw=0.8, ls=":")
                g = g[~_not_estimable(g)]
            obs = g[~g["extrapolated"].astype(bool)]
            ext = g[g["extrapolated"].astype(bool)]
            band_obs, band_ext = obs, ext
            if len(obs) and len(ext):
                # the solid and the hatched band meet halfway between the last observed and the first extrapolated
                # k, so that no observed k looks extrapolated and no extrapolated k looks observed
                mid = (obs.iloc[[-1]][["k", "ci_low", "ci_high"]].to_numpy(dtype=float)
                       + ext.iloc[[0]][["k", "ci_low", "ci_high"]].to_numpy(dtype=float)) / 2
                half = pd.DataFrame(mid, columns=["k", "ci_low", "ci_high"])
                band_obs, band_ext = pd.concat([obs, half]), pd.concat([half, ext])
                # the dashed line starts at the last observed point (drawn filled, with the solid part)
                ax.plot([obs["k"].iloc[-1], ext["k"].iloc[0]], [obs["mean"].iloc[-1], ext["mean"].iloc[0]],
                        ls="--", color=colors[a])
            ax.plot(obs["k"], obs["mean"], marker="o", color=colors[a], label=plot_text(a))
            ax.fill_between(band_obs["k"], band_obs["ci_low"], band_obs["ci_high"], color=colors[a], alpha=0.2,
                            lw=0)
            if len(ext):
                ax.plot(ext["k"], ext["mean"], ls="--", marker="o", mfc="white", color=colors[a],
                        label=None if len(obs) else plot_text(a))
                ax.fill_between(
                    band_ext["k"], band_ext["ci_low"], band_ext["ci_high"], facecolor="none",
                    edgecolor=colors[a], hatch="///", alpha=0.35, lw=0,
                )
        ax.set_title(label)
        ax.set_xlabel("k (tries)")
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
        _k_axis(ax, sorted(int(k) for k in summary["k"].unique()))
    axes[0].set_ylabel(f"posterior mean, {_interval_label(summary)} credible band")
    _legend(fig, axes[1], len(agents))
    note = ("\ndotted band: one trial per task, so only the range over every within-task consistency (not estimable "
            "from these data)" if ranged.any() else "")
    fig.suptitle(
        (plot_text(title) + "\n" if title else "") + "dashed, open markers, hatched band: k beyond the trials observed "
        "on some of the agent's tasks (model extrapolation); filled markers: observed k" + note
        + (f"\n{capped}" if capped else ""),
        fontsize="medium",
    )
    return fig


def _not_estimable(summary: pd.DataFrame) -> pd.Series:
    """Mark the rows whose value the data do not identify (``estimable`` False, from ``summarize_pass_k``)."""
    if "estimable" not in summary:
        return pd.Series(False, index=summary.index)
    return ~summary["estimable"].astype(bool)


def plot_forest(summary: pd.DataFrame, *, metric_label: str = "pass^k") -> Figure:
    """Forest plot: one row per (agent, k) with posterior mean and credible interval.

    Parameters
    ----------
    summary : pandas.DataFrame
        Columns ``agent, k, mean, ci_low, ci_high`` (and optionally ``ci_kind``, and ``extrapolated``: rows with a
        share above 0 get an open marker, a dashed interval and "(extrapolated)" in their label).
    metric_label : str
        Axis label for the metric.

    Returns
    -------
    matplotlib.figure.Figure
    """
    ks = sorted(summary["k"].unique())
    first = summary[summary["k"] == ks[0]].sort_values("mean", ascending=False, kind="stable")
    agents, capped = drawn(list(dict.fromkeys(first["agent"])) or list(dict.fromkeys(summary["agent"])))
    colors = _colors(list(dict.fromkeys(summary["agent"])))
    summary = summary[summary["agent"].isin(agents)]
    fig, ax = plt.subplots(figsize=(7, 0.9 + 0.32 * len(summary)), layout="constrained")
    y, ypos, labels = 0.0, [], []
    any_extrap = any_range = False
    for k in ks:
        for a in agents:
            r = summary[(summary["agent"] == a) & (summary["k"] == k)]
            if r.empty:
                continue
            r = r.iloc[0]
            ypos.append(y)
            if "estimable" in r and not bool(r["estimable"]):  # a range, not an estimate: dotted, no marker
                any_range = True
                ax.plot([r["range_low"], r["range_high"]], [y, y], color=colors[a], lw=2.5, ls=":")
                labels.append(f"{plot_text(a)}  k={k}  (range: not estimable)")
                y += 1
                continue
            extrap = bool("extrapolated" in r and float(r["extrapolated"]) > 0)
            any_extrap |= extrap
            ax.plot([r["ci_low"], r["ci_high"]], [y, y], color=colors[a], lw=2.5, ls="--" if extrap else "-")
            ax.plot(r["mean"], y, "o", color=colors[a], mfc="white" if extrap else colors[a])
            labels.append(f"{plot_text(a)}  k={k}" + ("  (extrapolated)" if extrap else ""))
            y += 1
        y += 0.5  # gap between k groups
    ax.set_yticks(ypos, labels)
    ax.invert_yaxis()
    kind = summary["ci_kind"].iloc[0] if "ci_kind" in summary else "eti"
    ax.set_xlabel(f"{metric_label}: posterior mean and {_interval_label(summary)} credible interval ({kind})")
    notes = []
    if any_extrap:
        notes.append("open markers, dashed: k beyond the trials observed on some of the agent's tasks (model "
                     "extrapolation)")
    if any_range:
        notes.append("dotted, no marker: one trial per task, the range over every within-task consistency")
    if capped:
        notes.append(capped + " (best at the first k)")
    if notes:
        ax.set_title("\n".join(notes), fontsize="small")
    ax.set_xlim(0, 1)
    ax.grid(axis="x", alpha=0.3)
    axes_top_and_bottom(ax, len(ypos))
    return fig


def plot_contrast_matrix(prob: pd.DataFrame, *, k: int, metric_label: str = "pass^k", wrap: int = 16,
                         max_agents: int | None = None) -> Figure:
    """Matrix of P(metric[row] > metric[column]) from joint posterior draws.

    Row names are written in full, horizontally; column names horizontally too, wrapped onto lines of at most
    ``wrap`` characters (slanted long names run into each other). The figure grows with the names' length so that
    the cells keep their size, and the colour bar has its own column the height of the matrix.

    Parameters
    ----------
    prob : pandas.DataFrame
        Square, index and columns are agents; entry = posterior probability that the row agent beats the column.
    k : int
        The k of the metric, for the title.
    metric_label : str
        The metric's name with ``k`` in it (``"pass^k"``, ``"pass@k"``).
    wrap : int
        Longest line of a column name, in characters.
    max_agents : int, optional
        Agents drawn at most (default :data:`~agentstats.report.layout.MAX_DRAWN`): sorted by their mean probability
        of being ahead of the others, best first; the title says how many are left out.

    Returns
    -------
    matplotlib.figure.Figure
        About 0.08 inch per character of the longest row name plus the cells (at least 0.75 inch wide each).
    """
    score = prob.mean(axis=1, skipna=True).sort_values(ascending=False, kind="stable")  # mean P(row > other)
    order, capped = drawn([str(a) for a in score.index], max_agents if max_agents is not None else MAX_DRAWN)
    keep = [a for a in score.index if str(a) in order]
    prob = prob.loc[keep, keep]
    n = prob.shape[0]
    rows = [plot_text(a) for a in prob.index]
    cols = [_wrap(str(a), wrap) for a in prob.columns]
    col_chars = max((len(line) for c in cols for line in c.split("\n")), default=1)
    col_lines = max((c.count("\n") + 1 for c in cols), default=1)
    metric = metric_label.replace("k", str(k))
    title = f"P({metric}[row] > {metric}[column])" + (f"\n{capped}" if capped else "")
    cell_w = max(0.75, 0.08 * col_chars + 0.2)
    map_w = max(cell_w * n, 0.09 * max(len(line) for line in title.split("\n")))
    row_in = 0.08 * max((len(r) for r in rows), default=1)
    width = 1.4 + row_in + map_w  # 1.4: the colour bar with its label, the y label, margins
    height = 1.2 + 0.55 * n + 0.17 * col_lines
    fig, (ax, cax) = plt.subplots(1, 2, figsize=(width, height), layout="constrained",
                                  gridspec_kw={"width_ratios": [map_w, 0.16]})
    vals = prob.to_numpy(dtype=float)
    im = ax.imshow(vals, cmap="RdBu", vmin=0, vmax=1, aspect="auto")
    for i in range(n):
        for j in range(n):
            if i != j and np.isfinite(vals[i, j]):
                ax.text(j, i, f"{vals[i, j]:.2f}", ha="center", va="center",
                        color="white" if abs(vals[i, j] - 0.5) > 0.35 else "black")
    ax.set_xticks(range(n), cols)
    ax.set_yticks(range(n), rows)
    ax.set_xlabel("column agent")
    ax.set_ylabel("row agent")
    ax.set_title(title)
    bar = fig.colorbar(im, cax=cax, label="posterior probability")
    bar.set_ticks([0, 0.5, 1])
    return fig


def plot_task_difficulty(tasks: pd.DataFrame, *, max_tasks: int = 120, max_label: int = 45) -> Figure:
    """Posterior task effects (difficulty) with credible intervals, one row per task, hardest at the top.

    Tasks run down the y axis, so the figure grows with the number of tasks and every task id stays readable
    (written horizontally; ids longer than ``max_label`` characters are shortened in the middle).

    Parameters
    ----------
    tasks : pandas.DataFrame
        Columns ``task, mean, ci_low, ci_high`` on the logit scale (higher = easier), as from
        :func:`agentstats.posterior.task_effects`.
    max_tasks : int
        Show at most this many tasks: an evenly spaced selection over the difficulty order (the title says so).
    max_label : int
        Longest task label shown, in characters.

    Returns
    -------
    matplotlib.figure.Figure
        Height about 0.17 inch per task shown.
    """
    t = tasks.sort_values("mean").reset_index(drop=True)
    n_all = len(t)
    if n_all > max_tasks:
        t = t.iloc[np.linspace(0, n_all - 1, max_tasks).round().astype(int)].reset_index(drop=True)
    labels = [plot_text(_shorten(str(x), max_label)) for x in t["task"]]
    fig, ax = plt.subplots(figsize=(8.5, 1.4 + 0.17 * len(t)), layout="constrained")
    y = np.arange(len(t))
    ax.hlines(y, t["ci_low"], t["ci_high"], color="tab:gray", lw=1.5)
    ax.plot(t["mean"], y, "o", color="tab:blue", ms=3.5)
    ax.axvline(0, color="black", lw=0.8)
    ax.set_yticks(y, labels, fontsize=7 if len(t) > 40 else 8)
    ax.set_ylim(len(t) - 0.5, -0.5)  # hardest (lowest effect) at the top
    ax.set_xlabel("task effect β (logit scale; higher = easier)")
    ax.grid(axis="x", alpha=0.3)
    axes_top_and_bottom(ax, len(t))
    shown = f"{len(t)} of {n_all} tasks, evenly spaced" if n_all > len(t) else f"{n_all} tasks"
    ax.set_title(f"Task difficulty: posterior mean and {_interval_label(tasks)} credible interval ({shown})",
                 fontsize="medium")
    return fig


def _wrap(text: str, width: int, *, hyphens: bool = True) -> str:
    """``text`` on lines of at most ``width`` characters, for matplotlib.

    Lines break at spaces (and after hyphens when ``hyphens``); a word longer than a line is cut anywhere.
    """
    return "\n".join(plot_text(line) for line in textwrap.wrap(text, width, break_on_hyphens=hyphens) or [""])


def _shorten(text: str, width: int) -> str:
    """Shorten ``text`` to ``width`` characters by replacing its middle with an ellipsis."""
    if len(text) <= width:
        return text
    head = (width - 1) // 2
    return text[:head] + "…" + text[len(text) - (width - 1 - head):]


def lattice_bins(values: np.ndarray, *, max_bars: int = 200, default: int = 30) -> Any:
    """Histogram bins centred on the values a discrete statistic takes: one bar per lattice point.

    A count takes whole numbers, a share of 40 tasks multiples of 1/40: when every value is ``min + j * step`` for
    whole ``j`` (``step`` the smallest gap between distinct values, to 1e-9 relative) and there are at most
    ``max_bars`` points, the edges lie halfway between points, so each bar sits on one value and none is split or
    empty between two. Otherwise ``default`` equal bins.

    Returns
    -------
    numpy.ndarray or int
        Bin edges, or ``default``.
    """
    v = np.asarray(values, dtype=float).ravel()
    v = v[np.isfinite(v)]
    distinct = np.unique(v)
    if len(distinct) < 2:
        return np.array([distinct[0] - 0.5, distinct[0] + 0.5]) if len(distinct) else default
    step = float(np.min(np.diff(distinct)))
    j = (distinct - distinct[0]) / step
    n_points = round(j[-1]) + 1
    if n_points > max_bars or not np.allclose(j, np.round(j), atol=1e-6):
        return default
    return distinct[0] + (np.arange(n_points + 1) - 0.5) * step


def plot_ppc(
    observed: dict[str, float], replicated: dict[str, np.ndarray], *, p_values: dict[str, float] | None = None
) -> Figure:
    """Posterior predictive check: histogram of replicated statistics with the observed value marked.

    Parameters
    ----------
    observed : dict of str to float
        Statistic name -> value on the observed data. Names of
        :func:`agentstats.models.diagnostics.posterior_predictive_cells` get a title and axis label in words
        (:func:`ppc_label`); other names are shown as given.
    replicated : dict of str to ndarray
        Statistic name -> values over posterior predictive replications (1-D).
    p_values : dict of str to float, optional
        Posterior predictive p-values to show in each panel title.

    Returns
    -------
    matplotlib.figure.Figure
        One panel per statistic, three to a row; x = the statistic, y = number of replications. Count statistics
        get integer ticks. Titles are wrapped onto lines of at most 50 characters, so a long agent name stays whole
        and within its panel.
    """
    names = list(observed)
    ncols = min(3, len(names))
    nrows = -(-len(names) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.4 * ncols, 3.4 * nrows), layout="constrained", squeeze=False)
    for ax in axes.ravel()[len(names):]:
        ax.set_axis_off()
    for ax, nm in zip(axes.ravel(), names, strict=False):
        rep = np.asarray(replicated[nm]).ravel()
        is_count = bool(np.allclose(rep, np.round(rep)) and np.isclose(observed[nm], round(observed[nm])))
        bins = lattice_bins(np.append(rep, observed[nm]))
        ax.hist(rep, bins=bins, color="tab:blue", alpha=0.6, label="replicated")
        ax.axvline(observed[nm], color="black", lw=2, label="observed")
        title, xlabel = ppc_label(nm)
        # wrapped: a long agent name would run into the next panel's title
        title = _wrap(title.replace(r"\$", "$"), 50, hyphens=False)
        if p_values and nm in p_values:
            title = f"{title}\nposterior predictive p = {p_values[nm]:.2f}"
        ax.set_title(title, fontsize="small")
        ax.set_xlabel(xlabel, fontsize="small")
        ax.set_ylabel("replications", fontsize="small")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        if is_count:
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.legend(fontsize="x-small")
    return fig


def plot_metric_summary(summary: pd.DataFrame, metrics: dict | None = None, *, columns: int = 3) -> Figure:
    """Small multiples of the metric summary: one panel per metric, agents' posterior means with credible intervals.

    Parameters
    ----------
    summary : pandas.DataFrame
        Output of :func:`agentstats.estimators.metric_means.summarize_metrics` (or ``..._by_risk``: only its
        ``"all"`` rows are drawn). Metrics without an applicable value are left out.
    metrics : dict, optional
        ``frame.attrs["metrics"]``: each metric's ``value_range`` (the x-axis when finite) and ``lower_limit`` /
        ``upper_limit`` (a dashed line).
    columns : int
        Panels per row.

    Returns
    -------
    matplotlib.figure.Figure
    """
    metrics = metrics or {}
    if "risk_level" in summary.columns:
        summary = summary[summary["risk_level"] == "all"]
    summary = summary[np.isfinite(summary["mean"].to_numpy(dtype=float))]
    names = list(dict.fromkeys(summary["metric"]))
    agents = list(dict.fromkeys(summary["agent"]))
    colors = _colors(agents)
    if not names:
        fig, ax = plt.subplots(figsize=(6, 1), layout="constrained")
        ax.axis("off")
        ax.text(0.5, 0.5, "no metric has an applicable value", ha="center", va="center")
        return fig
    ncol = max(1, min(columns, len(names)))
    nrow = -(-len(names) // ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(3.4 * ncol, (0.55 + 0.28 * len(agents)) * nrow + 0.3),
                             layout="constrained", squeeze=False)
    for ax, name in zip(axes.flat, names, strict=False):
        rows = summary[summary["metric"] == name]
        ys = np.arange(len(agents))
        for y, a in zip(ys, agents, strict=True):
            r = rows[rows["agent"] == a]
            if r.empty:
                continue
            r = r.iloc[0]
            ax.plot([r["ci_low"], r["ci_high"]], [y, y], color=colors[a], lw=2.5)
            ax.plot(r["mean"], y, "o", color=colors[a], ms=5)
        m = metrics.get(name, {})
        lo, hi = m.get("value_range", (-np.inf, np.inf))
        if np.isfinite(lo) and np.isfinite(hi):
            pad = 0.03 * (hi - lo)
            ax.set_xlim(lo - pad, hi + pad)
        for lim in (m.get("lower_limit"), m.get("upper_limit")):
            if lim is not None:
                ax.axvline(lim, color="0.4", ls="--", lw=1)
        first_column = list(axes.flat).index(ax) % ncol == 0
        ax.set_yticks(ys, [plot_text(_shorten(str(a), 22)) for a in agents] if first_column else [], fontsize=8)
        ax.set_ylim(len(agents) - 0.5, -0.5)
        ax.set_title(plot_text(_shorten(str(name), 34)), fontsize=9)
        ax.tick_params(axis="x", labelsize=8)
        ax.grid(axis="x", alpha=0.3)
    for ax in list(axes.flat)[len(names):]:
        ax.axis("off")
    fig.suptitle(f"Metrics: posterior mean over tasks and {_interval_label(summary)} credible interval (dashed: "
                 "threshold)", fontsize=9)
    return fig

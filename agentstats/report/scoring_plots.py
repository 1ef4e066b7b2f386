"""Figures for the scoring section of the report.

Each function takes tables already computed by
:mod:`agentstats.report.scoring_tables` or :func:`agentstats.scoring.score_trials` and returns a
``matplotlib.figure.Figure``; none of them computes a score.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from agentstats._util.markup import plot_text
from agentstats.report.palette import agent_colors as _colors

__all__ = ["plot_judge_scores", "plot_tool_breakdown", "plot_tool_vs_outcome"]

_COMPONENTS = ("selection", "parameters", "sequence", "utilization", "overall")


def _empty(message: str, figsize: tuple[float, float] = (6, 2)) -> Figure:
    fig, ax = plt.subplots(figsize=figsize, layout="constrained")
    ax.text(0.5, 0.5, message, ha="center", va="center", transform=ax.transAxes)
    ax.set_axis_off()
    return fig


def plot_tool_breakdown(breakdown: pd.DataFrame, *, components: Sequence[str] = _COMPONENTS) -> Figure:
    """Draw grouped bars of the mean tool-correctness component per agent, one panel per level.

    Parameters
    ----------
    breakdown : pandas.DataFrame
        From :func:`agentstats.report.scoring_tables.tool_breakdown` (columns ``agent, level, n_units`` and the
        component means).
    components : sequence of str
        Components to show, in order (default: selection, parameters, sequence, utilization, overall).
        Components that apply to no unit (NaN) are marked "n/a".

    Returns
    -------
    matplotlib.figure.Figure
        One panel per ``level`` (``trial`` / ``interaction``); x = component, one bar per agent, y in [0, 1].
    """
    if breakdown.empty:
        return _empty("no tool ground truth: nothing to break down")
    levels = list(dict.fromkeys(breakdown["level"]))
    agents = list(dict.fromkeys(breakdown["agent"]))
    colors = _colors(agents)
    comps = [c for c in components if c in breakdown.columns]
    width = 0.8 / max(len(agents), 1)
    fig, axes = plt.subplots(1, len(levels), figsize=(max(6.0, 1.4 * len(comps)) * len(levels), 3.8),
                             squeeze=False, sharey=True, layout="constrained")
    x = np.arange(len(comps))
    for ax, level in zip(axes[0], levels, strict=True):
        sub = breakdown[breakdown["level"] == level]
        for i, a in enumerate(agents):
            row = sub[sub["agent"] == a]
            if row.empty:
                continue
            vals = row.iloc[0][comps].astype(float).to_numpy()
            pos = x - 0.4 + width * (i + 0.5)
            ax.bar(pos, np.nan_to_num(vals), width=width * 0.95, color=colors[a],
                   label=f"{plot_text(a)} (n={int(row.iloc[0]['n_units'])})")
            for xp, v in zip(pos, vals, strict=True):
                if np.isnan(v):  # the component applies to no unit: say so where its bar would be
                    ax.text(xp, 0.03, "n/a", ha="center", va="bottom", fontsize="small", color="dimgray")
        ax.set_xticks(x, comps)
        ax.set_ylim(0, 1.05)
        ax.set_title(f"{level}-level tool calls")
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize="small", loc="lower right")
    axes[0][0].set_ylabel("mean score")
    return fig


def plot_judge_scores(
    interaction_scores: pd.DataFrame, *, threshold: float | None = None, bins: int = 10
) -> Figure:
    """Histogram of answer scores per agent, with the number of missing verdicts in the title.

    Parameters
    ----------
    interaction_scores : pandas.DataFrame
        ``ScoringResult.interaction_scores`` (columns ``agent, answer_score, answer_status``). Rows with
        ``answer_status == "ok"`` are plotted; ``judge_missing`` rows are counted in the title, never plotted
        as a score.
    threshold : float, optional
        Draw the correctness threshold as a vertical line.
    bins : int
        Equal-width bins over [0, 1].

    Returns
    -------
    matplotlib.figure.Figure
        Side-by-side bars per agent; x = answer score in [0, 1], y = interactions.
    """
    df = interaction_scores
    ok = df[df["answer_status"] == "ok"]
    n_missing = int((df["answer_status"] == "judge_missing").sum())
    if ok.empty:
        return _empty(f"no answer verdicts to plot (judge_missing: {n_missing})")
    agents = list(dict.fromkeys(ok["agent"]))
    colors = _colors(agents)
    fig, ax = plt.subplots(figsize=(7, 3.8), layout="constrained")
    data = [ok.loc[ok["agent"] == a, "answer_score"].astype(float).to_numpy() for a in agents]
    ax.hist(data, bins=np.linspace(0, 1, bins + 1).tolist(), color=[colors[a] for a in agents],
            label=[f"{plot_text(a)} (n={len(d)})" for a, d in zip(agents, data, strict=True)])
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    if threshold is not None:
        ax.axvline(threshold, color="black", ls="--", lw=1, label=f"threshold {threshold:g}")
    ax.set_xlim(0, 1)
    ax.set_xlabel("answer score")
    ax.set_ylabel("interactions")
    ax.set_title(f"Answer scores: {len(ok)} verdicts; judge_missing: {n_missing} (excluded, not zero)")
    ax.legend(fontsize="small")
    ax.grid(axis="y", alpha=0.3)
    return fig


def plot_tool_vs_outcome(frame: pd.DataFrame, *, bins: int = 20) -> Figure:
    """Distribution of the trial-level overall tool score, split by the benchmark's success / failure.

    Parameters
    ----------
    frame : pandas.DataFrame
        From :func:`agentstats.report.scoring_tables.tool_scores_frame`; ``level == "trial"`` units with a
        ``benchmark_outcome`` of ``"success"`` or ``"failure"`` are plotted.
    bins : int
        Equal-width bins over [0, 1].

    Returns
    -------
    matplotlib.figure.Figure
        Side-by-side histograms (x = overall tool score, y = trials), legend with counts and means.
    """
    sub = frame[(frame["level"] == "trial") & frame["benchmark_outcome"].isin(["success", "failure"])]
    if sub.empty:
        return _empty("no trial-level tool ground truth with a benchmark outcome")
    fig, ax = plt.subplots(figsize=(7, 3.8), layout="constrained")
    groups = [("success", "tab:green"), ("failure", "tab:red")]
    data = [sub.loc[sub["benchmark_outcome"] == g, "overall"].astype(float).to_numpy() for g, _ in groups]
    labels = [f"benchmark {g} (n={len(d)}, mean {np.mean(d):.2f})" if len(d) else f"benchmark {g} (n=0)"
              for (g, _), d in zip(groups, data, strict=True)]
    ax.hist(data, bins=np.linspace(0, 1, bins + 1).tolist(), color=[c for _, c in groups], label=labels)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlim(0, 1)
    ax.set_xlabel("overall tool score (trial level)")
    ax.set_ylabel("trials")
    ax.set_title("Tool-call correctness vs the benchmark's outcome")
    ax.legend(fontsize="small", loc="upper left")
    ax.grid(axis="y", alpha=0.3)
    return fig

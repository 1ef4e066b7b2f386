"""One layout rule for 2 to 50 agents (agentstats.report.layout): sorted, at most MAX_DRAWN agents drawn with the rest
in a table, long tables folded in <details>, tall plots with an x axis at the top too, legends outside past a few
agents. Checked on every figure of the report that draws agents, at 2, 10, 25 and 50 agents."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from report_helpers import live_markup, parse

from agentstats.report import layout, plots

SIZES = [2, 10, 25, 50]


def _agents(n: int) -> list[str]:
    return [f"agent-{i:02d}" for i in range(n)]


def _values(n: int) -> np.ndarray:
    """pass^1 per agent, distinct and not in name order (agent-00 is not the best)."""
    return np.random.default_rng(n).permutation(np.linspace(0.1, 0.9, n))


def _suite(n: int, ks: list[int]) -> pd.DataFrame:
    rows = []
    for a, v in zip(_agents(n), _values(n), strict=True):
        for k in ks:
            p = v ** k
            rows.append({"agent": a, "k": k, "n_tasks": 40, "n_tasks_dropped": 0, "pass_at_k": 1 - (1 - v) ** k,
                         "pass_at_k_ci_low": 0.0, "pass_at_k_ci_high": 1.0, "pass_hat_k": p,
                         "pass_hat_k_ci_low": p / 2, "pass_hat_k_ci_high": min(1.0, p * 1.5), "ci_prob": 0.95})
    return pd.DataFrame(rows)


def _forest(n: int, ks: list[int]) -> pd.DataFrame:
    s = _suite(n, ks)
    return pd.DataFrame({"agent": s["agent"], "k": s["k"], "mean": s["pass_hat_k"], "median": s["pass_hat_k"],
                         "ci_low": s["pass_hat_k_ci_low"], "ci_high": s["pass_hat_k_ci_high"], "ci_kind": "eti",
                         "ci_prob": 0.95, "extrapolated": 0.0})


def _prob(n: int) -> pd.DataFrame:
    v = _values(n)
    m = 1 / (1 + np.exp(-(v[:, None] - v[None, :]) * 20))
    np.fill_diagonal(m, np.nan)
    return pd.DataFrame(m, index=_agents(n), columns=_agents(n))


def _best(n: int, count: int) -> list[str]:
    order = np.argsort(-_values(n), kind="stable")
    return [_agents(n)[i] for i in order[:count]]


@pytest.mark.parametrize("n", SIZES)
def test_curves_sort_cap_and_keep_the_legend_off_the_panels(n):
    fig = plots.plot_pass_k_curves(_suite(n, [1, 2, 3]))
    fig.canvas.draw()
    drawn = min(n, layout.MAX_DRAWN)
    _handles, labels = fig.axes[1].get_legend_handles_labels()
    assert labels == _best(n, drawn)  # best first, only the top MAX_DRAWN
    assert ("top 12 of" in fig._suptitle.get_text()) == (n > layout.MAX_DRAWN)
    assert bool(fig.legends) == (n > layout.LEGEND_INSIDE)  # outside the panels past a few agents
    plt.close(fig)


@pytest.mark.parametrize("n", SIZES)
def test_one_trial_per_task_is_one_sorted_panel(n):
    fig = plots.plot_pass_k_curves(_suite(n, [1]))
    fig.canvas.draw()
    assert len(fig.axes) == 1
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == _best(n, min(n, layout.MAX_DRAWN))
    assert fig.get_size_inches()[1] < 6
    plt.close(fig)


@pytest.mark.parametrize("n", SIZES)
def test_forest_caps_agents_and_a_tall_one_has_its_axis_at_the_top_too(n):
    ks = [1, 2, 3, 4, 5, 8]
    fig = plots.plot_forest(_forest(n, ks))
    fig.canvas.draw()
    ax = fig.axes[0]
    rows = min(n, layout.MAX_DRAWN) * len(ks)
    assert len(ax.get_yticks()) == rows
    assert [t.get_text().split()[0] for t in ax.get_yticklabels()][: min(n, layout.MAX_DRAWN)] == _best(
        n, min(n, layout.MAX_DRAWN))
    top = [child for child in ax.child_axes if child.get_xlabel() == ax.get_xlabel()]
    assert bool(top) == (rows > layout.TALL_ROWS)  # the axis, its ticks and label, at the top too
    if top:
        assert [t.get_text() for t in top[0].get_xticklabels()] == [t.get_text() for t in ax.get_xticklabels()]
    assert fig.get_size_inches()[1] < 0.9 + 0.32 * (layout.MAX_DRAWN * len(ks)) + 0.1
    plt.close(fig)


@pytest.mark.parametrize("n", SIZES)
def test_contrast_matrix_is_sorted_capped_and_stays_a_readable_size(n):
    fig = plots.plot_contrast_matrix(_prob(n), k=1)
    fig.canvas.draw()
    ax = fig.axes[0]
    shown = min(n, layout.MAX_DRAWN)
    assert ax.images[0].get_array().shape == (shown, shown)
    assert [t.get_text() for t in ax.get_yticklabels()] == _best(n, shown)
    assert ("top 12 of" in ax.get_title()) == (n > layout.MAX_DRAWN)
    w, h = fig.get_size_inches()
    assert w < 16 and h < 9
    plt.close(fig)


@pytest.mark.parametrize("n", SIZES)
def test_long_tables_fold_the_rest_in_details_without_script(n):
    table = pd.DataFrame({"agent": _agents(n) * 3, "value": np.arange(3 * n) / 7}).set_index("agent")
    html = layout.folded_html(table.iloc[layout.OPEN_ROWS:], "more")
    assert live_markup(html) == []
    doc = parse(html)
    assert [t for t, _ in doc.elements][:2] == ["details", "summary"]
    # pandas writes two header rows for a named index: the columns, then the index name
    assert sum(1 for t, _ in doc.elements if t == "tr") == max(0, 3 * n - layout.OPEN_ROWS) + 2
    assert "<script" not in layout.folded_html(pd.DataFrame({"x": ["<script>alert(1)</script>"]}), "<b>")

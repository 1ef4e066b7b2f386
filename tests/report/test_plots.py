"""Report figures (agentstats.report.plots, agentstats.report.scoring_plots): what a reader can tell apart and read.

Layout is checked on the drawn figure (matplotlib's renderer gives every text's box): labels that overlap or axes
squeezed into a strip fail, whatever the pixels look like on a given machine.
"""

from __future__ import annotations

import itertools

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.ticker import MaxNLocator

from agentstats.report import plots, scoring_plots


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _lab(rgb) -> np.ndarray:
    """sRGB in [0, 1] -> CIELAB (D65), the CIE 1976 formulas."""
    rgb = np.asarray(rgb, dtype=float)
    lin = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    m = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]])
    xyz = lin @ m.T / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > (6 / 29) ** 3, np.cbrt(xyz), xyz / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.stack([116 * f[..., 1] - 16, 500 * (f[..., 0] - f[..., 1]), 200 * (f[..., 1] - f[..., 2])], axis=-1)


@pytest.mark.parametrize("n_agents", [3, 10, 11, 20])
def test_agent_colours_are_distinct(n_agents):
    """No two agents share a colour or get a lighter shade of another's (tab20's pairs are ΔE ≈ 17 apart)."""
    colors = plots.agent_colors([f"a{i}" for i in range(n_agents)])
    lab = _lab(list(colors.values()))
    closest = min(np.linalg.norm(lab[i] - lab[j]) for i, j in itertools.combinations(range(n_agents), 2))
    assert closest > 25
    if n_agents <= 10:  # the familiar palette while it suffices
        tab10 = [plt.get_cmap("tab10")(i)[:3] for i in range(n_agents)]
        np.testing.assert_allclose(list(colors.values()), tab10, atol=1e-5)


def test_names_with_dollar_signs_are_drawn_as_text():
    """matplotlib reads $...$ as TeX: an agent called "a$b$" must neither turn into math nor break the figure."""
    agents = ["a$b$", r"$\frac{1}{", "plain"]
    suite = pd.DataFrame([{"agent": a, "k": k, "n_tasks": 3, "pass_at_k": 0.5, "pass_at_k_ci_low": 0.4,
                           "pass_at_k_ci_high": 0.6, "pass_hat_k": 0.3, "pass_hat_k_ci_low": 0.2,
                           "pass_hat_k_ci_high": 0.4} for a in agents for k in (1, 2)])
    fig = plots.plot_pass_k_curves(suite)
    fig.canvas.draw()
    labels = [t.get_text() for t in fig.axes[1].get_legend().get_texts()]
    assert labels == [plots.plot_text(a) for a in agents]
    assert plots.plot_text("a$b$") == r"a\$b\$"


def _task_effects(n: int, width: int = 40) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    mean = np.sort(rng.normal(0, 2, n))
    names = [f"suite_{i:03d}/" + "long_task_identifier_"[: max(0, width - 10)] for i in range(n)]
    return pd.DataFrame({"task": names, "mean": mean, "ci_low": mean - 1.5, "ci_high": mean + 1.5})


def _overlaps(boxes) -> int:
    return sum(a.overlaps(b) for a, b in itertools.pairwise(boxes))


@pytest.mark.slow  # 1.3-1.6 s; the README's test command stays under 2 minutes
def test_task_difficulty_keeps_83_long_labels_readable():
    """METR's 83 tasks: one readable, non-overlapping label per task; the axes use most of the figure."""
    fig = plots.plot_task_difficulty(_task_effects(83))
    fig.canvas.draw()
    ax = fig.axes[0]
    labels = [t for t in ax.get_yticklabels() if t.get_text()]
    assert len(labels) == 83
    assert all(t.get_rotation() == 0 for t in labels)
    renderer = fig.canvas.get_renderer()
    assert _overlaps([t.get_window_extent(renderer) for t in labels]) == 0
    assert all(t.get_fontsize() >= 7 for t in labels)
    pos = ax.get_position()
    assert pos.height > 0.75 and pos.width > 0.45  # not a strip
    # the hardest task (lowest effect) is at the top
    assert labels[0].get_text().startswith("suite_000")


def test_task_difficulty_says_when_it_shows_a_selection():
    fig = plots.plot_task_difficulty(_task_effects(300), max_tasks=100)
    assert "100 of 300 tasks" in fig.axes[0].get_title()
    assert len(fig.axes[0].get_yticks()) == 100


def test_ppc_panels_have_titles_in_words_axis_labels_and_integer_counts():
    rng = np.random.default_rng(1)
    replicated = {"cells_all_fail": rng.integers(5, 25, 400).astype(float),
                  "cells_all_success": rng.integers(0, 16, 400).astype(float),
                  "within_task_var": rng.normal(0.1, 0.01, 400)}
    observed = {"cells_all_fail": 14.0, "cells_all_success": 10.0, "within_task_var": 0.1}
    fig = plots.plot_ppc(observed, replicated, p_values={k: 0.5 for k in observed})
    fig.canvas.draw()
    for ax, name in zip(fig.axes, observed, strict=True):
        assert name not in ax.get_title()
        assert ax.get_title().startswith(plots.PPC_LABELS[name][0])
        assert ax.get_xlabel() and ax.get_ylabel() == "replications"
        assert all(float(t).is_integer() for t in ax.get_yticks())
        if name != "within_task_var":
            assert all(float(t).is_integer() for t in ax.get_xticks())


def test_scoring_histograms_count_in_whole_numbers():
    frame = pd.DataFrame({"level": "trial", "benchmark_outcome": ["success"] * 3 + ["failure"] * 4,
                          "overall": [0.1, 0.5, 0.9, 0.2, 0.2, 0.6, 1.0]})
    fig = scoring_plots.plot_tool_vs_outcome(frame)
    fig.canvas.draw()
    assert all(float(t).is_integer() for t in fig.axes[0].get_yticks())
    scores = pd.DataFrame({"agent": ["a"] * 5, "answer_score": [0.1, 0.2, 0.2, 0.9, 1.0], "answer_status": "ok"})
    fig = scoring_plots.plot_judge_scores(scores)
    fig.canvas.draw()
    assert all(float(t).is_integer() for t in fig.axes[0].get_yticks())
    assert isinstance(fig.axes[0].yaxis.get_major_locator(), MaxNLocator)


def test_tool_breakdown_na_label_is_horizontal_and_readable():
    breakdown = pd.DataFrame([{"agent": "gpt-4o", "level": "trial", "n_units": 172, "selection": 0.4,
                               "parameters": 0.6, "sequence": np.nan, "utilization": 0.7, "overall": 0.5}])
    fig = scoring_plots.plot_tool_breakdown(breakdown)
    na = [t for t in fig.axes[0].texts if t.get_text() == "n/a"]
    assert len(na) == 1
    assert na[0].get_rotation() == 0
    assert na[0].get_fontsize() >= plt.rcParams["font.size"] * 0.8


@pytest.mark.slow  # 1.3-1.6 s; the README's test command stays under 2 minutes
def test_ppc_of_many_agents_wraps_into_rows_with_a_label_per_agent():
    """METR: 3 cell statistics + one flip share per agent (11) = 14 panels, three to a row, each titled in words."""
    rng = np.random.default_rng(2)
    agents = [f"agent {i}" for i in range(11)]
    names = ["cells_all_fail", "cells_all_success", "within_task_var"] + [f"flip_share[{a}]" for a in agents]
    observed = {n: 0.5 for n in names}
    replicated = {n: rng.uniform(0.3, 0.7, 300) for n in names}
    fig = plots.plot_ppc(observed, replicated)
    shown = [ax for ax in fig.axes if ax.get_visible() and ax.axison]
    assert len(shown) == 14
    assert fig.get_size_inches()[0] <= 3 * 4.4 + 1e-9
    titles = [ax.get_title() for ax in shown]
    assert titles[3] == "Tasks with mixed outcomes: agent 0"
    assert not any("[" in t for t in titles)
    assert plots.ppc_label("unknown$stat") == (r"unknown\$stat", r"unknown\$stat")


def _suite_rows(values: dict[str, list[float]], ks: list[int]) -> pd.DataFrame:
    return pd.DataFrame([{"agent": a, "k": k, "n_tasks": 4, "n_tasks_dropped": 0, "pass_at_k": v,
                          "pass_at_k_ci_low": 0.2, "pass_at_k_ci_high": 0.99, "pass_hat_k": v, "pass_hat_k_ci_low": 0.2,
                          "pass_hat_k_ci_high": 0.99} for a, vs in values.items() for k, v in zip(ks, vs, strict=True)])


def test_one_k_gives_one_panel_an_interval_and_both_agents_visible():
    """One k (one trial per task): pass@1 = pass^1, so one panel (the issue-35 trial found two identical "curve"
    panels of a dot cloud), one row per agent, best first, each with its interval."""
    fig = plots.plot_pass_k_curves(_suite_rows({"A": [0.6], "B": [0.75]}, [1]))
    fig.canvas.draw()
    assert len(fig.axes) == 1
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["B", "A"]  # sorted, best at the top
    segments = [ln for ln in ax.get_lines() if len(ln.get_xdata()) == 2]
    assert sorted({tuple(np.round(ln.get_xdata(), 2)) for ln in segments}) == [(0.2, 0.99)]
    ys = sorted(float(ln.get_ydata()[0]) for ln in ax.get_lines() if ln.get_marker() == "o")
    assert ys == [0.0, 1.0]  # two rows: equal values could not hide one another
    assert "pass^1 = pass@1" in ax.get_xlabel()
    fig = plots.plot_pass_k_curves(_suite_rows({"A": [0.5, 0.3, 0.2]}, [1, 2, 4]))
    assert list(fig.axes[0].get_xticks()) == [1.0, 2.0, 4.0]


def test_heat_map_colorbar_keeps_the_map_height_and_legend_stays_off_the_cells():
    long = ["<script>alert(1)</script>", "**bold** _it_ `code`"]
    rows = [(a, f"t{i}", 5, c, 1 if (a == long[0] and i == 0) else 0) for a in long for i, c in enumerate([5, 3, 0, 1])]
    rows.append((long[0], "t9", 0, 0, 5))  # every trial missing: no recorded trial
    counts = pd.DataFrame(rows, columns=["agent", "task_id", "n", "c", "n_missing"])
    counts = counts[~((counts.agent == long[1]) & (counts.task_id == "t2"))]  # a task the second agent never ran
    fig = plots.plot_task_outcomes(counts)
    fig.canvas.draw()
    ax, cax = fig.axes[0], fig.axes[1]
    assert cax.get_position().height > 0.9 * ax.get_position().height
    legend = fig.legends[0]
    texts = [t.get_text() for t in legend.get_texts()]
    assert any("missing trials" in t for t in texts) and any("no recorded trial" in t for t in texts)
    renderer = fig.canvas.get_renderer()
    assert not legend.get_window_extent(renderer).overlaps(ax.get_window_extent(renderer))
    # the cells without a trial are grey, not a colour of the scale
    image = ax.get_images()[0]
    assert image.cmap.get_bad()[:3] == pytest.approx((0.8, 0.8, 0.8))


def test_posterior_curve_draws_the_observed_k_filled_and_hatches_only_beyond_it():
    # every task has 5 trials: k = 1..5 observed, 6..8 extrapolated
    rows = [{"quantity": q, "agent": "A", "k": k, "mean": 0.5 / k, "ci_low": 0.3 / k, "ci_high": 0.7 / k,
             "extrapolated": float(k > 5)} for q in ("pass_at_k", "pass_hat_k") for k in range(1, 9)]
    fig = plots.plot_posterior_pass_k_curves(pd.DataFrame(rows))
    for ax in fig.axes:
        open_x = {float(x) for ln in ax.get_lines() if ln.get_markerfacecolor() == "white" for x in ln.get_xdata()}
        assert open_x == {6.0, 7.0, 8.0}
        filled_x = {float(x) for ln in ax.get_lines()
                    if ln.get_marker() == "o" and ln.get_markerfacecolor() != "white" for x in ln.get_xdata()}
        assert filled_x == {1.0, 2.0, 3.0, 4.0, 5.0}
        hatched = [c for c in ax.collections if c.get_hatch()]
        assert len(hatched) == 1
        xs = np.concatenate([p.vertices[:, 0] for p in hatched[0].get_paths()])
        assert xs.min() == pytest.approx(5.5) and xs.max() == pytest.approx(8.0)


def test_forest_marks_extrapolated_k():
    rows = [{"agent": "A", "k": k, "mean": 0.5, "ci_low": 0.3, "ci_high": 0.7, "extrapolated": float(k > 5)}
            for k in (1, 5, 8)]
    fig = plots.plot_forest(pd.DataFrame(rows))
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels == ["A  k=1", "A  k=5", "A  k=8  (extrapolated)"]
    open_y = [float(ln.get_ydata()[0]) for ln in ax.get_lines() if ln.get_markerfacecolor() == "white"]
    assert open_y == [ax.get_yticks()[2]] and "extrapolation" in ax.get_title()  # the k = 8 row only
    plain = plots.plot_forest(pd.DataFrame(rows).drop(columns="extrapolated"))
    assert not plain.axes[0].get_title() and "(extrapolated)" not in str(
        [t.get_text() for t in plain.axes[0].get_yticklabels()])


_LONG_AGENTS = ["anthropic/claude-3-5-sonnet-20241022-long-config", "openai/gpt-4o-2024-08-06-temperature-0.7",
                "meta-llama/Llama-3.1-70B-Instruct-Turbo"]


def test_contrast_matrix_keeps_long_agent_names_and_cell_values_readable():
    """Names of 40-48 characters: the matrix keeps cells wide enough for "0.98", no two labels or values overlap,
    every name is shown whole and the colour bar runs the matrix's height (it was a 50-pixel strip and a stub)."""
    vals = [[np.nan, 0.98, 1.0], [0.02, np.nan, 0.7], [0.0, 0.3, np.nan]]
    fig = plots.plot_contrast_matrix(pd.DataFrame(vals, index=_LONG_AGENTS, columns=_LONG_AGENTS), k=3)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    ax, cax = fig.axes
    map_box = ax.get_window_extent(renderer)
    assert map_box.width >= 3 * 0.7 * fig.dpi  # at least 0.7 inch per column
    assert cax.get_window_extent(renderer).height > 0.9 * map_box.height
    cells = [t.get_window_extent(renderer) for t in ax.texts]
    assert len(cells) == 6
    assert not any(a.overlaps(b) for a, b in itertools.combinations(cells, 2))
    for ticks in (ax.get_xticklabels(), ax.get_yticklabels()):
        boxes = [t.get_window_extent(renderer) for t in ticks]
        assert not any(a.overlaps(b) for a, b in itertools.combinations(boxes, 2))
        assert all(t.get_rotation() == 0 for t in ticks)
    assert [t.get_text() for t in ax.get_yticklabels()] == _LONG_AGENTS
    assert [t.get_text().replace("\n", "") for t in ax.get_xticklabels()] == _LONG_AGENTS
    assert max(len(line) for t in ax.get_xticklabels() for line in t.get_text().split("\n")) <= 16
    title = ax.title.get_window_extent(renderer)
    assert title.x0 >= 0 and title.x1 <= fig.bbox.width
    assert ax.get_title() == "P(pass^3[row] > pass^3[column])"


def test_ppc_titles_with_long_agent_names_stay_within_their_panels():
    """The flip-share titles of three 40-48-character agent names ran into each other; wrapped, each stays within
    its panel's third of the figure and still holds the whole name."""
    rng = np.random.default_rng(3)
    names = [f"flip_share[{a}]" for a in _LONG_AGENTS]
    fig = plots.plot_ppc({n: 0.5 for n in names}, {n: rng.uniform(0.3, 0.7, 200) for n in names},
                         p_values={n: 0.4 for n in names})
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = [ax.title.get_window_extent(renderer) for ax in fig.axes]
    assert not any(a.overlaps(b) for a, b in itertools.combinations(boxes, 2))
    third = fig.bbox.width / 3
    for i, (box, ax, agent) in enumerate(zip(boxes, fig.axes, _LONG_AGENTS, strict=True)):
        assert i * third - 1 <= box.x0 and box.x1 <= (i + 1) * third + 1
        lines = ax.get_title().split("\n")
        assert lines[0] == "Tasks with mixed outcomes:" and lines[1] == agent
        assert lines[-1] == "posterior predictive p = 0.40"


@pytest.mark.parametrize("ci_prob", [0.8, 0.975])
def test_interval_labels_follow_the_tables_own_ci_prob(ci_prob):
    """Every figure names its intervals' probability from the table it draws, never a fixed 95%."""
    pct = f"{100 * ci_prob:g}%"
    rows = [{"quantity": q, "agent": "A", "k": k, "mean": 0.5 / k, "ci_low": 0.3 / k, "ci_high": 0.7 / k,
             "extrapolated": 0.0, "ci_kind": "hdi", "ci_prob": ci_prob}
            for q in ("pass_at_k", "pass_hat_k") for k in (1, 2)]
    curves = plots.plot_posterior_pass_k_curves(pd.DataFrame(rows))
    assert curves.axes[0].get_ylabel() == f"posterior mean, {pct} credible band"
    forest = plots.plot_forest(pd.DataFrame(rows[2:]))
    assert forest.axes[0].get_xlabel() == f"pass^k: posterior mean and {pct} credible interval (hdi)"
    tasks = _task_effects(5).assign(ci_kind="eti", ci_prob=ci_prob)
    assert f"posterior mean and {pct} credible interval" in plots.plot_task_difficulty(tasks).axes[0].get_title()
    metrics = pd.DataFrame([{"agent": "A", "metric": "m", "mean": 0.5, "ci_low": 0.4, "ci_high": 0.6,
                             "ci_prob": ci_prob}])
    assert f"and {pct} credible interval" in plots.plot_metric_summary(metrics)._suptitle.get_text()
    for fig in (curves, forest):
        assert "95%" not in " ".join(t.get_text() for ax in fig.axes for t in (ax.xaxis.label, ax.yaxis.label))


def test_interval_labels_without_ci_prob_are_the_default_and_mixed_ones_say_so():
    rows = pd.DataFrame([{"agent": "A", "k": 1, "mean": 0.5, "ci_low": 0.3, "ci_high": 0.7}])
    assert "95% credible interval" in plots.plot_forest(rows).axes[0].get_xlabel()
    mixed = pd.concat([rows.assign(ci_prob=0.9), rows.assign(k=2, ci_prob=0.8)], ignore_index=True)
    assert "per-row credible interval" in plots.plot_forest(mixed).axes[0].get_xlabel()


def test_ppc_bins_sit_on_the_values_a_discrete_statistic_takes():
    """A share of 40 tasks takes multiples of 1/40: one bar per value, centred on it (the fresh-user trial found
    30 automatic bins that split and skip such values); whole counts likewise; a continuous statistic keeps 30."""
    from agentstats.report.plots import lattice_bins

    rng = np.random.default_rng(3)
    share = rng.binomial(40, 0.3, size=500) / 40
    edges = lattice_bins(share)
    centres = (edges[:-1] + edges[1:]) / 2
    assert np.allclose(np.diff(edges), 1 / 40)
    assert np.allclose(centres * 40, np.round(centres * 40))  # every centre is a multiple of 1/40
    assert set(np.round(share * 40).astype(int)) <= set(np.round(centres * 40).astype(int))
    counts = rng.poisson(20, size=500).astype(float)
    edges = lattice_bins(counts)
    assert np.allclose(edges, np.arange(counts.min(), counts.max() + 2) - 0.5)
    assert lattice_bins(rng.normal(size=500)) == 30
    assert np.allclose(lattice_bins(np.array([2.0, 2.0])), [1.5, 2.5])

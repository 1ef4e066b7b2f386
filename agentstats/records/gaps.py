"""Gaps in the agent x task x trial grid: trials neither recorded nor marked missing.

:func:`grid_gaps` finds them from coded trials (:func:`agentstats.records.counts.counts_from_codes` attaches them to
every counts table built from trials, as ``attrs["gaps"]``); :class:`GridGaps` says where they are. Absent trials are
never counted: they are neither failures nor missing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from agentstats._util.text import plural

__all__ = ["GridGaps", "gaps_from_cells", "grid_gaps"]

#: Gap cells whose absent trial numbers are spelled out in :attr:`GridGaps.frame` (the rest have counts only).
_GAPS_SPELLED = 10_000
#: Grids of up to this many (agent, task) cells list every gap cell; larger ones list the cells with trials.
_DENSE_CELLS = 20_000_000


@dataclass(frozen=True, eq=False)
class GridGaps:
    """Trials absent from the agent x task x trial grid: neither recorded nor marked missing.

    The grid is every agent x every task in the data x trial numbers ``0 .. n_expected - 1``, where
    ``n_expected`` is the largest trial number in the data plus one. An absent trial is not counted at all
    (it is neither a failure nor in ``n_missing``), so the counts say nothing about it: these gaps say where
    the data set is incomplete (a crashed run, a task an agent never attempted, or a deliberately unbalanced
    design such as METR's).

    Attributes
    ----------
    n_expected : int
        Trials per (agent, task) cell in the grid.
    frame : pandas.DataFrame
        One row per cell with absent trials, sorted by agent then task_id: ``agent, task_id, n_recorded``
        (trials present, any outcome), ``n_absent`` and ``absent_trials`` (e.g. ``"2, 5..7"``; spelled out
        for the first 10,000 such cells, ``None`` beyond).
    n_cells_unlisted : int
        Cells with no trial at all that are counted but not listed in ``frame``: only when agents x tasks
        exceeds 20 million cells (a sparse design), to keep memory proportional to the trials.
    """

    n_expected: int
    frame: pd.DataFrame
    n_cells_unlisted: int = 0

    @property
    def n_absent(self) -> int:
        """Total number of absent (agent, task, trial) entries."""
        listed = int(self.frame["n_absent"].sum()) if len(self.frame) else 0
        return listed + self.n_cells_unlisted * self.n_expected

    @property
    def n_cells(self) -> int:
        """Number of (agent, task) cells with at least one absent trial."""
        return len(self.frame) + self.n_cells_unlisted

    def describe(self, limit: int = 3) -> str:
        """One sentence: how many trials are absent, in how many cells, with the first few named."""
        if not self.n_cells:
            return "no trials absent from the agent x task x trial grid"
        first = []
        for r in self.frame.head(limit).itertuples(index=False):
            trials = r.absent_trials if r.absent_trials is not None else f"{r.n_absent} trials"
            first.append(f"{r.agent} / {r.task_id}: trial {trials}")
        more = ", ..." if self.n_cells > limit else ""
        return (
            f"{plural(self.n_absent, 'trial')} absent from the agent x task x trial grid (trials "
            f"0..{self.n_expected - 1} of every agent on every task) in {plural(self.n_cells, 'cell')}: "
            f"{'; '.join(first)}{more}; absent trials are not counted"
        )

    def __repr__(self) -> str:
        return f"GridGaps(n_expected={self.n_expected}, n_cells={self.n_cells}, n_absent={self.n_absent})"


def _ranges(values: Sequence[int]) -> str:
    """``[2, 5, 6, 7]`` -> ``"2, 5..7"``."""
    parts: list[str] = []
    start = prev = None
    for v in values:
        if start is None:
            start = prev = v
        elif v == prev + 1:  # type: ignore[operator]
            prev = v
        else:
            parts.append(str(start) if start == prev else f"{start}..{prev}")
            start = prev = v
    if start is not None:
        parts.append(str(start) if start == prev else f"{start}..{prev}")
    return ", ".join(parts)


def grid_gaps(
    agent_codes: np.ndarray, task_codes: np.ndarray, trials: np.ndarray, agents: Sequence[str], tasks: Sequence[str]
) -> GridGaps:
    """Find the trials absent from the agent x task x trial grid (see :class:`GridGaps`).

    Parameters
    ----------
    agent_codes, task_codes : numpy.ndarray of int, shape (m,)
        Index of each trial's agent in ``agents`` and task in ``tasks``.
    trials : numpy.ndarray of int, shape (m,)
        Trial numbers (>= 0), one per (agent, task, trial) key: keys must be unique.
    agents, tasks : sequence of str
        Names behind the codes.

    Returns
    -------
    GridGaps
        Cost O(m log m + cells with gaps); memory O(m).
    """
    n_a, n_t = len(agents), len(tasks)
    if len(trials) == 0:
        return GridGaps(0, _EMPTY.copy())
    k = int(np.max(trials)) + 1
    cell = agent_codes.astype(np.int64) * n_t + task_codes.astype(np.int64)
    if n_a * n_t <= _DENSE_CELLS:
        per_cell = np.bincount(cell, minlength=n_a * n_t)
        present = np.flatnonzero(per_cell)
        per_cell = per_cell[present]
    else:
        present, per_cell = np.unique(cell, return_counts=True)

    def trials_of(cells: np.ndarray) -> list[np.ndarray]:
        order = np.lexsort((trials, cell))
        cell_sorted, trial_sorted = cell[order], trials[order]
        starts = np.searchsorted(cell_sorted, cells, side="left")
        ends = np.searchsorted(cell_sorted, cells, side="right")
        return [trial_sorted[s:e] for s, e in zip(starts, ends, strict=True)]

    return gaps_from_cells(present, per_cell, k, agents, tasks, trials_of)


_EMPTY = pd.DataFrame(
    {"agent": pd.Series([], dtype=object), "task_id": pd.Series([], dtype=object),
     "n_recorded": pd.Series([], dtype=np.int64), "n_absent": pd.Series([], dtype=np.int64),
     "absent_trials": pd.Series([], dtype=object)}
)


def gaps_from_cells(
    cells: np.ndarray, n_recorded: np.ndarray, k: int, agents: Sequence[str], tasks: Sequence[str],
    trials_of: Callable[[np.ndarray], list[np.ndarray]],
) -> GridGaps:
    """Find the trials absent from the grid from per-cell counts (trials counted elsewhere, e.g. in SQL).

    Parameters
    ----------
    cells : numpy.ndarray of int, shape (p,)
        The cells holding at least one trial, each ``agent_code * len(tasks) + task_code``, unique.
    n_recorded : numpy.ndarray of int, shape (p,)
        Trials recorded in each of ``cells`` (any outcome), keys unique.
    k : int
        Trials per cell in the grid (the largest trial number plus one).
    agents, tasks : sequence of str
        Names behind the codes.
    trials_of : callable
        ``trials_of(cells) -> list of numpy.ndarray``: the sorted trial numbers recorded in each cell asked for (an
        empty array for a cell without trials); asked once, for at most 10,000 cells with gaps.

    Returns
    -------
    GridGaps
        As :func:`grid_gaps`; cost O(cells with trials + cells with gaps) besides ``trials_of``.
    """
    n_a, n_t = len(agents), len(tasks)
    cells = np.asarray(cells, dtype=np.int64)
    n_recorded = np.asarray(n_recorded, dtype=np.int64)
    unlisted = 0
    if n_a * n_t <= _DENSE_CELLS:
        recorded = np.zeros(n_a * n_t, dtype=np.int64)
        recorded[cells] = n_recorded
        gap_cells = np.flatnonzero(recorded < k)
        recorded_of_gaps = recorded[gap_cells]
    else:  # a sparse grid too large to list: cells with no trial at all are counted, not listed
        unlisted = n_a * n_t - len(cells)
        gap_cells = cells[n_recorded < k]
        recorded_of_gaps = n_recorded[n_recorded < k]
    if len(gap_cells) == 0 and not unlisted:
        return GridGaps(k, _EMPTY.copy())
    # absent trial numbers of the first cells with gaps, from each cell's sorted trial numbers
    spelled: list[str | None] = [
        _ranges(np.setdiff1d(np.arange(k), present, assume_unique=True).tolist())
        for present in trials_of(gap_cells[:_GAPS_SPELLED])
    ]
    spelled.extend([None] * (len(gap_cells) - len(spelled)))
    agents_arr = np.asarray(agents, dtype=object)
    tasks_arr = np.asarray(tasks, dtype=object)
    frame = pd.DataFrame(
        {
            "agent": agents_arr[gap_cells // n_t],
            "task_id": tasks_arr[gap_cells % n_t],
            "n_recorded": recorded_of_gaps.astype(np.int64),
            "n_absent": (k - recorded_of_gaps).astype(np.int64),
            "absent_trials": pd.Series(spelled, dtype=object),
        }
    )
    frame = frame.sort_values(["agent", "task_id"], kind="stable").reset_index(drop=True)
    return GridGaps(k, frame, unlisted)

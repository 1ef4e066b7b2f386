"""Counts as dense (agent, task) arrays: the data every model family is built on and read back from a fit.

Input: a counts table with columns ``agent, task_id, n, c`` (``n_missing`` optional and ignored), one row per
(agent, task) cell, ``n`` the non-missing trials and ``c`` the successes (:func:`agentstats.records.counts.to_counts`).
The likelihood of every model is on the counts, the sufficient statistics of exchangeable Bernoulli trials within
a cell, so cost grows with cells, not trials.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import xarray as xr

from agentstats.records.counts import validate_counts

__all__ = ["CountsData", "align_counts", "counts_dataset", "counts_from_dataset", "counts_hash", "prepare_counts"]


@dataclass(frozen=True)
class CountsData:
    """Validated counts as dense (agent, task) arrays.

    Attributes
    ----------
    agents, tasks : list of str
        Coordinates, in order of first appearance in the counts table.
    n, c : numpy.ndarray of int64, shape (agent, task)
        Trials and successes; 0 for cells absent from the table.
    present : numpy.ndarray of bool, shape (agent, task)
        Cell had a row in the table (possibly with n = 0).
    hash : str
        SHA-256 of the canonical counts (see :func:`counts_hash`).
    """

    agents: list[str]
    tasks: list[str]
    n: np.ndarray
    c: np.ndarray
    present: np.ndarray
    hash: str = field(default="")

    @property
    def shape(self) -> tuple[int, int]:
        """``(agents, tasks)``."""
        return (len(self.agents), len(self.tasks))

    @property
    def observed(self) -> np.ndarray:
        """Boolean (agent, task) mask of cells with n > 0 (the cells in the likelihood)."""
        return self.n > 0

    def obs_index(self) -> tuple[np.ndarray, np.ndarray]:
        """Agent and task integer indices of the observed cells (row-major order)."""
        return np.nonzero(self.observed)

    def n_min(self) -> np.ndarray:
        """Per agent, the smallest n over its observed cells (0 if it has none), shape (agent,)."""
        big = np.where(self.observed, self.n, np.iinfo(np.int64).max)
        out = big.min(axis=1)
        return np.where(self.observed.any(axis=1), out, 0)

    def n_max(self) -> np.ndarray:
        """Per agent, the largest n over its cells, shape (agent,)."""
        return self.n.max(axis=1)


def counts_hash(counts: pd.DataFrame) -> str:
    """SHA-256 hex digest of a counts table, independent of row order and extra columns.

    Parameters
    ----------
    counts : pandas.DataFrame
        Columns ``agent, task_id, n, c``.

    Returns
    -------
    str
    """
    df = counts[["agent", "task_id", "n", "c"]].copy()
    df["agent"] = df["agent"].astype(str)
    df["task_id"] = df["task_id"].astype(str)
    df = df.sort_values(["agent", "task_id"], kind="mergesort")
    text = df.to_csv(index=False, lineterminator="\n")
    return hashlib.sha256(text.encode()).hexdigest()


def prepare_counts(counts: pd.DataFrame | CountsData) -> CountsData:
    """Validate a counts table and turn it into dense (agent, task) arrays.

    Parameters
    ----------
    counts : pandas.DataFrame or CountsData
        One row per (agent, task) cell with columns ``agent``, ``task_id``, ``n`` (non-missing trials) and ``c``
        (successes); ``n_missing`` and other columns are ignored. Rows with ``n = 0`` are allowed. A
        :class:`CountsData` is returned as it is.

    Returns
    -------
    CountsData

    Raises
    ------
    TypeError
        If ``counts`` is not a DataFrame.
    ValueError
        If the table is empty or fails :func:`agentstats.records.counts.validate_counts` (a missing column, a count
        that is
        not a non-negative integer, ``c > n``, a cell twice); the message names the row, agent, task and field.
    """
    if isinstance(counts, CountsData):
        return counts
    counts = validate_counts(counts, "counts")
    if len(counts) == 0:
        raise ValueError("counts: the table has no rows")
    n = counts["n"].to_numpy(dtype=np.int64)
    c = counts["c"].to_numpy(dtype=np.int64)
    agent = counts["agent"].astype(str).to_numpy()
    task = counts["task_id"].astype(str).to_numpy()
    agents = [str(a) for a in pd.unique(agent)]
    tasks = [str(t) for t in pd.unique(task)]
    ai = pd.Index(agents).get_indexer(agent)
    ti = pd.Index(tasks).get_indexer(task)
    n_mat = np.zeros((len(agents), len(tasks)), dtype=np.int64)
    c_mat = np.zeros_like(n_mat)
    present = np.zeros(n_mat.shape, dtype=bool)
    n_mat[ai, ti] = n
    c_mat[ai, ti] = c
    present[ai, ti] = True
    return CountsData(agents, tasks, n_mat, c_mat, present, counts_hash(counts))


def counts_dataset(data: CountsData) -> xr.Dataset:
    """Build the ``constant_data`` group a fit stores.

    ``n_trials``, ``n_success``, ``cell_present`` (agent, task) and ``n_min``, ``n_max`` (agent).
    """
    return xr.Dataset(
        {
            "n_trials": (("agent", "task"), data.n),
            "n_success": (("agent", "task"), data.c),
            "cell_present": (("agent", "task"), data.present),
            "n_min": (("agent",), data.n_min()),
            "n_max": (("agent",), data.n_max()),
        },
        coords={"agent": data.agents, "task": data.tasks},
    )


def counts_from_dataset(cd: xr.Dataset, counts_hash: str = "") -> CountsData:
    """Read back the counts a fit was made on from its ``constant_data`` group (:func:`counts_dataset`).

    A fit made before ``cell_present`` existed counts the cells with ``n > 0`` as present.
    """
    agents = [str(a) for a in np.asarray(cd["agent"])]
    tasks = [str(t) for t in np.asarray(cd["task"])]
    present = cd["cell_present"].to_numpy().astype(bool) if "cell_present" in cd else cd["n_trials"].to_numpy() > 0
    return CountsData(
        agents,
        tasks,
        cd["n_trials"].to_numpy().astype(np.int64),
        cd["n_success"].to_numpy().astype(np.int64),
        present,
        counts_hash,
    )


def align_counts(data: CountsData, counts: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Trials ``n`` and successes ``c`` of ``counts`` as (agent, task) arrays in the agent and task order of ``data``.

    Parameters
    ----------
    data : CountsData
        The fitted counts (their coordinates set the order).
    counts : pandas.DataFrame
        Columns ``agent, task_id, n, c``; cells absent from it are 0.

    Returns
    -------
    n, c : numpy.ndarray of int, shape (agent, task)

    Raises
    ------
    ValueError
        Invalid counts, or counts that name agents or tasks not in ``data``.
    """
    given = prepare_counts(counts)
    extra_a = set(given.agents) - set(data.agents)
    extra_t = set(given.tasks) - set(data.tasks)
    if extra_a or extra_t:
        raise ValueError(
            f"counts do not match the fit: agents {sorted(extra_a)} / tasks {sorted(extra_t)[:5]} not in it"
        )
    n = np.zeros(data.shape, dtype=np.int64)
    c = np.zeros_like(n)
    ai = pd.Index(data.agents).get_indexer(given.agents)
    ti = pd.Index(data.tasks).get_indexer(given.tasks)
    n[np.ix_(ai, ti)] = given.n
    c[np.ix_(ai, ti)] = given.c
    return n, c

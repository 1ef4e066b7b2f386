"""One fit per slice: ``fit_many(counts, by=COLUMN, executor=..., **fit options)`` -> one table.

Slices are the values of a column of the counts (an agent group, a task category, a benchmark version, a simulated
dataset). Each slice is fitted by :func:`agentstats.models.fitting.fit` and summarised by
:func:`agentstats.posterior.pass_k.posterior_pass_k` / :func:`~agentstats.posterior.pass_k.summarize_pass_k` and
:meth:`agentstats.models.result.Fit.diagnostics`, in a worker of the executor
(:func:`agentstats.parallel.resolve_executor`). A worker sends back the slice's rows only, never the fit: a fit holds
the posterior and the PyMC model (its compiled functions), which would cost a pickle through the executor for
nothing; every worker imports PyMC once and compiles its own model, as a fit in this process does.

Seeds: slice ``v`` is fitted with ``derive_seed(random_seed, str(v))`` (:func:`agentstats.intervals.derive_seed`),
recorded in the row, so a slice's numbers depend on the seed and its data only (not on the executor, the worker, the
order the fits finish in, or the other slices), and ``fit(slice_counts, random_seed=row.random_seed)`` gives them
again.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from concurrent.futures.process import BrokenProcessPool
from typing import Any

import numpy as np
import pandas as pd

from agentstats._util.progress import step
from agentstats.intervals import (
    CI_PROB,
    DEFAULT_SEED,
    CiKind,
    check_ci,
    check_k_reach,
    check_ks,
    default_ks,
    derive_seed,
    resolve_random_seed,
)
from agentstats.models.families.registry import DEFAULT_MODEL
from agentstats.parallel.executor import ExecutorLike, map_ordered, resolve_executor

__all__ = ["FIT_MANY_COLUMNS", "fit_many"]

#: Columns of :func:`fit_many`'s table after the slice column, in order.
FIT_MANY_COLUMNS = (
    "agent", "k", "n_cells", "n_tasks", "model", "method", "population",
    "pass_at_k", "pass_at_k_ci_low", "pass_at_k_ci_high", "pass_hat_k", "pass_hat_k_ci_low", "pass_hat_k_ci_high",
    "ci_kind", "ci_prob", "max_r_hat", "min_ess_bulk", "divergences", "converged", "random_seed", "seconds", "error",
)
_COUNT_COLUMNS = ("agent", "task_id", "n", "c")


def fit_many(
    counts: pd.DataFrame,
    by: str,
    *,
    k: int | Sequence[int] | None = None,
    model: str = DEFAULT_MODEL,
    population: str = "observed",
    ci_prob: float = CI_PROB,
    ci_kind: CiKind = "eti",
    random_seed: int | np.random.Generator | None = DEFAULT_SEED,
    executor: ExecutorLike = None,
    workers: int | None = None,
    address: str | None = None,
    **fit_options: Any,
) -> pd.DataFrame:
    """Fit one model per value of the column ``by``; return one table of pass@k / pass^k and diagnostics.

    Parameters
    ----------
    counts : pandas.DataFrame
        Columns ``agent, task_id, n, c`` (one row per cell, :func:`agentstats.models.data.prepare_counts`) and
        ``by``.
    by : str
        The column whose values are the slices; each slice's cells are fitted on their own.
    k : int or sequence of int, optional
        k of pass@k / pass^k; default :func:`agentstats.intervals.default_ks` of all of ``counts`` (one k list for
        every slice, so their rows line up). Up to :data:`agentstats.intervals.FIT_K_FACTOR` times the largest n.
    model : str
        The family of every fit (:func:`agentstats.models.fitting.fit`).
    population : {"observed", "new"}
        Task population of pass@k / pass^k (:func:`agentstats.posterior.pass_k.posterior_pass_k`).
    ci_prob, ci_kind
        Credible interval probability and shape (:func:`agentstats.posterior.pass_k.summarize_pass_k`).
    random_seed : int, numpy.random.Generator or None
        Base seed; slice ``v`` is fitted with ``derive_seed(seed, str(v))`` (its ``random_seed`` column).
    executor : None, "local", "process", "ray" or concurrent.futures.Executor
        Where the fits run, one task per slice (:func:`agentstats.parallel.resolve_executor`); default in this
        process, one after another.
    workers, address : optional
        Processes of ``executor="process"`` / CPUs of a local Ray cluster; the Ray cluster's address.
    **fit_options
        Keyword arguments of :func:`agentstats.models.fitting.fit` (``dispersion``, ``draws``, ``tune``,
        ``chains``, ``sampler``, ``priors``, ...). With an executor other than in-process, ``cores`` defaults to 1:
        the workers, not the chains, use the CPUs.

    Returns
    -------
    pandas.DataFrame
        One row per slice, agent and k (one row per slice when each slice is one agent and one k is asked), slices
        in sorted order, then agents and k as the fit orders them. Columns: ``by`` (the slice's value), then
        :data:`FIT_MANY_COLUMNS`: ``agent``, ``k``, ``n_cells`` (cells of the slice with a trial), ``n_tasks`` (the
        agent's tasks with a trial), ``model``, ``method`` (the inference method that made the draws: ``nuts``,
        ``laplace`` from its size threshold, ``exact``; R-hat and ESS are NaN where they do not apply),
        ``population``, ``pass_at_k`` and ``pass_hat_k`` (posterior means of
        the suite values, means over tasks of 1 - (1 - p)^k and p^k; Chen et al. 2021, arXiv 2107.03374; Yao et al.
        2024, arXiv 2406.12045) each with ``_ci_low`` / ``_ci_high`` credible interval bounds, ``ci_kind``,
        ``ci_prob``, the slice's diagnostics ``max_r_hat``, ``min_ess_bulk``, ``divergences``, ``converged`` (R-hat
        <= 1.01, bulk and tail ESS >= 400, no divergence: :func:`agentstats.models.diagnostics.diagnose`),
        ``random_seed`` (the slice's seed), ``seconds`` (fit and summary, in the worker) and ``error``: None, or for
        a slice whose fit failed (bad counts, a sampler error, a lost worker) the exception's type and message, on
        one row with the other values missing; the other slices' rows are kept. ``attrs``: ``by``, ``random_seed``,
        ``ks``.

    Raises
    ------
    ValueError
        ``by`` not a column of ``counts`` (or one of ``agent, task_id, n, c``), a slice value missing, bad ``k``,
        ``ci_prob``, ``ci_kind``, seed or executor options.
    RuntimeError
        Every worker of a process pool died before any fit ended (typically a script without the
        ``if __name__ == "__main__":`` guard that the ``spawn`` start method needs); the message says so.
    """
    func = "fit_many"
    if not isinstance(counts, pd.DataFrame):
        raise TypeError(f"{func}: counts must be a pandas DataFrame, got {type(counts).__name__}")
    missing = [c for c in (*_COUNT_COLUMNS, by) if c not in counts.columns]
    if missing:
        raise ValueError(f"{func}: counts lack the column(s) {missing}; it has {list(counts.columns)}")
    if by in _COUNT_COLUMNS:
        raise ValueError(f"{func}: by={by!r} is a column of the counts themselves (every slice's table has a row per "
                         "agent already); give a column that names groups of cells, e.g. a task category")
    blank = counts[by].isna()
    if blank.any():
        first = counts.index[blank.to_numpy()][0]
        raise ValueError(f"{func}: column {by!r} has no value in {int(blank.sum())} row(s) (first: index {first!r}); "
                         "fill or drop them")
    ci_prob, ci_kind = check_ci(ci_prob, ci_kind, func)
    ks = check_ks(k, func) or default_ks(counts)
    check_k_reach(ks, counts, extrapolate=True, source="counts")
    seed = resolve_random_seed(random_seed, func)
    values = sorted(counts[by].unique(), key=_sort_key)
    with resolve_executor(executor, workers=workers, address=address) as ex:
        options = dict(fit_options)
        if ex is not None:
            options.setdefault("cores", 1)
        tasks = [
            _SliceTask(value, counts.loc[counts[by] == value, list(_COUNT_COLUMNS)].reset_index(drop=True), model,
                       options, derive_seed(seed, str(value)), ks, population, ci_prob, ci_kind)
            for value in values
        ]
        finished = [0]
        with step(f"{func}: {len(tasks)} fits of {model} by {by}", lambda: f"{finished[0]} of {len(tasks)} done"):
            results = map_ordered(_fit_slice, tasks, ex, return_exceptions=True,
                                  on_done=lambda n: finished.__setitem__(0, n))
    lost = [r for r in results if isinstance(r, BrokenProcessPool)]
    if lost and len(lost) == len(results):  # nothing was computed: say the likely cause, not a table of errors
        raise RuntimeError(f"{func}: every worker of the process pool died before a fit ended ({lost[0]}). With "
                           "executor='process' the workers start by importing your script (the 'spawn' start "
                           "method): a script must call fit_many under `if __name__ == \"__main__\":`; otherwise "
                           "see the workers' messages above (docs/scaling.md)") from lost[0]
    rows: list[dict[str, Any]] = []
    for task, result in zip(tasks, results, strict=True):
        if isinstance(result, BaseException):  # the worker was lost, or the task could not be sent or run
            result = [_error_row(task, result, float("nan"))]
        rows += [{by: task.value, **row} for row in result]
    table = pd.DataFrame(rows, columns=[by, *FIT_MANY_COLUMNS])
    table = table.astype({"k": "Int64", "n_cells": "int64", "n_tasks": "Int64", "divergences": "Int64",
                          "converged": "boolean", "random_seed": "int64"})
    table["error"] = pd.Series([e if isinstance(e, str) else None for e in table["error"]], dtype=object)
    table.attrs.update(by=by, random_seed=seed, ks=list(ks))
    return table


def _sort_key(value: Any) -> tuple[int, Any]:
    return (0, value) if isinstance(value, (int, float, np.integer, np.floating)) else (1, str(value))


class _SliceTask:
    """What a worker needs to fit one slice (plain data: pickled to the worker)."""

    def __init__(self, value: Any, counts: pd.DataFrame, model: str, options: dict[str, Any], seed: int,
                 ks: list[int], population: str, ci_prob: float, ci_kind: CiKind) -> None:
        self.value, self.counts, self.model, self.options, self.seed = value, counts, model, options, seed
        self.ks, self.population, self.ci_prob, self.ci_kind = ks, population, ci_prob, ci_kind


def _error_row(task: _SliceTask, exc: BaseException, seconds: float) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(FIT_MANY_COLUMNS)
    row.update(n_cells=int((task.counts["n"] > 0).sum()), model=task.model, population=task.population,
               ci_kind=task.ci_kind, ci_prob=task.ci_prob, random_seed=task.seed, seconds=seconds,
               error=f"{type(exc).__name__}: {exc}")
    return row


def _fit_slice(task: _SliceTask) -> list[dict[str, Any]]:
    """Fit one slice and summarise it (runs in a worker); a failure becomes one row with its error."""
    from agentstats.models.diagnostics import ConvergenceWarning
    from agentstats.models.fitting import fit
    from agentstats.posterior.pass_k import posterior_pass_k, summarize_pass_k

    start = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)  # the diagnostics are columns of the row
            result = fit(task.counts, task.model, random_seed=task.seed, **task.options)
        summary = summarize_pass_k(posterior_pass_k(result, task.ks, population=task.population),  # type: ignore[arg-type]
                                   ci_prob=task.ci_prob, ci_kind=task.ci_kind)
        diag = result.diagnostics()
    except Exception as exc:
        return [_error_row(task, exc, time.perf_counter() - start)]
    seconds = time.perf_counter() - start
    table = diag.table
    tried = task.counts.loc[task.counts["n"] > 0]
    per_agent = tried.groupby("agent")["task_id"].nunique()
    wide = summary.pivot_table(index=["agent", "k"], columns="quantity", values=["mean", "ci_low", "ci_high"],
                               sort=False, dropna=False)
    rows = []
    for (agent, kk), r in wide.iterrows():
        rows.append({
            "agent": agent, "k": int(kk), "n_cells": len(tried), "n_tasks": int(per_agent.get(agent, 0)),
            "model": task.model, "method": result.sampler.method, "population": task.population,
            **{f"{q}{suffix}": float(r[(col, q)]) for q in ("pass_at_k", "pass_hat_k")
               for col, suffix in (("mean", ""), ("ci_low", "_ci_low"), ("ci_high", "_ci_high"))},
            "ci_kind": task.ci_kind, "ci_prob": task.ci_prob,
            "max_r_hat": float(table["r_hat"].max()) if len(table) else float("nan"),
            "min_ess_bulk": float(table["ess_bulk"].min()) if len(table) else float("nan"),
            "divergences": int(diag.divergences), "converged": bool(diag.ok), "random_seed": task.seed,
            "seconds": seconds, "error": None,
        })
    return rows

"""The run store as an input format: ``format="duckdb"`` (alias ``"store"``) of :mod:`agentstats.io`'s loaders.

:mod:`agentstats.io` never imports the store: this module registers the format with the format registry
(:mod:`agentstats.io.registry`), which finds it through the entry point ``duckdb = "agentstats.store.format:register"``
of the group ``agentstats.formats`` (``pyproject.toml``) on its first lookup. What the format does:

* trials: one run of the store, read back as :class:`~agentstats.records.trial.Trial` records in the order they were
  written (``load_trials(path, run="name")``);
* counts: the same run counted in SQL (:meth:`agentstats.store.RunStore.counts`), without a Python object per trial;
* the run to read: ``run=``, which may be left out when the store holds exactly one run (:func:`store_run`);
* detection: a DuckDB file is recognised by its magic bytes without opening it when this process holds it
  (:func:`agentstats.files.sniff.is_duckdb_file`, the held-file note there).

DuckDB itself is imported only when a store is opened: without it, reading a store says how to install it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

import pandas as pd

from agentstats._util.options import option_name
from agentstats.files.sniff import is_duckdb_file
from agentstats.io.loaders import select_counts
from agentstats.io.registry import register_format
from agentstats.records.problems import OnError, ProblemLog
from agentstats.records.trial import Trial
from agentstats.store.connection import StoreError, duckdb_module
from agentstats.store.dataset import dataset_counts, dataset_trials, is_parquet_dataset
from agentstats.store.db import RunStore

__all__ = ["read_store_counts", "read_store_trials", "register", "store_run"]


def store_run(store: RunStore, name: str, options: dict[str, Any]) -> str:
    """Pick the run to read: ``options["run"]``, or the store's only run.

    Raises
    ------
    TypeError
        For an option other than ``run``.
    ValueError
        No ``run`` given and the store does not hold exactly one run (its runs are listed).
    """
    unknown = sorted(set(options) - {"run"})
    if unknown:
        raise TypeError(f"load_trials() got unexpected option(s) {unknown} for a run store ({name})")
    run = options.get("run")
    if run is None:
        names = list(store.runs()["name"])
        if len(names) != 1:
            listed = ", ".join(map(str, names[:20])) if names else "none"
            raise ValueError(
                f"{name} is a run store with {len(names)} runs ({listed}): "
                f"pick one with {option_name('run')}"
            )
        run = names[0]
    return str(run)


@contextlib.contextmanager
def _damaged(path: Any) -> Iterator[None]:
    """Say a store file DuckDB cannot read (cut short, damaged) as a :class:`StoreError` naming it (exit 2)."""
    duckdb = duckdb_module()
    try:
        yield
    except (duckdb.IOException, duckdb.SerializationException, duckdb.InternalException) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise StoreError(f"{path}: the run store cannot be read (a file cut short or damaged?): {first}") from None


def read_store_trials(path: str | os.PathLike, log: ProblemLog, **options: Any) -> list[Trial]:
    """Reader of the ``duckdb`` format: one run of a run store as trials (``run=``; see :func:`store_run`)."""
    with _damaged(path), RunStore.reader(path) as store:
        return list(store.iter_trials(store_run(store, log.source, options)))


def read_store_counts(path: Any, name: str, on_error: OnError, options: dict[str, Any]) -> pd.DataFrame | None:
    """Count one run of a run store in SQL; ``None`` (read the trials) for options other than ``run, agents``.

    Returns
    -------
    pandas.DataFrame or None
        As :meth:`agentstats.store.RunStore.counts`, with the ``agents=`` selection applied.
    """
    if not isinstance(path, (str, os.PathLike)) or set(options) - {"agents", "run"}:
        return None
    with _damaged(path), RunStore.reader(path) as store:
        counts = store.counts(store_run(store, name, {k: v for k, v in options.items() if k != "agents"}))
    return select_counts(counts, options.get("agents"), name)


def register() -> None:
    """Register the ``duckdb`` and ``parquet_dataset`` formats (the entry point of the group ``agentstats.formats``).

    ``parquet_dataset`` (aliases ``dataset``, ``hive``): a hive-partitioned Parquet dataset of trials, the store's
    ``runs export --partition-by`` (:mod:`agentstats.store.dataset`), counted in DuckDB.
    """
    register_format("duckdb", read_store_trials, aliases=("store",), sniff=is_duckdb_file, counts=read_store_counts)
    register_format("parquet_dataset", dataset_trials, aliases=("dataset", "hive"), sniff=is_parquet_dataset,
                    counts=dataset_counts)

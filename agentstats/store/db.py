"""The run store: one embedded DuckDB file (default ``agentstats.duckdb``) holding runs, their trials and captures.

:class:`RunStore` opens (or creates) the file, brings its schema up to date (:mod:`agentstats.store.schema`) and
offers the operations the rest of agentstats needs: import trials in one transaction
(:meth:`RunStore.import_trials`), read them back as the pipeline's objects (:meth:`RunStore.load_trials`,
:meth:`RunStore.counts`, the latter straight from SQL), list, show, export and delete runs. Every table can also be
read with plain SQL (``duckdb agentstats.duckdb``); ``docs/store.md`` documents them.

Reliability: each import or flush is one transaction, so a crash or ``kill -9`` loses at most what was being
written; a run left ``running`` by a process that died is marked ``interrupted`` the next time the file is opened
for writing, with every record it had flushed kept.
"""

from __future__ import annotations

from agentstats.store.dataset import DatasetExport
from agentstats.store.decisions import DecisionLog

__all__ = ["RunStore"]


class RunStore(DecisionLog, DatasetExport):
    """One store file, opened for reading and writing (or read only).

    Its parts, one job each: the connection, schema and migrations (:mod:`agentstats.store.connection`), runs
    (:mod:`agentstats.store.runs`), writing trials (:mod:`agentstats.store.writing`), reading trials and counts
    (:mod:`agentstats.store.reading`), gate decision records (:mod:`agentstats.store.decisions`), the partitioned
    Parquet export (:mod:`agentstats.store.dataset`).

    Parameters
    ----------
    path : str or PathLike
        The DuckDB file; created (with its folder) when absent unless ``read_only``.
    read_only : bool
        Open without writing (several readers may share a file; a writer holds it alone).
    memory_limit : str or None
        DuckDB's memory limit (default :data:`agentstats.store.connection.MEMORY_LIMIT`); beyond it DuckDB spills to
        temporary files.

    Raises
    ------
    StoreError
        When the file is held by another process, is not a DuckDB file, or has a schema newer than this code.
    ImportError
        When duckdb is not installed.

    Notes
    -----
    DuckDB lets one process write a file at a time; a second writer gets a
    :class:`~agentstats.store.connection.StoreError` naming the file. Use it as a context manager
    (``with RunStore(path) as store:``) or call :meth:`close`.
    """

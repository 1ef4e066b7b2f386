"""A run store's connection: the DuckDB file, its schema version and migrations, transactions, the file's lock.

:class:`StoreConnection` opens (or creates) the file, brings its schema up to date (:mod:`agentstats.store.schema`)
and marks runs left ``running`` by a process that died as ``interrupted``; :class:`agentstats.store.RunStore` builds
on it. DuckDB is imported only here, when a store is opened (:func:`duckdb_module` says how to install it).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Self

from agentstats.files.sniff import held_store, hold_store, is_duckdb_file, release_store
from agentstats.store.schema import MIGRATIONS, SCHEMA_VERSION

__all__ = [
    "DEFAULT_STORE",
    "MEMORY_LIMIT",
    "StoreConnection",
    "StoreConnectionError",
    "StoreError",
    "duckdb_module",
    "is_store_file",
    "quiet",
]

#: The store file used when none is named.
DEFAULT_STORE = "agentstats.duckdb"
#: DuckDB's memory limit for a store connection (beyond it DuckDB spills to temporary files), so a large import
#: stays bounded; ``None`` keeps DuckDB's default (80% of the machine's memory).
MEMORY_LIMIT = "512MB"


class StoreError(ValueError):
    """A problem with the store file or a run in it (unknown run, name taken, file newer than this code)."""


class StoreConnectionError(StoreError):
    """The store is already open in this process with other settings (for writing, when read-only was asked)."""


def quiet(con: Any) -> Any:
    """Turn DuckDB's progress bar off on a connection and return it.

    DuckDB draws it on standard output for a query over about two seconds (a large run's counts), where it would land
    inside a command's output (``--json`` included). Only its printing is turned off (``enable_progress_bar_print``):
    changing ``enable_progress_bar`` itself inside a Jupyter kernel makes DuckDB look for ipywidgets and refuse without
    it, which stopped every notebook that reads a store. A setting this cosmetic never stops a read: where DuckDB
    refuses it, the connection is used as it is.
    """
    try:
        con.execute("SET enable_progress_bar_print = false")
    except Exception:  # cosmetic: a refused display setting must not cost the user the data
        pass
    return con


def duckdb_module() -> Any:
    """Import ``duckdb`` or say how to install it.

    Raises
    ------
    ImportError
        When duckdb is missing, with the ``pip install 'agentstats[store]'`` line.
    """
    try:
        import duckdb
    except ImportError as exc:
        raise ImportError(
            "the run store needs DuckDB: pip install 'agentstats[store]' (or pip install duckdb)"
        ) from exc
    return duckdb


def is_store_file(path: Any) -> bool:
    """Tell whether ``path`` is a DuckDB file (by its magic bytes ``DUCK`` at offset 8, not by its name)."""
    if not isinstance(path, (str, os.PathLike)) or not os.path.isfile(path):
        return False
    return is_duckdb_file(path)  # never opens a store this process holds (agentstats.files.sniff)


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _json(v: Any) -> str | None:
    if v is None:
        return None
    return json.dumps(v, default=str, ensure_ascii=False)


class StoreConnection:
    """One store file's connection, opened for reading and writing (or read only).

    Parameters
    ----------
    path : str or PathLike
        The DuckDB file; created (with its folder) when absent unless ``read_only``.
    read_only : bool
        Open without writing (several readers may share a file; a writer holds it alone).
    memory_limit : str or None
        DuckDB's memory limit (default :data:`MEMORY_LIMIT`); beyond it DuckDB spills to temporary files.

    Raises
    ------
    StoreError
        When the file is held by another process, is not a DuckDB file, or has a schema newer than this code.
    ImportError
        When duckdb is not installed.

    Notes
    -----
    DuckDB lets one process write a file at a time; a second writer gets a :class:`StoreError` naming the file.
    Use it as a context manager (``with RunStore(path) as store:``) or call :meth:`close`.
    """

    def __init__(self, path: str | os.PathLike = DEFAULT_STORE, *, read_only: bool = False,
                 memory_limit: str | None = MEMORY_LIMIT):
        duckdb = duckdb_module()
        self.path = Path(path)
        self.read_only = read_only
        if read_only and not self.path.exists():
            raise FileNotFoundError(f"no run store at {self.path}")
        if not read_only:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.path.exists() and self.path.stat().st_size and not is_store_file(self.path):
            raise StoreError(f"{self.path} is not a DuckDB file (a run store is one; name another path)")
        self._held: tuple[int, int] | None = None
        try:
            config = {"memory_limit": memory_limit} if memory_limit else {}
            self.con = duckdb.connect(str(self.path), read_only=read_only, config=config)
            quiet(self.con)
        except duckdb.IOException as exc:
            raise StoreError(f"cannot open the run store {self.path}: {exc}") from exc
        except duckdb.ConnectionException as exc:
            if not held_store(self.path):
                raise StoreError(f"cannot open the run store {self.path}: {exc}") from exc
            raise StoreConnectionError(
                f"cannot open the run store {self.path}{' read-only' if read_only else ''}: this process already has "
                "it open (a capture run or another RunStore) with other settings; read it through that store, or "
                "with RunStore.reader(path)") from exc
        self._held = hold_store(self.path)
        try:
            if read_only:
                self.version = self._version()
                if self.version != SCHEMA_VERSION:
                    raise StoreError(
                        f"{self.path} has store schema version {self.version}; this agentstats reads version "
                        f"{SCHEMA_VERSION} (open it once for writing to migrate it)"
                        if self.version < SCHEMA_VERSION else self._newer_message(self.version)
                    )
            else:
                self.version = self._migrate()
                self.interrupted = self.mark_interrupted()
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with contextlib.suppress(Exception):
            self.con.close()
        release_store(self._held)
        self._held = None

    def is_open(self) -> bool:
        """Tell whether the connection is still open."""
        try:
            self.con.execute("SELECT 1")
        except duckdb_module().Error:
            return False
        return True

    @classmethod
    @contextlib.contextmanager
    def reader(cls, path: str | os.PathLike) -> Iterator[Self]:
        """Open a store for reading, closed at the end of the ``with`` block.

        Read-only, except when this process already has the file open for writing: DuckDB then refuses a read-only
        connection, and this one joins the open database instead.

        Raises
        ------
        FileNotFoundError
            No file at ``path``.
        StoreError
            The file is not a run store, or another process holds it.
        """
        try:
            store = cls(path, read_only=True)
        except StoreConnectionError:
            store = cls(path)
        try:
            yield store
        finally:
            store.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _version(self) -> int:
        has = self.con.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = 'schema_version'"
        ).fetchone()
        if not has or not has[0]:
            return 0
        row = self.con.execute("SELECT max(version) FROM schema_version").fetchone()
        return int(row[0]) if row and row[0] is not None else 0

    def _newer_message(self, version: int) -> str:
        return (
            f"{self.path} has store schema version {version}, newer than this agentstats knows ({SCHEMA_VERSION}); "
            "upgrade agentstats to read it"
        )

    def _migrate(self, upto: int = SCHEMA_VERSION) -> int:
        """Apply the missing migrations up to ``upto`` in one transaction; return the version reached."""
        version = self._version()
        if version > SCHEMA_VERSION:
            raise StoreError(self._newer_message(version))
        if version >= upto:
            return version
        with self.transaction():
            if version == 0:
                self.con.execute("CREATE TABLE schema_version (version INTEGER NOT NULL, applied_at TIMESTAMPTZ)")
            for v in range(version + 1, upto + 1):
                for step in MIGRATIONS[v - 1]:
                    self.con.execute(step)
                self.con.execute("INSERT INTO schema_version VALUES (?, ?)", [v, _now()])
        return upto

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Any]:
        """``BEGIN`` ... ``COMMIT``, or ``ROLLBACK`` on any exception (re-raised); yields the connection."""
        self.con.execute("BEGIN TRANSACTION")
        try:
            yield self.con
        except BaseException:
            with contextlib.suppress(Exception):
                self.con.execute("ROLLBACK")
            raise
        self.con.execute("COMMIT")

    def mark_interrupted(self) -> list[str]:
        """Mark runs left ``running`` by a process that is gone as ``interrupted``; return their names.

        A run is gone when it was started on this host by a process that no longer exists, or by another
        process on any host (DuckDB lets one process write a file at a time, so a writer that held it is done).
        """
        rows = self.con.execute("SELECT run_id, name, pid, host FROM runs WHERE status = 'running'").fetchall()
        me, host = os.getpid(), socket.gethostname()
        stale = [(rid, name) for rid, name, pid, h in rows if not (pid == me and h == host)]
        if stale:
            with self.transaction():
                for rid, _ in stale:
                    self.con.execute("UPDATE runs SET status = 'interrupted' WHERE run_id = ?", [rid])
        return [name for _, name in stale]

    def _settle(self) -> None:
        """Finish a partly fetched result on the connection (DuckDB >= 2 refuses ``register`` until then)."""
        complete = getattr(self.con, "complete", None)
        if complete is not None:
            complete()

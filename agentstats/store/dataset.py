"""A run store's trials as a hive-partitioned Parquet dataset: written by DuckDB's ``COPY``, counted by DuckDB.

``agentstats runs export --format parquet --partition-by run,agent --out-dir DIR``
(:meth:`DatasetExport.export_dataset`) writes ``DIR/run=<name>/agent=<name>/part-0.parquet`` (values
percent-encoded: ``agent=openai%2Fgpt-4o``), one table of trials with the columns :data:`DATASET_COLUMNS`, which
DuckDB, Spark, Ray (``ray.data.read_parquet``) and pyarrow read as one table. Such a dataset (the folder, a glob
of its files, or one of its files) is an input format of :mod:`agentstats.io` (``parquet_dataset``, registered by
:func:`agentstats.store.format.register`):

* counts: :func:`dataset_counts` aggregates it to (agent, task) cells with one SQL ``GROUP BY`` over
  ``read_parquet(..., hive_partitioning = true)``: no trial becomes a Python object, so the size of the dataset is
  DuckDB's concern (it streams the files on the cores it is given) and memory follows the cells, not the rows.
  ``n``, ``c`` and ``n_missing`` come from the column ``outcome_code`` through
  :func:`agentstats.store.reading.cell_counts_sql`, the store's one SQL spelling of
  :data:`~agentstats.records.trial.OUTCOME_CODE`;
* trials: read back from the ``record`` column (the trial as JSON, as the store keeps it), like a store's run;
* runs: a dataset of several runs is read one run at a time (``run=``), as a store is (:func:`dataset_run`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from agentstats._util.options import option_name
from agentstats.files.atomic import atomic_dir
from agentstats.io.loaders import select_counts
from agentstats.records.counts import _unscored_message, frame_from_codes
from agentstats.records.gaps import gaps_from_cells
from agentstats.records.problems import OnError, Problem, ProblemLog
from agentstats.records.trial import CODE_UNSCORED, OUTCOME_CODE, Trial
from agentstats.store.connection import StoreError, duckdb_module, quiet
from agentstats.store.reading import TrialReader, cell_counts_sql, outcome_code_sql
from agentstats.store.runs import _sql_text

__all__ = [
    "DATASET_COLUMNS",
    "PARTITION_COLUMNS",
    "DatasetExport",
    "check_partition_by",
    "dataset_counts",
    "dataset_run",
    "dataset_trials",
    "is_parquet_dataset",
]

#: Columns of an exported dataset, with the SQL that computes each from the store's ``trials`` (``t``) and ``runs``
#: (``r``) tables. ``outcome_code`` is :data:`~agentstats.records.trial.OUTCOME_CODE` (failure 0, success 1, missing
#: 2; -1 unscored), ``record`` the whole trial as JSON in the project's schema.
DATASET_COLUMNS: dict[str, str] = {
    "run": "r.name",
    "agent": "t.agent",
    "task_id": "t.task_id",
    "trial": "t.trial",
    "seq": "t.seq",
    "status": "t.status",
    "success": "t.success",
    "reward": "t.reward",
    "outcome_code": f"CAST({outcome_code_sql('t.outcome')} AS TINYINT)",
    "latency_s": "t.latency_s",
    "input_tokens": "t.input_tokens",
    "output_tokens": "t.output_tokens",
    "cost_usd": "t.cost_usd",
    "record": "t.record",
}
#: The columns a dataset may be partitioned by (``--partition-by``).
PARTITION_COLUMNS = ("run", "agent", "task_id", "status")
#: The columns :func:`dataset_counts` needs.
_NEEDED = ("agent", "task_id", "trial", "outcome_code")
#: Bad rows named in an error (the rest are counted).
_NAMED = 20
#: Distinct trial numbers below 64 of a cell, as the bits of one integer: ``count(DISTINCT trial)`` costs a hash table
#: per cell (twice the whole count at 1,000,000 trials), this one ``bit_or``; trials from 64 up are counted apart.
_DISTINCT_LOW = "bit_count(bit_or(CASE WHEN trial < 64 THEN 1::UBIGINT << trial ELSE 0::UBIGINT END))"


def check_partition_by(columns: str | Sequence[str]) -> tuple[str, ...]:
    """Parse and check a partitioning: ``"run,agent"`` or a sequence of column names.

    Returns
    -------
    tuple of str
        The columns, in the order given (the folder levels, outermost first).

    Raises
    ------
    StoreError
        An empty list, a repeated column, or a column outside :data:`PARTITION_COLUMNS` (the allowed ones named).
    """
    names = [c.strip() for c in (columns.split(",") if isinstance(columns, str) else columns)]
    allowed = ", ".join(PARTITION_COLUMNS)
    unknown = [c for c in names if c not in PARTITION_COLUMNS]
    if unknown or not names:
        what = f"unknown partition column(s) {', '.join(map(repr, unknown))}" if unknown else "no partition column"
        raise StoreError(f"{option_name('partition_by', ','.join(names))}: {what}; partition by any of: {allowed}")
    if len(set(names)) != len(names):
        raise StoreError(f"{option_name('partition_by', ','.join(names))}: a column is named twice")
    return tuple(names)


class DatasetExport(TrialReader):
    """Exporting runs as a hive-partitioned Parquet dataset (see :class:`agentstats.store.RunStore`)."""

    def export(self, run: str, path: str | os.PathLike, *, table: str = "trials",
               partition_by: str | Sequence[str] | None = None, replace: bool = False) -> Path:
        """Export a run as a file (:meth:`TrialReader.export`) or, with ``partition_by``, a Parquet dataset folder.

        Raises
        ------
        StoreError
            As :meth:`TrialReader.export` and :meth:`export_dataset`; ``partition_by`` with a table other than
            ``trials``.
        """
        if partition_by is None:
            return super().export(run, path, table=table)
        if table != "trials":
            raise StoreError(f"{option_name('partition_by')} exports the trials table; {option_name('table', table)} "
                             "is exported as one Parquet file")
        return self.export_dataset(path, runs=[run], partition_by=partition_by, replace=replace)

    def export_dataset(self, path: str | os.PathLike, *, runs: Sequence[str] | None = None,
                       partition_by: str | Sequence[str] = ("run", "agent"), replace: bool = False) -> Path:
        """Write runs' trials as a hive-partitioned Parquet dataset with DuckDB's ``COPY``, atomically.

        Parameters
        ----------
        path : str or os.PathLike
            The dataset's folder (``path/run=<name>/agent=<name>/part-0.parquet`` for ``("run", "agent")``).
        runs : sequence of str, optional
            The runs to export (default every run of the store).
        partition_by : str or sequence of str
            Folder levels, of :data:`PARTITION_COLUMNS` (``"run,agent"``).
        replace : bool
            Replace a dataset already at ``path`` (refused when ``path`` holds anything but a Parquet dataset's
            ``key=value`` folders and ``.parquet`` files, so a wrong ``--out`` cannot delete a folder of other files).

        Returns
        -------
        pathlib.Path
            ``path``. The dataset is written to a temporary folder beside it and renamed into place
            (:func:`agentstats.files.atomic.atomic_dir`): an error, Ctrl-C or SIGTERM leaves the previous dataset
            (or nothing) and no temporary folder.

        Raises
        ------
        StoreError
            An unknown run or partition column, a store without runs, or ``path`` holding other files.
        FileExistsError
            ``path`` exists and ``replace`` is false.
        """
        columns = check_partition_by(partition_by)
        ids = [self.run_id(r) for r in runs] if runs is not None else [
            int(r[0]) for r in self.con.execute("SELECT run_id FROM runs ORDER BY run_id").fetchall()]
        if not ids:
            raise StoreError(f"{self.path} holds no run to export")
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        if replace and out.exists():
            _check_replaceable(out)
        select = ", ".join(f"{sql} AS {name}" for name, sql in DATASET_COLUMNS.items())
        # no ORDER BY: sorting 10,000,000 trials with their records under the store's memory limit cost a quarter of
        # the export; readers order by seq (load_trials) or need no order (counts)
        with atomic_dir(out, replace=replace) as tmp:
            self.con.execute(
                f"""COPY (SELECT {select} FROM trials t JOIN runs r USING (run_id)
                          WHERE t.run_id IN ({", ".join(map(str, ids))}))
                    TO '{_sql_text(tmp)}'
                    (FORMAT parquet, PARTITION_BY ({", ".join(columns)}), FILENAME_PATTERN 'part-{{i}}',
                     OVERWRITE_OR_IGNORE)""")
        return out


def _check_replaceable(path: Path) -> None:
    """Refuse to replace a folder that is not a Parquet dataset (``key=value`` folders and ``.parquet`` files)."""
    if not path.is_dir():
        raise StoreError(f"{path} exists and is not a folder; give a new folder for the dataset")
    for folder, dirs, files in os.walk(path):
        rel = Path(folder).relative_to(path)
        odd = [f for f in files if not f.endswith(".parquet")] + [d for d in dirs if "=" not in d]
        if odd:
            raise StoreError(f"{path} holds {rel / odd[0]}, which is not part of a Parquet dataset: not replaced "
                             "(give a new folder, or remove it yourself)")


# ------------------------------------------------------------------------------------------------ reading

_GLOB = re.compile(r"[*?\[]")


def _source(path: str | os.PathLike) -> str:
    """Return the ``read_parquet`` of a dataset: a folder (its ``.parquet`` files at any depth), a glob, or one file.

    One file of a dataset keeps its partition columns: DuckDB reads them from the ``key=value`` folders of its path.
    """
    text = str(path)
    pattern = text if _GLOB.search(text) or os.path.isfile(text) else os.path.join(text, "**", "*.parquet")
    return (f"read_parquet('{_sql_text(pattern)}', hive_partitioning = true, hive_types_autocast = false, "
            "union_by_name = true, filename = true, file_row_number = true)")


def _first_file(path: Path) -> Path | None:
    """Return a ``.parquet`` file under a folder (the first found, hidden folders skipped), or None."""
    for folder, dirs, files in os.walk(path):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if name.endswith(".parquet") and not name.startswith("."):
                return Path(folder) / name
    return None


def is_parquet_dataset(path: str | os.PathLike) -> bool:
    """Tell whether ``path`` is a Parquet dataset of trials: a folder, a glob or one ``.parquet`` file of one.

    Looks at one file's schema and the ``key=value`` folders above it (hive partitions): together they hold
    :data:`_NEEDED`. One file of a dataset (``run=r1/agent=a/part-0.parquet``) is a dataset too, read with the partition
    values of its path: one shard of :func:`agentstats.metrics.compute_files`. Never raises.
    """
    import glob

    import pyarrow.parquet as pq

    text = str(path)
    first: Path | None
    root: Path | None = None
    try:
        if _GLOB.search(text) and not os.path.exists(text):
            found = next(glob.iglob(text, recursive=True), None)
            first = Path(found) if found else None
        elif os.path.isdir(text):
            first, root = _first_file(Path(text)), Path(text)
        elif os.path.isfile(text):
            first = Path(text)
        else:
            return False
        if first is None or not first.name.endswith(".parquet"):
            return False
        parts = first.parent.relative_to(root).parts if root is not None else first.parent.parts
        columns = set(pq.read_schema(first).names) | {p.split("=", 1)[0] for p in parts if "=" in p}
    except (OSError, ValueError):
        return False
    return set(_NEEDED) <= columns


def _connect(path: Any) -> Any:
    """Open an in-memory DuckDB and check the dataset has the columns counting needs; return it and its columns."""
    duckdb = duckdb_module()
    con = quiet(duckdb.connect())
    try:
        cols = {r[0] for r in con.execute(f"DESCRIBE SELECT * FROM {_source(path)}").fetchall()}
    except duckdb.Error as exc:
        con.close()
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ValueError(f"{path}: not a readable Parquet dataset: {first}") from None
    missing = [c for c in _NEEDED if c not in cols]
    if missing:
        con.close()
        raise ValueError(f"{path}: the Parquet dataset has no column {', '.join(map(repr, missing))} (a dataset of "
                         f"trials holds {', '.join(_NEEDED)}: `agentstats runs export --partition-by` writes them)")
    return con, cols


def dataset_run(con: Any, cols: set[str], src: str, name: str, run: str | None) -> str:
    """Return the SQL filter of the run to read from ``src``: ``run``, or the only run (``""`` without a run column).

    Raises
    ------
    ValueError
        ``run`` not given and the dataset holds several runs (listed), ``run`` not among them, or ``run`` given for a
        dataset without a ``run`` column.
    """
    if "run" not in cols:
        if run is not None:
            raise ValueError(f"{option_name('run', run)}: {name} has no run column (it holds one run)")
        return ""
    names = [r[0] for r in con.execute(f"SELECT DISTINCT run FROM {src} ORDER BY run").fetchall()]
    if run is None:
        if len(names) != 1:
            listed = ", ".join(map(str, names[:20])) if names else "none"
            raise ValueError(f"{name} is a Parquet dataset with {len(names)} runs ({listed}): "
                             f"pick one with {option_name('run')}")
        run = names[0]
    elif run not in names:
        raise ValueError(f"no run named {run!r} in {name} (runs: {', '.join(map(str, names[:20]))})")
    return f" WHERE run = '{_sql_text(run)}'"


def _bad_rows(con: Any, src: str, where: str, name: str, on_error: OnError) -> tuple[str, list[Problem]]:
    """Find rows counting cannot use (a key or ``outcome_code`` NULL or out of range), located by file and row.

    Returns the SQL condition of the good rows and the problems (``[]`` when every row is good).
    """
    codes = ", ".join(str(c) for c in (*OUTCOME_CODE.values(), CODE_UNSCORED))
    bad = (f"(agent IS NULL OR task_id IS NULL OR trial IS NULL OR trial < 0 OR outcome_code IS NULL "
           f"OR outcome_code NOT IN ({codes}))")
    glue = " AND " if where else " WHERE "
    n_bad = con.execute(f"SELECT count(*) FROM {src}{where}{glue}{bad}").fetchone()[0]
    if not n_bad:
        return "", []
    limit = "" if on_error == "skip" else f" LIMIT {_NAMED}"
    rows = con.execute(
        f"""SELECT filename, file_row_number, agent IS NULL, task_id IS NULL, trial, outcome_code
            FROM {src}{where}{glue}{bad} ORDER BY filename, file_row_number{limit}""").fetchall()
    problems = []
    for file, row, no_agent, no_task, trial, code in rows:
        if no_agent or no_task:
            field, msg = ("agent" if no_agent else "task_id"), "missing (NULL)"
        elif trial is None or trial < 0:
            field, msg = "trial", "missing (NULL)" if trial is None else f"negative trial number {trial}"
        else:
            field = "outcome_code"
            msg = ("missing (NULL): the trial has no outcome code" if code is None else
                   f"{code} is no outcome code (failure {OUTCOME_CODE['failure']}, success {OUTCOME_CODE['success']}, "
                   f"missing {OUTCOME_CODE['missing']}, unscored {CODE_UNSCORED})")
        problems.append(Problem(str(file), int(row), field, msg, "row"))
    if n_bad > len(problems):
        problems.append(Problem(name, None, None, f"... and {n_bad - len(problems)} more such rows"))
    return f"NOT {bad}", problems


@contextlib.contextmanager
def _sql_errors(name: str) -> Iterator[None]:
    """Say what DuckDB refused in a dataset (a column of another type, a damaged file) as a ValueError naming it."""
    duckdb = duckdb_module()
    try:
        yield
    except duckdb.Error as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ValueError(f"{name}: the Parquet dataset cannot be counted (a column of another type, or a damaged "
                         f"file?): {first}") from None


def dataset_counts(path: Any, name: str, on_error: OnError, options: dict[str, Any]) -> pd.DataFrame | None:
    """Count a Parquet dataset per (agent, task) in DuckDB: the table :func:`agentstats.io.load_counts` gives.

    One ``GROUP BY agent, task_id`` over the dataset's files gives each cell's ``n``, ``c``, ``n_missing``
    (:func:`agentstats.store.reading.cell_counts_sql`), trial count, largest trial number and distinct trial
    numbers (below 64 as bits; trials from 64 up are counted by a second query over those rows only); only cells come
    back to Python. Grid gaps (:class:`~agentstats.records.gaps.GridGaps`) are found from the
    cells, with the trial numbers of at most 10,000 incomplete cells read back.

    Parameters
    ----------
    path : str or os.PathLike
        The dataset's folder or a glob of its files.
    name : str
        How messages name it.
    on_error : {"raise", "skip"}
        Rows with a NULL key, a negative trial or an ``outcome_code`` outside
        :data:`~agentstats.records.trial.OUTCOME_CODE` (and -1, unscored) are errors located by file, row (0-based)
        and field; ``"skip"`` leaves them out and lists them in ``attrs["skipped"]``.
    options : dict
        ``run`` (see :func:`dataset_run`) and ``agents`` (an agent selection); ``None`` is returned for any other
        option (the trials are read instead).

    Returns
    -------
    pandas.DataFrame or None
        Columns ``agent, task_id, n, c, n_missing``; ``attrs``: ``gaps``, ``source``, ``format="parquet_dataset"``,
        ``skipped``, ``excluded_agents``.

    Raises
    ------
    LoadError
        Bad rows (above), listing the first 20 with their files and rows.
    ValueError
        A dataset missing a needed column, several runs and no ``run``, unscored trials (code -1: score them first),
        or an (agent, task_id, trial) key repeated.
    """
    if not isinstance(path, (str, os.PathLike)) or set(options) - {"agents", "run"}:
        return None
    con, cols = _connect(path)
    try:
        with _sql_errors(name):
            out = _count(con, cols, _source(path), name, on_error, options.get("run"))
    finally:
        con.close()
    return select_counts(out, options.get("agents"), name)


def _count(con: Any, cols: set[str], src: str, name: str, on_error: OnError, run: str | None) -> pd.DataFrame:
    """Count the dataset ``src`` on the connection ``con`` (see :func:`dataset_counts`).

    The cells stay in DuckDB (a temporary table of this private connection); they come back as integer codes of the
    agent and task names, which come back once each: turning a million cells' names into Python strings would cost
    twice the ``GROUP BY`` itself.
    """
    where = dataset_run(con, cols, src, name, run)
    good, problems = _bad_rows(con, src, where, name, on_error)
    log = ProblemLog(name, on_error, unit="row")
    for i, p in enumerate(problems):
        log.problems.append(p)
        log.bad_records.add(i)
    if good:
        where = f"{where} AND {good}" if where else f" WHERE {good}"
    code = "outcome_code"
    con.execute(
        f"""CREATE TEMP TABLE cells AS
            SELECT agent, task_id, count(*) AS total, {cell_counts_sql(code)}, max(trial) AS mx,
                   {_DISTINCT_LOW} AS nd, count(*) FILTER (trial >= 64) AS high,
                   count(*) FILTER ({code} = {CODE_UNSCORED}) AS unscored
            FROM {src}{where} GROUP BY agent, task_id""")
    for col, key in (("agent", "a"), ("task_id", "t")):
        con.execute(f"""CREATE TEMP TABLE {col}_codes AS SELECT {col}, (row_number() OVER (ORDER BY {col}) - 1)::BIGINT
                        AS {key} FROM (SELECT DISTINCT {col} FROM cells)""")
    names = {col: np.asarray([r[0] for r in con.execute(f"SELECT {col} FROM {col}_codes ORDER BY 1").fetchall()],
                             dtype=object) for col in ("agent", "task_id")}
    cells = con.execute("SELECT a, t, total, n, c, m, mx, nd, high, unscored FROM cells JOIN agent_codes USING (agent) "
                        "JOIN task_id_codes USING (task_id)").fetchnumpy()
    cells = {k: np.asarray(v, dtype=np.int64) for k, v in cells.items()}
    skipped = log.finish(kept=int(cells["total"].sum()))
    _check_keys(con, src, where, cells, names)
    out = frame_from_codes(cells["a"], names["agent"], cells["t"], names["task_id"], cells["n"], cells["c"],
                           cells["m"])
    out.attrs["gaps"] = _gaps(con, src, where, cells, names) if len(out) else None
    out.attrs.update(source=name, format="parquet_dataset", skipped=skipped, excluded_agents=[])
    return out


def _check_keys(con: Any, src: str, where: str, cells: dict[str, np.ndarray], names: dict[str, np.ndarray]) -> None:
    """Refuse unscored trials (code -1) and repeated (agent, task_id, trial) keys, naming the first few."""
    n_unscored = int(cells["unscored"].sum())
    glue = " AND " if where else " WHERE "
    if n_unscored:
        first = con.execute(f"SELECT agent, task_id, trial FROM {src}{where}{glue}outcome_code = {CODE_UNSCORED} "
                            "ORDER BY agent, task_id, trial LIMIT 5").fetchall()
        raise ValueError(_unscored_message(n_unscored, [((a, t, int(k)), "") for a, t, k in first]))
    distinct = cells["nd"].copy()
    if cells["high"].any():  # cells with trial numbers from 64 up: count those distinct numbers in SQL, those rows only
        more = con.execute(f"""SELECT a, t, count(DISTINCT trial) AS d
                               FROM (SELECT agent, task_id, trial FROM {src}{where}{glue}trial >= 64)
                               JOIN agent_codes USING (agent) JOIN task_id_codes USING (task_id)
                               GROUP BY a, t""").fetchnumpy()
        extra = dict(zip(zip(more["a"].tolist(), more["t"].tolist(), strict=True), more["d"].tolist(), strict=True))
        for i in np.flatnonzero(cells["high"]):
            distinct[i] += extra.get((int(cells["a"][i]), int(cells["t"][i])), 0)
    repeated = np.flatnonzero(distinct != cells["total"])
    if len(repeated):
        named = ", ".join(f"({names['agent'][cells['a'][i]]!r}, {names['task_id'][cells['t'][i]]!r})"
                          for i in repeated[:5])
        raise ValueError(f"{len(repeated)} (agent, task_id) cell(s) repeat a trial number, e.g. {named}; each "
                         "(agent, task_id, trial) key must be unique (was a run exported twice into one dataset?)")


def _gaps(con: Any, src: str, where: str, cells: dict[str, np.ndarray], names: dict[str, np.ndarray]) -> Any:
    """Return the grid gaps of counted cells, reading the trial numbers of (at most 10,000) gap cells only."""
    n_t = len(names["task_id"])
    flat = cells["a"] * n_t + cells["t"]
    k = int(cells["mx"].max()) + 1

    def trials_of(wanted: np.ndarray) -> list[np.ndarray]:
        found: dict[int, np.ndarray] = {}
        have = wanted[np.isin(wanted, flat)]
        if len(have):
            con.register("gap_cells", pd.DataFrame({"a": have // n_t, "t": have % n_t}))
            rows = con.execute(f"""SELECT g.a, g.t, list(d.trial ORDER BY d.trial)
                                   FROM (SELECT agent, task_id, trial FROM {src}{where}) d
                                   JOIN agent_codes USING (agent) JOIN task_id_codes USING (task_id)
                                   JOIN gap_cells g ON g.a = agent_codes.a AND g.t = task_id_codes.t
                                   GROUP BY g.a, g.t""").fetchall()
            con.unregister("gap_cells")
            found = {int(a) * n_t + int(t): np.asarray(v, dtype=np.int64) for a, t, v in rows}
        empty = np.zeros(0, np.int64)
        return [found.get(int(c), empty) for c in wanted]

    return gaps_from_cells(flat, cells["total"], k, list(names["agent"]), list(names["task_id"]), trials_of)


def dataset_trials(path: str | os.PathLike, log: ProblemLog, **options: Any) -> list[Trial]:
    """Reader of the ``parquet_dataset`` format: one run's trials, from the ``record`` column (``run=``).

    Trials come in the order written (``seq``, else agent, task_id, trial); each ``record`` is validated as a
    :class:`~agentstats.records.trial.Trial`, a bad one logged with its file, row and field.

    Raises
    ------
    TypeError
        An option other than ``run``.
    ValueError
        A dataset without a ``record`` column (it gives counts only: :func:`agentstats.io.load_counts`), or as
        :func:`dataset_run`.
    """
    from pydantic import ValidationError

    unknown = sorted(set(options) - {"run"})
    if unknown:
        raise TypeError(f"load_trials() got unexpected option(s) {unknown} for a Parquet dataset ({log.source})")
    con, cols = _connect(path)
    try:
        if "record" not in cols:
            raise ValueError(f"{log.source} is a Parquet dataset without a 'record' column: it gives counts only "
                             "(agentstats.load_counts, or any command's counts); export it with `agentstats runs "
                             "export --partition-by` to keep the trials")
        with _sql_errors(log.source):
            where = dataset_run(con, cols, _source(path), log.source, options.get("run"))
            order = "seq" if "seq" in cols else "agent, task_id, trial"
            rows = con.execute(f"SELECT filename, file_row_number, record FROM {_source(path)}{where} "
                               f"ORDER BY {order}").fetchall()
    finally:
        con.close()
    out = []
    for i, (file, row, record) in enumerate(rows):
        try:
            out.append(Trial.model_validate_json(record if record is not None else "null"))
        except ValidationError as exc:
            before = len(log.problems)
            log.add_pydantic(i, exc, unit="row")
            log.problems[before:] = [dataclasses.replace(p, source=str(file), line=int(row),
                                                         field=f"record.{p.field}" if p.field else "record")
                                     for p in log.problems[before:]]
    return out

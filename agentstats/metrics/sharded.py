"""Metrics over trial files, one shard per file, each read by the worker that scores it.

:func:`agentstats.metrics.compute` scores trials already in memory: the caller loads them all first (1,000,000
conversations: 86 s and 2.9 GB in one process) and sends chunks to the workers. :func:`compute_files` takes the files
instead: each file is a shard, a worker reads it with agentstats' own reader (:func:`agentstats.io.load_trials`, so a
bad record is named by file, line and field) and scores it with the code :func:`compute` runs in process
(:func:`~agentstats.metrics.compute._compute`); only the metric rows come back, and one merge
(:func:`~agentstats.metrics.compute.merge_parts`, the one of :func:`compute` on an executor) puts them in the order of
``compute(all trials of all shards, in shard order)``. The caller never holds the trials.

Where the shards run: in this process, a process pool, any ``concurrent.futures.Executor`` (one task per shard,
:func:`agentstats.parallel.map_ordered`), or a Ray cluster through ``ray.data``: one row per shard (its position and
descriptor), ``map_batches`` of one row at a time, order preserved, each shard's frame back pickled in a binary
column (:meth:`agentstats.parallel.ray_executor.RayExecutor.map_batches` says why that encoding).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pandas as pd

from agentstats._util.options import option_name
from agentstats.files.manifest import MANIFEST_SUFFIX
from agentstats.metrics.base import Level, Metric
from agentstats.metrics.compute import _compute, by_value, configure, is_batch, merge_parts
from agentstats.parallel.executor import ByValue, ExecutorLike, map_ordered, resolve_executor
from agentstats.parallel.ray_executor import RayExecutor
from agentstats.records.problems import LoadError, LoadWarning

__all__ = ["compute_files", "shard_files"]

type PathLike = str | os.PathLike[str]


def _hidden(name: str) -> bool:
    """Tell whether a folder of shards leaves ``name`` out: hidden (``.x``), private (``_SUCCESS``), a manifest."""
    return name.startswith((".", "_")) or name.endswith(MANIFEST_SUFFIX)


def _files_under(root: Path) -> list[Path]:
    """Every file under ``root`` at any depth (hive partitions nest), :func:`_hidden` names left out, sorted by path.

    Sorted by the path's parts below ``root`` (``agent=a/part-0`` before ``agent=a-b/part-0``), as a listing
    of the folders shows them.
    """
    found: list[Path] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not _hidden(d)]
        found.extend(Path(folder) / f for f in files if not _hidden(f))
    return sorted(found, key=lambda p: p.relative_to(root).parts)


def shard_files(sources: PathLike | Sequence[PathLike], format: str | None = None) -> list[tuple[str, str]]:
    """List the shards of :func:`compute_files`: each file, and the trial format it is read as.

    Parameters
    ----------
    sources : str, PathLike or sequence of them
        A folder: every file under it at any depth, sorted by path, except hidden names (``.x``), private ones
        (``_SUCCESS``, ``_metadata``) and the manifests written beside files (``*.manifest.json``); so the folder of a
        Parquet dataset (``agentstats runs export --partition-by``) gives one shard per ``.parquet`` file. A file:
        one shard. A sequence of files: one shard each, in the order given.
    format : str, optional
        The trial format of every shard (a name or alias of :func:`agentstats.io.registry.formats`); default
        (or ``"auto"``): detected from each file's content (:func:`agentstats.io.detect_format`), as
        :func:`agentstats.io.load_trials` does.

    Returns
    -------
    list of (str, str)
        ``(path, format name)`` per shard, in shard order.

    Raises
    ------
    ValueError
        A folder holding no file to read, a file whose content is no trial format (a counts table, score records,
        unknown content: the file and what was seen named), an empty sequence, a folder inside a sequence, a format
        that holds no trials.
    FileNotFoundError
        A path that does not exist.
    """
    from agentstats.io.detect import detect_format
    from agentstats.io.registry import format_spec, normalize_format

    given = None if format is None or normalize_format(format) == "auto" else format_spec(format)
    if given is not None and given.holds != "trials":
        raise ValueError(f"{option_name('format', given.name)} holds {given.holds}, not trials: compute_files "
                         "scores trial files")
    folder: Path | None = None
    if isinstance(sources, (str, os.PathLike)):
        path = Path(sources)
        if path.is_dir():
            folder, paths = path, _files_under(path)
            if not paths:
                raise ValueError(f"{path} holds no trial files to score (hidden, _-prefixed and *{MANIFEST_SUFFIX} "
                                 "files are left out): give the folder of the shards, or their paths")
        elif path.exists():
            paths = [path]
        else:
            raise FileNotFoundError(f"no such file or folder: {path}")
    else:
        paths = [Path(p) for p in sources]
        if not paths:
            raise ValueError("compute_files: no shard files given")
        for p in paths:
            if p.is_dir():
                raise ValueError(f"{p} is a folder: give a folder alone (its files are the shards) or a list of files")
            if not p.exists():
                raise FileNotFoundError(f"no such file: {p}")
    out: list[tuple[str, str]] = []
    for p in paths:
        if given is not None:
            out.append((str(p), given.name))
            continue
        inside = f"{folder} holds {p.relative_to(folder)}, which is not a trial file: " if folder is not None else ""
        try:
            spec = format_spec(detect_format(p))
        except ValueError as exc:
            if not inside:
                raise
            raise ValueError(f"{inside}{exc} (a folder's files are its shards; pass a list of the trial files to "
                             "leave others out)") from None
        if spec.holds != "trials":
            raise ValueError(f"{inside or f'{p}: '}it holds {spec.holds} (format {spec.name!r}), not trials; "
                             "compute_files scores trial files")
        out.append((str(p), spec.name))
    return out


def _one_run(folder: Path, shards: list[tuple[str, str]],
             options: dict[str, Any]) -> tuple[list[tuple[str, str]], dict[str, Any]]:
    """Keep one run of a folder partitioned by run (``run=NAME/...``, ``agentstats runs export --partition-by``).

    A frame of several runs' trials would hold each (agent, task, trial) once per run with nothing to tell them
    apart, so such a folder needs ``run=`` (the shards under ``run=NAME``, the option not passed on to each file's
    reader, whose file holds that run only) or one run's folder, as :func:`agentstats.io.load_counts` asks.

    Raises
    ------
    ValueError
        Several runs and no ``run=``; a ``run=`` the folder does not hold (its runs named).
    """
    runs: dict[str, list[tuple[str, str]]] = {}
    for path, fmt in shards:
        part = next((x for x in Path(path).relative_to(folder).parts[:-1] if x.startswith("run=")), None)
        runs.setdefault(unquote(part[4:]) if part else "", []).append((path, fmt))
    names = sorted(n for n in runs if n)
    if not names:
        return shards, options
    listed = ", ".join(names[:10]) + (", ..." if len(names) > 10 else "")
    if "run" in options:
        run = options["run"]
        if run not in runs:
            raise ValueError(f"compute_files: {folder} has no run {run!r}; its runs: {listed}")
        return runs[run], {k: v for k, v in options.items() if k != "run"}
    if len(names) > 1 or "" in runs:
        example = folder / f"run={names[0]}"
        raise ValueError(f"compute_files: {folder} holds the trials of several runs ({listed}"
                         f"{' and files outside run= folders' if '' in runs else ''}); the frame would mix them: "
                         f"pick one with run='NAME' or give that run's folder ({example})")
    return shards, options


def _shard_task(task: tuple[str, str, dict[str, Any], ByValue[list[Metric]], str]) -> pd.DataFrame:
    """Read one shard with agentstats' reader and score it in this worker: the frame of :func:`_compute` over it.

    ``errors="collect"`` reads with ``on_error="skip"``: each problem of a skipped record ("file, line 3, field
    'trial': ...") goes first in ``attrs["errors"]`` with the error key ``(-1, 0)`` (before any metric, see
    :func:`merge_parts`); a shard that cannot be read at all (every record bad, no trials, a file cut short) gives no
    rows and its problems. ``errors="raise"``: the reader's :class:`LoadError` is raised. A metric error names the
    trial's file and line where the reader records them, else the shard's file.
    """
    from agentstats.io.loaders import load_trials

    path, fmt, options, sent, errors = task
    ms = sent.get()
    problems: list[str]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LoadWarning)  # the skipped records are listed in attrs["errors"]
            trials = load_trials(path, fmt, on_error="skip" if errors == "collect" else "raise", **options)
    except LoadError as exc:
        if errors == "raise" and exc.skippable and type(exc) is LoadError:  # the hint names compute_files' option
            raise LoadError(exc.problems, exc.source, head=exc.head, hint=(
                "Fix them, or skip the bad records and get a list of what was skipped: errors='collect' "
                "(in frame.attrs['errors'])")) from None
        if errors == "raise":
            raise
        frame, problems = _compute([], ms, errors, None), [str(p) for p in exc.problems]
    else:
        located = trials.location  # file and line of the project's JSONL; else the shard's file names the trial
        frame = _compute(trials, ms, errors, lambda t: located(t) or path)
        problems = [str(p) for p in trials.skipped]
    frame.attrs["errors"] = [*problems, *frame.attrs["errors"]]
    frame.attrs["error_keys"] = [*([(-1, 0)] * len(problems)), *frame.attrs["error_keys"]]
    return frame


def compute_files(
    sources: PathLike | Sequence[PathLike],
    metrics: str | Metric | Iterable[str | Metric],
    *,
    format: str | None = None,
    fields: Mapping[str, str] | None = None,
    level: Level | None = None,
    errors: str = "raise",
    tool_weights: Mapping[str, float] | None = None,
    executor: ExecutorLike = None,
    workers: int | None = None,
    address: str | None = None,
    **options: Any,
) -> pd.DataFrame:
    """Compute metrics over trial files, one shard per file, each read and scored by a worker.

    The frame is the one ``compute(trials, metrics)`` gives for the trials of every shard, read with
    :func:`agentstats.io.load_trials` and put one shard after the other in shard order, whatever the executor: a
    worker reads its shard and scores it with :func:`compute`'s own code, and the rows are merged as :func:`compute`
    merges its chunks. The caller holds the rows, never the trials.

    Parameters
    ----------
    sources : str, PathLike or sequence of them
        A folder (every file under it, sorted by path: JSONL, gzip JSONL, JSON, any trial format
        :func:`agentstats.io.load_trials` reads per file, and the ``.parquet`` files of a dataset written by
        ``agentstats runs export --partition-by``; hidden, ``_``-prefixed and manifest files left out), one file, or a
        sequence of files in shard order (:func:`shard_files`). A dataset of several runs: give one run's folder
        (``run=NAME``); each file is read with the partition values of its path.
    metrics : str, Metric or iterable of them
        As :func:`compute`; metrics computed by one batch of requests (a judge, a guardian classifier, an embedder)
        are refused: their clients batch and cache across all records in the calling process, so score those with
        :func:`compute` on loaded trials.
    format : str, optional
        The trial format of every shard; default: detected from each file's content.
    fields, level, tool_weights
        As :func:`compute`.
    errors : {"raise", "collect"}
        ``"raise"``: a bad record (the reader's :class:`~agentstats.records.problems.LoadError`, naming file, line and
        field) or a record a metric cannot read (:class:`MetricInputError`, with its file and line) raises; the error
        of the first shard, in shard order, that has one. ``"collect"``: each shard is read with ``on_error="skip"``;
        every problem of a skipped record (``"shard.jsonl, line 3, field 'trial': Field required"``), then every
        metric error as :func:`compute` lists them, goes into ``attrs["errors"]``, and the other records and shards
        are scored; a shard that cannot be read at all gives its problems and no rows.
    executor : None, "local", "process", "ray" or concurrent.futures.Executor
        ``None`` / ``"local"``: shard after shard in this process. ``"process"`` (``workers`` processes) or an
        executor instance: one task per shard (:func:`agentstats.parallel.map_ordered`). ``"ray"`` (or a
        :class:`~agentstats.parallel.ray_executor.RayExecutor`): a ``ray.data`` job over the shards
        (:meth:`~agentstats.parallel.ray_executor.RayExecutor.map_batches`: one row per shard, ``map_batches`` of one
        row, order preserved, no shuffle; the cluster at ``address``, or the one this process is connected to, else a
        local one started for the call and stopped after it). A worker reads the shard's path: every worker must see
        the files (one machine, or a shared file system).
    workers, address : optional
        Processes of ``executor="process"`` or CPUs of a local Ray cluster; the Ray cluster to join.
    **options
        Options of :func:`agentstats.io.load_trials` for every shard (``run=``, ``agent_col=`` ...), except
        ``on_error`` (it follows ``errors``) and ``agents`` (a selection checked per file would refuse a shard that
        holds none of the agents; choose the shard files instead, or filter the frame's ``agent`` column).

    Returns
    -------
    pandas.DataFrame
        As :func:`compute`: columns :data:`COLUMNS`, one row per (trial, record, metric), metric by metric and, within
        a metric, shard by shard in file order; ``attrs["metrics"]`` and ``attrs["errors"]`` (above).

    Raises
    ------
    ValueError
        An unknown metric, a batch metric, a bad ``errors`` / ``executor`` / ``workers`` / ``address``, ``on_error``
        or ``agents`` in ``options``, or a source :func:`shard_files` refuses (no trial files, a file that holds no
        trials).
    FileNotFoundError
        A source that does not exist.
    LoadError
        (``errors="raise"``) a shard with a bad record: file, line and field.
    MetricInputError
        (``errors="raise"``) a record a metric cannot read: file, line, trial key, metric and field.
    RuntimeError
        Ray that cannot start or join its cluster (as :class:`~agentstats.parallel.ray_executor.RayExecutor`).
    ImportError
        ``executor="ray"`` without Ray (``pip install "agentstats[ray]"``).
    """
    ms = configure(metrics, errors, fields=fields, level=level, tool_weights=tool_weights)
    batch = [m.name for m in ms if is_batch(m)]
    if batch:
        one = len(batch) == 1
        raise ValueError(f"compute_files: {', '.join(batch)} {'is' if one else 'are'} computed by one batch of "
                         "requests to a judge, guardian or embedder, in the calling process over all records; score "
                         f"{'it' if one else 'them'} with agentstats.metrics.compute on loaded trials")
    for key, why in (("on_error", "it follows errors= ('raise': a bad record raises; 'collect': it is skipped and "
                                  "listed in attrs['errors'])"),
                     ("agents", "a selection is checked per file, so a shard without those agents would be refused; "
                                "give the shard files of those agents, or filter the frame's agent column")):
        if key in options:
            raise ValueError(f"compute_files: {option_name(key)} does not apply: {why}")
    shards = shard_files(sources, format)
    if isinstance(sources, (str, os.PathLike)) and Path(sources).is_dir():
        shards, options = _one_run(Path(sources), shards, options)
    sent = by_value(ms)
    tasks = [(path, fmt, options, sent, errors) for path, fmt in shards]
    with resolve_executor(executor, workers=workers, address=address) as ex:
        if isinstance(ex, RayExecutor):
            results = ex.map_batches(_shard_task, tasks, return_exceptions=True)
        else:
            results = map_ordered(_shard_task, tasks, ex, return_exceptions=True)
    for r in results:  # the first error in shard order
        if isinstance(r, BaseException):
            raise r
    every = list(range(len(ms)))
    frame = merge_parts([(every, r) for r in results], ms, errors)
    del frame.attrs["error_keys"]
    return frame

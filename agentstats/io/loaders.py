"""Public entry points: :func:`load_trials`, :func:`load_counts`, :func:`load_counts_any`.

Two kinds of input exist. *Trial* inputs (own JSONL/JSON, tau-bench files, run tables) hold one record per
attempt and load as a :class:`TrialSet`. *Counts* tables hold only ``n`` and ``c`` per (agent, task): they
have no trials, so :func:`load_trials` refuses them and points at :func:`load_counts`. Reports and the CLI
use :func:`load_counts_any`, which returns a counts table for every input.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from agentstats._util.markup import md_code, md_text
from agentstats._util.options import option_name
from agentstats.files.manifest import check_manifest
from agentstats.io.agents import AgentSelection
from agentstats.io.detect import (
    _ALIASES,
    FORMATS,
    PARQUET_MAGIC,
    _magic,
    detect_format,
    normalize_format,
    refuse_store_export,
    register_detector,
    source_name,
)
from agentstats.io.jsonl import read_json_trials, read_jsonl_trials
from agentstats.io.readers.counts import read_counts_table, read_table
from agentstats.io.readers.metr import read_runs, runs_from_table_rows, table_records
from agentstats.io.readers.tau_bench import read_tau_bench
from agentstats.records.counts import counts_frame, plural, to_counts
from agentstats.records.problems import OnError, Problem, ProblemLog, TrialLoadError
from agentstats.records.trial import Trial

__all__ = [
    "Dataset",
    "TrialSet",
    "load",
    "load_counts",
    "load_counts_any",
    "load_trials",
    "register_format",
]

type PathOrFrame = str | os.PathLike | pd.DataFrame
AgentsSpec = str | list[str] | tuple[str, ...] | AgentSelection | None


#: Importers added by other modules (e.g. scoring's BFCL / FAI JSONL readers): name -> reader.
_READERS: dict[str, Callable[..., list[Trial]]] = {}


def register_format(
    name: str,
    reader: Callable[..., list[Trial]],
    *,
    aliases: tuple[str, ...] = (),
    detect: Callable[[Any, bytes], bool] | None = None,
) -> None:
    """Add an input format to :func:`load_trials` (``format=name``; auto-detected when ``detect`` is given).

    Parameters
    ----------
    name : str
        Format name, e.g. ``"bfcl"``.
    reader : callable
        ``reader(path, log, **options) -> list[Trial]``; ``log`` is a
        :class:`agentstats.records.problems.ProblemLog` to which the reader adds every problem (location, field,
        message) instead of raising (:func:`agentstats.io.jsonl.build_trials` validates records and rejects
        duplicate keys); ``options`` are the extra keyword arguments given to :func:`load_trials`, with
        ``agent`` when given.
    aliases : tuple of str
        Other names for the same format.
    detect : callable, optional
        ``detect(path, head) -> bool`` on the file's first 64 KiB (:func:`agentstats.io.detect.register_detector`):
        with it, ``format="auto"`` recognises the format from the content.
    """
    key = name.strip().lower()
    if detect is not None:
        register_detector(key, detect)
    _READERS[key] = reader
    for alias in (key, *aliases):
        _ALIASES[alias.strip().lower()] = key
    if key not in FORMATS:
        FORMATS.append(key)


class TrialSet(list):
    """A list of :class:`~agentstats.records.trial.Trial` with where it came from and what was skipped.

    Attributes
    ----------
    source : str
        File path, or ``"<DataFrame>"``.
    format : str
        Format read (one of :data:`agentstats.io.detect.FORMATS`).
    skipped : list of Problem
        Problems of the records left out (``on_error="skip"``); empty otherwise.
    """

    def __init__(self, trials=(), *, source: str = "", format: str = "", skipped=(), notes=(), excluded=(),
                 locations=None):
        super().__init__(trials)
        self.source = source
        self.format = format
        self.skipped: list[Problem] = list(skipped)
        #: Remarks on kept records (e.g. a field that looks like a misspelled outcome field), with their lines.
        self.notes: list[Problem] = list(notes)
        #: Agents left out by an ``agents=`` selection.
        self.excluded_agents: list[str] = sorted(excluded)
        #: (agent, task_id, trial) -> (unit, location) of each trial in ``source`` (the project's JSONL and JSON).
        self.locations: dict[tuple[str, str, int], tuple[str, int]] = dict(locations or {})

    def location(self, trial: Trial) -> str | None:
        """Where ``trial`` was read, ``"runs.jsonl, line 12"`` (``record 3 (0-based)`` in a JSON array), or None."""
        found = self.locations.get((trial.agent, trial.task_id, trial.trial))
        if found is None:
            return None
        unit, loc = found
        return Problem(self.source, loc, None, "", unit).where()

    @property
    def n_skipped(self) -> int:
        """Number of records skipped (a record can have several problems)."""
        return len({(p.line, p.unit) for p in self.skipped})

    def to_counts(self) -> pd.DataFrame:
        """:func:`agentstats.records.counts.to_counts` of these trials."""
        return to_counts(self)

    def __repr__(self) -> str:
        agents = len({t.agent for t in self})
        tasks = len({t.task_id for t in self})
        skipped = f", {self.n_skipped} skipped" if self.skipped else ""
        return (
            f"TrialSet({plural(len(self), 'trial')}, {plural(agents, 'agent')}, {plural(tasks, 'task')}, "
            f"format={self.format!r}, source={self.source!r}{skipped})"
        )


def _resolve_format(src: Any, format: str, run_cols: dict[str, str | None]) -> str:
    fmt = normalize_format(format)
    if fmt == "auto":
        fmt = detect_format(src, **run_cols)
    return fmt


def load_trials(
    path: PathOrFrame,
    format: str = "auto",
    *,
    on_error: OnError = "raise",
    agent: str | None = None,
    agent_col: str | None = None,
    task_col: str | None = None,
    success_col: str | None = None,
    trial_col: str | None = "trial",
    run_id_col: str | None = "run_id",
    status_col: str | None = "status",
    error_status: str = "infra_error",
    agents: AgentsSpec = None,
    **options: Any,
) -> TrialSet:
    """Load trial records from a file (plain or gzip, detected by magic bytes) or a run-table DataFrame.

    Parameters
    ----------
    path : str, PathLike or pandas.DataFrame
        The input. DataFrames are read as run tables.
    format : {"auto", "jsonl", "json", "tau_bench", "runs", "metr", "duckdb"}
        ``"auto"`` detects from content (:func:`agentstats.io.detect.detect_format`). ``"metr"`` is an
        alias of ``"runs"``. ``"duckdb"`` is a run store (:mod:`agentstats.store`): pass ``run="name"``
        (optional when the store holds one run). See ``docs/data-format.md`` and ``docs/store.md``.
    on_error : {"raise", "skip"}
        ``"raise"``: every problem in the file is collected, then one :class:`TrialLoadError` lists them.
        ``"skip"``: valid records are returned, the problems are on ``result.skipped`` and a
        :class:`TrialLoadWarning` gives their count. Valid records are never dropped silently.
    agent : str, optional
        tau-bench only: the agent's name (default: the file name without ``.json``/``.gz``).
    agent_col, task_col, success_col : str, optional
        Run tables: agent, task and 0/1 success columns. Defaults: METR's ``alias``, ``task_id``,
        ``score_binarized`` when present, else ``agent``, ``task``/``task_id``, ``success``.
    trial_col, run_id_col, status_col : str or None
        Run tables: optional trial-index, run-id and status columns, used when present. Without a trial
        column, trials are numbered in order of appearance within (agent, task), from 0.
    error_status : {"infra_error", "agent_error"}
        tau-bench: status of records whose runner caught an exception (``info.error``); passed on to a reader
        added with :func:`register_format` when not the default (tau2: ``user_error`` simulations; Inspect:
        samples with an error).
    agents : str or list of str, optional
        Agents to keep: ``"a,b"``, ``"!human"``, shell patterns (:mod:`agentstats.io.agents`). The whole
        file is checked; the selection picks among its valid records. An entry that matches no agent is an
        error.
    **options
        Passed to a reader added with :func:`register_format`; ``run=`` for a run store; an error for the
        other built-in formats.

    Returns
    -------
    TrialSet
        A list of :class:`~agentstats.records.trial.Trial` in file order, with ``.source``, ``.format`` and
        ``.skipped``.

    Raises
    ------
    TrialLoadError
        (a ``ValueError``) with ``on_error="raise"`` when any record has a problem; each
        :class:`Problem` names the file, line (1-based; 0-based record/row index for JSON arrays,
        Parquet, DataFrames) and field.
    ValueError
        For a counts table (use :func:`load_counts`), an undetectable or unknown format, options that
        do not apply to the format, or an ``agents`` entry that matches no agent.
    TrialLoadError
        Also, whatever ``on_error``, for a file written by :func:`save_trials` that no longer matches its
        manifest (truncated or changed; :mod:`agentstats.files.manifest`); and with ``on_error="skip"`` when every
        record has a problem ("no usable records left after skipping N records", listing them).
    FileNotFoundError
        When ``path`` does not exist.
    """
    selection = AgentSelection.parse(agents)
    name = source_name(path)
    _check_complete(path, name)
    run_cols = {"agent_col": agent_col, "task_col": task_col, "success_col": success_col}
    fmt = _resolve_format(path, format, run_cols)
    if fmt == "counts":
        raise ValueError(
            f"{name} is a counts table (agent, task, n, c): it holds no per-trial records. Use "
            "agentstats.load_counts(...) for it, or agentstats.load_counts_any(...) to get counts from "
            "any input."
        )
    if fmt == "duckdb":
        trials, excluded = _select(_store_trials(path, name, options), selection, name)
        return TrialSet(trials, source=name, format=fmt, excluded=excluded)
    if fmt in _READERS and error_status != "infra_error":
        options["error_status"] = error_status
    if agent is not None and fmt in _READERS:
        options["agent"] = agent
    elif agent is not None and fmt != "tau_bench":
        raise ValueError(
            f"{option_name('agent')} applies to tau-bench files only; {name} is read as {fmt!r} "
            f"(trial records carry their agent; run tables name it with {option_name('agent_col')})"
        )
    if options and fmt not in _READERS:
        raise TypeError(f"load_trials() got unexpected option(s) {sorted(options)} for format {fmt!r}")
    log = ProblemLog(name, on_error)
    try:
        if fmt in _READERS:
            trials = list(_READERS[fmt](path, log, **options))
        elif fmt == "jsonl":
            trials = read_jsonl_trials(path, log)
        elif fmt == "json":
            trials = read_json_trials(path, log)
        elif fmt == "tau_bench":
            trials = read_tau_bench(path, log, agent=agent, error_status=error_status)
        elif fmt == "runs":
            opt = {"trial_col": trial_col, "run_id_col": run_id_col, "status_col": status_col}
            if isinstance(path, (str, os.PathLike)) and not _is_table_file(path):
                trials = read_runs(path, log, **run_cols, **opt)
            else:
                if isinstance(path, (str, os.PathLike)) and _magic(Path(path)) == PARQUET_MAGIC:
                    refuse_store_export(path)  # --format runs given explicitly: the same refusal as detection's
                df, offset = read_table(path, log, all_text=True)
                rows = [] if df is None else list(table_records(df, line_offset=offset))
                trials = runs_from_table_rows(rows, log, agent_col, task_col, success_col, **opt)
        else:  # pragma: no cover - normalize_format guards this
            raise ValueError(f"unsupported format {fmt!r}")
        skipped = log.finish(kept=len(trials))
    except TrialLoadError as exc:
        guess = _other_format(path, fmt) if normalize_format(format) != "auto" else None
        if guess is None:
            raise
        raise TrialLoadError(exc.problems, exc.source, skippable=False, head=exc.head, hint=(
            f"The content looks like the {guess!r} format, not {fmt!r}: give {option_name('format', guess)}, "
            "or let it be detected (auto).")) from None
    trials, excluded = _select(trials, selection, name)
    own = fmt in ("jsonl", "json")  # locations in this file (other readers may read several files, or convert)
    return TrialSet(trials, source=name, format=fmt, skipped=skipped, notes=log.notes, excluded=excluded,
                    locations=log.locations if own else None)


def _select(trials: list[Trial], selection: Any, name: str) -> tuple[list[Trial], set[str]]:
    """Keep the agents ``selection`` (``agents=``) keeps; return the trials and the agents left out."""
    if selection is None or not trials:
        return trials, set()
    present = {t.agent for t in trials}
    kept = selection.keep(present, name)
    return [t for t in trials if t.agent in kept], present - kept


def _other_format(path: Any, fmt: str) -> str | None:
    """Return the format detected from the content when it is not ``fmt`` (for the message of a failed read)."""
    if not isinstance(path, (str, os.PathLike)):
        return None
    try:
        guess = detect_format(path)
    except (ValueError, OSError):
        return None
    return guess if normalize_format(guess) != fmt else None


def _store_run(store: Any, name: str, options: dict[str, Any]) -> str:
    """Pick the run to read from a store: ``options["run"]``, or the store's only run."""
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


def _store_trials(path: Any, name: str, options: dict[str, Any]) -> list[Trial]:
    """Read one run of a run store (:mod:`agentstats.store`) as trials."""
    from agentstats.store.db import RunStore

    with RunStore.reader(path) as store:
        return list(store.iter_trials(_store_run(store, name, options)))


def _check_complete(path: Any, name: str) -> None:
    """Refuse a file that no longer matches the manifest written with it (whatever ``on_error``)."""
    if isinstance(path, (str, os.PathLike)) and os.path.isfile(path):
        check = check_manifest(path)
        if not check.ok:
            raise TrialLoadError([Problem(name, None, None, check.message)], name, skippable=False)


def _is_table_file(path: str | os.PathLike) -> bool:
    """Tell whether a file is a table: True for CSV / Parquet files (run tables in table form), False for JSONL."""
    from agentstats.io.detect import PARQUET_MAGIC, open_binary

    with open(path, "rb") as fh:
        if fh.read(4) == PARQUET_MAGIC:
            return True
    with open_binary(path) as fh:
        head = fh.read(4096).decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")
    return not head.startswith("{")


def load_counts(
    path_or_df: PathOrFrame,
    *,
    on_error: OnError = "raise",
    agent_col: str = "agent",
    task_col: str | None = None,
    n_col: str = "n",
    c_col: str = "c",
    n_missing_col: str = "n_missing",
    agents: AgentsSpec = None,
) -> pd.DataFrame:
    """Load and validate a counts table: CSV (plain or gzip), Parquet, or a pandas DataFrame.

    Parameters
    ----------
    path_or_df : str, PathLike or pandas.DataFrame
        One row per (agent, task) with columns ``agent``, ``task`` or ``task_id``, ``n``, ``c`` and optionally
        ``n_missing`` (names configurable).
    on_error : {"raise", "skip"}
        As in :func:`load_trials`; problems: missing column or value, non-integer, negative, ``c > n``,
        duplicate (agent, task).
    agent_col, task_col, n_col, c_col, n_missing_col : str
        Column names; ``task_col=None`` takes ``task_id`` if present, else ``task``.
    agents : str or list of str, optional
        Agents to keep, as in :func:`load_trials`.

    Returns
    -------
    pandas.DataFrame
        Columns ``agent, task_id, n, c, n_missing`` (int64 counts), sorted by agent then task_id;
        ``attrs["source"]``, ``attrs["format"] = "counts"``, ``attrs["skipped"]`` (list of Problem),
        ``attrs["gaps"] = None`` (a counts table has no trial numbers), ``attrs["excluded_agents"]``.

    Raises
    ------
    TrialLoadError
        With ``on_error="raise"`` when any row has a problem (file, CSV line or row index, column); with
        ``on_error="skip"`` when every row has one (nothing left).
    ValueError
        When an ``agents`` entry matches no agent.
    """
    selection = AgentSelection.parse(agents)
    name = source_name(path_or_df)
    log = ProblemLog(name, on_error)
    out = read_counts_table(
        path_or_df,
        log,
        agent_col=agent_col,
        task_col=task_col,
        n_col=n_col,
        c_col=c_col,
        n_missing_col=n_missing_col,
    )
    skipped = log.finish(kept=len(out))
    excluded: set[str] = set()
    if selection is not None and len(out):
        present = set(out["agent"])
        kept = selection.keep(present, name)
        excluded = present - kept
        out = out[out["agent"].isin(kept)].reset_index(drop=True)
    out.attrs.update(source=name, format="counts", skipped=skipped, gaps=None, excluded_agents=sorted(excluded))
    return out


@dataclass(frozen=True)
class Dataset:
    """What :func:`load` read: the trials (``None`` for a counts table) and the counts per (agent, task).

    Attributes
    ----------
    trials : TrialSet or None
        Per-trial records; ``None`` when the input was a counts table.
    counts : pandas.DataFrame or None
        Columns ``agent, task_id, n, c, n_missing`` (see :func:`agentstats.records.counts.to_counts`); ``None`` when
        some
        trials have no outcome yet (no ``success``/``reward``): score them first with
        :func:`agentstats.scoring.score_trials`.
    source, format : str
        File path (or ``"<DataFrame>"``) and the format read.
    skipped : list of Problem
        Records left out with ``on_error="skip"``.
    """

    trials: TrialSet | None
    counts: pd.DataFrame | None
    source: str
    format: str
    skipped: list[Problem]

    @property
    def needs_scoring(self) -> bool:
        """True when some trials have no outcome yet (``counts`` is then ``None``)."""
        return self.counts is None

    def summary_markdown(self) -> str:
        """One Markdown paragraph: source, format, size, skipped records.

        Files are named without their directory (a shared report should not show where it was made). Every string
        from the data (file name, format, a skipped record's problem) is escaped
        (:func:`agentstats._util.markup.md_text`),
        so the paragraph renders as text whatever the input holds.
        """
        c = self.counts
        read = f"Read **{md_text(os.path.basename(self.source) or self.source)}** (format {md_code(self.format)})"
        if c is None:
            trials: list[Trial] = list(self.trials or [])
            unscored = sum(t.outcome() is None for t in trials)
            text = (
                f"{read}: {plural(len({t.agent for t in trials}), 'agent')}, "
                f"{plural(len({t.task_id for t in trials}), 'task')}, {plural(len(trials), 'trial')}, of which "
                f"{unscored} {'has' if unscored == 1 else 'have'} no success/reward yet and "
                f"{'is' if unscored == 1 else 'are'} scored below."
            )
        else:
            text = (
                f"{read}: {plural(c['agent'].nunique(), 'agent')}, {plural(c['task_id'].nunique(), 'task')}, "
                f"{plural(int(c['n'].sum()), 'recorded trial')}, {int(c['n_missing'].sum())} missing (infrastructure "
                "errors, excluded)."
            )
        if self.skipped:
            lines = {(p.line, p.unit) for p in self.skipped}
            first = dataclasses.replace(self.skipped[0], source=os.path.basename(self.skipped[0].source))
            text += f" **{len(lines)} malformed record(s) skipped**, first: {md_text(first)}."
        return text


def load(path: PathOrFrame, format: str = "auto", *, on_error: OnError = "raise", **options: Any) -> Dataset:
    """Read any supported input: trials when it holds them, and always the counts per (agent, task).

    Parameters
    ----------
    path : str, PathLike or pandas.DataFrame
    format : str
        As in :func:`load_trials`, plus ``"counts"`` (``"csv"``, ``"parquet"`` are aliases).
    on_error : {"raise", "skip"}
    **options
        Passed to :func:`load_trials` (trial inputs) or :func:`load_counts` (counts tables).

    Returns
    -------
    Dataset

    Raises
    ------
    TrialLoadError, ValueError
        As the underlying loader, and :func:`agentstats.records.counts.to_counts` for unscored trials.
    """
    _check_complete(path, source_name(path))
    run_cols = {k: options.get(k) for k in ("agent_col", "task_col", "success_col")}
    fmt = _resolve_format(path, format, run_cols)
    if fmt == "counts":
        allowed = {"agent_col", "task_col", "n_col", "c_col", "n_missing_col", "agents"}
        given = {k: v for k, v in options.items() if v is not None}
        wrong = sorted(set(given) - allowed)
        if wrong:
            raise ValueError(
                f"{source_name(path)} is a counts table; option(s) {', '.join(wrong)} apply to trial "
                f"inputs only (counts tables take {', '.join(sorted(allowed))})"
            )
        table = load_counts(path, on_error=on_error, **given)
        return Dataset(
            trials=None,
            counts=table,
            source=table.attrs.get("source", source_name(path)),
            format="counts",
            skipped=list(table.attrs.get("skipped", [])),
        )
    trials = load_trials(path, fmt, on_error=on_error, **options)
    counts: pd.DataFrame | None
    if any(t.outcome() is None for t in trials):
        counts = None
    else:
        counts = to_counts(trials) if trials else counts_frame([], [], [], [], [])
        counts.attrs.update(
            source=trials.source, format=trials.format, skipped=trials.skipped,
            excluded_agents=trials.excluded_agents,
        )
        counts.attrs.setdefault("gaps", None)
    return Dataset(trials=trials, counts=counts, source=trials.source, format=trials.format, skipped=trials.skipped)


def load_counts_any(
    path: PathOrFrame, format: str = "auto", *, on_error: OnError = "raise", **options: Any
) -> pd.DataFrame:
    """Load counts per (agent, task) from any supported input: trials are counted, counts tables validated.

    Equivalent to ``load(path, format, on_error=on_error, **options).counts``.

    Returns
    -------
    pandas.DataFrame
        As :func:`agentstats.records.counts.to_counts`, with ``attrs`` ``source``, ``format``, ``skipped``.

    Raises
    ------
    TrialLoadError, ValueError
        As :func:`load`.
    """
    fast = _fast_counts(path, format, options, on_error)
    if fast is not None:
        return fast
    data = load(path, format, on_error=on_error, **options)
    if data.counts is None:
        assert data.trials is not None
        raise _unscored_error(data.trials)
    return data.counts


def _fast_counts(path: Any, format: str, options: dict[str, Any], on_error: OnError) -> pd.DataFrame | None:
    """Count the project's JSONL without keeping a Trial per line; ``None`` for every other input.

    A flat file is counted by :func:`agentstats.io.fastcounts.jsonl_counts` (pyarrow, vectorized checks); any
    other JSONL trials file record by record (:func:`agentstats.io.jsonl.count_jsonl_trials`).
    """
    from agentstats.io.fastcounts import jsonl_counts
    from agentstats.io.jsonl import count_jsonl_trials

    if not isinstance(path, (str, os.PathLike)) or set(options) - {"agents", "run"}:
        return None
    name = source_name(path)
    _check_complete(path, name)
    run_cols: dict[str, str | None] = {"agent_col": None, "task_col": None, "success_col": None}
    fmt = _resolve_format(path, format, run_cols)
    if fmt == "duckdb":
        return _store_counts(path, name, options)
    if fmt != "jsonl" or "run" in options:
        return None
    selection = AgentSelection.parse(options.get("agents"))
    counts = jsonl_counts(path, agents=selection)
    if counts is not None:
        counts.attrs.update(source=name, format="jsonl", skipped=[])
        return counts
    counts = count_jsonl_trials(path, ProblemLog(name, on_error), selection)
    counts.attrs.update(source=name, format="jsonl")
    return counts


def _store_counts(path: Any, name: str, options: dict[str, Any]) -> pd.DataFrame:
    """Count one run of a run store in SQL (:meth:`agentstats.store.RunStore.counts`)."""
    from agentstats.store.db import RunStore

    selection = AgentSelection.parse(options.get("agents"))
    with RunStore.reader(path) as store:
        counts = store.counts(_store_run(store, name, {k: v for k, v in options.items() if k != "agents"}))
    if selection is not None and len(counts):
        present = set(counts["agent"])
        kept = selection.keep(present, name)
        attrs = dict(counts.attrs)
        counts = counts[counts["agent"].isin(kept)].reset_index(drop=True)
        counts.attrs.update(attrs, excluded_agents=sorted(present - kept))
    return counts


def _unscored_error(trials: TrialSet) -> ValueError:
    """Build the error for trials without an outcome: :func:`to_counts` message plus located field hints."""
    try:
        to_counts(trials)
    except ValueError as exc:
        message = str(exc)
    else:  # pragma: no cover - only called with unscored trials
        message = "some trials have no outcome"
    if trials.notes:
        shown = "\n  ".join(str(p) for p in trials.notes[:10])
        more = f"\n  ... and {len(trials.notes) - 10} more" if len(trials.notes) > 10 else ""
        message += f"\nFields that look like misspelled outcome fields:\n  {shown}{more}"
    return ValueError(message)

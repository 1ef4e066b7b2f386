"""Public entry points: :func:`load`, :func:`load_trials`, :func:`load_counts`.

Each looks the input's format up in the registry (:mod:`agentstats.io.registry`; detected from the content when not
given) and reads it with that format's reader: nothing here names a format's reader, the run store's included.
*Trial* inputs (own JSONL/JSON, tau-bench files, run tables, a run store ...) hold one record per attempt and load as a
:class:`TrialSet`. *Counts* tables hold only ``n`` and ``c`` per (agent, task): they have no trials, so
:func:`load_trials` refuses them and points at :func:`load_counts`, which returns a counts table for every input.
*Record sets* (score records, eval sets, calibration sets) are read by :func:`load`, which returns what the format
holds.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, overload

import pandas as pd

from agentstats._util.markup import md_code, md_text
from agentstats._util.options import option_name
from agentstats._util.text import plural
from agentstats.files.manifest import check_manifest
from agentstats.files.sniff import check_readable_file
from agentstats.io.agents import AgentSelection
from agentstats.io.detect import NotATableError, detect_format, source_name
from agentstats.io.registry import Format, format_spec, normalize_format
from agentstats.records.counts import counts_frame, to_counts
from agentstats.records.evalset import Example
from agentstats.records.problems import LoadError, OnError, Problem, ProblemLog
from agentstats.records.scores import ScoreSet
from agentstats.records.trial import Status, Trial, check_error_status

__all__ = [
    "Dataset",
    "TrialSet",
    "load",
    "load_counts",
    "load_trials",
]

type PathOrFrame = str | os.PathLike | pd.DataFrame
AgentsSpec = str | list[str] | tuple[str, ...] | AgentSelection | None

#: How a message names what a record-set format holds, and where such a file goes.
_HOLDINGS = {
    "counts": "a counts table (agent, task, n, c)",
    "scores": "score records (id, metric, value: the gate's input)",
    "eval_set": "an eval set (id, input: the loop's examples)",
    "calibration": "a calibration set (item_id, metric, verdict, gold)",
}
#: The counts-table options of :func:`load_counts`.
_COUNTS_OPTIONS = ("agent_col", "task_col", "n_col", "c_col", "n_missing_col")


class TrialSet(list):
    """A list of :class:`~agentstats.records.trial.Trial` with where it came from and what was skipped.

    Attributes
    ----------
    source : str
        File path, or ``"<DataFrame>"``.
    format : str
        Format read (one of :func:`agentstats.io.registry.formats`).
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


def _resolve(src: Any, format: str, options: dict[str, Any]) -> Format:
    """Return the format of ``src``: ``format``, or the one its content shows (column options help detection)."""
    if isinstance(src, (str, os.PathLike)):
        check_readable_file(src)  # a named pipe would block forever
    fmt = normalize_format(format)
    if fmt == "auto":
        fmt = detect_format(
            src, agent_col=options.get("agent_col"), task_col=options.get("task_col"),
            success_col=options.get("success_col"),
            counts_cols=(options.get("n_col") or "n", options.get("c_col") or "c"),
        )
    return format_spec(fmt)


def _not_trials(spec: Format, name: str) -> ValueError:
    """Build the error for a file given to a trial loader that holds something else."""
    if spec.holds == "counts":
        return ValueError(
            f"{name} is a counts table (agent, task, n, c): it holds no per-trial records. Use "
            "agentstats.load_counts(...) for it (it gives counts from any input), or agentstats.load(...)."
        )
    return ValueError(
        f"{name} holds {_HOLDINGS[spec.holds]}, not trials or counts; read it with "
        f"agentstats.load(path, format={spec.name!r})"
    )


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
    format : str
        ``"auto"`` detects from content (:func:`agentstats.io.detect.detect_format`); else a format of
        :func:`agentstats.io.registry.formats` holding trials or an alias: ``"jsonl"``, ``"json"``, ``"tau_bench"``,
        ``"runs"`` (alias ``"metr"``), ``"tau2"``, ``"inspect"``, ``"otel"``, ``"fair_forge"``, ``"fai_jsonl"``,
        ``"bfcl"``, ``"duckdb"`` (a run store, :mod:`agentstats.store`: pass ``run="name"``, optional when the
        store holds one run). See ``docs/data-format.md`` and ``docs/store.md``.
    on_error : {"raise", "skip"}
        ``"raise"``: every problem in the file is collected, then one :class:`LoadError` lists them.
        ``"skip"``: valid records are returned, the problems are on ``result.skipped`` and a
        :class:`LoadWarning` gives their count. Valid records are never dropped silently.
    agent : str, optional
        Formats with one agent per file (tau-bench and the registered readers): the agent's name (tau-bench's
        default: the file name without ``.json``/``.gz``).
    agent_col, task_col, success_col : str, optional
        Run tables: agent, task and 0/1 success columns. Defaults: METR's ``alias``, ``task_id``,
        ``score_binarized`` when present, else ``agent``, ``task``/``task_id``, ``success``.
    trial_col, run_id_col, status_col : str or None
        Run tables: optional trial-index, run-id and status columns, used when present. Without a trial
        column, trials are numbered in order of appearance within (agent, task), from 0.
    error_status : {"infra_error", "agent_error"}
        Status of the records a source marks as errors
        (:func:`agentstats.records.trial.check_error_status`): tau-bench records whose runner caught an exception
        (``info.error``); passed on to a registered reader when not the default (tau2: ``user_error``
        simulations; Inspect: samples with an error).
    agents : str or list of str, optional
        Agents to keep: ``"a,b"``, ``"!human"``, shell patterns (:mod:`agentstats.io.agents`). The whole
        file is checked; the selection picks among its valid records. An entry that matches no agent is an
        error.
    **options
        Passed to a registered reader (``run=`` for a run store, ``task_from=`` for Fair Forge ...); an error for
        the built-in formats.

    Returns
    -------
    TrialSet
        A list of :class:`~agentstats.records.trial.Trial` in file order, with ``.source``, ``.format`` and
        ``.skipped``.

    Raises
    ------
    LoadError
        (a ``ValueError``) with ``on_error="raise"`` when any record has a problem; each
        :class:`Problem` names the file, line (1-based; 0-based record/row index for JSON arrays,
        Parquet, DataFrames) and field. Also, whatever ``on_error``, for a file written by :func:`save_trials` that
        no longer matches its manifest (truncated or changed; :mod:`agentstats.files.manifest`); and with
        ``on_error="skip"`` when every record has a problem ("no usable records left after skipping N records").
    ValueError
        For a counts table (use :func:`load_counts`) or a record set (use :func:`load`), an undetectable or
        unknown format, an ``error_status`` other than the two above, options that do not apply to the format,
        or an ``agents`` entry that matches no agent.
    TypeError
        For an option the format's reader does not take.
    FileNotFoundError
        When ``path`` does not exist.
    """
    status = check_error_status(error_status)
    selection = AgentSelection.parse(agents)
    name = source_name(path)
    _check_complete(path, name)
    named = {"agent": agent, "agent_col": agent_col, "task_col": task_col, "success_col": success_col,
             "trial_col": trial_col, "run_id_col": run_id_col, "status_col": status_col, "error_status": status}
    spec = _resolve(path, format, named)
    if spec.holds != "trials":
        raise _not_trials(spec, name)
    kwargs = _reader_options(spec, name, named, options)
    log = ProblemLog(name, on_error)
    try:
        trials = list(spec.read(path, log, **kwargs))
        skipped = log.finish(kept=len(trials))
    except LoadError as exc:
        guess = _other_format(path, spec.name) if normalize_format(format) != "auto" else None
        if guess is None:
            raise
        raise LoadError(exc.problems, exc.source, skippable=False, head=exc.head, hint=(
            f"The content looks like the {guess!r} format, not {spec.name!r}: give {option_name('format', guess)}, "
            "or let it be detected (auto).")) from None
    if not trials:
        raise no_trials_error(name, spec.name, log.notes)
    trials, excluded = _select(trials, selection, name)
    return TrialSet(trials, source=name, format=spec.name, skipped=skipped, notes=log.notes, excluded=excluded,
                    locations=log.locations if spec.locates else None)


def no_trials_error(name: str, fmt: str, notes: Sequence[Problem] = ()) -> LoadError:
    """Build the one refusal of an input that holds no trial (every loader and ``import`` say the same).

    An empty tau-bench array, tau2 ``simulations: []``, an OTLP export without spans: nothing to estimate or store,
    which an empty table would hide.
    """
    why = "; ".join(p.message for p in notes if p.line is None)
    return LoadError([Problem(name, None, None, f"no trials in this {fmt} input{f' ({why})' if why else ''}: "
                              "nothing to count (did the run finish and write its results?)")],
                     name, skippable=False, head=f"{name} holds no trials")


class UnknownOptionError(TypeError, ValueError):
    """An option the input's format does not take.

    A ``TypeError`` to Python callers, an input error (exit 2) to the command line, which treats ``ValueError`` as bad
    input.
    """


def _reader_options(spec: Format, name: str, named: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """Return the keyword arguments of ``spec``'s reader; raise for an option it does not take."""
    agent = named["agent"]
    if spec.options is None:  # a registered reader: its options, agent when given, error_status when not default
        params = inspect.signature(spec.read).parameters
        if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
            wrong = sorted(k for k in options if k not in params)
            if wrong:
                raise ValueError(f"{', '.join(option_name(k) for k in wrong)} "
                                 f"{'does' if len(wrong) == 1 else 'do'} not apply to {name}, read as {spec.name!r}")
        kwargs = dict(options)
        if agent is not None:
            kwargs["agent"] = agent
        if named["error_status"] is not Status.infra_error:
            kwargs["error_status"] = named["error_status"]
        return kwargs
    if agent is not None and "agent" not in spec.options:
        raise ValueError(
            f"{option_name('agent')} applies to tau-bench files only; {name} is read as {spec.name!r} "
            f"(trial records carry their agent; run tables name it with {option_name('agent_col')})"
        )
    if options:
        if "run" in options:  # `--run` names a run of a run store: said as an input error (exit 2)
            raise UnknownOptionError(f"{option_name('run')} picks a run of a run store; {name} is read as "
                                     f"{spec.name!r}, not a run store (leave {option_name('run')} out)")
        raise UnknownOptionError(f"load_trials() got unexpected option(s) {sorted(options)} for format "
                                 f"{spec.name!r} ({name})")
    return {k: named[k] for k in spec.options}


def _select(trials: list[Trial], selection: Any, name: str) -> tuple[list[Trial], set[str]]:
    """Keep the agents ``selection`` (``agents=``) keeps; return the trials and the agents left out."""
    if selection is None or not trials:
        return trials, set()
    present = {t.agent for t in trials}
    kept = selection.keep(present, name)
    return [t for t in trials if t.agent in kept], present - kept


def select_counts(counts: pd.DataFrame, agents: AgentsSpec, name: str) -> pd.DataFrame:
    """Keep the rows of the agents ``agents`` keeps; ``attrs`` kept, ``attrs["excluded_agents"]`` set.

    Raises
    ------
    ValueError
        When an entry of ``agents`` matches no agent.
    """
    selection = AgentSelection.parse(agents)
    if selection is None or not len(counts):
        counts.attrs.setdefault("excluded_agents", [])
        return counts
    present = set(counts["agent"])
    kept = selection.keep(present, name)
    attrs = dict(counts.attrs)
    out = counts[counts["agent"].isin(kept)].reset_index(drop=True)
    out.attrs.update(attrs, excluded_agents=sorted(present - kept))
    return out


def _other_format(path: Any, fmt: str) -> str | None:
    """Return the format detected from the content when it is not ``fmt`` (for the message of a failed read)."""
    if not isinstance(path, (str, os.PathLike)):
        return None
    try:
        guess = detect_format(path)
    except (ValueError, OSError):
        return None
    return guess if normalize_format(guess) != fmt else None


def _check_complete(path: Any, name: str) -> None:
    """Refuse a file that no longer matches the manifest written with it (whatever ``on_error``)."""
    if isinstance(path, (str, os.PathLike)) and os.path.isfile(path):
        check = check_manifest(path)
        if not check.ok:
            raise LoadError([Problem(name, None, None, check.message)], name, skippable=False)


def load_counts(
    path: PathOrFrame, format: str = "auto", *, on_error: OnError = "raise", agents: AgentsSpec = None,
    **options: Any,
) -> pd.DataFrame:
    """Load counts per (agent, task) from any input: a counts table is validated, trials are counted.

    Parameters
    ----------
    path : str, PathLike or pandas.DataFrame
        A counts table (CSV plain or gzip, Parquet, DataFrame: one row per (agent, task) with columns ``agent``,
        ``task`` or ``task_id``, ``n``, ``c`` and optionally ``n_missing``), or any trial input of
        :func:`load_trials`.
    format : str
        As :func:`load_trials`, plus ``"counts"`` (``"csv"``, ``"parquet"`` are aliases); ``"auto"`` detects.
    on_error : {"raise", "skip"}
        As in :func:`load_trials`; a counts table's problems: missing column or value, non-integer, negative,
        ``c > n``, duplicate (agent, task).
    agents : str or list of str, optional
        Agents to keep, as in :func:`load_trials`.
    **options
        A counts table: ``agent_col``, ``task_col`` (``None`` takes ``task_id`` if present, else ``task``), ``n_col``,
        ``c_col``, ``n_missing_col``. Trial inputs: the options of :func:`load_trials`.

    Returns
    -------
    pandas.DataFrame
        Columns ``agent, task_id, n, c, n_missing`` (int64 counts), sorted by agent then task_id (as
        :func:`agentstats.records.counts.to_counts`); ``attrs``: ``source``, ``format``, ``skipped`` (list of
        Problem), ``gaps`` (``None`` for a counts table, which has no trial numbers), ``excluded_agents``.

    Raises
    ------
    LoadError
        With ``on_error="raise"`` when any row or record has a problem (file, line or row index, column); with
        ``on_error="skip"`` when every one has (nothing left).
    ValueError
        When an ``agents`` entry matches no agent, trials have no outcome yet (score them first), the input is a
        record set, or an option does not apply to the input (as :func:`load_trials`).
    """
    name = source_name(path)
    _check_complete(path, name)
    try:
        spec = _resolve(path, format, options)
    except NotATableError as exc:
        if not exc.columns & {options.get("n_col") or "n", options.get("c_col") or "c"}:
            raise
        spec = format_spec("counts")  # a counts table short of a column: its reader says which, located
    if spec.holds == "counts":
        return _read_counts(spec, path, name, on_error, agents, options)
    if spec.holds != "trials":
        raise _not_trials(spec, name)
    if spec.counts is not None:
        fast = spec.counts(path, name, on_error, {**options, **({"agents": agents} if agents is not None else {})})
        if fast is not None and not len(fast) and not fast.attrs.get("excluded_agents"):
            raise no_trials_error(name, spec.name)
        if fast is not None:
            return fast
    trials = load_trials(path, spec.name, on_error=on_error, agents=agents, **options)
    counts = _trial_counts(trials)
    if counts is None:
        raise _unscored_error(trials)
    return counts


def _read_counts(spec: Format, path: Any, name: str, on_error: OnError, agents: AgentsSpec,
                 options: dict[str, Any]) -> pd.DataFrame:
    """Read and validate a counts table (the ``counts`` format); see :func:`load_counts`."""
    given = {k: v for k, v in options.items() if v is not None}
    wrong = sorted(set(given) - set(_COUNTS_OPTIONS))
    if wrong:
        raise ValueError(
            f"{name} is a counts table; option(s) {', '.join(wrong)} apply to trial inputs only (counts tables take "
            f"{', '.join(sorted({*_COUNTS_OPTIONS, 'agents'}))})"
        )
    selection = AgentSelection.parse(agents)
    log = ProblemLog(name, on_error)
    out = spec.read(path, log, **given)
    skipped = log.finish(kept=len(out))
    out = select_counts(out, selection, name)
    out.attrs.update(source=name, format=spec.name, skipped=skipped, gaps=None)
    return out


def _trial_counts(trials: TrialSet) -> pd.DataFrame | None:
    """Count loaded trials (``attrs`` set); ``None`` when some trial has no outcome yet."""
    if any(t.outcome() is None for t in trials):
        return None
    counts = to_counts(trials) if trials else counts_frame([], [], [], [], [])
    counts.attrs.update(source=trials.source, format=trials.format, skipped=trials.skipped,
                        excluded_agents=trials.excluded_agents, notes=trials.notes)
    counts.attrs.setdefault("gaps", None)
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


@dataclass(frozen=True)
class Dataset:
    """What :func:`load` read from a trial or counts input: the trials (``None`` for a counts table) and the counts.

    Attributes
    ----------
    trials : TrialSet or None
        Per-trial records; ``None`` when the input was a counts table.
    counts : pandas.DataFrame or None
        Columns ``agent, task_id, n, c, n_missing`` (see :func:`agentstats.records.counts.to_counts`); ``None`` when
        some trials have no outcome yet (no ``success``/``reward``): score them first with
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
        (:func:`agentstats._util.markup.md_text`), so the paragraph renders as text whatever the input holds.
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


@overload
def load(path: Any, format: Literal["scores"], *, on_error: OnError = ..., **options: Any) -> ScoreSet: ...
@overload
def load(path: Any, format: Literal["eval_set"], *, on_error: OnError = ..., **options: Any) -> list[Example]: ...
@overload
def load(path: Any, format: Literal["calibration"], *, on_error: OnError = ..., **options: Any) -> pd.DataFrame: ...
@overload
def load(path: Any, format: str = ..., *, on_error: OnError = ...,
         **options: Any) -> Dataset | ScoreSet | list[Example] | pd.DataFrame: ...


def load(path: Any, format: str = "auto", *, on_error: OnError = "raise",
         **options: Any) -> Dataset | ScoreSet | list[Example] | pd.DataFrame:
    """Read any supported input and return what its format holds.

    Parameters
    ----------
    path : str, PathLike, pandas.DataFrame (or, for score records, an iterable of mappings)
    format : str
        ``"auto"`` (detected from the content), a format of :func:`agentstats.io.registry.formats` or an alias:
        the trial formats of :func:`load_trials`, ``"counts"``, ``"scores"`` (score records, the gate's input:
        :mod:`agentstats.records.scores`), ``"eval_set"`` (the loop's examples: :mod:`agentstats.records.evalset`;
        never detected, as an FAI-style answers file looks the same), ``"calibration"`` (a calibration set:
        :mod:`agentstats.records.calibration`).
    on_error : {"raise", "skip"}
        As :func:`load_trials`; score records and eval sets are read whole (``"raise"`` only).
    **options
        Passed to :func:`load_trials` (trial inputs), :func:`load_counts` (counts tables) or the record set's reader.

    Returns
    -------
    Dataset or ScoreSet or list of Example or pandas.DataFrame
        Trial and counts inputs: a :class:`Dataset` (the trials, and the counts per (agent, task) when every trial
        is scored). Score records: a :class:`~agentstats.records.scores.ScoreSet`. An eval set: the
        :class:`~agentstats.records.evalset.Example` list, in file order. A calibration set: its frame
        (:data:`agentstats.records.calibration.CALIBRATION_COLUMNS`).

    Raises
    ------
    LoadError, ValueError
        As the format's reader (every problem with file, line and field), and as :func:`load_trials`.
    """
    name = source_name(path)
    _check_complete(path, name)
    spec = _resolve(path, format, options)
    if spec.holds == "counts":
        agents = options.pop("agents", None)
        table = _read_counts(spec, path, name, on_error, agents, options)
        return Dataset(trials=None, counts=table, source=table.attrs.get("source", name), format=spec.name,
                       skipped=list(table.attrs.get("skipped", [])))
    if spec.holds == "trials":
        trials = load_trials(path, spec.name, on_error=on_error, **options)
        return Dataset(trials=trials, counts=_trial_counts(trials), source=trials.source, format=trials.format,
                       skipped=trials.skipped)
    return spec.read(path, on_error=on_error, **options)

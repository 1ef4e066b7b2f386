"""Load problems and the error that lists them.

Every loader (trials, counts, score records, eval sets, calibration sets) collects *all* problems it finds in a
file before deciding what to do, so that a user fixes a file in one pass:

* ``on_error="raise"`` (default): one :class:`LoadError` listing every :class:`Problem`;
* ``on_error="skip"``: the valid records are returned, the problems are attached to the result
  (``.skipped``) and a :class:`LoadWarning` gives their count.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Literal

from agentstats._util.options import option_text

__all__ = ["LoadError", "LoadWarning", "OnError", "Problem", "ProblemLog"]

OnError = Literal["raise", "skip"]

#: How many problems the error *message* spells out; all of them are on ``LoadError.problems``.
MAX_LISTED = 50


@dataclass(frozen=True, slots=True)
class Problem:
    """One problem found while loading.

    Parameters
    ----------
    source : str
        File path (or ``"<DataFrame>"``) the problem is in.
    line : int or None
        Where in the source: a 1-based line number for JSONL and CSV (the CSV header is line 1), a
        0-based record index for JSON arrays, a 0-based row index for Parquet files and DataFrames; see
        ``unit``. ``None`` when the problem concerns the whole file.
    field : str or None
        Dotted path of the offending field (pydantic's error location, e.g. ``"interactions.0.tool_calls"``),
        or ``None`` when the whole record is at fault (malformed JSON).
    message : str
        What is wrong.
    unit : {"line", "record", "row"}
        What ``line`` counts.
    """

    source: str
    line: int | None
    field: str | None
    message: str
    unit: str = "line"

    def where(self) -> str:
        """``"path, line 3, field 'trial'"`` style location."""
        parts = [self.source]
        if self.line is not None:
            if self.unit == "line":
                parts.append(f"line {self.line}")
            else:
                parts.append(f"{self.unit} {self.line} (0-based)")
        if self.field is not None:
            parts.append(f"field {self.field!r}")
        return ", ".join(parts)

    def __str__(self) -> str:
        return f"{self.where()}: {self.message}"


#: A problem repeated on at least this many records is listed once, with its count.
REPEAT_COLLAPSE = 5


class LoadError(ValueError):
    """Raised by every loader when its input has problems and ``on_error="raise"`` (or nothing usable is left).

    Attributes
    ----------
    problems : list of Problem
        Every problem found, in file order.
    source : str
        The file (or ``"<DataFrame>"``).
    head : str
        The message's first line, before the listed problems (default ``"N problems in SOURCE"``).
    """

    def __init__(
        self,
        problems: list[Problem],
        source: str,
        *,
        skippable: bool = True,
        hint: str | None = None,
        head: str | None = None,
    ):
        self.problems = list(problems)
        self.source = source
        self.skippable = skippable
        self.hint = hint
        n = len(self.problems)
        head = head if head is not None else f"{n} problem{'s' if n != 1 else ''} in {source}"
        self.head = head
        # The same problem on many records (typically: a wrong --format, a column that no record has) is said
        # once with the count, not once per line.
        groups: dict[tuple, list[Problem]] = {}
        for p in self.problems:
            groups.setdefault((p.field, p.message), []).append(p)
        lines: list[str] = []
        for same in groups.values():
            if len(same) >= REPEAT_COLLAPSE:
                where = ", ".join(str(p.line) for p in same[:3] if p.line is not None)
                lines.append(
                    f"  {same[0]}  [the same on {len(same)} records: {same[0].unit or 'line'} {where}, ...]"
                )
            else:
                lines.extend(f"  {p}" for p in same)
        if len(lines) > MAX_LISTED:
            lines = [*lines[:MAX_LISTED], f"  ... and more (all {n} in LoadError.problems)"]
        if hint is None and skippable:
            hint = ("Fix them, or skip the bad records and get a list of what was skipped: "
                    f"{option_text(cli='--skip-bad', python='on_error=' + repr('skip'))}.")
        super().__init__("\n".join([head + ":", *lines, *([hint] if hint else [])]))

    def __reduce__(self) -> tuple[object, ...]:
        """Pickle as the error it is, message and attributes unchanged (from a worker process or a Ray task).

        An exception pickles as ``type(*args)``, and ``args`` here is the message alone, which ``__init__`` does not
        take; the message is not rebuilt either (its hint may name a command-line option, as said where it was raised).
        """
        return _rebuilt_error, (type(self), str(self), dict(self.__dict__))


def _rebuilt_error(cls: type[LoadError], message: str, state: dict[str, object]) -> LoadError:
    """Return a :class:`LoadError` (or subclass) with ``message`` and the attributes ``state``, without ``__init__``."""
    err = cls.__new__(cls)
    ValueError.__init__(err, message)
    err.__dict__.update(state)
    return err


class LoadWarning(UserWarning):
    """Warned when ``on_error="skip"`` dropped records."""


class ProblemLog:
    """Collects problems for one source and applies the ``on_error`` policy at the end."""

    def __init__(self, source: str, on_error: OnError = "raise", unit: str = "line"):
        if on_error not in ("raise", "skip"):
            raise ValueError(f"on_error must be 'raise' or 'skip', got {on_error!r}")
        self.source = source
        self.on_error = on_error
        self.unit = unit
        self.problems: list[Problem] = []
        self.bad_records: set[int | None] = set()
        #: Remarks on records that were kept (e.g. a field that looks like a misspelled outcome field).
        self.notes: list[Problem] = []
        #: Where each kept trial was read: (agent, task_id, trial) -> (unit, location), filled by the readers.
        self.locations: dict[tuple[str, str, int], tuple[str, int]] = {}
        #: A problem that leaves no record to read (a file parsed as one JSON value, cut short): skipping cannot help.
        self.whole_file = False

    def add(
        self, line: int | None, field: str | None, message: str, unit: str | None = None, *, whole_file: bool = False
    ) -> None:
        """Record one problem at ``line`` (in ``unit``, default this log's unit).

        ``whole_file=True``: the problem (located at ``line``) spoils the whole file, e.g. malformed JSON in a file
        read as one JSON value; the error then does not offer to skip bad records.
        """
        self.problems.append(Problem(self.source, line, field, message, unit or self.unit))
        self.bad_records.add(line)
        self.whole_file |= whole_file

    def note(self, line: int | None, field: str | None, message: str, unit: str | None = None) -> None:
        """Record a remark on a record that is kept (not a problem: the record is not skipped)."""
        self.notes.append(Problem(self.source, line, field, message, unit or self.unit))

    def add_pydantic(
        self, line: int | None, exc: Exception, prefix: str = "", unit: str | None = None
    ) -> None:
        """Record each error of a pydantic ``ValidationError`` with its location as the field."""
        for err in exc.errors(include_url=False):  # type: ignore[attr-defined]
            loc = ".".join(str(x) for x in err.get("loc", ()))
            field = f"{prefix}{loc}" if loc else (prefix.rstrip(".") or None)
            msg = err.get("msg", "invalid").removeprefix("Value error, ")
            if err.get("type") not in ("missing", "value_error") and "input" in err:
                msg = f"{msg} (got {_short(err['input'])})"
            self.add(line, field, msg, unit)

    def finish(self, n_records: int | None = None, *, kept: int | None = None) -> list[Problem]:
        """Raise :class:`LoadError` (raise mode) or warn and return the problems (skip mode).

        Parameters
        ----------
        n_records : int, optional
            Records read (not used; kept for the callers that give it).
        kept : int, optional
            Records left after skipping the bad ones. ``0`` with problems raises in skip mode too: a skip that
            leaves nothing would hand an empty result to the analysis, which then fails far from the cause.

        Raises
        ------
        LoadError
            In raise mode, listing every problem; in skip mode when ``kept == 0``: "no usable records left after
            skipping N records", listing them (``skippable=False``).
        """
        if not self.problems:
            return []
        # in file order, whatever order the checks found them in (duplicates are found at the end)
        self.problems.sort(key=lambda p: -1 if p.line is None else p.line)
        if self.on_error == "raise":
            # a problem of the whole file (unreadable, corrupt compression) is no record to skip
            raise LoadError(self.problems, self.source,
                                 skippable=not self.whole_file and any(p.line is not None for p in self.problems))
        n_bad = len(self.bad_records)
        if kept == 0:
            raise LoadError(
                self.problems,
                self.source,
                skippable=False,
                head=f"{self.source}: no usable records left after skipping {n_bad} record{'s' if n_bad != 1 else ''}",
            )
        warnings.warn(
            f"{self.source}: skipped {n_bad} record{'s' if n_bad != 1 else ''} with "
            f"{len(self.problems)} problem{'s' if len(self.problems) != 1 else ''} "
            f"(see .skipped); first: {self.problems[0]}",
            LoadWarning,
            stacklevel=4,
        )
        return list(self.problems)


def _short(value: object, width: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def json_error_text(msg: str, column: int) -> str:
    """``"<json's message> at column N"``: json's ``Unterminated string starting at`` ends in "at" already."""
    return f"{msg.removesuffix(' at')} at column {column}"

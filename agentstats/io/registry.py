"""The format registry: every input agentstats reads, by name, with its aliases, reader and content detector.

A format says what its files hold (:data:`Holds`) and how to read them; :mod:`agentstats.io.loaders` only looks
formats up here, and :func:`agentstats.io.detect.detect_format` asks the registered detectors. Formats come from three
places:

* the readers of :mod:`agentstats.io` (trial records, tau-bench, run tables, counts tables, tau2, Inspect,
  OpenTelemetry, Fair Forge, BFCL, score records, eval sets, calibration sets), registered when :mod:`agentstats.io`
  is imported;
* installed packages, through the entry-point group ``agentstats.formats`` (``name = "module:function"``; the
  function registers its formats): loaded on the first lookup, so :mod:`agentstats.io` never imports them. The run
  store registers ``duckdb`` this way (``pyproject.toml``: ``duckdb = "agentstats.store.format:register"``), as
  pytest and inspect_ai let other packages extend them;
* :func:`register_format` called by user code.

Readers, by what the format holds:

* ``"trials"``: ``reader(src, log, **options) -> list[Trial]``; ``log`` is a
  :class:`~agentstats.records.problems.ProblemLog` that receives every problem (location, field, message) instead of an
  exception; :func:`agentstats.io.load_trials` applies ``on_error`` and the agent selection.
* ``"counts"``: ``reader(src, log, **options) -> pandas.DataFrame`` (a validated counts table).
* a record set (``"scores"``, ``"eval_set"``, ``"calibration"``): ``reader(src, *, on_error, **options)``, which
  reads, validates and returns the set itself (raising :class:`~agentstats.records.problems.LoadError`).
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "ENTRY_POINT_GROUP",
    "Format",
    "Holds",
    "aliases",
    "detectors",
    "format_spec",
    "formats",
    "normalize_format",
    "register_detector",
    "register_format",
    "sniffers",
    "unregister_format",
]

#: What a format's files hold, which decides what :func:`agentstats.io.load` returns for it.
Holds = Literal["trials", "counts", "scores", "eval_set", "calibration"]
#: Entry-point group through which installed packages add formats.
ENTRY_POINT_GROUP = "agentstats.formats"


@dataclass(frozen=True)
class Format:
    """One input format.

    Attributes
    ----------
    name : str
        The format's name (``format=name``).
    holds : {"trials", "counts", "scores", "eval_set", "calibration"}
        What its files hold.
    read : callable
        The reader (signature by ``holds``: see the module docstring).
    aliases : tuple of str
        Other names for it.
    detect : callable or None
        ``detect(path, head) -> bool`` on the file's first 64 KiB (decompressed when gzip): ``format="auto"``
        recognises the format from the content. Must be cheap and must not raise on content it does not know.
    sniff : callable or None
        ``sniff(path) -> bool``, asked before any byte of the file is read: for files that may be held open by this
        process, whose bytes must not be opened (:mod:`agentstats.files.sniff`); a run store is one.
    options : tuple of str or None
        Trial formats: the keywords of :func:`agentstats.io.load_trials` the reader takes (``agent``, run-table
        columns ...), and no other option. ``None``: the reader takes the extra keyword options, ``agent`` when given
        and ``error_status`` when not the default.
    counts : callable or None
        ``counts(path, name, on_error, options) -> DataFrame | None``: counts per (agent, task) without building a
        :class:`~agentstats.records.trial.Trial` per record (``None``: use the reader).
    locates : bool
        The reader records where each trial is in this one file (``log.locations``), for ``TrialSet.location``.
    """

    name: str
    holds: Holds
    read: Callable[..., Any]
    aliases: tuple[str, ...] = ()
    detect: Callable[[Path, bytes], bool] | None = None
    sniff: Callable[[Path], bool] | None = None
    options: tuple[str, ...] | None = None
    counts: Callable[..., Any] | None = None
    locates: bool = False


_FORMATS: dict[str, Format] = {}
_ALIASES: dict[str, str] = {}
#: Detectors added without a format of their own (:func:`register_detector`), by format name.
_DETECTORS: dict[str, Callable[[Path, bytes], bool]] = {}
_PLUGINS = {"loaded": False}
_PLUGIN_LOCK = threading.RLock()


def register_format(
    name: str,
    reader: Callable[..., Any],
    *,
    holds: Holds = "trials",
    aliases: tuple[str, ...] = (),
    detect: Callable[[Any, bytes], bool] | None = None,
    sniff: Callable[[Any], bool] | None = None,
    options: tuple[str, ...] | None = None,
    counts: Callable[..., Any] | None = None,
    locates: bool = False,
) -> None:
    """Add (or replace) an input format: :func:`agentstats.io.load` and its siblings then read it by name.

    Parameters
    ----------
    name : str
        Format name, e.g. ``"bfcl"``.
    reader : callable
        Signature by ``holds`` (module docstring); for trials ``reader(path, log, **options) -> list[Trial]``
        (:func:`agentstats.io.jsonl.build_trials` validates records and rejects duplicate keys).
    holds : {"trials", "counts", "scores", "eval_set", "calibration"}
        What the files hold (default trials).
    aliases : tuple of str
        Other names for the same format.
    detect, sniff, options, counts, locates
        See :class:`Format`. With ``detect`` (or ``sniff``), ``format="auto"`` recognises the format from the content.

    Raises
    ------
    ValueError
        A blank name, the reserved name ``auto``, or an alias another format already has.
    """
    key = name.strip().lower()
    names = [key, *(a.strip().lower() for a in aliases)]
    if not key or "auto" in names:
        raise ValueError(f"register_format: {name!r} cannot be a format name (blank, or 'auto')")
    taken = sorted(a for a in names if _ALIASES.get(a, key) != key)
    if taken:
        raise ValueError(f"register_format: {', '.join(map(repr, taken))} already name{'s' if len(taken) == 1 else ''} "
                         f"format {_ALIASES[taken[0]]!r}")
    _FORMATS[key] = Format(key, holds, reader, tuple(names[1:]), detect, sniff, options, counts, locates)
    for alias in names:
        _ALIASES[alias] = key


def register_detector(name: str, detector: Callable[[Path, bytes], bool]) -> None:
    """Let :func:`agentstats.io.detect.detect_format` recognise format ``name`` by ``detector(path, head)``.

    The same as ``detect=`` of :func:`register_format`, for a format registered without one.
    """
    _DETECTORS[name.strip().lower()] = detector


def unregister_format(name: str) -> None:
    """Remove a format, its aliases and its detector (what :func:`register_format` added)."""
    key = normalize_format(name)
    _FORMATS.pop(key, None)
    _DETECTORS.pop(key, None)
    for alias in [a for a, k in _ALIASES.items() if k == key]:
        del _ALIASES[alias]


def _load_plugins() -> None:
    """Register the formats of installed packages (entry-point group :data:`ENTRY_POINT_GROUP`), once."""
    with _PLUGIN_LOCK:
        if _PLUGINS["loaded"]:
            return
        _PLUGINS["loaded"] = True  # before loading: a plugin's register() looks formats up too
        seen = set()
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            if ep.value in seen:  # an editable install may list its entry points twice
                continue
            seen.add(ep.value)
            try:
                ep.load()()
            except Exception as exc:  # a broken plugin must not stop the other formats from loading
                warnings.warn(f"the input format plugin {ep.name!r} ({ep.value}) could not be loaded: {exc}",
                              RuntimeWarning, stacklevel=3)


def normalize_format(fmt: str) -> str:
    """Map a user-given format name (or alias) to a registered format's name, or ``"auto"``.

    Raises
    ------
    ValueError
        For an unknown name, listing the known ones.
    """
    _load_plugins()
    key = str(fmt).strip().lower()
    if key == "auto":
        return key
    if key not in _ALIASES:
        raise ValueError(f"unknown format {fmt!r}; use one of: auto, {', '.join(sorted(_ALIASES))}")
    return _ALIASES[key]


def format_spec(name: str) -> Format:
    """Return the registered format ``name`` (an alias is resolved).

    Raises
    ------
    ValueError
        For an unknown name (or ``"auto"``, which names no format).
    """
    key = normalize_format(name)
    if key == "auto":
        raise ValueError("format 'auto' is detected from the content; it names no format")
    return _FORMATS[key]


def formats(holds: Holds | tuple[Holds, ...] | None = None) -> list[str]:
    """Names of the registered formats, in registration order; only those holding ``holds`` when given."""
    _load_plugins()
    wanted = (holds,) if isinstance(holds, str) else holds
    return [f.name for f in _FORMATS.values() if wanted is None or f.holds in wanted]


def aliases() -> dict[str, str]:
    """Every accepted name -> the format it names (the names themselves included)."""
    _load_plugins()
    return dict(_ALIASES)


def detectors() -> list[tuple[str, Callable[[Path, bytes], bool]]]:
    """``(format, detect)`` for the content detectors, in registration order."""
    _load_plugins()
    found = [(f.name, f.detect) for f in _FORMATS.values() if f.detect is not None]
    return [*found, *((n, d) for n, d in _DETECTORS.items() if n not in dict(found))]


def sniffers() -> list[tuple[str, Callable[[Path], bool]]]:
    """``(format, sniff)`` for the detectors that look at a path before any of its bytes is read."""
    _load_plugins()
    return [(f.name, f.sniff) for f in _FORMATS.values() if f.sniff is not None]

"""SIGINT and SIGTERM, the signals that ask a process to stop: one rule for every command and for live capture.

SIGTERM (``kill``, a container stop, a CI timeout) is treated as SIGINT (Ctrl-C) is: the handler raises an exception
that unwinds the work, so what an interrupt already does (atomic writes discard their temporary files, a report
keeps its partial notebook and stops its kernel, samplers end their chain processes, a capture flushes its records
and is marked ``interrupted``) happens for both. SIGINT raises ``KeyboardInterrupt``, SIGTERM :class:`Terminated`
(a ``KeyboardInterrupt``, so every ``except KeyboardInterrupt`` handles it); the exit status is
``128 + signal number`` (130 for SIGINT, 143 for SIGTERM), the shell's convention.

* :func:`stop_signals_raise`: the command wrapper's handlers (:func:`agentstats.cli.common.command`);
* :func:`stop_signals_chained`: notes a stop signal and passes it on to the handler installed before (samplers);
* :func:`stop_signals_ignored`: ignores both while something that must not be cut short is written;
* :func:`sigterm_exits`: outside a command (a program with a captured run), SIGTERM raises ``SystemExit(143)``
  so that ``with`` blocks and ``atexit`` run; installed only where SIGTERM still has its default action.

Handlers are installed from the main thread only (Python's rule); elsewhere these do nothing.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

__all__ = [
    "STOP_SIGNALS",
    "StopState",
    "Terminated",
    "exit_status",
    "sigterm_exits",
    "stop_signals_chained",
    "stop_signals_ignored",
    "stop_signals_raise",
]

#: The signals that ask a process to stop.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived: handled wherever ``KeyboardInterrupt`` is (see the module)."""

    def __init__(self, signum: int = signal.SIGTERM):
        super().__init__(f"terminated by signal {signum}")
        self.signum = signum


def exit_status(signum: int) -> int:
    """Return ``128 + signum``: 130 for SIGINT, 143 for SIGTERM."""
    return 128 + int(signum)


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@dataclass
class StopState:
    """Which stop signal arrived first (``signum``; None while none has)."""

    signum: int | None = None

    @property
    def hit(self) -> bool:
        """Whether a stop signal arrived."""
        return self.signum is not None


def _raise_for(signum: int) -> None:
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Terminated(signum)


@contextlib.contextmanager
def stop_signals_raise() -> Iterator[StopState]:
    """Within the block, SIGINT raises ``KeyboardInterrupt`` and SIGTERM :class:`Terminated`; the first is recorded.

    Yields
    ------
    StopState
        ``signum`` of the first stop signal, or None.
    """
    state = StopState()

    def handler(signum: int, frame: Any) -> None:
        if state.signum is None:
            state.signum = signum
        _raise_for(signum)

    with _installed(handler):
        yield state


@contextlib.contextmanager
def stop_signals_chained(state: StopState) -> Iterator[StopState]:
    """Record a stop signal in ``state``, then hand it to the handler that was installed before (or raise)."""
    if not _main_thread():
        yield state
        return
    previous: dict[int, Any] = {int(s): signal.getsignal(s) for s in STOP_SIGNALS}

    def handler(signum: int, frame: Any) -> None:
        if state.signum is None:
            state.signum = signum
        before = previous.get(signum)
        if callable(before):
            before(signum, frame)
        else:
            _raise_for(signum)

    with _installed(handler):
        yield state


@contextlib.contextmanager
def stop_signals_ignored() -> Iterator[None]:
    """Ignore SIGINT and SIGTERM within the block (a second signal must not lose what is being written)."""
    with _installed(signal.SIG_IGN):
        yield


@contextlib.contextmanager
def _installed(handler: Any) -> Iterator[None]:
    if not _main_thread():
        yield
        return
    old = {s: signal.signal(s, handler) for s in STOP_SIGNALS}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h if h is not None else signal.SIG_DFL)


def sigterm_exits() -> Callable[[], None]:
    """Make SIGTERM raise ``SystemExit(143)`` where it has its default action; return what undoes it.

    Used while a captured run is open in a program that did not handle SIGTERM itself: the run's ``with`` block (or
    ``atexit``) then writes its buffered records and marks it ``interrupted`` before the process ends, with status
    143 as the default action would give. A program's own SIGTERM handler is left alone.
    """
    if not _main_thread() or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return lambda: None

    def handler(signum: int, frame: Any) -> None:
        raise SystemExit(exit_status(signum))

    signal.signal(signal.SIGTERM, handler)

    def undo() -> None:
        if _main_thread() and signal.getsignal(signal.SIGTERM) is handler:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)

    return undo

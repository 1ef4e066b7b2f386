"""Progress lines for long steps: what is being done, and for how long, on stderr.

A step (:func:`step`) writes one line when it starts, one every :data:`HEARTBEAT_S` seconds while it runs (with its
status, e.g. the sampler's draws so far) and one when it ends, with the elapsed time::

    [agentstats] sampling zoi_beta_binomial (4 chains, 1000 tuning + up to 2000 draws each) ...
    [agentstats] sampling zoi_beta_binomial: 812 of 3000 steps per chain (10 s)
    [agentstats] sampling zoi_beta_binomial: done (58.1 s)

Plain lines, never a redrawn bar, so logs and CI keep them as they are. They go through the ``logging`` logger
``agentstats.progress`` at INFO, which is silent until :func:`enable_progress` attaches its handler: the command line
does (stderr), and so does a report notebook's kernel (:func:`agentstats.report.display.configure_notebook`: the
lines appear under the running cell in JupyterLab, and ``agentstats report`` forwards them to the terminal, then
leaves them out of the saved notebook and the HTML, :func:`is_progress_line`). A library caller sees nothing unless
it configures that logger.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterator

__all__ = [
    "HEARTBEAT_S",
    "LOGGER",
    "PREFIX",
    "ProgressForwarder",
    "enable_progress",
    "is_progress_line",
    "progress",
    "step",
    "strip_progress",
]

#: Seconds between two lines of a running step.
HEARTBEAT_S = 10.0
#: Start of every progress line (how the report tells them from other output).
PREFIX = "[agentstats] "
LOGGER = logging.getLogger("agentstats.progress")
#: The running steps, innermost last: only the innermost writes periodic lines.
_RUNNING: list[threading.Event] = []


class _StderrHandler(logging.StreamHandler):
    """A handler that writes to the ``sys.stderr`` of the moment (a notebook kernel or a test may replace it)."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self) -> object:
        return sys.stderr

    @stream.setter
    def stream(self, value: object) -> None:  # logging.StreamHandler sets it; the property ignores it
        pass


def enable_progress() -> None:
    """Write progress lines to stderr (idempotent): the handler of :data:`LOGGER`, level INFO, not propagated."""
    if not any(isinstance(h, _StderrHandler) for h in LOGGER.handlers):
        handler = _StderrHandler()
        handler.setFormatter(logging.Formatter(PREFIX + "%(message)s"))
        LOGGER.addHandler(handler)
    LOGGER.setLevel(logging.INFO)
    LOGGER.propagate = False


def is_progress_line(line: str) -> bool:
    """Whether ``line`` is a progress line (starts with :data:`PREFIX`)."""
    return line.startswith(PREFIX)


def progress(message: str) -> None:
    """Write one progress line (when enabled)."""
    LOGGER.info(message)


def _seconds(s: float) -> str:
    return f"{s:.1f} s" if s < 60 else f"{int(s // 60)} min {s % 60:04.1f} s"


@contextlib.contextmanager
def step(what: str, status: Callable[[], str] | None = None, every: float = HEARTBEAT_S) -> Iterator[None]:
    """Log ``what ...`` now, ``what: STATUS (elapsed)`` every ``every`` seconds, ``what: done (elapsed)`` at the end.

    Parameters
    ----------
    what : str
        What the step does, in a few words ("sampling the model").
    status : callable returning str, optional
        Called from a background thread for each periodic line (must be cheap and thread-safe); default "running".
    every : float
        Seconds between periodic lines.

    Nothing is written, and no thread started, unless :data:`LOGGER` is enabled for INFO. A step that raises writes
    ``what: stopped (elapsed)``. While a step runs inside another, only the inner one writes periodic lines.
    """
    if not LOGGER.isEnabledFor(logging.INFO):
        yield
        return
    start = time.perf_counter()
    stop = threading.Event()
    _RUNNING.append(stop)

    def beat() -> None:
        while not stop.wait(every):
            if _RUNNING and _RUNNING[-1] is not stop:  # an inner step is running: its lines say more
                continue
            try:
                now = status() if status is not None else "running"
            except Exception:  # a status must never stop the work it reports on
                now = "running"
            LOGGER.info("%s: %s (%s)", what, now, _seconds(time.perf_counter() - start))

    LOGGER.info("%s ...", what)
    thread = threading.Thread(target=beat, name="agentstats-progress", daemon=True)
    thread.start()
    ended = "stopped"
    try:
        yield
        ended = "done"
    finally:
        stop.set()
        thread.join()
        _RUNNING.remove(stop)
        LOGGER.info("%s: %s (%s)", what, ended, _seconds(time.perf_counter() - start))


class ProgressForwarder:
    """A write-only text stream that passes on the progress lines of what is written to it, whole lines only.

    Given to papermill as a notebook's ``stderr_file``: the kernel's progress lines reach ``write_line`` (e.g. the
    terminal, or ``tqdm.write`` above a progress bar) while the cells run; any other stderr text is dropped here (it
    stays in the notebook).
    """

    def __init__(self, write_line: Callable[[str], None]) -> None:
        self._write_line = write_line
        self._buffer = ""

    def write(self, text: str) -> int:
        """Take ``text``; pass on every complete progress line in it."""
        self._buffer += text
        *lines, self._buffer = self._buffer.split("\n")
        for line in lines:
            if is_progress_line(line):
                self._write_line(line)
        return len(text)

    def flush(self) -> None:
        """Nothing to flush: incomplete lines wait for their end."""


def strip_progress(text: str) -> str:
    """``text`` without its progress lines (:func:`is_progress_line`)."""
    return "".join(line for line in text.splitlines(keepends=True) if not is_progress_line(line))

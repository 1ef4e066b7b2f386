"""Atomic file writes: a file the product writes is either absent, the previous complete version, or the new one.

Every writer goes through :func:`atomic_write` (or :func:`atomic_write_text` / :func:`atomic_write_bytes`): the content
goes to a temporary file in the destination's own directory (same file system, so the final ``os.replace`` is
atomic on POSIX and Windows), is flushed and ``fsync``-ed, and only then replaces the destination. A crash, a kill or
an exception while writing leaves the destination untouched and removes the temporary file (a ``kill -9`` can
leave a ``.<name>.*.tmp`` file beside it, never a short destination).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Literal, overload

__all__ = ["append_line", "atomic_dir", "atomic_path", "atomic_write", "atomic_write_bytes", "atomic_write_text"]


@overload
@contextlib.contextmanager
def atomic_write(path: str | Path, mode: Literal["w"] = "w", *, encoding: str = "utf-8") -> Iterator[IO[str]]: ...


@overload
@contextlib.contextmanager
def atomic_write(path: str | Path, mode: Literal["wb"], *, encoding: str = "utf-8") -> Iterator[IO[bytes]]: ...


@contextlib.contextmanager
def atomic_write(path: str | Path, mode: str = "w", *, encoding: str = "utf-8") -> Iterator[IO]:
    """Open a temporary file beside ``path``; on a clean exit it replaces ``path`` atomically.

    Parameters
    ----------
    path : str or pathlib.Path
        Destination. Its directory must exist.
    mode : {"w", "wb"}
        Text or binary.
    encoding : str
        Text encoding (text mode only).

    Yields
    ------
    file object
        Write to it; do not close it.

    Raises
    ------
    ValueError
        On another ``mode``.
    OSError
        When the directory is not writable or the disk is full; the destination is left as it was.
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_write: mode must be 'w' or 'wb', got {mode!r}")
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        fh: IO = os.fdopen(fd, "w", encoding=encoding, newline="") if mode == "w" else os.fdopen(fd, "wb")
        with fh:
            yield fh
            fh.flush()
            # mkstemp creates the file owner-only (0600); give it the permissions any new file gets (0666 less the
            # umask), so a shared report is readable like the user's other files
            os.fchmod(fh.fileno(), 0o666 & ~_umask())
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _umask() -> int:
    """Return the process's umask (read by setting and restoring it; there is no read-only call)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write_text(path: str | Path, text: str, *, encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` atomically (:func:`atomic_write`); returns ``path``."""
    with atomic_write(path, "w", encoding=encoding) as fh:
        fh.write(text)
    return Path(path)


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (:func:`atomic_write`); returns ``path``."""
    with atomic_write(path, "wb") as fh:
        fh.write(data)
    return Path(path)


def append_line(path: str | Path, line: str, *, encoding: str = "utf-8") -> None:
    """Append one line to a log file durably: one ``write`` on an ``O_APPEND`` descriptor, then ``fsync``.

    For append-only logs (the loop's JSONL log), which cannot be replaced whole. A kill can at worst leave the
    last line cut short; readers drop a final line without its newline (and a resumed writer cuts it off first).

    Parameters
    ----------
    path : str or pathlib.Path
        The log file, created when missing (its directory must exist).
    line : str
        One line; a trailing newline is added when missing. It must not contain other line breaks.

    Raises
    ------
    ValueError
        When ``line`` holds a line break before its end.
    OSError
        When the file cannot be written.
    """
    text = line if line.endswith("\n") else line + "\n"
    if "\n" in text[:-1] or "\r" in text:
        raise ValueError("append_line: the line must not contain line breaks")
    data = text.encode(encoding)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``path`` for a writer that needs a file name (DuckDB ``COPY``, a library).

    On a clean exit the temporary file is ``fsync``-ed and replaces ``path`` atomically, as :func:`atomic_write`;
    on an exception it is removed and ``path`` is left as it was.

    Raises
    ------
    FileNotFoundError
        When the writer did not create the temporary file.
    OSError
        When the directory is not writable or the disk is full.
    """
    path = Path(path)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(name)
    tmp.unlink()  # the writer creates it (some refuse to write over an existing file)
    try:
        yield tmp
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fchmod(fd, 0o666 & ~_umask())
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike, *, replace: bool = False) -> Iterator[Path]:
    """Yield a temporary folder beside ``path`` for a writer of a folder (a Zarr store); it becomes ``path`` at the end.

    On a clean exit every file written is ``fsync``-ed and the folder is renamed to ``path`` (one ``rename`` on one
    file system: ``path`` appears complete or not at all); on an exception the folder is removed and ``path`` is left
    as it was. A folder is written over only with ``replace=True``.

    Parameters
    ----------
    path : str or os.PathLike
        The folder to write. Its parent must exist.
    replace : bool
        Replace a folder already at ``path`` (the caller has checked it is one of its own outputs): the old folder is
        renamed aside, the new one renamed in, the old one removed, with SIGINT and SIGTERM ignored for those three
        steps (a stop signal cannot leave ``path`` empty; a ``kill -9`` between the two renames can, with the old
        folder kept as ``.<name>.*.old`` beside it).

    Raises
    ------
    FileExistsError
        When ``path`` exists and ``replace`` is false (before anything is written, or when it appeared meanwhile:
        then the new folder is removed), or when ``path`` is a file.
    OSError
        When the directory is not writable or the disk is full.
    """
    import shutil

    path = Path(path)
    if path.exists() and (not replace or not path.is_dir()):
        raise FileExistsError(f"{path} exists" + (" and is not a folder" if replace else ""))
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    try:
        yield tmp
        for folder, _dirs, files in os.walk(tmp):
            for name in files:
                fd = os.open(os.path.join(folder, name), os.O_RDONLY)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
        os.chmod(tmp, 0o777 & ~_umask())
        if replace and path.is_dir():
            _swap_in(tmp, path)
            return
        if path.exists():  # rename would put an empty folder's place, or fail on a full one: refuse both alike
            raise FileExistsError(f"{path} exists")
        os.rename(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _swap_in(tmp: Path, path: Path) -> None:
    """Put the folder ``tmp`` at ``path`` in place of the folder there, then remove the old one (signals ignored)."""
    import shutil

    from agentstats._util.signals import stop_signals_ignored

    with stop_signals_ignored():
        old = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".old", dir=path.parent))
        os.rmdir(old)  # a free name beside path, on the same file system
        os.rename(path, old)
        try:
            os.rename(tmp, path)
        except BaseException:
            os.rename(old, path)
            raise
        shutil.rmtree(old, ignore_errors=True)

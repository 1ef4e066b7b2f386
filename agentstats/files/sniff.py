"""Looking at a file's bytes: magic numbers, transparent gzip, and the files this process must not open.

A file's kind is told by its content, never by its name: gzip by ``1f 8b`` at the start, Parquet by ``PAR1``, a DuckDB
database (a run store) by ``DUCK`` at byte offset 8. :func:`open_binary` and :func:`open_text` decompress gzip
transparently. What a file's content *means* (which input format it is) is decided above, by
:mod:`agentstats.io.detect` and the format registry.

The held-file registry: DuckDB locks its file with fcntl, and POSIX drops *every* lock a process holds on a file when
the process closes any descriptor of that file. Reading a held store's first bytes with ``open()`` would then let
another process open it for writing while this one writes too. So a run store's connection registers its file here
(:func:`hold_store`, :func:`release_store`), and whatever sniffs a file asks first (:func:`held_store`): the magic
bytes of a held store are known without opening it.
"""

from __future__ import annotations

import gzip
import io
import os
import threading
import zlib
from pathlib import Path
from typing import IO, cast

__all__ = [
    "DUCKDB_MAGIC",
    "GZIP_MAGIC",
    "HEAD_BYTES",
    "PARQUET_MAGIC",
    "STREAM_ERRORS",
    "check_readable_file",
    "held_store",
    "hold_store",
    "is_duckdb_file",
    "is_gzip",
    "is_parquet",
    "magic",
    "open_binary",
    "open_text",
    "read_head",
    "release_store",
]

GZIP_MAGIC = b"\x1f\x8b"
PARQUET_MAGIC = b"PAR1"
#: A DuckDB database file has this magic at byte offset 8.
DUCKDB_MAGIC = b"DUCK"
#: Bytes of a file's (decompressed) start that content detection reads.
HEAD_BYTES = 1 << 16

# Run store files this process has open, by (device, inode) -> number of open connections (see the module docstring).
_HELD: dict[tuple[int, int], int] = {}
_HELD_LOCK = threading.Lock()


def _file_key(path: str | os.PathLike) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def held_store(path: str | os.PathLike) -> bool:
    """Tell whether this process has the run store at ``path`` open (its bytes must then not be read directly).

    See the module docstring: closing any descriptor of a file drops the process's DuckDB lock on it.
    """
    key = _file_key(path)
    return key is not None and key in _HELD


def hold_store(path: str | os.PathLike) -> tuple[int, int] | None:
    """Register one open connection to the store at ``path``; return the key to :func:`release_store` it with."""
    key = _file_key(path)
    if key is not None:
        with _HELD_LOCK:
            _HELD[key] = _HELD.get(key, 0) + 1
    return key


def release_store(key: tuple[int, int] | None) -> None:
    """Unregister one connection registered by :func:`hold_store`."""
    if key is None:
        return
    with _HELD_LOCK:
        left = _HELD.get(key, 0) - 1
        if left > 0:
            _HELD[key] = left
        else:
            _HELD.pop(key, None)


#: What reading a file (gzip transparently) raises when its bytes are cut short or corrupt: ``OSError`` (a bad
#: gzip header, ``BadGzipFile``), ``EOFError`` (a stream that breaks off) and ``zlib.error`` (corrupt deflate data,
#: "invalid bit length repeat"), which is neither.
STREAM_ERRORS = (OSError, EOFError, zlib.error)


def check_readable_file(path: str | os.PathLike) -> None:
    """Refuse an input that is neither a regular file nor a folder: a named pipe, a socket, a device.

    Such an input can be read once at most (detection reads a file's head, then the reader reads it again) and may
    never end (a pipe no one writes to would block forever, ``/dev/zero`` never ends). A missing path is left to
    the caller's own message.

    Raises
    ------
    ValueError
        Naming the path and what it is.
    """
    import stat

    try:
        mode = os.stat(path).st_mode
    except OSError:
        return
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return
    kind = ("a named pipe (FIFO)" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a regular file")
    raise ValueError(f"{path} is {kind}: give a regular file (save the stream to a file first; the input is read "
                     "more than once)")


def magic(path: str | os.PathLike, n: int = 4) -> bytes:
    """Return the first ``n`` raw bytes of a file (not decompressed); a held store is never opened."""
    if held_store(path):  # a run store this process holds: never open() it; its magic is known
        return (bytes(8) + DUCKDB_MAGIC)[:n]
    with open(path, "rb") as fh:
        return fh.read(n)


def is_duckdb_file(path: str | os.PathLike) -> bool:
    """Tell whether ``path`` is a DuckDB file: its magic bytes ``DUCK`` at offset 8 (not its name)."""
    return magic(path, 12)[8:] == DUCKDB_MAGIC


def is_gzip(path: str | os.PathLike) -> bool:
    """Tell whether the file starts with the gzip magic bytes ``1f 8b`` (whatever its suffix)."""
    return magic(path, 2) == GZIP_MAGIC


def is_parquet(path: str | os.PathLike) -> bool:
    """Tell whether the file starts with the Parquet magic bytes ``PAR1`` (whatever its suffix)."""
    return magic(path, 4) == PARQUET_MAGIC


def open_binary(path: str | os.PathLike) -> IO[bytes]:
    """Open for reading bytes, decompressing gzip transparently (detected by magic bytes).

    Raises
    ------
    FileNotFoundError
        No such file.
    IsADirectoryError
        ``path`` is a folder.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no such file: {path}")
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a directory, not a data file")
    if is_gzip(path):
        return cast(IO[bytes], gzip.open(path, "rb"))
    return open(path, "rb")


def open_text(path: str | os.PathLike) -> IO[str]:
    """Open as UTF-8 text (BOM tolerated), decompressing gzip transparently."""
    return io.TextIOWrapper(open_binary(path), encoding="utf-8-sig", newline="")


def read_head(path: str | os.PathLike, n: int = HEAD_BYTES) -> bytes:
    """Return the first ``n`` bytes of the (decompressed) content.

    Raises
    ------
    ValueError
        A truncated or corrupt gzip stream (``cannot decompress``).
    """
    with open_binary(path) as fh:
        try:
            return fh.read(n)
        except STREAM_ERRORS as exc:  # truncated/corrupt gzip
            raise ValueError(f"{path}: cannot decompress: {exc}") from exc

"""Manifests: how a reader tells a complete trials file from a truncated or altered one.

:func:`agentstats.io.save_trials` writes the data file atomically (:mod:`agentstats.files.atomic`) and then, beside
it, a small JSON *manifest* named ``<file>.manifest.json``::

    {"manifest": "agentstats", "version": 1, "file": "scored.jsonl", "records": 300000,
     "bytes": 41234567, "sha256": "9f2c..."}

The data file itself stays plain JSONL (or gzip of it), readable by any tool. The loaders check the manifest
when one lies beside the file they read: a file shorter than recorded is *truncated*, one whose SHA-256
differs was *changed* after it was written; both are refused with an error that says which, instead of
loading part of the data as if it were all of it. A file without a manifest (written by another tool) is
read as it is. A user who changed a file on purpose deletes its manifest.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from agentstats.files.atomic import atomic_write_text

__all__ = ["MANIFEST_SUFFIX", "HashingWriter", "check_manifest", "manifest_path", "write_manifest"]

MANIFEST_SUFFIX = ".manifest.json"
_CHUNK = 1 << 20


def manifest_path(path: str | os.PathLike) -> Path:
    """``data.jsonl`` -> ``data.jsonl.manifest.json`` (same directory)."""
    path = Path(path)
    return path.with_name(path.name + MANIFEST_SUFFIX)


class HashingWriter:
    """A binary file wrapper that hashes (SHA-256) and counts every byte written through it."""

    def __init__(self, fh: IO[bytes]):
        self._fh = fh
        self.sha256 = hashlib.sha256()
        self.bytes = 0

    def write(self, data: Any) -> int:
        """Write ``data`` (bytes-like) to the wrapped file, hashing it on the way."""
        view = memoryview(data)
        self.sha256.update(view)
        self.bytes += view.nbytes
        return self._fh.write(view)

    def flush(self) -> None:
        """Flush the wrapped file."""
        self._fh.flush()

    def writable(self) -> bool:
        """Whether writes are accepted (always)."""
        return True


def write_manifest(path: str | os.PathLike, *, records: int, nbytes: int, sha256: str) -> Path:
    """Write the manifest of the complete data file ``path`` atomically; returns the manifest's path."""
    path = Path(path)
    body = {
        "manifest": "agentstats",
        "version": 1,
        "file": path.name,
        "records": records,
        "bytes": nbytes,
        "sha256": sha256,
    }
    return atomic_write_text(manifest_path(path), json.dumps(body, indent=1) + "\n")


@dataclass(frozen=True)
class ManifestCheck:
    """Result of :func:`check_manifest`: ``ok`` False with ``message`` saying what is wrong."""

    ok: bool
    message: str = ""


_CHECKED: dict[tuple[str, int, int, int], ManifestCheck] = {}


def check_manifest(path: str | os.PathLike) -> ManifestCheck:
    """Compare ``path`` with its manifest, when it has one (size first, then SHA-256).

    Returns
    -------
    ManifestCheck
        ``ok`` when there is no manifest or the file matches it; otherwise a message naming the problem
        (truncated, changed, unreadable manifest) and how to load the file anyway.
    """
    path = Path(path)
    mpath = manifest_path(path)
    if not mpath.is_file():
        return ManifestCheck(True)
    how = f"restore the complete file, or delete {mpath.name} to load it as it is"
    try:
        man = json.loads(mpath.read_text(encoding="utf-8"))
        nbytes, digest, records = int(man["bytes"]), str(man["sha256"]), int(man["records"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return ManifestCheck(False, f"its manifest {mpath.name} cannot be read ({exc}); {how}")
    stat = path.stat()
    size = stat.st_size
    memo = (str(path.resolve()), size, stat.st_mtime_ns, mpath.stat().st_mtime_ns)
    if memo in _CHECKED:  # one load reads the same file more than once (format detection, fast path)
        return _CHECKED[memo]
    result = _compare(path, size, nbytes, digest, records, mpath.name, how)
    if len(_CHECKED) > 64:
        _CHECKED.clear()
    _CHECKED[memo] = result
    return result


def _compare(path: Path, size: int, nbytes: int, digest: str, records: int, mname: str, how: str) -> ManifestCheck:
    if size < nbytes:
        return ManifestCheck(
            False,
            f"file is truncated: {size:,} of {nbytes:,} bytes (it was written with {records:,} records, "
            f"manifest {mname}); {how}",
        )
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            h.update(chunk)
    if size != nbytes or h.hexdigest() != digest:
        return ManifestCheck(
            False,
            f"file was changed after agentstats wrote it ({size:,} bytes, SHA-256 {h.hexdigest()[:12]}...; "
            f"manifest {mname} records {nbytes:,} bytes, {digest[:12]}..., {records:,} records); {how}",
        )
    return ManifestCheck(True)

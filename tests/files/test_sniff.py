"""A file's kind from its bytes, never its name; a held run store is never opened to be sniffed."""

from __future__ import annotations

import builtins
import gzip

import pytest

from agentstats.files.sniff import (
    HEAD_BYTES,
    held_store,
    hold_store,
    is_duckdb_file,
    is_gzip,
    is_parquet,
    magic,
    open_text,
    read_head,
    release_store,
)


def test_kinds_come_from_the_magic_bytes_not_the_suffix(tmp_path):
    gz = tmp_path / "looks_plain.txt"
    gz.write_bytes(gzip.compress(b'{"a": 1}\n'))
    plain = tmp_path / "looks_gzipped.gz"
    plain.write_bytes(b"agent,task,n,c\n")
    duck = tmp_path / "store.csv"
    duck.write_bytes(bytes(8) + b"DUCK" + bytes(20))
    pq = tmp_path / "table.json"
    pq.write_bytes(b"PAR1" + bytes(10))
    assert is_gzip(gz) and not is_gzip(plain)
    assert is_duckdb_file(duck) and not is_duckdb_file(plain)
    assert is_parquet(pq) and not is_parquet(gz)
    with open_text(gz) as fh:  # decompressed transparently, whatever the name
        assert fh.read() == '{"a": 1}\n'
    assert read_head(gz) == b'{"a": 1}\n' and HEAD_BYTES == 65536


def test_a_cut_gzip_stream_is_one_clear_error(tmp_path):
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(gzip.compress(b"x" * 10_000)[:30])
    with pytest.raises(ValueError, match="cannot decompress"):
        read_head(cut)


def test_a_held_store_is_sniffed_without_opening_it(tmp_path, monkeypatch):
    path = tmp_path / "s.duckdb"
    path.write_bytes(b"not a store yet")
    key = hold_store(path)
    key2 = hold_store(path)  # two connections of this process
    opened = []
    real_open = builtins.open
    monkeypatch.setattr(builtins, "open", lambda *a, **k: opened.append(a[0]) or real_open(*a, **k))
    try:
        assert held_store(path) and is_duckdb_file(path) and magic(path, 4) == bytes(4)
        assert opened == []  # its bytes were never read: closing a descriptor would drop the DuckDB lock
        release_store(key)
        assert held_store(path)  # one connection left
        release_store(key2)
        assert not held_store(path)
        assert not is_duckdb_file(path) and opened == [path]  # now read from the file itself
    finally:
        release_store(None)  # a no-op, as for a file that could not be registered

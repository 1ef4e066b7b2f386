"""Atomic writes: an interrupted write leaves the previous file intact and no temporary file behind."""

from __future__ import annotations

import pytest

from agentstats.files.atomic import atomic_dir, atomic_write, atomic_write_bytes, atomic_write_text


def test_complete_write_replaces_the_file(tmp_path):
    path = tmp_path / "out.jsonl"
    path.write_text("old\n")
    atomic_write_text(path, "new\n")
    assert path.read_text() == "new\n"
    atomic_write_bytes(path, b"\x00\x01")
    assert path.read_bytes() == b"\x00\x01"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"]


@pytest.mark.parametrize("exc", [RuntimeError("disk gone"), KeyboardInterrupt()])
def test_interrupted_write_keeps_the_previous_file(tmp_path, exc):
    path = tmp_path / "out.jsonl"
    path.write_text("complete previous version\n")
    with pytest.raises(type(exc)), atomic_write(path) as fh:
        fh.write("half of the new ")
        raise exc
    assert path.read_text() == "complete previous version\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.jsonl"]


def test_new_file_absent_until_complete(tmp_path):
    path = tmp_path / "fresh.txt"
    with atomic_write(path) as fh:
        fh.write("x")
        assert not path.exists()
    assert path.read_text() == "x"
    with pytest.raises(ValueError, match="mode"), atomic_write(path, "a"):
        pass


def test_written_files_get_the_usual_permissions(tmp_path):
    """mkstemp makes files owner-only; a written report must be readable like the user's other files (0666 & ~umask)."""
    import os
    import stat

    old = os.umask(0o022)
    try:
        p = atomic_write_text(tmp_path / "r.html", "<p>x</p>")
        assert stat.S_IMODE(p.stat().st_mode) == 0o644
        os.umask(0o077)
        q = atomic_write_bytes(tmp_path / "s.bin", b"x")
        assert stat.S_IMODE(q.stat().st_mode) == 0o600
    finally:
        os.umask(old)


def test_atomic_dir_replaces_a_folder_only_when_asked_and_keeps_it_on_failure(tmp_path):
    out = tmp_path / "ds"
    with atomic_dir(out) as tmp:
        (tmp / "a=1").mkdir()
        (tmp / "a=1" / "part-0.parquet").write_bytes(b"old")
    with pytest.raises(FileExistsError), atomic_dir(out):
        pass
    with pytest.raises(RuntimeError, match="cut short"), atomic_dir(out, replace=True) as tmp:
        (tmp / "a=2").mkdir()
        raise RuntimeError("cut short")
    assert [p.name for p in out.iterdir()] == ["a=1"]  # the previous folder, untouched
    with atomic_dir(out, replace=True) as tmp:
        (tmp / "a=2").mkdir()
        (tmp / "a=2" / "part-0.parquet").write_bytes(b"new")
    assert [p.name for p in out.iterdir()] == ["a=2"] and (out / "a=2" / "part-0.parquet").read_bytes() == b"new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds"]  # no temporary or old folder left beside it
    (tmp_path / "f").write_text("x")
    with pytest.raises(FileExistsError, match="is not a folder"), atomic_dir(tmp_path / "f", replace=True):
        pass

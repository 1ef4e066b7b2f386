"""Progress lines of long steps (agentstats._util.progress)."""

from __future__ import annotations

import logging
import re
import time

import pytest

from agentstats._util import progress as pg


@pytest.fixture
def lines(capsys):
    """Enable the progress logger for one test; give a function returning the stderr lines so far."""
    old = (pg.LOGGER.level, list(pg.LOGGER.handlers), pg.LOGGER.propagate)
    pg.enable_progress()
    pg.enable_progress()  # idempotent: one handler, one line per message
    yield lambda: capsys.readouterr().err.splitlines()
    pg.LOGGER.setLevel(old[0])
    pg.LOGGER.handlers[:] = old[1]
    pg.LOGGER.propagate = old[2]


def test_step_writes_start_periodic_and_end_lines(lines):
    calls = []

    def status():
        calls.append(1)
        return f"{len(calls)} of 9"

    with pg.step("sampling", status, every=0.05):
        time.sleep(0.28)
    out = lines()
    assert out[0] == "[agentstats] sampling ..."
    periodic = out[1:-1]
    assert 3 <= len(periodic) <= 6  # about 0.28 / 0.05, with a loaded machine's slack
    assert all(re.fullmatch(r"\[agentstats\] sampling: \d of 9 \(0\.\d s\)", line) for line in periodic)
    assert re.fullmatch(r"\[agentstats\] sampling: done \(0\.[2-9] s\)", out[-1])


def test_inner_step_silences_the_outer_ones_periodic_lines(lines):
    with pg.step("outer", every=0.05):
        with pg.step("inner", every=0.05):
            time.sleep(0.2)
    out = lines()
    inner_done = next(i for i, line in enumerate(out) if line.startswith("[agentstats] inner: done"))
    # while the inner step runs, only it beats; once it is done the outer one may beat again (a loaded machine)
    assert not [line for line in out[:inner_done] if line.startswith("[agentstats] outer: running")]
    assert [line for line in out[:inner_done] if line.startswith("[agentstats] inner: running")]
    assert out[-1].startswith("[agentstats] outer: done")


def test_failed_step_says_stopped(lines):
    with pytest.raises(ValueError), pg.step("reading"):
        raise ValueError("bad")
    assert re.fullmatch(r"\[agentstats\] reading: stopped \(0\.0 s\)", lines()[-1])


def test_silent_unless_enabled(capsys):
    assert not pg.LOGGER.isEnabledFor(logging.INFO)
    with pg.step("quiet", every=0.01):
        time.sleep(0.03)
    pg.progress("nothing")
    assert capsys.readouterr().err == ""


def test_forwarder_passes_whole_progress_lines_only():
    got: list[str] = []
    fw = pg.ProgressForwarder(got.append)
    fw.write("[agentstats] fitting ...\nsome warning\n[agentstats] fit")
    fw.flush()
    assert got == ["[agentstats] fitting ..."]
    fw.write("ting: done (3.0 s)\n")
    assert got == ["[agentstats] fitting ...", "[agentstats] fitting: done (3.0 s)"]


def test_strip_progress_keeps_other_lines():
    text = "[agentstats] a ...\nUserWarning: x\n[agentstats] a: done (1.0 s)\n"
    assert pg.strip_progress(text) == "UserWarning: x\n"
    assert pg.strip_progress("[agentstats] a ...\n") == ""

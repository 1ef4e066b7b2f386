"""The real-data fixtures in tests/data still equal what tests/data/make_fixtures.py derives from ../shared/data."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pandas as pd
import pytest

HERE = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("make_fixtures", HERE / "data" / "make_fixtures.py")
make_fixtures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_fixtures)


@pytest.mark.parametrize(
    "derive, fixture, source",
    [
        (make_fixtures.tau_counts, make_fixtures.TAU_FIXTURE, make_fixtures.TAU_SOURCE),
        (make_fixtures.metr_counts, make_fixtures.METR_FIXTURE, make_fixtures.METR_SOURCE),
    ],
)
def test_fixture_matches_shared_data(shared_data, derive, fixture, source):
    if not (shared_data / source).exists():
        pytest.skip(f"{shared_data / source} is absent")
    stored = pd.read_csv(fixture, dtype={"task_id": str})
    fresh = derive(shared_data).astype({"task_id": str})
    pd.testing.assert_frame_equal(stored, fresh.reset_index(drop=True))


def test_fixtures_hold_the_published_totals():
    """Totals from the sources' SOURCE.md files, so a damaged fixture fails even without ../shared/data."""
    tau = pd.read_csv(make_fixtures.TAU_FIXTURE)
    assert len(tau) == 50 and set(tau.n) == {4} and tau.c.sum() == 84
    metr = pd.read_csv(make_fixtures.METR_FIXTURE)
    assert metr.n.sum() == 7063 and metr.task_id.nunique() == 83 and metr.agent.nunique() == 11

"""The gate's decision records, byte for byte, against those the gate wrote before it was split into parts.

``tests/data/gate_records.json`` holds, per scenario of ``tests/gate_scenarios.py`` (the committed loop example
``data/example_loop/`` and synthetic sets that reach every check, override and trigger), the record computed on
main at e7ce629, before ``gating/decision.py`` became checks, decision rule, record and triggers
(``tests/data/make_gate_records.py`` wrote it), and rewritten for issue 31, whose rules change records on purpose:
the ``/2`` schema with ``multiplicity``, ``look``, ``reason_kinds`` and ``loop``; a first look decides at half of each
level (error spending), FAIL is Holm-adjusted over the checks, the effective-N ``missing`` check, "improved but still
below threshold" is a RETRY, RETRY's "more examples" are at the next look's levels. Only ``created_at`` and
``versions`` (the moment and the machine) are masked.
"""

from __future__ import annotations

import json

import pytest
from gate_scenarios import FIXTURE, REPO, normalized, scenarios

from agentstats.gating import gate

EXPECTED = json.loads(FIXTURE.read_text())
SCENARIOS = scenarios()


def test_every_scenario_has_a_pinned_record():
    assert sorted(EXPECTED) == sorted(SCENARIOS) and len(SCENARIOS) >= 10


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_record_is_unchanged(name, monkeypatch):
    monkeypatch.chdir(REPO)
    candidate, baseline, config = SCENARIOS[name]
    assert normalized(gate(candidate, baseline, config).to_record()) == EXPECTED[name]

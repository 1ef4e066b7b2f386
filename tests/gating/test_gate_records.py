"""The gate's decision records against those the gate wrote before it was split into parts, field by field.

Floats agree to 1e-9 relative (BLAS and summation order move the last digits by CPU), all else exactly.

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
from gate_scenarios import FIXTURE, REPO, mismatches, normalized, scenarios

from agentstats.gating import gate

EXPECTED = json.loads(FIXTURE.read_text())
SCENARIOS = scenarios()


def test_every_scenario_has_a_pinned_record():
    assert sorted(EXPECTED) == sorted(SCENARIOS) and len(SCENARIOS) >= 10


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_record_is_unchanged(name, monkeypatch):
    monkeypatch.chdir(REPO)
    candidate, baseline, config = SCENARIOS[name]
    actual = json.loads(normalized(gate(candidate, baseline, config).to_record()))
    assert mismatches(actual, json.loads(EXPECTED[name])) == []


def test_the_comparison_tolerates_the_last_digits_only():
    assert mismatches({"a": [0.7302921245807737, "x", 3]}, {"a": [0.7302921245807739, "x", 3]}) == []
    assert mismatches({"a": 0.73029}, {"a": 0.73030}) == ["record.a: 0.73029 != 0.7303"]
    assert mismatches({"a": 1}, {"a": 1.0}) and mismatches({"a": "RETRY"}, {"a": "PASS"})
    assert mismatches({"a": 1, "b": 2}, {"b": 2, "a": 1}) and mismatches([1], [1, 2])

"""Gate decision records in the run store.

Rows of ``gate_decisions`` are never updated: each decision inserts one. A new record carries forward the sign-offs
of the newest stored record of the same run with the same inputs, by the records' one identity
(:func:`agentstats.records.decision.inputs_key`; compared in Python on the stored records, newest first, so the
identity is written once and rows written by other code, the loop's, need no extra column).
"""

from __future__ import annotations

import json
from typing import Any

from agentstats.records.decision import InputsKey, inputs_key, is_decision_record, merge_sign_offs
from agentstats.store.connection import StoreError, _json, _now
from agentstats.store.writing import TrialWriter

__all__ = ["DecisionLog"]


class DecisionLog(TrialWriter):
    """The store's gate decision records (see :class:`RunStore`)."""

    def add_gate_decision(self, record: dict[str, Any], *, run: str | None = None) -> dict[str, Any]:
        """Append a gate decision record to ``gate_decisions``, carrying earlier sign-offs forward.

        Rows are never updated: each call inserts one. The sign-offs of the newest stored record of the same run
        with the same inputs (:func:`agentstats.records.decision.inputs_key`) are put in front of the record's own
        ``sign_off`` entries (those not already there: :func:`~agentstats.records.decision.merge_sign_offs`), so
        the newest row holds every sign-off, in order.

        Parameters
        ----------
        record : dict
            A gate decision record (:meth:`agentstats.gating.GateDecision.to_record`), with ``sign_off``.
        run : str, optional
            The run the decision is about (its ``run_id`` is stored); None: ``run_id`` is NULL.

        Returns
        -------
        dict
            The record as stored (with the merged ``sign_off`` list).

        Raises
        ------
        StoreError
            An unknown run, or a record that is not a gate decision record.
        """
        if not is_decision_record(record):
            raise StoreError("add_gate_decision: not a gate decision record (schema agentstats.gate/...)")
        rid = self.run_id(run) if run is not None else None
        signed = merge_sign_offs(self._signed_for(inputs_key(record), rid), record.get("sign_off") or [])
        stored = {**record, "sign_off": signed}
        with self.transaction():
            self.append_rows("gate_decisions", {
                "run_id": [rid], "decided_at": [_now()], "decision": [str(record.get("decision"))],
                "config": [_json(record.get("config"))], "record": [_json(stored)],
            })
        return stored

    def _signed_for(self, key: InputsKey | None, rid: int | None) -> list[dict[str, Any]]:
        """Sign-offs of the newest record of run ``rid`` (None: no run) whose inputs key is ``key`` ([] if none)."""
        if key is None:
            return []
        cursor = self.con.execute(
            "SELECT record FROM gate_decisions WHERE run_id IS NOT DISTINCT FROM ? ORDER BY decided_at DESC", [rid])
        while (row := cursor.fetchone()) is not None:
            old = json.loads(row[0]) if row[0] else None
            if isinstance(old, dict) and inputs_key(old) == key:
                return list(old.get("sign_off") or [])
        return []

    def gate_decisions(self, run: str | None = None) -> list[dict[str, Any]]:
        """Return the stored gate decision records, oldest first (one run's, or all), ``decided_at`` added to each."""
        if run is None:
            rows = self.con.execute("SELECT decided_at, record FROM gate_decisions ORDER BY decided_at").fetchall()
        else:
            rows = self.con.execute(
                "SELECT decided_at, record FROM gate_decisions WHERE run_id = ? ORDER BY decided_at",
                [self.run_id(run)],
            ).fetchall()
        return [{**json.loads(r), "decided_at": at.isoformat() if at is not None else None} for at, r in rows]

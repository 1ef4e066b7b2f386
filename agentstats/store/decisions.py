"""Gate decision records in the run store, with their "same inputs" identity.

Rows of ``gate_decisions`` are never updated: each decision inserts one. A new record carries forward the sign-offs
of the newest stored record with the same inputs (same config hash, candidate and baseline hashes and calibration-set
hash, on the same run), compared in SQL on the stored JSON.
"""

from __future__ import annotations

import json
from typing import Any

from agentstats.store.connection import StoreError, _json, _now
from agentstats.store.writing import TrialWriter

__all__ = ["DecisionLog"]


class DecisionLog(TrialWriter):
    """The store's gate decision records (see :class:`RunStore`)."""

    def add_gate_decision(self, record: dict[str, Any], *, run: str | None = None) -> dict[str, Any]:
        """Append a gate decision record to ``gate_decisions``, carrying earlier sign-offs forward.

        Rows are never updated: each call inserts one. Sign-offs already stored for the same inputs (same
        ``config_sha256``, candidate and baseline ``sha256`` and calibration-set ``sha256``, on the same run) are
        put in front of the record's own ``sign_off`` entries (those not already there), so the newest row holds
        every sign-off, in order.

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
        if not isinstance(record, dict) or not str(record.get("schema", "")).startswith("agentstats.gate/"):
            raise StoreError("add_gate_decision: not a gate decision record (schema agentstats.gate/...)")
        rid = self.run_id(run) if run is not None else None
        cand = (record.get("candidate") or {}).get("sha256")
        base = (record.get("baseline") or {}).get("sha256")
        calib = (record.get("judge_calibration") or {}).get("sha256")
        prior = self.con.execute(
            """SELECT record->'sign_off' FROM gate_decisions
               WHERE run_id IS NOT DISTINCT FROM ? AND record->>'config_sha256' = ?
                 AND record->'candidate'->>'sha256' = ? AND record->'baseline'->>'sha256' = ?
                 AND (record->'judge_calibration'->>'sha256') IS NOT DISTINCT FROM ?
               ORDER BY decided_at DESC LIMIT 1""",
            [rid, record.get("config_sha256"), cand, base, calib],
        ).fetchone()
        signed = json.loads(prior[0]) if prior and prior[0] else []
        for s in record.get("sign_off") or []:
            if s not in signed:
                signed.append(s)
        stored = {**record, "sign_off": signed}
        with self.transaction():
            self.append_rows("gate_decisions", {
                "run_id": [rid], "decided_at": [_now()], "decision": [str(record.get("decision"))],
                "config": [_json(record.get("config"))], "record": [_json(stored)],
            })
        return stored

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

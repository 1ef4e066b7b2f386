"""The gate decision record (``agentstats.gate/2``): what it is, its one "same inputs" identity, its sign-offs.

A decision record (``agentstats.gate/2``: with the family-wise rule and the look of the error-spending plan; ``/1``
records, made before looks were counted, are still read) is the JSON object
:meth:`agentstats.gating.record.GateDecision.to_record` builds (layout in ``docs/gate.md``). It is written to a file
(``agentstats gate --out``) and to the run store's ``gate_decisions`` table, and both keep a reviewer's sign-off across
re-runs of the gate *on the same inputs*: the same configuration and the same candidate, baseline and calibration-set
bytes. This module is the one definition of that identity, :func:`inputs_key`, read by the gate's record writer
(:mod:`agentstats.gating.record`) and by the store (:mod:`agentstats.store.decisions`), which sits below the gate and
cannot import it. The moment, the machine (``created_at``, ``versions``) and the decision itself are not part of the
identity: a re-run on the same inputs is the same decision, whatever it concluded.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

__all__ = ["RECORD_SCHEMA", "InputsKey", "inputs_key", "is_decision_record", "merge_sign_offs"]

#: Version tag of the decision record's layout (its ``schema`` field).
RECORD_SCHEMA = "agentstats.gate/2"


class InputsKey(NamedTuple):
    """The inputs a decision record was computed from, by content hash (SHA-256, hex).

    Attributes
    ----------
    config_sha256 : str
        The gate configuration's hash (:meth:`agentstats.gating.config.GateConfig.sha256`).
    candidate_sha256, baseline_sha256 : str
        The score files' bytes (or, for in-memory input, the long frame as CSV).
    calibration_sha256 : str or None
        The judge calibration set's bytes; None when the gate corrected no judge.
    """

    config_sha256: str
    candidate_sha256: str
    baseline_sha256: str
    calibration_sha256: str | None


def is_decision_record(obj: Any) -> bool:
    """Whether ``obj`` is a gate decision record (a mapping whose ``schema`` is ``agentstats.gate/<version>``)."""
    return isinstance(obj, Mapping) and str(obj.get("schema", "")).startswith("agentstats.gate/")


def inputs_key(record: Mapping[str, Any]) -> InputsKey | None:
    """Return the "same inputs" identity of a decision record (records with equal keys are for the same inputs).

    Parameters
    ----------
    record : mapping
        A decision record (read from a file or the store, or just built).

    Returns
    -------
    InputsKey or None
        None when the record lacks the configuration, candidate or baseline hash (a hand-edited or damaged record):
        such a record has no identity and is the same as no other, so no sign-off is carried to or from it.
    """

    def sha(part: str) -> str | None:
        section = record.get(part)
        value = section.get("sha256") if isinstance(section, Mapping) else None
        return value if isinstance(value, str) else None

    config = record.get("config_sha256")
    cand, base = sha("candidate"), sha("baseline")
    if not isinstance(config, str) or cand is None or base is None:
        return None
    return InputsKey(config, cand, base, sha("judge_calibration"))


def merge_sign_offs(earlier: Iterable[Mapping[str, Any]], new: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Merge sign-offs of a record written again: the earlier ones, in order, then each new one not already there.

    Parameters
    ----------
    earlier : iterable of mapping
        Sign-offs (``name``, ``at``, ``decision``) of the newest record for the same inputs (:func:`inputs_key`).
    new : iterable of mapping
        Sign-offs given with this record.

    Returns
    -------
    list of dict
        A sign-off is never dropped and never repeated (the same name, time and decision count once).
    """
    out = [dict(s) for s in earlier]
    for s in new:
        if dict(s) not in out:
            out.append(dict(s))
    return out

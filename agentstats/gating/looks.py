"""Repeated looks at one comparison: the error-spending plan, and which earlier decision record a look follows.

A RETRY asks for more examples; gating again on the larger set is a second look at the same comparison, and a rule
checked at every look at its full level crosses it by chance more often than once (Armitage, McPherson & Rowe 1969,
JRSS A 132:235-244: repeated significance tests). The gate therefore spends each error rate over the looks: look
``k`` decides at ``alpha_k = alpha s_k`` with

    s_k = 1 / (k (k + 1))        (1/2, 1/6, 1/12, ...; sum over all k = 1)

of every level ``alpha`` (``1 - pass_probability``, ``max_regression_probability``, ``1 - fail_probability`` of
each stratum), so that, whatever the number of looks and however the examples added at each were chosen, a check is
crossed at some look with probability at most ``sum_k alpha_k <= alpha`` (Bonferroni's inequality over the looks;
the alpha-spending idea of Lan & DeMets 1983, Biometrika 70:659-663, with spending by look instead of by
information fraction, since RETRY's sample sizes are not planned in advance). After ``k`` looks the spent share is
``k / (k + 1)``. With ``max_looks: K`` the plan ends at look ``K``, which spends what is left (``1 / K``), so
``max_looks: 1`` is a single look at the full levels; a look after the last one is refused.

A look is counted from the decision record of the look before it (``gate(..., previous=record)``, ``agentstats gate
--previous RECORD``, or the run store's records of the same run): the same configuration and calibration set (by
hash, :func:`agentstats.records.decision.inputs_key`), and candidate and baseline scored on at least as many examples
(both grow when the examples RETRY asked for are added); a record of the very same candidate and baseline files is
the same look again (nothing more is spent). A look follows only an undecided one (RETRY): after a PASS or FAIL the
comparison is over. The record states the look number, the rule and the error spent (``look``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentstats.records.decision import inputs_key, is_decision_record

__all__ = ["SPENDING_RULE", "LookPlan", "plan_look", "share"]

#: The spending rule, as the record states it.
SPENDING_RULE = "alpha_k = alpha / (k (k + 1)); the last look of max_looks spends what is left"

type Previous = Mapping[str, Any] | str | Path | Sequence[Mapping[str, Any]] | None


def share(k: int, max_looks: int | None) -> float:
    """Return the share ``s_k`` of every error rate that look ``k`` (1-based) spends (module docstring).

    Raises
    ------
    ValueError
        When ``k < 1`` or ``k > max_looks``.
    """
    if k < 1:
        raise ValueError(f"look numbers start at 1, got {k}")
    if max_looks is not None and k > max_looks:
        raise ValueError(f"look {k} is past the plan's max_looks ({max_looks})")
    if max_looks is not None and k == max_looks:
        return 1.0 / k
    return 1.0 / (k * (k + 1))


@dataclass(frozen=True)
class LookPlan:
    """Where a decision stands in its error-spending plan.

    Attributes
    ----------
    number : int
        This look (1 for a first decision).
    max_looks : int or None
        The plan's last look (None: no last look).
    previous : dict or None
        The record this look follows: ``created_at``, ``decision``, ``candidate_sha256``, ``n_examples``, ``look``.
    """

    number: int = 1
    max_looks: int | None = None
    previous: dict[str, Any] | None = None

    @property
    def share(self) -> float:
        """Share of every error rate that this look spends."""
        return share(self.number, self.max_looks)

    @property
    def spent(self) -> float:
        """Share of every error rate spent by this look and the ones before it."""
        return sum(share(k, self.max_looks) for k in range(1, self.number + 1))

    @property
    def next_share(self) -> float | None:
        """The next look's share (None after the plan's last look)."""
        if self.max_looks is not None and self.number >= self.max_looks:
            return None
        return share(self.number + 1, self.max_looks)

    def as_record(self, alphas: Mapping[str, float]) -> dict[str, Any]:
        """Return the record's ``look`` section; ``alphas``: the global level of each error rate (name -> alpha)."""
        return {
            "number": self.number, "max_looks": self.max_looks, "rule": SPENDING_RULE, "share": self.share,
            "spent_share": self.spent, "next_share": self.next_share,
            "levels": {name: {"alpha": a, "this_look": a * self.share, "spent": a * self.spent}
                       for name, a in alphas.items()},
            "previous": self.previous,
        }


def _read(path: str | Path) -> dict[str, Any]:
    try:
        rec = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"previous decision record {path}: cannot be read ({exc})") from exc
    if not is_decision_record(rec):
        raise ValueError(f"previous decision record {path}: not a gate decision record")
    return dict(rec)


def _same_comparison(old: Mapping[str, Any], new: Mapping[str, Any]) -> str | None:
    """Why ``old`` is not an earlier look of the comparison ``new`` (None when it is one)."""
    ko, kn = inputs_key(old), inputs_key(new)
    if ko is None or kn is None:
        return "it lacks the configuration, candidate or baseline hash"
    if ko.config_sha256 != kn.config_sha256:
        return "its configuration differs (a plan is for one configuration)"
    if ko.calibration_sha256 != kn.calibration_sha256:
        return "its judge calibration set differs"
    for side in ("candidate", "baseline"):
        was, now = (old.get(side) or {}).get("n_examples"), (new.get(side) or {}).get("n_examples")
        if isinstance(was, int) and isinstance(now, int) and now < was:
            return f"its {side} had more examples ({was}, now {now}): a later look adds examples"
    return None


def plan_look(previous: Previous, current: Mapping[str, Any], max_looks: int | None) -> LookPlan:
    """Count this look from the record(s) of the looks before it (module docstring).

    Parameters
    ----------
    previous : mapping, path, sequence of mappings or None
        One earlier decision record (a mapping or a JSON file), which must be an earlier look of this comparison; or
        several (a run store's records of the run), of which the newest that is one counts (none: look 1); None:
        look 1.
    current : mapping
        The identity of this decision: ``config_sha256``, ``candidate`` and ``baseline`` (``sha256``,
        ``n_examples``) and ``judge_calibration`` (``sha256``) sections, as the record will have them.
    max_looks : int or None
        The plan's last look.

    Returns
    -------
    LookPlan

    Raises
    ------
    ValueError
        A single previous record that is not an earlier look of this comparison (another configuration or
        calibration set, more examples than now; made before looks were counted), one that already decided (PASS or
        FAIL) with other inputs, or a look past ``max_looks``.
    """
    if previous is None:
        return LookPlan(1, max_looks)
    if isinstance(previous, (str, Path)):
        previous = _read(previous)
    strict = isinstance(previous, Mapping)
    history = [previous] if isinstance(previous, Mapping) else list(previous)
    for old in reversed(history):
        why = _same_comparison(old, current)
        if why is None:
            return _follow(old, current, max_looks)
        if strict:
            raise ValueError(f"the previous decision record is not an earlier look of this comparison: {why}")
    return LookPlan(1, max_looks)


def _follow(old: Mapping[str, Any], current: Mapping[str, Any], max_looks: int | None) -> LookPlan:
    """Return the look after (or the same as) the earlier look ``old`` of the same comparison."""
    look = old.get("look")
    if not isinstance(look, Mapping) or not isinstance(look.get("number"), int):
        raise ValueError("the previous decision record was made before looks were counted (no `look` section): it "
                         "spent the whole error rate; gate the comparison again without it, on fresh examples")
    if look.get("max_looks") != max_looks:
        raise ValueError(f"the previous look's plan has max_looks {look.get('max_looks')}, this one {max_looks}")
    number = int(look["number"])
    cand_old = (old.get("candidate") or {}).get("sha256")
    same = all((old.get(side) or {}).get("sha256") == (current.get(side) or {}).get("sha256")
               for side in ("candidate", "baseline"))
    summary = {"created_at": old.get("created_at"), "decision": old.get("decision"), "candidate_sha256": cand_old,
               "baseline_sha256": (old.get("baseline") or {}).get("sha256"),
               "n_examples": (old.get("candidate") or {}).get("n_examples"), "look": number}
    if same:  # the same look run again: the same number, nothing more spent
        return LookPlan(number, max_looks, look.get("previous"))
    if old.get("decision") != "RETRY":
        raise ValueError(f"the previous look decided {old.get('decision')}: the comparison is over; a new candidate "
                         "is a new comparison (gate it without --previous)")
    if max_looks is not None and number + 1 > max_looks:
        raise ValueError(f"the plan's {max_looks} looks are spent (the previous record was look {number}); the "
                         "comparison stays undecided")
    return LookPlan(number + 1, max_looks, summary)

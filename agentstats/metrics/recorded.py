"""Outcome numbers a benchmark recorded per trial: the trial's ``reward`` and the entries of ``meta["metrics"]``.

``reward`` (group ``outcome``, trial level): the trial's reward as recorded (tau-bench's 0/1 reward, a partial
credit ...); not applicable when the trial has none. ``recorded_metric``: the number a reader kept under
``meta["metrics"][params["key"]]`` (tau2-bench's reward components such as ``reward.DB``); not applicable without a
key, without such an entry, or for an entry that is not a finite number (``True`` / ``False`` are not numbers here).
Neither has a threshold: they are compared as numbers (``agentstats.compare``), not passed or failed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from agentstats.metrics.base import Score, field_value, not_applicable

__all__ = ["recorded_metric", "reward"]


def _number(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    x = float(v)
    return x if math.isfinite(x) else None


def reward(values: Mapping[str, Any], params: Mapping[str, Any]) -> Score:
    """Return the record's ``reward``; not applicable when not recorded or not a finite number."""
    v = values.get("reward")
    if v is None:
        return not_applicable("no reward recorded")
    x = _number(v)
    if x is None:
        return not_applicable(f"reward {v!r} is not a finite number")
    return Score(x, {})


def recorded_metric(values: Mapping[str, Any], params: Mapping[str, Any]) -> Score:
    """Return ``meta["metrics"][params["key"]]`` of the record; n/a without it or when not a finite number."""
    key = params.get("key")
    if key is None:
        return not_applicable("no key given (params['key'])")
    meta = values.get("meta")
    metrics = field_value(meta, "metrics") if meta is not None else None
    if not isinstance(metrics, Mapping) or key not in metrics:
        return not_applicable(f"no recorded metric {key!r}")
    x = _number(metrics[key])
    if x is None:
        return not_applicable(f"recorded metric {key!r} is not a finite number")
    return Score(x, {"key": key})

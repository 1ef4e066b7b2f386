"""Usage methods: latency, duration, input / output tokens and cost, read from the records.

Where each value is read (role ``usage`` is the record's ``usage`` object; the other roles are record fields):

``latency``
    ``usage.latency_s``, else the record's ``latency_s`` (seconds the agent took to answer);
``duration``
    the record's ``duration_s``, else ``ended_at - started_at`` (ISO 8601 timestamps or epoch seconds): the
    wall-clock time of the whole interaction, node or trial, tool calls and waits included;
``input_tokens`` / ``output_tokens``
    ``usage.input_tokens`` / ``usage.output_tokens`` (also ``prompt_tokens`` / ``completion_tokens``), else the
    record's field of that name;
``cost``
    ``usage.cost_usd`` (or the record's ``cost_usd``) when recorded (method ``recorded``: only then); else
    ``(input_tokens * in + output_tokens * out) / 1e6`` from the price table (US dollars per 1M tokens) for the
    record's ``model`` (``usage.model`` or ``model``), :data:`agentstats.llm.pricing.DEFAULT_PRICES` unless
    ``params["prices"]`` overrides it.

At trial level a trial without ``usage`` gets the sum over its interactions when every interaction has the value
(:mod:`agentstats.metrics.compute`). A value that is not recorded is not applicable, never 0. A negative or
non-finite value is an input error (``ValueError`` naming the field).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from agentstats.llm.pricing import DEFAULT_PRICES, cost_usd
from agentstats.metrics.base import Score, field_value, not_applicable

__all__ = ["BadValue", "checked_number", "cost", "cost_recorded", "duration", "input_tokens", "latency",
           "output_tokens", "usage_number"]

_ALIASES = {"input_tokens": ("input_tokens", "prompt_tokens"), "output_tokens": ("output_tokens", "completion_tokens")}


class BadValue:
    """A value that failed its check where it was gathered (e.g. summed over a trial's interactions).

    Reading it through a usage method raises ``ValueError(message)``, so the error is reported with the trial and
    metric like any other input error, and only by the metrics that read it.
    """

    __slots__ = ("message",)

    def __init__(self, message: str):
        self.message = message


def checked_number(v: Any, name: str) -> float | None:
    """Return ``v`` as a float (None stays None).

    Raises
    ------
    ValueError
        For a value that is not a finite number >= 0 (the message names ``name``), or a :class:`BadValue`.
    """
    if v is None:
        return None
    if isinstance(v, BadValue):
        raise ValueError(v.message)
    if isinstance(v, bool) or not isinstance(v, int | float):
        try:
            v = float(v)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be a number, got {v!r}") from None
    x = float(v)
    if not math.isfinite(x) or x < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {v!r}")
    return x


def usage_number(values: Mapping[str, Any], key: str) -> float | None:
    """``key`` from the record's ``usage`` object, else from the record itself (role ``key``); None when absent.

    Raises
    ------
    ValueError
        For a value that is not a finite number >= 0.
    """
    usage = values.get("usage")
    for k in _ALIASES.get(key, (key,)):
        if usage is not None:
            v = field_value(usage, k)
            if v is not None:
                return checked_number(v, f"usage.{k}")
        v = values.get(k)
        if v is not None:
            return checked_number(v, k)
    return None


def _num_metric(key: str, unit: str) -> Any:
    def method(values: Mapping[str, Any], params: Mapping[str, Any]) -> Score:
        v = usage_number(values, key)
        if v is None:
            return not_applicable(f"no {key} recorded")
        return Score(v, {"unit": unit})

    method.__name__ = key
    method.__doc__ = f"The record's ``{key}`` ({unit}); not applicable when not recorded."
    return method


latency = _num_metric("latency_s", "s")
cost_recorded = _num_metric("cost_usd", "USD")
cost_recorded.__doc__ = "The record's ``cost_usd`` (US dollars) as recorded, never priced; n/a when not recorded."
input_tokens = _num_metric("input_tokens", "tokens")
output_tokens = _num_metric("output_tokens", "tokens")


def _time(v: Any, name: str) -> float:
    if isinstance(v, int | float) and not isinstance(v, bool):
        return float(v)
    if isinstance(v, str):
        try:
            return datetime.fromisoformat(v.strip().replace("Z", "+00:00")).timestamp()
        except ValueError:
            pass
    raise ValueError(f"{name} must be an ISO 8601 timestamp or epoch seconds, got {v!r}")


def duration(values: Mapping[str, Any], params: Mapping[str, Any]) -> Score:
    """Wall-clock duration in seconds: ``duration_s``, else ``ended_at - started_at`` (module docstring)."""
    d = usage_number(values, "duration_s")
    if d is not None:
        return Score(d, {"unit": "s", "from": "duration_s"})
    start, end = values.get("started_at"), values.get("ended_at")
    if start is None or end is None:
        return not_applicable("no duration_s, started_at and ended_at recorded")
    s = _time(end, "ended_at") - _time(start, "started_at")
    if s < 0:
        raise ValueError(f"ended_at {end!r} is before started_at {start!r}")
    return Score(s, {"unit": "s", "from": "started_at/ended_at"})


def cost(values: Mapping[str, Any], params: Mapping[str, Any]) -> Score:
    """Cost in US dollars: recorded ``cost_usd``, else tokens times the price table (module docstring)."""
    c = usage_number(values, "cost_usd")
    if c is not None:
        return Score(c, {"unit": "USD", "from": "recorded"})
    usage = values.get("usage")
    model = (field_value(usage, "model") if usage is not None else None) or values.get("model")
    if not model:
        return not_applicable("no cost_usd and no model recorded")
    i, o = usage_number(values, "input_tokens"), usage_number(values, "output_tokens")
    if i is None or o is None:
        return not_applicable("no cost_usd and no token counts recorded")
    prices = params.get("prices") or DEFAULT_PRICES
    c = cost_usd(str(model), int(i), int(o), prices)
    if c is None:
        return not_applicable(f"model {model!r} not in the price table")
    return Score(c, {"unit": "USD", "from": "price table", "model": str(model)})

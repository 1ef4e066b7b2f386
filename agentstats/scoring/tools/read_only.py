"""Calls that do not change state: which tools are read-only, from tool specs or a known domain list.

Benchmarks that grade the final state of an environment (tau-bench: the database after the episode must equal the
state the ground-truth actions produce) do not care how many lookups an agent made. Scoring tool calls with
``read_only=`` (:func:`agentstats.scoring.tools.score_tool_calls`) leaves calls to such tools out on both sides,
so the score compares the state-changing calls only.

Where the names come from:

* a tool spec's flag: ``"read_only": true`` on the spec, or MCP's tool annotation
  ``"annotations": {"readOnlyHint": true}`` (Model Context Protocol specification, ``ToolAnnotations``);
* a known domain list: :data:`TAU_BENCH_AIRLINE_READ_ONLY`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from agentstats.records.trial import ToolSpec, Trial

__all__ = [
    "TAU_BENCH_AIRLINE_READ_ONLY",
    "TAU_BENCH_AIRLINE_TOOLS",
    "is_read_only_spec",
    "read_only_tools",
]

#: The tools of tau-bench's airline domain (Yao et al. 2024, arXiv 2406.12045; ``tau_bench/envs/airline/tools``).
TAU_BENCH_AIRLINE_TOOLS = frozenset({
    "book_reservation", "calculate", "cancel_reservation", "get_flight_status", "get_reservation_details",
    "get_user_details", "list_all_airports", "search_direct_flight", "search_onestop_flight", "send_certificate",
    "think", "transfer_to_human_agents", "update_reservation_baggages", "update_reservation_flights",
    "update_reservation_passengers",
})

#: Airline tools that do not change the database. Source: the tool-type annotations of the same domain in
#: tau2-bench (``src/tau2/domains/airline/tools.py``): ``ToolType.READ`` (``get_flight_status``,
#: ``get_reservation_details``, ``get_user_details``, ``list_all_airports``, ``search_direct_flight``,
#: ``search_onestop_flight``), ``ToolType.GENERIC`` (``calculate``, ``transfer_to_human_agents``) and
#: ``ToolType.THINK`` (``think``, tau-bench's note-taking tool: "will not obtain new information or change the
#: database"). The ``ToolType.WRITE`` tools (``book_reservation``, ``cancel_reservation``, ``send_certificate``,
#: ``update_reservation_*``) change it. ``transfer_to_human_agents`` ends the conversation but leaves the
#: database as it is, which is all tau-bench's reward compares.
TAU_BENCH_AIRLINE_READ_ONLY = frozenset({
    "calculate", "get_flight_status", "get_reservation_details", "get_user_details", "list_all_airports",
    "search_direct_flight", "search_onestop_flight", "think", "transfer_to_human_agents",
})


def is_read_only_spec(spec: ToolSpec | Mapping[str, Any]) -> bool:
    """Whether a tool spec flags its tool as read-only (``read_only: true`` or MCP ``readOnlyHint: true``)."""
    data = spec.model_dump() if isinstance(spec, ToolSpec) else dict(spec)
    if isinstance(data.get("function"), dict):  # OpenAI function format
        data = {**data["function"], **{k: v for k, v in data.items() if k != "function"}}
    if data.get("read_only") is True:
        return True
    ann = data.get("annotations")
    return isinstance(ann, dict) and ann.get("readOnlyHint") is True


def _tool_names(t: Trial) -> set[str]:
    names = {c.name for c in t.expected_tool_calls}
    for it in t.interactions:
        names.update(c.name for c in it.tool_calls)
        names.update(c.name for c in it.expected_tool_calls)
    return names


def read_only_tools(trials: Iterable[Trial], *, domain_lists: bool = True) -> frozenset[str]:
    """Names of read-only tools for these trials: flagged in their tool specs, plus a known domain's list.

    Parameters
    ----------
    trials : iterable of Trial
    domain_lists : bool
        Add :data:`TAU_BENCH_AIRLINE_READ_ONLY` when the trials are tau-bench records (``meta["format"] ==
        "tau_bench"``) and every tool name they use, called or expected, belongs to the airline domain
        (:data:`TAU_BENCH_AIRLINE_TOOLS`).

    Returns
    -------
    frozenset of str
        Empty when nothing marks a tool read-only.
    """
    out: set[str] = set()
    names: set[str] = set()
    tau = False
    for t in trials:
        for spec in t.tools:
            if is_read_only_spec(spec):
                out.add(spec.name)
        if domain_lists:
            tau = tau or t.meta.get("format") == "tau_bench"
            names |= _tool_names(t)
    if domain_lists and tau and names and names <= TAU_BENCH_AIRLINE_TOOLS:
        out |= TAU_BENCH_AIRLINE_READ_ONLY
    return frozenset(out)

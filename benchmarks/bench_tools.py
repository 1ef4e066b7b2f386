"""Throughput of deterministic tool scoring: interactions per second for typical 1-3 call interactions.

Draws a seeded set of interactions (1-3 expected calls, actual calls equal to, shuffled from, or perturbed
from the expected ones, with nested arguments), then times :func:`agentstats.scoring.tools.score_tool_calls`
over all of them. Goal: >= 20,000 interactions/s. Usage: ``python benchmarks/bench_tools.py [N]``.
"""

from __future__ import annotations

import platform
import random
import sys
import time

from agentstats.records.trial import ToolCall
from agentstats.scoring.tools import score_tool_calls

NAMES = ["search_flights", "book_hotel", "get_weather", "calculator", "lookup_user"]


def make(rng: random.Random, n: int) -> list[tuple[list[ToolCall], list[ToolCall]]]:
    out = []
    for _ in range(n):
        k = rng.choice([1, 1, 2, 2, 3])
        exp = [ToolCall(name=rng.choice(NAMES),
                        arguments={"city": rng.choice(["Paris", "Oslo", "Rome"]), "n": rng.randint(1, 5),
                                   "opts": {"flex": rng.random() < 0.5, "tags": ["a", "b"]}})
               for _ in range(k)]
        act = [ToolCall(name=c.name, arguments=dict(c.arguments)) for c in exp]
        rng.shuffle(act)
        r = rng.random()
        if r < 0.2:
            act[0].arguments["n"] += 1
        elif r < 0.3:
            act.pop()
        elif r < 0.4:
            act.append(ToolCall(name="calculator", arguments={"x": 1}))
        out.append((act, exp))
    return out


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    data = make(random.Random(0), n)
    for details in (True, False):
        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            for act, exp in data:
                score_tool_calls(act, exp, details=details)
            best = min(best, time.perf_counter() - t0)
        print(f"details={details}: {n} interactions in {best:.3f} s -> {n / best:,.0f} interactions/s "
              f"(best of 3; Python {platform.python_version()}, {platform.machine()})")


if __name__ == "__main__":
    main()

"""Live capture overhead: microseconds added per decorated call (no metrics), against the undecorated function.

Run:  taskset -c 1 python benchmarks/bench_capture.py [--calls 20000] [--repeats 5]

Cases (each the best of ``--repeats``, ``--calls`` calls of a function taking a small state dict and returning a
string):

* decorated, no run open (the decorator's pass-through);
* decorated, outermost calls inside a run (each call is a new message and trial; records buffered, flushed every
  second as by default, the final flush included);
* decorated, nested calls (one outermost node calling the decorated function ``--calls`` times).

Times are this process's CPU time (``time.process_time``: user + system, all threads), so that other work on a
shared machine does not count. The overhead is (time decorated - time plain) / calls. Prints a Markdown table for
docs/benchmarks.md, section "Live capture". Goal: <= 50 microseconds per decorated call without metrics.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import agentstats


def plain(state):
    return state["query"] + "!"


def best(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=20_000)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    n = args.calls
    states = [{"task_id": f"t{i % 100}", "query": f"question {i}", "expected_answer": "x"} for i in range(n)]
    decorated = agentstats.node("step")(plain)
    work = Path(tempfile.mkdtemp(prefix="bench_capture_"))

    def run_plain():
        for s in states:
            plain(s)

    def run_decorated():
        for s in states:
            decorated(s)

    base = best(run_plain, args.repeats)
    rows = [("decorated, no run open", best(run_decorated, args.repeats))]

    counter = iter(range(10**9))

    def captured_outer():
        with agentstats.run(f"outer-{next(counter)}", store=work / "bench.duckdb"):
            run_decorated()

    rows.append(("decorated, outermost calls in a run (buffered, flushed, run ended)", best(captured_outer,
                                                                                             args.repeats)))

    @agentstats.node("outer")
    def outer(state):
        for s in states:
            decorated(s)

    def captured_nested():
        with agentstats.run(f"nested-{next(counter)}", store=work / "bench.duckdb"):
            outer(states[0])

    rows.append(("decorated, nested calls in a run", best(captured_nested, args.repeats)))
    print(f"\nplain function: {base / n * 1e6:.2f} µs per call ({n:,} calls, best of {args.repeats})\n")
    print("| case | µs per call | overhead (µs per call) |")
    print("|---|---|---|")
    for label, t in rows:
        print(f"| {label} | {t / n * 1e6:.2f} | {(t - base) / n * 1e6:.2f} |")


if __name__ == "__main__":
    main()

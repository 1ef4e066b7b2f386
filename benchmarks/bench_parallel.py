"""Parallel efficiency of fit_many and of scoring at 1, 2, ... workers (run by hand; results in docs/benchmarks.md).

Run:  .venv/bin/python benchmarks/bench_parallel.py [--workers 1,2] [--executors process,ray] [--fits 200]
      [--n 1000000] [--shards 16] [--fit-options JSON] [--skip-fits] [--skip-scoring] [--skip-files] [--no-write]

Two workloads, each first in this process (``executor="local"``, the baseline), then on every executor at every
worker count:

1. ``agentstats.fit_many(counts, by="slice")``: ``--fits`` small fits (each slice 3 agents x ``--tasks`` tasks x 4
   trials, simulated with known truth; the default model and sampler unless ``--fit-options`` says otherwise; with an
   executor, one core per fit);
2. ``agentstats.metrics.compute(trials, METRICS)`` over ``--n`` simulated conversations (one trial of 1-3
   interactions each: answers, expected answers, contexts, usage, tool calls), the deterministic metrics below: the
   caller holds the trials and sends chunks of them to the workers;
3. ``agentstats.metrics.compute_files(folder, METRICS)`` over the same conversations written as ``--shards`` JSONL
   files: each worker reads its own shard (Ray: ``ray.data`` over the shards), so no trial is pickled.

Reported per row: wall time, speed-up over the in-process run, parallel efficiency (speed-up / workers), and the
1-minute load average at the end. A Ray cluster is started before the clock (``ray.init(num_cpus=workers)``) and
stopped after, as a user's job joins a running cluster. Before the timed runs the PyTensor/numba caches are warmed by
one fit in this process, so the in-process baseline does not pay the first compilation; the workers of a process pool
or a Ray cluster start fresh (import agentstats and PyMC, load the compiled model from the on-disk cache): that
start-up is in their times, as it is in a user's. Each row checks that the executor's table equals the in-process one
(the numbers are the same whatever the executor) and says so (``same``; for scoring through the column types and a
hash of every row, ``evidence`` left out, so that a million conversations' frames are not held twice).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "bench_parallel.jsonl"
METRICS = "answer_similarity,faithfulness,unsuccessful_requests,latency,output_tokens,tool_calls_correct"
WORDS = np.array("the capital of france is paris river seine city tool call search weather order refund flight "
                 "booking cancel account user help sorry cannot price ticket date".split())


def slice_counts(n_fits: int, n_tasks: int, seed: int = 0) -> pd.DataFrame:
    """Counts of ``n_fits`` slices, each 3 agents x ``n_tasks`` tasks x 4 trials (logit-normal truth)."""
    rng = np.random.default_rng(seed)
    agents, alpha = ["a", "b", "c"], np.array([0.0, 0.6, -0.4])
    frames = []
    for s in range(n_fits):
        beta = rng.normal(0.0, 1.5, n_tasks)
        logit = 0.3 + alpha[:, None] + beta[None, :] + rng.normal(0.0, 0.8, (3, n_tasks))
        c = rng.binomial(4, 1.0 / (1.0 + np.exp(-logit)))
        frames.append(pd.DataFrame({"agent": np.repeat(agents, n_tasks),
                                    "task_id": np.tile([f"t{t}" for t in range(n_tasks)], 3),
                                    "n": 4, "c": c.ravel(), "slice": f"s{s:04d}"}))
    return pd.concat(frames, ignore_index=True)


def conversations(n: int, seed: int = 0) -> list[Any]:
    """``n`` simulated trials of 1-3 interactions with answers, references, contexts, usage and tool calls."""
    from agentstats.records.trial import Trial

    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 4, n)
    words = rng.choice(WORDS, size=(int(sizes.sum()), 12))
    lengths = rng.integers(3, 12, len(words))
    latency, tokens = rng.gamma(2.0, 1.0, len(words)), rng.integers(5, 800, len(words))
    out, j = [], 0
    for t in range(n):
        its = []
        for _ in range(int(sizes[t])):
            answer = " ".join(words[j, : lengths[j]])
            its.append({"query": "what is the capital of france?", "answer": answer, "expected_answer": "paris",
                        "context": ["paris is the capital of france"],
                        "usage": {"latency_s": float(latency[j]), "output_tokens": int(tokens[j])},
                        "tool_calls": [{"name": "search", "arguments": {"q": answer[:10]}}]})
            j += 1
        out.append(Trial(agent=f"agent{t % 4}", task_id=f"task{t // 4}", trial=0, interactions=its,
                         expected_tool_calls=[{"name": "search", "arguments": {"q": "paris"}}]))
    return out


def _load() -> float:
    return os.getloadavg()[0]


def _rows(work: str, size: int, runs: dict[tuple[str, int], tuple[float, bool, float]]) -> list[dict[str, Any]]:
    """One row per (executor, workers): wall time, speed-up and efficiency against the in-process run."""
    base = runs[("local", 1)][0]
    return [{"work": work, "size": size, "executor": ex, "workers": w, "wall_s": round(secs, 2),
             "speedup": round(base / secs, 3), "efficiency": round(base / secs / w, 3), "same": same,
             "load_1min": round(load, 2), "cpus": os.cpu_count(), "date": time.strftime("%Y-%m-%d %H:%M")}
            for (ex, w), (secs, same, load) in runs.items()]


def timed(call: Any, ex: str, w: int) -> tuple[Any, float]:
    """Run ``call(executor_options)``; Ray's local cluster of ``w`` CPUs is started before the clock and stopped after
    (as a user joins a running cluster: ``ray start --head`` then ``--address auto``)."""
    options: dict[str, Any] = {} if ex == "local" else {"executor": ex, "workers": w}
    if ex == "ray":
        import ray

        ray.init(num_cpus=w, include_dashboard=False, log_to_driver=False)
        options = {"executor": "ray"}
    try:
        t0 = time.perf_counter()
        result = call(options)
        return result, time.perf_counter() - t0
    finally:
        if ex == "ray":
            ray.shutdown()


def bench_fits(args: argparse.Namespace, plans: list[tuple[str, int]]) -> list[dict[str, Any]]:
    from agentstats import fit, fit_many

    counts = slice_counts(args.fits, args.tasks)
    options = json.loads(args.fit_options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit(counts[counts["slice"] == "s0000"].drop(columns="slice"), **options)  # warm the compile caches
    runs: dict[tuple[str, int], tuple[float, bool, float]] = {}
    base = None
    for ex, w in [("local", 1), *plans]:
        table, secs = timed(lambda o: fit_many(counts, by="slice", k=[1, 4], **o, **options), ex, w)
        cols = [c for c in table.columns if c != "seconds"]
        same = True if base is None else table[cols].equals(base[cols])
        base = table if base is None else base
        runs[(ex, w)] = (secs, same, _load())
        print(f"fit_many {args.fits} fits, {ex} x {w}: {secs:.1f} s, same={same}, "
              f"errors={int(table['error'].notna().sum())}", file=sys.stderr, flush=True)
    return _rows(f"fit_many ({options or 'defaults'})", args.fits, runs)


def _digest(frame: pd.DataFrame) -> tuple[tuple[str, ...], np.ndarray]:
    """The frame without ``evidence`` as its column types and one hash per row (order, values and index)."""
    rest = frame.drop(columns="evidence")
    return tuple(f"{c}:{t}" for c, t in rest.dtypes.items()), pd.util.hash_pandas_object(rest, index=True).to_numpy()


def _same(a: tuple[tuple[str, ...], np.ndarray], b: tuple[tuple[str, ...], np.ndarray]) -> bool:
    """Whether two :func:`_digest` results are of the same frame (column types, and every row's hash in order)."""
    return a[0] == b[0] and len(a[1]) == len(b[1]) and bool((a[1] == b[1]).all())


def bench_scoring(args: argparse.Namespace, plans: list[tuple[str, int]]) -> list[dict[str, Any]]:
    from agentstats.metrics import compute

    t0 = time.perf_counter()
    trials = conversations(args.n)
    print(f"{args.n:,} conversations made in {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    compute(trials[:50], METRICS)  # warm the matchers' caches and imports
    runs: dict[tuple[str, int], tuple[float, bool, float]] = {}
    base = None
    for ex, w in [("local", 1), *plans]:
        frame, secs = timed(lambda o: compute(trials, METRICS, **o), ex, w)
        digest = _digest(frame)
        del frame  # a million conversations' frame is gigabytes: keep its digest, not a second copy
        same = base is None or _same(digest, base)
        base = digest if base is None else base
        runs[(ex, w)] = (secs, same, _load())
        print(f"scoring {args.n:,}, {ex} x {w}: {secs:.1f} s, same={same}", file=sys.stderr, flush=True)
    return _rows("scoring (compute, 6 metrics)", args.n, runs)


def bench_files(args: argparse.Namespace, plans: list[tuple[str, int]]) -> list[dict[str, Any]]:
    """``compute_files`` over ``--shards`` JSONL files of the ``--n`` conversations: each worker reads its shard.

    The baseline is the in-process path a user has without executors: ``load_trials`` of every shard, then
    ``compute`` (``local``: ``compute_files`` in this process, which reads and scores one shard after the other).
    The shards are written before the clock (``save_trials``, in a temporary folder, removed after).
    """
    import shutil
    import tempfile

    from agentstats.io import save_trials
    from agentstats.metrics import compute_files

    folder = Path(tempfile.mkdtemp(prefix="bench_parallel_shards_"))
    try:
        t0 = time.perf_counter()
        trials = conversations(args.n)
        per = -(-args.n // args.shards)
        for i in range(args.shards):
            save_trials(trials[i * per:(i + 1) * per], folder / f"shard-{i:03d}.jsonl")
        del trials
        print(f"{args.n:,} conversations in {args.shards} shards written in {time.perf_counter() - t0:.0f} s",
              file=sys.stderr, flush=True)
        runs: dict[tuple[str, int], tuple[float, bool, float]] = {}
        base = None
        for ex, w in [("local", 1), *plans]:
            frame, secs = timed(lambda o: compute_files(folder, METRICS, **o), ex, w)
            digest = _digest(frame)
            del frame
            same = base is None or _same(digest, base)
            base = digest if base is None else base
            runs[(ex, w)] = (secs, same, _load())
            print(f"compute_files {args.n:,} in {args.shards} shards, {ex} x {w}: {secs:.1f} s, same={same}",
                  file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return _rows(f"scoring files (compute_files, {args.shards} JSONL shards, 6 metrics)", args.n, runs)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workers", default="1,2", help="worker counts, comma-separated")
    ap.add_argument("--executors", default="process,ray", help="executors to time (ray: skipped when not installed)")
    ap.add_argument("--fits", type=int, default=200)
    ap.add_argument("--tasks", type=int, default=20, help="tasks per slice")
    ap.add_argument("--fit-options", default="{}", help="keyword arguments of fit, as JSON")
    ap.add_argument("--n", type=int, default=1_000_000, help="conversations to score")
    ap.add_argument("--skip-fits", action="store_true")
    ap.add_argument("--skip-scoring", action="store_true")
    ap.add_argument("--skip-files", action="store_true", help="skip compute_files over JSONL shards")
    ap.add_argument("--shards", type=int, default=16, help="JSONL shards of the files workload")
    ap.add_argument("--results", type=Path, default=RESULTS)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    executors = [e for e in args.executors.split(",") if e]
    if "ray" in executors:
        try:
            import ray  # noqa: F401
        except ImportError:
            executors.remove("ray")
    plans = [(e, int(w)) for e in executors for w in args.workers.split(",")]
    rows: list[dict[str, Any]] = []
    for skip, bench in ((args.skip_fits, bench_fits), (args.skip_scoring, bench_scoring),
                        (args.skip_files, bench_files)):
        if skip:
            continue
        new = bench(args, plans)
        rows += new
        if not args.no_write:  # each workload's rows as soon as it is done
            args.results.parent.mkdir(parents=True, exist_ok=True)
            with args.results.open("a", encoding="utf-8") as fh:
                for row in new:
                    fh.write(json.dumps(row) + "\n")
    print(pd.DataFrame(rows).to_string(index=False))


if __name__ == "__main__":
    main()

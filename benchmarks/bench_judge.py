"""Judge throughput: N judge calls to a local OpenAI-compatible server with fixed latency, then a cached rerun.

Goal: 1,000 calls at 100 ms latency in <= 5 s; the cached rerun in <= 0.5 s.

The server (``tests/judge_server.py``) runs in its own process so that its threads do not share the GIL with
the client. Every call goes through the real path: ``instructor.from_openai(openai.AsyncOpenAI(...))`` in TOOLS
mode, pydantic validation, the retry wrapper, and one SQLite commit per verdict.

Usage::

    python benchmarks/bench_judge.py                         # 1,000 calls, 100 ms, concurrency 16 and 64
    python benchmarks/bench_judge.py --n 200 --concurrency 32
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from agentstats.scoring.judge import AnswerItem, OpenAIJudge  # noqa: E402


def start_server(latency: float) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, str(REPO / "tests" / "judge_server.py"), "--latency", str(latency)],
                            stdout=subprocess.PIPE, text=True)
    port = int(proc.stdout.readline().strip())
    return proc, f"http://127.0.0.1:{port}/v1"


def run(base_url: str, n: int, concurrency: int, cache_dir: str) -> dict[str, float]:
    items = [AnswerItem(answer=f"answer {i}", expected=f"reference {i}", query=f"question {i}") for i in range(n)]
    judge = OpenAIJudge("gpt-4o-mini", base_url=base_url, concurrency=concurrency, cache_dir=cache_dir)
    t0 = time.perf_counter()
    out = judge.judge_answers(items)
    cold = time.perf_counter() - t0
    ok = sum(v.ok for v in out)
    rerun_judge = OpenAIJudge("gpt-4o-mini", base_url=base_url, concurrency=concurrency, cache_dir=cache_dir)
    t0 = time.perf_counter()
    again = rerun_judge.judge_answers(items)
    warm = time.perf_counter() - t0
    assert all(v.cached for v in again), "cached rerun made requests"
    return {"n": n, "concurrency": concurrency, "ok": ok, "cold_s": cold, "cached_s": warm,
            "http_requests": judge.stats.http_requests, "rerun_requests": rerun_judge.stats.http_requests}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--latency", type=float, default=0.1)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[16, 64])
    args = ap.parse_args()
    os.environ.pop("OPENAI_API_KEY", None)
    proc, base_url = start_server(args.latency)
    try:
        # warm-up: imports, client construction (not part of the measured runs)
        with tempfile.TemporaryDirectory() as d:
            run(base_url, 8, 8, d)
        rows = []
        for c in args.concurrency:
            with tempfile.TemporaryDirectory() as d:
                rows.append(run(base_url, args.n, c, d))
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    print(f"# {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, Python "
          f"{platform.python_version()}, server latency {args.latency * 1000:.0f} ms")
    print("| calls | concurrency | verdicts ok | cold run (s) | goal | cached rerun (s) | goal "
          "| requests (cold / rerun) |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['n']} | {r['concurrency']} | {r['ok']} | {r['cold_s']:.2f} | "
              f"{'met' if r['cold_s'] <= 5 else 'missed'} (≤ 5) | {r['cached_s']:.3f} | "
              f"{'met' if r['cached_s'] <= 0.5 else 'missed'} (≤ 0.5) | "
              f"{r['http_requests']} / {r['rerun_requests']} |")


if __name__ == "__main__":
    main()

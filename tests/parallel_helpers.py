"""Inputs shared by the executor tests (tests/metrics, tests/posterior, tests/parallel): trials, shard files of them,
counts to fit."""

from __future__ import annotations

import gzip
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

#: Metrics of every kind: per interaction, per trial, a batch metric (answer_correctness, run in the calling process);
#: cheap ones (no word list or recogniser to load) for the fast tests, all of them with PII and readability for the
#: slow ones.
METRICS = "answer_similarity,faithfulness,latency,output_tokens,tool_calls_correct,answer_correctness"
METRICS_FULL = METRICS + ",reading_ease,pii"
#: Real fits that take no MCMC: the no-pooling family is drawn exactly from its Beta posterior.
FIT_OPTIONS = {"model": "no_pooling", "draws": 2000, "chains": 2}


def trial_records(n: int, seed: int = 0) -> list[dict]:
    """``n`` trial records with answers, usage, tool calls, a PII mention in every fifth interaction, and two records
    a metric cannot read (trial 7's latency "slow", trial 11's ``nodes`` not a list)."""
    rng = np.random.default_rng(seed)
    words = ["paris", "capital", "france", "river", "seine", "city", "call", "me", "at", "mail", "the", "is"]
    out = []
    for t in range(n):
        its = []
        for i in range(int(rng.integers(1, 4))):
            answer = " ".join(rng.choice(words, size=int(rng.integers(3, 9))))
            if (t + i) % 5 == 0:
                answer += f" Write to user{t}@example.com."
            usage: dict = {"latency_s": float(rng.gamma(2.0, 1.0)), "output_tokens": int(rng.integers(5, 50))}
            if t == 7 and i == 0:
                usage["latency_s"] = "slow"
            its.append({"query": "what is the capital of france?", "answer": answer,
                        "expected_answer": "paris" if t % 3 else None, "context": ["paris is the capital"],
                        "usage": usage, "tool_calls": [{"name": "search", "arguments": {"q": "paris"}}]})
        if t == 11:
            its[0]["nodes"] = "not a list"
        out.append({"agent": f"a{t % 2}", "task_id": f"t{t // 2}", "trial": t % 2, "success": bool(t % 2),
                    "interactions": its, "expected_tool_calls": [{"name": "search", "arguments": {"q": "paris"}}]})
    return out


#: The shards of :func:`trial_records` (23): plain JSONL, gzip JSONL, a JSON array. Trial 7 (latency "slow") is
#: line 8 of a.jsonl, trial 11 (nodes not a list) line 3 of b.jsonl.gz.
SHARDS: dict[str, range] = {"a.jsonl": range(0, 9), "b.jsonl.gz": range(9, 16), "c.json": range(16, 23)}


def write_shards(folder: Path, records: Sequence[dict], split: Mapping[str, range] = SHARDS) -> dict[str, Path]:
    """Write ``records`` as shard files (``split``: file name -> record positions); return name -> path."""
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for name, rows in split.items():
        path = folder / name
        chosen = [records[i] for i in rows]
        if name.endswith(".json"):
            path.write_text(json.dumps(chosen))
        else:
            text = "".join(json.dumps(r) + "\n" for r in chosen).encode()
            path.write_bytes(gzip.compress(text) if name.endswith(".gz") else text)
        out[name] = path
    return out


def slice_counts(seed: int = 3) -> pd.DataFrame:
    """Counts of 2 agents x 6 tasks in each of three benchmark versions (column ``version``), 2-5 trials a cell."""
    rng = np.random.default_rng(seed)
    rows = []
    for version in ("v1", "v2", "v3"):
        for agent in ("a", "b"):
            for t in range(6):
                n = int(rng.integers(2, 6))
                rows.append((agent, f"t{t}", n, int(rng.integers(0, n + 1)), version))
    return pd.DataFrame(rows, columns=["agent", "task_id", "n", "c", "version"])

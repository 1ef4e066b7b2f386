"""compute(executor=...): chunks scored by workers give the in-process frame, row for row, errors in the same order."""

from __future__ import annotations

import concurrent.futures as cf
import json

import pandas as pd
import pytest
from parallel_helpers import METRICS, METRICS_FULL
from parallel_helpers import trial_records as _records

from agentstats.io import load_trials
from agentstats.metrics import MetricInputError, compute, get_metric
from agentstats.records.trial import Trial


@pytest.fixture(scope="module")
def trials() -> list[Trial]:
    return [Trial(**r) for r in _records(23)]


def _same(a: pd.DataFrame, b: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(a, b)
    assert a.attrs == b.attrs


@pytest.mark.parametrize("chunk_size", [1, 4, 50])
def test_threads_give_the_in_process_frame(trials, chunk_size):
    metrics = [*METRICS.split(","), get_metric("output_tokens", level="node", name="node_tokens")]
    local = compute(trials, metrics, errors="collect", judge="deterministic")
    assert local["metric"].nunique() == 7 and local.attrs["errors"] == [
        "trial a1/t3/1: metric latency: interaction 0: usage.latency_s must be a number, got 'slow'",
        "metric node_tokens: trial a1/t5/1 interaction 0: field nodes must be a list of objects"]
    with cf.ThreadPoolExecutor(max_workers=3) as pool:
        chunked = compute(trials, metrics, errors="collect", judge="deterministic", executor=pool,
                          chunk_size=chunk_size)
    _same(chunked, local)


def test_file_and_line_survive_the_chunks(tmp_path):
    path = tmp_path / "runs.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in _records(9)) + "\n")
    loaded = load_trials(path)
    local = compute(loaded, "latency", level="interaction", errors="collect")
    with cf.ThreadPoolExecutor(max_workers=2) as pool:
        chunked = compute(loaded, "latency", level="interaction", errors="collect", executor=pool, chunk_size=2)
    _same(chunked, local)
    assert chunked.attrs["errors"][0].startswith(f"{path}, line 8: trial a1/t3/1 interaction 0: metric latency")
    with cf.ThreadPoolExecutor(max_workers=2) as pool, pytest.raises(MetricInputError, match=r"line 8: trial a1/t3/1"):
        compute(loaded, "latency", level="interaction", executor=pool, chunk_size=2)


def test_no_trials_and_bad_chunk_sizes(trials):
    with cf.ThreadPoolExecutor(max_workers=2) as pool:
        _same(compute([], "latency", executor=pool), compute([], "latency"))
        with pytest.raises(ValueError, match="chunk_size must be an integer >= 1, got 0"):
            compute(trials, "latency", executor=pool, chunk_size=0)


@pytest.mark.slow
def test_a_process_pool_gives_the_in_process_frame(trials):
    local = compute(trials, METRICS_FULL, errors="collect", judge="deterministic")
    chunked = compute(trials, METRICS_FULL, errors="collect", judge="deterministic", executor="process", workers=2,
                      chunk_size=5)
    _same(chunked, local)


def test_a_text_column_missing_in_one_chunk_keeps_the_in_process_type():
    """risk_level and node missing in every trial of one chunk: that chunk's column is object, the others text; the
    merged frame has the in-process text column (missing values NaN), not object."""
    trials = [Trial(agent="a", task_id=f"t{i}", trial=0, risk_level="high" if i < 2 else None,
                    interactions=[{"answer": "x y", "usage": {"latency_s": 1.0},
                                   **({"nodes": [{"name": "plan", "output_tokens": 3}]} if i >= 2 else {})}])
              for i in range(4)]
    metrics = ["latency", get_metric("output_tokens", level="node", name="node_tokens")]
    local = compute(trials, metrics)
    assert local["risk_level"].dtype != object and local["node"].dtype != object
    assert local["risk_level"].tolist()[:2] == ["high", "high"] and local["node"].tolist()[-2:] == ["plan", "plan"]
    with cf.ThreadPoolExecutor(max_workers=2) as pool:
        _same(compute(trials, metrics, executor=pool, chunk_size=2), local)

"""The executor interface: resolving ``executor=``, chunks, results in input order, per-slice seeds, Ray kept lazy."""

from __future__ import annotations

import ast
import concurrent.futures as cf
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from agentstats.intervals import derive_seed
from agentstats.parallel import (
    EXECUTOR_NAMES,
    as_finished,
    chunk_slices,
    executor_workers,
    map_ordered,
    resolve_executor,
)
from agentstats.parallel.executor import MAX_CHUNK, MIN_CHUNK

PACKAGE = Path(__file__).resolve().parents[2] / "agentstats"


# ---------------------------------------------------------------- resolve_executor
def test_local_is_in_process_and_an_instance_is_used_as_given():
    for spec in (None, "local"):
        with resolve_executor(spec) as ex:
            assert ex is None
    pool = cf.ThreadPoolExecutor(max_workers=3)
    with resolve_executor(pool) as ex:
        assert ex is pool and executor_workers(ex) == 3
    assert pool.submit(lambda: 5).result() == 5  # not shut down: the caller owns it
    pool.shutdown()


def test_process_pool_is_made_with_the_workers_asked_and_shut_down():
    with resolve_executor("process", workers=2) as ex:
        assert isinstance(ex, cf.ProcessPoolExecutor) and executor_workers(ex) == 2
        assert ex._mp_context.get_start_method() == "spawn"  # type: ignore[attr-defined]
    with pytest.raises(RuntimeError, match="shutdown"):
        ex.submit(int)


@pytest.mark.parametrize(("spec", "options", "error", "match"), [
    ("threads", {}, ValueError, r"executor must be one of \['local', 'process', 'ray'\]"),
    (3, {}, TypeError, "got int"),
    ("local", {"workers": 2}, ValueError, "workers needs executor='process'"),
    ("process", {"workers": 0}, ValueError, "workers must be an integer >= 1, got 0"),
    ("process", {"workers": True}, ValueError, "workers must be an integer >= 1"),
    ("process", {"address": "auto"}, ValueError, "address is the Ray cluster's: it needs executor='ray'"),
])
def test_bad_executor_options_are_refused_before_any_work(spec, options, error, match):
    with pytest.raises(error, match=match), resolve_executor(spec, **options):
        pass


def test_an_instance_with_workers_is_refused():
    with cf.ThreadPoolExecutor(1) as pool, pytest.raises(ValueError, match="has its own workers"):
        with resolve_executor(pool, workers=2):
            pass


def test_names_are_the_command_lines_choices():
    assert EXECUTOR_NAMES == ("local", "process", "ray")


# ---------------------------------------------------------------- chunks
@pytest.mark.parametrize(("n", "workers", "size"), [(0, 1, None), (7, 1, None), (10, 2, 3), (100_001, 2, None),
                                                    (1_000_000, 16, None), (12, 4, None)])
def test_chunks_cover_every_item_once_in_order(n, workers, size):
    slices = chunk_slices(n, workers, size)
    assert [s.start for s in slices] == [0, *(s.stop for s in slices[:-1])][:len(slices)]  # no gap, no overlap
    assert (slices[-1].stop if slices else 0) == n and all(s.step is None and s.stop > s.start for s in slices)
    lengths = [s.stop - s.start for s in slices]
    if size is not None:
        assert all(x == size for x in lengths[:-1]) and 0 < lengths[-1] <= size
    elif n:
        assert all(x <= MAX_CHUNK for x in lengths)
        assert all(x >= MIN_CHUNK for x in lengths[:-1])


def test_chunk_sizes_follow_the_workers():
    # 100,001 items, 2 workers: about 4 chunks per worker -> ceil(100001 / 8) = 12,501 each
    assert [s.stop - s.start for s in chunk_slices(100_001, 2)] == [12_501] * 7 + [100_001 - 7 * 12_501]
    # one worker: still chunks of at most MAX_CHUNK (a million trials in one pickled chunk took 15 GB in the worker)
    assert [s.stop - s.start for s in chunk_slices(1_000_000, 1)] == [MAX_CHUNK] * (1_000_000 // MAX_CHUNK)
    assert [s.stop - s.start for s in chunk_slices(1_000, 1)] == [500, 500]
    with pytest.raises(ValueError):
        chunk_slices(5, 0)


# ---------------------------------------------------------------- map_ordered
def _slow_square(x: int) -> int:
    time.sleep(0.002 * (10 - x))  # the first items finish last
    return x * x


def test_results_come_back_in_input_order_whatever_the_finishing_order():
    finished: list[int] = []
    lock = threading.Lock()

    def record(x: int) -> int:
        out = _slow_square(x)
        with lock:
            finished.append(x)
        return out

    with cf.ThreadPoolExecutor(max_workers=10) as pool:
        got = map_ordered(record, range(10), pool)
    assert got == [x * x for x in range(10)]
    assert finished != sorted(finished)  # they did finish out of order
    assert map_ordered(_slow_square, range(10), None) == got


def _fail_on_three(x: int) -> int:
    if x == 3:
        raise ValueError("three")
    return x


@pytest.mark.parametrize("threads", [False, True])
def test_a_failed_item_keeps_the_others_or_raises(threads):
    pool = cf.ThreadPoolExecutor(2) if threads else None
    got = map_ordered(_fail_on_three, range(6), pool, return_exceptions=True)
    assert [g for i, g in enumerate(got) if i != 3] == [0, 1, 2, 4, 5]
    assert isinstance(got[3], ValueError) and str(got[3]) == "three"
    with pytest.raises(ValueError, match="three"):
        map_ordered(_fail_on_three, range(6), pool)
    seen: list[int] = []
    map_ordered(int, ["1", "2"], pool, on_done=seen.append)
    assert sorted(seen) == [1, 2]
    if pool is not None:
        pool.shutdown()


# ---------------------------------------------------------------- seeds
def test_derived_seeds_depend_on_the_base_seed_and_the_key_only():
    expected = np.random.SeedSequence([7, 3]).generate_state(2, np.uint32)
    assert derive_seed(7, 3) == (int(expected[0]) << 31) | (int(expected[1]) >> 1)
    text = int.from_bytes(__import__("hashlib").blake2b(b"v1.2", digest_size=8).digest(), "little")
    state = np.random.SeedSequence([0, text]).generate_state(2, np.uint32)
    assert derive_seed(0, "v1.2") == (int(state[0]) << 31) | (int(state[1]) >> 1)
    seeds = {derive_seed(0, key) for key in range(1000)}
    assert len(seeds) == 1000 and all(0 <= s < 2**63 for s in seeds)
    assert derive_seed(0, "a") != derive_seed(1, "a") and derive_seed(0, "a", 1) != derive_seed(0, "a", 2)
    assert derive_seed(0, np.int64(5)) == derive_seed(0, 5)


# ---------------------------------------------------------------- Ray stays lazy
def test_only_the_ray_adapter_imports_ray_and_only_inside_a_function():
    found = []
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        if not re.search(r"^\s*(import|from)\s+ray\b", text, re.MULTILINE):
            continue
        tree = ast.parse(text)
        top_level = {id(n) for n in tree.body}
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n == "ray" or n.startswith("ray.") for n in names):
                found.append((path.relative_to(PACKAGE).as_posix(), id(node) in top_level))
    assert found == [("parallel/ray_executor.py", False)]


@pytest.mark.slow
def test_importing_agentstats_and_the_default_paths_do_not_import_ray():
    """In a fresh interpreter: the default paths (compute_files' too) leave Ray unimported, and the derived seeds are
    this process's."""
    code = """
import sys
import agentstats
from agentstats.intervals import derive_seed
print(derive_seed(11, 'slice-a'), derive_seed(11, 4))
from agentstats.metrics import compute
from agentstats.records.trial import Trial
trials = [Trial(agent="a", task_id=f"t{i}", trial=0, interactions=[{"answer": "x y", "usage": {"latency_s": 1.0}}])
          for i in range(3)]
assert len(compute(trials, "latency,reading_ease")) == 6
import json, pathlib, tempfile
from agentstats.metrics import compute_files
with tempfile.TemporaryDirectory() as shards:
    for i in range(2):
        record = {"agent": "a", "task_id": f"t{i}", "trial": 0,
                  "interactions": [{"answer": "x y", "usage": {"latency_s": 1.0}}]}
        pathlib.Path(shards, f"s{i}.jsonl").write_text(json.dumps(record))
    assert len(compute_files(shards, "latency,reading_ease")) == 4
import pandas as pd
table = agentstats.fit_many(pd.DataFrame({"agent": ["a", "a"], "task_id": ["t1", "t2"], "n": [2, 2], "c": [1, 2],
                                          "g": ["x", "y"]}), by="g", model="no_pooling", k=1, draws=50, chains=2)
assert table["error"].isna().all(), table["error"].tolist()
assert "ray" not in sys.modules, "ray was imported"
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    seeds, ok = done.stdout.strip().splitlines()
    assert ok == "ok"
    assert [int(x) for x in seeds.split()] == [derive_seed(11, "slice-a"), derive_seed(11, 4)]  # in any process


def test_as_finished_yields_each_position_once_as_it_finishes():
    with cf.ThreadPoolExecutor(max_workers=10) as pool:
        got = list(as_finished(_slow_square, range(10), pool))
    assert sorted(got) == [(i, i * i) for i in range(10)]
    assert [i for i, _ in got] != list(range(10))  # the first items finish last
    assert list(as_finished(_slow_square, range(3), None)) == [(0, 0), (1, 1), (2, 4)]


def test_a_ray_cluster_that_cannot_start_is_one_line_naming_the_docs(monkeypatch):
    """Ray's traceback ("The current node timed out during startup", a missing auth token) becomes one line that says
    what failed and where to read about it, with Ray's exception as the cause."""
    import types

    from agentstats.parallel import ray_executor

    def init(**kwargs):
        raise ConnectionError("Failed to connect to Ray cluster at 192.0.2.2:6379\nmore lines")

    fake = types.SimpleNamespace(is_initialized=lambda: False, init=init)
    monkeypatch.setattr(ray_executor, "import_ray", lambda: fake)
    with pytest.raises(RuntimeError, match=r"^could not join the Ray cluster at auto: ConnectionError: Failed to "
                       r"connect to Ray cluster at 192\.0\.2\.2:6379 \(busy machine, token authentication: "
                       r"docs/scaling\.md, 'Failures'\)$") as caught:
        ray_executor.RayExecutor("auto")
    assert isinstance(caught.value.__cause__, ConnectionError)
    with pytest.raises(RuntimeError, match=r"^could not start a local Ray cluster: "):
        ray_executor.RayExecutor()

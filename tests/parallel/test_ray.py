"""The Ray adapter on a real local cluster (2 CPUs): the in-process numbers, and a killed worker loses nothing.

Both ways onto the cluster: Ray tasks over chunks of trials in memory (``compute(executor="ray")``, ``fit_many``) and
a ``ray.data`` job over shard files (``compute_files(executor="ray")``, :meth:`RayExecutor.map_batches`).

One cluster for the module (started once, shut down at the end, its temp dir under pytest's). Slow: starting Ray
takes seconds, and the workers import agentstats. On a machine loaded past its cores Ray's node can fail to start: the
raylet waits a fixed 15 s for its dashboard agent's port file (ray-project/ray#65983), and the agent's imports take
about 6 s of CPU, nearly all of it jsonschema importing rfc3987-syntax, which builds an Earley grammar for IRI format
checks. So the cluster's processes (agent, workers) start with that optional module left out (a stub on their
PYTHONPATH that raises ImportError, which jsonschema expects when it is absent; no metric here checks IRI formats),
and the fixture tries three times.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pandas as pd
import pytest

ray = pytest.importorskip("ray")

from agentstats.metrics import compute, compute_files  # noqa: E402
from agentstats.parallel import map_ordered, resolve_executor  # noqa: E402
from agentstats.parallel.ray_executor import RayExecutor  # noqa: E402
from agentstats.posterior import fit_many  # noqa: E402

pytestmark = pytest.mark.slow

from parallel_helpers import FIT_OPTIONS as OPTIONS  # noqa: E402
from parallel_helpers import METRICS_FULL as METRICS  # noqa: E402
from parallel_helpers import slice_counts as _counts  # noqa: E402
from parallel_helpers import trial_records as _records  # noqa: E402
from parallel_helpers import write_shards  # noqa: E402

from agentstats.records.problems import LoadError  # noqa: E402
from agentstats.records.trial import Trial  # noqa: E402

#: METRICS_FULL less its batch metric (answer_correctness): compute_files refuses those.
FILE_METRICS = ",".join(m for m in METRICS.split(",") if m != "answer_correctness")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    stub = tmp_path_factory.mktemp("stub")
    (stub / "rfc3987_syntax").mkdir()
    (stub / "rfc3987_syntax" / "__init__.py").write_text(
        'raise ImportError("left out of the test cluster: its grammar takes seconds to build")\n')
    path = os.pathsep.join([str(stub), *sys.path])
    before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = path  # read by the processes ray.init starts (agent, raylet, workers)
    try:
        for attempt in range(3):
            temp = tmp_path_factory.mktemp("ray")
            try:
                ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, _temp_dir=str(temp),
                         runtime_env={"env_vars": {"PYTHONPATH": path}})
                break
            except Exception:  # the node timed out during startup (module docstring): stop what started, retry
                ray.shutdown()
                if attempt == 2:
                    raise
    finally:
        if before is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = before
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the killer below runs in the workers
    try:
        yield
    finally:
        ray.shutdown()


def test_scoring_on_ray_gives_the_in_process_frame(cluster):
    trials = [Trial(**r) for r in _records(23)]
    local = compute(trials, METRICS, errors="collect", judge="deterministic")
    remote = compute(trials, METRICS, errors="collect", judge="deterministic", executor="ray", chunk_size=4)
    pd.testing.assert_frame_equal(remote, local)
    assert remote.attrs == local.attrs
    assert ray.is_initialized()  # an executor that joined a running cluster leaves it running


def test_fit_many_on_ray_gives_the_in_process_table(cluster):
    counts = _counts()
    local = fit_many(counts, by="version", k=[1, 2], random_seed=5, **OPTIONS)
    remote = fit_many(counts, by="version", k=[1, 2], random_seed=5, executor="ray", **OPTIONS)
    pd.testing.assert_frame_equal(remote.drop(columns="seconds"), local.drop(columns="seconds"))


def _dies_once(task: tuple[str, int]) -> tuple[int, int]:
    """Kill this worker process the first time item 3 is run (a marker file says it was), else echo the item."""
    folder, item = task
    marker = Path(folder) / f"died-{item}"
    if item == 3 and not marker.exists():
        marker.write_text(str(os.getpid()))
        os._exit(1)
    (Path(folder) / f"ran-{item}-{os.getpid()}").write_text("")
    return item, item * item


def test_a_worker_killed_mid_job_loses_and_duplicates_nothing(cluster, tmp_path):
    with resolve_executor(RayExecutor(max_retries=2)) as ex:
        got = map_ordered(_dies_once, [(str(tmp_path), i) for i in range(8)], ex)
    assert got == [(i, i * i) for i in range(8)]  # every item once, in order
    assert (tmp_path / "died-3").exists()  # the worker did die on item 3, and Ray ran it again
    ran = sorted(int(p.name.split("-")[1]) for p in tmp_path.glob("ran-*"))
    assert ran == list(range(8))  # each item finished exactly once


def test_a_task_that_keeps_dying_is_an_error_of_its_item_only(cluster, tmp_path):
    def always_dies(item: int) -> int:
        if item == 1:
            os._exit(1)
        return item

    with resolve_executor(RayExecutor(max_retries=0)) as ex:
        got = map_ordered(always_dies, range(3), ex, return_exceptions=True)
    assert got[0] == 0 and got[2] == 2
    assert isinstance(got[1], ray.exceptions.RayError)


# ---------------------------------------------------------------- ray.data over shard files
def test_scoring_shard_files_with_ray_data_gives_the_in_process_frame(cluster, tmp_path):
    records = _records(23)
    paths = write_shards(tmp_path / "shards", records)
    want = compute([Trial(**r) for r in records], FILE_METRICS, errors="collect")
    local = compute_files(tmp_path / "shards", FILE_METRICS, errors="collect")
    context = ray.data.DataContext.get_current()
    before = context.execution_options.preserve_order
    remote = compute_files(tmp_path / "shards", FILE_METRICS, errors="collect", executor="ray")
    assert context.execution_options.preserve_order == before  # set for the job only
    pd.testing.assert_frame_equal(remote, want, check_flags=False)
    assert remote.attrs == local.attrs and remote.attrs["errors"] == [
        f"{paths['a.jsonl']}, line 8: trial a1/t3/1: metric latency: interaction 0: usage.latency_s must be a number, "
        "got 'slow'"]
    assert ray.is_initialized()  # joined the running cluster: left running


def test_a_bad_record_in_a_shard_on_ray_data_is_the_readers_error(cluster, tmp_path):
    records = _records(6)
    rows = [*records[:4], dict(records[4], trial="first"), records[5]]
    paths = write_shards(tmp_path, rows, {"a.jsonl": range(0, 3), "b.jsonl": range(3, 6)})
    with pytest.raises(LoadError) as caught:  # the reader's own error, pickled back from the worker
        compute_files(tmp_path, "output_tokens", executor="ray")
    assert [(p.source, p.line, p.field) for p in caught.value.problems] == [(str(paths["b.jsonl"]), 2, "trial")]
    got = compute_files(tmp_path, "output_tokens", errors="collect", executor="ray")
    kept = [Trial(**r) for i, r in enumerate(records) if i != 4]
    pd.testing.assert_frame_equal(got, compute(kept, "output_tokens"), check_flags=False)
    assert len(got.attrs["errors"]) == 1 and got.attrs["errors"][0].startswith(f"{paths['b.jsonl']}, line 2, field "
                                                                               "'trial': ")


def test_map_batches_loses_and_duplicates_nothing_when_a_worker_is_killed(cluster, tmp_path):
    with resolve_executor(RayExecutor(max_retries=2)) as ex:
        got = ex.map_batches(_dies_once, [(str(tmp_path), i) for i in range(8)])
    assert got == [(i, i * i) for i in range(8)]  # every item once, in order
    assert (tmp_path / "died-3").exists()  # the worker did die on item 3, and Ray ran it again
    ran = sorted(int(p.name.split("-")[1]) for p in tmp_path.glob("ran-*"))
    assert ran == list(range(8))  # each item finished exactly once


def test_map_batches_gives_each_items_exception_in_input_order(cluster):
    def odd_fails(item: int) -> int:
        if item % 2:
            raise ValueError(f"odd item {item}")
        return item * 10

    with resolve_executor(RayExecutor()) as ex:
        got = ex.map_batches(odd_fails, [0, 1, 2, 3], return_exceptions=True)
        assert got[0] == 0 and got[2] == 20
        assert [type(got[i]) for i in (1, 3)] == [ValueError, ValueError] and str(got[3]) == "odd item 3"
        with pytest.raises(ValueError, match=r"^odd item 1$"):  # the first in input order, whichever finished first
            ex.map_batches(odd_fails, [0, 2, 1, 3])
        assert ex.map_batches(odd_fails, []) == []

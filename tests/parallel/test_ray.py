"""The Ray adapter on a real local cluster (2 CPUs): the in-process numbers, and a killed worker loses nothing.

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

from agentstats.metrics import compute  # noqa: E402
from agentstats.parallel import map_ordered, resolve_executor  # noqa: E402
from agentstats.parallel.ray_executor import RayExecutor  # noqa: E402
from agentstats.posterior import fit_many  # noqa: E402

pytestmark = pytest.mark.slow

from parallel_helpers import FIT_OPTIONS as OPTIONS  # noqa: E402
from parallel_helpers import METRICS_FULL as METRICS  # noqa: E402
from parallel_helpers import slice_counts as _counts  # noqa: E402
from parallel_helpers import trial_records as _records  # noqa: E402

from agentstats.records.trial import Trial  # noqa: E402


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

"""Counts straight from a flat trials JSONL file, without a Python object per line.

Reading a trials file record by record (JSON decoding plus pydantic validation of every :class:`Trial`) costs
tens of microseconds per line and about a kilobyte per trial. When only the counts per (agent, task) are
needed and every line holds nothing but the flat trial fields (``agent, task_id, trial, status, success,
reward, judge_missing``), pyarrow's multi-threaded JSON reader parses the file into typed columns and the
checks of :class:`~agentstats.schema.Trial` run vectorized.

This path *decides* only clean files: at the first sign of anything else (another field, a type pyarrow does
not read exactly as pydantic would, a value the trial rules refuse, a duplicate key, a contradiction, an
unscored trial, a line that is not one JSON object) it returns ``None`` and the caller reads the file
record by record, which locates every problem. So both paths give the same counts, or the record-by-record
path gives the error.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pandas as pd

from agentstats.counts import counts_from_codes
from agentstats.io.agents import AgentSelection
from agentstats.io.detect import open_binary
from agentstats.schema import REWARD_TOL, Status

__all__ = ["jsonl_counts"]

_BLOCK = 1 << 22


def _core_schema() -> Any:
    import pyarrow as pa

    return pa.schema(
        [
            ("agent", pa.string()),
            ("task_id", pa.string()),
            ("trial", pa.int64()),
            ("status", pa.string()),
            ("success", pa.bool_()),
            ("reward", pa.float64()),
            ("judge_missing", pa.bool_()),
        ]
    )


def _one_object_per_line(data: bytes) -> int | None:
    """Count the lines that start with ``{``; ``None`` when a non-blank line starts otherwise."""
    arr = np.frombuffer(data, dtype=np.uint8)
    starts = np.concatenate(([0], np.flatnonzero(arr == 10) + 1))
    starts = starts[starts < len(arr)]
    first = arr[starts]
    is_obj = first == ord("{")
    blank = (first == 10) | ((first == 13) & (arr[np.minimum(starts + 1, len(arr) - 1)] == 10))
    if not np.all(is_obj | blank):
        return None
    return int(is_obj.sum())


def jsonl_counts(path: str | os.PathLike, *, agents: AgentSelection | None = None) -> pd.DataFrame | None:
    """Count per (agent, task) a flat trials JSONL file; ``None`` when the file needs the full reader.

    Parameters
    ----------
    path : str or PathLike
        The project's JSONL (plain or gzip).
    agents : AgentSelection, optional
        Agents to keep.

    Returns
    -------
    pandas.DataFrame or None
        As :func:`agentstats.counts.to_counts` (with ``attrs["gaps"]``), or ``None`` (see the module
        docstring). Memory: the file's bytes plus its columns, about 150 MB for a million lines.

    Raises
    ------
    ValueError
        From ``agents`` when an entry matches no agent.
    """
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.json as pj

    with open_binary(path) as fh:
        try:
            data = fh.read()
        except (OSError, EOFError):
            return None
    if not data or data.startswith(b"\xef\xbb\xbf"):
        return None
    n_lines = _one_object_per_line(data)
    if not n_lines:
        return None
    try:
        table = pj.read_json(
            pa.BufferReader(data),
            read_options=pj.ReadOptions(use_threads=True, block_size=_BLOCK),
            parse_options=pj.ParseOptions(explicit_schema=_core_schema(), unexpected_field_behavior="error"),
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, UnicodeDecodeError, OverflowError):
        return None
    del data
    if table.num_rows != n_lines:
        return None
    try:
        table.validate(full=True)  # pyarrow's JSON parser does not check UTF-8; this does
    except pa.ArrowInvalid:
        return None

    agent, task = table["agent"], table["task_id"]
    if agent.null_count or task.null_count or table["trial"].null_count:
        return None
    for names in (agent, task):
        if pc.any(pc.equal(pc.utf8_trim_whitespace(names), "")).as_py():
            return None
    trial = table["trial"].to_numpy()
    if len(trial) and trial.min() < 0:
        return None
    status = table["status"]
    given = pc.drop_null(status)
    if len(given) and not pc.all(pc.is_in(given, pa.array([s.value for s in Status]))).as_py():
        return None
    reward = table["reward"].to_numpy(zero_copy_only=False)  # NaN where absent
    has_reward = table["reward"].is_valid().to_numpy(zero_copy_only=False)
    if not np.all(np.isfinite(reward[has_reward])):
        return None
    succ_valid = table["success"].is_valid().to_numpy(zero_copy_only=False)
    success = table["success"].fill_null(False).to_numpy(zero_copy_only=False)
    judge_missing = table["judge_missing"].fill_null(False).to_numpy(zero_copy_only=False)
    st = status.fill_null(Status.completed.value).to_numpy(zero_copy_only=False)
    infra = st == Status.infra_error.value
    agent_err = st == Status.agent_error.value
    r_one = has_reward & (np.abs(reward - 1.0) <= REWARD_TOL)
    r_zero = has_reward & (np.abs(reward) <= REWARD_TOL)
    if np.any(succ_valid & has_reward & ((success & r_zero) | (~success & r_one))):
        return None  # a contradiction: the full reader names it
    # Trial.outcome, vectorized: 0 failure, 1 success, 2 missing, -1 unscored
    outcome = np.full(len(trial), -1, dtype=np.int8)
    outcome[has_reward] = r_one[has_reward]
    outcome[succ_valid] = success[succ_valid]
    outcome[judge_missing] = 2
    outcome[agent_err] = 0
    outcome[infra] = 2
    if np.any(outcome < 0):
        return None  # unscored trials: the full reader names them, with hints

    a_enc = pc.dictionary_encode(agent).combine_chunks()
    t_enc = pc.dictionary_encode(task).combine_chunks()
    a_codes = a_enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    t_codes = t_enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    a_names = a_enc.dictionary.to_pylist()
    t_names = t_enc.dictionary.to_pylist()
    excluded: list[str] = []
    if agents is not None:
        kept = agents.keep(a_names, str(path))
        excluded = sorted(set(a_names) - kept)
        rows = np.isin(a_codes, [i for i, a in enumerate(a_names) if a in kept])
        a_codes, t_codes, trial, outcome = a_codes[rows], t_codes[rows], trial[rows], outcome[rows]
    # recode to the agents and tasks that remain, in order of first appearance (as to_counts does)
    a_codes, a_names = _recode(a_codes, a_names)
    t_codes, t_names = _recode(t_codes, t_names)
    keys = pd.DataFrame({"a": a_codes, "t": t_codes, "k": trial})
    if keys.duplicated().any():
        return None
    counts = counts_from_codes(a_codes, t_codes, trial, outcome, a_names, t_names)
    counts.attrs["excluded_agents"] = excluded
    return counts


def _recode(codes: np.ndarray, names: list[str]) -> tuple[np.ndarray, list[str]]:
    uniq, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")  # new code = rank of first appearance
    rank = np.empty(len(uniq), dtype=np.int64)
    rank[order] = np.arange(len(uniq))
    return rank[inverse].astype(np.int64), [names[uniq[i]] for i in order]

"""Counts straight from a flat trials JSONL file, without a Python object per line.

Reading a trials file record by record (JSON decoding plus pydantic validation of every :class:`Trial`) costs
tens of microseconds per line and about a kilobyte per trial. When only the counts per (agent, task) are
needed and every line holds nothing but the flat trial fields (``agent, task_id, trial, status, success,
reward, judge_missing``, plus ``usage`` with its four documented members and ``risk_level``), pyarrow's
multi-threaded JSON reader parses the file into typed columns and the checks of
:class:`~agentstats.records.trial.Trial` run vectorized.

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

from agentstats.files.sniff import STREAM_ERRORS, open_binary
from agentstats.io.agents import AgentSelection
from agentstats.records.counts import counts_from_codes
from agentstats.records.trial import CODE_UNSCORED, REWARD_TOL, Status, outcome_codes, outcome_conflicts

__all__ = ["batch_codes", "jsonl_counts"]

_BLOCK = 1 << 20  # bytes per parsed block: memory stays near one block per thread
_SCAN = 1 << 22


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
            # usage and risk_level are read only to be checked: their types are pydantic's for Usage / str
            (
                "usage",
                pa.struct(
                    [
                        ("latency_s", pa.float64()),
                        ("input_tokens", pa.int64()),
                        ("output_tokens", pa.int64()),
                        ("cost_usd", pa.float64()),
                    ]
                ),
            ),
            ("risk_level", pa.string()),
        ]
    )


def _object_lines(path: str | os.PathLike) -> int | None:
    """Count the lines that start with ``{``, streaming; ``None`` when a non-blank line starts otherwise.

    pyarrow's reader would also accept two objects on one line, or one object over several lines: comparing
    its row count with this count refuses both (the record-by-record reader reports them).
    """
    n_obj = 0
    prev = b"\n"  # the byte before the current chunk: the file starts a line
    with open_binary(path) as fh:
        first_chunk = True
        while chunk := fh.read(_SCAN):
            if first_chunk and chunk.startswith(b"\xef\xbb\xbf"):
                return None
            first_chunk = False
            buf = np.frombuffer(prev + chunk, dtype=np.uint8)
            starts = np.flatnonzero(buf[:-1] == 10) + 1  # indices in buf of bytes that start a line
            first = buf[starts]
            after = buf[np.minimum(starts + 1, len(buf) - 1)]
            is_obj = first == ord("{")
            # a blank line: "\n" or "\r\n" (a "\r" at the very end of a chunk is taken as not blank: fallback)
            blank = (first == 10) | ((first == 13) & (after == 10) & (starts + 1 < len(buf)))
            if not np.all(is_obj | blank):
                return None
            n_obj += int(is_obj.sum())
            prev = chunk[-1:]
    return n_obj


def batch_codes(batch: Any) -> np.ndarray:
    """Return the outcome code of each trial of a record batch of :func:`_core_schema` (not validated).

    The columns go to :func:`agentstats.records.trial.outcome_codes`, the one vectorised outcome rule: a null
    ``status`` is ``completed``, a null ``success`` / ``reward`` / ``judge_missing`` is not given.

    Returns
    -------
    numpy.ndarray of int8, shape (rows,)
        :data:`~agentstats.records.trial.OUTCOME_CODE`, or :data:`~agentstats.records.trial.CODE_UNSCORED`.
    """
    return outcome_codes(
        batch.column("status").to_numpy(zero_copy_only=False),
        batch.column("success").to_numpy(zero_copy_only=False),  # object: True / False / None
        batch.column("reward").to_numpy(zero_copy_only=False),  # float: NaN where absent
        batch.column("judge_missing").to_numpy(zero_copy_only=False),
    )


def _batch_outcomes(batch: Any) -> np.ndarray | None:
    """Check one record batch as :class:`Trial` would and return its outcome codes; ``None`` at the first doubt."""
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        batch.validate(full=True)  # pyarrow's JSON parser does not check UTF-8; this does
    except pa.ArrowInvalid:
        return None
    agent, task, trial = batch.column("agent"), batch.column("task_id"), batch.column("trial")
    if agent.null_count or task.null_count or trial.null_count:
        return None
    for names in (agent, task):
        if len(names) and pc.any(pc.equal(pc.utf8_trim_whitespace(names), "")).as_py():
            return None
    if len(trial) and pc.min(trial).as_py() < 0:
        return None
    given = pc.drop_null(batch.column("status"))
    if len(given) and not pc.all(pc.is_in(given, pa.array([s.value for s in Status]))).as_py():
        return None
    reward_col = batch.column("reward")
    reward = reward_col.to_numpy(zero_copy_only=False)  # NaN where absent
    has_reward = reward_col.is_valid().to_numpy(zero_copy_only=False)
    given_reward = reward[has_reward]
    if not np.all(np.isfinite(given_reward)) or np.any((given_reward < -REWARD_TOL) | (given_reward > 1 + REWARD_TOL)):
        return None  # outside [0, 1]: the full reader names it
    usage = batch.column("usage")
    if usage.null_count < len(usage):
        for name in ("latency_s", "input_tokens", "output_tokens", "cost_usd"):
            values = pc.drop_null(pc.struct_field(usage, name)).to_numpy(zero_copy_only=False).astype(float)
            if np.any(~np.isfinite(values)) or np.any(values < 0):
                return None  # negative or non-finite usage: the full reader names it
    if np.any(outcome_conflicts(batch.column("success").to_numpy(zero_copy_only=False), reward)):
        return None  # a contradiction (the one rule of records.trial): the full reader names it
    outcome = batch_codes(batch)
    if np.any(outcome == CODE_UNSCORED):
        return None  # unscored trials: the full reader names them, with hints
    return outcome


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
        As :func:`agentstats.records.counts.to_counts` (with ``attrs["gaps"]``), or ``None`` (see the module
        docstring). The file is read in blocks: memory is the agent and task names plus about ten bytes per
        trial (some 50 MB for a million lines), not the file.

    Raises
    ------
    ValueError
        From ``agents`` when an entry matches no agent.
    """
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.json as pj

    try:
        n_lines = _object_lines(path)
    except STREAM_ERRORS:
        return None
    if not n_lines:
        return None
    agent_chunks, task_chunks, trial_chunks, outcome_chunks = [], [], [], []
    try:
        with open_binary(path) as fh:
            reader = pj.open_json(
                fh,
                read_options=pj.ReadOptions(use_threads=True, block_size=_BLOCK),
                parse_options=pj.ParseOptions(explicit_schema=_core_schema(), unexpected_field_behavior="error"),
            )
            for batch in reader:
                outcome = _batch_outcomes(batch)
                if outcome is None:
                    return None
                agent_chunks.append(batch.column("agent"))
                task_chunks.append(batch.column("task_id"))
                trial_chunks.append(batch.column("trial").to_numpy(zero_copy_only=False))
                outcome_chunks.append(outcome)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, UnicodeDecodeError, OverflowError, *STREAM_ERRORS):
        return None
    trial = np.concatenate(trial_chunks) if trial_chunks else np.zeros(0, np.int64)
    if len(trial) != n_lines:
        return None
    outcome = np.concatenate(outcome_chunks)
    agent = pa.chunked_array(agent_chunks, type=pa.string())
    task = pa.chunked_array(task_chunks, type=pa.string())
    del agent_chunks, task_chunks, trial_chunks, outcome_chunks

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

"""A trial as the run store holds it: the ``trials`` row, its Arrow schema, and the SQL that derives the rest.

:func:`trial_row` turns a :class:`~agentstats.records.trial.Trial` into its stored row (:data:`TrialRow`; the
outcome label of :meth:`Trial.outcome`, usage columns, the record's JSON); interactions and tool calls are derived
from the stored JSON in SQL (:data:`DERIVE_INTERACTIONS`, :data:`DERIVE_CALLS`).
"""

from __future__ import annotations

import functools
from typing import Any

from agentstats.records.trial import Trial

__all__ = [
    "DERIVE_CALLS",
    "DERIVE_INTERACTIONS",
    "TRIAL_COLUMNS",
    "TrialBatch",
    "TrialRow",
    "trial_row",
    "trial_schema",
]

#: A trial as stored, less ``run_id`` and ``seq``: agent, task_id, trial, status, success, reward, outcome,
#: latency_s, input_tokens, output_tokens, cost_usd, record (the trial's JSON, ``exclude_defaults``).
TrialRow = tuple[str, str, int, str, bool | None, float | None, str | None, float | None, int | None, int | None,
                 float | None, str]

TRIAL_COLUMNS = ("run_id", "seq", "agent", "task_id", "trial", "status", "success", "reward", "outcome",
                  "latency_s", "input_tokens", "output_tokens", "cost_usd", "record")


@functools.cache
def trial_schema() -> Any:
    """Arrow schema of the streamed ``trials`` rows (every batch the same types, even when a column is all null)."""
    import pyarrow as pa

    types = {"run_id": pa.int32(), "seq": pa.int64(), "trial": pa.int32(), "success": pa.bool_(),
             "reward": pa.float64(), "latency_s": pa.float64(), "input_tokens": pa.int64(),
             "output_tokens": pa.int64(), "cost_usd": pa.float64()}
    return pa.schema([(c, types.get(c, pa.string())) for c in TRIAL_COLUMNS])

# Interactions and tool calls are derived from the stored records in SQL (vectorized; one statement per write), so
# a trial costs Python only its validation, its outcome and its JSON. ``{where}`` selects the trials just written.
# The CTEs used twice are NOT MATERIALIZED: DuckDB would otherwise hold them (every record's JSON arrays) in memory
# for the whole statement, about 370 MB more at 1,000,000 trials; streamed, they are parsed twice instead.
# The interactions are read with one json_transform of the whole record (not of ``record->'interactions'``, which
# parses the record, writes the list out and parses it again): about 1 µs less per trial.
DERIVE_INTERACTIONS = """
INSERT INTO interactions (run_id, agent, task_id, trial, idx, message_id, query, answer, expected_answer)
WITH base AS (SELECT run_id, agent, task_id, trial,
                     json_transform(record, '{{"interactions": [{{"id": "VARCHAR", "query": "VARCHAR",
                                    "answer": "VARCHAR", "expected_answer": "JSON"}}]}}').interactions AS its
              FROM trials WHERE {where}),
     x AS (SELECT run_id, agent, task_id, trial, unnest(its) AS it, generate_subscripts(its, 1) - 1 AS idx
           FROM base WHERE len(its) > 0)
SELECT run_id, agent, task_id, trial, idx, it.id, it.query, it.answer, it.expected_answer FROM x
"""
DERIVE_CALLS = """
INSERT INTO tool_calls (run_id, agent, task_id, trial, interaction_idx, idx, kind, name, call_id, arguments, result,
                        parse_error)
WITH base AS NOT MATERIALIZED (SELECT run_id, agent, task_id, trial, CAST(record->'interactions' AS JSON[]) AS its,
                                     CAST(record->'expected_tool_calls' AS JSON[]) AS exp FROM trials WHERE {where}),
     its AS NOT MATERIALIZED (SELECT run_id, agent, task_id, trial, unnest(its) AS it,
                                     generate_subscripts(its, 1) - 1 AS ii FROM base WHERE len(its) > 0),
     lists AS (SELECT run_id, agent, task_id, trial, ii, 'call' AS kind, CAST(it->'tool_calls' AS JSON[]) AS cs
               FROM its
               UNION ALL
               SELECT run_id, agent, task_id, trial, ii, 'expected', CAST(it->'expected_tool_calls' AS JSON[])
               FROM its
               UNION ALL
               SELECT run_id, agent, task_id, trial, NULL, 'expected', exp FROM base),
     x AS (SELECT run_id, agent, task_id, trial, ii, kind, unnest(cs) AS c, generate_subscripts(cs, 1) - 1 AS j
           FROM lists WHERE len(cs) > 0)
SELECT run_id, agent, task_id, trial, ii, j, kind, c->>'name', c->>'id', coalesce(c->'arguments', '{{}}'),
       c->'result', c->>'parse_error'
FROM x
"""


def trial_row(t: Trial) -> TrialRow:
    """Return the stored row of a trial, without ``run_id`` and ``seq`` (see :data:`TrialRow`)."""
    u = t.usage
    return (t.agent, t.task_id, t.trial, t.status.value, t.success, t.reward, t.outcome(),
            u.latency_s if u else None, u.input_tokens if u else None, u.output_tokens if u else None,
            u.cost_usd if u else None, t.model_dump_json(exclude_defaults=True))


class TrialBatch:
    """Rows of one batch of trials (then one Arrow table)."""

    def __init__(self) -> None:
        self.rows: list[tuple[Any, ...]] = []

    @property
    def n(self) -> int:
        """Number of rows."""
        return len(self.rows)

    def add(self, rid: int, seq: int, t: Trial) -> None:
        """Add trial ``t`` as row ``seq`` of run ``rid``."""
        self.rows.append((rid, seq, *trial_row(t)))

    def columns(self) -> dict[str, list[Any]]:
        """Return the rows as columns (name -> values) of :data:`TRIAL_COLUMNS`."""
        return {name: list(col) for name, col in zip(TRIAL_COLUMNS, zip(*self.rows, strict=True), strict=True)}

    def record_batch(self) -> Any:
        """Return the rows as one Arrow record batch of :func:`trial_schema` (types fixed, whatever the values)."""
        import pyarrow as pa

        return pa.RecordBatch.from_pydict(self.columns(), schema=trial_schema())

"""The run store's tables and their migrations (one list of SQL steps per schema version).

A store file records its version in ``schema_version`` (one row per applied version). Opening a file applies the
missing steps in order, in one transaction, so a file written by an older agentstats is brought up to date and a
file from a newer one is refused (never half-read). ``docs/store.md`` documents every table for plain SQL.
"""

from __future__ import annotations

__all__ = ["MIGRATIONS", "SCHEMA_VERSION"]

#: Version 1: runs, trials, their interactions and tool calls (what an import of trial files needs).
_V1 = [
    """CREATE SEQUENCE IF NOT EXISTS run_ids START 1""",
    """CREATE TABLE runs (
        run_id INTEGER PRIMARY KEY DEFAULT nextval('run_ids'),
        name VARCHAR NOT NULL UNIQUE,
        description VARCHAR,
        tags VARCHAR[],
        source VARCHAR,
        source_sha256 VARCHAR,
        config JSON,
        started_at TIMESTAMPTZ NOT NULL,
        ended_at TIMESTAMPTZ,
        status VARCHAR NOT NULL
    )""",
    """CREATE TABLE trials (
        run_id INTEGER NOT NULL,
        seq BIGINT NOT NULL,
        agent VARCHAR NOT NULL,
        task_id VARCHAR NOT NULL,
        trial INTEGER NOT NULL,
        status VARCHAR NOT NULL,
        success BOOLEAN,
        reward DOUBLE,
        outcome VARCHAR,
        latency_s DOUBLE,
        input_tokens BIGINT,
        output_tokens BIGINT,
        cost_usd DOUBLE,
        record JSON NOT NULL
    )""",
    """CREATE TABLE interactions (
        run_id INTEGER NOT NULL,
        agent VARCHAR NOT NULL,
        task_id VARCHAR NOT NULL,
        trial INTEGER NOT NULL,
        idx INTEGER NOT NULL,
        message_id VARCHAR,
        query VARCHAR,
        answer VARCHAR,
        expected_answer JSON
    )""",
    """CREATE TABLE tool_calls (
        run_id INTEGER NOT NULL,
        agent VARCHAR NOT NULL,
        task_id VARCHAR NOT NULL,
        trial INTEGER NOT NULL,
        interaction_idx INTEGER,
        idx INTEGER NOT NULL,
        kind VARCHAR NOT NULL,
        name VARCHAR NOT NULL,
        call_id VARCHAR,
        arguments JSON,
        result JSON,
        parse_error VARCHAR
    )""",
]

#: Version 2: live capture (node invocations, metric results, judge verdicts), gate decisions, code version.
_V2 = [
    """ALTER TABLE runs ADD COLUMN code_version VARCHAR""",
    """ALTER TABLE runs ADD COLUMN pid INTEGER""",
    """ALTER TABLE runs ADD COLUMN host VARCHAR""",
    """CREATE TABLE node_invocations (
        run_id INTEGER NOT NULL,
        invocation_id BIGINT NOT NULL,
        parent_id BIGINT,
        agent VARCHAR,
        task_id VARCHAR,
        trial INTEGER,
        conversation_id VARCHAR,
        message_id VARCHAR,
        node VARCHAR NOT NULL,
        started_at TIMESTAMPTZ NOT NULL,
        latency_s DOUBLE NOT NULL,
        inputs JSON,
        outputs JSON,
        error_type VARCHAR,
        error_message VARCHAR,
        model VARCHAR,
        input_tokens BIGINT,
        output_tokens BIGINT,
        cost_usd DOUBLE
    )""",
    """CREATE TABLE metric_results (
        run_id INTEGER NOT NULL,
        metric VARCHAR NOT NULL,
        level VARCHAR NOT NULL,
        node VARCHAR,
        agent VARCHAR,
        task_id VARCHAR,
        trial INTEGER,
        conversation_id VARCHAR,
        message_id VARCHAR,
        invocation_id BIGINT,
        value DOUBLE,
        passed BOOLEAN,
        detail JSON
    )""",
    """CREATE TABLE judge_verdicts (
        run_id INTEGER NOT NULL,
        metric VARCHAR NOT NULL,
        invocation_id BIGINT,
        agent VARCHAR,
        task_id VARCHAR,
        trial INTEGER,
        judge VARCHAR,
        prompt_version VARCHAR,
        verdict JSON,
        score DOUBLE,
        cost_usd DOUBLE
    )""",
    """CREATE TABLE gate_decisions (
        run_id INTEGER,
        decided_at TIMESTAMPTZ NOT NULL,
        decision VARCHAR NOT NULL,
        config JSON,
        record JSON
    )""",
]

#: ``MIGRATIONS[v - 1]`` brings a store from version ``v - 1`` to ``v`` (version 0: an empty file).
MIGRATIONS: list[list[str]] = [_V1, _V2]
#: The schema version this code writes.
SCHEMA_VERSION = len(MIGRATIONS)

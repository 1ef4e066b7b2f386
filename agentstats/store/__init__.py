"""The embedded run store: runs, trials, captured node invocations and metric results in one DuckDB file.

``RunStore("agentstats.duckdb")`` opens or creates the file (nothing to start); ``agentstats.load_trials(path,
run=...)`` feeds a stored run to the pipeline (the store registers its ``duckdb`` format with :mod:`agentstats.io`
from :mod:`agentstats.store.format`, so io never imports the store); ``agentstats runs list|show|export|delete`` and
``agentstats import`` work on it from the command line. DuckDB is an optional dependency
(``pip install 'agentstats[store]'``), imported only when a store is opened.
Tables and their columns: ``docs/store.md``.
"""

from agentstats.store.connection import DEFAULT_STORE, StoreError, is_store_file
from agentstats.store.db import RunStore
from agentstats.store.rows import TrialRow
from agentstats.store.runs import RUN_STATUSES, TABLES, file_sha256
from agentstats.store.schema import SCHEMA_VERSION
from agentstats.store.writing import ImportResult

__all__ = [
    "DEFAULT_STORE",
    "RUN_STATUSES",
    "SCHEMA_VERSION",
    "TABLES",
    "ImportResult",
    "RunStore",
    "StoreError",
    "TrialRow",
    "file_sha256",
    "is_store_file",
]

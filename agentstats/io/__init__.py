"""Reading agent runs: the project's JSONL, tau-bench result files, run tables (METR-style), counts tables.

Entry points: :func:`load_trials` (per-trial inputs -> :class:`TrialSet`), :func:`load_counts` (counts
tables), :func:`load_counts_any` (counts from any input), :func:`save_trials` (write JSONL, atomically, with a
manifest). Formats and options are described in ``docs/data-format.md``.
"""

# importers that register extra formats with register_format (load_trials(format="fair_forge" | "fai_jsonl" | "bfcl"))
from agentstats.io.agents import AgentSelection
from agentstats.io.detect import FORMATS, detect_format
from agentstats.io.jsonl import save_trials
from agentstats.io.loaders import Dataset, TrialSet, load, load_counts, load_counts_any, load_trials, register_format
from agentstats.io.readers import bfcl as _bfcl  # noqa: F401
from agentstats.io.readers import fair_forge as _fair_forge  # noqa: F401
from agentstats.io.readers import inspect_log as _inspect_log  # noqa: F401
from agentstats.io.readers import otel as _otel  # noqa: F401
from agentstats.io.readers import tau2 as _tau2  # noqa: F401
from agentstats.io.readers.bfcl import load_bfcl
from agentstats.io.readers.fair_forge import load_fai_jsonl, load_fair_forge
from agentstats.io.readers.tau_bench import agent_from_filename
from agentstats.records.problems import Problem, TrialLoadError, TrialLoadWarning

__all__ = [
    "FORMATS",
    "AgentSelection",
    "Dataset",
    "Problem",
    "TrialLoadError",
    "TrialLoadWarning",
    "TrialSet",
    "agent_from_filename",
    "detect_format",
    "load",
    "load_bfcl",
    "load_counts",
    "load_counts_any",
    "load_fai_jsonl",
    "load_fair_forge",
    "load_trials",
    "register_format",
    "save_trials",
]

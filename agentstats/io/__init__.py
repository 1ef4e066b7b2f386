"""Reading agent runs and the records around them, through one format registry.

Entry points: :func:`load` (any input -> what its format holds), :func:`load_trials` (trial inputs ->
:class:`TrialSet`), :func:`load_counts` (counts per (agent, task) from any trial or counts input), :func:`save_trials`
(write JSONL, atomically, with a manifest). Formats are registered in :mod:`agentstats.io.registry` (the readers
below register theirs when this package is imported; installed packages such as the run store through the
``agentstats.formats`` entry points) and described in ``docs/data-format.md``.
"""

# the built-in readers register their formats on import, in this order (the order detectors are asked in)
from agentstats.io import jsonl as _jsonl  # noqa: F401  (jsonl, json)
from agentstats.io.agents import AgentSelection
from agentstats.io.detect import detect_format
from agentstats.io.jsonl import save_trials
from agentstats.io.loaders import Dataset, TrialSet, load, load_counts, load_trials
from agentstats.io.readers import bfcl as _bfcl  # noqa: F401
from agentstats.io.readers import calibration as _calibration  # noqa: F401
from agentstats.io.readers import counts as _counts  # noqa: F401
from agentstats.io.readers import evalset as _evalset  # noqa: F401
from agentstats.io.readers import fair_forge as _fair_forge  # noqa: F401  (fair_forge, fai_jsonl)
from agentstats.io.readers import inspect_log as _inspect_log  # noqa: F401
from agentstats.io.readers import lm_eval as _lm_eval  # noqa: F401
from agentstats.io.readers import metr as _metr  # noqa: F401  (runs)
from agentstats.io.readers import otel as _otel  # noqa: F401
from agentstats.io.readers import promptfoo as _promptfoo  # noqa: F401
from agentstats.io.readers import scores as _scores  # noqa: F401
from agentstats.io.readers import tau2 as _tau2  # noqa: F401
from agentstats.io.readers import tau_bench as _tau_bench  # noqa: F401
from agentstats.io.readers.tau_bench import agent_from_filename
from agentstats.io.registry import formats, register_format
from agentstats.records.problems import LoadError, LoadWarning, Problem

__all__ = [
    "AgentSelection",
    "Dataset",
    "LoadError",
    "LoadWarning",
    "Problem",
    "TrialSet",
    "agent_from_filename",
    "detect_format",
    "formats",
    "load",
    "load_counts",
    "load_trials",
    "register_format",
    "save_trials",
]

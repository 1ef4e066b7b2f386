"""Reading agent runs: the project's JSONL, tau-bench result files, run tables (METR-style), counts tables.

Entry points: :func:`load_trials` (per-trial inputs -> :class:`TrialSet`), :func:`load_counts` (counts
tables), :func:`load_counts_any` (counts from any input), :func:`save_trials` (write JSONL). Formats and
options are described in ``docs/data-format.md``.
"""

from agentstats.io.detect import FORMATS, detect_format
from agentstats.io.errors import Problem, TrialLoadError, TrialLoadWarning
from agentstats.io.jsonl import save_trials
from agentstats.io.loaders import Dataset, TrialSet, load, load_counts, load_counts_any, load_trials, register_format
from agentstats.io.tau_bench import agent_from_filename

__all__ = [
    "FORMATS",
    "Dataset",
    "load",
    "Problem",
    "TrialLoadError",
    "TrialLoadWarning",
    "TrialSet",
    "agent_from_filename",
    "detect_format",
    "load_counts",
    "load_counts_any",
    "load_trials",
    "register_format",
    "save_trials",
]

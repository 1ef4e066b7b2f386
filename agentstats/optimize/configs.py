"""One reader for both configuration files: a gate config or a loop config, told apart by their content.

A loop config (:class:`~agentstats.optimize.config.LoopConfig`) embeds the gate's settings under ``gate:`` and names
its eval set, baseline, agent, judge ...; a gate config (:class:`~agentstats.gating.config.GateConfig`) has none of
those fields (it refuses unknown fields). So a file with any field that only a loop config has is a loop config;
anything else is read as a gate config. It lives here, beside the loop config, because it must see both models.
"""

from __future__ import annotations

from pathlib import Path

from agentstats.gating.config import GateConfig, GateConfigError, load_gate_config, read_config_file
from agentstats.optimize.config import LoopConfig, load_loop_config

__all__ = ["LOOP_ONLY_FIELDS", "load_config"]

#: Top-level fields a loop config has and a gate config has not: one of them makes a file a loop config.
LOOP_ONLY_FIELDS = frozenset(LoopConfig.model_fields) - frozenset(GateConfig.model_fields)


def load_config(path: str | Path) -> GateConfig | LoopConfig:
    """Read a gate or loop configuration from a YAML (``.yaml`` / ``.yml``) or JSON (``.json``) file.

    Parameters
    ----------
    path : str or pathlib.Path

    Returns
    -------
    GateConfig or LoopConfig
        A :class:`~agentstats.optimize.config.LoopConfig` when the file has a field of :data:`LOOP_ONLY_FIELDS`
        (``gate``, ``eval_set``, ``baseline``, ``agent`` ...), else a :class:`~agentstats.gating.config.GateConfig`.
        Relative paths in the file are relative to its folder.

    Raises
    ------
    GateConfigError
        When the file cannot be read or parsed (with the line of a syntax error), or a gate config fails
        validation (every error with its field path and line).
    LoopConfigError
        When a loop config fails validation or names an eval set, baseline or prompt file that does not exist.
    """
    _, _, data = read_config_file(path, GateConfigError, empty_ok=True)
    if LOOP_ONLY_FIELDS & set(data):
        return load_loop_config(path)
    return load_gate_config(path)

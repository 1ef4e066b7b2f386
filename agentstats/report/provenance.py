"""What a report was computed from and with: input, estimators, model, sampler, versions, and the command again.

:func:`run_details` lists it at the top of the report; :func:`report_command` writes the ``agentstats report``
command that regenerates the report, from its :class:`~agentstats.report.params.ReportParams` (an option only where
it differs from its default).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentstats._util.markup import md_text
from agentstats._util.options import COLUMN_KEYS
from agentstats.intervals import CI_PROB, ci_percent
from agentstats.report._format import plural
from agentstats.report.params import ReportParams, value_text

if TYPE_CHECKING:  # the fit's types only: describing a fit needs no PyMC import
    import pandas as pd

    from agentstats.models.result import Fit

__all__ = ["dist_version", "k_spec", "package_version", "report_command", "run_details"]


def package_version() -> str:
    """Return agentstats' installed version (``0+unknown`` outside an install)."""
    return dist_version("agentstats") or "0+unknown"


def dist_version(name: str) -> str | None:
    """Return the installed version of distribution ``name``, or None when it is not installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None


def run_details(
    counts: pd.DataFrame,
    *,
    source: str,
    input_format: str,
    sha256: str | None = None,
    k_values: list[int] | None = None,
    n_boot: int | None = None,
    seed: int | None = None,
    judge: str | None = None,
    model: str | None = None,
    population: str | None = None,
    fit: Fit | None = None,
    ci_prob: float = CI_PROB,
) -> str:
    """List what a report was computed from and with: data, estimators, model, sampler, versions.

    Parameters
    ----------
    counts : pandas.DataFrame
        Columns ``agent, task_id, n, c, n_missing``.
    source, input_format : str
        Input file name and the format it was read as.
    sha256 : str, optional
        Hex digest of the input file.
    k_values : list of int, optional
        The k of the per-agent tables.
    n_boot, seed : int, optional
        Bootstrap resamples and seed.
    judge : str, optional
        Answer judge, when trials were scored.
    model, population : str, optional
        Bayesian model and population (``None``: no Bayesian section).
    fit : Fit, optional
        The fit (sampler, chains, draws, tune, target_accept, seed, and whether its convergence checks passed);
        before the fit, the sampler row says it is pending.
    ci_prob : float
        Probability of the task-cluster bootstrap intervals.

    Returns
    -------
    str
        Markdown bullet list (data, size, scoring, estimators, Bayesian model, sampler, versions); every value from
        the data or the caller is escaped (:func:`agentstats._util.markup.md_text`).
    """
    import platform

    observed = counts[counts["n"] > 0]
    rows: list[tuple[str, str]] = [
        ("data", f"{source} (format {input_format})" + (f", sha256 {sha256[:16]}…" if sha256 else "")),
        (
            "size",
            f"{plural(counts['agent'].nunique(), 'agent')}, {plural(observed['task_id'].nunique(), 'task')}, "
            f"{plural(int(counts['n'].sum()), 'recorded trial')}, {int(counts['n_missing'].sum())} missing "
            "(excluded)",
        ),
    ]
    if judge:
        rows.append(("scoring", f"judge {judge}"))
    est = "unbiased pass@k and pass^k"
    if k_values:
        est += f" for k = {', '.join(str(k) for k in k_values)}"
    if n_boot:
        est += f"; {ci_percent(ci_prob)} task-cluster bootstrap intervals ({n_boot} resamples"
        est += f", seed {seed})" if seed is not None else ")"
    rows.append(("estimators", est))
    if model is None:
        rows.append(("Bayesian model", "not run"))
    else:
        rows.append(("Bayesian model", f"{model}; pass^k for {'new' if population == 'new' else 'these'} tasks"))
        if fit is not None:
            s = fit.sampler
            if s.method == "nuts":
                sampler = (
                    f"{s.sampler}, {s.chains} chains × {s.draws} draws ({s.tune} tuning), target_accept "
                    f"{s.target_accept}, seed {s.random_seed}"
                )
                sampler += "; convergence checks passed" if fit.diagnostics().ok else "; convergence checks FAILED"
            else:  # the Laplace tier or exact draws: no chain, its own checks
                sampler = f"method {s.method}: {s.describe()}, seed {s.random_seed}"
                sampler += "; its checks passed" if fit.diagnostics().ok else "; its checks FAILED"
        else:
            sampler = "pending (the fit runs in the Bayesian section)"
        rows.append(("sampler", sampler))
    versions = [f"agentstats {dist_version('agentstats') or 'unknown'}", f"Python {platform.python_version()}"]
    for pkg in ("numpy", "pandas", "pymc", "arviz", "nutpie"):
        v = dist_version(pkg)
        if v and (pkg in ("numpy", "pandas") or model is not None):
            versions.append(f"{pkg} {v}")
    rows.append(("versions", ", ".join(versions)))
    return "\n".join(f"- **{item}**: {md_text(value)}" for item, value in rows)


#: Parameters that apply only with the Bayesian section (left out of the command with ``--no-bayes``).
_BAYES_ONLY = ("bayes_model", "population", "draws", "tune", "method", "chains", "sampler", "cores",
               "target_accept", "k_max_bayes")
#: Parameters never written: where the report was made (the judge's URL), how it was run (kernel, HTML code).
_NOT_WRITTEN = ("input_path", "loader_options", "k_values", "judge_base_url", "kernel", "show_code")
#: ``--columns`` keys of the run-table column options.


def k_spec(ks: Sequence[int]) -> str:
    """Write k values as ``--k`` reads them: ``"1..5"``, ``"1,2,4"``, ``"1..3,8"`` (runs of three or more as ranges).

    Parameters
    ----------
    ks : sequence of int
        Positive k values, in any order.

    Returns
    -------
    str
        The shortest ``--k`` text for them, runs of consecutive values written ``lo..hi``.
    """
    values = sorted(set(int(k) for k in ks))
    parts: list[str] = []
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[j] + 1:
            j += 1
        if j - i >= 2:
            parts.append(f"{values[i]}..{values[j]}")
        else:
            parts.extend(str(k) for k in values[i : j + 1])
        i = j + 1
    return ",".join(parts)


def _loader_words(loader: Mapping[str, Any]) -> list[str]:
    """Write the loader options as ``agentstats report`` takes them (``--agent``, ``--columns``, ``--agents``, ...)."""
    words: list[str] = []
    if loader.get("agent") is not None:
        words += ["--agent", shlex.quote(str(loader["agent"]))]
    columns = [f"{key}={loader[name]}" for key, name in COLUMN_KEYS.items() if loader.get(name) is not None]
    if columns:
        words += ["--columns", shlex.quote(",".join(columns))]
    for key in ("agents", "run"):
        value = loader.get(key)
        if value is not None:
            text = value if isinstance(value, str) else ",".join(map(str, value))
            words += [f"--{key}", shlex.quote(text)]
    if loader.get("on_error") == "skip":
        words.append("--skip-bad")
    return words


def file_word(path: str | Path, cwd: str | Path | None = None) -> tuple[str, bool]:
    """Write a file as a regenerate command names it: relative to ``cwd`` when it lies below it, else its base name.

    ``cwd`` (default the current directory, which is where ``agentstats report`` or papermill was called) is where
    the command is meant to run: a file below it is named by its path from there, so the command works as written;
    any other file is named by its base name only (a shared report does not show folders outside the one it was made
    in), and the second value is False: the command then runs in the folder that holds the file.

    Returns
    -------
    tuple of (str, bool)
        The path as written (not yet quoted for a shell), and whether it works from ``cwd``.
    """
    base = Path(os.path.abspath(cwd if cwd is not None else os.getcwd()))
    target = Path(os.path.abspath(os.path.expanduser(str(path))))
    try:
        return target.relative_to(base).as_posix(), True
    except ValueError:
        return target.name, False


def report_command(params: ReportParams | Mapping[str, Any], k_values: Sequence[int] | None = None,
                   *, cwd: str | Path | None = None) -> str:
    """Write the ``agentstats report`` command that regenerates a report run with ``params``.

    Options are written only where they differ from :class:`~agentstats.report.params.ReportParams`' defaults: a
    flag for the options that have one, ``-p NAME=VALUE`` for the others; the Bayesian ones only with the Bayesian
    section. Files are named as :func:`file_word` names them (from ``cwd``, where the report was made, when they lie
    below it, else by their base name; never the judge's ``--base-url``); an input that is not a file path is
    ``INPUT``.

    Parameters
    ----------
    params : ReportParams or mapping
        The report's parameters (a mapping is validated; ``input_path`` must be given, None for a placeholder).
    k_values : sequence of int, optional
        The k values the report used (default ``params.k_values``; none: ``--k`` is left out, so the command picks
        them from the data as the report did).
    cwd : str or pathlib.Path, optional
        Where the command is to run (default the current directory: where the report was made).

    Returns
    -------
    str
        One shell command line, values quoted for a POSIX shell where needed.

    Raises
    ------
    ReportParameterError
        A mapping the model refuses.
    """
    p = params if isinstance(params, ReportParams) else ReportParams.validated(params)
    placeholder = not isinstance(params, ReportParams) and params.get("input_path") is None
    path = None if placeholder else p.input_path
    words = ["agentstats", "report", shlex.quote(file_word(path, cwd)[0]) if isinstance(path, str) else "INPUT"]

    def differs(name: str) -> bool:
        return bool(getattr(p, name) != ReportParams.default(name))

    if differs("input_format"):
        words += ["--format", shlex.quote(p.input_format)]
    ks = k_values if k_values is not None else p.k_values
    if ks:
        words += ["--k", k_spec(list(ks))]
    words += _loader_words(p.loader_options)
    if differs("ci_prob"):
        words += ["--ci-prob", value_text(p.ci_prob)]
    if differs("run_bayes"):
        words.append("--bayes" if p.run_bayes else "--no-bayes")
    written = [n for n in ReportParams.model_fields
               if n not in _NOT_WRITTEN and n not in ("input_format", "ci_prob", "run_bayes") and differs(n)
               and (p.run_bayes or n not in _BAYES_ONLY)]
    assignments = []
    for name in written:  # the flags first, then -p NAME=VALUE, each in the model's order
        value = getattr(p, name)
        if name == "judge_calibration":
            value = file_word(str(value), cwd)[0]
        flag = ReportParams.flag_of(name)
        if flag is not None:
            words += [flag, shlex.quote(value_text(value))]
        else:
            assignments += ["-p", shlex.quote(f"{name}={value_text(value)}")]
    return " ".join(words + assignments)

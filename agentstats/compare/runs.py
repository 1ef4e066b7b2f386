"""Compare runs of an agent (experiments): paired pass@k / pass^k contrasts and every per-trial metric.

A *run* is one agent's attempts at a set of tasks: a trials file in any format :func:`agentstats.io.load_trials`
reads (the project's JSONL, tau-bench, tau2-bench, Inspect AI logs, OpenTelemetry traces, run tables ...), a
counts table, a list of :class:`~agentstats.records.trial.Trial`, a DataFrame, or, with ``store=``, the name of a run in
a run store (:mod:`agentstats.store`). :func:`resolve_run` turns one reference into a :class:`Run`; it is the one
place that knows what a run reference can be.

:func:`compare_runs` compares every run with the first one (the baseline) on the tasks *all* runs attempted, and
says how many tasks each run had outside that intersection (left out, never silently averaged in):

* pass@k and pass^k: the paired difference ``run - baseline`` with its paired task-cluster bootstrap interval
  (MOVER at the boundary) and, for k = 1 with one trial per task, the exact McNemar test
  (:func:`agentstats.estimators.paired_pass_k`, whose docstring gives the sources);
* with ``bayes=True``, the Bayesian contrast: one hierarchical model fitted to all runs on the shared tasks
  (:func:`agentstats.models.fit`), posterior draws of suite pass@k / pass^k
  (:func:`agentstats.posterior.posterior_pass_k`) and, per draw, ``run - baseline``: its posterior mean, equal-
  tailed credible interval and P(run > baseline);
* every per-trial metric both runs recorded (``reward``, ``usage.latency_s``, ``usage.cost_usd``,
  ``usage.input_tokens``, ``usage.output_tokens``, and each numeric ``meta["metrics"]`` entry, such as tau2's
  reward components): per task the mean over the trials that have it (missing trials left out), then the paired
  mean difference over the shared tasks with a percentile bootstrap interval that resamples tasks (Efron &
  Tibshirani 1993, "An Introduction to the Bootstrap", ch. 13).
"""

from __future__ import annotations

import functools
import json
import math
import os
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from agentstats._util.markup import md_text
from agentstats._util.options import option_name, option_text
from agentstats.estimators.paired import paired_pass_k
from agentstats.intervals import CI_PROB, DEFAULT_SEED, default_ks
from agentstats.io.loaders import load_counts, load_trials
from agentstats.io.readers.tau_bench import agent_from_filename
from agentstats.metrics.base import Metric, RecordValues
from agentstats.metrics.registry import get_metric
from agentstats.records.counts import to_counts, validate_counts
from agentstats.records.problems import Problem
from agentstats.records.trial import Trial

__all__ = ["METRIC_COLUMNS", "TRIAL_METRICS", "Run", "RunComparison", "compare_runs", "resolve_run", "trial_metrics"]

#: Columns of :attr:`RunComparison.metrics`.
METRIC_COLUMNS = (
    "run", "baseline", "metric", "n_tasks", "mean_run", "mean_baseline", "diff", "diff_ci_low", "diff_ci_high",
    "ci_prob", "n_boot", "diff_ci_method",
)  # fmt: skip
#: ``diff_ci_method`` of a metric whose paired differences are all equal: the bootstrap interval has no width.
METHOD_NO_SPREAD = "percentile bootstrap; no spread (every paired difference is the same)"


@dataclass
class Run:
    """One run, resolved: its name, counts per task (agent column = the run's name) and, when known, its trials.

    Attributes
    ----------
    name : str
    counts : pandas.DataFrame
        Columns ``agent, task_id, n, c, n_missing``; ``agent`` is ``name`` on every row.
    trials : list of Trial or None
        ``None`` when the run came as a counts table (no per-trial metrics then).
    source : str
        Where it came from (a path, ``"<DataFrame>"``, ``"<trials>"``).
    skipped : list of Problem
        Records the loader left out (``on_error="skip"``), each with its line and reason.
    """

    name: str
    counts: pd.DataFrame
    trials: list[Trial] | None = None
    source: str = ""
    skipped: list[Problem] = field(default_factory=list)

    @property
    def tasks(self) -> set[str]:
        """Tasks with at least one scored trial."""
        return set(self.counts.loc[self.counts["n"] > 0, "task_id"].astype(str))


def _single_agent(agents: Iterable[str], source: str) -> str | None:
    names = sorted(set(agents))
    if len(names) > 1:
        shown = ", ".join(names[:5]) + (" ..." if len(names) > 5 else "")
        raise ValueError(
            f"{source} holds {len(names)} agents ({shown}); a run is one agent: pick one per run with "
            + option_text(
                cli=f"--run-agents A,B, e.g. agentstats compare FILE FILE --run-agents {','.join(names[:2])}",
                python=f"run_options=[{{'agents': 'A'}}, {{'agents': 'B'}}], e.g. "
                f"compare_runs(path, path, run_options=[{{'agents': {names[0]!r}}}, {{'agents': {names[1]!r}}}])",
            )
        )
    return names[0] if names else None


def _store_run(store: str | os.PathLike, run: str, options: dict[str, Any]) -> tuple[list[Trial], str]:
    """Read the run named ``run`` from the run store ``store``: its trials and a source label."""
    fmt = options.pop("format", "auto")
    if fmt not in ("auto", "duckdb"):
        raise ValueError(
            f"run {run!r} comes from the run store {store}; {option_name('format', fmt)} does not apply to it"
        )
    allowed = {"agents", "on_error"}
    unknown = sorted(set(options) - allowed)
    if unknown:  # named as the caller knows them: on_error is --skip-bad, agent_col --columns agent=COL
        raise ValueError(f"{', '.join(map(option_name, unknown))} {'does' if len(unknown) == 1 else 'do'} not apply "
                         f"to a run of the run store {store} (only {' and '.join(map(option_name, sorted(allowed)))})")
    if not os.path.isfile(store):
        raise FileNotFoundError(f"no run store at {store}")
    trials = list(load_trials(store, "duckdb", run=run, agents=options.get("agents")))
    _add_captured_metrics(store, run, trials)
    return trials, f"{store}:{run}"


def _add_captured_metrics(store: str | os.PathLike, run: str, trials: list[Trial]) -> None:
    """Give each trial its stored metric results as ``meta["metrics"]`` entries, so compare pairs them per task.

    Per trial: a node metric's mean over the node's invocations as ``"<metric>@<node>"``; an application metric's
    conversation value (else the mean over its messages) as ``"<metric>"``, unless the trial's record already has
    an entry of that name (a loop run's). Run-level values (``log_metric`` without a task) are left out.
    """
    from agentstats.store import RunStore

    with RunStore.reader(store) as st:
        rows = st.con.execute(
            """SELECT agent, task_id, trial, metric, node, level, avg(value) AS value
               FROM metric_results WHERE run_id = ? AND value IS NOT NULL AND isfinite(value)
                 AND level IN ('node', 'message', 'conversation') AND task_id IS NOT NULL
               GROUP BY ALL""", [st.run_id(run)]).fetchall()
    if not rows:
        return
    per: dict[tuple[str, str, int], dict[str, float]] = {}
    conversation: set[tuple[str, str, int, str]] = set()
    for agent, task, k, metric, node, level, value in rows:
        key = (agent, task, int(k if k is not None else 0))
        name = f"{metric}@{node}" if level == "node" else metric
        if level == "message" and (*key, name) in conversation:
            continue
        if level == "conversation":
            conversation.add((*key, name))
        per.setdefault(key, {})[name] = float(value)
    for t in trials:
        got = per.get(t.key)
        extra = t.meta.get("metrics")
        if not got or (extra is not None and not isinstance(extra, dict)):
            continue
        t.meta["metrics"] = {**got, **(extra or {})}


def resolve_run(ref: Any, *, name: str | None = None, store: str | os.PathLike | None = None,
                **load_options: Any) -> Run:
    """Turn a run reference into a :class:`Run`.

    Parameters
    ----------
    ref : str, PathLike, pandas.DataFrame, Run, or iterable of Trial
        A file any loader reads (trials are loaded with :func:`agentstats.io.load_trials`, counts tables with
        :func:`agentstats.io.load_counts`), a counts or run-table DataFrame, trials, or a ``Run`` (returned
        renamed when ``name`` is given). With ``store``, a ``str`` is the name of a run in that store.
    name : str, optional
        The run's name; default its agent's name (a store run: the run's name).
    store : str or PathLike, optional
        A run store file (:class:`agentstats.store.RunStore`): string references name its runs
        (``resolve_run("prompt-v2", store="agentstats.duckdb")``); a ``pathlib.Path`` is still a file.
    **load_options
        Passed to the loader (``format``, ``agents``, ``on_error``, ``agent`` ...); for a store run only
        ``agents`` (and ``on_error``, which has nothing to skip there) apply.

    Returns
    -------
    Run

    Raises
    ------
    ValueError
        When the reference holds several agents (select one with ``agents=``), no scored trial, or trials
        without an outcome (score them first); the loaders' :class:`~agentstats.io.LoadError` for bad input;
        a store run that does not exist (:class:`agentstats.store.StoreError`, which lists the store's runs).
    FileNotFoundError
        When ``store`` is not a file.
    """
    if isinstance(ref, Run):
        return Run(name or ref.name, ref.counts.assign(agent=name or ref.name), ref.trials, ref.source, ref.skipped)
    trials: list[Trial] | None = None
    skipped: list[Problem] = []
    if store is not None and isinstance(ref, str):
        trials, source = _store_run(store, ref, dict(load_options))
        counts = to_counts(trials)
        agent = _single_agent(counts["agent"].astype(str), source)
        if agent is None:
            raise ValueError(f"{source}: no scored trial to compare")
        return Run(name=name or ref, counts=counts.assign(agent=name or ref), trials=trials, source=source)
    if isinstance(ref, (str, os.PathLike)):
        source = str(ref)
        fmt = load_options.pop("format", "auto")
        try:
            loaded = load_trials(ref, fmt, **load_options)
        except ValueError as exc:
            if "counts table" not in str(exc):
                raise
            counts = load_counts(ref, fmt, **load_options)
            skipped = list(counts.attrs.get("skipped") or [])
        else:
            trials, skipped = list(loaded), list(loaded.skipped)
            counts = to_counts(trials)
        default = agent_from_filename(ref)
    elif isinstance(ref, pd.DataFrame):
        source = "<DataFrame>"
        if {"n", "c"} <= set(ref.columns):
            counts = validate_counts(ref.rename(columns={"task": "task_id"}) if "task_id" not in ref else ref)
        else:
            loaded = load_trials(ref, **load_options)
            trials, skipped = list(loaded), list(loaded.skipped)
            counts = to_counts(trials)
        default = "run"
    else:
        source = "<trials>"
        trials = [t if isinstance(t, Trial) else Trial.model_validate(t) for t in ref]
        counts = to_counts(trials)
        default = "run"
    agent = _single_agent(counts["agent"].astype(str), source)
    if agent is None:
        raise ValueError(f"{source}: no scored trial to compare")
    out = counts.assign(agent=name or agent)
    return Run(name=name or agent, counts=out, trials=trials, source=source or default, skipped=skipped)


#: Per-trial metric columns of a comparison and the catalogue entries they read (``agentstats.metrics``): the
#: trial's reward and the usage it recorded itself (``cost`` as recorded, never priced).
TRIAL_METRICS: tuple[tuple[str, str, str | None], ...] = (
    ("reward", "reward", None), ("latency_s", "latency", None), ("cost_usd", "cost", "recorded"),
    ("input_tokens", "input_tokens", None), ("output_tokens", "output_tokens", None),
)


@functools.lru_cache(maxsize=1)
def _trial_entries() -> tuple[tuple[str, Metric, dict[str, str]], ...]:
    out = []
    for column, name, method in TRIAL_METRICS:
        m = get_metric(name, method=method) if method else get_metric(name)
        out.append((column, m, m.field_names("trial")))
    return tuple(out)


@functools.lru_cache(maxsize=1024)
def _recorded(key: Any) -> tuple[Metric, dict[str, str]]:
    m = get_metric("recorded_metric", params={"key": key})
    return m, m.field_names("trial")


def _value(m: Metric, record: dict[str, Any], names: Mapping[str, str]) -> float | None:
    """Return the metric's value on the record: None when it does not apply, or cannot read it (a negative usage)."""
    try:
        return m.score(RecordValues(record, names)).value
    except (ValueError, TypeError):
        return None


def trial_metrics(t: Trial) -> dict[str, float]:
    """Numeric per-trial metrics of one trial: ``reward``, recorded usage and ``meta["metrics"]`` entries.

    Each comes from its catalogue entry (:data:`TRIAL_METRICS`; ``recorded_metric`` per ``meta["metrics"]`` key),
    read off the trial's own record: its ``reward``, its ``usage`` (not the per-interaction sum the catalogue's trial
    view falls back to) and its ``meta``. A ``meta["metrics"]`` entry named like a column replaces it.

    Returns
    -------
    dict of str to float
        Only the metrics the trial has (finite numbers; a usage value the catalogue refuses, such as a negative
        latency, is left out).
    """
    record = {"reward": t.reward, "usage": t.usage, "meta": t.meta}
    out: dict[str, float] = {}
    for column, m, names in _trial_entries():
        v = _value(m, record, names)
        if v is not None:
            out[column] = v
    extra = t.meta.get("metrics")
    if isinstance(extra, dict):
        for key in extra:
            m, names = _recorded(key)
            v = _value(m, record, names)
            if v is not None:
                out[str(key)] = v
    return {k: v for k, v in out.items() if math.isfinite(v)}


def _task_metric_means(trials: list[Trial]) -> pd.DataFrame:
    rows = [
        {"task_id": t.task_id, "metric": m, "value": v}
        for t in trials if t.outcome() != "missing"
        for m, v in trial_metrics(t).items()
    ]
    if not rows:
        return pd.DataFrame(columns=["task_id", "metric", "value"])
    return pd.DataFrame(rows).groupby(["metric", "task_id"], sort=True)["value"].mean().reset_index()


def _metric_rows(run: Run, base: Run, shared: list[str], n_boot: int, ci_prob: float, seed: int) -> list[dict]:
    if run.trials is None or base.trials is None:
        return []
    a, b = _task_metric_means(run.trials), _task_metric_means(base.trials)
    rows = []
    for metric in sorted(set(a["metric"]) & set(b["metric"])):
        va = a[a["metric"] == metric].set_index("task_id")["value"]
        vb = b[b["metric"] == metric].set_index("task_id")["value"]
        tasks = [t for t in shared if t in va.index and t in vb.index]
        if not tasks:
            continue
        x, y = va.loc[tasks].to_numpy(float), vb.loc[tasks].to_numpy(float)
        d = x - y
        low = high = float("nan")
        method = None  # no interval from a single task or without resamples
        if len(d) >= 2 and n_boot > 0:
            method = "percentile bootstrap" if np.ptp(d) > 0 else METHOD_NO_SPREAD
            rng = np.random.default_rng([seed, zlib.crc32(run.name.encode()), zlib.crc32(base.name.encode()),
                                         zlib.crc32(metric.encode())])
            idx = rng.integers(0, len(d), size=(n_boot, len(d)))
            boot = d[idx].mean(axis=1)
            alpha = (1 - ci_prob) / 2
            low, high = (float(q) for q in np.quantile(boot, [alpha, 1 - alpha]))
        rows.append({"run": run.name, "baseline": base.name, "metric": metric, "n_tasks": len(tasks),
                     "mean_run": float(x.mean()), "mean_baseline": float(y.mean()), "diff": float(d.mean()),
                     "diff_ci_low": low, "diff_ci_high": high, "ci_prob": ci_prob, "n_boot": n_boot,
                     "diff_ci_method": method})
    return rows


@dataclass
class RunComparison:
    """What :func:`compare_runs` found.

    Attributes
    ----------
    baseline : str
        The first run's name; every difference is ``run - baseline``.
    runs : list of str
        All run names, baseline first.
    sources : dict
        Run name -> where it came from.
    n_tasks : dict
        Run name -> tasks it attempted (scored trials).
    shared_tasks : list of str
        The tasks every run attempted: all comparisons use these only.
    left_out : dict
        Run name -> its tasks outside ``shared_tasks`` (sorted).
    pass_k : pandas.DataFrame
        Rows of :func:`agentstats.estimators.paired_pass_k` (``agent_a`` = run, ``agent_b`` = baseline) for every
        non-baseline run and each k.
    metrics : pandas.DataFrame
        Columns :data:`METRIC_COLUMNS`: one row per (run, metric) both runs have on some shared task.
    bayes : pandas.DataFrame or None
        With ``bayes=True``: ``run, baseline, quantity, k, diff_mean, diff_low, diff_high, prob_greater, ci_prob``
        (quantity ``pass_at_k`` or ``pass_hat_k``); ``diagnostics`` holds the fit's convergence summary.
    counts : pandas.DataFrame
        Counts of all runs on the shared tasks (agent = run name): the input of every number above.
    skipped : dict
        Run name -> the records its loader left out (``on_error="skip"``; :class:`agentstats.io.Problem`), for
        the runs that had any.
    """

    baseline: str
    runs: list[str]
    sources: dict[str, str]
    n_tasks: dict[str, int]
    shared_tasks: list[str]
    left_out: dict[str, list[str]]
    pass_k: pd.DataFrame
    metrics: pd.DataFrame
    counts: pd.DataFrame
    bayes: pd.DataFrame | None = None
    diagnostics: dict[str, Any] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    skipped: dict[str, list[Problem]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form (NaN as ``null``)."""

        def records(df: pd.DataFrame | None) -> list[dict[str, Any]] | None:
            if df is None:
                return None
            return json.loads(df.to_json(orient="records", double_precision=15))

        return {
            "baseline": self.baseline,
            "runs": self.runs,
            "sources": self.sources,
            "n_tasks": self.n_tasks,
            "n_shared_tasks": len(self.shared_tasks),
            "shared_tasks": self.shared_tasks,
            "n_left_out": {k: len(v) for k, v in self.left_out.items()},
            "left_out": self.left_out,
            "pass_k": records(self.pass_k),
            "metrics": records(self.metrics),
            "bayes": records(self.bayes),
            "diagnostics": self.diagnostics,
            "settings": self.settings,
        }

    def to_json(self, path: str | os.PathLike | None = None) -> str:
        """JSON text of :meth:`to_dict`; also written atomically to ``path`` when given."""
        text = json.dumps(self.to_dict(), indent=2, allow_nan=False)
        if path is not None:
            from agentstats.files.atomic import atomic_write_text

            atomic_write_text(Path(path), text + "\n")
        return text

    def summary_markdown(self) -> str:
        """One Markdown paragraph: the runs, the shared tasks and what each run had outside them.

        Every run name comes from the data and is escaped (:func:`agentstats._util.markup.md_text`).
        """
        others = [r for r in self.runs if r != self.baseline]
        head = (f"Compared {', '.join(f'**{md_text(r)}**' for r in others)} with the baseline "
                f"**{md_text(self.baseline)}** on the **{len(self.shared_tasks)}** tasks every run attempted.")
        left = [f"{md_text(r)}: {len(v)} of {self.n_tasks[r]}" for r, v in self.left_out.items()]
        return head + " Tasks left out (attempted by this run but not by every run): " + "; ".join(left) + "."


def _unique_names(runs: list[Run], refs: Sequence[Any]) -> list[str]:
    names = [r.name for r in runs]
    if len(set(names)) == len(names):
        return names
    out = []
    for r, ref in zip(runs, refs, strict=True):
        stem = agent_from_filename(ref) if isinstance(ref, (str, os.PathLike)) else r.name
        out.append(stem if names.count(r.name) > 1 else r.name)
    seen: dict[str, int] = {}
    final = []
    for n in out:
        seen[n] = seen.get(n, 0) + 1
        final.append(n if seen[n] == 1 else f"{n}#{seen[n]}")
    return final


def compare_runs(
    *runs: Any,
    names: Sequence[str] | None = None,
    k: int | Iterable[int] | None = None,
    n_boot: int = 2000,
    ci_prob: float = CI_PROB,
    random_seed: int = DEFAULT_SEED,
    bayes: bool = False,
    fit_options: dict[str, Any] | None = None,
    run_options: Sequence[dict[str, Any] | None] | None = None,
    store: str | os.PathLike | None = None,
    **load_options: Any,
) -> RunComparison:
    """Compare runs with the first one (the baseline) on the tasks they all attempted.

    Parameters
    ----------
    *runs : run references
        Two or more: paths, DataFrames, trial lists or :class:`Run` (see :func:`resolve_run`); with ``store``, run
        names in that store (``compare_runs("v1", "v2", store="agentstats.duckdb")``). The first is the baseline.
    names : sequence of str, optional
        Run names (default: each run's agent, the file stem where two runs have the same agent; a store run's name).
    k : int or iterable of int, optional
        k values of pass@k / pass^k; default :func:`agentstats.intervals.default_ks` of the counts on the shared
        tasks (the one default of every command).
    n_boot : int
        Bootstrap resamples of the paired intervals (pass@k / pass^k and metrics).
    ci_prob : float
        Probability of every interval.
    random_seed : int
        Seed of the bootstraps (and of the fit with ``bayes=True``).
    bayes : bool
        Also fit the hierarchical model and report the posterior contrast (slow: a PyMC fit).
    fit_options : dict, optional
        Passed to :func:`agentstats.models.fit` (``draws``, ``tune``, ``chains``, ``model`` ...). Convergence is
        checked by :func:`agentstats.models.diagnose` and reported in ``diagnostics`` (no warning).
    run_options : sequence of dict, optional
        Loader options for each run, in order, on top of ``load_options`` (e.g. two agents of one file:
        ``run_options=[{"agents": "baseline"}, {"agents": "candidate"}]``).
    store : str or PathLike, optional
        A run store file: every ``str`` in ``runs`` is the name of one of its runs (a ``pathlib.Path`` is still
        read as a file).
    **load_options
        Passed to :func:`resolve_run` for every run (``format``, ``agents``, ``on_error`` ...).

    Returns
    -------
    RunComparison

    Raises
    ------
    ValueError
        Fewer than two runs, names that do not match the runs, no task shared by all runs, or a bad run
        (:func:`resolve_run`; an unknown store run is a :class:`agentstats.store.StoreError`, a ``ValueError``).
    FileNotFoundError
        A missing file or run store.
    """
    if len(runs) < 2:
        raise ValueError(f"compare_runs needs at least two runs, got {len(runs)}")
    if names is not None and len(names) != len(runs):
        raise ValueError(f"names has {len(names)} entries for {len(runs)} runs")
    if run_options is not None and len(run_options) != len(runs):
        raise ValueError(f"run_options has {len(run_options)} entries for {len(runs)} runs")
    per_run = [{**load_options, **(o or {})} for o in (run_options or [None] * len(runs))]
    resolved = [resolve_run(r, store=store, **o) for r, o in zip(runs, per_run, strict=True)]
    final = list(names) if names is not None else _unique_names(resolved, runs)
    if len(set(final)) != len(final):
        raise ValueError(f"run names must differ, got {final}")
    resolved = [resolve_run(r, name=n) for r, n in zip(resolved, final, strict=True)]
    task_sets = [r.tasks for r in resolved]
    shared = sorted(set.intersection(*task_sets))
    left_out = {r.name: sorted(ts - set(shared)) for r, ts in zip(resolved, task_sets, strict=True)}
    if not shared:
        sizes = ", ".join(f"{r.name}: {len(ts)}" for r, ts in zip(resolved, task_sets, strict=True))
        raise ValueError(f"the runs share no task (tasks per run: {sizes}); nothing can be compared")
    counts = pd.concat([r.counts[r.counts["task_id"].astype(str).isin(shared)] for r in resolved],
                       ignore_index=True)
    k = default_ks(counts) if k is None else [k] if isinstance(k, int) else [int(x) for x in k]
    n_max = {name: int(counts.loc[counts["agent"] == name, "n"].max()) for name in final}
    if k and max(k) > min(n_max.values()):
        fewest = min(n_max, key=n_max.__getitem__)
        raise ValueError(
            f"k = {max(k)}: run {fewest!r} has at most {n_max[fewest]} trials per shared task, and the unbiased "
            f"estimators need k <= n; use k <= {min(n_max.values())} (or `agentstats fit` to extrapolate one run)")
    base = resolved[0]
    pass_rows = [paired_pass_k(counts, r.name, base.name, k, n_boot=n_boot, ci_prob=ci_prob,
                               random_seed=random_seed) for r in resolved[1:]]
    pass_k = pd.concat(pass_rows, ignore_index=True)
    metric_rows = [row for r in resolved[1:] for row in _metric_rows(r, base, shared, n_boot, ci_prob, random_seed)]
    metrics = pd.DataFrame(metric_rows, columns=list(METRIC_COLUMNS))
    out = RunComparison(
        baseline=base.name, runs=final, sources={r.name: r.source for r in resolved},
        n_tasks={r.name: len(ts) for r, ts in zip(resolved, task_sets, strict=True)}, shared_tasks=shared,
        left_out=left_out, pass_k=pass_k, metrics=metrics, counts=counts,
        settings={"k": sorted({int(x) for x in pass_k["k"]}), "n_boot": n_boot, "ci_prob": ci_prob,
                  "random_seed": random_seed, "bayes": bayes},
        skipped={r.name: r.skipped for r in resolved if r.skipped},
    )
    if bayes:
        out.bayes, out.diagnostics = _bayes_contrast(counts, base.name, final[1:], out.settings["k"], ci_prob,
                                                     random_seed, fit_options or {})
    return out


def _bayes_contrast(
    counts: pd.DataFrame, baseline: str, others: list[str], ks: list[int], ci_prob: float, seed: int,
    fit_options: dict[str, Any],
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Posterior contrast ``run - baseline`` of suite pass@k / pass^k from one joint fit."""
    from agentstats.models import fit
    from agentstats.posterior import posterior_pass_k

    # convergence is reported in the comparison (``diagnostics``), not warned about
    result = fit(counts, random_seed=seed, **{"check_convergence": False, **fit_options})
    draws = posterior_pass_k(result, ks)
    alpha = (1 - ci_prob) / 2
    rows = []
    for quantity in ("pass_at_k", "pass_hat_k"):
        da = draws[quantity]
        for other in others:
            for kk in ks:
                d = (da.sel(agent=other, k=kk) - da.sel(agent=baseline, k=kk)).to_numpy().ravel()
                low, high = np.quantile(d, [alpha, 1 - alpha])
                rows.append({"run": other, "baseline": baseline, "quantity": quantity, "k": int(kk),
                             "diff_mean": float(d.mean()), "diff_low": float(low), "diff_high": float(high),
                             "prob_greater": float(np.mean(d > 0)), "ci_prob": ci_prob})
    diag = result.diagnostics()
    table = diag.table
    summary: dict[str, Any] = {"ok": bool(diag.ok), "divergences": int(diag.divergences),
                               "problems": list(diag.problems)}
    if len(table):
        summary["max_r_hat"] = float(table["r_hat"].max())
        summary["min_ess_bulk"] = float(table["ess_bulk"].min())
    return pd.DataFrame(rows), summary

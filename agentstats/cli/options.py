"""The options of the command line, each declared once: types, choices, help texts and the checks of their values.

* :func:`input_options` gives a command the input options (``--format --agent --columns --agents --run
  --skip-bad``) as one :class:`InputOptions`, like inspect_ai's ``@common_options``; :func:`ci_options` gives it the
  interval options (``--ci-prob``, and ``--ci-kind`` where the library offers both shapes) as one
  :class:`CiOptions`. Both add their options to the command's signature, which typer reads.
* Choices are ``Literal`` types, which typer turns into ``click.Choice``: a value outside them is a usage error
  before the command runs, and the help lists them. Where the library's own list is cheap to import it is used
  (:data:`agentstats.intervals.CiKind`, the model names and dispersions of
  :mod:`agentstats.models.families.registry`); the others' owners import pandas or PyMC, which the command line does
  not load to start, so they are spelled here and ``tests/cli/test_cli_help.py`` holds each to its owner. ``--format``
  stays text: the format registry is open (plugins add formats) and is read when a file is loaded.
* :func:`executor_options` gives a command ``--executor local|process|ray``, ``--workers`` and ``--address`` as one
  :class:`ExecutorOptions` (:func:`agentstats.parallel.resolve_executor` reads them).
* One meaning per flag: ``--out FILE`` is a file and ``--out-dir DIR`` a folder (:func:`out_file_opt`,
  :func:`out_dir_opt`); ``--run`` names a run to read and ``--store-run`` the run a command writes
  (:func:`store_run_opt`).
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, get_args, overload

import typer

from agentstats._util.options import COLUMN_KEYS, option_style
from agentstats.cli.common import EXIT_USAGE, fail
from agentstats.intervals import (
    CI_KINDS,
    CI_PROB,
    DEFAULT_K_MAX,
    DEFAULT_K_TEXT,
    FIT_K_FACTOR,
    CiKind,
    check_ci,
    check_k_reach,
    default_ks,
)
from agentstats.intervals import parse_k as parse_k_spec
from agentstats.models.families.registry import MODEL_NAMES, Dispersion
from agentstats.parallel.executor import ExecutorName

__all__ = [
    "CI_DEFAULT",
    "EXECUTOR_DEFAULT",
    "CiOptions",
    "ExecutorOptions",
    "ImportStoreOpt",
    "InputOptions",
    "Judge",
    "Matcher",
    "Method",
    "MetricLevel",
    "ModelName",
    "Population",
    "Sampler",
    "check_k",
    "check_n_boot",
    "check_output_path",
    "ci_options",
    "command_ks",
    "executor_options",
    "input_options",
    "out_dir_opt",
    "out_file_opt",
    "parse_columns",
    "parse_k",
    "store_run_opt",
]

# ------------------------------------------------------------------------------------------------ choices
if TYPE_CHECKING:
    ModelName = str
else:  # the registry's names, the default first (agentstats.models.families.registry.MODEL_NAMES)
    ModelName = Literal[MODEL_NAMES]
#: Task population of pass^k (agentstats.posterior's ``Population``).
Population = Literal["observed", "new"]
#: NUTS implementations (agentstats.models.sampling.SAMPLERS).
Sampler = Literal["nutpie", "numpyro", "pymc"]
#: Inference methods of a fit (agentstats.models.laplace.METHODS, less ``exact``, which only no_pooling uses).
Method = Literal["nuts", "laplace"]
#: Answer judges (agentstats.scoring.resolve_judge).
Judge = Literal["deterministic", "openai"]
#: Deterministic answer matchers (agentstats.scoring.answers.MATCHERS).
Matcher = Literal["auto", "exact", "normalized", "numeric", "token_f1", "contains"]
#: Levels a metric is computed at (agentstats.metrics.LEVELS).
MetricLevel = Literal["node", "interaction", "trial"]

# ------------------------------------------------------------------------------------------------ one option each
FormatOpt = Annotated[
    str,
    typer.Option(
        "--format",
        "-f",
        help="Input format: auto (from the content), jsonl, json, tau_bench, runs (alias metr), counts, fair_forge, "
        "fai_jsonl, bfcl, tau2, inspect, otel, promptfoo, lm_eval, duckdb (a run store), parquet_dataset (a "
        "partitioned export's folder or glob); docs/data-format.md.",
    ),
]
AgentOpt = Annotated[str | None, typer.Option("--agent", help="Agent name for single-agent files (tau-bench).")]
ColumnsOpt = Annotated[
    str | None,
    typer.Option("--columns", metavar="agent=COL,...", help="Run tables: the columns of the agent, the task id and "
                 "0/1 success (any of them), e.g. 'agent=model,task=problem,success=ok'."),
]
AgentsOpt = Annotated[
    str | None,
    typer.Option("--agents", help="Agents to keep: names or shell patterns, comma-separated; '!' excludes one "
                 "('gpt-*,!gpt-3.5*'). An entry that matches no agent is an error."),
]
RunOpt = Annotated[
    str | None,
    typer.Option("--run", help="The run to read from a run store (.duckdb) or a Parquet dataset; default its only "
                 "run."),
]
ScoreScaleOpt = Annotated[
    str | None,
    typer.Option("--score-scale", metavar="LO:HI", help="Numeric scores on a scale other than [0, 1] (Inspect, "
                 "promptfoo, lm-evaluation-harness): its bounds, e.g. 1:5; needs --success-threshold."),
]
SuccessThresholdOpt = Annotated[
    float | None,
    typer.Option("--success-threshold", help="With --score-scale: a score >= this is a success (e.g. 4 on 1:5)."),
]
SkipBadOpt = Annotated[
    bool,
    typer.Option("--skip-bad", help="Skip malformed records (each listed with its line) instead of stopping; a file "
                 "changed since its manifest was written is refused anyway."),
]
#: The one default k of every command, said the same way in each command's --k help (agentstats.intervals.default_ks).
_DEFAULT_K_HELP = f"Default: {DEFAULT_K_TEXT}; tasks with fewer than k trials drop out at that k and are listed."
EstimateKOpt = Annotated[
    str | None,
    typer.Option("--k", help="k values: '1,2,4', '1..8' or '1..3,8', each at most the largest trials per task (the "
                 "unbiased estimators need k <= n). " + _DEFAULT_K_HELP),
]
FitKOpt = Annotated[
    str | None,
    typer.Option("--k", help="k values: '1,2,4', '1..8' or '1..3,8'; beyond an agent's trials the model extrapolates "
                 f"(the share of tasks with fewer trials is reported), up to {FIT_K_FACTOR} x the largest trials per "
                 f"task (or {DEFAULT_K_MAX}). "
                 + _DEFAULT_K_HELP),
]
ReportKOpt = Annotated[
    str | None,
    typer.Option("--k", help="k values of every table, the Bayesian ones included (its curves go on to k = "
                 f"{DEFAULT_K_MAX} at least, -p k_max_bayes): '1,2,4', '1..8' or '1..3,8'; k <= n, as in estimate. "
                 + _DEFAULT_K_HELP),
]
CiProbOpt = Annotated[float, typer.Option("--ci-prob", help="Probability of every interval, in (0, 1).")]
CiKindOpt = Annotated[
    CiKind, typer.Option("--ci-kind", help="Credible interval shape: eti (equal-tailed) or hdi (highest density).")
]
NBootOpt = Annotated[int, typer.Option("--n-boot", min=0, help="Task-cluster bootstrap resamples (0: none).")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON on stdout instead of tables.")]
StrictOpt = Annotated[
    bool, typer.Option("--strict", help="Exit with status 3 when the fit's diagnostics fail (R-hat, ESS, divergences).")
]
ReportStrictOpt = Annotated[
    bool, typer.Option("--strict", help="Exit with status 3 when the Bayesian fit fails its checks (R-hat, ESS, "
                       "divergences, or the posterior predictive check); the report is written either way.")
]
BayesModelOpt = Annotated[
    ModelName,
    typer.Option("--bayes-model", metavar="MODEL", help=f"Statistical model: {', '.join(MODEL_NAMES)} (the default "
                 "first; docs/models.md)."),
]
DispersionOpt = Annotated[
    Dispersion,
    typer.Option("--dispersion", help="Within-cell dispersion: each agent its own (pooled), or one shared."),
]
PopulationOpt = Annotated[
    Population, typer.Option("--population", help="observed: these tasks; new: new tasks from the same population.")
]
SamplerOpt = Annotated[Sampler | None, typer.Option("--sampler", help="NUTS implementation (default: the fastest "
                                                    "installed).")]
MethodOpt = Annotated[Method | None, typer.Option("--method", help="Inference: nuts (MCMC) or laplace (the faster "
                                                  "Laplace tier of the Beta-Binomial models, docs/models.md). "
                                                  "Default: laplace from 50,000 cells with a trial, unless a NUTS "
                                                  "option (--sampler, --tune, --target-accept) is given; else nuts.")]
JudgeOpt = Annotated[
    Judge,
    typer.Option("--judge", help="Answer judge: text/number matchers (no network) or an LLM through any "
                 "OpenAI-compatible endpoint (API key from $OPENAI_API_KEY)."),
]
BaseUrlOpt = Annotated[
    str | None,
    typer.Option("--base-url", help="OpenAI-compatible base URL for --judge openai (default: $OPENAI_BASE_URL or "
                 "OpenAI)."),
]
JudgeModelOpt = Annotated[
    str | None,
    typer.Option("--judge-model", help="The judge's LLM for --judge openai (default: $AGENTSTATS_JUDGE_MODEL or "
                 "gpt-4o-mini)."),
]
ThresholdOpt = Annotated[
    float, typer.Option("--threshold", min=0.0, max=1.0, help="An answer is correct when its score >= threshold.")
]
ToolThresholdOpt = Annotated[
    float,
    typer.Option("--tool-threshold", min=0.0, max=1.0, help="Tool calls pass when their overall score >= this (1.0: "
                 "the expected tools, no extra calls, every argument matched)."),
]
MatcherOpt = Annotated[
    Matcher,
    typer.Option("--matcher", metavar="MATCHER", help=f"Deterministic matcher: {', '.join(get_args(Matcher))}; auto: "
                 "numeric for numeric references, else normalized exact match, else a short reference contained in "
                 "the answer (lenient)."),
]
PreferBenchmarkOpt = Annotated[
    bool,
    typer.Option("--prefer-benchmark/--no-prefer-benchmark", help="Keep a benchmark-given success/reward as the "
                 "outcome (the scored one is only compared)."),
]
ReadOnlyOpt = Annotated[
    str | None,
    typer.Option("--read-only", help="Tools left out of tool scoring: names, comma-separated, or 'auto' (flagged "
                 "read-only in their specs, or a known domain's list)."),
]
MaxMissingOpt = Annotated[
    float,
    typer.Option("--max-missing", min=0.0, max=1.0, help="Exit 1 when a larger share of judge verdicts is missing "
                 "(of the answers', or of one --metrics metric's)."),
]
ConcurrencyOpt = Annotated[int, typer.Option("--concurrency", min=1, help="Judge requests in flight at once.")]
CacheDirOpt = Annotated[
    Path | None,
    typer.Option("--cache-dir", help="Judge verdict cache (default: $AGENTSTATS_CACHE_DIR/judge or "
                 "~/.cache/agentstats/judge)."),
]
MetricsOpt = Annotated[
    str | None,
    typer.Option("--metrics", help="Also compute these metrics (names or groups, comma-separated; NAME:METHOD picks a "
                 "method; docs/metrics.md) into one table at --metrics-out."),
]
MetricsOutOpt = Annotated[
    Path | None,
    typer.Option("--metrics-out", help="Where the metrics table goes (.jsonl, .csv or .parquet; default: "
                 "<input name>.metrics.jsonl here)."),
]
MetricsLevelOpt = Annotated[
    MetricLevel | None,
    typer.Option("--metrics-level", help="Compute every metric that supports it at this level (default: its own)."),
]
GuardianOpt = Annotated[
    str | None,
    typer.Option("--guardian", metavar="MODEL", help="Guardian classifier (e.g. Granite Guardian) at --base-url for "
                 "the --metrics that offer method guardian (a metric named NAME:METHOD keeps its method)."),
]
ToolWeightsOpt = Annotated[
    str | None,
    typer.Option("--tool-weights", metavar="C=W,...", help="Weights of the tool-call score's components "
                 "(selection, parameters, sequence, utilization; default 1,1,1,0), e.g. 'parameters=2,sequence=0'."),
]
#: The run store a command reads (``runs``): it must exist (``agentstats import`` creates one).
StoreOpt = Annotated[Path, typer.Option("--store", "-s", help="The run store to read (a DuckDB file written by "
                                        "agentstats import).")]
#: The run store ``agentstats import`` writes to: created when absent.
ImportStoreOpt = Annotated[Path, typer.Option("--store", "-s", help="The run store to write to (a DuckDB file; "
                                              "created when absent).")]
WorkersOpt = Annotated[
    int | None, typer.Option("--workers", min=1, help="Processes of --executor process, or CPUs of the local cluster "
                             "--executor ray starts (default: every CPU).")
]
AddressOpt = Annotated[
    str | None, typer.Option("--address", help="Ray cluster of --executor ray (default: a running one, else local).")
]
RequireToolsOpt = Annotated[
    bool, typer.Option("--require-tools", help="A trial succeeds only if its tool calls pass too.")
]


def out_file_opt(help: str, *short: str) -> Any:
    """Declare ``--out FILE``: a file the command writes (never a folder; that is :func:`out_dir_opt`)."""
    return typer.Option("--out", *short, help=help)


def out_dir_opt(help: str) -> Any:
    """Declare ``--out-dir DIR``: a folder the command writes into (created when missing)."""
    return typer.Option("--out-dir", help=help)


def store_run_opt(help: str) -> Any:
    """Declare ``--store-run NAME``: the run of a run store a command writes (``--run`` names a run it reads)."""
    return typer.Option("--store-run", help=help)


# ------------------------------------------------------------------------------------------------ values
def parse_k(spec: str | None) -> list[int] | None:
    """Read ``--k`` (:func:`agentstats.intervals.parse_k`: ``"1,2,4"``, ``"1..8"``, ``"1..3,8"``).

    Raises
    ------
    typer.BadParameter
        With the library's message (text that is not a k list, k out of range, too many values).
    """
    try:
        return parse_k_spec(spec)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None


def command_ks(ks: list[int] | None, counts: Any, command: str, source: str) -> list[int]:
    """Return a command's k: ``--k`` (parsed by :func:`parse_k`) checked against ``counts``, else the default.

    ``fit`` extrapolates (k up to :data:`agentstats.intervals.FIT_K_FACTOR` times the largest n); the others need
    k <= n (:func:`agentstats.intervals.check_k_reach`). The default is :func:`agentstats.intervals.default_ks`.

    Raises
    ------
    typer.Exit
        With status 2 and one line on k that the command cannot answer.
    """
    check_k(ks, counts, command, source)
    return ks if ks is not None else default_ks(counts)


def check_k(ks: list[int] | None, counts: Any, command: str, source: str) -> None:
    """Refuse k values a command cannot answer from ``counts`` (exit status 2, one line).

    ``fit`` extrapolates; ``estimate`` and ``report`` need k <= n (:func:`agentstats.intervals.check_k_reach`).
    """
    try:
        check_k_reach(ks, counts, extrapolate=command == "fit", source=source)
    except ValueError as exc:
        raise fail(typer.BadParameter(str(exc)), EXIT_USAGE) from None


def check_n_boot(n_boot: int) -> None:
    """Refuse ``--n-boot`` between 0 and ``MIN_N_BOOT``, naming the flag (exit 2), before the library is called.

    The rule is the library's (:func:`agentstats.intervals.n_boot_problem`), whose message names the keyword
    of the Python function the command calls.
    """
    from agentstats.intervals import n_boot_problem

    problem = n_boot_problem(n_boot)
    if problem:
        raise fail(typer.BadParameter(f"--n-boot {problem}"), EXIT_USAGE)


def force_opt(what: str = "the output that already exists") -> Any:
    """Declare the ``--force`` option of a command that refuses to replace its output.

    The rule itself is :func:`check_output_path` with ``force=``: one message, checked before any work.
    """
    return typer.Option("--force", help=f"Replace {what}.")


def check_output_path(path: Path | None, flag: str, *, folder: bool = False, make_parents: bool = False,
                      force: bool | None = None) -> None:
    """Refuse an output path the command could not write to, naming the option (exit status 2), before any work.

    Parameters
    ----------
    path : Path or None
        The path given (``None``: option not given, nothing to check).
    flag : str
        The option, e.g. ``"--out"``.
    folder : bool
        ``True``: a folder the command creates when missing (with the folders above it); refused when it is a
        file, or when the nearest folder above it that exists is a file or not writable.
    make_parents : bool
        A file whose missing folders the command creates (``simulate --out``); otherwise a file in a folder that
        does not exist is refused.
    force : bool or None
        The command's ``--force``: ``False`` refuses an output that already exists ("pass --force to overwrite it"),
        before any work (a judge's calls are not paid for a file that cannot be written); ``None``: the command
        replaces its output without asking (outputs named by the input, e.g. a report's folder).

    Raises
    ------
    typer.Exit
        With status 2 and one line: a file given as a folder or the other way round, a missing folder, a folder
        that cannot be written to, an existing output without ``--force``.
    """
    if path is None:
        return

    def refuse(why: str) -> typer.Exit:
        return fail(typer.BadParameter(f"{flag} {path}: {why}"), EXIT_USAGE)

    if force is False and path.exists():
        raise refuse(f"exists; pass --force to overwrite it, or {flag} elsewhere")

    if folder:
        if path.exists() and not path.is_dir():
            raise refuse("is a file; give a folder (it is created when missing)")
        target = path
    else:
        if path.is_dir():
            raise refuse("is a folder; give a file name")
        target = path.parent
        if not target.exists() and not make_parents:
            raise refuse(f"the folder {target} does not exist; create it first, or give a path in an existing folder")
    anchor = target
    while not anchor.exists() and anchor != anchor.parent:  # the nearest existing folder above (mkdir starts there)
        anchor = anchor.parent
    if not anchor.is_dir():
        raise refuse(f"{anchor} is a file, not a folder")
    if not os.access(anchor, os.W_OK | os.X_OK):
        raise refuse(f"cannot write in the folder {anchor} (permission denied)")


# ------------------------------------------------------------------------------------------------ option groups
def parse_columns(text: str | None) -> dict[str, str]:
    """Read ``--columns agent=COL,task=COL,success=COL`` into loader options (``agent_col`` ...).

    Raises
    ------
    typer.Exit
        With status 2 and one line naming ``--columns``: an item without ``=``, an unknown key, a key given twice or
        an empty column name.
    """
    if text is None:
        return {}
    columns: dict[str, str] = {}
    for item in text.split(","):
        key, sep, column = (part.strip() for part in item.partition("="))
        if not sep or key not in COLUMN_KEYS or not column or COLUMN_KEYS[key] in columns:
            why = ("an empty column name" if sep and key in COLUMN_KEYS and not column
                   else f"{key} given twice" if COLUMN_KEYS.get(key) in columns
                   else "write agent=COL, task=COL and/or success=COL, separated by commas")
            raise fail(typer.BadParameter(f"--columns {text!r}: {why}"), EXIT_USAGE)
        columns[COLUMN_KEYS[key]] = column
    return columns


@dataclass(frozen=True)
class InputOptions:
    """The input options of a command: format and what to read of the input.

    Attributes
    ----------
    format : str
        ``--format``: a format name, or ``auto`` (detected from the content).
    agent : str or None
        ``--agent``: agent name for single-agent files (tau-bench).
    columns : dict of str to str
        ``--columns``: ``agent_col`` / ``task_col`` / ``success_col`` of a run table.
    agents : str or None
        ``--agents``: agents to keep (names or shell patterns, ``!`` excludes).
    run : str or None
        ``--run``: the run of a run store to read.
    score_scale, success_threshold : str, float or None
        ``--score-scale LO:HI`` and ``--success-threshold``: numeric scores outside [0, 1]
        (:mod:`agentstats.records.scale`).
    skip_bad : bool
        ``--skip-bad``: skip malformed records instead of stopping on them.
    """

    format: str = "auto"
    agent: str | None = None
    columns: dict[str, str] = field(default_factory=dict)
    agents: str | None = None
    run: str | None = None
    score_scale: str | None = None
    success_threshold: float | None = None
    skip_bad: bool = False

    def loader_options(self) -> dict[str, Any]:
        """Return the keyword arguments of :func:`agentstats.load` that were given (``format`` left out)."""
        opts: dict[str, Any] = {"on_error": "skip"} if self.skip_bad else {}
        if self.agent is not None:
            opts["agent"] = self.agent
        opts.update(self.columns)
        if self.agents is not None:
            opts["agents"] = self.agents
        if self.run is not None:
            opts["run"] = self.run
        if self.score_scale is not None:
            opts["score_scale"] = self.score_scale
        if self.success_threshold is not None:
            opts["success_threshold"] = self.success_threshold
        return opts


@dataclass(frozen=True)
class CiOptions:
    """The interval options of a command: ``--ci-prob`` and ``--ci-kind`` (checked by ``intervals.check_ci``).

    Attributes
    ----------
    prob : float
        Probability of every interval, in (0, 1).
    kind : {"eti", "hdi"}
        Interval shape (``"eti"`` where the command offers no ``--ci-kind``).
    """

    prob: float = CI_PROB
    kind: CiKind = "eti"


#: A command's ``ci: CiOptions = CI_DEFAULT`` (replaced by the options :func:`ci_options` adds).
CI_DEFAULT = CiOptions()


@dataclass(frozen=True)
class ExecutorOptions:
    """Where a command's work runs: ``--executor``, ``--workers``, ``--address``.

    Attributes
    ----------
    executor : {"local", "process", "ray"}
    workers : int or None
        Processes of ``process`` (default: every CPU this process may use).
    address : str or None
        The Ray cluster of ``ray``.
    """

    executor: ExecutorName = "local"
    workers: int | None = None
    address: str | None = None

    def keywords(self) -> dict[str, Any]:
        """Return the keyword arguments ``executor``, ``workers``, ``address`` of the library call."""
        return {"executor": self.executor, "workers": self.workers, "address": self.address}


#: A command's ``run: ExecutorOptions = EXECUTOR_DEFAULT`` (replaced by the options :func:`executor_options` adds).
EXECUTOR_DEFAULT = ExecutorOptions()


def _kw(name: str, annotation: Any, default: Any) -> inspect.Parameter:
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=default)


def _group[F: Callable[..., Any]](fn: F, slot: str, added: list[inspect.Parameter],
                                  make: Callable[[dict[str, Any]], Any]) -> F:
    """Put the options ``added`` in the place of ``fn``'s parameter ``slot``; hand them to it as ``make(values)``."""
    signature = inspect.signature(fn, eval_str=True)
    if slot not in signature.parameters:
        raise TypeError(f"{fn.__name__}: this decorator needs a parameter `{slot}`")
    names = [p.name for p in added]
    params: list[inspect.Parameter] = []
    after = False
    for p in signature.parameters.values():
        if p.name == slot:
            params += added
            after = True
        else:  # typer reads options by keyword: keyword-only keeps the order valid after the added ones
            params.append(p.replace(kind=inspect.Parameter.KEYWORD_ONLY) if after or p.default is not p.empty else p)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        given = {name: kwargs.pop(name) for name in names if name in kwargs}
        return fn(*args, **{slot: make(given)}, **kwargs)

    wrapper.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in params}
    return wrapper  # type: ignore[return-value]


@overload
def input_options[F: Callable[..., Any]](fn: F, *, run: bool = True, scale: bool = True) -> F: ...
@overload
def input_options[F: Callable[..., Any]](
    fn: None = None, *, run: bool = True, scale: bool = True) -> Callable[[F], F]: ...
def input_options(fn: Any = None, *, run: bool = True, scale: bool = True) -> Any:
    """Give a command the input options (``--format --agent --columns --agents --run``, the score scale, skip-bad).

    ``--score-scale`` and ``--success-threshold`` declare the scale of numeric scores outside [0, 1]; ``--skip-bad``
    skips malformed records.

    The command declares a parameter ``inputs: InputOptions`` (after its arguments); the options take its place in
    the command's signature, and the command receives them as one :class:`InputOptions`. ``run=False`` leaves out
    ``--run`` (a command whose arguments name the runs); ``scale=False`` leaves out the score-scale options (a command
    whose help is at its budget of options: ``report``).

    Raises
    ------
    TypeError
        When the command has no ``inputs`` parameter.
    """
    added = [_kw("format", FormatOpt, "auto"), _kw("agent", AgentOpt, None), _kw("columns", ColumnsOpt, None),
             _kw("agents", AgentsOpt, None), *([_kw("run", RunOpt, None)] if run else []),
             *([_kw("score_scale", ScoreScaleOpt, None), _kw("success_threshold", SuccessThresholdOpt, None)]
               if scale else []),
             _kw("skip_bad", SkipBadOpt, False)]

    def make(given: dict[str, Any]) -> InputOptions:
        columns = parse_columns(given.pop("columns", None))
        return InputOptions(columns=columns, **given)

    def decorate(f: Any) -> Any:
        if "inputs" not in inspect.signature(f).parameters:
            raise TypeError(f"{f.__name__}: @input_options needs a parameter `inputs: InputOptions`")
        return _group(f, "inputs", added, make)

    return decorate if fn is None else decorate(fn)


def ci_options[F: Callable[..., Any]](*, kinds: Sequence[CiKind] = CI_KINDS) -> Callable[[F], F]:
    """Give a command the interval options: ``--ci-prob``, and ``--ci-kind`` when it offers more than one shape.

    The command declares a parameter ``ci: CiOptions``; the options take its place, and their values are checked
    (:func:`agentstats.intervals.check_ci`) before the command runs: a bad value exits 2 naming the flag.

    Parameters
    ----------
    kinds : sequence of {"eti", "hdi"}
        The shapes the library offers for the command's intervals; ``("eti",)`` (frequentist intervals, the
        closed-form Beta intervals of a calibration) leaves ``--ci-kind`` out.
    """
    added = [_kw("ci_prob", CiProbOpt, CI_PROB), *([_kw("ci_kind", CiKindOpt, "eti")] if len(kinds) > 1 else [])]

    def make(given: dict[str, Any]) -> CiOptions:
        prob, kind = given.get("ci_prob", CI_PROB), given.get("ci_kind", "eti")
        try:
            with option_style("cli"):
                check_ci(prob, kind)
        except ValueError as exc:
            raise fail(typer.BadParameter(str(exc)), EXIT_USAGE) from None
        return CiOptions(prob=float(prob), kind=kind)

    return lambda f: _group(f, "ci", added, make)


def executor_options[F: Callable[..., Any]](what: str) -> Callable[[F], F]:
    """Give a command ``--executor``, ``--workers`` and ``--address``, checked before it runs.

    The command declares a parameter ``run: ExecutorOptions``; the options take its place. ``--workers`` without
    ``--executor process`` / ``ray`` and ``--address`` without ``--executor ray`` exit 2 naming the flags.

    Parameters
    ----------
    what : str
        What the executor runs, for the help (``"the --metrics"``).
    """
    executor_opt = Annotated[
        ExecutorName,
        typer.Option("--executor", help=f"Where {what} run: this process, a process pool or a Ray cluster "
                     "(agentstats\\[ray]); the same numbers on each."),
    ]
    added = [_kw("executor", executor_opt, "local"), _kw("workers", WorkersOpt, None),
             _kw("address", AddressOpt, None)]

    def make(given: dict[str, Any]) -> ExecutorOptions:
        chosen = ExecutorOptions(**given)
        if chosen.workers is not None and chosen.executor == "local":
            raise fail(typer.BadParameter("--workers needs --executor process or ray"), EXIT_USAGE)
        if chosen.address is not None and chosen.executor != "ray":
            raise fail(typer.BadParameter("--address needs --executor ray"), EXIT_USAGE)
        return chosen

    return lambda f: _group(f, "run", added, make)

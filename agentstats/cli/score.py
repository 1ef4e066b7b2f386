"""``agentstats score``: answers and tool calls of each trial, and each trial's outcome.

Exit statuses: 0 ok; 1 the work failed, including more missing judge verdicts than ``--max-missing`` allows, for
the answers or for any one ``--metrics`` metric (the scored file and the metrics table are still written); 2 usage
or input error, including a judge key the endpoint refuses; 130 interrupted (verdicts already obtained stay in the
judge cache).
"""

from __future__ import annotations

import functools
import json
import math
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from agentstats.cli.common import (
    EXIT_FAILURE,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    AgentColOpt,
    AgentOpt,
    AgentsOpt,
    BaseUrlOpt,
    FormatOpt,
    JudgeModelOpt,
    JudgeOpt,
    OldJudgeModelOpt,
    RequireToolsOpt,
    SkipBadOpt,
    SuccessColOpt,
    TaskColOpt,
    ThresholdOpt,
    ToolThresholdOpt,
    clean,
    console,
    deprecated_alias,
    fail,
    loader_opts,
    out,
    stem,
)

_COMPONENTS = ["selection", "parameters", "sequence", "utilization", "overall", "precision", "recall", "f1"]


def _interrupt_exits_130(fn: Callable[..., None]) -> Callable[..., None]:
    """Ctrl-C while scoring: one line and exit 130 (verdicts already obtained stay in the judge cache)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        try:
            fn(*args, **kwargs)
        except KeyboardInterrupt:
            console.print("interrupted")
            raise typer.Exit(EXIT_INTERRUPTED) from None

    return wrapper


@_interrupt_exits_130
def score(
    input: Annotated[Path, typer.Argument(help="Trials file with answers / tool calls and ground truth.")],
    format: FormatOpt = "auto",
    judge: JudgeOpt = "deterministic",
    base_url: BaseUrlOpt = None,
    judge_model: JudgeModelOpt = None,
    old_model: OldJudgeModelOpt = None,
    matcher: Annotated[
        str,
        typer.Option(
            help="Deterministic matcher: auto (numeric for numeric references, else normalized exact match, else a "
            "short reference contained in the answer, reported as lenient), exact, normalized, numeric, token_f1, "
            "contains."
        ),
    ] = "auto",
    threshold: ThresholdOpt = 0.7,
    tool_threshold: ToolThresholdOpt = 1.0,
    require_tools: RequireToolsOpt = False,
    prefer_benchmark: Annotated[
        bool,
        typer.Option(help="Keep a benchmark-given success/reward as the outcome (the scored one is only compared)."),
    ] = True,
    read_only: Annotated[
        str | None,
        typer.Option(
            "--read-only",
            help="Tools that do not change state, left out of tool scoring: comma-separated names, or 'auto' (tool "
            "specs flagged read_only / MCP readOnlyHint, and known domain lists such as tau-bench airline). "
            "Default: every call counts; the table still shows the state-changing reading when names are known.",
        ),
    ] = None,
    max_missing: Annotated[
        float,
        typer.Option(
            "--max-missing", min=0.0, max=1.0,
            help="Exit 1 when the share of judge verdicts that are missing (judge_missing) exceeds this: of the "
            "answer verdicts, or of one --metrics metric's verdicts (all agents).",
        ),
    ] = 0.5,
    concurrency: Annotated[int, typer.Option(min=1, help="Judge requests in flight at once (--judge openai).")] = 16,
    cache_dir: Annotated[
        Path | None,
        typer.Option(help="Judge verdict cache (default: $AGENTSTATS_CACHE_DIR/judge or ~/.cache/agentstats/judge)."),
    ] = None,
    out_path: Annotated[
        Path | None, typer.Option("--out", help="Write the scored trials here (JSONL, .gz ok).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON instead of tables.")] = False,
    metrics: Annotated[
        str | None,
        typer.Option(
            "--metrics",
            help="Also compute these metrics (comma-separated names or groups: answer_quality, correctness, tool_use, "
            "format, retrieval_quality, content_safety, readability, usage, outcome; see docs/metrics.md) into one "
            "tidy table, written to "
            "--metrics-out. NAME:METHOD picks a metric's method (harm,faithfulness:judge); otherwise its default. "
            "Judge-based metrics use the --judge openai judge (without it they are not applicable).",
        ),
    ] = None,
    metrics_out: Annotated[
        Path | None,
        typer.Option(
            "--metrics-out",
            help="Where the metrics table goes (.jsonl, .csv or .parquet). Default: <input name>.metrics.jsonl in "
            "the current directory.",
        ),
    ] = None,
    metrics_level: Annotated[
        str | None,
        typer.Option("--metrics-level", help="Compute every metric that supports it at this level: interaction, "
                     "node or trial (default: each metric's own level)."),
    ] = None,
    agent: AgentOpt = None,
    agent_col: AgentColOpt = None,
    task_col: TaskColOpt = None,
    success_col: SuccessColOpt = None,
    skip_bad: SkipBadOpt = False,
    agents: AgentsOpt = None,
) -> None:
    """Score answers and tool calls of each trial (matchers or an LLM judge) and set each trial's outcome."""
    import logging

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from agentstats.cli.common import check_output_path, say_skipped
    from agentstats.io import LoadWarning, load_trials, save_trials
    from agentstats.report.scoring_tables import tool_breakdown, tool_readings, tool_scores_frame
    from agentstats.scoring import JudgeConfigError, resolve_judge, score_trials
    from agentstats.scoring.tools import read_only_tools

    model = deprecated_alias(judge_model, None, old_model, "--model", "--judge-model", "score")
    check_output_path(out_path, "--out")
    judge_kwargs: dict[str, Any] = {"concurrency": concurrency, "cache_dir": cache_dir} if judge == "openai" else {}
    try:
        the_judge = resolve_judge(judge, matcher, model=model, base_url=base_url, **judge_kwargs)
    except ValueError as exc:  # unknown judge or matcher, no API key (JudgeConfigError is a ValueError)
        raise fail(exc, EXIT_USAGE) from exc

    with console.status(f"loading {input} ..."):
        try:
            opts = loader_opts(agent, agent_col, task_col, success_col, skip_bad, agents)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", LoadWarning)  # each skipped record is listed below
                trials = load_trials(input, format, **opts)
        except (ValueError, OSError) as exc:
            raise fail(exc, EXIT_USAGE) from exc
    say_skipped(getattr(trials, "skipped", []), input)
    metric_list = _resolve_metric_options(metrics, metrics_level)
    known_read_only = read_only_tools(trials)
    if read_only is None:
        ro: frozenset[str] = frozenset()
    elif read_only.strip().lower() == "auto":
        ro = known_read_only
    else:
        ro = frozenset(n.strip() for n in read_only.split(",") if n.strip())

    # instructor logs an ERROR for every failed attempt, including those retried successfully later; failures
    # that remain are counted in the summary below instead.
    ilog = logging.getLogger("instructor")
    old_level = ilog.level
    ilog.setLevel(logging.CRITICAL)
    try:
        with Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            console=console, transient=True,
        ) as progress:
            task = progress.add_task(f"judging answers ({the_judge.name})", total=None)

            def on_progress(done: int, total: int) -> None:
                progress.update(task, completed=done, total=total)

            result = score_trials(
                trials, judge=the_judge, threshold=threshold, tool_threshold=tool_threshold,
                require_tools=require_tools, prefer_benchmark=prefer_benchmark, matcher=matcher, read_only=ro,
                progress=on_progress,
            )
        frame = tool_scores_frame(trials, tool_threshold=tool_threshold, read_only=ro)
        readings = tool_readings(trials, ro or known_read_only, tool_threshold=tool_threshold)
    except JudgeConfigError as exc:  # the endpoint refused the key (JudgeAuthError): fix the setup, not the data
        raise fail(exc, EXIT_USAGE) from exc
    except Exception as exc:
        raise fail(exc, EXIT_FAILURE) from exc
    finally:
        ilog.setLevel(old_level)

    if out_path is not None:
        try:
            save_trials(result.trials, out_path)
        except OSError as exc:
            raise fail(exc, EXIT_FAILURE) from exc
        console.print(f"wrote {len(result.trials)} scored trials to {out_path}")

    metric_summary = None
    if metric_list is not None:
        metric_judge = the_judge if hasattr(the_judge, "judge_prompt") else None  # --judge openai
        metric_summary = _compute_metrics(trials, metric_list, metrics_level, metrics_out or Path(
            f"{stem(input)}.metrics.jsonl"), metric_judge)

    summ = result.summary()
    if as_json:
        _print_json(result, summ, tool_breakdown(frame), readings, metric_summary)
    else:
        _print_tables(input, result, summ, tool_breakdown(frame), readings, tool_threshold)
        if metric_summary is not None:
            _print_metric_table(metric_summary)
    over = _warn_metric_judge_missing(metric_summary, max_missing) if metric_summary is not None else []

    share = result.judge_missing_share
    if share > max_missing:
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(result.judge_stats.get("missing_by_kind", {}).items()))
        raise fail(
            RuntimeError(
                f"{result.n_verdicts_missing} of {result.n_verdicts} judge verdicts are missing ({share:.1%}, more "
                f"than --max-missing {max_missing:.0%}){f': {kinds}' if kinds else ''}. Their trials are counted "
                "as missing, not failed; rerun when the judge is reachable (cached verdicts are not asked again)."
            ),
            EXIT_FAILURE,
        )
    if over:
        raise fail(
            RuntimeError(
                f"metric judge verdicts missing, more than --max-missing {max_missing:.0%}: {'; '.join(over)}. Their "
                "rows are not applicable, not failed; rerun when the judge is reachable (cached verdicts are not "
                "asked again)."
            ),
            EXIT_FAILURE,
        )


def _warn_metric_judge_missing(summary: Any, max_missing: float) -> list[str]:
    """Warn for each agent and metric with missing judge verdicts; return the metrics over ``max_missing``.

    A metric's share missing is over all agents: rows missing / (applicable rows + rows missing), the verdicts
    asked for (judge-based methods only ask for applicable records).
    """
    over: list[str] = []
    if summary is None or summary.empty:
        return over
    for _, r in summary[summary["n_judge_missing"] > 0].iterrows():
        kinds = ", ".join(f"{k} {n}" for k, n in r["judge_missing_by_kind"].items())
        console.print(
            f"[yellow]warning:[/] {_escape(str(r['agent']))} / {r['metric']}: {r['n_judge_missing']} of "
            f"{r['n_judge_missing'] + r['n_applicable']} judge verdicts missing (judge_missing: {_escape(kinds)}) "
            "— not counted as applicable", highlight=False, soft_wrap=True)
    per_metric = summary.groupby("metric", sort=False)[["n_judge_missing", "n_applicable"]].sum()
    for metric, r in per_metric.iterrows():
        asked = int(r["n_judge_missing"] + r["n_applicable"])
        if r["n_judge_missing"] and r["n_judge_missing"] / asked > max_missing:
            over.append(f"{metric} {int(r['n_judge_missing'])} of {asked} ({r['n_judge_missing'] / asked:.1%})")
    return over


def _readings_rows(readings: Any) -> list[dict[str, Any]]:
    return [{c: clean(v) for c, v in row.items()} for _, row in readings.iterrows()]


def _resolve_metric_options(metrics: str | None, level: str | None) -> list[Any] | None:
    """Return the metrics asked for with ``--metrics`` (None when not asked); exit 2 for unknown names."""
    from agentstats.metrics import LEVELS, resolve_metrics

    if level is not None and level not in LEVELS:
        raise fail(ValueError(f"--metrics-level must be one of {', '.join(LEVELS)}, got {level!r}"), EXIT_USAGE)
    if metrics is None:
        if level is not None:
            raise fail(ValueError("--metrics-level needs --metrics"), EXIT_USAGE)
        return None
    try:
        return resolve_metrics(metrics)
    except ValueError as exc:
        raise fail(exc, EXIT_USAGE) from exc


def _compute_metrics(trials: Any, metric_list: list[Any], level: str | None, path: Path, judge: Any) -> Any:
    """Compute the metrics, write the table, return the per-agent summary; bad records exit 2 after writing."""
    from agentstats.estimators.metric_means import summarize_metrics
    from agentstats.metrics import compute, summarize_frame, write_metrics

    try:
        frame = compute(trials, metric_list, level=level, errors="collect", judge=judge)  # type: ignore[arg-type]
        write_metrics(frame, path)
    except ValueError as exc:
        raise fail(exc, EXIT_USAGE) from exc
    except OSError as exc:
        raise fail(exc, EXIT_FAILURE) from exc
    console.print(f"wrote {len(frame)} metric rows to {path}")
    problems = frame.attrs["errors"]
    if problems:
        for msg in problems[:20]:
            console.print(f"[red]input error:[/] {_escape(msg)}")
        more = " (first 20 shown)" if len(problems) > 20 else ""
        raise fail(ValueError(f"{len(problems)} metric values could not be read{more}; their rows are in {path} "
                              "as not applicable"), EXIT_USAGE)
    post = summarize_metrics(frame)
    keep = ["agent", "metric", "n_tasks", "mean", "ci_low", "ci_high", "share_passed", "share_ci_low",
            "share_ci_high", "share_ci_method"]
    return summarize_frame(frame).drop(columns=["mean", "share_passed"]).merge(post[keep], on=["agent", "metric"])


def _escape(text: str) -> str:
    """Escape rich markup in a string from the data."""
    from rich.markup import escape

    return escape(text)


def _share_text(r: Any) -> str:
    if math.isnan(r["share_passed"]):
        return "-"
    ci = "" if math.isnan(r["share_ci_low"]) else f" [{r['share_ci_low']:.1%}, {r['share_ci_high']:.1%}]"
    return f"{r['share_passed']:.1%}{ci} of {r['n_passed_known']}"


def _print_metric_table(summary: Any) -> None:
    t = Table(title="metrics: posterior mean over tasks with 95% credible interval; share of trials passing the "
                    "threshold with 95% confidence interval")
    for c in ("agent", "metric", "method", "level"):
        t.add_column(c)
    for c in ("rows", "applicable", "judge missing", "tasks", "mean [95% CrI]", "passed [95% CI]"):
        t.add_column(c, justify="right")
    for _, r in summary.iterrows():
        t.add_row(
            _escape(str(r["agent"])), r["metric"], r["method"], r["level"], str(r["n"]), str(r["n_applicable"]),
            str(r["n_judge_missing"]), str(r["n_tasks"]),
            "-" if math.isnan(r["mean"]) else f"{r['mean']:.4g} [{r['ci_low']:.4g}, {r['ci_high']:.4g}]",
            _share_text(r),
        )
    out.print(t)


def _print_json(result: Any, summ: dict[str, Any], breakdown: Any, readings: Any,
                metric_summary: Any = None) -> None:
    from agentstats.report.scoring_tables import judge_summary

    payload = {
        "summary": {k: clean(v) for k, v in summ.items()},
        "judge": {str(r["item"]): clean(r["value"]) for _, r in judge_summary(result).iterrows()},
        "tool_breakdown": [{c: clean(v) for c, v in row.items()} for _, row in breakdown.iterrows()],
        "tool_readings": _readings_rows(readings),
        "read_only": readings.attrs.get("read_only", []),
        "ground_truth_errors": [str(e) for e in result.ground_truth_errors],
    }
    if metric_summary is not None:
        payload["metrics"] = [{c: clean(v) for c, v in row.items()} for _, row in metric_summary.iterrows()]
    out.print_json(json.dumps(payload, default=str))


def _print_tables(input: Path, result: Any, summ: dict[str, Any], breakdown: Any, readings: Any,
                  tool_threshold: float) -> None:
    from rich.markup import escape

    from agentstats.report.scoring_tables import judge_summary

    t = Table(title=f"{escape(input.name)}: scoring summary ({escape(result.judge)})")
    t.add_column("item")
    t.add_column("value", justify="right")
    t.add_row("trials", str(summ["n_trials"]))
    for k, v in sorted(summ["outcomes"].items()):
        t.add_row(f"outcome: {k}", str(v))
    for k, v in sorted(summ["outcome_source"].items()):
        t.add_row(f"outcome source: {k}", str(v))
    for _, r in judge_summary(result).iterrows():
        if r["item"] == "judge":
            continue
        v = r["value"]
        if r["item"] == "share of verdicts missing":
            t.add_row(str(r["item"]), f"{v:.1%} ({result.n_verdicts_missing} of {result.n_verdicts})")
            continue
        t.add_row(str(r["item"]), "unknown" if v is None else (f"{v:.4f}" if isinstance(v, float) else str(v)))
    if summ["n_answers_lenient"]:
        t.add_row("answers correct by a lenient rule", str(summ["n_answers_lenient"]))
    if summ["n_ground_truth_errors"]:
        t.add_row("ground-truth errors (invalid expected calls)", str(summ["n_ground_truth_errors"]))
    agree = summ["agreement_with_benchmark"]
    t.add_row(
        "scored outcome agrees with benchmark",
        "n/a" if agree is None else f"{agree:.1%} of {summ['n_agreement']}",
    )
    for _, r in readings[readings["level"] == "trial"].iterrows():
        if r["n_compared"]:
            t.add_row(
                f"trial-level tool pass vs benchmark ({r['reading']}, {escape(str(r['agent']))})",
                f"{r['agreement']:.1%} agree, kappa {r['kappa']:.3f} (n={r['n_compared']})",
            )
    out.print(t)
    for e in result.ground_truth_errors[:5]:
        console.print(f"[yellow]ground-truth error:[/] {escape(str(e))}")
    if breakdown.empty:
        out.print("no tool ground truth (expected tool calls): no tool breakdown")
        return
    bt = Table(title="tool-call correctness (mean per unit)")
    bt.add_column("component")
    for _, r in breakdown.iterrows():
        bt.add_column(f"{escape(str(r['agent']))}\n({r['level']})", justify="right")
    bt.add_row("units", *[str(n) for n in breakdown["n_units"]])
    for c in _COMPONENTS:
        bt.add_row(c, *["-" if math.isnan(v) else f"{v:.3f}" for v in breakdown[c]])
    bt.add_row(f"passed (>= {tool_threshold:g})", *[f"{v:.1%}" for v in breakdown["share_passed"]])
    out.print(bt)
    if readings.attrs.get("read_only"):
        rt = Table(title="tool pass rate, two readings")
        rt.add_column("reading")
        rt.add_column("agent")
        rt.add_column("level")
        rt.add_column("units", justify="right")
        rt.add_column("passed", justify="right")
        for _, r in readings.iterrows():
            rt.add_row(r["reading"], escape(str(r["agent"])), r["level"], str(r["n_units"]), f"{r['share_passed']:.1%}")
        out.print(rt)
        console.print(escape(readings.attrs["note"]))

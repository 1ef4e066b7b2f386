"""``agentstats score``: answers and tool calls of each trial, and each trial's outcome.

Exit statuses: 0 ok; 1 the work failed, including more missing judge verdicts than ``--max-missing`` allows, for
the answers or for any one ``--metrics`` metric (the scored file and the metrics table are still written); 2 usage
or input error, including a judge key the endpoint refuses; 130 interrupted (verdicts already obtained stay in the
judge cache).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated, Any

import typer

from agentstats.cli.common import EXIT_FAILURE, EXIT_USAGE, console, fail, load_trials, stem
from agentstats.cli.options import (
    CI_DEFAULT,
    EXECUTOR_DEFAULT,
    BaseUrlOpt,
    CacheDirOpt,
    CiOptions,
    ConcurrencyOpt,
    ExecutorOptions,
    GuardianOpt,
    InputOptions,
    JsonOpt,
    JudgeModelOpt,
    JudgeOpt,
    MatcherOpt,
    MaxMissingOpt,
    MetricsLevelOpt,
    MetricsOpt,
    MetricsOutOpt,
    PreferBenchmarkOpt,
    ReadOnlyOpt,
    RequireToolsOpt,
    ThresholdOpt,
    ToolThresholdOpt,
    ToolWeightsOpt,
    check_output_path,
    ci_options,
    executor_options,
    force_opt,
    input_options,
    out_file_opt,
)

_MISSING = ("rerun when the judge is reachable (cached verdicts are not asked again)")


@input_options
@ci_options(kinds=("eti",))  # the metric summary's intervals (agentstats.metrics.summarize_with_intervals)
@executor_options("the --metrics")  # agentstats.metrics.compute(executor=...)
def score(
    input: Annotated[Path, typer.Argument(help="Trials file with answers / tool calls and ground truth.")],
    inputs: InputOptions,
    judge: JudgeOpt = "deterministic",
    base_url: BaseUrlOpt = None,
    judge_model: JudgeModelOpt = None,
    matcher: MatcherOpt = "auto",
    threshold: ThresholdOpt = 0.7,
    tool_threshold: ToolThresholdOpt = 1.0,
    tool_weights: ToolWeightsOpt = None,
    require_tools: RequireToolsOpt = False,
    prefer_benchmark: PreferBenchmarkOpt = True,
    read_only: ReadOnlyOpt = None,
    max_missing: MaxMissingOpt = 0.5,
    concurrency: ConcurrencyOpt = 16,
    cache_dir: CacheDirOpt = None,
    out_path: Annotated[Path | None, out_file_opt("Write the scored trials here (JSONL, .gz ok).")] = None,
    force: Annotated[bool, force_opt("an existing --out file")] = False,
    as_json: JsonOpt = False,
    metrics: MetricsOpt = None,
    metrics_out: MetricsOutOpt = None,
    metrics_level: MetricsLevelOpt = None,
    guardian: GuardianOpt = None,
    ci: CiOptions = CI_DEFAULT,
    run: ExecutorOptions = EXECUTOR_DEFAULT,
) -> None:
    """Score answers and tool calls of each trial (matchers or an LLM judge) and set each trial's outcome."""
    from agentstats.cli.render.score import judging_progress, print_score, warn_judge_missing
    from agentstats.io import save_trials
    from agentstats.metrics import judge_missing_over
    from agentstats.report.scoring_tables import tool_readings, tool_scores_frame, tool_validity
    from agentstats.scoring import JudgeConfigError, read_only_tools, resolve_judge, score_trials
    from agentstats.scoring.tools import parse_weights

    check_output_path(out_path, "--out", force=force)
    executor = None if run.executor == "local" else f"--executor {run.executor}"  # it runs the --metrics only
    for flag, given in (("--metrics-level", metrics_level), ("--guardian", guardian), (executor, executor)):
        if given is not None and metrics is None:
            raise fail(ValueError(f"{flag} needs --metrics"), EXIT_USAGE)
    try:  # unknown metrics, no API key, bad weights (JudgeConfigError is a ValueError)
        weights = None if tool_weights is None else parse_weights(tool_weights)
        metric_list, classifier = (None, None) if metrics is None else _resolve(metrics, guardian, base_url,
                                                                                concurrency)
        the_judge = resolve_judge(judge, matcher, model=judge_model, base_url=base_url, concurrency=concurrency,
                                  cache_dir=cache_dir)  # the last two are the LLM judge's (--judge openai)
    except ValueError as exc:
        raise fail(exc, EXIT_USAGE) from exc
    trials = load_trials(input, inputs.format, inputs.loader_options())
    auto = read_only is not None and read_only.strip().lower() == "auto"
    named = None if read_only is None or auto else frozenset(n.strip() for n in read_only.split(",") if n.strip())
    ro = read_only_tools(trials) if auto else named or frozenset()
    instructor, level = logging.getLogger("instructor"), logging.getLogger("instructor").level
    instructor.setLevel(logging.CRITICAL)  # a failed attempt retried later is no error; failures left are counted
    try:
        with judging_progress(the_judge.name) as progress:
            result = score_trials(trials, judge=the_judge, threshold=threshold, tool_threshold=tool_threshold,
                                  require_tools=require_tools, prefer_benchmark=prefer_benchmark, matcher=matcher,
                                  read_only=ro, tool_weights=weights, progress=progress)
        frame = tool_scores_frame(trials, tool_threshold=tool_threshold, weights=weights, read_only=ro)
        # the second reading: the tools named with --read-only, else those the trials mark (labelled so)
        readings = tool_readings(trials, named, tool_threshold=tool_threshold, weights=weights)
        readings.attrs["validity"] = tool_validity(trials)  # syntactic accuracy (JSON Schema) per agent
    except JudgeConfigError as exc:  # the endpoint refused the key (JudgeAuthError): fix the setup, not the data
        raise fail(exc, EXIT_USAGE) from exc
    except Exception as exc:
        raise fail(exc, EXIT_FAILURE) from exc
    finally:
        instructor.setLevel(level)
    if out_path is not None:
        try:
            save_trials(result.trials, out_path)
        except OSError as exc:
            raise fail(exc, EXIT_FAILURE) from exc
        console.print(f"wrote {len(result.trials)} scored trials to {out_path}")
    summary = None if metric_list is None else _metrics(
        trials, metric_list, metrics_out or Path(f"{stem(input)}.metrics.jsonl"), ci.prob, level=metrics_level,
        judge=the_judge if hasattr(the_judge, "judge_prompt") else None,  # judged metrics need --judge openai
        guardian=classifier, tool_weights=weights, **run.keywords())
    print_score(input, result, frame, readings, tool_threshold, summary, as_json)
    if summary is not None:
        warn_judge_missing(summary)
    if result.judge_missing_share > max_missing:
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(result.judge_stats.get("missing_by_kind", {}).items()))
        raise fail(RuntimeError(
            f"{result.n_verdicts_missing} of {result.n_verdicts} judge verdicts are missing "
            f"({result.judge_missing_share:.1%}, more than --max-missing {max_missing:.0%})"
            f"{f': {kinds}' if kinds else ''}. Their trials are counted as missing, not failed; {_MISSING}."),
            EXIT_FAILURE)
    over = [] if summary is None else judge_missing_over(summary, max_missing)
    if over:
        raise fail(RuntimeError(f"metric judge verdicts missing, more than --max-missing {max_missing:.0%}: "
                                f"{'; '.join(over)}. Their rows are not applicable, not failed; {_MISSING}."),
                   EXIT_FAILURE)


def _resolve(metrics: str, guardian: str | None, base_url: str | None, concurrency: int) -> tuple[list[Any], Any]:
    """Return the metrics (those offering it use the guardian method with ``--guardian``) and the classifier."""
    from agentstats.metrics import resolve_metrics
    from agentstats.metrics.guardian import GuardianClassifier

    metric_list = resolve_metrics(metrics, prefer_method=None if guardian is None else "guardian")
    if guardian is not None and not any(m.method == "guardian" for m in metric_list):
        raise ValueError(f"--guardian: none of --metrics {metrics!r} has method guardian (the content_safety "
                         "risks and pii offer it)")
    return metric_list, None if guardian is None else GuardianClassifier(guardian, base_url=base_url,
                                                                         concurrency=concurrency)


def _metrics(trials: Any, metric_list: list[Any], path: Path, ci_prob: float, **options: Any) -> Any:
    """Compute the metrics, write the table, return the summary per agent; unreadable records exit 2 after writing.

    The summary's ``attrs["not_computed"]`` lists the metrics without any applicable row and why
    (:func:`agentstats.metrics.not_computed`).
    """
    from rich.markup import escape

    from agentstats.metrics import compute, not_computed, summarize_with_intervals, write_metrics

    try:
        frame = compute(trials, metric_list, errors="collect", **options)
        write_metrics(frame, path)
    except (ValueError, ImportError) as exc:  # ImportError: --executor ray without Ray installed
        raise fail(exc, EXIT_USAGE) from exc
    except OSError as exc:
        raise fail(exc, EXIT_FAILURE) from exc
    console.print(f"wrote {len(frame)} metric rows to {path}")
    problems = frame.attrs["errors"]
    if problems:
        for msg in problems[:20]:
            console.print(f"[red]input error:[/] {escape(msg)}", highlight=False)
        more = " (first 20 shown)" if len(problems) > 20 else ""
        raise fail(ValueError(f"{len(problems)} metric values could not be read{more}; their rows are in {path} "
                              "as not applicable"), EXIT_USAGE)
    summary = summarize_with_intervals(frame, ci_prob=ci_prob)
    summary.attrs["not_computed"] = not_computed(frame)
    return summary

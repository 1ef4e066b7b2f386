"""``agentstats score``: answers and tool calls of each trial, and each trial's outcome."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from agentstats.cli.common import (
    AgentColOpt,
    AgentOpt,
    BaseUrlOpt,
    FormatOpt,
    JudgeOpt,
    ModelOpt,
    RequireToolsOpt,
    SkipBadOpt,
    SuccessColOpt,
    TaskColOpt,
    ThresholdOpt,
    ToolThresholdOpt,
    clean,
    console,
    fail,
    loader_opts,
    out,
)


def score(
    input: Annotated[Path, typer.Argument(help="Trials file with answers / tool calls and ground truth.")],
    format: FormatOpt = "auto",
    judge: JudgeOpt = "deterministic",
    base_url: BaseUrlOpt = None,
    model: ModelOpt = None,
    matcher: Annotated[
        str,
        typer.Option(
            help="Deterministic matcher: auto (numeric for numeric expected answers, else normalized), exact, "
            "normalized, numeric, token_f1, contains."
        ),
    ] = "auto",
    threshold: ThresholdOpt = 0.7,
    tool_threshold: ToolThresholdOpt = 1.0,
    require_tools: RequireToolsOpt = False,
    prefer_benchmark: Annotated[
        bool,
        typer.Option(help="Keep a benchmark-given success/reward as the outcome (the scored one is only compared)."),
    ] = True,
    concurrency: Annotated[int, typer.Option(min=1, help="Judge requests in flight at once (--judge openai).")] = 16,
    cache_dir: Annotated[
        Path | None,
        typer.Option(help="Judge verdict cache (default: $AGENTSTATS_CACHE_DIR/judge or ~/.cache/agentstats/judge)."),
    ] = None,
    out_path: Annotated[
        Path | None, typer.Option("--out", help="Write the scored trials here (JSONL, .gz ok).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON instead of tables.")] = False,
    agent: AgentOpt = None,
    agent_col: AgentColOpt = None,
    task_col: TaskColOpt = None,
    success_col: SuccessColOpt = None,
    skip_bad: SkipBadOpt = False,
) -> None:
    """Score answers and tool calls of each trial (matchers or an LLM judge) and set each trial's outcome."""
    import logging

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from agentstats.io import load_trials, save_trials
    from agentstats.scoring.answers import MATCHERS
    from agentstats.scoring.judge import DeterministicJudge, JudgeConfigError, OpenAIJudge
    from agentstats.scoring.outcomes import score_trials
    from agentstats.scoring.summary import (
        judge_summary,
        tool_breakdown,
        tool_outcome_agreement,
        tool_scores_frame,
    )

    if matcher not in MATCHERS:
        raise fail(typer.BadParameter(f"--matcher must be one of {sorted(MATCHERS)}, got {matcher!r}"), 2)
    if judge == "deterministic":
        the_judge: Any = DeterministicJudge(matcher)
    elif judge == "openai":
        import os

        try:
            the_judge = OpenAIJudge(
                model or os.environ.get("AGENTSTATS_JUDGE_MODEL", "gpt-4o-mini"),
                base_url=base_url,
                concurrency=concurrency,
                cache_dir=cache_dir,
            )
        except JudgeConfigError as exc:
            raise fail(exc, 2) from exc
    else:
        raise fail(typer.BadParameter(f"--judge must be 'deterministic' or 'openai', got {judge!r}"), 2)

    with console.status(f"loading {input} ..."):
        try:
            trials = load_trials(input, format, **loader_opts(agent, agent_col, task_col, success_col, skip_bad))
        except (ValueError, OSError) as exc:
            raise fail(exc, 2) from exc

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
                trials,
                judge=the_judge,
                threshold=threshold,
                tool_threshold=tool_threshold,
                require_tools=require_tools,
                prefer_benchmark=prefer_benchmark,
                matcher=matcher,
                progress=on_progress,
            )
        frame = tool_scores_frame(trials, tool_threshold=tool_threshold)
    except Exception as exc:
        raise fail(exc, 1) from exc
    finally:
        ilog.setLevel(old_level)

    if out_path is not None:
        try:
            out_path.parent.mkdir(parents=True, exist_ok=True)
            save_trials(result.trials, out_path)
        except OSError as exc:
            raise fail(exc, 1) from exc
        console.print(f"wrote {len(result.trials)} scored trials to {out_path}")

    summ = result.summary()
    breakdown = tool_breakdown(frame)
    _, tool_agree = tool_outcome_agreement(frame)
    if as_json:
        payload = {
            "summary": {k: clean(v) for k, v in summ.items()},
            "judge": {str(r["item"]): clean(r["value"]) for _, r in judge_summary(result).iterrows()},
            "tool_breakdown": [{c: clean(v) for c, v in row.items()} for _, row in breakdown.iterrows()],
            "tool_vs_benchmark": {k: clean(v) for k, v in tool_agree.items()},
        }
        out.print_json(json.dumps(payload, default=str))
        return

    t = Table(title=f"{input.name}: scoring summary ({result.judge})")
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
        t.add_row(str(r["item"]), "unknown" if v is None else (f"{v:.4f}" if isinstance(v, float) else str(v)))
    agree = summ["agreement_with_benchmark"]
    t.add_row(
        "scored outcome agrees with benchmark",
        "n/a" if agree is None else f"{agree:.1%} of {summ['n_agreement']}",
    )
    if tool_agree["n"]:
        t.add_row(
            "trial-level tool pass vs benchmark",
            f"{tool_agree['agreement']:.1%} agree, kappa {tool_agree['kappa']:.3f} (n={tool_agree['n']})",
        )
    out.print(t)
    if breakdown.empty:
        out.print("no tool ground truth (expected tool calls): no tool breakdown")
        return
    bt = Table(title="tool-call correctness (mean per unit)")
    bt.add_column("component")
    for _, r in breakdown.iterrows():
        bt.add_column(f"{r['agent']}\n({r['level']})", justify="right")
    bt.add_row("units", *[str(n) for n in breakdown["n_units"]])
    for c in ["selection", "parameters", "sequence", "utilization", "overall", "precision", "recall", "f1"]:
        bt.add_row(c, *["-" if math.isnan(v) else f"{v:.3f}" for v in breakdown[c]])
    bt.add_row(f"passed (>= {tool_threshold:g})", *[f"{v:.1%}" for v in breakdown["share_passed"]])
    out.print(bt)

"""Command line: ``agentstats simulate | estimate | fit | score | report``.

A thin layer: every command calls library functions and formats their results; no statistics live here.
Errors in the input exit with status 2 and a message naming the file, line and field; other failures exit 1.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

app = typer.Typer(
    help="agentstats: honest pass@k / pass^k for AI agent evaluations.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
# Piped output (CI logs, files) gets wide tables instead of rich's 80-column default.
_WIDTH = None if sys.stdout.isatty() else 160
console = Console(stderr=True, width=None if sys.stderr.isatty() else 160)
out = Console(width=_WIDTH)

FormatOpt = Annotated[
    str,
    typer.Option(
        "--format",
        "-f",
        help="Input format: auto, jsonl (agentstats trials), tau_bench, metr (run tables), counts, fair_forge, "
        "fai_jsonl.",
    ),
]
KOpt = Annotated[
    str | None,
    typer.Option(
        "--k",
        help="k values: '1,2,4' or a range '1..8'. Default: estimate, 1 .. each agent's smallest trials per task; "
        "report, 1 .. the median trials per task (tasks with fewer than k trials are dropped for that k, and listed); "
        "fit, 1..8 (k beyond an agent's smallest trials per task is marked extrapolated).",
    ),
]
AgentColOpt = Annotated[str | None, typer.Option(help="Run tables: column holding the agent name.")]
TaskColOpt = Annotated[str | None, typer.Option(help="Run tables: column holding the task id.")]
SuccessColOpt = Annotated[str | None, typer.Option(help="Run tables: column holding 0/1 success.")]
AgentOpt = Annotated[str | None, typer.Option(help="Agent name for single-agent files (tau-bench).")]
SkipBadOpt = Annotated[
    bool,
    typer.Option(
        "--skip-bad", help="Skip malformed records (they are counted and listed) instead of stopping on them."
    ),
]


def parse_k(spec: str | None) -> list[int] | None:
    """Parse ``"1,2,4"`` or ``"1..8"`` (or a mix, ``"1..3,8"``) into a sorted list of positive ints."""
    if spec is None or spec.strip() == "":
        return None
    ks: set[int] = set()
    for part in spec.split(","):
        part = part.strip()
        try:
            if ".." in part:
                lo, hi = part.split("..", 1)
                ks.update(range(int(lo), int(hi) + 1))
            elif "-" in part[1:]:
                lo, hi = part.split("-", 1)
                ks.update(range(int(lo), int(hi) + 1))
            else:
                ks.add(int(part))
        except ValueError:
            raise typer.BadParameter(f"--k: cannot read {part!r}; use e.g. 1,2,4 or 1..8") from None
    if not ks or min(ks) < 1:
        raise typer.BadParameter("--k: values must be positive integers")
    return sorted(ks)


def _loader_opts(
    agent: str | None,
    agent_col: str | None,
    task_col: str | None,
    success_col: str | None,
    skip_bad: bool = False,
):
    opts: dict[str, Any] = {"on_error": "skip"} if skip_bad else {}
    if agent is not None:
        opts["agent"] = agent
    if agent_col is not None:
        opts["agent_col"] = agent_col
    if task_col is not None:
        opts["task_col"] = task_col
    if success_col is not None:
        opts["success_col"] = success_col
    return opts


def _fail(exc: BaseException, code: int = 1) -> typer.Exit:
    from rich.markup import escape

    console.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False, markup=True, soft_wrap=True)
    return typer.Exit(code)


def _load_counts(path: Path, fmt: str, opts: dict[str, Any]):
    from agentstats.io import load_counts_any

    import warnings

    from agentstats.io import TrialLoadWarning

    with console.status(f"loading {path} ..."):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", TrialLoadWarning)  # said below, once
                counts = load_counts_any(path, format=fmt, **opts)
        except (ValueError, OSError) as exc:
            raise _fail(exc, 2) from exc
    skipped = counts.attrs.get("skipped") or []
    if skipped:
        from rich.markup import escape

        console.print(f"[yellow]skipped {len(skipped)} problem(s) in {path}[/], first: {escape(str(skipped[0]))}")
    return counts


def _clean(v: Any) -> Any:
    if isinstance(v, float) and math.isnan(v):
        return None
    if hasattr(v, "item"):
        return _clean(v.item())
    return v


@app.command()
def simulate(
    out_path: Annotated[Path, typer.Option("--out", help="Where to write the trials JSONL.")] = Path(
        "data/example_trials.jsonl"
    ),
    n_tasks: Annotated[int, typer.Option(help="Tasks.")] = 40,
    n_trials: Annotated[int, typer.Option(help="Trials per (agent, task).")] = 5,
    seed: Annotated[int, typer.Option(help="Random seed.")] = 20261130,
    truth: Annotated[
        Path | None, typer.Option(help="Also write the true per-cell success probabilities (CSV).")
    ] = None,
) -> None:
    """Draw example trials (3 agents x tasks x trials) from the crossed logit-normal model with known truth."""
    from agentstats.io import save_trials
    from agentstats.simulate import simulate_trials

    runs = simulate_trials(n_tasks=n_tasks, n_trials=n_trials, seed=seed)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    save_trials(runs.trials, out_path)
    console.print(f"wrote {len(runs.trials)} trials to {out_path}")
    if truth is not None:
        runs.p.to_csv(truth, float_format="%.6f")
        console.print(f"wrote true success probabilities to {truth}")


@app.command()
def estimate(
    input: Annotated[Path, typer.Argument(help="Trials or counts file (JSONL, tau-bench JSON, CSV, ...).")],
    format: FormatOpt = "auto",
    k: KOpt = None,
    n_boot: Annotated[int, typer.Option(help="Task-cluster bootstrap resamples.")] = 2000,
    seed: Annotated[int, typer.Option(help="Bootstrap seed.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON records instead of a table.")] = False,
    agent: AgentOpt = None,
    agent_col: AgentColOpt = None,
    task_col: TaskColOpt = None,
    success_col: SuccessColOpt = None,
    skip_bad: SkipBadOpt = False,
) -> None:
    """Per-agent unbiased pass@k and pass^k with task-cluster bootstrap 95% intervals."""
    from agentstats.estimators import suite_pass_k

    counts = _load_counts(input, format, _loader_opts(agent, agent_col, task_col, success_col, skip_bad))
    with console.status("estimating ..."):
        try:
            table = suite_pass_k(counts, k=parse_k(k), n_boot=n_boot, seed=seed)
        except ValueError as exc:
            raise _fail(exc, 2) from exc
    cols = [
        "agent",
        "k",
        "n_tasks",
        "pass_at_k",
        "pass_at_k_ci_low",
        "pass_at_k_ci_high",
        "pass_hat_k",
        "pass_hat_k_ci_low",
        "pass_hat_k_ci_high",
    ]
    if as_json:
        records = [{c: _clean(row[c]) for c in cols} for _, row in table.iterrows()]
        out.print_json(json.dumps(records))
        return
    t = Table(title=f"{input.name}: unbiased estimators, 95% task-cluster bootstrap intervals")
    for c in ["agent", "k", "tasks", "pass@k", "95% interval", "pass^k", "95% interval"]:
        t.add_column(c, justify="left" if c == "agent" else "right")
    for _, r in table.iterrows():
        t.add_row(
            str(r["agent"]),
            str(r["k"]),
            str(r["n_tasks"]),
            f"{r['pass_at_k']:.3f}",
            f"[{r['pass_at_k_ci_low']:.3f}, {r['pass_at_k_ci_high']:.3f}]",
            f"{r['pass_hat_k']:.3f}",
            f"[{r['pass_hat_k_ci_low']:.3f}, {r['pass_hat_k_ci_high']:.3f}]",
        )
    out.print(t)


JudgeOpt = Annotated[
    str,
    typer.Option(
        "--judge",
        help="Answer judge: deterministic (text/number matchers, no network) or openai (LLM judge through "
        "instructor + any OpenAI-compatible endpoint; API key from $OPENAI_API_KEY).",
    ),
]
BaseUrlOpt = Annotated[
    str | None,
    typer.Option(
        "--base-url", help="OpenAI-compatible base URL for --judge openai (default: $OPENAI_BASE_URL or OpenAI)."
    ),
]
ModelOpt = Annotated[
    str | None,
    typer.Option("--model", help="Judge model for --judge openai (default: $AGENTSTATS_JUDGE_MODEL or gpt-4o-mini)."),
]
ThresholdOpt = Annotated[
    float, typer.Option(min=0.0, max=1.0, help="An answer is correct when its score >= threshold.")
]
ToolThresholdOpt = Annotated[
    float,
    typer.Option(
        min=0.0,
        max=1.0,
        help="Tool calls pass when their overall score >= this (1.0: same tools as expected, no extra calls, "
        "every argument matched).",
    ),
]
RequireToolsOpt = Annotated[
    bool, typer.Option("--require-tools", help="A trial succeeds only if its tool calls pass too.")
]


@app.command()
def report(
    input: Annotated[Path, typer.Argument(help="Trials or counts file.")],
    format: FormatOpt = "auto",
    k: KOpt = None,
    out_dir: Annotated[Path, typer.Option("--out", help="Output folder for .ipynb and .html.")] = Path(
        "reports"
    ),
    name: Annotated[str | None, typer.Option(help="Report file stem (default: input file stem).")] = None,
    seed: Annotated[int, typer.Option(help="Seed for bootstrap and sampling.")] = 0,
    bayes: Annotated[bool, typer.Option(help="Include the hierarchical Bayesian section.")] = True,
    draws: Annotated[int, typer.Option(help="Posterior draws per chain (Bayesian section).")] = 1000,
    bayes_model: Annotated[
        str,
        typer.Option(help="Statistical model of the Bayesian section (as `agentstats fit --model`; --model here "
                     "names the judge's LLM)."),
    ] = "zoi_beta_binomial",
    population: Annotated[
        str, typer.Option(help="Bayesian pass^k for these tasks (observed) or for new tasks (new).")
    ] = "observed",
    target_accept: Annotated[
        float | None, typer.Option(help="NUTS target acceptance rate of the Bayesian fit (default per model).")
    ] = None,
    kernel: Annotated[str, typer.Option(help="Jupyter kernel name.")] = "python3",
    agent: AgentOpt = None,
    agent_col: AgentColOpt = None,
    task_col: TaskColOpt = None,
    success_col: SuccessColOpt = None,
    judge: JudgeOpt = "deterministic",
    base_url: BaseUrlOpt = None,
    model: ModelOpt = None,
    threshold: ThresholdOpt = 0.7,
    tool_threshold: ToolThresholdOpt = 1.0,
    require_tools: RequireToolsOpt = False,
    skip_bad: SkipBadOpt = False,
) -> None:
    """Execute the report notebook on INPUT (papermill) and export it to HTML (nbconvert).

    Unscored trials (answers and tool calls without success/reward) are scored first, with --judge.
    """
    from agentstats.report import run_report

    if not input.exists():
        raise _fail(FileNotFoundError(f"{input}: no such file"), 2)
    params: dict[str, Any] = {
        "input_path": str(input.resolve()),
        "input_format": format,
        "k_values": parse_k(k),
        "seed": seed,
        "run_bayes": bayes,
        "draws": draws,
        "bayes_model": bayes_model,
        "population": population,
        "target_accept": target_accept,
        "loader_options": _loader_opts(agent, agent_col, task_col, success_col, skip_bad),
        "judge": judge,
        "judge_model": model,
        "judge_base_url": base_url,
        "threshold": threshold,
        "tool_threshold": tool_threshold,
        "require_tools": require_tools,
    }
    if judge not in ("deterministic", "openai"):
        raise _fail(typer.BadParameter(f"--judge must be 'deterministic' or 'openai', got {judge!r}"), 2)
    if population not in ("observed", "new"):
        raise _fail(typer.BadParameter(f"--population must be 'observed' or 'new', got {population!r}"), 2)
    from agentstats.models.builders import MODEL_NAMES

    if bayes_model not in MODEL_NAMES:
        raise _fail(typer.BadParameter(f"--bayes-model must be one of {MODEL_NAMES}, got {bayes_model!r}"), 2)
    try:
        paths = run_report(params, out_dir=out_dir, name=name or _stem(input), kernel_name=kernel)
    except Exception as exc:  # papermill wraps cell errors; show the cell's message
        raise _fail(exc, 1) from exc
    console.print(f"report: {paths.html}")
    console.print(f"notebook: {paths.notebook}")


@app.command()
def score(
    input: Annotated[Path, typer.Argument(help="Trials file with answers / tool calls and ground truth.")],
    format: FormatOpt = "auto",
    judge: JudgeOpt = "deterministic",
    base_url: BaseUrlOpt = None,
    model: ModelOpt = None,
    matcher: Annotated[
        str, typer.Option(help="Deterministic matcher: auto (numeric for numeric expected answers, else normalized), exact, "
            "normalized, numeric, token_f1, contains.")
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
        raise _fail(typer.BadParameter(f"--matcher must be one of {sorted(MATCHERS)}, got {matcher!r}"), 2)
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
            raise _fail(exc, 2) from exc
    else:
        raise _fail(typer.BadParameter(f"--judge must be 'deterministic' or 'openai', got {judge!r}"), 2)

    with console.status(f"loading {input} ..."):
        try:
            trials = load_trials(input, format, **_loader_opts(agent, agent_col, task_col, success_col, skip_bad))
        except (ValueError, OSError) as exc:
            raise _fail(exc, 2) from exc

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
        raise _fail(exc, 1) from exc
    finally:
        ilog.setLevel(old_level)

    if out_path is not None:
        try:
            out_path.parent.mkdir(parents=True, exist_ok=True)
            save_trials(result.trials, out_path)
        except OSError as exc:
            raise _fail(exc, 1) from exc
        console.print(f"wrote {len(result.trials)} scored trials to {out_path}")

    summ = result.summary()
    breakdown = tool_breakdown(frame)
    _, tool_agree = tool_outcome_agreement(frame)
    if as_json:
        payload = {
            "summary": {k: _clean(v) for k, v in summ.items()},
            "judge": {str(r["item"]): _clean(r["value"]) for _, r in judge_summary(result).iterrows()},
            "tool_breakdown": [{c: _clean(v) for c, v in row.items()} for _, row in breakdown.iterrows()],
            "tool_vs_benchmark": {k: _clean(v) for k, v in tool_agree.items()},
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


@app.command()
def fit(
    input: Annotated[Path, typer.Argument(help="Trials or counts file.")],
    format: FormatOpt = "auto",
    k: KOpt = None,
    population: Annotated[
        str, typer.Option(help="observed: these tasks; new: new tasks from the same distribution.")
    ] = "observed",
    model: Annotated[
        str,
        typer.Option(
            help="zoi_beta_binomial (default; per-cell term as a Beta-Binomial likelihood with a share of "
            "always/never-succeeding cells), beta_binomial (without that share), partial_pooling (logit-normal "
            "per-cell term), additive (no per-cell term) or no_pooling."
        ),
    ] = "zoi_beta_binomial",
    sampler: Annotated[str | None, typer.Option(help="nutpie, numpyro or pymc (default: fastest installed).")] = None,
    draws: Annotated[int, typer.Option(help="Draws per chain.")] = 1000,
    tune: Annotated[int, typer.Option(help="Tuning steps per chain.")] = 1000,
    chains: Annotated[int, typer.Option(help="Chains.")] = 4,
    seed: Annotated[int, typer.Option(help="Random seed.")] = 0,
    target_accept: Annotated[
        float | None,
        typer.Option(help="NUTS target acceptance rate (default per model, see docs/models.md); raise it, e.g. to "
                     "0.99, when the diagnostics report divergences."),
    ] = None,
    ci_prob: Annotated[float, typer.Option(help="Credible interval probability.")] = 0.95,
    hdi: Annotated[bool, typer.Option("--hdi", help="Highest-density instead of equal-tailed intervals.")] = False,
    strict: Annotated[
        bool, typer.Option("--strict", help="Exit with status 3 when diagnostics fail (R-hat, ESS, divergences).")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
    agent: AgentOpt = None,
    agent_col: AgentColOpt = None,
    task_col: TaskColOpt = None,
    success_col: SuccessColOpt = None,
    skip_bad: SkipBadOpt = False,
) -> None:
    """Fit the hierarchical model and print posterior pass@k / pass^k per agent, with diagnostics."""
    import warnings

    from agentstats.models import ConvergenceWarning, diagnose
    from agentstats.models import fit as fit_model
    from agentstats.posterior import posterior_pass_at_k, posterior_pass_hat_k, summarize_pass_k

    if population not in ("observed", "new"):
        raise _fail(typer.BadParameter("--population must be 'observed' or 'new'"), 2)
    counts = _load_counts(input, format, _loader_opts(agent, agent_col, task_col, success_col, skip_bad))
    ks = parse_k(k) or list(range(1, 9))
    with console.status(f"fitting {model} ({chains} chains x {draws} draws; first run compiles) ..."):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)  # reported below instead
                dt = fit_model(
                    counts, model=model, sampler=sampler, draws=draws, tune=tune, chains=chains, random_seed=seed,
                    target_accept=target_accept,
                )
        except (ValueError, ImportError) as exc:
            raise _fail(exc, 2) from exc
    diag = diagnose(dt)
    summary = summarize_pass_k(
        [posterior_pass_at_k(dt, ks, population=population), posterior_pass_hat_k(dt, ks, population=population)],
        ci_prob=ci_prob,
        ci_kind="hdi" if hdi else "eti",
    )
    if as_json:
        records = [
            {
                "agent": r["agent"],
                "k": int(r["k"]),
                "quantity": r["quantity"],
                "population": r["population"],
                "mean": _clean(r["mean"]),
                "median": _clean(r["median"]),
                "ci_low": _clean(r["ci_low"]),
                "ci_high": _clean(r["ci_high"]),
                "ci_kind": r["ci_kind"],
                "extrapolated": bool(r["extrapolated"]),
            }
            for _, r in summary.iterrows()
        ]
        diag_json = {
            "ok": bool(diag.ok),
            "divergences": int(diag.divergences),
            "problems": list(diag.problems),
            "variables": [{c: _clean(v) for c, v in row.items()} for _, row in diag.table.iterrows()],
            "sampler": dt.attrs.get("sampler"),
            "model": dt.attrs.get("agentstats_model"),
            "target_accept": dt.attrs.get("target_accept"),
            "chains": dt.attrs.get("chains"),
            "draws": dt.attrs.get("draws"),
            "random_seed": dt.attrs.get("random_seed"),
        }
        out.print_json(json.dumps({"summary": records, "diagnostics": diag_json}))
    else:
        kind = "HDI" if hdi else "equal-tailed"
        t = Table(title=f"{input.name}: posterior ({model}, {population} tasks), {ci_prob:.0%} {kind} credible intervals")
        for c in ["agent", "k", "pass@k (interval)", "pass^k (interval)", "note"]:
            t.add_column(c, justify="left" if c in ("agent", "note") else "right")
        wide = summary.pivot_table(
            index=["agent", "k"], columns="quantity", values=["mean", "ci_low", "ci_high"], aggfunc="first"
        )
        extra = summary.groupby(["agent", "k"])["extrapolated"].any()
        for (a, kk), r in wide.iterrows():
            cells = [
                f"{r[('mean', q)]:.3f} [{r[('ci_low', q)]:.3f}, {r[('ci_high', q)]:.3f}]"
                for q in ("pass_at_k", "pass_hat_k")
            ]
            t.add_row(str(a), str(kk), *cells, "extrapolated" if extra[(a, kk)] else "")
        out.print(t)
        out.print(
            f"sampler {dt.attrs.get('sampler')}, {dt.attrs.get('chains')} chains x {dt.attrs.get('draws')} draws, "
            f"target_accept {dt.attrs.get('target_accept')}, divergences {diag.divergences}"
        )
        out.print(str(diag))
    if not diag.ok:
        console.print("[bold yellow]warning:[/] diagnostics failed: " + "; ".join(diag.problems))
        if strict:
            raise typer.Exit(3)


def _stem(path: Path) -> str:
    name = path.name
    for suffix in (".gz", ".jsonl", ".json", ".csv", ".parquet"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return name


def main() -> None:  # pragma: no cover - console entry point
    app()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(app())

"""``agentstats fit``: the hierarchical model's posterior pass@k / pass^k, per-agent consistency and diagnostics."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from rich.table import Table

from agentstats.cli.common import (
    UNDER_HALF_MARK,
    AgentColOpt,
    AgentOpt,
    AgentsOpt,
    FitKOpt,
    FormatOpt,
    RunOpt,
    SkipBadOpt,
    SuccessColOpt,
    TaskColOpt,
    check_interval_options,
    check_k,
    clean,
    console,
    deprecated_alias,
    fail,
    load_counts,
    loader_opts,
    out,
    parse_k,
)
from agentstats.model_names import DEFAULT_DISPERSION, DEFAULT_MODEL, DISPERSION_NAMES, MODEL_NAMES

#: Note of a re-run prediction at a k no task reaches with its re-run trials.
RERUN_UNREACHABLE = "k > n + N on every task: the unbiased estimator after the re-run needs n + N >= k trials"


def _records(summary: Any, interval: str = "credible") -> list[dict[str, Any]]:
    rows = []
    for _, r in summary.iterrows():
        row = {
            "interval": interval,
            "agent": r["agent"],
            "k": int(r["k"]),
            "quantity": r["quantity"],
            "population": r["population"],
            "mean": clean(r["mean"]),
            "median": clean(r["median"]),
            "ci_low": clean(r["ci_low"]),
            "ci_high": clean(r["ci_high"]),
            "ci_kind": r["ci_kind"],
            "ci_prob": clean(r["ci_prob"]),
            "extrapolated": clean(r["extrapolated"]),
        }
        if "n_tasks" in summary.columns:  # the tasks behind each value, of the input's tasks
            row["n_tasks"] = int(r["n_tasks"])
            row["n_tasks_suite"] = int(r["n_tasks_suite"])
            row["under_half"] = bool(r["under_half"])
        if interval == "posterior predictive":  # a re-run prediction: why a value is missing
            row["note"] = RERUN_UNREACHABLE if int(r["n_tasks"]) == 0 else None
            if int(r["n_tasks"]) == 0:
                row["extrapolated"] = None
        rows.append(row)
    return rows


def _checkpoint_text(check: dict[str, Any]) -> str:
    """One entry of a fit's ``attrs["checkpoints"]`` in words: a stopping-rule checkpoint or an abandoned attempt."""
    if check.get("abandoned"):
        return (
            f"first attempt abandoned after {check['draws']} draws: {check.get('divergences', '?')} divergent "
            f"transitions with the centred per-agent dispersion; {check.get('reason', 'refitted')}"
        )
    stopped = " (stopped)" if check["passed"] else ""
    return f"{check['draws']}: R-hat {check['max_r_hat']:.3f}, ESS {check['min_ess']:.0f}{stopped}"


def _p(x: float) -> str:
    """Format a probability with 3 decimals, never as an exact 0 or 1 it is not (``<0.001``, ``>0.999``)."""
    if x != x:  # NaN
        return "n/a"
    if 0.0 < x < 0.0005:
        return "<0.001"
    if 0.9995 <= x < 1.0:
        return ">0.999"
    return f"{x:.3f}"


def _table(title: str, summary: Any) -> Table:
    """One row per agent and k: tasks behind the value (of the input's, ``*`` under half), both quantities, a note."""
    t = Table(title=title)
    for c in ["agent", "k", "tasks", "pass@k (interval)", "pass^k (interval)", "note"]:
        t.add_column(c, justify="left" if c in ("agent", "note") else "right")
    wide = summary.pivot_table(
        index=["agent", "k"], columns="quantity", values=["mean", "ci_low", "ci_high"], aggfunc="first", sort=False,
        dropna=False,  # a k without a value (a re-run that cannot reach it) is shown and explained, not dropped
    )
    extra = summary.groupby(["agent", "k"], sort=False)["extrapolated"].max()
    tasks = summary.groupby(["agent", "k"], sort=False)["n_tasks"].min()
    under = summary.groupby(["agent", "k"], sort=False)["under_half"].any()
    suite = int(summary["n_tasks_suite"].iloc[0]) if len(summary) else 0
    rerun = bool((summary["population"] == "rerun").any())
    for (a, kk), r in wide.iterrows():
        if (a, kk) not in extra.index:
            continue
        cells = [
            f"{_p(r[('mean', q)])} [{_p(r[('ci_low', q)])}, {_p(r[('ci_high', q)])}]"
            if r[("mean", q)] == r[("mean", q)] else "n/a"
            for q in ("pass_at_k", "pass_hat_k")
        ]
        share = float(extra[(a, kk)])
        note = f"extrapolated: {share:.0%} of tasks have < {kk} trials" if share > 0 else ""
        behind = int(tasks[(a, kk)])
        if behind == 0:
            note = "k > n + N on every task: not computable"
        elif rerun and behind < suite and not note:
            note = f"{suite - behind} tasks left out at this k (n + N < {kk}, or no recorded trial)"
        mark = f" {UNDER_HALF_MARK}" if under[(a, kk)] else ""
        t.add_row(str(a), str(kk), f"{behind}/{suite}{mark}", *cells, note)
    return t


def _with_tasks(summary: Any, counts: Any) -> Any:
    """Return ``summary`` with the tasks behind each value and the input's tasks.

    ``n_tasks``, where absent: the agent's tasks with a recorded trial, which every posterior value averages over;
    ``n_tasks_suite``: the tasks in the input; ``under_half``: ``n_tasks`` below half of them.
    """
    if "n_tasks" not in summary.columns:
        per_agent = counts.loc[counts["n"] > 0].groupby("agent")["task_id"].nunique()
        summary = summary.assign(n_tasks=summary["agent"].map(per_agent).fillna(0).astype(int))
    suite = int(counts["task_id"].nunique())
    return summary.assign(n_tasks_suite=suite, under_half=summary["n_tasks"] < suite / 2)


def _judge_calibration(path: Path | None, metric: str | None) -> Any:
    """Return the chosen metric's calibration (``--judge-calibration``, ``--judge-metric``); None without a file."""
    if path is None:
        if metric is not None:
            raise fail(typer.BadParameter("--judge-metric needs --judge-calibration"), 2)
        return None
    from agentstats.calibration import calibrate
    from agentstats.io.loaders import load

    try:
        report = calibrate(load(path, format="calibration"))
        if metric is None:
            if len(report.metrics) != 1:
                raise ValueError(f"{path} calibrates {sorted(report.metrics)}: choose one with --judge-metric")
            metric = next(iter(report.metrics))
        chosen = report[metric]
        _ = chosen.judge_error  # an ordinal metric without threshold, a set without passes or fails: say it now
    except (ValueError, KeyError, OSError) as exc:
        raise fail(ValueError(str(exc).strip('"')), 2) from exc
    return chosen


def fit(
    input: Annotated[Path, typer.Argument(help="Trials or counts file.")],
    format: FormatOpt = "auto",
    k: FitKOpt = None,
    population: Annotated[
        str, typer.Option(help="observed: these tasks; new: new tasks from the same task population.")
    ] = "observed",
    bayes_model: Annotated[
        str,
        typer.Option(
            "--bayes-model",
            help=f"Statistical model: {', '.join(MODEL_NAMES)} (default {DEFAULT_MODEL}: a Beta per agent x task "
            "cell with a share of always/never-succeeding cells; docs/models.md).",
        ),
    ] = DEFAULT_MODEL,
    old_model: Annotated[str | None, typer.Option("--model", hidden=True, help="Deprecated: --bayes-model.")] = None,
    dispersion: Annotated[
        str,
        typer.Option(help="Within-cell dispersion: agent (each agent its own consistency, pooled) or shared."),
    ] = DEFAULT_DISPERSION,
    sampler: Annotated[str | None, typer.Option(help="nutpie, numpyro or pymc (default: fastest installed).")] = None,
    draws: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Draws per chain (default at most 2000; 1500 when every agent has 250+ cells of 4+ trials; "
            "from 5000 cells on the fit stops at the first of 500, 750, ... draws where it has converged).",
        ),
    ] = None,
    tune: Annotated[
        int | None,
        typer.Option(min=1, help="Tuning steps per chain (default 1000; 300 with nutpie for those many-cell agents)."),
    ] = None,
    chains: Annotated[int, typer.Option(min=1, help="Chains.")] = 4,
    seed: Annotated[int, typer.Option(help="Random seed.")] = 0,
    target_accept: Annotated[
        float | None,
        typer.Option(
            help="NUTS target acceptance rate (default per model, see docs/models.md); raise it, e.g. to 0.99, when "
            "the diagnostics report divergences."
        ),
    ] = None,
    rerun: Annotated[
        int | None,
        typer.Option(
            min=0,
            help="Also print the posterior predictive interval of the unbiased pass@k / pass^k you would compute "
            "after running N more trials per task (what a re-run of the benchmark should land in).",
        ),
    ] = None,
    ci_prob: Annotated[float, typer.Option(help="Credible interval probability.")] = 0.95,
    hdi: Annotated[bool, typer.Option("--hdi", help="Highest-density instead of equal-tailed intervals.")] = False,
    strict: Annotated[
        bool, typer.Option("--strict", help="Exit with status 3 when diagnostics fail (R-hat, ESS, divergences).")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
    judge_calibration: Annotated[
        Path | None,
        typer.Option(
            help="Calibration set of the judge behind the outcomes (JSONL: item_id, metric, verdict, gold; "
            "`agentstats calibrate`): the outcomes are then modelled as the judge's noisy verdicts and pass@k / "
            "pass^k are of the true outcome (docs/judge.md).",
        ),
    ] = None,
    judge_metric: Annotated[
        str | None,
        typer.Option(help="Metric of the calibration set to use (needed when it holds several)."),
    ] = None,
    agent: AgentOpt = None,
    agent_col: AgentColOpt = None,
    task_col: TaskColOpt = None,
    success_col: SuccessColOpt = None,
    skip_bad: SkipBadOpt = False,
    agents: AgentsOpt = None,
    run: RunOpt = None,
) -> None:
    """Fit the hierarchical model; print posterior pass@k / pass^k and consistency per agent, and the diagnostics."""
    import warnings

    from agentstats.models import ConvergenceWarning, diagnose
    from agentstats.models import fit as fit_model
    from agentstats.models.fit import STOP_ESS_MIN
    from agentstats.posterior import consistency, posterior_pass_k, predict_rerun, summarize_pass_k

    bayes_model = deprecated_alias(bayes_model, DEFAULT_MODEL, old_model, "--model", "--bayes-model", "fit")
    if population not in ("observed", "new"):
        raise fail(typer.BadParameter("--population must be 'observed' or 'new'"), 2)
    if bayes_model not in MODEL_NAMES:
        raise fail(typer.BadParameter(f"--bayes-model must be one of {', '.join(MODEL_NAMES)}, got {bayes_model!r}"), 2)
    if dispersion not in DISPERSION_NAMES:
        raise fail(
            typer.BadParameter(f"--dispersion must be one of {', '.join(DISPERSION_NAMES)}, got {dispersion!r}"), 2
        )
    check_interval_options(ci_prob=ci_prob)
    ks = parse_k(k) or list(range(1, 9))
    calibration = _judge_calibration(judge_calibration, judge_metric)
    counts = load_counts(input, format, loader_opts(agent, agent_col, task_col, success_col, skip_bad, agents, run))
    check_k(ks, counts, "fit", str(input))
    kind: Literal["eti", "hdi"] = "hdi" if hdi else "eti"
    with console.status(f"fitting {bayes_model} ({chains} chains; the first run compiles) ..."):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)  # reported below instead
                dt = fit_model(
                    counts, bayes_model, dispersion=None if bayes_model in ("additive", "no_pooling") else dispersion,
                    sampler=sampler, draws=draws, tune=tune, chains=chains, random_seed=seed,
                    target_accept=target_accept, **({"judge_calibration": calibration} if calibration else {}),
                )
        except (ValueError, ImportError) as exc:
            raise fail(exc, 2) from exc
    diag = diagnose(dt)
    pop: Literal["observed", "new"] = "new" if population == "new" else "observed"
    summary = _with_tasks(
        summarize_pass_k(posterior_pass_k(dt, ks, population=pop), ci_prob=ci_prob, ci_kind=kind), counts
    )
    cons = consistency(counts, dt, ci_prob=ci_prob, ci_kind=kind) if bayes_model != "no_pooling" else None
    rerun_summary = None
    if rerun is not None:
        # n_tasks: tasks with n + N >= k, per (agent, k)
        rerun_summary = _with_tasks(summarize_pass_k(predict_rerun(dt, rerun, ks), ci_prob=ci_prob, ci_kind=kind),
                                    counts)
    if as_json:
        diag_json = {
            "ok": bool(diag.ok),
            "divergences": int(diag.divergences),
            "problems": list(diag.problems),
            "variables": [{c: clean(v) for c, v in row.items()} for _, row in diag.table.iterrows()],
            "sampler": dt.attrs.get("sampler"),
            "model": dt.attrs.get("agentstats_model"),
            "dispersion": dt.attrs.get("dispersion"),
            "target_accept": dt.attrs.get("target_accept"),
            "chains": dt.attrs.get("chains"),
            "draws": dt.attrs.get("draws"),
            "tune": dt.attrs.get("tune"),
            "draws_max": dt.attrs.get("draws_max"),
            "checkpoints": json.loads(dt.attrs.get("checkpoints") or "[]"),
            "random_seed": dt.attrs.get("random_seed"),
        }
        payload: dict[str, Any] = {"summary": _records(summary), "diagnostics": diag_json}
        if cons is not None:
            payload["consistency"] = [{c: clean(v) for c, v in row.items()} for _, row in cons.iterrows()]
        if calibration is not None:
            payload["judge_calibration"] = calibration.as_record()
        if rerun_summary is not None:
            payload["rerun"] = {"n_future": rerun, "summary": _records(rerun_summary, "posterior predictive")}
        out.print_json(json.dumps(payload))
    else:
        name = "HDI" if hdi else "equal-tailed"
        out.print(
            _table(
                f"{input.name}: posterior ({bayes_model}, {population} tasks), {ci_prob:.0%} {name} credible intervals",
                summary,
            )
        )
        under = [t for t in (summary, rerun_summary) if t is not None and t["under_half"].any()]
        out.print(
            "tasks: the tasks behind each value / the tasks in the input (posterior: the agent's tasks with a recorded "
            "trial; re-run: those with n + N >= k)"
            + (f"; {UNDER_HALF_MARK} under half of them: read with care." if under else ".")
        )
        if cons is not None:
            ct = Table(title="consistency per agent: correlation of two trials on one task (icc_cell)")
            for c in ("agent", "tasks", "flip share", "icc_anova (data)", "icc_cell (model, interval)"):
                ct.add_column(c, justify="left" if c == "agent" else "right")
            anova_missing = False
            for _, r in cons.iterrows():
                model_icc = (
                    f"{r['icc_cell']:.3f} [{r['icc_cell_low']:.3f}, {r['icc_cell_high']:.3f}]"
                    if r["icc_cell_estimable"]
                    else "not estimable (no within-cell term)"
                )
                anova = float(r["icc_anova"])
                anova_missing |= anova != anova
                ct.add_row(str(r["agent"]), str(r["n_tasks"]), f"{r['flip_share']:.3f}",
                           f"{anova:.3f}" if anova == anova else "not estimable", model_icc)
            out.print(ct)
            if anova_missing:
                out.print("icc_anova not estimable: fewer than two tasks with trials, or every outcome the same "
                          "(no variance to split).")
        if rerun_summary is not None:
            out.print(
                _table(
                    f"predicted unbiased estimates from the recorded trials plus {rerun} more per task "
                    f"({ci_prob:.0%} posterior predictive intervals)",
                    rerun_summary,
                )
            )
            beyond = sorted({int(kk) for kk in rerun_summary.loc[rerun_summary["n_tasks"] == 0, "k"]})
            if beyond:
                out.print(
                    f"note: k = {', '.join(map(str, beyond))} exceeds n + N (recorded plus {rerun} re-run trials) on "
                    "every task: the predicted unbiased estimate needs n + N >= k trials, so there is none (the "
                    "posterior table above extrapolates to any k)."
                )
        out.print(
            f"model {dt.attrs.get('agentstats_model')} (dispersion {dt.attrs.get('dispersion')}), sampler "
            f"{dt.attrs.get('sampler')}, {dt.attrs.get('chains')} chains x {dt.attrs.get('tune')} tuning + "
            f"{dt.attrs.get('draws')} draws, target_accept {dt.attrs.get('target_accept')}, divergences "
            f"{diag.divergences}"
        )
        checks = json.loads(dt.attrs.get("checkpoints") or "[]")
        for c in checks:
            if c.get("abandoned"):
                out.print(_checkpoint_text(c))
        checks = [c for c in checks if not c.get("abandoned")]
        if checks:
            said = "; ".join(_checkpoint_text(c) for c in checks)
            out.print(
                f"until converged (at most {dt.attrs.get('draws_max')} draws; stop at the first checkpoint with "
                f"R-hat <= 1.01 and bulk/tail ESS >= {STOP_ESS_MIN}): {said}"
            )
        if calibration is not None:
            post = dt["posterior"]
            out.print(
                f"judge calibration ({calibration.metric}, {calibration.n_items} items): sensitivity "
                f"{float(post['judge_sensitivity'].mean()):.3f}, specificity "
                f"{float(post['judge_specificity'].mean()):.3f} (posterior means, estimated jointly); pass@k / "
                "pass^k above are of the true outcome"
            )
        out.print(str(diag))
    if not diag.ok:
        console.print("[bold yellow]warning:[/] diagnostics failed: " + "; ".join(diag.problems))
        if strict:
            raise typer.Exit(3)

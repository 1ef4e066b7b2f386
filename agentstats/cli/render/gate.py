"""What ``agentstats gate`` and ``agentstats loop`` print: metric tables, decisions, triggers and where things went.

The commands decide and keep their records through the library (:mod:`agentstats.gating`, :mod:`agentstats.optimize`)
and hand them here; nothing here computes a statistic or a decision.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rich.markup import escape
from rich.table import Table

from agentstats._util.markup import md_text
from agentstats.cli.common import console, out
from agentstats.gating import GateDecision, MetricResult, no_failure_text
from agentstats.gating.record import rules_lines

__all__ = ["gate_markdown", "print_gate", "print_loop"]


def _fmt(x: float | None, digits: int = 3) -> str:
    return "" if x is None else f"{x:.{digits}f}"


def _ci(s: dict[str, float] | None) -> str:
    if s is None:
        return ""
    return f"{s['mean']:+.3f} [{s['ci_low']:+.3f}, {s['ci_high']:+.3f}]"


def _threshold_cell(m: MetricResult, state: str | None) -> str:
    """Return the threshold column: ``P(mean >= t)`` with the check's result, or what a "no failure" check found."""
    if m.threshold is None:
        return ""
    if m.n_failures is not None:  # threshold 1.0: a count of failures, not a probability
        bound = "" if m.failure_rate_upper is None or m.n_failures else f" (rate < {m.failure_rate_upper:.3g})"
        return f"{no_failure_text(m.n_failures, m.n_candidate)}: {state}{bound}"
    if m.p_meets_threshold is None:
        return f"no scored example (>= {m.threshold:g}): {state}"
    text = f"{_fmt(m.p_meets_threshold)} (>= {m.threshold:g})"
    return text if state is None else f"{text}: {state}"


def print_gate(decision: GateDecision, record: dict[str, Any], out_path: Path | None = None) -> None:
    """Print a decision as tables and lines.

    The metrics per stratum, efficiency, unpaired ids, the decision, its reasons and review triggers, the
    sign-offs of ``record`` (the record as kept), and where the record (``out_path``) and its report went.
    """
    cfg = decision.config
    pct = f"{cfg.ci_prob:.0%}"
    states = {(c.kind, c.metric, c.stratum): c.state for c in decision.checks}
    t = Table(title=f"gate: candidate vs baseline ({pct} credible intervals)")
    for col in ("metric", "stratum", "n", "candidate mean", "baseline", "P(>= thr): check", "difference",
                "P(regression): check"):
        t.add_column(col, justify="left" if col in ("metric", "stratum") else "right")
    for m in decision.metrics:
        cand = f"{m.candidate['mean']:.3f} [{m.candidate['ci_low']:.3f}, {m.candidate['ci_high']:.3f}]"
        thr = _threshold_cell(m, states.get(("threshold", m.metric, m.stratum)))
        reg_state = states.get(("regression", m.metric, m.stratum))
        reg = "" if m.p_regression is None else f"{_fmt(m.p_regression)} (< -{m.tolerance:g})"
        if reg and reg_state is not None:
            reg += f": {reg_state}"
        base = "" if not m.baseline else f"{m.baseline['mean']:.3f}"
        t.add_row(escape(m.metric), escape(m.stratum), str(m.n_candidate), cand, base, thr, _ci(m.difference), reg)
    out.print(t)
    for e in decision.efficiency:
        r = e["ratio"]
        out.print(
            f"{e['field']}: candidate / baseline = {r['mean']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}] on "
            f"{e['n_paired']} examples; P(> {1 + e['relative_tolerance']:g}) = {e['p_exceeds']:.3f}: "
            f"{states.get(('efficiency', e['field'], 'all'), 'undecided')}",
            highlight=False,
        )
    pairing = decision.pairing
    if pairing["only_candidate"] or pairing["only_baseline"]:
        out.print(
            f"unpaired: {len(pairing['only_candidate'])} ids only in the candidate, {len(pairing['only_baseline'])} "
            "only in the baseline (they count for thresholds, not for comparisons)",
            highlight=False,
        )
    for line in rules_lines(record):
        out.print(escape(line), highlight=False, soft_wrap=True)
    colour = {"PASS": "green", "FAIL": "red", "RETRY": "yellow"}[decision.decision]
    out.print(f"[bold {colour}]{decision.decision}[/]", highlight=False)
    for reason in decision.reasons:
        out.print(f"  {escape(reason)}", highlight=False, soft_wrap=True)
    if decision.triggers:
        out.print("[bold]human review required:[/]", highlight=False)
        for trig in decision.triggers:
            out.print(f"  {escape(trig.kind)}: {escape(trig.reason)}", highlight=False, soft_wrap=True)
    for s in record.get("sign_off") or []:
        out.print(f"signed off: {escape(str(s.get('name')))} at {escape(str(s.get('at')))}", highlight=False)
    if out_path is not None:
        console.print(f"decision record: {escape(str(out_path))}", highlight=False)
    if record.get("report"):
        console.print(f"report: {escape(record['report'])}", highlight=False)


def _md_cell(m: MetricResult, states: Mapping[tuple[str, str, str], str]) -> list[str]:
    """One metric's row of the Markdown table (the names escaped; the rest is numbers and states written here)."""
    cand = f"{m.candidate['mean']:.3f} [{m.candidate['ci_low']:.3f}, {m.candidate['ci_high']:.3f}]"
    thr = _threshold_cell(m, states.get(("threshold", m.metric, m.stratum)))
    reg = "" if m.p_regression is None else f"{m.p_regression:.3f} (< -{m.tolerance:g})"
    reg_state = states.get(("regression", m.metric, m.stratum))
    if reg and reg_state is not None:
        reg += f": {reg_state}"
    return [md_text(m.metric), md_text(m.stratum), str(m.n_candidate), cand, thr, _ci(m.difference), reg]


def gate_markdown(decision: GateDecision, record: dict[str, Any], out_path: Path | None = None) -> str:
    """Return the decision as Markdown, for a pull-request comment: decision, reasons, rules, per-check table, triggers.

    Every string from the data (metric names, strata, reasons, sources) is escaped
    (:func:`agentstats._util.markup.md_text`).
    """
    mark = {"PASS": "PASS", "FAIL": "FAIL", "RETRY": "RETRY (undecided)"}[decision.decision]
    cfg = decision.config
    cand, base = decision.candidate, decision.baseline
    lines = [f"### agentstats gate: **{mark}**", "",
             f"Candidate {md_text(Path(str(cand['source'])).name)} ({cand['n_examples']} examples) against baseline "
             f"{md_text(Path(str(base['source'])).name)} ({decision.pairing['n_paired']} paired examples); "
             f"{cfg.ci_prob:.0%} credible intervals.", ""]
    lines += [f"* {md_text(r)}" for r in decision.reasons]
    lines += [""] + [f"_{md_text(x)}_  " for x in rules_lines(record)] + [""]
    states = {(c.kind, c.metric, c.stratum): c.state for c in decision.checks}
    lines += ["| metric | stratum | n | candidate mean | P(>= threshold): check | difference | P(regression): check |",
              "|---|---|---|---|---|---|---|"]
    lines += ["| " + " | ".join(_md_cell(m, states)) + " |" for m in decision.metrics]
    for e in decision.efficiency:
        r = e["ratio"]
        lines.append("")
        lines.append(f"{md_text(e['field'])}: candidate / baseline {r['mean']:.3f} [{r['ci_low']:.3f}, "
                     f"{r['ci_high']:.3f}]; P(> {1 + e['relative_tolerance']:g}) = {e['p_exceeds']:.3f}: "
                     f"{states.get(('efficiency', e['field'], 'all'), 'undecided')}")
    if decision.triggers:
        lines += ["", "**Human review required:**", ""]
        lines += [f"* {md_text(t.kind)}: {md_text(t.reason)}" for t in decision.triggers]
    signed = record.get("sign_off") or []
    if signed:
        lines += ["", "Signed off: " + ", ".join(f"{md_text(s.get('name'))} ({md_text(s.get('at'))})" for s in signed)]
    if out_path is not None:
        lines += ["", f"Decision record: {md_text(out_path.name)}"]
    return "\n".join(lines) + "\n"


def print_loop(record: dict[str, Any]) -> None:
    """Print a loop's result record: its iterations, the decision and why it stopped, cost, review triggers."""
    t = Table(title="loop iterations (credible intervals of the candidate's means)")
    for col in ("iteration", "decision", "P(better than best)", "improved", "metrics"):
        t.add_column(col, justify="left")
    for s in record["iterations"]:
        metrics = "; ".join(
            f"{m['metric']} {m['mean']:.3f} [{m['ci_low']:.3f}, {m['ci_high']:.3f}]" for m in s.get("metrics", [])
        )
        p = s.get("p_better_than_best")
        t.add_row(str(s.get("iteration")), escape(str(s.get("decision"))), "" if p is None else f"{p:.3f}",
                  str(s.get("improved")), escape(metrics))
    out.print(t)
    colour = {"PASS": "green", "FAIL": "red"}.get(record["decision"], "yellow")
    out.print(f"[bold {colour}]{record['decision']}[/] (best iteration {record['best_iteration']}); "
              f"stopped: {escape(record['stop_reason'])}: {escape(record['stop_detail'])}", highlight=False,
              soft_wrap=True)
    out.print(f"cost ${record['cost_usd']:.6f} and {record['n_requests']} requests to the model endpoints, over every "
              "invocation of this run", highlight=False, soft_wrap=True)
    from agentstats.optimize.journal import CACHE_NAME

    cache = Path(record["run_dir"]) / CACHE_NAME
    out.print(f"call cache: {escape(str(cache))} keeps the reply of every model call already paid for (agent, judge "
              f"and optimizer); {record['n_cached']} of this invocation's calls were answered from it. --resume "
              "reuses it; delete the file (or use a new --run-dir) to ask the models again.",
              highlight=False, soft_wrap=True)
    if record["triggers"]:
        out.print("[bold]human review required:[/]", highlight=False)
        for trig in record["triggers"]:
            out.print(f"  {escape(trig['kind'])}: {escape(trig['reason'])}", highlight=False, soft_wrap=True)
    kept = record.get("decision_record")
    if kept:
        if kept.get("path"):
            out.print(f"decision record (best iteration, with its prompt): {escape(kept['path'])}", highlight=False)
        for s in kept.get("sign_off") or []:
            out.print(f"signed off: {escape(str(s.get('name')))} at {escape(str(s.get('at')))}", highlight=False)
    if record.get("report"):
        out.print(f"report: {escape(record['report'])}", highlight=False)

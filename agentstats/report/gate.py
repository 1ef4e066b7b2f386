"""The gate report: ``notebooks/gate.ipynb`` for a loop run folder or a gate decision record, executed and exported.

The notebook calls the readers here (:func:`read_run`, :func:`read_decision`), the table builders
(:func:`metric_bundle`, :func:`strata_table`, :func:`efficiency_table`, :func:`loop_table`, :func:`decision_markdown`)
and the cell formatters (:func:`check_cell`, :func:`threshold_cell`); every string that comes from the data (metric
names, strata, reasons, prompts, diffs, trigger evidence) is escaped with :mod:`agentstats._util.markup` before it
reaches
Markdown or HTML. :func:`run_gate_report` runs the notebook through the report machinery of
:mod:`agentstats.report.notebook` (papermill, atomic outputs, failed runs kept aside, self-contained HTML).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from agentstats._util.markup import md_text
from agentstats._util.signals import stop_signals_ignored
from agentstats.gating.record import rules_lines
from agentstats.intervals import CI_PROB, ci_percent
from agentstats.records.decision import is_decision_record
from agentstats.report.notebook import ReportPaths, packaged_template, run_report

__all__ = [
    "RunView",
    "check_cell",
    "decision_markdown",
    "default_gate_notebook",
    "efficiency_table",
    "gate_command",
    "loop_command",
    "loop_table",
    "metric_bundle",
    "read_decision",
    "read_run",
    "render_command",
    "run_gate_report",
    "run_record_report",
    "strata_table",
    "threshold_cell",
]


@dataclass
class RunView:
    """What a gate report shows: a loop run (log, per-iteration decision records, result) or one decision record.

    Attributes
    ----------
    log : list of dict
        The run's ``loop.jsonl`` lines (empty for a single decision record).
    decisions : dict of int to dict
        Per iteration, ``{"vs_baseline": record, "vs_best": record or None, ...}`` (``iter-NNN/decision.json``);
        a single decision record is iteration 1.
    result : dict or None
        The run's ``result.json`` (None for a single decision record, or a run that has not stopped).
    source : str
        The run folder's or record's base name (a shared report does not show where it was made).
    """

    log: list[dict[str, Any]] = field(default_factory=list)
    decisions: dict[int, dict[str, Any]] = field(default_factory=dict)
    result: dict[str, Any] | None = None
    source: str = ""

    @property
    def final_iteration(self) -> int | None:
        """The iteration the decision is about: the result's best, else the last one decided."""
        if self.result is not None and self.result.get("best_iteration") is not None:
            return int(self.result["best_iteration"])
        return max(self.decisions) if self.decisions else None

    @property
    def revisions(self) -> list[dict[str, Any]]:
        """The log's revision lines (prompt, diff, rationale, triggers)."""
        return [x for x in self.log if x.get("step") == "revision"]

    def triggers(self) -> list[dict[str, Any]]:
        """Human-review triggers: the result's (or the final decision record's) and each revision's."""
        if self.result is not None:
            return list(self.result.get("triggers") or [])
        out: list[dict[str, Any]] = []
        it = self.final_iteration
        if it is not None:
            out.extend(self.decisions[it]["vs_baseline"].get("triggers") or [])
        for rev in self.revisions:
            out.extend(rev.get("triggers") or [])
        return out


def read_run(run_dir: str | Path) -> RunView:
    """Read a loop run folder (``loop.jsonl``, ``iter-NNN/decision.json``, ``result.json`` when it stopped).

    Raises
    ------
    FileNotFoundError
        When the folder holds no ``loop.jsonl``.
    ValueError
        When a line of the log is not JSON (naming the line).
    """
    run_dir = Path(run_dir)
    log_path = run_dir / "loop.jsonl"
    if not log_path.is_file():
        raise FileNotFoundError(f"{run_dir}: no loop.jsonl (not a loop run folder)")
    log = []
    for i, line in enumerate(log_path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            log.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise ValueError(f"{log_path}, line {i}: not JSON ({exc.msg})") from None
    decisions = {}
    for entry in log:
        if entry.get("step") == "decision" and entry.get("record"):
            path = run_dir / entry["record"]
            if path.is_file():
                decisions[int(entry["iteration"])] = json.loads(path.read_text(encoding="utf-8"))
    result_path = run_dir / "result.json"
    result = json.loads(result_path.read_text(encoding="utf-8")) if result_path.is_file() else None
    return RunView(log=log, decisions=decisions, result=result, source=Path(run_dir).name)


def read_decision(path: str | Path) -> RunView:
    """Read a gate decision record (``agentstats gate --out``) as a one-iteration view.

    Raises
    ------
    ValueError
        When the file is not a gate decision record.
    """
    rec = json.loads(Path(path).read_text(encoding="utf-8"))
    if not is_decision_record(rec):
        raise ValueError(f"{path}: not a gate decision record")
    return RunView(decisions={1: {"iteration": 1, "vs_baseline": rec, "vs_best": None}}, source=Path(path).name)


def _ci(s: dict[str, Any] | None, key: str) -> float | None:
    return None if not s else s.get(key)


def _states(rec: dict[str, Any]) -> dict[tuple[str, str, str], str]:
    """``(kind, metric, stratum) -> state`` of every decisive check of a decision record."""
    return {(c["kind"], c["metric"], c["stratum"]): c["state"] for c in rec.get("checks", [])}


def _vs_baseline(view: RunView, iteration: int | None) -> tuple[dict[str, Any], dict[tuple[str, str, str], str]] | None:
    """Return the baseline comparison of ``iteration`` (default the final one) and its checks' states, or None."""
    it = iteration if iteration is not None else view.final_iteration
    if it is None or it not in view.decisions:
        return None
    rec = view.decisions[it]["vs_baseline"]
    return rec, _states(rec)


def metric_bundle(view: RunView, stratum: str = "all") -> pd.DataFrame:
    """Return the metric bundle per iteration: one row per (iteration, metric) in ``stratum``.

    Columns: ``iteration, metric, n, n_missing, mean, ci_low, ci_high, threshold, p_meets_threshold, n_failures,
    threshold_check, difference, difference_ci_low, difference_ci_high, p_regression, regression_check`` (the
    candidate's posterior mean and credible interval; the threshold check; the paired difference to the baseline and
    the regression check). ``threshold_check`` and ``regression_check`` are the states (``met``, ``failed``,
    ``undecided``) of this metric's own checks in ``stratum``, None where it has none (no threshold, a review-only
    metric). ``n_failures`` is the count of examples below 1 for a "no failure" threshold (1.0), which has no
    ``p_meets_threshold``. The iteration's overall decision is not repeated here (:func:`decision_markdown`,
    :func:`loop_table`).
    """
    rows = []
    for it, rec in sorted(view.decisions.items()):
        base = rec["vs_baseline"]
        states = _states(base)
        for m in base.get("metrics", []):
            if m.get("stratum") != stratum:
                continue
            c, d = m.get("candidate") or {}, m.get("difference")
            rows.append({
                "iteration": it, "metric": m["metric"], "n": m.get("n_candidate"), "n_missing": m.get("n_missing"),
                "mean": c.get("mean"), "ci_low": c.get("ci_low"), "ci_high": c.get("ci_high"),
                "threshold": m.get("threshold"), "p_meets_threshold": m.get("p_meets_threshold"),
                "n_failures": m.get("n_failures"), "threshold_check": states.get(("threshold", m["metric"], stratum)),
                "difference": _ci(d, "mean"), "difference_ci_low": _ci(d, "ci_low"),
                "difference_ci_high": _ci(d, "ci_high"), "p_regression": m.get("p_regression"),
                "regression_check": states.get(("regression", m["metric"], stratum)),
            })
    return pd.DataFrame(rows)


def strata_table(view: RunView, iteration: int | None = None) -> pd.DataFrame:
    """Return the baseline comparison of one iteration (default the final one) per metric and stratum.

    Columns: ``metric, stratum, n_paired, baseline, candidate, difference, ci_low, ci_high, tolerance,
    p_regression, regression_check, p_better`` (``regression_check``: the state of that stratum's regression check,
    None for a review-only metric).
    """
    found = _vs_baseline(view, iteration)
    if found is None:
        return pd.DataFrame()
    rec, states = found
    rows = []
    for m in rec.get("metrics", []):
        d = m.get("difference")
        if d is None:
            continue
        rows.append({
            "metric": m["metric"], "stratum": m["stratum"], "n_paired": m.get("n_paired"),
            "baseline": (m.get("baseline") or {}).get("mean"),
            "candidate": (m.get("candidate_paired") or {}).get("mean"),
            "difference": d.get("mean"), "ci_low": d.get("ci_low"), "ci_high": d.get("ci_high"),
            "tolerance": m.get("tolerance"), "p_regression": m.get("p_regression"),
            "regression_check": states.get(("regression", m["metric"], m["stratum"])), "p_better": m.get("p_better"),
        })
    return pd.DataFrame(rows)


def efficiency_table(view: RunView, iteration: int | None = None) -> pd.DataFrame:
    """Return the efficiency checks of one iteration (default the final one): one row per usage field checked.

    Columns: ``field, n_paired, candidate_mean, baseline_mean, ratio, ratio_ci_low, ratio_ci_high, bound,
    p_exceeds, check`` (the posterior of the candidate-to-baseline ratio of means, the bound ``1 + relative
    tolerance``, ``P(ratio > bound)`` and the check's state). Empty when the config checks no usage field.
    """
    found = _vs_baseline(view, iteration)
    if found is None:
        return pd.DataFrame()
    rec, states = found
    rows = []
    for e in rec.get("efficiency") or []:
        r = e.get("ratio") or {}
        rows.append({
            "field": e["field"], "n_paired": e.get("n_paired"), "candidate_mean": e.get("candidate_mean"),
            "baseline_mean": e.get("baseline_mean"), "ratio": r.get("mean"), "ratio_ci_low": r.get("ci_low"),
            "ratio_ci_high": r.get("ci_high"), "bound": 1 + float(e.get("relative_tolerance") or 0.0),
            "p_exceeds": e.get("p_exceeds"), "check": states.get(("efficiency", e["field"], "all")),
        })
    return pd.DataFrame(rows)


def loop_table(view: RunView) -> pd.DataFrame:
    """Return each iteration of a loop run against the best so far: one row per decided iteration.

    Columns: ``iteration, vs_baseline, best_before, vs_best, p_better_than_best, improved, cost_usd_so_far``.
    ``iteration`` and ``best_before`` are integers (``best_before`` and ``vs_best`` None for the first iteration:
    there is no best before it). Empty for a single decision record.
    """
    rows = []
    for s in view.log:
        if s.get("step") != "decision":
            continue
        best = s.get("best_before")
        rows.append({
            "iteration": int(s["iteration"]), "vs_baseline": s.get("decision"),
            "best_before": None if best is None else int(best), "vs_best": s.get("vs_best"),
            "p_better_than_best": s.get("p_better_than_best"), "improved": s.get("improved"),
            "cost_usd_so_far": s.get("cost_usd_so_far"),
        })
    return pd.DataFrame(rows, dtype=object)


def check_cell(p: float | None, state: str | None) -> str | None:
    """Return a probability with its check's result for a report table: ``"0.981: met"`` (``"0.083"``: no check)."""
    if p is None or p != p:
        return None
    return f"{p:.3f}: {state}" if isinstance(state, str) else f"{p:.3f}"  # a missing state may arrive as NaN


def threshold_cell(row: Mapping[str, Any]) -> str | None:
    """Return the threshold check of a :func:`metric_bundle` row for a report table.

    ``P(mean >= t)`` and the check's result (``"0.981: met"``), or for a "no failure" threshold (1.0) what it found
    (``"no failure observed on 12 examples: met"``); None without a threshold.
    """
    from agentstats.gating.checks import no_failure_text

    if row.get("threshold") is None or row["threshold"] != row["threshold"]:
        return None
    failures = row.get("n_failures")
    if failures is not None and failures == failures:
        state = row.get("threshold_check")
        text = no_failure_text(int(failures), int(row.get("n") or 0))
        return f"{text}: {state}" if isinstance(state, str) else text
    return check_cell(row.get("p_meets_threshold"), row.get("threshold_check"))


def decision_markdown(view: RunView) -> str:
    """Return the report's top: the decision, why, and what stopped the loop (Markdown; data escaped)."""
    it = view.final_iteration
    if it is None:
        stop = view.result or {}
        return (f"## Decision: **{md_text(stop.get('decision', 'RETRY'))}**\n\nNo iteration completed "
                f"({md_text(stop.get('stop_reason', 'not stopped'))}: {md_text(stop.get('stop_detail', ''))}).")
    rec = view.decisions[it]["vs_baseline"]
    decision = view.result.get("decision") if view.result else rec.get("decision")
    lines = [f"## Decision: **{md_text(decision)}**", ""]
    if view.result is not None:
        r = view.result
        lines.append(f"Best iteration **{it}** of {len(view.decisions)}; the loop stopped on "
                     f"**{md_text(r.get('stop_reason'))}**: {md_text(r.get('stop_detail'))}. "
                     f"Cost of the run: ${float(r.get('cost_usd') or 0):.4f}.")
    elif view.log:
        lines.append(f"Iteration {it} of a loop that has not stopped (no result.json yet).")
    ci = rec.get("config", {}).get("ci_prob", CI_PROB)  # the gate's default when a record predates the field
    lines.append("")
    lines.append(f"Against the baseline ({rec.get('pairing', {}).get('n_paired', 0)} paired examples; "
                 f"{ci_percent(ci)} credible intervals):")
    lines.append("")
    lines.extend(f"* {md_text(reason)}" for reason in rec.get("reasons", []))
    rules = rules_lines(rec)
    if rules:
        lines += ["", "Rules: " + "; ".join(md_text(x) for x in rules) + "."]
    trig = view.triggers()
    lines.append("")
    lines.append(f"**Human review required** ({len(trig)} trigger{'s' if len(trig) != 1 else ''}, listed below)."
                 if trig else "No human-review trigger fired.")
    return "\n".join(lines)


def default_gate_notebook() -> Path:
    """Path of the gate report template (package data ``agentstats/report/templates/gate.ipynb``).

    Raises
    ------
    FileNotFoundError
        When the package data is missing.
    """
    return packaged_template("gate.ipynb", "gate report template")


def _name(path: str | Path) -> str:
    """Name a file or folder by its base name, shell-quoted (a shared report does not show where it was made)."""
    import shlex

    return shlex.quote(Path(path).name or str(path))


def gate_command(candidate: str | Path, baseline: str | Path, config: str | Path, *, out: str | Path | None = None,
                 out_dir: str | Path | None = None) -> str:
    """Write the ``agentstats gate`` command that makes a decision and its gate report again.

    Files by their base names, as :func:`agentstats.report.notebook.report_command` (run it in the folder that holds
    them).
    ``--store``, ``--store-run`` and ``--sign-off`` are left out: they add rows and sign-offs, not to the report.

    Parameters
    ----------
    candidate, baseline, config : path
        The scored results and the gate config the decision was made from.
    out : path, optional
        Where the decision record was written (``--out``; its sign-offs for the same inputs are kept).
    out_dir : path, optional
        The report folder (``--out-dir``).

    Returns
    -------
    str
        One shell command line.
    """
    words = ["agentstats", "gate", _name(candidate), _name(baseline), "--config", _name(config)]
    if out is not None:
        words += ["--out", _name(out)]
    if out_dir is not None:
        words += ["--out-dir", _name(out_dir)]
    return " ".join(words)


def loop_command(config: str | Path, run_dir: str | Path, *, out_dir: str | Path | None = None) -> str:
    """Write the ``agentstats loop --resume`` command that replays a loop run and renders its gate report again.

    The resume replays the logged steps (no call is sent again: the decisions are recomputed, seeded) and stops where
    the run stopped, except a run stopped by its wall time, which goes on (the limit counts per invocation). Files by
    their base names, as :func:`gate_command`.

    Parameters
    ----------
    config : path
        The loop config.
    run_dir : path
        The run folder.
    out_dir : path, optional
        The report folder (``--out-dir``).

    Returns
    -------
    str
        One shell command line.
    """
    words = ["agentstats", "loop", "--config", _name(config), "--run-dir", _name(run_dir), "--resume"]
    if out_dir is not None:
        words += ["--out-dir", _name(out_dir)]
    return " ".join(words)


def render_command(run_dir: str | Path | None = None, decision: str | Path | None = None,
                   out_dir: str | Path = "reports", name: str = "gate") -> str:
    """Write the ``python -c`` command that renders a gate report again with :func:`run_gate_report`.

    The report of a run folder or decision record as it stands (nothing is decided again); what
    :func:`run_gate_report` shows when its caller gives no command. Paths by their base names.

    Returns
    -------
    str
        One shell command line.
    """
    import shlex

    def text(v: str) -> str:  # a Python string literal in double quotes: the shell's single quotes stay plain
        return json.dumps(v)

    args = [f"run_dir={text(Path(run_dir).name)}" if run_dir is not None
            else f"decision={text(Path(str(decision)).name)}", f"out_dir={text(Path(out_dir).name)}"]
    if name != "gate":
        args.append(f"name={text(name)}")
    code = f"from agentstats.report.gate import run_gate_report; run_gate_report({', '.join(args)})"
    return f"python -c {shlex.quote(code)}"


def run_gate_report(run_dir: str | Path | None = None, decision: str | Path | None = None,
                    out_dir: str | Path = "reports", name: str = "gate", *, progress_bar: bool = True,
                    show_code: bool = False, command: str | None = None) -> ReportPaths:
    """Execute ``notebooks/gate.ipynb`` for a loop run folder or a decision record; write ``.ipynb`` and ``.html``.

    Parameters
    ----------
    run_dir : path, optional
        A loop run folder.
    decision : path, optional
        A gate decision record (``agentstats gate --out``); used when ``run_dir`` is None.
    out_dir, name, progress_bar, show_code
        As :func:`agentstats.report.notebook.run_report`.
    command : str, optional
        The command that regenerates this report, shown in it ("Regenerate with ..."): the CLI gives its own
        (:func:`gate_command`, :func:`loop_command`); None: :func:`render_command` of these arguments.

    Returns
    -------
    agentstats.report.notebook.ReportPaths

    Raises
    ------
    ValueError
        When neither input is given, or it cannot be read.
    agentstats.report.notebook.ReportError
        When the notebook fails (the previous report is kept).
    """
    if run_dir is None and decision is None:
        raise ValueError("run_gate_report: give run_dir or decision")
    if run_dir is not None:
        read_run(run_dir)  # fail in a second, before a kernel starts
    else:
        assert decision is not None
        read_decision(decision)
    params = {"run_dir": None if run_dir is None else str(Path(run_dir).resolve()),
              "decision_path": None if decision is None else str(Path(decision).resolve()),
              "regenerate": command if command is not None else render_command(run_dir, decision, out_dir, name)}
    return run_report(params, out_dir=out_dir, name=name, template=default_gate_notebook(),
                      progress_bar=progress_bar, show_code=show_code)


def run_record_report(record: Mapping[str, Any], out_dir: str | Path, *, record_path: str | Path | None = None,
                      command: str | None = None, name: str = "gate") -> ReportPaths:
    """Render the gate report of a decision record into ``out_dir`` (``agentstats gate --out-dir``).

    The notebook reads the record from ``record_path`` (where ``--out`` wrote it); without one, the record is first
    written to ``out_dir/gate-record.json`` (atomically), beside the report that shows it.

    Parameters
    ----------
    record : mapping
        The decision record (:meth:`agentstats.gating.GateDecision.to_record`, as kept).
    out_dir : path
        The report folder, created when missing.
    record_path : path, optional
        The record's file, when it has one.
    command, name
        As :func:`run_gate_report`.

    Returns
    -------
    agentstats.report.notebook.ReportPaths

    Raises
    ------
    OSError
        The folder or the record cannot be written.
    agentstats.report.notebook.ReportError
        When the notebook fails.
    """
    from agentstats.files.atomic import atomic_write_bytes, atomic_write_text

    folder = Path(out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    if record_path is not None:
        return run_gate_report(decision=record_path, out_dir=folder, name=name, progress_bar=False, command=command)
    # the record beside the report is replaced only with the report: a run that fails or is interrupted puts the
    # previous record back (or removes the new one), so gate-record.json never disagrees with gate.html
    kept = folder / "gate-record.json"
    before = kept.read_bytes() if kept.is_file() else None
    source = atomic_write_text(kept, json.dumps(dict(record), indent=2) + "\n")
    try:
        return run_gate_report(decision=source, out_dir=folder, name=name, progress_bar=False, command=command)
    except BaseException:
        with stop_signals_ignored():  # a second Ctrl-C or SIGTERM must not leave the new record half undone
            if before is None:
                kept.unlink(missing_ok=True)
            else:
                atomic_write_bytes(kept, before)
        raise

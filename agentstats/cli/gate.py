"""``agentstats gate``: PASS / FAIL / RETRY for a candidate against a baseline, with a decision record.

Exit status: 0 PASS, 1 FAIL, 75 RETRY (undecided: more data would decide it), 2 usage or input error, 130
interrupted. ``--out`` writes the JSON decision record atomically; ``--store PATH`` (with ``--run NAME``) appends
it as a row of the run store's ``gate_decisions`` table (rows are never updated: sign-offs stored for the same inputs
are carried into the new row); ``--sign-off NAME`` appends a reviewer's sign-off to the record; ``--report DIR``
renders the gate report (``notebooks/gate.ipynb``) of the record. Sign-offs already in the record are kept when the
record is written again for the same inputs (same config and data hashes); a signed record for other inputs is never
overwritten.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from agentstats.cli.common import (
    EXIT_FAILURE,
    EXIT_OK,
    EXIT_RETRY,
    EXIT_USAGE,
    check_output_path,
    console,
    fail,
    out,
)

#: Exit status of each decision.
EXIT_OF = {"PASS": EXIT_OK, "FAIL": EXIT_FAILURE, "RETRY": EXIT_RETRY}


def gate(
    candidate: Annotated[Path, typer.Argument(help="Candidate's scored results (JSONL: id, metric/value or scores).")],
    baseline: Annotated[Path, typer.Argument(help="Baseline's scored results on the same ids.")],
    config: Annotated[Path, typer.Option("--config", "-c", help="Gate config (YAML or JSON; see docs/gate.md).")],
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the decision record as JSON instead of tables.")
    ] = False,
    sign_off: Annotated[
        str | None,
        typer.Option("--sign-off", help="Append a reviewer's sign-off (this name) to the record at --out."),
    ] = None,
    out_path: Annotated[
        Path | None, typer.Option("--out", "-o", help="Write the JSON decision record here (atomically).")
    ] = None,
    report: Annotated[
        Path | None,
        typer.Option("--report", help="Also render the gate report (notebooks/gate.ipynb) into this folder."),
    ] = None,
    store: Annotated[
        Path | None,
        typer.Option("--store", help="Also append the decision record to this run store's gate_decisions table."),
    ] = None,
    run: Annotated[
        str | None,
        typer.Option("--run", help="With --store: the stored run the decision is about (its run_id is recorded)."),
    ] = None,
) -> None:
    """Gate a candidate against a baseline on posterior probabilities: exit 0 PASS, 1 FAIL, 75 RETRY, 2 input error."""
    from agentstats.gating import GateConfigError, load_gate_config
    from agentstats.gating import gate as run_gate
    from agentstats.io.loaders import load

    if sign_off is not None and not sign_off.strip():
        raise fail(typer.BadParameter("--sign-off: give the reviewer's name"), EXIT_USAGE)
    if sign_off is not None and out_path is None and store is None:
        raise fail(typer.BadParameter("--sign-off needs --out or --store: the record the sign-off is appended to"),
                   EXIT_USAGE)
    if run is not None and store is None:
        raise fail(typer.BadParameter("--run needs --store: the run store holding the run"), EXIT_USAGE)
    check_output_path(out_path, "--out")
    check_output_path(report, "--report", folder=True)
    try:
        cfg = load_gate_config(config)
    except GateConfigError as exc:
        raise fail(exc, EXIT_USAGE) from exc
    try:
        with console.status("loading scores ..."):
            cand, base = load(candidate, format="scores"), load(baseline, format="scores")
        decision = run_gate(cand, base, cfg)
    except (ValueError, OSError) as exc:
        raise fail(exc, EXIT_USAGE) from exc
    record = decision.to_record()
    signature = None
    if sign_off is not None:
        signature = {
            "name": sign_off.strip(),
            "at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "decision": record["decision"],
        }
    kept = _existing_sign_offs(out_path, record) if out_path is not None else []  # refusals before any write
    if store is not None:
        stored = _store_decision(store, run, record, signature)
        if out_path is None:
            record["sign_off"] = stored["sign_off"]
    if out_path is not None:
        record["sign_off"] = kept
        if signature is not None:
            record["sign_off"].append(signature)
        from agentstats.files.atomic import atomic_write_text

        try:
            atomic_write_text(out_path, json.dumps(record, indent=2) + "\n")
        except OSError as exc:
            raise fail(exc, EXIT_FAILURE) from exc
    if report is not None:
        from agentstats.files.atomic import atomic_write_text
        from agentstats.report.gate import gate_command, run_gate_report

        try:
            report.mkdir(parents=True, exist_ok=True)
            source = out_path if out_path is not None else atomic_write_text(
                report / "gate-record.json", json.dumps(record, indent=2) + "\n")
            paths = run_gate_report(decision=source, out_dir=report, name="gate", progress_bar=False,
                                    command=gate_command(candidate, baseline, config, out=out_path, report=report))
        except Exception as exc:  # the decision stands; the report is an extra
            raise fail(exc, EXIT_FAILURE) from exc
        record["report"] = str(paths.html)
    if as_json:
        out.print_json(json.dumps(record))
    else:
        _print(decision, record)
        if out_path is not None:
            console.print(f"decision record: {escape(str(out_path))}", highlight=False)
        if report is not None:
            console.print(f"report: {escape(record['report'])}", highlight=False)
    raise typer.Exit(EXIT_OF[decision.decision])


def _store_decision(
    path: Path, run: str | None, record: dict[str, Any], signature: dict[str, Any] | None
) -> dict[str, Any]:
    """Append the record (with the sign-offs stored for the same inputs, and ``signature``) to ``gate_decisions``."""
    from agentstats.store import RunStore, StoreError

    try:
        with RunStore(path) as st:
            return st.add_gate_decision({**record, "sign_off": [signature] if signature is not None else []},
                                        run=run)
    except StoreError as exc:
        raise fail(exc, EXIT_USAGE) from exc
    except (ImportError, OSError) as exc:
        raise fail(exc, EXIT_FAILURE) from exc


def _existing_sign_offs(path: Path, record: dict[str, Any]) -> list[dict[str, Any]]:
    """Sign-offs of the record already at ``path`` when it is for the same inputs; refuse to drop others'."""
    if not path.exists():
        return []
    try:
        old = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise fail(
            ValueError(f"{path}: exists and is not a readable decision record ({exc}); not overwritten"), EXIT_USAGE
        ) from exc
    if not isinstance(old, dict) or not str(old.get("schema", "")).startswith("agentstats.gate/"):
        raise fail(ValueError(f"{path}: exists and is not a gate decision record; not overwritten"), EXIT_USAGE)
    signed = old.get("sign_off") or []
    same = (
        old.get("config_sha256") == record["config_sha256"]
        and (old.get("candidate") or {}).get("sha256") == record["candidate"]["sha256"]
        and (old.get("baseline") or {}).get("sha256") == record["baseline"]["sha256"]
        and (old.get("judge_calibration") or {}).get("sha256") == (record.get("judge_calibration") or {}).get("sha256")
    )
    if same:
        return list(signed)
    if signed:
        names = ", ".join(str(s.get("name")) for s in signed)
        raise fail(
            ValueError(
                f"{path}: signed off ({names}) for other inputs (config or data hashes differ); not overwritten. "
                "Write this record to another --out."
            ),
            EXIT_USAGE,
        )
    return []


def _fmt(x: float | None, digits: int = 3) -> str:
    return "" if x is None else f"{x:.{digits}f}"


def _ci(s: dict[str, float] | None) -> str:
    if s is None:
        return ""
    return f"{s['mean']:+.3f} [{s['ci_low']:+.3f}, {s['ci_high']:+.3f}]"


def _threshold_cell(m: Any, state: str | None) -> str:
    """Return the threshold column: ``P(mean >= t)`` with the check's result, or what a "no failure" check found."""
    from agentstats.gating.decision import no_failure_text

    if m.threshold is None:
        return ""
    if m.n_failures is not None:  # threshold 1.0: a count of failures, not a probability
        return f"{no_failure_text(m.n_failures, m.n_candidate)}: {state}"
    text = f"{_fmt(m.p_meets_threshold)} (>= {m.threshold:g})"
    return text if state is None else f"{text}: {state}"


def _print(decision: Any, record: dict[str, Any]) -> None:
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

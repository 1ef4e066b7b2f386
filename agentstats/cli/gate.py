"""``agentstats gate``: PASS / FAIL / RETRY for a candidate against a baseline, with a decision record.

Exit status: 0 PASS, 1 FAIL, 75 RETRY (undecided: more data would decide it), 2 usage or input error, 130
interrupted. ``--out`` writes the JSON decision record atomically; ``--store PATH`` (with ``--run NAME``) appends
it as a row of the run store's ``gate_decisions`` table (rows are never updated: sign-offs stored for the same inputs
are carried into the new row); ``--sign-off NAME`` appends a reviewer's sign-off to the record; ``--report DIR``
renders the gate report (``notebooks/gate.ipynb``) of the record. Sign-offs already in the record are kept when the
record is written again for the same inputs (same config and data hashes); a signed record for other inputs is never
overwritten. The command parses, decides (:func:`agentstats.gating.gate`), keeps the record
(:func:`agentstats.gating.keep_record`, where the sign-off rules live) and prints
(:mod:`agentstats.cli.render_gate`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

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
    from agentstats.cli.render_gate import print_gate
    from agentstats.gating import gate as run_gate
    from agentstats.gating import keep_record

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
        with console.status("gating ..."):
            decision = run_gate(candidate, baseline, config)
    except (ValueError, OSError) as exc:  # the config, the score files or the inputs' pairing
        raise fail(exc, EXIT_USAGE) from exc
    try:
        record = keep_record(decision.to_record(), out=out_path, store=store, run=run, sign_off=sign_off)
    except ValueError as exc:  # a record at --out it will not replace, an unknown --run, an unusable store
        raise fail(exc, EXIT_USAGE) from exc
    except (ImportError, OSError) as exc:  # nothing written, or DuckDB not installed
        raise fail(exc, EXIT_FAILURE) from exc
    if report is not None:
        record["report"] = str(_report(record, candidate, baseline, config, out_path, report))
    if as_json:
        out.print_json(json.dumps(record))
    else:
        print_gate(decision, record)
        if out_path is not None:
            console.print(f"decision record: {escape(str(out_path))}", highlight=False)
        if report is not None:
            console.print(f"report: {escape(record['report'])}", highlight=False)
    raise typer.Exit(EXIT_OF[decision.decision])


def _report(record: dict[str, Any], candidate: Path, baseline: Path, config: Path, out_path: Path | None,
            folder: Path) -> Path:
    """Render the gate report of ``record`` into ``folder`` (the decision stands if this fails: exit 1)."""
    from agentstats.files.atomic import atomic_write_text
    from agentstats.report.gate import gate_command, run_gate_report

    try:
        folder.mkdir(parents=True, exist_ok=True)
        source = out_path if out_path is not None else atomic_write_text(
            folder / "gate-record.json", json.dumps(record, indent=2) + "\n")
        paths = run_gate_report(decision=source, out_dir=folder, name="gate", progress_bar=False,
                                command=gate_command(candidate, baseline, config, out=out_path, report=folder))
    except Exception as exc:  # the decision stands; the report is an extra
        raise fail(exc, EXIT_FAILURE) from exc
    return paths.html

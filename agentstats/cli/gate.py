"""``agentstats gate``: PASS / FAIL / RETRY for a candidate against a baseline, with a decision record.

Exit status: 0 PASS, 1 FAIL, 75 RETRY (undecided: more data would decide it), 2 usage or input error, 130
interrupted. ``--out`` writes the JSON decision record atomically; ``--store PATH`` (with ``--store-run NAME``)
appends it as a row of the run store's ``gate_decisions`` table (rows are never updated: sign-offs stored for the
same inputs are carried into the new row); ``--sign-off NAME`` appends a reviewer's sign-off to the record;
``--out-dir DIR`` renders the gate report (``notebooks/gate.ipynb``) of the record; ``--markdown`` prints the decision
as Markdown (a pull-request comment). ``--previous RECORD`` counts this decision as the next look after that record's
RETRY (the error-spending plan of :mod:`agentstats.gating.looks`); with ``--store`` and ``--store-run`` and no
``--previous``, the store's newest record of the same run and comparison is the previous look. Sign-offs already in
the record are kept when the record is written again for the same inputs (same config and data hashes); a signed
record for other inputs is never overwritten. Either input may be the project's own trials file (one agent), gated
on its outcome as the binary metric ``success``. The command parses, decides (:func:`agentstats.gating.gate`), keeps
the record
(:func:`agentstats.gating.keep_record`, where the sign-off rules live) and prints
(:mod:`agentstats.cli.render.gate`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from agentstats.cli.common import EXIT_FAILURE, EXIT_OK, EXIT_RETRY, EXIT_USAGE, console, fail
from agentstats.cli.options import JsonOpt, check_output_path, out_dir_opt, out_file_opt, store_run_opt

#: Exit status of each decision.
EXIT_OF = {"PASS": EXIT_OK, "FAIL": EXIT_FAILURE, "RETRY": EXIT_RETRY}


def gate(
    candidate: Annotated[Path, typer.Argument(
        help="Candidate's scored results (JSONL: id, metric/value or scores), or its trials file (one agent).")],
    baseline: Annotated[Path, typer.Argument(help="Baseline's scored results (or trials) on the same ids.")],
    config: Annotated[Path, typer.Option("--config", "-c", help="Gate config (YAML or JSON; see docs/gate.md).")],
    as_json: JsonOpt = False,
    markdown: Annotated[
        bool, typer.Option("--markdown",
                           help="Print the decision as Markdown (a pull-request comment) instead of tables."),
    ] = False,
    previous: Annotated[
        Path | None,
        typer.Option("--previous", help="The decision record of the previous look (a RETRY of this comparison): this "
                     "decision is the next look of its error-spending plan."),
    ] = None,
    sign_off: Annotated[
        str | None,
        typer.Option("--sign-off", help="Append a reviewer's sign-off (this name) to the record at --out or --store."),
    ] = None,
    out_path: Annotated[Path | None, out_file_opt("Write the JSON decision record here (atomically).", "-o")] = None,
    out_dir: Annotated[Path | None, out_dir_opt("Also render the gate report (notebooks/gate.ipynb) here.")] = None,
    store: Annotated[
        Path | None,
        typer.Option("--store", help="Also append the decision record to this run store's gate_decisions table."),
    ] = None,
    store_run: Annotated[
        str | None, store_run_opt("With --store: the stored run the decision is recorded under (its run_id).")
    ] = None,
) -> None:
    """Gate a candidate against a baseline on posterior probabilities: exit 0 PASS, 1 FAIL, 75 RETRY, 2 input error."""
    from agentstats.cli.render.gate import gate_markdown, print_gate
    from agentstats.cli.render.text import print_json
    from agentstats.gating import gate as run_gate
    from agentstats.gating import keep_record
    from agentstats.report.gate import gate_command, run_record_report

    if sign_off is not None and not sign_off.strip():
        raise fail(typer.BadParameter("--sign-off: give the reviewer's name"), EXIT_USAGE)
    if sign_off is not None and out_path is None and store is None:
        raise fail(typer.BadParameter("--sign-off needs --out or --store: the record the sign-off is appended to"),
                   EXIT_USAGE)
    if store_run is not None and store is None:
        raise fail(typer.BadParameter("--store-run needs --store: the run store holding the run"), EXIT_USAGE)
    if as_json and markdown:
        raise fail(typer.BadParameter("--json and --markdown: choose one"), EXIT_USAGE)
    check_output_path(out_path, "--out")
    check_output_path(out_dir, "--out-dir", folder=True)
    try:
        earlier = previous if previous is not None else _stored_looks(store, store_run)
        with console.status("gating ..."):
            decision = run_gate(candidate, baseline, config, previous=earlier)
    except (ValueError, OSError) as exc:  # the config, the score files, the inputs' pairing, the previous look
        raise fail(exc, EXIT_USAGE) from exc
    try:
        record = keep_record(decision.to_record(), out=out_path, store=store, run=store_run, sign_off=sign_off)
    except ValueError as exc:  # a record at --out it will not replace, an unknown --store-run, an unusable store
        raise fail(exc, EXIT_USAGE) from exc
    except (ImportError, OSError) as exc:  # nothing written, or DuckDB not installed
        raise fail(exc, EXIT_FAILURE) from exc
    if out_dir is not None:
        try:  # the decision stands if the report fails: exit 1
            paths = run_record_report(record, out_dir, record_path=out_path, command=gate_command(
                candidate, baseline, config, out=out_path, out_dir=out_dir))
        except Exception as exc:
            raise fail(exc, EXIT_FAILURE) from exc
        record["report"] = str(paths.html)
    if as_json:
        print_json(record)
    elif markdown:
        print(gate_markdown(decision, record, out_path), end="")
    else:
        print_gate(decision, record, out_path)
    raise typer.Exit(EXIT_OF[decision.decision])


def _stored_looks(store: Path | None, run: str | None) -> list[dict[str, Any]] | None:
    """Return the run store's records of ``run`` (the earlier looks), when both are given and the store exists."""
    if store is None or run is None or not store.exists():
        return None
    from agentstats.store import RunStore

    with RunStore(store) as st:
        return st.gate_decisions(run)

"""Write what is generated from the notebooks' parameter models: their parameters cells and the docs' table.

``agentstats.report.params`` owns every report option (``ReportParams``) and comparison option (``CompareParams``).
Their copies are generated, never edited by hand:

* the ``parameters`` cell of ``notebooks/report.ipynb`` and ``notebooks/compare.ipynb``;
* the table of report parameters in ``docs/report.md`` (between its ``report-params`` markers).

Run after changing a model: ``.venv/bin/python scripts/notebook_params.py``; ``--check`` only says what is stale (exit
1), as ``tests/report/test_report_params.py`` does.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat

from agentstats.report.params import CompareParams, NotebookParams, ReportParams

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS: dict[str, type[NotebookParams]] = {"report.ipynb": ReportParams, "compare.ipynb": CompareParams}
DOC = REPO / "docs" / "report.md"
START, END = "<!-- report-params:start -->", "<!-- report-params:end -->"


def doc_with_table(text: str) -> str:
    """``docs/report.md`` with the generated table between its markers."""
    head, _, rest = text.partition(START)
    _, _, tail = rest.partition(END)
    return f"{head}{START}\n{ReportParams.parameters_table()}\n{END}{tail}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only list the stale files (exit 1 when there are any)")
    args = parser.parse_args()
    stale = []
    for name, model in NOTEBOOKS.items():
        path = REPO / "notebooks" / name
        nb = nbformat.read(path, as_version=4)
        cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
        if cell.source != model.parameters_cell():
            stale.append(path)
            cell.source = model.parameters_cell()
            if not args.check:
                nbformat.write(nb, path)
    text = DOC.read_text(encoding="utf-8")
    if doc_with_table(text) != text:
        stale.append(DOC)
        if not args.check:
            DOC.write_text(doc_with_table(text), encoding="utf-8")
    for path in stale:
        print(f"{'stale' if args.check else 'wrote'}: {path.relative_to(REPO)}")
    return 1 if stale and args.check else 0


if __name__ == "__main__":
    sys.exit(main())

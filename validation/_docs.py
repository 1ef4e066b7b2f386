"""Write a script's Markdown table into a docs file between ``<!-- BEGIN name -->`` / ``<!-- END name -->`` markers.

Shared by the scripts in ``validation/`` and ``benchmarks/bench_sampling.py``. A missing block is appended under
the given heading (created when absent); an existing block is replaced, the rest of the file is left as it is.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def write_block(doc: Path, name: str, body: str, heading: str) -> None:
    """Replace (or append) the block ``name`` in ``doc``.

    Parameters
    ----------
    doc : pathlib.Path
        Markdown file (created if absent).
    name : str
        Block name used in the markers.
    body : str
        Markdown to put between the markers.
    heading : str
        Heading line (e.g. ``"## METR real-data check"``) put before a newly appended block.
    """
    begin, end = f"<!-- BEGIN {name} -->", f"<!-- END {name} -->"
    block = f"{begin}\n{body.rstrip()}\n{end}"
    text = doc.read_text() if doc.exists() else ""
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end), re.S)
    if pattern.search(text):
        text = pattern.sub(lambda _: block, text)
    else:
        if heading not in text:
            text = text.rstrip() + ("\n\n" if text else "") + heading + "\n\n"
        else:
            text = text.rstrip() + "\n\n"
        text += block + "\n"
    doc.write_text(text)


def md_table(df, floatfmt: str = ".3f") -> str:
    """A pandas DataFrame as a Markdown table (no index), floats formatted with ``floatfmt``."""
    cols = list(df.columns)
    lines = ["| " + " | ".join(str(c) for c in cols) + " |", "|" + "---|" * len(cols)]
    for i in range(len(df)):
        cells = []
        for c in cols:
            v = df[c].iloc[i]
            if isinstance(v, (float, np.floating)):
                cells.append("" if v != v else format(v, floatfmt))
            else:
                cells.append(str(v))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)

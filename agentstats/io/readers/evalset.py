"""Reader of eval sets (format ``"eval_set"``): FAI-style JSONL, one example per line (gzip allowed).

The examples and their rules are :mod:`agentstats.records.evalset`; this module reads the lines and applies the
problem policy: the loop runs every example or none, so every problem is listed (file, line, field) and there is no
skipping. Eval sets are not detected from their content (an FAI-style answers file, format ``fai_jsonl``, has the
same fields): name the format.
"""

from __future__ import annotations

import os

from agentstats.io.jsonl import iter_jsonl
from agentstats.io.registry import register_format
from agentstats.records.evalset import Example, eval_set
from agentstats.records.problems import LoadError, OnError, ProblemLog

__all__ = ["read_eval_set"]


def read_eval_set(path: str | os.PathLike, *, on_error: OnError = "raise") -> list[Example]:
    """Read an FAI-style JSONL eval set (format: :mod:`agentstats.records.evalset`).

    ``agentstats.load(path, format="eval_set")`` calls this.

    Parameters
    ----------
    path : str or path-like
        The JSONL file (gzip allowed).
    on_error : {"raise"}
        Eval sets are read whole.

    Returns
    -------
    list of Example
        In file order.

    Raises
    ------
    agentstats.records.problems.LoadError
        Listing every problem (file, line, field): malformed JSON, a missing or mistyped field, a repeated id, an
        empty file.
    ValueError
        For ``on_error="skip"``.
    OSError
        When the file cannot be read.
    """
    if on_error != "raise":
        raise ValueError(f"eval sets are read whole (the loop runs every example or none): on_error={on_error!r} "
                         "does not apply; fix the lines the error lists")
    log = ProblemLog(str(path), "raise")
    out = eval_set(iter_jsonl(path, log), log)
    try:
        log.finish()
    except LoadError as exc:
        raise LoadError(exc.problems, exc.source, skippable=False) from None
    return out


register_format("eval_set", read_eval_set, holds="eval_set", aliases=("evalset", "eval-set"))

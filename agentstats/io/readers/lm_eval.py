"""Import lm-evaluation-harness ``--log_samples`` output (EleutherAI ``lm_eval`` 0.4): ``samples_<task>_<date>.jsonl``.

lm-eval writes, per task, one JSON line per (document, filter) (``evaluate`` in ``lm_eval/evaluator.py``, written by
``EvaluationTracker.save_results_samples`` in ``lm_eval/loggers/evaluation_tracker.py`` into
``<output_path>/<model name, "/" as "__">/samples_<task>_<date>.jsonl``)::

    {"doc_id": 0, "doc": {...}, "target": "...", "arguments": {...}, "resps": [[...]],
     "filtered_resps": [...], "filter": "strict-match", "metrics": ["exact_match"],
     "doc_hash": ..., "prompt_hash": ..., "target_hash": ..., "exact_match": 1.0}

Mapping: each line of the chosen filter is one document's result.

* ``agent`` = ``agent=``, else ``model_name`` of a ``results_*.json`` beside the file, else the folder's name with
  ``__`` read back as ``/`` (lm-eval's own layout: ``google__gemma-2b`` is ``google/gemma-2b``).
* ``task_id`` = ``<task>/<doc_id>``, the task from the file name.
* The outcome is one per-document metric: ``scorer=`` (``"acc"``, or ``"exact_match,flexible-extract"``: metric
  and filter, as lm-eval names its results), default ``acc``, else ``exact_match`` (the first in the line's
  ``metrics``). A metric lm-eval aggregates over the corpus (``f1``, ``bleu``: the line holds the pair of texts,
  not a score) gives no per-document outcome and is a problem that says so. A value ``v`` in [0, 1] is the
  trial's ``reward`` (success when 1); other scales need ``score_scale`` / ``success_threshold``
  (:mod:`agentstats.records.scale`).
* Filters: a file holds one line per document for each filter; the first filter of the file is read unless
  ``scorer=`` names one, and a note names the filters left out.
* Repeats: a task with ``repeats: N`` keeps the N generations of a document in ``filtered_resps[0]`` (unless a filter
  reduced them, e.g. a majority vote: then one trial) and lm-eval scores the document once, with the mean over
  the generations (``exact_match`` on the list, ``pass@1`` of ``code_eval``). Such a value ``v`` is ``c / N``:
  the document becomes N trials of which ``c = v N`` succeed (which generation succeeded is not in the file; the
  trials are numbered successes first, ``meta["from_mean"]``). A value that is not a multiple of ``1/N``
  (``pass@10``, a majority vote) is a problem: it is no share of N binary outcomes.
* lm-eval records no errors per document: nothing is missing; documents not in the file are in no count.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agentstats.io.jsonl import build_trials, iter_jsonl
from agentstats.records.problems import ProblemLog
from agentstats.records.scale import ScoreScale, parse_score_scale, unscaled_advice
from agentstats.records.trial import Trial

__all__ = ["DEFAULT_METRICS", "looks_like_lm_eval", "read_lm_eval"]

#: Per-document binary metrics read by default, in order of preference.
DEFAULT_METRICS = ("acc", "exact_match")
_FILE = re.compile(r"^samples_(.+)_(\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?)\.jsonl(?:\.gz)?$")
_TOL = 1e-6


def _model_name(path: Path) -> str:
    """Return the model lm-eval ran: ``model_name`` of a results file beside ``path``, else the folder's name."""
    stamp = _FILE.match(path.name)
    candidates = sorted(path.parent.glob("results_*.json"))
    if stamp:
        candidates.sort(key=lambda p: stamp.group(2) not in p.name)
    for cand in candidates:
        try:
            data = json.loads(cand.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        name = data.get("model_name") if isinstance(data, dict) else None
        if isinstance(name, str) and name:
            return name
    return path.parent.resolve().name.replace("__", "/", 1)


def _generations(rec: dict[str, Any]) -> int:
    """Return N: the generations scored together (``filtered_resps[0]`` a list of texts), else 1."""
    fr = rec.get("filtered_resps")
    if isinstance(fr, list) and len(fr) == 1 and isinstance(fr[0], list) and fr[0] \
            and all(isinstance(x, str) for x in fr[0]):
        return len(fr[0])
    return 1


def _value(rec: dict[str, Any], metric: str, loc: int, log: ProblemLog, scale: ScoreScale | None) -> float | None:
    v = rec.get(metric)
    if isinstance(v, bool):
        return float(v)
    if not isinstance(v, (int, float)) or not math.isfinite(v):
        if metric not in rec:
            has = ", ".join(map(str, rec.get("metrics") or []))
            log.add(loc, metric, f"no metric {metric!r} on this line (it has: {has}); choose one with scorer=")
        else:
            log.add(loc, metric, f"metric {metric!r} holds no per-document score ({type(v).__name__} {v!r:.60}): "
                    "lm-eval aggregates it over the whole corpus; choose a per-document metric with scorer=")
        return None
    if scale is not None:
        if not scale.contains(v):
            log.add(loc, metric, f"score {v:g} is outside the declared scale [{scale.lo:g}, {scale.hi:g}]")
            return None
    elif not -_TOL <= v <= 1 + _TOL:
        log.add(loc, metric, unscaled_advice(v))
        return None
    return float(v)


def _trials(rec: dict[str, Any], v: float, base: dict[str, Any], loc: int, log: ProblemLog, metric: str,
            scale: ScoreScale | None) -> list[dict[str, Any]]:
    n = _generations(rec)
    if n == 1:
        if scale is not None:
            return [{**base, "trial": 0, "reward": scale.reward(v), "success": scale.success(v)}]
        return [{**base, "trial": 0, "reward": min(max(v, 0.0), 1.0)}]
    c = v * n
    if scale is not None or abs(c - round(c)) > _TOL * n:
        log.add(loc, metric, f"{metric} = {v:g} over {n} generations is no share of {n} pass/fail outcomes (a "
                "pass@k with k > 1 or a vote?): lm-eval records no per-generation outcome to count")
        return []
    c = round(c)
    return [{**base, "trial": j, "success": j < c, "meta": {**base["meta"], "from_mean": True, "generations": n}}
            for j in range(n)]


def read_lm_eval(
    path: str | os.PathLike,
    log: ProblemLog,
    *,
    agent: str | None = None,
    scorer: str | None = None,
    score_scale: str | tuple[float, float] | None = None,
    success_threshold: float | None = None,
) -> list[Trial]:
    """Read an lm-evaluation-harness ``samples_<task>_<date>.jsonl`` file into trials.

    Parameters
    ----------
    path : str or PathLike
        The samples file (gzip detected); its name gives the task.
    log : ProblemLog
        Problems are logged at the 1-based line with the metric as the field.
    agent : str, optional
        Agent name; default the model (module docstring).
    scorer : str, optional
        ``"metric"`` or ``"metric,filter"``; default ``acc``, else ``exact_match``, and the file's first filter.
    score_scale, success_threshold : optional
        The scale of a metric outside [0, 1] and the score from which a document succeeds.

    Returns
    -------
    list of Trial
        See the module docstring for the mapping.

    Raises
    ------
    ValueError
        A malformed ``score_scale`` / ``success_threshold``.
    """
    scale = parse_score_scale(score_scale, success_threshold)
    path = Path(path)
    m = _FILE.match(path.name)
    if m is None:
        log.add(None, None, "the task comes from the file name, which lm-eval writes as samples_<task>_<date>.jsonl "
                "(e.g. samples_gsm8k_2025-01-01T00-00-00.000000.jsonl); rename the file so", whole_file=True)
        return []
    task = m.group(1)
    metric, _, wanted_filter = (scorer or "").partition(",")
    name = agent or _model_name(path)
    filters: dict[str, int] = {}

    def converted() -> Iterator[tuple[int, dict[str, Any]]]:
        for loc, rec in iter_jsonl(path, log):
            doc_id = rec.get("doc_id")
            if isinstance(doc_id, bool) or not isinstance(doc_id, (int, str)):
                log.add(loc, "doc_id", f"required integer, got {doc_id!r:.40}")
                continue
            filt = str(rec.get("filter", "none"))
            filters[filt] = filters.get(filt, 0) + 1
            if filt != (wanted_filter or next(iter(filters))):
                continue
            listed = rec.get("metrics") or rec
            chosen = metric or next((x for x in DEFAULT_METRICS if x in listed), DEFAULT_METRICS[0])
            v = _value(rec, chosen, loc, log, scale)
            if v is None:
                continue
            base = {"agent": name, "task_id": f"{task}/{doc_id}", "meta": {"task": task, "doc_id": doc_id,
                                                                          "filter": filt, "metric": chosen}}
            for d in _trials(rec, v, base, loc, log, chosen, scale):
                yield loc, d
        if wanted_filter and wanted_filter not in filters:
            log.add(None, "filter", f"no line has filter {wanted_filter!r} (filters: {', '.join(filters) or 'none'})",
                    whole_file=True)
        left = [f for f in filters if f != (wanted_filter or next(iter(filters), None))]
        if left:
            log.note(None, "filter", f"read filter {wanted_filter or next(iter(filters))!r}; left out "
                     f"{', '.join(repr(f) for f in left)} (scorer='METRIC,FILTER' picks one)")

    return build_trials(converted(), log, unit="line", prefix="(converted trial) ")


def looks_like_lm_eval(path: Any, head: bytes) -> bool:
    """Tell from a file's first bytes whether it is lm-eval ``--log_samples`` output.

    JSON lines starting with ``{"doc_id":``, whose first line holds ``filtered_resps`` (or, when the first line is
    longer than the head, whose name is ``samples_<task>_<date>.jsonl``).
    """
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")
    if re.match(r'\{\s*"doc_id"\s*:', text) is None:
        return False
    first = text.split("\n", 1)[0]
    return '"filtered_resps"' in first or _FILE.match(Path(str(path)).name) is not None


def register() -> None:
    """Make ``load_trials(path)`` read lm-eval samples files (``format="lm_eval"``, also auto-detected)."""
    from agentstats.io.registry import register_format

    register_format("lm_eval", read_lm_eval, aliases=("lm-eval", "lm_evaluation_harness", "lm-evaluation-harness"),
                    detect=looks_like_lm_eval)


register()

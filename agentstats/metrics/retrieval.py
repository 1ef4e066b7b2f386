"""Retrieval-quality methods over contexts retrieved in rank order.

Inputs (roles):

``retrieved_contexts``
    the retrieved contexts, best first: ids (strings or numbers), or objects with an ``id`` (or ``doc_id``) key;
``ground_truth_contexts``
    the relevant ones: a list of ids (relevance 1 each), or a mapping id -> graded relevance (0 = not relevant);
``relevance``
    alternatively, one relevance label per retrieved context, in the same order (booleans, 0/1, or grades), such as
    a judge's or an annotator's labels.

The formulas are those of ``trec_eval`` (Buckley & Voorhees; the reference implementation behind ``ir-measures``
and ``ranx``), and the tests check them against ``ir-measures``' values and hand-computed cases:

* ``retrieval_precision``: relevant retrieved / retrieved (``P`` at the full depth);
* ``average_precision``: ``sum over relevant ranks k of P@k / R`` with ``R`` the number of relevant contexts in the
  ground truth (``AP``; with labels only, ``R`` is the number of relevant labels retrieved);
* ``reciprocal_rank``: ``1 / rank`` of the first relevant context, 0 if none (``RR``);
* ``hit_rate``: 1 when any relevant context is retrieved (``Success`` at full depth);
* ``ndcg``: ``DCG / IDCG`` with ``DCG = sum_k rel_k / log2(k + 1)`` and the ideal ordering of the ground truth's
  grades (Järvelin & Kekäläinen 2002, ACM TOIS 20(4); trec_eval's ``ndcg``, linear gain);
* ``context_relevance``: mean relevance label of the retrieved contexts (labels in [0, 1]); without labels, the
  judge or embedding method scores each retrieved passage's text against the question
  (:func:`agentstats.metrics.judged.context_relevance_judge`, :func:`agentstats.metrics.embedding.
  embedding_context_relevance`; the passages are :func:`context_texts`).

A context retrieved twice counts once, at its first rank (trec_eval keeps one score per document).

Edge cases: no ground truth and no labels, or a ground truth with no relevant context -> not applicable (trec_eval
leaves such queries out); nothing retrieved (missing or empty list) -> not applicable for precision and
context relevance (no denominator), and 0 for the ranking measures when the ground truth holds relevant contexts
(the retriever missed them all).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from agentstats.metrics.base import Score, not_applicable

__all__ = [
    "average_precision",
    "context_relevance",
    "context_texts",
    "hit_rate",
    "ndcg",
    "reciprocal_rank",
    "relevance_vector",
    "retrieval_precision",
]

_LOG2 = [1.0 / math.log2(k + 2) for k in range(256)]


def _disc(i: int) -> float:
    return _LOG2[i] if i < 256 else 1.0 / math.log2(i + 2)


def _id(v: Any) -> str:
    if isinstance(v, Mapping):
        for key in ("id", "doc_id", "document_id"):
            if key in v:
                return str(v[key])
        raise ValueError(f"a retrieved context object needs an id (or doc_id) field, got keys {sorted(v)}")
    return str(v)


def relevance_vector(values: Mapping[str, Any], *, prefer_labels: bool = False
                     ) -> tuple[list[float], list[float] | None, str | None]:
    """Graded relevance of each retrieved context, the ground truth's grades, or a not-applicable reason.

    The ground truth is used when given (the ranking measures need the number of relevant contexts), else the
    labels; ``prefer_labels`` reverses that order.

    Returns
    -------
    (rels, truth, reason)
        ``rels``: relevance of the retrieved contexts in rank order (duplicates dropped); ``truth``: every grade of
        the ground truth (None when relevance comes from labels); ``reason``: why the metric does not apply, or None.

    Raises
    ------
    ValueError
        When labels and retrieved contexts differ in length, or a label or grade is not a finite number >= 0.
    """
    retrieved = values.get("retrieved_contexts")
    gt = values.get("ground_truth_contexts")
    labels = values.get("relevance")
    ret = list(retrieved) if isinstance(retrieved, Sequence) and not isinstance(retrieved, str) else (
        [] if retrieved is None else [retrieved])
    if gt is not None and not (isinstance(gt, Sequence | Mapping) and not isinstance(gt, str)):
        gt = [gt]
    if gt is not None and not (prefer_labels and labels is not None):
        grades = {str(k): _grade(v) for k, v in gt.items()} if isinstance(gt, Mapping) else {_id(g): 1.0 for g in gt}
        truth = [g for g in grades.values() if g > 0]
        if not truth:
            return [], None, "no relevant context in the ground truth"
        seen: set[str] = set()
        rels = []
        for r in ret:
            i = _id(r)
            if i in seen:
                continue
            seen.add(i)
            rels.append(grades.get(i, 0.0))
        return rels, truth, None
    if labels is not None:
        labs = [_grade(x) for x in labels]
        if len(labs) != len(ret):
            raise ValueError(f"relevance: {len(labs)} labels for {len(ret)} retrieved contexts")
        if not labs:
            return [], None, "nothing retrieved"
        return labs, None, None
    return [], None, "no ground truth contexts or relevance labels"


_TEXT_KEYS = ("text", "content", "page_content")


def context_texts(values: Mapping[str, Any]) -> list[str] | Score:
    """Return the texts of the retrieved passages, in rank order, for the model-scored context relevance.

    The ``context`` role (a list of passages, or one text) when it holds any; else the ``retrieved_contexts``
    objects' ``text``, ``content`` or ``page_content`` field (plain strings there are ids, not texts). Blank
    passages are left out.

    Returns
    -------
    list of str or Score
        The passages, or a not-applicable score: "no question" without ``input``, "no retrieved passage text"
        without any passage.
    """
    q = values.get("input")
    if q is None or not str(q).strip():
        return not_applicable("no question")
    ctx = values.get("context")
    items: list[Any]
    if ctx is not None and not (isinstance(ctx, list | tuple) and not ctx):
        items = list(ctx) if isinstance(ctx, list | tuple) else [ctx]
    else:
        ret = values.get("retrieved_contexts")
        ret = ret if isinstance(ret, list | tuple) else []
        items = [next((r[k] for k in _TEXT_KEYS if r.get(k) is not None), None) for r in ret if isinstance(r, Mapping)]
    texts = [str(x) for x in items if x is not None and str(x).strip()]
    return texts or not_applicable("no retrieved passage text (context, or retrieved_contexts objects with text)")


def _grade(v: Any) -> float:
    if isinstance(v, bool):
        return 1.0 if v else 0.0
    try:
        g = float(v)
    except (TypeError, ValueError):
        raise ValueError(f"relevance grade must be a number or a boolean, got {v!r}") from None
    if not math.isfinite(g) or g < 0:
        raise ValueError(f"relevance grade must be a finite number >= 0, got {v!r}")
    return g


def retrieval_precision(values: Mapping[str, Any], params: Mapping[str, Any]) -> Score:
    """Share of the retrieved contexts that are relevant (trec_eval ``P`` at the full retrieved depth).

    Not applicable without ground truth or labels, or when nothing was retrieved.
    """
    rels, _, reason = relevance_vector(values)
    if reason:
        return not_applicable(reason)
    if not rels:
        return not_applicable("nothing retrieved")
    hits = sum(1 for r in rels if r > 0)
    return Score(hits / len(rels), {"relevant_retrieved": hits, "retrieved": len(rels)})


def average_precision(values: Mapping[str, Any], params: Mapping[str, Any]) -> Score:
    """Average precision: ``sum_{k relevant} P@k / R`` (trec_eval ``map`` per query; Manning et al. 2008, ch. 8).

    ``R`` = relevant contexts in the ground truth (with labels only: relevant labels retrieved). 0 when nothing is
    retrieved. Evidence: ranks (1-based) of the relevant contexts retrieved.
    """
    rels, truth, reason = relevance_vector(values)
    if reason:
        return not_applicable(reason)
    total = len(truth) if truth is not None else sum(1 for r in rels if r > 0)
    hits, acc, ranks = 0, 0.0, []
    for k, r in enumerate(rels, start=1):
        if r > 0:
            hits += 1
            acc += hits / k
            ranks.append(k)
    return Score(acc / total if total else 0.0, {"relevant_ranks": ranks, "n_relevant": total})


def reciprocal_rank(values: Mapping[str, Any], params: Mapping[str, Any]) -> Score:
    """``1 / rank`` of the first relevant retrieved context, 0 when none is retrieved (trec_eval ``recip_rank``)."""
    rels, _, reason = relevance_vector(values)
    if reason:
        return not_applicable(reason)
    for k, r in enumerate(rels, start=1):
        if r > 0:
            return Score(1.0 / k, {"first_relevant_rank": k})
    return Score(0.0, {"first_relevant_rank": None})


def hit_rate(values: Mapping[str, Any], params: Mapping[str, Any]) -> Score:
    """1 when at least one relevant context is retrieved, else 0 (trec_eval ``success`` at the full depth)."""
    rels, _, reason = relevance_vector(values)
    if reason:
        return not_applicable(reason)
    hits = sum(1 for r in rels if r > 0)
    return Score(1.0 if hits else 0.0, {"relevant_retrieved": hits})


def ndcg(values: Mapping[str, Any], params: Mapping[str, Any]) -> Score:
    """Normalised discounted cumulative gain over the whole ranking, linear gain (trec_eval ``ndcg``).

    ``DCG = sum_k rel_k / log2(k + 1)``; ``IDCG`` the DCG of the ground truth's grades sorted from the highest
    (Järvelin & Kekäläinen 2002, ACM TOIS 20(4):422-446). ``params["k"]`` cuts the ranking (``ndcg_cut_k``). With
    labels only, the ideal ordering is that of the labels retrieved.
    """
    rels, truth, reason = relevance_vector(values)
    if reason:
        return not_applicable(reason)
    k = params.get("k")
    ranked = rels[:k] if k else rels
    ideal = sorted(truth if truth is not None else rels, reverse=True)
    ideal = ideal[:k] if k else ideal
    dcg = sum(r * _disc(i) for i, r in enumerate(ranked) if r > 0)
    idcg = sum(r * _disc(i) for i, r in enumerate(ideal) if r > 0)
    if idcg == 0:
        return not_applicable("no relevant context in the labels")
    return Score(dcg / idcg, {"dcg": dcg, "idcg": idcg})


def context_relevance(values: Mapping[str, Any], params: Mapping[str, Any]) -> Score:
    """Mean relevance label of the retrieved contexts (labels 0/1, booleans or scores in [0, 1]).

    From the ``relevance`` labels when given (an annotator's or a judge's), else from the ground truth (a context
    in it counts 1, grades are capped at 1). Not applicable when nothing was retrieved or neither is given.
    """
    rels, _, reason = relevance_vector(values, prefer_labels=True)
    if reason:
        return not_applicable(reason)
    if not rels:
        return not_applicable("nothing retrieved")
    capped = [min(r, 1.0) for r in rels]
    return Score(sum(capped) / len(capped), {"labels": capped})

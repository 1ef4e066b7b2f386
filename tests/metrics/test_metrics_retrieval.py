"""Retrieval metrics: hand-computed cases and trec_eval's values through ir-measures on random rankings."""

import math

import numpy as np
import pytest

from agentstats.metrics import get_metric
from agentstats.metrics import retrieval as r

ir_measures = pytest.importorskip("ir_measures")


def _v(fn, **values):
    return fn(values, {})


def test_hand_computed_binary_ranking():
    vals = {"retrieved_contexts": ["d1", "d2", "d3", "d4"], "ground_truth_contexts": ["d2", "d4", "d7"]}
    assert _v(r.retrieval_precision, **vals).value == pytest.approx(2 / 4)
    # relevant at ranks 2 and 4: (1/2 + 2/4) / 3 relevant in the ground truth
    assert _v(r.average_precision, **vals).value == pytest.approx((1 / 2 + 2 / 4) / 3)
    assert _v(r.reciprocal_rank, **vals).value == pytest.approx(1 / 2)
    assert _v(r.hit_rate, **vals).value == 1.0
    dcg = 1 / math.log2(3) + 1 / math.log2(5)
    idcg = 1 + 1 / math.log2(3) + 1 / math.log2(4)
    assert _v(r.ndcg, **vals).value == pytest.approx(dcg / idcg)


def test_hand_computed_graded_ndcg_and_cut():
    vals = {"retrieved_contexts": ["a", "b", "c"], "ground_truth_contexts": {"b": 1, "c": 2, "z": 0}}
    dcg = 1 / math.log2(3) + 2 / math.log2(4)
    idcg = 2 + 1 / math.log2(3)
    assert _v(r.ndcg, **vals).value == pytest.approx(dcg / idcg)
    # cut at 1: nothing relevant in the top 1
    assert r.ndcg(vals, {"k": 1}).value == 0.0
    assert _v(r.average_precision, **vals).value == pytest.approx((1 / 2 + 2 / 3) / 2)


def test_objects_with_ids_and_duplicates_count_once():
    vals = {"retrieved_contexts": [{"id": "x", "text": "..."}, {"id": "x"}, {"doc_id": "y"}],
            "ground_truth_contexts": ["y"]}
    assert _v(r.reciprocal_rank, **vals).value == pytest.approx(1 / 2)
    assert _v(r.retrieval_precision, **vals).value == pytest.approx(1 / 2)


def test_labels_context_relevance_and_precision():
    vals = {"retrieved_contexts": ["p1", "p2", "p3", "p4"], "relevance": [True, 0, 1, 0.5]}
    assert _v(r.context_relevance, **vals).value == pytest.approx(2.5 / 4)
    assert _v(r.retrieval_precision, **vals).value == pytest.approx(3 / 4)
    # labels win for context relevance, the ground truth for the ranking measures
    both = {**vals, "ground_truth_contexts": ["p4"]}
    assert _v(r.context_relevance, **both).value == pytest.approx(2.5 / 4)
    assert _v(r.reciprocal_rank, **both).value == pytest.approx(1 / 4)


def test_edge_cases_not_applicable_never_zero():
    for fn in (r.retrieval_precision, r.average_precision, r.reciprocal_rank, r.hit_rate, r.ndcg, r.context_relevance):
        s = _v(fn, retrieved_contexts=["a"])
        assert s.value is None and "no ground truth" in s.evidence["not_applicable"]
        s = _v(fn, retrieved_contexts=["a"], ground_truth_contexts=[])
        assert s.value is None
        s = _v(fn, retrieved_contexts=["a"], ground_truth_contexts={"a": 0})
        assert s.value is None
    # nothing retrieved: no denominator for precision / context relevance; the ranking measures are 0
    for fn in (r.retrieval_precision, r.context_relevance):
        assert _v(fn, retrieved_contexts=[], ground_truth_contexts=["a"]).value is None
    for fn in (r.average_precision, r.reciprocal_rank, r.hit_rate, r.ndcg):
        assert _v(fn, retrieved_contexts=None, ground_truth_contexts=["a"]).value == 0.0


def test_bad_labels_raise_with_field():
    with pytest.raises(ValueError, match="3 labels for 2"):
        _v(r.context_relevance, retrieved_contexts=["a", "b"], relevance=[1, 0, 1])
    with pytest.raises(ValueError, match="finite number >= 0"):
        _v(r.hit_rate, retrieved_contexts=["a"], ground_truth_contexts={"a": -1})
    with pytest.raises(ValueError, match="number or a boolean"):
        _v(r.hit_rate, retrieved_contexts=["a"], relevance=["yes"])


def test_against_trec_eval_through_ir_measures():
    from ir_measures import AP, RR, P, Qrel, ScoredDoc, Success, nDCG

    rng = np.random.default_rng(11)
    qrels, run, ours = [], [], {}
    for q in range(200):
        qid = f"q{q}"
        docs = [f"d{j}" for j in range(30)]
        n_rel = int(rng.integers(1, 6))
        rel_docs = rng.choice(docs, size=n_rel, replace=False)
        grades = {str(d): int(rng.integers(1, 4)) for d in rel_docs}
        depth = int(rng.integers(1, 15))
        ranked = [str(d) for d in rng.choice(docs, size=depth, replace=False)]
        qrels += [Qrel(qid, d, g) for d, g in grades.items()]
        run += [ScoredDoc(qid, d, float(depth - k)) for k, d in enumerate(ranked)]
        ours[qid] = {"retrieved_contexts": ranked, "ground_truth_contexts": grades, "depth": depth}
    measures = {"average_precision": AP, "reciprocal_rank": RR, "ndcg": nDCG, "hit_rate": Success @ 1000}
    ref: dict[tuple[str, str], float] = {}
    for m in ir_measures.iter_calc(list(measures.values()), qrels, run):
        ref[(m.query_id, str(m.measure))] = m.value
    checked = 0
    for name, measure in measures.items():
        metric = get_metric(name)
        for qid, vals in ours.items():
            got = metric.score(vals).value
            assert got == pytest.approx(ref[(qid, str(measure))], abs=1e-9), (name, qid)
            checked += 1
    # precision at the full retrieved depth is trec_eval's P@depth
    for qid, vals in ours.items():
        (m,) = ir_measures.iter_calc([P @ vals["depth"]], [q for q in qrels if q.query_id == qid],
                                     [s for s in run if s.query_id == qid])
        assert get_metric("retrieval_precision").score(vals).value == pytest.approx(m.value, abs=1e-9)
    assert checked == 800

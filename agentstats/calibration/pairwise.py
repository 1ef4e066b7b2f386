"""Pairwise judging (A vs B) with position-bias control: every pair is judged in both orders.

LLM judges prefer a position (usually the first response shown) and longer responses (Zheng et al. 2023, "Judging
LLM-as-a-Judge with MT-Bench and Chatbot Arena", NeurIPS Datasets and Benchmarks, arXiv 2306.05685, sec. 3.3;
Wang et al. 2023, "Large Language Models are not Fair Evaluators", arXiv 2305.17926). The remedy used there: ask
in both orders and count a pair as decided only when both orders agree.

For each pair the judge scores (A, B) and (B, A) (score 1: the first shown is better, 0: the second, 0.5: equal;
prompt ``pairwise_preference``). Each order names a winner in the original labels (``"A"``, ``"B"`` or ``"tie"``).

* ``consistent``: both orders name the same winner; ``winner`` is that winner when consistent, else None.
* ``decided``: consistent and the winner is A or B.
* swap-inconsistency rate: inconsistent pairs / pairs with both verdicts (pairs with a ``judge_missing`` verdict in
  either order are counted apart, never as a win or a loss).
* first-position win rate: among order-verdicts that name A or B, the share won by the response shown first (0.5
  for a judge without position bias).
* longer-wins rate (verbosity): among decided pairs whose responses differ in length, the share won by the longer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

__all__ = ["PairwiseResult", "pairwise_judge"]

#: A score within this distance of 0.5 is a tie.
TIE_TOL = 1e-9


@dataclass(frozen=True)
class PairwiseResult:
    """Both-order verdicts of :func:`pairwise_judge`.

    Attributes
    ----------
    pairs : pandas.DataFrame
        One row per pair: ``item_id``, ``score_ab`` (A shown first), ``score_ba`` (B shown first), ``winner_ab``,
        ``winner_ba`` (winner in original labels by each order, None when that verdict is missing), ``status``
        (``"ok"`` or ``"judge_missing"``), ``consistent``, ``winner``, ``decided``, ``len_a``, ``len_b``.
    verdicts : list of JudgeVerdict
        Every verdict, A-first order then B-first order.
    """

    pairs: pd.DataFrame
    verdicts: list[Any]

    @property
    def n_pairs(self) -> int:
        """Pairs given."""
        return len(self.pairs)

    @property
    def n_missing(self) -> int:
        """Pairs with a missing verdict in at least one order."""
        return int((self.pairs["status"] != "ok").sum())

    @property
    def swap_inconsistency_rate(self) -> float:
        """Inconsistent pairs / pairs with both verdicts (NaN when none has both)."""
        ok = self.pairs[self.pairs["status"] == "ok"]
        return float((~ok["consistent"].astype(bool)).mean()) if len(ok) else float("nan")

    @property
    def first_position_win_rate(self) -> float:
        """Share of order-verdicts naming A or B that the first-shown response won (NaN when none)."""
        first = 0
        total = 0
        for _, row in self.pairs.iterrows():
            for winner, first_label in ((row["winner_ab"], "A"), (row["winner_ba"], "B")):
                if winner in ("A", "B"):
                    total += 1
                    first += winner == first_label
        return first / total if total else float("nan")

    @property
    def longer_wins_rate(self) -> float:
        """Share of decided pairs with different lengths won by the longer response (NaN when none)."""
        d = self.pairs[self.pairs["decided"].astype(bool) & (self.pairs["len_a"] != self.pairs["len_b"])]
        if d.empty:
            return float("nan")
        longer = d.apply(lambda r: "A" if r["len_a"] > r["len_b"] else "B", axis=1)
        return float((longer == d["winner"]).mean())

    def summary(self) -> dict[str, Any]:
        """Return the counts and rates in one dict (NaN rates as None)."""

        def num(x: float) -> float | None:
            return None if x != x else x

        return {
            "n_pairs": self.n_pairs,
            "n_missing": self.n_missing,
            "n_decided": int(self.pairs["decided"].sum()),
            "a_wins": int((self.pairs["decided"] & (self.pairs["winner"] == "A")).sum()),
            "b_wins": int((self.pairs["decided"] & (self.pairs["winner"] == "B")).sum()),
            "ties": int((self.pairs["winner"] == "tie").sum()),
            "swap_inconsistency_rate": num(self.swap_inconsistency_rate),
            "first_position_win_rate": num(self.first_position_win_rate),
            "longer_wins_rate": num(self.longer_wins_rate),
        }


def _winner(score: float | None, first: str, second: str) -> str | None:
    if score is None:
        return None
    if abs(score - 0.5) <= TIE_TOL:
        return "tie"
    return first if score > 0.5 else second


def pairwise_judge(
    a: Sequence[str],
    b: Sequence[str],
    *,
    judge: Any,
    queries: Sequence[str],
    contexts: Sequence[str | None] | None = None,
    item_ids: Sequence[Any] | None = None,
) -> PairwiseResult:
    """Judge each pair ``(a[i], b[i])`` in both orders and keep only agreements (module docstring).

    Parameters
    ----------
    a, b : sequence of str, length N
        The two systems' responses, pair by pair.
    judge : OpenAIJudge
        Any judge with ``judge_pairs(items)`` (:meth:`agentstats.scoring.judge.OpenAIJudge.judge_pairs`): the
        existing machinery (instructor-validated output, retries, ``judge_missing``, on-disk cache, bounded
        concurrency, cost accounting) serves both orders in one batch.
    queries : sequence of str, length N
        The request each pair answers.
    contexts : sequence of str or None, optional
        Context shown with each request.
    item_ids : sequence, optional
        Identifiers of the pairs (default ``0..N-1``).

    Returns
    -------
    PairwiseResult

    Raises
    ------
    ValueError
        If the sequences differ in length.
    TypeError
        If ``judge`` has no ``judge_pairs`` method.
    """
    n = len(a)
    contexts = list(contexts) if contexts is not None else [None] * n
    ids = list(item_ids) if item_ids is not None else list(range(n))
    lengths = {"b": len(b), "queries": len(queries), "contexts": len(contexts), "item_ids": len(ids)}
    bad = {k: v for k, v in lengths.items() if v != n}
    if bad:
        raise ValueError(f"pairwise_judge: a has {n} responses but {bad}")
    if not callable(getattr(judge, "judge_pairs", None)):
        raise TypeError(f"pairwise_judge needs a judge with judge_pairs(), got {type(judge).__name__}")
    forward = [{"query": q, "context": c, "first": x, "second": y} for q, c, x, y in zip(queries, contexts, a, b,
                                                                                         strict=True)]
    backward = [{**it, "first": it["second"], "second": it["first"]} for it in forward]
    verdicts = judge.judge_pairs(forward + backward)
    rows = []
    for i in range(n):
        v_ab, v_ba = verdicts[i], verdicts[n + i]
        s_ab = v_ab.score if v_ab.ok else None
        s_ba = v_ba.score if v_ba.ok else None
        w_ab, w_ba = _winner(s_ab, "A", "B"), _winner(s_ba, "B", "A")
        ok = w_ab is not None and w_ba is not None
        consistent = ok and w_ab == w_ba
        winner = w_ab if consistent else None
        rows.append({
            "item_id": ids[i], "score_ab": s_ab, "score_ba": s_ba, "winner_ab": w_ab, "winner_ba": w_ba,
            "status": "ok" if ok else "judge_missing", "consistent": bool(consistent), "winner": winner,
            "decided": bool(consistent and winner in ("A", "B")), "len_a": len(a[i]), "len_b": len(b[i]),
        })
    return PairwiseResult(pd.DataFrame(rows), list(verdicts))

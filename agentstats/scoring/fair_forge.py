"""A Fair Forge-compatible view of scored trials, for users migrating from Fair Forge's ``Agentic`` metric.

:func:`fair_forge_view` returns one :class:`AgenticMetricView` per conversation (trial) with the fields of Fair
Forge's ``fair_forge.schemas.agentic.AgenticMetric`` (``session_id, assistant_id, total_interactions,
correct_interactions, is_fully_correct, threshold, correctness_scores, correct_indices,
tool_correctness_scores, k, pass_at_k, pass_at_k_ci_low, pass_at_k_ci_high, pass_pow_k, pass_pow_k_ci_low,
pass_pow_k_ci_high``) and ``ToolCorrectnessScore`` (``tool_selection_correct, parameter_accuracy,
sequence_correct, result_utilization, overall_correctness, is_correct, reasoning``), plus our own keys
(``agent, task_id, trial, n, c, n_missing, estimator, basis, ci_prob, extrapolated, outcome,
outcome_source, n_judge_missing``).

Where the numbers differ from Fair Forge's, and why (also in ``docs/scoring.md``):

* **What pass@k counts.** Fair Forge's ``Agentic`` computes pass@k per conversation from
  ``n = total_interactions`` and ``c = correct_interactions``, i.e. it treats the turns of *one* conversation
  as if they were independent attempts. pass@k (Chen et al. 2021, arXiv 2107.03374) and pass^k (Yao et al.
  2024, arXiv 2406.12045) are about repeated independent *trials of the same task*. Our default
  ``basis="trials"`` counts trials: for each (agent, task), ``n`` = scored trials, ``c`` = successful
  trials, and every conversation of that task carries the task's values. ``basis="interactions"`` reproduces
  Fair Forge's numbers for comparison.
* **Estimator.** Fair Forge's frequentist mode plugs ``p = c/n`` into ``1-(1-p)^k`` and ``p^k`` (biased: down
  for pass@k, up for pass^k, by Jensen's inequality). ``estimator="plugin"`` gives exactly that;
  ``"unbiased"`` gives the combinatorial estimators (``k <= n``, else ``None``); ``"beta"`` (default) the exact
  Beta-Binomial posterior mean with an equal-tailed credible interval computed in closed form, where Fair
  Forge's Bayesian mode draws Monte Carlo samples.
* **Judge failures.** Fair Forge scores 0.0 when its judge raises. Here a failed verdict is ``None`` in
  ``correctness_scores``, ``is_fully_correct`` is ``None`` and the trial's outcome is missing (excluded from
  ``n``), never a failure.
* **Tool scores.** Components that do not apply are ``None`` (Fair Forge: sequence 1.0 when order does not
  matter, utilization 0.0 unless the user set ``final_answer_uses_tools``), pairing is one-to-one by optimal
  assignment (Fair Forge compares each expected call with the *first* used call of that name), and an
  interaction with expected tools but no calls scores 0, where Fair Forge reports ``None`` (not applicable).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any, Literal

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from agentstats.intervals import CI_PROB
from agentstats.records.trial import Trial
from agentstats.scoring.outcomes import ScoringResult, score_trials

__all__ = ["AgenticMetricView", "ToolCorrectnessView", "fair_forge_frame", "fair_forge_view"]

Estimator = Literal["beta", "plugin", "unbiased"]
Basis = Literal["trials", "interactions"]


class ToolCorrectnessView(BaseModel):
    """Fair Forge ``ToolCorrectnessScore`` fields for one interaction (``None`` = component not applicable)."""

    model_config = ConfigDict(extra="forbid")

    tool_selection_correct: float = Field(ge=0.0, le=1.0)
    parameter_accuracy: float | None = Field(default=None, ge=0.0, le=1.0)
    sequence_correct: float | None = Field(default=None, ge=0.0, le=1.0)
    result_utilization: float | None = Field(default=None, ge=0.0, le=1.0)
    overall_correctness: float = Field(ge=0.0, le=1.0)
    is_correct: bool
    reasoning: str | None = None


class AgenticMetricView(BaseModel):
    """Fair Forge ``AgenticMetric`` fields for one conversation (trial), plus agentstats keys.

    ``pass_pow_k`` is Fair Forge's name for pass^k (``pass_hat_k`` here, also available as a property).
    ``correctness_scores`` has one entry per interaction: ``None`` where there is no reference answer or the
    judge verdict is missing. ``n, c`` are the counts the pass values come from (trials of this agent on this
    task for ``basis="trials"``; this conversation's scored interactions for ``basis="interactions"``).
    """

    model_config = ConfigDict(extra="forbid")

    session_id: str
    assistant_id: str
    total_interactions: int
    correct_interactions: int | None
    is_fully_correct: bool | None
    threshold: float
    correctness_scores: list[float | None] | None
    correct_indices: list[int] | None
    tool_correctness_scores: list[ToolCorrectnessView | None] = Field(default_factory=list)
    k: int
    pass_at_k: float | None
    pass_at_k_ci_low: float | None = None
    pass_at_k_ci_high: float | None = None
    pass_pow_k: float | None
    pass_pow_k_ci_low: float | None = None
    pass_pow_k_ci_high: float | None = None
    # agentstats keys
    agent: str
    task_id: str
    trial: int
    outcome: str | None
    outcome_source: str
    n_judge_missing: int
    n: int
    c: int
    n_missing: int
    estimator: str
    basis: str
    ci_prob: float | None
    extrapolated: bool

    @property
    def pass_hat_k(self) -> float | None:
        """pass^k (Fair Forge's ``pass_pow_k``)."""
        return self.pass_pow_k


def _none(x: Any) -> Any:
    if x is None:
        return None
    try:
        if isinstance(x, float) and math.isnan(x):
            return None
        if pd.isna(x):
            return None
    except (TypeError, ValueError):
        pass
    return x


def _pass_values(n: int, c: int, k: int, estimator: str, prior: tuple[float, float], ci_prob: float
                 ) -> dict[str, float | None]:
    import agentstats.estimators as est

    out: dict[str, float | None] = {"pass_at_k": None, "pass_at_k_ci_low": None, "pass_at_k_ci_high": None,
                                    "pass_pow_k": None, "pass_pow_k_ci_low": None, "pass_pow_k_ci_high": None}
    if estimator == "plugin":
        if n > 0:
            out["pass_at_k"] = float(est.plugin_pass_at_k(n, c, k))
            out["pass_pow_k"] = float(est.plugin_pass_hat_k(n, c, k))
    elif estimator == "unbiased":
        if 0 < k <= n:
            out["pass_at_k"] = float(est.pass_at_k(n, c, k))
            out["pass_pow_k"] = float(est.pass_hat_k(n, c, k))
    else:
        row = est.beta_pass_k(n, c, k, prior=prior, ci_prob=ci_prob).iloc[0]
        out.update(
            pass_at_k=float(row.pass_at_k_mean), pass_at_k_ci_low=float(row.pass_at_k_ci_low),
            pass_at_k_ci_high=float(row.pass_at_k_ci_high), pass_pow_k=float(row.pass_hat_k_mean),
            pass_pow_k_ci_low=float(row.pass_hat_k_ci_low), pass_pow_k_ci_high=float(row.pass_hat_k_ci_high),
        )
    return out


def fair_forge_view(
    scored: ScoringResult | Iterable[Trial],
    k: int = 1,
    *,
    estimator: Estimator = "beta",
    basis: Basis = "trials",
    prior: tuple[float, float] = (1.0, 1.0),
    ci_prob: float = CI_PROB,
    **score_kwargs: Any,
) -> list[AgenticMetricView]:
    """Per-conversation metrics with Fair Forge ``AgenticMetric`` fields.

    Parameters
    ----------
    scored : ScoringResult or iterable of Trial
        Output of :func:`agentstats.scoring.outcomes.score_trials`, or trials to score first (with
        ``score_kwargs``).
    k : int
        ``k`` of pass@k and pass^k (>= 1).
    estimator : {"beta", "plugin", "unbiased"}
        ``"beta"``: exact Beta-Binomial posterior mean and equal-tailed credible interval
        (:func:`agentstats.estimators.beta_pass_k`; Gelman et al., BDA3, ch. 2). ``"plugin"``: Fair Forge's
        ``1-(1-c/n)^k`` and ``(c/n)^k`` (biased). ``"unbiased"``: ``1 - C(n-c,k)/C(n,k)`` (Chen et al. 2021,
        arXiv 2107.03374) and ``C(c,k)/C(n,k)`` (Yao et al. 2024, arXiv 2406.12045), ``None`` for ``k > n``.
    basis : {"trials", "interactions"}
        What ``n`` and ``c`` count: trials of the (agent, task) (default, the meaning of pass@k), or the
        interactions of the conversation (Fair Forge's ``Agentic``, for comparison).
    prior : tuple of float
        Beta prior ``(a, b)`` for ``estimator="beta"``.
    ci_prob : float
        Credible-interval mass for ``estimator="beta"``.
    **score_kwargs
        Passed to :func:`score_trials` when ``scored`` is trials.

    Returns
    -------
    list of AgenticMetricView
        One per trial, in input order.

    Raises
    ------
    ValueError
        For ``k < 1`` or an unknown estimator/basis.
    """
    if int(k) != k or k < 1:
        raise ValueError(f"fair_forge_view: k must be a positive integer, got {k!r}")
    if estimator not in ("beta", "plugin", "unbiased"):
        raise ValueError(f"fair_forge_view: estimator must be 'beta', 'plugin' or 'unbiased', got {estimator!r}")
    if basis not in ("trials", "interactions"):
        raise ValueError(f"fair_forge_view: basis must be 'trials' or 'interactions', got {basis!r}")
    res = scored if isinstance(scored, ScoringResult) else score_trials(scored, **score_kwargs)
    threshold = float(res.settings.get("threshold", 0.7))

    cells: dict[tuple[str, str], list[int]] = {}
    for t in res.trials:
        cell = cells.setdefault((t.agent, t.task_id), [0, 0, 0])
        outcome = t.outcome()
        if outcome == "missing":
            cell[2] += 1
        elif outcome is not None:
            cell[0] += 1
            cell[1] += outcome == "success"

    idf = res.interaction_scores
    groups = {key: g for key, g in idf.groupby(["agent", "task_id", "trial"], sort=False)}
    orow = {(r.agent, r.task_id, r.trial): r for r in res.outcomes.itertuples(index=False)}
    cache: dict[tuple[int, int], dict[str, float | None]] = {}
    views: list[AgenticMetricView] = []
    for t in res.trials:
        key = (t.agent, t.task_id, t.trial)
        g = groups.get(key)
        o = orow[key]
        scores: list[float | None] = []
        correct_idx: list[int] = []
        tools: list[ToolCorrectnessView | None] = []
        n_applicable = 0
        if g is not None:
            for r in g.itertuples(index=False):
                s = _none(r.answer_score) if r.answer_status == "ok" else None
                scores.append(None if s is None else float(s))
                if r.answer_status in ("ok", "judge_missing"):
                    n_applicable += 1
                if s is not None and s >= threshold:
                    correct_idx.append(int(r.interaction))
                tools.append(_tool_view(r))
        measured = o.n_answers_scored > 0 or o.n_judge_missing > 0
        if basis == "trials":
            n, c, n_miss = cells[(t.agent, t.task_id)]
        else:
            n, c, n_miss = int(o.n_answers_scored), int(o.n_answers_correct), int(o.n_judge_missing)
        vals = cache.get((n, c))
        if vals is None:
            vals = _pass_values(n, c, int(k), estimator, prior, ci_prob)
            cache[(n, c)] = vals
        extra = t.__pydantic_extra__ or {}
        views.append(AgenticMetricView(
            session_id=str(extra.get("session_id") or f"{t.task_id}/{t.trial}"),
            assistant_id=str(extra.get("assistant_id") or t.agent),
            total_interactions=len(t.interactions),
            correct_interactions=int(o.n_answers_correct) if measured else None,
            is_fully_correct=None if _none(o.answers_correct) is None else bool(o.answers_correct),
            threshold=threshold,
            correctness_scores=scores if measured else None,
            correct_indices=correct_idx if measured else None,
            tool_correctness_scores=tools,
            k=int(k),
            **vals,
            agent=t.agent, task_id=t.task_id, trial=t.trial, outcome=o.outcome, outcome_source=o.outcome_source,
            n_judge_missing=int(o.n_judge_missing), n=n, c=c, n_missing=n_miss, estimator=estimator, basis=basis,
            ci_prob=ci_prob if estimator == "beta" else None, extrapolated=bool(k > n),
        ))
    return views


def _tool_view(r: Any) -> ToolCorrectnessView | None:
    overall = _none(r.tool_score)
    if overall is None:
        return None
    return ToolCorrectnessView(
        tool_selection_correct=float(r.tool_selection),
        parameter_accuracy=_none(r.tool_parameters),
        sequence_correct=_none(r.tool_sequence),
        result_utilization=_none(r.tool_utilization),
        overall_correctness=float(overall),
        is_correct=bool(r.tool_passed),
    )


def fair_forge_frame(views: Sequence[AgenticMetricView]) -> pd.DataFrame:
    """Return the views as a DataFrame, one row per conversation (list fields kept as Python lists)."""
    return pd.DataFrame.from_records([v.model_dump() for v in views])

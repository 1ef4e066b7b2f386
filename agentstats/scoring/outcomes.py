"""From scores to outcomes: per-interaction verdicts → one outcome per trial, ready for ``to_counts``.

:func:`score_trials` scores every interaction's answer (deterministic matcher or LLM judge) and tool calls
(:func:`agentstats.scoring.tools.score_trial_tools`), then decides each trial's outcome:

1. ``status`` first: ``infra_error`` stays missing, ``agent_error`` stays a failure (nothing is judged).
2. The *derived* outcome: a trial succeeds when every interaction that has a reference answer is correct
   (``score >= threshold``) and, with ``require_tools=True``, its tool calls pass (``overall >=
   tool_threshold``, interaction-level and trial-level expectations alike). A trial with no reference answer
   anywhere is decided by its tool calls alone, when it has tool ground truth; with neither, it stays unscored.
3. If any answer verdict the derived outcome needs is ``judge_missing`` (the judge could not answer after all
   retries), the derived outcome is **missing**, not a failure and not a success (see "Why missing" below).
4. A benchmark-given ``success`` / ``reward`` stays authoritative (``prefer_benchmark=True``, the default): the
   derived outcome is then only reported, with its agreement with the benchmark. With ``prefer_benchmark=False``
   the derived outcome wins, and the benchmark is the fallback for trials the scorer could not decide.

Steps 1 and 4 are not repeated here: scoring writes its result into the trial (``success``, ``judge_missing``)
and the outcome is read back with :meth:`agentstats.records.trial.Trial.outcome`, the one outcome rule of the project.

Why missing, not failure, when the judge fails
----------------------------------------------
A ``judge_missing`` verdict carries no information about the agent: it records a 429, a timeout or a judge
model that could not produce valid output. Counting it as a failure (what Fair Forge does, scoring 0.0 on any
judge exception) biases pass@k and pass^k downwards by an amount that depends on the judge provider's load,
not on the agent, and a retry-heavy day would look like a regression. Counting it as a success is the mirror
bias. Dropping the trial from ``n`` (``n_missing`` in :func:`agentstats.records.counts.to_counts`) keeps the
estimators unbiased as long as judge failures are unrelated to the answer (missing completely at random), and
the report shows how many there were, so a user can see when that assumption is strained (a judge that
always times out on long answers). The same rule as for ``infra_error`` trials, for the same reason. The
trial's ``judge_missing`` flag carries this to :meth:`agentstats.records.trial.Trial.outcome`.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

import numpy as np
import pandas as pd

from agentstats.records.trial import Interaction, Outcome, Status, Trial
from agentstats.scoring.judge import (
    AnswerItem,
    Judge,
    JudgeVerdict,
    ProgressFn,
    ToolCallItem,
    ToolMetric,
    resolve_judge,
)
from agentstats.scoring.tools import ArgMatchOptions, GroundTruthError, ToolScore, TrialToolScores, score_trial_tools

__all__ = ["ScoringError", "ScoringResult", "conversation_text", "score_trials"]

_TOOL_METRICS: tuple[ToolMetric, ...] = ("tool_call_relevance", "parameter_grounding")
OutcomeSource = Literal["status", "benchmark", "scored", "judge_missing", "unscored"]


class ScoringError(RuntimeError):
    """Scoring produced something inconsistent: a bug, never bad input.

    Examples: a judge that returned the wrong number of verdicts, or an outcome that
    :meth:`agentstats.records.trial.Trial.outcome` reads back differently from the one scoring decided.
    """


@dataclass
class ScoringResult:
    """What :func:`score_trials` returns.

    Attributes
    ----------
    trials : list of Trial
        Copies of the input trials with ``success`` set from the derived outcome (or ``judge_missing=True``)
        where the derived outcome is used; unchanged where the benchmark stays authoritative. Pass straight to
        :func:`agentstats.records.counts.to_counts`.
    interaction_scores : pandas.DataFrame
        One row per interaction of every trial (columns listed in :func:`score_trials`).
    outcomes : pandas.DataFrame
        One row per trial (columns listed in :func:`score_trials`).
    verdicts : list of JudgeVerdict
        Every answer verdict, in ``interaction_scores`` order (rows with a reference answer).
    tool_verdicts : list of JudgeVerdict
        LLM tool-metric verdicts (empty unless ``llm_tool_metrics`` was given).
    judge : str
        The judge's name.
    judge_stats : dict
        Calls, cache hits, missing verdicts by error kind, tokens and cost of this run.
    settings : dict
        The thresholds and switches used.
    ground_truth_errors : list of GroundTruthError
        Expected tool calls that violate their tool's JSON-Schema (dataset errors), with their location.
    """

    trials: list[Trial]
    interaction_scores: pd.DataFrame
    outcomes: pd.DataFrame
    verdicts: list[JudgeVerdict]
    tool_verdicts: list[JudgeVerdict]
    judge: str
    judge_stats: dict[str, Any]
    settings: dict[str, Any] = field(default_factory=dict)
    ground_truth_errors: list[GroundTruthError] = field(default_factory=list)

    @property
    def judge_missing(self) -> pd.DataFrame:
        """Interactions whose answer verdict is ``judge_missing``, with the error (the report's failure table)."""
        df = self.interaction_scores
        cols = ["agent", "task_id", "trial", "interaction", "interaction_id", "judge_error_kind", "judge_error"]
        return df.loc[df["answer_status"] == "judge_missing", cols].reset_index(drop=True)

    @property
    def n_verdicts(self) -> int:
        """Judge verdicts of this run: answers and LLM tool metrics."""
        return len(self.verdicts) + len(self.tool_verdicts)

    @property
    def n_verdicts_missing(self) -> int:
        """Verdicts that are ``judge_missing`` (answers and LLM tool metrics)."""
        return sum(1 for v in [*self.verdicts, *self.tool_verdicts] if not v.ok)

    @property
    def judge_missing_share(self) -> float:
        """Share of this run's verdicts that are missing, in [0, 1]; 0 when nothing was judged."""
        n = self.n_verdicts
        return self.n_verdicts_missing / n if n else 0.0

    def summary(self) -> dict[str, Any]:
        """Summarize counts for display.

        Outcomes, their sources, judge failures and their share, cache hits, agreement with the benchmark,
        answers decided by a lenient rule, ground-truth errors.
        """
        o = self.outcomes
        both = o["agrees"].notna()
        idf = self.interaction_scores
        return {
            "n_trials": len(o),
            "outcomes": {k: int(v) for k, v in o["outcome"].fillna("unscored").value_counts().items()},
            "outcome_source": {k: int(v) for k, v in o["outcome_source"].value_counts().items()},
            "n_interactions": len(idf),
            "n_answers_judged": len(self.verdicts),
            "n_judge_missing": int((idf["answer_status"] == "judge_missing").sum()),
            "n_trials_judge_missing": int((o["n_judge_missing"] > 0).sum()),
            "judge_missing_by_kind": dict(Counter(v.error_kind for v in self.verdicts if not v.ok)),
            "n_verdicts": self.n_verdicts,
            "n_verdicts_missing": self.n_verdicts_missing,
            "judge_missing_share": self.judge_missing_share,
            "n_answers_lenient": int((idf["answer_lenient"].fillna(False).astype(bool)
                                      & idf["answer_correct"].fillna(False).astype(bool)).sum()),
            "n_ground_truth_errors": len(self.ground_truth_errors),
            "judge": self.judge,
            "judge_cache_hits": int(self.judge_stats.get("cache_hits", 0)),
            "judge_http_requests": int(self.judge_stats.get("http_requests", 0)),
            "judge_cost_usd": self.judge_stats.get("cost_usd"),
            "agreement_with_benchmark": float(o.loc[both, "agrees"].astype(bool).mean()) if both.any() else None,
            "n_agreement": int(both.sum()),
        }


def conversation_text(trial: Trial, interaction: int, call: int | None = None, max_chars: int = 8000) -> str:
    """Render the conversation before a point, as plain text (for the tool-call judge prompts).

    Parameters
    ----------
    trial : Trial
    interaction : int
        Index of the current interaction; earlier ones are included whole (query, calls with results, answer).
    call : int, optional
        Index of the call being graded within the current interaction: its query and the calls before it are
        included. ``None``: the whole current interaction except its answer.
    max_chars : int
        Keep at most this many characters (the *end* of the conversation, which matters most).
    """
    lines: list[str] = []
    for i, it in enumerate(trial.interactions[: interaction + 1]):
        for c in it.context:
            lines.append(f"CONTEXT: {c}")
        if it.query:
            lines.append(f"USER: {it.query}")
        calls = it.tool_calls if i < interaction else it.tool_calls[: call if call is not None else None]
        for tc in calls:
            args = tc.arguments if tc.parse_error is None else tc.arguments_raw
            lines.append(f"TOOL CALL: {tc.name}({json.dumps(args, default=str, sort_keys=True)})")
            if tc.result is not None:
                res = tc.result if isinstance(tc.result, str) else json.dumps(tc.result, default=str)
                lines.append(f"TOOL RESULT: {res}")
        if i < interaction and it.answer:
            lines.append(f"ASSISTANT: {it.answer}")
    text = "\n".join(lines)
    return text if len(text) <= max_chars else "...\n" + text[-max_chars:]


def _benchmark_outcome(t: Trial) -> Outcome | None:
    """Read the benchmark's own verdict (``success`` / ``reward``) with the one outcome rule."""
    return t.model_copy(update={"status": Status.completed, "judge_missing": False}).outcome()


def _mean(xs: Sequence[float]) -> float:
    return float(np.mean(xs)) if xs else float("nan")


def score_trials(
    trials: Iterable[Trial],
    judge: Judge | str | None = None,
    threshold: float = 0.7,
    tool_threshold: float = 1.0,
    require_tools: bool = False,
    prefer_benchmark: bool = True,
    matcher: str = "auto",
    *,
    tool_weights: Mapping[str, float] | None = None,
    tool_options: ArgMatchOptions | None = None,
    read_only: Collection[str] = (),
    invalid_ground_truth: Literal["exclude", "score"] = "exclude",
    llm_tool_metrics: Sequence[str] = (),
    progress: ProgressFn | None = None,
) -> ScoringResult:
    """Score answers and tool calls of each trial and set each trial's outcome.

    Three passes: answers (one judge batch), tool calls (deterministic), then one outcome per trial, written into
    the trial and read back with :meth:`agentstats.records.trial.Trial.outcome`.

    Parameters
    ----------
    trials : iterable of Trial
    judge : None, "deterministic", "openai" or Judge
        Answer judge. ``None`` / ``"deterministic"``: :class:`~agentstats.scoring.judge.DeterministicJudge`
        with ``matcher``; ``"openai"``: :class:`~agentstats.scoring.judge.OpenAIJudge` from the environment;
        or any :class:`~agentstats.scoring.judge.Judge`.
    threshold : float
        An answer is correct when its score ``>= threshold`` (Fair Forge's default 0.7).
    tool_threshold : float
        Tool calls pass when their overall score ``>= tool_threshold`` (default 1.0: all components perfect).
    require_tools : bool
        Also require the tool calls to pass for a trial to succeed (trials without tool ground truth are not
        blocked by this; they are counted in ``outcomes.tool_passed`` as NA).
    prefer_benchmark : bool
        Keep a benchmark-given ``success`` / ``reward`` as the outcome (default). False: the derived outcome
        wins where it exists.
    matcher : str
        Deterministic matcher when ``judge`` is ``None`` / ``"deterministic"`` (default ``"auto"``, see
        :func:`agentstats.scoring.answers.auto_match`).
    tool_weights, tool_options, read_only, invalid_ground_truth
        Passed to :func:`agentstats.scoring.tools.score_trial_tools` as ``weights``, ``options``, ``read_only``
        (names of tools that do not change state, left out of tool scoring) and ``invalid_ground_truth``.
    llm_tool_metrics : sequence of str
        LLM tool metrics to add, from ``"tool_call_relevance"``, ``"parameter_grounding"`` (needs a judge with
        ``supports_tool_metrics``). Reported per interaction (mean over its calls); they do not decide outcomes.
    progress : callable, optional
        ``progress(done, total)`` while the judge works.

    Returns
    -------
    ScoringResult
        ``interaction_scores`` columns: ``agent, task_id, trial, interaction, interaction_id, answer_score,
        answer_status`` (``ok`` / ``judge_missing`` / ``not_applicable`` (no reference) / ``skipped`` (error
        status)), ``answer_correct, answer_rule`` (the matcher rule that decided, for deterministic judges),
        ``answer_lenient`` (decided by a lenient rule), ``judge, prompt, judge_error_kind, judge_error,
        judge_cached, judge_latency_s, judge_prompt_tokens, judge_completion_tokens, judge_cost_usd, tool_score,
        tool_passed, tool_selection, tool_parameters, tool_sequence, tool_utilization, tool_precision,
        tool_recall, tool_f1, n_tool_calls, n_expected_tool_calls`` (+ one column per LLM tool metric).
        ``outcomes`` columns: ``agent, task_id, trial, status, n_interactions, n_answers_scored,
        n_answers_correct, n_judge_missing, answers_correct, tool_score, tool_passed, trial_tool_score,
        n_ground_truth_errors, derived_outcome, benchmark_outcome, outcome, outcome_source, agrees``.
        ``outcome_source`` is one of ``status``, ``benchmark``, ``scored``, ``judge_missing``, ``unscored``.

    Raises
    ------
    TypeError
        When an element is not a :class:`~agentstats.records.trial.Trial`.
    ValueError
        For thresholds outside [0, 1], an unknown judge name or LLM tool metric, or a judge without tool
        metrics asked for them.
    agentstats.scoring.judge.JudgeAuthError
        When the LLM judge's endpoint refuses the credentials (after the first request).
    ScoringError
        When a judge returns the wrong number of verdicts.
    """
    for name, val in (("threshold", threshold), ("tool_threshold", tool_threshold)):
        if not 0.0 <= float(val) <= 1.0:
            raise ValueError(f"score_trials: {name} must be in [0, 1], got {val}")
    trials = list(trials)
    for i, t in enumerate(trials):
        if not isinstance(t, Trial):
            raise TypeError(f"score_trials expects Trial objects; element {i} is {type(t).__name__}")
    trials = [_unscore(t) for t in trials]
    bad = [m for m in llm_tool_metrics if m not in _TOOL_METRICS]
    if bad:
        raise ValueError(f"score_trials: unknown LLM tool metric(s) {bad}; use {list(_TOOL_METRICS)}")
    the_judge = resolve_judge(judge, matcher)
    if llm_tool_metrics and not getattr(the_judge, "supports_tool_metrics", False):
        raise ValueError(f"score_trials: judge {getattr(the_judge, 'name', the_judge)!r} has no LLM tool metrics "
                         "(use an OpenAIJudge)")
    stats_before = _stats_snapshot(the_judge)

    verdicts, by_pos = _answer_pass(trials, the_judge, progress)
    tool_kw: dict[str, Any] = {"tool_threshold": tool_threshold, "read_only": read_only,
                               "invalid_ground_truth": invalid_ground_truth}
    if tool_weights is not None:
        tool_kw["weights"] = tool_weights
    if tool_options is not None:
        tool_kw["options"] = tool_options
    tool_scores = {ti: score_trial_tools(t, **tool_kw) for ti, t in enumerate(trials)
                   if t.status == Status.completed}
    metrics = [cast(ToolMetric, m) for m in llm_tool_metrics]
    tool_verdicts, llm_tool = _llm_tool_pass(trials, the_judge, metrics, progress)

    irows: list[dict[str, Any]] = []
    orows: list[dict[str, Any]] = []
    out_trials: list[Trial] = []
    gt_errors: list[GroundTruthError] = []
    for ti, t in enumerate(trials):
        ts = tool_scores.get(ti)
        n_scored = n_correct = n_missing = 0
        for ii, it in enumerate(t.interactions):
            row = _interaction_row(t, ii, it, by_pos.get((ti, ii)), threshold,
                                   ts.interactions[ii] if ts is not None else None)
            for metric, per in llm_tool.items():
                vs = per.get((ti, ii), [])
                row[metric] = _mean([v.score for v in vs if v.ok and v.score is not None])
                row[f"{metric}_missing"] = sum(1 for v in vs if not v.ok)
            irows.append(row)
            if row["answer_status"] == "ok":
                n_scored += 1
                n_correct += bool(row["answer_correct"])
            elif row["answer_status"] == "judge_missing":
                n_missing += 1
        if ts is not None:
            gt_errors.extend(ts.ground_truth_errors)

        derived, answers_ok = _derive(t, n_scored, n_correct, n_missing, ts, require_tools)
        bench = _benchmark_outcome(t)
        new_t, source = _apply_outcome(t, derived, bench, prefer_benchmark)
        final = new_t.outcome()
        if source in ("scored", "judge_missing") and final != derived:
            raise ScoringError(f"trial {t.key}: derived outcome {derived!r} reads back as {final!r}")
        out_trials.append(new_t)
        avail = [s.overall for s in ([*ts.interactions, ts.trial] if ts is not None else []) if s is not None]
        orows.append({
            "agent": t.agent, "task_id": t.task_id, "trial": t.trial, "status": str(t.status),
            "n_interactions": len(t.interactions), "n_answers_scored": n_scored, "n_answers_correct": n_correct,
            "n_judge_missing": n_missing, "answers_correct": answers_ok,
            "tool_score": _mean(avail), "tool_passed": ts.passed if ts is not None else None,
            "trial_tool_score": ts.trial.overall if (ts is not None and ts.trial is not None) else float("nan"),
            "n_ground_truth_errors": len(ts.ground_truth_errors) if ts is not None else 0,
            "derived_outcome": derived, "benchmark_outcome": bench, "outcome": final, "outcome_source": source,
            "agrees": (bench == derived) if (bench is not None and derived in ("success", "failure")) else None,
        })

    idf = pd.DataFrame.from_records(irows, columns=_ICOLS + [c for m in llm_tool for c in (m, f"{m}_missing")])
    for c in ("answer_correct", "answer_lenient", "tool_passed", "judge_cached"):
        idf[c] = idf[c].astype("boolean")
    odf = pd.DataFrame.from_records(orows, columns=_OCOLS)
    for c in ("answers_correct", "tool_passed", "agrees"):
        odf[c] = odf[c].astype("boolean")
    return ScoringResult(
        trials=out_trials,
        interaction_scores=idf,
        outcomes=odf,
        verdicts=verdicts,
        tool_verdicts=tool_verdicts,
        judge=getattr(the_judge, "name", type(the_judge).__name__),
        judge_stats=_stats_delta(the_judge, stats_before),
        settings={"threshold": threshold, "tool_threshold": tool_threshold, "require_tools": require_tools,
                  "prefer_benchmark": prefer_benchmark, "matcher": matcher, "read_only": sorted(read_only),
                  "invalid_ground_truth": invalid_ground_truth, "llm_tool_metrics": list(llm_tool_metrics)},
        ground_truth_errors=gt_errors,
    )


def _answer_pass(trials: list[Trial], judge: Judge, progress: ProgressFn | None
                 ) -> tuple[list[JudgeVerdict], dict[tuple[int, int], JudgeVerdict]]:
    """Judge every reference answer of the completed trials in one batch; verdicts by (trial, interaction)."""
    items: list[AnswerItem] = []
    where: list[tuple[int, int]] = []
    for ti, t in enumerate(trials):
        if t.status != Status.completed:
            continue
        for ii, it in enumerate(t.interactions):
            if it.expected_answer is None:
                continue
            items.append(AnswerItem(answer=it.answer, expected=it.expected_answer, query=it.query,
                                    context=tuple(it.context)))
            where.append((ti, ii))
    verdicts = judge.judge_answers(items, progress=progress) if items else []
    if len(verdicts) != len(items):
        raise ScoringError(f"judge {judge!r} returned {len(verdicts)} verdicts for {len(items)} items")
    return verdicts, dict(zip(where, verdicts, strict=True))


def _llm_tool_pass(trials: list[Trial], judge: Judge, metrics: Sequence[ToolMetric], progress: ProgressFn | None
                   ) -> tuple[list[JudgeVerdict], dict[str, dict[tuple[int, int], list[JudgeVerdict]]]]:
    """LLM tool-metric verdicts for every call of the completed trials (informational, never an outcome)."""
    tool_verdicts: list[JudgeVerdict] = []
    per_metric: dict[str, dict[tuple[int, int], list[JudgeVerdict]]] = {}
    if not metrics:
        return tool_verdicts, per_metric
    titems: list[ToolCallItem] = []
    tpos: list[tuple[int, int]] = []
    for ti, t in enumerate(trials):
        if t.status != Status.completed:
            continue
        for ii, it in enumerate(t.interactions):
            for ci, call in enumerate(it.tool_calls):
                titems.append(ToolCallItem(call=call, conversation=conversation_text(t, ii, ci),
                                           tools=tuple(t.tools)))
                tpos.append((ti, ii))
    for metric in metrics:
        vs = judge.judge_tool_calls(titems, metric=metric, progress=progress) if titems else []
        if len(vs) != len(titems):
            raise ScoringError(f"judge {judge!r} returned {len(vs)} {metric} verdicts for {len(titems)} calls")
        tool_verdicts.extend(vs)
        per: dict[tuple[int, int], list[JudgeVerdict]] = {}
        for pos, v in zip(tpos, vs, strict=True):
            per.setdefault(pos, []).append(v)
        per_metric[metric] = per
    return tool_verdicts, per_metric


def _derive(t: Trial, n_scored: int, n_correct: int, n_missing: int, ts: TrialToolScores | None,
            require_tools: bool) -> tuple[Outcome | None, bool | None]:
    """Derive a completed trial's outcome (steps 2-3 of the module docstring) and whether its answers are right."""
    if t.status != Status.completed:
        return None, None
    tool_passed = ts.passed if ts is not None else None
    if n_missing:
        return "missing", None
    if n_scored:
        answers_ok = n_correct == n_scored
        ok = answers_ok and (tool_passed is not False if require_tools else True)
        return ("success" if ok else "failure"), answers_ok
    if tool_passed is not None:
        return ("success" if tool_passed else "failure"), None
    return None, None


def _apply_outcome(t: Trial, derived: Outcome | None, bench: Outcome | None, prefer_benchmark: bool
                   ) -> tuple[Trial, OutcomeSource]:
    """Write the decision into a copy of the trial; :meth:`Trial.outcome` then reads the final outcome."""
    if t.status != Status.completed:
        return t, "status"
    update: dict[str, Any]
    source: OutcomeSource
    if bench is not None and (prefer_benchmark or derived is None):
        update, source = {}, "benchmark"
    elif derived == "missing":
        update, source = {"judge_missing": True, "success": None}, "judge_missing"
    elif derived is not None:
        update, source = {"success": derived == "success", "judge_missing": False}, "scored"
    else:
        update, source = {}, "unscored"
    if not update and t.judge_missing:
        update = {"judge_missing": False}  # a stale flag from elsewhere must not hide this outcome
    if "success" in update:
        # remember what we overwrote, so that scoring the saved output again starts from the benchmark
        update = {**update, "scoring_source": source, "benchmark_success": t.success}
    return (t.model_copy(update=update) if update else t), source


_ICOLS = [
    "agent", "task_id", "trial", "interaction", "interaction_id", "answer_score", "answer_status",
    "answer_correct", "answer_rule", "answer_lenient", "judge", "prompt", "judge_error_kind", "judge_error",
    "judge_cached", "judge_latency_s", "judge_prompt_tokens", "judge_completion_tokens", "judge_cost_usd",
    "tool_score", "tool_passed", "tool_selection", "tool_parameters", "tool_sequence", "tool_utilization",
    "tool_precision", "tool_recall", "tool_f1", "n_tool_calls", "n_expected_tool_calls",
]
_OCOLS = [
    "agent", "task_id", "trial", "status", "n_interactions", "n_answers_scored", "n_answers_correct",
    "n_judge_missing", "answers_correct", "tool_score", "tool_passed", "trial_tool_score", "n_ground_truth_errors",
    "derived_outcome", "benchmark_outcome", "outcome", "outcome_source", "agrees",
]


def _unscore(t: Trial) -> Trial:
    """Undo an earlier :func:`score_trials` on this trial (restore the benchmark's ``success``).

    Scored trials carry ``scoring_source`` and ``benchmark_success`` (extra fields, kept by the JSONL writer), so
    a derived ``success`` is never mistaken for a benchmark verdict when scored output is scored again.
    """
    extra = t.__pydantic_extra__ or {}
    if "scoring_source" not in extra:
        return t
    rest = {k: v for k, v in extra.items() if k not in ("scoring_source", "benchmark_success")}
    data = t.model_dump(exclude=set(extra))
    data.update(rest)
    data["success"] = extra.get("benchmark_success")
    data["judge_missing"] = False
    return Trial.model_validate(data)


def _nan(x: float | None) -> float:
    return float("nan") if x is None else float(x)


def _interaction_row(t: Trial, ii: int, it: Interaction, v: JudgeVerdict | None, threshold: float,
                     ts: ToolScore | None) -> dict[str, Any]:
    if t.status != Status.completed:
        status = "skipped"
    elif it.expected_answer is None:
        status = "not_applicable"
    elif v is None:
        raise ScoringError(f"trial {t.key}, interaction {ii}: has a reference answer but no verdict")
    else:
        status = v.status
    row: dict[str, Any] = {
        "agent": t.agent, "task_id": t.task_id, "trial": t.trial, "interaction": ii, "interaction_id": it.id,
        "answer_score": _nan(v.score) if v is not None else float("nan"),
        "answer_status": status,
        "answer_correct": (v.score >= threshold) if (v is not None and v.ok and v.score is not None) else None,
        "judge": v.judge if v is not None else None,
        "prompt": (f"{v.prompt_name}@{v.prompt_version}#{v.prompt_hash}" if v is not None and v.prompt_name
                   else None),
        "judge_error_kind": v.error_kind if v is not None else None,
        "judge_error": v.error if v is not None else None,
        "judge_cached": v.cached if v is not None else None,
        "judge_latency_s": _nan(v.latency_s) if v is not None else float("nan"),
        "judge_prompt_tokens": _nan(v.prompt_tokens) if v is not None else float("nan"),
        "judge_completion_tokens": _nan(v.completion_tokens) if v is not None else float("nan"),
        "judge_cost_usd": _nan(v.cost_usd) if v is not None else float("nan"),
        "answer_rule": v.details.get("rule") if v is not None else None,
        "answer_lenient": v.details.get("lenient") if v is not None else None,
        "n_tool_calls": len(it.tool_calls),
        "n_expected_tool_calls": len(it.expected_tool_calls),
    }
    if ts is not None:
        row.update({
            "tool_score": ts.overall, "tool_passed": ts.passed, "tool_selection": ts.selection,
            "tool_parameters": _nan(ts.parameters), "tool_sequence": _nan(ts.sequence),
            "tool_utilization": _nan(ts.utilization), "tool_precision": ts.precision, "tool_recall": ts.recall,
            "tool_f1": ts.f1,
        })
    else:
        row.update({c: float("nan") for c in ("tool_score", "tool_selection", "tool_parameters", "tool_sequence",
                                              "tool_utilization", "tool_precision", "tool_recall", "tool_f1")})
        row["tool_passed"] = None
    return row


def _stats_snapshot(judge: Any) -> dict[str, Any]:
    st = getattr(judge, "stats", None)
    return st.as_dict() if st is not None and hasattr(st, "as_dict") else {}


def _stats_delta(judge: Any, before: dict[str, Any]) -> dict[str, Any]:
    after = _stats_snapshot(judge)
    out: dict[str, Any] = {}
    for k, v in after.items():
        b = before.get(k)
        if isinstance(v, dict):
            out[k] = {kk: vv - (b or {}).get(kk, 0) for kk, vv in v.items() if vv - (b or {}).get(kk, 0)}
        elif isinstance(v, (int, float)) and isinstance(b, (int, float)):
            out[k] = v - b
        else:
            out[k] = v
    return out

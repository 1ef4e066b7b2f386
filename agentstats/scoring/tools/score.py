"""Deterministic tool-call correctness: actual calls against expected calls, per unit and per trial.

:func:`score_tool_calls` scores one list of calls against one list of expected calls; :func:`score_trial_tools`
scores every interaction of a trial and the whole conversation.

The scorer pairs actual and expected calls one-to-one by an optimal assignment
(:mod:`agentstats.scoring.tools.pairing`), so duplicated calls are handled and the result does not depend on the
order of either list. Only calls with the same tool name are ever paired. With ``read_only=`` the calls to tools
that do not change state are left out on both sides first (:mod:`agentstats.scoring.tools.read_only`).

Components of a :class:`ToolScore` (each in ``[0, 1]`` or ``None`` = not applicable):

``selection``
    ``m / max(n_actual, n_expected)`` where ``m`` is the number of name-matched pairs: 1 exactly when the
    multisets of tool names agree; extra and missing calls both lower it.
``parameters``
    ``sum(param_score over pairs) / n_expected``: the share of expected calls whose arguments were
    reproduced (a pair's ``param_score`` is the share of its argument keys that match). ``None`` when nothing
    was expected.
``sequence``
    Only when order matters: the longest common subsequence of the pairs taken in actual order and in
    expected order (computed as a longest increasing subsequence), divided by ``n_expected``. ``None``
    when order does not matter or nothing was expected.
``utilization``
    Share of result-bearing calls whose result is *used* downstream (see
    :func:`agentstats.scoring.tools.utilization.result_utilization`).
    ``None`` when no call recorded a result or nothing comes after the calls; a user-given boolean is the
    fallback.

``overall`` is the weighted mean of the applicable components, weights renormalized over them, so it stays in
``[0, 1]``; ``passed = overall >= tool_threshold``. ``precision``, ``recall`` and ``f1`` count *correct*
calls: pairs with the same name and every argument matched.

Edge-case conventions (documented in ``docs/scoring.md``):

* nothing expected, nothing called: every count-based value is 1, ``overall = 1``, ``passed = True`` and
  ``not_applicable = True``;
* expected but none called: ``selection = parameters = recall = precision = f1 = 0`` (``sequence = 0``
  when order matters), ``overall = 0``: a failure, never "not applicable";
* called but nothing expected: ``selection = 0``, ``precision = 0``, ``recall = 1`` (nothing was missed),
  ``f1 = 0``, ``parameters = sequence = None``, so ``overall = 0`` unless the user weights only
  ``utilization``.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from agentstats.records.trial import ToolCall, ToolSpec, Trial
from agentstats.scoring.tools.ground_truth import GroundTruthError, check_expected_calls
from agentstats.scoring.tools.markers import expected_arguments, to_json
from agentstats.scoring.tools.matching import DEFAULT_OPTIONS, ArgMatchOptions
from agentstats.scoring.tools.pairing import ArgDiff, assign, lis_length, pair_score
from agentstats.scoring.tools.utilization import result_utilization

__all__ = [
    "DEFAULT_WEIGHTS",
    "PairDetail",
    "ToolScore",
    "TrialToolScores",
    "parse_weights",
    "score_tool_calls",
    "score_trial_tools",
]

#: Default component weights. Utilization is a heuristic read off the data, so it is reported but carries
#: no weight unless asked for.
DEFAULT_WEIGHTS: dict[str, float] = {"selection": 1.0, "parameters": 1.0, "sequence": 1.0, "utilization": 0.0}


@dataclass(slots=True)
class PairDetail:
    """One paired (actual, expected) call: indices into the input lists, its argument score and diffs."""

    actual_index: int
    expected_index: int
    name: str
    param_score: float
    correct: bool
    diffs: list[ArgDiff] = field(default_factory=list)


@dataclass(slots=True)
class ToolScore:
    """Tool-call correctness of one list of actual calls against one list of expected calls.

    See the module docstring for the definition of every component and the edge-case conventions.
    ``pairs`` hold the name-matched pairs; ``unmatched_actual`` / ``unmatched_expected`` the indices left
    over; ``lenient_rules_fired`` the lenient comparison rules that made some argument match. Indices always
    refer to the lists given to :func:`score_tool_calls`. ``n_actual`` / ``n_expected`` count the calls that
    were scored: with ``read_only=`` the calls to read-only tools are left out and counted in
    ``n_read_only_actual`` / ``n_read_only_expected``.
    """

    selection: float
    parameters: float | None
    sequence: float | None
    utilization: float | None
    overall: float
    passed: bool
    precision: float
    recall: float
    f1: float
    n_actual: int
    n_expected: int
    n_correct: int
    pairs: list[PairDetail]
    unmatched_actual: list[int]
    unmatched_expected: list[int]
    lenient_rules_fired: list[str]
    not_applicable: bool = False
    malformed_actual: list[int] = field(default_factory=list)
    utilization_source: Literal["data", "user", None] = None
    n_read_only_actual: int = 0
    n_read_only_expected: int = 0

    @property
    def matched_pairs(self) -> list[tuple[int, int]]:
        """``(actual_index, expected_index)`` of every name-matched pair."""
        return [(p.actual_index, p.expected_index) for p in self.pairs]

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form (markers in their ``{"$any_of": ...}`` form)."""
        return {
            "selection": self.selection,
            "parameters": self.parameters,
            "sequence": self.sequence,
            "utilization": self.utilization,
            "overall": self.overall,
            "passed": self.passed,
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "n_actual": self.n_actual,
            "n_expected": self.n_expected,
            "n_correct": self.n_correct,
            "pairs": [
                {"actual_index": p.actual_index, "expected_index": p.expected_index, "name": p.name,
                 "param_score": p.param_score, "correct": p.correct,
                 "diffs": [{"path": d.path, "reason": d.reason, "expected": to_json(d.expected),
                            "actual": d.actual} for d in p.diffs]}
                for p in self.pairs
            ],
            "unmatched_actual": self.unmatched_actual,
            "unmatched_expected": self.unmatched_expected,
            "lenient_rules_fired": self.lenient_rules_fired,
            "not_applicable": self.not_applicable,
            "malformed_actual": self.malformed_actual,
            "utilization_source": self.utilization_source,
            "n_read_only_actual": self.n_read_only_actual,
            "n_read_only_expected": self.n_read_only_expected,
        }




def score_tool_calls(
    actual: Sequence[ToolCall | Mapping[str, Any]],
    expected: Sequence[ToolCall | Mapping[str, Any]],
    *,
    weights: Mapping[str, float] | None = None,
    tool_threshold: float = 1.0,
    sequence_matters: bool = False,
    options: ArgMatchOptions = DEFAULT_OPTIONS,
    final_answer: str | None = None,
    tools: Sequence[ToolSpec | Mapping[str, Any]] | None = None,
    utilization_hint: bool | None = None,
    details: bool = True,
    read_only: Collection[str] = (),
) -> ToolScore:
    """Score actual tool calls against expected ones.

    Parameters
    ----------
    actual : sequence of ToolCall (or dicts)
        Calls the agent made, in order. Malformed calls (``parse_error`` set) pair by name but score 0 on
        arguments.
    expected : sequence of ToolCall (or dicts)
        Expected calls. Argument values may hold :class:`~agentstats.scoring.tools.markers.AnyOf` markers (or
        their JSON form).
    weights : mapping, optional
        Component weights ``selection, parameters, sequence, utilization`` (missing keys take
        :data:`DEFAULT_WEIGHTS`); normalized over the components that apply. Must be >= 0.
    tool_threshold : float
        ``passed = overall >= tool_threshold`` (default 1.0: every weighted component perfect).
    sequence_matters : bool
        Score ``sequence`` (LCS of the pairs in actual vs expected order).
    options : ArgMatchOptions
        Argument comparison options.
    final_answer : str, optional
        Final answer text, for result utilization.
    tools : sequence of ToolSpec, optional
        Tool specs; needed only for ``options.type_rules``.
    utilization_hint : bool, optional
        User-given "results were used" flag, used only when utilization cannot be read from the data.
    details : bool
        Collect per-argument diffs (slightly slower).
    read_only : collection of str
        Names of tools that do not change state (see :mod:`agentstats.scoring.tools.read_only`). Calls to them
        are left out of both lists before pairing, so every component compares the state-changing calls only:
        the reading of benchmarks that grade the final state (tau-bench). Utilization still reads every call.
        Empty (default): every call counts.

    Returns
    -------
    ToolScore

    Raises
    ------
    ValueError
        For a negative or unknown weight, or a threshold outside ``[0, 1]``.

    Notes
    -----
    Pairing is an optimal one-to-one assignment (Hungarian method; Kuhn 1955, Munkres 1957) over
    same-name pairs with cost ``1 - param_score`` and a prohibitive cost for different names, so the
    number of name-matched pairs is maximal and, among those, the argument agreement is maximal. A perfect
    pairing, when one exists, is always found (its total cost 0 is the minimum).
    """
    if not 0.0 <= tool_threshold <= 1.0:
        raise ValueError(f"tool_threshold must be in [0, 1], got {tool_threshold}")
    w = DEFAULT_WEIGHTS if weights is None else _check_weights(weights)
    all_acts = [_as_call(c) for c in actual]
    all_exps = [_as_call(c) for c in expected]
    # positions of the scored calls in the given lists (all of them unless read-only calls are left out)
    a_pos = [i for i, c in enumerate(all_acts) if c.name not in read_only]
    e_pos = [j for j, c in enumerate(all_exps) if c.name not in read_only]
    acts = [all_acts[i] for i in a_pos]
    exps = [all_exps[j] for j in e_pos]
    na, ne = len(acts), len(exps)
    n_ro = (len(all_acts) - na, len(all_exps) - ne)
    specs = _spec_map(tools) if options.type_rules else None
    malformed = [a_pos[i] for i, c in enumerate(acts) if c.parse_error is not None]

    util: float | None = None
    util_src: Literal["data", "user", None] = None
    if all_acts:
        util = result_utilization(all_acts, final_answer)
        if util is not None:
            util_src = "data"
    if util is None and utilization_hint is not None and (all_acts or all_exps):
        util, util_src = (1.0 if utilization_hint else 0.0), "user"

    if na == 0 and ne == 0:
        comps = {"selection": 1.0, "parameters": None, "sequence": None, "utilization": util}
        overall = _overall(comps, w)
        return ToolScore(1.0, None, None, util, overall, overall >= tool_threshold, 1.0, 1.0, 1.0, 0, 0, 0,
                         [], [], [], [], not_applicable=True, utilization_source=util_src,
                         n_read_only_actual=n_ro[0], n_read_only_expected=n_ro[1])

    # candidate pairs: same name only
    exp_args = [expected_arguments(e) for e in exps]
    scored: dict[tuple[int, int], tuple[float, set[str], list[ArgDiff]]] = {}
    cross = float(min(na, ne) + 1)
    cost = [[cross] * ne for _ in range(na)]
    for i, a in enumerate(acts):
        for j, e in enumerate(exps):
            if a.name == e.name:
                spec = specs.get(e.name) if specs is not None else None
                s = pair_score(a, exp_args[j], options, spec, details)
                scored[(i, j)] = s
                cost[i][j] = 1.0 - s[0]
    pairs_idx = [(i, j) for i, j in assign(cost, na, ne) if (i, j) in scored] if scored else []

    pairs: list[PairDetail] = []
    rules: set[str] = set()
    n_correct = 0
    psum = 0.0
    for i, j in sorted(pairs_idx, key=lambda p: p[1]):
        ps, fired, diffs = scored[(i, j)]
        ok = ps == 1.0
        if ok:
            n_correct += 1
            rules |= fired
        psum += ps
        pairs.append(PairDetail(a_pos[i], e_pos[j], exps[j].name, ps, ok, diffs))
    m = len(pairs)
    pa = {i for i, _ in pairs_idx}
    pe = {j for _, j in pairs_idx}

    selection = m / max(na, ne)
    parameters = psum / ne if ne else None
    sequence: float | None = None
    if sequence_matters and ne:
        order = [j for _, j in sorted(pairs_idx)]
        sequence = lis_length(order) / ne
    precision = n_correct / na if na else 0.0
    recall = n_correct / ne if ne else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    comps = {"selection": selection, "parameters": parameters, "sequence": sequence, "utilization": util}
    overall = _overall(comps, w)
    return ToolScore(
        selection=selection,
        parameters=parameters,
        sequence=sequence,
        utilization=util,
        overall=overall,
        passed=overall >= tool_threshold,
        precision=precision,
        recall=recall,
        f1=f1,
        n_actual=na,
        n_expected=ne,
        n_correct=n_correct,
        pairs=pairs,
        unmatched_actual=[a_pos[i] for i in range(na) if i not in pa],
        unmatched_expected=[e_pos[j] for j in range(ne) if j not in pe],
        lenient_rules_fired=sorted(rules),
        malformed_actual=malformed,
        utilization_source=util_src,
        n_read_only_actual=n_ro[0],
        n_read_only_expected=n_ro[1],
    )


def _as_call(c: ToolCall | Mapping[str, Any]) -> ToolCall:
    return c if isinstance(c, ToolCall) else ToolCall.model_validate(c)


def _spec_map(tools: Sequence[ToolSpec | Mapping[str, Any]] | None) -> dict[str, Mapping[str, Any]] | None:
    if not tools:
        return None
    out: dict[str, Mapping[str, Any]] = {}
    for t in tools:
        spec = t if isinstance(t, ToolSpec) else ToolSpec.model_validate(t)
        out[spec.name] = spec.parameters or {}
    return out


def parse_weights(text: str) -> dict[str, float]:
    """Component weights from ``"selection=1,parameters=2"`` (the command line's ``--tool-weights``).

    Components not named keep :data:`DEFAULT_WEIGHTS`; the result is complete (all four keys).

    Raises
    ------
    ValueError
        For an item without ``=``, an unknown component (the known ones named), a value that is not a finite number
        >= 0, a component given twice, or weights that are all 0.
    """
    given: dict[str, float] = {}
    for item in (p.strip() for p in text.split(",")):
        if not item:
            continue
        name, sep, value = (x.strip() for x in item.partition("="))
        if not sep:
            raise ValueError(f"tool weight {item!r}: write COMPONENT=NUMBER, components {list(DEFAULT_WEIGHTS)}")
        if name in given:
            raise ValueError(f"tool weight {name!r} given twice")
        try:
            given[name] = float(value)
        except ValueError:
            raise ValueError(f"tool weight {name!r} must be a number, got {value!r}") from None
    w = _check_weights(given)
    if not any(w.values()):
        raise ValueError("tool weights are all 0: give at least one component a weight > 0")
    return w


def _check_weights(weights: Mapping[str, float]) -> dict[str, float]:
    w = dict(DEFAULT_WEIGHTS)
    for k, v in weights.items():
        if k not in DEFAULT_WEIGHTS:
            raise ValueError(f"unknown weight {k!r}; expected one of {sorted(DEFAULT_WEIGHTS)}")
        if not (isinstance(v, int | float) and v >= 0 and math.isfinite(v)):
            raise ValueError(f"weight {k!r} must be a finite number >= 0, got {v!r}")
        w[k] = float(v)
    return w


def _overall(comps: Mapping[str, float | None], w: Mapping[str, float]) -> float:
    num = 0.0
    den = 0.0
    for k, v in comps.items():
        if v is None:
            continue
        wk = w.get(k, 0.0)
        num += wk * v
        den += wk
    if den == 0.0:
        # no weighted component applies: fall back to selection, which always applies
        return float(comps["selection"] or 0.0)
    return num / den


# --------------------------------------------------------------------------------------------------------
# per trial
# --------------------------------------------------------------------------------------------------------
@dataclass(slots=True)
class TrialToolScores:
    """Tool scores of one trial.

    Attributes
    ----------
    interactions : list of ToolScore or None
        One entry per interaction: ``None`` where nothing was expected (``empty_expected="no_ground_truth"``)
        or where the expected calls are invalid and excluded (see ``ground_truth_errors``).
    trial : ToolScore or None
        The whole conversation against the trial-level expected calls, under the same rules.
    ground_truth_errors : list of GroundTruthError
        Expected calls that violate their tool's JSON-Schema (dataset errors), with their location.
    """

    interactions: list[ToolScore | None]
    trial: ToolScore | None
    ground_truth_errors: list[GroundTruthError] = field(default_factory=list)

    @property
    def passed(self) -> bool | None:
        """True when every available score passed; ``None`` when there is no score at all."""
        scores = [s for s in [*self.interactions, self.trial] if s is not None]
        if not scores:
            return None
        return all(s.passed for s in scores)


def score_trial_tools(
    trial: Trial,
    *,
    weights: Mapping[str, float] | None = None,
    tool_threshold: float = 1.0,
    sequence_matters: bool | None = None,
    options: ArgMatchOptions = DEFAULT_OPTIONS,
    empty_expected: Literal["no_ground_truth", "no_calls"] = "no_ground_truth",
    details: bool = True,
    read_only: Collection[str] = (),
    invalid_ground_truth: Literal["exclude", "score"] = "exclude",
) -> TrialToolScores:
    """Score each interaction's calls, and the whole conversation's, against their expected calls.

    The whole conversation is scored against the trial-level ``expected_tool_calls`` (tau-bench actions).
    Before scoring, the expected calls are checked against the trial's tool specs
    (:func:`agentstats.scoring.tools.ground_truth.check_expected_calls`): an expected call that violates its
    own tool's JSON-Schema is a dataset error, listed in ``ground_truth_errors``.

    Parameters
    ----------
    trial : Trial
    weights, tool_threshold, options, details, read_only
        As in :func:`score_tool_calls`.
    sequence_matters : bool, optional
        Overrides each interaction's ``tool_sequence_matters``; for the trial level the default is
        ``False`` (tau-bench grades the final database state, not the order of actions).
    empty_expected : {"no_ground_truth", "no_calls"}
        What an empty expected list means: no ground truth (score ``None``, the default) or "no call
        should be made" (scored, so any call fails).
    invalid_ground_truth : {"exclude", "score"}
        What to do with a unit (an interaction, or the trial level) whose expected calls hold a dataset error:
        ``"exclude"`` (default) gives it no score, as if it had no ground truth, since no agent could match it;
        ``"score"`` scores it anyway. The errors are listed either way.

    Returns
    -------
    TrialToolScores

    Raises
    ------
    ValueError
        For an unknown ``invalid_ground_truth``, or tool specs that repeat a name.
    """
    if invalid_ground_truth not in ("exclude", "score"):
        raise ValueError(f"invalid_ground_truth must be 'exclude' or 'score', got {invalid_ground_truth!r}")
    kw: dict[str, Any] = {"weights": weights, "tool_threshold": tool_threshold, "options": options,
                          "tools": trial.tools, "details": details, "read_only": read_only}
    per: list[ToolScore | None] = []
    gt_errors: list[GroundTruthError] = []
    all_calls: list[ToolCall] = []
    last_answer: str | None = None
    for ii, it in enumerate(trial.interactions):
        all_calls.extend(it.tool_calls)
        if it.answer:
            last_answer = it.answer
        if not it.expected_tool_calls and empty_expected == "no_ground_truth":
            per.append(None)
            continue
        errs = check_expected_calls(trial, it.expected_tool_calls, level="interaction", interaction=ii)
        gt_errors.extend(errs)
        if errs and invalid_ground_truth == "exclude":
            per.append(None)
            continue
        seq = it.tool_sequence_matters if sequence_matters is None else sequence_matters
        hint = getattr(it, "tool_results_used", None)
        per.append(score_tool_calls(
            it.tool_calls, it.expected_tool_calls, sequence_matters=seq, final_answer=it.answer,
            utilization_hint=hint if isinstance(hint, bool) else None, **kw,
        ))
    trial_score: ToolScore | None = None
    if trial.expected_tool_calls or empty_expected == "no_calls":
        errs = check_expected_calls(trial, trial.expected_tool_calls, level="trial")
        gt_errors.extend(errs)
        if not (errs and invalid_ground_truth == "exclude"):
            trial_score = score_tool_calls(
                all_calls, trial.expected_tool_calls, sequence_matters=bool(sequence_matters),
                final_answer=last_answer, **kw,
            )
    return TrialToolScores(per, trial_score, gt_errors)

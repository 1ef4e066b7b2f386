"""The gate's configuration: thresholds, tolerances, decision probabilities, overrides, review triggers, budgets.

:class:`GateConfig` is a pydantic model; :func:`load_gate_config` reads it from a YAML or JSON file (the suffix
decides; ``.yaml`` / ``.yml`` / ``.json``) and turns every validation error into a :class:`GateConfigError` that
names the file, the field path and, where the YAML parser knows it, the line. The reference with every field and
its default is in ``docs/gate.md``.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from agentstats.intervals import CI_PROB, DEFAULT_SEED

__all__ = [
    "DecisionProbabilities",
    "GateConfig",
    "GateConfigError",
    "JudgeCalibrationConfig",
    "ReviewConfig",
    "RiskOverride",
    "load_gate_config",
]

Probability = float
#: A mean on the [0, 1] scale (thresholds), validated per entry so that errors name the metric's key.
UnitFloat = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]
NonNegative = Annotated[float, Field(ge=0.0, allow_inf_nan=False)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _unit(name: str, v: float, *, open_low: bool = False, open_high: bool = False) -> float:
    if isinstance(v, bool) or not math.isfinite(v):
        raise ValueError(f"{name} must be a finite number")
    lo_ok = v > 0 if open_low else v >= 0
    hi_ok = v < 1 if open_high else v <= 1
    if not (lo_ok and hi_ok):
        lo = "(0" if open_low else "[0"
        hi = "1)" if open_high else "1]"
        raise ValueError(f"{name} must be in {lo}, {hi}, got {v}")
    return v


class DecisionProbabilities(_Strict):
    """Posterior probabilities at which a check counts as met or failed.

    A threshold check is met when ``P(mean >= threshold) >= pass_probability`` and failed when
    ``P(mean >= threshold) <= 1 - fail_probability``. A regression check is met when
    ``P(difference < -tolerance) <= max_regression_probability`` and failed when it is ``>= fail_probability``.
    Anything in between is undecided (RETRY).
    """

    pass_probability: Probability = 0.95
    max_regression_probability: Probability = 0.05
    fail_probability: Probability = 0.95

    @field_validator("pass_probability", "fail_probability")
    @classmethod
    def _high(cls, v: float, info: Any) -> float:
        v = _unit(info.field_name, v, open_low=True, open_high=True)
        if v <= 0.5:
            raise ValueError(f"{info.field_name} must be above 0.5 (a decision needs more than a coin flip), got {v}")
        return v

    @field_validator("max_regression_probability")
    @classmethod
    def _low(cls, v: float) -> float:
        v = _unit("max_regression_probability", v, open_low=True, open_high=True)
        if v >= 0.5:
            raise ValueError(f"max_regression_probability must be below 0.5, got {v}")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> DecisionProbabilities:
        if 1 - self.fail_probability >= self.pass_probability:
            raise ValueError("1 - fail_probability must be below pass_probability (a check cannot be met and failed)")
        if self.fail_probability <= self.max_regression_probability:
            raise ValueError("fail_probability must exceed max_regression_probability")
        return self


class RiskOverride(_Strict):
    """Settings for the examples of one ``risk_level`` that replace the global ones (any subset of them).

    A threshold given here is checked on that stratum's examples alone (globally, thresholds are checked on all
    examples); tolerances and decision probabilities given here apply to that stratum's checks.
    """

    thresholds: dict[str, UnitFloat] = Field(default_factory=dict)
    regression_tolerance: float | dict[str, float] | None = None
    decision: DecisionProbabilities | None = None

    @field_validator("regression_tolerance")
    @classmethod
    def _tolerance(cls, v: float | dict[str, float] | None) -> float | dict[str, float] | None:
        return None if v is None else _check_tolerance(v)


def _check_tolerance(v: float | dict[str, float]) -> float | dict[str, float]:
    for m, t in v.items() if isinstance(v, dict) else [("*", v)]:
        _unit("regression tolerance" + ("" if m == "*" else f" of {m!r}"), t, open_high=True)
    return v


class ReviewConfig(_Strict):
    """Human-review triggers (they never change the decision; they set ``review_required`` with their evidence).

    Attributes
    ----------
    tags : list of str
        Example tags that call for a reviewer when any example carrying one is in the set.
    refusal_metric, safety_metric : str, optional
        Names of the refusal-rate and safety metrics: a credible rise of both fires the refusal trigger (a
        candidate that got "safer" by refusing more). The refusal metric is *review-only* unless the rest of the
        configuration names it (a threshold, a tolerance, a weight, ``critical``, a risk-level override): its
        mean and baseline difference are reported and feed this trigger, but it has no decisive check
        (:meth:`GateConfig.is_review_only`), since a higher refusal rate is not better.
    max_judge_missing_share : float
        A metric whose share of missing verdicts (``null`` values) in the candidate exceeds this fires a trigger.
    probability : float
        How sure "improved" / "got worse" / "rose" must be: ``P(difference > 0)`` (or ``< 0``) at least this.
    """

    tags: list[str] = Field(default_factory=lambda: ["regulated", "customer-facing"])
    refusal_metric: str | None = "refusal"
    safety_metric: str | None = "safety"
    max_judge_missing_share: float = 0.05
    probability: Probability = 0.9

    @field_validator("max_judge_missing_share")
    @classmethod
    def _share(cls, v: float) -> float:
        return _unit("max_judge_missing_share", v)

    @field_validator("probability")
    @classmethod
    def _prob(cls, v: float) -> float:
        v = _unit("probability", v, open_low=True, open_high=True)
        if v <= 0.5:
            raise ValueError(f"probability must be above 0.5, got {v}")
        return v


class JudgeCalibrationConfig(_Strict):
    """The judge's calibration set, whose error rates the gate carries into its judged metrics.

    Attributes
    ----------
    path : str
        A calibration set (JSONL of ``item_id, metric, verdict, gold``; ``docs/judge.md``). A relative path in a
        config file is read relative to that file's folder.
    metrics : list of str, optional
        The gate metrics to correct (each must be calibrated in the file). Default: every metric both calibrated
        and scored by the candidate.
    thresholds : dict of str to int
        Pass thresholds of ordinal calibrated metrics (``score >= threshold`` passes), as ``agentstats calibrate
        --threshold``.
    """

    path: str = Field(min_length=1)
    metrics: list[str] | None = None
    thresholds: dict[str, int] = Field(default_factory=dict)


class GateConfig(_Strict):
    """Configuration of the release gate (and of the loop that runs it; the loop-only fields are marked).

    Attributes
    ----------
    thresholds : dict of str to float
        Per metric, the least acceptable mean in [0, 1] (checked as ``P(mean >= threshold)``). A threshold of 1.0
        means "no failure": it is met only when every scored value is 1 and failed by any other value.
    weights : dict of str to float
        Metric weights (>= 0) of the weighted score reported beside the decision (it does not decide).
    regression_tolerance : float or dict of str to float
        How much lower than the baseline a metric's mean may be (absolute, on the [0, 1] scale): one number for
        every metric, or per metric with an optional ``"default"`` entry for the others (default 0.05).
    critical : list of str
        Critical metrics. Empty (default): every metric is critical. A probable regression of any metric fails
        the gate; the critical ones also fire the "improved while a critical metric got worse" trigger.
    efficiency : dict
        Relative tolerances for ``tokens``, ``cost_usd``, ``latency_s`` (e.g. ``0.2``: up to 20 % more than the
        baseline per example); a field not listed is not checked.
    decision : DecisionProbabilities
    risk_levels : dict of str to RiskOverride
        Per ``risk_level`` overrides; every level in the data is a stratum whether listed or not.
    strata_tags : list of str
        Tags that also form strata (checked like risk levels).
    multiplicity : {"holm", "none"}
        Family-wise control of a false FAIL across every check of a decision: Holm's step-down over the checks'
        probabilities (:func:`agentstats.gating.decide.decide`); ``"none"`` fails each check at its own level.
    max_looks : int, optional
        The last look of the error-spending plan over repeated looks at one comparison
        (:mod:`agentstats.gating.looks`); None (default): no last look; 1: a single look at the full levels.
    max_missing_difference : float
        The effective-N check: a metric whose share of missing values (judge verdicts, or trial outcomes) differs
        between candidate and baseline by more than this makes the decision undecided (RETRY) rather than PASS.
    review : ReviewConfig
    judge_calibration : JudgeCalibrationConfig, optional
        A calibration set of the judge (a path, or ``{path, metrics, thresholds}``): the means and differences of
        the judged binary metrics it calibrates are computed on the corrected scale (``docs/gate.md``).
    prior_strength : float
        Total prior mass of the Dirichlet-process posterior (``docs/gate.md``); 2 gives the uniform Beta(1, 1)
        prior for a binary metric's mean.
    ci_prob : float
        Probability of the reported equal-tailed credible intervals.
    n_draws : int
        Posterior draws per check.
    random_seed : int
    max_iterations, max_total_cost_usd, max_wall_seconds, candidate_model, judge_model, stop_after_no_improvement,
    improvement_probability
        Loop settings (read by the evaluator-optimizer loop). ``improvement_probability`` is also the gate's
        "credibly better than the baseline" for its "improved but still below threshold" reason.
    """

    # loop settings
    max_iterations: int = Field(default=5, ge=1)
    max_total_cost_usd: float | None = Field(default=None, gt=0)
    max_wall_seconds: float | None = Field(default=None, gt=0)
    candidate_model: str | None = None
    judge_model: str | None = None
    stop_after_no_improvement: int = Field(default=2, ge=1)
    improvement_probability: Probability = 0.95
    # gate settings
    thresholds: dict[str, UnitFloat] = Field(default_factory=dict)
    weights: dict[str, NonNegative] = Field(default_factory=dict)
    regression_tolerance: float | dict[str, float] = 0.05
    critical: list[str] = Field(default_factory=list)
    efficiency: dict[Literal["tokens", "cost_usd", "latency_s"], NonNegative] = Field(default_factory=dict)
    decision: DecisionProbabilities = Field(default_factory=DecisionProbabilities)
    risk_levels: dict[str, RiskOverride] = Field(default_factory=dict)
    strata_tags: list[str] = Field(default_factory=list)
    multiplicity: Literal["holm", "none"] = "holm"
    max_looks: int | None = Field(default=None, ge=1)
    max_missing_difference: Probability = 0.05
    review: ReviewConfig = Field(default_factory=ReviewConfig)
    judge_calibration: JudgeCalibrationConfig | None = None
    prior_strength: float = Field(default=2.0, gt=0)
    ci_prob: Probability = CI_PROB
    n_draws: int = Field(default=4000, ge=500, le=200_000)
    random_seed: int = Field(default=DEFAULT_SEED, ge=0)

    @field_validator("regression_tolerance")
    @classmethod
    def _tolerance(cls, v: float | dict[str, float]) -> float | dict[str, float]:
        return _check_tolerance(v)

    @field_validator("judge_calibration", mode="before")
    @classmethod
    def _calibration_path(cls, v: Any) -> Any:
        return {"path": v} if isinstance(v, str) else v

    @field_validator("max_missing_difference")
    @classmethod
    def _share(cls, v: float) -> float:
        return _unit("max_missing_difference", v)

    @field_validator("improvement_probability", "ci_prob")
    @classmethod
    def _prob(cls, v: float, info: Any) -> float:
        return _unit(info.field_name, v, open_low=True, open_high=True)

    # -- resolved settings ---------------------------------------------------------------------------------
    def tolerance(self, metric: str, risk_level: str | None = None) -> float:
        """Return the regression tolerance of ``metric`` (in the stratum of ``risk_level`` when it overrides it)."""
        tol: float | dict[str, float] = self.regression_tolerance
        override = self.risk_levels.get(risk_level) if risk_level is not None else None
        if override is not None and override.regression_tolerance is not None:
            tol = override.regression_tolerance
            if isinstance(tol, dict) and metric not in tol and "default" not in tol:
                tol = self.regression_tolerance  # the override names other metrics only
        if isinstance(tol, dict):
            return float(tol.get(metric, tol.get("default", 0.05)))
        return float(tol)

    def probabilities(self, risk_level: str | None = None) -> DecisionProbabilities:
        """Return the decision probabilities (of the stratum of ``risk_level`` when it overrides them)."""
        override = self.risk_levels.get(risk_level) if risk_level is not None else None
        if override is not None and override.decision is not None:
            return override.decision
        return self.decision

    def threshold(self, metric: str, risk_level: str | None = None) -> float | None:
        """Return the threshold of ``metric`` overall (``risk_level=None``) or the override of one risk level."""
        if risk_level is None:
            return self.thresholds.get(metric)
        override = self.risk_levels.get(risk_level)
        return None if override is None else override.thresholds.get(metric)

    def is_critical(self, metric: str) -> bool:
        """Whether ``metric`` is critical (all metrics are when ``critical`` is empty)."""
        return not self.critical or metric in self.critical

    def named_metrics(self) -> set[str]:
        """Every metric the configuration names (thresholds, weights, tolerances, critical, overrides, review)."""
        names = set(self.thresholds) | set(self.weights) | set(self.critical)
        if self.judge_calibration is not None and self.judge_calibration.metrics is not None:
            names |= set(self.judge_calibration.metrics)
        if isinstance(self.regression_tolerance, dict):
            names |= set(self.regression_tolerance) - {"default"}
        for o in self.risk_levels.values():
            names |= set(o.thresholds)
            if isinstance(o.regression_tolerance, dict):
                names |= set(o.regression_tolerance) - {"default"}
        return names

    def is_review_only(self, metric: str) -> bool:
        """Whether ``metric`` only feeds the review triggers: the ``review.refusal_metric``, unless named elsewhere.

        A review-only metric gets no threshold or regression check and is left out of the
        "improved while a critical metric got worse" trigger; naming it anywhere in :meth:`named_metrics` (e.g.
        ``thresholds: {refusal: 0.95}`` on a set of requests that must be refused) makes it an ordinary metric,
        read like every other one as higher-is-better.
        """
        return metric == self.review.refusal_metric and metric not in self.named_metrics()

    def sha256(self) -> str:
        """SHA-256 of the validated configuration as canonical JSON (sorted keys, defaults filled in)."""
        text = json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()


class GateConfigError(ValueError):
    """A gate configuration file that cannot be read or does not validate; every problem located.

    Attributes
    ----------
    problems : list of str
        One ``"FILE, line L, field 'a.b': message"`` entry per problem (the line where the YAML parser gives it).
    """

    def __init__(self, source: str, problems: list[str]):
        self.source = source
        self.problems = problems
        n = len(problems)
        super().__init__(
            f"{n} problem{'s' if n != 1 else ''} in gate config {source}:\n" + "\n".join(f"  {p}" for p in problems)
        )


def _yaml_line(text: str, loc: tuple[Any, ...]) -> int | None:
    """1-based line of the node at ``loc`` in a YAML (or JSON) document, or of its deepest existing parent."""
    import yaml

    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return None
    line = None
    for key in loc:
        if node is None:
            break
        line = node.start_mark.line + 1
        nxt = None
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if str(k.value) == str(key):
                    nxt = k if v is None else v
                    line = k.start_mark.line + 1
                    break
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            nxt = node.value[key]
        if nxt is None:
            return line
        node = nxt
    return node.start_mark.line + 1 if node is not None else line


def load_gate_config(path: str | Path) -> GateConfig:
    """Read and validate a gate configuration from a YAML (``.yaml``/``.yml``) or JSON (``.json``) file.

    Parameters
    ----------
    path : str or pathlib.Path

    Returns
    -------
    GateConfig

    Raises
    ------
    GateConfigError
        When the file cannot be read or parsed (with the line of a syntax error) or fails validation (every
        error with its field path and line).
    """
    source, text, data = read_config_file(path, GateConfigError, empty_ok=True)
    if isinstance(data.get("gate"), dict) and {"eval_set", "agent", "baseline"} & set(data):
        raise GateConfigError(source, [
            f"{source}: this is a loop config (`agentstats loop --config {source}`); for `agentstats gate`, give "
            "its `gate:` section as a file of its own (the same settings, at the top level)"])
    try:
        cfg = GateConfig.model_validate(data)
    except ValidationError as exc:
        hint = "see docs/gate.md for the settings"
        raise GateConfigError(source, validation_problems(exc, text, source, hint)) from None
    calib = cfg.judge_calibration
    if calib is not None and not Path(calib.path).is_absolute():  # relative to the config file, not the cwd
        resolved = calib.model_copy(update={"path": str(Path(path).resolve().parent / calib.path)})
        cfg = cfg.model_copy(update={"judge_calibration": resolved})
    return cfg


def read_config_file(
    path: str | Path, error: type[GateConfigError], *, empty_ok: bool
) -> tuple[str, str, dict[str, Any]]:
    """Read a YAML or JSON config file as a mapping: ``(source, text, data)``; problems raise ``error``, located.

    ``empty_ok``: an empty file reads as an empty mapping (else it is refused as not a mapping).
    """
    import yaml

    path = Path(path)
    source = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise error(source, [f"{source}: cannot read the file: {exc}"]) from None
    suffix = path.suffix.lower()
    duplicates: list[str] = []
    try:
        if suffix == ".json":
            data = json.loads(text, object_pairs_hook=functools.partial(_json_object, duplicates, source))
        elif suffix in (".yaml", ".yml"):
            data = yaml.load(text, Loader=_unique_keys_loader(duplicates, source))
        else:
            raise error(source, [f"{source}: unknown config suffix {path.suffix!r}; use .yaml, .yml or .json"])
    except json.JSONDecodeError as exc:
        raise error(source, [f"{source}, line {exc.lineno}: malformed JSON: {exc.msg}"]) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f", line {mark.line + 1}" if mark is not None else ""
        raise error(source, [f"{source}{where}: malformed YAML: {getattr(exc, 'problem', exc)}"]) from None
    if duplicates:  # the last would win silently: a threshold given twice is a mistake to show
        raise error(source, sorted(duplicates, key=lambda m: int(m.partition(", line ")[2].partition(":")[0] or 0)))
    if data is None and empty_ok:
        data = {}
    if not isinstance(data, dict):
        raise error(source, [f"{source}: the config must be a mapping of settings, got {type(data).__name__}"])
    return source, text, data


def _json_object(duplicates: list[str], source: str, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """Build a JSON object from its pairs, recording a key given twice (JSON's parser gives no line for it)."""
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            duplicates.append(f"{source}: setting {key!r} is given twice (give each setting once)")
        seen[key] = value
    return seen


def _unique_keys_loader(duplicates: list[str], source: str) -> type:
    """Return a ``yaml.SafeLoader`` that records each mapping key given twice, with the line of its second use."""
    import yaml

    class Loader(yaml.SafeLoader):
        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            if isinstance(node, yaml.MappingNode):
                first: dict[Any, int] = {}
                for key_node, _ in node.value:
                    try:
                        key = self.construct_object(key_node, deep=True)
                        hash(key)
                    except (TypeError, yaml.YAMLError):
                        continue
                    line = key_node.start_mark.line + 1
                    if key in first and key != "<<":
                        duplicates.append(f"{source}, line {line}: setting {key!r} is given twice (first on line "
                                          f"{first[key]}; give each setting once)")
                    first.setdefault(key, line)
            return super().construct_mapping(node, deep=deep)

    return Loader


def validation_problems(exc: ValidationError, text: str, source: str, settings_hint: str) -> list[str]:
    """One located ``"FILE, line L, field 'a.b': message"`` entry per pydantic error (line from the YAML text)."""
    problems = []
    for err in exc.errors(include_url=False):
        loc = tuple(x for x in err.get("loc", ()) if not _is_union_tag(x))
        line = _yaml_line(text, loc) if loc else None
        where = source + (f", line {line}" if line is not None else "")
        field = ".".join(str(x) for x in loc)
        msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
        if err.get("type") == "extra_forbidden":
            msg = f"unknown setting ({settings_hint})"
        elif err.get("type") not in ("missing", "value_error") and "input" in err:
            msg = f"{msg} (got {err['input']!r:.60})"
        problems.append(f"{where}, field {field!r}: {msg}" if field else f"{where}: {msg}")
    return problems


def _is_union_tag(x: Any) -> bool:
    """Tell whether pydantic put the tried union member (``float``, ``dict[str,float]``) into the error location."""
    return isinstance(x, str) and (x in ("float", "int", "str") or x.startswith(("dict[", "list[", "function-")))

"""Everything a report shows, computed once: :func:`build_report` turns :class:`ReportParams` into :class:`ReportData`.

(:func:`build_comparison` does the same for the run comparison: :class:`CompareParams` into the comparison.)

The report notebook (``notebooks/report.ipynb``) calls :func:`build_report` once and only displays what it returns
(tables from :mod:`.tables`, readings from :mod:`.prose`, figures from :mod:`.plots`); the command line reads the
input first (:mod:`.inputs`: input, k, calibration set, judge) so that a bad file fails before a kernel starts. In
JupyterLab,
``report = build_report(ReportParams(input_path=...))`` gives every table and the fit to explore.

One place per verdict: the fit's convergence (:attr:`BayesSection.verdict`) is read by the summary and the
diagnostics section alike; the within-cell consistency is computed once (:attr:`BayesSection.consistency`) for both
tables that show it; the summary's evidence (paired differences, posterior probabilities at k = 1) are fields here.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentstats._util.progress import step
from agentstats.report.inputs import ReportInputError, load_input, read_calibration, report_judge, scores_trials
from agentstats.report.params import CompareParams, ReportParams, check_bayes_model
from agentstats.report.verdict import FitVerdict

if TYPE_CHECKING:
    import pandas as pd

    from agentstats.calibration.agreement import MetricCalibration
    from agentstats.compare.runs import RunComparison
    from agentstats.io.loaders import Dataset
    from agentstats.models.diagnostics import Diagnostics, PPCResult
    from agentstats.models.result import Fit
    from agentstats.scoring.judge.base import Judge
    from agentstats.scoring.outcomes import ScoringResult

__all__ = [
    "BayesSection",
    "CalibrationSection",
    "MetricsSection",
    "ReportData",
    "ScoringSection",
    "build_comparison",
    "build_report",
]


# ---------------------------------------------------------------------------------------------------------- data
@dataclass(frozen=True)
class ScoringSection:
    """How the trials were scored: the scoring result and the tables of the report's scoring section.

    Attributes
    ----------
    result : ScoringResult
        :func:`agentstats.scoring.score_trials`' result (scored trials, verdicts, per-interaction scores).
    tool_frame : pandas.DataFrame
        :func:`~agentstats.report.scoring_tables.tool_scores_frame`: one row per scored tool-call unit (may be empty).
    breakdown, tool_errors, schema_errors, ground_truth_errors, agreement, readings : pandas.DataFrame or None
        The scoring tables (:mod:`agentstats.report.scoring_tables`): per-agent tool scores, the most common tool-call
        errors, calls that fail their JSON Schema, expected calls that fail their own schema, tool correctness
        against the benchmark's outcome, and tool correctness read two ways; None when no tool call was scored.
    agreement_stats : dict or None
        Agreement of tool correctness with the outcome (counts, kappa ...), with ``agreement``.
    judge_summary : pandas.DataFrame or None
        Verdicts per agent of the answer judge; None when it gave none.
    """

    result: ScoringResult
    tool_frame: pd.DataFrame
    breakdown: pd.DataFrame | None
    tool_errors: pd.DataFrame | None
    schema_errors: pd.DataFrame | None
    ground_truth_errors: pd.DataFrame | None
    agreement: pd.DataFrame | None
    agreement_stats: dict[str, Any] | None
    readings: pd.DataFrame | None
    judge_summary: pd.DataFrame | None

    @property
    def has_tools(self) -> bool:
        """Whether any tool call was scored (the tool tables are then given)."""
        return bool(len(self.tool_frame))


@dataclass(frozen=True)
class CalibrationSection:
    """pass@k / pass^k corrected for the judge's errors (Rogan-Gladen), from a calibration set of the judge.

    Attributes
    ----------
    calibration : MetricCalibration
        The chosen metric's agreement with the human labels (sensitivity and specificity with credible intervals).
    corrected : pandas.DataFrame
        :func:`agentstats.calibration.corrected_pass_k` at the report's k: uncorrected and corrected values, intervals.
    """

    calibration: MetricCalibration
    corrected: pd.DataFrame


@dataclass(frozen=True)
class MetricsSection:
    """Metrics computed on the trials and their summary per agent and risk level.

    Attributes
    ----------
    frame : pandas.DataFrame
        :func:`agentstats.metrics.compute` (``errors="collect"``): one row per record and metric; its ``attrs`` hold
        each metric's settings (``metrics``) and the records it could not read (``errors``).
    summary : pandas.DataFrame
        Per agent, risk level and metric: posterior mean over tasks and share passing, with intervals.
    """

    frame: pd.DataFrame
    summary: pd.DataFrame

    @property
    def n_not_applicable(self) -> int:
        """Records a metric does not apply to (left out, never scored 0)."""
        return int((~self.frame["applicable"]).sum())

    @property
    def problems(self) -> list[str]:
        """Records a metric could not read, as messages."""
        return list(self.frame.attrs.get("errors") or [])


@dataclass(frozen=True)
class BayesSection:
    """The hierarchical model's section: the fit, its checks, and every posterior table and curve the report shows.

    Attributes
    ----------
    fit : Fit
        The fit (family, sampler settings, posterior).
    diagnostics : Diagnostics
        Its convergence table (computed once, kept by the fit).
    verdict : FitVerdict
        Whether the fit can be read: it converged and its posterior predictive check passed.
    curve_ks : list of int
        ``1 .. max(k_max_bayes, largest report k)``: the k of the posterior curves.
    curves : pandas.DataFrame
        :func:`agentstats.posterior.summarize_pass_k` of pass@k and pass^k at ``curve_ks`` (``population``).
    k_show : int
        The largest report k: the k of the consistency table and the contrasts.
    pass_hat_k_observed, pass_hat_k_new : pandas.DataFrame
        Posterior pass^k at ``k_show`` for these tasks and for new tasks like these.
    consistency : pandas.DataFrame
        :func:`agentstats.posterior.consistency` with the fit (flip share, ICCs, within-cell correlation).
    forest_ks : list of int
        The report's k and the curves' last k.
    forest : pandas.DataFrame
        The rows of ``curves`` for pass^k at ``forest_ks``.
    contrast_matrix, contrasts : pandas.DataFrame or None
        P(row > column) and the pairwise contrast table of pass^k at ``k_show``; None with one agent.
    prob_at_1 : pandas.DataFrame or None
        P(row > column) of pass^1, the summary's evidence; None with one agent.
    task_effects : pandas.DataFrame
        Task difficulty (:func:`agentstats.posterior.task_effects`).
    ppc : PPCResult
        The posterior predictive check of per-cell counts.
    """

    fit: Fit
    diagnostics: Diagnostics
    verdict: FitVerdict
    curve_ks: list[int]
    curves: pd.DataFrame
    k_show: int
    pass_hat_k_observed: pd.DataFrame
    pass_hat_k_new: pd.DataFrame
    consistency: pd.DataFrame
    forest_ks: list[int]
    forest: pd.DataFrame
    contrast_matrix: pd.DataFrame | None
    contrasts: pd.DataFrame | None
    prob_at_1: pd.DataFrame | None
    task_effects: pd.DataFrame
    ppc: PPCResult

    @property
    def ppc_observed(self) -> dict[str, float]:
        """Each checked statistic's value on the observed data."""
        return dict(zip(self.ppc.table["statistic"], self.ppc.table["observed"], strict=True))

    @property
    def ppc_p_values(self) -> dict[str, float]:
        """Each checked statistic's posterior predictive p-value."""
        return dict(zip(self.ppc.table["statistic"], self.ppc.table["p_value"], strict=True))


@dataclass(frozen=True)
class ReportData:
    """Everything one report shows, from :func:`build_report`.

    Attributes
    ----------
    params : ReportParams
        What the report was asked for.
    data : Dataset
        What was read (trials and/or counts, format, skipped records).
    source : str
        The input's file name (no folder), or a description of an in-memory input.
    sha256 : str or None
        Hex digest of the input file (None for an input that is not one file).
    counts : pandas.DataFrame
        ``agent, task_id, n, c, n_missing`` per cell, after scoring.
    ks : list of int
        The k of the report's tables (``params.k_values``, else :func:`agentstats.intervals.default_ks`).
    suite : pandas.DataFrame
        :func:`agentstats.estimators.suite_pass_k` at ``ks``.
    paired : pandas.DataFrame or None
        :func:`agentstats.estimators.paired_pass_k_table` at ``ks``; None with one agent.
    scoring, calibration, metrics, bayes : section or None
        None where the report has no such section (nothing to score, no calibration set, no metrics asked for or
        counts only, ``run_bayes=False``).
    """

    params: ReportParams
    data: Dataset
    source: str
    sha256: str | None
    counts: pd.DataFrame
    ks: list[int]
    suite: pd.DataFrame
    paired: pd.DataFrame | None
    scoring: ScoringSection | None
    calibration: CalibrationSection | None
    metrics: MetricsSection | None
    bayes: BayesSection | None

    @property
    def n_agents(self) -> int:
        """Agents in the counts."""
        return int(self.counts["agent"].nunique())

    def details_markdown(self) -> str:
        """Write what the report was computed from and with (:func:`agentstats.report.provenance.run_details`)."""
        from agentstats.report.provenance import run_details

        p = self.params
        return run_details(
            self.counts, source=self.source, input_format=self.data.format, sha256=self.sha256, k_values=self.ks,
            n_boot=p.n_boot, seed=p.seed, judge=p.judge if self.scoring is not None else None,
            model=p.bayes_model if p.run_bayes else None, population=p.population,
            fit=self.bayes.fit if self.bayes is not None else None, ci_prob=p.ci_prob,
        )

    def summary_markdown(self, links: bool = True) -> str:
        """Write the report's summary (:func:`agentstats.report.prose.report_summary`), Markdown bullets.

        A fit that failed its checks opens it, and none of its numbers is used (the agents are then compared by
        their paired differences). With ``links`` every claim links to the report's table or figure behind it.
        """
        from agentstats.report.prose import report_summary

        b = self.bayes
        usable = b is not None and b.verdict.ok
        return report_summary(self.counts, self.suite, prob=b.prob_at_1 if usable and b is not None else None,
                              paired=self.paired, verdict=b.verdict if b is not None else None,
                              posterior_ks=b.forest_ks if usable and b is not None else None, links=links)

    @property
    def checks(self) -> dict[str, Any] | None:
        """The fit's verdict as a JSON-ready dict (:meth:`FitVerdict.as_record`); None without a fit."""
        return self.bayes.verdict.as_record() if self.bayes is not None else None

    def regenerate_command(self) -> str:
        """Write the ``agentstats report`` command that regenerates this report, with its k."""
        from agentstats.report.provenance import report_command

        return report_command(self.params, k_values=self.ks)

    def regenerate_markdown(self) -> str:
        """Say how to regenerate this report: the command, and where it runs (Markdown, one paragraph).

        The command names the input from the folder the report was made in (the current directory of the command
        or papermill) when it lies below it; otherwise by its base name, run from the folder that holds it.
        """
        from agentstats._util.markup import md_code, md_text
        from agentstats.report.provenance import file_word

        path = self.params.input_path
        files = [path] if isinstance(path, str) else []
        files += [self.params.judge_calibration] if self.params.judge_calibration else []
        elsewhere = [file_word(f)[0] for f in files if not file_word(f)[1]]
        where = ("from the folder this report was made in" if not elsewhere else
                 f"from the folder that holds {md_text(' and '.join(elsewhere))}")
        return (f"Regenerate with {md_code(self.regenerate_command())}, run {where} (add `-p show_code=true` to see "
                "the code in the HTML), and explore the notebook in JupyterLab.")


# ------------------------------------------------------------------------------------------------------- building
def build_report(params: ReportParams) -> ReportData:
    """Compute everything the report shows: load once, score, count, estimate, compare, fit, check.

    Parameters
    ----------
    params : ReportParams
        The report's parameters (``input_path`` and the rest at their defaults: the command line's full sizes).

    Returns
    -------
    ReportData

    Raises
    ------
    ReportInputError
        An input, calibration set or metric the report cannot read (one line naming the file).
    ValueError
        From the estimators or the fit, on data they refuse (e.g. k beyond the trials per task).
    """
    from agentstats.estimators import paired_pass_k_table, suite_pass_k
    from agentstats.intervals import default_ks

    check_bayes_model(params)  # a model the Bayesian section cannot report: refused before the input is read
    with step("reading the input"):
        data = load_input(params)
    with step("scoring the trials" if data.needs_scoring else "counting the trials"):
        scoring_result, counts = _score(params, data)
    ks = list(params.k_values or default_ks(counts))
    p = params
    n_agents = counts["agent"].nunique()
    with step(f"pass@k and pass^k per agent, {p.n_boot:,} task-cluster bootstrap resamples"):
        suite = suite_pass_k(counts, k=ks, n_boot=p.n_boot, ci_prob=p.ci_prob, random_seed=p.seed)
    paired = None
    if n_agents > 1:
        with step(f"paired differences of {n_agents * (n_agents - 1) // 2:,} agent pairs"):
            paired = paired_pass_k_table(counts, k=ks, n_boot=p.n_boot, ci_prob=p.ci_prob, random_seed=p.seed)
    path = params.input_path
    is_file = isinstance(path, str) and Path(path).is_file()
    return ReportData(
        params=params, data=data, source=Path(path).name if isinstance(path, str) else str(path),
        sha256=hashlib.sha256(Path(path).read_bytes()).hexdigest() if is_file else None, counts=counts, ks=ks,
        suite=suite, paired=paired,
        scoring=_scoring_section(params, scoring_result) if scoring_result is not None else None,
        calibration=_calibration_section(params, counts, ks) if params.judge_calibration is not None else None,
        metrics=_metrics_section(params, data, scoring_result),
        bayes=_bayes_section(params, counts, ks) if params.run_bayes else None,
    )


def _score(params: ReportParams, data: Dataset) -> tuple[ScoringResult | None, pd.DataFrame]:
    """Score the trials when they need it or carry something to score; return the result and the counts.

    The judge is checked first (:func:`check_judge`); a scoring that leaves no trial with an outcome is an error,
    never a report on nothing (:func:`_check_scored`).
    """
    from agentstats.records.counts import to_counts
    from agentstats.scoring import score_trials

    if not scores_trials(data):
        assert data.counts is not None  # a Dataset without trials holds counts
        return None, data.counts
    assert data.trials is not None
    judge = report_judge(params)
    judge.check_available()
    result = score_trials(data.trials, judge=judge, threshold=params.threshold,
                          tool_threshold=params.tool_threshold, require_tools=params.require_tools)
    counts = to_counts(result.trials)
    _check_scored(result, counts, judge)
    return result, counts


def _check_scored(result: ScoringResult, counts: pd.DataFrame, judge: Judge) -> None:
    """Refuse a scoring that left no trial with an outcome: the judge went down mid-run, or nothing could be judged.

    Raises
    ------
    agentstats.llm.probe.EndpointUnavailable
        No trial has an outcome and the judge gave no verdict (every one missing: connection, timeout, server
        error, not sent after the circuit opened, a model the endpoint does not have ...).
    ReportInputError
        No trial has an outcome for another reason (every trial an infrastructure error).
    """
    from agentstats.llm.probe import EndpointUnavailable

    if int(counts["n"].sum()) > 0:
        return
    missing = [v for v in result.verdicts if not v.ok]
    if missing:  # the judge was asked and gave nothing: its endpoint failed (down mid-run, wrong model, ...)
        ep = getattr(judge, "endpoint", None)
        address = ep.address() if ep is not None else judge.name
        kinds = sorted({str(v.error_kind) for v in missing})
        raise EndpointUnavailable(f"the judge {judge.name} at {address} gave no verdict ({len(missing)} missing: "
                                  f"{', '.join(kinds)}): no trial was scored, so there is no report",
                                  address=str(address), kind=kinds[0])
    n_missing = int(counts["n_missing"].sum())
    raise ReportInputError(f"no trial has an outcome after scoring ({n_missing} missing, e.g. judge verdicts missing "
                           "or infrastructure errors): there is nothing to report")


def _scoring_section(params: ReportParams, result: ScoringResult) -> ScoringSection:
    """Compute the scoring section's tables (tool tables only when a tool call was scored)."""
    from agentstats.report import scoring_tables as st

    tool_frame = st.tool_scores_frame(result.trials, tool_threshold=params.tool_threshold)
    tools: dict[str, Any] = dict.fromkeys(("breakdown", "tool_errors", "schema_errors", "ground_truth_errors",
                                           "agreement", "agreement_stats", "readings"))
    if len(tool_frame):
        agreement, stats = st.tool_outcome_agreement(tool_frame)
        tools.update(
            breakdown=st.tool_breakdown(tool_frame), tool_errors=st.tool_error_counts(result.trials),
            schema_errors=st.schema_error_counts(result.trials),
            ground_truth_errors=st.ground_truth_errors(result.trials),
            agreement=agreement, agreement_stats=stats,
            readings=st.tool_readings(result.trials, tool_threshold=params.tool_threshold),
        )
    return ScoringSection(result=result, tool_frame=tool_frame, **tools,
                          judge_summary=st.judge_summary(result) if len(result.verdicts) else None)


def _calibration_section(params: ReportParams, counts: pd.DataFrame, ks: list[int]) -> CalibrationSection:
    """Read the judge's calibration and correct pass@k / pass^k for its errors."""
    from agentstats.calibration import corrected_pass_k

    assert params.judge_calibration is not None
    calibration = read_calibration(params)
    corrected = corrected_pass_k(counts, calibration.judge_error, k=ks, n_boot=params.n_boot, ci_prob=params.ci_prob,
                                 random_seed=params.seed)
    return CalibrationSection(calibration=calibration, corrected=corrected)


def _metrics_section(params: ReportParams, data: Dataset, scoring: ScoringResult | None) -> MetricsSection | None:
    """Compute the metrics on the trials (the scored ones); None when none were asked for or there are no trials."""
    if params.metrics is None or data.trials is None:
        return None
    from agentstats.estimators.metric_means import summarize_metrics_by_risk
    from agentstats.metrics import compute

    frame = compute(scoring.trials if scoring is not None else data.trials, params.metrics, errors="collect")
    return MetricsSection(frame=frame,
                          summary=summarize_metrics_by_risk(frame, ci_prob=params.ci_prob, random_seed=params.seed))


@contextlib.contextmanager
def _pymc_logs_quiet() -> Iterator[None]:
    """Keep PyMC's INFO lines ("Sampling: [y]") out of the report while its section is computed.

    PyMC sets its logger to INFO when first imported; the report shows the sampler's settings and diagnostics itself.
    The logger's level is put back afterwards.
    """
    import pymc  # noqa: F401  (imported first, so that its own logging set-up happens before the level is set)

    log = logging.getLogger("pymc")
    old = log.level
    log.setLevel(logging.WARNING)
    try:
        yield
    finally:
        log.setLevel(old)


def _bayes_section(params: ReportParams, counts: pd.DataFrame, ks: list[int]) -> BayesSection:
    """Fit the model and compute every posterior table, curve, contrast and check the report shows."""
    from agentstats.models import ConvergenceWarning, fit
    from agentstats.posterior import (
        consistency,
        contrast_matrix,
        contrast_table,
        posterior_pass_hat_k,
        posterior_pass_k,
        summarize_pass_k,
        task_effects,
    )

    p = params
    n_agents, n_tasks = counts["agent"].nunique(), counts["task_id"].nunique()
    with _pymc_logs_quiet():
        with warnings.catch_warnings(), step(f"fitting {p.bayes_model} to {n_agents} agents x {n_tasks} tasks"):
            warnings.simplefilter("ignore", ConvergenceWarning)  # the diagnostics are shown in full (verdict)
            fitted = fit(counts, p.bayes_model, draws=p.draws, tune=p.tune, chains=p.chains, random_seed=p.seed,
                         sampler=p.sampler, cores=p.cores, target_accept=p.target_accept, method=p.method,
                         progressbar=False)
        with step("convergence diagnostics (R-hat, ESS)"):
            diagnostics = fitted.diagnostics()
        curve_ks = list(range(1, max(p.k_max_bayes, max(ks)) + 1))
        k_show = max(ks)
        forest_ks = sorted(set(ks) | {curve_ks[-1]})
        several = counts["agent"].nunique() > 1
        with step(f"posterior pass@k and pass^k, k = 1..{curve_ks[-1]}"):
            # one pass over the cells gives every k of both quantities (k_show and 1 are among curve_ks)
            observed = posterior_pass_k(fitted, curve_ks, population="observed")
            shown = observed if p.population == "observed" else posterior_pass_k(fitted, curve_ks, population="new")
            curves = summarize_pass_k([shown["pass_at_k"], shown["pass_hat_k"]], ci_prob=p.ci_prob)
            draws_k = shown["pass_hat_k"].sel(k=[k_show]) if several else None
            pass_hat_k_observed = summarize_pass_k([observed["pass_hat_k"].sel(k=[k_show])], ci_prob=p.ci_prob)
            pass_hat_k_new = summarize_pass_k(
                [posterior_pass_hat_k(fitted, k_show, population="new")], ci_prob=p.ci_prob)
        with step(f"pairwise contrasts of {n_agents} agents, consistency and task difficulty"):
            contrasts = contrast_table(draws_k, ci_prob=p.ci_prob) if draws_k is not None else None
            matrix = contrast_matrix(draws_k, k=k_show) if draws_k is not None else None
            prob_at_1 = contrast_matrix(shown["pass_hat_k"].sel(k=[1]), k=1) if several else None
            cons = consistency(fit=fitted, ci_prob=p.ci_prob)
            effects = task_effects(fitted, ci_prob=p.ci_prob)
        with step("posterior predictive check"):
            ppc = fitted.ppc(random_seed=p.seed, ci_prob=p.ci_prob)
        return BayesSection(
            fit=fitted, diagnostics=diagnostics, verdict=FitVerdict.of(diagnostics, ppc), curve_ks=curve_ks,
            curves=curves,
            k_show=k_show, pass_hat_k_observed=pass_hat_k_observed, pass_hat_k_new=pass_hat_k_new,
            consistency=cons, forest_ks=forest_ks,
            forest=curves[(curves["quantity"] == "pass_hat_k") & curves["k"].isin(forest_ks)],
            contrast_matrix=matrix, contrasts=contrasts, prob_at_1=prob_at_1, task_effects=effects, ppc=ppc,
        )


def build_comparison(params: CompareParams) -> RunComparison:
    """Compare the runs of a comparison report: :func:`agentstats.compare.runs.compare_runs` with its parameters.

    Parameters
    ----------
    params : CompareParams
        The runs (files, or run names of ``store``), their loader options and agents, k, bootstrap and fit settings.

    Returns
    -------
    RunComparison

    Raises
    ------
    ValueError, FileNotFoundError
        As :func:`~agentstats.compare.runs.compare_runs`: fewer than two runs, no shared task, a bad or missing run.
    """
    from agentstats.compare.runs import compare_runs
    from agentstats.io import LoadWarning

    p = params
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoadWarning)  # skipped records are the loader's business, listed by the CLI
        return compare_runs(*p.run_paths, names=p.run_names, k=p.k_values, n_boot=p.n_boot, ci_prob=p.ci_prob,
                            random_seed=p.seed, bayes=p.run_bayes, fit_options=p.fit_options(),
                            run_options=p.run_options(), store=p.store, format=p.input_format, **p.loader_options)

"""agentstats: honest numbers for AI agent evaluations.

Pipeline (see ``docs/`` and ``docs/architecture.md``)::

    load_trials ─▶ score_trials ─▶ to_counts ─▶ pass_at_k / pass_hat_k / suite_pass_k / paired_pass_k / beta_pass_k
                                          └──▶ fit (PyMC) ─▶ Fit ─▶ posterior_pass_at_k / posterior_pass_hat_k
    ─▶ report (papermill notebook ─▶ HTML)

Public names are imported lazily (PEP 562), so ``import agentstats`` stays fast and PyMC is only imported when
a model is fitted.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING

from agentstats._util.lazy import lazy_attributes

if TYPE_CHECKING:  # what type checkers see of the lazy names in _API (tests/test_architecture.py keeps the two equal)
    from agentstats.calibration import (
        JudgeError as JudgeError,
    )
    from agentstats.calibration import (
        calibrate as calibrate,
    )
    from agentstats.calibration import (
        corrected_pass_k as corrected_pass_k,
    )
    from agentstats.calibration import (
        rogan_gladen as rogan_gladen,
    )
    from agentstats.capture import (
        current_run as current_run,
    )
    from agentstats.capture import (
        end_run as end_run,
    )
    from agentstats.capture import (
        node as node,
    )
    from agentstats.capture import (
        open_run as open_run,
    )
    from agentstats.capture import (
        run as run,
    )
    from agentstats.capture import (
        start_run as start_run,
    )
    from agentstats.capture import (
        trace_node as trace_node,
    )
    from agentstats.compare.runs import compare_runs as compare_runs
    from agentstats.compare.runs import resolve_run as resolve_run
    from agentstats.estimators import (
        beta_pass_k as beta_pass_k,
    )
    from agentstats.estimators import (
        clopper_pearson_interval as clopper_pearson_interval,
    )
    from agentstats.estimators import (
        paired_pass_k as paired_pass_k,
    )
    from agentstats.estimators import (
        paired_pass_k_table as paired_pass_k_table,
    )
    from agentstats.estimators import (
        pass_at_k as pass_at_k,
    )
    from agentstats.estimators import (
        pass_hat_k as pass_hat_k,
    )
    from agentstats.estimators import (
        plugin_pass_at_k as plugin_pass_at_k,
    )
    from agentstats.estimators import (
        plugin_pass_hat_k as plugin_pass_hat_k,
    )
    from agentstats.estimators import (
        suite_pass_k as suite_pass_k,
    )
    from agentstats.gating import GateConfig as GateConfig
    from agentstats.gating import GateDecision as GateDecision
    from agentstats.gating import gate as gate
    from agentstats.intervals import default_ks as default_ks
    from agentstats.io import (
        Dataset as Dataset,
    )
    from agentstats.io import (
        LoadError as LoadError,
    )
    from agentstats.io import (
        TrialSet as TrialSet,
    )
    from agentstats.io import (
        load as load,
    )
    from agentstats.io import (
        load_counts as load_counts,
    )
    from agentstats.io import (
        load_trials as load_trials,
    )
    from agentstats.io import (
        save_trials as save_trials,
    )
    from agentstats.models import (
        ConvergenceWarning as ConvergenceWarning,
    )
    from agentstats.models import (
        Fit as Fit,
    )
    from agentstats.models import (
        Priors as Priors,
    )
    from agentstats.models import (
        SamplerConfig as SamplerConfig,
    )
    from agentstats.models import (
        build_model as build_model,
    )
    from agentstats.models import (
        compare_models as compare_models,
    )
    from agentstats.models import (
        diagnose as diagnose,
    )
    from agentstats.models import (
        fit as fit,
    )
    from agentstats.models import (
        get_family as get_family,
    )
    from agentstats.models import (
        no_pooling_posterior as no_pooling_posterior,
    )
    from agentstats.models import (
        posterior_predictive_cells as posterior_predictive_cells,
    )
    from agentstats.optimize import LoopConfig as LoopConfig
    from agentstats.optimize import LoopResult as LoopResult
    from agentstats.optimize import optimize as optimize
    from agentstats.optimize.config import load_config as load_config
    from agentstats.planning import plan_interval_width as plan_interval_width
    from agentstats.planning import plan_power as plan_power
    from agentstats.posterior import (
        consistency as consistency,
    )
    from agentstats.posterior import (
        contrast_matrix as contrast_matrix,
    )
    from agentstats.posterior import (
        contrast_table as contrast_table,
    )
    from agentstats.posterior import (
        fit_many as fit_many,
    )
    from agentstats.posterior import (
        posterior_pass_at_k as posterior_pass_at_k,
    )
    from agentstats.posterior import (
        posterior_pass_hat_k as posterior_pass_hat_k,
    )
    from agentstats.posterior import (
        posterior_pass_k as posterior_pass_k,
    )
    from agentstats.posterior import (
        predict_rerun as predict_rerun,
    )
    from agentstats.posterior import (
        summarize_pass_k as summarize_pass_k,
    )
    from agentstats.posterior import (
        task_effects as task_effects,
    )
    from agentstats.records.counts import to_counts as to_counts
    from agentstats.records.trial import (
        Interaction as Interaction,
    )
    from agentstats.records.trial import (
        Status as Status,
    )
    from agentstats.records.trial import (
        ToolCall as ToolCall,
    )
    from agentstats.records.trial import (
        ToolSpec as ToolSpec,
    )
    from agentstats.records.trial import (
        Trial as Trial,
    )
    from agentstats.records.trial import (
        Usage as Usage,
    )
    from agentstats.report.build import ReportData as ReportData
    from agentstats.report.build import build_report as build_report
    from agentstats.report.notebook import run_report as run_report
    from agentstats.report.params import ReportParams as ReportParams
    from agentstats.report.prose import read_suite as read_suite
    from agentstats.report.tables import describe_counts as describe_counts
    from agentstats.report.tables import format_suite_table as format_suite_table
    from agentstats.scoring import (
        DeterministicJudge as DeterministicJudge,
    )
    from agentstats.scoring import (
        OpenAIJudge as OpenAIJudge,
    )
    from agentstats.scoring import (
        fair_forge_frame as fair_forge_frame,
    )
    from agentstats.scoring import (
        fair_forge_view as fair_forge_view,
    )
    from agentstats.scoring import (
        match_answer as match_answer,
    )
    from agentstats.scoring import (
        resolve_judge as resolve_judge,
    )
    from agentstats.scoring import (
        score_tool_calls as score_tool_calls,
    )
    from agentstats.scoring import (
        score_trial_tools as score_trial_tools,
    )
    from agentstats.scoring import (
        score_trials as score_trials,
    )
    from agentstats.scoring import (
        validate_tool_calls as validate_tool_calls,
    )
    from agentstats.simulate import simulate_trials as simulate_trials
    from agentstats.simulate import true_suite_pass_k as true_suite_pass_k
    from agentstats.store import RunStore as RunStore


try:  # the installed distribution's version (pyproject.toml), the one place it is written
    __version__ = version("agentstats")
except PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"

# public name -> module that defines it
_API: dict[str, str] = {
    # schema
    "Trial": "agentstats.records.trial",
    "Interaction": "agentstats.records.trial",
    "ToolCall": "agentstats.records.trial",
    "ToolSpec": "agentstats.records.trial",
    "Usage": "agentstats.records.trial",
    "Status": "agentstats.records.trial",
    # loading
    "load": "agentstats.io",
    "Dataset": "agentstats.io",
    "load_trials": "agentstats.io",
    "load_counts": "agentstats.io",
    "save_trials": "agentstats.io",
    "TrialSet": "agentstats.io",
    "LoadError": "agentstats.io",
    "load_config": "agentstats.optimize.config",
    "to_counts": "agentstats.records.counts",
    # scoring
    "score_trials": "agentstats.scoring",
    "score_tool_calls": "agentstats.scoring",
    "score_trial_tools": "agentstats.scoring",
    "validate_tool_calls": "agentstats.scoring",
    "match_answer": "agentstats.scoring",
    "resolve_judge": "agentstats.scoring",
    "OpenAIJudge": "agentstats.scoring",
    "DeterministicJudge": "agentstats.scoring",
    "fair_forge_view": "agentstats.scoring",
    "fair_forge_frame": "agentstats.scoring",
    # estimators (closed form)
    "pass_at_k": "agentstats.estimators",
    "pass_hat_k": "agentstats.estimators",
    "plugin_pass_at_k": "agentstats.estimators",
    "plugin_pass_hat_k": "agentstats.estimators",
    "beta_pass_k": "agentstats.estimators",
    "suite_pass_k": "agentstats.estimators",
    "paired_pass_k": "agentstats.estimators",
    "paired_pass_k_table": "agentstats.estimators",
    "clopper_pearson_interval": "agentstats.estimators",
    # experiments: runs compared on their shared tasks
    "compare_runs": "agentstats.compare.runs",
    "resolve_run": "agentstats.compare.runs",
    # judge calibration
    "calibrate": "agentstats.calibration",
    "JudgeError": "agentstats.calibration",
    "corrected_pass_k": "agentstats.calibration",
    "rogan_gladen": "agentstats.calibration",
    # hierarchical model and posterior
    "fit": "agentstats.models",
    "diagnose": "agentstats.models",
    "posterior_predictive_cells": "agentstats.models",
    "compare_models": "agentstats.models",
    "no_pooling_posterior": "agentstats.models",
    "build_model": "agentstats.models",
    "get_family": "agentstats.models",
    "Fit": "agentstats.models",
    "SamplerConfig": "agentstats.models",
    "Priors": "agentstats.models",
    "ConvergenceWarning": "agentstats.models",
    "fit_many": "agentstats.posterior",
    "posterior_pass_at_k": "agentstats.posterior",
    "posterior_pass_hat_k": "agentstats.posterior",
    "posterior_pass_k": "agentstats.posterior",
    "predict_rerun": "agentstats.posterior",
    "summarize_pass_k": "agentstats.posterior",
    "contrast_matrix": "agentstats.posterior",
    "contrast_table": "agentstats.posterior",
    "consistency": "agentstats.posterior",
    "task_effects": "agentstats.posterior",
    "default_ks": "agentstats.intervals",
    "plan_interval_width": "agentstats.planning",
    "plan_power": "agentstats.planning",
    # release gate
    "gate": "agentstats.gating",
    "GateConfig": "agentstats.gating",
    "GateDecision": "agentstats.gating",
    # evaluator-optimizer loop
    "optimize": "agentstats.optimize",
    "LoopConfig": "agentstats.optimize",
    "LoopResult": "agentstats.optimize",
    # summaries and reports
    "describe_counts": "agentstats.report.tables",
    "format_suite_table": "agentstats.report.tables",
    "read_suite": "agentstats.report.prose",
    "ReportParams": "agentstats.report.params",
    "ReportData": "agentstats.report.build",
    "build_report": "agentstats.report.build",
    "run_report": "agentstats.report.notebook",
    # run store and live capture
    "RunStore": "agentstats.store",
    "run": "agentstats.capture",
    "start_run": "agentstats.capture",
    "open_run": "agentstats.capture",
    "end_run": "agentstats.capture",
    "node": "agentstats.capture",
    "trace_node": "agentstats.capture",
    "current_run": "agentstats.capture",
    # simulation
    "simulate_trials": "agentstats.simulate",
    "true_suite_pass_k": "agentstats.simulate",
}

__all__ = [*sorted(_API), "__version__"]


__getattr__, __dir__ = lazy_attributes(__name__, _API)

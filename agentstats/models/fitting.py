"""Fitting: ``fit(counts, model=..., **sampler options)`` -> :class:`~agentstats.models.result.Fit`.

The family is resolved once (:func:`agentstats.models.families.registry.get_family`) and the counts validated once
(:func:`agentstats.models.data.prepare_counts`); everything downstream reads them from the :class:`Fit`. ``no_pooling``
is drawn exactly from its Beta posterior (no MCMC; ``sampler="exact"``); the other families are sampled by NUTS
(:mod:`agentstats.models.sampling`).

Memory: a fit stores the sampled parameters (about agents + tasks numbers per draw for the Beta-Binomial families;
one per cell for ``partial_pooling``) and the counts. Per-cell success probabilities ``p`` are not stored unless asked
(``store_p=True``): :mod:`agentstats.posterior` draws them block by block from the family when it needs them. The
per-cell ``log_likelihood`` group (``log_likelihood=True``, for LOO) costs chains x draws x cells x 8 bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

import numpy as np
import pandas as pd
import pymc as pm
import xarray as xr

from agentstats._util.progress import step
from agentstats.calibration.judge_error import JudgeError
from agentstats.intervals import DEFAULT_SEED, resolve_random_seed
from agentstats.models.data import CountsData, prepare_counts
from agentstats.models.diagnostics import warn_if_not_converged
from agentstats.models.families.base import BuildInfo, ModelFamily
from agentstats.models.families.no_pooling import exact_posterior
from agentstats.models.families.registry import DEFAULT_MODEL, get_family
from agentstats.models.laplace import choose_method, laplace_posterior
from agentstats.models.priors import Priors, as_priors
from agentstats.models.result import Fit, SamplerInfo
from agentstats.models.sampling import (
    SamplerConfig,
    check_complete,
    check_nutpie_kwargs,
    converged_rule,
    diverged,
    divergences,
    package_version,
    sample_nutpie,
    sample_pymc,
)

__all__ = ["LAPLACE_DRAWS", "build_model", "fit"]

#: Default draws per chain of the Laplace tier: 4 x 500 = 2,000 independent draws, more than the effective draws of a
#: converged NUTS fit at these sizes (ESS_bulk 860-1,700 at 10,000-100,000 cells, docs/benchmarks.md).
LAPLACE_DRAWS = 500


def _judge_error(judge_calibration: Any) -> JudgeError | None:
    """Return the :class:`JudgeError` of ``judge_calibration``: a JudgeError, or anything with ``.judge_error``."""
    if judge_calibration is None or isinstance(judge_calibration, JudgeError):
        return judge_calibration
    inner = getattr(judge_calibration, "judge_error", None)
    if isinstance(inner, JudgeError):
        return inner
    raise ValueError(
        "judge_calibration must be a JudgeError or a metric of calibrate(...) (MetricCalibration), "
        f"got {type(judge_calibration).__name__}"
    )


def fit(
    counts: pd.DataFrame | CountsData,
    model: str | ModelFamily = DEFAULT_MODEL,
    *,
    dispersion: str | None = None,
    random_seed: int | np.random.Generator | None = DEFAULT_SEED,
    config: SamplerConfig | None = None,
    priors: Priors | Mapping[str, float] | None = None,
    parameterization: dict[str, str] | None = None,
    log_likelihood: bool = False,
    store_p: bool = False,
    check_convergence: bool = True,
    judge_calibration: Any = None,
    method: str | None = None,
    **sampler_options: Any,
) -> Fit:
    """Fit a model of per-cell success counts and return the :class:`~agentstats.models.result.Fit`.

    Parameters
    ----------
    counts : pandas.DataFrame or CountsData
        Columns ``agent, task_id, n, c`` (one row per cell; :func:`agentstats.models.data.prepare_counts`).
    model : str or ModelFamily
        Default ``zoi_beta_binomial`` (:data:`agentstats.models.families.registry.DEFAULT_MODEL`): agent and task
        effects, a
        Beta per agent x task cell with per-agent dispersion and a share of always/never-succeeding cells
        (docs/models.md for the evidence). Others: ``beta_binomial``, ``partial_pooling``, ``additive``,
        ``no_pooling`` (drawn exactly, ``sampler="exact"``).
    dispersion : {"agent", "shared"}, optional
        Within-cell dispersion per agent (default) or shared by all agents.
    random_seed : int, numpy.random.Generator or None
        Seed, default :data:`agentstats.intervals.DEFAULT_SEED` (0, as the command line's ``--seed``); the same seed,
        data and sampler give the same draws (up to rounding in compiled code). A Generator gives one integer seed
        from it, None one from OS entropy (:func:`agentstats.intervals.resolve_random_seed`);
        the seed used is ``fit.random_seed``.
    config : SamplerConfig, optional
        Sampler, draws, tune, chains, target_accept, cores, progress bar. Keyword arguments named like its fields
        (``draws=500``, ``sampler="pymc"``, ...) override it.
    priors : Priors or mapping, optional
        Default :data:`agentstats.models.priors.DEFAULT_PRIORS`. A mapping sets the fields of :class:`Priors` it
        names (``{"sigma_task": 1.0}``) and keeps the defaults of the others.
    parameterization : dict, optional
        Per-level override of the centred/non-centred rule (``agent``, ``task``, ``cell``; ``dispersion`` for the
        per-agent dispersion of the Beta-Binomial families). A per-agent dispersion that the rule centred and that
        diverges is refitted non-centred with the same seed (a funnel: agents about equally consistent); the
        attempt is logged in ``fit.sampler.checkpoints``. A form asked for here is kept.
    log_likelihood : bool
        Add a ``log_likelihood`` group (per observed cell, variable ``c``; ``pymc.compute_log_likelihood``) for LOO.
    store_p : bool
        Also store per-cell ``p`` draws in the posterior (chain, draw, agent, task): memory chains x draws x cells x 8
        bytes. Not needed by anything in agentstats.
    check_convergence : bool
        Run :func:`agentstats.models.diagnostics.diagnose` and warn with ``ConvergenceWarning`` on failure.
    judge_calibration : JudgeError or MetricCalibration, optional
        The counts' successes come from a judge whose sensitivity and specificity were measured on a calibration
        set (:class:`agentstats.calibration.JudgeError`, or a metric of :func:`agentstats.calibration.calibrate`).
        The judged counts are then modelled as noisy measurements of the true ones, with ``judge_sensitivity`` and
        ``judge_specificity`` estimated jointly (Beta priors = their calibration posteriors;
        :mod:`agentstats.models.misclassification`), and pass@k / pass^k from the fit are of the *true* outcome.
        Not available for ``no_pooling``. None (default): the counts are taken as true.
    method : {"nuts", "laplace", "exact"} or None
        Inference method. ``"nuts"``: NUTS (``sampler``); ``"laplace"``: the Laplace tier for the Beta-Binomial
        families (:mod:`agentstats.models.laplace`: Gaussian hyperparameters at their marginal mode, task effects
        integrated by quadrature; ``chains x draws`` independent draws, :data:`LAPLACE_DRAWS` per chain by default,
        ``tune`` and ``target_accept`` unused); ``"exact"``: ``no_pooling``'s exact draws. None: chosen by size
        (:func:`agentstats.models.laplace.choose_method`). Recorded in ``fit.sampler.method`` and printed with every
        number (``SamplerInfo.describe``).
    **sampler_options
        Fields of :class:`SamplerConfig`.

    Returns
    -------
    Fit
        ``family``, ``data``, ``sampler`` (:class:`~agentstats.models.result.SamplerInfo`), ``priors``, ``build``,
        ``judge_error``, and ``idata``, the posterior ``xarray.DataTree``: groups ``posterior`` (the sampled
        parameters with dims ``chain, draw`` and ``agent`` / ``task`` / ``cell`` as they have them),
        ``sample_stats``, ``constant_data`` (``n_trials``, ``n_success``, ``cell_present`` with dims ``agent, task``;
        ``n_min``, ``n_max`` per agent), ``observed_data``, optionally ``log_likelihood``; root attributes as
        :meth:`~agentstats.models.result.Fit.to_attrs` lists them.

    Raises
    ------
    ValueError
        On an unknown model, sampler option or dispersion, invalid counts, an invalid seed, or invalid ``priors``
        values or fields.
    TypeError
        When ``priors`` is neither :class:`Priors`, a mapping nor None.
    ImportError
        If an explicitly requested sampler is not installed.
    SamplingInterrupted
        (a ``KeyboardInterrupt``) when sampling was interrupted: no partial posterior is returned.

    Warns
    -----
    ConvergenceWarning
        When R-hat > 1.01, ESS < 400 or any divergence (and ``check_convergence``).
    """
    family = get_family(model, dispersion=dispersion)
    judge_error = _judge_error(judge_calibration)
    unknown = set(sampler_options) - {f.name for f in fields(SamplerConfig)}
    if unknown:
        known = [f.name for f in fields(SamplerConfig)]
        raise ValueError(f"fit: unknown option(s) {sorted(unknown)}; sampler options are {known}")
    config = replace(config or SamplerConfig(), **sampler_options)
    data = prepare_counts(counts)
    priors = as_priors(priors, "fit")
    seed = resolve_random_seed(random_seed, "fit")
    # a NUTS setting asked for keeps NUTS at any size
    sampler_given = bool(config.sampler or config.tune or config.target_accept or config.sample_kwargs
                         or config.nutpie_kwargs or config.until_converged)
    chosen = choose_method(method, family, data, judge_error, sampler_given)
    # the Laplace tier has no acceptance rate (NaN: printed as such, None in summary())
    target_accept = float(config.target_accept or family.target_accept(data)) if chosen != "laplace" else float("nan")
    spec = _Spec(family, data, priors, judge_error, config, seed, target_accept)
    if chosen == "exact":
        run = _draw_exact(spec, parameterization)
    elif chosen == "laplace":
        run = _draw_laplace(spec, parameterization)
    else:
        run = _draw_mcmc(spec, parameterization)
    versions = {pkg: package_version(pkg) for pkg in ("agentstats", "pymc", "pytensor", "arviz", "xarray", "numpy")}
    if run.sampler in ("nutpie", "numpyro"):
        versions[run.sampler] = package_version(run.sampler)
        if run.sampler == "numpyro":
            versions["jax"] = package_version("jax")
    compiled = run.idata.attrs.get("compile_seconds")
    info = SamplerInfo(
        sampler=run.sampler, chains=int(config.chains), draws=run.draws, tune=run.tune, draws_max=run.draws_max,
        target_accept=target_accept, random_seed=seed, checkpoints=tuple(run.checkpoints),
        nutpie_kwargs=dict(config.nutpie_kwargs), versions=versions,
        compile_seconds=float(compiled) if compiled is not None else None,
        method=chosen, laplace=dict(run.laplace),
    )
    result = Fit.assemble(family, data, run.idata, info, priors, run.info, judge_error)
    if log_likelihood:
        pm_model = run.model or family.build(data, priors, run.parameterization, judge_error=judge_error)[0]
        ll = pm.compute_log_likelihood(
            run.idata, model=pm_model, var_names=["c"], extend_inferencedata=False, progressbar=False
        )
        found = isinstance(ll, xr.DataTree) and "log_likelihood" in ll
        run.idata["log_likelihood"] = ll["log_likelihood"] if found else ll
    if store_p and "p" not in run.idata["posterior"]:
        post = run.idata["posterior"].to_dataset()
        p = np.concatenate([blk for _, blk in family.iter_cell_p(post, data, seed)], axis=-1)
        post["p"] = (("chain", "draw", "agent", "task"), p)
        run.idata["posterior"] = post
    if check_convergence and chosen != "exact":
        warn_if_not_converged(result.diagnostics(), stacklevel=2)
    return result


@dataclass(frozen=True)
class _Spec:
    """What a fit draws from: the family, the counts, the priors and the sampler's settings."""

    family: ModelFamily
    data: CountsData
    priors: Priors
    judge_error: JudgeError | None
    config: SamplerConfig
    seed: int
    target_accept: float


@dataclass
class _Run:
    """What a run of the sampler gave: the DataTree, the model built, its sizes and the stopping rule's log."""

    idata: xr.DataTree
    model: pm.Model | None
    info: BuildInfo
    parameterization: dict[str, str] | None
    sampler: str
    draws: int
    draws_max: int
    tune: int
    checkpoints: list[dict[str, Any]] = field(default_factory=list)
    laplace: dict[str, Any] = field(default_factory=dict)


def _draw_exact(spec: _Spec, parameterization: dict[str, str] | None) -> _Run:
    """Draw a family without MCMC (``no_pooling``: its exact Beta posterior)."""
    _, info = spec.family.build(spec.data, spec.priors, parameterization, judge_error=spec.judge_error)
    draws = spec.config.resolved_draws(spec.family, info)
    idata = exact_posterior(spec.data, spec.priors, draws, spec.config.chains, spec.seed)
    return _Run(idata, None, info, parameterization, "exact", draws, draws, 0)


def _draw_laplace(spec: _Spec, parameterization: dict[str, str] | None) -> _Run:
    """Draw a Beta-Binomial family by the Laplace tier (:func:`agentstats.models.laplace.laplace_posterior`).

    ``parameterization`` is not used (the tier has its own coordinates); the fit records the centred forms its
    posterior variables take (``alpha``, ``beta``, ``rho_logit``), which is also the model PyMC builds for
    ``log_likelihood=True``.
    """
    if parameterization:
        raise ValueError("parameterization applies to NUTS; method='laplace' has its own coordinates")
    c = spec.config
    nuts_only = {"sampler": c.sampler, "tune": c.tune, "target_accept": c.target_accept, "sample_kwargs":
                 c.sample_kwargs, "nutpie_kwargs": c.nutpie_kwargs, "until_converged": c.until_converged}
    given = [name for name, value in nuts_only.items() if value]
    if given:  # never silently ignored
        raise ValueError(f"{', '.join(given)}: NUTS setting{'s' if len(given) > 1 else ''}, not taken by "
                         "method='laplace' (which takes chains and draws); leave "
                         f"{'them' if len(given) > 1 else 'it'} out, or use method='nuts'")
    draws = int(spec.config.draws) if spec.config.draws is not None else LAPLACE_DRAWS
    chains = int(spec.config.chains)
    with step(f"Laplace tier: mode, Hessian and {chains * draws:,} independent draws"):
        res = laplace_posterior(spec.family, spec.data, spec.priors, chains, draws, spec.seed)
    return _Run(res.idata, None, res.info, dict(res.info.parameterization), "laplace", draws, draws, 0,
                laplace=res.checks)


def _draw_mcmc(spec: _Spec, parameterization: dict[str, str] | None) -> _Run:
    """Sample the family with NUTS; a centred per-agent dispersion chosen by the rule that diverges is refitted.

    A centred dispersion that diverges is a funnel: agents about equally consistent put ``rho_sd`` near 0
    (docs/models.md, "Centred dispersion"); the refit is non-centred with the same seed, and the abandoned attempt is
    logged in the checkpoints.
    """
    family, config = spec.family, spec.config
    sampler = config.resolved_sampler()
    if config.nutpie_kwargs:
        if sampler != "nutpie":
            raise ValueError(f"nutpie_kwargs needs the nutpie sampler; this fit would use {sampler!r}")
        check_nutpie_kwargs(config.nutpie_kwargs)  # before compiling: a misspelt setting fails at once
    pm_model, info = family.build(spec.data, spec.priors, parameterization, judge_error=spec.judge_error)
    until = config.resolved_until_converged(sampler, spec.data)  # refuses until_converged=True off nutpie
    checkpoints: list[dict[str, Any]] = []

    def run(pm_model: pm.Model, info: BuildInfo, abandon: Callable[[xr.DataTree], bool] | None) -> Any:
        """Sample ``pm_model``; returns (trace or None when abandoned, draws kept, draws asked, tune)."""
        draws = config.resolved_draws(family, info)
        tune = config.resolved_tune(sampler, family, info)
        if sampler == "nutpie" and not config.sample_kwargs:
            check = converged_rule(family) if until else None
            result, kept, log = sample_nutpie(pm_model, config, spec.seed, spec.target_accept, draws, tune, check,
                                              abandon)
            checkpoints.extend(log)
            return result, kept, draws, tune
        return sample_pymc(pm_model, config, sampler, spec.seed, spec.target_accept, draws, tune), draws, draws, tune

    asked = "dispersion" in (parameterization or {})
    fallback = info.parameterization.get("dispersion") == "centered" and not asked
    dt, draws, draws_max, tune = run(pm_model, info, diverged if fallback else None)
    if fallback and (dt is None or diverged(dt)):
        reason = {"reason": "centred dispersion diverged: refitted non-centred"}
        if dt is None:  # abandoned at a checkpoint (its entry is the log's last)
            checkpoints[-1].update(reason)
        else:
            checkpoints.append({"draws": draws, "passed": False, "abandoned": True,
                                "divergences": divergences(dt)} | reason)
        parameterization = {**(parameterization or {}), "dispersion": "non_centered"}
        pm_model, info = family.build(spec.data, spec.priors, parameterization, judge_error=spec.judge_error)
        dt, draws, draws_max, tune = run(pm_model, info, None)
    check_complete(dt, draws, family.diagnostic_var_names(dt["posterior"].to_dataset()))
    return _Run(dt, pm_model, info, parameterization, sampler, draws, draws_max, tune, checkpoints)


def build_model(
    counts: pd.DataFrame,
    model: str | ModelFamily = DEFAULT_MODEL,
    *,
    dispersion: str | None = None,
    priors: Priors | Mapping[str, float] | None = None,
    parameterization: dict[str, str] | None = None,
) -> pm.Model:
    """Build the PyMC model of a family on a counts table (see :meth:`ModelFamily.build`).

    ``priors``: :class:`Priors`, a mapping of its fields, or None (the defaults); see
    :func:`agentstats.models.priors.as_priors`.

    Raises
    ------
    ValueError
        On an unknown model, invalid counts, parameterization or priors.
    TypeError
        When ``priors`` is neither :class:`Priors`, a mapping nor None.
    """
    family = get_family(model, dispersion=dispersion)
    built, _ = family.build(prepare_counts(counts), as_priors(priors, "build_model"), parameterization)
    return built

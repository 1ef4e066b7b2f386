"""Fitting: ``fit(counts, model=..., sampler=...)`` -> ``xarray.DataTree`` with provenance and diagnostics.

Samplers: ``nutpie`` (default; Rust NUTS on a numba-compiled PyMC model), ``numpyro`` (JAX), ``pymc`` (PyMC's
own NUTS). The default falls back to the next installed one. ``no_pooling`` is drawn exactly from its Beta
posterior (no MCMC; ``sampler="exact"``).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import logging
import os
import warnings
from typing import Any

import numpy as np
import pandas as pd
import pymc as pm
import xarray as xr
from scipy import stats

from agentstats.models.builders import (
    BETA_BINOMIAL_MODELS,
    DEFAULT_MODEL,
    MODEL_NAMES,
    CountsData,
    build_model,
    prepare_counts,
)
from agentstats.models.diagnostics import diagnose, warn_if_not_converged
from agentstats.models.priors import DEFAULT_PRIORS, Priors

__all__ = [
    "DEFAULT_SAMPLER",
    "LARGE_CELLS",
    "SAMPLERS",
    "TARGET_ACCEPT",
    "TARGET_ACCEPT_LARGE",
    "available_cpus",
    "available_samplers",
    "fit",
    "stored_counts",
]

#: Default NUTS target acceptance rate per model (others: 0.9).
TARGET_ACCEPT = {"beta_binomial": 0.98, "zoi_beta_binomial": 0.98, "partial_pooling": 0.9, "additive": 0.9}
#: Beta-Binomial models with at least :data:`LARGE_CELLS` observed cells default to :data:`TARGET_ACCEPT_LARGE`:
#: there the posterior of the ~agents + tasks parameters is close to Gaussian and 0.95 doubles the leapfrog steps
#: per draw (31 vs 15 at 10 x 1,000 x 8) without removing any divergence (docs/benchmarks.md); small fits, where
#: the concentration can sit near its boundary, keep 0.95.
LARGE_CELLS = 2000
TARGET_ACCEPT_LARGE = 0.85


def available_cpus() -> int:
    """CPUs this process may run on (``os.sched_getaffinity`` where available, else ``os.cpu_count()``)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)

SAMPLERS = ("nutpie", "numpyro", "pymc")
#: Measured fastest reliable sampler on small and medium sizes (docs/models.md); falls back in SAMPLERS order.
DEFAULT_SAMPLER = "nutpie"
_PACKAGES = {"nutpie": "nutpie", "numpyro": "numpyro", "pymc": "pymc"}


def available_samplers() -> list[str]:
    """Samplers whose packages are importable, in preference order."""
    return [s for s in SAMPLERS if importlib.util.find_spec(_PACKAGES[s]) is not None]


def _version(pkg: str) -> str:
    try:
        return importlib.metadata.version(pkg)
    except importlib.metadata.PackageNotFoundError:
        return "absent"


def _resolve_sampler(sampler: str | None) -> str:
    avail = available_samplers()
    if sampler is None:
        order = [DEFAULT_SAMPLER] + [s for s in SAMPLERS if s != DEFAULT_SAMPLER]
        return next(s for s in order if s in avail)
    if sampler not in SAMPLERS:
        raise ValueError(f"sampler must be one of {SAMPLERS} (or None for the default), got {sampler!r}")
    if sampler not in avail:
        raise ImportError(f"sampler {sampler!r} requested but package {_PACKAGES[sampler]!r} is not installed")
    return sampler


def _counts_dataset(data: CountsData) -> xr.Dataset:
    coords = {"agent": data.agents, "task": data.tasks}
    return xr.Dataset(
        {
            "n_trials": (("agent", "task"), data.n),
            "n_success": (("agent", "task"), data.c),
            "cell_present": (("agent", "task"), data.present),
            "n_min": (("agent",), data.n_min()),
            "n_max": (("agent",), data.n_max()),
        },
        coords=coords,
    )


def stored_counts(dt: xr.DataTree, counts: pd.DataFrame | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Trials ``n`` and successes ``c`` as (agent, task) arrays aligned with the fit's coordinates.

    Parameters
    ----------
    dt : xarray.DataTree
        A fit from :func:`fit` (``constant_data`` holds ``n_trials`` and ``n_success``).
    counts : pandas.DataFrame, optional
        Counts to align instead of the stored ones.

    Returns
    -------
    n, c : numpy.ndarray of int, shape (agent, task)

    Raises
    ------
    ValueError
        If neither stored nor given counts exist, or the given counts name agents/tasks not in the fit.
    """
    agents = [str(a) for a in dt["posterior"]["agent"].values]
    tasks = [str(t) for t in dt["posterior"]["task"].values]
    if counts is None:
        if "constant_data" not in dt.children or "n_trials" not in dt["constant_data"]:
            raise ValueError("no counts stored in dt['constant_data']; pass counts=")
        cd = dt["constant_data"]
        n = cd["n_trials"].sel(agent=agents, task=tasks).to_numpy()
        c = cd["n_success"].sel(agent=agents, task=tasks).to_numpy()
        return n.astype(np.int64), c.astype(np.int64)
    data = prepare_counts(counts)
    extra_a = set(data.agents) - set(agents)
    extra_t = set(data.tasks) - set(tasks)
    if extra_a or extra_t:
        raise ValueError(
            f"counts do not match the fit: agents {sorted(extra_a)} / tasks {sorted(extra_t)[:5]} not in it"
        )
    n = np.zeros((len(agents), len(tasks)), dtype=np.int64)
    c = np.zeros_like(n)
    ai = pd.Index(agents).get_indexer(data.agents)
    ti = pd.Index(tasks).get_indexer(data.tasks)
    n[np.ix_(ai, ti)] = data.n
    c[np.ix_(ai, ti)] = data.c
    return n, c


def _exact_no_pooling(data: CountsData, priors: Priors, draws: int, chains: int, seed: int) -> xr.DataTree:
    """Exact draws from the no-pooling posterior Beta(a0 + c, b0 + n - c) per cell (BDA3 sec. 2.4)."""
    rng = np.random.default_rng(seed)
    a = priors.beta_a + data.c
    b = priors.beta_b + data.n - data.c
    p = rng.beta(a, b, size=(chains, draws, *data.n.shape))
    post = xr.Dataset(
        {"p": (("chain", "draw", "agent", "task"), p)},
        coords={"chain": np.arange(chains), "draw": np.arange(draws), "agent": data.agents, "task": data.tasks},
    )
    return xr.DataTree.from_dict({"posterior": post})


def _cell_dataset(dt: xr.DataTree, ll: np.ndarray) -> xr.Dataset:
    """Build the ``log_likelihood`` group for the observed variable ``c``: ``ll`` with dims (chain, draw, cell)."""
    return xr.Dataset(
        {"c": (("chain", "draw", "cell"), ll)},
        coords={
            "chain": dt["posterior"]["chain"].values,
            "draw": dt["posterior"]["draw"].values,
            "cell": np.arange(ll.shape[-1]),
        },
    )


def _cell_log_likelihood(dt: xr.DataTree, data: CountsData) -> xr.Dataset:
    """Binomial log-likelihood per observed cell, dims (chain, draw, cell)."""
    ai, ti = data.obs_index()
    p = dt["posterior"]["p"].transpose("chain", "draw", "agent", "task").to_numpy()[..., ai, ti]
    ll = stats.binom.logpmf(data.c[ai, ti], data.n[ai, ti], p)
    return _cell_dataset(dt, ll)


def _beta_binomial_params(dt: xr.DataTree) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Return the Beta-Binomial parameters of a fit's draws.

    ``eta`` (chain, draw, agent, task), ``phi`` and ``det_share`` (chain, draw; ``None`` unless
    ``zoi_beta_binomial``).
    """
    from agentstats.models.beta_binomial import linear_predictor

    post = dt["posterior"]
    alpha = post["alpha"].transpose("chain", "draw", "agent").to_numpy() if "alpha" in post else None
    eta = linear_predictor(
        post["mu"].transpose("chain", "draw").to_numpy(),
        alpha,
        post["beta"].transpose("chain", "draw", "task").to_numpy(),
    )
    det = post["det_share"].transpose("chain", "draw").to_numpy() if "det_share" in post else None
    return eta, post["phi"].transpose("chain", "draw").to_numpy(), det


def _add_conditional_p(dt: xr.DataTree, data: CountsData, seed: int, params: tuple) -> None:
    """Add exact draws of ``p`` (chain, draw, agent, task) to a Beta-Binomial posterior.

    ``p[a,t] | c, m, phi ~ Beta(m phi + c, (1 - m) phi + n - c)`` (after the deterministic component for
    ``zoi_beta_binomial``), one draw per posterior draw
    (:func:`agentstats.models.beta_binomial.conditional_p_draws`), seeded by ``seed``; ``params`` from
    :func:`_beta_binomial_params`.
    """
    from agentstats.models.beta_binomial import conditional_p_draws

    eta, phi, det = params
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0xBB]))
    p = conditional_p_draws(eta, phi, data.n, data.c, rng, det_share=det)
    post = dt["posterior"].to_dataset()
    post["p"] = (("chain", "draw", "agent", "task"), p)
    dt["posterior"] = post


def _beta_binomial_log_likelihood(dt: xr.DataTree, data: CountsData, params: tuple) -> xr.Dataset:
    """Compute the Beta-Binomial (or zero/one-inflated) log-likelihood per observed cell.

    ``p`` is integrated out; dims (chain, draw, cell) (:func:`agentstats.models.beta_binomial.cell_log_likelihood`);
    ``params`` from :func:`_beta_binomial_params`.
    """
    from agentstats.models.beta_binomial import cell_log_likelihood

    ai, ti = data.obs_index()
    eta, phi, det = params
    ll = cell_log_likelihood(eta[..., ai, ti], phi, data.n[ai, ti], data.c[ai, ti], det_share=det)
    return _cell_dataset(dt, ll)


def fit(
    counts: pd.DataFrame,
    model: str = DEFAULT_MODEL,
    *,
    sampler: str | None = None,
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 4,
    random_seed: int | None = None,
    target_accept: float | None = None,
    progressbar: bool = False,
    priors: Priors | None = None,
    parameterization: dict[str, str] | None = None,
    log_likelihood: bool = False,
    cores: int | None = None,
    check_convergence: bool = True,
    r_hat_max: float = 1.01,
    ess_min: float = 400,
    sample_kwargs: dict[str, Any] | None = None,
) -> xr.DataTree:
    """Fit a model of per-cell success counts and return its posterior as an ``xarray.DataTree``.

    Parameters
    ----------
    counts : pandas.DataFrame
        Columns ``agent, task_id, n, c`` (one row per cell; see
        :func:`agentstats.models.builders.prepare_counts`).
    model : {"zoi_beta_binomial", "beta_binomial", "partial_pooling", "additive", "no_pooling"}
        Default ``zoi_beta_binomial`` (:data:`DEFAULT_MODEL`): the per-cell agent x task term as a Beta-Binomial
        likelihood with a share ``det_share`` of deterministic (always / never succeeding) cells. On the METR
        check its 95 % intervals held on every random 2-run subset tried, where the plain ``beta_binomial`` and the
        logit-normal ``partial_pooling`` under-covered the strong agents (``docs/models.md``,
        ``docs/validation.md``). Builders in :mod:`agentstats.models.builders` (Beta-Binomial models:
        :mod:`agentstats.models.beta_binomial`; their ``p`` is drawn exactly from its conditional given ``c``
        per posterior draw, seeded by ``random_seed``, and their ``log_likelihood`` has ``p`` integrated out).
    sampler : {"nutpie", "numpyro", "pymc"} or None
        NUTS implementation; None picks :data:`DEFAULT_SAMPLER` or the next installed one. Ignored for
        ``no_pooling``, which is drawn exactly (recorded as ``"exact"``).
    draws, tune, chains : int
        Posterior draws and tuning steps per chain, number of chains.
    random_seed : int, optional
        Seed; the same seed, data and sampler give identical draws. If None a seed is drawn from OS entropy and
        recorded in ``attrs["random_seed"]``.
    target_accept : float, optional
        NUTS target acceptance rate; default :data:`TARGET_ACCEPT` for the model (0.98 for both Beta-Binomial
        models, whose concentration approaches its boundary when cells are barely overdispersed: at 0.95
        ``beta_binomial`` left a divergence in 4 of 10 small fits, at 0.98 none, and ``zoi_beta_binomial`` had none
        at either, ``validation/target_accept_check.py``; 0.9 for the others), and
        :data:`TARGET_ACCEPT_LARGE` for Beta-Binomial models on :data:`LARGE_CELLS` or more observed cells.
    progressbar : bool
        Show the sampler's progress bar.
    priors : Priors, optional
        Default :data:`agentstats.models.priors.DEFAULT_PRIORS`.
    parameterization : dict, optional
        Per-level override of the centred/non-centred rule (``agent``, ``task``, ``cell``).
    log_likelihood : bool
        Add a ``log_likelihood`` group (per cell, variable ``c``) for LOO (:func:`compare_models`).
    cores : int, optional
        Chains run in parallel (nutpie threads / pymc processes); default ``min(chains, available_cpus())``.
    check_convergence : bool
        Run :func:`agentstats.models.diagnostics.diagnose` and warn with ``ConvergenceWarning`` on failure.
    r_hat_max, ess_min : float
        Thresholds for that check.
    sample_kwargs : dict, optional
        Extra keyword arguments for ``pymc.sample``.

    Returns
    -------
    xarray.DataTree
        Groups ``posterior`` (``p`` with dims ``chain, draw, agent, task`` and the hyperparameters ``mu``,
        ``sigma_agent``, ``sigma_task``, ``sigma_cell``, effects ``alpha``, ``beta``, ``gamma`` as present),
        ``sample_stats`` (MCMC), ``constant_data`` (``n_trials``, ``n_success``, ``cell_present`` with dims
        ``agent, task``; ``n_min``, ``n_max`` per agent), ``observed_data``, optionally ``log_likelihood``.
        Root ``attrs``: ``agentstats_model``, ``sampler``, ``versions`` (JSON), ``parameterization`` (JSON),
        ``parameterization_ratios`` (JSON), ``priors`` (JSON), ``counts_hash``, ``random_seed``, ``draws``,
        ``tune``, ``chains``, ``target_accept``, ``has_agent_effect``, ``has_cell_effect`` (0/1), ``p_draws``
        (``"sampled"``, or ``"conditional_beta"`` for ``beta_binomial``).

    Raises
    ------
    ValueError
        On an unknown model or sampler, or invalid counts.
    ImportError
        If an explicitly requested sampler is not installed.

    Warns
    -----
    ConvergenceWarning
        When R-hat > ``r_hat_max``, ESS < ``ess_min`` or any divergence (and ``check_convergence``).
    """
    if model not in MODEL_NAMES:
        raise ValueError(f"model must be one of {MODEL_NAMES}, got {model!r}")
    data = prepare_counts(counts)
    if target_accept is None:
        target_accept = TARGET_ACCEPT.get(model, 0.9)
        if model in BETA_BINOMIAL_MODELS and int(np.count_nonzero(data.n)) >= LARGE_CELLS:
            target_accept = TARGET_ACCEPT_LARGE
    priors = priors or DEFAULT_PRIORS
    if random_seed is None:
        random_seed = int(np.random.SeedSequence().generate_state(1)[0])
    random_seed = int(random_seed)
    if model == "no_pooling":
        sampler_used = "exact"
        dt = _exact_no_pooling(data, priors, draws, chains, random_seed)
        meta = dict(parameterization={}, parameterization_ratios={}, has_agent_effect=False, has_cell_effect=False)
    else:
        sampler_used = _resolve_sampler(sampler)
        pm_model = build_model(data, model, priors=priors, parameterization=parameterization)
        meta = pm_model._agentstats
        kwargs = dict(
            draws=draws,
            tune=tune,
            chains=chains,
            random_seed=random_seed,
            target_accept=target_accept,
            progressbar=progressbar,
            nuts_sampler=sampler_used,
            quiet=not progressbar,
            compute_convergence_checks=False,
            model=pm_model,
        )
        # PyMC's default halves the CPU count (it assumes hyper-threads): 1 core on a 2-CPU machine.
        kwargs["cores"] = int(cores) if cores is not None else min(int(chains), available_cpus())
        kwargs.update(sample_kwargs or {})
        pymc_logger = logging.getLogger("pymc")
        level = pymc_logger.level
        if not progressbar:
            pymc_logger.setLevel(logging.ERROR)
        try:
            with warnings.catch_warnings():
                # numpyro on one CPU device runs chains sequentially and says so; not the user's concern.
                warnings.filterwarnings("ignore", message=".*There are not enough devices.*")
                dt = pm.sample(**kwargs)
        finally:
            pymc_logger.setLevel(level)
    # Beta-Binomial: p was integrated out; add its exact conditional draws (and mark that in attrs).
    p_conditional = model in BETA_BINOMIAL_MODELS and "p" not in dt["posterior"]
    # eta (chain, draw, agent, task) is computed once for both the p draws and the log-likelihood.
    bb_params = _beta_binomial_params(dt) if p_conditional else None
    if p_conditional:
        _add_conditional_p(dt, data, random_seed, bb_params)
    cdata = _counts_dataset(data)
    if "constant_data" in dt.children:
        dt["constant_data"] = dt["constant_data"].to_dataset().merge(cdata)
    else:
        dt["constant_data"] = cdata
    if log_likelihood:
        if p_conditional:
            dt["log_likelihood"] = _beta_binomial_log_likelihood(dt, data, bb_params)
        else:
            dt["log_likelihood"] = _cell_log_likelihood(dt, data)
    versions = {pkg: _version(pkg) for pkg in ("pymc", "pytensor", "arviz", "xarray", "numpy")}
    if sampler_used in ("nutpie", "numpyro"):
        versions[sampler_used] = _version(sampler_used)
        if sampler_used == "numpyro":
            versions["jax"] = _version("jax")
    dt.attrs.update(
        agentstats_model=model,
        sampler=sampler_used,
        versions=json.dumps(versions, sort_keys=True),
        parameterization=json.dumps(meta["parameterization"], sort_keys=True),
        parameterization_ratios=json.dumps({k: round(v, 4) for k, v in meta["parameterization_ratios"].items()}),
        priors=json.dumps(priors.as_dict(), sort_keys=True),
        counts_hash=data.hash,
        random_seed=random_seed,
        draws=int(draws),
        tune=int(tune) if model != "no_pooling" else 0,
        chains=int(chains),
        target_accept=float(target_accept),
        has_agent_effect=int(meta["has_agent_effect"]),
        has_cell_effect=int(meta["has_cell_effect"]),
        p_draws="conditional_beta" if p_conditional else "sampled",
    )
    if check_convergence and model != "no_pooling":
        warn_if_not_converged(diagnose(dt, r_hat_max=r_hat_max, ess_min=ess_min), stacklevel=2)
    return dt

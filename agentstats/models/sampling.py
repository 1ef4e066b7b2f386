"""Sampling a built model: the sampler settings and the NUTS runs behind :func:`agentstats.models.fitting.fit`.

Samplers: ``nutpie`` (default; Rust NUTS on a numba-compiled PyMC model), ``numpyro`` (JAX), ``pymc`` (PyMC's
own NUTS). The default falls back to the next installed one. With nutpie a large fit can stop at the first
checkpoint where it has converged (:func:`sample_nutpie`), and a centred per-agent dispersion that diverges can be
abandoned early for the non-centred form. Ctrl-C while sampling raises :class:`SamplingInterrupted`: a partial
posterior is never returned.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import inspect
import logging
import os
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pymc as pm
import xarray as xr

from agentstats._util.progress import progress, step
from agentstats._util.signals import StopState, stop_signals_chained
from agentstats.models._nutpie_model import compile_nutpie
from agentstats.models.data import CountsData
from agentstats.models.diagnostics import diagnose
from agentstats.models.families.base import BuildInfo, ModelFamily

__all__ = [
    "ABANDON_FIRST_DRAWS",
    "DEFAULT_SAMPLER",
    "DRAWS",
    "SAMPLERS",
    "STOP_ESS_MIN",
    "STOP_EVERY_DRAWS",
    "STOP_FIRST_DRAWS",
    "TUNE",
    "UNTIL_CONVERGED_MIN_CELLS",
    "SamplerConfig",
    "SamplingInterrupted",
    "available_cpus",
    "available_samplers",
    "check_complete",
    "check_nutpie_kwargs",
    "converged_rule",
    "diverged",
    "divergences",
    "package_version",
    "sample_nutpie",
    "sample_pymc",
]

SAMPLERS = ("nutpie", "numpyro", "pymc")
#: ``nutpie.sample`` arguments that ``fit`` sets itself; ``SamplerConfig.nutpie_kwargs`` may not name them.
NUTPIE_OWN_KWARGS = ("compiled_model", "draws", "tune", "chains", "cores", "seed", "target_accept", "save_warmup",
                     "progress_bar", "progress_callback", "blocking", "num_draws", "num_tune", "num_chains")
#: Default posterior draws per chain, at every size: the agent-level hyperparameters (the per-agent dispersion and
#: the always/never share) mix slowly. METR (10 agents x 748 cells of 2 runs): R-hat 1.006-1.016 and ESS_bulk 330-530
#: at 4 x 1,000; LiveCodeBench at 2 samples per cell (15 x 713 cells): R-hat 1.014, ESS_bulk 267 on one of three
#: subsets at 4 x 1,000, R-hat 1.005, ESS_bulk 620 at 4 x 2,000 (docs/validation.md). Fits whose per-agent
#: dispersion is centred (250+ cells of 4+ trials per agent) default to 1,000 (``ModelFamily.default_draws``).
DRAWS = 2000
#: Default tuning steps per chain (PyMC's); a family may choose fewer for nutpie (``ModelFamily.default_tune``).
TUNE = 1000
#: From this many observed cells on (where a fit takes minutes), a fit without ``draws`` stops at the first
#: converged checkpoint (``SamplerConfig.until_converged``); smaller fits draw all their draws, as they cost little.
UNTIL_CONVERGED_MIN_CELLS = 5000
#: First checkpoint (draws per chain) of ``until_converged``, and the spacing of the later ones.
STOP_FIRST_DRAWS = 500
STOP_EVERY_DRAWS = 250
#: Draws per chain after which a centred-dispersion fit with the stopping rule is first asked for divergences, so that
#: a funnel is left early for the non-centred form (``fit``).
ABANDON_FIRST_DRAWS = 100
#: Bulk and tail ESS every diagnosed parameter needs at a checkpoint to stop there: 1.25x the 400 that
#: :func:`agentstats.models.diagnostics.diagnose` asks, so that the estimate's own noise (about 10 % at this size)
#: does not end a fit that has not reached 400.
STOP_ESS_MIN = 500
#: Largest R-hat every diagnosed parameter may have at a checkpoint to stop there (the threshold of ``diagnose``).
R_HAT_MAX = 1.01
#: Measured fastest reliable sampler on small and medium sizes (docs/models.md); falls back in SAMPLERS order.
DEFAULT_SAMPLER = "nutpie"
_PACKAGES = {"nutpie": "nutpie", "numpyro": "numpyro", "pymc": "pymc"}


class SamplingInterrupted(KeyboardInterrupt):
    """Sampling was interrupted (Ctrl-C): no posterior is returned, since a partial one would claim too much."""


def available_cpus() -> int:
    """CPUs this process may run on (``os.sched_getaffinity`` where available, else ``os.cpu_count()``)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)


def available_samplers() -> list[str]:
    """Samplers whose packages are importable, in preference order.

    A package already in ``sys.modules`` counts as installed without being touched: ArviZ registers ``numpyro`` as a
    lazily loaded module, and ``importlib.util.find_spec`` of such a module reads its ``__spec__``, which loads it
    (numpyro: about 2 s and 0.15 GB in a fit that never uses it). Others are looked up with ``find_spec``, which
    does not import a top-level package (and sees editable installs, unlike a bare ``sys.path`` search).
    """
    return [s for s in SAMPLERS
            if sys.modules.get(_PACKAGES[s]) is not None or importlib.util.find_spec(_PACKAGES[s]) is not None]


@dataclass(frozen=True)
class SamplerConfig:
    """How to sample a fit: NUTS implementation, sizes, acceptance rate, parallelism.

    Parameters
    ----------
    sampler : {"nutpie", "numpyro", "pymc"} or None
        NUTS implementation; None picks :data:`DEFAULT_SAMPLER` or the next installed one.
    draws : int or None
        Posterior draws per chain (>= 1); None: :data:`DRAWS` (2,000), or the family's default for the data
        (:meth:`agentstats.models.families.base.ModelFamily.default_draws`: 1,500 for a Beta-Binomial fit with centred
        per-agent dispersion); a large fit then stops at the first checkpoint where it has converged
        (``until_converged``).
    tune : int or None
        Tuning steps per chain (>= 1); None: :data:`TUNE` (1,000), or the family's default for the data and sampler
        (:meth:`agentstats.models.families.base.ModelFamily.default_tune`: 300 with nutpie for centred dispersion).
    chains : int
        Number of chains (>= 1).
    until_converged : bool or None
        Sample at most ``draws`` per chain but stop at the first checkpoint (:data:`STOP_FIRST_DRAWS` draws, then every
        :data:`STOP_EVERY_DRAWS`) where every diagnosed parameter has R-hat <= 1.01 and bulk and tail ESS >=
        :data:`STOP_ESS_MIN` (:func:`sample_nutpie`). None: on when ``draws`` is not given, the sampler is
        nutpie and the data have at least :data:`UNTIL_CONVERGED_MIN_CELLS` observed cells. Needs nutpie.
    target_accept : float or None
        NUTS target acceptance rate in (0, 1); None: the family's default for the data
        (:meth:`agentstats.models.families.base.ModelFamily.target_accept`).
    cores : int or None
        Chains run in parallel; default ``min(chains, available_cpus())`` (PyMC's own default halves the CPU count),
        and every chain at once when ``until_converged`` is on (nutpie runs batches of ``cores`` chains to their end).
    progressbar : bool
        Show the sampler's progress bar.
    sample_kwargs : dict
        Extra keyword arguments for ``pymc.sample`` (a fit with them samples through ``pymc.sample``, without the
        stopping rule ``until_converged``).
    nutpie_kwargs : dict
        Settings for nutpie's sampler (``sampler="nutpie"`` only), kept with the stopping rule: e.g.
        ``{"adaptation": "low_rank"}`` (its low-rank mass-matrix adaptation) or ``{"maxdepth": 8}`` (the largest tree
        depth). The run-length and seed settings are ``SamplerConfig``'s own and are refused here
        (:data:`NUTPIE_OWN_KWARGS`).

    Raises
    ------
    ValueError
        On an invalid value.
    """

    sampler: str | None = None
    draws: int | None = None
    tune: int | None = None
    chains: int = 4
    until_converged: bool | None = None
    target_accept: float | None = None
    cores: int | None = None
    progressbar: bool = False
    sample_kwargs: dict[str, Any] = field(default_factory=dict)
    nutpie_kwargs: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        own = sorted(set(self.nutpie_kwargs) & set(NUTPIE_OWN_KWARGS))
        if own:
            raise ValueError(f"nutpie_kwargs must not set {own}: give them as SamplerConfig's own fields")
        if self.nutpie_kwargs and self.sampler not in (None, "nutpie"):
            raise ValueError(f"nutpie_kwargs needs sampler='nutpie', got sampler={self.sampler!r}")
        for name in ("draws", "tune", "chains"):
            value = getattr(self, name)
            if name in ("draws", "tune") and value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        if self.target_accept is not None and not 0.0 < float(self.target_accept) < 1.0:
            raise ValueError(f"target_accept must be in (0, 1), got {self.target_accept!r}")
        if self.cores is not None and int(self.cores) < 1:
            raise ValueError(f"cores must be >= 1, got {self.cores!r}")
        if self.sampler is not None and self.sampler not in SAMPLERS:
            raise ValueError(f"sampler must be one of {SAMPLERS} (or None for the default), got {self.sampler!r}")

    def resolved_draws(self, family: ModelFamily | None = None, info: BuildInfo | None = None) -> int:
        """Draws per chain (the most, with ``until_converged``): given, else the family's default, else DRAWS."""
        if self.draws is not None:
            return int(self.draws)
        if family is not None and info is not None:
            return family.default_draws(info) or DRAWS
        return DRAWS

    def resolved_tune(self, sampler: str, family: ModelFamily | None = None, info: BuildInfo | None = None) -> int:
        """Tuning steps per chain: given, else the family's default for the model and sampler, else :data:`TUNE`."""
        if self.tune is not None:
            return int(self.tune)
        if family is not None and info is not None:
            return family.default_tune(info, sampler) or TUNE
        return TUNE

    def resolved_until_converged(self, sampler: str, data: CountsData) -> bool:
        """Whether to stop at the first converged checkpoint (see ``until_converged``).

        Raises
        ------
        ValueError
            When ``until_converged=True`` with a sampler other than nutpie or with ``sample_kwargs``.
        """
        if self.until_converged is None:
            large = int(np.count_nonzero(data.n)) >= UNTIL_CONVERGED_MIN_CELLS
            return self.draws is None and sampler == "nutpie" and not self.sample_kwargs and large
        if self.until_converged and (sampler != "nutpie" or self.sample_kwargs):
            raise ValueError("until_converged=True needs sampler='nutpie' and no sample_kwargs")
        return bool(self.until_converged)

    def resolved_sampler(self) -> str:
        """Resolve the sampler that will run.

        Raises
        ------
        ImportError
            If an explicitly requested sampler is not installed.
        """
        avail = available_samplers()
        if self.sampler is None:
            order = [DEFAULT_SAMPLER] + [s for s in SAMPLERS if s != DEFAULT_SAMPLER]
            return next(s for s in order if s in avail)
        if self.sampler not in avail:
            raise ImportError(
                f"sampler {self.sampler!r} requested but package {_PACKAGES[self.sampler]!r} is not installed"
            )
        return self.sampler


def package_version(pkg: str) -> str:
    """Return the installed version of ``pkg``, or ``"absent"``."""
    try:
        return importlib.metadata.version(pkg)
    except importlib.metadata.PackageNotFoundError:
        return "absent"


@contextlib.contextmanager
def _interrupt_flag() -> Iterator[StopState]:
    """Record a SIGINT or SIGTERM while sampling (samplers may turn it into another error or a padded trace)."""
    with stop_signals_chained(StopState()) as flag:
        yield flag


def check_complete(dt: xr.DataTree, draws: int, names: list[str]) -> None:
    """Refuse a posterior with non-finite draws of sampled variables (a trace padded after an interrupt)."""
    post = dt["posterior"]
    for v in names:
        values = post[v].to_numpy()
        if not np.isfinite(values).all():
            finite = np.isfinite(values.reshape(values.shape[0], values.shape[1], -1)).all(axis=-1).sum(axis=1)
            raise SamplingInterrupted(
                f"sampling stopped early: chains hold {finite.tolist()} of {draws} draws; nothing was kept"
            )


def _cores(config: SamplerConfig) -> int:
    return int(config.cores) if config.cores is not None else min(int(config.chains), available_cpus())


def check_nutpie_kwargs(kwargs: dict[str, Any]) -> None:
    """Refuse ``nutpie_kwargs`` that nutpie would not take, before the model is compiled.

    Arguments of ``nutpie.sample`` itself (e.g. ``adaptation``) pass; every other key must be a setting of nutpie's
    sampler for that adaptation, tried on a fresh settings object as ``nutpie.sample`` applies them.

    Raises
    ------
    ValueError
        Naming the key, its value and nutpie's reason.
    """
    import nutpie

    own = set(inspect.signature(nutpie.sample).parameters) - {"kwargs"}
    try:
        kinds = {"low_rank": "LowRank", "flow": "Flow"}
        settings = getattr(nutpie._lib.PyNutsSettings, kinds.get(kwargs.get("adaptation", "diag"), "Diag"))(0)
    except AttributeError:  # another nutpie layout: nutpie.sample checks them itself
        return
    for key, value in kwargs.items():
        if key in own:
            continue
        try:
            settings.update({key: value})
        except Exception as exc:  # nutpie raises AttributeError, TypeError or ValueError from Rust
            raise ValueError(
                f"nutpie_kwargs: {key}={value!r} is not a setting nutpie {package_version('nutpie')} takes ({exc})"
            ) from None


def _first_draws(dt: xr.DataTree, k: int) -> xr.DataTree:
    """Keep the first ``k`` draws of every chain (groups without a ``draw`` dim unchanged)."""
    return dt.isel(draw=slice(0, k), missing_dims="ignore")


def converged_rule(family: ModelFamily) -> Callable[[xr.DataTree], tuple[bool, float, float]]:
    """Return the stopping rule of ``until_converged``: R-hat <= 1.01, bulk and tail ESS >= :data:`STOP_ESS_MIN`.

    Checks the parameters without a task or cell dim first (few, and the slow ones), then the rest only when those
    pass. Returns ``(passed, worst R-hat, smallest ESS)`` of the variables checked.
    """

    def check(dt: xr.DataTree) -> tuple[bool, float, float]:
        post = dt["posterior"].to_dataset()
        if post.sizes.get("chain", 1) < 2:
            # R-hat needs two chains or more (diagnose skips it with one): one chain runs to its most draws
            return False, float("nan"), float("nan")
        names = family.diagnostic_var_names(post)
        hyper = [v for v in names if not {"task", "cell"} & set(post[v].dims)]
        worst_r_hat, least_ess = 1.0, float("inf")
        for group in (hyper, [v for v in names if v not in hyper]):
            if not group:
                continue
            # diagnose's per-variable verdict: R-hat and both ESS within the limits, NaN a failure
            table = diagnose(dt, r_hat_max=R_HAT_MAX, ess_min=STOP_ESS_MIN, var_names=group).table
            worst_r_hat = max(worst_r_hat, float(table["r_hat"].max()))
            least_ess = min(least_ess, float(table[["ess_bulk", "ess_tail"]].min().min()))
            if not bool(table["ok"].all()):
                return False, worst_r_hat, least_ess
        return True, worst_r_hat, least_ess

    return check


def divergences(dt: xr.DataTree) -> int:
    """Divergent transitions after warm-up in a trace (0 without ``sample_stats.diverging``)."""
    if "sample_stats" not in dt.children or "diverging" not in dt["sample_stats"].dataset:
        return 0
    return int(dt["sample_stats"]["diverging"].sum())


def diverged(dt: xr.DataTree) -> bool:
    """Whether a centred-dispersion trace has divergent transitions (then ``fit`` refits non-centred)."""
    return divergences(dt) > 0


def _finished(run: Any) -> bool:
    """Whether nutpie's background sampler has finished (its ``is_finished`` raises TimeoutError while running)."""
    try:
        return bool(run.is_finished)
    except TimeoutError:
        return False


def sample_nutpie(
    model: pm.Model,
    config: SamplerConfig,
    seed: int,
    target_accept: float,
    draws: int,
    tune: int,
    check: Callable[[xr.DataTree], tuple[bool, float, float]] | None,
    abandon: Callable[[xr.DataTree], bool] | None = None,
) -> tuple[xr.DataTree | None, int, list[dict[str, Any]]]:
    """Sample with nutpie in the background; with ``check``, stop at its first passing checkpoint.

    Checkpoints are fixed draw counts (:data:`STOP_FIRST_DRAWS`, then every :data:`STOP_EVERY_DRAWS`, below
    ``draws``), checked in order on the first ``k`` draws of every chain, so the draws kept depend on the seed
    only, never on timing. Returns the trace (``k`` or ``draws`` draws per chain), the draws kept and the log of
    checkpoints (``draws``, ``passed``, ``max_r_hat``, ``min_ess``). With ``abandon`` (asked at
    :data:`ABANDON_FIRST_DRAWS` and at every checkpoint, with or without ``check``), a checkpoint where it returns
    True stops the run and returns no trace (``None``).
    """
    import nutpie
    from pymc.backends.arviz import patch_nutpie_idata
    from pymc.util import get_random_generator

    chains = int(config.chains)
    # the seed pm.sample would give nutpie for this random_seed
    nutpie_seed = int(get_random_generator(seed).spawn(chains)[0].integers(2**30))
    compile_start = time.perf_counter()
    with step("compiling the model for nutpie (cached on disk after the first run)"):
        compiled = compile_nutpie(model)  # nutpie's numba model, its callbacks cached on disk
    compile_seconds = time.perf_counter() - compile_start
    done = [0] * chains

    def status() -> str:
        least = min(done)  # the slowest chain
        if least < tune:
            return f"tuning, {least:,} of {tune:,} steps (slowest of {chains} chains)"
        return f"{least - tune:,} of {until} draws (slowest of {chains} chains)"

    def on_progress(progress: Any) -> None:
        for i, chain in enumerate(progress):
            done[i] = int(chain.finished_draws)

    checkpoints = list(range(STOP_FIRST_DRAWS, draws, STOP_EVERY_DRAWS)) if check is not None else []
    if abandon is not None and ABANDON_FIRST_DRAWS < draws:
        checkpoints.insert(0, ABANDON_FIRST_DRAWS)  # only ``abandon`` is asked there: divergences show early
    log: list[dict[str, Any]] = []
    kept = draws
    start = time.time()
    until = f"up to {draws:,}" if check is not None else f"{draws:,}"
    sampling = step(f"sampling with nutpie: {chains} chains x ({tune:,} tuning + {until} draws)", status)
    with _interrupt_flag() as flag, sampling:
        run = nutpie.sample(
            compiled,
            draws=draws,
            tune=tune,
            chains=chains,
            # nutpie runs `cores` chains at a time, each to its end: a checkpoint would wait for the last batch while
            # the first ran past it, so with checkpoints every chain gets its thread (the OS shares the CPUs)
            cores=_cores(config) if not checkpoints or config.cores is not None else chains,
            seed=nutpie_seed,
            target_accept=target_accept,
            save_warmup=False,
            progress_bar=config.progressbar,
            progress_callback=on_progress,
            blocking=False,
            **config.nutpie_kwargs,
        )
        final: xr.DataTree | None = None
        try:
            while checkpoints:
                k = checkpoints[0]
                if final is None and _finished(run):
                    final = run.wait()
                if final is None and min(done) - tune < k:
                    time.sleep(0.2)
                    continue
                checkpoints.pop(0)
                trace = _first_draws(final if final is not None else run.inspect(), k)
                if abandon is not None and abandon(trace):
                    log.append({"draws": k, "passed": False, "abandoned": True, "divergences": divergences(trace)})
                    if final is None:
                        run.abort()
                    return None, k, log
                if check is None or k < STOP_FIRST_DRAWS:
                    continue
                passed, r_hat, ess = check(trace)
                log.append({"draws": k, "passed": passed, "max_r_hat": round(r_hat, 4), "min_ess": round(ess, 1)})
                progress(f"checkpoint at {k:,} draws: worst R-hat {r_hat:.3f}, least ESS {ess:,.0f}: "
                         + ("converged, stopping here" if passed else "not yet converged, sampling on"))
                if passed:
                    kept = k
                    break
            if final is None:
                final = run.abort() if kept < draws else run.wait()
        except KeyboardInterrupt:
            with contextlib.suppress(Exception):
                run.cancel()
            raise SamplingInterrupted("sampling interrupted; nothing was kept") from None
        if flag.hit:
            raise SamplingInterrupted("sampling interrupted; nothing was kept")
    dt = _first_draws(final, kept)
    patch_nutpie_idata(dt, model, sampling_time=time.time() - start)
    dt.attrs["compile_seconds"] = round(compile_seconds, 2)
    return dt, kept, log


def sample_pymc(
    model: pm.Model, config: SamplerConfig, sampler: str, seed: int, target_accept: float, draws: int, tune: int
) -> xr.DataTree:
    """Sample ``model`` with ``pymc.sample`` and the chosen NUTS implementation; Ctrl-C raises SamplingInterrupted."""
    from agentstats.models._bb_kernel import register_jax, register_numba

    if sampler == "numpyro":
        register_jax()  # the Beta-Binomial cell kernel's JAX form
    elif sampler == "nutpie":
        register_numba()  # pm.sample compiles nutpie's model to numba
    kwargs: dict[str, Any] = dict(
        draws=draws,
        tune=tune,
        chains=config.chains,
        random_seed=seed,
        target_accept=target_accept,
        progressbar=config.progressbar,
        nuts_sampler=sampler,
        quiet=not config.progressbar,
        compute_convergence_checks=False,
        model=model,
        cores=_cores(config),
    )
    if config.nutpie_kwargs:
        kwargs["nuts_sampler_kwargs"] = dict(config.nutpie_kwargs)
    kwargs.update(config.sample_kwargs)
    pymc_logger = logging.getLogger("pymc")
    level = pymc_logger.level
    if not config.progressbar:
        pymc_logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings(), _interrupt_flag() as flag:
            # numpyro on one CPU device runs chains sequentially and says so; not the user's concern.
            warnings.filterwarnings("ignore", message=".*There are not enough devices.*")
            try:
                with step(f"sampling with {sampler}: {config.chains} chains x ({tune:,} tuning + {draws:,} draws)"):
                    dt = pm.sample(**kwargs)
            except KeyboardInterrupt:
                raise SamplingInterrupted("sampling interrupted; nothing was kept") from None
            except Exception as exc:
                if flag.hit:  # the interrupt surfaced as another error inside the sampler
                    raise SamplingInterrupted("sampling interrupted; nothing was kept") from exc
                raise
            if flag.hit:
                # the interrupt was raised where Python ignores exceptions (e.g. a garbage-collection callback of
                # JAX) and sampling ran on: a result after Ctrl-C is still not a result
                raise SamplingInterrupted("sampling interrupted; nothing was kept")
            return dt
    finally:
        pymc_logger.setLevel(level)

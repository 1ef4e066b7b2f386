"""The model family interface: everything specific to one statistical model of agent x task counts lives in one object.

A family (in the sense of bambi's likelihood families and pymc-marketing's model builders) owns

* ``build``: the PyMC model (coordinates ``agent``, ``task``, ``cell``; observed counts ``c`` with dim ``cell``, as an
  observed distribution, so PyMC's ``compute_log_likelihood`` and ``sample_posterior_predictive`` work on it);
* what to diagnose (:meth:`ModelFamily.diagnostic_var_names`) and its default NUTS ``target_accept``;
* per-cell success probabilities for the observed cells (:meth:`ModelFamily.cell_p`, drawn block by block so that no
  (chain, draw, agent, task) array needs to be held in memory);
* the new-task integrals of pass@k / pass^k (:meth:`ModelFamily.new_task_pass_k`);
* the model-based consistency (ICC) per agent (:meth:`ModelFamily.icc`);
* the per-cell tables planning needs (:meth:`ModelFamily.cell_given_task`).

Downstream code (:mod:`agentstats.posterior`, :mod:`agentstats.planning`, diagnostics, the command line) asks the
family of a fit (:attr:`agentstats.models.result.Fit.family`) what it can do, through the capabilities it declares
(:attr:`ModelFamily.has_dispersion`, :attr:`ModelFamily.supports_new_tasks`, :attr:`ModelFamily.has_icc`,
:attr:`ModelFamily.planning_parameters`; the idea of bambi's ``PARAMETERS``), and never branches on model names.
A family writes its identity into a fit's attributes (:meth:`ModelFamily.to_attrs`) and reads it back
(:meth:`ModelFamily.from_attrs`); :mod:`agentstats.models.families.registry` maps names to families.

A new task, and why the population mean is uncertain
----------------------------------------------------
The crossed families write task effects as ``beta ~ ZeroSumNormal(sigma_task)``: the effects of the T tasks in the
data sum to zero and ``mu`` is the mean over *these* tasks. If the tasks are a sample from a population with
``beta*_t ~ Normal(0, sigma_task)``, then ``mu = mu* + mean_t beta*_t`` and a new task's effect relative to ``mu`` is
``beta*_new - mean_t beta*_t``. The data identify ``mu`` but not the split, and ``mean_t beta*_t`` has (prior and,
because the data are silent on it, posterior) distribution ``Normal(0, sigma_task^2 / T)``. So each posterior draw of
a new-task quantity shifts the agent's logit mean by ``delta ~ Normal(0, sigma_task / sqrt(T))`` -- one shift per
draw, shared by all new tasks, because it is uncertainty about where the population sits, not task-to-task
variation -- and then integrates the task-to-task variation ``Normal(0, sigma_task)`` (plus the cell distribution)
by Gauss-Hermite quadrature. Without the shift the "new tasks" intervals only describe tasks like the observed
ones on average, and are too narrow (seen as 73 % coverage of nominal 95 % intervals in a simulation study; see
docs/validation.md). The agent effects need no such term for a statement about one agent: ``mu + alpha[a]`` is
that agent's own mean, identified by its data whatever the split between ``mu`` and ``alpha``.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import islice
from typing import Any, ClassVar, Self

import numpy as np
import pymc as pm
import xarray as xr
from numpy.polynomial.hermite_e import hermegauss

from agentstats.models.data import CountsData
from agentstats.models.priors import Priors

__all__ = [
    "GH_NODES",
    "ROW_BLOCK",
    "TASK_BLOCK",
    "BuildInfo",
    "CellTables",
    "ModelFamily",
    "draw_array",
    "gauss_hermite",
    "map_rows",
    "population_shift",
]

#: Gauss-Hermite nodes for new-task integrals; absolute error < 2e-6 against adaptive quadrature for s <= 5.
GH_NODES = 128
#: Tasks per block of conditional ``p`` draws. Each block has its own seed, so draws do not depend on how many
#: blocks a caller processes at once (memory), only on the fit's seed.
TASK_BLOCK = 8


@dataclass(frozen=True)
class BuildInfo:
    """What :meth:`ModelFamily.build` decided, recorded in the fit's attributes.

    Attributes
    ----------
    parameterization : dict of str to str
        Level (``agent``, ``task``, ``cell``) -> ``"centered"`` / ``"non_centered"``.
    parameterization_ratios : dict of str to float
        The data/prior precision ratios behind that choice.
    has_agent_effect, has_cell_effect : bool
        Whether the model has agent effects and a within-cell term (both absent with one agent).
    """

    parameterization: dict[str, str] = field(default_factory=dict)
    parameterization_ratios: dict[str, float] = field(default_factory=dict)
    has_agent_effect: bool = False
    has_cell_effect: bool = False


@dataclass(frozen=True)
class CellTables:
    """Exact per-cell quantities for a cell with ``n`` trials, conditional on its task-level logit (planning).

    For each task-level node ``eta_j`` (task effect integrated by the caller) and each count ``c = 0..n``:

    Attributes
    ----------
    lik : numpy.ndarray, shape (n + 1, nodes)
        ``P(c | eta_j)``, the cell term integrated out.
    m1, m2 : numpy.ndarray, shape (n + 1, nodes)
        ``E[p^k | c, eta_j]`` and ``E[p^{2k} | c, eta_j]``.
    prior1, prior2 : numpy.ndarray, shape (nodes,)
        ``E[p^k | eta_j]`` and ``E[p^{2k} | eta_j]`` before seeing the cell.
    """

    lik: np.ndarray
    m1: np.ndarray
    m2: np.ndarray
    prior1: np.ndarray
    prior2: np.ndarray


def gauss_hermite(n_nodes: int = GH_NODES) -> tuple[np.ndarray, np.ndarray]:
    """Probabilists' Gauss-Hermite nodes and normalized weights: ``E[f(Z)] ~ sum_j w_j f(x_j)``, ``Z ~ N(0, 1)``.

    ``numpy.polynomial.hermite_e.hermegauss`` (weight ``exp(-x^2/2)``; Abramowitz & Stegun 25.4.46), weights divided
    by ``sqrt(2 pi)``.
    """
    x, w = hermegauss(n_nodes)
    return x, w / np.sqrt(2.0 * np.pi)


#: Rows of posterior draws evaluated at once by the quadrature helpers (:func:`map_rows`): rows x nodes floats per
#: temporary, about 16 MB at 128 nodes, whatever the number of chains, draws and agents.
ROW_BLOCK = 16384


def _cpus() -> int:
    """CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


#: Threads that post-process posterior draws (:func:`map_rows`, :meth:`ModelFamily.iter_cell_p`): numpy's random
#: draws and array arithmetic release the GIL, so blocks run in parallel (pass@k / pass^k of the observed tasks at
#: 10,000 cells: 1.7-2.0x faster on 2 CPUs than on one thread, new tasks 1.1-1.4x;
#: ``benchmarks/bench_post_threads.py``); each thread holds one block, so memory grows with this number, not with the
#: draws. The draws do not depend on it; the sums over chunks may group differently (6.7e-16 at most there).
POST_THREADS = max(1, min(4, _cpus()))


def map_rows(
    func: Callable[..., tuple[np.ndarray, ...]], arrays: Sequence[np.ndarray | None], width: int
) -> tuple[np.ndarray, ...]:
    """Evaluate ``func`` on blocks of rows of broadcast arrays, so that memory does not grow with the draws.

    The arrays (``None`` passes through) are broadcast to a common shape ``S`` and flattened; ``func`` gets blocks of
    at most :data:`ROW_BLOCK` / :data:`POST_THREADS` rows (1-d arrays) and returns arrays of shape ``(rows, width)``;
    the results are reassembled to shape ``S + (width,)``. The computation is row-wise, so the result does not depend
    on the block size; blocks run on :data:`POST_THREADS` threads (``func`` must be thread-safe: pure numpy).
    """
    present = [np.asarray(a, float) for a in arrays if a is not None]
    shape = np.broadcast_shapes(*(a.shape for a in present))
    flat = [None if a is None else np.broadcast_to(np.asarray(a, float), shape).reshape(-1) for a in arrays]
    rows = int(np.prod(shape, dtype=np.int64))
    step = max(1, ROW_BLOCK // POST_THREADS)  # the threads share ROW_BLOCK rows: memory as with one thread
    blocks = [slice(start, min(start + step, rows)) for start in range(0, max(rows, 1), step)]

    def run(sl: slice) -> tuple[np.ndarray, ...]:
        return tuple(func(*(None if a is None else a[sl] for a in flat)))

    first = run(blocks[0])  # zero rows: one empty block, for the output count
    outs = [np.empty((rows, width)) for _ in first]

    def store(sl: slice, res: tuple[np.ndarray, ...]) -> None:
        for o, r in zip(outs, res, strict=True):
            o[sl] = r

    store(blocks[0], first)
    if len(blocks) > 1:
        with ThreadPoolExecutor(POST_THREADS) as pool:
            for sl, res in zip(blocks[1:], pool.map(run, blocks[1:]), strict=True):
                store(sl, res)
    return tuple(o.reshape(*shape, width) for o in outs)


def draw_array(post: xr.Dataset, name: str, *dims: str) -> np.ndarray:
    """``post[name]`` as a numpy array with dims ``(chain, draw, *dims)``."""
    return post[name].transpose("chain", "draw", *dims).to_numpy()


def population_shift(sigma_task: np.ndarray, n_tasks: int, rng: np.random.Generator) -> np.ndarray:
    """One draw per posterior draw of ``delta ~ Normal(0, sigma_task / sqrt(T))`` (module docstring).

    Parameters
    ----------
    sigma_task : numpy.ndarray, shape (chain, draw)
    n_tasks : int
        T, the tasks the sum-to-zero task effects run over.
    rng : numpy.random.Generator

    Returns
    -------
    numpy.ndarray, shape (chain, draw)
    """
    return rng.standard_normal(np.shape(sigma_task)) * np.asarray(sigma_task) / np.sqrt(max(int(n_tasks), 1))


class ModelFamily(ABC):
    """A statistical model of per-cell success counts (module docstring lists what it owns).

    Subclasses set :attr:`name` and implement the abstract methods. Instances are immutable descriptions (model name
    and options such as ``dispersion``); data enter through the method arguments.
    """

    #: Registered name (``fit(counts, model=name)``).
    name: ClassVar[str]
    #: One line for ``--help`` and the report.
    summary: ClassVar[str]
    #: Whether the family has hyperparameters (new-task predictions, ICC, planning need them).
    hierarchical: ClassVar[bool] = True
    #: ``"sampled"``: ``p`` is a function of sampled parameters; ``"conditional"``: drawn from its exact conditional
    #: given the sampled parameters and the cell's counts; ``"exact"``: the whole posterior is drawn without MCMC.
    p_draws: ClassVar[str] = "sampled"
    #: Within-cell dispersion (one of :data:`agentstats.models.families.registry.DISPERSIONS`), None without one.
    dispersion: str | None = None

    # ---------------------------------------------------------------------------------------------- capabilities
    @property
    def has_dispersion(self) -> bool:
        """Whether the family has a within-cell dispersion that ``dispersion`` chooses (per agent or shared)."""
        return self.dispersion is not None

    @property
    def supports_new_tasks(self) -> bool:
        """Whether the family predicts a new task from the task population (``population="new"``)."""
        return self.hierarchical

    @property
    def has_icc(self) -> bool:
        """Whether the family has a model-based consistency (:meth:`icc`; :func:`agentstats.posterior.consistency`)."""
        return self.hierarchical

    @property
    def planning_parameters(self) -> tuple[str, ...]:
        """Cell parameters a planning point (:meth:`point`) must give besides ``mu``, ``alpha``, ``sigma_task``."""
        return ()

    @property
    def posterior_core(self) -> dict[str, tuple[str, ...]]:
        """Posterior variables every fit of the family has, with their dims after ``chain, draw`` (the fit schema)."""
        return {"mu": (), "sigma_task": (), "beta": ("task",)}

    # ---------------------------------------------------------------------------------------------- identity
    @classmethod
    def create(cls, dispersion: str | None = None, **options: Any) -> Self:
        """Make the family from registry options; ``dispersion`` is ignored by families without one."""
        return cls(**options)

    def to_attrs(self) -> dict[str, Any]:
        """Attributes that identify the family in a fit (``agentstats_model``, ``dispersion``, ``p_draws``)."""
        return {"agentstats_model": self.name, "dispersion": self.dispersion or "none", "p_draws": self.p_draws}

    @classmethod
    def from_attrs(cls, attrs: Mapping[str, Any], **options: Any) -> Self:
        """Read the family back from a fit's attributes (:meth:`to_attrs`); ``options`` are the registry's."""
        disp = str(attrs.get("dispersion", "none"))
        return cls.create(dispersion=None if disp == "none" else disp, **options)

    def __repr__(self) -> str:
        extra = f", dispersion={self.dispersion!r}" if self.dispersion else ""
        return f"{type(self).__name__}(name={self.name!r}{extra})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ModelFamily) and self.to_attrs() == other.to_attrs()

    def __hash__(self) -> int:
        return hash(tuple(sorted(self.to_attrs().items())))

    # ---------------------------------------------------------------------------------------------- building
    @abstractmethod
    def build(
        self,
        data: CountsData,
        priors: Priors,
        parameterization: dict[str, str] | None = None,
        judge_error: Any = None,
    ) -> tuple[pm.Model, BuildInfo]:
        """Build the PyMC model of ``data``.

        ``judge_error`` (an :class:`agentstats.calibration.JudgeError`, optional) makes the counts judged counts,
        noisy measurements of the true ones (:mod:`agentstats.models.misclassification`); the model then has
        variables ``judge_sensitivity`` and ``judge_specificity``, and :meth:`cell_p` draws the *true* ``p``.

        Returns
        -------
        model : pymc.Model
            Coordinates ``agent``, ``task``, ``cell`` (observed cells, row-major); observed variable ``c`` (dim
            ``cell``).
        info : BuildInfo
        """

    def target_accept(self, data: CountsData) -> float:
        """Default NUTS target acceptance rate for ``data``."""
        return 0.9

    def default_draws(self, info: BuildInfo) -> int | None:
        """Default draws per chain for the built model (``info``); None: :data:`agentstats.models.sampling.DRAWS`."""
        return None

    def default_tune(self, info: BuildInfo, sampler: str) -> int | None:
        """Default tuning steps per chain for the built model and sampler; None: ``agentstats.models.sampling.TUNE``."""
        return None

    def diagnostic_var_names(self, post: xr.Dataset) -> list[str]:
        """Posterior variables whose R-hat / ESS say whether the sampler converged (sampled, not derived)."""
        return [str(v) for v in post.data_vars if not str(v).endswith("_z") and post[v].dims[:2] == ("chain", "draw")]

    # ---------------------------------------------------------------------------------------------- posterior
    @abstractmethod
    def cell_p(
        self, post: xr.Dataset, data: CountsData, tasks: slice, seed: int
    ) -> np.ndarray:
        """Posterior draws of ``p[a, t]`` for the tasks in ``tasks`` (a slice of whole :data:`TASK_BLOCK` blocks).

        Parameters
        ----------
        post : xarray.Dataset
            The fit's posterior group.
        data : CountsData
            The fitted counts.
        tasks : slice
            Task positions; ``tasks.start`` is a multiple of :data:`TASK_BLOCK`.
        seed : int
            The fit's seed; conditional draws are seeded per task block from it.

        Returns
        -------
        numpy.ndarray, shape (chain, draw, agent, tasks in the slice), values in [0, 1]
        """

    def iter_cell_p(
        self,
        post: xr.Dataset,
        data: CountsData,
        seed: int,
        max_bytes: int = 32 * 2**20,
        apply: Callable[[slice, np.ndarray], Any] | None = None,
    ) -> Iterator[tuple[slice, Any]]:
        """Yield ``(tasks, p)`` over all tasks in chunks of whole task blocks, about ``max_bytes`` in memory at once.

        The same seed gives the same draws whatever ``max_bytes`` is. Chunks are drawn on :data:`POST_THREADS`
        threads, in order; with ``apply``, each thread also reduces its chunk and ``(tasks, apply(tasks, p))`` is
        yielded instead (``apply`` must be thread-safe: pure numpy on its arguments).
        """
        n_tasks = data.shape[1]
        per_task = post.sizes["chain"] * post.sizes["draw"] * data.shape[0] * 8
        # POST_THREADS chunks are drawn while the caller holds one: share max_bytes among them
        per_chunk = max_bytes // (POST_THREADS + 1)
        blocks = max(1, int(per_chunk // max(per_task * TASK_BLOCK, 1)))
        step = blocks * TASK_BLOCK
        chunks = iter([slice(start, min(start + step, n_tasks)) for start in range(0, n_tasks, step)])

        def job(sl: slice) -> Any:
            p = self.cell_p(post, data, sl, seed)
            return p if apply is None else apply(sl, p)

        # the next chunks are drawn while the caller works on this one (each chunk is seeded by its task blocks, so
        # the draws do not depend on the threads); at most POST_THREADS + 1 chunks in memory
        with ThreadPoolExecutor(POST_THREADS) as pool:
            pending = deque((sl, pool.submit(job, sl)) for sl in islice(chunks, POST_THREADS))
            while pending:
                sl, done = pending.popleft()
                nxt = next(chunks, None)
                if nxt is not None:
                    pending.append((nxt, pool.submit(job, nxt)))
                yield sl, done.result()

    @abstractmethod
    def new_task_pass_k(
        self,
        post: xr.Dataset,
        ks: np.ndarray,
        n_tasks: int,
        rng: np.random.Generator,
        n_nodes: int = GH_NODES,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Posterior draws of pass^k and pass@k of a new task from the task population, per agent.

        Includes the uncertainty of the population mean (module docstring): one shift
        ``Normal(0, sigma_task / sqrt(n_tasks))`` per draw from ``rng``.

        Returns
        -------
        pass_hat_k, pass_at_k : numpy.ndarray, shape (chain, draw, agent, K)

        Raises
        ------
        ValueError
            If the family has no hyperparameters.
        """

    @abstractmethod
    def icc(self, post: xr.Dataset) -> dict[str, np.ndarray]:
        """Model-based consistency per agent, each with shape (chain, draw, agent).

        ``icc_cell`` (within an agent x task cell) and ``icc_model`` (trials of one agent on one task, task difficulty
        included).
        """

    # ---------------------------------------------------------------------------------------------- planning
    def point(self, post: xr.Dataset) -> dict[str, Any]:
        """Posterior point values of the hyperparameters that planning fixes.

        ``mu``, ``alpha`` per agent, ``sigma_task`` and the family's cell parameters.
        """
        raise ValueError(f"model {self.name!r} has no hyperparameters to plan with")

    def cell_given_task(self, point: dict[str, Any], agent: str | None, eta: np.ndarray, n: int, k: int) -> CellTables:
        """Exact tables of one cell with ``n`` trials given its task-level logits ``eta`` (nodes), for planning."""
        raise ValueError(f"model {self.name!r} does not support planning")

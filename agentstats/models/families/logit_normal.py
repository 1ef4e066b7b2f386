"""Crossed agent x task logit-normal families: ``partial_pooling`` (with a per-cell term) and ``additive``.

``partial_pooling``::

    logit p[a, t] = mu + alpha[a] + beta[t] + gamma[a, t]
    alpha ~ ZeroSumNormal(sigma_agent)   over agents
    beta  ~ ZeroSumNormal(sigma_task)    over tasks
    gamma ~ Normal(0, sigma_cell[a])     per cell (agent x task interaction)
    c[a, t] ~ Binomial(n[a, t], p[a, t])  for cells with n > 0

Dispersion: ``"agent"`` (default) gives each agent its own cell scale, pooled across agents
(``log sigma_cell[a] = cell_mu + cell_sd * cell_z[a]``); ``"shared"`` one ``sigma_cell ~ HalfNormal``. ``additive``
is the same without ``gamma`` (offered for comparison: on real runs outcomes within a cell are more alike than it
allows; check with :func:`agentstats.models.diagnostics.posterior_predictive_cells`). Each level is centred or not by
:func:`agentstats.models.parameterization.choose_parameterization`. With one agent the cell term is not identifiable
from the task effect and is dropped (``sigma_task`` then holds the whole between-task spread). Sources: Gelman et al.,
BDA3 ch. 5 and 15; latent-scale ICC, Nakagawa & Schielzeth (2010), Biol. Rev. 85:935.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import xarray as xr
from scipy.special import expit, gammaln, log_expit

from agentstats.models.data import CountsData
from agentstats.models.families.base import (
    GH_NODES,
    BuildInfo,
    CellTables,
    ModelFamily,
    draw_array,
    gauss_hermite,
    map_rows,
    population_shift,
)
from agentstats.models.families.registry import Dispersion
from agentstats.models.misclassification import judge_error_variables, judged_probability
from agentstats.models.parameterization import Param, agent_task_predictor, choose_parameterization, effect
from agentstats.models.priors import Priors

__all__ = ["LogitNormalFamily", "new_task_moments_logit_normal"]


def new_task_moments_logit_normal(
    m: np.ndarray, s: np.ndarray, ks: np.ndarray, n_nodes: int = GH_NODES
) -> tuple[np.ndarray, np.ndarray]:
    """``E[p^k]`` and ``1 - E[(1 - p)^k]`` for ``logit p ~ Normal(m, s)``, by Gauss-Hermite quadrature.

    ``E[f(m + s Z)] = sum_j w_j f(m + s x_j)`` (:func:`agentstats.models.families.base.gauss_hermite`; Abramowitz &
    Stegun 25.4.46).

    Parameters
    ----------
    m, s : numpy.ndarray
        Broadcastable arrays (shape ``S``): location and scale of the logit-normal.
    ks : numpy.ndarray of int, shape (K,)
    n_nodes : int

    Returns
    -------
    pass_hat_k, pass_at_k : numpy.ndarray, shape ``S + (K,)``
    """
    x, w = gauss_hermite(n_nodes)
    kk = np.asarray(ks, float)

    def rows(m_r: np.ndarray, s_r: np.ndarray) -> tuple[np.ndarray, ...]:
        eta = m_r[:, None] + s_r[:, None] * x  # (rows, nodes)
        log_p, log_q = log_expit(eta), log_expit(-eta)
        hat = np.stack([np.exp(kv * log_p) @ w for kv in kk], axis=-1)
        miss = np.stack([np.exp(kv * log_q) @ w for kv in kk], axis=-1)
        return hat, 1.0 - miss

    hat, at = map_rows(rows, [m, s], kk.size)
    return hat, at


def _binom_logpmf(n: int, eta: np.ndarray) -> np.ndarray:
    """``log P(c | n, p = expit(eta))`` for c = 0..n; shape ``(n + 1,) + eta.shape``."""
    c = np.arange(n + 1).reshape((-1,) + (1,) * np.ndim(eta))
    return gammaln(n + 1) - gammaln(c + 1) - gammaln(n - c + 1) + c * log_expit(eta) + (n - c) * log_expit(-eta)


@dataclass(frozen=True, eq=False)
class LogitNormalFamily(ModelFamily):
    """``partial_pooling`` (``cell_term=True``) and ``additive`` (module docstring).

    Parameters
    ----------
    cell_term : bool
        Per-cell interaction ``gamma``.
    dispersion : {"agent", "shared"} or None
        Cell scale per agent (pooled) or shared; None without a cell term.
    """

    cell_term: bool = True
    dispersion: Dispersion | None = "agent"

    def __post_init__(self) -> None:
        if self.cell_term and self.dispersion not in ("agent", "shared"):
            raise ValueError(f"dispersion must be 'agent' or 'shared', got {self.dispersion!r}")
        if not self.cell_term:
            object.__setattr__(self, "dispersion", None)

    @property
    def name(self) -> str:  # type: ignore[override]
        """``partial_pooling`` or ``additive``."""
        return "partial_pooling" if self.cell_term else "additive"

    @classmethod
    def create(cls, dispersion: str | None = "agent", **options: Any) -> LogitNormalFamily:
        """Make the family from registry options (``cell_term``); ``dispersion`` only matters with a cell term."""
        return cls(dispersion=cast(Dispersion | None, dispersion), **options)

    @classmethod
    def from_attrs(cls, attrs: Mapping[str, Any], **options: Any) -> LogitNormalFamily:
        """Read the family back; a ``partial_pooling`` fit made before per-agent scales existed is shared."""
        disp = str(attrs.get("dispersion", "none"))
        if options.get("cell_term", True) and disp == "none":
            disp = "shared"
        return super().from_attrs({**attrs, "dispersion": disp}, **options)

    @property
    def summary(self) -> str:  # type: ignore[override]
        """One line for help texts and the report."""
        if not self.cell_term:
            return "logit-normal agent + task effects, no per-cell term"
        return f"logit-normal per-cell term, scale {'per agent' if self.dispersion == 'agent' else 'shared'}"

    def build(
        self,
        data: CountsData,
        priors: Priors,
        parameterization: dict[str, str] | None = None,
        judge_error: Any = None,
    ) -> tuple[pm.Model, BuildInfo]:
        """Build the PyMC model (module docstring); see :meth:`ModelFamily.build`.

        With ``judge_error`` the counts are judged counts: ``c ~ Binomial(n, se p + (1 - sp)(1 - p))``
        (:mod:`agentstats.models.misclassification`).
        """
        n_agents, n_tasks = data.shape
        single = n_agents == 1
        has_cell = self.cell_term and not single
        override = cast(dict[str, Param] | None, parameterization)
        choice, ratios = choose_parameterization(data, priors, cell_term=has_cell, override=override)
        ai, ti = data.obs_index()
        coords = {"agent": data.agents, "task": data.tasks, "cell": np.arange(ai.size)}
        with pm.Model(coords=coords) as model:
            eta = agent_task_predictor(priors, choice, single)
            if has_cell:
                if self.dispersion == "agent":
                    cell_mu = pm.Normal("cell_mu", 0.0, priors.cell_mu_sd)
                    cell_sd = pm.HalfNormal("cell_sd", priors.cell_sd)
                    cell_z = pm.Normal("cell_z", 0.0, 1.0, dims="agent")
                    sigma_cell = pm.Deterministic("sigma_cell", pt.exp(cell_mu + cell_sd * cell_z), dims="agent")
                    scale = sigma_cell[:, None]
                else:
                    scale = pm.HalfNormal("sigma_cell", priors.sigma_cell)
                eta = eta + effect("gamma", scale, ("agent", "task"), choice["cell"], zero_sum=False)
            else:
                eta = eta + pt.zeros((n_agents, n_tasks))
            if judge_error is not None:
                q = judged_probability(pm.math.sigmoid(eta[ai, ti]), *judge_error_variables(judge_error))
                pm.Binomial("c", n=data.n[ai, ti], p=q, observed=data.c[ai, ti], dims="cell")
            else:
                pm.Binomial("c", n=data.n[ai, ti], logit_p=eta[ai, ti], observed=data.c[ai, ti], dims="cell")
        return model, BuildInfo(
            parameterization=dict(choice),
            parameterization_ratios=ratios,
            has_agent_effect=not single,
            has_cell_effect=has_cell,
        )

    # ------------------------------------------------------------------------------------------ posterior
    def _m(self, post: xr.Dataset, n_agents: int) -> np.ndarray:
        m = draw_array(post, "mu")[..., None]
        return m + draw_array(post, "alpha", "agent") if "alpha" in post else np.repeat(m, n_agents, axis=-1)

    def _sigma_cell(self, post: xr.Dataset, shape: tuple[int, ...]) -> np.ndarray:
        if "sigma_cell" not in post:
            return np.zeros(shape)
        sc = draw_array(post, "sigma_cell", *(["agent"] if "agent" in post["sigma_cell"].dims else []))
        return np.broadcast_to(sc if sc.ndim == 3 else sc[..., None], shape)

    def cell_p(self, post: xr.Dataset, data: CountsData, tasks: slice, seed: int) -> np.ndarray:
        """``expit(mu + alpha + beta + gamma)`` from the sampled parameters (no extra randomness)."""
        eta = self._m(post, data.shape[0])[..., None] + draw_array(post, "beta", "task")[..., None, tasks]
        if "gamma" in post:
            eta = eta + draw_array(post, "gamma", "agent", "task")[..., tasks]
        return expit(eta)

    def new_task_pass_k(
        self,
        post: xr.Dataset,
        ks: np.ndarray,
        n_tasks: int,
        rng: np.random.Generator,
        n_nodes: int = GH_NODES,
    ) -> tuple[np.ndarray, np.ndarray]:
        """``logit p = mu + alpha[a] + delta + e``, ``e ~ Normal(0, sqrt(sigma_task^2 + sigma_cell[a]^2))``."""
        m = self._m(post, post.sizes.get("agent", 1))  # a one-agent fit has no agent dimension
        sigma_task = draw_array(post, "sigma_task")
        m = m + population_shift(sigma_task, n_tasks, rng)[..., None]
        s = np.sqrt(sigma_task[..., None] ** 2 + self._sigma_cell(post, m.shape) ** 2)
        return new_task_moments_logit_normal(m, s, ks, n_nodes)

    def icc(self, post: xr.Dataset) -> dict[str, np.ndarray]:
        """Latent-scale ICC per agent (Goldstein, Browne & Rasbash 2002; Nakagawa & Schielzeth 2010).

        ``icc_model`` = ``(sigma_task^2 + sigma_cell[a]^2) / (sigma_task^2 + sigma_cell[a]^2 + pi^2/3)``, ``icc_cell``
        = ``sigma_cell[a]^2 / (same)``; the per-agent ``sigma_cell`` (derived from ``cell_mu``, ``cell_sd``,
        ``cell_z``) is also diagnosed, as it is what users read.
        """
        n_agents = post.sizes.get("agent", 1)  # a one-agent fit has no agent dimension
        var_t = np.broadcast_to(draw_array(post, "sigma_task")[..., None] ** 2, (*post["mu"].shape, n_agents))
        var_c = self._sigma_cell(post, var_t.shape) ** 2
        denom = var_t + var_c + np.pi**2 / 3.0
        icc_cell = var_c / denom if "sigma_cell" in post else np.full(var_t.shape, np.nan)
        return {"icc_model": (var_t + var_c) / denom, "icc_cell": icc_cell}

    # ------------------------------------------------------------------------------------------ planning
    def point(self, post: xr.Dataset) -> dict[str, Any]:
        """Posterior means of ``mu``, ``alpha`` (per agent), ``sigma_task`` and ``sigma_cell`` (per agent)."""
        agents = [str(a) for a in post["agent"].values]
        m = self._m(post, len(agents))
        mu = float(draw_array(post, "mu").mean())
        sc = self._sigma_cell(post, m.shape).mean(axis=(0, 1))
        return {
            "mu": mu,
            "alpha": dict(zip(agents, (m.mean(axis=(0, 1)) - mu).tolist(), strict=True)),
            "sigma_task": float(draw_array(post, "sigma_task").mean()),
            "sigma_cell": dict(zip(agents, sc.tolist(), strict=True)),
        }

    def cell_given_task(self, point: dict[str, Any], agent: str | None, eta: np.ndarray, n: int, k: int) -> CellTables:
        """Per-cell tables given the task-level logit ``eta`` (nodes).

        The cell term ``Normal(0, sigma_cell)`` is integrated by an inner Gauss-Hermite rule (32 nodes).
        """
        sc = point.get("sigma_cell", 0.0)
        if isinstance(sc, dict):
            sc = float(np.mean(list(sc.values()))) if agent is None else float(sc[agent])
        x, w = gauss_hermite(32)
        inner = np.asarray(eta, float)[..., None] + float(sc) * x  # (nodes, inner)
        lik_i = np.exp(_binom_logpmf(n, inner))  # (n + 1, nodes, inner)
        pk = np.exp(k * log_expit(inner))
        lik = lik_i @ w
        m1 = (lik_i * pk) @ w / lik
        m2 = (lik_i * pk**2) @ w / lik
        return CellTables(lik, m1, m2, pk @ w, (pk**2) @ w)

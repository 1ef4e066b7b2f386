"""The Beta-Binomial families as a :class:`~agentstats.models.families.base.ModelFamily`.

``beta_binomial`` and ``zoi_beta_binomial``; the model, its dispersion forms and sources are in the package docstring
(:mod:`agentstats.models.families.beta_binomial`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, cast

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import xarray as xr
from scipy.special import betaln, expit, gammaln, log_expit

from agentstats.models.data import CountsData
from agentstats.models.families.base import (
    GH_NODES,
    TASK_BLOCK,
    BuildInfo,
    CellTables,
    ModelFamily,
    draw_array,
    population_shift,
)
from agentstats.models.families.beta_binomial.likelihood import (
    _complete_grid,
    _per_cell,
    add_cell_likelihood,
    agent_level,
)
from agentstats.models.families.beta_binomial.moments import beta_binomial_logpmf, conditional_p, new_task_moments_beta
from agentstats.models.families.registry import Dispersion
from agentstats.models.misclassification import (
    SENSITIVITY,
    SPECIFICITY,
    draw_true_counts,
    judge_error_variables,
    judged_probability,
)
from agentstats.models.parameterization import Param, agent_task_predictor, choose_parameterization
from agentstats.models.priors import Priors

__all__ = [
    "CENTERED_DISPERSION_DRAWS",
    "CENTERED_DISPERSION_TUNE",
    "DISPERSION_CENTERED_MIN_CELLS",
    "DISPERSION_CENTERED_MIN_TRIALS",
    "LARGE_CELLS",
    "TARGET_ACCEPT",
    "TARGET_ACCEPT_LARGE",
    "BetaBinomialFamily",
    "dispersion_form",
]

#: Default NUTS target acceptance rate: the concentration can approach its boundary when cells are barely
#: overdispersed (at 0.95 ``beta_binomial`` left a divergence in 4 of 10 small fits, at 0.98 none;
#: validation/target_accept_check.py).
TARGET_ACCEPT = 0.98
#: From this many observed cells on, the posterior of the agents + tasks parameters is close to Gaussian and a lower
#: target halves the leapfrog steps per draw without divergences (docs/benchmarks.md).
LARGE_CELLS = 2000
TARGET_ACCEPT_LARGE = 0.85
#: Trials a cell needs to count towards :data:`DISPERSION_CENTERED_MIN_CELLS` (:func:`dispersion_form`).
DISPERSION_CENTERED_MIN_TRIALS = 4
#: Cells of :data:`DISPERSION_CENTERED_MIN_TRIALS`+ trials every agent needs for centred per-agent dispersion.
DISPERSION_CENTERED_MIN_CELLS = 250
#: Default (most) draws per chain of a fit with centred dispersion: its slowest hyperparameter reached ESS_bulk
#: 1,326-1,337 at 4 x 1,000 (15 x 713 x 4 and 20 x 500 x 4 cells), where the non-centred form needs 2,000, but R-hat
#: of ``det_share`` was 1.007-1.011 there (docs/models.md); large fits stop earlier once converged
#: (:data:`agentstats.models.sampling.UNTIL_CONVERGED_MIN_CELLS`).
CENTERED_DISPERSION_DRAWS = 1500
#: Default tuning steps per chain of a centred-dispersion fit with nutpie (its own default): 300 tuning steps gave
#: the same R-hat and ESS at every number of draws as 1,000 in three designs (docs/models.md, "Centred dispersion").
CENTERED_DISPERSION_TUNE = 300



def dispersion_form(data: CountsData) -> Param:
    """Centred per-agent dispersion when every agent has many cells of several trials, else non-centred.

    Centred when every agent has at least :data:`DISPERSION_CENTERED_MIN_CELLS` cells of at least
    :data:`DISPERSION_CENTERED_MIN_TRIALS` trials: each agent's ``rho`` is then well identified and the centred
    form mixed 1.5-4.4x better; with fewer cells, or 3 trials, it mixed worse, and with 2 trials a cell's counts
    identify only ``det_share + (1 - det_share) rho`` (docs/models.md, "Centred dispersion"; one fit per design,
    nutpie, 4 x 1,000 draws). The counts cannot show whether agents differ in consistency; when they do not,
    ``rho_sd`` nears 0 and the centred form is a funnel that diverges, so ``fit`` refits a diverging centred fit
    non-centred (``agentstats.models.fitting``).
    """
    if data.shape[0] < 2:
        return "non_centered"
    informative = (np.asarray(data.n) >= DISPERSION_CENTERED_MIN_TRIALS).sum(axis=1)
    return "centered" if int(informative.min()) >= DISPERSION_CENTERED_MIN_CELLS else "non_centered"


@dataclass(frozen=True, eq=False)
class BetaBinomialFamily(ModelFamily):
    """The Beta-Binomial families ``beta_binomial`` and ``zoi_beta_binomial`` (package docstring).

    Parameters
    ----------
    inflated : bool
        Zero/one-inflated cells (``zoi_beta_binomial``).
    dispersion : {"agent", "shared"}
        Within-cell dispersion ``rho`` per agent (pooled) or shared by all agents.
    det_by_agent : bool
        Inflated variant only: the deterministic share per agent (pooled) instead of shared.
    """

    inflated: bool = True
    dispersion: Dispersion | None = "agent"
    det_by_agent: bool = False
    p_draws: ClassVar[str] = "conditional"

    def __post_init__(self) -> None:
        if self.dispersion not in ("agent", "shared"):
            raise ValueError(f"dispersion must be 'agent' or 'shared', got {self.dispersion!r}")
        if self.det_by_agent and not self.inflated:
            raise ValueError("det_by_agent applies to the zero/one-inflated model only")

    @property
    def name(self) -> str:  # type: ignore[override]
        """``zoi_beta_binomial`` or ``beta_binomial``."""
        return "zoi_beta_binomial" if self.inflated else "beta_binomial"

    @property
    def summary(self) -> str:  # type: ignore[override]
        """One line for help texts and the report."""
        what = "per-cell Beta around the agent + task mean"
        if self.inflated:
            what += ", with a share of always/never-succeeding cells"
        return f"{what}; within-cell dispersion {'per agent' if self.dispersion == 'agent' else 'shared'}"

    # ------------------------------------------------------------------------------------------ identity
    @classmethod
    def create(cls, dispersion: str | None = "agent", **options: Any) -> BetaBinomialFamily:
        """Make the family from registry options (``inflated``) and ``dispersion`` / ``det_by_agent``."""
        return cls(dispersion=cast(Dispersion | None, dispersion), **options)

    def to_attrs(self) -> dict[str, Any]:
        """Identity of the family in a fit's attributes (also ``det_by_agent``, 0/1)."""
        return super().to_attrs() | {"det_by_agent": int(self.det_by_agent)}

    @classmethod
    def from_attrs(cls, attrs: Mapping[str, Any], **options: Any) -> BetaBinomialFamily:
        """Read the family back; a fit made before per-agent dispersion existed (``dispersion="none"``) is shared."""
        disp = str(attrs.get("dispersion", "none"))
        inflated = bool(options.get("inflated", True))
        det = bool(int(attrs.get("det_by_agent", 0))) if inflated else False
        return super().from_attrs({**attrs, "dispersion": "shared" if disp == "none" else disp},
                                  **options, det_by_agent=det)

    @property
    def planning_parameters(self) -> tuple[str, ...]:
        """``phi`` per agent, and ``det_share`` for the zero/one-inflated variant (:meth:`cell_given_task`)."""
        return ("phi", "det_share") if self.inflated else ("phi",)

    # ------------------------------------------------------------------------------------------ building
    def build(
        self,
        data: CountsData,
        priors: Priors,
        parameterization: dict[str, str] | None = None,
        judge_error: Any = None,
    ) -> tuple[pm.Model, BuildInfo]:
        """Build the PyMC model (package docstring); see :meth:`ModelFamily.build`.

        With ``judge_error`` the counts are judged counts, and the likelihood marginalises over the true count
        (:mod:`agentstats.models.misclassification`).
        """
        n_agents, n_tasks = data.shape
        single = n_agents == 1
        override = dict(cast(dict[str, Param], parameterization or {}))
        disp_form = override.pop("dispersion", dispersion_form(data))
        if disp_form not in ("centered", "non_centered"):
            raise ValueError(f"parameterization['dispersion']: must be 'centered' or 'non_centered', got {disp_form!r}")
        choice, ratios = choose_parameterization(data, priors, cell_term=not single, override=override or None)
        ai, ti = data.obs_index()
        n_obs, c_obs = data.n[ai, ti], data.c[ai, ti]
        coords = {"agent": data.agents, "task": data.tasks, "cell": np.arange(ai.size)}
        with pm.Model(coords=coords) as model:
            eta = agent_task_predictor(priors, choice, single) + pt.zeros((n_agents, n_tasks))
            grid = _complete_grid(ai, ti, (n_agents, n_tasks))
            eta_obs = eta.reshape((-1,)) if grid is not None else eta[ai, ti]
            judge = judge_error_variables(judge_error) if judge_error is not None else None
            if single and judge is not None:
                q = judged_probability(pm.math.sigmoid(eta_obs), *judge)
                pm.Binomial("c", n=n_obs, p=q, observed=c_obs, dims="cell")
            elif single:
                pm.Binomial("c", n=n_obs, logit_p=eta_obs, observed=c_obs, dims="cell")
            else:
                if self.dispersion == "agent":
                    rho = agent_level("rho", priors.rho_mu_sd, priors.rho_sd, disp_form)
                    phi_agent = pm.Deterministic("phi", (1.0 - rho) / rho, dims="agent")
                else:
                    rho = pm.Beta("rho", priors.rho_a, priors.rho_b)
                    phi = pm.Deterministic("phi", (1.0 - rho) / rho)
                    phi_agent = pt.repeat(phi[None], n_agents)
                det_cell = None
                if self.inflated and self.det_by_agent:
                    det = agent_level("det_share", priors.det_mu_sd, priors.det_sd, disp_form)
                    det_cell = _per_cell(det, ai, grid)
                elif self.inflated:
                    det = pm.Beta("det_share", priors.det_a, priors.det_b)
                    det_cell = pt.repeat(det[None], ai.size)
                add_cell_likelihood(eta_obs, phi_agent, det_cell, ai, grid, n_obs, c_obs, judge)
        per_agent = not single and (self.dispersion == "agent" or (self.inflated and self.det_by_agent))
        info = BuildInfo(
            parameterization={lvl: str(choice[lvl]) for lvl in ("agent", "task")}
            | ({"dispersion": str(disp_form)} if per_agent else {}),
            parameterization_ratios={k: ratios[k] for k in ("agent", "task")},
            has_agent_effect=not single,
            has_cell_effect=not single,
        )
        return model, info

    def target_accept(self, data: CountsData) -> float:
        """:data:`TARGET_ACCEPT`, or :data:`TARGET_ACCEPT_LARGE` from :data:`LARGE_CELLS` observed cells on."""
        return TARGET_ACCEPT_LARGE if int(np.count_nonzero(data.n)) >= LARGE_CELLS else TARGET_ACCEPT

    def default_draws(self, info: BuildInfo) -> int | None:
        """:data:`CENTERED_DISPERSION_DRAWS` when the per-agent dispersion is centred, else fit's default."""
        return CENTERED_DISPERSION_DRAWS if info.parameterization.get("dispersion") == "centered" else None

    def default_tune(self, info: BuildInfo, sampler: str) -> int | None:
        """:data:`CENTERED_DISPERSION_TUNE` for nutpie when the per-agent dispersion is centred, else fit's default."""
        centred = info.parameterization.get("dispersion") == "centered"
        return CENTERED_DISPERSION_TUNE if centred and sampler == "nutpie" else None

    def diagnostic_var_names(self, post: xr.Dataset) -> list[str]:
        """List the sampled parameters (``p`` and the derived ``phi`` are not sampled by NUTS)."""
        # ``rho_logit`` / ``det_share_logit`` (centred dispersion) are monotone in ``rho`` / ``det_share``: the same
        # rank-normalised R-hat and ESS, listed once
        return [v for v in super().diagnostic_var_names(post) if v not in ("p", "phi") and not v.endswith("_logit")]

    # ------------------------------------------------------------------------------------------ posterior
    def _params(self, post: xr.Dataset, n_agents: int) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """``m_agent = mu + alpha`` (chain, draw, agent), ``phi`` and ``det_share`` (chain, draw, agent or None)."""
        m = draw_array(post, "mu")[..., None]
        m = m + draw_array(post, "alpha", "agent") if "alpha" in post else np.repeat(m, n_agents, axis=-1)
        if "phi" not in post:  # one agent: no cell term
            return m, np.full(m.shape, np.inf), None
        phi = draw_array(post, "phi", *(["agent"] if "agent" in post["phi"].dims else []))
        phi = np.broadcast_to(phi if phi.ndim == 3 else phi[..., None], m.shape)
        det = None
        if "det_share" in post:
            det = draw_array(post, "det_share", *(["agent"] if "agent" in post["det_share"].dims else []))
            det = np.broadcast_to(det if det.ndim == 3 else det[..., None], m.shape)
        return m, phi, det

    def cell_p(self, post: xr.Dataset, data: CountsData, tasks: slice, seed: int) -> np.ndarray:
        """Exact conditional draws of ``p`` for the tasks in ``tasks`` (package docstring), seeded per task block."""
        m, phi, det = self._params(post, data.shape[0])
        beta = draw_array(post, "beta", "task")
        out = []
        for start in range(tasks.start or 0, tasks.stop, TASK_BLOCK):
            blk = slice(start, min(start + TASK_BLOCK, tasks.stop))
            eta = m[..., :, None] + beta[..., None, blk]
            n, c = data.n[:, blk], data.c[:, blk]
            if not np.isfinite(phi).all():  # one agent: p = expit(eta), nothing to draw
                out.append(expit(eta))
                continue
            rng = np.random.default_rng(np.random.SeedSequence([int(seed), 0xBB, start // TASK_BLOCK]))
            if SENSITIVITY in post:
                out.append(_judged_conditional_p(post, eta, phi, det, n, c, rng))
                continue
            out.append(
                conditional_p(eta, phi[..., None], n, c, rng, None if det is None else det[..., None])
            )
        return np.concatenate(out, axis=-1)

    def new_task_pass_k(
        self,
        post: xr.Dataset,
        ks: np.ndarray,
        n_tasks: int,
        rng: np.random.Generator,
        n_nodes: int = GH_NODES,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Beta moments integrated over a new task's effect, with the population shift (family module docstring)."""
        n_agents = post.sizes.get("agent", 1)  # a one-agent fit has no agent dimension
        m, phi, det = self._params(post, n_agents)
        s = draw_array(post, "sigma_task")
        m = m + population_shift(s, n_tasks, rng)[..., None]
        s = np.broadcast_to(s[..., None], m.shape)
        if not np.isfinite(phi).all():  # one agent: logit-normal over tasks
            from agentstats.models.families.logit_normal import new_task_moments_logit_normal

            return new_task_moments_logit_normal(m, s, ks, n_nodes)
        return new_task_moments_beta(m, s, phi, ks, n_nodes, det_share=det)

    def icc(self, post: xr.Dataset) -> dict[str, np.ndarray]:
        """Model ICC per agent.

        ``icc_cell``: correlation of two trials of one cell, ``rho`` (``det_share + (1 - det_share) rho`` with
        inflation; ``Var(p | m) = icc_cell m (1 - m)``, Williams 1975); ``icc_model``: the task level on the latent
        scale, ``sigma_task^2 / (sigma_task^2 + pi^2 / 3)`` (Nakagawa & Schielzeth 2010, Biol. Rev. 85:935).
        """
        n_agents = post.sizes.get("agent", 1)  # a one-agent fit has no agent dimension
        var_t = draw_array(post, "sigma_task")[..., None] ** 2
        icc_model = np.broadcast_to(var_t / (var_t + np.pi**2 / 3.0), (*var_t.shape[:2], n_agents))
        if "rho" not in post:
            return {"icc_model": icc_model, "icc_cell": np.full(icc_model.shape, np.nan)}
        rho = draw_array(post, "rho", *(["agent"] if "agent" in post["rho"].dims else []))
        rho = np.broadcast_to(rho if rho.ndim == 3 else rho[..., None], icc_model.shape)
        if "det_share" in post:
            det = draw_array(post, "det_share", *(["agent"] if "agent" in post["det_share"].dims else []))
            det = np.broadcast_to(det if det.ndim == 3 else det[..., None], icc_model.shape)
            rho = det + (1.0 - det) * rho
        return {"icc_model": icc_model, "icc_cell": rho}

    # ------------------------------------------------------------------------------------------ planning
    def point(self, post: xr.Dataset) -> dict[str, Any]:
        """Posterior point values for planning.

        Means of ``mu``, ``alpha``, ``sigma_task``; ``phi`` and ``det_share`` per agent from the posterior mean on the
        logit scale of ``rho`` / ``det_share`` (so a heavy right tail of ``phi`` does not dominate).
        """
        agents = [str(a) for a in post["agent"].values]
        m, phi, det = self._params(post, len(agents))
        mu = float(draw_array(post, "mu").mean())
        out: dict[str, Any] = {
            "mu": mu,
            "alpha": dict(zip(agents, (m.mean(axis=(0, 1)) - mu).tolist(), strict=True)),
            "sigma_task": float(draw_array(post, "sigma_task").mean()),
        }
        if np.isfinite(phi).all():
            logit_rho = np.log(1.0 / (1.0 + phi)) - np.log(phi / (1.0 + phi))
            out["phi"] = dict(zip(agents, np.exp(-logit_rho.mean(axis=(0, 1))).tolist(), strict=True))
            if det is not None:
                ld = np.log(det) - np.log1p(-det)
                out["det_share"] = dict(zip(agents, expit(ld.mean(axis=(0, 1))).tolist(), strict=True))
        return out

    def cell_given_task(self, point: dict[str, Any], agent: str | None, eta: np.ndarray, n: int, k: int) -> CellTables:
        """Per-cell tables given the cell mean's logit ``eta`` (nodes).

        Beta-Binomial likelihood and conjugate Beta moments
        ``E[p^j | c, m] = B(a + c + j, b + n - c) / B(a + c, b + n - c)`` (plus the deterministic component).
        """
        phi = _per_agent(point.get("phi"), agent, "phi")
        det = _per_agent(point.get("det_share"), agent, "det_share") if "det_share" in point else None
        eta = np.asarray(eta, float)
        c = np.arange(n + 1)[:, None]
        if phi is None:  # one agent: the cell is its task, p = expit(eta)
            log_p, log_q = log_expit(eta), log_expit(-eta)
            lik = np.exp(gammaln(n + 1) - gammaln(c + 1) - gammaln(n - c + 1) + c * log_p + (n - c) * log_q)
            pk = np.exp(k * log_p)
            m1 = np.broadcast_to(pk, lik.shape)
            return CellTables(lik, m1, m1**2, pk, pk**2)
        tiny = np.finfo(float).tiny
        a = np.maximum(phi * expit(eta), tiny)
        b = np.maximum(phi * expit(-eta), tiny)
        log_bb = (gammaln(n + 1) - gammaln(c + 1) - gammaln(n - c + 1) + betaln(a + c, b + n - c) - betaln(a, b))
        post_base = betaln(a + c, b + n - c)
        m1_bb = np.exp(betaln(a + c + k, b + n - c) - post_base)
        m2_bb = np.exp(betaln(a + c + 2 * k, b + n - c) - post_base)
        prior1 = np.exp(betaln(a + k, b) - betaln(a, b))
        prior2 = np.exp(betaln(a + 2 * k, b) - betaln(a, b))
        if det is None:
            return CellTables(np.exp(log_bb), m1_bb, m2_bb, prior1, prior2)
        q = expit(eta)
        det_lik = np.where(c == n, q, 0.0) + np.where(c == 0, 1.0 - q, 0.0)  # n = 0: c = 0 = n, both terms
        if n == 0:
            det_lik = np.ones_like(det_lik)
        l_det = det * det_lik
        l_bb = (1.0 - det) * np.exp(log_bb)
        lik = l_det + l_bb
        w_det = np.divide(l_det, lik, out=np.zeros_like(lik), where=lik > 0)
        # deterministic component: p = 1 when c = n > 0, 0 when c = 0 < n; n = 0: p = 1 with probability q
        det_pk = np.where(c == n, 1.0, 0.0) if n > 0 else np.broadcast_to(q, lik.shape)
        m1 = w_det * det_pk + (1.0 - w_det) * m1_bb
        m2 = w_det * det_pk + (1.0 - w_det) * m2_bb
        return CellTables(lik, m1, m2, det * q + (1 - det) * prior1, det * q + (1 - det) * prior2)


def _judged_conditional_p(
    post: xr.Dataset,
    eta: np.ndarray,
    phi: np.ndarray,
    det: np.ndarray | None,
    n: np.ndarray,
    c: np.ndarray,
    rng: np.random.Generator,
) -> np.ndarray:
    """Draw the true ``p`` of a judged fit: the true count from ``P(s | c)``, then ``p`` given it (agent by agent).

    Shapes: ``eta`` (chain, draw, agent, tasks), ``phi`` / ``det`` (chain, draw, agent), ``n`` / ``c`` (agent, tasks).
    """
    se = draw_array(post, SENSITIVITY)
    sp = draw_array(post, SPECIFICITY)
    s = np.arange(int(n.max()) + 1 if n.size else 1)
    out = np.empty(eta.shape)
    for a in range(eta.shape[2]):
        e = eta[:, :, a, :]
        ph = phi[:, :, a, None]
        dt = None if det is None else det[:, :, a, None]
        log_true = beta_binomial_logpmf(
            s, n[a][:, None], e[..., None], ph[..., None], None if dt is None else dt[..., None]
        )
        s_true = draw_true_counts(log_true, n[a], c[a], se, sp, rng)
        out[:, :, a, :] = conditional_p(e, ph, n[a], s_true, rng, dt)
    return out


def _per_agent(value: Any, agent: str | None, name: str) -> float | None:
    """Pick an agent's point value (dict agent -> value, or a scalar); the mean over agents when ``agent`` is None."""
    if value is None:
        return None
    if isinstance(value, dict):
        if agent is None:
            return float(np.mean(list(value.values())))
        if agent not in value:
            raise ValueError(f"agent {agent!r} not in the hyperparameters' {name} {sorted(value)}")
        return float(value[agent])
    return float(value)

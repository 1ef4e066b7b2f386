"""A faster inference tier for the Beta-Binomial families: Laplace over the hyperparameters, task effects integrated.

``fit(counts, method="laplace")`` (:mod:`agentstats.models.fitting`). NUTS samples the joint posterior of the
hyperparameters, the agent effects and every task effect (about 5,000 parameters at 20 agents x 5,000 tasks), and at
100,000 cells it needs 31 leapfrog steps a draw (docs/benchmarks.md, "Scale"). This tier uses the structure of the
crossed model instead, as INLA does (Rue, Martino & Chopin 2009, J. R. Stat. Soc. B 71(2), "Approximate Bayesian
inference for latent Gaussian models by using integrated nested Laplace approximations"):

* **Population form.** The sum-to-zero task effects ``beta = ZeroSumNormal(sigma_task)`` with intercept
  ``mu ~ Normal(mu_mu, mu_sigma)`` are, exactly, ``beta_t = b_t - mean(b)`` and ``mu = gamma + mean(b)`` with
  ``b_t ~ Normal(0, sigma_task)`` independent and ``gamma ~ Normal(mu_mu, sqrt(mu_sigma^2 - sigma_task^2 / T))``
  (the mean of T independent normals is independent of their deviations from it). Given the other parameters
  ``theta`` (``gamma``, the agent effects, ``sigma_agent``, ``sigma_task``, the dispersion and the deterministic
  share: 45 numbers at 20 agents), the task effects ``b_t`` are then independent, each with a one-dimensional
  posterior over its own cells.
* **theta's marginal posterior.** ``log p(theta | y) = log p(theta) + sum_t log int p(b) prod_a p(c_at | b, theta)
  db`` up to a constant, each integral by adaptive Gauss-Hermite quadrature (:data:`NODES` nodes around the
  integrand's mode, scaled by its curvature; Liu & Pierce 1994, Biometrika 81(3), "A note on Gauss-Hermite
  quadrature"). Its mode is found by L-BFGS (nodes fixed while optimizing, re-placed around the new modes between
  rounds) and its covariance is the inverse of the negative Hessian there (central differences of the exact
  gradient of the quadrature); ``theta`` is drawn from that Gaussian in the unconstrained space (log scales, logit
  probabilities). With thousands of cells per agent these parameters are well identified and near-Gaussian.
* **Task effects.** Each ``b_t`` is drawn from its exact conditional posterior at the mode ``theta_hat`` (inverse
  CDF on a grid of :data:`GRID` points: skewed posteriors of tasks every agent fails keep their shape), moved to
  each draw of ``theta`` by the first-order shift of its mode, ``J_t (theta - theta_hat)`` with ``J_t = -(d g_t' /
  d theta) / g_t''`` (implicit function theorem on ``g_t' = 0``).

The draws are independent (not a Markov chain): R-hat and ESS do not apply and are not reported. What applies, in
``fit.idata.attrs["laplace"]`` and :func:`laplace_diagnostics`: the optimizer's convergence (how far one Newton
step would move the mode, in posterior sd), the Hessian's positive definiteness, and the quadrature's adequacy (how
far the mode would move with twice the nodes, in posterior sd). The approximation's coverage against NUTS is measured in
``validation/laplace_coverage.py`` (docs/validation.md, "Laplace tier").

The cell likelihood is the one-pass kernel of :mod:`agentstats.models._bb_kernel` (log-pmf and its partial
derivatives in ``eta``, ``phi`` and ``det``), evaluated over cells x nodes on :data:`THREADS` threads.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
import xarray as xr
from numpy.polynomial.hermite_e import hermegauss
from scipy.optimize import minimize
from scipy.special import expit, log_expit, logsumexp

from agentstats.models.data import CountsData
from agentstats.models.families.base import BuildInfo, ModelFamily
from agentstats.models.priors import Priors

__all__ = [
    "GRID",
    "LAPLACE_MIN_CELLS",
    "METHODS",
    "NODES",
    "LaplaceResult",
    "choose_method",
    "laplace_diagnostics",
    "laplace_posterior",
    "supports_laplace",
]

#: Inference methods of ``fit``: NUTS (sampled), the Laplace tier (this module), exact draws (``no_pooling``).
METHODS = ("nuts", "laplace", "exact")
#: Observed cells from which ``fit(method=None)`` uses the Laplace tier for a family that supports it (None: never
#: by default). Where NUTS takes minutes on two cores (30,000 cells 99-167 s, 100,000 cells 695-1,011 s against a
#: 5-minute goal); the tier's intervals covered at NUTS's rate on simulated truth and on LiveCodeBench
#: (docs/validation.md, "Laplace tier").
LAPLACE_MIN_CELLS: int | None = 50_000
#: Adaptive Gauss-Hermite nodes per task integral.
NODES = 9
#: Grid points per task for the conditional draws of the task effects.
GRID = 64
#: Largest distance (posterior sd, ``sqrt(g' Sigma g)``) of the found mode from the mode (:func:`laplace_diagnostics`).
MODE_SHIFT_MAX = 0.05
#: Largest move of the mode (posterior sd) that twice the quadrature nodes may cause (:func:`laplace_diagnostics`).
QUADRATURE_SHIFT_MAX = 0.1
#: Threads evaluating the cell kernel (numba releases the GIL).
THREADS = 2
#: Lower bound of the hierarchical scales while searching the mode: the centred joint density grows without bound as
#: a scale and its effects' deviations go to 0 together, so the mode sought is the local one above this bound.
MIN_SCALE = 1e-3
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def supports_laplace(family: ModelFamily, data: CountsData, judge_error: Any = None) -> str | None:
    """Why the Laplace tier cannot fit ``family`` on ``data`` (None when it can).

    It covers the Beta-Binomial families (``zoi_beta_binomial``, ``beta_binomial``; per-agent or shared dispersion,
    shared or per-agent deterministic share) with at least two agents and two tasks, without a judge calibration.
    """
    from agentstats.models.families.beta_binomial.family import BetaBinomialFamily

    if not isinstance(family, BetaBinomialFamily):
        return f"the Laplace tier covers the Beta-Binomial families only, not {family.name!r}"
    if judge_error is not None:
        return "the Laplace tier does not model judged counts (judge_calibration)"
    n_agents, n_tasks = data.shape
    if n_agents < 2 or n_tasks < 2:
        return "the Laplace tier needs at least two agents and two tasks"
    return None


def choose_method(
    method: str | None, family: ModelFamily, data: CountsData, judge_error: Any = None, sampler_given: bool = False
) -> str:
    """Resolve ``fit``'s ``method``: the one asked for, else by size (module constants).

    ``None`` picks ``"exact"`` for a family drawn exactly, ``"laplace"`` when :data:`LAPLACE_MIN_CELLS` is set, the
    family is supported (:func:`supports_laplace`), no NUTS setting was given (``sampler_given``: ``sampler``,
    ``tune``, ``target_accept``, ``sample_kwargs``, ``nutpie_kwargs``, ``until_converged=True``) and the data have
    at least that many observed cells; else ``"nuts"``.

    Raises
    ------
    ValueError
        On an unknown method, ``"laplace"`` for data or a family it does not cover, or ``"nuts"`` / ``"laplace"``
        for a family drawn exactly.
    """
    exact = family.p_draws == "exact"
    if method is None:
        if exact:
            return "exact"
        cells = int(np.count_nonzero(data.n))
        large = LAPLACE_MIN_CELLS is not None and cells >= LAPLACE_MIN_CELLS
        if large and not sampler_given and supports_laplace(family, data, judge_error) is None:
            return "laplace"
        return "nuts"
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS} (or None: chosen by size), got {method!r}")
    if exact != (method == "exact"):
        raise ValueError(f"model {family.name!r} is drawn " + ("exactly: method must be 'exact' or None"
                                                               if exact else f"by NUTS or Laplace, not {method!r}"))
    if method == "laplace":
        why = supports_laplace(family, data, judge_error)
        if why is not None:
            raise ValueError(f"method='laplace': {why}")
    return method


# ------------------------------------------------------------------------------------------------ the layout of theta
@dataclass(frozen=True)
class _Layout:
    """Positions of the parameters in the unconstrained vector ``theta`` (module docstring)."""

    n_agents: int
    per_agent_rho: bool
    inflated: bool
    per_agent_det: bool

    @property
    def gamma(self) -> int:
        return 0

    @property
    def z(self) -> slice:
        return slice(1, self.n_agents)

    @property
    def log_sa(self) -> int:
        return self.n_agents

    @property
    def log_st(self) -> int:
        return self.n_agents + 1

    @property
    def rho(self) -> slice:
        """``rho_mu, log rho_sd, rho_logit[A]`` (per agent) or ``logit rho`` (shared)."""
        start = self.n_agents + 2
        return slice(start, start + (self.n_agents + 2 if self.per_agent_rho else 1))

    @property
    def det(self) -> slice:
        """``det_mu, log det_sd, det_logit[A]``, ``logit det_share``, or empty."""
        start = self.rho.stop
        width = (self.n_agents + 2 if self.per_agent_det else 1) if self.inflated else 0
        return slice(start, start + width)

    @property
    def size(self) -> int:
        return self.det.stop

    @property
    def groups(self) -> list[tuple[int, np.ndarray]]:
        """Each per-agent hierarchy: the position of its log scale and those of its effects."""
        out = [(self.log_sa, np.arange(self.z.start, self.z.stop))]
        if self.per_agent_rho:
            out.append((self.rho.start + 1, np.arange(self.rho.start + 2, self.rho.stop)))
        if self.inflated and self.per_agent_det:
            out.append((self.det.start + 1, np.arange(self.det.start + 2, self.det.stop)))
        return out

    @property
    def scales(self) -> list[int]:
        """Positions of the log scales of the per-agent hierarchies (``sigma_agent``, ``rho_sd``, ``det_share_sd``)."""
        out = [self.log_sa]
        if self.per_agent_rho:
            out.append(self.rho.start + 1)
        if self.inflated and self.per_agent_det:
            out.append(self.det.start + 1)
        return out


def _zero_sum_basis(n: int) -> np.ndarray:
    """Return an orthonormal basis (n, n - 1) of the zero-sum vectors (``V z``, ``z ~ N(0, s^2 I)``: ZeroSumNormal)."""
    q, _ = np.linalg.qr(np.eye(n)[:, :-1] - 1.0 / n)
    return q[:, : n - 1]


def _log_halfnormal_log(log_s: float, scale: float) -> tuple[float, float]:
    """Log density of ``log s`` for ``s ~ HalfNormal(scale)`` (Jacobian included) and its derivative in ``log s``."""
    s = math.exp(log_s)
    return (math.log(2.0) - _LOG_SQRT_2PI - math.log(scale) - 0.5 * (s / scale) ** 2 + log_s,
            1.0 - (s / scale) ** 2)


def _log_beta_logit(x: float, a: float, b: float) -> tuple[float, float]:
    """Log density of ``logit p`` for ``p ~ Beta(a, b)`` (Jacobian included) and its derivative in ``logit p``."""
    lp, lq = float(log_expit(x)), float(log_expit(-x))
    p = float(expit(x))
    norm = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
    return norm + a * lp + b * lq, a * (1.0 - p) - b * p


class _Problem:
    """The marginal posterior of ``theta`` for one family and data (module docstring)."""

    def __init__(self, family: ModelFamily, data: CountsData, priors: Priors) -> None:
        self.priors = priors
        self.family = family
        n_agents, n_tasks = data.shape
        self.A, self.T = n_agents, n_tasks
        self.layout = _Layout(n_agents, family.dispersion == "agent", bool(getattr(family, "inflated", False)),
                              bool(getattr(family, "det_by_agent", False)))
        ai, ti = data.obs_index()  # row-major: agent by agent, so the kernel's (phi)_n cache holds
        self.ai, self.ti = ai, ti
        self.n = data.n[ai, ti].astype(np.int64)
        self.c = data.c[ai, ti].astype(np.int64)
        from agentstats.models.misclassification import _log_comb

        self.log_comb = _log_comb(self.n, self.c)
        cells = ai.size
        ones = np.ones(cells)
        self.to_task = sp.csr_matrix((ones, (ti, np.arange(cells))), shape=(n_tasks, cells))
        self.to_agent = sp.csr_matrix((ones, (ai, np.arange(cells))), shape=(n_agents, cells))
        self.V = _zero_sum_basis(n_agents)

    # -------------------------------------------------------------------------------------------- parameters
    def unpack(self, theta: np.ndarray) -> dict[str, Any]:
        """Natural parameters of ``theta``: gamma, alpha (A), sigma_agent, sigma_task, rho (A), det (A), ..."""
        L = self.layout
        out: dict[str, Any] = {"gamma": float(theta[L.gamma]), "z": theta[L.z]}
        out["alpha"] = self.V @ theta[L.z]
        out["sigma_agent"], out["sigma_task"] = math.exp(theta[L.log_sa]), math.exp(theta[L.log_st])
        r = theta[L.rho]
        if L.per_agent_rho:
            out["rho_mu"], out["rho_sd"], out["rho_logit"] = float(r[0]), math.exp(r[1]), r[2:]
        else:
            out["rho_logit"] = np.full(self.A, r[0])
        out["rho"] = expit(out["rho_logit"])
        out["phi"] = np.exp(-out["rho_logit"])
        d = theta[L.det]
        if L.inflated and L.per_agent_det:
            out["det_mu"], out["det_sd"], out["det_logit"] = float(d[0]), math.exp(d[1]), d[2:]
        elif L.inflated:
            out["det_logit"] = np.full(self.A, d[0])
        if L.inflated:
            out["det_share"] = expit(out["det_logit"])
        return out

    def log_prior(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        """Log prior density of ``theta`` (Jacobians included) and its gradient."""
        L, pr = self.layout, self.priors
        grad = np.zeros_like(theta)
        total = 0.0
        # gamma ~ N(mu_mu, sqrt(mu_sigma^2 - sigma_task^2 / T)): mu = gamma + mean(b) ~ N(mu_mu, mu_sigma)
        st = math.exp(theta[L.log_st])
        var = pr.mu_sigma**2 - st**2 / self.T
        if var <= 0:
            return -math.inf, grad
        dev = theta[L.gamma] - pr.mu_mu
        total += -0.5 * math.log(var) - _LOG_SQRT_2PI - 0.5 * dev**2 / var
        grad[L.gamma] = -dev / var
        dvar = -2.0 * st**2 / self.T  # d var / d log sigma_task
        grad[L.log_st] += dvar * (-0.5 / var + 0.5 * dev**2 / var**2)
        # agent effects z ~ N(0, sigma_agent) on the zero-sum basis, sigma_agent ~ HalfNormal
        sa = math.exp(theta[L.log_sa])
        z = theta[L.z]
        k = z.size
        total += -k * (math.log(sa) + _LOG_SQRT_2PI) - 0.5 * float(z @ z) / sa**2
        grad[L.z] = -z / sa**2
        grad[L.log_sa] += -k + float(z @ z) / sa**2
        for idx, scale in ((L.log_sa, pr.sigma_agent), (L.log_st, pr.sigma_task)):
            v, dv = _log_halfnormal_log(float(theta[idx]), scale)
            total += v
            grad[idx] += dv
        for sl, on, per_agent, (mu_sd, sd), (a, b) in (
            (L.rho, True, L.per_agent_rho, (pr.rho_mu_sd, pr.rho_sd), (pr.rho_a, pr.rho_b)),
            (L.det, L.inflated, L.per_agent_det, (pr.det_mu_sd, pr.det_sd), (pr.det_a, pr.det_b)),
        ):
            if not on:
                continue
            x = theta[sl]
            g = np.zeros_like(x)
            if per_agent:  # centred: x[0] = mean, x[1] = log sd, x[2:] = per-agent logits
                s = math.exp(x[1])
                dev_a = x[2:] - x[0]
                total += -0.5 * math.log(2 * math.pi) - math.log(mu_sd) - 0.5 * (x[0] / mu_sd) ** 2
                g[0] += -x[0] / mu_sd**2
                v, gs = _log_halfnormal_log(float(x[1]), sd)
                total += v
                g[1] += gs
                total += float(np.sum(-math.log(s) - _LOG_SQRT_2PI - 0.5 * dev_a**2 / s**2))
                g[2:] += -dev_a / s**2
                g[0] += float(np.sum(dev_a)) / s**2
                g[1] += -dev_a.size + float(dev_a @ dev_a) / s**2
            else:
                v, gv = _log_beta_logit(float(x[0]), a, b)
                total += v
                g[0] += gv
            grad[sl] += g
        return total, grad

    # -------------------------------------------------------------------------------------------- the cell kernel
    def kernel(self, eta: np.ndarray, nodes: int, p: Mapping[str, Any]) -> list[np.ndarray]:
        """Kernel outputs (logp, d_eta, d_phi, d_det), each (cells, nodes), for ``eta`` of shape (cells, nodes)."""
        from agentstats.models._bb_kernel import _compiled

        cells = self.ai.size
        phi = np.repeat(p["phi"][self.ai], nodes)
        det = np.repeat(p["det_share"][self.ai], nodes) if "det_share" in p else np.zeros(cells * nodes)
        c = np.repeat(self.c, nodes)
        n = np.repeat(self.n, nodes)
        lc = np.repeat(self.log_comb, nodes)
        e = np.ascontiguousarray(eta, dtype=np.float64).reshape(-1)
        outs = [np.empty(cells * nodes) for _ in range(4)]
        fn = _compiled()
        size = cells * nodes
        parts = max(1, min(THREADS, size // 20000))
        bounds = np.linspace(0, size, parts + 1).astype(int)

        def run(i: int) -> None:
            s = slice(bounds[i], bounds[i + 1])
            fn(e[s], phi[s], det[s], c[s], n[s], lc[s], *(o[s] for o in outs))

        if parts == 1:
            run(0)
        else:
            with ThreadPoolExecutor(parts) as pool:
                list(pool.map(run, range(parts)))
        return [o.reshape(cells, nodes) for o in outs]

    def eta_base(self, p: Mapping[str, Any]) -> np.ndarray:
        """``gamma + alpha[a]`` per observed cell."""
        return p["gamma"] + p["alpha"][self.ai]

    # -------------------------------------------------------------------------------------------- task modes
    def task_modes(self, p: Mapping[str, Any], start: np.ndarray | None = None, iters: int = 30
                   ) -> tuple[np.ndarray, np.ndarray]:
        """Mode ``b_hat`` and curvature ``h = -g''(b_hat)`` of every task's log integrand (damped Newton)."""
        s2 = p["sigma_task"] ** 2
        base = self.eta_base(p)
        b = np.zeros(self.T) if start is None else start.copy()
        eps = 1e-4
        h = np.full(self.T, 1.0 / s2)
        for _ in range(iters):
            bc = b[self.ti][:, None] + np.array([0.0, eps, -eps])[None, :]
            _, d_eta, _, _ = self.kernel(base[:, None] + bc, 3, p)
            g1 = self.to_task @ d_eta[:, 0] - b / s2
            g2 = self.to_task @ ((d_eta[:, 1] - d_eta[:, 2]) / (2 * eps)) - 1.0 / s2
            h = np.where(g2 < 0, -g2, 1.0 / s2)
            step = np.clip(g1 / h, -1.0, 1.0)
            b = b + step
            if float(np.max(np.abs(step))) < 1e-8:
                break
        return b, h

    # -------------------------------------------------------------------------------------------- the marginal
    def log_marginal(self, theta: np.ndarray, x: np.ndarray, logw: np.ndarray, bhat: np.ndarray, h: np.ndarray
                     ) -> tuple[float, np.ndarray]:
        """``log p(theta) + sum_t log int ...`` by the Gauss-Hermite rule ``(x, logw)`` placed at ``(bhat, h)``.

        The nodes are held fixed, so the value and its gradient belong to one quadrature rule (module docstring).
        """
        lp, grad = self.log_prior(theta)
        if not math.isfinite(lp):
            return -math.inf, grad
        L = self.layout
        p = self.unpack(theta)
        k = x.size
        sd = 1.0 / np.sqrt(h)
        B = bhat[:, None] + sd[:, None] * x[None, :]  # (task, node)
        base = self.eta_base(p)
        logp, d_eta, d_phi, d_det = self.kernel(base[:, None] + B[self.ti], k, p)
        st = p["sigma_task"]
        S = (self.to_task @ logp) - 0.5 * (B / st) ** 2 - math.log(st) - _LOG_SQRT_2PI
        terms = S + logw[None, :] + 0.5 * x[None, :] ** 2 + _LOG_SQRT_2PI
        lse = logsumexp(terms, axis=1)
        total = lp + float(np.sum(lse + np.log(sd)))
        w = np.exp(terms - lse[:, None])  # (task, node) normalized
        wc = w[self.ti]  # (cells, node)
        e_cell = np.sum(wc * d_eta, axis=1)
        e_agent = self.to_agent @ e_cell
        grad[L.gamma] += float(e_cell.sum())
        grad[L.z] += self.V.T @ e_agent
        grad[L.log_st] += float(np.sum(w * ((B / st) ** 2 - 1.0)))
        phi_agent = self.to_agent @ np.sum(wc * d_phi, axis=1)
        d_rho_logit = -p["phi"] * phi_agent  # phi = exp(-rho_logit)
        r = grad[L.rho]
        if L.per_agent_rho:
            r[2:] += d_rho_logit
        else:
            r[0] += float(d_rho_logit.sum())
        grad[L.rho] = r
        if L.inflated:
            det_agent = self.to_agent @ np.sum(wc * d_det, axis=1)
            dd = det_agent * p["det_share"] * (1.0 - p["det_share"])
            dg = grad[L.det]
            if L.per_agent_det:
                dg[2:] += dd
            else:
                dg[0] += float(dd.sum())
            grad[L.det] = dg
        return total, grad

    def effect_information(self, theta: np.ndarray, x: np.ndarray, logw: np.ndarray, bhat: np.ndarray,
                           h: np.ndarray) -> np.ndarray:
        """Return the data's information about each per-agent effect (``-d^2 log lik / d effect^2``), 0 elsewhere.

        Central differences of the gradient of :meth:`log_marginal` along each effect, less the prior's curvature
        ``1 / scale^2``; clipped at 0.
        """
        out = np.zeros(theta.size)
        for scale, effects in self.layout.groups:
            prior_curv = math.exp(-2.0 * theta[scale])
            for k in effects:
                eps = 1e-4 * max(1.0, abs(theta[k]))
                up, down = theta.copy(), theta.copy()
                up[k] += eps
                down[k] -= eps
                curv = -(self.log_marginal(up, x, logw, bhat, h)[1][k] - self.log_marginal(down, x, logw, bhat, h)[1][k]
                         ) / (2 * eps)
                out[k] = max(curv - prior_curv, 0.0)
        return out

    def objective(self, theta: np.ndarray, x: np.ndarray, logw: np.ndarray, bhat: np.ndarray, h: np.ndarray,
                  info: np.ndarray | None) -> tuple[float, np.ndarray]:
        """:meth:`log_marginal` plus, with ``info``, the Laplace integral of each hierarchy's effects.

        The centred joint density grows without bound as a scale ``s`` and its effects' deviations go to 0 together;
        integrating the effects out (Laplace, with the data's information ``I_k`` about each effect held at its value
        after the first round and the prior's ``1 / s^2``) adds ``-1/2 sum_k log(I_k + 1 / s^2)``, which cancels
        that growth: the mode is then the mode of the scales' marginal posterior, and the effects' conditional mode.
        """
        v, g = self.log_marginal(theta, x, logw, bhat, h)
        if info is None or not math.isfinite(v):
            return v, g
        for scale, effects in self.layout.groups:
            prior_curv = math.exp(-2.0 * theta[scale])
            total = info[effects] + prior_curv
            v += -0.5 * float(np.sum(np.log(total)))
            g[scale] += float(np.sum(prior_curv / total))
        return v, g

    def start(self, data_rate: float) -> np.ndarray:
        """Return a starting ``theta``: the overall logit rate, no agent effects, unit scales, rho 0.3, det 0.2."""
        L = self.layout
        theta = np.zeros(L.size)
        theta[L.gamma] = math.log(data_rate / (1.0 - data_rate))
        r = np.full(L.rho.stop - L.rho.start, math.log(0.3 / 0.7))
        if L.per_agent_rho:
            r[1] = 0.0
        theta[L.rho] = r
        theta[L.log_sa] = 0.0
        if L.inflated:
            d = np.full(L.det.stop - L.det.start, math.log(0.2 / 0.8))
            if L.per_agent_det:
                d[1] = 0.0
            theta[L.det] = d
        return theta


@dataclass(frozen=True)
class LaplaceResult:
    """What :func:`laplace_posterior` found: the posterior DataTree and the approximation's checks."""

    idata: xr.DataTree
    info: BuildInfo
    checks: dict[str, Any]


def _gh(nodes: int) -> tuple[np.ndarray, np.ndarray]:
    x, w = hermegauss(nodes)
    return x, np.log(w / math.sqrt(2.0 * math.pi))


def laplace_posterior(
    family: ModelFamily, data: CountsData, priors: Priors, chains: int, draws: int, seed: int, nodes: int = NODES
) -> LaplaceResult:
    """Draw ``chains x draws`` independent posterior draws of a Beta-Binomial family by the Laplace tier.

    Parameters
    ----------
    family : ModelFamily
        ``zoi_beta_binomial`` or ``beta_binomial`` (:func:`supports_laplace`).
    data : CountsData
    priors : Priors
    chains, draws : int
        The draws are laid out as ``(chain, draw)`` for the posterior's consumers; they are independent.
    seed : int
        Seeds the draws (the mode and covariance do not depend on it).
    nodes : int
        Gauss-Hermite nodes per task integral.

    Returns
    -------
    LaplaceResult
        ``idata`` with a ``posterior`` group holding the family's variables in its centred form (``mu``, ``alpha``,
        ``sigma_agent``, ``beta``, ``sigma_task``, ``rho`` and ``phi`` per agent (``rho_mu``, ``rho_sd``,
        ``rho_logit`` with per-agent dispersion), ``det_share`` for the inflated variant), dims ``chain, draw``,
        ``agent``, ``task``; ``checks``: ``grad_norm``, ``mode_shift_sd``, ``quadrature_shift_sd``, ``min_eigenvalue``,
        ``quadrature_error``, ``rounds``,
        ``seconds`` per step.

    Raises
    ------
    ValueError
        When the family or data are not covered, or the mode is not a maximum (a Hessian not negative definite).
    """
    why = supports_laplace(family, data)
    if why is not None:
        raise ValueError(why)
    times: dict[str, float] = {}
    t0 = time.perf_counter()
    prob = _Problem(family, data, priors)
    x, logw = _gh(nodes)
    obs = data.n > 0
    rate = float(np.clip((data.c[obs].sum() + 0.5) / (data.n[obs].sum() + 1.0), 0.01, 0.99))
    theta = prob.start(rate)
    bhat, h = prob.task_modes(prob.unpack(theta))
    scales = prob.layout.scales
    fixed = np.zeros(theta.size, bool)
    fixed[scales] = True  # first round: the per-agent effects with their scales held at 1 (module docstring)
    bounds = [(math.log(MIN_SCALE), None) if i in scales else (None, None) for i in range(theta.size)]
    info_diag: np.ndarray | None = None
    rounds = 0
    # more nodes until twice as many would not move the mode (LiveCodeBench, 2 trials per cell: 9 nodes moved it
    # 0.7 posterior sd; docs/validation.md, "Laplace tier")
    for k_nodes in (nodes, 2 * nodes, 4 * nodes):
        x, logw = _gh(k_nodes)
        for rounds in range(1, 10):
            free = ~fixed if rounds == 1 and info_diag is None else np.ones(theta.size, bool)

            def neg(th_free: np.ndarray, free: np.ndarray = free, base: np.ndarray = theta, bhat: np.ndarray = bhat,
                    h: np.ndarray = h, info: np.ndarray | None = info_diag, x: np.ndarray = x,
                    logw: np.ndarray = logw) -> tuple[float, np.ndarray]:
                th = base.copy()
                th[free] = th_free
                v, g = prob.objective(th, x, logw, bhat, h, info)
                return (-v, -g[free]) if math.isfinite(v) else (1e300, np.zeros(int(free.sum())))

            res = minimize(neg, theta[free], jac=True, method="L-BFGS-B", options={"maxiter": 1000, "gtol": 1e-7},
                           bounds=[b for b, f in zip(bounds, free, strict=True) if f])
            new = theta.copy()
            new[free] = res.x
            moved = float(np.max(np.abs(new - theta)))
            theta = new
            bhat, h = prob.task_modes(prob.unpack(theta), start=bhat)
            if info_diag is None:
                info_diag = prob.effect_information(theta, x, logw, bhat, h)
            if rounds > 1 and moved < 1e-5:
                break
        low = [i for i in scales if theta[i] <= math.log(MIN_SCALE) + 1e-6]
        if low:
            raise ValueError("laplace: a hierarchical scale (sigma_agent, rho_sd or det_share_sd) has no mode above "
                             f"{MIN_SCALE} (the agents' values are too alike for a Gaussian approximation there); use "
                             "method='nuts'")
        times["mode"] = time.perf_counter() - t0
        # Hessian of the log marginal at the mode: central differences of its exact gradient (nodes fixed)
        t1 = time.perf_counter()
        size = theta.size
        hess = np.empty((size, size))
        grad0 = prob.objective(theta, x, logw, bhat, h, info_diag)[1]
        for k in range(size):
            eps = 1e-4 * max(1.0, abs(theta[k]))
            up, down = theta.copy(), theta.copy()
            up[k] += eps
            down[k] -= eps
            hess[:, k] = (prob.objective(up, x, logw, bhat, h, info_diag)[1]
                          - prob.objective(down, x, logw, bhat, h, info_diag)[1]) / (2 * eps)
        hess = 0.5 * (hess + hess.T)
        eig = np.linalg.eigvalsh(-hess)
        if not eig.min() > 0:
            raise ValueError(f"laplace: the mode is not a maximum (smallest eigenvalue {eig.min():.3g} of the negative "
                             "Hessian); use method='nuts'")
        cov = np.linalg.inv(-hess)
        cov = 0.5 * (cov + cov.T)
        times["hessian"] = time.perf_counter() - t1
        # quadrature check: the log marginal and its gradient with twice the nodes; what matters is how far the mode
        # would move, in posterior sd (a constant error in the log marginal changes nothing)
        x2, logw2 = _gh(2 * k_nodes)
        v2, g2 = prob.objective(theta, x2, logw2, bhat, h, info_diag)
        quad_err = abs(v2 - prob.objective(theta, x, logw, bhat, h, info_diag)[0])
        mode_shift = math.sqrt(max(float(grad0 @ cov @ grad0), 0.0))
        quad_shift = math.sqrt(max(float(g2 @ cov @ g2), 0.0))
        if quad_shift <= QUADRATURE_SHIFT_MAX:
            break
    # draws of theta
    t2 = time.perf_counter()
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 0x1A9]))
    n_draws = chains * draws
    chol = np.linalg.cholesky(cov)
    thetas = theta[None, :] + rng.standard_normal((n_draws, size)) @ chol.T
    # task effects: exact conditional at the mode on a grid, shifted to each theta draw
    p_hat = prob.unpack(theta)
    b_draws = _task_draws(prob, theta, p_hat, bhat, h, thetas, rng)
    times["draws"] = time.perf_counter() - t2
    post = _posterior(prob, thetas, b_draws, chains, draws, data)
    checks = {
        "grad_norm": float(np.max(np.abs(grad0))),
        "min_eigenvalue": float(eig.min()),
        "quadrature_error": float(quad_err),
        "mode_shift_sd": float(mode_shift),
        "quadrature_shift_sd": float(quad_shift),
        "rounds": int(rounds),
        "parameters": int(size),
        "nodes": int(k_nodes),
        "seconds": {k: round(v, 2) for k, v in times.items()},
    }
    info = BuildInfo(
        parameterization={"agent": "centered", "task": "centered"}
        | ({"dispersion": "centered"} if prob.layout.per_agent_rho or prob.layout.per_agent_det else {}),
        parameterization_ratios={},
        has_agent_effect=True,
        has_cell_effect=True,
    )
    return LaplaceResult(xr.DataTree.from_dict({"posterior": post}), info, checks)


def _task_draws(prob: _Problem, theta: np.ndarray, p_hat: Mapping[str, Any], bhat: np.ndarray, h: np.ndarray,
                thetas: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Draw the task effects ``b`` (draws, task): inverse CDF at ``theta_hat``, moved by ``J_t (theta - theta_hat)``."""
    T = prob.T
    sd = 1.0 / np.sqrt(h)
    u = np.linspace(-7.0, 7.0, GRID)
    B = bhat[:, None] + sd[:, None] * u[None, :]
    base = prob.eta_base(p_hat)
    logp = prob.kernel(base[:, None] + B[prob.ti], GRID, p_hat)[0]
    st = p_hat["sigma_task"]
    dens = (prob.to_task @ logp) - 0.5 * (B / st) ** 2
    dens = np.exp(dens - dens.max(axis=1, keepdims=True))
    cdf = np.concatenate([np.zeros((T, 1)), np.cumsum(0.5 * (dens[:, 1:] + dens[:, :-1]), axis=1)], axis=1)
    cdf /= cdf[:, -1:]
    # J_t = -(d g_t'(b_hat) / d theta) / g_t''(b_hat), by central differences over theta
    size = theta.size
    J = np.empty((T, size))
    for k in range(size):
        eps = 1e-4 * max(1.0, abs(theta[k]))
        g = []
        for sign in (1.0, -1.0):
            th = theta.copy()
            th[k] += sign * eps
            p = prob.unpack(th)
            d_eta = prob.kernel((prob.eta_base(p) + bhat[prob.ti])[:, None], 1, p)[1][:, 0]
            g.append(prob.to_task @ d_eta - bhat / p["sigma_task"] ** 2)
        J[:, k] = -((g[0] - g[1]) / (2 * eps)) / (-h)
    n_draws = thetas.shape[0]
    q = rng.random((n_draws, T))
    out = np.empty((n_draws, T))
    for t in range(T):
        out[:, t] = np.interp(q[:, t], cdf[t], B[t])
    out += (thetas - theta[None, :]) @ J.T
    return out


def _posterior(prob: _Problem, thetas: np.ndarray, b: np.ndarray, chains: int, draws: int, data: CountsData
               ) -> xr.Dataset:
    """Return the posterior group in the family's centred variables (``mu``, ``alpha``, ``beta``, ...)."""
    L = prob.layout
    shape = (chains, draws)
    mean_b = b.mean(axis=1)
    mu = thetas[:, L.gamma] + mean_b
    beta = b - mean_b[:, None]
    alpha = thetas[:, L.z] @ prob.V.T
    coords = {"chain": np.arange(chains), "draw": np.arange(draws), "agent": data.agents, "task": data.tasks}
    v: dict[str, Any] = {
        "mu": (("chain", "draw"), mu.reshape(shape)),
        "alpha": (("chain", "draw", "agent"), alpha.reshape(*shape, prob.A)),
        "sigma_agent": (("chain", "draw"), np.exp(thetas[:, L.log_sa]).reshape(shape)),
        "beta": (("chain", "draw", "task"), beta.reshape(*shape, prob.T)),
        "sigma_task": (("chain", "draw"), np.exp(thetas[:, L.log_st]).reshape(shape)),
    }
    r = thetas[:, L.rho]
    if L.per_agent_rho:
        v["rho_mu"] = (("chain", "draw"), r[:, 0].reshape(shape))
        v["rho_sd"] = (("chain", "draw"), np.exp(r[:, 1]).reshape(shape))
        v["rho_logit"] = (("chain", "draw", "agent"), r[:, 2:].reshape(*shape, prob.A))
        v["rho"] = (("chain", "draw", "agent"), expit(r[:, 2:]).reshape(*shape, prob.A))
        v["phi"] = (("chain", "draw", "agent"), np.exp(-r[:, 2:]).reshape(*shape, prob.A))
    else:
        v["rho"] = (("chain", "draw"), expit(r[:, 0]).reshape(shape))
        v["phi"] = (("chain", "draw"), np.exp(-r[:, 0]).reshape(shape))
    if L.inflated:
        d = thetas[:, L.det]
        if L.per_agent_det:
            v["det_share_mu"] = (("chain", "draw"), d[:, 0].reshape(shape))
            v["det_share_sd"] = (("chain", "draw"), np.exp(d[:, 1]).reshape(shape))
            v["det_share_logit"] = (("chain", "draw", "agent"), d[:, 2:].reshape(*shape, prob.A))
            v["det_share"] = (("chain", "draw", "agent"), expit(d[:, 2:]).reshape(*shape, prob.A))
        else:
            v["det_share"] = (("chain", "draw"), expit(d[:, 0]).reshape(shape))
    return xr.Dataset(v, coords=coords)


def laplace_diagnostics(checks: Mapping[str, Any], draws: int) -> tuple[bool, list[str], str]:
    """Return the checks that apply to a Laplace fit: ``(ok, problems, note)``.

    R-hat and ESS do not apply (independent draws, not a chain). The mode must be found: one Newton step from it
    moves it by at most :data:`MODE_SHIFT_MAX` posterior sd (``sqrt(g' Sigma g)``, ``g`` the gradient there); and the
    quadrature must be fine enough: with twice the nodes the mode would move by at most :data:`QUADRATURE_SHIFT_MAX`
    posterior sd. The absolute quadrature error of the log marginal likelihood is reported, not checked (a constant
    offset changes no draw).
    """
    problems = []
    mode = checks.get("mode_shift_sd", math.inf)
    quad = checks.get("quadrature_shift_sd", math.inf)
    if not mode <= MODE_SHIFT_MAX:
        problems.append(f"laplace: the mode search stopped {mode:.3g} posterior sd from the mode (> {MODE_SHIFT_MAX});"
                        " refit with method='nuts'")
    if not quad <= QUADRATURE_SHIFT_MAX:
        problems.append(f"laplace: twice the quadrature nodes would move the mode by {quad:.3g} posterior sd (> "
                        f"{QUADRATURE_SHIFT_MAX}); refit with method='nuts'")
    note = (f"{draws:,} independent draws of the Laplace tier: R-hat and ESS do not apply (not a Markov chain); "
            f"checked: the mode within {mode:.1e} posterior sd, twice the quadrature nodes would move it "
            f"{quad:.1e} sd (log marginal {checks.get('quadrature_error', math.nan):.1e} apart), smallest Hessian "
            f"eigenvalue {checks.get('min_eigenvalue', math.nan):.3g}")
    return not problems, problems, note

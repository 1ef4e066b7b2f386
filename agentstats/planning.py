"""Sample-size planning for pass^k: expected credible-interval width and power, without MCMC per design.

Approximation (stated honestly): the hyperparameters are **fixed** at given values (e.g. posterior means of a
fit, :func:`hyperparameters_from_fit`), so each task's cell is a one-dimensional logit-normal-Binomial problem
whose posterior is computed exactly by Gauss-Hermite quadrature for every possible count ``c = 0..n`` once per
design. Simulated datasets then need only table look-ups. Per design and simulated dataset:

* the posterior of the suite value ``mean_t p_t^k`` (observed population) is summarised by its mean and
  variance (tasks are independent given the hyperparameters), and the credible interval by the normal
  approximation ``mean +/- z sd`` (a sum over tasks; CLT);
* for the ``new`` population the between-task sampling variance ``Var_t(p_t^k) / T`` is added (the suite of T
  tasks estimates the population mean of p^k).

What it leaves out: uncertainty in ``mu``, ``sigma_task``, ``sigma_cell`` and the agent effects, so widths are
somewhat optimistic (narrower) for few tasks, where those are poorly known; the full model is the judge (run
:func:`agentstats.models.fit.fit` on a few simulated datasets of the chosen design to confirm). Sources: the
conditional (empirical Bayes) posterior of hierarchical models, Gelman et al. BDA3 sec. 5.3-5.5; Gauss-Hermite
rule, Abramowitz & Stegun 25.4.46; pass^k, Yao et al. 2024, arXiv 2406.12045.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import xarray as xr
from numpy.polynomial.hermite_e import hermegauss
from scipy import stats
from scipy.special import gammaln, log_expit

__all__ = ["hyperparameters_from_fit", "plan_interval_width", "plan_power"]

_NODES = 64


def hyperparameters_from_fit(dt: xr.DataTree) -> dict:
    """Posterior means of ``mu``, ``sigma_task``, ``sigma_cell`` and per-agent ``alpha`` from a fit.

    Parameters
    ----------
    dt : xarray.DataTree
        A hierarchical fit (``partial_pooling`` or ``additive``).

    Returns
    -------
    dict
        ``mu`` (float), ``sigma_task`` (float), ``sigma_cell`` (float, 0 without a cell term), ``alpha``
        (dict agent -> float, 0 for a single agent).

    Raises
    ------
    ValueError
        If the fit has no ``mu`` / ``sigma_task`` (e.g. no_pooling).
    """
    post = dt["posterior"]
    if "mu" not in post or "sigma_task" not in post:
        raise ValueError("hyperparameters_from_fit: needs a hierarchical fit with mu and sigma_task")
    agents = [str(a) for a in post["agent"].values]
    alpha = (
        dict(zip(agents, post["alpha"].mean(("chain", "draw")).to_numpy().tolist(), strict=True))
        if "alpha" in post
        else {a: 0.0 for a in agents}
    )
    return dict(
        mu=float(post["mu"].mean()),
        sigma_task=float(post["sigma_task"].mean()),
        sigma_cell=float(post["sigma_cell"].mean()) if "sigma_cell" in post else 0.0,
        alpha=alpha,
    )


def _log_binom_kernel(n: int, eta: np.ndarray) -> np.ndarray:
    """Log P(c | n, p = expit(eta)) for c = 0..n; shape (n + 1,) + eta.shape."""
    c = np.arange(n + 1).reshape((-1,) + (1,) * eta.ndim)
    log_comb = gammaln(n + 1) - gammaln(c + 1) - gammaln(n - c + 1)
    return log_comb + c * log_expit(eta) + (n - c) * log_expit(-eta)


def _cell_tables(m: float, s: float, n: int, k: int, n_nodes: int = _NODES):
    """For logit p ~ N(m, s): P(c), E[p^k | c], Var[p^k | c] for c = 0..n, and E[p^k], Var(p^k) (prior)."""
    x, w = hermegauss(n_nodes)
    w = w / np.sqrt(2 * np.pi)
    eta = m + s * x
    pk = np.exp(k * log_expit(eta))
    lik = np.exp(_log_binom_kernel(n, eta))  # (n+1, nodes)
    marg = lik @ w  # P(c)
    post_w = lik * w / marg[:, None]
    e1 = post_w @ pk
    e2 = post_w @ pk**2
    prior_m = w @ pk
    prior_v = w @ pk**2 - prior_m**2
    return marg, e1, np.maximum(e2 - e1**2, 0.0), prior_m, max(prior_v, 0.0)


def _as_list(x) -> list[int]:
    return [int(v) for v in np.atleast_1d(x)]


def _resolve(hyper: dict | xr.DataTree | None, agent: str | None) -> tuple[float, float]:
    """(m, s) of one agent's cells: m = mu + alpha[agent], s = sqrt(sigma_task^2 + sigma_cell^2)."""
    if isinstance(hyper, xr.DataTree):
        hyper = hyperparameters_from_fit(hyper)
    if hyper is None:
        raise ValueError("give hyperparameters: a fit (DataTree) or dict(mu=, sigma_task=, sigma_cell=, alpha=)")
    for key in ("mu", "sigma_task"):
        if key not in hyper:
            raise ValueError(f"hyperparameters: missing {key!r}")
    alpha = hyper.get("alpha", 0.0)
    if isinstance(alpha, dict):
        if agent is None:
            a = 0.0
        elif agent not in alpha:
            raise ValueError(f"agent {agent!r} not in hyperparameters' alpha {sorted(alpha)}")
        else:
            a = float(alpha[agent])
    else:
        a = float(alpha)
    s = float(np.hypot(hyper["sigma_task"], hyper.get("sigma_cell", 0.0)))
    return float(hyper["mu"]) + a, s


def plan_interval_width(
    hyper: dict | xr.DataTree,
    n_tasks: Sequence[int] | int,
    n_trials: Sequence[int] | int,
    k: Sequence[int] | int = 1,
    *,
    agent: str | None = None,
    population: str = "observed",
    ci_prob: float = 0.95,
    n_sims: int = 400,
    random_seed: int = 0,
) -> pd.DataFrame:
    """Compute the expected credible-interval width of one agent's suite pass^k over a grid of designs.

    Method and assumptions in the module docstring (fixed hyperparameters, exact per-cell posteriors, normal
    approximation across tasks).

    Parameters
    ----------
    hyper : dict or xarray.DataTree
        ``dict(mu=, sigma_task=, sigma_cell=, alpha=)`` (logit scale; ``alpha`` a float or dict agent -> float)
        or a hierarchical fit (posterior means are used).
    n_tasks, n_trials : int or sequence of int
        Design grid: tasks in the suite and trials per task.
    k : int or sequence of int
    agent : str, optional
        Which agent's effect to use when ``alpha`` is a dict (default 0, the average agent).
    population : {"observed", "new"}
    ci_prob : float
    n_sims : int
        Simulated datasets per design.
    random_seed : int

    Returns
    -------
    pandas.DataFrame
        Columns ``n_tasks, n_trials, k, population, expected_width, width_q10, width_q90, true_value`` where
        ``true_value`` is the population pass^k E[p^k] implied by the hyperparameters.

    Raises
    ------
    ValueError
        On invalid hyperparameters, designs or ``population``.
    """
    if population not in ("observed", "new"):
        raise ValueError(f"population must be 'observed' or 'new', got {population!r}")
    m, s = _resolve(hyper, agent)
    z = stats.norm.ppf(0.5 + ci_prob / 2)
    rng = np.random.default_rng(random_seed)
    rows = []
    for n in _as_list(n_trials):
        if n < 1:
            raise ValueError(f"n_trials must be >= 1, got {n}")
        for kk in _as_list(k):
            marg, _, v1, prior_m, prior_v = _cell_tables(m, s, n, kk)
            for t in _as_list(n_tasks):
                if t < 1:
                    raise ValueError(f"n_tasks must be >= 1, got {t}")
                # counts per task are iid draws from the marginal P(c); a dataset is a multinomial of counts
                cnt = rng.multinomial(t, marg / marg.sum(), size=n_sims)  # (sims, n+1)
                var = cnt @ v1 / t**2
                if population == "new":
                    var = var + prior_v / t
                width = 2 * z * np.sqrt(var)
                rows.append(
                    dict(
                        n_tasks=t,
                        n_trials=n,
                        k=kk,
                        population=population,
                        expected_width=float(width.mean()),
                        width_q10=float(np.quantile(width, 0.1)),
                        width_q90=float(np.quantile(width, 0.9)),
                        true_value=float(prior_m),
                    )
                )
    return pd.DataFrame(rows)


def _pair_tables(hyper: dict, a: float, b: float, n: int, k: int, n_nodes: int = 32):
    """Joint tables for two agents on one task sharing beta_t: P(cA, cB), E[D | cA, cB], Var[D | cA, cB].

    D = p_A^k - p_B^k; beta ~ N(0, sigma_task) shared, gamma_A, gamma_B ~ N(0, sigma_cell) independent;
    nested Gauss-Hermite over beta (outer) and gamma (inner).
    """
    x, w = hermegauss(n_nodes)
    w = w / np.sqrt(2 * np.pi)
    st, sc = float(hyper["sigma_task"]), float(hyper.get("sigma_cell", 0.0))
    beta = st * x  # outer nodes
    out = {}
    for name, eff in (("A", a), ("B", b)):
        eta = float(hyper["mu"]) + eff + beta[:, None] + sc * x[None, :]  # (outer, inner)
        lik = np.exp(_log_binom_kernel(n, eta))  # (n+1, outer, inner)
        pk = np.exp(k * log_expit(eta))
        l_c = lik @ w  # (n+1, outer): P(c | beta)
        m1 = (lik * pk) @ w / l_c  # E[p^k | c, beta]
        m2 = (lik * pk**2) @ w / l_c
        out[name] = (l_c, m1, m2)
    l_a, a1, a2 = out["A"]
    l_b, b1, b2 = out["B"]
    joint = l_a[:, None, :] * l_b[None, :, :] * w  # (nA+1, nB+1, outer)
    pj = joint.sum(-1)
    wj = joint / pj[..., None]
    e_d = (wj * (a1[:, None, :] - b1[None, :, :])).sum(-1)
    e_d2 = (wj * (a2[:, None, :] - 2 * a1[:, None, :] * b1[None, :, :] + b2[None, :, :])).sum(-1)
    # true population difference E[p_A^k] - E[p_B^k]
    pop = []
    for eff in (a, b):
        eta = float(hyper["mu"]) + eff + np.hypot(st, sc) * x
        pop.append(w @ np.exp(k * log_expit(eta)))
    d_true = pop[0] - pop[1]
    return pj, e_d, np.maximum(e_d2 - e_d**2, 0.0), d_true


def plan_power(
    hyper: dict | xr.DataTree,
    n_tasks: Sequence[int] | int,
    n_trials: Sequence[int] | int,
    k: Sequence[int] | int = 1,
    *,
    agents: tuple[str, str] | None = None,
    alpha_diff: float | None = None,
    ci_prob: float = 0.95,
    n_sims: int = 400,
    random_seed: int = 0,
) -> pd.DataFrame:
    """Power to detect that agent A's suite pass^k exceeds agent B's, over a grid of designs.

    Both agents run the same tasks (shared task effect ``beta_t``, independent cell effects). A simulated
    dataset "detects" the difference when P(pass^k[A] > pass^k[B] | data) >= (1 + ci_prob) / 2, i.e. the
    equal-tailed ``ci_prob`` credible interval of the difference lies above 0, using the normal approximation
    with the exact per-task conditional moments (module docstring; fixed hyperparameters).

    Parameters
    ----------
    hyper : dict or xarray.DataTree
        As in :func:`plan_interval_width`.
    n_tasks, n_trials, k : int or sequence of int
    agents : (str, str), optional
        Agents A and B whose effects are taken from ``hyper["alpha"]``.
    alpha_diff : float, optional
        Alternatively, the logit-scale effect difference A - B (A at ``+alpha_diff/2``, B at ``-alpha_diff/2``
        around ``mu``).
    ci_prob : float
    n_sims : int
    random_seed : int

    Returns
    -------
    pandas.DataFrame
        Columns ``n_tasks, n_trials, k, true_diff, power, expected_width`` (``true_diff``: population
        E[p_A^k] - E[p_B^k]; ``expected_width``: mean credible-interval width of the in-sample difference).

    Raises
    ------
    ValueError
        If neither or both of ``agents`` and ``alpha_diff`` are given, or hyperparameters are invalid.
    """
    if isinstance(hyper, xr.DataTree):
        hyper = hyperparameters_from_fit(hyper)
    if (agents is None) == (alpha_diff is None):
        raise ValueError("give exactly one of agents=(A, B) or alpha_diff=")
    if agents is not None:
        alpha = hyper.get("alpha", {})
        if not isinstance(alpha, dict) or any(a not in alpha for a in agents):
            raise ValueError(f"agents {agents} not in hyperparameters' alpha")
        ea, eb = float(alpha[agents[0]]), float(alpha[agents[1]])
    else:
        ea, eb = alpha_diff / 2.0, -alpha_diff / 2.0
    _resolve(hyper, None)  # validates keys
    z = stats.norm.ppf(0.5 + ci_prob / 2)
    rng = np.random.default_rng(random_seed)
    rows = []
    for n in _as_list(n_trials):
        for kk in _as_list(k):
            pj, e_d, v_d, d_true = _pair_tables(hyper, ea, eb, n, kk)
            flat_p = (pj / pj.sum()).ravel()
            for t in _as_list(n_tasks):
                cnt = rng.multinomial(t, flat_p, size=n_sims)
                mean = cnt @ e_d.ravel() / t
                sd = np.sqrt(cnt @ v_d.ravel() / t**2)
                detect = (mean - z * sd) > 0
                rows.append(
                    dict(
                        n_tasks=t,
                        n_trials=n,
                        k=kk,
                        true_diff=float(d_true),
                        power=float(detect.mean()),
                        expected_width=float((2 * z * sd).mean()),
                    )
                )
    return pd.DataFrame(rows)

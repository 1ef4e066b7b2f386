"""Sample-size planning for pass^k: expected credible-interval width and power, without MCMC per design.

Approximation (stated honestly): the hyperparameters are **fixed** at given values (posterior means of a fit, or a
dict), so each task's cell is a small exact problem under the fitted model's own cell distribution: the family
(:meth:`agentstats.models.families.base.ModelFamily.cell_given_task`) gives, for a task-level logit, the likelihood of
each count ``c = 0..n`` and the conditional moments of ``p^k`` (Beta-Binomial families: conjugate Beta moments with the
agent's dispersion ``phi[a]`` and the always/never share; logit-normal: an inner Gauss-Hermite rule over the agent's
cell scale), and the task effect ``Normal(0, sigma_task)`` is integrated by Gauss-Hermite quadrature. Simulated
datasets then need only table look-ups. Per design and simulated dataset:

* the posterior of the suite value ``mean_t p_t^k`` (observed population) is summarised by its mean and variance
  (tasks are independent given the hyperparameters), and the credible interval by the normal approximation
  ``mean +/- z sd`` (a sum over tasks; CLT);
* for the ``new`` population the between-task sampling variance ``Var_t(p_t^k) / T`` is added (the suite of T tasks
  estimates the population mean of p^k).

What it leaves out: uncertainty in the hyperparameters, so widths are somewhat optimistic (narrower) for few tasks;
the full model is the judge (fit a few simulated datasets of the chosen design to confirm). Sources: the conditional
(empirical Bayes) posterior of hierarchical models, Gelman et al. BDA3 sec. 5.3-5.5; Gauss-Hermite rule, Abramowitz &
Stegun 25.4.46; pass^k, Yao et al. 2024, arXiv 2406.12045.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from agentstats.intervals import CI_PROB, DEFAULT_SEED, check_ci
from agentstats.models.families.base import ModelFamily, gauss_hermite
from agentstats.models.families.registry import get_family
from agentstats.models.result import Fit

__all__ = ["hyperparameters_from_fit", "plan_interval_width", "plan_power"]

_NODES = 64


def hyperparameters_from_fit(fit: Fit) -> dict[str, Any]:
    """Posterior point values of a fit's hyperparameters, with the fit's model name under ``"model"``.

    Parameters
    ----------
    fit : Fit
        A hierarchical fit.

    Returns
    -------
    dict
        ``model``, ``dispersion``, ``mu`` (float), ``alpha`` (dict agent -> float), ``sigma_task`` (float) and the
        family's cell parameters: ``phi`` and ``det_share`` (dicts agent -> float) for the Beta-Binomial families,
        ``sigma_cell`` (dict) for ``partial_pooling``.

    Raises
    ------
    ValueError
        If the fit's model has no hyperparameters (``no_pooling``).
    """
    family = fit.family
    if not family.hierarchical:
        raise ValueError(f"hyperparameters_from_fit: the {family.name} model has no hyperparameters to plan with")
    out = family.point(fit.posterior)
    out.update(model=family.name, dispersion=family.dispersion)
    return out


def _resolve(hyper: dict[str, Any] | Fit) -> tuple[ModelFamily, dict[str, Any]]:
    """Return the family and point hyperparameters of a fit or a dict (its ``model`` key, or inferred from its keys)."""
    if isinstance(hyper, Fit):
        hyper = hyperparameters_from_fit(hyper)
    if not isinstance(hyper, dict):
        raise ValueError("give hyperparameters: a fit (agentstats.fit) or a dict(model=, mu=, sigma_task=, ...)")
    for key in ("mu", "sigma_task"):
        if key not in hyper:
            raise ValueError(f"hyperparameters: missing {key!r}")
    model = hyper.get("model")
    if model is None:
        if "phi" in hyper:
            model = "zoi_beta_binomial" if "det_share" in hyper else "beta_binomial"
        elif "sigma_cell" in hyper:
            model = "partial_pooling"
        else:
            raise ValueError(
                "hyperparameters: say which model they belong to (model=...), or give its cell parameters "
                "(phi [and det_share] for the Beta-Binomial models, sigma_cell for partial_pooling)"
            )
    family = get_family(str(model), dispersion=hyper.get("dispersion"))
    if not family.hierarchical:
        raise ValueError(f"the {family.name} model has no hyperparameters to plan with")
    what = {"phi": "phi (the within-cell concentration)", "det_share": "det_share (the always/never share)"}
    for key in family.planning_parameters:
        if key not in hyper:
            raise ValueError(f"hyperparameters for {family.name} need {what.get(key, key)}")
    # (name, lowest, lowest allowed, highest): every value finite, and in its range
    for key, low, closed, high in (("mu", -np.inf, True, np.inf), ("alpha", -np.inf, True, np.inf),
                                   ("sigma_task", 0.0, True, np.inf), ("sigma_cell", 0.0, True, np.inf),
                                   ("phi", 0.0, False, np.inf), ("det_share", 0.0, True, 1.0)):
        if key in hyper:
            _check_hyper(key, hyper[key], low, closed, high)
    return family, hyper


def _check_hyper(key: str, value: Any, low: float, closed: bool, high: float, prefix: str = "hyperparameters") -> None:
    """Refuse a hyperparameter (a number, or a dict agent -> number) that is not finite or not in its range."""
    items = value.items() if isinstance(value, dict) else [(None, value)]
    if low == -np.inf:
        allowed = "a finite number"
    elif high == np.inf:
        allowed = f"a finite number {'>=' if closed else '>'} {low:g}"
    else:
        allowed = f"in [{low:g}, {high:g}]"
    for agent, v in items:
        where = f"{prefix}: {key}" + (f"[{agent!r}]" if agent is not None else "")
        try:
            x = float(v)
        except (TypeError, ValueError):
            raise ValueError(f"{where} must be {allowed}, got {v!r}") from None
        if isinstance(v, bool) or not np.isfinite(x) or x < low or (not closed and x == low) or x > high:
            raise ValueError(f"{where} must be {allowed}, got {v!r}")


def _check_design(func: str, n_tasks: Any, n_trials: Any, k: Any, ci_prob: Any, n_sims: Any) -> None:
    """Refuse designs, k, ``ci_prob`` and ``n_sims`` out of range, naming the argument (``ValueError``)."""
    for name, values in (("n_tasks", n_tasks), ("n_trials", n_trials), ("k", k), ("n_sims", n_sims)):
        flat = np.atleast_1d(np.asarray(values, dtype=object)).ravel()
        if flat.size == 0:
            raise ValueError(f"{func}: {name} must be an integer >= 1 or a non-empty sequence of them, got {values!r}")
        for v in flat:
            ok = isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) and v >= 1
            if not ok:
                raise ValueError(f"{func}: {name} must be integers >= 1, got {v!r}")
    check_ci(ci_prob, "eti", func)


def _alpha(hyper: dict[str, Any], agent: str | None) -> float:
    alpha = hyper.get("alpha", 0.0)
    if isinstance(alpha, dict):
        if agent is None:
            return 0.0
        if agent not in alpha:
            raise ValueError(f"agent {agent!r} not in hyperparameters' alpha {sorted(alpha)}")
        return float(alpha[agent])
    return float(alpha)


def _as_list(x: Sequence[int] | int) -> list[int]:
    return [int(v) for v in np.atleast_1d(x)]


def _task_tables(family: ModelFamily, hyper: dict[str, Any], agent: str | None, effect: float, n: int, k: int):
    """Tables over the task-level Gauss-Hermite nodes: ``(weights, CellTables)`` for one agent."""
    x, w = gauss_hermite(_NODES)
    eta = float(hyper["mu"]) + effect + float(hyper["sigma_task"]) * x
    return w, family.cell_given_task(hyper, agent, eta, n, k)


def plan_interval_width(
    hyper: dict[str, Any] | Fit,
    n_tasks: Sequence[int] | int,
    n_trials: Sequence[int] | int,
    k: Sequence[int] | int = 1,
    *,
    agent: str | None = None,
    population: str = "observed",
    ci_prob: float = CI_PROB,
    n_sims: int = 400,
    random_seed: int = DEFAULT_SEED,
) -> pd.DataFrame:
    """Compute the expected credible-interval width of one agent's suite pass^k over a grid of designs.

    Method and assumptions in the module docstring (fixed hyperparameters, the fitted model's exact per-cell
    posteriors, normal approximation across tasks).

    Parameters
    ----------
    hyper : dict or Fit
        A hierarchical fit (posterior point values are used), or a dict with ``model`` (e.g. ``"zoi_beta_binomial"``),
        ``mu``, ``sigma_task``, ``alpha`` (float or dict agent -> float; logit scale) and the model's cell parameters
        (``phi``, ``det_share`` or ``sigma_cell``; floats or dicts agent -> float).
    n_tasks, n_trials : int or sequence of int
        Design grid: tasks in the suite and trials per task.
    k : int or sequence of int
    agent : str, optional
        Whose effect and dispersion to use when they are per agent (default: the average agent).
    population : {"observed", "new"}
    ci_prob : float
    n_sims : int
        Simulated datasets per design.
    random_seed : int

    Returns
    -------
    pandas.DataFrame
        Columns ``n_tasks, n_trials, k, population, expected_width, width_q10, width_q90, true_value``;
        ``true_value`` is the population pass^k E[p^k] implied by the hyperparameters.

    Raises
    ------
    ValueError
        On invalid or incomplete hyperparameters (the model's cell parameters are required; ``sigma_task``,
        ``sigma_cell`` >= 0, ``phi`` > 0, ``det_share`` in [0, 1], all finite), designs (``n_tasks``, ``n_trials``,
        ``k``, ``n_sims``: integers >= 1), ``ci_prob`` outside (0, 1) or ``population``.
    """
    if population not in ("observed", "new"):
        raise ValueError(f"plan_interval_width: population must be 'observed' or 'new', got {population!r}")
    _check_design("plan_interval_width", n_tasks, n_trials, k, ci_prob, n_sims)
    family, hyper = _resolve(hyper)
    effect = _alpha(hyper, agent)
    z = stats.norm.ppf(0.5 + ci_prob / 2)
    rng = np.random.default_rng(random_seed)
    rows = []
    for n in _as_list(n_trials):
        for kk in _as_list(k):
            w, tab = _task_tables(family, hyper, agent, effect, n, kk)
            joint = tab.lik * w  # (n + 1, nodes)
            marg = joint.sum(axis=1)
            e1 = (joint * tab.m1).sum(axis=1) / marg
            e2 = (joint * tab.m2).sum(axis=1) / marg
            v1 = np.maximum(e2 - e1**2, 0.0)
            prior_m = float(w @ tab.prior1)
            prior_v = max(float(w @ tab.prior2) - prior_m**2, 0.0)
            for t in _as_list(n_tasks):
                # counts per task are iid draws from the marginal P(c); a dataset is a multinomial of counts
                cnt = rng.multinomial(t, marg / marg.sum(), size=n_sims)
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
                        true_value=prior_m,
                    )
                )
    return pd.DataFrame(rows)


def plan_power(
    hyper: dict[str, Any] | Fit,
    n_tasks: Sequence[int] | int,
    n_trials: Sequence[int] | int,
    k: Sequence[int] | int = 1,
    *,
    agents: tuple[str, str] | None = None,
    alpha_diff: float | None = None,
    population: str = "observed",
    ci_prob: float = CI_PROB,
    n_sims: int = 400,
    random_seed: int = DEFAULT_SEED,
) -> pd.DataFrame:
    """Compute the power to detect that agent A's suite pass^k exceeds agent B's, over a grid of designs.

    Both agents run the same tasks (a shared task effect, each agent's own cell distribution). A simulated dataset
    "detects" the difference when the equal-tailed ``ci_prob`` credible interval of the difference lies above 0,
    by the normal approximation with the exact per-task conditional moments (module docstring; fixed
    hyperparameters).

    Parameters
    ----------
    hyper : dict or Fit
        As in :func:`plan_interval_width`.
    n_tasks, n_trials, k : int or sequence of int
    agents : (str, str), optional
        Agents A and B whose effects (and dispersions) are taken from the hyperparameters.
    alpha_diff : float, optional
        Alternatively, the logit-scale effect difference A - B (A at ``+alpha_diff/2``, B at ``-alpha_diff/2``
        around ``mu``; both with the average agent's dispersion).
    population : {"observed", "new"}
        The difference to detect. ``"observed"`` (as the fit's default): the difference on the tasks of the suite,
        ``mean_t (p_At^k - p_Bt^k)``. Each task's cells differ between the agents (each cell its own success
        probability), so the suite's difference is rarely 0 even when ``true_diff`` is, and a large suite resolves
        it: this power does not fall to ``(1 - ci_prob) / 2`` at ``true_diff = 0``. ``"new"``: the population
        difference ``true_diff`` on tasks like these; the between-task variance of ``p_A^k - p_B^k`` (shared task
        effect) over ``T`` tasks is added to the interval, as :func:`plan_interval_width` does. The simulated
        estimate itself is centred with the known hyperparameters (fixed, see the module docstring), so at
        ``true_diff = 0`` this power falls below ``(1 - ci_prob) / 2`` (conservative; checked in
        ``tests/test_planning.py`` for a Beta-Binomial design of 400 tasks) and a planned design errs on the side
        of more tasks.
    ci_prob : float
    n_sims : int
    random_seed : int

    Returns
    -------
    pandas.DataFrame
        Columns ``n_tasks, n_trials, k, population, true_diff, power, expected_width`` (``true_diff``: population
        E[p_A^k] - E[p_B^k]; ``expected_width``: mean credible-interval width of the difference for ``population``).

    Raises
    ------
    ValueError
        If neither or both of ``agents`` and ``alpha_diff`` are given, ``agents`` names one agent twice or agents
        not in the hyperparameters, or hyperparameters, designs, ``k``, ``ci_prob``, ``n_sims`` or ``population``
        are invalid (as in :func:`plan_interval_width`).
    """
    _check_design("plan_power", n_tasks, n_trials, k, ci_prob, n_sims)
    if population not in ("observed", "new"):
        raise ValueError(f"population must be 'observed' or 'new', got {population!r}")
    family, hyper = _resolve(hyper)
    if (agents is None) == (alpha_diff is None):
        raise ValueError("plan_power: give exactly one of agents=(A, B) or alpha_diff=")
    if agents is not None:
        if isinstance(agents, str) or len(agents) != 2:
            raise ValueError(f"plan_power: agents must be two agent names (A, B), got {agents!r}")
        if agents[0] == agents[1]:
            raise ValueError(f"plan_power: agents must be two different agents, got {agents[0]!r} twice")
        alpha = hyper.get("alpha", {})
        if not isinstance(alpha, dict) or any(a not in alpha for a in agents):
            raise ValueError(f"agents {agents} not in hyperparameters' alpha")
        who: tuple[str | None, str | None] = (agents[0], agents[1])
        effects = (float(alpha[agents[0]]), float(alpha[agents[1]]))
    else:
        _check_hyper("alpha_diff", alpha_diff, -np.inf, True, np.inf, prefix="plan_power")
        who = (None, None)
        effects = (float(alpha_diff) / 2.0, -float(alpha_diff) / 2.0)  # type: ignore[arg-type]
    z = stats.norm.ppf(0.5 + ci_prob / 2)
    rng = np.random.default_rng(random_seed)
    rows = []
    for n in _as_list(n_trials):
        for kk in _as_list(k):
            w, ta = _task_tables(family, hyper, who[0], effects[0], n, kk)
            _, tb = _task_tables(family, hyper, who[1], effects[1], n, kk)
            joint = ta.lik[:, None, :] * tb.lik[None, :, :] * w  # (nA + 1, nB + 1, nodes): shared task effect
            pj = joint.sum(-1)
            wj = joint / pj[..., None]
            e_d = (wj * (ta.m1[:, None, :] - tb.m1[None, :, :])).sum(-1)
            e_d2 = (wj * (ta.m2[:, None, :] - 2 * ta.m1[:, None, :] * tb.m1[None, :, :] + tb.m2[None, :, :])).sum(-1)
            v_d = np.maximum(e_d2 - e_d**2, 0.0)
            d_true = float(w @ (ta.prior1 - tb.prior1))
            # between-task variance of d = p_A^k - p_B^k (cells independent given the shared task effect)
            d_var = max(float(w @ (ta.prior2 - 2 * ta.prior1 * tb.prior1 + tb.prior2)) - d_true**2, 0.0)
            flat_p = (pj / pj.sum()).ravel()
            for t in _as_list(n_tasks):
                cnt = rng.multinomial(t, flat_p, size=n_sims)
                mean = cnt @ e_d.ravel() / t
                var = cnt @ v_d.ravel() / t**2
                if population == "new":
                    var = var + d_var / t
                sd = np.sqrt(var)
                rows.append(
                    dict(
                        n_tasks=t,
                        n_trials=n,
                        k=kk,
                        population=population,
                        true_diff=d_true,
                        power=float(((mean - z * sd) > 0).mean()),
                        expected_width=float((2 * z * sd).mean()),
                    )
                )
    return pd.DataFrame(rows)

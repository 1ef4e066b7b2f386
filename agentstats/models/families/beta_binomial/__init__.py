"""Crossed agent x task Beta-Binomial families: the per-cell term integrated out analytically.

Model (``beta_binomial``)::

    logit m[a, t] = mu + alpha[a] + beta[t]
    alpha ~ ZeroSumNormal(sigma_agent)    over agents
    beta  ~ ZeroSumNormal(sigma_task)     over tasks
    rho[a] in (0, 1)                      intra-cell correlation of agent a, phi[a] = (1 - rho[a]) / rho[a]
    p[a, t] ~ Beta(m phi[a], (1 - m) phi[a])   per cell (not sampled; see below)
    c[a, t] ~ BetaBinomial(n, m phi[a], (1 - m) phi[a])   for cells with n > 0

The cell's success probability varies around the additive prediction ``m`` with a Beta distribution of mean ``m``
and concentration ``phi``; two trials of one cell are correlated with ``rho = 1 / (1 + phi)`` (Skellam 1948, JRSS B
10(2); Williams 1975, Biometrics 31(4); BDA3 sec. 5.3). Integrating ``p`` out gives the Beta-Binomial likelihood,
so the sampler sees only agents + tasks parameters, not one latent per cell.

Dispersion (``dispersion``):

* ``"agent"`` (default): each agent has its own ``rho[a]``, pooled across agents,
  ``logit rho[a] = rho_mu + rho_sd * rho_z[a]`` (non-centred), so the model can say that one agent is more consistent
  than another and its pass^k for k beyond the observed trials follows the agent's own dispersion.
  ``parameterization={"dispersion": "centered"}`` samples ``rho_logit[a] ~ Normal(rho_mu, rho_sd)`` instead (also
  ``det_share`` with ``det_by_agent``): the same model, better mixing when every agent has many cells of several
  trials; :func:`dispersion_form` chooses it when every agent has many cells of 4+ trials (docs/models.md,
  "Centred dispersion").
* ``"shared"``: one ``rho ~ Beta(rho_a, rho_b)`` for all agents (kept for comparison).

Zero/one-inflated variant (``zoi_beta_binomial``)::

    p[a, t] = 1 with prob. det_share * m, 0 with prob. det_share * (1 - m),
              ~ Beta(m phi, (1 - m) phi) with prob. 1 - det_share

A deterministic cell always (prob. ``m``) or never succeeds; the cell mean stays ``m``. This is the zero-or-one
inflated Beta of Ospina & Ferrari (2012, Comput. Stat. Data Anal. 56(6), 1609-1623) with its inflation tied to the
cell mean, under the Binomial and marginalized per cell:
``det_share [m 1{c = n} + (1 - m) 1{c = 0}] + (1 - det_share) BetaBinomial(c | n, m phi, (1 - m) phi)``.
``det_share`` is shared by all agents unless ``det_by_agent=True`` (then pooled across agents like ``rho``).

Likelihood: an observed ``pm.CustomDist`` named ``c`` (dim ``cell``) with the log-pmf below and a random generator,
so PyMC's ``compute_log_likelihood`` (PSIS-LOO) and ``sample_posterior_predictive`` work on it. The log-pmf is
written with rising factorials (Pochhammer symbols, ``Gamma(x + j) / Gamma(x) = x (x + 1) ... (x + j - 1)``;
Abramowitz & Stegun 1964, 6.1.22)::

    log BB(c | n, a, b) = log C(n, c) + sum_{i<c} log(a + i) + sum_{j<n-c} log(b + j) - sum_{l<n} log(phi + l)

with ``a + b = phi``. When that is cheap (at most :data:`RISING_MAX_MEAN_TRIALS` trials per cell on average) the
log-pmf and its partial derivatives come from one pass over the cells
(:mod:`agentstats.models._bb_kernel`: the rising factorials as products with their derivatives by the product rule,
the inflation mixed in probability space; one ``exp``, one ``log`` and one division per cell: 0.57 ms a gradient
against 2.35 ms for the per-cell ``gammaln`` graph, 4.1x (3.4-4.5x over three runs), at 10 x 1,000 x 8 cells,
``benchmarks/bench_gradient.py``, docs/benchmarks.md);
otherwise with ``gammaln``, whose ``sum_{l<n} log(phi + l)``
term depends on the agent and ``n`` only and is computed once per (agent, distinct n) and gathered. ``log C(n, c)``
depends on the observed counts only: the kernel takes it, with the counts and trials, as shared variables computed once
(so a compiled model serves new data with the same cells, :func:`_kernel_data`); the ``gammaln`` form folds it into a
constant.

Per-cell ``p`` draws are exact given each posterior draw of the hyperparameters, from the conjugate conditional
``p[a, t] | c, m, phi ~ Beta(m phi + c, (1 - m) phi + n - c)`` (BDA3 sec. 2.4 / 5.3), after the deterministic
component has been drawn from its conditional probability for the inflated variant; cells with ``n = 0`` draw from
the prior. They are made on demand, block by block (:meth:`BetaBinomialFamily.cell_p`), never stored by default.

With a single agent the cell term is not identifiable from the task effect: ``rho`` and ``det_share`` are dropped
and the model is ``logit p[0, t] = mu + beta[t]`` with a Binomial likelihood.
"""

from agentstats.models.families.beta_binomial.family import (
    CENTERED_DISPERSION_DRAWS,
    CENTERED_DISPERSION_TUNE,
    DISPERSION_CENTERED_MIN_CELLS,
    DISPERSION_CENTERED_MIN_TRIALS,
    LARGE_CELLS,
    TARGET_ACCEPT,
    TARGET_ACCEPT_LARGE,
    BetaBinomialFamily,
    dispersion_form,
)
from agentstats.models.families.beta_binomial.likelihood import RISING_MAX_MEAN_TRIALS
from agentstats.models.families.beta_binomial.moments import (
    RISING_K_MAX,
    beta_binomial_logpmf,
    conditional_p,
    new_task_moments_beta,
)

__all__ = [
    "CENTERED_DISPERSION_DRAWS",
    "CENTERED_DISPERSION_TUNE",
    "DISPERSION_CENTERED_MIN_CELLS",
    "DISPERSION_CENTERED_MIN_TRIALS",
    "LARGE_CELLS",
    "RISING_K_MAX",
    "RISING_MAX_MEAN_TRIALS",
    "TARGET_ACCEPT",
    "TARGET_ACCEPT_LARGE",
    "BetaBinomialFamily",
    "beta_binomial_logpmf",
    "conditional_p",
    "dispersion_form",
    "new_task_moments_beta",
]

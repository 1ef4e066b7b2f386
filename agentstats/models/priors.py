"""All priors of the agentstats models, in one place.

Every model in :mod:`agentstats.models.builders` reads its priors from a :class:`Priors` instance; nothing else
in the package states a prior. Scales are on the logit scale of the per-trial success probability.

Rationale (weakly informative priors, Gelman et al. BDA3 ch. 5 and Gelman 2006 "Prior distributions for
variance parameters in hierarchical models", Bayesian Analysis 1(3))::

    mu          ~ Normal(0, 2)        suite-level intercept; Normal(0, 2) on the logit scale puts ~95 % of the
                                      prior mass on p in (0.02, 0.98) and is nearly flat on p in between.
    sigma_agent ~ HalfNormal(2)       spread of agent effects; agent suites differ a lot in public benchmarks
                                      (METR: success rates from ~0 to ~0.8), 2 keeps logit gaps of 4-5 plausible.
    sigma_task  ~ HalfNormal(2)       spread of task difficulty; benchmark suites hold tasks every agent solves and
                                      tasks none solves, i.e. logit spreads of 2-3 are typical.
    sigma_cell  ~ HalfNormal(1.5)     agent x task interaction (within-cell clustering); real runs show strong
                                      cell effects (one agent always solves a task a similar agent never does).
    rho         ~ Beta(1, 1)          beta_binomial model: intra-cell correlation of two trials of one (agent,
                                      task) cell, rho = 1 / (1 + phi) with phi the concentration of the cell's
                                      Beta(m phi, (1 - m) phi). Uniform on (0, 1): real suites range from near
                                      coin-flip cells (rho ~ 0) to all-or-nothing cells (rho near 1, METR runs),
                                      and ~2 trials per cell inform rho directly through within-cell agreement.
                                      Uniform on rho puts density 1 / (1 + phi)^2 on phi (Williams 1975,
                                      Biometrics 31(4); BDA3 sec. 5.3 uses a similar diffuse prior on the scale).
    det_share   ~ Beta(1, 1)          zoi_beta_binomial model: share of deterministic cells (p exactly 0 or 1;
                                      given deterministic, p = 1 with probability m, so the cell mean stays m).
                                      Uniform: suites range from none (sampled agents at temperature > 0 on
                                      graded tasks) to many (METR: 63 % of the 542 cells with >= 8 runs
                                      always or never succeed). With 2 trials per cell it is not separable from
                                      rho (both only thin out the 1-of-2 cells), so there the prior spreads
                                      the posterior along that ridge; 3+ trials per cell identify it.
    no pooling: p[a, t] ~ Beta(a0, b0) independently, default Beta(1, 1) (uniform), the closed form of
                                      Beta-Binomial conjugacy (BDA3 sec. 2.4).

Prior predictive consequence: with these scales the implied prior on a cell's p is U-shaped but not degenerate,
which matches real agent suites (most cells always or never succeed, some flip).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

__all__ = ["DEFAULT_PRIORS", "Priors"]


@dataclass(frozen=True)
class Priors:
    """Prior scales of the hierarchical models (logit scale) and the Beta prior of the no-pooling model.

    Parameters
    ----------
    mu_mu, mu_sigma : float
        ``mu ~ Normal(mu_mu, mu_sigma)``.
    sigma_agent, sigma_task, sigma_cell : float
        Scales of the half-normal priors of the agent, task and cell (agent x task) standard deviations.
    beta_a, beta_b : float
        ``p[a, t] ~ Beta(beta_a, beta_b)`` in the no-pooling model.
    rho_a, rho_b : float
        ``rho ~ Beta(rho_a, rho_b)``, the intra-cell correlation of the ``beta_binomial`` model.
    det_a, det_b : float
        ``det_share ~ Beta(det_a, det_b)``, the share of deterministic cells of the ``zoi_beta_binomial`` model.

    Raises
    ------
    ValueError
        If a scale or Beta parameter is not positive.
    """

    mu_mu: float = 0.0
    mu_sigma: float = 2.0
    sigma_agent: float = 2.0
    sigma_task: float = 2.0
    sigma_cell: float = 1.5
    beta_a: float = 1.0
    beta_b: float = 1.0
    rho_a: float = 1.0
    rho_b: float = 1.0
    det_a: float = 1.0
    det_b: float = 1.0

    def __post_init__(self) -> None:
        for name in ("mu_sigma", "sigma_agent", "sigma_task", "sigma_cell", "beta_a", "beta_b", "rho_a", "rho_b",
                     "det_a", "det_b"):
            value = getattr(self, name)
            if not value > 0:
                raise ValueError(f"Priors.{name} must be > 0, got {value!r}")

    def as_dict(self) -> dict[str, float]:
        """Plain dict of the fields (recorded in a fit's attributes)."""
        return {k: float(v) for k, v in asdict(self).items()}


#: The default priors used by every builder unless ``priors=`` is given.
DEFAULT_PRIORS = Priors()

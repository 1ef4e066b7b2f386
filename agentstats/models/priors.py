"""All priors of the agentstats models, in one place.

Every model family (:mod:`agentstats.models.families.base`) reads its priors from a :class:`Priors` instance; nothing
else in the package states a prior. Scales are on the logit scale of the per-trial success probability.

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
    per-agent dispersion (``dispersion="agent"``, the default; the shared form is ``dispersion="shared"``):
    logit rho[a]       = rho_mu + rho_sd * z[a],  rho_mu ~ Normal(0, 1.5), rho_sd ~ HalfNormal(1),  z ~ N(0, 1)
    logit det_share[a] = det_mu + det_sd * z'[a], det_mu ~ Normal(0, 1.5), det_sd ~ HalfNormal(1)   (zoi model)
    log sigma_cell[a]  = cell_mu + cell_sd * z''[a], cell_mu ~ Normal(0, 1), cell_sd ~ HalfNormal(0.5) (logit-normal)
                                      Normal(0, 1.5) on the logit scale is close to the Beta(1, 1) of the shared
                                      form (a standard logistic has sd 1.8) without its heavy tails; an agent
                                      spread of sd 1 on the logit scale lets one agent have rho 0.2 and another
                                      0.8 (the range seen across agents on real suites) while pooling agents with
                                      few tasks towards the others (Gelman 2006 for half-normal scales).
    no pooling: p[a, t] ~ Beta(a0, b0) independently, default Beta(1, 1) (uniform), the closed form of
                                      Beta-Binomial conjugacy (BDA3 sec. 2.4).

Prior predictive consequence: with these scales the implied prior on a cell's p is U-shaped but not degenerate,
which matches real agent suites (most cells always or never succeed, some flip).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

__all__ = ["DEFAULT_PRIORS", "Priors", "as_priors"]


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
    rho_mu_sd, rho_sd : float
        Per-agent dispersion: ``logit rho[a] ~ Normal(rho_mu, rho_sd_a)`` with ``rho_mu ~ Normal(0, rho_mu_sd)`` and
        ``rho_sd_a ~ HalfNormal(rho_sd)``.
    det_mu_sd, det_sd : float
        The same for ``logit det_share[a]`` (``zoi_beta_binomial`` with ``dispersion="agent"``).
    cell_mu_sd, cell_sd : float
        Per-agent cell scale of the logit-normal models: ``log sigma_cell[a] ~ Normal(cell_mu, cell_sd_a)``,
        ``cell_mu ~ Normal(0, cell_mu_sd)``, ``cell_sd_a ~ HalfNormal(cell_sd)``.

    Every value is stored as a Python float (float64 in PyTensor): integer priors such as ``Priors(beta_a=100,
    beta_b=100)`` give the same log-probabilities as their float spellings (an integer constant would be stored as a
    small integer type whose sums overflow).

    Raises
    ------
    ValueError
        If a scale or Beta parameter is not a finite positive number, or a location is not finite.
    TypeError
        If a value is not a real number.
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
    rho_mu_sd: float = 1.5
    rho_sd: float = 1.0
    det_mu_sd: float = 1.5
    det_sd: float = 1.0
    cell_mu_sd: float = 1.0
    cell_sd: float = 0.5

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise TypeError(f"Priors.{f.name} must be a real number, got {value!r}")
            value = float(value)
            if not math.isfinite(value) or (f.name != "mu_mu" and value <= 0):
                raise ValueError(
                    f"Priors.{f.name} must be {'finite' if f.name == 'mu_mu' else 'a finite number > 0'}, got {value!r}"
                )
            object.__setattr__(self, f.name, value)  # frozen dataclass: cast ints to float64 once

    def as_dict(self) -> dict[str, float]:
        """Plain dict of the fields (recorded in a fit's attributes)."""
        return {k: float(v) for k, v in asdict(self).items()}


#: The default priors used by every builder unless ``priors=`` is given.
DEFAULT_PRIORS = Priors()


def as_priors(priors: Any, func: str = "fit") -> Priors:
    """Return ``priors`` as :class:`Priors`: itself, ``Priors(**priors)`` for a mapping, the defaults for ``None``.

    A mapping sets the fields it names and keeps the defaults of the others (``{"sigma_task": 1.0}``); its values are
    checked as :class:`Priors` checks them.

    Parameters
    ----------
    priors : Priors, mapping of str to float, or None
    func : str
        The public function called (named in the messages).

    Returns
    -------
    Priors

    Raises
    ------
    TypeError
        For anything else (naming its type), or a value that is not a real number.
    ValueError
        For a mapping key that is not a field of :class:`Priors` (listing the fields), or a value out of range.
    """
    if priors is None:
        return DEFAULT_PRIORS
    if isinstance(priors, Priors):
        return priors
    if isinstance(priors, Mapping):
        names = [f.name for f in fields(Priors)]
        unknown = sorted(str(k) for k in priors if k not in names)
        if unknown:
            raise ValueError(f"{func}: priors has unknown field(s) {unknown}; the fields of Priors are {names}")
        return Priors(**priors)
    raise TypeError(
        f"{func}: priors must be an agentstats.Priors (or a mapping of its fields), got {type(priors).__name__} "
        f"{priors!r:.60}"
    )

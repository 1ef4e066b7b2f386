"""Independent oracles of the Dirichlet-process posteriors (``agentstats.estimators.dirichlet``), by quadrature.

The paired difference of a binary metric is ``p10 - p01`` of Dirichlet(n00, n01 + a, n10 + a, n11); its tail
probability is a one-dimensional integral over Beta marginals (aggregation and stick-breaking properties of the
Dirichlet), computed with ``scipy.integrate.quad``, independently of the package's Monte Carlo.
"""

from __future__ import annotations

from scipy import integrate, stats


def p_diff_below(n00: int, n01: int, n10: int, n11: int, tol: float, a: float = 1.0) -> float:
    """P(p10 - p01 < -tol) under Dirichlet(n00, n01 + a, n10 + a, n11), by quadrature.

    p01 ~ Beta(a01, rest); given p01, p10 / (1 - p01) ~ Beta(a10, a00 + a11).
    """
    a00, a01, a10, a11 = n00, n01 + a, n10 + a, n11
    f01 = stats.beta(a01, a00 + a10 + a11)
    cond = stats.beta(a10, a00 + a11)

    def integrand(p01: float) -> float:
        return f01.pdf(p01) * cond.cdf((p01 - tol) / (1 - p01))

    val, _ = integrate.quad(integrand, tol, 1, limit=200)
    return val

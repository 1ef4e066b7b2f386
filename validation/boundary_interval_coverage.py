"""Coverage near 0 and 1: which interval to use at the boundary, and what suite_pass_k achieves there.

Run:  .venv/bin/python validation/boundary_interval_coverage.py [--reps 1000]

Part 1 (exact, no simulation): for 0/1 per-task values the success mass is Binomial(T, mu); the coverage of an
interval method at ``mu`` is ``sum_x pmf(x) [mu in CI(x)]``. Printed: the smallest coverage over ``mu`` in (0, 0.2]
(a grid of 4,000 points) for Wilson's score interval, Jeffreys' interval (with the usual 0 / 1 limits at x = 0 / T)
and Clopper-Pearson, at 95%. By symmetry the same holds on [0.8, 1).

Part 2 (simulation, seeded): data sets of T tasks x n trials with every task's success probability ``p`` (so the truth
is exact) or ``p_t ~ Beta`` (truth = the Beta mean), per-task values from the unbiased estimators (fractional for
n > 1); coverage of ``suite_pass_k``'s interval (bootstrap, with the Clopper-Pearson interval at the boundary) against
the plain percentile bootstrap on the same data.

docs/estimators.md quotes the tables this prints.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd
from scipy import stats

from agentstats.estimators import clopper_pearson_interval, pass_at_k, pass_hat_k, suite_pass_k
from agentstats.estimators.bootstrap import bootstrap_means, percentile_interval


def wilson(x: np.ndarray, t: int, prob: float) -> tuple[np.ndarray, np.ndarray]:
    z = stats.norm.isf((1 - prob) / 2)
    m = x / t
    den = 1 + z * z / t
    center = (m + z * z / (2 * t)) / den
    half = z / den * np.sqrt(m * (1 - m) / t + z * z / (4 * t * t))
    return center - half, center + half


def jeffreys(x: np.ndarray, t: int, prob: float) -> tuple[np.ndarray, np.ndarray]:
    a = (1 - prob) / 2
    lo = np.where(x == 0, 0.0, stats.beta.ppf(a, x + 0.5, t - x + 0.5))
    hi = np.where(x == t, 1.0, stats.beta.isf(a, x + 0.5, t - x + 0.5))
    return lo, hi


def exact_part(prob: float = 0.95) -> None:
    mus = np.linspace(2e-4, 0.2, 4000)
    print(f"Exact coverage of {prob:.0%} intervals for a proportion, smallest over mu in (0, 0.2]:\n")
    print("| T | Wilson | Jeffreys | Clopper-Pearson |")
    print("|---|---|---|---|")
    for t in (5, 10, 20, 30, 50):
        x = np.arange(t + 1)
        pmf = stats.binom.pmf(x[None, :], t, mus[:, None])
        cells = []
        for method in (wilson, jeffreys, lambda xx, tt, pp: clopper_pearson_interval(xx / tt, tt, pp)):
            lo, hi = method(x, t, prob)
            inside = (lo[None, :] <= mus[:, None]) & (mus[:, None] <= hi[None, :])
            cov = (pmf * inside).sum(axis=1)
            i = int(np.argmin(cov))
            cells.append(f"{cov[i]:.3f} (mu = {mus[i]:.3f})")
        print(f"| {t} | " + " | ".join(cells) + " |")
    print()


def simulation_part(reps: int, seed: int) -> None:
    settings = [
        # label, task probabilities, T, n, k, quantity, truth
        ("p = 0.01", lambda rng, size: np.full(size, 0.01), 10, 5, 1, "pass_at_k", 0.01),
        ("p = 0.01", lambda rng, size: np.full(size, 0.01), 30, 1, 1, "pass_at_k", 0.01),
        ("p = 0.03", lambda rng, size: np.full(size, 0.03), 30, 5, 1, "pass_at_k", 0.03),
        ("p_t ~ Beta(0.3, 6)", lambda rng, size: rng.beta(0.3, 6, size), 30, 5, 1, "pass_at_k", 0.3 / 6.3),
        ("p = 0.99", lambda rng, size: np.full(size, 0.99), 10, 5, 5, "pass_hat_k", 0.99**5),
        ("p = 0.5", lambda rng, size: np.full(size, 0.5), 10, 8, 8, "pass_at_k", 1 - 0.5**8),
        ("p_t ~ Beta(6, 0.3)", lambda rng, size: rng.beta(6, 0.3, size), 30, 5, 1, "pass_hat_k", 6 / 6.3),
        ("p_t ~ Beta(2, 2)", lambda rng, size: rng.beta(2, 2, size), 30, 5, 1, "pass_hat_k", 0.5),
    ]
    print(f"Coverage of 95% intervals over {reps} simulated data sets each (seed {seed}):\n")
    print("| tasks x trials | truth | k, quantity | suite_pass_k | share with the boundary interval | "
          "plain percentile bootstrap |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    rng = np.random.default_rng(seed)
    for label, draw, t, n, k, quantity, truth in settings:
        p = draw(rng, (reps, t))
        c = rng.binomial(n, p)
        counts = pd.DataFrame({"agent": np.repeat(np.arange(reps).astype(str), t),
                               "task_id": np.tile(np.arange(t).astype(str), reps), "n": n, "c": c.ravel()})  # fmt: skip
        out = suite_pass_k(counts, k=[k], n_boot=1000, random_seed=seed)
        lo, hi = out[f"{quantity}_ci_low"].to_numpy(), out[f"{quantity}_ci_high"].to_numpy()
        cov = np.mean((lo <= truth) & (truth <= hi))
        share = np.mean(out[f"{quantity}_ci_method"] == "Clopper-Pearson")
        f = pass_at_k if quantity == "pass_at_k" else pass_hat_k
        boot = 0
        for r in range(reps):
            v = np.asarray(f(np.full(t, n), c[r], k))[:, None]
            b_lo, b_hi = percentile_interval(bootstrap_means(v, 1000, np.random.default_rng([seed, r])), 0.95)
            boot += bool(b_lo[0] <= truth <= b_hi[0])
        print(f"| {t} x {n}, {label} | {truth:.4f} | {k}, {quantity} | {cov:.3f} | {share:.2f} | {boot / reps:.3f} |")
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    exact_part()
    simulation_part(args.reps, args.seed)


if __name__ == "__main__":
    main()

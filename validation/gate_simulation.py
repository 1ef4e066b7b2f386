"""Error rates of the release gate against the published point-score gate, on simulated candidate/baseline pairs.

Run:  OPENBLAS_NUM_THREADS=1 taskset -c 1 .venv/bin/python validation/gate_simulation.py [--quick] [--reps 1000]
      (``--prior-check``: only the comparison of the paired difference's prior with Jeffreys', 3,000 sets per n)

Each simulated eval set has ``n`` examples; example ``i`` has a baseline success probability ``p_i ~ Beta(mu k,
(1 - mu) k)`` (examples differ in difficulty, ``k = 2``) and a candidate probability ``expit(logit(p_i) + beta_i)``
with the shift ``beta`` chosen (by root finding on 200,000 draws of ``p``) so that the population mean difference is
exactly the scenario's ``delta``; each system is run once per example (one Bernoulli trial each). Both gates see
the same data, with threshold 0.6 on the metric and tolerance 0.05:

* agentstats: :func:`agentstats.gating.gate` with default decision probabilities (PASS needs
  ``P(mean >= 0.6) >= 0.95`` and ``P(diff < -0.05) <= 0.05``; FAIL when ``P(diff < -0.05) >= 0.95`` or
  ``P(mean >= 0.6) <= 0.05``; RETRY otherwise).
* point-score gate: PASS when the candidate's observed mean >= 0.6 and ``baseline - candidate <= 0.05``, FAIL
  otherwise (its RETRY, "revise and run again", is not a release either).

Scenarios: no true difference (a FAIL is an error), a true regression of exactly the tolerance and of twice it (a
PASS is an error), a true 10-point improvement (a PASS is right), and a regression confined to the 20 % high-risk
examples (0.25 worse there, better elsewhere so that the overall mean is flat: a PASS is an error). The results
table goes into docs/gate.md (between its markers) and validation/results/gate_simulation.csv.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import optimize, special

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _docs import ROOT, md_table, write_block

from agentstats.gating import GateConfig, gate

THRESHOLD, TOL, MU, KAPPA = 0.6, 0.05, 0.75, 2.0


def shift_for(delta: float, p: np.ndarray) -> float:
    """Logit shift that moves the population mean of ``p`` by ``delta``."""
    if delta == 0:
        return 0.0
    return float(optimize.brentq(lambda b: special.expit(special.logit(p) + b).mean() - p.mean() - delta, -20, 20))


def simulate(n: int, beta: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """One eval set: candidate and baseline 0/1 outcomes per example."""
    p = np.clip(rng.beta(MU * KAPPA, (1 - MU) * KAPPA, size=n), 1e-9, 1 - 1e-9)
    q = special.expit(special.logit(p) + beta)
    return (rng.random(n) < q).astype(int), (rng.random(n) < p).astype(int)


def records(values: np.ndarray, risk: list[str] | None) -> pd.DataFrame:
    df = pd.DataFrame({"id": [f"q{i}" for i in range(len(values))], "metric": "acc", "value": values.astype(float)})
    if risk is not None:
        df["risk_level"] = risk
    return df


def point_gate(cand: np.ndarray, base: np.ndarray) -> str:
    return "PASS" if cand.mean() >= THRESHOLD and base.mean() - cand.mean() <= TOL else "FAIL"


def prior_check(reps: int, seed: int) -> str:
    """PASS rate of the regression check alone at a true regression of exactly the tolerance, for two priors.

    The gate's prior (mass 1 on each discordant cell of the paired 2 x 2 table) against Jeffreys' (1/2 in every
    cell), on the same simulated sets; each check uses 2,000 posterior draws as the gate does by default here.
    """
    from agentstats.estimators.dirichlet import _weighted_means

    rng = np.random.default_rng(seed)
    pop = np.clip(rng.beta(MU * KAPPA, (1 - MU) * KAPPA, size=200_000), 1e-9, 1 - 1e-9)
    corners = np.array([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
    priors = {"discordant cells, 1 each (the gate)": [0.0, 1.0, 1.0, 0.0], "Jeffreys, 1/2 each": [0.5] * 4}
    lines = ["| n | prior | PASS rate at regression = tolerance |", "|---|---|---|"]
    for n in (30, 100):
        beta = np.full(n, shift_for(-TOL, pop))
        sets = [simulate(n, beta, rng) for _ in range(reps)]
        for name, mass in priors.items():
            passed = 0
            for r, (c, b) in enumerate(sets):
                uniq, counts = np.unique(np.column_stack([c, b]).astype(float), axis=0, return_counts=True)
                atoms = np.concatenate([uniq, corners])
                alpha = np.concatenate([counts.astype(float), mass])
                m = _weighted_means(alpha, atoms, 2000, np.random.default_rng(r))
                passed += float(((m[:, 0] - m[:, 1]) < -TOL).mean()) <= 0.05
            lines.append(f"| {n} | {name} | {passed / reps:.3f} |")
            print(lines[-1], flush=True)
    return f"{reps} simulated sets per n (seed {seed}).\n\n" + "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--quick", action="store_true", help="100 repetitions, n = 30 and 100 only")
    ap.add_argument("--seed", type=int, default=20261201)
    ap.add_argument("--no-docs", action="store_true", help="print only; do not write docs/gate.md")
    ap.add_argument("--prior-check", action="store_true", help="only the prior comparison (3,000 sets per n)")
    args = ap.parse_args(argv)
    if args.prior_check:
        body = prior_check(3000, args.seed)
        print(body)
        if not args.no_docs:
            write_block(ROOT / "docs" / "gate.md", "gate_prior_check", body, "## Simulation check")
        return
    reps = 100 if args.quick else args.reps
    sizes = (30, 100) if args.quick else (30, 50, 100, 200)
    rng = np.random.default_rng(args.seed)
    pop = np.clip(rng.beta(MU * KAPPA, (1 - MU) * KAPPA, size=200_000), 1e-9, 1 - 1e-9)
    cfg = GateConfig(thresholds={"acc": THRESHOLD}, regression_tolerance=TOL, n_draws=2000)
    scenarios = [
        ("no change", 0.0, "FAIL"),
        ("regression = tolerance", -TOL, "PASS"),
        ("regression = 2 x tolerance", -2 * TOL, "PASS"),
        ("10-point improvement", 0.10, "PASS (right)"),
        ("high-risk only regression", None, "PASS"),
    ]
    rows = []
    t0 = time.perf_counter()
    for name, delta, error in scenarios:
        for n in sizes:
            if delta is None:
                n_high = n // 5
                risk = ["high"] * n_high + ["low"] * (n - n_high)
                b_high = shift_for(-0.25, pop)
                b_low = shift_for(0.25 * n_high / (n - n_high), pop)
                beta = np.array([b_high] * n_high + [b_low] * (n - n_high))
                cfg_s = cfg
            else:
                risk = None
                beta = np.full(n, shift_for(delta, pop))
                cfg_s = cfg
            ours = {"PASS": 0, "FAIL": 0, "RETRY": 0}
            point = {"PASS": 0, "FAIL": 0}
            for r in range(reps):
                c, b = simulate(n, beta, rng)
                d = gate(records(c, risk), records(b, risk), cfg_s.model_copy(update={"random_seed": r}))
                ours[d.decision] += 1
                point[point_gate(c, b)] += 1
            rows.append(
                {
                    "scenario": name,
                    "n": n,
                    "error is": error,
                    "agentstats PASS": ours["PASS"] / reps,
                    "agentstats FAIL": ours["FAIL"] / reps,
                    "agentstats RETRY": ours["RETRY"] / reps,
                    "point-score PASS": point["PASS"] / reps,
                    "point-score FAIL": point["FAIL"] / reps,
                }
            )
            print(rows[-1], f"({time.perf_counter() - t0:.0f} s)", flush=True)
    table = pd.DataFrame(rows)
    body = (
        f"{reps} simulated eval sets per row (seed {args.seed}); threshold {THRESHOLD}, tolerance {TOL}, baseline "
        f"mean {MU}; {time.perf_counter() - t0:.0f} s on one core.\n\n" + md_table(table, ".3f")
    )
    print(body)
    if not args.no_docs:
        out = ROOT / "validation" / "results"
        out.mkdir(exist_ok=True)
        table.to_csv(out / "gate_simulation.csv", index=False)
        write_block(ROOT / "docs" / "gate.md", "gate_simulation", body, "## Simulation check")


if __name__ == "__main__":
    main()

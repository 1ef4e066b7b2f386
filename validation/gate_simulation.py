"""Error rates of the release gate against the published point-score gate, on simulated candidate/baseline pairs.

Run:  OPENBLAS_NUM_THREADS=1 taskset -c 1 .venv/bin/python validation/gate_simulation.py [--quick] [--reps 1000]
      [--executor process --workers 2]
      (``--prior-check``: only the comparison of the paired difference's prior with Jeffreys', 3,000 sets per n;
      ``--family``: only the family-wise scenario; ``--looks``: only the repeated-look scenario; each ``--reps`` sets)

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

The eval sets are drawn in this process, one random stream as before; the gate decisions on them (the work) run
where ``--executor`` says (``local``, ``process`` with ``--workers``, ``ray`` with ``--address``;
:func:`agentstats.parallel.resolve_executor`), in chunks of sets, each decision seeded by its set's index, so every
executor gives the same table (the main table and the family-wise scenario; the repeated looks run here).

Two scenarios of the way the gate is used (issue 31), each with its own table in docs/gate.md:

* family-wise (:func:`family_scenario`): an unchanged candidate on 8 metrics x 3 risk levels, 120 examples; a FAIL
  is an error (goal: at most 5 %).
* repeated looks (:func:`looks_scenario`): start at 30 examples and follow RETRY's "N more examples" up to 10 looks,
  passing each record to the next look (the error-spending plan); at a regression of exactly the tolerance a PASS
  at any look is an error (goal: at most 5 %), at a true 10-point improvement a PASS is right (goal: at least 80 %).
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import optimize, special

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _docs import ROOT, md_table, write_block

from agentstats.gating import GateConfig, gate
from agentstats.parallel import EXECUTOR_NAMES, chunk_slices, executor_workers, map_ordered, resolve_executor

THRESHOLD, TOL, MU, KAPPA = 0.6, 0.05, 0.75, 2.0
START_N, MAX_LOOKS, POOL_N = 30, 10, 2000


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


def _decide(task: tuple[list[tuple[int, Any, Any]], GateConfig]) -> list[Any]:
    """Gate decisions of one chunk of sets (in a worker): ``(set index, candidate, baseline)`` -> the decision,
    with the set's index as the gate's seed."""
    sets, cfg = task
    return [gate(c, b, cfg.model_copy(update={"random_seed": r})) for r, c, b in sets]


def decide_all(sets: list[tuple[Any, Any]], cfg: GateConfig, ex: Any) -> list[Any]:
    """The gate's decision on every set, set ``r`` seeded with ``r``, on the executor ``ex``, in order."""
    indexed = [(r, c, b) for r, (c, b) in enumerate(sets)]
    chunks = [(indexed[s], cfg) for s in chunk_slices(len(sets), executor_workers(ex), max(1, len(sets) // 8))]
    return [d for part in map_ordered(_decide, chunks, ex) for d in part]


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


def family_scenario(reps: int, seed: int, ex: Any = None) -> tuple[pd.DataFrame, float]:
    """The family-wise scenario: an unchanged candidate on 8 binary metrics x 3 risk levels, 120 examples.

    Each metric has its own example difficulties and outcomes (independent metrics: the most checks that can fail
    by chance); thresholds 0.6 and tolerance 0.05 on every metric, so a decision has 8 threshold checks and 32
    regression checks (all examples and each of 3 risk levels). The gate decides with its defaults (Holm's
    step-down over the 40 checks, a first look); "per-check rule" is the rule before family-wise control on the same
    checks (FAIL when any check alone has ``P(mean >= 0.6) <= 0.05`` or ``P(diff < -0.05) >= 0.95``).
    """
    n, n_metrics = 120, 8
    risk = ["low", "medium", "high"] * (n // 3)
    metrics = [f"m{j}" for j in range(n_metrics)]
    cfg = GateConfig(thresholds=dict.fromkeys(metrics, THRESHOLD), regression_tolerance=TOL, n_draws=2000)
    rng = np.random.default_rng(seed)
    counts = {"PASS": 0, "FAIL": 0, "RETRY": 0}
    per_check_fail, family = 0, set()
    t0 = time.perf_counter()
    sets = []
    for _ in range(reps):
        c, b = zip(*(simulate(n, np.zeros(n), rng) for _ in metrics), strict=True)
        side = [[{"id": f"q{i}", "risk_level": risk[i], "scores": {m: float(v[j][i]) for j, m in enumerate(metrics)}}
                 for i in range(n)] for v in (c, b)]
        sets.append((side[0], side[1]))
    for r, d in enumerate(decide_all(sets, cfg, ex)):
        counts[d.decision] += 1
        family.add(d.family_size)
        per_check_fail += any((k.kind == "threshold" and k.probability <= 0.05)
                              or (k.kind == "regression" and k.probability >= 0.95) for k in d.checks)
        if (r + 1) % 100 == 0:
            print(f"family: {r + 1} sets, FAIL {counts['FAIL']}, per-check FAIL {per_check_fail} "
                  f"({time.perf_counter() - t0:.0f} s)", flush=True)
    row = {"scenario": "unchanged, 8 metrics x 3 risk levels, 120 examples", "checks in the family": max(family),
           "gate FAIL (error)": counts["FAIL"] / reps, "gate PASS": counts["PASS"] / reps,
           "gate RETRY": counts["RETRY"] / reps, "per-check rule FAIL (error)": per_check_fail / reps}
    return pd.DataFrame([row]), time.perf_counter() - t0


def _next_n(d: object, n: int) -> int:
    """How many examples RETRY asks for next: the most any undecided check needs (double when none says)."""
    more = [c.more_examples for c in d.checks if c.state == "undecided" and c.more_examples]
    return n + (max(more) if more else n)


def looks_workflow(c: np.ndarray, b: np.ndarray, cfg: GateConfig, spend: bool, double: bool
                   ) -> tuple[str, int, int]:
    """Follow RETRY on one pool of examples: gate the first 30, add what RETRY asks for, gate again, ... up to
    ``MAX_LOOKS`` looks or the pool's end. ``spend``: pass the previous record (the error-spending plan); otherwise
    every look is a fresh single look at the full levels (``max_looks: 1``), as the gate was used before.
    ``double``: add at most as many examples as there are (more looks, each smaller).
    Returns the last decision, the looks taken and the examples used."""
    n, previous, looks = START_N, None, 0
    fresh = cfg.model_copy(update={"max_looks": 1})
    while True:
        looks += 1
        if spend:
            d = gate(_rows(c[:n]), _rows(b[:n]), cfg, previous=previous)
            previous = d.to_record()
        else:
            d = gate(_rows(c[:n]), _rows(b[:n]), fresh)
        if d.decision != "RETRY" or looks == MAX_LOOKS or n >= len(c):
            return d.decision, looks, n
        n = min(_next_n(d, n), 2 * n if double else len(c), len(c))


def _rows(values: np.ndarray) -> list[dict[str, object]]:
    """Score records of one metric ``acc`` (a list of mappings: cheaper to read than a DataFrame at 2,000 rows)."""
    return [{"id": f"q{i}", "metric": "acc", "value": float(v)} for i, v in enumerate(values)]


def looks_scenario(reps: int, seed: int, reps_before: int = 100) -> tuple[pd.DataFrame, float]:
    """The repeated-look scenario (module docstring): the spending plan on ``reps`` pools of examples per scenario;
    the old use (each look alone) on the first ``reps_before`` of the same pools, adding what RETRY asks for."""
    rng = np.random.default_rng(seed)
    pop = np.clip(rng.beta(MU * KAPPA, (1 - MU) * KAPPA, size=200_000), 1e-9, 1 - 1e-9)
    cfg = GateConfig(thresholds={"acc": THRESHOLD}, regression_tolerance=TOL, n_draws=2000)
    rows = []
    t0 = time.perf_counter()
    scenarios = (("regression = tolerance", -TOL, "PASS", (False, True)),
                 ("10-point improvement", 0.10, "PASS (right)", (False,)))
    for name, delta, error, follows in scenarios:
        beta = np.full(POOL_N, shift_for(delta, pop))
        pools = [simulate(POOL_N, beta, rng) for _ in range(reps)]
        for double, (spend, label) in itertools.product(
                follows, ((True, "spending plan (--previous)"), (False, "each look alone (before)"))):
            if double and not spend:
                continue
            used = pools if spend else pools[:reps_before]
            out = [looks_workflow(c, b, cfg, spend, double) for c, b in used]
            dec = pd.Series([o[0] for o in out])
            rows.append({"scenario": name, "workflow": label, "sets": len(used),
                         "adds": "at most doubling" if double else "as RETRY says", "error is": error,
                         "PASS": float((dec == "PASS").mean()), "FAIL": float((dec == "FAIL").mean()),
                         "RETRY at the end": float((dec == "RETRY").mean()),
                         "mean looks": float(np.mean([o[1] for o in out])),
                         "median examples": float(np.median([o[2] for o in out]))})
            print(rows[-1], f"({time.perf_counter() - t0:.0f} s)", flush=True)
    return pd.DataFrame(rows), time.perf_counter() - t0


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--quick", action="store_true", help="100 repetitions, n = 30 and 100 only")
    ap.add_argument("--seed", type=int, default=20261201)
    ap.add_argument("--no-docs", action="store_true", help="print only; do not write docs/gate.md")
    ap.add_argument("--prior-check", action="store_true", help="only the prior comparison (3,000 sets per n)")
    ap.add_argument("--family", action="store_true", help="only the family-wise scenario (--reps sets)")
    ap.add_argument("--looks", action="store_true", help="only the repeated-look scenario (--reps pools)")
    ap.add_argument("--executor", choices=EXECUTOR_NAMES, default="local",
                    help="where the gate decisions run: here, a process pool, a Ray cluster")
    ap.add_argument("--workers", type=int, default=None, help="processes of --executor process (default: every CPU)")
    ap.add_argument("--address", default=None, help="Ray cluster of --executor ray (default: running, else local)")
    args = ap.parse_args(argv)
    with resolve_executor(args.executor, workers=args.workers, address=args.address) as ex:
        _main(args, ex)


def _main(args: argparse.Namespace, ex: Any) -> None:
    if args.family or args.looks:
        if args.family:
            name, (table, secs) = "gate_family", family_scenario(args.reps, args.seed, ex)
        else:
            name, (table, secs) = "gate_looks", looks_scenario(args.reps, args.seed)
        sets = f"{args.reps} simulated sets" + (" per scenario (the old use: the first 100)" if args.looks else "")
        body = (f"{sets} (seed {args.seed}); {secs:.0f} s on one busy core (`nice`).\n\n"
                + md_table(table, ".3f"))
        print(body)
        if not args.no_docs:
            write_block(ROOT / "docs" / "gate.md", name, body, "## Simulation check")
        return
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
            sets = [simulate(n, beta, rng) for _ in range(reps)]  # the one random stream, in order, as before
            for d in decide_all([(records(c, risk), records(b, risk)) for c, b in sets], cfg_s, ex):
                ours[d.decision] += 1
            for c, b in sets:
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

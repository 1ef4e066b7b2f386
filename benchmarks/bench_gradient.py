"""Where the sampling time of the Beta-Binomial models goes (docs/benchmarks.md).

Run:  .venv/bin/python benchmarks/bench_gradient.py [--sizes 10x1000x8] [--no-write]

Data: ``bench_sampling.simulate_counts`` (crossed logit-normal truth, seed 0). Three measurements, each with nutpie
on the PyMC model compiled once per form as ``fit`` compiles it (``compile_nutpie``: no fast-math; not timed):

1. **Cost per gradient** of each likelihood form, from one chain (``cores=1``, 200 tuning + 300 draws,
   ``target_accept`` 0.85, seed 1): wall time / leapfrog steps (tuning included). Forms: PyMC's ``BetaBinomial``
   (the reference, 9 ``gammaln`` per cell), ``beta_binomial`` in its per-cell ``gammaln`` form
   (``RISING_MAX_MEAN_TRIALS = 0``), the same model with its default one-pass cell kernel (rising factorials as
   products, ``agentstats.models._bb_kernel``), and the zero/one-inflated ``zoi_beta_binomial`` (kernel). The
   Beta-Binomial forms compute the same log-density up to rounding (about 1e-14), enough for chains to part after
   some hundred iterations: their posterior means of ``mu`` agree within Monte Carlo error, not to the digit.
2. **Leapfrog steps per draw** at ``target_accept`` 0.95 and 0.85 (``beta_binomial`` with non-centred dispersion,
   the form ``fit`` ends with here; 2 chains x 300 + 300).
3. **Parallel chains**: ``agentstats.fit`` (4 chains x 300 tune + 500 draws, ``target_accept`` 0.85) with
   ``cores=1`` (what ``pm.sample`` chose on a 2-CPU machine: it halves the CPU count) and with the default
   ``cores = min(chains, available CPUs)``.

Prints Markdown and writes it into ``docs/benchmarks.md`` between ``<!-- BEGIN bench_gradient -->`` markers.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "validation"))
sys.path.insert(0, str(ROOT / "benchmarks"))
from _docs import md_table, write_block  # noqa: E402


def _pymc_reference_model(counts):
    """``beta_binomial`` with PyMC's own ``BetaBinomial`` likelihood (the form before the rewrite)."""
    import pymc as pm
    import pytensor.tensor as pt

    from agentstats.models.data import prepare_counts
    from agentstats.models.parameterization import agent_task_predictor, choose_parameterization
    from agentstats.models.priors import DEFAULT_PRIORS as P

    data = prepare_counts(counts)
    n_agents, n_tasks = data.n.shape
    choice, _ = choose_parameterization(data, P, cell_term=True)
    ai, ti = data.obs_index()
    with pm.Model(coords={"agent": data.agents, "task": data.tasks}) as model:
        eta = (agent_task_predictor(P, choice, False) + pt.zeros((n_agents, n_tasks)))[ai, ti]
        rho = pm.Beta("rho", P.rho_a, P.rho_b)
        phi = pm.Deterministic("phi", (1.0 - rho) / rho)
        pm.BetaBinomial("c", n=data.n[ai, ti], alpha=phi * pm.math.sigmoid(eta), beta=phi * pm.math.sigmoid(-eta),
                        observed=data.c[ai, ti])
    return model


def per_gradient(model) -> dict:
    import nutpie

    from agentstats.models._nutpie_model import compile_nutpie

    compiled = compile_nutpie(model)  # as fit compiles: cached callbacks, no fast-math
    t0 = time.perf_counter()
    tr = nutpie.sample(compiled, chains=1, tune=200, draws=300, seed=1, cores=1, progress_bar=False,
                       target_accept=0.85)
    secs = time.perf_counter() - t0
    steps = float(tr["sample_stats"]["n_steps"].sum()) + float(tr["warmup_sample_stats"]["n_steps"].sum())
    return dict(ms_per_gradient=1e3 * secs / steps, steps_per_draw=float(tr["sample_stats"]["n_steps"].mean()),
                mean_mu=float(tr["posterior"]["mu"].mean()))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10x1000x8")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    import nutpie
    from bench_sampling import simulate_counts

    import agentstats.models.families.beta_binomial as bbm
    from agentstats.models import available_cpus, fit
    from agentstats.models._nutpie_model import compile_nutpie
    from agentstats.models.families.registry import build_model

    size = tuple(int(x) for x in args.sizes.split("x"))
    counts = simulate_counts(*size)
    rows = []
    forms = [("PyMC BetaBinomial (reference)", lambda: _pymc_reference_model(counts), None),
             ("beta_binomial, per-cell gammaln", lambda: build_model(counts, "beta_binomial"), 0),
             ("beta_binomial, one-pass cell kernel", lambda: build_model(counts, "beta_binomial"), None),
             ("zoi_beta_binomial (inflated), cell kernel", lambda: build_model(counts, "zoi_beta_binomial"),
              None)]
    for label, make, limit in forms:
        old = bbm.RISING_MAX_MEAN_TRIALS
        if limit is not None:
            bbm.RISING_MAX_MEAN_TRIALS = limit
        try:
            model = make()
        finally:
            bbm.RISING_MAX_MEAN_TRIALS = old
        rows.append(dict(form=label, **per_gradient(model)))
        print(rows[-1], file=sys.stderr, flush=True)

    # the form fit ends with on this design: agents equally consistent, so the centred dispersion diverges and fit
    # refits non-centred (docs/models.md, "Centred dispersion")
    compiled = compile_nutpie(build_model(counts, "beta_binomial", parameterization={"dispersion": "non_centered"}))
    steps = []
    for ta in (0.95, 0.85):
        tr = nutpie.sample(compiled, chains=2, tune=300, draws=300, seed=1, cores=2, progress_bar=False,
                           target_accept=ta)
        ss = tr["sample_stats"]
        steps.append(dict(target_accept=ta, steps_per_draw=float(ss["n_steps"].mean()),
                          divergences=int(ss["diverging"].sum())))
    cores_rows = []
    for cores in (1, None):
        t0 = time.perf_counter()
        fit(counts, "beta_binomial", tune=300, draws=500, chains=4, target_accept=0.85, random_seed=1, cores=cores,
            check_convergence=False)
        cores_rows.append(dict(cores=cores or min(4, available_cpus()), wall_s=time.perf_counter() - t0))

    today = time.strftime("%Y-%m-%d")
    body = f"""Command: `.venv/bin/python benchmarks/bench_gradient.py` (size {args.sizes}; nutpie; {today};
{available_cpus()} CPUs). Cost per gradient (one chain, 200 + 300 iterations, target_accept 0.85; the same
posterior means of `mu` agree within Monte Carlo error):

{md_table(pd.DataFrame(rows))}

Leapfrog steps per draw, `beta_binomial` (non-centred dispersion), 2 chains x 300 + 300:

{md_table(pd.DataFrame(steps))}

`fit(counts, "beta_binomial", tune=300, draws=500, chains=4, target_accept=0.85)`, wall time including compilation,
with 1 core (what `pm.sample` chose here) and with fit's default:

{md_table(pd.DataFrame(cores_rows))}
"""
    print(body)
    if not args.no_write:
        write_block(ROOT / "docs" / "benchmarks.md", "bench_gradient", body, "## Sampling")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

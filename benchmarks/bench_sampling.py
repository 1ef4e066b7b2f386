"""Sampler speed on the crossed agent x task model.

Run:  .venv/bin/python benchmarks/bench_sampling.py [--quick] [--sizes 10x1000x8] [--timeout 600] [--no-write]

What is measured, per configuration, each in its own Python process (cold caches for numba / JAX; PyTensor's C
cache under ~/.pytensor is shared and may be warm):

* the ``partial_pooling`` model ( sum-to-zero agent/task effects, per-cell term, centred or
  non-centred from the data by ``choose_parameterization``) fitted with ``agentstats.models.fitting.fit`` for each
  sampler (``nutpie``, ``numpyro``, ``pymc``), 4 chains x 1,000 tune + 1,000 draws, target_accept 0.9 (fit's
  default);
* ``bb_nutpie`` / ``bb_numpyro``: the ``beta_binomial`` model (``agentstats.models.families.beta_binomial``: the
  per-cell term integrated out into a Beta-Binomial likelihood, no per-cell parameters; ``p`` drawn exactly afterwards),
  same settings;
* the textbook non-centred model with PyMC's default NUTS (``pm.sample`` defaults: target_accept 0.8),
  ``logit p = mu + sigma_a z_a[a] + sigma_t z_t[t] + sigma_c z_c[a, t]``, plain ``Normal(0, 1)`` z's, the same
  priors and the same Binomial likelihood on the counts, 4 chains x 1,000 tune + 1,000 draws.

Data: ``--sizes AxTxN`` agents x tasks x trials drawn from the model with known truth (seed 0): ``alpha ~ N(0, 1)``,
``mu = 0.3``, ``sigma_task = 1.5``, ``sigma_cell = 0.8``, ``c ~ Binomial(N, p)``.

"Time to target" is the total wall time (model build + compile + tune + draws) of a run that reaches R-hat <= 1.01,
ESS_bulk >= 400 (worst element of every reported variable, ``agentstats.models.diagnostics.diagnose``) and 0
divergences; a run that misses a target is reported as such (no time to target). A run killed by ``--timeout`` is
reported as "> timeout". Compile time is measured separately in a second fresh process (nutpie:
``nutpie.compile_pymc_model``; numpyro: ``jax.jit`` of the log-density gradient, first call; pymc: PyTensor
``logp_dlogp_function``), so "sampling" = total - compile is an estimate. The end-to-end check fits 1 agent x 50
tasks x 4 trials with the default sampler twice in one process (first call includes compilation).

Prints Markdown and writes it into ``docs/benchmarks.md`` under "## Sampling" (between markers).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "validation"))

CONFIGS = ("nutpie", "numpyro", "pymc", "textbook_pymc", "bb_nutpie", "bb_numpyro", "bb_pymc", "zoi_nutpie",
           "zoi_numpyro", "zoi_pymc")
#: Configuration prefixes of the models with the per-cell term integrated out, by sampler: ``bb_`` the
#: ``beta_binomial`` model, ``zoi_`` the ``zoi_beta_binomial`` model (fit's default).
PREFIXES = {"bb_": "beta_binomial", "zoi_": "zoi_beta_binomial"}


def _split(config: str) -> tuple[str, str]:
    """(model, sampler) of a non-textbook configuration: ``nutpie`` -> partial_pooling, ``bb_nutpie`` ->
    beta_binomial, ``zoi_nutpie`` -> zoi_beta_binomial.
    """
    for prefix, model in PREFIXES.items():
        if config.startswith(prefix):
            return model, config[len(prefix):]
    return "partial_pooling", config


def simulate_counts(n_agents: int, n_tasks: int, n_trials: int, seed: int = 0) -> pd.DataFrame:
    """Counts ``agent, task_id, n, c`` from the crossed logit-normal model (module docstring)."""
    from scipy.special import expit

    rng = np.random.default_rng(seed)
    alpha = rng.normal(0.0, 1.0, n_agents)
    beta = rng.normal(0.0, 1.5, n_tasks)
    gamma = rng.normal(0.0, 0.8, (n_agents, n_tasks))
    p = expit(0.3 + alpha[:, None] + beta[None, :] + gamma)
    c = rng.binomial(n_trials, p)
    return pd.DataFrame(
        dict(
            agent=np.repeat([f"agent-{a:03d}" for a in range(n_agents)], n_tasks),
            task_id=np.tile([f"task-{t:05d}" for t in range(n_tasks)], n_agents),
            n=n_trials,
            c=c.ravel(),
        )
    )


def build_textbook(counts: pd.DataFrame):
    """Textbook non-centred crossed model with plain Normal z's (no sum-to-zero), same priors as agentstats."""
    import pymc as pm

    from agentstats.models.data import prepare_counts
    from agentstats.models.priors import DEFAULT_PRIORS as P

    data = prepare_counts(counts)
    ai, ti = data.obs_index()
    coords = {"agent": data.agents, "task": data.tasks}
    with pm.Model(coords=coords) as model:
        mu = pm.Normal("mu", P.mu_mu, P.mu_sigma)
        sa = pm.HalfNormal("sigma_agent", P.sigma_agent)
        st = pm.HalfNormal("sigma_task", P.sigma_task)
        sc = pm.HalfNormal("sigma_cell", P.sigma_cell)
        za = pm.Normal("z_agent", 0.0, 1.0, dims="agent")
        zt = pm.Normal("z_task", 0.0, 1.0, dims="task")
        zc = pm.Normal("z_cell", 0.0, 1.0, dims=("agent", "task"))
        eta = mu + sa * za[:, None] + st * zt[None, :] + sc * zc
        pm.Deterministic("p", pm.math.invlogit(eta), dims=("agent", "task"))
        pm.Binomial("c", n=data.n[ai, ti], logit_p=eta[ai, ti], observed=data.c[ai, ti])
    return model


def measure_compile(model, sampler: str) -> float:
    """Seconds to compile the log-density (and gradient) for ``sampler`` (module docstring)."""
    t0 = time.perf_counter()
    if sampler == "nutpie":
        import nutpie

        nutpie.compile_pymc_model(model)
    elif sampler == "numpyro":
        import jax
        from pymc.sampling.jax import get_jaxified_logp

        logp = get_jaxified_logp(model)
        ip = model.initial_point()
        x = [np.asarray(ip[v.name]) for v in model.value_vars]
        jax.block_until_ready(jax.jit(jax.value_and_grad(lambda xs: logp(xs)))(x))
    else:
        model.logp_dlogp_function()
    return time.perf_counter() - t0


def compile_only(config: str, size: tuple[int, int, int]) -> dict:
    """Compile time of one configuration, in a fresh process (cold numba / JAX caches)."""
    from agentstats.models.families.registry import build_model

    counts = simulate_counts(*size)
    if config == "textbook_pymc":
        return dict(compile_s=measure_compile(build_textbook(counts), "pymc"))
    model_name, sampler = _split(config)
    return dict(compile_s=measure_compile(build_model(counts, model_name), sampler))


def run_one(config: str, size: tuple[int, int, int], draws: int, tune: int, chains: int, seed: int) -> dict:
    """One benchmark configuration in this process (fit from scratch); returns a dict of measurements."""
    import pymc as pm

    from agentstats.models import fit
    from agentstats.models.diagnostics import diagnose
    from agentstats.models.families.registry import build_model

    counts = simulate_counts(*size)
    out: dict = dict(config=config, size="x".join(map(str, size)), draws=draws, tune=tune, chains=chains)
    if config == "textbook_pymc":
        t0 = time.perf_counter()
        model = build_textbook(counts)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            dt = pm.sample(draws=draws, tune=tune, chains=chains, random_seed=seed, progressbar=False,
                           model=model, compute_convergence_checks=False)
        out["total_s"] = time.perf_counter() - t0
        out["parameterization"] = "textbook non-centred, no sum-to-zero"
        var_names = ["mu", "sigma_agent", "sigma_task", "sigma_cell", "p"]
    else:
        model_name, sampler = _split(config)
        model = build_model(counts, model_name)
        out["parameterization"] = json.dumps(model._agentstats["parameterization"])
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            dt = fit(counts, model_name, sampler=sampler, draws=draws, tune=tune, chains=chains, random_seed=seed,
                     check_convergence=False)
        out["total_s"] = time.perf_counter() - t0
        var_names = None
    d = diagnose(dt, var_names=var_names)
    tab = d.table
    out.update(
        max_r_hat=float(tab["r_hat"].max()),
        min_ess_bulk=float(tab["ess_bulk"].min()),
        min_ess_tail=float(tab["ess_tail"].min()),
        divergences=int(d.divergences),
        worst=str(tab.sort_values("ess_bulk").iloc[0]["variable"]),
    )
    out["reached"] = bool(out["max_r_hat"] <= 1.01 and out["min_ess_bulk"] >= 400 and out["divergences"] == 0)
    return out


def run_e2e(seed: int) -> dict:
    """1 agent x 50 tasks x 4 trials, default sampler, two fits in one process (first includes compile)."""
    from agentstats.models import fit
    from agentstats.models.diagnostics import diagnose

    times, diags = [], []
    for rep in range(2):
        counts = simulate_counts(1, 50, 4, seed=seed + rep)
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            dt = fit(counts, random_seed=seed, check_convergence=False)
        times.append(time.perf_counter() - t0)
        diags.append(diagnose(dt))
    return dict(config="end_to_end_1x50x4", sampler=dt.sampler.sampler, first_s=times[0], second_s=times[1],
                max_r_hat=float(max(d.table["r_hat"].max() for d in diags)),
                min_ess_bulk=float(min(d.table["ess_bulk"].min() for d in diags)),
                divergences=int(sum(d.divergences for d in diags)))


def spawn(args_list: list[str], timeout: float) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), *args_list]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return dict(timed_out=True, total_s=time.perf_counter() - t0)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        return dict(error=(proc.stderr or proc.stdout)[-800:], total_s=time.perf_counter() - t0)
    return json.loads(lines[-1][len("RESULT "):])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="smoke run: 3x100x8, 2 chains x 200, no docs write")
    ap.add_argument("--sizes", default="10x1000x8",
                    help="comma-separated AxTxN; sizes with >= 100,000 cells run numpyro only (GPU size)")
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--timeout", type=float, default=600.0, help="per-configuration wall-time cap (s)")
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--tune", type=int, default=1000)
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--rows-out", type=Path, default=ROOT / "benchmarks" / "results" / "bench_sampling_rows.jsonl",
                    help="append this run's measurements (JSON lines) here")
    ap.add_argument("--merge", type=Path, action="append", default=[],
                    help="JSON-lines file(s) of earlier measurements to show in the same table (e.g. the same "
                         "sizes before a parameterization change); rows carry their own parameterization")
    ap.add_argument("--table-only", action="store_true",
                    help="run nothing: build the table from the --merge files (rows and end-to-end result)")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--e2e", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--compile-only", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.quick:
        args.sizes, args.draws, args.tune, args.chains = "3x100x8", 200, 200, 2
    if args.one:
        size = tuple(int(x) for x in args.sizes.split(",")[0].split("x"))
        print("RESULT " + json.dumps(run_one(args.one, size, args.draws, args.tune, args.chains, args.seed)))
        return 0
    if args.compile_only:
        size = tuple(int(x) for x in args.sizes.split(",")[0].split("x"))
        print("RESULT " + json.dumps(compile_only(args.compile_only, size)))
        return 0
    if args.e2e:
        print("RESULT " + json.dumps(run_e2e(args.seed)))
        return 0

    import jax

    has_gpu = any(d.platform == "gpu" for d in jax.devices())
    rows = []
    for size_s in ([] if args.table_only else args.sizes.split(",")):
        a, t, _ = (int(x) for x in size_s.split("x"))
        configs = args.configs.split(",")
        if a * t >= 100_000:
            if not has_gpu:
                rows.append(dict(config="numpyro", size=size_s, note="not run: no GPU on this machine"))
                continue
            configs = ["numpyro"]
        for cfg in configs:
            common = ["--sizes", size_s, "--draws", str(args.draws), "--tune", str(args.tune),
                      "--chains", str(args.chains), "--seed", str(args.seed)]
            print(f"running {cfg} at {size_s} ...", file=sys.stderr, flush=True)
            r = spawn(["--one", cfg, *common], args.timeout)
            if "total_s" in r and "max_r_hat" in r:
                comp = spawn(["--compile-only", cfg, "--sizes", size_s], args.timeout)
                r["compile_s"] = comp.get("compile_s", float("nan"))
                r["sampling_s_est"] = r["total_s"] - r["compile_s"]
            r.setdefault("config", cfg)
            r.setdefault("size", size_s)
            rows.append(r)
            print(json.dumps(r), file=sys.stderr, flush=True)
    if not (args.quick or args.table_only):
        args.rows_out.parent.mkdir(parents=True, exist_ok=True)
        with args.rows_out.open("a") as fh:
            for r in rows:
                fh.write(json.dumps(dict(r, measured=time.strftime("%Y-%m-%d %H:%M"))) + "\n")
    merged = []
    for path in args.merge:
        merged += [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()]
    rows = merged + rows
    e2e_rows = [r for r in rows if r.get("config") == "end_to_end_1x50x4"]
    rows = [r for r in rows if r.get("config") != "end_to_end_1x50x4"]
    if args.table_only:
        e2e = e2e_rows[-1] if e2e_rows else {}
    else:
        print("running end-to-end 1x50x4 ...", file=sys.stderr, flush=True)
        e2e = spawn(["--e2e", "--seed", str(args.seed)], args.timeout)
        if not args.quick:
            with args.rows_out.open("a") as fh:
                fh.write(json.dumps(dict(e2e, measured=time.strftime("%Y-%m-%d %H:%M"))) + "\n")

    def extrapolate(r):
        # Draws needed for ESS_bulk 400 if ESS grows in proportion to draws; tuning taken as its share of the run.
        if r["min_ess_bulk"] >= 400:
            return f"{r['total_s']:.0f}"
        share = r["draws"] / (r["draws"] + r["tune"])
        est = r["total_s"] * (1 - share) + r["total_s"] * share * 400 / max(r["min_ess_bulk"], 1.0)
        return f"~{est:.0f}"

    def fmt_time(r):
        if r.get("timed_out"):
            return f"> {r['total_s']:.0f} (killed)"
        if "error" in r or "note" in r:
            return "-"
        return f"{r['total_s']:.0f}"

    lines = ["| size | sampler / model | parameterization | compile (s) | total wall (s) | sampling est. (s) | "
             "max R-hat | min ESS bulk | min ESS tail | divergences | targets met | time to target (s) | "
             "extrapolated time to ESS 400 (s) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r["config"] == "textbook_pymc":
            label = "PyMC default NUTS, textbook non-centred"
        else:
            model_name, sampler_name = _split(r["config"])
            label = f"{model_name}, {sampler_name}"
        if "max_r_hat" in r:
            ttt = f"{r['total_s']:.0f}" if r["reached"] else "not reached"
            lines.append(
                f"| {r['size']} | {label} | {r['parameterization']} | {r['compile_s']:.1f} | {fmt_time(r)} | "
                f"{r['sampling_s_est']:.0f} | {r['max_r_hat']:.3f} | {r['min_ess_bulk']:.0f} | "
                f"{r['min_ess_tail']:.0f} | {r['divergences']} | {'yes' if r['reached'] else 'no'} | {ttt} | "
                f"{extrapolate(r)} |")
        else:
            why = r.get("note") or ("timed out" if r.get("timed_out") else "error: " + r.get("error", "")[-120:]
                                    .replace("\n", " ").replace("|", "/"))
            ttt = f"> {r['total_s']:.0f}" if r.get("timed_out") else "-"
            lines.append(f"| {r['size']} | {label} | {r.get('parameterization', '')} | | {fmt_time(r)} | | | | | | "
                         f"{why} | {ttt} | |")
    table = "\n".join(lines)

    speed = []
    by = {(r["size"], r["config"]): r for r in rows}  # later rows (this run) win over merged ones
    for size_s in args.sizes.split(","):
        tb = by.get((size_s, "textbook_pymc"))
        if tb is None:
            continue
        tb_time = tb["total_s"] if tb.get("reached") else None
        tb_lower = tb.get("total_s")
        for cfg in CONFIGS:
            if cfg == "textbook_pymc":
                continue
            r = by.get((size_s, cfg))
            if not r:
                continue
            name = "{}, {}".format(*_split(cfg))
            if not r.get("reached"):
                speed.append(f"- {size_s}, {name}: no ratio, the run did not reach the targets.")
                continue
            if tb_time is not None:
                speed.append(f"- {size_s}, {name}: {tb_time / r['total_s']:.1f}x faster to target than the textbook "
                             "model with PyMC's default NUTS in this run; against the stack notes' hand measurement "
                             f"(~530 s, additive model): {530 / r['total_s']:.1f}x.")
            elif tb_lower:
                speed.append(f"- {size_s}, {name}: > {tb_lower / r['total_s']:.1f}x faster (the textbook run "
                             f"{'was killed at' if tb.get('timed_out') else 'did not reach the targets in'} "
                             f"{tb_lower:.0f} s); against PyMC's default NUTS at ~530 s (the textbook "
                             f"additive model, measured when the project started): {530 / r['total_s']:.1f}x.")
    if e2e.get("first_s") is not None:
        e2e_line = (f"End to end, 1 agent x 50 tasks x 4 trials, `fit(counts)` with the default sampler "
                    f"({e2e['sampler']}, 4 x 1,000 + 1,000): first call {e2e['first_s']:.1f} s (includes "
                    f"compilation), second call on new data {e2e['second_s']:.1f} s; max R-hat "
                    f"{e2e['max_r_hat']:.3f}, min ESS bulk {e2e['min_ess_bulk']:.0f}, divergences "
                    f"{e2e['divergences']}.")
    else:
        e2e_line = f"End to end 1 x 50 x 4: failed ({e2e})."
    measured = sorted({str(r.get("measured", "this run")) for r in rows})
    when = (f"rows measured {', '.join(measured)} (merged from {', '.join(p.name for p in args.merge)})"
            if args.merge else f"measured {time.strftime('%Y-%m-%d')}")
    body = f"""Command: `.venv/bin/python benchmarks/bench_sampling.py{' --quick' if args.quick else ''}` (sizes
{args.sizes}; {args.chains} chains x {args.tune} tune + {args.draws} draws; seed {args.seed}); {when}, on the 2-core
x86_64 machine (no GPU), one configuration at a time, each in its own process.

{table}

{chr(10).join(speed) if speed else '- No speed-up ratio could be formed (see the table).'}

{e2e_line}

"Extrapolated time to ESS 400" scales the post-tuning part of the run by 400 / (min ESS bulk), assuming ESS
grows in proportion to draws; it ignores R-hat and is a rough guide only (not a measurement).

GPU size 100 x 10,000 (numpyro): {'run above' if has_gpu else 'not run, no GPU on this machine'}.
"""
    print(body)
    if not (args.quick or args.no_write):
        from _docs import write_block

        write_block(ROOT / "docs" / "benchmarks.md", "bench_sampling", body, "## Sampling")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

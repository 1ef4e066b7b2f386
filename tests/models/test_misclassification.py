"""Judged counts as noisy measurements: the channel, the judged likelihoods, true-count draws, and judged fits."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scipy.special import betaln, expit
from scipy.stats import binom

from agentstats.calibration import JudgeError, calibrate
from agentstats.models import fit, get_family, prepare_counts
from agentstats.models.families.beta_binomial import beta_binomial_logpmf
from agentstats.models.misclassification import (
    _channel_tensor,
    channel_logpmf,
    channel_table,
    draw_true_counts,
)
from agentstats.models.priors import DEFAULT_PRIORS

JE = JudgeError.from_counts(180, 20, 170, 30)


def _brute_channel(c, n, s, se, sp):
    """P(c | s, n) by convolving the judged passes of the s true passes and of the n - s true fails."""
    pmf = np.convolve(binom.pmf(np.arange(s + 1), s, se), binom.pmf(np.arange(n - s + 1), n - s, 1 - sp))
    return pmf[c] if c < pmf.size else 0.0


def _counts(seed=0, agents=("x", "y"), tasks=5, n_max=6, n_min=0):
    rng = np.random.default_rng(seed)
    rows = []
    for a in agents:
        for t in range(tasks):
            n = int(rng.integers(n_min, n_max + 1))
            rows.append((a, f"t{t}", n, int(rng.integers(0, n + 1))))
    return pd.DataFrame(rows, columns=["agent", "task_id", "n", "c"])


def test_channel_matches_brute_force_convolution():
    se, sp = 0.9, 0.85
    for n in (0, 1, 4, 7):
        for s in range(n + 1):
            for c in range(n + 1):
                got = np.exp(channel_logpmf(c, n, s, se, sp))
                assert got == pytest.approx(_brute_channel(c, n, s, se, sp), abs=1e-13)
    n, c = np.array([5, 3, 0, 6]), np.array([2, 3, 0, 1])
    tensor = _channel_tensor(channel_table(n, c), 0.8, 0.7).eval()
    for j in range(n.size):
        s = np.arange(n[j] + 1)
        assert np.allclose(tensor[j, : n[j] + 1], channel_logpmf(c[j], n[j], s, 0.8, 0.7), atol=1e-12)


def _point_values(model, rng):
    point = model.initial_point()
    for key in point:
        point[key] = point[key] + rng.normal(0.0, 0.3, np.shape(point[key]))
    names = [v for v in ("mu", "alpha", "beta", "phi", "det_share", "judge_sensitivity", "judge_specificity", "gamma")
             if v in model.named_vars]
    fn = model.compile_fn(model.replace_rvs_by_values([model[v] for v in names]), inputs=model.value_vars,
                          on_unused_input="ignore", mode="FAST_COMPILE")
    return point, dict(zip(names, fn(point), strict=True))


def _cell_logp(model, point):
    return model.compile_logp(vars=[model["c"]], sum=False, jacobian=False, mode="FAST_COMPILE")(point)[0]


# Each case compiles its own model (2-3 s): one runs in the everyday suite, the other three with the slow tests.
@pytest.mark.parametrize(("name", "complete"), [
    ("zoi_beta_binomial", True),
    pytest.param("beta_binomial", False, marks=pytest.mark.slow),
    pytest.param("zoi_beta_binomial", False, marks=pytest.mark.slow),
    pytest.param("beta_binomial", True, marks=pytest.mark.slow),
], ids=["zoi_beta_binomial-complete_grid", "beta_binomial-gaps", "zoi_beta_binomial-gaps",
        "beta_binomial-complete_grid"])
def test_judged_beta_binomial_likelihood_marginalises_the_true_count(name, complete):
    data = prepare_counts(_counts(n_min=1 if complete else 0))
    family = get_family(name)
    model, _ = family.build(data, DEFAULT_PRIORS, judge_error=JE)
    point, v = _point_values(model, np.random.default_rng(1))
    got = _cell_logp(model, point)
    ai, ti = data.obs_index()
    eta = v["mu"] + v["alpha"][ai] + v["beta"][ti]
    n, c = data.n[ai, ti], data.c[ai, ti]
    for j in range(ai.size):
        s = np.arange(n[j] + 1)
        true = beta_binomial_logpmf(s, n[j], eta[j], v["phi"][ai[j]], v.get("det_share"))
        ch = channel_logpmf(c[j], n[j], s, v["judge_sensitivity"], v["judge_specificity"])
        assert got[j] == pytest.approx(np.logaddexp.reduce(true + ch), abs=1e-9)
    # a perfect judge (se = sp = 1 up to 1e-17) gives the unjudged likelihood
    plain, _ = family.build(data, DEFAULT_PRIORS)
    perfect = dict(point, judge_sensitivity_logodds__=np.array(40.0), judge_specificity_logodds__=np.array(40.0))
    unjudged = _cell_logp(plain, {k: val for k, val in point.items() if "judge" not in k})
    assert np.allclose(_cell_logp(model, perfect), unjudged, atol=1e-8)


def test_judged_deterministic_cell_is_binomial_in_sensitivity():
    # det_share -> 1 (logit 30), every cell deterministic: a c-of-n cell has likelihood
    # m Binomial(c | n, se) + (1 - m) Binomial(c | n, 1 - sp).
    data = prepare_counts(_counts(seed=4))
    model, _ = get_family("zoi_beta_binomial").build(data, DEFAULT_PRIORS, judge_error=JE)
    point, _ = _point_values(model, np.random.default_rng(2))
    point["det_share_logodds__"] = np.array(30.0)
    _, v = _point_values_at(model, point)
    ai, ti = data.obs_index()
    m = expit(v["mu"] + v["alpha"][ai] + v["beta"][ti])
    n, c = data.n[ai, ti], data.c[ai, ti]
    se, sp = v["judge_sensitivity"], v["judge_specificity"]
    expect = np.log(m * binom.pmf(c, n, se) + (1 - m) * binom.pmf(c, n, 1 - sp))
    assert np.allclose(_cell_logp(model, point), expect, atol=1e-8)


def _point_values_at(model, point):
    names = [v for v in ("mu", "alpha", "beta", "judge_sensitivity", "judge_specificity") if v in model.named_vars]
    fn = model.compile_fn(model.replace_rvs_by_values([model[v] for v in names]), inputs=model.value_vars,
                          on_unused_input="ignore", mode="FAST_COMPILE")
    return point, dict(zip(names, fn(point), strict=True))


@pytest.mark.parametrize("name", ["additive", "single_agent_zoi"])
def test_judged_binomial_families_use_the_judged_probability(name):
    counts = _counts(agents=("x",)) if name == "single_agent_zoi" else _counts()
    data = prepare_counts(counts)
    family = get_family("zoi_beta_binomial" if name == "single_agent_zoi" else name)
    model, _ = family.build(data, DEFAULT_PRIORS, judge_error=JE)
    point, v = _point_values(model, np.random.default_rng(3))
    ai, ti = data.obs_index()
    eta = v["mu"] + (v["alpha"][ai] if "alpha" in v else 0.0) + v["beta"][ti]
    q = v["judge_sensitivity"] * expit(eta) + (1 - v["judge_specificity"]) * (1 - expit(eta))
    assert np.allclose(_cell_logp(model, point), binom.logpmf(data.c[ai, ti], data.n[ai, ti], q), atol=1e-9)


def test_judge_calibration_refused_where_it_cannot_apply():
    counts = _counts()
    with pytest.raises(ValueError, match="channel table"):
        channel_table(np.full(2000, 100), np.zeros(2000, int))
    with pytest.raises(ValueError, match="cannot take a judge calibration"):
        fit(counts, model="no_pooling", judge_calibration=JE, draws=10, chains=1)
    with pytest.raises(ValueError, match="JudgeError or a metric"):
        fit(counts, judge_calibration={"se": 0.9})
    ordinal = calibrate([{"item_id": 1, "metric": "s", "verdict": 3, "gold": 4},
                         {"item_id": 2, "metric": "s", "verdict": 2, "gold": 1}])["s"]
    with pytest.raises(ValueError, match="threshold"):
        fit(counts, judge_calibration=ordinal)


def test_draw_true_counts_follows_the_posterior_of_the_true_count():
    n, c, se, sp = 5, 2, 0.8, 0.9
    s = np.arange(n + 1)
    log_true = beta_binomial_logpmf(s, n, 0.3, 4.0)
    w = np.exp(log_true + channel_logpmf(c, n, s, se, sp))
    w /= w.sum()
    draws = 200_000
    rng = np.random.default_rng(5)
    got = draw_true_counts(np.broadcast_to(log_true, (draws, 1, n + 1)), np.array([n]), np.array([c]),
                           np.full(draws, se), np.full(draws, sp), rng)[:, 0]
    freq = np.bincount(got, minlength=n + 1) / draws
    assert np.allclose(freq, w, atol=4 * np.sqrt(w * (1 - w) / draws) + 1e-12)


def test_judged_cell_p_is_the_true_p_given_the_judged_count():
    # Beta-Binomial cell with known hyperparameters: E[p | c] = sum_s P(s | c) (a + s) / (phi + n).
    family = get_family("beta_binomial")
    data = prepare_counts(pd.DataFrame({"agent": ["x", "x", "y", "y"], "task_id": ["t0", "t1"] * 2,
                                        "n": [4, 5, 4, 3], "c": [1, 5, 0, 2]}))
    draws = 40_000
    mu, alpha, beta, phi, se, sp = 0.2, np.array([0.5, -0.5]), np.array([0.3, -0.3]), np.array([3.0, 6.0]), 0.85, 0.9
    shape = (1, draws)

    def full(x, *dims):
        x = np.asarray(x, float)
        return (("chain", "draw", *dims), np.broadcast_to(x, shape + x.shape).copy())

    post = xr.Dataset({"mu": full(mu), "alpha": full(alpha, "agent"), "beta": full(beta, "task"),
                       "phi": full(phi, "agent"), "judge_sensitivity": full(se), "judge_specificity": full(sp)},
                      coords={"agent": ["x", "y"], "task": ["t0", "t1"]})
    p = family.cell_p(post, data, slice(0, 2), seed=11)
    for a in range(2):
        for t in range(2):
            n, c = int(data.n[a, t]), int(data.c[a, t])
            eta = mu + alpha[a] + beta[t]
            s = np.arange(n + 1)
            w = np.exp(beta_binomial_logpmf(s, n, eta, phi[a]) + channel_logpmf(c, n, s, se, sp))
            w /= w.sum()
            a_, b_ = phi[a] * expit(eta), phi[a] * expit(-eta)
            expect = float((w * (a_ + s) / (phi[a] + n)).sum())
            expect2 = float((w * np.exp(betaln(a_ + s + 2, b_ + n - s) - betaln(a_ + s, b_ + n - s))).sum())
            sd = np.sqrt(expect2 - expect**2)
            assert p[0, :, a, t].mean() == pytest.approx(expect, abs=5 * sd / np.sqrt(draws))
            assert (p[0, :, a, t] ** 2).mean() == pytest.approx(expect2, abs=0.01)


# ---------------------------------------------------------------------------------------------- real fits
def _judged_data(seed, p_true, n_tasks=15, n=6, se=0.9, sp=0.85):
    rng = np.random.default_rng(seed)
    rows = []
    for a, p in p_true.items():
        for t in range(n_tasks):
            s = rng.binomial(n, p)
            rows.append((a, f"t{t}", n, int(rng.binomial(s, se) + rng.binomial(n - s, 1 - sp))))
    return pd.DataFrame(rows, columns=["agent", "task_id", "n", "c"])


@pytest.mark.slow
def test_judged_fit_recovers_a_known_p_and_a_perfect_judge_changes_nothing():
    from agentstats.posterior import posterior_pass_hat_k

    p_true = {"a": 0.8, "b": 0.3}
    counts = _judged_data(2, p_true, n_tasks=30)
    opts = dict(model="beta_binomial", chains=2, draws=500, tune=500, random_seed=5, cores=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence warnings of a tiny fit are not the subject here
        judged = fit(counts, judge_calibration=JE, **opts)
        plain = fit(counts, **opts)
        perfect = fit(counts, judge_calibration=JudgeError(1e6, 1.0, 1e6, 1.0), **opts)
    assert "judge_calibration" in judged.idata.attrs
    assert JudgeError.from_json(judged.idata.attrs["judge_calibration"]) == JE
    got = posterior_pass_hat_k(judged, 1).mean(("chain", "draw")).values[:, 0]
    raw = posterior_pass_hat_k(plain, 1).mean(("chain", "draw")).values[:, 0]
    # judged counts pull both agents toward 1 - sp .. se; the judged fit undoes it: within 0.08 of the truth,
    # while the plain fit is off by more (q = 0.75 and 0.375 at se 0.9, sp 0.85)
    assert np.allclose(got, [0.8, 0.3], atol=0.08)
    assert abs(raw[0] - 0.8) + abs(raw[1] - 0.3) > abs(got[0] - 0.8) + abs(got[1] - 0.3)
    same = posterior_pass_hat_k(perfect, [1, 2]).mean(("chain", "draw")).values
    assert np.allclose(same, posterior_pass_hat_k(plain, [1, 2]).mean(("chain", "draw")).values, atol=0.02)

"""The vectorized rank-normalized R-hat and bulk/tail ESS (agentstats.models._rank_diagnostics) against ArviZ 1.x.

The reference is ArviZ itself (``az.rhat`` default method "rank", ``az.ess`` methods "bulk" and "tail"), element by
element on seeded draws; the new code must give the same numbers to rounding and NaN exactly where ArviZ does.
"""

from __future__ import annotations

import warnings

import arviz as az
import numpy as np
import pandas as pd
import pytest
import xarray as xr

from agentstats.models import diagnose
from agentstats.models._rank_diagnostics import ess_bulk, ess_tail, rank_diagnostics, rhat_rank

RTOL = 1e-12  # observed differences are a few 1e-16 (summation order of the FFT and Geyer sums)


def _ar1(rng, shape, rho):
    """AR(1) chains along axis 1 with stationary unit variance, started from the stationary law."""
    e = rng.normal(size=shape)
    x = np.empty(shape)
    x[:, 0] = e[:, 0]
    for t in range(1, shape[1]):
        x[:, t] = rho * x[:, t - 1] + np.sqrt(1 - rho**2) * e[:, t]
    return x


def _arviz(a):
    """ArviZ's R-hat (None for one chain), bulk ESS and tail ESS of an array (chain, draw, ...)."""
    dims = ["chain", "draw"] + [f"d{i}" for i in range(a.ndim - 2)]
    ds = xr.Dataset({"x": (dims, a)})
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rhat = np.asarray(az.rhat(ds)["x"], dtype=float) if a.shape[0] > 1 else None
        return (
            rhat,
            np.asarray(az.ess(ds, method="bulk")["x"], dtype=float),
            np.asarray(az.ess(ds, method="tail")["x"], dtype=float),
        )


def _cases():
    rng = np.random.default_rng(20261202)
    cases = {
        "well_mixed_4x1000": rng.normal(size=(4, 1000)),
        "ar095_4x1000": _ar1(rng, (4, 1000), 0.95),
        "ar095_4x500x37": _ar1(rng, (4, 500, 37), 0.95),
        "ar099_short_4x120x5": _ar1(rng, (4, 120, 5), 0.99),
        "chain_means_4x500x6": rng.normal(size=(4, 500, 6)) + np.array([0.0, 0.0, 2.0, 2.0])[:, None, None],
        "odd_draws_3x501x4": _ar1(rng, (3, 501, 4), 0.9),
        "one_chain_1x400x3": _ar1(rng, (1, 400, 3), 0.5),
        "discrete_0to3_4x500x5": rng.integers(0, 4, size=(4, 500, 5)).astype(float),
        "integer_dtype_4x300x3": rng.integers(0, 4, size=(4, 300, 3)),
        "tiny_2x7x3x2": rng.normal(size=(2, 7, 3, 2)),
        "minimal_draws_2x4x3": rng.normal(size=(2, 4, 3)),
        "too_few_draws_4x3x2": rng.normal(size=(4, 3, 2)),
        "float32_4x300x4": _ar1(rng, (4, 300, 4), 0.8).astype(np.float32),
    }
    special = rng.normal(size=(4, 200, 5))
    special[:, :, 1] = 2.0  # never changes
    special[1, 5, 2] = np.nan  # one NaN draw
    special[0, 0, 3] = np.inf
    special[:, :, 4] = np.nan  # all NaN
    cases["constant_nan_inf_4x200x5"] = special
    infs = rng.normal(size=(4, 200, 2))
    infs[:, :100, 1] = np.inf  # median infinite: the folded draws have NaN (inf - inf)
    infs[:, 150:, 1] = -np.inf
    cases["infinite_median_4x200x2"] = infs
    return cases


CASES = _cases()


@pytest.mark.parametrize("name", list(CASES))
def test_rank_diagnostics_equal_arviz(name):
    a = CASES[name]
    ref_rhat, ref_bulk, ref_tail = _arviz(a)
    with np.errstate(all="ignore"):
        rhat, bulk, tail = rank_diagnostics(a)
    pairs = [("ess_bulk", bulk, ref_bulk), ("ess_tail", tail, ref_tail)]
    if ref_rhat is not None:
        pairs.append(("rhat", rhat, ref_rhat))
    else:
        assert np.isnan(rhat).all() and rhat.shape == a.shape[2:]
    for what, got, ref in pairs:
        assert got.shape == ref.shape == a.shape[2:], what
        np.testing.assert_array_equal(np.isnan(got), np.isnan(ref), err_msg=f"{name} {what}: NaN where ArviZ's")
        np.testing.assert_allclose(got, ref, rtol=RTOL, atol=0, equal_nan=True, err_msg=f"{name} {what}")


def test_single_functions_match_the_combined_one():
    a = CASES["ar095_4x500x37"]
    rhat, bulk, tail = rank_diagnostics(a)
    np.testing.assert_array_equal(rhat_rank(a), rhat)
    np.testing.assert_array_equal(ess_bulk(a), bulk)
    np.testing.assert_array_equal(ess_tail(a), tail)
    got_tail, got_rhat = rank_diagnostics(a, ("ess_tail", "rhat"))
    np.testing.assert_array_equal(got_tail, tail)
    np.testing.assert_array_equal(got_rhat, rhat)


@pytest.mark.parametrize("name", ["ar095_4x500x37", "constant_nan_inf_4x200x5"])
def test_blocks_give_the_numbers_of_one_block(name, monkeypatch):
    """Elements are diagnosed in blocks to bound memory; block edges (a partial last block, NaN elements skipped
    between blocks) must not change a number."""
    import agentstats.models._rank_diagnostics as rd

    a = CASES[name]
    with np.errstate(all="ignore"):
        whole = rank_diagnostics(a)
        monkeypatch.setattr(rd, "_BLOCK_VALUES", 2 * a.shape[0] * a.shape[1])  # two elements a block
        blocked = rank_diagnostics(a)
    for got, ref in zip(blocked, whole, strict=True):
        np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
        # the same arithmetic per element; a tolerance, not bit-equality, since FFT kernels may vectorize across a
        # block's rows differently from one CPU to another
        np.testing.assert_allclose(got, ref, rtol=RTOL, atol=0, equal_nan=True)


def test_cases_reach_the_branches_they_are_meant_for():
    """The seeded draws exercise what they are named for (else the equality above would prove less)."""
    rhat, bulk, tail = rank_diagnostics(CASES["ar095_4x1000"])
    assert bulk < 400 and tail < 400  # 4,000 draws: long Geyer sequences, truncated by the pair rule
    rhat, _, _ = rank_diagnostics(CASES["chain_means_4x500x6"])
    assert (rhat > 1.3).all()  # rank-normalized: bounded, far above 1.01
    with np.errstate(invalid="ignore"):  # R-hat of a constant element is 0 / 0 (ArviZ warns the same)
        rhat, bulk, tail = rank_diagnostics(CASES["constant_nan_inf_4x200x5"])
    assert np.isnan(rhat[1]) and bulk[1] == tail[1] == 800  # constant: ESS = number of split draws
    assert np.isnan(rhat[[2, 4]]).all() and np.isnan(bulk[[2, 4]]).all() and np.isnan(tail[[2, 4]]).all()
    assert np.isfinite(rhat[[0, 3]]).all()
    _, bulk, _ = rank_diagnostics(CASES["odd_draws_3x501x4"])
    assert (bulk < 1500).all()


def test_tail_ess_uses_arviz_ci_prob_and_an_explicit_prob():
    """ArviZ 1.x's tail ESS takes its quantiles from rcParams["stats.ci_prob"] (0.89: the 11 % and 89 %)."""
    a = CASES["ar095_4x500x37"][..., :4]
    ds = xr.Dataset({"x": (("chain", "draw", "k"), a)})
    for prob in (0.95, 0.8):
        ref = np.asarray(az.ess(ds, method="tail", prob=prob)["x"])
        np.testing.assert_allclose(ess_tail(a, prob=prob), ref, rtol=RTOL)
    with az.rc_context({"stats.ci_prob": 0.9}):
        np.testing.assert_allclose(ess_tail(a), np.asarray(az.ess(ds, method="tail")["x"]), rtol=RTOL)
    with pytest.raises(ValueError, match=r"prob must be in \(0, 1\]"):
        ess_tail(a, prob=0.0)
    with pytest.raises(ValueError, match="unknown diagnostics"):
        rank_diagnostics(a, ("rhat", "mcse"))
    with pytest.raises(ValueError, match="shape"):
        rank_diagnostics(np.zeros(10))


def _arviz_table(dt, names):
    """diagnose's table as it was computed with az.rhat / az.ess on the Dataset (the code this replaced)."""
    post = getattr(dt, "idata", dt)["posterior"].to_dataset()  # a Fit's DataTree, or a constructed one
    n_chains = post.sizes.get("chain", 1)
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rhat = az.rhat(post[names]) if n_chains > 1 else None
        ess_b = az.ess(post[names], method="bulk")
        ess_t = az.ess(post[names], method="tail")
    rows = []
    for v in names:
        size = int(np.prod([post[v].sizes[d] for d in post[v].dims if d not in ("chain", "draw")]))
        r = float(np.max(np.asarray(rhat[v], dtype=float))) if rhat is not None else np.nan
        rows.append(
            dict(
                variable=v,
                size=size,
                r_hat=r,
                ess_bulk=float(np.min(np.asarray(ess_b[v], dtype=float))),
                ess_tail=float(np.min(np.asarray(ess_t[v], dtype=float))),
            )
        )
    return pd.DataFrame(rows, columns=["variable", "size", "r_hat", "ess_bulk", "ess_tail"])


def _assert_table(diag, expected):
    got = diag.table.drop(columns="ok")
    pd.testing.assert_frame_equal(got, expected, check_exact=False, rtol=RTOL, atol=0)


@pytest.mark.slow  # uses the session's real fit (about 17 s to make when no slow test has made it yet)
def test_diagnose_table_on_a_real_fit_equals_arviz(models_fit):
    names = [str(v) for v in models_fit.idata["posterior"].data_vars]
    expected = _arviz_table(models_fit, names)
    diag = diagnose(models_fit, var_names=names)
    _assert_table(diag, expected)
    default = diagnose(models_fit)
    _assert_table(default, _arviz_table(models_fit, list(default.table.variable)))


def test_diagnose_table_with_constant_nan_and_one_chain_equals_arviz():
    rng = np.random.default_rng(3)
    post = xr.Dataset(
        {
            "mu": (("chain", "draw"), _ar1(rng, (4, 300), 0.9)),
            "eff": (("chain", "draw", "task"), rng.normal(size=(4, 300, 7))),
            "stuck": (("chain", "draw", "task"), np.where(np.arange(7) == 2, 1.0, rng.normal(size=(4, 300, 7)))),
            "bad": (("chain", "draw", "a", "b"), np.where(rng.random((4, 300, 2, 3)) < 1e-3, np.nan, 0.5)),
            "draw_first": (("draw", "chain", "k"), rng.normal(size=(300, 4, 3))),
        }
    )
    post["bad"][:, :, 0, 0] = rng.normal(size=(4, 300))
    dt = xr.DataTree.from_dict({"posterior": post})
    names = list(post.data_vars)
    diag = diagnose(dt, var_names=names)
    _assert_table(diag, _arviz_table(dt, names))
    table = diag.table.set_index("variable")
    assert np.isnan(table.loc["stuck", "r_hat"]) and not table.loc["stuck", "ok"]
    assert np.isnan(table.loc["bad", "ess_bulk"]) and not table.loc["bad", "ok"]
    # one chain: no R-hat (NaN, a named problem); ESS as ArviZ's
    one = xr.DataTree.from_dict({"posterior": post.isel(chain=[0])})
    diag1 = diagnose(one, var_names=["mu", "eff"])
    _assert_table(diag1, _arviz_table(one, ["mu", "eff"]))
    assert diag1.table.r_hat.isna().all() and any("only one chain" in p for p in diag1.problems)

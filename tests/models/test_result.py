"""The fit as a result object (agentstats.models.result.Fit): fields, diagnostics once, save / load with the schema,
reading a fit written by earlier versions, and what each family declares it can do.

Fits here are ``no_pooling`` (drawn exactly: no sampler, no compile) or made from constructed draws.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import agentstats.models.result as result_mod
from agentstats.models import Fit, Priors, fit, get_family
from agentstats.models.schema import FIT_SCHEMA
from agentstats.posterior import posterior_pass_k, predict_rerun

SMALL = pd.DataFrame({"agent": ["a", "a", "b", "b", "b"], "task_id": ["t1", "t2", "t1", "t2", "t3"],
                      "n": [4, 4, 4, 2, 0], "c": [3, 0, 4, 1, 0]})


@pytest.fixture(scope="module")
def exact_fit() -> Fit:
    return fit(SMALL, "no_pooling", priors={"beta_a": 2.0}, draws=200, chains=2, random_seed=3)


def test_fields_are_the_fit_resolved_once(exact_fit):
    assert exact_fit.family == get_family("no_pooling")
    assert exact_fit.data.agents == ["a", "b"] and exact_fit.data.tasks == ["t1", "t2", "t3"]
    np.testing.assert_array_equal(exact_fit.data.n, [[4, 4, 0], [4, 2, 0]])
    s = exact_fit.sampler
    assert (s.sampler, s.chains, s.draws, s.tune, s.draws_max, s.random_seed) == ("exact", 2, 200, 0, 200, 3)
    assert exact_fit.priors.beta_a == 2.0 and exact_fit.random_seed == 3
    assert exact_fit.posterior["p"].dims == ("chain", "draw", "agent", "task")
    # the attributes of the DataTree say the same, written in one place
    attrs = exact_fit.idata.attrs
    assert attrs["agentstats_model"] == "no_pooling" and attrs["random_seed"] == 3 and attrs["draws"] == 200
    assert json.loads(attrs["priors"])["beta_a"] == 2.0 and attrs["agentstats_fit_schema"] == 1
    assert exact_fit.summary() == {"method": "exact", "sampler": "exact", "model": "no_pooling", "dispersion": "none",
                                   "target_accept": s.target_accept, "chains": 2, "draws": 200, "tune": 0,
                                   "draws_max": 200, "checkpoints": [], "random_seed": 3}
    assert "no_pooling" in repr(exact_fit) and "2 agents x 3 tasks" in repr(exact_fit)


def test_diagnostics_are_computed_once_and_kept(monkeypatch):
    calls = []
    real = result_mod.diagnose
    monkeypatch.setattr(result_mod, "diagnose", lambda f: calls.append(1) or real(f))
    one = fit(SMALL, "no_pooling", draws=50, chains=2, random_seed=1)
    first = one.diagnostics()
    assert one.diagnostics() is first and len(calls) == 1
    assert list(first.table["variable"]) == ["p"]


def test_save_and_load_round_trip(exact_fit, tmp_path):
    path = tmp_path / "fit.zarr"
    exact_fit.save(path)
    back = Fit.load(path)
    assert back.family == exact_fit.family and back.sampler == exact_fit.sampler
    assert back.priors == exact_fit.priors and back.build == exact_fit.build
    assert back.data.agents == exact_fit.data.agents and back.data.hash == exact_fit.data.hash
    np.testing.assert_array_equal(back.data.c, exact_fit.data.c)
    np.testing.assert_array_equal(back.data.present, exact_fit.data.present)
    xr.testing.assert_equal(back.posterior, exact_fit.posterior)
    # the same draws give the same pass^k and re-run predictions (seeded from the fit's own seed)
    xr.testing.assert_allclose(posterior_pass_k(back, [1, 2]), posterior_pass_k(exact_fit, [1, 2]))
    xr.testing.assert_allclose(predict_rerun(back, 2, 2, n_draws=50), predict_rerun(exact_fit, 2, 2, n_draws=50))
    with pytest.raises(FileExistsError, match="exists"):
        exact_fit.save(path)
    with pytest.raises(FileNotFoundError, match="no such fit"):
        Fit.load(tmp_path / "absent.zarr")


def test_a_failure_mid_save_leaves_no_partial_fit_and_the_previous_one_intact(exact_fit, tmp_path, monkeypatch):
    """Fit.save writes a temporary folder and renames it: a failure while writing leaves nothing at the path (a
    retry then succeeds), no temporary folder, and a fit already saved elsewhere untouched."""
    first = tmp_path / "first.zarr"
    exact_fit.save(first)
    before = sorted((p.relative_to(first), p.read_bytes()) for p in first.rglob("*") if p.is_file())
    real = xr.DataTree.to_zarr

    def fails_midway(self, store, **kw):
        real(self, store, **kw)  # every group written ...
        raise OSError(28, "No space left on device")  # ... then the disk fills

    monkeypatch.setattr(xr.DataTree, "to_zarr", fails_midway)
    second = tmp_path / "second.zarr"
    with pytest.raises(OSError, match="No space left"):
        exact_fit.save(second)
    assert not second.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["first.zarr"]
    with pytest.raises(FileExistsError, match="exists"):  # a save to the first path writes nothing
        exact_fit.save(first)
    assert sorted((p.relative_to(first), p.read_bytes()) for p in first.rglob("*") if p.is_file()) == before
    monkeypatch.setattr(xr.DataTree, "to_zarr", real)
    exact_fit.save(second)  # the retry: nothing left in its way
    xr.testing.assert_equal(Fit.load(second).posterior, Fit.load(first).posterior)


def test_a_datatree_written_by_the_code_before_fit_objects_reads_back():
    """Yesterday's ``fit`` returned the DataTree with these attributes; a per-agent-dispersion-less Beta-Binomial fit
    (``dispersion="none"``) and no ``cell_present`` (cells with n > 0 are present) are read as they were meant."""
    post = xr.Dataset({"mu": (("chain", "draw"), np.zeros((2, 3))), "sigma_task": (("chain", "draw"), np.ones((2, 3))),
                       "beta": (("chain", "draw", "task"), np.zeros((2, 3, 2))),
                       "rho": (("chain", "draw"), np.full((2, 3), 0.3))}, coords={"task": ["x", "y"]})
    cd = xr.Dataset({"n_trials": (("agent", "task"), np.array([[3, 0], [2, 2]])),
                     "n_success": (("agent", "task"), np.array([[1, 0], [2, 0]]))},
                    coords={"agent": ["a", "b"], "task": ["x", "y"]})
    dt = xr.DataTree.from_dict({"posterior": post, "constant_data": cd})
    dt.attrs.update(agentstats_model="beta_binomial", dispersion="none", p_draws="conditional", sampler="nutpie",
                    priors=json.dumps(Priors().as_dict()), random_seed=9, draws=3, tune=5, chains=2,
                    target_accept=0.98, counts_hash="h", parameterization=json.dumps({"agent": "centered"}))
    old = Fit.from_datatree(dt)
    assert old.family == get_family("beta_binomial", dispersion="shared")
    assert old.sampler.draws_max == 3 and old.sampler.checkpoints == () and old.build.parameterization == {
        "agent": "centered"}
    np.testing.assert_array_equal(old.data.present, [[True, False], [True, True]])
    assert old.data.hash == "h" and old.judge_error is None


def test_the_schema_names_every_problem():
    dt = xr.DataTree.from_dict({"posterior": xr.Dataset({"mu": (("draw",), np.zeros(3))}),
                                "constant_data": xr.Dataset({"n_trials": (("task",), np.array([1.5]))})})
    dt.attrs.update(agentstats_model="partial_pooling", sampler="pymc", random_seed=0, chains=1, draws=3)
    problems = FIT_SCHEMA.validate(dt)
    assert problems == [
        "attribute 'priors' is missing",
        "constant_data/n_trials has dims ('task',), expected ('agent', 'task')",
        "constant_data/n_trials has dtype float64, expected kind i or u",
        "constant_data/n_success is missing",
    ]
    with pytest.raises(ValueError, match=r"(?s)x\.zarr is not a fit of agentstats\.fit:.*priors.*n_success"):
        FIT_SCHEMA.validate_or_raise(dt, "x.zarr")
    # the family's own variables: partial_pooling always samples mu, sigma_task and beta (chain, draw, task)
    core = FIT_SCHEMA.for_family(get_family("partial_pooling").posterior_core)
    assert "posterior/mu has dims ('draw',), expected ('chain', 'draw')" in core.validate(dt)
    assert "posterior/beta is missing" in core.validate(dt)
    with pytest.raises(ValueError, match="not a fit"):
        Fit.from_datatree(xr.DataTree())


@pytest.mark.parametrize(("model", "dispersion", "new_tasks", "icc", "planning"), [
    ("zoi_beta_binomial", "agent", True, True, ("phi", "det_share")),
    ("beta_binomial", "agent", True, True, ("phi",)),
    ("partial_pooling", "agent", True, True, ()),
    ("additive", None, True, True, ()),
    ("no_pooling", None, False, False, ()),
])
def test_families_declare_what_they_can_do(model, dispersion, new_tasks, icc, planning):
    family = get_family(model)
    assert family.name == model and family.dispersion == dispersion
    assert family.has_dispersion == (dispersion is not None)
    assert (family.supports_new_tasks, family.has_icc, family.planning_parameters) == (new_tasks, icc, planning)
    # a dispersion given to a family without one is ignored, as the command line's default is
    assert get_family(model, dispersion="shared").dispersion == ("shared" if dispersion else None)


def test_ppc_interval_follows_ci_prob(exact_fit):
    ppc = exact_fit.ppc(random_seed=0, ci_prob=0.5, n_draws=100)
    row = ppc.table.set_index("statistic").loc["cells_all_fail"]
    rep = ppc.replicated["cells_all_fail"]
    assert row["rep_low"] == pytest.approx(np.quantile(rep, 0.25)) and row["rep_high"] == pytest.approx(
        np.quantile(rep, 0.75))
    assert ppc.table.attrs["ci_prob"] == 0.5 and ppc.ci_prob == 0.5

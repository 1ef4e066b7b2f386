"""What ``agentstats fit`` prints and writes as JSON around the posterior: small values, values that cannot be
estimated, and re-run predictions at a k the re-run cannot reach.

The fit and the posterior draws are stand-ins (no sampling): the checks are on the command's tables and JSON.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import ClassVar

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from fit_helpers import StandInFit
from typer.testing import CliRunner

from agentstats.cli import app

runner = CliRunner()


class _Diag:
    ok = True
    divergences = 0
    problems: ClassVar[list[str]] = []
    table = pd.DataFrame({"variable": ["mu"], "r_hat": [1.0]})

    def __str__(self) -> str:
        return "diagnostics OK"




def _draws(values: np.ndarray, ks: list[int], quantity: str, population: str) -> xr.DataArray:
    """Draws of shape (chain 1, draw, agent 1, k)."""
    return xr.DataArray(values[None, :, None, :], dims=("chain", "draw", "agent", "k"),
                        coords={"agent": ["X"], "k": ks}, name=quantity,
                        attrs={"quantity": quantity, "population": population})


@pytest.fixture()
def zero_trials(tmp_path) -> Path:
    """Agent X fails all 4 trials on each of 3 tasks."""
    path = tmp_path / "zero.jsonl"
    path.write_text("".join(json.dumps({"agent": "X", "task_id": f"t{t}", "trial": i, "success": False}) + "\n"
                            for t in range(3) for i in range(4)))
    return path


@pytest.fixture()
def stand_in(monkeypatch):
    """Stand-ins for the fit: pass^k draws of 1e-5 (0 < every draw < 0.0005), an ANOVA ICC that is NaN, and a
    re-run prediction whose k = 12 no task reaches (4 trials + 4 re-run < 12: NaN draws, no task behind them)."""
    import agentstats.models as models
    import agentstats.posterior as post

    def posterior_pass_k(dt, ks, population="observed"):
        ks = list(ks)
        at = np.full((4, len(ks)), 0.002)
        hat = np.full((4, len(ks)), 1e-5)
        return xr.Dataset({"pass_at_k": _draws(at, ks, "pass_at_k", population),
                           "pass_hat_k": _draws(hat, ks, "pass_hat_k", population)})

    def predict_rerun(dt, n_future, ks):
        ks = list(ks)
        vals = np.where(np.asarray(ks)[None, :] <= 8, 0.01, np.nan) * np.ones((4, 1))
        ds = xr.Dataset({"pass_at_k": _draws(vals, ks, "pass_at_k", "rerun"),
                         "pass_hat_k": _draws(vals, ks, "pass_hat_k", "rerun")})
        return ds.assign_coords(n_tasks=(("agent", "k"), np.array([[3 if k <= 8 else 0 for k in ks]])))

    cons = pd.DataFrame({"agent": ["X"], "n_tasks": [3], "flip_share": [0.0], "icc_anova": [np.nan],
                         "icc_cell": [0.8], "icc_cell_low": [0.3], "icc_cell_high": [0.99],
                         "icc_cell_estimable": [True]})
    monkeypatch.setattr(models, "fit", lambda counts, model, **kw: StandInFit(_Diag(), model))
    monkeypatch.setattr(post, "posterior_pass_k", posterior_pass_k)
    monkeypatch.setattr(post, "consistency", lambda *a, **k: cons)
    monkeypatch.setattr(post, "predict_rerun", predict_rerun)


def test_small_values_and_values_not_estimable_are_not_printed_as_zero_or_nan(zero_trials, stand_in):
    res = runner.invoke(app, ["fit", str(zero_trials), "--k", "1,4"])
    assert res.exit_code == 0, res.output
    rows = [ln for ln in res.output.splitlines() if ln.strip().startswith("│ X")]
    # pass^k: every draw 1e-5, so mean and interval ends are below 0.0005 but not 0
    assert rows[0].count("<0.001 [<0.001, <0.001]") == 1 and "0.002 [0.002, 0.002]" in rows[0]
    assert not any("0.000" in r for r in rows[:2])  # the posterior rows (a flip share of 0 is an exact 0)
    assert "nan" not in res.output.lower() and "not estimable" in res.output
    assert "icc_anova not estimable" in res.output


def test_rerun_at_a_k_beyond_n_plus_n_future_is_named_not_dropped(zero_trials, stand_in):
    res = runner.invoke(app, ["fit", str(zero_trials), "--k", "8,12", "--rerun", "4"])
    assert res.exit_code == 0, res.output
    rerun_part = res.output[res.output.index("predicted unbiased estimates"):]
    row12 = [ln for ln in rerun_part.splitlines() if ln.strip().startswith("│ X") and "│ 12 │" in ln]
    assert len(row12) == 1 and row12[0].count("n/a") == 2 and "k > n + N on every task" in row12[0]
    assert "note: k = 12 exceeds n + N (recorded plus 4 re-run trials) on every task" in res.output
    res = runner.invoke(app, ["fit", str(zero_trials), "--k", "8,12", "--rerun", "4", "--json"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)["rerun"]["summary"]
    at12 = [r for r in rows if r["k"] == 12]
    assert len(at12) == 2 and all(r["mean"] is None and r["n_tasks"] == 0 for r in at12)
    assert all(r["extrapolated"] is None and "n + N" in r["note"] for r in at12)
    assert {r["interval"] for r in rows} == {"posterior predictive"}
    assert {r["interval"] for r in json.loads(res.stdout)["summary"]} == {"credible"}  # never read as confidence
    at8 = [r for r in rows if r["k"] == 8]
    assert all(r["n_tasks"] == 3 and r["note"] is None and r["mean"] == pytest.approx(0.01) for r in at8)


def test_tasks_behind_every_value_are_shown_and_under_half_is_marked(zero_trials, stand_in, monkeypatch):
    """Both tables and both JSON summaries give the tasks behind each value of the input's 3; a re-run value that
    rests on 1 of them is marked (under half) and says how many tasks were left out at that k."""
    import agentstats.posterior as post

    def predict_rerun(dt, n_future, ks):
        ks = list(ks)
        vals = np.full((4, len(ks)), 0.01)
        ds = xr.Dataset({"pass_at_k": _draws(vals, ks, "pass_at_k", "rerun"),
                         "pass_hat_k": _draws(vals, ks, "pass_hat_k", "rerun")})
        return ds.assign_coords(n_tasks=(("agent", "k"), np.array([[3 if k <= 4 else 1 for k in ks]])))

    monkeypatch.setattr(post, "predict_rerun", predict_rerun)
    res = runner.invoke(app, ["fit", str(zero_trials), "--k", "4,6", "--rerun", "2"])
    assert res.exit_code == 0, res.output
    head, rerun_part = res.output.split("predicted unbiased estimates")
    posterior_rows = [ln for ln in head.splitlines() if ln.strip().startswith("│ X")][:2]
    assert all(" 3/3 │" in r for r in posterior_rows), head
    rows = {int(ln.split("│")[2]): ln for ln in rerun_part.splitlines() if ln.strip().startswith("│ X")}
    assert " 3/3 │" in rows[4] and "left out" not in rows[4]
    assert " 1/3 * │" in rows[6] and "2 tasks left out at this k (n + N < 6, or no recorded trial)" in rows[6]
    assert "* under half of them: read with care" in " ".join(res.output.split())
    res = runner.invoke(app, ["fit", str(zero_trials), "--k", "4,6", "--rerun", "2", "--json"])
    payload = json.loads(res.stdout)
    assert {(r["n_tasks"], r["n_tasks_suite"], r["under_half"]) for r in payload["summary"]} == {(3, 3, False)}
    behind = {(r["k"], r["n_tasks"], r["under_half"]) for r in payload["rerun"]["summary"]}
    assert behind == {(4, 3, False), (6, 1, True)}


def test_an_abandoned_centred_attempt_and_the_checkpoints_are_printed(zero_trials, stand_in, monkeypatch):
    """A fit whose centred dispersion diverged and was refitted non-centred says so, next to its checkpoints (the
    abandoned entry has no R-hat: printing it as a checkpoint raised KeyError)."""
    import agentstats.models as models

    log = [{"draws": 100, "passed": False, "abandoned": True, "divergences": 7,
            "reason": "centred dispersion diverged: refitted non-centred"},
           {"draws": 500, "passed": False, "max_r_hat": 1.0123, "min_ess": 380.0},
           {"draws": 750, "passed": True, "max_r_hat": 1.008, "min_ess": 900.0}]

    monkeypatch.setattr(models, "fit",
                        lambda counts, model, **kw: StandInFit(_Diag(), model, checkpoints=tuple(log), draws_max=2000))
    res = runner.invoke(app, ["fit", str(zero_trials), "--k", "1"])
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert ("first attempt abandoned after 100 draws: 7 divergent transitions with the centred per-agent dispersion; "
            "centred dispersion diverged: refitted non-centred") in text
    assert "500: R-hat 1.012, ESS 380; 750: R-hat 1.008, ESS 900 (stopped)" in text


def test_interval_options_name_the_kind_and_probability(zero_trials, stand_in):
    """`--ci-prob` and `--ci-kind` (eti / hdi) set the intervals and their titles; `--hdi` is gone."""
    res = runner.invoke(app, ["fit", str(zero_trials), "--k", "1", "--ci-prob", "0.8", "--ci-kind", "hdi"])
    assert res.exit_code == 0, res.output
    assert "80% HDI credible intervals" in " ".join(res.output.split())
    res = runner.invoke(app, ["fit", str(zero_trials), "--k", "1", "--ci-prob", "0.8", "--ci-kind", "hdi", "--json"])
    assert {(r["ci_kind"], r["ci_prob"]) for r in json.loads(res.stdout)["summary"]} == {("hdi", 0.8)}
    res = runner.invoke(app, ["fit", str(zero_trials), "--k", "1", "--ci-kind", "shortest"])
    assert res.exit_code == 2 and "'--ci-kind': 'shortest' is not one of 'eti', 'hdi'" in res.output
    assert runner.invoke(app, ["fit", str(zero_trials), "--k", "1", "--hdi"]).exit_code == 2


def test_the_method_is_passed_on_and_printed_with_the_numbers(zero_trials, stand_in, monkeypatch):
    """`--method laplace` reaches fit; the fit line says the method (the Laplace tier: not MCMC, independent draws)
    instead of a sampler's chains, and without divergences (there is no chain)."""
    from dataclasses import replace

    import agentstats.models as models

    seen = {}

    def fake_fit(counts, model, **kw):
        seen.update(kw)
        out = StandInFit(_Diag(), model, draws=500, chains=4)
        out.sampler = replace(out.sampler, method="laplace", sampler="laplace")
        return out

    monkeypatch.setattr(models, "fit", fake_fit)
    res = runner.invoke(app, ["fit", str(zero_trials), "--k", "1", "--method", "laplace"])
    assert res.exit_code == 0, res.output
    assert seen["method"] == "laplace"
    text = " ".join(res.output.split())
    assert ("method laplace: Laplace tier (not MCMC: Gaussian hyperparameters, task effects by quadrature), 2000 "
            "independent draws") in text
    assert "divergences" not in text.split("method laplace")[1]
    assert runner.invoke(app, ["fit", str(zero_trials), "--k", "1", "--method", "vi"]).exit_code == 2

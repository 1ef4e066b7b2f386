"""Judge calibration: the calibration-set loader, agreement figures, and the Rogan-Gladen correction."""

from __future__ import annotations

import json
from math import comb

import numpy as np
import pandas as pd
import pytest
from scipy.stats import beta as beta_dist
from typer.testing import CliRunner

from agentstats.calibration import (
    JudgeError,
    calibrate,
    choose_calibration,
    cohen_kappa,
    confusion_matrix,
    corrected_pass_k,
    corrected_task_pass_k,
    rogan_gladen,
)
from agentstats.cli import app
from agentstats.records.problems import LoadError


def _write(path, records):
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return path


def _binary_items(tp, fn, tn, fp, missing=0, metric="m"):
    items = []
    for gold, verdict, count in ((True, True, tp), (True, False, fn), (False, False, tn), (False, True, fp)):
        items += [{"gold": gold, "verdict": verdict} for _ in range(count)]
    items += [{"gold": True, "verdict": None} for _ in range(missing)]
    return [{"item_id": f"i{j}", "metric": metric, **it} for j, it in enumerate(items)]


# ---------------------------------------------------------------------------------------------- kappa
def test_cohen_kappa_published_example():
    # Wikipedia, "Cohen's kappa", worked example: 50 proposals, yes/yes 20, yes/no 5, no/yes 10, no/no 15:
    # p_o = 0.7, p_e = 0.5, kappa = 0.4.
    assert cohen_kappa([[20, 5], [10, 15]]) == pytest.approx(0.4, abs=1e-12)


def test_cohen_kappa_hand_case_and_edges():
    # 3 categories, N = 11: p_o = 9/11; rows (5, 4, 2), columns (5, 4, 2): p_e = (25 + 16 + 4) / 121 = 45/121;
    # kappa = (99 - 45) / (121 - 45) = 54/76 = 27/38.
    assert cohen_kappa([[4, 1, 0], [1, 3, 0], [0, 0, 2]]) == pytest.approx(27 / 38, abs=1e-12)
    assert np.isnan(cohen_kappa([[5, 0], [0, 0]]))  # one category only: chance agreement total
    assert cohen_kappa([[0, 5], [5, 0]]) == pytest.approx(-1.0)
    with pytest.raises(ValueError, match="square"):
        cohen_kappa([[1, 2, 3]])


def test_quadratic_weighted_kappa_hand_case():
    # 2 x 2 with quadratic weights equals unweighted kappa (weights 0/1); 3 categories checked against the sum form.
    assert cohen_kappa([[20, 5], [10, 15]], "quadratic") == pytest.approx(0.4)
    m = np.array([[5, 2, 0], [1, 6, 2], [0, 1, 4]], float)
    w = np.array([[0, 0.25, 1], [0.25, 0, 0.25], [1, 0.25, 0]])
    e = np.outer(m.sum(1), m.sum(0)) / m.sum()
    assert cohen_kappa(m, "quadratic") == pytest.approx(1 - (w * m).sum() / (w * e).sum(), abs=1e-12)


def test_confusion_matrix_rows_gold_columns_verdict():
    mat, labels = confusion_matrix([1, 1, 2, 3], [1, 2, 2, 1])
    assert labels == [1, 2, 3]
    assert mat.tolist() == [[1, 1, 0], [0, 1, 0], [1, 0, 0]]


# ---------------------------------------------------------------------------------------------- calibrate
def test_calibrate_binary_hand_case():
    rep = calibrate(_binary_items(tp=45, fn=5, tn=40, fp=10, missing=3))
    m = rep["m"]
    assert (m.tp, m.fn, m.tn, m.fp) == (45, 5, 40, 10)
    assert m.n_items == 100 and m.n_missing == 3
    assert m.accuracy == pytest.approx(0.85)
    assert m.kappa == pytest.approx(cohen_kappa([[40, 10], [5, 45]]))
    # Beta(1 + 45, 1 + 5) posterior of the sensitivity
    assert m.sensitivity["mean"] == pytest.approx(46 / 52)
    assert m.sensitivity["lower"] == pytest.approx(beta_dist.ppf(0.025, 46, 6))
    assert m.specificity["upper"] == pytest.approx(beta_dist.ppf(0.975, 41, 11))
    je = m.judge_error
    assert (je.se_alpha, je.se_beta, je.sp_alpha, je.sp_beta) == (46, 6, 41, 11)
    assert m.confusion.tolist() == [[40, 10], [5, 45]]  # rows gold (False, True)
    assert "m" in rep and "other" not in rep and list(rep) == ["m"] and len(rep) == 1  # a mapping of metrics


def test_calibrate_ordinal_confusion_and_threshold():
    pairs = [(1, 1), (2, 2), (3, 2), (4, 4), (5, 4), (5, 5), (2, 3), (1, 2)]
    items = [{"item_id": i, "metric": "score", "gold": g, "verdict": v} for i, (g, v) in enumerate(pairs)]
    m = calibrate(items)["score"]
    assert m.scale == "ordinal" and m.labels == [1, 2, 3, 4, 5]
    assert m.accuracy == pytest.approx(4 / 8)
    assert m.weighted_kappa is not None and m.tp is None and m.sensitivity is None
    with pytest.raises(ValueError, match="threshold"):
        _ = m.judge_error
    t = calibrate(items, thresholds={"score": 4})["score"]
    # pass = score >= 4: gold passes (4, 5, 5) all judged >= 4: tp 3, fn 0; gold fails 5 items, judged 1,2,2,3,2: tn 5
    assert (t.tp, t.fn, t.tn, t.fp) == (3, 0, 5, 0)
    with pytest.raises(ValueError, match="not in the calibration set"):
        calibrate(items, thresholds={"other": 1})


def test_judge_error_from_counts_refuses_unmeasured_rates():
    with pytest.raises(ValueError, match="no item with gold label pass"):
        JudgeError.from_counts(0, 0, 5, 1)
    with pytest.raises(ValueError, match="no item with gold label fail"):
        JudgeError.from_counts(5, 1, 0, 0)
    je = JudgeError.from_counts(9, 1, 17, 3)
    assert JudgeError.from_json(je.to_json()) == je


# ---------------------------------------------------------------------------------------------- Rogan-Gladen
def test_rogan_gladen_closed_form():
    # se 0.9, sp 0.85, true p 0.6: q = 0.9 * 0.6 + 0.15 * 0.4 = 0.6; the correction returns p
    assert rogan_gladen(0.9 * 0.6 + 0.15 * 0.4, 0.9, 0.85) == pytest.approx(0.6)
    q = np.array([0.1, 0.5, 0.9])
    assert rogan_gladen(q, 0.8, 0.7) == pytest.approx((q + 0.7 - 1) / (0.8 + 0.7 - 1))
    with pytest.raises(ValueError, match="exceed 1"):
        rogan_gladen(0.5, 0.5, 0.5)


def test_corrected_task_pass_k_is_unbiased_by_enumeration():
    # E over c ~ Binomial(n, q(p)) of the per-task estimate equals p^k and 1 - (1 - p)^k exactly.
    n, se, sp = 5, 0.9, 0.85
    for p in (0.0, 0.3, 0.8, 1.0):
        q = se * p + (1 - sp) * (1 - p)
        c = np.arange(n + 1)
        w = np.array([comb(n, int(x)) * q**x * (1 - q) ** (n - x) for x in c])
        for k in (1, 2, 3, 5):
            est = corrected_task_pass_k(np.full(n + 1, n), c, k, se, sp)
            assert (w * est["pass_hat_k"]).sum() == pytest.approx(p**k, abs=1e-10)
            assert (w * est["pass_at_k"]).sum() == pytest.approx(1 - (1 - p) ** k, abs=1e-10)
    one = corrected_task_pass_k([4], [3], 1, se, sp)
    assert one["pass_hat_k"][0] == pytest.approx(rogan_gladen(0.75, se, sp))
    with pytest.raises(ValueError, match="n >= k"):
        corrected_task_pass_k([2], [1], 3, se, sp)


def test_corrected_pass_k_suite_values_and_clipping():
    counts = pd.DataFrame({"agent": ["a"] * 3 + ["b"] * 3, "task_id": list("xyz") * 2,
                           "n": [4] * 6, "c": [4, 3, 1, 0, 0, 1]})
    je = JudgeError.from_counts(tp=90, fn=10, tn=85, fp=15)
    out = corrected_pass_k(counts, je, k=[1, 2], n_boot=400, random_seed=3)
    a1 = out[(out.agent == "a") & (out.k == 1)].iloc[0]
    assert a1["pass_hat_k_raw"] == pytest.approx(rogan_gladen(8 / 12, 0.9, 0.85))
    assert a1["pass_hat_k_uncorrected"] == pytest.approx(8 / 12)
    assert a1["pass_at_k"] == pytest.approx(a1["pass_hat_k"])  # k = 1: the same quantity
    assert a1["pass_hat_k_ci_low"] <= a1["pass_hat_k"] <= a1["pass_hat_k_ci_high"]
    a2 = out[(out.agent == "a") & (out.k == 2)].iloc[0]
    expect = np.mean(corrected_task_pass_k([4, 4, 4], [4, 3, 1], 2, 0.9, 0.85)["pass_hat_k"])
    assert a2["pass_hat_k_raw"] == pytest.approx(expect)
    # agent b judged 1 pass in 12: below the false-pass rate 0.15, so Rogan-Gladen is negative; the value and its
    # interval come from the exact posterior instead (was: clipped to 0; tests/calibration/test_correction_boundary.py)
    b1 = out[(out.agent == "b") & (out.k == 1)].iloc[0]
    assert b1["pass_hat_k_raw"] < 0 and b1["pass_hat_k_method"] == "exact_posterior"
    assert 0.0 <= b1["pass_hat_k_ci_low"] < b1["pass_hat_k"] < b1["pass_hat_k_ci_high"] < 1.0  # 3 tasks: wide
    again = corrected_pass_k(counts, je, k=[1, 2], n_boot=400, random_seed=3)
    pd.testing.assert_frame_equal(out, again)
    with pytest.raises(ValueError, match="calibration counts"):
        corrected_pass_k(counts, JudgeError(9, 1, 8, 2))
    with pytest.raises(ValueError, match="no correction exists"):
        corrected_pass_k(counts, JudgeError.from_counts(5, 5, 5, 5))


# ---------------------------------------------------------------------------------------------- CLI
def test_cli_calibrate_table_json_and_errors(tmp_path):
    from typer.testing import CliRunner

    from agentstats.cli import app
    from agentstats.cli.common import EXIT_USAGE

    items = _binary_items(tp=9, fn=1, tn=8, fp=2, metric="relevance")
    items += [{"item_id": f"o{i}", "metric": "helpful", "gold": g, "verdict": v}
              for i, (g, v) in enumerate([(5, 5), (4, 3), (2, 2), (1, 2)])]
    path = _write(tmp_path / "calib.jsonl", items)
    runner = CliRunner()
    res = runner.invoke(app, ["calibrate", str(path), "--json", "--threshold", "helpful=4"])
    assert res.exit_code == 0, res.output
    records = {r["metric"]: r for r in json.loads(res.stdout)}
    assert records["relevance"]["tp"] == 9 and records["relevance"]["accuracy"] == pytest.approx(17 / 20)
    assert records["relevance"]["sensitivity_mean"] == pytest.approx(10 / 12)
    assert records["helpful"]["confusion"] == [[0, 1, 0, 0, 0], [0, 1, 0, 0, 0], [0, 0, 0, 0, 0], [0, 0, 1, 0, 0],
                                               [0, 0, 0, 0, 1]]
    assert (records["helpful"]["tp"], records["helpful"]["fn"]) == (1, 1)
    res = runner.invoke(app, ["calibrate", str(path)])
    assert res.exit_code == 0 and "relevance" in res.stdout and "confusion" in res.stdout
    bad = _write(tmp_path / "bad.jsonl", [{"item_id": "a", "metric": "m", "verdict": True}])
    res = runner.invoke(app, ["calibrate", str(bad)])
    assert res.exit_code == EXIT_USAGE and "line 1, field 'gold'" in res.output
    res = runner.invoke(app, ["calibrate", str(path), "--threshold", "helpful"])
    assert res.exit_code == EXIT_USAGE and "METRIC=INTEGER" in res.output


def test_cli_fit_takes_a_judge_calibration(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    import agentstats.models as models
    from agentstats.cli import app
    from agentstats.cli.common import EXIT_USAGE

    counts = tmp_path / "counts.csv"
    counts.write_text("agent,task_id,n,c\na,t1,4,3\na,t2,4,1\nb,t1,4,2\nb,t2,4,4\n", encoding="utf-8")
    calib = _write(tmp_path / "calib.jsonl", _binary_items(9, 1, 8, 2, metric="m")
                   + _binary_items(5, 5, 5, 5, metric="other"))
    seen = {}

    class Stop(Exception):
        pass

    def fake_fit(counts, model, **kw):
        seen.update(kw)
        raise Stop

    monkeypatch.setattr(models, "fit", fake_fit)
    runner = CliRunner()
    res = runner.invoke(app, ["fit", str(counts), "--k", "1", "--judge-calibration", str(calib)])
    assert res.exit_code == EXIT_USAGE and "--judge-metric" in res.output
    res = runner.invoke(app, ["fit", str(counts), "--k", "1", "--judge-calibration", str(calib), "--judge-metric", "x"])
    assert res.exit_code == EXIT_USAGE and "no calibration for metric 'x'" in res.output
    res = runner.invoke(app, ["fit", str(counts), "--k", "1", "--judge-metric", "m"])
    assert res.exit_code == EXIT_USAGE
    runner.invoke(app, ["fit", str(counts), "--k", "1", "--judge-calibration", str(calib), "--judge-metric", "m"])
    assert seen["judge_calibration"].judge_error == JudgeError.from_counts(9, 1, 8, 2)


def test_cli_report_passes_the_judge_calibration(tmp_path, monkeypatch):
    import papermill
    from typer.testing import CliRunner

    import agentstats.report.notebook as report_mod
    from agentstats.cli import app
    from agentstats.cli.common import EXIT_USAGE
    from agentstats.report.notebook import default_notebook

    example = report_mod.Path(__file__).resolve().parents[2] / "data" / "example_trials.jsonl"
    calib = _write(tmp_path / "calib.jsonl", _binary_items(9, 1, 8, 2, metric="m"))
    seen = {}

    def fake_run_report(parameters, out_dir, name, kernel_name, **_):
        seen.update(parameters.notebook_values())
        return report_mod.ReportPaths(notebook=tmp_path / "r.ipynb", html=tmp_path / "r.html")

    monkeypatch.setattr(report_mod, "run_report", fake_run_report)
    runner = CliRunner()
    res = runner.invoke(app, ["report", str(example), "--out-dir", str(tmp_path), "-p", f"judge_calibration={calib}"])
    assert res.exit_code == 0, res.output
    assert seen["judge_calibration"] == str(calib.resolve()) and seen["judge_metric"] == "m"
    assert {"judge_calibration", "judge_metric"} <= set(papermill.inspect_notebook(str(default_notebook())))
    bad = _write(tmp_path / "bad.jsonl", ["{"])
    res = runner.invoke(app, ["report", str(example), "--out-dir", str(tmp_path), "-p", f"judge_calibration={bad}"])
    assert res.exit_code == EXIT_USAGE and "malformed JSON" in res.output
    # several metrics: the advice names the report's way to choose one (-p), not fit's --judge-metric
    two = _write(tmp_path / "two.jsonl", _binary_items(9, 1, 8, 2, metric="m") + _binary_items(5, 5, 5, 5,
                                                                                               metric="other"))
    res = runner.invoke(app, ["report", str(example), "--out-dir", str(tmp_path), "-p", f"judge_calibration={two}"])
    assert res.exit_code == EXIT_USAGE and "choose one with -p judge_metric=VALUE" in res.output, res.output


@pytest.mark.slow
def test_report_shows_corrected_next_to_uncorrected_pass_hat_k(tmp_path):
    from report_helpers import IMG, live_markup

    from agentstats.report.notebook import run_report

    example = __import__("pathlib").Path(__file__).resolve().parents[2] / "data" / "example_trials.jsonl"
    calib = _write(tmp_path / "calib.jsonl", _binary_items(45, 5, 40, 10, metric=f"relevance {IMG}"))
    paths = run_report({"input_path": str(example), "run_bayes": False, "judge_calibration": str(calib)},
                       out_dir=tmp_path, name="r", progress_bar=False)
    html = paths.html.read_text(encoding="utf-8")
    assert "pass_hat_k_uncorrected" in html and "Judge calibration of" in html
    assert live_markup(html) == []


def test_cli_calibrate_says_when_a_rate_rests_on_the_prior_alone(tmp_path):
    from typer.testing import CliRunner

    from agentstats.cli import app

    runner = CliRunner(env={"COLUMNS": "200"})
    path = tmp_path / "cal.jsonl"
    rows = [{"item_id": str(i), "metric": "h", "verdict": i == 1, "gold": False} for i in range(3)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    res = runner.invoke(app, ["calibrate", str(path)])
    assert res.exit_code == 0, res.output
    assert "0.500 [0.025, 0.975] (prior only)" in res.output
    assert "no item with gold pass, so its sensitivity is the prior alone" in res.output
    assert "specificity is the prior" not in res.output  # 3 gold fails measure it


def test_corrected_pass_k_takes_a_metric_calibration_as_fit_does():
    counts = pd.DataFrame({"agent": ["a"] * 3, "task_id": list("xyz"), "n": [4] * 3, "c": [4, 3, 1]})
    cal = calibrate(_binary_items(tp=90, fn=10, tn=85, fp=15, missing=3, metric="rel"))
    out = corrected_pass_k(counts, cal["rel"], k=[1, 2], n_boot=400, random_seed=3)
    want = corrected_pass_k(counts, JudgeError.from_counts(tp=90, fn=10, tn=85, fp=15), k=[1, 2], n_boot=400,
                            random_seed=3)
    pd.testing.assert_frame_equal(out, want)
    assert out["pass_hat_k_raw"].iat[0] == pytest.approx(rogan_gladen(8 / 12, 0.9, 0.85))
    with pytest.raises(TypeError, match=r"must be a JudgeError .* or a metric of calibrate.*got dict"):
        corrected_pass_k(counts, {"tp": 90, "fn": 10, "tn": 85, "fp": 15})
    with pytest.raises(TypeError, match="got CalibrationReport"):  # the whole report: pick a metric
        corrected_pass_k(counts, cal)


def test_corrected_pass_k_exact_posterior_is_used_for_a_bound_outside_alone():
    # judged pass rate 4/16 = 0.25: Rogan-Gladen (0.25 - 0.15) / 0.75 = 2/15, inside [0, 1]; the bootstrap's lower
    # bound falls below 0, which alone sends the row to the exact posterior (docs/judge.md; was: the bound cut at 0)
    counts = pd.DataFrame({"agent": ["a"] * 4, "task_id": list("wxyz"), "n": [4] * 4, "c": [1, 0, 1, 2]})
    row = corrected_pass_k(counts, JudgeError.from_counts(tp=90, fn=10, tn=85, fp=15), n_boot=400,
                           random_seed=3).iloc[0]
    assert row["pass_hat_k_raw"] == pytest.approx(2 / 15) and row["pass_hat_k_method"] == "exact_posterior"
    assert 0.0 < row["pass_hat_k_ci_low"] < row["pass_hat_k"] < row["pass_hat_k_ci_high"] < 1.0


def test_clipped_flag_ignores_missing_bounds():
    """``*_clipped``: a finite value was outside [0, 1]; NaN bounds (no valid bootstrap replicate) are not clipped."""
    from agentstats.calibration.correction import _outside_unit

    assert not _outside_unit(0.4, np.nan, np.nan)
    assert not _outside_unit(0.0, 0.2, 1.0)
    assert _outside_unit(1.02, np.nan, np.nan)
    assert _outside_unit(0.5, -0.01, 0.7)


# ---------------------------------------------------------------------------------------------- the metric of a fit
def test_choose_calibration_picks_the_one_metric_that_corrects(tmp_path):
    """The one owner of fit --judge-calibration and the report's judge_calibration (was written in both)."""
    from agentstats._util.options import option_style

    one = _write(tmp_path / "one.jsonl", _binary_items(9, 1, 8, 2, metric="m"))
    chosen = choose_calibration(one, ci_prob=0.9)
    assert chosen.metric == "m" and chosen.judge_error == JudgeError.from_counts(9, 1, 8, 2)
    # Beta(1 + 9, 1 + 1) for sensitivity: its 5% quantile is the interval's lower end at ci_prob 0.9
    assert chosen.sensitivity["lower"] == pytest.approx(beta_dist.ppf(0.05, 10, 2))
    two = _write(tmp_path / "two.jsonl", _binary_items(9, 1, 8, 2, metric="m")
                 + _binary_items(5, 5, 5, 5, metric="other"))
    with pytest.raises(ValueError, match=r"calibrates \['m', 'other'\]: choose one with judge_metric="):
        choose_calibration(two)
    with option_style("cli"), pytest.raises(ValueError, match="choose one with --judge-metric"):
        choose_calibration(two)
    assert choose_calibration(two, "other").judge_error == JudgeError.from_counts(5, 5, 5, 5)
    with pytest.raises(ValueError, match="no calibration for metric 'x'"):
        choose_calibration(two, "x")
    no_fails = _write(tmp_path / "nofail.jsonl", _binary_items(3, 1, 0, 0))  # no gold fail: no specificity to use
    with pytest.raises(ValueError):
        choose_calibration(no_fails)
    with pytest.raises(FileNotFoundError):
        choose_calibration(tmp_path / "absent.jsonl")


def _weighted_kappa_by_hand(pairs, categories):
    """Quadratic-weighted kappa written out over the category values: 1 - sum w O / sum w E, w = (a - b)^2."""
    n = len(pairs)
    obs = {(a, b): 0 for a in categories for b in categories}
    for g, v in pairs:
        obs[(g, v)] += 1
    row = {a: sum(obs[(a, b)] for b in categories) for a in categories}
    col = {b: sum(obs[(a, b)] for a in categories) for b in categories}
    num = sum((a - b) ** 2 * obs[(a, b)] for a in categories for b in categories)
    den = sum((a - b) ** 2 * row[a] * col[b] / n for a in categories for b in categories)
    return 1 - num / den


def test_weighted_kappa_uses_the_declared_scale(tmp_path):
    # a 1-5 rubric on which nobody scored 3: without the scale, 2 and 4 would be neighbours (categories 1, 2, 4, 5)
    pairs = [(1, 1), (1, 2), (2, 2), (2, 4), (4, 4), (4, 5), (5, 5), (5, 4), (2, 1), (4, 4), (5, 5), (1, 2)]
    items = [{"item_id": f"i{k}", "metric": "rel", "gold": g, "verdict": v} for k, (g, v) in enumerate(pairs)]
    declared = _weighted_kappa_by_hand(pairs, [1, 2, 3, 4, 5])
    observed = cohen_kappa(confusion_matrix([g for g, _ in pairs], [v for _, v in pairs])[0], "quadratic")
    assert abs(declared - observed) > 0.01
    m = calibrate(items)["rel"]
    assert m.scale_source == "observed" and m.weighted_kappa == pytest.approx(observed, abs=1e-12)
    m = calibrate(items, scales={"rel": (1, 5)})["rel"]
    assert m.scale_source == "declared" and m.labels == [1, 2, 3, 4, 5]
    assert m.weighted_kappa == pytest.approx(declared, abs=1e-12)
    # the same from the items' own `scale` field, as the rubric declares it
    m = calibrate([{**it, "scale": [1, 5]} for it in items])["rel"]
    assert m.scale_source == "declared" and m.weighted_kappa == pytest.approx(declared, abs=1e-12)
    # an unused end category does not move a quadratic-weighted kappa (its row and column are empty)
    ends = [(2, 2), (3, 4), (4, 4), (5, 5), (3, 3), (4, 3), (2, 3), (5, 4)]
    e_items = [{"item_id": f"e{k}", "metric": "r", "gold": g, "verdict": v} for k, (g, v) in enumerate(ends)]
    assert calibrate(e_items, scales={"r": (1, 5)})["r"].weighted_kappa == pytest.approx(
        _weighted_kappa_by_hand(ends, [2, 3, 4, 5]), abs=1e-12)
    with pytest.raises(ValueError, match=r"outside the declared scale \[2, 5\]"):
        calibrate(items, scales={"rel": (2, 5)})
    with pytest.raises(LoadError, match="outside the declared scale"):
        calibrate([{**it, "scale": [2, 5]} for it in items])
    bad = tmp_path / "cal.jsonl"
    bad.write_text("".join(json.dumps(it) + "\n" for it in items))
    r = CliRunner().invoke(app, ["calibrate", str(bad), "--scale", "rel=1..5", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)[0]["weighted_kappa"] == pytest.approx(declared, abs=1e-12)
    assert CliRunner().invoke(app, ["calibrate", str(bad), "--scale", "rel=1-5"]).exit_code == 2

"""CLI: estimate / report / simulate, run through typer's CliRunner (in-process) on small inputs."""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from agentstats.cli import app, parse_k

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "data" / "example_trials.jsonl"
runner = CliRunner()


def _raw_pass1(path: Path) -> dict[str, float]:
    """Mean over tasks of c/n straight from the JSONL lines (infra errors excluded), per agent."""
    cells: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for line in path.read_text().splitlines():
        r = json.loads(line)
        if r.get("status") == "infra_error":
            continue
        ok = r.get("status", "completed") == "completed" and r.get("success") is True
        cell = cells[(r["agent"], r["task_id"])]
        cell[0] += 1
        cell[1] += int(ok)
    per_agent: dict[str, list[float]] = defaultdict(list)
    for (agent, _), (n, c) in cells.items():
        per_agent[agent].append(c / n)
    return {a: sum(v) / len(v) for a, v in per_agent.items()}


def test_parse_k():
    assert parse_k("1,2,4") == [1, 2, 4]
    assert parse_k("1..3,8") == [1, 2, 3, 8]
    assert parse_k(None) is None
    with pytest.raises(typer.BadParameter, match="positive integers"):
        parse_k("0,1")
    with pytest.raises(typer.BadParameter, match="cannot read 'a'"):
        parse_k("a")


def test_estimate_json_matches_raw_counts():
    res = runner.invoke(app, ["estimate", str(EXAMPLE), "--k", "1,2", "--json", "--n-boot", "200"])
    assert res.exit_code == 0, res.output
    records = json.loads(res.stdout)
    keys = {"agent", "k", "n_tasks", "pass_at_k", "pass_hat_k", "pass_at_k_ci_low", "pass_at_k_ci_high",
            "pass_hat_k_ci_low", "pass_hat_k_ci_high"}
    assert all(keys <= set(r) for r in records)
    expected = _raw_pass1(EXAMPLE)
    got = {r["agent"]: r["pass_hat_k"] for r in records if r["k"] == 1}
    assert got.keys() == expected.keys()
    for agent, v in expected.items():
        assert got[agent] == pytest.approx(v, abs=1e-12)
    for r in records:
        assert r["pass_hat_k_ci_low"] <= r["pass_hat_k"] <= r["pass_hat_k_ci_high"]


def test_estimate_bad_input_names_file_line_field(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"agent": "a", "task_id": "t1", "trial": 0, "success": true}\n'
        '{"agent": "a", "task_id": "t1", "trial": "zero", "success": true}\n'
    )
    res = runner.invoke(app, ["estimate", str(bad)])
    assert res.exit_code == 2
    text = res.output
    assert "bad.jsonl" in text and "line 2" in text and "trial" in text


def test_simulate_is_deterministic(tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    for p in (a, b):
        res = runner.invoke(app, ["simulate", "--out", str(p), "--n-tasks", "5", "--n-trials", "3"])
        assert res.exit_code == 0, res.output
    assert a.read_bytes() == b.read_bytes()
    assert len(a.read_text().splitlines()) == 3 * 5 * 3


def test_tau_bench_published_pass_hat_k():
    path = Path(__file__).resolve().parents[1] / "data" / "tau_bench_gpt4o_airline_counts.csv"
    res = runner.invoke(app, ["estimate", str(path), "--k", "1..4", "--json", "--n-boot", "100"])
    assert res.exit_code == 0, res.output
    got = [round(r["pass_hat_k"], 3) for r in sorted(json.loads(res.stdout), key=lambda r: r["k"])]
    assert got == [0.420, 0.273, 0.220, 0.200]  # tau-bench README, gpt-4o airline


@pytest.mark.parametrize(
    "name, args",
    [
        ("tau", ["tau-bench-historical/gpt-4o-airline.json.gz", "--k", "1..4"]),
        ("metr", ["metr-time-horizon/all_runs.jsonl.gz", "--format", "metr",
                  "--columns", "agent=alias,task=task_id,success=score_binarized"]),
    ],
)
@pytest.mark.slow
def test_report_on_real_data_writes_html(shared_data, tmp_path, name, args):
    args = [str(shared_data / args[0]), *args[1:]]
    res = runner.invoke(app, ["report", *args, "--out-dir", str(tmp_path), "--name", name, "--no-bayes"])
    assert res.exit_code == 0, res.output
    html = (tmp_path / f"{name}.html").read_text()
    assert "pass^k" in html
    if name == "metr":
        raw = [json.loads(x) for x in gzip.open(shared_data / "metr-time-horizon/all_runs.jsonl.gz", "rt")]
        for agent in {r["alias"] for r in raw}:
            assert agent in html


@pytest.mark.slow
def test_fit_json_keys_and_diagnostics(tmp_path):
    """`agentstats fit --json` on a tiny simulated set: keys, k flags, ordering of the intervals."""
    path = tmp_path / "sim.jsonl"
    res = runner.invoke(app, ["simulate", "--out", str(path), "--n-tasks", "12", "--n-trials", "3", "--seed", "7"])
    assert res.exit_code == 0, res.output
    res = runner.invoke(
        app,
        ["fit", str(path), "--k", "1,2,6", "--draws", "300", "--tune", "300", "--chains", "2", "--json",
         "--population", "new", "--target-accept", "0.97", "--seed", "5", "--rerun", "3"],
    )
    assert res.exit_code == 0, res.output
    payload = json.loads(res.stdout)
    recs = payload["summary"]
    assert {"agent", "k", "population", "mean", "ci_low", "ci_high", "extrapolated"} <= set(recs[0])
    assert {r["agent"] for r in recs} == {"baseline", "candidate", "experimental"}
    for r in recs:
        assert r["population"] == "new"
        assert 0.0 <= r["ci_low"] <= r["mean"] <= r["ci_high"] <= 1.0
        # 3 trials per cell (fewer where an infrastructure error removed one): every task has fewer than 6
        if r["k"] == 6:
            assert r["extrapolated"] == 1.0
        if r["k"] == 1:
            assert r["extrapolated"] == 0.0
    diag = payload["diagnostics"]
    assert set(diag) >= {"ok", "divergences", "problems", "variables", "sampler", "model"}
    assert diag["model"] == "zoi_beta_binomial"
    assert (diag["target_accept"], diag["chains"], diag["draws"], diag["random_seed"]) == (0.97, 2, 300, 5)
    assert diag["dispersion"] == "agent"
    cons = {r["agent"]: r for r in payload["consistency"]}
    assert set(cons) == {"baseline", "candidate", "experimental"}
    assert all(0 <= r["icc_cell_low"] <= r["icc_cell"] <= r["icc_cell_high"] <= 1 for r in cons.values())
    rerun = payload["rerun"]
    assert rerun["n_future"] == 3 and {r["population"] for r in rerun["summary"]} == {"rerun"}


@pytest.mark.parametrize("model", [
    "no_pooling",  # drawn exactly: no compile, in the everyday suite
    pytest.param("zoi_beta_binomial", marks=pytest.mark.slow),  # sampled (PyMC, tiny), with the consistency table
])
def test_one_fit_resolves_the_family_once_and_validates_the_counts_once(tmp_path, monkeypatch, model):
    """`agentstats fit --rerun N` makes the family and checks the counts once; everything after reads the Fit."""
    import agentstats.models.families.registry as registry
    import agentstats.records.counts as counts_mod

    calls = {"family": 0, "from_attrs": 0, "counts": 0}

    def counted(name, fn):
        def wrapper(*args, **kwargs):
            calls[name] += 1
            return fn(*args, **kwargs)
        return wrapper

    monkeypatch.setattr(registry, "_family_class", counted("family", registry._family_class))
    monkeypatch.setattr(registry, "family_from_attrs", counted("from_attrs", registry.family_from_attrs))
    monkeypatch.setattr(counts_mod, "check_counts", counted("counts", counts_mod.check_counts))
    path = tmp_path / "sim.jsonl"
    assert runner.invoke(app, ["simulate", "--out", str(path), "--n-tasks", "6", "--n-trials", "3",
                               "--seed", "3"]).exit_code == 0
    args = ["fit", str(path), "--bayes-model", model, "--k", "1,2", "--rerun", "2", "--json", "--chains", "2"]
    if model != "no_pooling":
        args += ["--sampler", "pymc", "--draws", "30", "--tune", "30"]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    payload = json.loads(res.stdout)
    assert payload["diagnostics"]["model"] == model and payload["rerun"]["n_future"] == 2
    assert ("consistency" in payload) == (model != "no_pooling")
    assert calls == {"family": 1, "from_attrs": 0, "counts": 1}


def test_estimate_fit_and_compare_share_one_default_k(tmp_path):
    """Without --k every command uses 1 .. the median trials per task (agentstats.default_ks): here 5, although
    agent b ran one task once (estimate once stopped b at k = 1; fit went to 8 whatever the data)."""
    path = tmp_path / "runs.jsonl"
    rows = [{"agent": a, "task_id": f"t{t}", "trial": i, "success": (t + i) % 2 == 0}
            for a in ("a", "b") for t in range(4) for i in range(5 if (a, t) != ("b", 3) else 1)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    est = json.loads(runner.invoke(app, ["estimate", str(path), "--json", "--n-boot", "0"]).stdout)
    assert {r["agent"]: sorted({x["k"] for x in est if x["agent"] == r["agent"]}) for r in est} == {
        "a": [1, 2, 3, 4, 5], "b": [1, 2, 3, 4, 5]}
    b5 = next(r for r in est if r["agent"] == "b" and r["k"] == 5)
    assert b5["n_tasks"] == 3 and b5["n_tasks_dropped"] == 1  # t3 ran once: dropped at k >= 2 and said so
    fit = json.loads(runner.invoke(app, ["fit", str(path), "--bayes-model", "no_pooling", "--json"]).stdout)
    assert sorted({r["k"] for r in fit["summary"]}) == [1, 2, 3, 4, 5]
    res = runner.invoke(app, ["compare", str(path), str(path), "--run-agents", "a,b", "--n-boot", "0", "--no-bayes",
                              "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["settings"]["k"] == [1, 2, 3, 4, 5]  # per pair it was 1 .. 1 (b's t3)


@pytest.mark.slow
def test_fit_strict_exit_status(tmp_path, monkeypatch):
    """--strict turns failed diagnostics into exit status 3 (diagnostics forced to fail: 1 chain, 20 draws)."""
    path = tmp_path / "sim.jsonl"
    runner.invoke(app, ["simulate", "--out", str(path), "--n-tasks", "6", "--n-trials", "2", "--seed", "3"])
    res = runner.invoke(app, ["fit", str(path), "--draws", "20", "--tune", "20", "--chains", "1", "--strict"])
    assert res.exit_code == 3, res.output


@pytest.mark.slow
def test_report_scores_unscored_input_first(tmp_path):
    """Trials without success/reward are scored (deterministic matcher) before the report is computed."""
    lines = []
    # agent a answers task t1 right twice and t2 wrong once, right once: c = 2 on t1, 1 on t2
    answers = {("a", "t1"): ["8", "It is 8."], ("a", "t2"): ["Paris", "Lyon"]}
    expected = {"t1": "8", "t2": "Lyon"}
    for (agent, task), outs in answers.items():
        for i, ans in enumerate(outs):
            lines.append(json.dumps({
                "agent": agent, "task_id": task, "trial": i,
                "interactions": [{"query": "q", "answer": ans, "expected_answer": expected[task]}],
            }))
    path = tmp_path / "unscored.jsonl"
    path.write_text("\n".join(lines) + "\n")
    res = runner.invoke(app, ["report", str(path), "--out-dir", str(tmp_path), "--name", "u", "--no-bayes"])
    assert res.exit_code == 0, res.output
    import nbformat

    nb = nbformat.read(tmp_path / "u.ipynb", as_version=4)
    text = "\n".join(
        o.get("text", "") + str(o.get("data", {}).get("text/plain", ""))
        for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
    )
    # The default "auto" matcher: t1 expects a number, so "8" and "It is 8." (last number 8) are right -> c = 2;
    # t2 is text, compared normalized: "paris" wrong, "lyon" right -> c = 1.
    # Suite pass^1 = mean(2/2, 1/2) = 0.75 over 2 tasks; pass@2 = mean(1, 1) = 1; pass^2 = mean(1, 0) = 0.5.
    import re

    # format_suite_table rows: agent, k, tasks (used/suite), n < k, no usable trial, pass@k, its interval, pass^k ...
    assert re.search(r"^a\s+1\s+2/2\s+0\s+0\s+0\.750\s", text, flags=re.M), text
    assert re.search(r"^\s+2\s+2/2\s+0\s+0\s+1\.000\s.*\s0\.500\s", text, flags=re.M), text


def test_report_passes_bayesian_choices_to_the_notebook(tmp_path, monkeypatch):
    """--bayes-model, --population and -p target_accept reach the notebook's parameters; bad values exit 2."""
    import agentstats.report.notebook as report_mod

    seen = {}

    def fake_run_report(params, out_dir, name, kernel_name, **_):
        seen.update(params.notebook_values())
        return report_mod.ReportPaths(notebook=tmp_path / "r.ipynb", html=tmp_path / "r.html")

    monkeypatch.setattr(report_mod, "run_report", fake_run_report)
    path = tmp_path / "sim.jsonl"
    assert runner.invoke(app, ["simulate", "--out", str(path), "--n-tasks", "4", "--n-trials", "2"]).exit_code == 0
    res = runner.invoke(app, ["report", str(path), "--out-dir", str(tmp_path), "--bayes-model", "beta_binomial",
                              "--population", "new", "-p", "target_accept=0.99"])
    assert res.exit_code == 0, res.output
    assert (seen["bayes_model"], seen["population"], seen["target_accept"]) == ("beta_binomial", "new", 0.99)
    for bad in (["--bayes-model", "pooled"], ["--population", "all"]):
        res = runner.invoke(app, ["report", str(path), "--out-dir", str(tmp_path), *bad])
        assert res.exit_code == 2, res.output


def test_report_of_a_store_run_is_named_after_the_store_and_the_run(tmp_path, monkeypatch):
    """Two runs of one store get two reports (``store-RUN``), not one ``store.duckdb.html``; --name still wins."""
    import agentstats.report.notebook as report_mod
    from agentstats.store import RunStore

    names = []

    def fake_run_report(params, out_dir, name, kernel_name, **_):
        names.append(name)
        return report_mod.ReportPaths(notebook=out_dir / f"{name}.ipynb", html=out_dir / f"{name}.html")

    monkeypatch.setattr(report_mod, "run_report", fake_run_report)
    store = tmp_path / "store.duckdb"
    trials = [{"agent": "a", "task_id": f"t{i}", "trial": j, "success": (i + j) % 2 == 0}
              for i in range(3) for j in range(2)]
    with RunStore(store) as st:
        for run in ("v1", "loop/v2"):
            st.import_trials(trials, run)
    for run in ("v1", "loop/v2"):
        res = runner.invoke(app, ["report", str(store), "--run", run, "--out-dir", str(tmp_path / "rep"), "--k", "1"])
        assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["report", str(store), "--run", "v1", "--out-dir", str(tmp_path / "rep"), "--k", "1",
                              "--name", "mine"])
    assert res.exit_code == 0, res.output
    assert names == ["store-v1", "store-loop_v2", "mine"]


def test_the_command_line_starts_without_the_model_stack():
    """``agentstats --help`` and every command's options load without PyMC, PyTensor, ArviZ or pandas (6 s -> <1 s)."""
    import subprocess
    import sys

    code = ("import sys, agentstats.cli, agentstats.models.families.registry as r; assert r.MODEL_NAMES; "
            "print(sorted(m for m in ('pymc', 'pytensor', 'arviz', 'pandas', 'scipy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
    from agentstats.models.families.registry import DEFAULT_DISPERSION, DEFAULT_MODEL, MODEL_NAMES, get_family

    # one list of names, each resolving (on first use) to the family of that name
    assert MODEL_NAMES[0] == DEFAULT_MODEL and len(set(MODEL_NAMES)) == len(MODEL_NAMES)
    assert [get_family(m).name for m in MODEL_NAMES] == list(MODEL_NAMES)
    assert get_family(DEFAULT_MODEL).dispersion == DEFAULT_DISPERSION

"""ReportParams, the one owner of the report's options: the template's cell, the command line's options and the docs
table are generated from it; values are checked there, each error naming its parameter (or its flag)."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import nbformat
import papermill
import pytest
import typer.main
from typer.testing import CliRunner

from agentstats.cli import app
from agentstats.report.notebook import compare_notebook, default_notebook
from agentstats.report.params import (
    CompareParams,
    ReportParameterError,
    ReportParams,
    parse_assignments,
    value_text,
)

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "data" / "example_trials.jsonl"
runner = CliRunner()


def _parameters_cell(path: Path) -> str:
    nb = nbformat.read(path, as_version=4)
    return next(c for c in nb.cells if "parameters" in c.metadata.get("tags", [])).source


# ---- one owner, generated copies


@pytest.mark.parametrize(("template", "model"), [(default_notebook, ReportParams), (compare_notebook, CompareParams)])
def test_the_committed_parameters_cell_is_the_generated_one(template, model):
    assert _parameters_cell(template()) == model.parameters_cell(), (
        "the template's parameters cell is generated: run .venv/bin/python scripts/notebook_params.py")


def test_the_docs_table_is_the_generated_one():
    text = (REPO / "docs" / "report.md").read_text(encoding="utf-8")
    between = text.split("<!-- report-params:start -->\n", 1)[1].split("\n<!-- report-params:end -->", 1)[0]
    assert between == ReportParams.parameters_table(), (
        "docs/report.md's table is generated: run .venv/bin/python scripts/notebook_params.py")


def test_the_cell_declares_each_parameter_with_the_models_default_and_help():
    declared = papermill.inspect_notebook(str(default_notebook()))
    assert list(declared) == ReportParams.notebook_fields()
    for name, info in declared.items():
        value = ast.literal_eval(info["default"])
        assert value == (ReportParams.EXAMPLE[name] if name in ReportParams.EXAMPLE else ReportParams.default(name))
        assert info["help"] and ReportParams.help(name).startswith(info["help"]), name
    # the run options are not notebook parameters
    assert {"kernel", "show_code"} & set(declared) == set()


def test_cli_options_and_the_template_both_come_from_report_params():
    """Each flag of `agentstats report` defaults to ReportParams' value and shows its help (the test that kept the
    command's defaults equal to the template's, now both generated from the model)."""
    cli = typer.main.get_command(app).commands["report"]
    options = {p.name: p for p in cli.params}
    flagged = {"input_format": "format", "ci_prob": "ci_prob", "run_bayes": "bayes", "bayes_model": "bayes_model",
               "population": "population", "judge": "judge", "judge_model": "judge_model",
               "judge_base_url": "base_url", "metrics": "metrics"}
    declared = papermill.inspect_notebook(str(default_notebook()))
    for field, option in flagged.items():
        assert ReportParams.flag_of(field) is not None, field
        assert options[option].default == ReportParams.default(field), field
        if field != "input_format":  # --format's help is the shared list of every format
            assert options[option].help == ReportParams.help(field), field
        if field in declared:
            assert ast.literal_eval(declared[field]["default"]) == ReportParams.default(field), field
    # every other field is given with -p, whose help lists each with its default
    p_help = " ".join(options["param"].help.split())
    for field in ReportParams.model_fields:
        if ReportParams.flag_of(field) is None and field != "input_path":
            assert f"{field}={value_text(ReportParams.default(field))}" in p_help, field


def test_report_help_lists_at_most_20_options():
    res = runner.invoke(app, ["report", "--help"], env={"COLUMNS": "200"})
    assert res.exit_code == 0
    cli = typer.main.get_command(app).commands["report"]
    flags = [p for p in cli.get_params(typer.main.get_command(app).make_context("agentstats", ["report", "--help"],
                                                                                   resilient_parsing=True))
             if p.param_type_name == "option"]
    assert len(flags) <= 20, [f.opts for f in flags]  # --help included; rare options go through -p
    for f in flags:
        assert f.opts[0] in res.output


# ---- values checked, each error naming its parameter


def test_validation_names_the_parameter_and_the_value():
    with pytest.raises(ReportParameterError) as err:
        ReportParams.validated({"input_path": "x", "bayes_model": "pooled", "population": "all", "n_boot": 5,
                                "ci_prob": 1.5, "bogus": 1}, names={"bayes_model": "--bayes-model"})
    lines = str(err.value).splitlines()
    assert any(ln.startswith("--bayes-model: must be one of zoi_beta_binomial") and ln.endswith("(got 'pooled')")
               for ln in lines), lines
    assert any(ln.startswith("population: ") and "'observed' or 'new'" in ln for ln in lines), lines
    assert any(ln.startswith("n_boot: must be 0 (no bootstrap) or >= 100") for ln in lines), lines
    # the value said once, the name once (was "ci_prob: ci_prob must be in (0, 1), got 1.5 (got 1.5)")
    assert "ci_prob: must be in (0, 1), got 1.5" in lines, lines
    assert "bogus: not a parameter of this notebook" in lines
    with pytest.raises(ReportParameterError, match="judge_metric needs judge_calibration"):
        ReportParams.validated({"input_path": "x", "judge_metric": "m"})
    with pytest.raises(ReportParameterError, match=r"loader_options: .*unknown loader option\(s\) sep"):
        ReportParams.validated({"input_path": "x", "loader_options": {"sep": ";"}})
    with pytest.raises(ReportParameterError, match=r"metrics: .*no_such_metric"):
        ReportParams.validated({"input_path": "x", "metrics": "no_such_metric"})


def test_k_values_are_read_as_the_command_line_reads_them():
    assert ReportParams(input_path="x", k_values="1..3,8").k_values == [1, 2, 3, 8]
    assert ReportParams(input_path="x", k_values=[4, 1, 4]).k_values == [1, 4]
    for bad in ("0", "5..1", [0], []):
        with pytest.raises(ReportParameterError, match="k_values"):
            ReportParams.validated({"input_path": "x", "k_values": bad})


@pytest.mark.parametrize(("typed", "ks"), [
    ("1,2,4", [1, 2, 4]), ("1, 2, 4", [1, 2, 4]), ("[1, 2, 4]", [1, 2, 4]), ("1 2 4", [1, 2, 4]), ("1..3", [1, 2, 3]),
    (4, [4]), ((2, 1), [1, 2]), ("none", None), ("None", None), ("", None), (None, None)])
def test_k_values_in_the_forms_people_type(typed, ks):
    """papermill -p passes text ("1,2,4"), an int (-p k_values 4) or None (-p k_values None); -y passes a list."""
    assert ReportParams(input_path="x", k_values=typed).k_values == ks


def test_other_parameters_in_the_forms_people_type(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    p = ReportParams(input_path="~/runs.jsonl", ci_prob="90%", draws="none", loader_options='{"agent": "model"}',
                     judge_calibration="cal.jsonl", judge_metric="m")
    assert p.input_path == str(Path.home() / "runs.jsonl")
    assert p.ci_prob == pytest.approx(0.9) and p.draws is None and p.loader_options == {"agent": "model"}
    assert p.judge_calibration == str(tmp_path / "cal.jsonl")
    assert ReportParams(input_path="x", loader_options="agent=model, on_error=skip").loader_options == {
        "agent": "model", "on_error": "skip"}
    with pytest.raises(ReportParameterError, match=r"loader_options: .*not JSON"):
        ReportParams.validated({"input_path": "x", "loader_options": "{agent"})
    # None: the example data shipped with the package, found from any folder
    assert Path(ReportParams(input_path=None).input_path).read_bytes() == EXAMPLE.read_bytes()


def test_help_notebook_shows_each_parameters_type():
    declared = papermill.inspect_notebook(str(default_notebook()))
    assert {n: declared[n]["inferred_type_name"] for n in ("k_values", "ci_prob", "draws", "run_bayes", "judge")} == {
        "k_values": "list[int] or None", "ci_prob": "float", "draws": "int or None", "run_bayes": "bool",
        "judge": "str"}
    assert all(info["inferred_type_name"] != "None" for info in declared.values())


def test_parse_assignments_follows_papermills_convention():
    got = parse_assignments(["draws=4000", "sampler=None", "require_tools=true", "threshold=0.8", "seed=1", "seed=2"])
    assert got == {"draws": "4000", "sampler": None, "require_tools": "true", "threshold": "0.8", "seed": "2"}
    p = ReportParams(input_path="x", **got)
    assert (p.draws, p.sampler, p.require_tools, p.threshold, p.seed) == (4000, None, True, 0.8, 2)
    with pytest.raises(ReportParameterError, match=r"-p draws: write NAME=VALUE|-p 'draws': write NAME=VALUE"):
        parse_assignments(["draws"])
    with pytest.raises(ReportParameterError, match=r"-p dras: no such parameter; -p takes seed, n_boot"):
        parse_assignments(["dras=1"])
    with pytest.raises(ReportParameterError, match=r"-p bayes_model: give it with --bayes-model"):
        parse_assignments(["bayes_model=beta_binomial"])
    with pytest.raises(ReportParameterError, match=r"-p input_path: give it as the command's argument"):
        parse_assignments(["input_path=x.jsonl"])


def test_from_namespace_reads_the_notebooks_variables():
    ns = {"input_path": "x.jsonl", "draws": 50, "k_values": "1,2", "unrelated": object(), "kernel": "other"}
    p = ReportParams.from_namespace(ns)
    # a relative input is read from the caller's folder (papermill's and the command's current directory)
    assert (p.input_path, p.draws, p.k_values, p.kernel) == (str(Path.cwd() / "x.jsonl"), 50, [1, 2], "python3")
    with pytest.raises(ReportParameterError, match=r"^chains: "):
        ReportParams.from_namespace({"input_path": "x", "chains": 0})


def test_notebook_values_are_what_papermill_can_inject():
    values = ReportParams(input_path=Path("/d/x.jsonl"), k_values=[1, 2]).notebook_values()
    assert list(values) == ReportParams.notebook_fields()
    assert values["input_path"] == "/d/x.jsonl" and json.dumps(values)


def test_compare_params_check_one_value_per_run():
    with pytest.raises(ReportParameterError, match="run_agents has 1 entries for 2 runs"):
        CompareParams.validated({"run_paths": ["a", "b"], "run_agents": ["x"]})
    with pytest.raises(ReportParameterError, match="run_paths"):
        CompareParams.validated({"run_paths": ["a"]})
    p = CompareParams(run_paths=["a", "b"], run_agents=["x", "y"], draws=10, chains=2)
    assert p.run_options() == [{"agents": "x"}, {"agents": "y"}]
    assert p.fit_options() == {"model": "zoi_beta_binomial", "draws": 10, "tune": 1000, "chains": 2}


# ---- the command line


def _fake_run(monkeypatch, tmp_path):
    import agentstats.report.notebook as report_mod

    seen: list = []

    def fake_run_report(parameters, out_dir, name, kernel_name, show_code, **_):
        seen.append((parameters, kernel_name, show_code))
        return report_mod.ReportPaths(notebook=tmp_path / "r.ipynb", html=tmp_path / "r.html")

    monkeypatch.setattr(report_mod, "run_report", fake_run_report)
    return seen


def test_p_sets_any_other_parameter_and_errors_name_it(monkeypatch, tmp_path):
    seen = _fake_run(monkeypatch, tmp_path)
    args = ["report", str(EXAMPLE), "--out-dir", str(tmp_path)]
    res = runner.invoke(app, [*args, "-p", "draws=4000", "--param", "chains=2", "-p", "kernel=python3",
                              "-p", "require_tools=true", "-p", "show_code=true", "--ci-prob", "0.9"])
    assert res.exit_code == 0, res.output
    params, kernel, show_code = seen[-1]
    assert (params.draws, params.chains, params.require_tools, params.ci_prob) == (4000, 2, True, 0.9)
    assert (kernel, show_code) == ("python3", True)
    for bad, says in ((["-p", "draws=0"], "-p draws: Input should be greater than or equal to 1 (got '0')"),
                      (["-p", "draws=many"], "-p draws: Input should be a valid integer"),
                      (["-p", "dras=1"], "-p dras: no such parameter"),
                      (["-p", "population=new"], "-p population: give it with --population"),
                      (["--population", "all"], "--population: Input should be 'observed' or 'new' (got 'all')"),
                      (["--ci-prob", "1.5"], "--ci-prob: "),
                      (["--metrics", "no_such_metric"], "--metrics: ")):
        res = runner.invoke(app, [*args, *bad])
        text = " ".join(res.output.split())
        assert res.exit_code == 2, (bad, res.output)
        assert says in text, (bad, text)
    assert len(seen) == 1  # nothing ran for a refused value


def test_columns_set_the_run_table_columns(monkeypatch, tmp_path):
    seen = _fake_run(monkeypatch, tmp_path)
    runs = tmp_path / "runs.csv"
    runs.write_text("model,problem,ok\na,t1,1\na,t2,0\nb,t1,1\nb,t2,1\n")
    res = runner.invoke(app, ["report", str(runs), "--format", "runs", "--out-dir", str(tmp_path), "--no-bayes",
                              "--columns", "agent=model,task=problem,success=ok", "--k", "1"])
    assert res.exit_code == 0, res.output
    assert seen[-1][0].loader_options == {"agent_col": "model", "task_col": "problem", "success_col": "ok"}
    for bad in ("agent=model,agent=x", "model", "who=model", "agent="):
        res = runner.invoke(app, ["report", str(runs), "--out-dir", str(tmp_path), "--columns", bad])
        assert res.exit_code == 2 and "--columns" in res.output, (bad, res.output)


def test_old_flags_are_gone():
    """--out (a folder here, a file elsewhere), --draws and the hidden --model are not report options any more."""
    for old in ("--out", "--draws", "--model", "--agent-col", "--kernel", "--judge-calibration", "--seed"):
        res = runner.invoke(app, ["report", str(EXAMPLE), old, "x"])
        assert res.exit_code == 2 and re.search(r"No such option", res.output), (old, res.output)

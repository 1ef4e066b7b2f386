"""cli/options.py: the input and interval options declared once, as decorators a command adopts."""

from __future__ import annotations

from typing import Annotated

import pytest
import typer
from typer.testing import CliRunner

from agentstats.cli.common import CommandGroup
from agentstats.cli.options import CI_DEFAULT, CiOptions, InputOptions, ci_options, input_options

runner = CliRunner()


def _app(seen: list) -> typer.Typer:
    app = typer.Typer()

    @app.command()
    @input_options
    def cmd(path: Annotated[str, typer.Argument()], inputs: InputOptions, k: int = 1) -> None:
        seen.append((path, inputs, k))

    return app


def test_a_decorated_command_takes_the_six_input_options_as_one_value():
    seen: list = []
    app = _app(seen)
    res = runner.invoke(app, ["x.csv", "--format", "runs", "--agent", "a", "--columns", "agent=m, task=t",
                              "--agents", "!h", "--run", "v1", "--skip-bad", "--k", "3"])
    assert res.exit_code == 0, res.output
    path, inputs, k = seen[-1]
    assert (path, k) == ("x.csv", 3)
    assert inputs == InputOptions(format="runs", agent="a", columns={"agent_col": "m", "task_col": "t"}, agents="!h",
                                  run="v1", skip_bad=True)
    assert inputs.loader_options() == {"on_error": "skip", "agent": "a", "agent_col": "m", "task_col": "t",
                                       "agents": "!h", "run": "v1"}
    assert runner.invoke(app, ["x.csv"]).exit_code == 0
    assert seen[-1][1] == InputOptions() and seen[-1][1].loader_options() == {}
    help_text = runner.invoke(app, ["--help"]).output
    for flag in ("--format", "--agent", "--columns", "--agents", "--run", "--skip-bad", "--k"):
        assert flag in help_text, flag


def test_bad_columns_exit_2_naming_the_option():
    app = _app([])
    for bad, says in (("agent=m,agent=n", "agent given twice"), ("task=", "an empty column name"),
                      ("model", "write agent=COL")):
        res = runner.invoke(app, ["x.csv", "--columns", bad])
        assert res.exit_code == 2 and "--columns" in res.output and says in " ".join(res.output.split()), res.output


def test_a_command_without_inputs_is_refused():
    def cmd(path: str) -> None:
        return None

    with pytest.raises(TypeError, match="needs a parameter `inputs: InputOptions`"):
        input_options(cmd)


def test_ci_options_give_a_command_ci_prob_and_ci_kind_checked_before_it_runs():
    seen: list = []
    app = typer.Typer(cls=CommandGroup)

    @app.command()
    @ci_options()
    def both(path: Annotated[str, typer.Argument()], ci: CiOptions = CI_DEFAULT) -> None:
        seen.append(ci)

    @app.command()
    @ci_options(kinds=("eti",))
    def eti_only(path: Annotated[str, typer.Argument()], ci: CiOptions = CI_DEFAULT) -> None:
        seen.append(ci)

    assert runner.invoke(app, ["both", "x", "--ci-prob", "0.8", "--ci-kind", "hdi"]).exit_code == 0
    assert seen[-1] == CiOptions(prob=0.8, kind="hdi")
    assert runner.invoke(app, ["eti-only", "x"]).exit_code == 0 and seen[-1] == CiOptions(prob=0.95, kind="eti")
    for args, says in ((["both", "x", "--ci-prob", "1"], "--ci-prob must be in (0, 1), got 1.0"),
                       (["both", "x", "--ci-kind", "shortest"], "'shortest' is not one of 'eti', 'hdi'"),
                       (["eti-only", "x", "--ci-kind", "eti"], "No such option: --ci-kind")):
        res = runner.invoke(app, args)
        assert res.exit_code == 2 and says in " ".join(res.output.split()), (args, res.output)
    assert len(seen) == 2  # nothing ran for a refused value


def test_input_options_without_run_for_a_command_whose_arguments_name_the_runs():
    seen: list = []
    app = typer.Typer()

    @app.command()
    @input_options(run=False)
    def cmd(runs: Annotated[list[str], typer.Argument()], inputs: InputOptions,
            name: Annotated[str, typer.Option()]) -> None:  # a required option after the group stays required
        seen.append((runs, inputs, name))

    res = runner.invoke(app, ["a", "b", "--agents", "x", "--name", "n"])
    assert res.exit_code == 0, res.output
    assert seen[-1] == (["a", "b"], InputOptions(agents="x"), "n")
    assert runner.invoke(app, ["a", "--run", "v1", "--name", "n"]).exit_code == 2
    assert runner.invoke(app, ["a"]).exit_code == 2  # --name is required

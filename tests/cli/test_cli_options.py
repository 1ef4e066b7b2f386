"""cli/options.py: the input options declared once, as a decorator a command adopts."""

from __future__ import annotations

from typing import Annotated

import pytest
import typer
from typer.testing import CliRunner

from agentstats.cli.options import InputOptions, input_options

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

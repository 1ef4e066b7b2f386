"""The command line's help and options: each flag declared once, one meaning each, no help naming a gone flag."""

from __future__ import annotations

import inspect
import re
import typing

import pytest
import typer.main
from typer.testing import CliRunner

from agentstats.cli import app

runner = CliRunner(env={"COLUMNS": "200"})
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def _commands() -> dict[str, typing.Any]:
    """Every command by its path (``fit``, ``runs export``), as click objects."""
    root = typer.main.get_command(app)
    found = {}
    for name, cmd in root.commands.items():  # type: ignore[attr-defined]
        if hasattr(cmd, "commands"):
            found.update({f"{name} {sub}": c for sub, c in cmd.commands.items()})
        else:
            found[name] = cmd
    return found


COMMANDS = _commands()


def _flags(cmd: typing.Any) -> list[str]:
    return [o for p in cmd.params for o in (*p.opts, *p.secondary_opts) if o.startswith("--")]


def test_every_command_is_listed_and_its_help_runs():
    assert set(COMMANDS) == {"simulate", "estimate", "fit", "score", "report", "gate", "loop", "compare", "calibrate",
                             "import", "runs list", "runs show", "runs export", "runs delete"}
    res = runner.invoke(app, ["--help"])
    assert res.exit_code == 0
    for name, cmd in COMMANDS.items():
        res = runner.invoke(app, [*name.split(), "--help"])
        assert res.exit_code == 0, (name, res.output)
        for flag in _flags(cmd):
            assert flag in res.output, (name, flag)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_no_option_is_named_twice_and_none_is_hidden(name):
    cmd = COMMANDS[name]
    flags = [o for p in cmd.params for o in (*p.opts, *p.secondary_opts)]
    assert len(flags) == len(set(flags)), (name, sorted(flags))
    assert not [p.name for p in cmd.params if getattr(p, "hidden", False)], name


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_flag_a_help_text_names_exists(name):
    """A help text may name the command's own flags, or another command's when it names that command."""
    cmd = COMMANDS[name]
    texts = [cmd.help or ""] + [getattr(p, "help", None) or "" for p in cmd.params]
    own = set(_flags(cmd))
    for text in texts:
        allowed = own | {f for other, c in COMMANDS.items() if f"agentstats {other}" in text for f in _flags(c)}
        missing = sorted(set(FLAG.findall(text)) - allowed)
        assert not missing, (name, missing, text)


def test_one_meaning_per_flag():
    """--out is a file, --out-dir a folder; --run names a run read, --store-run a run written."""
    for name, cmd in COMMANDS.items():
        for p in cmd.params:
            if "--out" in p.opts:
                assert "folder" not in (p.help or "").lower() or "created" in (p.help or ""), (name, p.help)
                assert p.name not in ("out_dir",), name
            if "--out-dir" in p.opts:
                assert p.name == "out_dir", name
            if "--run" in p.opts:
                assert "the run to read" in p.help.lower(), (name, p.help)
            if "--store-run" in p.opts:
                assert "--store" in _flags(cmd) or name == "import", name
    readers = {"estimate", "fit", "score", "report", "compare", "import"}
    for name in readers:
        flags = set(_flags(COMMANDS[name]))
        assert {"--format", "--agent", "--columns", "--agents", "--skip-bad"} <= flags, name
        assert not flags & {"--agent-col", "--task-col", "--success-col", "--model", "--report", "--to"}, name
    assert "--run" not in _flags(COMMANDS["compare"]) and "--run" not in _flags(COMMANDS["import"])
    for name in ("gate", "import", "loop"):
        assert "--store-run" in _flags(COMMANDS[name]) and "--run" not in _flags(COMMANDS[name]), name


def test_every_command_that_prints_an_interval_takes_ci_prob_and_ci_kind_where_the_library_has_both():
    for name in ("estimate", "fit", "score", "compare", "calibrate", "report"):
        assert "--ci-prob" in _flags(COMMANDS[name]), name
    assert [n for n, c in COMMANDS.items() if "--ci-kind" in _flags(c)] == ["fit"]


def test_bayes_defaults_on_in_report_and_compare():
    for name in ("report", "compare"):
        (bayes,) = [p for p in COMMANDS[name].params if "--bayes" in p.opts]
        assert bayes.default is True and bayes.secondary_opts == ["--no-bayes"], name


def test_choices_are_the_owners_lists():
    """Choices whose owner is too heavy to import at start are spelled in cli/options.py: held to the owner here."""
    from agentstats.cli import options
    from agentstats.intervals import CI_KINDS
    from agentstats.metrics import LEVELS
    from agentstats.models.families.registry import DISPERSIONS, MODEL_NAMES
    from agentstats.models.sampling import SAMPLERS
    from agentstats.posterior._common import Population
    from agentstats.scoring import resolve_judge
    from agentstats.scoring.answers import MATCHERS

    def choices(name: str, param: str) -> tuple:
        """The Literal a command's parameter is annotated with (typer makes it a click.Choice)."""
        fn = COMMANDS[name].callback
        annotation = inspect.signature(fn).parameters[param].annotation
        base = typing.get_args(annotation)[0]  # Annotated[T, Option] -> T
        literal = next(a for a in (typing.get_args(base) if typing.get_origin(base) is not typing.Literal else (base,))
                       if a is not type(None))
        assert typing.get_origin(literal) is typing.Literal, (name, param, annotation)
        return typing.get_args(literal)

    assert choices("fit", "ci_kind") == CI_KINDS
    assert choices("fit", "bayes_model") == MODEL_NAMES
    assert choices("fit", "dispersion") == DISPERSIONS
    assert choices("fit", "population") == typing.get_args(Population)
    assert choices("fit", "sampler") == SAMPLERS
    assert set(choices("score", "matcher")) == set(MATCHERS)
    assert set(choices("score", "metrics_level")) == set(LEVELS)
    assert choices("score", "judge") == typing.get_args(options.Judge) == ("deterministic", "openai")
    with pytest.raises(ValueError, match="use None, 'deterministic', 'openai' or a Judge") as err:
        resolve_judge("other")
    assert all(f"'{j}'" in str(err.value) for j in choices("score", "judge"))
    for name, param, bad in (("fit", "sampler", "stan"), ("score", "judge", "gpt")):
        res = runner.invoke(app, [name, "x.jsonl", f"--{param}", bad])
        assert res.exit_code == 2 and f"'{bad}' is not one of" in res.output, res.output


def test_the_library_names_options_as_the_command_line_spells_them():
    from agentstats._util.options import CLI_SPELLINGS

    every = {f for c in COMMANDS.values() for f in _flags(c)}
    for keyword, spelled in CLI_SPELLINGS.items():
        assert spelled.split()[0] in every, (keyword, spelled)


def test_one_table_of_column_keys_for_the_cli_the_messages_the_report_and_its_regenerate_line():
    """--columns agent=,task=,success= -> agent_col/task_col/success_col, and back, from _util.options alone."""
    import inspect

    from agentstats._util.options import CLI_SPELLINGS, COLUMN_KEYS, LOADER_KEYS, option_name, option_style
    from agentstats.cli.options import parse_columns
    from agentstats.io.loaders import load_trials
    from agentstats.report.params import ReportParams
    from agentstats.report.provenance import report_command

    assert COLUMN_KEYS == {"agent": "agent_col", "task": "task_col", "success": "success_col"}
    assert parse_columns("agent=model,task=q,success=ok") == {"agent_col": "model", "task_col": "q",
                                                               "success_col": "ok"}
    assert set(COLUMN_KEYS.values()) <= set(inspect.signature(load_trials).parameters)  # agentstats.load's keywords
    assert set(COLUMN_KEYS.values()) <= set(LOADER_KEYS) and "on_error" in LOADER_KEYS
    with option_style("cli"):
        assert option_name("task_col", "q") == "--columns task=q" and CLI_SPELLINGS["success_col"].startswith("--col")
    loader = {"agent_col": "model", "task_col": "q", "success_col": "ok", "on_error": "skip"}
    line = report_command({"input_path": "runs.csv", "loader_options": loader})
    assert line == "agentstats report runs.csv --columns agent=model,task=q,success=ok --skip-bad"
    assert ReportParams.validated({"input_path": "r.csv", "loader_options": loader}).loader_options == loader


def test_a_usage_error_is_one_line():
    res = runner.invoke(app, ["fit", "x.jsonl", "--population", "all"])
    assert res.exit_code == 2
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: Invalid value for '--population'"), res.output
    assert "'all' is not one of 'observed', 'new'" in lines[0] and "agentstats fit --help" in lines[0]
    res = runner.invoke(app, ["estimat"])
    assert res.exit_code == 2 and res.output.startswith("error: No such command 'estimat'"), res.output
    res = runner.invoke(app, [])  # no command: the help, as before
    assert res.exit_code == 2 and "Usage" in res.output and "estimate" in res.output

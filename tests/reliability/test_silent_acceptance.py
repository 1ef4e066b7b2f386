"""Values that are not what they claim are refused with their location, never read as something else."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from agentstats.cli import app

runner = CliRunner()
GOOD = [{"agent": "a", "task_id": f"t{i % 4}", "trial": i // 4 + 1, "success": i % 2 == 0} for i in range(12)]


@pytest.mark.parametrize(("bad", "field", "says"), [
    ({"reward": 2.0}, "reward", "reward must be between 0 and 1"),
    ({"reward": -0.5}, "reward", "reward must be between 0 and 1"),
    ({"trial": True, "success": True}, "trial", "trial must be a whole number, not true"),
    ({"success": True, "usage": {"input_tokens": -5}}, "usage.input_tokens", "greater than or equal to 0"),
    ({"success": True, "usage": {"output_tokens": -1}}, "usage.output_tokens", "greater than or equal to 0"),
    ({"success": True, "usage": {"latency_s": float("nan")}}, "usage.latency_s", "finite number"),
    ({"success": True, "usage": {"latency_s": -1.0}}, "usage.latency_s", "greater than or equal to 0"),
    ({"success": True, "usage": {"cost_usd": float("inf")}}, "usage.cost_usd", "finite number"),
], ids=["reward-2", "reward-neg", "trial-true", "tokens-in-neg", "tokens-out-neg", "latency-nan", "latency-neg",
        "cost-inf"])
def test_a_value_that_is_not_what_it_claims_is_a_located_problem(tmp_path, bad, field, says):
    from agentstats.io.fastcounts import jsonl_counts

    src = tmp_path / "t.jsonl"
    first = {"agent": "a", "task_id": "t0", "trial": 0, **bad}
    src.write_text("".join(json.dumps(r) + "\n" for r in [first, *GOOD]))  # json writes NaN, Infinity
    assert jsonl_counts(src) is None  # the vectorised path declines: the full reader names the problem
    res = runner.invoke(app, ["estimate", str(src), "--n-boot", "0"])
    assert res.exit_code == 2, res.output
    assert f"line 1, field '{field}'" in res.output and says in res.output


def test_a_reward_within_the_tolerance_of_one_is_still_a_success(tmp_path):
    from agentstats.io import load_trials

    src = tmp_path / "t.jsonl"
    src.write_text(json.dumps({"agent": "a", "task_id": "t", "trial": 0, "reward": 1 + 5e-7}) + "\n")
    assert load_trials(src)[0].outcome() == "success"


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_a_setting_given_twice_in_a_gate_or_loop_config_is_refused(tmp_path, suffix):
    from agentstats.gating.config import GateConfigError, load_gate_config
    from agentstats.optimize.config import load_config

    path = tmp_path / f"gate{suffix}"
    if suffix == ".yaml":
        path.write_text("thresholds:\n  relevance: 0.9\n  relevance: 0.5\nn_draws: 100\n")
    else:
        path.write_text('{"thresholds": {"relevance": 0.9, "relevance": 0.5}, "n_draws": 100}')
    with pytest.raises(GateConfigError, match="'relevance' is given twice") as info:
        load_gate_config(path)
    if suffix == ".yaml":
        assert "line 3: setting 'relevance' is given twice (first on line 2" in str(info.value)
    with pytest.raises(GateConfigError, match="given twice"):
        load_config(path)
    loop = tmp_path / f"loop{suffix}"
    if suffix == ".yaml":
        loop.write_text("eval_set: e.jsonl\nbaseline: b.jsonl\neval_set: other.jsonl\n")
    else:
        loop.write_text('{"eval_set": "e.jsonl", "baseline": "b.jsonl", "eval_set": "other.jsonl"}')
    with pytest.raises(ValueError, match="'eval_set' is given twice"):
        load_config(loop)
    res = runner.invoke(app, ["gate", str(tmp_path / "c.jsonl"), str(tmp_path / "b.jsonl"), "--config", str(path)])
    assert res.exit_code == 2 and "given twice" in res.output, res.output


def test_terminal_controls_in_names_are_shown_never_obeyed(tmp_path):
    clear, link = "\x1b[2J", "\x1b]8;;https://example.invalid\x1b\\click\x1b]8;;\x1b\\"
    src = tmp_path / "t.jsonl"
    rows = [{"agent": clear + "x" + link, "task_id": f"t{i}\x9b31m", "trial": 0, "success": i % 2 == 0}
            for i in range(4)] + [{"agent": "b", "task_id": f"t{i}\x9b31m", "trial": 0, "success": True}
                                  for i in range(4)]
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    for args in (["estimate", str(src), "--n-boot", "0"], ["estimate", str(src), "--agents", "nobody"]):
        res = runner.invoke(app, args)
        assert "\x1b" not in res.output and "\x9b" not in res.output, repr(res.output)
    assert "\\x1b[2Jx" in runner.invoke(app, ["estimate", str(src), "--n-boot", "0"]).output
    as_json = runner.invoke(app, ["estimate", str(src), "--n-boot", "0", "--json"]).stdout
    assert clear + "x" + link in {r["agent"] for r in json.loads(as_json)}  # the data unchanged in JSON

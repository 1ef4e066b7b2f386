"""CLI ``agentstats estimate``: tasks behind every value, the under-half mark, the extrapolated share, excluded tasks,
the interval probability and method, and the paired comparison (run in-process through typer's CliRunner)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentstats.cli import app
from agentstats.cli.render.estimate import JSON_KEYS

runner = CliRunner()
FIXTURES = Path(__file__).resolve().parents[1] / "data"


def _write_trials(path: Path) -> Path:
    """Agents a, b on tasks t0-t11, 3 trials each; t10 all infra errors for a; b never ran t11; t0 has 1 trial for b."""
    lines = []
    for agent in ("a", "b"):
        for t in range(12):
            if agent == "b" and t == 11:
                continue
            trials = 1 if (agent == "b" and t == 0) else 3
            for i in range(trials):
                rec = {"agent": agent, "task_id": f"t{t}", "trial": i}
                if agent == "a" and t == 10:
                    rec["status"] = "infra_error"
                else:
                    rec["success"] = (t + i) % 2 == 0 if agent == "a" else t < 6
                lines.append(json.dumps(rec))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_json_lists_tasks_per_value_extrapolated_and_excluded(tmp_path):
    path = _write_trials(tmp_path / "runs.jsonl")
    res = runner.invoke(app, ["estimate", str(path), "--k", "1,3", "--json", "--n-boot", "200"])
    assert res.exit_code == 0, res.output
    records = {(r["agent"], r["k"]): r for r in json.loads(res.stdout)}
    assert all(list(r) == list(JSON_KEYS) for r in records.values())
    a1, a3 = records[("a", 1)], records[("a", 3)]
    # suite = t0..t11 (12 tasks); a has no usable trial on t10 (all 3 missing)
    assert a1["n_tasks_suite"] == 12 and a1["n_tasks"] == 11 and a1["extrapolated"] == pytest.approx(1 / 12)
    assert a1["excluded_tasks"] == [{"task_id": "t10", "reason": "all 3 trials missing (infra_error or judge_missing)"}]
    assert a3["n_tasks"] == 11 and a3["n_tasks_dropped"] == 0 and a3["under_half"] is False
    b1, b3 = records[("b", 1)], records[("b", 3)]
    assert b1["excluded_tasks"] == [{"task_id": "t11", "reason": "not run by this agent (other agents ran it)"}]
    assert b3["n_tasks"] == 10 and b3["dropped_tasks"] == ["t0"] and b3["extrapolated"] == pytest.approx(2 / 12)
    # b solves t0-t5 on every trial: per-task pass^3 is 1 on t1-t5 and 0 on t6-t10 (t0 dropped: 1 trial)
    assert b3["pass_hat_k"] == pytest.approx(5 / 10)
    # exactly 5 tasks' worth of successes and of failures: not a boundary case, so the bootstrap
    assert b3["pass_hat_k_ci_method"] == "percentile bootstrap"
    assert {r["ci_prob"] for r in records.values()} == {0.95}


def test_table_shows_tasks_marks_and_exclusions():
    res = runner.invoke(app, ["estimate", str(FIXTURES / "metr_counts.csv"), "--k", "1,8", "--n-boot", "100",
                              "--ci-prob", "0.9"])  # fmt: skip
    assert res.exit_code == 0, res.output
    out = res.stdout
    assert "90% intervals" in out and "95%" not in out
    assert "16/83 *" in out  # davinci-002 ran 16 of the 83 tasks: under half
    assert "78/83" in out  # Claude 3 Opus at k = 8
    assert "* rests on under half of the tasks" in out
    assert "† Clopper-Pearson interval" in out and "†" in out.split("* rests")[0]
    assert "excluded for davinci-002 (67 tasks without a usable trial)" in out
    assert "not run by this agent" in out and "and 57 more (all in --json)" in out
    assert "n < k: share of those 83 tasks with fewer than k usable trials of the agent" in out


def test_bad_interval_probability_is_a_usage_error():
    res = runner.invoke(app, ["estimate", str(FIXTURES / "metr_counts.csv"), "--ci-prob", "1.5"])
    assert res.exit_code == 2
    assert "--ci-prob must be in (0, 1)" in res.output


def test_paired_table_and_json(tmp_path):
    rows = ["agent,task_id,n,c"]
    for i in range(30):
        rows.append(f"A,t{i:02d},1,{int(i < 15)}")
        rows.append(f"B,t{i:02d},1,{int(6 <= i < 15)}")
    path = tmp_path / "pairs.csv"
    path.write_text("\n".join(rows) + "\n")
    res = runner.invoke(app, ["estimate", str(path), "--paired", "--json", "--n-boot", "2000"])
    assert res.exit_code == 0, res.output
    (rec,) = json.loads(res.stdout)
    assert (rec["agent_a"], rec["agent_b"], rec["k"]) == ("A", "B", 1)
    assert rec["pass_hat_k_diff"] == pytest.approx(0.2) and rec["mcnemar_p"] == pytest.approx(0.03125)
    assert rec["pass_hat_k_diff_ci_low"] == pytest.approx(2 / 30)
    res = runner.invoke(app, ["estimate", str(path), "--paired", "--n-boot", "500"])
    assert res.exit_code == 0, res.output
    assert "paired differences" in res.stdout and "+0.200" in res.stdout and "0.0312" in res.stdout


def test_table_says_which_intervals_and_counts_tasks_in_words(tmp_path):
    """One task: "the 1 task", "that task"; --n-boot 0: the title does not claim a bootstrap that was not done."""
    one = tmp_path / "one.jsonl"
    one.write_text("".join(json.dumps({"agent": "A", "task_id": "t", "trial": i, "success": i == 0}) + "\n"
                           for i in range(2)))
    res = runner.invoke(app, ["estimate", str(one)])
    text = " ".join(res.stdout.split())
    assert res.exit_code == 0, res.output
    assert "the 1 task in the input; share n < k: share of that task with" in text and "1 tasks" not in text
    path = _write_trials(tmp_path / "runs.jsonl")
    res = runner.invoke(app, ["estimate", str(path), "--n-boot", "0", "--k", "1"])
    text = " ".join(res.stdout.split())
    assert res.exit_code == 0, res.output
    assert "95% intervals (no bootstrap, --n-boot 0: Clopper-Pearson † only)" in text and "bootstrap)" not in text
    assert "--n-boot 0: no bootstrap, so an interval is given only where" in text
    res = runner.invoke(app, ["estimate", str(path), "--n-boot", "0", "--k", "1", "--paired"])
    text = " ".join(res.stdout.split())
    assert res.exit_code == 0, res.output
    assert "(no bootstrap, --n-boot 0: Clopper-Pearson (MOVER) only)" in text and "resamples the shared" not in text
    res = runner.invoke(app, ["estimate", str(path), "--n-boot", "200", "--k", "1"])
    assert "95% intervals (task-cluster bootstrap)" in " ".join(res.stdout.split())
    assert "the 12 tasks in the input; share n < k: share of those 12 tasks" in " ".join(res.stdout.split())

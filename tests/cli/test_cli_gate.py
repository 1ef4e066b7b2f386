"""``agentstats gate``: exit statuses (0 PASS, 1 FAIL, 75 RETRY, 2 input error, 130 interrupted), the decision
record, and sign-offs appended, never overwritten."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentstats.cli import app
from agentstats.cli.common import EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_OK, EXIT_RETRY, EXIT_USAGE

runner = CliRunner()


def write(path: Path, values: list[int], risk: str | None = None) -> Path:
    lines = []
    for i, v in enumerate(values):
        r: dict = {"id": f"q{i}", "scores": {"acc": v}}
        if risk:
            r["risk_level"] = risk
        lines.append(json.dumps(r) + "\n")
    path.write_text("".join(lines))
    return path


@pytest.fixture()
def files(tmp_path):
    cfg = tmp_path / "gate.yaml"
    cfg.write_text("thresholds:\n  acc: 0.7\nregression_tolerance: 0.05\n")
    return {
        "pass": write(tmp_path / "pass.jsonl", [1] * 60),
        "base": write(tmp_path / "base.jsonl", [1] * 60),
        "fail": write(tmp_path / "fail.jsonl", [1] * 20 + [0] * 40),
        "few": write(tmp_path / "few.jsonl", [1, 1, 1, 1, 0]),
        "few_base": write(tmp_path / "few_base.jsonl", [1, 1, 1, 1, 0]),
        "config": cfg,
        "dir": tmp_path,
    }


def gate(*args: str | Path):
    return runner.invoke(app, ["gate", *map(str, args)])


def test_exit_status_of_each_decision(files):
    r = gate(files["pass"], files["base"], "--config", files["config"])
    assert r.exit_code == EXIT_OK, r.output
    assert "PASS" in r.output
    r = gate(files["fail"], files["base"], "--config", files["config"])
    assert r.exit_code == EXIT_FAILURE, r.output
    assert "FAIL" in r.output
    r = gate(files["few"], files["few_base"], "--config", files["config"])
    assert r.exit_code == EXIT_RETRY, r.output
    assert "more examples would decide it" in r.output


def test_json_output_is_the_decision_record(files):
    r = gate(files["pass"], files["base"], "--config", files["config"], "--json")
    assert r.exit_code == EXIT_OK
    rec = json.loads(r.stdout)
    assert rec["decision"] == "PASS" and rec["schema"] == "agentstats.gate/2"
    assert len(rec["config_sha256"]) == 64 and len(rec["candidate"]["sha256"]) == 64
    assert {"agentstats", "numpy", "scipy", "python"} <= set(rec["versions"])
    assert rec["sign_off"] == []
    m = next(m for m in rec["metrics"] if m["stratum"] == "all")
    assert m["candidate"]["ci_low"] < m["candidate"]["mean"] < m["candidate"]["ci_high"]


def test_input_and_usage_errors_exit_2(files):
    bad_cfg = files["dir"] / "bad.yaml"
    bad_cfg.write_text("thresholds:\n  acc: 2\n")
    r = gate(files["pass"], files["base"], "--config", bad_cfg)
    assert r.exit_code == EXIT_USAGE
    assert "line 2, field 'thresholds.acc'" in r.output
    bad = files["dir"] / "bad.jsonl"
    bad.write_text('{"id": "a", "scores": {"acc": 7}}\n')
    r = gate(bad, files["base"], "--config", files["config"])
    assert r.exit_code == EXIT_USAGE
    assert "line 1" in r.output and "scores.acc" in r.output
    r = gate(files["dir"] / "absent.jsonl", files["base"], "--config", files["config"])
    assert r.exit_code == EXIT_USAGE
    r = gate(files["pass"], files["base"], "--config", files["config"], "--sign-off", "alice")
    assert r.exit_code == EXIT_USAGE and "--sign-off needs --out" in r.output


def test_interrupt_exits_130(files, monkeypatch):
    import agentstats.gating

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(agentstats.gating, "gate", interrupted)
    r = gate(files["pass"], files["base"], "--config", files["config"])
    assert r.exit_code == EXIT_INTERRUPTED
    assert r.output.strip().endswith("interrupted")


def test_sign_off_is_appended_never_overwritten(files):
    out = files["dir"] / "record.json"
    args = [files["few"], files["few_base"], "--config", files["config"], "--out", out]
    assert gate(*args).exit_code == EXIT_RETRY
    assert json.loads(out.read_text())["sign_off"] == []
    assert gate(*args, "--sign-off", "alice").exit_code == EXIT_RETRY
    assert gate(*args, "--sign-off", "bob").exit_code == EXIT_RETRY
    assert gate(*args).exit_code == EXIT_RETRY  # a plain re-run keeps them
    rec = json.loads(out.read_text())
    assert [s["name"] for s in rec["sign_off"]] == ["alice", "bob"]
    assert all(s["decision"] == "RETRY" for s in rec["sign_off"])
    # other inputs: the signed record is left as it was
    before = out.read_bytes()
    r = gate(files["pass"], files["base"], "--config", files["config"], "--out", out)
    assert r.exit_code == EXIT_USAGE and "signed off (alice, bob)" in r.output
    assert out.read_bytes() == before
    # a file that is not a decision record is never replaced
    other = files["dir"] / "notes.json"
    other.write_text('{"mine": 1}')
    r = gate(*args[:-1], other)
    assert r.exit_code == EXIT_USAGE and other.read_text() == '{"mine": 1}'


def test_threshold_one_cell_says_what_was_checked(tmp_path):
    cand, base = tmp_path / "c.jsonl", tmp_path / "b.jsonl"
    cand.write_text("".join(json.dumps({"id": i, "metric": "fmt", "value": True}) + "\n" for i in range(30)))
    base.write_text("".join(json.dumps({"id": i, "metric": "fmt", "value": i % 5 != 0}) + "\n" for i in range(30)))
    cfg = tmp_path / "one.yaml"
    cfg.write_text("thresholds: {fmt: 1.0}\n")
    r = gate(cand, base, "--config", cfg)
    assert "no failure observed on 30 examples: met" in r.output and "(>= 1)" not in r.output
    rec = json.loads(gate(cand, base, "--config", cfg, "--json").output)
    assert rec["metrics"][0]["p_meets_threshold"] is None and rec["metrics"][0]["n_failures"] == 0


def test_table_output_names_efficiency_unpaired_ids_and_triggers(tmp_path):
    cand, base = tmp_path / "c.jsonl", tmp_path / "b.jsonl"
    cand.write_text(
        "".join(
            json.dumps({"id": f"q{i}", "scores": {"acc": 1}, "tokens": 300, "tags": ["regulated"] if i == 0 else []})
            + "\n"
            for i in range(61)
        )
    )
    base.write_text("".join(json.dumps({"id": f"q{i}", "scores": {"acc": 1}, "tokens": 100}) + "\n" for i in range(60)))
    cfg = tmp_path / "gate.yaml"
    cfg.write_text("efficiency:\n  tokens: 0.2\n")
    r = gate(cand, base, "--config", cfg)
    assert r.exit_code == EXIT_FAILURE, r.output
    assert "tokens: candidate / baseline = 3.000" in r.output and "P(> 1.2) = 1.000: failed" in r.output
    assert "1 ids only in the candidate" in r.output
    assert "human review required" in r.output and "sensitive_tags" in r.output


@pytest.mark.slow  # an end-to-end run (2.5-4 s); the README's test command stays under 2 minutes
def test_store_rows_append_and_carry_sign_offs(files):
    from agentstats.store import RunStore

    store = files["dir"] / "agentstats.duckdb"
    r = gate(files["pass"], files["base"], "--config", files["config"], "--store", store)
    assert r.exit_code == EXIT_OK, r.output
    r = gate(files["pass"], files["base"], "--config", files["config"], "--store", store, "--sign-off", "A. One")
    assert r.exit_code == EXIT_OK, r.output
    r = gate(files["pass"], files["base"], "--config", files["config"], "--store", store, "--sign-off", "B. Two",
             "--json")
    assert r.exit_code == EXIT_OK, r.output
    assert [s["name"] for s in json.loads(r.stdout)["sign_off"]] == ["A. One", "B. Two"]  # as stored
    # other inputs: a row of its own, no sign-off carried over
    r = gate(files["fail"], files["base"], "--config", files["config"], "--store", store)
    assert r.exit_code == EXIT_FAILURE, r.output
    with RunStore(store) as st:
        rows = st.gate_decisions()
        assert [r["decision"] for r in rows] == ["PASS", "PASS", "PASS", "FAIL"]
        # rows are never updated: each keeps the sign-offs it was written with, the newest holds them all
        assert [[s["name"] for s in r["sign_off"]] for r in rows] == [[], ["A. One"], ["A. One", "B. Two"], []]
        assert rows[2]["sign_off"][0] == rows[1]["sign_off"][0]  # carried as it was, time included
        assert rows[3]["candidate"]["sha256"] != rows[0]["candidate"]["sha256"]
        n_null = st.con.execute("SELECT count(*) FROM gate_decisions WHERE run_id IS NULL").fetchone()[0]
        assert n_null == 4
        st.write_run("candidate-run", [{"agent": "a", "task_id": "t", "trial": 0, "success": True}])
    # --store-run: the decision is recorded under a stored run; an unknown run is an input error and writes nothing
    r = gate(files["pass"], files["base"], "--config", files["config"], "--store", store, "--store-run",
             "candidate-run", "--sign-off", "C. Three")
    assert r.exit_code == EXIT_OK, r.output
    r = gate(files["pass"], files["base"], "--config", files["config"], "--store", store, "--store-run", "nope")
    assert r.exit_code == EXIT_USAGE and "no run named 'nope'" in r.output
    r = gate(files["pass"], files["base"], "--config", files["config"], "--store-run", "candidate-run")
    assert r.exit_code == EXIT_USAGE and "--store-run needs --store" in r.output
    # a record at --out signed for other inputs is refused before anything reaches the store
    out = files["dir"] / "record.json"
    assert gate(files["fail"], files["base"], "--config", files["config"], "--out", out, "--sign-off", "D").exit_code \
        == EXIT_FAILURE
    r = gate(files["pass"], files["base"], "--config", files["config"], "--out", out, "--store", store)
    assert r.exit_code == EXIT_USAGE and "not overwritten" in r.output
    with RunStore(store, read_only=True) as st:
        about = st.gate_decisions("candidate-run")
        assert len(about) == 1 and [s["name"] for s in about[0]["sign_off"]] == ["C. Three"]  # per run
        assert len(st.gate_decisions()) == 5
        assert st.run_info("candidate-run")["records"]["gate_decisions"] == 1


def test_committed_gate_example_reproduces_the_loops_decisions():
    """docs/gate.md's example: the committed config gives each loop iteration the decision the loop recorded."""
    root = Path(__file__).resolve().parents[2] / "data" / "example_loop"
    codes = {"PASS": EXIT_OK, "FAIL": EXIT_FAILURE, "RETRY": EXIT_RETRY}
    for it in sorted((root / "run").glob("iter-*")):
        recorded = json.loads((it / "decision.json").read_text())["vs_baseline"]["decision"]
        res = runner.invoke(app, ["gate", str(it / "scores.jsonl"), str(root / "baseline.jsonl"),
                                  "--config", str(root / "gate.yaml"), "--json"])
        assert res.exit_code == codes[recorded], (it.name, res.output)
        assert json.loads(res.output)["decision"] == recorded


def test_previous_counts_the_next_look_and_the_store_finds_it(files):
    from agentstats.store import RunStore

    out1, out2 = files["dir"] / "look1.json", files["dir"] / "look2.json"
    assert gate(files["few"], files["few_base"], "--config", files["config"], "--out", out1).exit_code == EXIT_RETRY
    more = write(files["dir"] / "more.jsonl", [1] * 40 + [0] * 5)
    r = gate(more, more, "--config", files["config"], "--previous", out1, "--out", out2)
    # identical sets of 45: P(difference < -0.05) = 0.047 (Dirichlet(5, 1, 1, 40)), above look 2's 0.05 / 6
    assert r.exit_code == EXIT_RETRY, r.output
    assert "look 2: this look decides at 0.167 of each error rate" in r.output
    rec = json.loads(out2.read_text())
    assert rec["look"]["number"] == 2 and rec["look"]["previous"]["look"] == 1
    # a previous record of another comparison is an input error
    other = files["dir"] / "other.yaml"
    other.write_text("thresholds:\n  acc: 0.5\n")
    r = gate(more, more, "--config", other, "--previous", out1)
    assert r.exit_code == EXIT_USAGE and "configuration differs" in r.output
    # the run store's records of the run are the earlier looks when no --previous is given
    store = files["dir"] / "looks.duckdb"
    with RunStore(store) as st:
        st.write_run("cand", [{"agent": "a", "task_id": "t", "trial": 0, "success": True}])
    args = ["--config", files["config"], "--store", store, "--store-run", "cand", "--json"]
    assert json.loads(gate(files["few"], files["few_base"], *args).stdout)["look"]["number"] == 1
    assert json.loads(gate(more, more, *args).stdout)["look"]["number"] == 2


def test_markdown_output_is_a_pull_request_comment(tmp_path):
    cand, base = tmp_path / "c.jsonl", tmp_path / "b.jsonl"
    cand.write_text("".join(json.dumps({"id": i, "scores": {"a|b*": 1}}) + "\n" for i in range(60)))
    base.write_text("".join(json.dumps({"id": i, "scores": {"a|b*": 1}}) + "\n" for i in range(60)))
    cfg = tmp_path / "g.yaml"
    cfg.write_text("thresholds: {'a|b*': 0.8}\n")
    r = gate(cand, base, "--config", cfg, "--markdown")
    assert r.exit_code == EXIT_OK, r.output
    lines = r.stdout.splitlines()
    assert lines[0] == "### agentstats gate: **PASS**"
    assert "| metric | stratum | n | candidate mean | P(>= threshold): check | difference | P(regression): check |" \
        in lines
    row = next(x for x in lines if x.startswith("| a"))
    assert row.startswith("| a\\|b\\* | all | 60 |")  # the metric's name escaped: no extra cell, no emphasis
    assert any("holm over 2 checks" in x for x in lines) and any(x.startswith("_look 1:") for x in lines)
    assert gate(cand, base, "--config", cfg, "--markdown", "--json").exit_code == EXIT_USAGE

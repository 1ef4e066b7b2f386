"""The loop's evaluate step (tool-call correctness, the refusal rate) and its rows in the run store.

Agents and optimizers are user callables; the judge (safety only) is the loopback OpenAI-compatible server, which
scores an answer 1 when it says ``GOOD`` or refuses (``I'm sorry, I cannot help``) and 0 otherwise.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
from judge_server import Reply, ScriptedOpenAIServer, user_text

from agentstats import load_trials
from agentstats.compare.runs import compare_runs
from agentstats.gating import GateConfig, gate
from agentstats.optimize import LoopConfig, optimize
from agentstats.optimize.storing import weighted_example_score
from agentstats.store import RunStore, StoreError

N = 20
MODEL = "test-model"
PROMPT_A, PROMPT_B = "You are PROMPT-A.", "You are PROMPT-B."
REFUSAL = "I'm sorry, I cannot help with that."


def judge(body) -> Reply:
    answer = user_text(body).split("ANSWER:")[-1]
    return Reply.verdict(1.0 if ("GOOD" in answer or "sorry" in answer) else 0.0, reasoning="scripted")


def agent(example, prompt):
    """PROMPT-A: GOOD on even examples, BAD on odd ones; PROMPT-B refuses the odd ones instead."""
    i = int(example["id"][1:])
    if i % 2 == 0:
        return {"response": f"GOOD answer {i}", "tokens": 10, "input_tokens": 7, "output_tokens": 3}
    return {"response": REFUSAL if "PROMPT-B" in prompt else f"BAD answer {i}", "tokens": 10}


def revise(prompt, result):
    return PROMPT_B


def world(tmp: Path, server: ScriptedOpenAIServer, **extra) -> dict:
    """Eval set, baseline (= PROMPT-A's quality, no refusals) and a loop config mapping."""
    tmp.mkdir(parents=True, exist_ok=True)
    ev = [{"id": f"q{i}", "input": f"Question {i}."} for i in range(N)]
    base = [{"id": f"q{i}", "tokens": 10,
             "scores": {"safety": float(i % 2 == 0), "refusal": 0.0}} for i in range(N)]
    (tmp / "eval.jsonl").write_text("".join(json.dumps(x) + "\n" for x in ev))
    (tmp / "base.jsonl").write_text("".join(json.dumps(x) + "\n" for x in base))
    return {"eval_set": str(tmp / "eval.jsonl"), "baseline": str(tmp / "base.jsonl"),
            "gate": {"thresholds": {"safety": 0.8}, "max_iterations": 3, "n_draws": 2000},
            "judge": {"model": MODEL, "base_url": server.base_url, "metrics": ["safety"], "max_tokens": 64,
                      "backoff_base_s": 0.01, "backoff_max_s": 0.05},
            "prices": {MODEL: [1.0, 2.0]}, **extra}


def count(store: Path, table: str, where: str = "") -> int:
    con = duckdb.connect(str(store), read_only=True)
    try:
        return con.execute(f"SELECT count(*) FROM {table} {where}").fetchone()[0]
    finally:
        con.close()


# -- refusal ----------------------------------------------------------------------------------------------------
def test_refusals_up_with_safety_fires_end_to_end(tmp_path):
    with ScriptedOpenAIServer(responder=judge) as srv:
        cfg = world(tmp_path, srv)
        result = optimize(config=cfg, agent=agent, optimizer=revise, prompt=PROMPT_A, run_dir=tmp_path / "run")
    # iteration 1 is the baseline's twin; iteration 2 refuses the 10 odd examples and the judge calls that safe
    its = {s["iteration"]: {m["metric"]: m for m in s["metrics"]} for s in result.iterations}
    assert its[1]["refusal"]["mean"] == pytest.approx(1 / 22, abs=0.01)  # 0 of 20: Beta(1, 21) mean
    assert its[2]["refusal"]["mean"] == pytest.approx(11 / 22, abs=0.01)  # 10 of 20
    assert its[2]["safety"]["mean"] == pytest.approx(21 / 22, abs=0.01)
    assert result.best_iteration == 2 and result.decision == "PASS" and result.stop_reason == "pass"
    kinds = {t.kind: t for t in result.triggers}
    assert "refusals_up_with_safety" in kinds
    ev = kinds["refusals_up_with_safety"].evidence
    assert ev["p_refusal_up"] > 0.99 and ev["p_safety_up"] > 0.99
    assert ev["refusal_difference"]["mean"] == pytest.approx(0.5, abs=0.06)
    assert result.review_required
    # the refusal rate is review-only: no check of it, and iteration 1 (no change) fires no trigger
    record = json.loads((tmp_path / "run" / "iter-002" / "decision.json").read_text())["vs_baseline"]
    assert {c["metric"] for c in record["checks"]} == {"safety"}
    first = json.loads((tmp_path / "run" / "iter-001" / "decision.json").read_text())["vs_baseline"]
    assert not [t for t in first["triggers"] if t["kind"] == "refusals_up_with_safety"]
    # the matcher is the metric catalogue's: per example, 1 exactly on the refusals
    scores = [json.loads(x) for x in (tmp_path / "run" / "iter-002" / "scores.jsonl").read_text().splitlines()]
    assert [r["scores"]["refusal"] for r in scores] == [float(i % 2) for i in range(N)]


def test_refusal_is_decisive_only_when_the_config_names_it():
    # 100 examples: safety 1 everywhere on both sides, refusals down from 75 to 10
    cand = [{"id": f"q{i}", "scores": {"safety": 1.0, "refusal": float(i < 10)}} for i in range(100)]
    base = [{"id": f"q{i}", "scores": {"safety": 1.0, "refusal": float(i < 75)}} for i in range(100)]
    d = gate(cand, base, {"thresholds": {"safety": 0.9}})
    assert {c.metric for c in d.checks} == {"safety"} and d.decision == "PASS"
    refusal = next(m for m in d.metrics if m.metric == "refusal" and m.stratum == "all")
    assert refusal.p_worse > 0.99  # reported, compared, not decisive
    # named (a set of requests that must be refused): an ordinary higher-is-better metric with its checks
    d = gate(cand, base, {"thresholds": {"safety": 0.9, "refusal": 0.5}})
    assert {c.metric for c in d.checks if c.kind == "regression"} == {"safety", "refusal"}
    assert d.decision == "FAIL"
    assert GateConfig().is_review_only("refusal") and not GateConfig(weights={"refusal": 1}).is_review_only("refusal")
    # the loop's per-example score leaves it out too
    assert weighted_example_score({"safety": 1.0, "refusal": 1.0}, GateConfig()) == 1.0
    assert weighted_example_score({"safety": 0.0, "refusal": 1.0, "x": None}, GateConfig()) == 0.0


def test_refusal_switches(tmp_path):
    base = {"eval_set": tmp_path / "e.jsonl", "baseline": tmp_path / "b.jsonl"}
    judged = {"model": MODEL, "metrics": ["safety"]}
    assert LoopConfig(**base, judge=judged).refusal_metric() == "refusal"
    assert LoopConfig(**base, judge={"model": MODEL, "metrics": ["relevance"]}).refusal_metric() is None
    assert LoopConfig(**base, judge=judged, evaluate={"refusal": False}).refusal_metric() is None
    assert LoopConfig(**base, evaluate={"refusal": True}, gate={"review": {"refusal_metric": "declined"}}
                      ).refusal_metric() == "declined"
    with pytest.raises(ValueError, match="refusal_metric is null"):
        LoopConfig(**base, evaluate={"refusal": True}, gate={"review": {"refusal_metric": None}}).refusal_metric()


# -- tool calls -------------------------------------------------------------------------------------------------
WEATHER = {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                 "required": ["city"]}}
BOOK = {"type": "function", "function": {"name": "book", "parameters": {
    "type": "object", "properties": {"day": {"type": "string"}}, "required": ["day"]}}}


def w(city):
    return {"name": "get_weather", "arguments": {"city": city}}


#: (expected calls or None for "not scored", the agent's calls, and the hand-computed scores)
TOOL_CASES = [
    # right call
    ([w("Paris")], [w("Paris")], {"tool_calls_correct": 1.0, "tool_selection": 1.0, "tool_parameters": 1.0,
                                  "tool_calls_valid": 1.0}),
    # right tool, wrong argument: 1 name-matched pair of 1; its argument score 0 of 1 key
    ([w("Paris")], [w("Rome")], {"tool_calls_correct": 0.0, "tool_selection": 1.0, "tool_parameters": 0.0,
                                 "tool_calls_valid": 1.0}),
    # one of two expected calls made: selection 1 / max(1, 2), parameters (1 + 0) / 2
    ([w("Paris"), {"name": "book", "arguments": {"day": "mon"}}], [w("Paris")],
     {"tool_calls_correct": 0.0, "tool_selection": 0.5, "tool_parameters": 0.5, "tool_calls_valid": 1.0}),
    # no call expected and none made (OpenAI wire format is read too)
    ([], [], {"tool_calls_correct": 1.0, "tool_selection": 1.0, "tool_calls_valid": 1.0}),
    # no call expected, one made
    ([], [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}],
     {"tool_calls_correct": 0.0, "tool_selection": 0.0, "tool_calls_valid": 1.0}),
    # a wrong type: neither correct nor valid against the spec
    ([w("Oslo")], [{"name": "get_weather", "arguments": {"city": 7}}],
     {"tool_calls_correct": 0.0, "tool_selection": 1.0, "tool_parameters": 0.0, "tool_calls_valid": 0.0}),
    # a tool without a spec: invalid
    ([], [{"name": "delete_all", "arguments": {}}], {"tool_calls_correct": 0.0, "tool_selection": 0.0,
                                                     "tool_calls_valid": 0.0}),
    # nothing expected given: only validity is scored
    (None, [w("Paris")], {"tool_calls_valid": 1.0}),
]


def test_tool_call_metrics_in_the_loop(tmp_path):
    tmp_path.mkdir(exist_ok=True)
    ev, base = [], []
    for i, (expected, _, _) in enumerate(TOOL_CASES):
        row = {"id": f"t{i}", "input": f"Task {i}."}
        if expected is not None:
            row["expected_tool_calls"] = expected
        ev.append(row)
        base.append({"id": f"t{i}", "scores": {"tool_calls_valid": 1.0}})
    (tmp_path / "eval.jsonl").write_text("".join(json.dumps(x) + "\n" for x in ev))
    (tmp_path / "base.jsonl").write_text("".join(json.dumps(x) + "\n" for x in base))
    cfg = {"eval_set": str(tmp_path / "eval.jsonl"), "baseline": str(tmp_path / "base.jsonl"),
           "gate": {"max_iterations": 1, "n_draws": 1000},
           "evaluate": {"tool_calls": {"components": True, "tools": [WEATHER, BOOK]}}}

    def tool_agent(example, prompt):
        return {"response": "done", "tool_calls": TOOL_CASES[int(example["id"][1:])][1]}

    store = tmp_path / "s.duckdb"
    result = optimize(config=cfg, agent=tool_agent, optimizer=revise, prompt=PROMPT_A, run_dir=tmp_path / "run",
                      store=store, store_run="tools")
    scores = [json.loads(x) for x in (tmp_path / "run" / "iter-001" / "scores.jsonl").read_text().splitlines()]
    for rec, (_, _, want) in zip(scores, TOOL_CASES, strict=True):
        assert rec["scores"] == pytest.approx(want), rec["id"]
    means = {m["metric"]: m for m in result.iterations[0]["metrics"]}
    assert "refusal" not in means  # no safety judge: the refusal rate is off
    assert means["tool_calls_correct"]["n"] == 7  # the example without expected calls has no value
    # the calls reach the store's tool_calls table: made and expected
    with RunStore(store, read_only=True) as st:
        calls = st.frame("tools/iter-001", "tool_calls")
    assert (calls["kind"] == "call").sum() == sum(len(c) for _, c, _ in TOOL_CASES)
    assert (calls["kind"] == "expected").sum() == sum(len(e or []) for e, _, _ in TOOL_CASES)


def test_tool_call_settings_are_checked(tmp_path):
    base = {"eval_set": tmp_path / "e.jsonl", "baseline": tmp_path / "b.jsonl"}
    with pytest.raises(ValueError, match="unknown weight"):
        LoopConfig(**base, evaluate={"tool_calls": {"weights": {"speed": 1}}})
    with pytest.raises(ValueError, match="repeat"):
        LoopConfig(**base, evaluate={"tool_calls": {"tools": [WEATHER, WEATHER]}})
    st = LoopConfig(**base, evaluate={"tool_calls": {"sequence_matters": True, "components": True}}).evaluate
    assert st.tool_calls is not None
    assert st.tool_calls.metrics() == ["tool_calls_correct", "tool_selection", "tool_parameters", "tool_sequence"]


# -- the run store ----------------------------------------------------------------------------------------------
@pytest.mark.slow  # 1.5-3 s; the README's test command stays under 2 minutes
def test_iterations_and_baseline_in_the_store(tmp_path):
    store = tmp_path / "agentstats.duckdb"
    with ScriptedOpenAIServer(responder=judge) as srv:
        cfg = world(tmp_path, srv, store=str(store))
        result = optimize(config=cfg, agent=agent, optimizer=revise, prompt=PROMPT_A, run_dir=tmp_path / "r1")
    assert result.best_iteration == 2
    with RunStore(store, read_only=True) as st:
        runs = st.runs().set_index("name")
        assert sorted(runs.index) == ["r1/baseline", "r1/iter-001", "r1/iter-002"]
        assert set(runs["status"]) == {"completed"} and set(runs["trials"]) == {N}
        info = st.run_info("r1/iter-002")
        assert info["config"]["prompt"] == PROMPT_B and info["config"]["iteration"] == 2
        # one metric result per example and metric (safety, refusal); one gate decision per iteration
        assert info["records"]["metric_results"] == 2 * N and info["records"]["gate_decisions"] == 1
        mr = st.frame("r1/iter-002", "metric_results")
        safety = mr[mr["metric"] == "safety"].set_index("task_id")
        assert safety["passed"].all() and (safety["value"] == 1.0).all()  # threshold 0.8
        assert mr.loc[mr["metric"] == "refusal", "passed"].isna().all()  # no threshold
        decisions = st.gate_decisions("r1/iter-002")
        assert [d["decision"] for d in decisions] == ["PASS"]
        assert decisions[0]["loop"] == {"iteration": 2, "vs_best": "PASS", "p_better_than_best": pytest.approx(
            result.iterations[1]["p_better_than_best"]), "improved": True, "best_before": 1}
        assert "refusals_up_with_safety" in {t["kind"] for t in decisions[0]["triggers"]}
    # load_trials reads an iteration; compare_runs pairs it with the baseline on the examples
    trials = list(load_trials(store, run="r1/iter-002"))
    assert len(trials) == N and trials[1].interactions[0].answer == REFUSAL
    assert trials[0].usage.input_tokens == 7 and trials[0].meta["metrics"] == {"safety": 1.0, "refusal": 0.0}
    assert [t.reward for t in trials] == [1.0] * N  # the weighted score: safety alone (refusal is review-only)
    cmp = compare_runs(load_trials(store, run="r1/baseline"), trials, names=["baseline", "iter-2"], k=[1])
    row = cmp.pass_k.iloc[0]
    # pass@1: baseline 10 of 20 (safety 1 on even examples), iteration 2 20 of 20
    assert (row["pass_at_k_a"], row["pass_at_k_b"]) == (1.0, 0.5) and row["pass_at_k_diff"] == pytest.approx(0.5)
    m = cmp.metrics.set_index("metric")
    assert m.loc["refusal", "diff"] == pytest.approx(0.5) and m.loc["safety", "diff"] == pytest.approx(0.5)
    # on the command line: --store names the run store, the runs are its run names
    from typer.testing import CliRunner

    from agentstats.cli import app

    res = CliRunner().invoke(app, ["compare", "r1/baseline", "r1/iter-002", "--store", str(store),
                                   "--k", "1", "--no-bayes", "--json"])
    assert res.exit_code == 0, res.output
    pk = json.loads(res.stdout)["pass_k"][0]
    assert (pk["agent_a"], pk["agent_b"]) == ("r1/iter-002", "r1/baseline") and pk["pass_at_k_diff"] == 0.5
    res = CliRunner().invoke(app, ["compare", "r1/baseline", "r1/iter-009", "--store", str(store)])
    assert res.exit_code == 2 and "no run named 'r1/iter-009'" in res.output
    # another loop run in the same folder name prefix is refused
    with ScriptedOpenAIServer(responder=judge) as srv:
        cfg = world(tmp_path, srv, store=str(store))
        with pytest.raises(StoreError, match="holds runs named r1/"):
            optimize(config=cfg, agent=agent, optimizer=revise, prompt=PROMPT_A, run_dir=tmp_path / "x" / "r1")


@pytest.mark.slow  # an end-to-end run (2.5-4 s); the README's test command stays under 2 minutes
def test_resume_writes_each_iteration_once(tmp_path, monkeypatch):
    """A Ctrl-C in iteration 2 and a failed store write in iteration 3 (rolled back); the resumes store each
    iteration exactly once."""
    store = tmp_path / "s.duckdb"
    stop = {"at": "q5"}

    def flaky_agent(example, prompt):
        if prompt == PROMPT_B and example["id"] == stop["at"]:
            raise KeyboardInterrupt
        return agent(example, prompt)

    def optimizer(prompt, result):
        return PROMPT_B if prompt == PROMPT_A else PROMPT_B + " Be brief."

    with ScriptedOpenAIServer(responder=judge) as srv:
        cfg = world(tmp_path, srv, store=str(store), store_run="loop")
        cfg["gate"]["thresholds"] = {"safety": 0.999}  # never passes: runs to max_iterations (3)
        kw = {"config": cfg, "agent": flaky_agent, "optimizer": optimizer, "prompt": PROMPT_A,
              "run_dir": tmp_path / "run"}
        with pytest.raises(KeyboardInterrupt):
            optimize(**kw)
        assert count(store, "runs") == 2 and count(store, "trials") == 2 * N  # the baseline and iteration 1
        stop["at"] = None
        real = RunStore.append_rows

        def failing(self, table, columns):  # inside iteration 3's transaction, after its run and trials
            if table == "gate_decisions" and self.has_run("loop/iter-003"):
                raise OSError("disk full")
            return real(self, table, columns)

        monkeypatch.setattr(RunStore, "append_rows", failing)
        with pytest.raises(OSError, match="disk full"):
            optimize(**kw, resume=True)
        monkeypatch.setattr(RunStore, "append_rows", real)
        # iteration 3's write was rolled back whole: no run, no trials, no rows of it
        assert count(store, "runs") == 3 and count(store, "trials") == 3 * N
        assert count(store, "metric_results") == 2 * 2 * N and count(store, "gate_decisions") == 2
        result = optimize(**kw, resume=True)
        again = optimize(**kw, resume=True)
    assert result.stop_reason == again.stop_reason and [s["iteration"] for s in again.iterations] == [1, 2, 3]
    assert count(store, "runs") == 4  # baseline + 3 iterations, each once
    assert count(store, "trials") == 4 * N and count(store, "interactions") == 3 * N
    assert count(store, "metric_results") == 3 * 2 * N and count(store, "gate_decisions") == 3
    assert count(store, "trials", "WHERE agent = 'loop/iter-003'") == N


def test_store_settings_in_a_config_file(tmp_path):
    from agentstats.optimize import LoopConfigError, load_loop_config

    (tmp_path / "e.jsonl").write_text('{"id": 1, "input": "x"}\n')
    (tmp_path / "b.jsonl").write_text('{"id": 1, "scores": {"safety": 1}}\n')
    p = tmp_path / "loop.yaml"
    p.write_text("eval_set: e.jsonl\nbaseline: b.jsonl\nstore: runs/agentstats.duckdb\nstore_run: v2\n"
                 "evaluate:\n  tool_calls: {validate: true, components: true}\n")
    cfg = load_loop_config(p)
    assert cfg.store == tmp_path / "runs" / "agentstats.duckdb" and cfg.store_run == "v2"  # relative to the file
    assert cfg.evaluate.tool_calls is not None and cfg.evaluate.tool_calls.validate_calls is True
    assert "tool_calls_valid" in cfg.scored_metrics()
    p.write_text("eval_set: e.jsonl\nbaseline: b.jsonl\nstore_run: '  '\nevaluate:\n  tool_calls: {threshold: 1}\n")
    with pytest.raises(LoopConfigError) as err:
        load_loop_config(p)
    assert "line 3, field 'store_run'" in str(err.value) and "line 5, field 'evaluate.tool_calls.threshold'" in \
        str(err.value)

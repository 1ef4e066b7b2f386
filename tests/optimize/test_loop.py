"""The evaluator-optimizer loop end to end against the loopback OpenAI-compatible server (agent, judge and optimizer
all served by it; the scripted world is in tests/loop_helpers.py), plus its parts: policy-text triggers, the budget,
the config loader, the eval-set loader, resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
from judge_server import Reply, ScriptedOpenAIServer, user_text
from loop_helpers import PROMPTS, body_key, good_in_a, make_world, point_at, repeated, responder
from typer.testing import CliRunner

from agentstats.cli import app
from agentstats.llm.budget import Budget
from agentstats.llm.client import LLMClient
from agentstats.llm.prompts.loop import GROUNDEDNESS
from agentstats.optimize import (
    LoopConfigError,
    LoopError,
    load_loop_config,
    optimize,
    policy_triggers,
    prompt_diff,
)
from agentstats.optimize.config import JudgeSettings
from agentstats.scoring.judge.verdicts import Verdict

REPO = Path(__file__).resolve().parents[2]
#: Cost of one answered request of the test server: 120 prompt and 30 completion tokens at $1 / $2 per 1M tokens.
PER_REQUEST = (120 * 1.0 + 30 * 2.0) / 1e6


class Counting:
    """The scripted responder, with HTTP errors at chosen request numbers (1-based arrival order)."""

    def __init__(self, errors: dict[int, Reply] | None = None, slow_at: int | None = None, slow_s: float = 60.0):
        self.errors = errors or {}
        self.slow_at = slow_at
        self.slow_s = slow_s
        self.n = 0
        self.lock = threading.Lock()
        self.errored: list[str] = []

    def __call__(self, body):
        with self.lock:
            self.n += 1
            n = self.n
        if n in self.errors:
            self.errored.append(body_key(body))
            return self.errors[n]
        reply = responder(body)
        if n == self.slow_at:
            reply.delay_s = self.slow_s
        return reply


def _log(run_dir: Path) -> list[dict]:
    return [json.loads(x) for x in (run_dir / "loop.jsonl").read_text().splitlines()]


# -- end to end ---------------------------------------------------------------------------------------------
@pytest.mark.slow  # end to end with retries: about 3.5 s
def test_loop_improves_then_regresses_with_429_and_500_mid_run(tmp_path):
    cfg_path = make_world(tmp_path)
    resp = Counting({5: Reply.http_error(429, retry_after_ms=5), 47: Reply.http_error(500)})
    with ScriptedOpenAIServer(responder=resp) as srv:
        point_at(cfg_path, srv)
        result = optimize(config=cfg_path, run_dir=tmp_path / "run")
        bodies = list(srv.requests)
    # iteration 1 (PROMPT-A) = baseline quality; 2 (PROMPT-B) all good; 3 (PROMPT-C) all bad
    its = {s["iteration"]: s for s in result.iterations}
    assert sorted(its) == [1, 2, 3]
    means = {i: {m["metric"]: m["mean"] for m in s["metrics"]} for i, s in its.items()}
    # posterior mean of a binary metric with k successes in 20 under the uniform prior: (k + 1) / 22
    for metric in ("groundedness", "relevance", "safety"):
        assert means[1][metric] == pytest.approx(11 / 22, abs=0.02)
        assert means[2][metric] == pytest.approx(21 / 22, abs=0.02)
        assert means[3][metric] == pytest.approx(1 / 22, abs=0.02)
    assert its[2]["improved"] and its[2]["p_better_than_best"] >= 0.95
    assert not its[3]["improved"] and its[3]["p_better_than_best"] < 0.05
    assert its[2]["decision"] == "RETRY"  # relevance >= 0.97 is not yet credible on 20 examples
    assert result.best_iteration == 2 and result.best_prompt == PROMPTS["B"]
    assert result.stop_reason == "no_improvement"
    assert result.decision == "RETRY" and result.exit_code == 75
    # the 429 and the 500 were retried: those two bodies were sent twice, nothing else was
    assert len(resp.errored) == 2
    assert sorted(repeated(bodies)) == sorted(resp.errored)
    assert all(not s.get("judge_missing") for s in result.iterations)
    # cost = answered requests x their price (the error replies cost nothing)
    assert result.cost_usd == pytest.approx((len(bodies) - 2) * PER_REQUEST, rel=1e-9)
    # the policy phrase left the prompt in the first revision: trigger with the line's evidence
    policy = [t for t in result.triggers if t.kind == "policy_text_changed"]
    assert len(policy) == 1
    assert policy[0].evidence["hits"] == [{"change": "removed", "line": 2, "text": "Never share account numbers."}]
    # durable log: one line per completed step, in order; the revisions stored as diffs
    steps = [(x["step"], x["iteration"]) for x in _log(tmp_path / "run")]
    assert steps == [("start", 0), ("generation", 1), ("evaluation", 1), ("decision", 1), ("revision", 1),
                     ("generation", 2), ("evaluation", 2), ("decision", 2), ("revision", 2),
                     ("generation", 3), ("evaluation", 3), ("decision", 3), ("stop", 3)]
    rev = next(x for x in _log(tmp_path / "run") if x["step"] == "revision")
    assert "-Never share account numbers." in rev["diff"] and "+Answer from the context only." in rev["diff"]
    assert rev["diff"] == prompt_diff(PROMPTS["A"], PROMPTS["B"], old_name="iteration 1", new_name="iteration 2")
    record = json.loads((tmp_path / "run" / "result.json").read_text())
    assert record["decision"] == "RETRY" and record["best_iteration"] == 2


@pytest.mark.slow  # an end-to-end run (2.5-4 s); the README's test command stays under 2 minutes
def test_loop_cli_stops_on_pass_and_exits_0(tmp_path):
    cfg_path = make_world(tmp_path, thresholds={"relevance": 0.8})
    with ScriptedOpenAIServer(responder=responder) as srv:
        point_at(cfg_path, srv)
        res = CliRunner().invoke(app, ["loop", "--config", str(cfg_path), "--run-dir", str(tmp_path / "run"),
                                       "--json"])
    assert res.exit_code == 0, res.output
    record = json.loads(res.stdout)
    assert record["decision"] == "PASS" and record["stop_reason"] == "pass"
    assert record["best_iteration"] == 2 and len(record["iterations"]) == 2
    # the tables say what is cached, where, and how to clear it; a second invocation answers every call from it
    with ScriptedOpenAIServer(responder=responder) as srv:
        res = CliRunner(env={"COLUMNS": "300"}).invoke(app, ["loop", "--config", str(cfg_path), "--run-dir",
                                                             str(tmp_path / "run"), "--resume"])
        assert srv.n_requests == 0, res.output
    text = " ".join(res.output.split())
    cache = tmp_path / "run" / "cache.sqlite3"
    assert cache.is_file() and f"call cache: {cache} keeps the reply of every model call already paid for" in text
    assert "delete the file (or use a new --run-dir) to ask the models again" in text


@pytest.mark.slow  # 1.5-3 s; the README's test command stays under 2 minutes
def test_budget_stop_never_exceeds_the_budget(tmp_path):
    cfg_path = make_world(tmp_path)
    # iteration 1 costs 80 answered calls (20 agent + 60 judge), the whole run 182: this budget ends it in between
    budget = 160 * PER_REQUEST
    with ScriptedOpenAIServer(responder=responder) as srv:
        point_at(cfg_path, srv, gate={"max_total_cost_usd": budget}, agent={"concurrency": 4},
                 judge={"concurrency": 4})
        result = optimize(config=cfg_path, run_dir=tmp_path / "run")
        sent = srv.n_requests
    assert result.stop_reason == "budget"
    assert "would exceed the budget" in result.stop_detail
    assert result.cost_usd <= budget
    assert result.cost_usd == pytest.approx(sent * PER_REQUEST, rel=1e-9)
    assert 81 < sent < 160  # iteration 1 and its revision completed; the estimates stopped the run before the budget
    # what was left unspent is at most the reservations of the calls in flight (concurrency 4) and the refused one
    ep = JudgeSettings(model="test-model", max_tokens=64)
    msgs = GROUNDEDNESS.render(query="This is question 19.", context="Fact 19.", answer="BAD answer to question 19")
    est = LLMClient(None, Budget(None), {"test-model": (1.0, 2.0)}).estimate(
        ep, msgs, json.dumps(Verdict.model_json_schema()), asks=3)
    assert est >= PER_REQUEST  # conservative
    assert budget - result.cost_usd < 5 * est
    assert result.best_iteration >= 1
    stop = _log(tmp_path / "run")[-1]
    assert stop["step"] == "stop" and stop["budget_refusals"] >= 1


@pytest.mark.slow  # an end-to-end run (2.5-4 s); the README's test command stays under 2 minutes
def test_stall_and_max_iterations_stops(tmp_path):
    cfg_path = make_world(tmp_path)
    with ScriptedOpenAIServer(responder=responder) as srv:
        point_at(cfg_path, srv, gate={"max_iterations": 2})
        result = optimize(config=cfg_path, run_dir=tmp_path / "run")
    assert result.stop_reason == "max_iterations" and result.best_iteration == 2
    assert [s["iteration"] for s in result.iterations] == [1, 2]


def test_wall_time_stop_before_any_call(tmp_path):
    cfg_path = make_world(tmp_path)
    with ScriptedOpenAIServer(responder=responder) as srv:
        point_at(cfg_path, srv, gate={"max_wall_seconds": 1e-6})
        time.sleep(0.01)
        result = optimize(config=cfg_path, run_dir=tmp_path / "run")
        assert srv.n_requests == 0
    assert result.stop_reason == "wall_time" and result.best_iteration is None
    assert result.decision == "RETRY" and result.exit_code == 75


@pytest.mark.slow  # a subprocess that imports the package and runs 110 calls at concurrency 1: about 40 s
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT, signal.SIGTERM], ids=["kill-9", "ctrl-c", "sigterm"])
def test_resume_after_kill_repeats_no_paid_call(tmp_path, sig):
    """Kill (or Ctrl-C) the CLI mid-iteration 2 while a request is in flight; the resume sends only what never got a
    reply."""
    cfg_path = make_world(tmp_path)
    run_dir = tmp_path / "run"
    store = tmp_path / "agentstats.duckdb"
    kill_at = 110  # iteration 1: 80 calls, its revision: 1, iteration 2: 20 agent calls, then 30 judge calls
    resp = Counting(slow_at=kill_at, slow_s=30.0)
    with ScriptedOpenAIServer(responder=resp) as srv:
        point_at(cfg_path, srv, agent={"concurrency": 1}, judge={"concurrency": 1})
        env = {**os.environ, "PYTHONWARNINGS": "ignore"}
        proc = subprocess.Popen([sys.executable, "-m", "agentstats", "loop", "--config", str(cfg_path),
                                 "--run-dir", str(run_dir), "--json", "--store", str(store)], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            t0 = time.monotonic()
            while srv.n_requests < kill_at and time.monotonic() - t0 < 120 and proc.poll() is None:
                time.sleep(0.05)
            assert srv.n_requests == kill_at, "the run did not reach the request to kill at"
            os.kill(proc.pid, sig)
            output, _ = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
        if sig in (signal.SIGINT, signal.SIGTERM):  # one line, exit 130 / 143, no traceback
            said = "interrupted" if sig == signal.SIGINT else "terminated"
            assert proc.returncode == 128 + sig and output.strip().splitlines()[-1] == said, output
            assert "Traceback" not in output
        else:
            assert proc.returncode == -signal.SIGKILL
        first = list(srv.requests)
        answered = {body_key(b) for b in first[: kill_at - 1]}  # concurrency 1: all but the last got their reply
        from agentstats.optimize.journal import SPENT_NAME, last_spent

        # the call in flight at the kill was reserved when sent (kill -9: still reserved; Ctrl-C: settled at the
        # reservation); that reservation, at least its real cost, counts on the resume
        last = last_spent(run_dir / SPENT_NAME)
        in_flight = last["cost_usd_so_far"] + last["reserved_usd"] - (kill_at - 1) * PER_REQUEST
        assert in_flight >= PER_REQUEST * (1 - 1e-9)
        srv.requests.clear()
        resp.slow_at = None
        steps_before = [(x["step"], x["iteration"]) for x in _log(run_dir)]
        assert ("generation", 2) in steps_before and ("evaluation", 2) not in steps_before
        with pytest.raises(LoopError, match="resume it"):
            optimize(config=cfg_path, run_dir=run_dir)
        assert _store_counts(store) == {"runs": 2, "trials": 40, "gate_decisions": 1}  # baseline, iteration 1
        result = optimize(config=cfg_path, run_dir=run_dir, resume=True, store=store)
        second = list(srv.requests)
    assert not answered & {body_key(b) for b in second}, "a call that got its reply was sent again"
    assert body_key(first[kill_at - 1]) in {body_key(b) for b in second}  # the one killed in flight is redone
    assert not repeated(second)
    assert result.stop_reason == "no_improvement" and result.best_iteration == 2
    assert result.cost_usd == pytest.approx((kill_at - 1 + len(second)) * PER_REQUEST + in_flight, rel=1e-9)
    assert result.n_requests == kill_at + len(second)  # the killed step's 30 judge requests too (it logged none)
    steps = [x["step"] for x in _log(run_dir)]
    assert steps.count("generation") == 3 and steps.count("resume") == 1
    # the run store: the baseline and each of the 3 iterations once (iteration 1 replayed, not rewritten)
    assert _store_counts(store) == {"runs": 4, "trials": 80, "gate_decisions": 3}


def _store_counts(path: Path) -> dict[str, int]:
    import duckdb

    con = duckdb.connect(str(path), read_only=True)
    try:
        return {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("runs", "trials", "gate_decisions")}
    finally:
        con.close()


@pytest.mark.slow  # three loop runs: about 3.5 s
def test_user_callables_are_cached_and_judge_missing_counted(tmp_path):
    cfg_path = make_world(tmp_path, n=20)
    calls = {"agent": 0, "optimizer": 0}

    def agent(example, prompt):
        calls["agent"] += 1
        good = "PROMPT-B" in prompt or good_in_a(int(example["id"][1:]))
        return {"response": f"{'GOOD' if good else 'BAD'} {example['id']}", "tokens": 10}

    def optimizer(prompt, result):
        calls["optimizer"] += 1
        assert result.iteration >= 1 and result.decision.decision in ("PASS", "FAIL", "RETRY")
        return PROMPTS["B"] if "PROMPT-A" in prompt else PROMPTS["C"]

    def judge(body):  # the judge never answers on examples 3 and 7: every retry fails
        if body.get("tools") and ("question 3." in user_text(body) or "question 7." in user_text(body)):
            return Reply.http_error(500)
        return responder(body)

    with ScriptedOpenAIServer(responder=judge) as srv:
        point_at(cfg_path, srv, judge={"retry_attempts": 2})
        cfg = json.loads(cfg_path.read_text())
        del cfg["agent"]
        cfg_path.write_text(json.dumps(cfg))
        result = optimize(config=cfg_path, agent=agent, optimizer=optimizer, run_dir=tmp_path / "run",
                          prompt=PROMPTS["A"])
        assert calls == {"agent": 60, "optimizer": 2}
        again = optimize(config=cfg_path, agent=agent, optimizer=optimizer, run_dir=tmp_path / "run",
                         prompt=PROMPTS["A"], resume=True)
    assert calls == {"agent": 60, "optimizer": 2}  # the resume replayed everything from the log and the cache
    assert again.best_iteration == result.best_iteration == 2
    missing = result.iterations[0]["metrics"]
    # the refusal rate (on by default with a safety judge) comes from the phrase matcher: never missing
    assert {m["metric"]: m["n_missing"] for m in missing} == {"groundedness": 2, "relevance": 2, "safety": 2,
                                                              "refusal": 0}
    assert result.iterations[0]["metrics"][0]["n"] == 18  # scored examples: the missing verdicts are left out
    assert any(t.kind == "judge_missing" for t in result.triggers)  # 2 of 20 > 5 %


# -- parts ----------------------------------------------------------------------------------------------------
def test_policy_triggers_name_phrase_line_and_change():
    old = "Be kind.\nNever give LEGAL ADVICE.\nKeep it short."
    new = "Be kind.\nKeep it short.\nYou may give legal advice when asked.\nRefunds need approval."
    diff = prompt_diff(old, new)
    trig = policy_triggers(diff, ["legal advice", "refund", "password"], iteration=4)
    by = {t.evidence["phrase"]: t.evidence["hits"] for t in trig}
    assert set(by) == {"legal advice", "refund"}
    assert by["legal advice"] == [{"change": "removed", "line": 2, "text": "Never give LEGAL ADVICE."},
                                  {"change": "added", "line": 3, "text": "You may give legal advice when asked."}]
    assert by["refund"] == [{"change": "added", "line": 4, "text": "Refunds need approval."}]
    assert policy_triggers(prompt_diff(old, old), ["legal advice"], 1) == []  # unchanged text never fires


def test_loop_config_errors_are_located(tmp_path):
    (tmp_path / "eval.jsonl").write_text('{"id": 1, "input": "x"}\n')
    p = tmp_path / "loop.yaml"
    p.write_text("eval_set: eval.jsonl\nbaseline: missing.jsonl\ngate:\n  max_iterations: 0\n"
                 "judge:\n  model: m\n  metrics: [groundedness, toxicity]\nbogus: 1\n")
    with pytest.raises(LoopConfigError) as exc:
        load_loop_config(p)
    text = "\n".join(exc.value.problems)
    assert "line 4, field 'gate.max_iterations'" in text
    assert "line 7, field 'judge.metrics'" in text and "toxicity" in text
    assert "line 8, field 'bogus'" in text
    p.write_text("eval_set: eval.jsonl\nbaseline: missing.jsonl\n")
    with pytest.raises(LoopConfigError, match=r"line 2, field 'baseline': no such file"):
        load_loop_config(p)


def test_resume_refuses_other_settings(tmp_path):
    cfg_path = make_world(tmp_path, n=6)

    def agent(example, prompt):
        return "GOOD"

    def optimizer(prompt, result):
        return prompt + "\nMore."

    kw = dict(agent=agent, optimizer=optimizer, run_dir=tmp_path / "run", prompt="P")
    cfg = json.loads(cfg_path.read_text())
    del cfg["judge"], cfg["agent"]
    cfg["evaluate"] = {"matcher": "contains"}
    cfg["gate"].update(max_iterations=2, thresholds={}, stop_after_no_improvement=5)
    cfg_path.write_text(json.dumps(cfg))
    base = tmp_path / "baseline.jsonl"
    base.write_text("".join(json.dumps({"id": f"q{i}", "scores": {"correct": 1.0},
                                        "risk_level": ("low", "high")[i % 2]}) + "\n" for i in range(6)))
    first = optimize(config=cfg_path, **kw)
    assert first.stop_reason == "max_iterations"
    with pytest.raises(LoopError, match="other settings"):
        optimize(config=cfg_path, resume=True, **{**kw, "prompt": "another prompt"})
    cfg["gate"]["max_iterations"] = 3  # budgets and iteration limits may change on a resume
    cfg_path.write_text(json.dumps(cfg))
    more = optimize(config=cfg_path, resume=True, **kw)
    assert [s["iteration"] for s in more.iterations] == [1, 2, 3]


@pytest.mark.slow  # 1.5-3 s; the README's test command stays under 2 minutes
def test_resume_keeps_the_logged_cost_and_requests_without_the_cache(tmp_path):
    """A run folder without its cache (data/example_loop ships none): the resume starts from the cost and the
    requests its log records and adds what it sends itself; the result, result.json and the log agree (they were
    reset to $0 and 0 requests)."""
    cfg_path = make_world(tmp_path, n=6)
    run = tmp_path / "run"
    with ScriptedOpenAIServer(responder=responder) as srv:
        point_at(cfg_path, srv, gate={"max_iterations": 1})
        first = optimize(config=cfg_path, run_dir=run)
        sent_first = srv.n_requests
        for f in run.glob("cache.sqlite3*"):
            f.unlink()
        same = optimize(config=cfg_path, run_dir=run, resume=True)  # nothing left to do: nothing sent
        assert srv.n_requests == sent_first
        point_at(cfg_path, srv, gate={"max_iterations": 2})
        more = optimize(config=cfg_path, run_dir=run, resume=True)
        sent_all = srv.n_requests
    assert first.stop_reason == "max_iterations" and sent_all > sent_first
    assert first.cost_usd == pytest.approx(sent_first * PER_REQUEST, rel=1e-9) and first.n_requests == sent_first
    assert same.cost_usd == pytest.approx(sent_first * PER_REQUEST, rel=1e-9) and same.n_requests == sent_first
    assert more.cost_usd == pytest.approx(sent_all * PER_REQUEST, rel=1e-9) and more.n_requests == sent_all
    record = json.loads((run / "result.json").read_text())
    assert record["cost_usd"] == pytest.approx(sent_all * PER_REQUEST, rel=1e-9) and record["n_requests"] == sent_all
    log = _log(run)
    assert [x["n_requests_so_far"] for x in log if x["step"] == "resume"] == [sent_first, sent_first]
    assert log[-1]["step"] == "stop" and log[-1]["n_requests_so_far"] == sent_all
    assert log[-1]["cost_usd_so_far"] == pytest.approx(sent_all * PER_REQUEST, rel=1e-9)


def test_requests_of_a_step_cut_short_are_counted_after_the_resume(tmp_path, monkeypatch):
    """A Ctrl-C in the middle of iteration 1's evaluation (after the 30th judge reply, before it is cached): the
    resumed run's totals are the server's request count x the price, though the step that was cut short logged
    nothing and one of its replies never reached the cache (it was counted only from the last logged step)."""
    from agentstats.llm.cache import JudgeCache

    cfg_path = make_world(tmp_path, n=20)
    run = tmp_path / "run"
    real_put = JudgeCache.put
    judged = [0]

    def put(self, key, payload, *, model="", prompt_id=""):
        if prompt_id != "agent":
            judged[0] += 1
            if judged[0] == 30:
                raise KeyboardInterrupt
        return real_put(self, key, payload, model=model, prompt_id=prompt_id)

    with ScriptedOpenAIServer(responder=responder) as srv:
        # concurrency 1: no request is in flight at the interrupt, so every request sent got its (priced) reply
        point_at(cfg_path, srv, agent={"concurrency": 1}, judge={"concurrency": 1}, gate={"max_iterations": 1})
        monkeypatch.setattr(JudgeCache, "put", put)
        with pytest.raises(KeyboardInterrupt):
            optimize(config=cfg_path, run_dir=run)
        monkeypatch.undo()
        sent_first = srv.n_requests
        assert sent_first == 20 + 30  # the 20 answers, then 30 of the 60 verdicts
        assert [x["step"] for x in _log(run)] == ["start", "generation"]
        result = optimize(config=cfg_path, run_dir=run, resume=True)
        sent_all = srv.n_requests
    assert sent_all == sent_first + 31  # the verdict never cached is asked again, with the 30 not asked before
    assert result.n_requests == sent_all
    assert result.cost_usd == pytest.approx(sent_all * PER_REQUEST, rel=1e-9)
    log = _log(run)
    assert [(x["n_requests_so_far"], x["cost_usd_so_far"]) for x in log if x["step"] == "resume"] == [
        (sent_first, pytest.approx(sent_first * PER_REQUEST, rel=1e-9))]
    assert log[-1]["step"] == "stop" and log[-1]["n_requests_so_far"] == sent_all
    record = json.loads((run / "result.json").read_text())
    assert record["n_requests"] == sent_all and record["cost_usd"] == pytest.approx(sent_all * PER_REQUEST, rel=1e-9)


def test_a_log_without_request_counts_takes_them_from_result_json(tmp_path):
    """Logs written before n_requests_so_far (data/example_loop's): the count is result.json's."""
    from agentstats.optimize.journal import recorded_so_far

    lines = [{"step": "start"}, {"step": "generation", "cost_usd_so_far": 0.5},
             {"step": "stop", "cost_usd_so_far": 2.0}]
    assert recorded_so_far(lines, tmp_path) == (2.0, 0)
    (tmp_path / "result.json").write_text(json.dumps({"cost_usd": 2.0, "n_requests": 110}))
    assert recorded_so_far(lines, tmp_path) == (2.0, 110)
    # a log cut short after the result was written (a resumed invocation killed mid-run): result.json is older
    assert recorded_so_far(lines[:2], tmp_path) == (0.5, 0)
    assert recorded_so_far([*lines, {"step": "resume", "cost_usd_so_far": 2.0, "n_requests_so_far": 7}],
                            tmp_path) == (2.0, 7)
    assert recorded_so_far([], tmp_path) == (0.0, 0)  # a new run


def test_the_running_totals_file_adds_what_the_log_missed_and_loses_a_line_cut_short(tmp_path):
    from agentstats.optimize.journal import SPENT_NAME, recorded_so_far

    lines = [{"step": "start"}, {"step": "generation", "cost_usd_so_far": 0.5, "n_requests_so_far": 20}]
    spent = tmp_path / SPENT_NAME
    whole = [json.dumps({"cost_usd_so_far": 0.5 + 0.01 * i, "n_requests_so_far": 20 + i}) + "\n" for i in range(1, 8)]
    spent.write_text("".join(whole) + '{"cost_usd_so_far": 9.0, "n_requests_so_')  # a kill mid-write
    cost, requests = recorded_so_far(lines, tmp_path)
    assert requests == 27 and cost == pytest.approx(0.57, abs=1e-12)
    assert spent.read_text() == "".join(whole)  # the cut-short line is gone; the next line starts on its own
    # a log ahead of the file (a copied folder without it, or an older run): the log's amounts
    assert recorded_so_far([*lines, {"step": "resume", "cost_usd_so_far": 3.0, "n_requests_so_far": 90}],
                            tmp_path) == (3.0, 90)


def test_a_refused_resume_shows_where_two_long_prompts_differ():
    """Two 201-character prompts that differ at character 101 were both cut to their same first 57 characters."""
    from agentstats.optimize.journal import resume_differences

    old, new = "x" * 100 + "A" + "y" * 100, "x" * 100 + "B" + "y" * 100
    data = {"eval_set": "e", "baseline": "b"}
    start = {"resume_settings": {"agent": {"prompt": old}}, "data_sha256": data, "prompt": old}
    differ = resume_differences(start, {"agent": {"prompt": new}}, data, new)
    # 24 characters before the difference, 60 in all, "..." where cut
    was, now = '"...' + "x" * 24 + "A" + "y" * 35 + '..."', '"...' + "x" * 24 + "B" + "y" * 35 + '..."'
    # the config's prompt is the starting prompt: one line, not two
    assert differ == [f"the starting prompt differs ({was} in the run, {now} now (they differ from character 101))"]
    # a difference near the end: the 60 characters before it
    start["prompt"] = "x" * 100 + "."
    (line,) = resume_differences({**start, "resume_settings": {}}, {}, data, "x" * 100 + "!")
    assert line == ('the starting prompt differs ("...' + "x" * 59 + '." in the run, "...' + "x" * 59
                    + '!" now (they differ from character 101))')
    # a newline is one character of the prompt, shown escaped
    start["prompt"] = "a\n" * 40
    (line,) = resume_differences({**start, "resume_settings": {}}, {}, data, "a\n" * 39 + "b\n")
    assert "(they differ from character 79)" in line and 'a\\nb\\n" now' in line


def test_resume_of_a_moved_run_folder_and_refusals_that_name_the_setting(tmp_path):
    import shutil

    from agentstats.optimize.journal import resume_settings

    first_dir = tmp_path / "first"
    cfg_path = make_world(first_dir, n=6)
    cfg = json.loads(cfg_path.read_text())
    del cfg["judge"], cfg["agent"]
    cfg["evaluate"] = {"matcher": "contains"}
    cfg["gate"].update(max_iterations=2, thresholds={}, stop_after_no_improvement=5)
    cfg_path.write_text(json.dumps(cfg))
    base = [{"id": f"q{i}", "scores": {"correct": 1.0}, "risk_level": ("low", "high")[i % 2]} for i in range(6)]
    (first_dir / "baseline.jsonl").write_text("".join(json.dumps(r) + "\n" for r in base))
    kw = dict(agent=lambda example, prompt: "GOOD", optimizer=lambda prompt, result: prompt + "\nMore.", prompt="P")
    optimize(config=cfg_path, run_dir=first_dir / "run", **kw)
    # the folder copied elsewhere: its config resolves eval_set and baseline to other absolute paths, same contents
    moved = tmp_path / "elsewhere" / "copy"
    shutil.copytree(first_dir, moved)
    moved_cfg = moved / "loop.json"
    cfg["gate"]["max_iterations"] = 3
    moved_cfg.write_text(json.dumps(cfg))
    more = optimize(config=moved_cfg, run_dir=moved / "run", resume=True, **kw)
    assert [s["iteration"] for s in more.iterations] == [1, 2, 3]
    # a log written before the settings were stored (only its config): compared by the same rule
    old_copy = tmp_path / "old"
    shutil.copytree(first_dir, old_copy)
    log_path = old_copy / "run" / "loop.jsonl"
    lines = [json.loads(x) for x in log_path.read_text().splitlines()]
    del lines[0]["resume_settings"]
    log_path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    (old_copy / "loop.json").write_text(json.dumps(cfg))
    again = optimize(config=old_copy / "loop.json", run_dir=old_copy / "run", resume=True, **kw)
    assert [s["iteration"] for s in again.iterations] == [1, 2, 3]
    # a refusal names each setting that differs, with both values
    cfg["gate"]["stop_after_no_improvement"] = 4
    moved_cfg.write_text(json.dumps(cfg))
    base[0]["scores"]["correct"] = 0.0
    (moved / "baseline.jsonl").write_text("".join(json.dumps(r) + "\n" for r in base))
    with pytest.raises(LoopError) as exc:
        optimize(config=moved_cfg, run_dir=moved / "run", resume=True, **{**kw, "prompt": "Q"})
    text = str(exc.value)
    assert "gate.stop_after_no_improvement: 5 in the run, 4 now" in text
    assert "the baseline's content differs" in text and "the eval set" not in text
    assert 'the starting prompt differs ("P" in the run, "Q" now)' in text
    # where an endpoint is, and where the files are, are not settings a resume must share
    a = {"eval_set": "/a/eval.jsonl", "baseline": "/a/b.jsonl", "gate": {"max_iterations": 2},
         "agent": {"model": "m", "base_url": "http://127.0.0.1:1/v1", "prompt_file": "/a/p.txt"}}
    b = {"eval_set": "/b/eval.jsonl", "baseline": "/b/b.jsonl", "gate": {"max_iterations": 9},
         "agent": {"model": "m", "base_url": "http://127.0.0.1:2/v1", "prompt_file": "/b/p.txt"}}
    assert resume_settings(a) == resume_settings(b) == {"gate": {}, "agent": {"model": "m"}}


# -- the gate report ----------------------------------------------------------------------------------------
def _callable_run(tmp_path: Path, prompt: str, revised: str) -> Path:
    cfg_path = make_world(tmp_path, n=8)
    cfg = json.loads(cfg_path.read_text())
    del cfg["judge"], cfg["agent"]
    cfg["evaluate"] = {"matcher": "contains"}
    cfg["gate"].update(max_iterations=2, thresholds={"correct": 0.5}, stop_after_no_improvement=5)
    cfg["policy_phrases"] = ["<script>"]
    cfg_path.write_text(json.dumps(cfg))
    (tmp_path / "baseline.jsonl").write_text("".join(
        json.dumps({"id": f"q{i}", "scores": {"correct": float(i % 2)}, "risk_level": ("low", "high")[i % 2]}) + "\n"
        for i in range(8)))
    optimize(config=cfg_path, agent=lambda ex, p: "GOOD", optimizer=lambda p, r: revised, run_dir=tmp_path / "run",
             prompt=prompt)
    return tmp_path / "run"


def test_gate_report_tables_read_the_run(tmp_path):
    from agentstats.report.gate import decision_markdown, metric_bundle, read_run, strata_table

    run = _callable_run(tmp_path, "Be brief.", "Be brief.\nCite *sources*.")
    view = read_run(run)
    bundle = metric_bundle(view)
    assert list(bundle["iteration"]) == [1, 2] and set(bundle["metric"]) == {"correct"}
    assert bundle["mean"].iloc[0] == pytest.approx(9 / 10, abs=0.02)  # 8 of 8 correct under the uniform prior
    strata = strata_table(view)
    assert set(strata["stratum"]) == {"all", "risk_level=low", "risk_level=high"}
    # low-risk examples: baseline 0 of 4, candidate 4 of 4
    low = strata.set_index("stratum").loc["risk_level=low"]
    assert low["baseline"] < 0.3 and low["candidate"] > 0.7
    md = decision_markdown(view)
    assert md.startswith("## Decision: **") and "stopped on **max\\_iterations**" in md


def test_gate_report_loop_table_has_integer_iterations(tmp_path):
    from agentstats.report.gate import loop_table, read_run

    view = read_run(_callable_run(tmp_path, "Be brief.", "Be brief.\nCite sources."))
    table = loop_table(view)
    assert list(table.columns[:3]) == ["iteration", "vs_baseline", "best_before"]
    assert list(table["iteration"]) == [1, 2] and all(type(i) is int for i in table["iteration"])
    assert pd.isna(table["best_before"].iloc[0]) and table["best_before"].iloc[1] == 1
    assert type(table["best_before"].iloc[1]) is int and pd.isna(table["vs_best"].iloc[0])


def test_gate_report_rows_show_each_metrics_own_check_and_the_efficiency_check(tmp_path):
    from agentstats.gating import gate
    from agentstats.report.gate import efficiency_table, metric_bundle, read_decision, strata_table

    # every metric as good as the baseline, tokens 30 % up on every example: only the efficiency check fails
    cand = [{"id": f"q{i}", "scores": {"acc": 1.0, "safety": 1.0}, "risk_level": ("low", "high")[i % 2],
             "tokens": 130} for i in range(40)]
    base = [{**r, "tokens": 100} for r in cand]
    record = gate(cand, base, {"thresholds": {"acc": 0.5}, "efficiency": {"tokens": 0.2}}).to_record()
    path = tmp_path / "record.json"
    path.write_text(json.dumps(record))
    assert record["decision"] == "FAIL"
    view = read_decision(path)
    bundle = metric_bundle(view).set_index("metric")
    assert "decision" not in bundle.columns
    # acc: P(mean >= 0.5) under Beta(41, 1) is 1 - 0.5**41: met; safety has no threshold
    assert bundle.loc["acc", "p_meets_threshold"] == pytest.approx(1 - 0.5**41, abs=1e-12)
    assert bundle.loc["acc", "threshold_check"] == "met" and pd.isna(bundle.loc["safety", "threshold_check"])
    assert set(bundle["regression_check"]) <= {"met", "undecided"}
    strata = strata_table(view)
    assert "failed" not in set(strata["regression_check"]) and len(strata) == 6
    (eff,) = efficiency_table(view).to_dict("records")
    # the ratio of means is 130 / 100 on every resample
    assert eff["field"] == "tokens" and eff["n_paired"] == 40
    assert eff["ratio"] == pytest.approx(1.3, abs=1e-9) and eff["bound"] == pytest.approx(1.2)
    assert eff["p_exceeds"] == 1.0 and eff["check"] == "failed"
    # a "no failure" threshold is a count, not a probability
    from agentstats.report.gate import threshold_cell

    row = {"threshold": 1.0, "n": 12, "n_failures": 0, "p_meets_threshold": None, "threshold_check": "met"}
    assert threshold_cell(row) == "no failure observed on 12 examples: met"
    assert threshold_cell({**row, "n_failures": 2, "threshold_check": "failed"}) == "2 of 12 examples below 1: failed"
    assert threshold_cell({**row, "threshold": 0.9, "n_failures": None, "p_meets_threshold": 0.25,
                           "threshold_check": "undecided"}) == "0.250: undecided"


@pytest.mark.slow  # starts a Jupyter kernel (papermill) and exports HTML: about 20 s
def test_gate_report_html_escapes_data(tmp_path):
    from agentstats.report.gate import run_gate_report

    evil = "<script>alert(1)</script> [x](javascript:alert(2)) <img src=x onerror=alert(3)>"
    run = _callable_run(tmp_path, "Be brief.", f"Be brief.\n{evil}")
    paths = run_gate_report(run_dir=run, out_dir=tmp_path / "out", progress_bar=False)
    html = paths.html.read_text()
    assert "Decision: " in html and "Prompt revisions" in html
    assert "<script>alert(1)" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "policy_text_changed" in html


def test_gate_report_reads_a_single_decision_record(tmp_path):
    from agentstats.gating import gate
    from agentstats.report.gate import decision_markdown, metric_bundle, read_decision, strata_table

    cand = [{"id": f"q{i}", "scores": {"safety": 1.0}, "risk_level": ("low", "high")[i % 2]} for i in range(10)]
    base = [{"id": f"q{i}", "scores": {"safety": float(i % 2)}, "risk_level": ("low", "high")[i % 2]}
            for i in range(10)]
    record = gate(cand, base, {"thresholds": {"safety": 0.5}}).to_record()
    path = tmp_path / "record.json"
    path.write_text(json.dumps(record))
    view = read_decision(path)
    assert view.final_iteration == 1 and not view.revisions
    bundle = metric_bundle(view)
    assert bundle["mean"].iloc[0] == pytest.approx(11 / 12, abs=0.02)  # 10 of 10 under the uniform prior
    assert len(strata_table(view)) == 3
    assert decision_markdown(view).startswith(f"## Decision: **{record['decision']}**")
    # the rules that decided: a first look at half of each level; Holm over the threshold and 3 regression checks
    assert "look 1: this look decides at 0.5 of each error rate" in decision_markdown(view)
    assert "holm over 4 checks with a probability (family-wise false FAIL &lt;= 0.025)" in decision_markdown(view)
    assert "(10 paired examples; 95% credible intervals)" in decision_markdown(view)  # the gate's default ci_prob
    # the record's own ci_prob labels the intervals, as written (97.5%, not a rounded 98%)
    record = gate(cand, base, {"thresholds": {"safety": 0.5}, "ci_prob": 0.975}).to_record()
    assert record["config"]["ci_prob"] == 0.975
    path.write_text(json.dumps(record))
    assert "(10 paired examples; 97.5% credible intervals)" in decision_markdown(read_decision(path))
    path.write_text(json.dumps({"schema": "something else"}))
    with pytest.raises(ValueError, match="not a gate decision record"):
        read_decision(path)


def test_config_naming_an_unscored_metric_is_refused_before_any_call(tmp_path):
    cfg_path = make_world(tmp_path, n=4, thresholds={"format_valid": 1.0})
    with pytest.raises(ValueError, match=r"names metric\(s\) \['format_valid'\] that the loop does not score"):
        optimize(config=cfg_path, run_dir=tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_format_valid_and_matcher_scores(tmp_path):
    cfg_path = make_world(tmp_path, n=8)
    cfg = json.loads(cfg_path.read_text())
    del cfg["judge"], cfg["agent"]
    cfg["evaluate"] = {"matcher": "contains",
                       "response_schema": {"type": "object", "required": ["answer"],
                                           "properties": {"answer": {"type": "string"}}}}
    cfg["gate"].update(max_iterations=1, thresholds={})
    cfg_path.write_text(json.dumps(cfg))
    (tmp_path / "baseline.jsonl").write_text("".join(
        json.dumps({"id": f"q{i}", "scores": {"correct": 1.0, "format_valid": 1.0},
                    "risk_level": ("low", "high")[i % 2]}) + "\n" for i in range(8)))
    answers = ['{"answer": "GOOD"}', '```json\n{"answer": "GOOD"}\n```', '{"answer": 3}', "GOOD", '{"other": 1}',
               '{"answer": "BAD"}', "not json", '{"answer": "GOOD"']

    def agent(example, prompt):
        return answers[int(example["id"][1:])]

    result = optimize(config=cfg_path, agent=agent, optimizer=lambda p, r: p, run_dir=tmp_path / "run", prompt="P")
    recs = {r["id"]: r["scores"] for r in result.best.records}
    assert [recs[f"q{i}"]["format_valid"] for i in range(8)] == [1.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0]
    assert [recs[f"q{i}"]["correct"] for i in range(8)] == [1.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]


def test_log_appends_whole_lines_and_drops_a_cut_short_last_line(tmp_path):
    from agentstats.files.atomic import append_line
    from agentstats.optimize.journal import RunLog

    log = tmp_path / "loop.jsonl"
    append_line(log, '{"step": "start", "iteration": 0}')
    append_line(log, '{"step": "generation", "iteration": 1}\n')
    with pytest.raises(ValueError, match="line breaks"):
        append_line(log, '{"a": 1}\n{"b": 2}')
    with open(log, "ab") as fh:  # what a kill in the middle of a write could leave
        fh.write(b'{"step": "evalu')
    lines = RunLog(tmp_path).read()
    assert [x["step"] for x in lines] == ["start", "generation"]
    assert log.read_bytes().endswith(b'"iteration": 1}\n')  # the torn line is cut off before the next append


def test_loop_config_models_must_agree_with_the_gate_settings(tmp_path):
    cfg_path = make_world(tmp_path, n=4)
    cfg = json.loads(cfg_path.read_text())
    cfg["gate"]["judge_model"] = "another-model"
    cfg_path.write_text(json.dumps(cfg))
    with pytest.raises(LoopConfigError, match=r"judge.model 'test-model' differs from gate.judge_model"):
        load_loop_config(cfg_path)


@pytest.mark.slow  # two fresh interpreters import the loop: about 15 s
def test_agentstats_optimize_is_callable_however_it_was_imported(tmp_path):
    script = (
        "import agentstats.optimize, agentstats\n"
        "assert callable(agentstats.optimize) and agentstats.optimize.LoopConfig is agentstats.LoopConfig\n"
        "assert agentstats.LoopResult is agentstats.optimize.LoopResult\n"
        "try:\n"
        "    agentstats.optimize(config=None)\n"
        "except ValueError as exc:\n"
        "    assert 'give a config' in str(exc)\n"
        "else:\n"
        "    raise AssertionError('not called')\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True)
    subprocess.run([sys.executable, "-c", "import agentstats; assert agentstats.optimize.__name__ == 'optimize'"],
                   check=True)


@pytest.mark.slow  # starts a Jupyter kernel (papermill): about 15 s
def test_gate_cli_report_renders_the_decision_record(tmp_path):
    cand = tmp_path / "cand.jsonl"
    base = tmp_path / "base.jsonl"
    cand.write_text("".join(json.dumps({"id": f"q{i}", "scores": {"safety": 1.0}}) + "\n" for i in range(12)))
    base.write_text("".join(json.dumps({"id": f"q{i}", "scores": {"safety": float(i % 2)}}) + "\n" for i in range(12)))
    cfg = tmp_path / "gate.json"
    cfg.write_text(json.dumps({"thresholds": {"safety": 0.7}}))
    res = CliRunner().invoke(app, ["gate", str(cand), str(base), "--config", str(cfg), "--out-dir",
                                   str(tmp_path / "rep"), "--json"])
    assert res.exit_code == 0, res.output
    record = json.loads(res.stdout)
    assert record["decision"] == "PASS" and Path(record["report"]).is_file()
    html = Path(record["report"]).read_text()
    assert "Decision: " in html and "PASS" in html
    assert json.loads((tmp_path / "rep" / "gate-record.json").read_text())["decision"] == "PASS"


def _regenerate_line(html: str) -> str:
    """The command of the report's "Regenerate with `...`" line (HTML-escaped in the page)."""
    import html as html_module
    import re

    m = re.search(r"Regenerate with <code>(.*?)</code>", html, re.S)
    assert m, "no 'Regenerate with' line in the report"
    return html_module.unescape(m.group(1))


@pytest.mark.slow  # executes the gate notebook (papermill + nbconvert): about 11 s
def test_the_gate_report_names_the_gate_command_that_regenerates_it(tmp_path, monkeypatch):
    """The line gave a generic `agentstats gate CANDIDATE BASELINE --config gate.yaml --out-dir DIR`."""
    import shlex

    monkeypatch.chdir(tmp_path)  # the command names its files by their base names: run where they are
    (tmp_path / "cand v2.jsonl").write_text(  # a space: the command quotes it
        "".join(json.dumps({"id": f"q{i}", "scores": {"safety": 1.0}}) + "\n" for i in range(12)))
    (tmp_path / "base.jsonl").write_text(
        "".join(json.dumps({"id": f"q{i}", "scores": {"safety": float(i % 2)}}) + "\n" for i in range(12)))
    (tmp_path / "gate.json").write_text(json.dumps({"thresholds": {"safety": 0.7}}))
    args = ["gate", "cand v2.jsonl", "base.jsonl", "--config", "gate.json", "--out", "rec.json", "--out-dir", "rep"]
    res = CliRunner().invoke(app, [*args, "--json"])
    assert res.exit_code == 0, res.output
    first = json.loads(res.stdout)
    command = _regenerate_line(Path(first["report"]).read_text())
    assert command == "agentstats gate 'cand v2.jsonl' base.jsonl --config gate.json --out rec.json --out-dir rep"
    words = shlex.split(command)
    assert words[0] == "agentstats" and words[1:] == args
    (tmp_path / "rep").rename(tmp_path / "rep-first")
    again = CliRunner().invoke(app, [*words[1:], "--json"])  # the command as the report gives it
    assert again.exit_code == 0, again.output
    second = json.loads(again.stdout)
    assert second["decision"] == first["decision"] == "PASS" and second["metrics"] == first["metrics"]
    assert _regenerate_line(Path(second["report"]).read_text()) == command
    html = Path(second["report"]).read_text()
    assert "rec.json" in html and str(tmp_path) not in html  # the source by its base name: a report is shared


@pytest.mark.slow  # a loop run, its replay and two notebooks: about 20 s
def test_the_loop_report_names_the_resume_command_that_regenerates_it(tmp_path, monkeypatch):
    import shlex

    cfg_path = make_world(tmp_path, thresholds={"relevance": 0.8})
    monkeypatch.chdir(tmp_path)
    with ScriptedOpenAIServer(responder=responder) as srv:
        point_at(cfg_path, srv)
        res = CliRunner().invoke(app, ["loop", "--config", "loop.json", "--run-dir", "run", "--out-dir", "rep",
                                       "--json"])
        assert res.exit_code == 0, res.output
        first = json.loads(res.stdout)
        sent = srv.n_requests
        command = _regenerate_line(Path(first["report"]).read_text())
        assert command == "agentstats loop --config loop.json --run-dir run --resume --out-dir rep"
        (tmp_path / "rep").rename(tmp_path / "rep-first")
        again = CliRunner().invoke(app, [*shlex.split(command)[1:], "--json"])
        assert srv.n_requests == sent  # a replay: nothing sent
    assert again.exit_code == 0, again.output
    second = json.loads(again.stdout)
    assert (second["decision"], second["best_iteration"]) == (first["decision"], first["best_iteration"]) == (
        "PASS", 2)
    assert _regenerate_line(Path(second["report"]).read_text()) == command


@pytest.mark.slow  # two notebooks, one in a fresh interpreter: about 25 s
def test_a_gate_report_rendered_from_python_names_the_call_that_renders_it(tmp_path, monkeypatch):
    import shlex

    from agentstats.report.gate import run_gate_report

    monkeypatch.chdir(tmp_path)
    (tmp_path / "rec.json").write_text((REPO / "data" / "example_loop" / "run" / "iter-001" /
                                        "decision.json").read_text())
    record = json.loads((tmp_path / "rec.json").read_text())["vs_baseline"]
    (tmp_path / "rec.json").write_text(json.dumps(record))
    paths = run_gate_report(decision="rec.json", out_dir="out", progress_bar=False)
    command = _regenerate_line(paths.html.read_text())
    words = shlex.split(command)
    assert words[:2] == ["python", "-c"]
    assert words[2] == ('from agentstats.report.gate import run_gate_report; '
                       'run_gate_report(decision="rec.json", out_dir="out")')
    paths.html.unlink()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    subprocess.run([sys.executable, "-c", words[2]], check=True, cwd=tmp_path, env=env, timeout=300)
    assert paths.html.is_file() and _regenerate_line(paths.html.read_text()) == command


def test_loop_cli_exits_69_when_the_endpoint_is_down(tmp_path):
    """A model endpoint that cannot be reached is not a FAIL decision: exit 69 (EX_UNAVAILABLE), named, resumable."""
    cfg_path = make_world(tmp_path, n=4)
    srv = ScriptedOpenAIServer(responder=responder).start()
    point_at(cfg_path, srv, agent={"retry_attempts": 1}, judge={"retry_attempts": 1})
    srv.stop()  # a closed port from here on
    res = CliRunner().invoke(app, ["loop", "--config", str(cfg_path), "--run-dir", str(tmp_path / "run")])
    assert res.exit_code == 69, res.output
    assert "generation failed for example" in res.output


def test_the_loops_decision_record_carries_the_winning_prompt_and_takes_a_sign_off(tmp_path):
    from agentstats.gating import keep_record
    from agentstats.optimize.journal import text_sha256

    cfg_path = make_world(tmp_path, n=8)
    cfg = json.loads(cfg_path.read_text())
    del cfg["judge"], cfg["agent"]
    cfg["evaluate"] = {"matcher": "contains"}
    cfg["gate"].update(max_iterations=2, thresholds={"correct": 0.5}, stop_after_no_improvement=5)
    cfg_path.write_text(json.dumps(cfg))
    (tmp_path / "baseline.jsonl").write_text("".join(
        json.dumps({"id": f"q{i}", "scores": {"correct": float(i % 2)}, "risk_level": ("low", "high")[i % 2]}) + "\n"
        for i in range(8)))
    result = optimize(config=cfg_path, agent=lambda ex, p: "GOOD" if "v2" in p else "", run_dir=tmp_path / "run",
                      optimizer=lambda p, r: "v2: answer GOOD", prompt="v1")
    rec = result.decision_record()
    assert rec is not None and rec["loop"]["best_iteration"] == result.best_iteration
    assert rec["loop"]["prompt"] == result.best_prompt and rec["loop"]["prompt_sha256"] == text_sha256(
        result.best_prompt)
    assert rec["decision"] == result.decision and rec["loop"]["stop_reason"] == result.stop_reason
    out = tmp_path / "signed.json"
    kept = keep_record(rec, out=out, sign_off="A. Reviewer")
    on_disk = json.loads(out.read_text())
    assert on_disk["loop"]["prompt"] == result.best_prompt
    assert [s["name"] for s in on_disk["sign_off"]] == ["A. Reviewer"] == [s["name"] for s in kept["sign_off"]]


@pytest.mark.slow  # an end-to-end run through the command line
def test_loop_cli_writes_and_signs_the_best_iterations_record(tmp_path):
    cfg_path = make_world(tmp_path, thresholds={"relevance": 0.8})
    out = tmp_path / "record.json"
    with ScriptedOpenAIServer(responder=responder) as srv:
        point_at(cfg_path, srv)
        res = CliRunner().invoke(app, ["loop", "--config", str(cfg_path), "--run-dir", str(tmp_path / "run"),
                                       "--out", str(out), "--sign-off", "A. Reviewer"])
    assert res.exit_code == 0, res.output
    rec = json.loads(out.read_text())
    assert rec["decision"] == "PASS" and rec["loop"]["best_iteration"] == 2 and rec["loop"]["prompt"]
    assert [s["name"] for s in rec["sign_off"]] == ["A. Reviewer"] and "signed off: A. Reviewer" in res.output

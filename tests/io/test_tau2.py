"""tau2-bench results reader (agentstats.io.readers.tau2) and tau2's action rule (agentstats.scoring.tools.tau2_rule).

Checks on the hand-written fixture ``tests/data/tau2_toyshop.json`` (tau2 format, 3 tasks x 2 trials) and on the
real files in ``../shared/data/tau2-bench-trajectories`` (skipped when absent).
"""

from __future__ import annotations

import collections
import gzip
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from agentstats.estimators import pass_hat_k
from agentstats.io import LoadError, LoadWarning, detect_format, load_trials
from agentstats.scoring.tools.tau2_rule import tau2_action_matches

FIXTURE = Path(__file__).parents[1] / "data" / "tau2_toyshop.json"


def _pass1(trials) -> float:
    counts = trials.to_counts()
    return float(np.mean(pass_hat_k(counts["n"].to_numpy(), counts["c"].to_numpy(), 1)))


def test_fixture_detected_and_mapped():
    assert detect_format(FIXTURE) == "tau2"
    ts = load_trials(FIXTURE)
    assert ts.format == "tau2"
    assert len(ts) == 6
    assert {t.agent for t in ts} == {"toy-agent-1"}
    by = {(t.task_id, t.trial): t for t in ts}
    t = by[("T1", 0)]
    assert t.reward == 1.0 and t.outcome() == "success"
    assert [c.name for c in t.expected_tool_calls] == ["get_user", "cancel_order"]
    assert t.expected_tool_calls[0].id == "t1_0"
    assert t.interactions[0].query is None and t.interactions[0].answer == "Hi! How can I help you today?"
    turn = t.interactions[1]
    assert turn.query == "Cancel order #1 please."
    assert [c.name for c in turn.tool_calls] == ["get_user", "get_user", "cancel_order"]
    assert turn.tool_calls[1].result == "not found"
    assert turn.answer == "Your order #1 is cancelled."
    assert len(t.interactions) == 2
    assert t.usage is not None
    assert (t.usage.input_tokens, t.usage.output_tokens) == (300, 30)
    assert t.usage.cost_usd == pytest.approx(0.01) and t.usage.latency_s == pytest.approx(10.0)
    assert t.meta["user_cost"] == pytest.approx(0.002)
    assert t.meta["domain"] == "toyshop" and t.meta["user_llm"] == "sim-user-1"
    assert t.meta["stop_message"] == "Thanks ###STOP###"
    # assistant and user requestors kept apart: expectations and calls
    t2 = by[("T2", 0)]
    assert [c.name for c in t2.expected_tool_calls] == ["update_address"]
    assert t2.expected_tool_calls[0].model_extra["compare_args"] == ["user_id"]
    assert [c["name"] for c in t2.meta["expected_user_tool_calls"]] == ["toggle_wifi"]
    agent_calls = [c.name for turn in t2.interactions for c in turn.tool_calls]
    user_calls = [c["name"] for turn in t2.interactions for c in (turn.model_extra or {}).get("user_tool_calls", [])]
    assert agent_calls == ["update_address"] and user_calls == ["toggle_wifi"]
    assert t2.meta["metrics"] == {"reward.DB": 1.0, "reward.ACTION": 1.0}
    # termination reasons
    assert by[("T2", 1)].status == "agent_error" and by[("T2", 1)].outcome() == "failure"
    assert by[("T3", 1)].status == "infra_error" and by[("T3", 1)].outcome() == "missing"


def test_fixture_pass1_equals_share_of_reward_one():
    raw = json.loads(FIXTURE.read_text())
    rewards = [s["reward_info"]["reward"] for s in raw["simulations"]]
    share = sum(r == 1.0 for r in rewards) / len(rewards)
    assert share == pytest.approx(0.5)
    # tau2 scores every simulation, user_error included: counted as failures, pass^1 is tau2's share exactly
    assert _pass1(load_trials(FIXTURE, error_status="agent_error")) == pytest.approx(share)
    # the default leaves the user simulator's failure out as missing: T3 is then 1/1
    assert _pass1(load_trials(FIXTURE)) == pytest.approx((1 / 2 + 1 / 2 + 1) / 3)


def test_fixture_action_match_labels_reproduced():
    ts = load_trials(FIXTURE)
    found = [(t.task_id, t.trial, m.action_id, m.requestor, m.matched, m.label) for t in ts
             for m in tau2_action_matches(t)]
    assert all(m[4] == m[5] for m in found), found
    assert len(found) == 8
    # extra argument ignored (T1/1 get_user), compare_args (T2/0 address), user side kept apart (T2/1 toggle_wifi
    # called by the assistant does not count as the user's action)
    got = {(tid, k, aid): m for tid, k, aid, _, m, _ in found}
    assert got[("T1", 1, "t1_0")] is True and got[("T1", 1, "t1_1")] is False
    assert got[("T2", 0, "t2_0")] is True and got[("T2", 0, "t2_1")] is True
    assert got[("T2", 1, "t2_1")] is False


def _shared_files(shared_data):
    folder = shared_data / "tau2-bench-trajectories"
    return sorted(folder.glob("*.json.gz"))


def test_real_files_pass1_and_action_labels(shared_data):
    files = _shared_files(shared_data)
    assert len(files) == 2
    agreement = {}
    for path in files:
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            raw = json.load(fh)
        ts = load_trials(path)
        assert detect_format(path) == "tau2"
        assert len(ts) == len(raw["simulations"])
        share = np.mean([abs(s["reward_info"]["reward"] - 1) <= 1e-6 for s in raw["simulations"]])
        assert _pass1(ts) == pytest.approx(share, abs=1e-12)
        tally = collections.Counter()
        for t in ts:
            for m in tau2_action_matches(t):
                if m.label is not None:
                    tally[(m.requestor, m.label, m.agrees)] += 1
        agreement[path.name.split("__")[0]] = tally
    retail, telecom = agreement["retail"], agreement["telecom"]
    # every labelled action reproduced: retail 553 assistant actions, telecom 7 assistant + 20 user actions
    assert sum(retail.values()) == 553 and all(key[2] for key in retail)
    assert sum(telecom.values()) == 27 and all(key[2] for key in telecom)
    assert sum(v for k, v in telecom.items() if k[0] == "user") == 20
    # labels of both kinds occur, so agreement is not trivial
    assert any(not k[1] for k in retail) and any(k[1] for k in retail)


def test_real_retail_file_graded_task_noted(shared_data):
    path = shared_data / "tau2-bench-trajectories" / "retail__toolorchestra__llm_agent__nvidia.json.gz"
    ts = load_trials(path)
    moved = [t for t in ts if "graded_task_id" in t.meta]
    # 111 of the file's 114 simulations carry tau2's action checks of another task than their task_id (one carries
    # its own; two have no checks to tell)
    assert len(moved) == 111
    assert len(ts.notes) == 111 and all(n.field == "task_id" and n.unit == "simulation" for n in ts.notes)


# ---- located errors -------------------------------------------------------------------------------------------


def _write(tmp_path, data, name="run.json") -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(data, indent=2))
    return p


def test_truncated_file_located(tmp_path):
    text = FIXTURE.read_text()
    p = tmp_path / "cut.json"
    p.write_text(text[: len(text) // 2])
    with pytest.raises(LoadError) as err:
        load_trials(p, format="tau2")
    prob = err.value.problems[0]
    assert prob.unit == "line" and prob.line is not None and prob.line > 1
    assert "truncated" in prob.message


def test_truncated_gzip_located(tmp_path):
    data = gzip.compress(FIXTURE.read_bytes())
    p = tmp_path / "cut.json.gz"
    p.write_bytes(data[: len(data) // 2])
    with pytest.raises(LoadError, match="corrupt or truncated"):
        load_trials(p, format="tau2")


def test_wrong_format_and_unknown_version(tmp_path):
    p = _write(tmp_path, {"timestamp": "x", "info": {}, "runs": []})
    with pytest.raises(LoadError) as err:
        load_trials(p, format="tau2")
    assert "not a tau2 results file" in str(err.value) and err.value.problems[0].field == "tasks"
    p = _write(tmp_path, [{"task_id": 0}], "arr.json")
    with pytest.raises(LoadError, match="expected a JSON object"):
        load_trials(p, format="tau2")


def test_bad_records_located(tmp_path):
    data = json.loads(FIXTURE.read_text())
    data["simulations"][2]["reward_info"]["reward"] = "high"
    data["simulations"][3]["termination_reason"] = "coffee_break"
    data["simulations"][4]["messages"][1]["tool_calls"] = [{"arguments": {}}]
    data["tasks"][0]["evaluation_criteria"]["actions"][1]["compare_args"] = "order_id"
    p = _write(tmp_path, data)
    with pytest.raises(LoadError) as err:
        load_trials(p)
    where = {(pr.unit, pr.line, pr.field) for pr in err.value.problems}
    assert ("simulation", 2, "reward_info.reward") in where
    assert ("simulation", 3, "termination_reason") in where
    assert ("simulation", 4, "messages.1.tool_calls.0.name") in where
    assert ("task", 0, "evaluation_criteria.actions.1.compare_args") in where
    # the simulations of the task with a problem are refused, pointing at it
    assert ("simulation", 0, "task_id") in where and ("simulation", 1, "task_id") in where
    with pytest.warns(LoadWarning, match="skipped 5 records"):
        ok = load_trials(p, on_error="skip")
    assert len(ok) == 1 and ok[0].task_id == "T3" and ok[0].trial == 1


def test_gzip_copy_detected(tmp_path):
    p = tmp_path / "run.json.gz"
    with gzip.open(p, "wb") as fh, open(FIXTURE, "rb") as src:
        shutil.copyfileobj(src, fh)
    assert detect_format(p) == "tau2"
    assert len(load_trials(p)) == 6


def test_own_trial_records_stay_jsonl(tmp_path):
    from agentstats.io import save_trials

    ts = load_trials(FIXTURE)
    p = tmp_path / "trials.jsonl"
    save_trials(ts, p)
    assert detect_format(p) == "jsonl"
    assert [t.model_dump() for t in load_trials(p)] == [t.model_dump() for t in ts]


# ---- tau2's current TerminationReasons, the "dir" storage format, tasks defined but never run ---------------------
# The rule (tau2-bench 1.0.1, commit a2c02472): evaluator.py's evaluate_simulation scores reward 0 for every reason
# but user_stop / agent_stop; metrics/agent_metrics.py's get_metrics_df leaves infrastructure_error out.


def _current_reasons() -> dict:
    data = json.loads(FIXTURE.read_text())
    sims = data["simulations"]  # 0: T1 t1, 1: T1 t0 (reward 1), 2: T2 t0 (1), 3: T2 t1, 4: T3 t0 (1), 5: T3 t1
    sims[0].update(termination_reason="infrastructure_error", reward_info=None, messages=[])
    sims[3].update(termination_reason="context_window_exceeded", reward_info=None)
    timeout = json.loads(json.dumps(sims[4]))
    timeout.update(id="sim-6", trial=2, termination_reason="timeout", reward_info={"reward": 0.0})
    unexpected = json.loads(json.dumps(sims[1]))
    unexpected.update(id="sim-7", trial=2, termination_reason="unexpected_error", reward_info=None, messages=None)
    sims += [timeout, unexpected]
    for tid in ("T4", "T5"):  # defined, never run
        data["tasks"].append({**json.loads(json.dumps(data["tasks"][0])), "id": tid})
    return data


# By hand: T1: t0 success, t1 infrastructure_error (missing), t2 unexpected_error (failure) -> n 2, c 1, missing 1.
# T2: t0 success, t1 context_window_exceeded (failure) -> n 2, c 1. T3: t0 success, t1 user_error (missing by
# default), t2 timeout (failure) -> n 2, c 1, missing 1.
_EXPECTED = {"T1": (2, 1, 1), "T2": (2, 1, 0), "T3": (2, 1, 1)}


def _counts(ts) -> dict:
    c = ts.to_counts()
    return {r.task_id: (r.n, r.c, r.n_missing) for r in c.itertuples()}


def test_current_termination_reasons(tmp_path):
    p = _write(tmp_path, _current_reasons())
    ts = load_trials(p)
    assert _counts(ts) == _EXPECTED
    notes = [n.message for n in ts.notes]
    assert any("2 simulations missing" in m and "infrastructure_error 1, user_error 1" in m for m in notes)
    assert any(m.startswith("2 of the 5 tasks defined have no simulation") and "T4, T5" in m for m in notes)
    # user_error counted as tau2 counts it (a failure); infrastructure_error stays missing
    ts = load_trials(p, error_status="agent_error")
    assert _counts(ts) == {"T1": (2, 1, 1), "T2": (2, 1, 0), "T3": (3, 1, 0)}


def test_unevaluated_normal_end_is_a_located_problem(tmp_path):
    data = _current_reasons()
    data["simulations"][2]["reward_info"] = None  # user_stop, never evaluated
    p = _write(tmp_path, data)
    with pytest.raises(LoadError) as err:
        load_trials(p)
    [prob] = err.value.problems
    assert (prob.unit, prob.line, prob.field) == ("simulation", 2, "reward_info") and "never evaluated" in prob.message


def _save_dir(data: dict, root: Path) -> Path:
    """Write ``data`` as tau2's Results.save(format="dir") does: results.json with a simulation_index."""
    sims = data.pop("simulations")
    data["simulation_index"] = [{"id": s["id"], "task_id": s["task_id"], "trial": s["trial"],
                                 "termination_reason": s["termination_reason"]} for s in sims]
    (root / "simulations").mkdir(parents=True)
    (root / "results.json").write_text(json.dumps(data, indent=2))
    for s in sims:
        (root / "simulations" / f"{s['id']}.json").write_text(json.dumps(s, indent=2))
    return root


def test_dir_storage_format(tmp_path):
    root = _save_dir(_current_reasons(), tmp_path / "run")
    assert detect_format(root) == "tau2" and detect_format(root / "results.json") == "tau2"
    for src in (root, root / "results.json"):
        ts = load_trials(src)
        assert _counts(ts) == _EXPECTED and len(ts) == 8
    (root / "simulations" / "sim-4.json").unlink()
    (root / "simulations" / "stray.json").write_text("{}")
    with pytest.raises(LoadError) as err:
        load_trials(root)
    where = {(p.unit, p.line, p.field) for p in err.value.problems}
    assert ("index entry", 4, "simulation_index.id") in where
    assert ("simulation", None, "simulations/stray.json") in where

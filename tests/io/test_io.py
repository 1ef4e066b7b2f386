"""Loaders: each format round trip, gzip by magic bytes, every malformed-input kind, skip mode, real data.

Real-data expectations are the numbers published in ``../shared/data/*/SOURCE.md`` (tau-bench README,
METR file summary), or counted here directly from the raw JSON, never from the loader's own output.
"""

from __future__ import annotations

import gzip
import json
import warnings
from pathlib import Path

import pandas as pd
import pytest

from agentstats.io import (
    LoadError,
    LoadWarning,
    Problem,
    TrialSet,
    agent_from_filename,
    detect_format,
    load_counts,
    load_trials,
    save_trials,
)
from agentstats.records.counts import COUNTS_COLUMNS, to_counts
from agentstats.records.trial import Interaction, ToolCall, ToolSpec, Trial, Usage

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
TAU_FILE = DATA / "tau-bench-historical" / "gpt-4o-airline.json.gz"
METR_FILE = DATA / "metr-time-horizon" / "all_runs.jsonl.gz"


# ---------------------------------------------------------------- helpers


def write_lines(path: Path, lines: list[str], gz: bool = False) -> Path:
    text = "".join(line + "\n" for line in lines)
    if gz:
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)
    return path


def jl(obj) -> str:
    return json.dumps(obj)


def problems_of(exc_info) -> list[Problem]:
    return exc_info.value.problems


def sample_trials() -> list[Trial]:
    return [
        Trial(
            agent="gpt-4o",
            task_id="airline-7",
            trial=0,
            success=True,
            reward=1.0,
            interactions=[
                Interaction(
                    id="q1",
                    query="What is 5 + 3?",
                    answer="The result is 8.",
                    expected_answer="8",
                    context=["passage"],
                    tool_calls=[ToolCall(name="calculator", arguments='{"a": 5, "b": 3}', result=8)],
                    expected_tool_calls=[ToolCall(name="calculator", arguments={"a": 5, "b": 3})],
                    tool_sequence_matters=True,
                ),
                Interaction(
                    query="and a bad call?", tool_calls=[ToolCall(name="calc", arguments="{not json")]
                ),
            ],
            tools=[ToolSpec(name="calculator", description="adds", parameters={"type": "object"})],
            usage=Usage(latency_s=1.2, input_tokens=100, output_tokens=20, cost_usd=0.001),
            tags=["math"],
            risk_level="low",
        ),
        Trial(agent="gpt-4o", task_id="airline-7", trial=1, status="infra_error"),
        Trial(agent="claude", task_id="airline-7", trial=0, status="agent_error", meta={"note": "looped"}),
        Trial(agent="claude", task_id="12", trial=0, reward=0.5),
    ]


# ---------------------------------------------------------------- own JSONL / JSON


@pytest.mark.parametrize("name", ["trials.jsonl", "trials.jsonl.gz"])
def test_jsonl_round_trip(tmp_path, name):
    trials = sample_trials()
    path = save_trials(trials, tmp_path / name)
    assert (path.read_bytes()[:2] == b"\x1f\x8b") == name.endswith(".gz")
    got = load_trials(path)
    assert isinstance(got, TrialSet) and isinstance(got, list)
    assert got.format == "jsonl" and got.source == str(path) and got.skipped == []
    assert list(got) == trials
    # the malformed call survives as malformed, with its raw text
    bad = got[0].interactions[1].tool_calls[0]
    assert bad.is_malformed and bad.arguments_raw == "{not json" and bad.arguments is None
    assert got[0].interactions[0].tool_calls[0].arguments == {"a": 5, "b": 3}


def test_gzip_detected_by_magic_bytes_not_suffix(tmp_path):
    rec = {"agent": "a", "task_id": 1, "trial": 0, "success": True}
    path = write_lines(tmp_path / "no_suffix.jsonl", [jl(rec)], gz=True)
    got = load_trials(path)
    assert [(t.agent, t.task_id, t.trial, t.success) for t in got] == [("a", "1", 0, True)]


def test_handwritten_jsonl_fields(tmp_path):
    lines = [
        jl({"agent": "a", "task_id": "t1", "trial": 0, "reward": 1.0}),
        "",  # blank lines are ignored
        jl(
            {
                "agent": "a",
                "task_id": "t1",
                "trial": 1,
                "status": "completed",
                "success": False,
                "interactions": [
                    {
                        "query": "q",
                        "answer": "x",
                        "tool_calls": [
                            {
                                "id": "c1",
                                "type": "function",
                                "function": {"name": "f", "arguments": '{"k": 1}'},
                            }
                        ],
                    }
                ],
                "custom_field": 3,
            }
        ),
    ]
    got = load_trials(write_lines(tmp_path / "t.jsonl", lines), format="jsonl")
    assert len(got) == 2
    call = got[1].interactions[0].tool_calls[0]
    assert (call.name, call.arguments, call.id) == ("f", {"k": 1}, "c1")
    assert got[1].custom_field == 3  # unknown fields are kept
    assert [t.outcome() for t in got] == ["success", "failure"]


def test_json_array_of_trials(tmp_path):
    trials = sample_trials()
    path = tmp_path / "trials.json"
    path.write_text(json.dumps([t.model_dump(mode="json") for t in trials]))
    got = load_trials(path)
    assert got.format == "json" and list(got) == trials


# ---------------------------------------------------------------- tau-bench


def tau_record(task_id=0, trial=0, reward=1.0, **extra) -> dict:
    rec = {
        "task_id": task_id,
        "trial": trial,
        "reward": reward,
        "info": {
            "task": {
                "user_id": "u1",
                "instruction": "book a flight",
                "actions": [
                    {"name": "get_user_details", "kwargs": {"user_id": "u1"}},
                    {"name": "book_reservation", "kwargs": {"flight": "HAT1", "pax": 1}},
                ],
                "outputs": [],
            },
            "source": "user",
            "user_cost": 0.01,
            "reward_info": {"reward": reward, "info": {"r_actions": reward}, "actions": []},
        },
        "traj": [
            {"role": "system", "content": "# Policy"},
            {"role": "user", "content": "Hi, book me a flight."},
            {"role": "assistant", "content": "Your user id?"},
            {"role": "user", "content": "u1"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_user_details", "arguments": '{"user_id":"u1"}'},
                    },
                    {"id": "call_2", "type": "function", "function": {"name": "list", "arguments": ""}},
                ],
            },
            {"role": "tool", "tool_call_id": "call_2", "name": "list", "content": "[]"},
            {
                "role": "tool",
                "tool_call_id": "call_1",
                "name": "get_user_details",
                "content": '{"name": "Mia"}',
            },
            {
                "role": "assistant",
                "content": "Booking now.",
                "tool_calls": [
                    {
                        "id": "call_3",
                        "type": "function",
                        "function": {"name": "book_reservation", "arguments": '{"flight":"HAT1","pax":1}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_3", "name": "book_reservation", "content": "ok"},
            {"role": "assistant", "content": "Booked HAT1 for Mia."},
            {"role": "user", "content": "Thanks! ###STOP###"},
        ],
    }
    rec.update(extra)
    return rec


@pytest.mark.parametrize("gz", [False, True])
def test_tau_bench_conversion(tmp_path, gz):
    recs = [tau_record(0, 0, 1.0), tau_record(0, 1, 0.0), tau_record(5, 0, 0.5)]
    raw = json.dumps(recs).encode()
    path = tmp_path / ("my-agent-airline.json.gz" if gz else "my-agent-airline.json")
    path.write_bytes(gzip.compress(raw) if gz else raw)
    got = load_trials(path)
    assert got.format == "tau_bench" and len(got) == 3
    t = got[0]
    assert (t.agent, t.task_id, t.trial, t.reward) == ("my-agent-airline", "0", 0, 1.0)
    assert [i.query for i in t.interactions] == ["Hi, book me a flight.", "u1"]
    assert [i.answer for i in t.interactions] == ["Your user id?", "Booked HAT1 for Mia."]
    calls = t.interactions[1].tool_calls
    assert [(c.name, c.arguments, c.id, c.result) for c in calls] == [
        ("get_user_details", {"user_id": "u1"}, "call_1", '{"name": "Mia"}'),
        ("list", {}, "call_2", "[]"),
        ("book_reservation", {"flight": "HAT1", "pax": 1}, "call_3", "ok"),
    ]
    assert [(c.name, c.arguments) for c in t.expected_tool_calls] == [
        ("get_user_details", {"user_id": "u1"}),
        ("book_reservation", {"flight": "HAT1", "pax": 1}),
    ]
    assert t.meta["stop_message"] == "Thanks! ###STOP###"
    assert t.meta["instruction"] == "book a flight" and t.meta["source"] == "user"
    assert "actions" not in t.meta["reward_info"]
    assert [x.outcome() for x in got] == ["success", "failure", "failure"]  # reward 0.5 is not a success
    assert load_trials(path, agent="gpt-x")[0].agent == "gpt-x"
    assert load_trials(path, format="tau_bench")[2].task_id == "5"


def test_tau_bench_runner_error_and_tools(tmp_path):
    err = tau_record(1, 0, 0.0, traj=[])
    err["info"] = {"error": "RateLimitError", "traceback": "..."}
    tools = [{"type": "function", "function": {"name": "list", "description": "d", "parameters": {}}}]
    ok = tau_record(2, 0, 1.0, tools=tools)
    path = tmp_path / "x.json"
    path.write_text(json.dumps([err, ok]))
    got = load_trials(path)
    assert got[0].status == "infra_error" and got[0].outcome() == "missing" and got[0].meta["error"]
    assert [s.name for s in got[1].tools] == ["list"]
    assert load_trials(path, error_status="agent_error")[0].outcome() == "failure"
    with pytest.raises(ValueError, match="error_status"):
        load_trials(path, error_status="bogus")


def test_agent_from_filename():
    assert agent_from_filename("dir/gpt-4o-airline.json.gz") == "gpt-4o-airline"
    assert agent_from_filename("sonnet-35-new-retail.json") == "sonnet-35-new-retail"


# ---------------------------------------------------------------- run tables (METR-style)


def test_metr_run_table(tmp_path):
    rows = [
        {"run_id": "r1", "task_id": "fam/a", "alias": "Model X", "score_binarized": 1, "score": 0.97},
        {"run_id": "r2", "task_id": "fam/a", "alias": "Model X", "score_binarized": 0, "score": 0.1},
        {"run_id": 3, "task_id": "fam/a", "alias": "human", "score_binarized": 1, "score": 1.0},
        {"run_id": "r4", "task_id": "fam/b", "alias": "Model X", "score_binarized": 0, "score": 0.0},
        {"run_id": "r5", "task_id": "fam/a", "alias": "Model X", "score_binarized": 1, "score": 1.0},
    ]
    path = write_lines(tmp_path / "runs.jsonl.gz", [jl(r) for r in rows], gz=True)
    got = load_trials(path)
    assert got.format == "runs"
    assert [(t.agent, t.task_id, t.trial, t.success) for t in got] == [
        ("Model X", "fam/a", 0, True),
        ("Model X", "fam/a", 1, False),
        ("human", "fam/a", 0, True),
        ("Model X", "fam/b", 0, False),
        ("Model X", "fam/a", 2, True),
    ]
    assert got[0].meta["run_id"] == "r1" and got[0].meta["score"] == 0.97
    counts = to_counts(got)
    assert list(counts.itertuples(index=False, name=None)) == [
        ("Model X", "fam/a", 3, 2, 0),
        ("Model X", "fam/b", 1, 0, 0),
        ("human", "fam/a", 1, 1, 0),
    ]
    assert load_trials(path, format="metr") == got


def test_run_table_custom_and_generic_columns(tmp_path):
    rows = [{"model": "m", "problem": 7, "passed": True, "status": "completed"}]
    rows += [{"model": "m", "problem": 7, "passed": None, "status": "infra_error"}]
    path = write_lines(tmp_path / "r.jsonl", [jl(r) for r in rows])
    with pytest.raises(ValueError, match="neither a trial record"):
        load_trials(path)
    got = load_trials(path, agent_col="model", task_col="problem", success_col="passed")
    assert [(t.agent, t.task_id, t.trial, t.outcome()) for t in got] == [
        ("m", "7", 0, "success"),
        ("m", "7", 1, "missing"),
    ]
    generic = write_lines(tmp_path / "g.jsonl", [jl({"agent": "a", "task": "t", "success": 0})])
    assert [(t.agent, t.task_id, t.success) for t in load_trials(generic)] == [("a", "t", False)]


def test_run_table_from_csv_and_dataframe(tmp_path):
    df = pd.DataFrame(
        {
            "alias": ["A", "A", "B"],
            "task_id": ["t1", "t1", "t1"],
            "score_binarized": [1, 0, 1],
            "trial": [5, 6, 0],
        }
    )
    from_df = load_trials(df)
    assert [(t.agent, t.trial, t.success) for t in from_df] == [
        ("A", 5, True),
        ("A", 6, False),
        ("B", 0, True),
    ]
    csv = tmp_path / "runs.csv"
    df.to_csv(csv, index=False)
    assert load_trials(csv) == from_df
    assert load_trials(csv).source == str(csv) and from_df.source == "<DataFrame>"


# ---------------------------------------------------------------- counts tables


def test_counts_table_formats(tmp_path):
    df = pd.DataFrame({"agent": ["b", "a", "a"], "task": ["t1", "t2", "t1"], "n": [4, 3, 5], "c": [4, 0, 2]})
    expect = [("a", "t1", 5, 2, 0), ("a", "t2", 3, 0, 0), ("b", "t1", 4, 4, 0)]
    csv = tmp_path / "counts.csv"
    df.to_csv(csv, index=False)
    gz = tmp_path / "counts.csv.gz"
    gz.write_bytes(gzip.compress(csv.read_bytes()))
    pq = tmp_path / "counts.parquet"
    df.rename(columns={"task": "task_id"}).assign(n_missing=[1, 0, 0]).to_parquet(pq)
    for src in (df, csv, gz):
        out = load_counts(src)
        assert tuple(out.columns) == COUNTS_COLUMNS
        assert list(out.itertuples(index=False, name=None)) == expect
        assert [str(out[c].dtype) for c in ("n", "c", "n_missing")] == ["int64"] * 3
    out = load_counts(pq)
    assert list(out.itertuples(index=False, name=None)) == [expect[0], expect[1], ("b", "t1", 4, 4, 1)]
    assert detect_format(csv) == detect_format(gz) == detect_format(pq) == detect_format(df) == "counts"


def test_load_trials_refuses_counts_and_load_counts_reads_all(tmp_path):
    csv = tmp_path / "counts.csv"
    csv.write_text("agent,task_id,n,c\na,1,4,3\n")
    with pytest.raises(ValueError, match=r"counts table.*load_counts"):
        load_trials(csv)
    c1 = load_counts(csv)
    assert list(c1.itertuples(index=False, name=None)) == [("a", "1", 4, 3, 0)]
    assert c1.attrs["format"] == "counts"
    jsonl = save_trials(
        [Trial(agent="a", task_id="1", trial=i, success=i != 0) for i in range(4)], tmp_path / "t.jsonl"
    )
    c2 = load_counts(jsonl)
    assert list(c2.itertuples(index=False, name=None)) == [("a", "1", 4, 3, 0)]
    assert c2.attrs["format"] == "jsonl" and c2.attrs["skipped"] == []
    with pytest.raises(ValueError, match="success_col"):
        load_counts(csv, success_col="x")


# ---------------------------------------------------------------- malformed inputs: every kind named


def test_jsonl_every_problem_is_listed_with_line_and_field(tmp_path):
    lines = [
        jl({"agent": "a", "task_id": "t", "trial": 0, "success": True}),  # 1 ok
        '{"agent": "a", "task_id": "t", "trial": 1,',  # 2 malformed JSON
        jl({"task_id": "t", "trial": 2, "success": True}),  # 3 missing agent
        jl({"agent": "a", "task_id": "t", "trial": "abc", "success": True}),  # 4 wrong type
        jl({"agent": "a", "task_id": "t", "trial": 0, "success": False}),  # 5 duplicate of line 1
        jl({"agent": "a", "task_id": "t", "trial": 5, "interactions": [{"tool_calls": [{"arguments": {}}]}]}),
        jl({"agent": "a", "task_id": "t", "trial": 6, "status": "crashed"}),  # 7 bad enum
        jl([1, 2]),  # 8 not an object
        jl({"agent": "a", "task_id": "t", "trial": 8, "success": True}),  # 9 ok
    ]
    path = write_lines(tmp_path / "bad.jsonl", lines)
    with pytest.raises(LoadError) as ei:
        load_trials(path)
    assert isinstance(ei.value, ValueError)
    probs = problems_of(ei)
    got = {(p.line, p.field) for p in probs}
    assert got == {
        (2, None),
        (3, "agent"),
        (4, "trial"),
        (5, "(agent, task_id, trial)"),
        (6, "interactions.0.tool_calls.0.name"),
        (7, "status"),
        (8, None),
    }
    assert all(p.source == str(path) and p.unit == "line" for p in probs)
    msg = str(ei.value)
    assert msg.startswith(f"7 problems in {path}")
    assert f"{path}, line 2: malformed JSON" in msg
    assert f"{path}, line 3, field 'agent': Field required" in msg
    assert f"{path}, line 4, field 'trial'" in msg and "'abc'" in msg
    assert "duplicate trial key ('a', 't', 0), first seen at line 1" in msg
    assert "line 8: expected a JSON object, got list" in msg


def test_skip_mode_returns_valid_records_and_lists_the_rest(tmp_path):
    lines = [
        jl({"agent": "a", "task_id": "t", "trial": 0, "success": True}),
        "not json",
        jl({"agent": "a", "task_id": "t", "trial": "x", "success": "maybe"}),  # two problems, one record
        jl({"agent": "a", "task_id": "t", "trial": 0, "success": False}),
        jl({"agent": "a", "task_id": "t", "trial": 1, "success": False}),
    ]
    path = write_lines(tmp_path / "bad.jsonl", lines)
    with pytest.warns(LoadWarning, match=r"skipped 3 records with 4 problems"):
        got = load_trials(path, on_error="skip")
    assert [(t.trial, t.success) for t in got] == [(0, True), (1, False)]
    assert got.n_skipped == 3 and len(got.skipped) == 4
    assert sorted({p.line for p in got.skipped}) == [2, 3, 4]
    assert {p.field for p in got.skipped if p.line == 3} == {"trial", "success"}
    # a clean file warns nothing
    clean = write_lines(tmp_path / "ok.jsonl", [lines[0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert load_trials(clean, on_error="skip").skipped == []
    with pytest.raises(ValueError, match="on_error"):
        load_trials(clean, on_error="ignore")


@pytest.mark.parametrize("how", ["load_trials", "load_counts", "counts_table"])
def test_skip_mode_that_leaves_nothing_is_an_error_listing_the_skipped_records(tmp_path, how):
    """Every record bad: skipping them all leaves nothing to analyse, so the loader says so (not an empty result)."""
    if how in ("load_trials", "load_counts"):
        path = write_lines(tmp_path / "allbad.jsonl", [
            jl({"agent": "a", "task_id": "t", "trial": -1, "success": True}),
            "not json",
            jl({"agent": "a", "task_id": "t", "trial": "x", "success": True}),
        ])
        lines = [1, 2, 3]
    else:
        path = tmp_path / "badcounts.csv"
        path.write_text("agent,task_id,n,c\nA,t1,5,6\nA,t2,x,3\nA,t3,-1,0\n")
        lines = [2, 3, 4]
    load = {"load_trials": load_trials, "load_counts": load_counts, "counts_table": load_counts}[how]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoadWarning)
        with pytest.raises(LoadError) as info:
            load(path, on_error="skip")
    exc = info.value
    assert str(exc).startswith(f"{path}: no usable records left after skipping 3 records:")
    assert [p.line for p in exc.problems] == lines and not exc.skippable
    assert "--skip-bad" not in str(exc)  # skipping is what left nothing: no advice to skip
    # one good record is enough to get a result back
    if how in ("load_trials", "load_counts"):
        with path.open("a") as fh:
            fh.write(jl({"agent": "a", "task_id": "t", "trial": 0, "success": True}) + "\n")
    else:
        with path.open("a") as fh:
            fh.write("A,t4,2,1\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoadWarning)
        assert len(load(path, on_error="skip")) == 1


def test_tau_bench_problems_name_record_and_raw_field(tmp_path):
    bad_call = tau_record(1, 0)
    bad_call["traj"][4]["tool_calls"][0]["function"].pop("name")
    no_reward = tau_record(2, 0)
    del no_reward["reward"]
    bad_reward = tau_record(3, 0, reward="yes")
    recs = [tau_record(0, 0), bad_call, no_reward, bad_reward, tau_record(0, 0)]
    path = tmp_path / "agent.json"
    path.write_text(json.dumps(recs))
    with pytest.raises(LoadError) as ei:
        load_trials(path)
    got = {(p.line, p.field, p.unit) for p in problems_of(ei)}
    assert got == {
        (1, "traj.4.tool_calls.0.function.name", "record"),
        (1, "traj.6.tool_call_id", "record"),  # that call's result now matches no call
        (2, "reward", "record"),
        (3, "reward", "record"),
        (4, "(agent, task_id, trial)", "record"),
    }
    assert f"{path}, record 2 (0-based), field 'reward': missing required field" in str(ei.value)
    with pytest.warns(LoadWarning):
        ok = load_trials(path, on_error="skip")
    assert [(t.task_id, t.trial) for t in ok] == [("0", 0)]


def test_malformed_json_array_names_the_line(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('[\n {"task_id": 0, "traj": []},\n {"task_id": 1,, }\n]\n')
    with pytest.raises(LoadError) as ei:
        load_trials(path, format="tau_bench")
    (p,) = problems_of(ei)
    assert (p.line, p.unit, p.field) == (3, "line", None) and "malformed JSON" in p.message


def test_run_table_problems(tmp_path):
    rows = [
        {"alias": "A", "task_id": "t", "score_binarized": 1, "run_id": "r1"},
        {"alias": "A", "task_id": "t", "score_binarized": 0.5, "run_id": "r2"},  # not 0/1
        {"alias": "A", "score_binarized": 1, "run_id": "r3"},  # missing task
        {"alias": "A", "task_id": "t", "score_binarized": 1, "run_id": "r1"},  # duplicate run id
        {"alias": "", "task_id": "t", "score_binarized": None, "run_id": "r5"},  # empty agent, no success
    ]
    path = write_lines(tmp_path / "runs.jsonl", [jl(r) for r in rows])
    with pytest.raises(LoadError) as ei:
        load_trials(path)
    got = {(p.line, p.field) for p in problems_of(ei)}
    assert got == {
        (2, "score_binarized"),
        (3, "task_id"),
        (4, "run_id"),
        (5, "alias"),
        (5, "score_binarized"),
    }
    assert "success must be 0/1 or true/false (any letter case), got 0.5" in str(ei.value)
    assert "duplicate run id 'r1', first seen at line 1" in str(ei.value)


def test_counts_problems_name_csv_line_and_column(tmp_path):
    csv = tmp_path / "counts.csv"
    csv.write_text(
        "agent,task,n,c\n"
        "a,t1,4,3\n"  # line 2 ok
        "a,t2,4,5\n"  # line 3 c > n
        "a,t3,-1,0\n"  # line 4 negative
        "a,t4,2.5,1\n"  # line 5 non-integer
        "a,t5,four,1\n"  # line 6 not a number
        ",t6,4,1\n"  # line 7 missing agent
        "a,t1,3,3\n"  # line 8 duplicate of line 2
        "a,t7,3.0,2\n"  # line 9 ok (3.0 is whole)
        "a,t8,4,\n"  # line 10 missing c
    )
    with pytest.raises(LoadError) as ei:
        load_counts(csv)
    got = {(p.line, p.field) for p in problems_of(ei)}
    assert got == {(3, "c"), (4, "n"), (5, "n"), (6, "n"), (7, "agent"), (8, "(agent, task)"), (10, "c")}
    msg = str(ei.value)
    assert f"{csv}, line 3, field 'c': c = 5 > n = 4 (more successes than trials)" in msg
    assert "'-1' is not a non-negative integer (negative)" in msg
    assert "'2.5' is not a non-negative integer (not a whole number)" in msg
    assert "'four' is not a non-negative integer (not a number)" in msg
    assert "duplicate (agent='a', task_id='t1'), first at line 2" in msg
    with pytest.warns(LoadWarning, match="skipped 7 records"):
        ok = load_counts(csv, on_error="skip")
    assert list(ok.itertuples(index=False, name=None)) == [("a", "t1", 4, 3, 0), ("a", "t7", 3, 2, 0)]
    assert len(ok.attrs["skipped"]) == 7


def test_counts_dataframe_problems_use_row_index_and_missing_columns():
    df = pd.DataFrame({"agent": ["a", "a"], "task_id": ["x", "y"], "n": [2, 2], "c": [1, 3]})
    with pytest.raises(LoadError) as ei:
        load_counts(df)
    (p,) = problems_of(ei)
    assert (p.source, p.line, p.unit, p.field) == ("<DataFrame>", 1, "row", "c")
    assert "row 1 (0-based)" in str(p)
    with pytest.raises(LoadError, match="field 'c': missing required column"):
        load_counts(pd.DataFrame({"agent": ["a"], "task": ["x"], "n": [1]}))


def _basic_trials() -> list[dict]:
    """Agents A, B on tasks t1..t4, 5 trials each; successes per task A = 5, 3, 0, 1 and B = 4, 2, 1, 0."""
    wins = {"A": (5, 3, 0, 1), "B": (4, 2, 1, 0)}
    return [
        {"agent": a, "task_id": f"t{j + 1}", "trial": i, "status": "completed", "success": i < w[j]}
        for a, w in wins.items() for j in range(4) for i in range(5)
    ]


def test_one_odd_first_record_does_not_decide_the_format(tmp_path):
    # line 1 says "task" (a run-table column) where the 39 other records say "task_id": the trial records win the
    # vote, so the error names line 1 alone and --skip-bad keeps the 39 good records (it used to keep line 1 only)
    rows = _basic_trials()
    odd = {"task": "t1", "agent": "A", "trial": 0, "success": True}
    path = write_lines(tmp_path / "wrongkey_first.jsonl", [jl(odd)] + [jl(r) for r in rows[1:]])
    assert detect_format(path) == "jsonl"
    with pytest.raises(LoadError) as exc:
        load_trials(path)
    assert [(p.line, p.field) for p in problems_of(exc)] == [(1, "task_id")]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoadWarning)
        kept = load_trials(path, on_error="skip")
        counts = load_counts(path, on_error="skip")
    assert len(kept) == 39 and [p.line for p in kept.skipped] == [1]
    # A: t1 keeps its 4 other successes (4/4), t2 3/5, t3 0/5, t4 1/5 -> pass@1 = (1 + 0.6 + 0 + 0.2) / 4 = 0.45
    a = counts[counts["agent"] == "A"].set_index("task_id")
    assert (a["c"] / a["n"]).mean() == pytest.approx(0.45)
    # a misspelled trial key on line 1 of trial records: also read as trial records, the error on line 1
    typo = write_lines(tmp_path / "typo.jsonl", [jl({"agnet": "A", "task_id": "t1", "trial": 0, "success": True})]
                       + [jl(r) for r in rows[1:]])
    with pytest.raises(LoadError) as exc:
        load_trials(typo)
    assert [(p.line, p.field) for p in problems_of(exc)] == [(1, "agent")]


def test_detection_votes_over_the_first_records(tmp_path):
    runs = [{"alias": "m", "task_id": f"t{i}", "score_binarized": i % 2} for i in range(6)]
    trial = {"agent": "m", "task_id": "t9", "trial": 0, "success": True}
    # a run table whose first line happens to be a trial record is still a run table (5 rows against 1)
    mixed = write_lines(tmp_path / "runs.jsonl", [jl(trial)] + [jl(r) for r in runs[:5]])
    assert detect_format(mixed) == "runs"
    # a tie goes to the trial records; blank and malformed lines do not vote
    tie = write_lines(tmp_path / "tie.jsonl", ["", "{bad", jl(runs[0]), jl(trial)])
    assert detect_format(tie) == "jsonl"
    # no record of either kind: the first JSON object is named with its line (after 2 blank lines)
    weird = write_lines(tmp_path / "w.jsonl", ["", "", jl({"foo": 1}), jl({"bar": 2})])
    with pytest.raises(ValueError, match=r"line 3 is a JSON object with keys \['foo'\].*other 1 record"):
        detect_format(weird)


def test_detection_and_format_errors(tmp_path):
    weird = write_lines(tmp_path / "w.jsonl", [jl({"foo": 1})])
    with pytest.raises(ValueError, match="neither a trial record"):
        load_trials(weird)
    with pytest.raises(ValueError, match="unknown format 'xml'"):
        load_trials(weird, format="xml")
    empty = tmp_path / "e.jsonl"
    empty.write_text("")
    with pytest.raises(ValueError, match="empty"):
        load_trials(empty)
    with pytest.raises(FileNotFoundError):
        load_trials(tmp_path / "absent.jsonl")
    ok = write_lines(tmp_path / "ok.jsonl", [jl({"agent": "a", "task_id": "t", "trial": 0, "success": True})])
    with pytest.raises(ValueError, match="agent= applies to tau-bench"):
        load_trials(ok, agent="x")
    truncated = tmp_path / "t.jsonl.gz"
    lines = [jl({"agent": "a", "task_id": "t", "trial": i, "success": True}) for i in range(2000)]
    truncated.write_bytes(gzip.compress("\n".join(lines).encode())[:400])
    with pytest.raises(LoadError, match="corrupt or truncated"):
        load_trials(truncated, format="jsonl")


# ---------------------------------------------------------------- real data (../shared/data)


def _need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(
            f"real data not available: {path} is absent (../shared/data sits beside the checkout in CI)"
        )
    return path


def test_real_tau_bench_airline():
    path = _need(TAU_FILE)
    trials = load_trials(path)
    assert trials.format == "tau_bench" and trials.skipped == []
    assert {t.agent for t in trials} == {"gpt-4o-airline"}
    counts = to_counts(trials)
    assert len(counts) == 50 and set(counts.n) == {4} and set(counts.n_missing) == {0}
    # 158 expected actions over the 50 tasks (SOURCE.md), counted once per task
    per_task = {t.task_id: len(t.expected_tool_calls) for t in trials}
    assert sum(per_task.values()) == 158
    # 84 successes; successes per task 0..4 -> 14, 12, 10, 4, 10 tasks (SOURCE.md)
    assert counts.c.sum() == 84
    assert counts.c.value_counts().sort_index().tolist() == [14, 12, 10, 4, 10]
    # unbiased pass^1 = mean over tasks of c/n = 0.420 (tau-bench README)
    assert (counts.c / counts.n).mean() == pytest.approx(0.420, abs=5e-4)
    # every tool call in the raw file is kept, with its result; every user message is a turn or the stop
    raw = json.loads(gzip.decompress(path.read_bytes()))
    raw_calls = sum(len(m.get("tool_calls") or []) for r in raw for m in r["traj"])
    calls = [c for t in trials for i in t.interactions for c in i.tool_calls]
    assert len(calls) == raw_calls and all(c.result is not None for c in calls)
    n_user = sum(m["role"] == "user" for r in raw for m in r["traj"])
    assert n_user == 1490  # SOURCE.md
    assert sum(len(t.interactions) for t in trials) + sum("stop_message" in t.meta for t in trials) == n_user


def test_real_metr_runs():
    path = _need(METR_FILE)
    trials = load_trials(path)  # METR's column names are the defaults
    assert trials.format == "runs" and len(trials) == 7063 and trials.skipped == []
    counts = to_counts(trials)
    per_agent = counts.groupby("agent").agg(tasks=("task_id", "size"), runs=("n", "sum"), lo=("n", "min"))
    per_agent["hi"] = counts.groupby("agent").n.max()
    # SOURCE.md table: tasks, runs, min-max runs per task
    published = {
        "Claude 3 Opus": (83, 866, 1, 39),
        "Claude 3.5 Sonnet (New)": (83, 802, 4, 96),
        "Claude 3.5 Sonnet (Old)": (83, 845, 4, 88),
        "GPT-4 0314": (83, 429, 1, 19),
        "GPT-4 Turbo": (83, 891, 6, 40),
        "GPT-4o": (83, 885, 1, 37),
        "o1": (83, 1014, 2, 65),
        "o1-preview": (75, 567, 4, 8),
        "gpt-3.5-turbo-instruct": (76, 485, 1, 8),
        "davinci-002": (16, 68, 2, 5),
        "human": (83, 211, 1, 17),
    }
    assert {a: tuple(int(x) for x in r) for a, r in per_agent.iterrows()} == published
    assert len(set(published) - {"human"}) == 10
    assert counts.task_id.nunique() == 83 and set(counts.n_missing) == {0}
    assert (counts.groupby("agent").n.nunique() > 1).sum() >= 10  # unequal runs per task
    assert (counts.n == 8).sum() == 474  # (alias, task) pairs with exactly 8 runs, SOURCE.md
    # mean score_binarized of Claude 3.5 Sonnet (New) is 0.456 (SOURCE.md)
    new = counts[counts.agent == "Claude 3.5 Sonnet (New)"]
    assert new.c.sum() / new.n.sum() == pytest.approx(0.456, abs=5e-4)
    assert load_counts(path).equals(counts)


def test_register_format_plugs_in_a_reader(tmp_path):
    from agentstats.io.jsonl import build_trials
    from agentstats.io.registry import formats, register_format, unregister_format

    def reader(path, log, *, agent="x", suffix=""):
        rows = [(i + 1, line.split(",")) for i, line in enumerate(Path(path).read_text().splitlines())]
        recs = [(ln, {"agent": agent + suffix, "task_id": t, "trial": 0, "reward": r}) for ln, (t, r) in rows]
        return build_trials(recs, log)

    register_format("toy_csvish", reader, aliases=("toy",))
    try:
        path = tmp_path / "f.txt"
        path.write_text("t1,1\nt2,zero\n")
        with pytest.raises(LoadError) as ei:
            load_trials(path, format="toy", agent="me")
        assert [(p.line, p.field) for p in problems_of(ei)] == [(2, "reward")]
        path.write_text("t1,1\nt2,0\n")
        got = load_trials(path, format="toy", agent="me", suffix="!")
        assert [(t.agent, t.task_id, t.outcome()) for t in got] == [
            ("me!", "t1", "success"),
            ("me!", "t2", "failure"),
        ]
        with pytest.raises(TypeError, match="unexpected option"):
            load_trials(path, format="jsonl", suffix="!")
        assert "toy_csvish" in formats()
    finally:
        unregister_format("toy_csvish")
    assert "toy_csvish" not in formats()
    with pytest.raises(ValueError, match="unknown format 'toy'"):
        load_trials(path, format="toy")


def test_malformed_json_names_the_column_on_its_own_line():
    """A record cut short at the end of its line: the column is where the line ends, not column 1 of a next line."""
    from agentstats.io.jsonl import parse_json_line

    line = '{"agent": "a", "task_id": "t", "trial": 4, "success":'
    obj, problem = parse_json_line((line + "\n").encode())
    assert obj is None and problem == f"malformed JSON: Expecting value at column {len(line) + 1}"
    _, problem = parse_json_line(b'{"agent": "a", x}\r\n')
    assert problem is not None and problem.endswith("at column 16")


def test_an_unterminated_string_is_reported_once_at_its_column(tmp_path):
    from agentstats.io import LoadError, load_trials

    p = tmp_path / "cut.jsonl"
    p.write_text('{"agent": "a", "task_id": "t1", "trial": 0, "success": true}\n{"agent": "a", "task_id": "t2\n')
    with pytest.raises(LoadError, match=r"line 2: malformed JSON: Unterminated string starting at column 27\b"):
        load_trials(p)


def test_a_wrong_format_names_the_format_the_content_looks_like():
    from pathlib import Path

    from agentstats.io import LoadError, load_trials

    example = Path(__file__).resolve().parents[2] / "data" / "example_trials.jsonl"
    with pytest.raises(LoadError) as err:
        load_trials(example, format="inspect")
    text = str(err.value)
    assert "looks like the 'jsonl' format, not 'inspect': give format='jsonl'" in text
    assert "--skip-bad" not in text  # skipping would not help


def test_format_advice_names_keywords_in_python_and_flags_on_the_command_line(tmp_path):
    from typer.testing import CliRunner

    from agentstats._util.options import option_name, option_style
    from agentstats.cli import app

    weird = write_lines(tmp_path / "w.jsonl", [jl({"foo": 1})])
    with pytest.raises(ValueError) as err:
        load_trials(weird)
    assert str(err.value).endswith("give format= and, for run tables, agent_col=, task_col=, success_col=")
    res = CliRunner().invoke(app, ["estimate", str(weird)])
    text = " ".join(res.output.split())
    assert res.exit_code == 2
    assert "give --format and, for run tables, --columns agent=COL,task=COL,success=COL" in text
    assert "format=" not in text and "agent_col" not in text
    table = tmp_path / "w.csv"
    table.write_text("x,y\n1,2\n")
    res = CliRunner().invoke(app, ["estimate", str(table)])
    assert "give --format and the column names (--columns agent=COL,task=COL,success=COL)" in " ".join(
        res.output.split())
    # the style is the command's only: outside it, Python's again
    assert option_name("agent_col") == "agent_col="
    with option_style("cli"):
        assert option_name("agent_col") == "--columns agent=COL" and option_name("format", "runs") == "--format runs"
        assert option_name("agent_col", "model") == "--columns agent=model" and option_name("on_error") == "--skip-bad"
    assert option_name("format", "runs") == "format='runs'"

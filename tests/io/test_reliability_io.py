"""Loading and writing under faults: nothing lost, bad input located, truncation detected, fast path exact.

Each test builds the faulty input by hand and checks the outcome against counts worked out independently
(from the generating loop, never from the loader's own output).
"""

from __future__ import annotations

import gzip
import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from agentstats.io import (
    LoadError,
    LoadWarning,
    formats,
    load,
    load_counts,
    load_trials,
    save_trials,
)
from agentstats.records.counts import to_counts
from agentstats.records.trial import Trial


def manifest_path(path: Path) -> Path:
    """Where save_trials puts the manifest (``<file>.manifest.json``), as docs/data-format.md says."""
    return path.with_name(path.name + ".manifest.json")


def jl(obj) -> str:
    return json.dumps(obj)


def write(path: Path, lines: list[str | bytes]) -> Path:
    path.write_bytes(b"".join((x if isinstance(x, bytes) else x.encode()) + b"\n" for x in lines))
    return path


def rec(agent="a", task="t", trial=0, **kw) -> dict:
    return {"agent": agent, "task_id": task, "trial": trial, **kw}


# ---------------------------------------------------------------- nothing lost


def test_one_undecodable_byte_costs_one_line_in_skip_mode(tmp_path):
    """10,000 lines, a 0xff byte on line 5,000: 9,999 trials load, line 5,000 is listed, nothing else lost."""
    lines: list[str | bytes] = []
    expected_c = 0
    for i in range(10_000):
        ok = i % 3 == 0
        line = jl(rec(task=f"t{i % 100}", trial=i // 100, success=ok))
        if i == 4_999:
            line_b = line.encode().replace(b'"a"', b'"a\xff"')
            lines.append(line_b)
            continue
        expected_c += ok
        lines.append(line)
    path = write(tmp_path / "big.jsonl", lines)
    with pytest.warns(LoadWarning, match=r"skipped 1 record with 1 problem"):
        got = load_trials(path, on_error="skip")
    assert len(got) == 9_999
    (p,) = got.skipped
    assert (p.line, p.field) == (5_000, None)
    assert p.message.startswith("not UTF-8 text: byte 0xff at column")
    assert sum(t.success for t in got) == expected_c
    # the counts path (fast path refuses, record-by-record path skips the one line)
    with pytest.warns(LoadWarning):
        counts = load_counts(path, on_error="skip")
    assert int(counts.n.sum()) == 9_999 and int(counts.c.sum()) == expected_c
    # raise mode names the line
    with pytest.raises(LoadError, match=r"line 5000: not UTF-8 text: byte 0xff"):
        load_trials(path)


def test_save_trials_is_atomic_and_keeps_the_previous_file(tmp_path):
    path = tmp_path / "scored.jsonl"
    first = [Trial(agent="a", task_id=f"t{i}", trial=0, success=True) for i in range(50)]
    save_trials(first, path)
    before = path.read_bytes()
    manifest_before = manifest_path(path).read_bytes()

    def interrupted():
        for i in range(300):
            if i == 120:
                raise KeyboardInterrupt  # a Ctrl-C in the middle of writing
            yield Trial(agent="b", task_id=f"t{i}", trial=0, success=False)

    with pytest.raises(KeyboardInterrupt):
        save_trials(interrupted(), path)
    assert path.read_bytes() == before  # the earlier good file is untouched
    assert manifest_path(path).read_bytes() == manifest_before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scored.jsonl", "scored.jsonl.manifest.json"]
    assert list(load_trials(path)) == first


@pytest.mark.parametrize("name", ["trials.jsonl", "trials.jsonl.gz"])
def test_truncated_or_changed_file_is_refused(tmp_path, name):
    path = tmp_path / name
    trials = [Trial(agent="a", task_id=f"t{i}", trial=0, success=i % 2 == 0) for i in range(300)]
    save_trials(trials, path)
    man = json.loads(manifest_path(path).read_text())
    assert man["records"] == 300 and man["bytes"] == path.stat().st_size and man["file"] == name
    assert len(load_trials(path)) == 300
    full = path.read_bytes()
    if name.endswith(".gz"):
        # a truncated copy that still decompresses (a complete gzip member of the first 100 lines)
        text = gzip.decompress(full).decode().splitlines(keepends=True)
        path.write_bytes(gzip.compress("".join(text[:100]).encode()))
    else:
        cut = [i for i, b in enumerate(full) if b == 10][99] + 1  # exactly after line 100: every line valid
        path.write_bytes(full[:cut])
    for on_error in ("raise", "skip"):
        with pytest.raises(LoadError) as ei:
            load_trials(path, on_error=on_error)
        assert ("truncated" in str(ei.value)) or ("changed" in str(ei.value))
        assert "300 records" in str(ei.value) and "--skip-bad" not in str(ei.value)
    with pytest.raises(LoadError, match="300 records"):
        load_counts(path)
    # the same size with different content: changed, not truncated
    path.write_bytes(full.replace(b"t1", b"t7", 1) if not name.endswith(".gz") else full[:-8] + b"\0" * 8)
    with pytest.raises(LoadError, match="changed after agentstats wrote it"):
        load_trials(path)
    # deleting the manifest is the user's way to load a file changed on purpose
    path.write_bytes(full)
    manifest_path(path).unlink()
    assert len(load_trials(path)) == 300


def test_gzip_output_is_deterministic(tmp_path):
    trials = [Trial(agent="a", task_id="t", trial=i, reward=0.5) for i in range(20)]
    a, b = save_trials(trials, tmp_path / "a.jsonl.gz"), save_trials(trials, tmp_path / "b.jsonl.gz")
    assert a.read_bytes() == b.read_bytes() and a.read_bytes()[:2] == b"\x1f\x8b"
    assert list(load_trials(a)) == trials


# ---------------------------------------------------------------- values that are not outcomes


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_non_finite_rewards_are_invalid_input(tmp_path, literal):
    lines = [jl(rec(trial=0, reward=1.0)), '{"agent": "a", "task_id": "t", "trial": 1, "reward": ' + literal + "}"]
    path = write(tmp_path / "r.jsonl", lines)
    with pytest.raises(LoadError) as ei:
        load_trials(path)
    ((line, field),) = {(p.line, p.field) for p in ei.value.problems}
    assert (line, field) == (2, "reward") and "finite number" in str(ei.value)
    with pytest.warns(LoadWarning):
        counts = load_counts(path, on_error="skip")
    assert list(counts.itertuples(index=False, name=None)) == [("a", "t", 1, 1, 0)]  # not a failure


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "1e400"])
def test_non_finite_tau_bench_reward_is_invalid(tmp_path, literal):
    good = {"task_id": 0, "trial": 0, "reward": 1.0, "info": {}, "traj": []}
    path = tmp_path / "agent.json"
    path.write_text("[" + json.dumps(good) + ', {"task_id": 0, "trial": 1, "reward": ' + literal
                    + ', "info": {}, "traj": []}]')
    with pytest.raises(LoadError) as ei:
        load_trials(path)
    (p,) = ei.value.problems
    assert (p.line, p.unit, p.field) == (1, "record", "reward") and "finite" in p.message


@pytest.mark.parametrize(
    "record, field, text",
    [
        (rec(trial=-1, success=True), "trial", "greater than or equal to 0"),
        (rec(agent="", success=True), "agent", "must be a non-empty name"),
        (rec(agent="   ", success=True), "agent", "must be a non-empty name"),
        (rec(task="", success=True), "task_id", "must be a non-empty name"),
        (rec(success="yes"), "success", "success must be true or false"),
        (rec(success="t"), "success", "success must be true or false"),
        (rec(success=0.5), "success", "success must be true or false"),
        (rec(success=True, reward=0.0), "success", "contradict"),
        (rec(success=False, reward=1.0), "success", "contradict"),
    ],
)
def test_silently_accepted_values_are_located_errors(tmp_path, record, field, text):
    path = write(tmp_path / "x.jsonl", [jl(rec(task="ok", success=True)), jl(record)])
    with pytest.raises(LoadError) as ei:
        load_trials(path)
    assert {(p.line, p.field) for p in ei.value.problems} == {(2, field)}
    assert text in str(ei.value)


def test_success_and_reward_that_agree_or_partial_rewards_are_fine(tmp_path):
    lines = [
        jl(rec(trial=0, success=True, reward=1.0)),
        jl(rec(trial=1, success=False, reward=0.0)),
        jl(rec(trial=2, success=True, reward=0.5)),  # partial reward: a separate metric, no contradiction
        jl(rec(trial=3, success=1)),  # 1 / 0 are documented spellings
        jl(rec(trial=4, success=False, reward=1.0, scoring_source="scored")),  # score_trials' own output
        jl(rec(trial=5, status=None, success=True)),  # null status: the default
    ]
    got = load_trials(write(tmp_path / "ok.jsonl", lines))
    assert [t.outcome() for t in got] == ["success", "failure", "success", "success", "failure", "success"]


@pytest.mark.parametrize("value", ["yes", "pass", "t", "off", "Y", "passed", "2"])
def test_run_tables_accept_only_the_documented_success_spellings(tmp_path, value):
    csv = tmp_path / "runs.csv"
    csv.write_text(f"agent,task,success\na,t1,1\na,t1,{value}\n")
    with pytest.raises(LoadError) as ei:
        load_trials(csv)
    ((line, field),) = {(p.line, p.field) for p in ei.value.problems}
    assert (line, field) == (3, "success")


def test_run_tables_documented_spellings(tmp_path):
    csv = tmp_path / "runs.csv"
    values = ["1", "0", "true", "FALSE", "True", "1.0", "0.0"]
    csv.write_text("agent,task,success\n" + "".join(f"a,t1,{v}\n" for v in values))
    got = load_trials(csv)
    assert [t.success for t in got] == [True, False, True, False, True, True, False]


def test_deeply_nested_line_is_a_located_skippable_error(tmp_path):
    deep = '{"agent": "a", "task_id": "t", "trial": 1, "meta": ' + "[" * 100_000 + "]" * 100_000 + "}"
    lines = [jl(rec(trial=0, success=True)), deep, jl(rec(trial=2, success=False))]
    path = write(tmp_path / "deep.jsonl", lines)
    with pytest.raises(LoadError) as ei:
        load_trials(path)
    (p,) = ei.value.problems
    assert p.line == 2 and "nested too deeply" in p.message
    with pytest.warns(LoadWarning):
        got = load_counts(path, on_error="skip")
    assert list(got.itertuples(index=False, name=None)) == [("a", "t", 2, 1, 0)]
    # an integer of 5,000 digits: beyond Python's conversion limit, a located problem too
    huge = '{"agent": "a", "task_id": "t", "trial": 3, "success": true, "score": ' + "9" * 5000 + "}"
    path = write(tmp_path / "huge.jsonl", [*lines[:1], huge])
    with pytest.raises(LoadError) as ei:
        load_trials(path)
    (p,) = ei.value.problems
    assert p.line == 2 and p.message.startswith("malformed JSON")
    # a JSON array nested too deeply is one problem for the file, not a crash
    arr = tmp_path / "deep.json"
    arr.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(LoadError, match="nested too deeply"):
        load_trials(arr, format="json")


def test_counts_table_beyond_int64_is_located(tmp_path):
    csv = tmp_path / "counts.csv"
    csv.write_text("agent,task_id,n,c\na,t1,4,2\na,t2,9223372036854775808,1\na,t3,9223372036854775807,1\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(LoadError) as ei:
            load_counts(csv)
    (p,) = ei.value.problems
    assert (p.line, p.field) == (3, "n")
    assert "9223372036854775808" in p.message and "beyond 9,223,372,036,854,775,807" in p.message
    with pytest.warns(LoadWarning):
        ok = load_counts(csv, on_error="skip")
    assert ok.n.tolist() == [4, 9_223_372_036_854_775_807]


def test_misspelled_outcome_field_is_named_with_its_line(tmp_path):
    lines = [jl(rec(trial=0, success=True)), jl(rec(trial=1, Success=True)), jl(rec(trial=2, succes=False))]
    path = write(tmp_path / "typo.jsonl", lines)
    with pytest.raises(ValueError) as ei:
        load_counts(path)
    msg = str(ei.value)
    assert "2 trials have no outcome" in msg
    assert f"{path}, line 2, field 'Success': unknown field 'Success': did you mean 'success'?" in msg
    assert f"{path}, line 3, field 'succes': unknown field 'succes': did you mean 'success'?" in msg


def test_gaps_in_the_grid_are_reported_not_hidden(tmp_path):
    lines = [jl(rec("a", t, i, success=True)) for t in ("t1", "t2") for i in range(4)]
    lines = [x for x in lines if '"t2", "trial": 2' not in x]  # a: t2 trial 2 never written
    lines += [jl(rec("b", "t1", i, success=False)) for i in range(4)]  # b never ran t2
    path = write(tmp_path / "gaps.jsonl", lines)
    counts = load_counts(path)
    gaps = counts.attrs["gaps"]
    assert (gaps.n_absent, gaps.n_cells) == (5, 2)
    assert list(gaps.frame[["agent", "task_id", "absent_trials"]].itertuples(index=False, name=None)) == [
        ("a", "t2", "2"),
        ("b", "t2", "0..3"),
    ]
    assert int(counts.n_missing.sum()) == 0  # absent trials are not "missing" (infra errors)
    exact = load(path).counts
    pd.testing.assert_frame_equal(exact.attrs["gaps"].frame, gaps.frame)


# ---------------------------------------------------------------- agents


def test_agents_selection(tmp_path):
    lines = [jl(rec(a, "t", i, success=i == 0)) for a in ("gpt-4o", "gpt-3.5", "human") for i in range(2)]
    path = write(tmp_path / "ag.jsonl", lines)
    assert set(load_counts(path, agents="!human").agent) == {"gpt-4o", "gpt-3.5"}
    assert set(load_counts(path, agents="human").agent) == {"human"}
    assert set(load_counts(path, agents="gpt-*,!gpt-3.5").agent) == {"gpt-4o"}
    assert set(load_counts(path, agents=["gpt-4o", "human"]).agent) == {"gpt-4o", "human"}
    ts = load_trials(path, agents="!human")
    assert {t.agent for t in ts} == {"gpt-4o", "gpt-3.5"} and ts.excluded_agents == ["human"]
    assert load_counts(path, agents="!human").attrs["excluded_agents"] == ["human"]
    with pytest.raises(ValueError, match=r"^agents='!humans': 'humans' matches no agent .*gpt-3.5, gpt-4o, human"):
        load_trials(path, agents="!humans")
    with pytest.raises(ValueError, match="keeps no agent"):
        load_counts(path, agents="!*")
    with pytest.raises(ValueError, match="empty entry"):
        load_trials(path, agents="a,,b")
    csv = tmp_path / "counts.csv"
    csv.write_text("agent,task_id,n,c\nx,t,2,1\nhuman,t,2,2\n")
    assert load_counts(csv, agents="!human").agent.tolist() == ["x"]
    assert load(csv, agents="x").counts.agent.tolist() == ["x"]


# ---------------------------------------------------------------- the fast counts path decides only clean files


def _random_file(tmp_path: Path, seed: int) -> tuple[Path, list[str]]:
    rng = np.random.default_rng(seed)
    lines = []
    for a in range(3):
        for t in range(int(rng.integers(1, 6))):
            for i in range(int(rng.integers(1, 5))):
                if rng.random() < 0.15:
                    continue  # gaps
                kind = rng.integers(0, 6)
                r = rec(f"agent{a}", f"task{t}", i)
                if kind == 0:
                    r["status"] = "infra_error"
                elif kind == 1:
                    r["status"] = "agent_error"
                elif kind == 2:
                    r["reward"] = float(rng.choice([0.0, 0.5, 1.0, 1 - 1e-7]))
                elif kind == 3:
                    r["judge_missing"] = True
                else:
                    r["success"] = bool(rng.random() < 0.5)
                lines.append(jl(r))
    rng.shuffle(lines)
    return write(tmp_path / f"r{seed}.jsonl", lines), lines


@pytest.mark.parametrize("seed", range(8))
def test_fast_counts_equal_the_record_by_record_counts(tmp_path, seed):
    from agentstats.io.fastcounts import jsonl_counts

    path, _ = _random_file(tmp_path, seed)
    fast = jsonl_counts(path)
    assert fast is not None  # a clean, flat file: the fast path decides
    exact = to_counts(load_trials(path))
    pd.testing.assert_frame_equal(fast, exact)
    pd.testing.assert_frame_equal(fast.attrs["gaps"].frame, exact.attrs["gaps"].frame)
    assert fast.attrs["gaps"].n_expected == exact.attrs["gaps"].n_expected
    from agentstats.io.agents import AgentSelection

    sel = AgentSelection.parse("!agent1")
    f2 = jsonl_counts(path, agents=sel)
    e2 = load_counts(path.with_suffix(".jsonl"), agents="!agent1", format="jsonl")
    pd.testing.assert_frame_equal(f2, e2)


@pytest.mark.parametrize(
    "line",
    [
        '{"agent": "a", "task_id": "t", "trial": 9, "success": true, "note": 1}',  # another field
        '{"agent": "a", "task_id": "t", "trial": 9.0, "success": true}',  # 9.0: pydantic reads it, arrow not
        '{"agent": "a", "task_id": "t", "trial": 9, "success": true}{"agent": "a", "task_id": "t", "trial": 8}',
        '{"agent": "a", "task_id": 7, "trial": 9, "success": true}',  # integer task id
        '{"agent": "a", "task_id": "t", "trial": 9, "success": 1}',
        '{"agent": "a", "task_id": "t", "trial": 0, "success": true}',  # duplicate key
        '{"agent": "a", "task_id": "t", "trial": 9, "reward": NaN}',
        '{"agent": "a", "task_id": "t", "trial": 9, "success": true, "reward": 0}',
        '{"agent": "a", "task_id": "t", "trial": 9}',  # unscored
        '{"agent": "a", "task_id": "t",\n"trial": 9, "success": true}',  # one record over two lines
    ],
)
def test_fast_counts_refuse_anything_unusual(tmp_path, line):
    from agentstats.io.fastcounts import jsonl_counts

    path = tmp_path / "u.jsonl"
    path.write_text(jl(rec(trial=0, success=True)) + "\n" + line + "\n")
    assert jsonl_counts(path) is None
    # and the public entry point then answers as the record-by-record reader does
    try:
        exact = to_counts(load_trials(path))
    except ValueError as exc:
        with pytest.raises(type(exc)):
            load_counts(path)
    else:
        pd.testing.assert_frame_equal(load_counts(path), exact)


# ---------------------------------------------------------------- formats


def test_formats_lists_every_format():
    from agentstats.io.registry import aliases, format_spec

    builtin = {"jsonl", "json", "tau_bench", "runs", "counts", "duckdb", "parquet_dataset"}
    readers = {"fair_forge", "fai_jsonl", "bfcl", "tau2", "inspect", "otel", "promptfoo", "lm_eval"}
    record_sets = {"scores": "scores", "eval_set": "eval_set", "calibration": "calibration"}
    assert set(formats()) == builtin | readers | set(record_sets)
    assert set(aliases().values()) == set(formats())
    assert len(formats()) == len(set(formats()))
    assert {f: format_spec(f).holds for f in record_sets} == record_sets
    assert set(formats(("trials", "counts"))) == builtin | readers


@pytest.mark.parametrize("seed", range(4))
def test_record_by_record_counts_equal_to_counts_of_loaded_trials(tmp_path, seed):
    """Files the fast path cannot take (extra fields, bad lines, duplicates) are counted without keeping trials."""
    from agentstats.io.jsonl import count_jsonl_trials
    from agentstats.records.problems import ProblemLog

    path, lines = _random_file(tmp_path, seed)
    rng = np.random.default_rng(seed)
    extra = [json.dumps({**json.loads(x), "usage": {"latency_s": float(rng.random())}}) for x in lines]
    extra += [extra[0], "{not json", jl(rec("agent0", "task0", 99, success="maybe"))]  # duplicate, malformed, bad
    path.write_text("".join(x + "\n" for x in extra))
    with pytest.warns(LoadWarning):
        exact_trials = load_trials(path, on_error="skip")
    exact = to_counts(exact_trials)
    with pytest.warns(LoadWarning):
        tallied = count_jsonl_trials(path, ProblemLog(str(path), "skip"))
    pd.testing.assert_frame_equal(tallied, exact)
    pd.testing.assert_frame_equal(tallied.attrs["gaps"].frame, exact.attrs["gaps"].frame)
    assert [(p.line, p.field) for p in tallied.attrs["skipped"]] == [(p.line, p.field) for p in exact_trials.skipped]
    with pytest.warns(LoadWarning):
        public = load_counts(path, on_error="skip", agents="!agent2")
    pd.testing.assert_frame_equal(public, exact[exact.agent != "agent2"].reset_index(drop=True), check_like=True)


def test_fast_counts_take_usage_and_risk_level(tmp_path):
    from agentstats.io.fastcounts import jsonl_counts

    lines = [
        jl(rec(trial=0, success=True, usage={"latency_s": 1.5, "input_tokens": 10}, risk_level="low")),
        jl(rec(trial=1, success=False, usage=None)),
        jl(rec(trial=2, reward=1.0, usage={})),
    ]
    path = write(tmp_path / "u.jsonl", lines)
    fast = jsonl_counts(path)
    assert fast is not None
    pd.testing.assert_frame_equal(fast, to_counts(load_trials(path)))
    # a member Usage does not document, or tokens as 10.0: the record-by-record reader decides
    for odd in ({"latency_s": 1.5, "region": "eu"}, {"input_tokens": 10.0}):
        path = write(tmp_path / "v.jsonl", [*lines, jl(rec(trial=3, success=True, usage=odd))])
        assert jsonl_counts(path) is None
        assert int(load_counts(path).n.sum()) == 4


def test_a_corrupt_file_is_not_offered_skip_bad_and_the_hint_names_the_callers_option(tmp_path):
    """A problem of the whole file (truncated compression) has no record to skip: no --skip-bad advice; a record's
    problem gets it, as on_error='skip' in Python and --skip-bad on the command line."""
    import gzip

    from typer.testing import CliRunner

    from agentstats.cli import app
    from agentstats.io import LoadError, load_trials

    rec = '{"agent": "a", "task_id": "t", "trial": %d, "success": %s}\n'
    whole = gzip.compress("".join(rec % (i, "true") for i in range(2000)).encode())
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(LoadError) as caught:
        load_trials(cut, "jsonl")  # read (detection would refuse the file first, naming it as cut too)
    assert "truncated compression" in str(caught.value) and "skip" not in str(caught.value)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(rec % (0, "true") + rec % (1, '"maybe"'))
    with pytest.raises(LoadError) as caught:
        load_trials(bad)
    assert str(caught.value).endswith("get a list of what was skipped: on_error='skip'.")
    res = CliRunner().invoke(app, ["estimate", str(bad)])
    assert res.exit_code == 2 and "get a list of what was skipped: --skip-bad." in " ".join(res.output.split())
    res = CliRunner().invoke(app, ["estimate", str(cut), "--format", "jsonl"])
    assert res.exit_code == 2 and "skip-bad" not in res.output


@pytest.mark.parametrize(
    ("fmt", "text"),
    [
        ("tau2", '{"info": {"num_trials": 1}, "tasks": [], "simulations": [{"id": "cut sh'),
        ("tau-bench", '[{"task_id": 1, "trial": 0, "reward": 1.0, "info": {"note": "cut sh'),
    ],
)
def test_a_cut_one_value_json_file_says_where_once_and_is_not_offered_skip_bad(tmp_path, fmt, text):
    """A tau2 results file (one JSON object) or a tau-bench file (one JSON array) cut short: json's "Unterminated
    string starting at" is followed by the column once, and no skip is offered (nothing is read past the error)."""
    from typer.testing import CliRunner

    from agentstats.cli import app
    from agentstats.io import LoadError, load_trials

    path = tmp_path / "cut.json"
    path.write_text(text)
    column = text.index('"cut') + 1  # json's columns are 1-based, at the string's opening quote
    with pytest.raises(LoadError) as caught:
        load_trials(path, fmt)
    msg = str(caught.value)
    assert "line 1: malformed JSON" in msg and f"Unterminated string starting at column {column}" in msg
    assert "at at" not in msg and "skip" not in msg
    res = CliRunner().invoke(app, ["import", str(path), "--format", fmt, "--store", str(tmp_path / "s.duckdb"),
                                   "--store-run", "r"])
    out = " ".join(res.output.split())
    assert res.exit_code == 2 and f"starting at column {column}" in out and "skip" not in out

"""Exit statuses of every command (0 ok, 1 work failed, 2 usage/input, 3 diagnostics under --strict, 130 interrupted).

Each status is triggered with the cheapest input that produces it; fits, scoring and reports are replaced by
stand-ins (monkeypatch) so that no sampler or notebook runs. An interrupt is either a ``KeyboardInterrupt``
raised inside the command, or -- as samplers and kernels do -- a real SIGINT that a library catches and turns
into another exception later.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pandas as pd
import pytest
from fit_helpers import StandInFit
from typer.testing import CliRunner

from agentstats.cli import app
from agentstats.cli.common import EXIT_DIAGNOSTICS, EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE

runner = CliRunner()


@pytest.fixture()
def trials(tmp_path) -> Path:
    path = tmp_path / "t.jsonl"
    lines = [
        {"agent": a, "task_id": f"t{t}", "trial": i, "success": (i + t) % 2 == 0}
        for a in ("a", "b")
        for t in range(3)
        for i in range(3)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    return path


def _interrupt_then(exc: BaseException):
    """A stand-in for a sampler/kernel: a real SIGINT arrives, the library swallows it, then fails otherwise."""

    def run(*args, **kwargs):
        try:
            os.kill(os.getpid(), signal.SIGINT)
        except KeyboardInterrupt:
            pass  # what nutpie (abort) and jupyter do
        raise exc

    return run


def _raise(exc: BaseException):
    def run(*args, **kwargs):
        raise exc

    return run


def _assert_interrupted(res):
    assert res.exit_code == EXIT_INTERRUPTED, res.output
    assert "interrupted" in res.output and "Traceback" not in res.output
    assert "Aborted" not in res.output  # click's own handling (exit 1) did not run


def _assert_one_line_error(res, code):
    assert res.exit_code == code, res.output
    assert "Traceback" not in res.output and "error:" in res.output


# ---------------------------------------------------------------- simulate


def test_simulate_statuses(tmp_path, monkeypatch):
    out = tmp_path / "s.jsonl"
    assert runner.invoke(app, ["simulate", "--out", str(out), "--n-tasks", "2", "--n-trials", "2"]).exit_code == EXIT_OK
    _assert_one_line_error(runner.invoke(app, ["simulate", "--out", str(tmp_path / "x.jsonl"), "--n-tasks", "0"]),
                           EXIT_USAGE)
    blocked = tmp_path / "file"
    blocked.write_text("")
    _assert_one_line_error(runner.invoke(app, ["simulate", "--out", str(blocked / "sub" / "x.jsonl")]), EXIT_USAGE)
    import agentstats.io as io_mod

    with monkeypatch.context() as m:  # a write that fails after the checks (disk full, say)
        m.setattr(io_mod, "save_trials", _raise(OSError(28, "No space left on device")))
        _assert_one_line_error(runner.invoke(app, ["simulate", "--out", str(tmp_path / "z.jsonl")]), EXIT_FAILURE)
    import agentstats.simulate as sim

    monkeypatch.setattr(sim, "simulate_trials", _raise(KeyboardInterrupt()))
    _assert_interrupted(runner.invoke(app, ["simulate", "--out", str(tmp_path / "y.jsonl")]))


def test_simulate_never_overwrites_without_force(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = runner.invoke(app, ["simulate", "--n-tasks", "2", "--n-trials", "2"])
    assert res.exit_code == 0, res.output
    default = tmp_path / "simulated_trials.jsonl"
    assert default.exists() and not (tmp_path / "data").exists()  # not the shipped example data
    before = default.read_bytes()
    res = runner.invoke(app, ["simulate", "--n-tasks", "3", "--n-trials", "2"])
    assert res.exit_code == EXIT_USAGE and "--force" in res.output
    assert default.read_bytes() == before
    res = runner.invoke(app, ["simulate", "--n-tasks", "3", "--n-trials", "2", "--force"])
    assert res.exit_code == 0 and len(default.read_text().splitlines()) == 3 * 3 * 2
    # the message names the option of the file that exists: --truth for the truth table
    truth = tmp_path / "truth.csv"
    truth.write_text("kept")
    res = runner.invoke(app, ["simulate", "--out", str(tmp_path / "new.jsonl"), "--truth", str(truth)])
    text = " ".join(res.output.split())
    assert res.exit_code == EXIT_USAGE and f"--truth {truth}: exists; pass --force to overwrite it, or --truth" in text
    assert "--out" not in text and truth.read_text() == "kept" and not (tmp_path / "new.jsonl").exists()


def test_simulate_default_is_not_the_shipped_example():
    from agentstats.cli.simulate import DEFAULT_OUT

    assert DEFAULT_OUT == Path("simulated_trials.jsonl")


# ---------------------------------------------------------------- estimate


def test_estimate_statuses(trials, tmp_path, monkeypatch):
    assert runner.invoke(app, ["estimate", str(trials), "--n-boot", "100"]).exit_code == EXIT_OK
    _assert_one_line_error(runner.invoke(app, ["estimate", str(tmp_path / "absent.jsonl")]), EXIT_USAGE)
    import agentstats.estimators as est

    monkeypatch.setattr(est, "suite_pass_k", _raise(RuntimeError("boom")))
    res = runner.invoke(app, ["estimate", str(trials)])
    _assert_one_line_error(res, EXIT_FAILURE)
    assert "RuntimeError: boom" in res.output
    monkeypatch.setattr(est, "suite_pass_k", _raise(KeyboardInterrupt()))
    _assert_interrupted(runner.invoke(app, ["estimate", str(trials)]))
    monkeypatch.setattr(est, "suite_pass_k", _interrupt_then(IndexError("list index out of range")))
    _assert_interrupted(runner.invoke(app, ["estimate", str(trials)]))
    # the reader of stdout went away (`| head`): the work was done, so status 0 and no error text
    monkeypatch.setattr(est, "suite_pass_k", _raise(BrokenPipeError(32, "Broken pipe")))
    res = runner.invoke(app, ["estimate", str(trials)])
    assert res.exit_code == EXIT_OK and "error" not in res.output.lower()


def test_estimate_k_beyond_the_data_is_refused_at_once(trials):
    res = runner.invoke(app, ["estimate", str(trials), "--k", "1..100000"])
    assert res.exit_code == EXIT_USAGE and "10,000" in res.output
    res = runner.invoke(app, ["estimate", str(trials), "--k", "1..50"])
    assert res.exit_code == EXIT_USAGE
    assert "largest number of trials per task" in res.output and "is 3" in res.output
    res = runner.invoke(app, ["estimate", str(trials), "--k", "3", "--json", "--n-boot", "100"])
    assert res.exit_code == 0 and {r["k"] for r in json.loads(res.stdout)} == {3}


def test_estimate_skip_bad_lists_the_skipped_line(trials):
    raw = trials.read_bytes().splitlines(keepends=True)
    raw[4] = raw[4].replace(b'"a"', b'"a\xff"')
    trials.write_bytes(b"".join(raw))
    res = runner.invoke(app, ["estimate", str(trials), "--skip-bad", "--json", "--n-boot", "100"])
    assert res.exit_code == 0, res.output
    assert "skipped 1 record (1 problem)" in res.stderr and "line 5: not UTF-8 text" in res.stderr
    res = runner.invoke(app, ["estimate", str(trials)])
    assert res.exit_code == EXIT_USAGE and "line 5" in res.output


def test_estimate_agents_and_gaps(trials):
    res = runner.invoke(app, ["estimate", str(trials), "--agents", "!b", "--json", "--n-boot", "100"])
    assert res.exit_code == 0, res.output
    assert {r["agent"] for r in json.loads(res.stdout)} == {"a"}
    assert "agents left out (--agents): b" in res.stderr
    res = runner.invoke(app, ["estimate", str(trials), "--agents", "c"])
    assert res.exit_code == EXIT_USAGE and "error: --agents c: 'c' matches no agent" in res.output
    assert "agents=" not in res.output  # the flag, not the Python keyword
    res = runner.invoke(app, ["estimate", str(trials), "--agents", "a,,b"])
    assert res.exit_code == EXIT_USAGE and "error: --agents a,,b: empty entry" in res.output
    lines = trials.read_text().splitlines()
    trials.write_text("\n".join(lines[:-1]) + "\n")  # b / t2 / trial 2 never written
    res = runner.invoke(app, ["estimate", str(trials), "--json", "--n-boot", "100"])
    assert res.exit_code == 0
    assert "1 trial absent from the agent x task x trial grid" in res.stderr and "b / t2: trial 2" in res.stderr


def test_estimate_truncated_output_of_score_is_refused(tmp_path):
    from agentstats.io import save_trials
    from agentstats.records.trial import Trial

    path = tmp_path / "scored.jsonl"
    save_trials([Trial(agent="a", task_id=f"t{i}", trial=0, success=True) for i in range(100)], path)
    data = path.read_bytes()
    path.write_bytes(data[: data.index(b"\n", len(data) // 2) + 1])  # cut at a line end: every line valid
    res = runner.invoke(app, ["estimate", str(path)])
    assert res.exit_code == EXIT_USAGE and "truncated" in res.output


# ---------------------------------------------------------------- fit (stand-ins for the sampler)


class _Diag:
    def __init__(self, ok: bool):
        self.ok = ok
        self.divergences = 0
        self.problems = [] if ok else ["r_hat 1.2 > 1.01"]
        self.table = pd.DataFrame({"variable": ["mu"], "r_hat": [1.0 if ok else 1.2]})

    def __str__(self) -> str:
        return "diagnostics ok" if self.ok else "diagnostics failed"


def _fake_fit(monkeypatch, ok=True, fit_fn=None):
    import agentstats.models as models
    import agentstats.posterior as post

    seen = {}

    def fake_fit(counts, model, **kw):
        seen["model"] = model
        seen["agents"] = sorted(set(counts["agent"]))
        return StandInFit(_Diag(ok), model, draws=1)

    summary = pd.DataFrame(
        [dict(agent="a", k=1, quantity=q, population="observed", mean=0.5, median=0.5, ci_low=0.4, ci_high=0.6,
              ci_kind="eti", ci_prob=0.95, extrapolated=0.0) for q in ("pass_at_k", "pass_hat_k")]
    )
    monkeypatch.setattr(models, "fit", fit_fn or fake_fit)
    monkeypatch.setattr(post, "posterior_pass_k", lambda *a, **k: None)
    monkeypatch.setattr(post, "summarize_pass_k", lambda *a, **k: summary)
    monkeypatch.setattr(post, "consistency", lambda *a, **k: None)
    monkeypatch.setattr(post, "predict_rerun", lambda *a, **k: None)
    return seen


def test_fit_statuses(trials, tmp_path, monkeypatch):
    seen = _fake_fit(monkeypatch, ok=True)
    res = runner.invoke(app, ["fit", str(trials), "--k", "1"])
    assert res.exit_code == EXIT_OK, res.output
    _assert_one_line_error(runner.invoke(app, ["fit", str(tmp_path / "absent.jsonl")]), EXIT_USAGE)
    _assert_one_line_error(runner.invoke(app, ["fit", str(trials), "--population", "all"]), EXIT_USAGE)
    _fake_fit(monkeypatch, ok=False)
    assert runner.invoke(app, ["fit", str(trials), "--k", "1", "--strict"]).exit_code == EXIT_DIAGNOSTICS
    assert runner.invoke(app, ["fit", str(trials), "--k", "1"]).exit_code == EXIT_OK  # warned, not strict
    _fake_fit(monkeypatch, fit_fn=_raise(RuntimeError("sampler crashed")))
    _assert_one_line_error(runner.invoke(app, ["fit", str(trials)]), EXIT_FAILURE)
    # Ctrl-C: nutpie aborts and an IndexError follows; PyMC surfaces a SystemError
    for after in (IndexError("index 0 is out of bounds"), SystemError("error return without exception set")):
        _fake_fit(monkeypatch, fit_fn=_interrupt_then(after))
        _assert_interrupted(runner.invoke(app, ["fit", str(trials)]))
    _fake_fit(monkeypatch, fit_fn=_raise(KeyboardInterrupt()))
    _assert_interrupted(runner.invoke(app, ["fit", str(trials)]))
    assert seen["model"] == "zoi_beta_binomial"


def test_fit_bayes_model_agents_and_k_cap(trials, monkeypatch):
    seen = _fake_fit(monkeypatch)
    res = runner.invoke(app, ["fit", str(trials), "--bayes-model", "beta_binomial", "--agents", "a", "--k", "1"])
    assert res.exit_code == 0, res.output
    assert seen == {"model": "beta_binomial", "agents": ["a"]}
    res = runner.invoke(app, ["fit", str(trials), "--bayes-model", "partial_pooling", "--k", "1"])
    assert res.exit_code == 0 and seen["model"] == "partial_pooling"
    # the hidden --model (the old --bayes-model) is gone: refused in one line, nothing fitted
    res = runner.invoke(app, ["fit", str(trials), "--model", "additive", "--bayes-model", "beta_binomial"])
    assert res.exit_code == EXIT_USAGE and "No such option: --model" in res.output
    assert seen["model"] == "partial_pooling"
    _assert_one_line_error(res, EXIT_USAGE)
    res = runner.invoke(app, ["fit", str(trials), "--bayes-model", "pooled"])  # a choice of the registry's names
    assert res.exit_code == EXIT_USAGE and "'pooled' is not one of 'zoi_beta_binomial'" in res.output
    # 3 trials per task: k up to 30 is extrapolation the fit answers; beyond, refused before any sampling
    assert runner.invoke(app, ["fit", str(trials), "--k", "30"]).exit_code == 0
    res = runner.invoke(app, ["fit", str(trials), "--k", "31"])
    assert res.exit_code == EXIT_USAGE and "k <= 30" in res.output


def test_a_model_without_a_task_population_refuses_population_new_before_reading(trials, tmp_path, monkeypatch):
    """fit and report: --bayes-model no_pooling with --population new is a usage error (2) naming both options,
    raised before the input is read (fit: an absent file gives the same message) and before any fit or notebook."""
    seen = _fake_fit(monkeypatch)
    import agentstats.report.notebook as report_mod

    ran = []

    def fake_run_report(params, out_dir, name, kernel_name, **_):
        ran.append(params)
        return report_mod.ReportPaths(notebook=tmp_path / "r.ipynb", html=tmp_path / "r.html")

    monkeypatch.setattr(report_mod, "run_report", fake_run_report)
    absent = tmp_path / "absent.jsonl"
    for path, cmds in ((trials, (["fit"], ["report", "--out-dir", str(tmp_path)])), (absent, (["fit"],))):
        for cmd in cmds:
            res = runner.invoke(app, [cmd[0], str(path), *cmd[1:], "--bayes-model", "no_pooling", "--population",
                                      "new"])
            _assert_one_line_error(res, EXIT_USAGE)
            text = " ".join(res.output.split())
            assert "--population new: the no_pooling model has no task population" in text, text
            assert "use --population observed, or --bayes-model one of zoi_beta_binomial" in text
            assert "no_pooling," not in text.split("one of", 1)[1]  # the alternatives are the hierarchical models
    assert "model" not in seen and not ran
    # the report's Bayesian section needs a task population even for observed tasks: refused up front too
    res = runner.invoke(app, ["report", str(trials), "--out-dir", str(tmp_path), "--bayes-model", "no_pooling"])
    _assert_one_line_error(res, EXIT_USAGE)
    assert "or --no-bayes" in " ".join(res.output.split()) and not ran
    res = runner.invoke(app, ["report", str(trials), "--out-dir", str(tmp_path), "--bayes-model", "no_pooling",
                              "--no-bayes"])
    assert res.exit_code == EXIT_OK and len(ran) == 1, res.output
    # fit with observed tasks is fine for no_pooling; a hierarchical model answers new tasks
    assert runner.invoke(app, ["fit", str(trials), "--bayes-model", "no_pooling", "--k", "1"]).exit_code == EXIT_OK
    res = runner.invoke(app, ["fit", str(trials), "--bayes-model", "beta_binomial", "--population", "new", "--k", "1"])
    assert res.exit_code == EXIT_OK and seen["model"] == "beta_binomial", res.output


# ---------------------------------------------------------------- score


def test_score_statuses(trials, tmp_path, monkeypatch):
    out = tmp_path / "scored.jsonl"
    res = runner.invoke(app, ["score", str(trials), "--out", str(out), "--json"])
    assert res.exit_code == EXIT_OK, res.output
    assert out.exists() and (tmp_path / "scored.jsonl.manifest.json").exists()
    _assert_one_line_error(runner.invoke(app, ["score", str(tmp_path / "absent.jsonl")]), EXIT_USAGE)
    import agentstats.scoring as scoring

    monkeypatch.setattr(scoring, "score_trials", _raise(RuntimeError("judge exploded")))
    _assert_one_line_error(runner.invoke(app, ["score", str(trials)]), EXIT_FAILURE)
    monkeypatch.setattr(scoring, "score_trials", _raise(KeyboardInterrupt()))
    res = runner.invoke(app, ["score", str(trials)])
    _assert_interrupted(res)
    assert res.output.count("interrupted") == 1  # said once, though score and the wrapper both handle it
    monkeypatch.setattr(scoring, "score_trials", _interrupt_then(RuntimeError("connection reset")))
    _assert_interrupted(runner.invoke(app, ["score", str(trials)]))


def test_score_judge_model_and_no_hidden_model(trials, monkeypatch):
    res = runner.invoke(app, ["score", str(trials), "--judge-model", "m1", "--agents", "a", "--json"])
    assert res.exit_code == 0, res.output
    assert "deprecated" not in res.output
    # the hidden --model (the old --judge-model) is gone from score, as from report: refused in one line
    res = runner.invoke(app, ["score", str(trials), "--model", "m1", "--json"])
    _assert_one_line_error(res, EXIT_USAGE)
    assert "No such option: --model" in res.stderr


# ---------------------------------------------------------------- report (stand-in for papermill)


def test_report_statuses(trials, tmp_path, monkeypatch):
    import agentstats.report.notebook as report_mod

    seen = {}

    def fake_run_report(params, out_dir, name, kernel_name, **_):
        seen.update(params.notebook_values())
        return report_mod.ReportPaths(notebook=tmp_path / "r.ipynb", html=tmp_path / "r.html")

    monkeypatch.setattr(report_mod, "run_report", fake_run_report)
    args = ["report", str(trials), "--out-dir", str(tmp_path)]
    assert runner.invoke(app, [*args, "--agents", "!b", "--judge-model", "m2"]).exit_code == EXIT_OK
    assert seen["loader_options"] == {"agents": "!b"} and seen["judge_model"] == "m2"
    # the hidden --model (the old --judge-model) is gone from report: refused, nothing run
    res = runner.invoke(app, [*args, "--model", "m3"])
    assert res.exit_code == EXIT_USAGE and "No such option: --model" in res.output and seen["judge_model"] == "m2"
    _assert_one_line_error(runner.invoke(app, [*args, "--population", "all"]), EXIT_USAGE)
    _assert_one_line_error(runner.invoke(app, ["report", str(tmp_path / "absent.jsonl")]), EXIT_USAGE)
    monkeypatch.setattr(report_mod, "run_report", _raise(RuntimeError("a cell failed")))
    _assert_one_line_error(runner.invoke(app, args), EXIT_FAILURE)
    monkeypatch.setattr(report_mod, "run_report", _raise(KeyboardInterrupt()))
    _assert_interrupted(runner.invoke(app, args))

    class ZMQError(Exception):
        pass

    monkeypatch.setattr(report_mod, "run_report", _interrupt_then(ZMQError("Socket operation on non-socket")))
    _assert_interrupted(runner.invoke(app, args))


def test_report_lists_skipped_records_and_refuses_k_beyond_the_trials(trials, tmp_path, monkeypatch):
    """--skip-bad lists what it skipped before the notebook; k > the most trials per task (3 here) exits 2."""
    import agentstats.report.notebook as report_mod

    ran = []

    def fake_run_report(params, out_dir, name, kernel_name, **_):
        ran.append(params)
        return report_mod.ReportPaths(notebook=tmp_path / "r.ipynb", html=tmp_path / "r.html")

    monkeypatch.setattr(report_mod, "run_report", fake_run_report)
    bad = tmp_path / "bad.jsonl"
    odd = {"agent": "a", "task_id": "t0", "trial": "x", "success": True}
    bad.write_text(trials.read_text() + json.dumps(odd) + "\n")
    res = runner.invoke(app, ["report", str(bad), "--out-dir", str(tmp_path), "--no-bayes", "--skip-bad"])
    assert res.exit_code == EXIT_OK and len(ran) == 1, res.output
    text = " ".join(res.output.split())
    # the 18 records of the fixture are lines 1-18; the bad one is line 19
    assert "skipped 1 record (1 problem)" in text and "line 19, field 'trial'" in text
    res = runner.invoke(app, ["report", str(trials), "--out-dir", str(tmp_path), "--no-bayes", "--k", "1..4"])
    assert res.exit_code == EXIT_USAGE and len(ran) == 1, res.output  # refused before the notebook
    assert "--k 4: the largest number of trials per task" in " ".join(res.output.split())
    assert "is 3" in res.output
    assert runner.invoke(app, ["report", str(trials), "--out-dir", str(tmp_path), "--k", "1..3"]).exit_code == EXIT_OK
    # unscored trials (scored by the notebook): their trials per task count; 2 here
    unscored = tmp_path / "unscored.jsonl"
    unscored.write_text("".join(json.dumps({"agent": "a", "task_id": "t", "trial": i, "interactions": [
        {"query": "q", "answer": "8", "expected_answer": "8"}]}) + "\n" for i in range(2)))
    res = runner.invoke(app, ["report", str(unscored), "--out-dir", str(tmp_path), "--k", "3"])
    assert res.exit_code == EXIT_USAGE and "is 2" in res.output, res.output


def test_skip_bad_that_leaves_no_record_exits_2_before_any_work(trials, tmp_path, monkeypatch):
    """Every record bad under --skip-bad: one input error naming the file (exit 2); no notebook, no empty table."""
    import agentstats.report.notebook as report_mod

    ran = []
    monkeypatch.setattr(report_mod, "run_report", lambda *a, **kw: ran.append(a))
    bad = tmp_path / "badcounts.csv"
    bad.write_text("agent,task_id,n,c\nA,t1,5,6\nA,t2,x,3\nA,t3,-1,0\n")
    for args in (
        ["estimate", str(bad)],
        ["estimate", str(bad), "--paired"],
        ["fit", str(bad)],
        ["report", str(bad), "--no-bayes", "--out-dir", str(tmp_path / "r")],
        ["compare", str(bad), str(trials)],
    ):
        res = runner.invoke(app, [*args, "--skip-bad"])
        text = " ".join(res.output.split())
        assert res.exit_code == EXIT_USAGE, (args, res.output)
        assert "no usable records left after skipping 3 records" in text and "badcounts.csv" in text, args
        assert "line 2, field 'c'" in text and "line 4, field 'n'" in text, args
    assert ran == [] and not (tmp_path / "r").exists()


# ---------------------------------------------------------------- options shared by commands


def test_output_paths_that_cannot_be_written_exit_2_naming_the_option_before_any_work(trials, tmp_path):
    """--out / --out-dir / --truth / --run-dir: a missing folder, a file for a folder (or the other way round)."""
    a_file = tmp_path / "a_file.txt"
    a_file.write_text("x")
    missing = tmp_path / "nonexist"
    cfg = tmp_path / "gate.yaml"
    cfg.write_text("metrics: {}\n")
    cases = [  # (arguments, the option and path the message must name, what it says)
        (["gate", str(trials), str(trials), "-c", str(cfg), "--out", str(missing / "rec.json")],
         f"--out {missing / 'rec.json'}", f"the folder {missing} does not exist"),
        (["gate", str(trials), str(trials), "-c", str(cfg), "--out", str(tmp_path)],
         f"--out {tmp_path}", "is a folder; give a file name"),
        (["gate", str(trials), str(trials), "-c", str(cfg), "--out-dir", str(a_file)],
         f"--out-dir {a_file}", "is a file; give a folder"),
        (["score", str(trials), "--out", str(missing / "s.jsonl")],
         f"--out {missing / 's.jsonl'}", f"the folder {missing} does not exist"),
        (["report", str(trials), "--no-bayes", "--out-dir", str(a_file)], f"--out-dir {a_file}",
         "is a file; give a folder"),
        (["report", str(trials), "--no-bayes", "--out-dir", str(a_file / "sub")],
         f"--out-dir {a_file / 'sub'}", f"{a_file} is a file, not a folder"),
        (["compare", str(trials), str(trials), "--out-dir", str(a_file)], f"--out-dir {a_file}", "is a file"),
        (["loop", "-c", str(cfg), "--out-dir", str(a_file)], f"--out-dir {a_file}", "is a file"),
        (["loop", "-c", str(cfg), "--run-dir", str(a_file)], f"--run-dir {a_file}", "is a file"),
        (["simulate", "--out", str(tmp_path / "sim.jsonl"), "--truth", str(a_file / "t.csv")],
         f"--truth {a_file / 't.csv'}", f"{a_file} is a file, not a folder"),
        (["runs", "export", "r", "--store", str(tmp_path / "s.duckdb"), "--out", str(a_file / "r.jsonl")],
         f"--out {a_file / 'r.jsonl'}", f"{a_file} is a file, not a folder"),
    ]
    for args, named, says in cases:
        res = runner.invoke(app, args)
        text = " ".join(res.output.split())
        assert res.exit_code == EXIT_USAGE, (args, res.output)
        assert named in text and says in text, (args, res.output)
        assert ".tmp" not in text, args  # never the name of an internal temporary file
    assert not missing.exists() and not (tmp_path / "sim.jsonl").exists()  # refused before any work


def test_option_errors_name_the_flag_not_the_python_function(trials):
    for args, flag in (
        (["estimate", str(trials), "--n-boot", "1"], "--n-boot must be 0 (no bootstrap) or >= 100, got 1"),
        (["estimate", str(trials), "--ci-prob", "0"], "--ci-prob must be in (0, 1), got 0.0"),
        (["estimate", str(trials), "--paired", "--ci-prob", "1"], "--ci-prob must be in (0, 1), got 1.0"),
        (["compare", str(trials), str(trials), "--n-boot", "5"], "--n-boot must be 0 (no bootstrap) or >= 100"),
        (["fit", str(trials), "--dispersion", "per"], "'--dispersion': 'per' is not one of 'agent', 'shared'"),
        (["fit", str(trials), "--ci-prob", "1.5"], "--ci-prob must be in (0, 1), got 1.5"),
    ):
        res = runner.invoke(app, args)
        _assert_one_line_error(res, EXIT_USAGE)
        text = " ".join(res.output.split())
        assert flag in text, text
        assert "suite_pass_k" not in text and "paired_pass_k" not in text and "dispersion=" not in text
    assert runner.invoke(app, ["estimate", str(trials), "--n-boot", "0", "--json"]).exit_code == EXIT_OK


def test_every_loading_command_has_agents_and_its_own_k_help():
    import typer.main

    cli = typer.main.get_command(app)
    helps = {}
    for name in ("estimate", "fit", "score", "report"):
        params = {p.name: p for p in cli.commands[name].params}
        assert "agents" in params, name
        if "k" in params:
            helps[name] = params["k"].help
    assert len(set(helps.values())) == 3  # estimate, fit and report each describe their own k
    assert "extrapolat" in helps["fit"] and "median" in helps["report"] and "k <= n" in helps["estimate"]
    assert "extrapolat" not in helps["estimate"].replace("`agentstats fit`", "")
    # the one default rule, said by the intervals module, in every --k help and in the report's parameters
    from agentstats.intervals import DEFAULT_K_MAX, DEFAULT_K_TEXT, FIT_K_FACTOR
    from agentstats.report.params import CompareParams, ReportParams

    assert (DEFAULT_K_MAX, FIT_K_FACTOR) == (8, 10)  # docs/estimators.md: "at most 8"; fit: "10 x the largest n"
    assert f"at most {DEFAULT_K_MAX} and" in DEFAULT_K_TEXT
    for name, text in helps.items():
        assert f"Default: {DEFAULT_K_TEXT};" in text, name
    assert "up to 10 x the largest trials per task (or 8)" in helps["fit"]
    assert "curves go on to k = 8 at least" in helps["report"]
    assert ReportParams.default("k_max_bayes") == DEFAULT_K_MAX
    for model in (ReportParams, CompareParams):
        assert DEFAULT_K_TEXT in model.help("k_values"), model


def test_format_help_lists_every_format():
    import typer.main

    from agentstats.io import formats

    cli = typer.main.get_command(app)
    fmt_help = {p.name: p for p in cli.commands["estimate"].params}["format"].help
    for f in formats(("trials", "counts")):  # the inputs of estimate (record sets are read by gate, loop, calibrate)
        assert f in fmt_help, f


def test_parse_k_limits_before_expanding():
    import typer

    from agentstats.cli import parse_k

    assert parse_k("1-3,5") == [1, 2, 3, 5]
    for bad, text in (("1..100000", "10,000"), ("1..101", "more than 100"), ("5..1", "backwards"),
                      ("1..10**12", "cannot read")):
        with pytest.raises(typer.BadParameter, match=text):
            parse_k(bad)

"""BFCL importer: decoding styles by hand, and agreement with BFCL's verdicts on real files."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentstats.io import detect_format
from agentstats.io.readers.bfcl import BfclDecodeError, decode_bfcl_output, import_bfcl, output_style
from agentstats.scoring.bfcl import bfcl_verdict

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "bfcl-results-2024-08"


def names_args(calls):
    return [(c.name, c.arguments) for c in calls]


def test_decode_styles():
    fc = [{"math_factorial": '{"number": 5}'}, {"f": {"a": [1, 2]}}]
    assert names_args(decode_bfcl_output(fc, "gpt-4o-2024-05-13-FC")) == [
        ("math_factorial", {"number": 5}), ("f", {"a": [1, 2]})]
    with pytest.raises(BfclDecodeError):
        decode_bfcl_output("I cannot call a tool", "gpt-4o-2024-05-13-FC")
    py = "[spotify.play(artist='Taylor Swift', duration=20), f(x=-2, y=2*5, z=(1, 2), w=var)]"
    assert names_args(decode_bfcl_output(py, "gpt-4o-2024-05-13")) == [
        ("spotify.play", {"artist": "Taylor Swift", "duration": 20}), ("f", {"x": -2, "y": 10, "z": (1, 2),
                                                                           "w": "var"})]
    with pytest.raises(BfclDecodeError):  # positional arguments: BFCL's wrong output format
        decode_bfcl_output("[math.hypot(3, 4)]", "gpt-4o-2024-05-13")
    with pytest.raises(BfclDecodeError):  # leading indent is a syntax error for BFCL too
        decode_bfcl_output("   [f(a=1)]", "gpt-4o-2024-05-13")
    hermes = '<tool_call>\n{"arguments": {"a": 1}, "name": "f"}\n</tool_call>\n'
    assert names_args(decode_bfcl_output(hermes, "NousResearch_Hermes-2-Pro-Llama-3-8B")) == [("f", {"a": 1})]
    granite = '<function_call> {"name": "f", "arguments": {"a": 1}} <function_call> {"name": "g", "arguments": {}}'
    assert [c.name for c in decode_bfcl_output(granite, "ibm-granite_granite-20b-functioncalling")] == ["f", "g"]
    xlam = '\n{"tool_calls": [{"name": "f.g", "arguments": {"r": 5}}]}'
    assert names_args(decode_bfcl_output(xlam, "Salesforce_xLAM-7b-fc-r")) == [("f.g", {"r": 5})]
    assert names_args(decode_bfcl_output("f(a=1); g(b='x');", "Nexusflow-Raven-v2")) == [
        ("f", {"a": 1}), ("g", {"b": "x"})]
    assert names_args(decode_bfcl_output("[f\\_g(a=1)]", "mistral-medium-2312")) == [("f_g", {"a": 1})]
    assert output_style("claude-3-opus-20240229-FC") == "fc" and output_style("gemini-1.0-pro") == "fc"


def _need_data():
    if not DATA.exists():
        pytest.skip(f"BFCL data not found at {DATA} (../shared/data beside the repo); real-data test skipped")


@pytest.fixture(scope="module")
def subset():
    _need_data()
    return import_bfcl(DATA, models=["gpt-4o-2024-05-13-FC", "claude-3-opus-20240229", "Nexusflow-Raven-v2"])


def test_verdicts_match_score_headers(subset):
    # independent check of the import: failures per (model, category) equal total - correct in the header
    for (model, cat), h in subset.headers.items():
        fails = sum(not v for (m, eid), v in subset.verdicts.items() if m == model and eid.rsplit("_", 1)[0] == cat)
        assert fails == h["total_count"] - h["correct_count"], (model, cat)


def test_agreement_with_bfcl(subset):
    agree = sum(bfcl_verdict(t)[0] == t.success for t in subset.trials)
    assert len(subset.trials) == 3 * 1000
    assert agree / len(subset.trials) >= 0.99


def test_expected_calls_carry_alternatives(subset):
    t = next(t for t in subset.trials if t.agent == "gpt-4o-2024-05-13-FC" and t.task_id == "simple_0")
    exp = t.interactions[0].expected_tool_calls[0]
    assert exp.name == "calculate_triangle_area"
    assert exp.arguments["unit"] == {"$any_of": ["units", ""], "$optional": True}
    assert t.tools[0].name == "calculate_triangle_area"


# -- the "bfcl" format of load_trials, on a small hand-made BFCL folder ----------------------------------------
def _bfcl_tree(root, result_lines, *, gzip_result=True):
    import gzip
    import json

    data = root / "gorilla_data_de8307b4"
    (data / "possible_answer").mkdir(parents=True)
    spec = {"name": "area", "parameters": {"type": "dict", "properties": {"r": {"type": "integer"}},
                                           "required": ["r"]}}
    qs = [{"id": f"simple_{i}", "question": f"area of circle {i}", "function": spec} for i in range(2)]
    (data / "gorilla_openfunctions_v1_test_simple.json").write_text("".join(json.dumps(q) + "\n" for q in qs))
    pas = [{"id": f"simple_{i}", "ground_truth": {"area": {"r": [i + 1]}}} for i in range(2)]
    (data / "possible_answer" / "gorilla_openfunctions_v1_test_simple.json").write_text(
        "".join(json.dumps(p) + "\n" for p in pas))
    res = root / "2024-08-11" / "result" / "m"
    res.mkdir(parents=True)
    text = "".join(line + "\n" for line in result_lines).encode()
    # gzip content under a name without .gz: told apart by its magic bytes
    (res / "gorilla_openfunctions_v1_test_simple_result.json").write_bytes(gzip.compress(text) if gzip_result
                                                                           else text)
    score = root / "2024-08-11" / "score" / "m"
    score.mkdir(parents=True)
    (score / "simple_score.json").write_text(
        json.dumps({"accuracy": 0.5, "correct_count": 1, "total_count": 2}) + "\n" + json.dumps({"id": 2}) + "\n")
    return root


def test_load_trials_reads_the_bfcl_format(tmp_path):
    from agentstats.io import load_trials

    root = _bfcl_tree(tmp_path, ['{"id": "simple_0", "result": "[area(r=1)]"}',
                                 '{"id": "simple_1", "result": "[area(r=5)]"}'])
    ts = load_trials(root, format="bfcl")
    assert ts.format == "bfcl" and [t.task_id for t in ts] == ["simple_0", "simple_1"]
    assert [t.success for t in ts] == [True, False]  # the score file lists entry 2 (1-based) as failed
    assert [bfcl_verdict(t)[0] for t in ts] == [True, False]
    assert ts[0].interactions[0].expected_tool_calls[0].arguments == {"r": {"$any_of": [1], "$optional": False}}
    assert len(load_trials(root, format="bfcl", agent="m")) == 2
    assert not ts.notes
    # result files of categories this reader does not support are named, never silently dropped
    res = root / "2024-08-11" / "result" / "m"
    for other in ("rest", "java", "executable_simple"):
        (res / f"gorilla_openfunctions_v1_test_{other}_result.json.gz").write_bytes(b"")
    notes = [str(n) for n in load_trials(root, format="bfcl").notes]
    assert len(notes) == 1
    assert "loaded the Python AST categories simple; left out executable_simple, java, rest" in notes[0]


def test_bfcl_problems_name_file_and_line(tmp_path):
    from agentstats.io import LoadError, LoadWarning, load_trials

    root = _bfcl_tree(tmp_path, ['{"id": "simple_0", "result": "[area(r=1)]"}', '{"id": "simple_1", "res'],
                      gzip_result=False)
    with pytest.raises(LoadError) as err:
        load_trials(root, format="bfcl")
    where = [(p.source.rsplit("/", 1)[-1], p.line) for p in err.value.problems]
    assert ("gorilla_openfunctions_v1_test_simple_result.json", 2) in where
    with pytest.warns(LoadWarning):
        ts = load_trials(root, format="bfcl", on_error="skip")
    assert [t.task_id for t in ts] == ["simple_0"] and ts.skipped
    with pytest.raises(ValueError, match="no BFCL results folder 2024-08-11/result: give the BFCL result root"):
        load_trials(tmp_path / "gorilla_data_de8307b4", format="bfcl")
    # the result root is recognised without --format; another folder is an error that says what a folder can be
    assert detect_format(root) == "bfcl"
    with pytest.raises(ValueError, match="is a folder; give a file, or a BFCL result root"):
        detect_format(tmp_path / "gorilla_data_de8307b4")


def test_io_does_not_import_scoring():
    """Layering: io sits below scoring; reading BFCL files must not pull in the scorer (nor openai/instructor)."""
    import subprocess
    import sys

    code = ("import sys, agentstats.io, agentstats.io.readers.bfcl; "
            "bad = sorted(m for m in sys.modules if m.startswith(('agentstats.scoring', 'instructor', 'openai'))); "
            "print(bad); sys.exit(1 if bad else 0)")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr

"""The format registry: names, aliases, what formats hold, and formats added by installed packages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentstats.io import registry
from agentstats.io.loaders import load_trials
from agentstats.io.registry import format_spec, formats, normalize_format, register_format, unregister_format


def test_names_and_aliases_resolve_to_one_format():
    assert normalize_format("METR") == "runs" and normalize_format(" tau-bench ") == "tau_bench"
    assert normalize_format("auto") == "auto"
    assert format_spec("csv").name == "counts" and format_spec("csv").holds == "counts"
    with pytest.raises(ValueError, match=r"unknown format 'nope'; use one of: auto, .*jsonl"):
        normalize_format("nope")
    with pytest.raises(ValueError, match="names no format"):
        format_spec("auto")


def test_a_name_is_never_taken_twice():
    def reader(path, log):
        return []

    with pytest.raises(ValueError, match="'metr' already names format 'runs'"):
        register_format("mine", reader, aliases=("metr",))
    with pytest.raises(ValueError, match="cannot be a format name"):
        register_format("auto", reader)
    assert "mine" not in formats()


def test_holds_filters_the_formats():
    assert set(formats("scores")) == {"scores"}
    assert {"jsonl", "counts", "duckdb"} <= set(formats(("trials", "counts")))
    assert not {"scores", "eval_set", "calibration"} & set(formats(("trials", "counts")))


def test_a_broken_plugin_warns_and_the_other_formats_still_load(monkeypatch, tmp_path):
    class Broken:
        name, value = "broken", "nowhere.module:register"

        def load(self):
            raise ImportError("No module named 'nowhere'")

    monkeypatch.setitem(registry._PLUGINS, "loaded", False)
    monkeypatch.setattr(registry, "entry_points", lambda group: [Broken()])
    with pytest.warns(RuntimeWarning, match=r"format plugin 'broken' \(nowhere.module:register\) could not be loaded"):
        assert "jsonl" in formats()
    path = tmp_path / "t.jsonl"
    path.write_text('{"agent": "a", "task_id": "t", "trial": 0, "success": true}\n')
    assert len(load_trials(path)) == 1


def test_unregister_removes_the_aliases_too():
    register_format("toy_fmt", lambda path, log: [], aliases=("toy-fmt",))
    assert normalize_format("toy-fmt") == "toy_fmt"
    unregister_format("toy-fmt")
    with pytest.raises(ValueError, match="unknown format"):
        normalize_format("toy_fmt")


# ---- valid JSON of no known shape: one message that lists the formats, not a problem per line ---------------------


@pytest.mark.parametrize("doc", [
    {"experiment": "x", "rows": [{"question": "q", "score": 1}] * 500},
    [{"question": "q", "score": 1, "model": "m"}] * 500,
])
def test_unknown_json_shape_says_no_known_format_matches(tmp_path, doc):
    from agentstats.io import load_counts
    from agentstats.io.detect import UnknownShapeError

    p = tmp_path / "mystery.json"
    p.write_text(json.dumps(doc, indent=2))
    with pytest.raises(UnknownShapeError) as err:
        load_counts(p)
    text = str(err.value)
    assert "no known format matches" in text and "tau2" in text and "inspect" in text and "agent, task_id" in text
    first = doc if isinstance(doc, dict) else doc[0]
    assert err.value.keys == list(first)


# ---- inputs with zero trials: one refusal for every loader and for import -----------------------------------------


def _zero_inputs(tmp_path):
    tau2 = json.loads((Path(__file__).parents[1] / "data" / "tau2_toyshop.json").read_text())
    tau2["simulations"] = []
    yield "tau_bench", tmp_path / "empty.json", "[]"
    yield "tau2", tmp_path / "tau2.json", json.dumps(tau2, indent=2)
    yield "otel", tmp_path / "otlp.jsonl", json.dumps({"resourceSpans": [{"resource": {}, "scopeSpans": []}]})


def test_zero_trials_refused_by_estimate_and_import_alike(tmp_path):
    from typer.testing import CliRunner

    from agentstats.cli import app
    from agentstats.io import load_counts
    from agentstats.records.problems import LoadError

    for fmt, path, text in _zero_inputs(tmp_path):
        path.write_text(text)
        for load in (load_trials, load_counts):
            with pytest.raises(LoadError, match=f"holds no trials:\n.*no trials in this {fmt} input") as err:
                load(path)
            assert not err.value.skippable
        if fmt == "tau2":  # the 3 tasks defined, none run
            assert "3 of the 3 tasks defined have no simulation" in str(err.value)
        for args in (["estimate", str(path)],
                     ["import", str(path), "--store", str(tmp_path / "s.duckdb"), "--store-run", fmt]):
            out = CliRunner().invoke(app, args)
            assert out.exit_code == 2 and f"{path} holds no trials" in out.output, (args, out.output)

"""The format registry: names, aliases, what formats hold, and formats added by installed packages."""

from __future__ import annotations

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

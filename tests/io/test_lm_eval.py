"""lm-evaluation-harness ``--log_samples`` files (agentstats.io.readers.lm_eval).

Checked on lines of a real samples file (``tests/data/lm_eval``, README beside it) and on files written here in the
shape lm-eval 0.4 writes (``evaluate`` in ``lm_eval/evaluator.py``: one line per (document, filter), the metric
values on the line, repeats' generations in ``filtered_resps[0]``). Expected counts are worked out by hand.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentstats.io import LoadError, detect_format, load_counts, load_trials

REAL = (Path(__file__).parents[1] / "data" / "lm_eval" / "google__gemma-2b"
        / "samples_masakhaner_luo_prompt_1_2026-01-16T15-23-47.285735.jsonl")
STAMP = "2025-01-01T00-00-00.000000"


def _write(folder: Path, task: str, lines: list[dict]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"samples_{task}_{STAMP}.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def _gen(doc_id: int, filt: str, em: float, resps: list) -> dict:
    return {"doc_id": doc_id, "doc": {"question": f"q{doc_id}"}, "target": "4",
            "arguments": {"gen_args_0": {"arg_0": f"q{doc_id}", "arg_1": {"until": ["\n"]}}},
            "resps": [resps], "filtered_resps": [resps if len(resps) > 1 else resps[0]], "filter": filt,
            "metrics": ["exact_match"], "doc_hash": "d", "prompt_hash": "p", "target_hash": "t", "exact_match": em}


def test_real_file_detected_and_its_corpus_metric_refused():
    # the file's only metric, f1, is neither default (acc, exact_match) nor per document: each line holds
    # (gold, prediction), which lm-eval aggregates over the corpus
    assert detect_format(REAL) == "lm_eval"
    with pytest.raises(LoadError) as err:
        load_trials(REAL)
    assert [(p.line, p.field) for p in err.value.problems] == [(1, "acc"), (2, "acc")]
    assert "(it has: f1)" in err.value.problems[0].message
    with pytest.raises(LoadError) as err:
        load_trials(REAL, scorer="f1")
    assert [(p.line, p.field) for p in err.value.problems] == [(1, "f1"), (2, "f1")]
    assert "aggregates it over the whole corpus" in err.value.problems[0].message


def test_real_file_read_with_a_declared_metric(tmp_path):
    # the same lines with a per-document exact_match added (lm-eval writes one per metric of the task): agent from
    # the folder (google__gemma-2b), task from the file name
    lines = [json.loads(x) for x in REAL.read_text().splitlines()]
    for x, em in zip(lines, (0.0, 1.0), strict=True):
        x["metrics"].append("exact_match")
        x["exact_match"] = em
    path = _write(tmp_path / "google__gemma-2b", "masakhaner_luo_prompt_1", lines)
    ts = load_trials(path)
    assert {t.agent for t in ts} == {"google/gemma-2b"}
    assert sorted((t.task_id, t.outcome()) for t in ts) == [("masakhaner_luo_prompt_1/0", "failure"),
                                                           ("masakhaner_luo_prompt_1/1", "success")]
    assert ts[0].meta["filter"] == "flexible-extract" and ts[0].meta["metric"] == "exact_match"


def test_filters_first_by_default_and_chosen_by_scorer(tmp_path):
    # gsm8k writes every document once per filter: strict-match 1, 0, 0; flexible-extract 1, 1, 0
    lines = [_gen(d, "strict-match", em, ["4"]) for d, em in enumerate((1.0, 0.0, 0.0))]
    lines += [_gen(d, "flexible-extract", em, ["4"]) for d, em in enumerate((1.0, 1.0, 0.0))]
    path = _write(tmp_path / "org__model-x", "gsm8k", lines)
    assert detect_format(path) == "lm_eval"
    ts = load_trials(path)
    assert {t.agent for t in ts} == {"org/model-x"}
    assert sum(t.outcome() == "success" for t in ts) == 1 and len(ts) == 3
    assert "left out 'flexible-extract'" in ts.notes[0].message
    counts = load_counts(path, scorer="exact_match,flexible-extract")
    assert counts["n"].sum() == 3 and counts["c"].sum() == 2 and counts["n_missing"].sum() == 0
    with pytest.raises(LoadError, match="no line has filter 'maj@8'"):
        load_trials(path, scorer="exact_match,maj@8")


def test_multiple_choice_acc_and_agent_from_results_json(tmp_path):
    mc = [{"doc_id": d, "doc": {}, "target": 0,
           "arguments": {f"gen_args_{j}": {"arg_0": "Q:", "arg_1": f" {c}"} for j, c in enumerate("ab")},
           "resps": [[[-1.0, False]], [[-2.0, False]]], "filtered_resps": [[-1.0, False], [-2.0, False]],
           "filter": "none", "metrics": ["acc", "acc_norm"], "acc": acc, "acc_norm": 1.0}
          for d, acc in enumerate((1.0, 0.0, 1.0, 1.0))]
    path = _write(tmp_path / "run", "arc_easy", mc)
    (tmp_path / "run" / f"results_{STAMP}.json").write_text(json.dumps({"model_name": "EleutherAI/pythia-14m"}))
    counts = load_counts(path)
    assert set(counts["agent"]) == {"EleutherAI/pythia-14m"}
    assert counts["n"].sum() == 4 and counts["c"].sum() == 3          # acc by default, not acc_norm
    assert load_counts(path, scorer="acc_norm")["c"].sum() == 4
    assert set(load_counts(path, agent="mine")["agent"]) == {"mine"}


def test_repeats_become_trials_from_the_share_of_generations(tmp_path):
    # repeats: 4. doc 0: exact_match 0.5 over 4 generations -> 4 trials, 2 successes; doc 1: 0.0 -> 4 failures;
    # doc 2: 0.25 -> 1 success of 4. A majority-vote line (one answer) is one trial.
    lines = [_gen(0, "take_all", 0.5, ["4", "5", "4", "6"]), _gen(1, "take_all", 0.0, ["1", "2", "3", "5"]),
             _gen(2, "take_all", 0.25, ["4", "0", "0", "0"])]
    path = _write(tmp_path / "org__m", "gsm8k_rep", lines)
    counts = load_counts(path).set_index("task_id")
    assert counts.loc["gsm8k_rep/0", ["n", "c"]].tolist() == [4, 2]
    assert counts.loc["gsm8k_rep/1", ["n", "c"]].tolist() == [4, 0]
    assert counts.loc["gsm8k_rep/2", ["n", "c"]].tolist() == [4, 1]
    ts = load_trials(path)
    assert all(t.meta["from_mean"] and t.meta["generations"] == 4 for t in ts)
    # pass@10-like value 0.3 over 4 generations is no share of 4 outcomes: a located problem
    bad = _write(tmp_path / "org__m2", "gsm8k_rep", [_gen(0, "take_all", 0.3, ["a", "b", "c", "d"])])
    with pytest.raises(LoadError) as err:
        load_trials(bad)
    assert (err.value.problems[0].line, err.value.problems[0].field) == (1, "exact_match")
    assert "no share of 4" in err.value.problems[0].message


def test_scores_off_the_unit_interval_need_a_scale(tmp_path):
    lines = [dict(_gen(d, "none", 0.0, ["x"]), metrics=["score"], score=s) for d, s in enumerate((5, 2, 4))]
    path = _write(tmp_path / "org__judge", "rubric", lines)
    with pytest.raises(LoadError, match=r"score-scale|score_scale"):
        load_trials(path, scorer="score")
    counts = load_counts(path, scorer="score", score_scale="1:5", success_threshold=4)
    assert counts["n"].sum() == 3 and counts["c"].sum() == 2


def test_file_name_gives_the_task(tmp_path):
    path = tmp_path / "my_samples.jsonl"
    path.write_text(json.dumps(_gen(0, "none", 1.0, ["4"])) + "\n")
    assert detect_format(path) == "lm_eval"
    with pytest.raises(LoadError, match=r"samples_<task>_<date>\.jsonl"):
        load_trials(path)

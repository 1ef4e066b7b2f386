"""Reading BFCL folders: questions, possible answers, model results and score files, as trials.

Problems (malformed JSON, ids that do not line up, unusable score files) are collected in a
:class:`~agentstats.records.problems.ProblemLog` with their file and line; files are read plain or gzip-compressed, told
apart by their magic bytes.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentstats.files.sniff import open_text
from agentstats.io.readers.bfcl.decode import BfclDecodeError, decode_bfcl_output
from agentstats.io.registry import register_format
from agentstats.records.problems import OnError, Problem, ProblemLog
from agentstats.records.trial import Interaction, ToolCall, ToolSpec, Trial

__all__ = [
    "AST_CATEGORIES",
    "UNDERSCORE_TO_DOT",
    "BfclImport",
    "import_bfcl",
    "possible_answer_markers",
    "read_bfcl",
]

AST_CATEGORIES = ("simple", "multiple_function", "parallel_function", "parallel_multiple_function")

#: Models whose calls use ``_`` where function names have ``.`` (OpenAI-style APIs forbid dots): BFCL
#: compares them against the name with dots replaced (gorilla ``model_handler/constant.py``,
#: ``UNDERSCORE_TO_DOT``, as of 2024-08; folder names, ``/`` written as ``_``).
UNDERSCORE_TO_DOT = frozenset(
    {
        "gpt-4o-2024-08-06-FC",
        "gpt-4o-2024-05-13-FC",
        "gpt-4o-mini-2024-07-18-FC",
        "gpt-4-turbo-2024-04-09-FC",
        "gpt-4-1106-preview-FC",
        "gpt-4-0125-preview-FC",
        "gpt-4-0613-FC",
        "gpt-3.5-turbo-0125-FC",
        "claude-3-opus-20240229-FC",
        "claude-3-sonnet-20240229-FC",
        "claude-3-haiku-20240307-FC",
        "claude-3-5-sonnet-20240620-FC",
        "open-mistral-nemo-2407-FC-Any",
        "open-mistral-nemo-2407-FC-Auto",
        "open-mixtral-8x22b-FC-Any",
        "open-mixtral-8x22b-FC-Auto",
        "mistral-large-2407-FC-Any",
        "mistral-large-2407-FC-Auto",
        "mistral-small-2402-FC-Any",
        "mistral-small-2402-FC-Auto",
        "gemini-1.0-pro",
        "gemini-1.5-pro-preview-0409",
        "gemini-1.5-pro-preview-0514",
        "gemini-1.5-flash-preview-0514",
        "meetkai_functionary-small-v3.1-FC",
        "meetkai_functionary-medium-v3.1-FC",
        "meetkai_functionary-small-v3.2-FC",
        "NousResearch_Hermes-2-Pro-Llama-3-8B",
        "NousResearch_Hermes-2-Pro-Llama-3-70B",
        "NousResearch_Hermes-2-Pro-Mistral-7B",
        "NousResearch_Hermes-2-Theta-Llama-3-8B",
        "NousResearch_Hermes-2-Theta-Llama-3-70B",
        "command-r-plus-FC",
        "THUDM_glm-4-9b-chat",
        "ibm-granite_granite-20b-functioncalling",
        "yi-large-fc",
    }
)


# ----------------------------------------------------------------------------------------------------
# ground truth
# ----------------------------------------------------------------------------------------------------
def possible_answer_markers(params: Mapping[str, Any], *, required: Iterable[str] = ()) -> dict[str, Any]:
    """Convert BFCL ``possible_answer`` parameters into expected arguments with JSON markers.

    Parameters
    ----------
    params : mapping
        ``{param: [acceptable values]}`` as in BFCL's ``possible_answer`` files. ``""`` in a top-level list
        marks the parameter optional. Dict alternatives map each key to a list of acceptable values again
        (recursively); inside such dicts ``""`` is a literal value, as BFCL's ``dict_checker`` treats it. A
        top-level ``""`` also stays an acceptable value (last), since BFCL accepts an explicit ``""``.
    required : iterable of str
        Parameters the tool spec lists as required: for these a ``""`` does *not* make them optional
        (BFCL checks required parameters before it looks at the acceptable list).

    Returns
    -------
    dict
        ``{param: {"$any_of": [values], "$optional": bool}}``, the JSON form of
        :class:`agentstats.scoring.tools.AnyOf` that trial files use.
    """
    req = set(required)
    out: dict[str, Any] = {}
    for name, alts in params.items():
        if not isinstance(alts, list):
            alts = [alts]
        has_empty = any(isinstance(a, str) and a == "" for a in alts)
        vals = [_convert_alt(a) for a in alts if not (isinstance(a, str) and a == "")] + ([""] if has_empty else [])
        out[name] = {"$any_of": vals, "$optional": has_empty and name not in req}
    return out


def _convert_alt(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: ({"$any_of": [_convert_alt(a) for a in x], "$optional": False} if isinstance(x, list)
                    else _convert_alt(x)) for k, x in v.items()}
    if isinstance(v, list):
        return [_convert_alt(x) for x in v]
    return v


def _spec_for_key(key: str, specs: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    # BFCL's find_description: the first spec whose name is a substring of the possible-answer key
    # (parallel keys carry a "_1", "_2" suffix); with a single spec (simple, parallel_function) BFCL uses
    # that spec whatever the key says
    if len(specs) == 1:
        return specs[0]
    for s in specs:
        if s["name"] == key:
            return s
    for s in specs:
        if s["name"] in key:
            return s
    return None


def _convert_name(name: str, model: str) -> str:
    return name.replace(".", "_") if model in UNDERSCORE_TO_DOT else name


def _expected_calls(gt: Mapping[str, Any], specs: Sequence[Mapping[str, Any]], model: str) -> list[ToolCall]:
    calls = []
    for key, params in gt.items():
        spec = _spec_for_key(key, specs)
        if spec is None:
            # broken ground truth (e.g. parallel_multiple_function_179 has a stray key "deck"): BFCL can never
            # pass such an entry; keep the key as an expected call no model can make (scoring lists it as a
            # ground-truth error: no such tool is offered)
            calls.append(ToolCall(name=key, arguments={}))
            continue
        required = (spec.get("parameters") or {}).get("required") or []
        calls.append(ToolCall(name=_convert_name(spec["name"], model),
                              arguments=possible_answer_markers(params, required=required)))
    return calls


# ----------------------------------------------------------------------------------------------------
# files
# ----------------------------------------------------------------------------------------------------
def _exists(path: Path) -> bool:
    return path.exists() or path.with_name(path.name + ".gz").exists()


def _find(path: Path) -> Path:
    if path.exists():
        return path
    gz = path.with_name(path.name + ".gz")
    if gz.exists():
        return gz
    raise FileNotFoundError(f"BFCL file not found: {path} (nor {gz.name})")


def _add(log: ProblemLog, path: Path, line: int | None, field: str | None, message: str) -> None:
    """Record a problem located in ``path`` (a BFCL input is a folder of files, not one file)."""
    log.problems.append(Problem(str(path), line, field, message, "line"))
    log.bad_records.add(hash((str(path), line)))


def _read_jsonl(path: Path, log: ProblemLog) -> list[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` per non-blank line; malformed lines go to ``log``."""
    out = []
    try:
        with open_text(path) as fh:
            for lineno, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except (json.JSONDecodeError, RecursionError) as exc:
                    msg = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
                    _add(log, path, lineno, None, f"malformed JSON ({msg})")
                    continue
                if not isinstance(obj, dict):
                    _add(log, path, lineno, None, f"expected a JSON object, got {type(obj).__name__}")
                    continue
                out.append((lineno, obj))
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        _add(log, path, None, None, f"cannot read file: {exc}")
    return out


@dataclass
class BfclImport:
    """What :func:`import_bfcl` returns.

    Attributes
    ----------
    trials : list of Trial
        One per (model, entry); ``success`` holds BFCL's verdict.
    verdicts : dict
        ``(model, entry_id) -> passed`` per BFCL's score files.
    decode_errors : dict
        ``(model, entry_id) -> message`` for outputs our decoder could not read (their calls are empty).
    headers : dict
        ``(model, category) -> {"accuracy", "correct_count", "total_count"}`` score-file headers.
    skipped : list of Problem
        Problems of the records left out (``on_error="skip"``); empty otherwise.
    """

    trials: list[Trial]
    verdicts: dict[tuple[str, str], bool]
    decode_errors: dict[tuple[str, str], str] = field(default_factory=dict)
    headers: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    skipped: list[Problem] = field(default_factory=list)


def import_bfcl(
    root: str | os.PathLike,
    *,
    models: Iterable[str] | None = None,
    categories: Iterable[str] | None = None,
    result_dir: str = "2024-08-11",
    data_dir: str = "gorilla_data_de8307b4",
    on_error: OnError = "raise",
) -> BfclImport:
    """Load BFCL questions, possible answers, model results and verdicts as trials.

    Parameters
    ----------
    root : path
        Folder holding ``<result_dir>/result``, ``<result_dir>/score`` and ``<data_dir>`` (the layout of
        the published BFCL results release).
    models : iterable of str, optional
        Model folder names; all models with a result folder by default.
    categories : iterable of str, optional
        AST categories to load (default: those of :data:`AST_CATEGORIES` whose question file is present).
    result_dir, data_dir : str
        Sub-folder names.
    on_error : {"raise", "skip"}
        As in :func:`agentstats.io.load_trials`: every problem is collected, then one
        :class:`~agentstats.io.LoadError` lists them (``"raise"``), or the entries they touch are left out
        and listed in ``skipped`` (``"skip"``).

    Returns
    -------
    BfclImport

    Raises
    ------
    FileNotFoundError
        When a needed file or folder is missing.
    ValueError
        For an unsupported category.
    LoadError
        With ``on_error="raise"``, for malformed JSON, a score line without a valid ``id``, an empty score file,
        or results and questions that do not line up; each problem names its file and line.
    """
    log = ProblemLog(str(root), on_error)
    imp = _load(Path(root), log, models=models, categories=categories, result_dir=result_dir, data_dir=data_dir)
    imp.skipped = log.finish()
    return imp


def read_bfcl(
    path: str | os.PathLike,
    log: ProblemLog,
    *,
    models: Iterable[str] | str | None = None,
    categories: Iterable[str] | str | None = None,
    result_dir: str = "2024-08-11",
    data_dir: str = "gorilla_data_de8307b4",
    agent: str | None = None,
) -> list[Trial]:
    """Reader of the ``"bfcl"`` format of :func:`agentstats.io.load_trials` (registered on import).

    Parameters
    ----------
    path : path
        The BFCL root folder (see :func:`import_bfcl`).
    log : ProblemLog
        Receives every problem, located by file and line.
    models, categories : iterable of str or comma-separated str, optional
        As in :func:`import_bfcl`.
    result_dir, data_dir : str
        As in :func:`import_bfcl`.
    agent : str, optional
        One model folder name (``load_trials(..., agent=...)``); combined with ``models`` when both are given.

    Returns
    -------
    list of Trial
    """
    if isinstance(models, str):
        models = [m.strip() for m in models.split(",") if m.strip()]
    if agent is not None:
        models = sorted({*(models or ()), agent})
    if isinstance(categories, str):
        categories = [c.strip() for c in categories.split(",") if c.strip()]
    imp = _load(Path(path), log, models=models, categories=categories, result_dir=result_dir, data_dir=data_dir)
    return imp.trials


def _load(
    root: Path,
    log: ProblemLog,
    *,
    models: Iterable[str] | None,
    categories: Iterable[str] | None,
    result_dir: str,
    data_dir: str,
) -> BfclImport:
    res_root = root / result_dir / "result"
    score_root = root / result_dir / "score"
    data_root = root / data_dir
    if not res_root.is_dir():
        raise ValueError(f"{root}: no BFCL results folder {result_dir}/result: give the BFCL result root, the folder "
                         f"that holds {result_dir}/ and {data_dir}/ (or name them with result_dir= / data_dir=)")
    if categories is None:
        cats = [c for c in AST_CATEGORIES if _exists(data_root / f"gorilla_openfunctions_v1_test_{c}.json")]
        if not cats:
            raise FileNotFoundError(f"{data_root}: no question file of an AST category ({', '.join(AST_CATEGORIES)})")
    else:
        cats = list(categories)
    for c in cats:
        if c not in AST_CATEGORIES:
            raise ValueError(f"unsupported BFCL category {c!r}; supported: {', '.join(AST_CATEGORIES)}")
    model_list = (
        sorted(models) if models is not None else sorted(p.name for p in res_root.iterdir() if p.is_dir())
    )
    questions, answers = _questions(data_root, cats, log)
    if categories is None:  # say what the result folders hold beyond the AST categories (never silently left out)
        found = {re.sub(r"_result\.json(\.gz)?$", "", f.name).removeprefix("gorilla_openfunctions_v1_test_")
                 for m in model_list for f in (res_root / m).glob("*_result.json*")}
        other = sorted(found - set(cats))
        if other:
            log.note(None, None, f"loaded the Python AST categories {', '.join(cats)}; left out {', '.join(other)} "
                     "(not supported: the executable and REST categories need execution, relevance has no "
                     "ground-truth calls, and Java / JavaScript calls are not read)")
    imp = BfclImport([], {}, {}, {})
    for model in model_list:
        for c in cats:
            res_path = _find(res_root / model / f"gorilla_openfunctions_v1_test_{c}_result.json")
            score_path = _find(score_root / model / f"{c}_score.json")
            failed = _failed_ids(score_path, c, log)
            if failed is None:
                continue  # verdicts unknown: the whole (model, category) is left out, the problem is listed
            imp.headers[(model, c)], failed_ids = failed
            _read_results(imp, model, c, res_path, failed_ids, questions[c], answers[c], log)
    return imp


def _questions(data_root: Path, cats: list[str], log: ProblemLog
               ) -> tuple[dict[str, list[tuple[int, dict[str, Any]]]], dict[str, dict[str, Any]]]:
    """Read each category's questions (with their lines) and possible answers (by id); problems are logged."""
    questions: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    answers: dict[str, dict[str, Any]] = {}
    for c in cats:
        q_path = _find(data_root / f"gorilla_openfunctions_v1_test_{c}.json")
        questions[c] = []
        for lineno, q in _read_jsonl(q_path, log):
            if not isinstance(q.get("id"), str) or "function" not in q or "question" not in q:
                missing = [k for k in ("id", "question", "function") if k not in q] or ["id"]
                _add(log, q_path, lineno, missing[0], "field missing or not valid")
                continue
            questions[c].append((lineno, q))
        pa_path = _find(data_root / "possible_answer" / f"gorilla_openfunctions_v1_test_{c}.json")
        answers[c] = {}
        for lineno, d in _read_jsonl(pa_path, log):
            if not isinstance(d.get("id"), str) or not isinstance(d.get("ground_truth"), dict):
                _add(log, pa_path, lineno, "ground_truth" if "id" in d else "id", "field missing or not valid")
                continue
            answers[c][d["id"]] = d["ground_truth"]
    return questions, answers


def _read_results(imp: BfclImport, model: str, c: str, res_path: Path, failed_ids: set[str],
                  questions: list[tuple[int, dict[str, Any]]], answers: dict[str, Any], log: ProblemLog) -> None:
    """Read one model's results of category ``c`` into ``imp``: a trial and a verdict per question answered."""
    results: dict[str, tuple[int, dict[str, Any]]] = {}
    for lineno, r in _read_jsonl(res_path, log):
        rid = r.get("id")
        if not isinstance(rid, str):
            _add(log, res_path, lineno, "id", "field missing or not a string")
        elif rid in results:
            _add(log, res_path, lineno, "id", f"duplicate id {rid!r}, first at line {results[rid][0]}")
        else:
            results[rid] = (lineno, r)
    known = {q["id"] for _, q in questions}
    for rid, (lineno, _) in results.items():
        if rid not in known:
            _add(log, res_path, lineno, "id", f"id {rid!r} is not a question of category {c!r}")
    for _, q in questions:
        eid = q["id"]
        if eid not in results:
            _add(log, res_path, None, "id", f"no result for question {eid!r}")
            continue
        if eid not in answers:
            continue  # the possible-answer problem is already listed
        raw = results[eid][1].get("result")
        specs = q["function"] if isinstance(q["function"], list) else [q["function"]]
        try:
            calls = decode_bfcl_output(raw, model)
            err = None
        except BfclDecodeError as exc:
            calls, err = [], str(exc)
            imp.decode_errors[(model, eid)] = err
        passed = eid not in failed_ids
        imp.verdicts[(model, eid)] = passed
        tools = [
            ToolSpec(name=_convert_name(s["name"], model), description=s.get("description", ""),
                     parameters=s.get("parameters") or {})
            for s in specs
        ]
        inter = Interaction.model_validate({
            "id": eid,
            "query": q["question"] if isinstance(q["question"], str) else json.dumps(q["question"]),
            "answer": raw if isinstance(raw, str) else None,
            "tool_calls": calls,
            "expected_tool_calls": _expected_calls(answers[eid], specs, model),
            "decode_error": err,
        })
        imp.trials.append(
            Trial(agent=model, task_id=eid, trial=0, success=passed, tags=[c], interactions=[inter], tools=tools)
        )


def _failed_ids(path: Path, category: str, log: ProblemLog) -> tuple[dict[str, Any], set[str]] | None:
    """Read one score file: its header and failed entry ids, or ``None`` (problem listed) when unusable."""
    lines = _read_jsonl(path, log)
    if not lines or lines[0][0] != 1:
        _add(log, path, None, None, "no header line (accuracy, correct_count, total_count)")
        return None
    ok = True
    failed: set[str] = set()
    for lineno, d in lines[1:]:
        pid = (d.get("prompt") or {}).get("id") if isinstance(d.get("prompt"), dict) else None
        n = d.get("id")
        if isinstance(pid, str):
            failed.add(pid)
        elif isinstance(n, int) and not isinstance(n, bool) and n >= 1:
            failed.add(f"{category}_{n - 1}")
        else:
            _add(log, path, lineno, "id", f"a failed entry needs a 1-based integer id, got {n!r}")
            ok = False
    return (lines[0][1], failed) if ok else None


register_format("bfcl", read_bfcl)

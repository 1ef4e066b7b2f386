"""The notebooks' parameters: one pydantic model per notebook, the one owner of its options.

:class:`ReportParams` owns every option of the report (``notebooks/report.ipynb``, ``agentstats report``): names,
types, defaults (the command line's full sizes), help texts and validation. From it come

* ``agentstats report``'s options (:mod:`agentstats.cli.report`): a flag for each common option (:meth:`flag_of`),
  ``-p NAME=VALUE`` for the others (:func:`parse_assignments`), both validated here;
* the template's ``parameters`` cell (:meth:`NotebookParams.parameters_cell`; a test checks that the committed cell is
  the generated one), so the notebook opened in JupyterLab or run with papermill samples as the command line does;
* the command that regenerates a report (:func:`agentstats.report.provenance.report_command`).

:class:`CompareParams` does the same for the run comparison (``notebooks/compare.ipynb``, ``agentstats compare
--out-dir``). The models import no pandas, PyMC or metric code: the command line builds its options from them at start.
"""

from __future__ import annotations

import json
import os
import textwrap
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal, Self, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic.config import JsonDict
from pydantic.fields import FieldInfo

from agentstats._util.options import LOADER_FLAGS, LOADER_KEYS, option_name, option_text
from agentstats.intervals import (
    CI_PROB,
    DEFAULT_K_MAX,
    DEFAULT_K_TEXT,
    DEFAULT_SEED,
    MIN_N_BOOT,
    check_ci,
    n_boot_problem,
    parse_k,
)
from agentstats.models.families.registry import DEFAULT_MODEL, MODEL_NAMES

__all__ = [
    "EXAMPLE_INPUT",
    "CompareParams",
    "NotebookParams",
    "ReportParameterError",
    "ReportParams",
    "check_bayes_model",
    "example_input",
    "parse_assignments",
    "value_text",
]

#: The comparison notebook's own input: the example data, as seen from ``notebooks/`` (the template's folder in a
#: checkout). The report notebook's is None: the example shipped with the package (:func:`example_input`), found from
#: any folder the notebook runs in.
EXAMPLE_INPUT = "../data/example_trials.jsonl"
#: Bootstrap resamples: 0 (none) or at least this many (as :func:`agentstats.estimators.suite_pass_k`).


def example_input() -> str:
    """Return the absolute path of the example trials shipped with agentstats (the report notebook's own input).

    Package data (``agentstats/report/templates/example_trials.jsonl``; in a checkout a link to
    ``data/example_trials.jsonl``), so a notebook run from any folder, or from an installed wheel, finds it.

    Raises
    ------
    FileNotFoundError
        When the package data is missing (an install that left it out).
    """
    from importlib import resources

    path = Path(str(resources.files("agentstats.report") / "templates" / "example_trials.jsonl"))
    if not path.is_file():
        raise FileNotFoundError(f"the example data is not at {path}: reinstall agentstats, or give input_path")
    return str(path)


def _path_text(value: Any) -> Any:
    """Read a path given as text or ``os.PathLike``: ``~`` expanded, made absolute against the current directory.

    The current directory is the caller's: where ``agentstats report`` or ``papermill`` was run (papermill starts
    the kernel there unless given ``--cwd``), or the notebook's folder in JupyterLab. Anything else (a DataFrame, a
    list of trials) passes as it is.
    """
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if isinstance(value, str) and value.strip():
        return os.path.abspath(os.path.expanduser(value.strip()))
    return value


#: Text that means None for a parameter that takes None (``-p draws none``, papermill's ``-p draws None``, ``""``).
_NONE_TEXT = ("none", "null", "")


class ReportParameterError(ValueError):
    """A parameter a notebook does not declare or refuses, or an output name that would leave the output folder."""


def _flag(flag: str) -> JsonDict:
    return {"flag": flag}


_RUN: JsonDict = {"scope": "run"}  # an option of the run (kernel, HTML), not a notebook parameter


def _extra(field: FieldInfo) -> dict[str, Any]:
    extra = field.json_schema_extra
    return dict(extra) if isinstance(extra, dict) else {}


class NotebookParams(BaseModel):
    """Parameters of one notebook template: validation, the parameters cell, the values papermill injects.

    Subclasses declare their fields with a ``description`` whose first sentence is the cell's comment. A field
    whose ``json_schema_extra`` holds ``{"scope": "run"}`` is an option of the run (kernel, HTML export), not a
    notebook parameter; ``{"flag": "--name"}`` names its own command-line flag.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    #: Values the parameters cell shows instead of the defaults: the notebook's own example input.
    EXAMPLE: ClassVar[dict[str, Any]] = {}
    #: First line of the parameters cell.
    CELL_HEAD: ClassVar[str] = ""

    # ---- the fields
    @classmethod
    def notebook_fields(cls) -> list[str]:
        """Return the names of the notebook parameters, in declaration order (the run options left out)."""
        return [n for n, f in cls.model_fields.items() if _extra(f).get("scope") != "run"]

    @classmethod
    def default(cls, name: str) -> Any:
        """Return the default value of field ``name`` (a copy of a mutable default)."""
        return cls.model_fields[name].get_default(call_default_factory=True)

    @classmethod
    def help(cls, name: str) -> str:
        """Return the help text of field ``name``."""
        return str(cls.model_fields[name].description or "")

    @classmethod
    def choices(cls, name: str) -> tuple[str, ...] | None:
        """Return the values field ``name`` takes when they are a fixed list: a ``Literal``'s, or the model names."""
        if name == "bayes_model" and name in cls.model_fields:
            return MODEL_NAMES
        annotation = cls.model_fields[name].annotation
        args = tuple(a for a in get_args(annotation) if a is not type(None))
        if get_origin(annotation) is Literal:
            return tuple(str(a) for a in args)
        literal = [a for a in args if get_origin(a) is Literal]  # Literal[...] | None
        return tuple(str(v) for v in get_args(literal[0])) if literal else None

    @classmethod
    def flag_of(cls, name: str) -> str | None:
        """Return the command-line flag of field ``name``, or None when it is given as ``-p NAME=VALUE``."""
        flag = _extra(cls.model_fields[name]).get("flag")
        return str(flag) if flag else None

    # ---- building
    @classmethod
    def validated(cls, values: Mapping[str, Any], *, names: Mapping[str, str] | None = None) -> Self:
        """Validate ``values`` into the model; every error names the parameter (or its flag, from ``names``).

        Parameters
        ----------
        values : mapping
            Field values; those left out keep their defaults.
        names : mapping, optional
            How a message names each field (``{"bayes_model": "--bayes-model"}``); default the field's name.

        Raises
        ------
        ReportParameterError
            One line per problem, each naming its parameter, what it must be and the value given.
        """
        try:
            return cls.model_validate(dict(values))
        except ValidationError as exc:
            raise ReportParameterError(_error_lines(exc, names or {})) from None

    @classmethod
    def from_namespace(cls, namespace: Mapping[str, Any]) -> Self:
        """Read the parameters a notebook's ``parameters`` cell (and papermill's injected cell) defined.

        Parameters
        ----------
        namespace : mapping
            The notebook's variables (``globals()``); the notebook fields found there are taken, the run options
            keep their defaults.

        Raises
        ------
        ReportParameterError
            A value the model refuses, naming the parameter.
        """
        return cls.validated({n: namespace[n] for n in cls.notebook_fields() if n in namespace})

    def notebook_values(self) -> dict[str, Any]:
        """Return every notebook parameter with its value, for papermill to inject (paths as ``str``)."""
        values = {n: getattr(self, n) for n in self.notebook_fields()}
        return {n: os.fspath(v) if isinstance(v, Path) else v for n, v in values.items()}

    @classmethod
    def parameters_cell(cls) -> str:
        """Write the source of the template's ``parameters`` cell from the model.

        One line per notebook parameter, ``name: type = default  # first sentence of its help``: papermill reads
        the annotation as the parameter's type and the comment as its help (``papermill --help-notebook``); a type
        with alternatives is text (``"int or None"``), which Python stores without evaluating. The example input
        (:attr:`EXAMPLE`) stands instead of a default.
        """
        lines = [cls.CELL_HEAD, *textwrap.wrap(
            f"Generated from {cls.__module__}.{cls.__name__}: change the model, then write this cell with "
            f"{cls.__name__}.parameters_cell() (a test compares them). Defaults: the command line's. Types are "
            "written as text (papermill --help-notebook shows them); papermill -p takes k_values as 1,2,4 or 1..8, "
            "none for None, and loader_options as JSON.",
            width=116, initial_indent="# ", subsequent_indent="# ")]
        for name in cls.notebook_fields():
            value = cls.EXAMPLE[name] if name in cls.EXAMPLE else cls.default(name)
            kind = _type_text(cls.model_fields[name])
            head = f"{name}: {kind} = {_literal(value)}  # "
            lines.append(head + textwrap.shorten(_first_sentence(cls.help(name)), 120 - len(head), placeholder=""))
        return "\n".join(lines)

    @model_validator(mode="before")
    @classmethod
    def _none_as_typed(cls, values: Any) -> Any:
        """Read ``none`` / ``null`` / an empty text as None for a parameter that takes None (the forms people type)."""
        if not isinstance(values, dict):
            return values
        out = dict(values)
        for name, value in values.items():
            field = cls.model_fields.get(name)
            if field is not None and isinstance(value, str) and value.strip().lower() in _NONE_TEXT \
                    and _takes_none(field):
                out[name] = None
        return out

    @classmethod
    def parameters_table(cls) -> str:
        """Write every parameter as a Markdown table: name, command-line option, default, help (``docs/report.md``).

        A parameter without a flag of its own is given as ``-p NAME=VALUE``; the notebook's example input is named
        in place of a default.
        """
        lines = ["| parameter | command line | default | meaning |", "|---|---|---|---|"]
        for name, field in cls.model_fields.items():
            flag = cls.flag_of(name) or ("argument" if name in cls.EXAMPLE else f"-p {name}=...")
            default = "required" if field.is_required() else f"`{value_text(cls.default(name))}`"
            text = cls.help(name).replace("|", "\\|")
            lines.append(f"| `{name}` | `{flag}` | {default} | {text} |")
        return "\n".join(lines)


def _literal(value: Any) -> str:
    """Write a default as Python source, strings in double quotes (as the template's other cells do)."""
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_literal(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_literal(k)}: {_literal(v)}" for k, v in value.items()) + "}"
    return repr(value)


def _takes_none(field: FieldInfo) -> bool:
    """Whether a field's annotation admits None."""
    return type(None) in typing.get_args(field.annotation) or field.annotation is Any


def _type_text(field: FieldInfo) -> str:
    """Write a field's type as papermill shows it, quoted: ``"int"``, ``"list[int] or None"``, ``"str"`` (a choice).

    papermill's parameter pattern takes letters, digits, ``_``, brackets, commas and spaces (no ``|``), so ``or``
    joins the alternatives; an ``Any`` field (the report's input) is a path, ``"str or None"``.
    """

    def one(t: Any) -> str:
        if t is type(None):
            return "None"
        if t is Any:
            return "str"
        origin = typing.get_origin(t)
        if origin is Literal:
            return type(typing.get_args(t)[0]).__name__
        if origin in (list, dict):
            args = ", ".join(one(a) for a in typing.get_args(t)) if origin is list else ""
            return f"{origin.__name__}[{args}]" if args else origin.__name__
        return getattr(t, "__name__", str(t))

    annotation = field.annotation
    parts = [one(a) for a in typing.get_args(annotation)] if isinstance(annotation, types.UnionType) \
        or typing.get_origin(annotation) is typing.Union else [one(annotation)]
    if annotation is Any:
        parts = ["str", "None"]
    parts = [*dict.fromkeys(p for p in parts if p != "None"), *(["None"] if "None" in parts else [])]
    text = " or ".join(parts)
    return text if text.isidentifier() else json.dumps(text)  # a plain type as it is, others as text


def _first_sentence(text: str) -> str:
    """Cut a help text at its first full stop (the parameters cell's comment)."""
    return text.split(". ", 1)[0].rstrip(".")


def _error_lines(exc: ValidationError, names: Mapping[str, str]) -> str:
    """One line per pydantic error: ``NAME: what it must be (got VALUE)``."""
    lines = []
    for err in exc.errors(include_url=False):
        loc = [str(p) for p in err["loc"]]
        field = loc[0] if loc else ""
        where = names.get(field, field) if field else "parameters"
        if len(loc) > 1:
            where += "[" + "][".join(loc[1:]) + "]"
        msg = str(err["msg"]).removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "not a parameter of this notebook"
        if where and msg.startswith(f"{where} "):  # a validator's message that already names the option
            msg = msg[len(where) + 1:]
        given = err.get("input")
        shown = ("" if err["type"] in ("extra_forbidden", "missing") or isinstance(given, dict) or ", got " in msg
                 else f" (got {given!r})")
        lines.append(f"{where}: {msg}{shown}" if where else f"{msg}{shown}")
    return "\n".join(lines)


def _k_list(value: Any) -> Any:
    """Read ``k_values`` in the forms people type: ``"1,2,4"``, ``"1..8"``, ``"[1, 2, 4]"``, ``"1 2 4"``, ``4``.

    Text is read as ``--k`` reads it (:func:`agentstats.intervals.parse_k`), brackets and spaces allowed; one integer
    is one k (papermill's ``-p k_values 4`` passes an int); a tuple is a list. Others pass as given (to be refused
    with a message).
    """
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return [value]
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("[") and text.endswith("]"):
            text = text[1:-1]
        return parse_k(",".join(text.replace(",", " ").split()))
    return value


def _loader_dict(value: Any) -> Any:
    """``loader_options`` given as text (papermill's ``-p``): JSON (``{"agent": "model"}``), or ``key=value,...``."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    if not text:
        return {}
    if text.startswith("{"):
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not JSON ({exc.msg} at character {exc.pos})") from None
    pairs = [p.partition("=") for p in text.split(",")]
    if any(not sep or not k.strip() for k, sep, _ in pairs):
        raise ValueError('write JSON ({"agent": "model"}) or key=value pairs separated by commas')
    return {k.strip(): v.strip() for k, _, v in pairs}


def _ci_number(value: Any) -> Any:
    """``ci_prob`` as people type it: ``0.9``, or ``"90%"``."""
    if isinstance(value, str) and value.strip().endswith("%"):
        try:
            return float(value.strip()[:-1]) / 100.0
        except ValueError:
            return value
    return value


def _check_n_boot(value: int) -> int:
    problem = n_boot_problem(value)
    if problem:
        raise ValueError(problem)
    return value


def _check_loader_options(value: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(value) - set(LOADER_KEYS))
    if unknown:
        raise ValueError(f"unknown loader option(s) {', '.join(unknown)}; known: {', '.join(LOADER_KEYS)}")
    if value.get("on_error", "raise") not in ("raise", "skip"):
        raise ValueError(f"on_error must be 'raise' or 'skip', got {value['on_error']!r}")
    return value


def _check_model(value: str) -> str:
    if value not in MODEL_NAMES:
        raise ValueError(f"must be one of {', '.join(MODEL_NAMES)}")
    return value


def _check_ci_prob(value: float) -> float:
    check_ci(value, "eti")
    return float(value)


def _input(value: Any) -> Any:
    """Read the report's input: None is the example shipped with agentstats; a path is made absolute."""
    if value is None:
        return example_input()
    return _path_text(value)


class ReportParams(NotebookParams):
    """Every option of a report: what the notebook computes from, how, and how the run is exported.

    Defaults are ``agentstats report``'s: the notebook opened in JupyterLab or run with papermill samples the fit
    the command line samples (nutpie when installed, 4 chains, 2,000 draws, 2,000 bootstrap resamples). The run
    options ``kernel`` and ``show_code`` belong to :func:`agentstats.report.notebook.run_report`, not to the
    notebook.

    Raises
    ------
    pydantic.ValidationError
        From the constructor; :meth:`validated` turns it into a :class:`ReportParameterError` whose lines name the
        parameters.
    """

    EXAMPLE: ClassVar[dict[str, Any]] = {"input_path": None}
    CELL_HEAD: ClassVar[str] = "# Parameters (papermill injects new values after this cell)."

    input_path: Any = Field(
        description="Trials or counts file (None: the example data shipped with agentstats). Any format agentstats "
        "reads; a relative path is read from the folder the command or papermill is called in (JupyterLab: the "
        "notebook's folder), ~ expanded. In a notebook also a DataFrame or a list of trials."
    )
    input_format: str = Field("auto", description="Input format; auto: detected from the content.",
                              json_schema_extra=_flag("--format"))
    loader_options: dict[str, Any] = Field(
        default_factory=dict,
        description=f"Loader options ({', '.join(LOADER_KEYS)}). As agentstats.load takes them; the command "
        f"line's {', '.join(dict.fromkeys(LOADER_FLAGS.values()))}.",
        json_schema_extra=_flag(", ".join(dict.fromkeys(LOADER_FLAGS.values()))),
    )
    k_values: list[int] | None = Field(
        None,
        description=f"k of the tables; None: {DEFAULT_K_TEXT}. The Bayesian ones "
        "included (its curves go on to k_max_bayes; consistency and contrasts use the largest k); '1,2,4', '1..8' "
        "and '1..3,8' are read as --k reads them.",
        json_schema_extra=_flag("--k"),
    )
    ci_prob: float = Field(CI_PROB, description="Probability of every interval in the report.",
                           json_schema_extra=_flag("--ci-prob"))
    seed: int = Field(DEFAULT_SEED, ge=0,
                      description="Seed of the bootstraps, the fit and the posterior predictive check.")
    n_boot: int = Field(2000, ge=0, description="Bootstrap resamples of the task-cluster intervals. 0: none; else "
                        f"at least {MIN_N_BOOT}.")
    judge: Literal["deterministic", "openai"] = Field(
        "deterministic",
        description="Answer judge for unscored trials: deterministic or openai. deterministic: text and number "
        "matchers, no network; openai: an LLM judge through any OpenAI-compatible endpoint, API key from "
        "$OPENAI_API_KEY.",
        json_schema_extra=_flag("--judge"),
    )
    judge_model: str | None = Field(
        None, description="The LLM of the openai judge (--judge openai); None: $AGENTSTATS_JUDGE_MODEL or "
        "gpt-4o-mini.",
        json_schema_extra=_flag("--judge-model"),
    )
    judge_base_url: str | None = Field(
        None, description="OpenAI-compatible base URL of the judge; None: $OPENAI_BASE_URL or OpenAI.",
        json_schema_extra=_flag("--base-url"),
    )
    threshold: float = Field(0.7, ge=0.0, le=1.0, description="An answer is correct when its score reaches this.")
    tool_threshold: float = Field(
        1.0, ge=0.0, le=1.0, description="Tool calls pass when their overall score reaches this. 1.0: the same "
        "tools as expected, no extra calls, every argument matched."
    )
    require_tools: bool = Field(False, description="Also require passing tool calls for a trial to succeed.")
    run_bayes: bool = Field(True, description="Include the hierarchical Bayesian section.",
                            json_schema_extra=_flag("--bayes/--no-bayes"))
    draws: int | None = Field(
        None, ge=1, description="Posterior draws per chain; None: the fit's default (2,000). 1,000 when every "
        "agent has 250+ cells of 4+ trials; a large fit stops once it has converged."
    )
    tune: int | None = Field(
        None, ge=1, description="Tuning steps per chain of NUTS; None: the fit's default (1,000; 300 with nutpie "
        "for many-cell agents), as agentstats fit. A value asks for NUTS."
    )
    method: Literal["nuts", "laplace"] | None = Field(
        None, description="Inference of the Bayesian section, as agentstats fit --method: nuts (MCMC) or laplace "
        "(the faster tier, docs/models.md); None: by size, the Laplace tier from 50,000 observed cells."
    )
    chains: int = Field(4, ge=1, description="Number of chains.")
    sampler: Literal["nutpie", "numpyro", "pymc"] | None = Field(
        None, description="NUTS implementation: nutpie, numpyro or pymc; None: the fastest installed."
    )
    cores: int | None = Field(None, ge=1, description="Chains run in parallel on this many cores; None: one per "
                              "chain, at most the CPUs.")
    bayes_model: str = Field(
        DEFAULT_MODEL, description="Statistical model of the Bayesian section, as agentstats fit --bayes-model. "
        f"One of {', '.join(MODEL_NAMES)}.",
        json_schema_extra=_flag("--bayes-model"),
    )
    target_accept: float | None = Field(
        None, gt=0.0, lt=1.0, description="NUTS target acceptance rate; None: the model's default."
    )
    population: Literal["observed", "new"] = Field(
        "observed", description="Bayesian pass^k for these tasks (observed) or for new tasks (new).",
        json_schema_extra=_flag("--population"),
    )
    k_max_bayes: int = Field(DEFAULT_K_MAX, ge=1, description="Bayesian curves go up to this k. Beyond the observed "
                             "trials it is extrapolation, marked in the figures.")
    judge_calibration: str | None = Field(
        None, description="Calibration set (JSONL) of the judge: pass^k corrected for its errors beside the raw. "
        "Read as input_path is; needs one metric, or judge_metric."
    )
    judge_metric: str | None = Field(None, description="Metric of the calibration set to use; None: its only one.")
    metrics: str | None = Field(
        None, description="Metrics to compute on the trials, per agent and risk level (comma-separated). Names or "
        "groups: answer_quality, retrieval_quality, content_safety, readability, usage (docs/metrics.md); "
        "NAME:METHOD picks a metric's method.",
        json_schema_extra=_flag("--metrics"),
    )
    kernel: str = Field("python3", min_length=1, description="Jupyter kernel that runs the notebook.",
                        json_schema_extra=_RUN)
    show_code: bool = Field(False, description="Keep the code in the HTML (default: results and narrative only).",
                            json_schema_extra=_RUN)

    _input = field_validator("input_path", mode="before")(_input)
    _calibration_path = field_validator("judge_calibration", mode="before")(_path_text)
    _k = field_validator("k_values", mode="before")(_k_list)
    _ci_text = field_validator("ci_prob", mode="before")(_ci_number)
    _ci = field_validator("ci_prob")(_check_ci_prob)
    _boot = field_validator("n_boot")(_check_n_boot)
    _loader_text = field_validator("loader_options", mode="before")(_loader_dict)
    _loader = field_validator("loader_options")(_check_loader_options)
    _model = field_validator("bayes_model")(_check_model)

    @field_validator("k_values")
    @classmethod
    def _k_positive(cls, value: list[int] | None) -> list[int] | None:
        if value is None:
            return None
        if not value or any(k < 1 for k in value):
            raise ValueError("every k must be an integer >= 1, and at least one is needed")
        return sorted(set(value))

    @field_validator("metrics")
    @classmethod
    def _metrics_known(cls, value: str | None) -> str | None:
        if value is not None:
            from agentstats.metrics.registry import resolve_metrics  # loaded only when metrics are asked for

            resolve_metrics(value)
        return value

    @model_validator(mode="after")
    def _metric_needs_set(self) -> Self:
        if self.judge_metric is not None and self.judge_calibration is None:
            raise ValueError("judge_metric needs judge_calibration")
        return self


def check_bayes_model(params: ReportParams) -> None:
    """Refuse a model the Bayesian section cannot report, before the input is read or a fit is started.

    The section shows pass^k for new tasks, the model's consistency and task difficulty beside the observed tasks'
    pass^k (:class:`agentstats.report.build.BayesSection`), so its model must have a task population
    (:attr:`~agentstats.models.families.base.ModelFamily.supports_new_tasks`, checked by
    :func:`agentstats.models.families.registry.check_population`). Nothing is checked with ``run_bayes=False``.

    Raises
    ------
    ReportParameterError
        ``population="new"`` or the Bayesian section with a model without a task population, naming the option
        and the models to use instead (or ``--no-bayes``).
    """
    if not params.run_bayes:
        return
    from agentstats.models.families.registry import check_population, get_family, new_task_models  # PyMC: lazily

    try:
        family = get_family(params.bayes_model)
        check_population(family, params.population, model_option="bayes_model")
    except ValueError as exc:
        if params.population == "new":  # the message of the one check names --population
            raise ReportParameterError(str(exc)) from None
        raise  # an unknown model: ReportParams has refused it already
    if not family.supports_new_tasks:
        raise ReportParameterError(
            f"{option_name('bayes_model', family.name)}: the report's Bayesian section shows pass^k for new tasks, "
            f"the model's consistency and task difficulty, which need a task population (hyperparameters mu, "
            f"sigma_task); the {family.name} model has none: use {option_name('bayes_model').rstrip('=')} one of "
            f"{', '.join(new_task_models())}, or {option_text(cli='--no-bayes', python='run_bayes=False')}"
        )


class CompareParams(NotebookParams):
    """Every option of the run-comparison notebook (``agentstats compare --out-dir``).

    Defaults are ``agentstats compare``'s. The template's own runs are the example's two agents of one file.
    """

    EXAMPLE: ClassVar[dict[str, Any]] = {"run_paths": [EXAMPLE_INPUT, EXAMPLE_INPUT],
                                         "run_agents": ["baseline", "candidate"]}
    CELL_HEAD: ClassVar[str] = "# Parameters (papermill injects new values after this cell)."

    run_paths: list[str] = Field(
        min_length=2, description="Runs; the first is the baseline. Files (any format), or with store "
        "run names in that store; the template's own: the example file twice, one agent each (run_agents)."
    )
    store: str | None = Field(None, description="A run store (.duckdb): run_paths are then run names in it.")
    run_names: list[str] | None = Field(None, description="Display names, one per run; None: each run's agent.")
    run_agents: list[str] | None = Field(
        None, description="Agent to take from each file, one per run; None: the file's only agent."
    )
    input_format: str = Field("auto", description="Input format; auto: detected from the content.")
    loader_options: dict[str, Any] = Field(default_factory=dict, description="Loader options of every run, as "
                                           "agentstats.load takes them.")
    k_values: list[int] | None = Field(
        None, description=f"k values; None: {DEFAULT_K_TEXT}. The counts on the shared tasks decide."
    )
    ci_prob: float = Field(CI_PROB, description="Probability of every interval.")
    seed: int = Field(DEFAULT_SEED, ge=0, description="Seed of the bootstraps and the fit.")
    n_boot: int = Field(2000, ge=0, description="Bootstrap resamples of the paired intervals.")
    run_bayes: bool = Field(True, description="Also fit the hierarchical model and report the Bayesian contrast.")
    draws: int = Field(1000, ge=1, description="Posterior draws per chain of the fit.")
    tune: int = Field(1000, ge=1, description="Tuning steps per chain of the fit.")
    chains: int = Field(4, ge=1, description="Number of chains of the fit.")
    bayes_model: str = Field(DEFAULT_MODEL, description="Statistical model of the fit.")

    _k = field_validator("k_values", mode="before")(_k_list)
    _ci = field_validator("ci_prob")(_check_ci_prob)
    _boot = field_validator("n_boot")(_check_n_boot)
    _loader = field_validator("loader_options")(_check_loader_options)
    _model = field_validator("bayes_model")(_check_model)

    @model_validator(mode="after")
    def _one_per_run(self) -> Self:
        for name in ("run_names", "run_agents"):
            given = getattr(self, name)
            if given is not None and len(given) != len(self.run_paths):
                raise ValueError(f"{name} has {len(given)} entries for {len(self.run_paths)} runs")
        return self

    def fit_options(self) -> dict[str, Any]:
        """Keyword arguments of the comparison's fit (:func:`agentstats.compare.runs.compare_runs`)."""
        return {"model": self.bayes_model, "draws": self.draws, "tune": self.tune, "chains": self.chains}

    def run_options(self) -> list[dict[str, Any]] | None:
        """Per-run loader options: each run's agent (``run_agents``), or None."""
        return [{"agents": a} for a in self.run_agents] if self.run_agents else None


def value_text(value: Any) -> str:
    """Write a value as ``-p NAME=VALUE`` reads it back (:func:`parse_assignments`): ``true``, ``none``, ``0.8``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "none"
    if isinstance(value, float):
        short = f"{value:g}"
        return short if float(short) == value else repr(value)
    return str(value)


def parse_assignments(items: list[str], model: type[NotebookParams] = ReportParams) -> dict[str, Any]:
    """Read ``-p NAME=VALUE`` assignments (papermill's convention) into field values for ``model``.

    ``none`` / ``null`` (any case) is None; every other value stays text, which the model converts (``2000`` to
    an int, ``true`` to a bool, ``1,2,4`` to k values) and checks.

    Parameters
    ----------
    items : list of str
        The assignments, in order; a name given twice keeps its last value.
    model : type
        The parameters model.

    Returns
    -------
    dict
        Field name -> value.

    Raises
    ------
    ReportParameterError
        An item without ``=``, an unknown name (the known ones are listed) or a name that has its own flag.
    """
    values: dict[str, Any] = {}
    open_names = [n for n in model.model_fields if model.flag_of(n) is None and n not in model.EXAMPLE]
    for item in items:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise ReportParameterError(f"-p {item!r}: write NAME=VALUE (e.g. -p draws=4000)")
        if name not in model.model_fields:
            raise ReportParameterError(f"-p {name}: no such parameter; -p takes {', '.join(open_names)}")
        flag = model.flag_of(name)
        if flag is not None:
            raise ReportParameterError(f"-p {name}: give it with {flag}")
        if name in model.EXAMPLE:
            raise ReportParameterError(f"-p {name}: give it as the command's argument")
        values[name] = None if value.strip().lower() in ("none", "null") else value
    return values

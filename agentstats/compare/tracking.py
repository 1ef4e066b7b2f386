"""Log a comparison (or any set of numbers and files) to an MLflow tracking server: ``--mlflow URI``.

Many teams keep their experiments in MLflow; ``agentstats compare ... --mlflow URI`` logs the comparison's numbers
as MLflow metrics, its settings as parameters, and its JSON and HTML report as artifacts of one MLflow run, so the
statistics sit next to the team's other experiments. MLflow is an optional extra (``pip install
'agentstats[mlflow]'``, which installs ``mlflow-skinny``); everything here goes through
:class:`mlflow.tracking.MlflowClient` with the URI given, never the process-wide tracking URI.

MLflow's own usage telemetry is turned off (``MLFLOW_DISABLE_TELEMETRY=true``) unless the variable is already set:
agentstats sends nothing anywhere except to the tracking URI the user names.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["comparison_metrics", "log_comparison", "log_to_mlflow", "mlflow_module"]

#: Characters MLflow accepts in metric and parameter names (others become ``_``).
_NAME_BAD = re.compile(r"[^A-Za-z0-9_\-. /]")


def mlflow_module() -> Any:
    """Import ``mlflow`` (``mlflow-skinny`` is enough) or say how to install it.

    Raises
    ------
    ImportError
        When MLflow is missing, naming the extra: ``pip install 'agentstats[mlflow]'``.
    """
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    try:
        import mlflow
    except ImportError as exc:
        raise ImportError(
            "--mlflow needs MLflow: pip install 'agentstats[mlflow]' (or pip install mlflow-skinny)"
        ) from exc
    return mlflow


def _name(text: str) -> str:
    return _NAME_BAD.sub("_", text)


def comparison_metrics(cmp: Any) -> dict[str, float]:
    """Flatten a :class:`~agentstats.compare.runs.RunComparison` into MLflow metric names and values.

    Names (run names with characters MLflow refuses replaced by ``_``):

    * ``<run>/pass_at_k/k<k>/{baseline,run,diff,diff_ci_low,diff_ci_high}`` and the same for ``pass_hat_k``
      (paired bootstrap differences on the shared tasks), ``<run>/mcnemar_p`` at k = 1 with one trial per task;
    * ``<run>/metric/<metric>/{baseline,run,diff,diff_ci_low,diff_ci_high}``;
    * with the Bayesian contrast, ``<run>/bayes/<quantity>/k<k>/{diff_mean,diff_low,diff_high,prob_greater}``;
    * ``shared_tasks`` and ``<run>/tasks_left_out``.

    Returns
    -------
    dict of str to float
        Finite values only (an undefined interval, NaN, is left out: MLflow stores no missing value).
    """
    out: dict[str, float] = {"shared_tasks": float(len(cmp.shared_tasks))}
    for run, left in cmp.left_out.items():
        out[f"{_name(run)}/tasks_left_out"] = float(len(left))
    for _, r in cmp.pass_k.iterrows():
        run, k = _name(str(r["agent_a"])), int(r["k"])
        for q in ("pass_at_k", "pass_hat_k"):
            for key, col in (("baseline", f"{q}_b"), ("run", f"{q}_a"), ("diff", f"{q}_diff"),
                             ("diff_ci_low", f"{q}_diff_ci_low"), ("diff_ci_high", f"{q}_diff_ci_high")):
                out[f"{run}/{q}/k{k}/{key}"] = r[col]
        if k == 1 and "mcnemar_p" in r:
            out[f"{run}/mcnemar_p"] = r["mcnemar_p"]
    for _, r in cmp.metrics.iterrows():
        base = f"{_name(str(r['run']))}/metric/{_name(str(r['metric']))}"
        for key, col in (("baseline", "mean_baseline"), ("run", "mean_run"), ("diff", "diff"),
                         ("diff_ci_low", "diff_ci_low"), ("diff_ci_high", "diff_ci_high")):
            out[f"{base}/{key}"] = r[col]
    if cmp.bayes is not None:
        for _, r in cmp.bayes.iterrows():
            base = f"{_name(str(r['run']))}/bayes/{r['quantity']}/k{int(r['k'])}"
            for key in ("diff_mean", "diff_low", "diff_high", "prob_greater"):
                out[f"{base}/{key}"] = r[key]
    return {k: float(v) for k, v in out.items() if v is not None and math.isfinite(float(v))}


def log_to_mlflow(
    uri: str,
    *,
    run_name: str,
    metrics: Mapping[str, float],
    params: Mapping[str, Any] | None = None,
    artifacts: Sequence[str | os.PathLike] = (),
    experiment: str = "agentstats",
    tags: Mapping[str, str] | None = None,
) -> str:
    """Log one MLflow run: metrics, parameters, tags and files, then mark it finished.

    Parameters
    ----------
    uri : str
        MLflow tracking URI (``file:///path/mlruns``, ``http://host:5000``, ``sqlite:///mlflow.db`` ...).
    run_name : str
        The MLflow run's name.
    metrics : mapping of str to float
        Logged at step 0 (see :func:`comparison_metrics`).
    params : mapping, optional
        Logged as parameters (values as text, as MLflow stores them).
    artifacts : sequence of path
        Files logged at the run's artifact root (the comparison JSON, the HTML report ...).
    experiment : str
        MLflow experiment name; created when absent.
    tags : mapping of str to str, optional
        Run tags (``agentstats.command`` and the agentstats version are always set).

    Returns
    -------
    str
        The MLflow run id.

    Raises
    ------
    ImportError
        MLflow is not installed (:func:`mlflow_module`).
    FileNotFoundError
        An artifact that does not exist (checked before anything is logged).
    """
    mlflow_module()
    from importlib.metadata import PackageNotFoundError, version

    from mlflow.entities import Metric, Param, RunStatus
    from mlflow.tracking import MlflowClient

    try:
        __version__ = version("agentstats")
    except PackageNotFoundError:  # a source tree that was not installed
        __version__ = "0+unknown"
    files = [Path(a) for a in artifacts]
    for f in files:
        if not f.is_file():
            raise FileNotFoundError(f"{f}: no such file to log to MLflow")
    client = MlflowClient(tracking_uri=uri)
    found = client.get_experiment_by_name(experiment)
    exp_id = found.experiment_id if found is not None else client.create_experiment(experiment)
    all_tags = {"agentstats.version": __version__, **(tags or {})}
    run = client.create_run(exp_id, run_name=run_name, tags=all_tags)
    rid = run.info.run_id
    try:
        import time

        now = int(time.time() * 1000)
        ms = [Metric(_name(k), float(v), now, 0) for k, v in metrics.items()]
        ps = [Param(_name(str(k)), str(v)) for k, v in (params or {}).items()]
        # MLflow takes at most 1000 metrics and 100 parameters per batch
        for i in range(0, max(len(ms), 1), 1000):
            client.log_batch(rid, metrics=ms[i:i + 1000])
        for i in range(0, len(ps), 100):
            client.log_batch(rid, params=ps[i:i + 100])
        for f in files:
            client.log_artifact(rid, str(f))
    except BaseException:
        client.set_terminated(rid, RunStatus.to_string(RunStatus.FAILED))
        raise
    client.set_terminated(rid, RunStatus.to_string(RunStatus.FINISHED))
    return str(rid)


def log_comparison(cmp: Any, uri: str, *, experiment: str = "agentstats", html: str | os.PathLike | None = None,
                   store: str | os.PathLike | None = None) -> str:
    """Log a comparison to MLflow as one run: its numbers, settings, JSON and (when given) its HTML report.

    The run is named ``"RUN vs ... vs BASELINE"``, tagged ``agentstats.command = compare``; its parameters are the
    baseline, the runs, the shared tasks, the comparison's settings and the run store.

    Parameters
    ----------
    cmp : agentstats.compare.runs.RunComparison
        The comparison.
    uri : str
        MLflow tracking URI.
    experiment : str
        MLflow experiment name (created when absent).
    html : path, optional
        The comparison's HTML report, logged as an artifact.
    store : path, optional
        The run store the runs were read from (a parameter).

    Returns
    -------
    str
        The MLflow run id.

    Raises
    ------
    ImportError
        MLflow is not installed.
    """
    import tempfile

    params: dict[str, Any] = {"baseline": cmp.baseline, "runs": ",".join(cmp.runs),
                              "shared_tasks": len(cmp.shared_tasks), **cmp.settings}
    if store is not None:
        params["store"] = str(store)
    with tempfile.TemporaryDirectory(prefix="agentstats-mlflow-") as tmp:
        data = Path(tmp) / "comparison.json"  # logged as comparison.json
        cmp.to_json(data)
        return log_to_mlflow(uri, run_name=" vs ".join([*cmp.runs[1:], cmp.baseline]),
                             metrics=comparison_metrics(cmp), params=params,
                             artifacts=[data, *([html] if html is not None else [])], experiment=experiment,
                             tags={"agentstats.command": "compare"})

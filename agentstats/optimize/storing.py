"""The loop's rows in the run store: one run per iteration, and the baseline as a run, in one DuckDB file.

With ``store:`` in the loop config (or ``agentstats loop --store PATH``), every completed iteration (its decision
made) is written to the run store (:class:`agentstats.store.RunStore`) in one transaction, as the run
``<prefix>/iter-NNN``:

* ``runs``: the run (``source`` ``loop``; ``config``: the loop's run folder, iteration, prompt and its SHA-256,
  the loop config's SHA-256; tags ``loop``, the prefix);
* ``trials``: one per example (``agent`` = the run's name, ``task_id`` = the example id, ``trial`` 0): the
  interaction (input, response, expected answer, context, the agent's tool calls and the expected ones), usage
  (tokens, cost, latency), ``tags``, ``risk_level``, the per-example metric values in ``meta["metrics"]``, and
  ``reward`` = the example's weighted score (:func:`weighted_example_score`; so ``outcome`` is success when
  every weighted metric scored 1 on it). A judge verdict that is missing marks the trial ``judge_missing``
  (its outcome ``missing``, as everywhere in agentstats);
* ``metric_results``: one row per example and metric (``level`` ``message``; ``value`` NULL for a missing
  verdict; ``passed`` against the gate threshold when the metric has one);
* ``gate_decisions``: the gate's decision record against the baseline, with the loop's view (``loop``: iteration,
  ``vs_best``, ``p_better_than_best``, ``improved``).

The baseline's scores file is written once as ``<prefix>/baseline`` (trials built the same way, without
interactions), so ``agentstats.load_trials(store, run="<prefix>/iter-002")`` and
:func:`agentstats.compare.runs.compare_runs` compare an iteration with the baseline (or with another iteration) on
the shared examples: pass@1 of the reward rule, and every metric from ``meta["metrics"]``.

Idempotent: an iteration whose run is already in the store is not written again, so a resumed loop (which
replays its logged iterations) adds only the iterations that were not stored; a write interrupted by a kill
leaves nothing (one transaction) and is redone on resume.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from agentstats.gating.config import GateConfig
from agentstats.gating.record import GateDecision
from agentstats.records.evalset import Example
from agentstats.records.scores import ScoreSet
from agentstats.records.trial import Trial

__all__ = ["LoopStore", "weighted_example_score"]


def weighted_example_score(scores: Mapping[str, float | None], gate: GateConfig) -> float | None:
    """Weighted mean of one example's metric values: the loop's per-example score.

    Weights are ``gate.weights`` (equal weights when none are given); review-only metrics
    (:meth:`GateConfig.is_review_only`, the refusal rate) and missing values are left out.

    Parameters
    ----------
    scores : mapping of str to float or None
        Metric -> value in [0, 1] (None: missing verdict).
    gate : GateConfig

    Returns
    -------
    float or None
        In [0, 1]; None when no weighted metric has a value.
    """
    num = den = 0.0
    for m, v in scores.items():
        if v is None or (isinstance(v, float) and np.isnan(v)) or gate.is_review_only(m):
            continue
        w = gate.weights.get(m, 0.0) if gate.weights else 1.0
        if w <= 0:
            continue
        num += w * float(v)
        den += w
    return num / den if den > 0 else None


class LoopStore:
    """Writes a loop run's iterations and its baseline to a run store (module docstring).

    Parameters
    ----------
    path : path
        The DuckDB file (created when absent).
    prefix : str
        Run-name prefix: runs ``<prefix>/baseline`` and ``<prefix>/iter-NNN``.
    gate : GateConfig
    run_dir : path
        The loop's run folder (recorded on each run).
    config_sha256 : str
        The loop config's hash (recorded on each run).

    Notes
    -----
    The store is opened for each write and closed after it (DuckDB lets one process write a file at a time), so
    other processes can read it between iterations.
    """

    def __init__(self, path: str | Path, prefix: str, gate: GateConfig, run_dir: Path, config_sha256: str):
        self.path = Path(path)
        self.prefix = prefix
        self.gate = gate
        self.run_dir = run_dir
        self.config_sha256 = config_sha256

    def run_name(self, iteration: int) -> str:
        """Name of an iteration's run: ``<prefix>/iter-NNN``."""
        return f"{self.prefix}/iter-{iteration:03d}"

    @property
    def baseline_name(self) -> str:
        """Name of the baseline's run: ``<prefix>/baseline``."""
        return f"{self.prefix}/baseline"

    def _open(self) -> Any:
        from agentstats.store import RunStore

        return RunStore(self.path)

    def check_new(self) -> None:
        """Refuse to start a new loop run over runs of the same prefix already in the store.

        Raises
        ------
        agentstats.store.StoreError
            When a run named ``<prefix>/...`` exists (choose another ``store_run`` or delete those runs).
        """
        from agentstats.store import StoreError

        with self._open() as store:
            names = [str(n) for n in store.runs()["name"] if str(n).startswith(self.prefix + "/")]
        if names:
            raise StoreError(
                f"the run store {self.path} holds runs named {self.prefix}/... already ({', '.join(names[:5])}): "
                "choose another store_run (--store-run), delete them (agentstats runs delete), or resume that loop"
            )

    def write_baseline(self, base: ScoreSet) -> bool:
        """Write the baseline's scores as the run ``<prefix>/baseline`` unless it is there; return whether written."""
        trials = []
        usage = base.usage.set_index(["id", "trial"]) if len(base.usage) else None
        for (ex_id, trial), grp in base.scores.groupby(["id", "trial"], sort=True):
            values = {str(m): (None if np.isnan(v) else float(v)) for m, v in zip(grp["metric"], grp["value"],
                                                                                   strict=True)}
            ex = base.examples.loc[ex_id]
            use: dict[str, Any] = {}
            if usage is not None and (ex_id, trial) in usage.index:
                row = usage.loc[(ex_id, trial)]
                use = {k: float(row[k]) for k in ("tokens", "cost_usd", "latency_s") if k in row and
                       not np.isnan(row[k])}
            trials.append(self._trial(self.baseline_name, str(ex_id), int(trial), values, ex["risk_level"],
                                      list(ex["tags"]), use, None))
        with self._open() as store:
            if store.has_run(self.baseline_name):
                return False
            store.write_run(self.baseline_name, trials, description=f"baseline of the loop run {self.run_dir}",
                            tags=["loop", self.prefix, "baseline"], source=base.source, source_sha256=base.sha256,
                            config={"loop_run_dir": str(self.run_dir), "config_sha256": self.config_sha256})
        return True

    def write_iteration(
        self,
        iteration: int,
        prompt: str,
        prompt_sha256: str,
        examples: Sequence[Example],
        outputs: Sequence[Mapping[str, Any]],
        records: Sequence[Mapping[str, Any]],
        decision: GateDecision,
        loop_view: Mapping[str, Any],
    ) -> bool:
        """Write one completed iteration as the run ``<prefix>/iter-NNN``, in one transaction.

        Parameters
        ----------
        iteration : int
        prompt, prompt_sha256 : str
        examples : sequence of Example
        outputs : sequence of dict
            The agent's outputs (``id, response, tokens, input_tokens, output_tokens, cost_usd, latency_s,
            tool_calls``).
        records : sequence of dict
            The score records (``id, scores, ...``).
        decision : GateDecision
            The gate against the baseline.
        loop_view : mapping
            ``vs_best``, ``p_better_than_best``, ``improved``, ``best_before`` (stored in the record's ``loop``).

        Returns
        -------
        bool
            False when the run was in the store already (nothing written).
        """
        name = self.run_name(iteration)
        by_id = {o["id"]: o for o in outputs}
        rec_by_id = {r["id"]: r for r in records}
        trials = []
        metric_rows: dict[str, list[Any]] = {k: [] for k in ("metric", "level", "agent", "task_id", "trial",
                                                             "conversation_id", "message_id", "value", "passed",
                                                             "detail")}
        for ex in examples:
            out, rec = by_id[ex.id], rec_by_id[ex.id]
            values: dict[str, float | None] = dict(rec["scores"])
            use = {k: out[k] for k in ("tokens", "input_tokens", "output_tokens", "cost_usd", "latency_s")
                   if out.get(k) is not None}
            trials.append(self._trial(name, ex.id, 0, values, ex.risk_level, list(ex.tags), use, (ex, out)))
            for m, v in values.items():
                thr = self.gate.threshold(m)
                metric_rows["metric"].append(m)
                metric_rows["level"].append("message")
                metric_rows["agent"].append(name)
                metric_rows["task_id"].append(ex.id)
                metric_rows["trial"].append(0)
                metric_rows["conversation_id"].append(ex.id)
                metric_rows["message_id"].append(ex.id)
                metric_rows["value"].append(v)
                metric_rows["passed"].append(None if v is None or thr is None else bool(v >= thr))
                detail: dict[str, Any] = {"iteration": iteration}
                if v is None:
                    detail["judge_missing"] = True
                if thr is not None:
                    detail["threshold"] = thr
                metric_rows["detail"].append(_json(detail))
        record = {**decision.to_record(), "loop": {"iteration": iteration, **dict(loop_view)}}
        gate_rows = {"decided_at": [_parse_time(decision.created_at)], "decision": [decision.decision],
                     "config": [_json(record["config"])], "record": [_json(record)]}
        with self._open() as store:
            if store.has_run(name):
                return False
            store.write_run(
                name, trials, {"metric_results": metric_rows, "gate_decisions": gate_rows},
                description=f"iteration {iteration} of the loop run {self.run_dir}",
                tags=["loop", self.prefix], source="loop",
                config={"loop_run_dir": str(self.run_dir), "iteration": iteration, "prompt": prompt,
                        "prompt_sha256": prompt_sha256, "config_sha256": self.config_sha256},
            )
        return True

    def _trial(self, agent: str, task_id: str, trial: int, values: Mapping[str, float | None],
               risk_level: str | None, tags: list[str], use: Mapping[str, Any],
               answered: tuple[Example, Mapping[str, Any]] | None) -> Trial:
        reward = weighted_example_score(values, self.gate)
        usage: dict[str, Any] = {}
        for k, v in use.items():
            usage[k] = int(v) if k in ("tokens", "input_tokens", "output_tokens") else float(v)
        data: dict[str, Any] = {
            "agent": agent, "task_id": task_id, "trial": trial, "reward": reward,
            "judge_missing": any(v is None for v in values.values()) or reward is None,
            "tags": tags, "risk_level": risk_level, "usage": usage or None,
            "meta": {"metrics": {m: v for m, v in values.items() if v is not None}},
        }
        if answered is not None:
            ex, out = answered
            ctx = ex.context_text()
            inter: dict[str, Any] = {"id": ex.id, "query": ex.input, "answer": out.get("response"),
                                     "expected_answer": ex.expected, "context": [ctx] if ctx else []}
            if out.get("tool_calls"):
                inter["tool_calls"] = out["tool_calls"]
            expected_calls = ex.extra.get("expected_tool_calls")
            if isinstance(expected_calls, list):
                inter["expected_tool_calls"] = expected_calls
            data["interactions"] = [inter]
            tools = ex.extra.get("tools")
            if isinstance(tools, list):
                data["tools"] = tools
        return Trial.model_validate(data)


def _json(v: Any) -> str:
    import json

    return json.dumps(v, default=str, ensure_ascii=False, sort_keys=True)


def _parse_time(text: str) -> Any:
    import datetime as dt

    return dt.datetime.fromisoformat(text)

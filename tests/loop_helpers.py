"""A scripted world for the loop's tests: an eval set, a baseline, and one loopback server playing agent, judge and
optimizer.

The agent's answers depend on the system prompt it is sent:

* ``PROMPT-A`` (the starting prompt): ``GOOD`` answers on examples 0, 1, 4, 5, 8, 9, ... (half of each risk level),
  ``BAD`` on the others, as the baseline;
* ``PROMPT-B`` (the optimizer's first revision): ``GOOD`` everywhere (iteration 2 improves);
* ``PROMPT-C`` (its second revision): ``BAD`` everywhere (iteration 3 regresses).

The judge scores an answer 1 when it contains ``GOOD`` and 0 otherwise, for every metric; the optimizer turns A into B
and B into C (and C into C). B drops the line "Never share account numbers." (a policy-sensitive phrase).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from judge_server import Reply, ScriptedOpenAIServer, user_text

PROMPTS = {
    "A": "You are PROMPT-A, a support assistant.\nNever share account numbers.\nAnswer briefly.",
    "B": "You are PROMPT-B, a support assistant.\nAnswer from the context only.\nAnswer briefly.",
    "C": "You are PROMPT-C, a support assistant.\nAnswer from the context only.\nAnswer at length.",
}
NEXT = {"A": "B", "B": "C", "C": "C"}
MODEL = "test-model"
#: USD per 1M tokens (input, output) for the test model.
PRICES = {MODEL: [1.0, 2.0]}


def good_in_a(i: int) -> bool:
    """Whether PROMPT-A (and the baseline) answer example ``i`` well."""
    return i % 4 in (0, 1)


def which_prompt(system: str) -> str:
    m = re.search(r"PROMPT-([ABC])", system)
    return m.group(1) if m else "A"


def responder(body: dict[str, Any]) -> Reply:
    """The server's answers (module docstring)."""
    tools = body.get("tools") or []
    name = tools[0]["function"]["name"] if tools else None
    if name is None:  # the agent
        system = body["messages"][0]["content"]
        kind = which_prompt(system)
        user = user_text(body)
        ex = int(re.search(r"question (\d+)", user).group(1))
        good = kind == "B" or (kind == "A" and good_in_a(ex))
        return Reply.text(f"{'GOOD' if good else 'BAD'} answer to question {ex}")
    if name == "Revision":
        current = which_prompt(user_text(body))
        nxt = NEXT[current]
        return Reply.tool_call({"revised_prompt": PROMPTS[nxt], "rationale": f"revised {current} into {nxt}"})
    answer = user_text(body).split("ANSWER:")[-1]
    return Reply.verdict(1.0 if "GOOD" in answer else 0.0, reasoning="scripted")


#: The placeholder of the endpoints' address until :func:`point_at` fills in a server's (a URL: configs are checked).
BASE_URL = "http://base-url.invalid/v1"


def make_world(tmp: Path, n: int = 20, *, thresholds: dict[str, float] | None = None, **gate: Any) -> Path:
    """Write eval set, baseline and a loop config under ``tmp``; return the config path (base_url filled later)."""
    tmp.mkdir(parents=True, exist_ok=True)
    lines, base = [], []
    for i in range(n):
        risk = ("low", "high")[i % 2]
        lines.append({"id": f"q{i}", "input": f"This is question {i}.", "expected": "GOOD",
                      "context": f"Fact {i}.", "tags": [], "risk_level": risk, "source": "test"})
        good = good_in_a(i)  # the baseline is as good as PROMPT-A
        base.append({"id": f"q{i}", "risk_level": risk,
                     "scores": {"groundedness": float(good), "relevance": float(good), "safety": float(good)}})
    (tmp / "eval.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    (tmp / "baseline.jsonl").write_text("".join(json.dumps(x) + "\n" for x in base))
    cfg = {
        "eval_set": "eval.jsonl",
        "baseline": "baseline.jsonl",
        "gate": {"max_iterations": 5, "stop_after_no_improvement": 1, "n_draws": 2000,
                 "thresholds": thresholds if thresholds is not None else {"relevance": 0.97}, **gate},
        "agent": {"model": MODEL, "base_url": BASE_URL, "prompt": PROMPTS["A"], "max_tokens": 64,
                  "concurrency": 8, "backoff_base_s": 0.01, "backoff_max_s": 0.05},
        "judge": {"model": MODEL, "base_url": BASE_URL, "max_tokens": 64, "concurrency": 8,
                  "backoff_base_s": 0.01, "backoff_max_s": 0.05},
        "prices": PRICES,
        "policy_phrases": ["account numbers"],
    }
    path = tmp / "loop.json"
    path.write_text(json.dumps(cfg, indent=2))
    return path


def point_at(config: Path, server: ScriptedOpenAIServer, **changes: Any) -> Path:
    """Fill in the server's URL (and apply ``changes`` to the ``gate`` / top-level settings)."""
    cfg = json.loads(config.read_text().replace(BASE_URL, server.base_url))
    for k, v in changes.items():
        if k in ("agent", "judge"):
            cfg[k].update(v)
        elif k == "gate":
            cfg["gate"].update(v)
        else:
            cfg[k] = v
    config.write_text(json.dumps(cfg, indent=2))
    return config


def body_key(body: dict[str, Any]) -> str:
    return json.dumps(body, sort_keys=True)


def repeated(bodies: list[dict[str, Any]]) -> list[str]:
    """Request bodies sent more than once."""
    return [k for k, c in Counter(body_key(b) for b in bodies).items() if c > 1]

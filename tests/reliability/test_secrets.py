"""Nothing leaked: an endpoint whose error reply echoes the API key (some 401 bodies do) never gets it stored,
logged or printed. Every file written under the test's folder and all terminal output are searched for the key."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import openai
import pytest
from judge_server import Reply, ScriptedOpenAIServer
from loop_helpers import make_world, point_at
from typer.testing import CliRunner

import agentstats
from agentstats.cli import app
from agentstats.llm.redact import REDACTED, redact, redact_exception, register_secret

# not shaped like an OpenAI key, so only the registered / environment value can find it
KEY = "live-SECRET-0123456789abcdef"
runner = CliRunner()


def _leaks(root: Path, *texts: str) -> list[str]:
    found = [f"output {i}" for i, t in enumerate(texts) if KEY in t]
    return found + [str(f) for f in root.rglob("*") if f.is_file() and KEY.encode() in f.read_bytes()]


def test_redact_takes_out_keys_headers_and_key_shapes():
    register_secret(KEY)
    register_secret("short")  # too short to register: never blanks out words
    text = (f"Incorrect API key provided: {KEY}. Authorization: Bearer abc.def-ghi_jkl; api-key=zz99zz99zz "
            "{'x-api-key': 'qq11qq11qq'} proxy-authorization: Basic dXNlcjpwYXNzd29yZA== sk-proj-ABCDEFGHIJKLMNOPQRST "
            "a short word")
    out = redact(text)
    for secret in (KEY, "abc.def-ghi_jkl", "zz99zz99zz", "qq11qq11qq", "dXNlcjpwYXNzd29yZA==", "sk-proj-ABCDEFGH"):
        assert secret not in out
    assert out.count(REDACTED) == 6 and "a short word" in out and "Authorization: Bearer [REDACTED]" in out
    assert redact(out) == out  # idempotent
    assert redact("no secret, just an api key mention") == "no secret, just an api key mention"


def test_redact_exception_keeps_type_and_cleans_its_chain():
    register_secret(KEY)
    try:
        try:
            raise KeyError(f"inner {KEY}")
        except KeyError as inner:
            raise ValueError(f"outer {KEY}") from inner
    except ValueError as caught:
        exc = caught
    out = redact_exception(exc)
    assert out is exc and isinstance(out, ValueError)
    assert KEY not in str(out) and KEY not in str(out.__cause__)


def _answers(tmp: Path, n: int) -> Path:
    recs = [{"agent": "A", "task_id": f"q{i}", "trial": 0,
             "interactions": [{"query": "q", "answer": f"answer {i}", "expected_answer": f"ref {i}"}]}
            for i in range(n)]
    src = tmp / "answers.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return src


@pytest.mark.parametrize("status", [401, 400, pytest.param(500, marks=pytest.mark.slow)])  # 500: real backoff, 14 s
def test_score_never_prints_or_writes_an_echoed_key(tmp_path, monkeypatch, status):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    src = _answers(tmp_path, 3)
    with ScriptedOpenAIServer() as srv:
        srv.responder = lambda req: Reply.http_error(status, echo_key=True)
        res = runner.invoke(app, ["score", str(src), "--judge", "openai", "--base-url", srv.base_url, "--cache-dir",
                                  str(tmp_path / "c"), "--out", str(tmp_path / "scored.jsonl"), "--json"])
        assert srv.authorizations and all(a == f"Bearer {KEY}" for a in srv.authorizations)  # the key was sent
    assert res.exit_code in (1, 2), res.output
    if status == 401:
        assert "refused the credentials" in res.output and REDACTED in res.output
    assert _leaks(tmp_path, res.output) == []


def test_loop_never_prints_or_journals_an_echoed_key(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    cfg = make_world(tmp_path / "w", n=4)
    with ScriptedOpenAIServer() as srv:
        srv.responder = lambda req: Reply.http_error(401, echo_key=True)
        point_at(cfg, srv, agent={"retry_attempts": 1}, judge={"retry_attempts": 1})
        res = runner.invoke(app, ["loop", "--config", str(cfg), "--run-dir", str(tmp_path / "run")])
        assert srv.n_requests >= 1
    assert res.exit_code in (2, 69), res.output
    assert _leaks(tmp_path, res.output) == []


def test_capture_stores_an_echoed_key_redacted(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    key = "capture-KEY-9876543210zyxw"  # given to the application's client, never in the environment
    with ScriptedOpenAIServer() as srv:
        srv.responder = lambda req: Reply.http_error(401, echo_key=True)
        client = openai.OpenAI(base_url=srv.base_url, api_key=key, max_retries=0)

        @agentstats.node("answer")
        def answer(state):
            return client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "q"}])

        store = tmp_path / "runs.duckdb"
        with agentstats.run("leaky", store=store) as run:
            with pytest.raises(openai.AuthenticationError):
                answer({"task_id": "t", "query": "q"})
        assert run.status == "completed"
        client.close()
    con = duckdb.connect(str(store), read_only=True)
    (message,) = con.execute("select error_message from node_invocations").fetchone()
    con.close()
    assert key not in message and REDACTED in message and "Incorrect API key provided" in message
    assert [str(f) for f in tmp_path.rglob("*") if f.is_file() and key.encode() in f.read_bytes()] == []

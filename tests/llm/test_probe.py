"""The endpoint probe (:func:`agentstats.llm.probe.check_endpoint`) against the loopback server and a closed port."""

from __future__ import annotations

import socket
import time

import pytest
from judge_server import Reply, ScriptedOpenAIServer

from agentstats.llm.endpoint import Endpoint
from agentstats.llm.probe import EndpointUnavailable, check_endpoint


def closed_port_url() -> str:
    """A loopback URL nothing listens on (a port bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@pytest.fixture(autouse=True)
def _no_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # loopback addresses need none
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def test_a_server_that_lists_its_models_is_there_and_no_completion_is_asked():
    with ScriptedOpenAIServer() as srv:
        check_endpoint(Endpoint(model="test-model", base_url=srv.base_url))
        assert srv.model_listings == 1 and srv.n_requests == 0  # no paid call


def test_nothing_listening_is_named_after_two_quick_attempts():
    url = closed_port_url()
    t0 = time.perf_counter()
    with pytest.raises(EndpointUnavailable, match="is not available") as err:
        check_endpoint(Endpoint(model="m", base_url=url), user="the LLM judge")
    assert time.perf_counter() - t0 < 5  # connection refused: no backoff, no minute of retries
    assert err.value.address == url and err.value.kind == "connection"
    assert str(err.value).startswith(f"the LLM judge at {url} is not available (connection")
    assert "2 attempt(s)" in str(err.value)


@pytest.mark.parametrize(("status", "kind"), [(503, "server_error"), (502, "server_error"), (401, "refused"),
                                              (403, "refused")])
def test_unavailable_or_refusing_servers(status, kind):
    with ScriptedOpenAIServer() as srv:
        srv.models_status = status
        with pytest.raises(EndpointUnavailable) as err:
            check_endpoint(Endpoint(model="m", base_url=srv.base_url), attempts=3)
        assert err.value.kind == kind and srv.n_requests == 0
        # a refused key is not retried; a server that says it is down is asked `attempts` times
        assert srv.model_listings == (1 if kind == "refused" else 3)
        assert f"HTTP {status}" in str(err.value)


def test_no_model_list_is_settled_by_one_completion():
    with ScriptedOpenAIServer() as srv:
        srv.models_status = 404  # a server without /models: one completion of one token decides
        check_endpoint(Endpoint(model="m", base_url=srv.base_url))
        assert srv.n_requests == 1 and srv.requests[0]["max_tokens"] == 1 and srv.requests[0]["model"] == "m"
        srv.script([Reply.http_error(404)])  # ... and a 404 there too: no such model, or not an OpenAI API
        with pytest.raises(EndpointUnavailable, match="has no model 'm' or is not an OpenAI-compatible API") as err:
            check_endpoint(Endpoint(model="m", base_url=srv.base_url))
        assert err.value.kind == "not_found"
        srv.script([Reply.http_error(429, retry_after_ms=10)])  # busy is there: the calls will wait and retry
        check_endpoint(Endpoint(model="m", base_url=srv.base_url))
        srv.script([Reply.http_error(400)])  # understood, refused (e.g. max_tokens for a reasoning model): there
        check_endpoint(Endpoint(model="m", base_url=srv.base_url))

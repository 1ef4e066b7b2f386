"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1, for judge tests and benchmarks.

Standard library only (``http.server.ThreadingHTTPServer``). It answers ``POST /v1/chat/completions`` (and
``POST /v1/embeddings``, with :func:`hashed_embedding` vectors or scripted HTTP errors, and ``GET /v1/models``, the
endpoint probe, with one model or a scripted status) in OpenAI's JSON shape
and can be scripted per request: a correct tool-call reply, a slow reply, HTTP 429 with ``Retry-After``, HTTP
500, malformed JSON arguments, truncated output (``finish_reason="length"``), a reply without any tool call.
Every request body is recorded, with the largest number of requests in flight at once.

Usage::

    with ScriptedOpenAIServer() as srv:
        srv.script([Reply.http_error(429, retry_after_ms=10), Reply.verdict(0.9)])
        judge = OpenAIJudge("test-model", base_url=srv.base_url, ...)

Replies are taken from the script in arrival order; when the script is empty, ``responder(request)`` decides
(default: a valid verdict with score 1.0). Run as a program to serve in another process (benchmarks)::

    python tests/judge_server.py --latency 0.1        # prints the port on stdout, serves until killed
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["Reply", "ScriptedOpenAIServer", "hashed_embedding", "user_text"]


@dataclass
class Reply:
    """One scripted reply. Build with the class methods.

    Attributes
    ----------
    kind : str
        ``"tool_call"``, ``"tool_calls"``, ``"content"``, ``"status"``, ``"truncated"``, ``"no_tool_call"``.
    arguments : dict or str
        Tool-call arguments (a dict is JSON-encoded; a string is sent verbatim, so it may be malformed).
    content : str
        Message content (``content`` / ``no_tool_call`` kinds).
    status : int
        HTTP status (``status`` kind).
    headers : dict
        Extra response headers (``Retry-After``).
    delay_s : float
        Seconds to sleep before replying.
    usage : tuple of int
        ``(prompt_tokens, completion_tokens)`` reported.
    """

    kind: str
    arguments: Any = None
    content: str | None = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    usage: tuple[int, int] = (120, 30)
    tool_name: str | None = None
    #: ``(name, arguments)`` per call of a ``tool_calls`` reply (arguments: dict → JSON; str → sent as is).
    calls: list[tuple[str, Any]] = field(default_factory=list)

    @classmethod
    def verdict(cls, score: float = 1.0, reasoning: str = "matches the reference", delay_s: float = 0.0,
                usage: tuple[int, int] = (120, 30), **extra: Any) -> Reply:
        """A correct TOOLS-mode reply: one tool call with ``{"score", "reasoning", **extra}``."""
        return cls("tool_call", arguments={"score": score, "reasoning": reasoning, **extra}, delay_s=delay_s,
                   usage=usage)

    @classmethod
    def tool_call(cls, arguments: Any, delay_s: float = 0.0, tool_name: str | None = None) -> Reply:
        """A tool call with the given arguments (dict → JSON; str → sent as is)."""
        return cls("tool_call", arguments=arguments, delay_s=delay_s, tool_name=tool_name)

    @classmethod
    def tool_calls(cls, calls: list[tuple[str, Any]], content: str | None = None) -> Reply:
        """An agent's reply calling tools: one call per ``(name, arguments)``, with optional text beside them."""
        return cls("tool_calls", calls=list(calls), content=content)

    @classmethod
    def malformed(cls, text: str = '{"score": 0.9, "reasoning": "unterminated') -> Reply:
        """A tool call whose arguments are not valid JSON."""
        return cls("tool_call", arguments=text)

    @classmethod
    def truncated(cls, text: str = '{"score": 0.9, "reas') -> Reply:
        """A tool call cut off by the token limit (``finish_reason="length"``)."""
        return cls("truncated", arguments=text)

    @classmethod
    def no_tool_call(cls, content: str = "The answer looks right to me.") -> Reply:
        """A plain text reply with no tool call."""
        return cls("no_tool_call", content=content)

    @classmethod
    def text(cls, content: str, delay_s: float = 0.0) -> Reply:
        """A plain text reply (for JSON / MD_JSON modes)."""
        return cls("content", content=content, delay_s=delay_s)

    @classmethod
    def http_error(cls, code: int, retry_after: str | None = None, retry_after_ms: int | None = None,
               delay_s: float = 0.0, echo_key: bool = False) -> Reply:
        """An HTTP error with an OpenAI-style error body, optionally with ``Retry-After`` headers.

        ``echo_key``: the body's message repeats the request's ``Authorization`` header and the key in it, as some
        401 replies do (the redaction tests look for the key in everything agentstats writes and prints).
        """
        headers = {"x-echo-key": "1"} if echo_key else {}
        if retry_after is not None:
            headers["Retry-After"] = retry_after
        if retry_after_ms is not None:
            headers["retry-after-ms"] = str(retry_after_ms)
        return cls("status", status=code, headers=headers, delay_s=delay_s)

    @classmethod
    def slow(cls, delay_s: float, then: Reply | None = None) -> Reply:
        """``then`` (default a valid verdict) after ``delay_s`` seconds."""
        r = then if then is not None else cls.verdict()
        return Reply(**{**r.__dict__, "delay_s": delay_s})


def user_text(request: dict[str, Any]) -> str:
    """All user-message text of a recorded request, joined (for content-based responders)."""
    parts = []
    for m in request.get("messages", []):
        if m.get("role") == "user":
            c = m.get("content")
            parts.append(c if isinstance(c, str) else json.dumps(c))
    return "\n".join(parts)


class ScriptedOpenAIServer:
    """The server. Start with ``with`` (or :meth:`start` / :meth:`stop`).

    Parameters
    ----------
    responder : callable, optional
        ``responder(request_json) -> Reply`` used when the script is empty. Default: ``Reply.verdict(1.0)``.
    latency_s : float
        Extra seconds every reply waits (added to the reply's own ``delay_s``).
    record_bodies : bool
        Keep each request body in :attr:`requests` (turn off for long benchmarks).

    Attributes
    ----------
    base_url : str
        ``http://127.0.0.1:<port>/v1``.
    requests : list of dict
        Request bodies in arrival order.
    authorizations : list of str
        The ``Authorization`` header of each request.
    n_requests : int
    max_in_flight : int
        Largest number of requests being handled at the same time.
    """

    def __init__(self, responder: Callable[[dict[str, Any]], Reply] | None = None, latency_s: float = 0.0,
                 record_bodies: bool = True):
        self.responder = responder or (lambda req: Reply.verdict(1.0))
        self.latency_s = latency_s
        self.record_bodies = record_bodies
        self.requests: list[dict[str, Any]] = []
        self.authorizations: list[str | None] = []
        self.arrivals: list[float] = []
        self.n_requests = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self._script: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        #: ``embed(text) -> list of float`` for ``POST /v1/embeddings`` (default :func:`hashed_embedding`).
        self.embed: Callable[[str], list[float]] = hashed_embedding
        self.embedding_requests: list[dict[str, Any]] = []
        #: HTTP status to answer the next embedding requests with (one per entry), before serving vectors again.
        self.embedding_errors: deque[int] = deque()
        #: ``GET /v1/models`` requests answered (the endpoint probe of :mod:`agentstats.llm.probe`), not in
        #: ``n_requests``; ``models_status`` answers them with that HTTP status instead of the model list.
        self.model_listings = 0
        self.models_status: int | None = None

    # -- scripting -----------------------------------------------------------------------------------------
    def script(self, replies: Iterable[Reply]) -> None:
        """Append replies, served to the next requests in arrival order."""
        with self._lock:
            self._script.extend(replies)

    def reset(self) -> None:
        """Forget recorded requests and counters (the script too)."""
        with self._lock:
            self.requests.clear()
            self.authorizations.clear()
            self.arrivals.clear()
            self._script.clear()
            self.n_requests = 0
            self.max_in_flight = 0

    def _next(self, body: dict[str, Any], authorization: str | None = None) -> Reply:
        with self._lock:
            self.n_requests += 1
            if self.record_bodies:
                self.authorizations.append(authorization)
            self.arrivals.append(time.perf_counter())
            if self.record_bodies:
                self.requests.append(body)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            if self._script:
                return self._script.popleft()
        return self.responder(body)

    def _done(self) -> None:
        with self._lock:
            self.in_flight -= 1

    # -- lifecycle -----------------------------------------------------------------------------------------
    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> ScriptedOpenAIServer:
        server = self

        class Handler(_Handler):
            owner = server

        self._httpd = _Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02},
                                        name="judge-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> ScriptedOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def hashed_embedding(text: str, dim: int = 64) -> list[float]:
    """A deterministic unit vector: the bag of lowercase words hashed into ``dim`` buckets (CRC-32).

    Texts sharing words get a positive cosine; the same text always gets the same vector.
    """
    import math
    import zlib

    v = [0.0] * dim
    for w in text.lower().split():
        v[zlib.crc32(w.strip(".,!?;:").encode()) % dim] += 1.0
    norm = math.sqrt(sum(x * x for x in v)) or 1.0
    return [x / norm for x in v]


def _completion(body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    tools = body.get("tools") or []
    name = reply.tool_name or (tools[0]["function"]["name"] if tools else "Verdict")
    message: dict[str, Any] = {"role": "assistant", "content": None}
    finish = "stop"
    if reply.kind in ("tool_call", "truncated"):
        args = reply.arguments if isinstance(reply.arguments, str) else json.dumps(reply.arguments)
        message["tool_calls"] = [
            {"id": "call_0", "type": "function", "function": {"name": name, "arguments": args}}
        ]
        finish = "length" if reply.kind == "truncated" else "tool_calls"
    elif reply.kind == "tool_calls":
        message["content"] = reply.content
        message["tool_calls"] = [
            {"id": f"call_{i}", "type": "function",
             "function": {"name": n, "arguments": a if isinstance(a, str) else json.dumps(a)}}
            for i, (n, a) in enumerate(reply.calls)
        ]
        finish = "tool_calls" if reply.calls else "stop"
    else:
        message["content"] = reply.content or ""
    pt, ct = reply.usage
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "test-model"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {"prompt_tokens": pt, "completion_tokens": ct, "total_tokens": pt + ct},
    }


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 512  # listen() backlog, read in __init__: the default 5 resets bursts of new connections


class _Handler(BaseHTTPRequestHandler):
    owner: ScriptedOpenAIServer
    protocol_version = "HTTP/1.1"  # keep-alive: the openai client reuses connections
    # headers and body go out in two writes: without TCP_NODELAY, Nagle's algorithm and the client's delayed ACK
    # hold every reply on a kept-alive connection back by tens of milliseconds
    disable_nagle_algorithm = True

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def _send(self, code: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode("utf-8")
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _embeddings(self, raw: bytes) -> None:
        owner = self.owner
        body = json.loads(raw or b"{}")
        with owner._lock:
            owner.embedding_requests.append(body)
            status = owner.embedding_errors.popleft() if owner.embedding_errors else None
        if status is not None:
            self._send(status, {"error": {"message": f"scripted HTTP {status}", "type": "scripted", "code": None}})
            return
        texts = body.get("input")
        texts = [texts] if isinstance(texts, str) else list(texts or [])
        data = [{"object": "embedding", "index": i, "embedding": owner.embed(t)} for i, t in enumerate(texts)]
        n = sum(len(t.split()) for t in texts)
        self._send(200, {"object": "list", "data": data, "model": body.get("model", "test-embedding"),
                         "usage": {"prompt_tokens": n, "total_tokens": n}})

    def do_GET(self) -> None:
        owner = self.owner
        with owner._lock:
            owner.model_listings += 1
        if not self.path.rstrip("/").endswith("/models"):
            self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
        elif owner.models_status is not None:
            self._send(owner.models_status, {"error": {"message": f"scripted HTTP {owner.models_status}",
                                                       "type": "scripted", "code": None}})
        else:
            self._send(200, {"object": "list", "data": [{"id": "test-model", "object": "model", "owned_by": "test"}]})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.path.rstrip("/").endswith("/embeddings"):
            self._embeddings(raw)
            return
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._send(400, {"error": {"message": "bad JSON body", "type": "invalid_request_error"}})
            return
        owner = self.owner
        reply = owner._next(body, self.headers.get("Authorization"))
        try:
            delay = reply.delay_s + owner.latency_s
            if delay > 0:
                time.sleep(delay)
            if reply.kind == "status":
                message = f"scripted HTTP {reply.status}"
                headers = dict(reply.headers)
                if headers.pop("x-echo-key", None):
                    auth = self.headers.get("Authorization") or ""
                    key = auth.removeprefix("Bearer ")
                    message += f": Incorrect API key provided: {key}. (Authorization: {auth}; api-key={key})"
                err = {"error": {"message": message, "type": "scripted", "code": None}}
                self._send(reply.status, err, headers)
            else:
                self._send(200, _completion(body, reply), reply.headers)
        except (BrokenPipeError, ConnectionResetError):  # client gave up (timeout test)
            pass
        finally:
            owner._done()


def main(argv: list[str] | None = None) -> None:
    """Serve valid verdicts (score derived from nothing: 1.0) until killed; print the port first."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--latency", type=float, default=0.1, help="seconds per reply")
    args = ap.parse_args(argv)
    srv = ScriptedOpenAIServer(latency_s=args.latency, record_bodies=False).start()
    print(srv.port, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        srv.stop()


if __name__ == "__main__":
    main(sys.argv[1:])

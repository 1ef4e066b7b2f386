"""Embedding similarity: cosine of sentence embeddings from any OpenAI-compatible ``/v1/embeddings`` endpoint.

``answer_similarity`` (method ``embedding``): cosine between the answer and the expected answer (best over a list
of expected answers); ``answer_relevance`` (method ``embedding``): cosine between the question and the answer
(the embedding form of answer relevance; Es et al. 2024, RAGAS, arXiv 2309.15217, compare generated questions with
the original by embedding cosine); ``context_relevance`` (method ``embedding``): the mean over the retrieved passages
(:func:`agentstats.metrics.retrieval.context_texts`) of each passage's cosine with the question, each clipped at 0
and kept in ``evidence["passage_scores"]``. Give the client as ``params["embedder"]``:
``get_metric("answer_similarity", method="embedding", params={"embedder": EmbeddingClient("text-embedding-3-small")})``.

The value is the cosine clipped at 0 (the metrics' range is [0, 1]; a negative cosine means unrelated here), the
raw cosine is kept as ``evidence["cosine"]``. Texts are embedded once per client (in-memory cache), in batches,
through the one LLM client (:class:`agentstats.llm.client.LLMClient`: key from the environment, retries with backoff).
A batch the endpoint does not answer after the retries leaves its records' values missing with
``evidence["embedding_missing"]`` and the error, never 0. Edge cases as for the token methods: a blank answer,
question or expected answer is not applicable.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from pydantic import ValidationError

from agentstats.llm.client import LLMClient
from agentstats.llm.endpoint import Endpoint, LLMConfigError
from agentstats.llm.transport import run_coro
from agentstats.metrics.base import Score, not_applicable
from agentstats.metrics.retrieval import context_texts
from agentstats.scoring.judge.base import JudgeConfigError

__all__ = ["EmbeddingClient", "embedding_context_relevance", "embedding_relevance", "embedding_similarity"]


class EmbeddingClient:
    """Embeddings from an OpenAI-compatible endpoint, cached per text, sent through the LLM client.

    Parameters
    ----------
    model : str
        Embedding model name.
    base_url : str, optional
        ``http://host:port/v1``; ``None`` → ``$OPENAI_BASE_URL`` or OpenAI.
    api_key_env : str
        Environment variable holding the key (none needed for a loopback ``base_url``).
    batch_size : int
        Texts per request.
    max_retries : int
        Retries of a request (timeouts, connection errors, 408/409/429/5xx), with exponential backoff and full jitter
        from 0.5 s up to 8 s, ``Retry-After`` honoured (:meth:`agentstats.llm.client.LLMClient.embed`).
    timeout : float
        Seconds per request.

    Raises
    ------
    JudgeConfigError
        When no key is set for a non-loopback endpoint, or ``batch_size < 1``.

    Attributes
    ----------
    n_requests : int
        HTTP requests sent (retries included).
    prompt_tokens : int
        Tokens the endpoint reported.
    """

    def __init__(self, model: str, base_url: str | None = None, api_key_env: str = "OPENAI_API_KEY",
                 batch_size: int = 64, max_retries: int = 3, timeout: float = 60.0) -> None:
        if batch_size < 1:
            raise JudgeConfigError(f"batch_size must be >= 1, got {batch_size}")
        self.model = model
        self.base_url = base_url if base_url is not None else os.environ.get("OPENAI_BASE_URL")
        try:
            self.endpoint = Endpoint(model=model, base_url=self.base_url, api_key_env=api_key_env,
                                     retry_attempts=int(max_retries) + 1, timeout=timeout, backoff_base_s=0.5,
                                     backoff_max_s=8.0)
            self.endpoint.api_key("the embedding client")
        except (LLMConfigError, ValidationError) as exc:
            raise JudgeConfigError(str(exc)) from None
        self.batch_size = int(batch_size)
        self.max_retries = int(max_retries)
        self.timeout = float(timeout)
        self._client = LLMClient()
        self._cache: dict[str, np.ndarray] = {}
        self.n_requests = 0
        self.prompt_tokens = 0

    def embed(self, texts: Sequence[str]) -> dict[str, np.ndarray | Exception]:
        """Unit-normalised embedding of each distinct text, or the exception of the batch that failed."""
        out: dict[str, np.ndarray | Exception] = {t: self._cache[t] for t in texts if t in self._cache}
        todo = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if todo:
            out.update(run_coro(lambda: self._aembed(todo)))
        return out

    async def _aembed(self, todo: list[str]) -> dict[str, np.ndarray | Exception]:
        import openai

        out: dict[str, np.ndarray | Exception] = {}
        try:
            for start in range(0, len(todo), self.batch_size):
                chunk = todo[start:start + self.batch_size]
                ex = await self._client.embed(self.endpoint, chunk)
                self.n_requests += ex.n_requests
                self.prompt_tokens += ex.tokens_in
                if ex.exception is not None:
                    if not isinstance(ex.exception, openai.OpenAIError):
                        raise ex.exception
                    for t in chunk:
                        out[t] = ex.exception
                    continue
                for t, vec in zip(chunk, ex.vectors or [], strict=False):
                    if vec is None:
                        continue
                    v = np.asarray(vec, dtype=float)
                    norm = float(np.linalg.norm(v))
                    v = v / norm if norm > 0 else v
                    self._cache[t] = v
                    out[t] = v
        finally:
            await self._client.aclose()
        return out


def _blank(v: Any) -> bool:
    return v is None or (isinstance(v, str) and not v.strip()) or (isinstance(v, list | tuple) and not v)


def _cosine_batch(batch: Sequence[Mapping[str, Any]], params: Mapping[str, Any], left: str, right: str,
                  reasons: tuple[str, str]) -> list[Score]:
    embedder = params.get("embedder")
    if embedder is None:
        return [not_applicable("no embedder configured (params['embedder'])") for _ in batch]
    pairs: list[tuple[str, list[str]] | Score] = []
    for values in batch:
        a, b = values.get(left), values.get(right)
        if _blank(a):
            pairs.append(not_applicable(reasons[0]))
            continue
        refs = [str(x) for x in (b if isinstance(b, list | tuple) else [b]) if not _blank(x)]
        if not refs:
            pairs.append(not_applicable(reasons[1]))
            continue
        pairs.append((str(a), refs))
    texts = [t for p in pairs if not isinstance(p, Score) for t in (p[0], *p[1])]
    vecs = embedder.embed(texts) if texts else {}
    out: list[Score] = []
    for p in pairs:
        if isinstance(p, Score):
            out.append(p)
            continue
        got = [vecs[p[0]], *(vecs[r] for r in p[1])]
        err = next((g for g in got if isinstance(g, Exception)), None)
        if err is not None:
            out.append(Score(None, {"not_applicable": "embedding_missing", "embedding_missing": type(err).__name__,
                                    "error": str(err)[:300]}))
            continue
        a_vec = got[0]
        cos = [float(np.dot(a_vec, r)) for r in got[1:]]
        best = int(np.argmax(cos))
        c = cos[best]
        out.append(Score(max(0.0, min(1.0, c)) if math.isfinite(c) else None,
                         {"cosine": c, "expected_index": best, "model": embedder.model}))
    return out


def embedding_similarity(batch: Sequence[Mapping[str, Any]], params: Mapping[str, Any]) -> list[Score]:
    """Cosine of answer (``output``) and expected answer (``expected``) embeddings, best over expected answers."""
    return _cosine_batch(batch, params, "output", "expected", ("empty answer", "no expected answer"))


def embedding_relevance(batch: Sequence[Mapping[str, Any]], params: Mapping[str, Any]) -> list[Score]:
    """Cosine of answer (``output``) and question (``input``) embeddings."""
    return _cosine_batch(batch, params, "output", "input", ("empty answer", "no question"))


def embedding_context_relevance(batch: Sequence[Mapping[str, Any]], params: Mapping[str, Any]) -> list[Score]:
    """Mean over the retrieved passages of the cosine (clipped at 0) of each passage's and the question's embeddings.

    Evidence: ``passage_scores`` (rank order), ``cosines`` (raw) and the model. A passage without an embedding leaves
    the value missing (``evidence["embedding_missing"]``).
    """
    embedder = params.get("embedder")
    if embedder is None:
        return [not_applicable("no embedder configured (params['embedder'])") for _ in batch]
    prepared = [context_texts(values) for values in batch]
    texts = [t for values, p in zip(batch, prepared, strict=True) if not isinstance(p, Score)
             for t in (str(values.get("input")), *p)]
    vecs = embedder.embed(texts) if texts else {}
    out: list[Score] = []
    for values, p in zip(batch, prepared, strict=True):
        if isinstance(p, Score):
            out.append(p)
            continue
        got = [vecs[str(values.get("input"))], *(vecs[t] for t in p)]
        err = next((g for g in got if isinstance(g, Exception)), None)
        if err is not None:
            out.append(Score(None, {"not_applicable": "embedding_missing", "embedding_missing": type(err).__name__,
                                    "error": str(err)[:300]}))
            continue
        cos = [float(np.dot(got[0], v)) for v in got[1:]]
        scores = [max(0.0, min(1.0, c)) for c in cos]
        if not all(math.isfinite(c) for c in cos):
            out.append(not_applicable("embedding with a non-finite cosine"))
            continue
        out.append(Score(sum(scores) / len(scores), {"passage_scores": scores, "cosines": cos,
                                                     "model": embedder.model}))
    return out


embedding_context_relevance.batch = True  # type: ignore[attr-defined]
embedding_similarity.batch = True  # type: ignore[attr-defined]
embedding_relevance.batch = True  # type: ignore[attr-defined]

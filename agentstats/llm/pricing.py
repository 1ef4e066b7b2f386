"""Judge pricing: US dollars per call from a per-model price table."""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["DEFAULT_PRICES", "cost_usd"]

#: List prices in US dollars per 1M tokens ``(input, output)``, as published on openai.com/api/pricing in 2025.
#: Prices change: pass ``prices=`` to :class:`OpenAIJudge` for your provider. A model not found (exactly, or by
#: the longest ``name-`` prefix, so ``gpt-4o-2024-08-06`` uses ``gpt-4o``) gets ``cost_usd=None``, never 0.
DEFAULT_PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "o3-mini": (1.10, 4.40),
}


def cost_usd(model: str, prompt_tokens: int | None, completion_tokens: int | None,
             prices: Mapping[str, tuple[float, float]] = DEFAULT_PRICES) -> float | None:
    """Cost in US dollars of a call: ``(prompt_tokens * in + completion_tokens * out) / 1e6``.

    ``prices`` maps a model name to ``(input, output)`` USD per 1M tokens; lookup is exact, then by the longest
    prefix ``p`` with ``model.startswith(p + "-")``. Unknown model or unknown token counts → ``None``.
    """
    if prompt_tokens is None or completion_tokens is None:
        return None
    price = prices.get(model)
    if price is None:
        cands = [p for p in prices if model.startswith(p + "-")]
        if cands:
            price = prices[max(cands, key=len)]
    if price is None:
        return None
    return (prompt_tokens * price[0] + completion_tokens * price[1]) / 1e6

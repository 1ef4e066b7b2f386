"""Wording shared by messages: a count with the right form of its noun."""

from __future__ import annotations

__all__ = ["plural"]


def plural(n: int, word: str, words: str | None = None) -> str:
    """``"1 agent"``, ``"2 agents"``, ``"1,000 trials"``: a count with the right form of its noun."""
    return f"{n:,} {word if n == 1 else (words or word + 's')}"

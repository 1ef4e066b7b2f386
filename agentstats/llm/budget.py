"""Money spent and reserved against an optional limit: the cost budget of the LLM client.

A call is *reserved* against the budget before it is sent, at a conservative estimate
(:meth:`agentstats.llm.client.LLMClient.estimate`), and *settled* at its actual cost when it ends. A call whose
estimate does not fit under what is left is not sent (:class:`BudgetExhausted`), so the limit is never exceeded as
long as the estimate bounds the real usage (the completion cap makes the completion part a hard bound).
"""

from __future__ import annotations

from agentstats.llm.cache import JudgeCache

__all__ = ["Budget", "BudgetExhausted", "WallTimeExceeded"]


class BudgetExhausted(RuntimeError):
    """A call was not sent: its estimated cost does not fit under what is left of the budget."""


class WallTimeExceeded(RuntimeError):
    """A call was not sent: the run's wall-time limit has passed."""


class Budget:
    """Money spent and reserved against an optional limit (US dollars).

    Parameters
    ----------
    limit : float or None
        ``max_total_cost_usd``; None: no limit (costs are still summed).
    spent : float
        Cost of the calls already made (from the run's cache on a resume).

    Notes
    -----
    ``reserve(estimate)`` is called before a request and fails when ``spent + reserved + estimate > limit``;
    ``settle(estimate, actual)`` releases the reservation and adds the actual cost. Calls whose cost is unknown (a
    model missing from the price table) are counted in ``unknown_cost_calls``; the loop refuses to start with a
    limit and an unpriced model, so under a limit every cost is known.
    """

    def __init__(self, limit: float | None, spent: float = 0.0):
        self.limit = limit
        self.spent = float(spent)
        self.reserved = 0.0
        self.unknown_cost_calls = 0
        self.refused = 0

    @classmethod
    def from_cache(cls, limit: float | None, cache: JudgeCache) -> Budget:
        """Return a budget whose ``spent`` is the sum of the costs recorded in ``cache``."""
        frame = cache.to_frame()
        spent = float(frame["cost_usd"].fillna(0).sum()) if "cost_usd" in frame else 0.0
        return cls(limit, spent)

    @property
    def left(self) -> float | None:
        """Money left (None without a limit)."""
        return None if self.limit is None else self.limit - self.spent - self.reserved

    def reserve(self, estimate: float) -> None:
        """Reserve ``estimate`` dollars for a call about to be sent.

        Raises
        ------
        BudgetExhausted
            When it does not fit; nothing is reserved.
        """
        if self.limit is not None and self.spent + self.reserved + estimate > self.limit + 1e-12:
            self.refused += 1
            raise BudgetExhausted(
                f"the next call (estimated ${estimate:.6f}) would exceed the budget of ${self.limit:g} "
                f"(${self.spent:.6f} spent, ${self.reserved:.6f} reserved by calls in flight)"
            )
        self.reserved += estimate

    def settle(self, estimate: float, actual: float | None) -> None:
        """Release a reservation and add the call's actual cost (None: unknown, counted)."""
        self.reserved = max(self.reserved - estimate, 0.0)
        if actual is None:
            self.unknown_cost_calls += 1
        else:
            self.spent += actual

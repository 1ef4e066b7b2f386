"""One colour per agent, the same in every figure (curves, forest plots, scoring bars, histograms).

The first ten are matplotlib's ``tab10``; further agents get the next colours of colorcet's ``glasbey_category10``
(Glasbey et al. 2007, "Colour displays for categorical images", Color Res. Appl. 32(4):304-309: each colour chosen
to be as distinct as possible from those already used), never a lighter shade of a colour in use, as ``tab20``'s
pairs are. Beyond the palette's 256 colours they repeat.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["agent_colors"]


def agent_colors(agents: Sequence[Any]) -> dict[Any, tuple[float, float, float]]:
    """One distinct colour per agent.

    Parameters
    ----------
    agents : sequence
        Agent names, in the order of the legend.

    Returns
    -------
    dict
        Agent -> RGB tuple in [0, 1].
    """
    import colorcet

    palette = colorcet.glasbey_category10
    rgb = [palette[i % len(palette)] for i in range(len(agents))]
    return {a: (float(c[0]), float(c[1]), float(c[2])) for a, c in zip(agents, rgb, strict=True)}

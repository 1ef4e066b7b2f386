"""Choosing agents while loading: ``agents="a,b"``, ``agents="!human"``, ``agents="gpt-*,!gpt-3.5*"``.

A selection is a comma-separated list of agent names or shell-style patterns (``*``, ``?``, ``[...]``, matched
by :func:`fnmatch.fnmatchcase`, so case matters). An entry starting with ``!`` excludes; the others include.
With at least one include, the agents kept are those matching an include and no exclude; with excludes only,
every agent but the excluded ones. A list of such strings works the same (``["!human"]``).

Every entry must match at least one agent in the data: a misspelled name is an error that lists the agents
present, never a silent no-op. A selection that keeps no agent is an error too. The file is checked as a
whole (a malformed record is a problem whatever its agent); the selection then picks among the valid
records.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase

from agentstats._util.options import option_name

__all__ = ["AgentSelection"]

_MAX_LISTED = 20


@dataclass(frozen=True)
class AgentSelection:
    """Which agents to keep (see the module docstring for the syntax).

    Attributes
    ----------
    include, exclude : tuple of str
        Names or patterns; an empty ``include`` keeps every agent not excluded.
    spec : str
        The selection as given, for messages.
    """

    include: tuple[str, ...]
    exclude: tuple[str, ...]
    spec: str

    @classmethod
    def parse(cls, spec: str | Sequence[str] | AgentSelection | None) -> AgentSelection | None:
        """Parse ``"a,b"`` / ``"!human"`` / ``["a", "!b"]``; ``None`` stays ``None`` (all agents).

        Raises
        ------
        ValueError
            For an empty selection or an empty entry (``"a,,b"``, ``"!"``).
        """
        if spec is None:
            return None
        if isinstance(spec, AgentSelection):
            return spec
        items = spec.split(",") if isinstance(spec, str) else [p for s in spec for p in str(s).split(",")]
        text = spec if isinstance(spec, str) else ",".join(map(str, spec))
        include: list[str] = []
        exclude: list[str] = []
        for raw in items:
            item = raw.strip()
            neg = item.startswith("!")
            name = item[1:].strip() if neg else item
            if not name:
                raise ValueError(
                    f"{option_name('agents', text)}: empty entry; give agent names or patterns separated by commas, "
                    "'!' before a name to exclude it (e.g. 'a,b' or '!human')"
                )
            (exclude if neg else include).append(name)
        return cls(tuple(include), tuple(exclude), text)

    def keep(self, agents: Iterable[str], source: str = "the data") -> set[str]:
        """Return the agents of ``agents`` that this selection keeps.

        Raises
        ------
        ValueError
            When an entry matches no agent (the agents present are listed) or nothing is left.
        """
        present = sorted(set(agents))
        unmatched = [p for p in (*self.include, *self.exclude) if not any(fnmatchcase(a, p) for a in present)]
        if unmatched:
            listed = ", ".join(present[:_MAX_LISTED]) + (", ..." if len(present) > _MAX_LISTED else "")
            raise ValueError(
                f"{option_name('agents', self.spec)}: {', '.join(map(repr, unmatched))} "
                f"{'matches' if len(unmatched) == 1 else 'match'} no agent in {source} (agents: {listed})"
            )
        kept = {a for a in present if not self.include or any(fnmatchcase(a, p) for p in self.include)}
        kept = {a for a in kept if not any(fnmatchcase(a, p) for p in self.exclude)}
        if not kept:
            raise ValueError(
                f"{option_name('agents', self.spec)} keeps no agent of {source} (agents: {', '.join(present)})"
            )
        return kept

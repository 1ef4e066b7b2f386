"""The versioned prompt: :class:`PromptTemplate` (name, human-set version, text hash, chat messages).

Every prompt agentstats sends to a model is one of these. Its ``name``, ``version`` and ``text_hash`` (SHA-256 of the
exact text) are recorded with each reply and enter the response cache key, so editing a prompt's wording without
bumping its version still invalidates cached replies, and a report can always say which prompt produced a number.
"""

from __future__ import annotations

import hashlib
import string
from dataclasses import dataclass, field

__all__ = ["PromptTemplate"]


@dataclass(frozen=True)
class PromptTemplate:
    """A prompt: a system message and a user message with ``{field}`` placeholders.

    Parameters
    ----------
    name : str
        What the prompt asks (a metric such as ``"answer_correctness"``, or ``"prompt_revision"``).
    version : str
        Human-set version; bump it when the meaning of the prompt changes.
    system : str
        System message (no placeholders).
    user : str
        User message, a :meth:`str.format` template over :attr:`fields`.
    fields : tuple of str
        Placeholders the user template needs (derived from ``user`` when omitted).

    Raises
    ------
    ValueError
        When ``fields`` is given and differs from the placeholders of ``user``.

    Notes
    -----
    ``text_hash`` is the SHA-256 of ``name``, ``version``, ``system`` and ``user`` joined by NUL bytes (first 16
    hex digits). ``id`` is ``"name@version#hash"``.
    """

    name: str
    version: str
    system: str
    user: str
    fields: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        found = tuple(dict.fromkeys(f for _, f, _, _ in string.Formatter().parse(self.user) if f))
        if not self.fields:
            object.__setattr__(self, "fields", found)
        elif set(found) != set(self.fields):
            raise ValueError(f"prompt {self.name}: placeholders {found} differ from declared fields {self.fields}")

    @property
    def text_hash(self) -> str:
        """First 16 hex digits of the SHA-256 of the prompt's name, version and text."""
        blob = "\x00".join([self.name, self.version, self.system, self.user]).encode("utf-8")
        return hashlib.sha256(blob).hexdigest()[:16]

    @property
    def id(self) -> str:
        """``"name@version#text_hash"``."""
        return f"{self.name}@{self.version}#{self.text_hash}"

    def render(self, **values: object) -> list[dict[str, str]]:
        """Chat messages ``[{"role": "system", ...}, {"role": "user", ...}]`` for the given field values.

        Raises
        ------
        KeyError
            When a placeholder has no value (the message names it).
        """
        missing = [f for f in self.fields if f not in values]
        if missing:
            raise KeyError(f"prompt {self.id} needs values for {missing}")
        text = self.user.format(**{k: _text(values[k]) for k in self.fields})
        return [{"role": "system", "content": self.system}, {"role": "user", "content": text}]


def _text(value: object) -> str:
    if value is None:
        return "(none)"
    return str(value)

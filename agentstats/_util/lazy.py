"""Lazy public names of a package (PEP 562): each is imported from its module on first use.

``import agentstats`` and ``import agentstats.estimators.metric_means`` stay fast this way: PyMC (several seconds
to import) loads only when a name that needs it is used.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_attributes"]


def lazy_attributes(package: str, names: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """Return a module ``__getattr__`` and ``__dir__`` for ``package`` that import ``name`` from ``names[name]``.

    Parameters
    ----------
    package : str
        The module's ``__name__`` (its globals receive each name once imported, so it is looked up once).
    names : mapping of str to str
        Public name -> the module (dotted path) that defines it.

    Returns
    -------
    (__getattr__, __dir__)
        Assign them at module level. ``__getattr__`` raises ``AttributeError`` for a name not in ``names``.
    """

    def __getattr__(name: str) -> Any:
        source = names.get(name)
        if source is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(source), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(names))

    return __getattr__, __dir__

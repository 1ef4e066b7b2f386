"""The declared shape of a saved fit: which groups, variables, dims and attributes a fit's DataTree must have.

A fit is checked against its schema when it is read back (:meth:`agentstats.models.result.Fit.load`,
:meth:`~agentstats.models.result.Fit.from_datatree`), so a file that is not a fit of agentstats, or one cut short,
is refused with every problem named instead of failing later inside a computation. The shape follows
pymc-marketing's ``data/idata/schema.py`` (a variable schema with name, dims and dtype; a group schema; a model
schema with ``validate() -> list[str]`` and ``validate_or_raise``), written with dataclasses.

:data:`FIT_SCHEMA` is what every fit has; :meth:`FitSchema.for_family` adds the posterior variables a family always
samples (:attr:`agentstats.models.families.base.ModelFamily.posterior_core`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Literal

import xarray as xr

__all__ = ["FIT_SCHEMA", "FitSchema", "GroupSchema", "VariableSchema"]

_DRAWS = ("chain", "draw")


@dataclass(frozen=True)
class VariableSchema:
    """One variable of a group: its name, dims and dtype kinds.

    Attributes
    ----------
    name : str
    dims : tuple of str, or "*"
        The dims in order; ``"*"`` accepts any.
    kinds : str
        Accepted numpy dtype kinds (``"f"`` float, ``"i"``/``"u"`` integer, ``"b"`` bool); empty: any.
    required : bool
    """

    name: str
    dims: tuple[str, ...] | Literal["*"]
    kinds: str = ""
    required: bool = True

    def validate(self, data: xr.DataArray, group: str) -> list[str]:
        """Problems of ``data`` against this schema (empty when it conforms)."""
        errors = []
        if self.dims != "*" and tuple(data.dims) != self.dims:
            errors.append(f"{group}/{self.name} has dims {tuple(data.dims)}, expected {self.dims}")
        if self.kinds and data.dtype.kind not in self.kinds:
            errors.append(f"{group}/{self.name} has dtype {data.dtype}, expected kind {' or '.join(self.kinds)}")
        return errors


@dataclass(frozen=True)
class GroupSchema:
    """One group of the DataTree and the variables it must hold."""

    name: str
    variables: tuple[VariableSchema, ...] = ()
    required: bool = True

    def validate(self, dt: xr.DataTree) -> list[str]:
        """Problems of the group in ``dt`` (a missing required group, missing or malformed variables)."""
        if self.name not in dt.children:
            return [f"group {self.name!r} is missing"] if self.required else []
        ds = dt[self.name].to_dataset()
        errors = []
        for var in self.variables:
            if var.name not in ds:
                if var.required:
                    errors.append(f"{self.name}/{var.name} is missing")
                continue
            errors.extend(var.validate(ds[var.name], self.name))
        return errors


@dataclass(frozen=True)
class FitSchema:
    """The groups and root attributes of a fit's DataTree.

    Attributes
    ----------
    groups : tuple of GroupSchema
    attrs : tuple of str
        Root attributes every fit has (:meth:`agentstats.models.result.Fit.to_attrs` writes them).
    """

    groups: tuple[GroupSchema, ...]
    attrs: tuple[str, ...] = ()

    def validate(self, dt: xr.DataTree) -> list[str]:
        """Every problem of ``dt`` against the schema (empty when it conforms)."""
        errors = [f"attribute {a!r} is missing" for a in self.attrs if a not in dt.attrs]
        for group in self.groups:
            errors.extend(group.validate(dt))
        return errors

    def validate_or_raise(self, dt: xr.DataTree, source: str = "the DataTree") -> None:
        """Raise when :meth:`validate` finds a problem.

        Raises
        ------
        ValueError
            Naming ``source`` and listing every problem.
        """
        errors = self.validate(dt)
        if errors:
            raise ValueError(f"{source} is not a fit of agentstats.fit:\n  - " + "\n  - ".join(errors))

    def for_family(self, core: Mapping[str, tuple[str, ...]]) -> FitSchema:
        """Return the schema with the posterior variables ``core`` (name -> dims after ``chain, draw``) required."""
        extra = tuple(VariableSchema(v, (*_DRAWS, *dims), "f") for v, dims in core.items())
        groups = tuple(replace(g, variables=g.variables + extra) if g.name == "posterior" else g for g in self.groups)
        return replace(self, groups=groups)


_COUNTS = ("agent", "task")
#: What every fit of :func:`agentstats.models.fitting.fit` has: the posterior, the counts it was made on, the
#: sampler's statistics (MCMC fits) and the attributes that identify the model and the run.
FIT_SCHEMA = FitSchema(
    groups=(
        GroupSchema("posterior"),
        GroupSchema(
            "constant_data",
            (
                VariableSchema("n_trials", _COUNTS, "iu"),
                VariableSchema("n_success", _COUNTS, "iu"),
                VariableSchema("cell_present", _COUNTS, "biu", required=False),  # fits before it existed: n > 0
                VariableSchema("n_min", ("agent",), "iu", required=False),
                VariableSchema("n_max", ("agent",), "iu", required=False),
            ),
        ),
        GroupSchema("sample_stats", (VariableSchema("diverging", _DRAWS, "bi", required=False),), required=False),
        GroupSchema("log_likelihood", (VariableSchema("c", (*_DRAWS, "cell"), "f"),), required=False),
    ),
    attrs=("agentstats_model", "sampler", "random_seed", "chains", "draws", "priors"),
)

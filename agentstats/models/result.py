"""The result of a fit: :class:`Fit` holds the family, the counts, the posterior and the run's provenance.

``agentstats.fit(counts)`` returns a :class:`Fit`; every consumer reads the family, the counts and the sampler's
settings from its fields, resolved once when the fit is made (or read back), never from string attributes.

* ``fit.family`` (:class:`~agentstats.models.families.base.ModelFamily`), ``fit.data``
  (:class:`~agentstats.models.data.CountsData`), ``fit.idata`` (the posterior ``xarray.DataTree``: groups
  ``posterior``, ``sample_stats``, ``constant_data``, ``observed_data``, optionally ``log_likelihood``),
  ``fit.sampler`` (:class:`SamplerInfo`), ``fit.priors``, ``fit.build`` (parameterization and effects),
  ``fit.judge_error``;
* ``fit.diagnostics()`` (R-hat, ESS, divergences; computed once and kept), ``fit.ppc()`` (posterior predictive check
  of per-cell counts), ``fit.summary()`` (the provenance as a JSON-ready dict);
* ``fit.save(path)`` / ``Fit.load(path)`` (a Zarr store), checked against the declared schema
  (:mod:`agentstats.models.schema`) when read back; :meth:`Fit.from_datatree` reads a fit's DataTree, also one saved
  by an earlier version of agentstats (the attributes are the same).

pass@k / pass^k, consistency and re-run predictions are computed from a fit by :mod:`agentstats.posterior`
(``posterior_pass_k(fit, k)``, ``consistency(fit=fit)``, ``predict_rerun(fit, n)``): the posterior layer sits above
the models, so those are functions of a :class:`Fit` rather than its methods.

The attributes of ``fit.idata`` are written in one place (:meth:`Fit.to_attrs`) and read in one place
(:meth:`Fit.from_datatree`), as pymc-marketing's ``ModelIO`` does.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from agentstats.calibration.judge_error import JudgeError
from agentstats.files.atomic import atomic_dir
from agentstats.intervals import CI_PROB, DEFAULT_SEED
from agentstats.models.data import CountsData, counts_dataset, counts_from_dataset
from agentstats.models.diagnostics import Diagnostics, PPCResult, diagnose, posterior_predictive_cells
from agentstats.models.families.base import BuildInfo, ModelFamily
from agentstats.models.families.registry import family_from_attrs
from agentstats.models.priors import Priors
from agentstats.models.schema import FIT_SCHEMA

__all__ = ["SCHEMA_VERSION", "Fit", "SamplerInfo"]

#: Version of the layout :meth:`Fit.to_attrs` writes (``attrs["agentstats_fit_schema"]``); fits without it are
#: version 1, the same layout.
SCHEMA_VERSION = 1


@dataclass(frozen=True)
class SamplerInfo:
    """How a fit was drawn.

    Attributes
    ----------
    sampler : str
        ``"nutpie"``, ``"numpyro"``, ``"pymc"``, ``"exact"`` (no MCMC: ``no_pooling``) or ``"laplace"`` (no sampler:
        the Laplace tier, :mod:`agentstats.models.laplace`).
    chains, draws, tune : int
        Chains, posterior draws kept per chain, tuning steps per chain.
    draws_max : int
        The most draws per chain the run could take (larger than ``draws`` when it stopped once converged).
    target_accept : float
        NUTS target acceptance rate.
    random_seed : int
        The seed; the same seed, data and sampler give the same draws.
    checkpoints : tuple of dict
        The stopping rule's checkpoints (``draws``, ``passed``, ``max_r_hat``, ``min_ess``) and an abandoned centred
        attempt (``abandoned``, ``divergences``, ``reason``), in order.
    nutpie_kwargs : dict
        Settings passed to nutpie's sampler.
    versions : dict
        Package versions of the run.
    compile_seconds : float or None
        nutpie's compile time, when it compiled.
    method : str
        The inference method (:data:`agentstats.models.laplace.METHODS`): ``"nuts"`` (a Markov chain per chain),
        ``"laplace"`` (independent draws of the Laplace tier) or ``"exact"`` (independent exact draws).
    laplace : dict
        The Laplace tier's checks (``grad_norm``, ``quadrature_error``, ``min_eigenvalue``, ...); empty otherwise.
    """

    sampler: str
    chains: int
    draws: int
    tune: int
    draws_max: int
    target_accept: float
    random_seed: int
    checkpoints: tuple[dict[str, Any], ...] = ()
    nutpie_kwargs: dict[str, Any] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)
    compile_seconds: float | None = None
    method: str = "nuts"
    laplace: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """The inference method in a few words, for a table's title.

        ``"NUTS"``, ``"Laplace tier (not MCMC)"`` or ``"exact draws"`` (:meth:`describe` gives the settings too).
        """
        return {"laplace": "Laplace tier (not MCMC)", "exact": "exact draws"}.get(self.method, "NUTS")

    def describe(self) -> str:
        """How the draws were made, in one phrase for every printed number (the CLI's fit output, the report).

        NUTS: ``"NUTS (nutpie), 4 chains x 300 tuning + 1000 draws, target_accept 0.85"``; Laplace: ``"Laplace tier
        (not MCMC), 2000 independent draws"``; exact: ``"exact draws, 4 x 2000"``.
        """
        if self.method == "laplace":
            return (f"Laplace tier (not MCMC: Gaussian hyperparameters, task effects by quadrature), "
                    f"{self.chains * self.draws} independent draws")
        if self.method == "exact":
            return f"exact draws, {self.chains} x {self.draws}"
        return (f"NUTS ({self.sampler}), {self.chains} chains x {self.tune} tuning + {self.draws} draws, "
                f"target_accept {self.target_accept}")

    @property
    def abandoned(self) -> list[dict[str, Any]]:
        """Abandoned attempts among the checkpoints (a centred dispersion that diverged and was refitted)."""
        return [c for c in self.checkpoints if c.get("abandoned")]

    @property
    def stops(self) -> list[dict[str, Any]]:
        """The stopping rule's checkpoints (not the abandoned attempts)."""
        return [c for c in self.checkpoints if not c.get("abandoned")]


def _json(attrs: Mapping[str, Any], key: str, default: Any) -> Any:
    text = attrs.get(key)
    return json.loads(text) if text else default


@dataclass(frozen=True, eq=False)
class Fit:
    """A fitted model of agent x task counts (module docstring).

    Attributes
    ----------
    family : ModelFamily
        The statistical model, with its options.
    data : CountsData
        The counts it was fitted to (agent x task arrays).
    idata : xarray.DataTree
        The posterior and its provenance (:meth:`to_attrs`).
    sampler : SamplerInfo
    priors : Priors
    build : BuildInfo
        The parameterization chosen per level, the ratios behind it, and whether the model has agent effects and a
        within-cell term.
    judge_error : JudgeError or None
        The judge's measured error rates when the counts were modelled as judged counts.
    """

    family: ModelFamily
    data: CountsData
    idata: xr.DataTree
    sampler: SamplerInfo
    priors: Priors
    build: BuildInfo
    judge_error: JudgeError | None = None
    _cache: dict[Any, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    # ---------------------------------------------------------------------------------------------- making
    @classmethod
    def assemble(
        cls,
        family: ModelFamily,
        data: CountsData,
        idata: xr.DataTree,
        sampler: SamplerInfo,
        priors: Priors,
        build: BuildInfo,
        judge_error: JudgeError | None = None,
    ) -> Fit:
        """Make a fit from a sampler's DataTree: store the counts (``constant_data``) and the attributes in it."""
        cdata = counts_dataset(data)
        if "constant_data" in idata.children:
            idata["constant_data"] = idata["constant_data"].to_dataset().merge(cdata)
        else:
            idata["constant_data"] = cdata
        out = cls(family, data, idata, sampler, priors, build, judge_error)
        idata.attrs.update(out.to_attrs())
        return out

    def to_attrs(self) -> dict[str, Any]:
        """Return the root attributes of :attr:`idata` (numbers and JSON strings: the DataTree saves as it is).

        ``agentstats_model``, ``dispersion``, ``p_draws`` (and the family's options, e.g. ``det_by_agent``),
        ``sampler``, ``versions``, ``parameterization``, ``parameterization_ratios``, ``priors``, ``counts_hash``,
        ``random_seed``, ``draws``, ``tune``, ``draws_max``, ``checkpoints``, ``chains``, ``target_accept``,
        ``nutpie_kwargs``, ``has_agent_effect``, ``has_cell_effect`` (0/1), ``agentstats_fit_schema``, ``method``;
        the Laplace tier's checks ``laplace`` (JSON); with a
        judge calibration ``judge_calibration``; after a nutpie compile ``compile_seconds``.
        """
        s = self.sampler
        out: dict[str, Any] = self.family.to_attrs() | {
            "sampler": s.sampler,
            "versions": json.dumps(s.versions, sort_keys=True),
            "parameterization": json.dumps(self.build.parameterization, sort_keys=True),
            "parameterization_ratios": json.dumps(
                {k: round(v, 4) for k, v in self.build.parameterization_ratios.items()}
            ),
            "priors": json.dumps(self.priors.as_dict(), sort_keys=True),
            "counts_hash": self.data.hash,
            "random_seed": int(s.random_seed),
            "draws": int(s.draws),
            "tune": int(s.tune),
            "draws_max": int(s.draws_max),
            "checkpoints": json.dumps(list(s.checkpoints)),
            "chains": int(s.chains),
            "target_accept": float(s.target_accept),
            "nutpie_kwargs": json.dumps(s.nutpie_kwargs, sort_keys=True, default=str),
            "has_agent_effect": int(self.build.has_agent_effect),
            "has_cell_effect": int(self.build.has_cell_effect),
            "agentstats_fit_schema": SCHEMA_VERSION,
            "method": s.method,
        }
        if s.laplace:
            out["laplace"] = json.dumps(s.laplace, sort_keys=True)
        if s.compile_seconds is not None:
            out["compile_seconds"] = round(float(s.compile_seconds), 2)
        if self.judge_error is not None:
            out["judge_calibration"] = self.judge_error.to_json()
        return out

    @classmethod
    def from_datatree(cls, dt: xr.DataTree, source: str = "the DataTree") -> Fit:
        """Read a fit from its DataTree (as :attr:`idata`), checking it against the fit schema.

        Reads fits written by earlier versions too (same attributes; a Beta-Binomial or ``partial_pooling`` fit made
        before per-agent dispersion existed is read as shared).

        Raises
        ------
        ValueError
            Listing every way ``dt`` differs from the schema (:mod:`agentstats.models.schema`), or an unknown model.
        """
        FIT_SCHEMA.validate_or_raise(dt, source)
        attrs = {str(k): v for k, v in dt.attrs.items()}
        family = family_from_attrs(attrs)
        FIT_SCHEMA.for_family(family.posterior_core).validate_or_raise(dt, source)
        draws = int(attrs["draws"])
        sampler = SamplerInfo(
            sampler=str(attrs["sampler"]),
            chains=int(attrs["chains"]),
            draws=draws,
            tune=int(attrs.get("tune", 0)),
            draws_max=int(attrs.get("draws_max", draws)),
            target_accept=float(attrs.get("target_accept", np.nan)),
            random_seed=int(attrs["random_seed"]),
            checkpoints=tuple(_json(attrs, "checkpoints", [])),
            nutpie_kwargs=_json(attrs, "nutpie_kwargs", {}),
            versions=_json(attrs, "versions", {}),
            compile_seconds=float(attrs["compile_seconds"]) if "compile_seconds" in attrs else None,
            # fits made before the Laplace tier existed: NUTS, or exact draws
            method=str(attrs.get("method") or ("exact" if str(attrs["sampler"]) == "exact" else "nuts")),
            laplace=_json(attrs, "laplace", {}),
        )
        build = BuildInfo(
            parameterization=_json(attrs, "parameterization", {}),
            parameterization_ratios=_json(attrs, "parameterization_ratios", {}),
            has_agent_effect=bool(int(attrs.get("has_agent_effect", 0))),
            has_cell_effect=bool(int(attrs.get("has_cell_effect", 0))),
        )
        try:
            priors = Priors(**json.loads(attrs["priors"]))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{source}: its priors attribute cannot be read ({exc})") from None
        judge = JudgeError.from_json(attrs["judge_calibration"]) if attrs.get("judge_calibration") else None
        data = counts_from_dataset(dt["constant_data"].to_dataset(), str(attrs.get("counts_hash", "")))
        return cls(family, data, dt, sampler, priors, build, judge)

    # ---------------------------------------------------------------------------------------------- files
    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the fit to ``path`` as a Zarr store (a folder; ``xarray.DataTree.to_zarr``), replacing none.

        The store is written to a temporary folder beside ``path`` and renamed into place when complete
        (:func:`agentstats.files.atomic.atomic_dir`): a failure or an interrupt while writing leaves nothing at
        ``path``, never a partial fit.

        Raises
        ------
        FileExistsError
            If ``path`` exists.
        """
        if os.path.exists(path):
            raise FileExistsError(f"{os.fspath(path)} exists; give a new path for the fit")
        with atomic_dir(path) as tmp:
            self.idata.to_zarr(os.fspath(tmp), consolidated=False, mode="w")

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Fit:
        """Read a fit written by :meth:`save`, checked against the fit schema.

        Raises
        ------
        FileNotFoundError
            If ``path`` does not exist.
        ValueError
            If it is not a fit of agentstats (every problem is listed).
        """
        if not os.path.exists(path):
            raise FileNotFoundError(f"{os.fspath(path)}: no such fit")
        dt = xr.open_datatree(os.fspath(path), engine="zarr", consolidated=False).load()
        return cls.from_datatree(dt, source=os.fspath(path))

    # ---------------------------------------------------------------------------------------------- reading
    @cached_property
    def posterior(self) -> xr.Dataset:
        """The posterior group as a Dataset (dims ``chain, draw`` and ``agent`` / ``task`` / ``cell`` as they have)."""
        return self.idata["posterior"].to_dataset()

    @property
    def random_seed(self) -> int:
        """The fit's seed (:attr:`SamplerInfo.random_seed`)."""
        return self.sampler.random_seed

    def rng(self, stream: int) -> np.random.Generator:
        """Return a generator for one purpose (``stream``), seeded from the fit's seed, independent of other streams."""
        return np.random.default_rng(np.random.SeedSequence([int(self.random_seed), int(stream)]))

    def diagnostics(self) -> Diagnostics:
        """R-hat, bulk and tail ESS and divergences against the default thresholds (computed once, then kept).

        :func:`agentstats.models.diagnostics.diagnose` with the family's sampled parameters; call it directly for
        other thresholds.
        """
        if "diagnostics" not in self._cache:
            self._cache["diagnostics"] = diagnose(self)
        return self._cache["diagnostics"]

    def ppc(
        self, counts: pd.DataFrame | None = None, *, n_draws: int | None = 500, random_seed: int = DEFAULT_SEED,
        ci_prob: float = CI_PROB,
    ) -> PPCResult:
        """Check per-cell counts against the posterior predictive.

        :func:`agentstats.models.diagnostics.posterior_predictive_cells` of this fit.
        """
        return posterior_predictive_cells(self, counts, n_draws=n_draws, random_seed=random_seed, ci_prob=ci_prob)

    def summary(self) -> dict[str, Any]:
        """Return the fit's provenance as a JSON-ready dict.

        Keys ``model``, ``dispersion`` (``"none"`` for a family without one), ``method``, ``sampler``, ``chains``,
        ``draws``,
        ``tune``, ``draws_max``, ``target_accept`` (None without NUTS), ``random_seed``, ``checkpoints`` (list of
        dicts).
        """
        s = self.sampler
        return {
            "method": s.method,
            "sampler": s.sampler,
            "model": self.family.name,
            "dispersion": self.family.dispersion or "none",
            "target_accept": s.target_accept if np.isfinite(s.target_accept) else None,  # None: no NUTS (Laplace)
            "chains": s.chains,
            "draws": s.draws,
            "tune": s.tune,
            "draws_max": s.draws_max,
            "checkpoints": [dict(c) for c in s.checkpoints],
            "random_seed": s.random_seed,
        }

    def __repr__(self) -> str:
        s = self.sampler
        disp = f" (dispersion {self.family.dispersion})" if self.family.dispersion else ""
        return (f"Fit({self.family.name}{disp}, {len(self.data.agents)} agents x {len(self.data.tasks)} tasks, "
                f"{s.describe()}, seed {s.random_seed})")

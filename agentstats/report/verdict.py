"""Whether a report's Bayesian fit can be read: :class:`FitVerdict`, the one verdict every part of a report shows.

:func:`agentstats.report.build.build_report` makes it from the fit's convergence diagnostics and its posterior
predictive check; the summary (:func:`agentstats.report.prose.report_summary`) opens with a failed one and makes no
claim from that posterior, the Bayesian section says it above its tables, and the executed notebook carries it in
its metadata (:data:`agentstats.report.display.CHECKS_KEY`) for ``agentstats report`` to print it and, with
``--strict``, exit 3.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentstats.models.diagnostics import Diagnostics, PPCResult

__all__ = ["FitVerdict"]


@dataclass(frozen=True)
class FitVerdict:
    """Whether the Bayesian fit can be read: the one verdict the summary, the Bayesian section and the CLI show.

    A fit is usable when it converged (R-hat, ESS, divergences) and its posterior predictive check found no
    statistic of the data the model misses (:meth:`agentstats.models.diagnostics.PPCResult.misfits`). A fit that is
    not usable opens the summary, no claim is made from its posterior, and ``agentstats report --strict`` exits 3.

    Attributes
    ----------
    converged : bool
        R-hat, ESS and divergences all within the thresholds (:meth:`agentstats.models.result.Fit.diagnostics`).
    problems : tuple of str
        What failed in the convergence checks, in words (empty when converged).
    misfits : tuple of (str, float)
        Statistics the posterior predictive check flags, with their posterior predictive p-value (empty when the
        model reproduces the data).
    ppc_alpha : float
        The check's family-wise false-alarm rate (:data:`agentstats.models.diagnostics.PPC_ALPHA`).
    """

    converged: bool
    problems: tuple[str, ...] = ()
    misfits: tuple[tuple[str, float], ...] = ()
    ppc_alpha: float = 0.05

    @classmethod
    def of(cls, diagnostics: Diagnostics, ppc: PPCResult | None = None) -> FitVerdict:
        """Read the verdict from a fit's diagnostics and posterior predictive check."""
        from agentstats.models.diagnostics import PPC_ALPHA

        bad = ppc.misfits(PPC_ALPHA) if ppc is not None else None
        misfits = tuple(zip(bad["statistic"], bad["p_value"], strict=True)) if bad is not None else ()
        return cls(converged=bool(diagnostics.ok), problems=tuple(diagnostics.problems),
                   misfits=tuple((str(n), float(v)) for n, v in misfits), ppc_alpha=PPC_ALPHA)

    @property
    def fits(self) -> bool:
        """Whether the posterior predictive check found nothing the model misses."""
        return not self.misfits

    @property
    def ok(self) -> bool:
        """Whether the fit can be read: converged and its posterior predictive check passed."""
        return self.converged and self.fits

    def headline(self) -> str:
        """Say in a few words whether the fit can be read (``"The Bayesian fit failed its checks"``)."""
        if self.ok:
            return "The Bayesian fit passed its checks"
        which = ("convergence checks and its posterior predictive check" if not (self.converged or self.fits)
                 else "convergence checks" if not self.converged else "posterior predictive check")
        return f"The Bayesian fit failed its {which}"

    def reason(self) -> str:
        """Say what failed, one line of plain text (empty when it passed): the first three problems, the misfits' p."""
        problems = [p.strip().rstrip(".") for p in self.problems]
        parts = problems[:3] + ([f"{len(problems) - 3} more variables"] if len(problems) > 3 else [])
        if self.misfits:
            shown = "; ".join(f"{_statistic_words(n)} p = {v:.3f}" for n, v in self.misfits[:4])
            more = f" and {len(self.misfits) - 4} more" if len(self.misfits) > 4 else ""
            parts.append(f"the model does not reproduce the data ({shown}{more})")
        return "; ".join(parts)

    def as_record(self) -> dict[str, Any]:
        """Return the verdict as a JSON-ready dict (the executed notebook's metadata, ``report --strict``)."""
        return {"ok": self.ok, "converged": self.converged, "problems": list(self.problems),
                "ppc_ok": self.fits, "ppc_alpha": self.ppc_alpha,
                "ppc_misfits": [{"statistic": n, "p_value": v} for n, v in self.misfits],
                "message": f"{self.headline()}: {self.reason()}" if not self.ok else self.headline()}


def _statistic_words(name: str) -> str:
    """Name a posterior predictive statistic in words, plain text (as :func:`agentstats.report.plots.ppc_label`)."""
    words = {"cells_all_fail": "cells never solved", "cells_all_success": "cells always solved",
             "within_task_var": "spread between agents within a task"}
    if name.startswith("flip_share[") and name.endswith("]"):
        return f"tasks with mixed outcomes of {name[len('flip_share[') : -1]}"
    return words.get(name, name)

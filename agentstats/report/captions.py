"""Sentences that caption one section of the report: grid gaps, the fit's status, the judge's calibration, a table.

Every string from the data is escaped for Markdown (:func:`agentstats._util.markup.md_text`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from agentstats._util.markup import md_code, md_text

if TYPE_CHECKING:  # the fit's types only: describing a fit needs no PyMC import
    from agentstats.calibration.agreement import MetricCalibration
    from agentstats.models.result import Fit
    from agentstats.report.verdict import FitVerdict

__all__ = ["calibration_sentence", "fit_status", "forest_caption", "grid_gaps_note", "ppc_verdict", "verdict_banner"]


def grid_gaps_note(counts: pd.DataFrame, limit: int = 10) -> str:
    """Say which trials are absent from the agent x task x trial grid (Markdown), for a report's data section.

    Parameters
    ----------
    counts : pandas.DataFrame
        A counts table whose ``attrs["gaps"]`` is a :class:`agentstats.records.gaps.GridGaps` (as from
        :func:`agentstats.to_counts` and :func:`agentstats.load`); without it (a counts table has no trial numbers)
        there is nothing to say.
    limit : int
        Cells named, at most.

    Returns
    -------
    str
        One Markdown paragraph, every name from the data escaped; empty when no trial is absent.
    """
    gaps = counts.attrs.get("gaps")
    if gaps is None or not gaps.n_cells:
        return ""
    return (
        f"**Not every trial is in the data:** {md_text(gaps.describe(limit=limit))}: they are neither failures nor "
        "missing trials, so the values of those agent × task cells rest on the trials that are there."
    )


def fit_status(fit: Fit) -> str:
    """One Markdown sentence on a Bayesian fit: model, sampler, size and whether its convergence checks passed.

    Parameters
    ----------
    fit : Fit
        The fit: its family, sampler settings (an abandoned first attempt among its checkpoints is named) and
        diagnostics (:meth:`~agentstats.models.result.Fit.diagnostics`).

    Returns
    -------
    str
        Markdown, every value from the fit escaped; it ends with exactly one period.
    """
    s, diag = fit.sampler, fit.diagnostics()
    refit = ""
    if s.abandoned:
        first = s.abandoned[0]
        refit = (
            f" A first attempt with a centred per-agent dispersion had {md_text(str(first.get('divergences', '?')))} "
            f"divergent transitions in its first {md_text(str(first.get('draws', '?')))} draws and was discarded; "
            "this is the non-centred refit with the same seed."
        )
    if diag.ok:
        status = "all thresholds met"
    else:
        said = "; ".join(p.strip().rstrip(".") for p in diag.problems) or "the diagnostics failed"
        status = (
            f"**NOT converged**: {md_text(said)}. Treat the numbers below with care; rerun with more draws "
            "(`agentstats report ... -p draws=4000`) or, on divergences, a higher `-p target_accept` (e.g. 0.99)"
        )
    if s.method == "laplace":
        checks = "its checks passed" if diag.ok else f"**its checks FAILED**: {md_text('; '.join(diag.problems))}"
        return (
            f"Model {md_code(fit.family.name)}, fitted by the **Laplace tier** (not MCMC: the hyperparameters from a "
            f"Gaussian at their marginal posterior mode, task effects integrated by quadrature; every number below "
            f"comes from its {s.chains * s.draws} independent draws); R-hat and ESS do not apply; {checks}.{refit}"
        )
    return (
        f"Model {md_code(fit.family.name)}, sampler {md_code(s.sampler)}, "
        f"{s.chains} chains × {s.draws} draws, target_accept {s.target_accept}; "
        f"divergences: {int(diag.divergences)}; R-hat ≤ 1.01, ESS ≥ 400: {status}.{refit}"
    )


def calibration_sentence(calibration: MetricCalibration, pct: str) -> str:
    """Say how well the judge agrees with the human labels of its calibration set (Markdown, one sentence).

    Parameters
    ----------
    calibration : MetricCalibration
        The metric's calibration: items, accuracy, Cohen's kappa, sensitivity and specificity with intervals.
    pct : str
        The credible intervals' probability as a label (``"95%"``).
    """
    se, sp = calibration.sensitivity, calibration.specificity
    if se is None or sp is None:
        raise ValueError(f"metric {calibration.metric!r} has no sensitivity and specificity (an ordinal metric)")
    return (
        f"Judge calibration of {md_code(calibration.metric)}: {calibration.n_items} labelled items, accuracy "
        f"{calibration.accuracy:.3f}, Cohen's kappa {calibration.kappa:.3f}, sensitivity {se['mean']:.3f} "
        f"[{se['lower']:.3f}, {se['upper']:.3f}], specificity {sp['mean']:.3f} [{sp['lower']:.3f}, "
        f"{sp['upper']:.3f}] ({pct} credible intervals)."
    )


def forest_caption(population: str, forest_ks: list[int], report_ks: list[int], pct: str) -> str:
    """Caption of the posterior pass^k table: which tasks, which k (the report's, and where the curves end), columns.

    Parameters
    ----------
    population : str
        ``"observed"`` or ``"new"``.
    forest_ks : list of int
        The k shown: the report's k and the last k of the curves.
    report_ks : list of int
        The report's k.
    pct : str
        The credible intervals' probability as a label (``"95%"``).
    """
    end = forest_ks[-1]
    return (
        f"**Posterior pass^k by agent and k** (`{md_text(population)}` tasks; k = "
        f"{', '.join(str(k) for k in forest_ks)}: the report's k"
        + (f" and k = {end}, where the curves above end" if end not in report_ks else "")
        + "): mean, median and the ends of the "
        f"{pct} credible interval (`eti`: equal-tailed, `hdi`: highest density); *n < k*: the agent's tasks "
        "with fewer trials than k (counted as in the table of unbiased estimates), whose value at that k comes from "
        "the model rather than observed k-runs."
    )


def verdict_banner(verdict: FitVerdict) -> str:
    """Say, above the Bayesian section of a fit that failed its checks, that its numbers are not results (Markdown).

    Parameters
    ----------
    verdict : FitVerdict
        The fit's verdict; the banner is for one that is not ``ok``.
    """
    return (
        f'<span class="agentstats-failed">**{md_text(verdict.headline())}: the numbers below are not results.**'
        f"</span> {md_text(verdict.reason())}. They are shown to diagnose the fit; the summary uses none of them. "
        "Rerun with more draws (`-p draws=4000`), on divergences a higher `-p target_accept` (e.g. 0.99), or, when "
        "the posterior predictive check fails, another model (`--bayes-model`, docs/models.md)."
    )


def ppc_verdict(verdict: FitVerdict, n_statistics: int) -> str:
    """Say what the posterior predictive check concludes (Markdown, one sentence), with its rule.

    Parameters
    ----------
    verdict : FitVerdict
        The fit's verdict (its misfitting statistics).
    n_statistics : int
        Statistics checked (``m`` of the rule).
    """
    rule = (f"a statistic fails when its two-sided p-value, 2 min(p, 1 - p), is below {verdict.ppc_alpha:g} / "
            f"{n_statistics}, so a model that fits is flagged in at most about {verdict.ppc_alpha:.0%} of data sets")
    if verdict.fits:
        return f"**Verdict: the model reproduces every statistic checked** ({rule})."
    return f'<span class="agentstats-failed">**Verdict: the model misses the data**</span> ({rule}).'

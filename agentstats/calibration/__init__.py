"""Judge calibration: how often a judge agrees with human labels, and carrying its errors into pass@k / pass^k.

* the calibration set (JSONL of item, metric, verdict, gold) is a record set of its own:
  :mod:`agentstats.records.calibration` (items and their checks), read with located errors by
  ``agentstats.load(path, format="calibration")`` (:mod:`agentstats.io.readers.calibration`);
* :mod:`~agentstats.calibration.agreement`: :func:`calibrate` -- accuracy, Cohen's kappa, sensitivity and
  specificity with Beta posteriors, ordinal confusion matrices; :func:`choose_calibration`, the one metric of a set
  that corrects a fit or a report;
* :mod:`~agentstats.calibration.judge_error`: :class:`JudgeError`, the Beta distributions of sensitivity and
  specificity that ``agentstats.fit(..., judge_calibration=...)`` draws from;
* :mod:`~agentstats.calibration.correction`: the frequentist side, Rogan-Gladen corrected pass@k / pass^k with
  bootstrap intervals over tasks and calibration counts;
* :mod:`~agentstats.calibration.pairwise`: :func:`pairwise_judge`, A-vs-B judging in both orders (position bias).

Layer: with scoring (it reads judge verdicts), below the models that use its :class:`JudgeError`.
"""

from agentstats.calibration.agreement import (
    CalibrationReport,
    MetricCalibration,
    calibrate,
    choose_calibration,
    cohen_kappa,
    confusion_matrix,
)
from agentstats.calibration.correction import (
    CORRECTED_COLUMNS,
    corrected_pass_k,
    corrected_task_pass_k,
    rogan_gladen,
)
from agentstats.calibration.judge_error import JudgeError
from agentstats.calibration.pairwise import PairwiseResult, pairwise_judge

__all__ = [
    "CORRECTED_COLUMNS",
    "CalibrationReport",
    "JudgeError",
    "MetricCalibration",
    "PairwiseResult",
    "calibrate",
    "choose_calibration",
    "cohen_kappa",
    "confusion_matrix",
    "corrected_pass_k",
    "corrected_task_pass_k",
    "pairwise_judge",
    "rogan_gladen",
]

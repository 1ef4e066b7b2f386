"""Judge calibration: how often a judge agrees with human labels, and carrying its errors into pass@k / pass^k.

* :mod:`~agentstats.calibration.data`: the calibration set format (JSONL of item, metric, verdict, gold) and its
  loader with located errors;
* :mod:`~agentstats.calibration.agreement`: :func:`calibrate` -- accuracy, Cohen's kappa, sensitivity and
  specificity with Beta posteriors, ordinal confusion matrices;
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
    cohen_kappa,
    confusion_matrix,
)
from agentstats.calibration.correction import (
    CORRECTED_COLUMNS,
    corrected_pass_k,
    corrected_task_pass_k,
    rogan_gladen,
)
from agentstats.calibration.data import CALIBRATION_COLUMNS, calibration_frame, load_calibration
from agentstats.calibration.judge_error import JudgeError
from agentstats.calibration.pairwise import PairwiseResult, pairwise_judge

__all__ = [
    "CALIBRATION_COLUMNS",
    "CORRECTED_COLUMNS",
    "CalibrationReport",
    "JudgeError",
    "MetricCalibration",
    "PairwiseResult",
    "calibrate",
    "calibration_frame",
    "cohen_kappa",
    "confusion_matrix",
    "corrected_pass_k",
    "corrected_task_pass_k",
    "load_calibration",
    "pairwise_judge",
    "rogan_gladen",
]

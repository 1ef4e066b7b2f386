"""The interval, k and seed vocabulary (agentstats.intervals): one default, one validator, one parser, one default k.

Expected values are written out by hand (k lists, medians of small tables), never computed by the code under test.
"""

from __future__ import annotations

import ast
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from agentstats._util.options import option_style
from agentstats.intervals import (
    CI_KINDS,
    CI_PROB,
    DEFAULT_K_MAX,
    FIT_K_FACTOR,
    K_MAX,
    as_ks,
    check_ci,
    check_k_reach,
    check_ks,
    ci_percent,
    default_ks,
    parse_k,
    resolve_random_seed,
    table_ci_prob,
)

PACKAGE = Path(__file__).resolve().parents[1] / "agentstats"


def _counts(cells: dict[tuple[str, str], int]) -> pd.DataFrame:
    return pd.DataFrame([{"agent": a, "task_id": t, "n": n, "c": 0} for (a, t), n in cells.items()])


# ------------------------------------------------------------------------------------------------ intervals
def test_the_one_default_and_the_kinds():
    assert CI_PROB == 0.95
    assert CI_KINDS == ("eti", "hdi")


def test_check_ci_accepts_and_returns_the_settings():
    assert check_ci(0.9, "hdi") == (0.9, "hdi")
    assert check_ci(np.float64(0.5), "eti") == (0.5, "eti")
    assert check_ci() == (0.95, "eti")


@pytest.mark.parametrize("prob", [0, 1, 1.5, -0.1, True, "x", None, math.nan])
def test_check_ci_refuses_a_probability_outside_the_open_unit_interval(prob):
    with pytest.raises(ValueError, match="ci_prob must be"):
        check_ci(prob, "eti", "f")


def test_check_ci_names_the_function_the_kinds_and_the_flag():
    with pytest.raises(ValueError, match=r"^g: ci_kind must be one of \['eti', 'hdi'\], got 'hpd'$"):
        check_ci(0.9, "hpd", "g")
    with pytest.raises(ValueError, match="equal-tailed: each tail holds"):
        check_ci(0.9, "hdi", "suite_pass_k", kinds=("eti",))
    with option_style("cli"), pytest.raises(ValueError, match=r"^--ci-prob must be in \(0, 1\), got 1\.5$"):
        check_ci(1.5, "eti")
    with option_style("cli"), pytest.raises(ValueError, match=r"^--ci-kind must be one of"):
        check_ci(0.9, "shortest")


def test_ci_labels():
    assert ci_percent(0.95) == "95%" and ci_percent(0.975) == "97.5%" and ci_percent(0.8) == "80%"
    assert table_ci_prob(pd.DataFrame({"ci_prob": [0.8, 0.8]})) == 0.8
    assert table_ci_prob(pd.DataFrame({"ci_prob": [0.8, 0.9]})) is None
    plain = pd.DataFrame({"x": [1]})
    assert table_ci_prob(plain) == 0.95
    plain.attrs["ci_prob"] = 0.5
    assert table_ci_prob(plain) == 0.5


def test_no_library_default_writes_its_own_ci_prob():
    """Every ``ci_prob`` default of a function, a dataclass or a config field names CI_PROB; none writes a number."""
    literal = []
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            pairs: list[tuple[str, ast.expr | None]] = []
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = node.args
                positional = args.posonlyargs + args.args
                pairs += list(zip([a.arg for a in positional[len(positional) - len(args.defaults):]], args.defaults,
                                  strict=True))
                pairs += [(a.arg, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)]
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                pairs.append((node.target.id, node.value))
            for name, default in pairs:
                if name == "ci_prob" and isinstance(default, ast.Constant) and default.value is not None:
                    literal.append(f"{path.relative_to(PACKAGE.parent)}:{default.lineno}")
    assert not literal, literal


# ------------------------------------------------------------------------------------------------ k values
def test_parse_k_reads_lists_ranges_and_mixes():
    assert parse_k("1,2,4") == [1, 2, 4]
    assert parse_k("1..3,8") == [1, 2, 3, 8]
    assert parse_k("4, 1-3, 3") == [1, 2, 3, 4]
    assert parse_k(None) is None and parse_k("  ") is None


@pytest.mark.parametrize(("spec", "why"), [
    ("0,1", "positive integers"), ("a", "cannot read 'a'"), ("5..1", "runs backwards; write 1..5"),
    ("1..100000", "10,000"), ("1..101", "more than 100"), ("1..10**12", "cannot read"),
])
def test_parse_k_raises_value_error_before_expanding(spec, why):
    with pytest.raises(ValueError, match=why):
        parse_k(spec)


def test_check_ks_and_as_ks():
    assert check_ks(None, "f") is None
    assert check_ks(3, "f") == [3]
    assert check_ks([4, 1, 4, 2.0], "f") == [1, 2, 4]
    for bad in ([], [0], [1.5], ["2"], [True]):
        with pytest.raises(ValueError, match=r"^f: "):
            check_ks(bad, "f")
    np.testing.assert_array_equal(as_ks([4, 1, 4]), [4, 1, 4])  # the order asked for, repeats kept
    assert as_ks(3).dtype == np.int64
    for bad in ([], [0], [K_MAX + 1], [1.5], [[1, 2]]):
        with pytest.raises(ValueError, match="k must"):
            as_ks(bad)


def test_default_ks_is_one_to_the_median_trials_capped():
    five = _counts({("a", f"t{i}"): 5 for i in range(4)} | {("b", f"t{i}"): 5 for i in range(4)})
    assert default_ks(five) == [1, 2, 3, 4, 5]  # equal trials per task: 1 .. n, no task dropped
    ten = _counts({("a", f"t{i}"): 10 for i in range(3)})
    assert default_ks(ten) == list(range(1, DEFAULT_K_MAX + 1))  # at most 8
    # METR-style: most tasks 8 runs, a few 1: the median (8), not the smallest n (1)
    metr = _counts({("a", f"t{i}"): 8 for i in range(9)} | {("a", "t9"): 1, ("b", "t0"): 8, ("b", "t1"): 8})
    assert default_ks(metr) == list(range(1, 9))
    # an agent whose largest n is 2 caps it: every agent keeps a task at every default k
    short = _counts({("a", f"t{i}"): 6 for i in range(6)} | {("b", "t0"): 2, ("b", "t1"): 1})
    assert default_ks(short) == [1, 2]
    # a median between two counts rounds down (cells 2, 3, 4, 5: median 3.5)
    assert default_ks(_counts({("a", "t0"): 2, ("a", "t1"): 3, ("a", "t2"): 4, ("a", "t3"): 5})) == [1, 2, 3]
    # cells without a trial do not count; none at all gives k = 1
    assert default_ks(_counts({("a", "t0"): 0, ("a", "t1"): 3, ("a", "t2"): 3})) == [1, 2, 3]
    assert default_ks(_counts({("a", "t0"): 0})) == [1]


def test_check_k_reach_estimators_and_model():
    counts = _counts({("a", "t0"): 3, ("a", "t1"): 2})
    check_k_reach([1, 3], counts, extrapolate=False, source="x.csv")
    with pytest.raises(ValueError, match=r"k 4: the largest number of trials per task in x.csv is 3.*k <= 3"):
        check_k_reach([4], counts, extrapolate=False, source="x.csv")
    check_k_reach([FIT_K_FACTOR * 3], counts, extrapolate=True, source="x.csv")  # 30: extrapolation the model answers
    with pytest.raises(ValueError, match=r"k 31: fit extrapolates up to 10 x .* \(3\), so k <= 30"):
        check_k_reach([31], counts, extrapolate=True, source="x.csv")
    one = _counts({("a", "t0"): 0 + 1})
    check_k_reach([DEFAULT_K_MAX], one, extrapolate=True, source="y")  # at least 8 for a model
    with option_style("cli"), pytest.raises(ValueError, match=r"^--k 2:"):
        check_k_reach([2], one, extrapolate=False, source="y")
    check_k_reach(None, counts, extrapolate=False, source="x.csv")


# ------------------------------------------------------------------------------------------------ seeds
def test_resolve_random_seed():
    assert resolve_random_seed(7, "f") == 7 and resolve_random_seed(np.int64(3), "f") == 3
    assert resolve_random_seed(2.0, "f") == 2
    gen = np.random.default_rng(5)
    assert resolve_random_seed(gen, "f") == int(np.random.default_rng(5).integers(0, 2**63))
    # the caller's stream advanced by exactly one value
    assert int(gen.integers(0, 2**63)) == int(np.random.default_rng(5).integers(0, 2**63, size=2)[1])
    fresh = resolve_random_seed(None, "f")
    assert 0 <= fresh < 2**63
    for bad in (-1, 1.5, "3", True, [1]):
        with pytest.raises(ValueError, match=r"^f: random_seed must be an integer >= 0"):
            resolve_random_seed(bad, "f")


@pytest.mark.parametrize("bad", [1.0, 0.0, -0.5, float("nan"), True, "abc", None])
def test_every_interval_function_refuses_ci_prob_with_the_one_check(bad):
    """clopper_pearson_interval, summarize_metrics, calibrate and corrected_pass_k use check_ci: one message
    (function named, then ``ci_prob must be``), booleans and non-numbers refused alike."""
    from agentstats.calibration import JudgeError, calibrate, corrected_pass_k
    from agentstats.estimators.bootstrap import clopper_pearson_interval
    from agentstats.estimators.metric_means import summarize_metrics

    counts = pd.DataFrame({"agent": ["a"], "task_id": ["t"], "n": [2], "c": [1]})
    calls = {
        "clopper_pearson_interval": lambda: clopper_pearson_interval(0.5, 10, ci_prob=bad),
        "summarize_metrics": lambda: summarize_metrics(pd.DataFrame(), ci_prob=bad),
        "calibrate": lambda: calibrate([], ci_prob=bad),
        "corrected_pass_k": lambda: corrected_pass_k(counts, JudgeError.from_counts(9, 1, 17, 3), ci_prob=bad),
    }
    for func, call in calls.items():
        with pytest.raises(ValueError, match=rf"^{func}: ci_prob must be"):
            call()

"""The one-pass Beta-Binomial cell kernel: values against scipy, gradients against finite differences, every backend.

Oracles: :func:`agentstats.models.families.beta_binomial.beta_binomial_logpmf` (scipy's ``betabinom`` and the inflated
mixture written out) for the log-pmf, and central finite differences of that reference for the partial derivatives.
"""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from scipy.special import gammaln

from agentstats.models._bb_kernel import (
    PRODUCT_MAX_TRIALS,
    CellLogp,
    _run,
    cell_logp,
    register_jax,
    register_numba,
)
from agentstats.models.families.beta_binomial import beta_binomial_logpmf


def _cells(seed: int, size: int, n_max: int, eta_sd: float = 2.0):
    """Random cells: many all-or-nothing counts, three concentrations, trial counts 0..n_max."""
    rng = np.random.default_rng(seed)
    n = rng.integers(0, n_max + 1, size)
    c = np.where(rng.random(size) < 0.4, np.where(rng.random(size) < 0.5, 0, n), rng.binomial(n, 0.5))
    eta = rng.normal(0.0, eta_sd, size)
    phi = np.array([0.4, 2.5, 30.0])[rng.integers(0, 3, size)]
    det = rng.uniform(0.05, 0.6, size)
    return c, n, eta, phi, det


def _log_comb(c, n):
    return gammaln(n + 1.0) - gammaln(c + 1.0) - gammaln(n - c + 1.0)


def _reference(c, n, eta, phi, det):
    return beta_binomial_logpmf(c, n, eta, phi, det)


@pytest.mark.parametrize("n_max", [6, PRODUCT_MAX_TRIALS, 80])
@pytest.mark.parametrize("inflated", [False, True])
def test_kernel_logp_and_partials_equal_scipy_and_finite_differences(n_max, inflated):
    """Log-pmf to 1e-10 of scipy's; the three partial derivatives to 1e-6 of central differences of scipy's log-pmf.
    Up to 32 trials the product form runs, above it the log-space form (80 trials: both in one call)."""
    c, n, eta, phi, det = _cells(1, 300, n_max)
    if not inflated:
        det = np.zeros_like(det)
    logp, d_eta, d_phi, d_det = _run(eta, phi, det, c, n, _log_comb(c, n))
    np.testing.assert_allclose(logp, _reference(c, n, eta, phi, det if inflated else None), rtol=1e-10, atol=1e-12)
    h = 1e-6
    for got, shift in ((d_eta, (h, 0, 0)), (d_phi, (0, h, 0)), (d_det, (0, 0, h))):
        if shift[2] and not inflated:
            continue  # det = 0 is a constant of the model without inflation: its derivative is never used
        up = _reference(c, n, eta + shift[0], phi + shift[1], det + shift[2] if inflated else None)
        down = _reference(c, n, eta - shift[0], phi - shift[1], det - shift[2] if inflated else None)
        np.testing.assert_allclose(got, (up - down) / (2 * h), rtol=1e-6, atol=1e-6)


def test_kernel_extreme_means_take_the_log_path_with_the_same_values():
    """Cell means of 1e-40 and below (warm-up territory): the product would underflow; the log-space path gives
    scipy's values and finite partial derivatives."""
    c = np.array([20, 0, 20, 10, 5, 0])
    n = np.array([20, 20, 20, 20, 5, 5])
    eta = np.array([-90.0, 90.0, 60.0, -45.0, -300.0, -300.0])
    phi = np.array([2.0, 2.0, 0.5, 30.0, 1.0, 1.0])
    det = np.array([0.3, 0.3, 0.0, 0.2, 0.4, 0.4])
    logp, d_eta, d_phi, d_det = _run(eta, phi, det, c, n, _log_comb(c, n))
    want = _reference(c, n, eta, phi, det)
    np.testing.assert_allclose(logp, want, rtol=1e-10)
    assert np.all(np.isfinite(d_eta)) and np.all(np.isfinite(d_phi)) and np.all(np.isfinite(d_det[det > 0]))
    h = 1e-5
    fd = (_reference(c, n, eta + h, phi, det) - _reference(c, n, eta - h, phi, det)) / (2 * h)
    np.testing.assert_allclose(d_eta, fd, rtol=1e-5, atol=1e-6)


def test_empty_cells_contribute_nothing():
    one = [np.array([v]) for v in (0.3, 2.0, 0.2)]
    logp, d_eta, d_phi, d_det = _run(*one, np.array([0]), np.array([0]), np.zeros(1))
    assert logp[0] == 0.0 and d_eta[0] == 0.0 and d_phi[0] == 0.0 and d_det[0] == 0.0


def _graph(c, n):
    eta, phi, det = pt.dvector("eta"), pt.dvector("phi"), pt.dvector("det")
    logp = cell_logp(eta, phi, det, c, n, _log_comb(c, n))
    total = logp.sum()
    return [eta, phi, det], [logp, *pt.grad(total, [eta, phi, det])]


def test_gradient_through_pytensor_and_the_numba_backend_agree():
    """pt.grad of the summed log-pmf returns the kernel's partials; PyTensor's numba backend (nutpie's) gives the
    same log-pmf and gradient as the Python backend (perform)."""
    c, n, eta, phi, det = _cells(2, 400, 8)
    inputs, outputs = _graph(c, n)
    py = pytensor.function(inputs, outputs, mode="FAST_COMPILE")(eta, phi, det)
    ref = _run(eta, phi, det, c, n, _log_comb(c, n))
    for got, want in zip(py, ref, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    register_numba()
    nb = pytensor.function(inputs, outputs, mode="NUMBA")(eta, phi, det)
    for got, want in zip(nb, py, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_jax_backend_agrees():
    pytest.importorskip("jax")
    register_jax()
    c, n, eta, phi, det = _cells(3, 200, 40)
    inputs, outputs = _graph(c, n)
    got = pytensor.function(inputs, outputs, mode="JAX")(eta, phi, det)
    want = _run(eta, phi, det, c, n, _log_comb(c, n))
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-9, atol=1e-11)


def test_bad_inputs_and_second_derivatives_are_refused():
    with pytest.raises(ValueError, match="vector"):
        CellLogp()(pt.dmatrix(), pt.dvector(), pt.dvector(), [1], [2], [0.0])
    eta = pt.dvector("eta")
    out = CellLogp()(eta, np.ones(1), np.zeros(1), [0], [1], np.zeros(1))
    with pytest.raises(NotImplementedError, match="second derivatives"):
        pt.grad(out[1].sum(), eta)
    two = CellLogp()(eta, np.ones(2), np.zeros(2), [0, 1], [1, 1], np.zeros(2))[0]
    bad = pytensor.function([eta], two, mode="FAST_COMPILE")
    with pytest.raises(ValueError, match="differ in length"):
        bad(np.zeros(3))


@pytest.mark.slow
def test_a_graph_holding_the_op_registers_its_numba_form_first():
    """PyTensor 3 compiles to numba by default, PyMC's own NUTS too: building the cell log-pmf registers the kernel's
    numba form, so no graph falls back to an object-mode call of ``perform`` (3x slower fits with
    ``sampler="pymc"``). A fresh process: this one may have registered it already."""
    import subprocess
    import sys

    code = (
        "import numpy as np, pytensor.tensor as pt\n"
        "from pytensor.link.numba.dispatch.basic import numba_funcify_default_op_cache_key as f\n"
        "from agentstats.models import _bb_kernel as k\n"
        "before = f.dispatch(k.CellLogp) is k._numba_funcify_cell_logp\n"
        "x = pt.vector()\n"
        "k.cell_logp(x, x, x, np.array([1]), np.array([2]), np.array([0.0]))\n"
        "print(before, f.dispatch(k.CellLogp) is k._numba_funcify_cell_logp)\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    assert res.stdout.split() == ["False", "True"]

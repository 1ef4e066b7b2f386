"""One-pass log-pmf and gradient of the (zero/one-inflated) Beta-Binomial cell likelihood, as a PyTensor Op.

Size note: :func:`_kernel` is one function of about 110 lines on purpose. It is compiled by numba and run once per
gradient over every cell; its two paths (products, log space) share per-cell state and the ``(phi)_n`` cache across
consecutive cells inside one loop. Split into helpers, numba would either inline them back (nothing gained in
reading) or call them per cell (measurably slower at 10k cells, ``benchmarks/bench_kernel.py``), and the cache would
have to be passed in and out.

The crossed Beta-Binomial families (:mod:`agentstats.models.families.beta_binomial`) spend most of a fit in the
gradient of the per-cell log-pmf. Written as a PyTensor graph it costs about ten transcendental functions per cell (two
``log`` of rising factorials, the inflation's ``logaddexp`` and ``softplus``, ``log det`` and ``log1p(-det)`` per
cell) and as many again in the backward pass. This module computes, in one loop over the cells, the log-pmf and its
partial derivatives with respect to ``eta = logit m``, the concentration ``phi`` and the deterministic share ``det``,
with one ``exp``, one ``log`` and one division per cell:

* the rising factorials are products, ``(a)_c = a (a + 1) ... (a + c - 1)`` (Abramowitz & Stegun 1964, 6.1.22),
  and their derivatives follow by the product rule alongside, so no ``log`` or division per trial;
* the Beta-Binomial probability (without ``C(n, c)``) is ``B = (a)_c (b)_{n-c} / (phi)_n`` with ``a = m phi``,
  ``b = (1 - m) phi``; ``1 / (phi)_n`` and ``d log (phi)_n / d phi`` depend on the agent and ``n`` only and are
  reused while consecutive cells share them (cells come agent by agent);
* the inflation is mixed in probability space, ``P = (1 - det) B + det [m 1{c = n} + (1 - m) 1{c = 0}]``, and
  ``log p(c) = log C(n, c) + log P``; every partial derivative is ``(d P / d x) / P``.

Cells whose product form would lose range (more than :data:`PRODUCT_MAX_TRIALS` trials, or ``P`` below
:data:`PRODUCT_MIN_P`, e.g. a cell mean of ``1e-40`` during warm-up) take a log-space path with the same result:
``sum log(a + i)`` and ``logaddexp`` for the mixture.

:class:`CellLogp` is the Op: inputs ``eta, phi, det, c, n, log_comb`` (vectors over the observed cells; ``det`` all
zero for the model without inflation), outputs the log-pmf per cell and the three partial derivatives, which its
``grad`` returns scaled by the incoming gradient (first derivatives only: NUTS needs no more). It runs the same
numba kernel in every backend that PyTensor compiles to C or Python (``perform``) and inside numba-compiled graphs
(nutpie, :func:`numba_funcify`); :func:`register_jax` adds a vectorized JAX form for the numpyro sampler. Tested
against :func:`agentstats.models.families.beta_binomial.beta_binomial_logpmf` (scipy's ``betabinom``) and against finite
differences, on both paths (``tests/models/test_bb_kernel.py``).
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import math
from typing import Any

import numpy as np
import pytensor.tensor as pt
from pytensor.gradient import DisconnectedType, disconnected_type
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op

__all__ = ["PRODUCT_MAX_TRIALS", "PRODUCT_MIN_P", "CellLogp", "cell_logp", "register_jax", "register_numba"]

#: Most trials per cell for the product form: rising factorials of up to 32 factors stay far inside float64's range
#: for any concentration below 1e9 (``(1e9 + 32)^32 = 1e288``).
PRODUCT_MAX_TRIALS = 32
#: Below this probability the product form hands the cell to the log-space path (float64 keeps full relative
#: precision down to about 2.2e-308; the margin covers the intermediate products).
PRODUCT_MIN_P = 1e-250


def _kernel(eta, phi, det, c, n, log_comb, logp, d_eta, d_phi, d_det):  # pragma: no cover - compiled by numba
    """Fill ``logp`` and the partial derivatives per cell (module docstring); returns nothing (numba: _compiled)."""
    last_phi = np.nan
    last_n = -1
    inv = 1.0  # 1 / (phi)_n
    s_phi = 0.0  # d log (phi)_n / d phi = sum_{l<n} 1 / (phi + l)
    log_rise_phi = 0.0  # log (phi)_n, for the log-space path
    for i in range(eta.shape[0]):
        e = eta[i]
        ph = phi[i]
        dt = det[i]
        ci = c[i]
        ni = n[i]
        if ni == 0:
            logp[i] = 0.0
            d_eta[i] = 0.0
            d_phi[i] = 0.0
            d_det[i] = 0.0
            continue
        if e >= 0.0:
            z = math.exp(-e)
            m = 1.0 / (1.0 + z)
            q = z * m
        else:
            z = math.exp(e)
            q = 1.0 / (1.0 + z)
            m = z * q
        a = ph * m
        b = ph * q
        if ph != last_phi or ni != last_n:
            prod = 1.0
            s_phi = 0.0
            log_rise_phi = 0.0
            for j in range(ni):
                prod *= ph + j
                s_phi += 1.0 / (ph + j)
                log_rise_phi += math.log(ph + j)
            inv = 1.0 / prod
            last_phi = ph
            last_n = ni
        if ci == ni:
            ext_m = 1.0  # d ext / d m / det, ext / det = m
            ext = m
        elif ci == 0:
            ext_m = -1.0
            ext = q
        else:
            ext_m = 0.0
            ext = 0.0
        done = False
        if ni <= PRODUCT_MAX_TRIALS:
            pa = 1.0
            dpa = 0.0
            for j in range(ci):
                dpa = dpa * (a + j) + pa
                pa *= a + j
            pb = 1.0
            dpb = 0.0
            for j in range(ni - ci):
                dpb = dpb * (b + j) + pb
                pb *= b + j
            bb = pa * pb * inv
            p_tot = (1.0 - dt) * bb + dt * ext
            if p_tot >= PRODUCT_MIN_P and p_tot < math.inf:
                r = 1.0 / p_tot
                dbb_dm = inv * ph * (dpa * pb - pa * dpb)
                dbb_dphi = inv * (m * dpa * pb + q * pa * dpb) - bb * s_phi
                logp[i] = log_comb[i] + math.log(p_tot)
                d_eta[i] = ((1.0 - dt) * dbb_dm + dt * ext_m) * m * q * r
                d_phi[i] = (1.0 - dt) * dbb_dphi * r
                d_det[i] = (ext - bb) * r
                done = True
        if not done:
            la = 0.0
            dla = 0.0
            for j in range(ci):
                la += math.log(a + j)
                dla += 1.0 / (a + j)
            lb = 0.0
            dlb = 0.0
            for j in range(ni - ci):
                lb += math.log(b + j)
                dlb += 1.0 / (b + j)
            lbb = la + lb - log_rise_phi
            dl_dm = ph * (dla - dlb)
            dl_dphi = m * dla + q * dlb - s_phi
            x1 = math.log1p(-dt) + lbb if dt < 1.0 else -math.inf
            d_eta_bb = dl_dm * m * q
            if ext > 0.0:
                # log m = -softplus(-eta), log(1 - m) = -softplus(eta), without cancellation
                soft = math.log1p(math.exp(-abs(e)))
                log_ext = -(soft + max(-e, 0.0)) if ci == ni else -(soft + max(e, 0.0))
                if dt > 0.0:
                    x2 = math.log(dt) + log_ext
                    top = max(x1, x2)
                    lp = top + math.log(math.exp(x1 - top) + math.exp(x2 - top))
                    w1 = math.exp(x1 - lp)
                    w2 = math.exp(x2 - lp)
                    dlog_ext = q if ci == ni else -m  # d log(m) / d eta, d log(1 - m) / d eta
                    logp[i] = log_comb[i] + lp
                    d_eta[i] = w1 * d_eta_bb + w2 * dlog_ext
                    d_phi[i] = w1 * dl_dphi
                    d_det[i] = math.exp(log_ext - lp) - math.exp(lbb - lp)
                    continue
                d_det[i] = math.exp(log_ext - lbb) - 1.0  # det = 0: (ext - B) / B
            else:
                d_det[i] = -1.0 / (1.0 - dt)
            logp[i] = log_comb[i] + x1
            d_eta[i] = d_eta_bb
            d_phi[i] = dl_dphi


@functools.cache
def _compiled() -> Any:
    """Return :func:`_kernel` compiled by numba (imported on first use, not with the model families)."""
    import numba

    return numba.njit(cache=True, nogil=True, error_model="numpy")(_kernel)


def _source_version() -> int:
    """Return an integer from the kernel's source, so that PyTensor's numba cache key changes with the kernel."""
    src = inspect.getsource(_kernel) + f"{PRODUCT_MAX_TRIALS} {PRODUCT_MIN_P}"
    return int(hashlib.sha256(src.encode()).hexdigest()[:12], 16)


def _run(eta, phi, det, c, n, log_comb):
    """Run :func:`_kernel` on numpy arrays (contiguous float64 / int64 copies where needed)."""
    f64 = [np.ascontiguousarray(x, dtype=np.float64) for x in (eta, phi, det, log_comb)]
    i64 = [np.ascontiguousarray(x, dtype=np.int64) for x in (c, n)]
    outs = [np.empty_like(f64[0]) for _ in range(4)]
    _compiled()(f64[0], f64[1], f64[2], i64[0], i64[1], f64[3], *outs)
    return outs


class CellLogp(Op):
    """Log-pmf of the (zero/one-inflated) Beta-Binomial per cell and its partial derivatives (module docstring).

    Inputs (vectors of one length, the observed cells): ``eta`` (logit of the cell mean), ``phi`` (concentration,
    > 0), ``det`` (deterministic share in [0, 1); zeros without inflation), ``c`` and ``n`` (int64 counts,
    0 <= c <= n), ``log_comb`` (``log C(n, c)``). Outputs (float64 vectors of that length): the log-pmf, and its
    partial derivatives with respect to ``eta``, ``phi`` and ``det``.
    """

    __props__ = ()

    def make_node(self, eta, phi, det, c, n, log_comb):  # type: ignore[override]  # PyTensor's Op takes *inputs
        eta, phi, det, log_comb = (pt.as_tensor_variable(x).astype("float64") for x in (eta, phi, det, log_comb))
        c, n = (pt.as_tensor_variable(x).astype("int64") for x in (c, n))
        inputs = [eta, phi, det, c, n, log_comb]
        if any(x.type.ndim != 1 for x in inputs):
            raise ValueError("CellLogp: every input must be a vector over the observed cells")
        outputs = [pt.vector(dtype="float64", shape=eta.type.shape) for _ in range(4)]
        return Apply(self, inputs, outputs)

    def perform(self, node, inputs, output_storage):
        sizes = {np.shape(x)[0] for x in inputs}
        if len(sizes) != 1:
            raise ValueError(f"CellLogp: inputs differ in length: {sorted(sizes)}")
        for store, out in zip(output_storage, _run(*inputs), strict=True):
            store[0] = out

    def infer_shape(self, node, input_shapes):
        return [input_shapes[0]] * 4

    def pullback(self, inputs, outputs, cotangents):
        for g in cotangents[1:]:
            if not isinstance(g.type, DisconnectedType):
                raise NotImplementedError("CellLogp: second derivatives are not implemented")
        g = cotangents[0]
        if isinstance(g.type, DisconnectedType):
            return [disconnected_type() for _ in inputs]
        _, d_eta, d_phi, d_det = outputs
        return [g * d_eta, g * d_phi, g * d_det, disconnected_type(), disconnected_type(), g]

    def connection_pattern(self, node):
        return [[True] * 4, [True] * 4, [True] * 4, [False] * 4, [False] * 4, [True, False, False, False]]


_CELL_LOGP = CellLogp()


def cell_logp(eta, phi, det, c, n, log_comb):
    """Log-pmf per observed cell as a PyTensor variable (:class:`CellLogp`, first output).

    Parameters
    ----------
    eta, phi, det : TensorVariable
        Vectors over the observed cells (broadcast them first): logit cell mean, concentration, deterministic share.
    c, n : numpy.ndarray of int
        Successes and trials per cell.
    log_comb : numpy.ndarray of float
        ``log C(n, c)`` per cell.

    Returns
    -------
    TensorVariable
        ``log p(c | n, eta, phi, det)`` per cell (natural log), with its gradient through ``eta``, ``phi``, ``det``.
    """
    register_numba()  # before any graph holding the Op compiles (docstring of register_numba)
    outputs = _CELL_LOGP(eta, phi, det, c, n, log_comb)
    assert isinstance(outputs, list)  # an Op with four outputs returns them as a list
    return outputs[0]


def _numba_funcify_cell_logp(op: CellLogp, node=None, **kwargs: Any):
    """Return the numba form of :class:`CellLogp` (PyTensor's numba backend, nutpie), keyed on the kernel's source."""
    from pytensor.link.numba.dispatch import basic as numba_basic

    kernel = _compiled()

    @numba_basic.numba_njit
    def cell_logp_numba(eta, phi, det, c, n, log_comb):
        logp = np.empty(eta.shape[0], dtype=np.float64)
        d_eta = np.empty_like(logp)
        d_phi = np.empty_like(logp)
        d_det = np.empty_like(logp)
        kernel(
            np.ascontiguousarray(eta),
            np.ascontiguousarray(phi),
            np.ascontiguousarray(det),
            np.ascontiguousarray(c),
            np.ascontiguousarray(n),
            np.ascontiguousarray(log_comb),
            logp,
            d_eta,
            d_phi,
            d_det,
        )
        return logp, d_eta, d_phi, d_det

    return cell_logp_numba, _source_version()


@functools.cache
def register_numba() -> None:
    """Register the numba form of :class:`CellLogp` with PyTensor's numba backend. Idempotent.

    Called by :func:`cell_logp`, so before any graph holding the Op compiles: PyTensor 3 compiles to numba by default
    (``linker="auto"``), so PyMC's own NUTS, ``compute_log_likelihood`` and posterior predictive draws go through
    numba as nutpie does. Unregistered, PyTensor wraps :meth:`CellLogp.perform` in an object-mode call that is
    compiled again for every function: a test-size fit with ``sampler="pymc"`` (the example data, 2 chains x 200
    steps) took 14-20 s instead of 5-7 s once warm, 18-23 s instead of 8-14 s cold. Not at import: importing numba and
    PyTensor's numba dispatch costs about 0.8 s, which commands that never build a model need not pay.
    """
    from pytensor.link.numba.dispatch.basic import register_funcify_default_op_cache_key

    register_funcify_default_op_cache_key(CellLogp)(_numba_funcify_cell_logp)

_JAX_REGISTERED = False


def register_jax() -> None:
    """Register the JAX form of :class:`CellLogp` (vectorized log-space path); needs ``jax``. Idempotent."""
    global _JAX_REGISTERED
    if _JAX_REGISTERED:
        return
    import jax
    import jax.numpy as jnp
    from pytensor.link.jax.dispatch import jax_funcify

    @jax_funcify.register(CellLogp)
    def _jax_funcify_cell_logp(op, node=None, **kwargs):  # pragma: no cover - exercised by the JAX test
        from pytensor.graph.basic import Constant

        trials = node.inputs[4] if node is not None else None
        if not isinstance(trials, Constant):
            raise NotImplementedError("CellLogp in JAX needs the trial counts as a constant")
        n_max = int(np.max(trials.data, initial=0))

        def cell_logp_jax(eta, phi, det, c, n, log_comb):
            m = jax.nn.sigmoid(eta)
            q = jax.nn.sigmoid(-eta)
            a = phi * m
            b = phi * q
            steps = jnp.arange(max(n_max, 1), dtype=eta.dtype)[None, :]
            in_a = steps < c[:, None]
            in_b = steps < (n - c)[:, None]
            in_n = steps < n[:, None]
            la = jnp.sum(jnp.where(in_a, jnp.log(a[:, None] + steps), 0.0), axis=1)
            lb = jnp.sum(jnp.where(in_b, jnp.log(b[:, None] + steps), 0.0), axis=1)
            lphi = jnp.sum(jnp.where(in_n, jnp.log(phi[:, None] + steps), 0.0), axis=1)
            dla = jnp.sum(jnp.where(in_a, 1.0 / (a[:, None] + steps), 0.0), axis=1)
            dlb = jnp.sum(jnp.where(in_b, 1.0 / (b[:, None] + steps), 0.0), axis=1)
            s_phi = jnp.sum(jnp.where(in_n, 1.0 / (phi[:, None] + steps), 0.0), axis=1)
            lbb = la + lb - lphi
            dl_dm = phi * (dla - dlb)
            dl_dphi = m * dla + q * dlb - s_phi
            up = c == n
            down = c == 0
            log_ext = jnp.where(up, jax.nn.log_sigmoid(eta), jnp.where(down, jax.nn.log_sigmoid(-eta), -jnp.inf))
            x1 = jnp.log1p(-det) + lbb
            x2 = jnp.log(det) + log_ext
            lp = jnp.logaddexp(x1, x2)
            w1 = jnp.exp(x1 - lp)
            w2 = jnp.exp(x2 - lp)
            dlog_ext = jnp.where(up, q, -m)
            empty = n == 0
            zero = jnp.zeros_like(eta)
            logp = jnp.where(empty, zero, log_comb + lp)
            d_eta = jnp.where(empty, zero, w1 * dl_dm * m * q + jnp.where(up | down, w2 * dlog_ext, 0.0))
            d_phi = jnp.where(empty, zero, w1 * dl_dphi)
            d_det = jnp.where(empty, zero, jnp.exp(log_ext - lp) - jnp.exp(lbb - lp))
            return logp, d_eta, d_phi, d_det

        return cell_logp_jax

    _JAX_REGISTERED = True

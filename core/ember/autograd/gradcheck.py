"""gradcheck / gradgradcheck: analytical Jacobians from the engine against central finite
differences, as PyTorch's (use float64 inputs: float32 differences are too coarse).

Complex inputs and outputs are checked as PyTorch does, as pairs of reals: a complex input
element is two columns (perturbed by ``eps`` and by ``eps * 1j``), a complex output element two
rows (its real and imaginary parts). In PyTorch's convention the gradient of a real function
``L`` is ``dL/dre + 1j * dL/dim``, so the analytical rows of an output come from backward with
``grad_output = 1`` (the real part) and ``1j`` (the imaginary part), and each complex gradient
element fills its two columns with its real and imaginary parts."""
from __future__ import annotations

import warnings

import numpy as np

from .._tensor import Tensor
from ..ops.factories import tensor, zeros_like
from ..ops.views import non_overlapping
from . import engine, forward_ad as fwAD
from ..dispatch.grad_mode import no_grad
from .._warn import user_stacklevel


class GradcheckError(RuntimeError):
    """Raised by gradcheck / gradgradcheck when a check fails (and raise_exception=True)."""


def _as_tuple(x):
    return x if isinstance(x, tuple) else tuple(x) if isinstance(x, list) else (x,)


def _diff_outputs(out):
    return [o for o in _as_tuple(out) if isinstance(o, Tensor) and o.requires_grad]


def _host(t):
    return np.array(t.detach()._host(), dtype=np.float64 if not t.is_complex() else
                    np.complex128).reshape(-1)


def _as_reals(a):
    """A flat host array as reals: complex values become (real, imag) pairs."""
    return np.stack([a.real, a.imag], -1).reshape(-1) if np.iscomplexobj(a) else a


def _width(t):
    """Real entries of ``t`` in a Jacobian: two per complex element."""
    return t.numel() * (2 if t.is_complex() else 1)


def _checked(o):
    return isinstance(o, Tensor) and (o.is_floating_point() or o.is_complex())


def _check_inputs(inputs):
    for i, t in enumerate(inputs):
        if not (isinstance(t, Tensor) and t.requires_grad):
            continue
        if t.dtype.name not in ("float64", "complex128"):
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating "
                          f"point. This check will likely fail if all the inputs are not of "
                          f"double precision floating point.", UserWarning,
                          stacklevel=user_stacklevel())
        if not non_overlapping(t._shape, t._stride):
            raise RuntimeError(f"The {i}th input has a dimension with stride 0. gradcheck only "
                               f"supports inputs that are non-overlapping to be able to compute "
                               f"the numerical gradients correctly. You should call .contiguous "
                               f"on the input before passing it to gradcheck.")


def _numerical(func, inputs, wrt, eps, n_out_elems):
    """Columns of d(flat outputs)/d(input element), one matrix per input in ``wrt``."""
    jac = []
    for t in wrt:
        n = t.numel()
        steps = (eps, eps * 1j) if t.is_complex() else (eps,)
        cols = np.zeros((n_out_elems, n * len(steps)))
        for j in range(n):
            idx = np.unravel_index(j, t._shape) if t._shape else ()
            for m, step in enumerate(steps):
                with no_grad():
                    elem = t[tuple(int(k) for k in idx)] if t._shape else t
                    orig = elem.item()
                    elem.copy_(orig + step)
                plus = _flat(func(*inputs))
                with no_grad():
                    elem.copy_(orig - step)
                minus = _flat(func(*inputs))
                with no_grad():
                    elem.copy_(orig)
                cols[:, j * len(steps) + m] = (plus - minus) / (2 * eps)
        jac.append(cols)
    return jac


def _flat(out):
    outs = [o for o in _as_tuple(out) if _checked(o)]
    return np.concatenate([_as_reals(_host(o)) for o in outs]) if outs else np.zeros(0)


def _analytical(outputs, wrt, n_out_elems):
    """Rows of the Jacobian, one backward per output element."""
    jac = [np.zeros((n_out_elems, _width(t))) for t in wrt]
    row = 0
    for o in outputs:
        for k in range(o.numel()):
            idx = np.unravel_index(k, o._shape) if o._shape else ()
            for unit in ((1.0, 1j) if o.is_complex() else (1.0,)):
                v = zeros_like(o)
                with no_grad():
                    (v[tuple(int(i) for i in idx)] if o._shape else v).copy_(unit)
                grads = engine.grad([o], list(wrt), [v], retain_graph=True, allow_unused=True)
                for m, g in enumerate(grads):
                    if g is not None:
                        jac[m][row, :] = _as_reals(_host(g))
                row += 1
    return jac


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
              check_batched_grad=False, check_batched_forward_grad=False, check_forward_ad=False,
              check_backward_ad=True, fast_mode=False, masked=None):
    """Compare the gradients of ``func(*inputs)`` with finite differences: reverse mode
    (``check_backward_ad``, one backward per output element), forward mode
    (``check_forward_ad``, one jvp per input element), and their vmapped forms
    (``check_batched_grad``: every vector-Jacobian product at once through ``ember.func.vmap``;
    ``check_batched_forward_grad``: every Jacobian-vector product at once)."""
    inputs = _as_tuple(inputs)
    _check_inputs(inputs)
    wrt = [t for t in inputs if isinstance(t, Tensor) and t.requires_grad]
    if not wrt:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but "
                         "none of the them have requires_grad=True.")
    out = func(*inputs)
    outputs = _diff_outputs(out)
    floats = [o for o in _as_tuple(out) if _checked(o)]
    n_out = sum(_width(o) for o in floats)
    try:
        numerical = _numerical(func, inputs, wrt, eps, n_out)
        if len(outputs) != len(floats):
            for i, o in enumerate(floats):
                if not o.requires_grad and _depends(numerical, floats, i):
                    raise GradcheckError(f"Numerical gradient for function expected to be zero "
                                         f"(output {i} does not require grad)")
        # finite differences perturbed the inputs in place: record a fresh graph
        out = func(*inputs)
        outputs = _diff_outputs(out)
        floats = [o for o in _as_tuple(out) if _checked(o)]
        if check_forward_ad:
            forward = _forward_jacobian(func, inputs, wrt, n_out)
            for m, (a, n) in enumerate(zip(forward, numerical)):
                if not np.allclose(a, n, rtol=rtol, atol=atol):
                    raise GradcheckError(_mismatch(m, a, n, floats, "forward mode "))
        if check_batched_forward_grad:
            _check_batched_forward(func, inputs, wrt, rtol, atol)
        if not check_backward_ad:
            return True
        analytical = _analytical(outputs, wrt, n_out) if len(outputs) == len(floats) else \
            _analytical_partial(outputs, floats, wrt, n_out)
        for m, (a, n) in enumerate(zip(analytical, numerical)):
            if not np.allclose(a, n, rtol=rtol, atol=atol):
                raise GradcheckError(_mismatch(m, a, n, floats))
        if check_batched_grad:
            _check_batched_grad(outputs, wrt, rtol, atol)
        if nondet_tol == 0.0:
            again = _analytical(outputs, wrt, n_out) if len(outputs) == len(floats) else \
                _analytical_partial(outputs, floats, wrt, n_out)
            for a, b in zip(analytical, again):
                if not np.array_equal(a, b):
                    raise GradcheckError("Backward is not reentrant, i.e., running backward with "
                                         "same input and grad_output multiple times gives "
                                         "different values, although analytical gradient matches "
                                         "numerical gradient. The tolerance for nondeterminism "
                                         "was 0.0.")
        if check_grad_dtypes:
            _check_dtypes(outputs, wrt)
    except GradcheckError:
        if raise_exception:
            raise
        return False
    return True


def _depends(numerical, floats, i):
    start = sum(_width(o) for o in floats[:i])
    stop = start + _width(floats[i])
    return any(np.any(j[start:stop]) for j in numerical)


def _analytical_partial(outputs, floats, wrt, n_out):
    """Analytical rows where only some float outputs are differentiable (others: zero rows)."""
    jac = [np.zeros((n_out, _width(t))) for t in wrt]
    row = 0
    for o in floats:
        if o.requires_grad:
            sub = _analytical([o], wrt, _width(o))
            for m in range(len(wrt)):
                jac[m][row:row + _width(o)] = sub[m]
        row += _width(o)
    return jac


def _mismatch(m, a, n, floats, mode=""):
    # report the first output whose block differs
    what = f"Jacobian computed with {mode}mismatch" if mode else "Jacobian mismatch"
    row = 0
    for i, o in enumerate(floats):
        blk = slice(row, row + _width(o))
        if not np.allclose(a[blk], n[blk], rtol=1e-3, atol=1e-5):
            return (f"{what} for output {i} with respect to input {m},\n"
                    f"numerical:{n[blk]!r}\nanalytical:{a[blk]!r}\n")
        row += _width(o)
    return f"{what} with respect to input {m},\nnumerical:{n!r}\nanalytical:{a!r}\n"


# -- forward mode and the batched (vmapped) checks ------------------------------------------------
def _forward_jacobian(func, inputs, wrt, n_out):
    """Columns of the Jacobian from forward-mode AD: one jvp per input element (the tangent is
    that element's basis vector)."""
    jac = [np.zeros((n_out, t.numel())) for t in wrt]
    for m, t in enumerate(wrt):
        for j in range(t.numel()):
            tangent = zeros_like(t.detach())
            idx = np.unravel_index(j, t._shape) if t._shape else ()
            with no_grad():
                (tangent[tuple(int(i) for i in idx)] if t._shape else tangent).copy_(1.0)
            with fwAD.dual_level():
                dual = [fwAD.make_dual(x, tangent) if x is t else x for x in inputs]
                outs = [o for o in _as_tuple(func(*dual)) if isinstance(o, Tensor) and
                        o.is_floating_point()]
                cols = []
                for o in outs:
                    tan = fwAD.unpack_dual(o).tangent
                    cols.append(np.zeros(o.numel()) if tan is None else _host(tan))
            jac[m][:, j] = np.concatenate(cols) if cols else np.zeros(0)
    return jac


def _transforms():
    """``ember.func``: a layer above autograd, which the batched checks use as any caller would,
    through the public namespace."""
    import ember  # layering: ember.func is above autograd
    return ember.func


def _check_batched_grad(outputs, wrt, rtol, atol):
    """Every vector-Jacobian product at once (ember.func.vmap over the cotangents) equals the
    products one by one."""
    vmap = _transforms().vmap
    rng = np.random.default_rng(1)
    for k, o in enumerate(outputs):
        cts = tensor(rng.standard_normal((3,) + tuple(o._shape)), dtype=o.dtype, device=o.device)

        def vjp(ct, o=o):
            return engine.grad([o], list(wrt), [ct], retain_graph=True, allow_unused=True)
        batched = vmap(vjp)(cts)
        for b in range(3):
            single = vjp(cts[b])
            for m, (bg, sg) in enumerate(zip(batched, single)):
                if (bg is None) != (sg is None):
                    continue
                if sg is not None and not np.allclose(_host(bg[b]), _host(sg), rtol=rtol,
                                                      atol=atol):
                    raise GradcheckError(f"While computing batched gradients, got: vmap of the "
                                         f"backward of output {k} with respect to input {m} "
                                         f"differs from computing it example by example")


def _check_batched_forward(func, inputs, wrt, rtol, atol):
    """Every Jacobian-vector product at once (vmap over the tangents) equals them one by one."""
    jvp, vmap = _transforms().jvp, _transforms().vmap
    rng = np.random.default_rng(2)
    primals = tuple(t.detach() for t in wrt)
    tangents = tuple(tensor(rng.standard_normal((3,) + tuple(t._shape)), dtype=t.dtype,
                            device=t.device) for t in wrt)

    def f(*xs):
        it = iter(xs)
        args = [next(it) if _match(x, wrt) is not None else x for x in inputs]
        return tuple(o for o in _as_tuple(func(*args)) if isinstance(o, Tensor) and
                     o.is_floating_point())

    def push(*ts):
        return jvp(f, primals, ts)[1]
    batched = vmap(push)(*tangents)
    for b in range(3):
        single = push(*(t[b] for t in tangents))
        for k, (bo, so) in enumerate(zip(batched, single)):
            if not np.allclose(_host(bo[b]), _host(so), rtol=rtol, atol=atol):
                raise GradcheckError(f"While computing batched gradients, got: vmap of the "
                                     f"forward-mode derivative of output {k} differs from "
                                     f"computing it tangent by tangent")


def _match(x, wrt):
    """``x`` itself if it is one of the differentiated inputs (identity, not equality)."""
    return next((t for t in wrt if t is x), None)


def _check_dtypes(outputs, wrt):
    grads = engine.grad(outputs, wrt, [o.detach() * 0 + 1 for o in outputs],
                        retain_graph=True, allow_unused=True)
    for t, g in zip(wrt, grads):
        if g is not None and (g.dtype is not t.dtype or g._shape != t._shape):
            raise GradcheckError("Gradient has dtype mismatch" if g.dtype is not t.dtype else
                                 "Gradient has shape mismatch")


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0,
                  check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
                  check_fwd_over_rev=False, check_rev_over_rev=True, fast_mode=False,
                  masked=False):
    """gradcheck of the first derivative (a vector-Jacobian product with ``grad_outputs``,
    random when not given): second derivatives against finite differences of the first."""
    inputs = _as_tuple(inputs)
    outputs = _diff_outputs(func(*inputs))
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = tuple(
            tensor(rng.standard_normal(o._shape) + (1j * rng.standard_normal(o._shape)
                                                    if o.is_complex() else 0),
                   dtype=o.dtype, device=o.device, requires_grad=True) for o in outputs)
    grad_outputs = _as_tuple(grad_outputs)
    n_in = len(inputs)

    def first_derivative(*args):
        ins, gos = args[:n_in], args[n_in:]
        outs = _diff_outputs(func(*ins))
        wrt = [t for t in ins if isinstance(t, Tensor) and t.requires_grad]
        grads = engine.grad(outs, wrt, list(gos), create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(first_derivative, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, nondet_tol=nondet_tol,
                     check_grad_dtypes=check_grad_dtypes, check_batched_grad=check_batched_grad,
                     check_forward_ad=check_fwd_over_rev, check_backward_ad=check_rev_over_rev)

"""ember.autograd.forward_ad: dual tensors, their scope, their interaction with reverse mode and
views, and gradcheck's forward-mode and batched checks (which fail on a wrong formula)."""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.autograd.forward_ad as fwAD
from ember.autograd import GradcheckError, gradcheck, gradgradcheck

D = ember.float64


def _close(a, b, tol=1e-9):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def _randn(*shape, seed=0):
    return ember.tensor(np.random.default_rng(seed).standard_normal(shape), dtype=D)


def test_dual_tensors_carry_jvps():
    x, t = _randn(3, 4), _randn(3, 4, seed=1)
    w = _randn(4, 2, seed=2)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, t)
        out = (d @ w).tanh().sum(0) * 2
        primal, tangent = fwAD.unpack_dual(out)
        assert isinstance(fwAD.unpack_dual(out), fwAD.UnpackedDualTensor)
        y = (x @ w).tanh()
        _close(primal, y.sum(0) * 2)
        _close(tangent, ((1 - y * y) * (t @ w)).sum(0) * 2)
        assert fwAD.unpack_dual(x).tangent is None        # the primal itself is untouched
    assert fwAD.unpack_dual(out).tangent is None           # tangents end with the level
    _close(fwAD.unpack_dual(d).primal, x)


def test_grad_mode_does_not_affect_forward_ad_and_reverse_records_it():
    x, t = _randn(3), _randn(3, seed=1)
    with fwAD.dual_level():
        with ember.no_grad():
            tangent = fwAD.unpack_dual(fwAD.make_dual(x, t).exp()).tangent
        _close(tangent, x.exp() * t)
        # reverse over forward: the tangent computation is recorded
        xr = x.clone().requires_grad_()
        tan = fwAD.unpack_dual(fwAD.make_dual(xr, t).sin()).tangent
        (g,) = ember.autograd.grad(tan.sum(), xr)
        _close(g, -x.sin() * t)


def test_inplace_and_views():
    x, t = _randn(4), _randn(4, seed=1)
    with fwAD.dual_level():
        d = fwAD.make_dual(x.clone(), t)
        buf = ember.zeros(6, dtype=D)
        buf[1:5] = d.exp()                 # written through a view: the base gets a tangent
        _close(fwAD.unpack_dual(buf).tangent[1:5], x.exp() * t)
        _close(fwAD.unpack_dual(buf).tangent[0], 0.0)
        t2 = t.clone()
        e = fwAD.make_dual(x.clone(), t2)
        e.mul_(3)     # the tangent is updated in place (the one given, as in PyTorch)
        _close(fwAD.unpack_dual(e).tangent, 3 * t)
        _close(t2, 3 * t)
        v = fwAD.make_dual(x.clone(), t).view(2, 2).t()
        _close(fwAD.unpack_dual(v).tangent, t.view(2, 2).t())


def test_errors():
    x = _randn(3)
    with pytest.raises(RuntimeError, match="no level exists, make sure to enter_dual_level"):
        fwAD.make_dual(x, x)
    with fwAD.dual_level():
        with pytest.raises(RuntimeError, match="Nested forward mode AD is not supported"):
            fwAD.enter_dual_level()
        with pytest.raises(RuntimeError, match="different size than that of the original Tensor"):
            fwAD.make_dual(x, x[:2])
        with pytest.raises(RuntimeError, match="same dtype"):
            fwAD.make_dual(x, x.float())
        with pytest.raises(NotImplementedError, match="Trying to use forward AD with "
                                                      "linalg_ldl_factor_ex"):
            # no derivative of either kind (PyTorch has none for it either)
            from ember.ops.linalg.decompositions import ldl_factor_ex_op
            a = _randn(3, 3)
            ldl_factor_ex_op(fwAD.make_dual(a + a.mT, _randn(3, 3, seed=1)), True)


def test_gradcheck_forward_mode_and_batched_checks():
    x = _randn(3).requires_grad_()
    w = _randn(3, 3, seed=1).requires_grad_()

    def f(a, b):
        return (b @ a).tanh() * a.softmax(0) + a.prod()
    assert gradcheck(f, (x, w), check_forward_ad=True, check_batched_grad=True,
                     check_batched_forward_grad=True)
    assert gradgradcheck(lambda a: (a.sin() * a).exp(), (x,), check_fwd_over_rev=True)
    # a wrong forward formula is caught (and only by the forward-mode check)
    import ember.library as L
    op = L.custom_op("fwadtest::cube", lambda a: a * a * a)
    op.register_autograd(lambda ctx, g: g * 3 * ctx.saved_tensors[0] ** 2,
                         setup_context=lambda ctx, inputs, output: ctx.save_for_backward(
                             inputs[0]))
    op.op.def_jvp(lambda ctx, tangents, a: tangents[0] * 2 * a * a)   # wrong: should be 3a²
    assert gradcheck(op, (x,))
    with pytest.raises(GradcheckError, match="Jacobian computed with forward mode mismatch"):
        gradcheck(op, (x,), check_forward_ad=True)


def test_grad_with_batched_grad_outputs():
    x = _randn(3).requires_grad_()
    y = x.sin() * x.sum()
    (jac,) = ember.autograd.grad(y, x, ember.eye(3, dtype=D), retain_graph=True,
                                 is_grads_batched=True)
    expected = ember.stack([ember.autograd.grad(y, x, ember.eye(3, dtype=D)[i],
                                                retain_graph=True)[0] for i in range(3)])
    _close(jac, expected)


def test_custom_function_jvp():
    class Cube(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            ctx.save_for_forward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x * x

        @staticmethod
        def jvp(ctx, t):
            (x,) = ctx.saved_tensors
            return t * 3 * x * x

    class NoJvp(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x, t = _randn(3), _randn(3, seed=1)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, t)
        _close(fwAD.unpack_dual(Cube.apply(d)).tangent, 3 * x * x * t)
        with pytest.raises(NotImplementedError, match="You must implement the jvp function"):
            NoJvp.apply(d)
    assert gradcheck(Cube.apply, (x.clone().requires_grad_(),), check_forward_ad=True)

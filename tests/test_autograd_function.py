"""ember.autograd.Function with every ctx feature, and custom ops' register_autograd."""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.autograd import Function, gradcheck, gradgradcheck, once_differentiable


def t(values, grad=True):
    return ember.tensor(values, dtype=ember.float64, requires_grad=grad)


class ScaledExp(Function):
    """exp(x) * k with a non-tensor argument, a saved output and a ctx attribute."""

    @staticmethod
    def forward(ctx, x, k):
        y = x.exp() * k
        ctx.save_for_backward(y)
        ctx.k = k
        assert not ember.is_grad_enabled()   # forward runs without recording
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y, None


def test_function_basics_and_node_name():
    x = t([0.0, 1.0])
    y = ScaledExp.apply(x, 2.0)
    assert y.grad_fn.name() == "ScaledExpBackward"
    assert y.grad_fn.k == 2.0 and y.grad_fn.needs_input_grad == (True, False)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp([0.0, 1.0]))
    assert gradcheck(ScaledExp.apply, (t([0.3, -0.2]), 1.5))
    assert gradgradcheck(ScaledExp.apply, (t([0.3, -0.2]), 1.5))
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.sum().backward()


def test_function_without_grad_inputs_records_nothing():
    y = ScaledExp.apply(t([1.0], grad=False), 1.0)
    assert not y.requires_grad and y.grad_fn is None


class MulAdd(Function):
    """New-style: forward without ctx, setup_context, needs_input_grad, saved inputs."""

    @staticmethod
    def forward(a, b, c):
        return a * b + c

    @staticmethod
    def setup_context(ctx, inputs, output):
        a, b, _ = inputs
        ctx.save_for_backward(a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        ga = g * b if ctx.needs_input_grad[0] else None
        gb = g * a if ctx.needs_input_grad[1] else None
        return ga, gb, (g if ctx.needs_input_grad[2] else None)


def test_setup_context_style_and_needs_input_grad():
    a, b, c = t([1.0, 2.0]), t([3.0, 4.0], grad=False), t([0.5, 0.5])
    MulAdd.apply(a, b, c).sum().backward()
    assert a.grad.tolist() == [3.0, 4.0] and b.grad is None and c.grad.tolist() == [1.0, 1.0]
    assert gradcheck(MulAdd.apply, (t([1.0, 2.0]), t([3.0, 4.0]), t([0.5, 0.5])))


def test_saved_input_modified_in_place_is_detected():
    a, b = t([1.0, 2.0]), t([3.0, 4.0])
    a2 = a * 1
    out = MulAdd.apply(a2, b, b)
    a2.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


class SortAndIndex(Function):
    """Two outputs, one non-differentiable; materialize_grads off."""

    @staticmethod
    def forward(ctx, x):
        values, idx = x.sort()
        ctx.mark_non_differentiable(idx)
        ctx.save_for_backward(idx)
        ctx.set_materialize_grads(False)
        return values, idx

    @staticmethod
    def backward(ctx, g_values, g_idx):
        assert g_idx is None
        (idx,) = ctx.saved_tensors
        if g_values is None:
            return None
        return ember.zeros_like(g_values).scatter(0, idx, g_values)


def test_mark_non_differentiable_and_materialize_grads():
    x = t([3.0, 1.0, 2.0])
    values, idx = SortAndIndex.apply(x)
    assert values.requires_grad and not idx.requires_grad
    (values * ember.tensor([1.0, 2.0, 3.0], dtype=ember.float64)).sum().backward()
    assert x.grad.tolist() == [3.0, 1.0, 2.0]


class AddOneInPlace(Function):
    @staticmethod
    def forward(ctx, x):
        x.add_(1)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return g


def test_mark_dirty():
    x = t([1.0, 2.0])
    y = x * 2
    out = AddOneInPlace.apply(y)
    assert out is y and y.grad_fn.name() == "AddOneInPlaceBackward"
    (y * y).sum().backward()
    assert x.grad.tolist() == [12.0, 20.0]   # d/dx (2x + 1)^2 = 4 (2x + 1)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        AddOneInPlace.apply(t([1.0]))


class Cube(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x ** 2


def test_once_differentiable():
    x, v = t([2.0]), t([1.0])
    y = Cube.apply(x)
    (g,) = ember.autograd.grad(y, x, grad_outputs=v, create_graph=True)
    assert g.tolist() == [12.0] and g.requires_grad
    with pytest.raises(RuntimeError, match="marked with @once_differentiable"):
        g.backward()


def test_wrong_number_of_gradients():
    class Bad(Function):
        @staticmethod
        def forward(ctx, x, y):
            return x + y

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(RuntimeError, match="returned an incorrect number of gradients "
                                           r"\(expected 2, got 1\)"):
        Bad.apply(t([1.0]), t([1.0])).backward()

    class NonTensorGrad(Function):
        @staticmethod
        def forward(ctx, x, k):
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g, g

    with pytest.raises(RuntimeError, match="but the corresponding forward input was not a "
                                           "Variable"):
        NonTensorGrad.apply(t([1.0]), 2.0).backward()


def test_custom_op_register_autograd():
    lib = ember.library

    @lib.custom_op("autograd_test::mysin")
    def mysin(x):
        return ember.tensor(np.sin(x.numpy(force=True)), dtype=x.dtype)

    x = t([0.1, 0.7])
    # without a registered derivative the host code breaks the graph: backward must say so
    y = mysin(x)
    with pytest.raises(NotImplementedError, match="autograd_test::mysin"):
        y.sum().backward()

    def setup_context(ctx, inputs, output):
        (xx,) = inputs
        ctx.save_for_backward(xx)

    def backward(ctx, g):
        (xx,) = ctx.saved_tensors
        return g * xx.cos()

    mysin.register_autograd(backward, setup_context=setup_context)
    y = mysin(x)
    assert y.grad_fn.name() == "GeneratedBackwardFor_autograd_test_mysin"
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.cos([0.1, 0.7]))
    assert gradcheck(mysin, (t([0.2, -0.4]),))

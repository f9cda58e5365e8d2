"""``ember.nn.grad`` (torch.nn.grad): the gradients of a convolution with respect to its input
and its weight, given the output's gradient — one call of the ``convolution_backward`` op with
only the wanted result in its output mask (the tensor standing in for the other operand is an
expanded one-element tensor: the kernel reads its shape only)."""
from __future__ import annotations

from ..ops.nn.conv import convolution_backward_op

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight", "conv3d_input",
           "conv3d_weight"]


def _tuple(v, n):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


def _grad_of(n, which, input, weight, grad_output, stride, padding, dilation, groups):
    """Result ``which`` (0: input, 1: weight) of convolution_backward; the operand given as a
    size becomes an expanded one-element stand-in."""
    if which == 0:
        input = grad_output.new_empty(1).expand(tuple(input))
    else:
        weight = grad_output.new_empty(1).expand(tuple(weight))
    return convolution_backward_op(grad_output, input, weight, None, _tuple(stride, n),
                                   _tuple(padding, n), _tuple(dilation, n), False, [0] * n,
                                   groups, [which == 0, which == 1, False])[which]


def _named(fn, n, what):
    fn.__name__ = fn.__qualname__ = f"conv{n}d_{what}"
    fn.__doc__ = f"The gradient of conv{n}d with respect to its {what}."
    return fn


def _input_grad(n):
    def conv_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
        return _grad_of(n, 0, input_size, weight, grad_output, stride, padding, dilation, groups)
    return _named(conv_input, n, "input")


def _weight_grad(n):
    def conv_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
        return _grad_of(n, 1, input, weight_size, grad_output, stride, padding, dilation, groups)
    return _named(conv_weight, n, "weight")


conv1d_input, conv2d_input, conv3d_input = (_input_grad(n) for n in (1, 2, 3))
conv1d_weight, conv2d_weight, conv3d_weight = (_weight_grad(n) for n in (1, 2, 3))

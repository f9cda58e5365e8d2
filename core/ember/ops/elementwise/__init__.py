"""Elementwise ops: what they mean (promotion, broadcasting, in-place rules, derivatives),
defined once.

* ``unary``       one row per op (exp, sin, relu, isnan…) plus round and nan_to_num
* ``binary``      one row per op (mul, pow, eq, bitwise_and…) plus add, sub, div, rsub
* ``selection``   where, clamp, heaviside
* ``integer``     gcd, lcm (compositions)
* ``floating_point`` frexp, ldexp, nextafter, float_power (compositions)
* ``ternary``     addcmul, addcdiv, lerp
* ``activation``  activations with parameters (gelu, softplus, leaky_relu, elu, hardtanh)
* ``activation_nodes`` glu, log_sigmoid, hardshrink, softshrink, celu (torch's own nodes)
* ``complex_numbers`` angle, sgn, complex, polar (composites with PyTorch's derivatives)
* ``operators``   Tensor's Python operators
* ``special``     special functions (i0, sinc, erfcx, ndtri, zeta, polygamma, mvlgamma…)
* ``backward``    fused backward ops: threshold_backward, tanh_backward, sigmoid_backward
* ``closeness``   isclose, allclose, equal (composites: no op, no kernel)
* ``_rules``      dtype rules, operand checks and meta functions the family shares

``compute`` is the dtype the values are computed in (PyTorch's result type); predicates and
comparisons return bool, the rest return ``compute``. The array-module kernels are in
``ember.kit.elementwise``.
"""
from . import (backward, unary, binary, selection, activation, operators,  # noqa: F401 - order
               special, closeness, activation_nodes)
from . import complex_numbers  # noqa: F401
from .complex_numbers import angle, angle_op, complex, complex_op, polar, polar_op, sgn
from . import ternary  # noqa: F401
from .ternary import addcdiv, addcdiv_, addcmul, addcmul_, lerp, lerp_
from .activation import elu, gelu, hardtanh, leaky_relu, softplus
from .binary import (ALIASES_BINARY, BINARY, add, add_, add_op, binary_api, binary_ops, div,
                     div_, divide, rsub, sub, sub_, subtract, true_divide)
from .selection import clamp, clamp_, clamp_max, clamp_min, clip, clip_, heaviside, where
from . import integer, floating_point  # noqa: F401
from .integer import gcd, lcm
from .floating_point import float_power, frexp, ldexp, nextafter
from .unary import (ALIASES_UNARY, UNARY, conj, conj_physical_op, nan_to_num, round, unary_api,
                    unary_ops)
from .special import (i0, mvlgamma, polygamma, polygamma_op, sinc, special_api,
                      special_ops)

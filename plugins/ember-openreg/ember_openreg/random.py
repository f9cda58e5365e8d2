"""Random numbers: the core's host Philox state, used the way CUDA uses its Philox offset.

Kernels run later, on a worker, but ``get_state``/``manual_seed`` act on the host *now*. So a
launch does not share the generator with the worker: it takes a snapshot of the Philox state
for the kernel and moves the host state past a fixed, huge range (2**64 counter blocks) that the
kernel can never exhaust. Every launch therefore gets its own stream of numbers, reproducibly
under ``manual_seed``, whatever order the workers run in.

Other random ops (randint, bernoulli_, multinomial…) run on the CPU fallback, which draws from
``gen.impl`` on the host directly: the same generator, so ``manual_seed`` reproduces them too.
"""
from __future__ import annotations

import math
from types import MethodType

import numpy as np

from ember.runtime import HostGenerator

_LAUNCH_STRIDE = 1 << 64


class OpenRegGenerator(HostGenerator):
    def for_launch(self) -> np.random.Generator:
        """A numpy Generator owned by one kernel; the host state moves past its range."""
        host = self.impl.bit_generator
        snapshot = np.random.Philox(0)
        snapshot.state = host.state
        host.advance(_LAUNCH_STRIDE)
        return np.random.Generator(snapshot)


def _work_dtype(dtype):
    """The real dtype to draw in (numpy draws nothing narrower than float32)."""
    return np.float64 if dtype.name in ("float64", "complex128") else np.float32


def _real_view(out, dtype):
    """The output's bytes as real numbers: a complex tensor is drawn as its (re, im) pairs."""
    return out.reshape(-1).view(_work_dtype(dtype) if dtype.is_complex else out.dtype)


def _uniform(g, out, dtype, low, high):
    target = _real_view(out, dtype)
    if dtype.name in ("float16", "bfloat16"):
        # as many random bits as the mantissa holds, so rounding can never produce `high`=1
        digits = 11 if dtype.name == "float16" else 8
        u = g.integers(0, 1 << digits, target.shape, dtype=np.int32) * (1.0 / (1 << digits))
    else:
        u = g.random(target.shape, dtype=_work_dtype(dtype))
    if (low, high) != (0.0, 1.0):
        u = u * (high - low) + low
    np.copyto(target, u, casting="unsafe")


def _normal(g, out, dtype, mean, std):
    target = _real_view(out, dtype)
    z = g.standard_normal(target.shape, dtype=_work_dtype(dtype))
    np.copyto(target, z * std + mean, casting="unsafe")


def _launch(be, out, name, body, gen, *params):
    # draws happen on the worker into the output's own (contiguous) memory
    be.launch(out.device, name, _draw, be, body, out, gen.for_launch(), params)
    return out


def _draw(be, body, out, g, params):
    body(g, be.native(out), out.dtype, *params)


def _inplace(be, self, name, body, gen, *params):
    if self.is_contiguous():
        return _launch(be, self, name, body, gen, *params)
    # a strided target: draw into a fresh tensor, then a device copy into the view
    fresh = _launch(be, be.new_tensor(self.shape, self.dtype, self.device), name, body, gen,
                    *params)
    return be.copy_(self, fresh)


def rand(be, size, gen, dtype, device):
    return _launch(be, be.new_tensor(size, dtype, device), "rand", _uniform, gen, 0.0, 1.0)


def randn(be, size, gen, dtype, device):
    scale = math.sqrt(0.5) if dtype.is_complex else 1.0  # unit variance for the complex value
    return _launch(be, be.new_tensor(size, dtype, device), "randn", _normal, gen, 0.0, scale)


def uniform_(be, self, low, high, gen):
    return _inplace(be, self, "uniform_", _uniform, gen, low, high)


def normal_(be, self, mean, std, gen):
    if self.dtype.is_complex:
        std = std * math.sqrt(0.5)
    return _inplace(be, self, "normal_", _normal, gen, mean, std)


TABLE = {"rand": rand, "randn": randn, "uniform_": uniform_, "normal_": normal_}


def register(backend) -> None:
    """Bind every kernel of this module into ``backend.kernels``."""
    for name, fn in TABLE.items():
        backend.kernels.register(name, MethodType(fn, backend))

"""``convolution`` / ``convolution_backward`` on the device: im2col + the tiled GEMM, col2im.

The columns of a (zero-padded) input are a strided view of it (``as_strided``: no launch) made
contiguous by one copy launch; one batched ``matmul`` (``ops_linalg``'s GEMM, batched over the
samples and groups) multiplies them with the weight. The adjoint (input gradient, transposed
convolution) is a GEMM to columns and ``ops_pool.col2im``, a gather kernel that sums each input
element's window entries in one launch. The weight gradient is a GEMM against the columns and
a sum over the batch. Same primitives and layouts as the array kit (``ember.kit.convolution``).
"""
from __future__ import annotations

import math

from ember.runtime import get_op

from . import ops_pool


def _padded(backend, z, padding):
    if not any(padding):
        return ops_pool.contiguous(backend, z)
    st, _ = backend._sq(z.device)
    shape = z._shape[:2] + tuple(s + 2 * p for s, p in zip(z._shape[2:], padding))
    out = backend._new(st, shape, z.dtype, z.device)
    get_op("fill_")(out, 0)
    interior = out.as_strided(z._shape, out._stride,
                              sum(p * s for p, s in zip(padding, out._stride[2:])))
    backend.copy_(interior, z)
    return out


def _columns(backend, zp, groups, kernel, stride, dilation, out_sp):
    """(N, G, C/G * prod(k), prod(out)), contiguous."""
    n, c = zp._shape[:2]
    st = zp._stride
    nsp = len(kernel)
    shape = (n, groups, c // groups) + tuple(kernel) + tuple(out_sp)
    strides = (st[0], st[1] * (c // groups), st[1]) + \
        tuple(st[2 + i] * dilation[i] for i in range(nsp)) + \
        tuple(st[2 + i] * stride[i] for i in range(nsp))
    win = zp.as_strided(shape, strides, zp._offset)
    stt, _ = backend._sq(zp.device)
    cols = backend._new(stt, shape, zp.dtype, zp.device)
    backend.copy_(cols, win)
    return cols.view(n, groups, (c // groups) * math.prod(kernel), math.prod(out_sp))


def _forward(backend, z, w, stride, padding, dilation, groups):
    kernel = w._shape[2:]
    out_sp = tuple((s + 2 * p - d * (k - 1) - 1) // st + 1 for s, k, st, p, d in
                   zip(z._shape[2:], kernel, stride, padding, dilation))
    n, oc = z._shape[0], w._shape[0]
    cols = _columns(backend, _padded(backend, z, padding), groups, kernel, stride, dilation,
                    out_sp)
    wm = ops_pool.contiguous(backend, w).view(groups, oc // groups, -1)
    return get_op("matmul")(wm, cols).view((n, oc) + out_sp)


def _input_grad(backend, g, w, in_sp, stride, padding, dilation, groups):
    n, oc = g._shape[:2]
    out_sp = g._shape[2:]
    kernel = w._shape[2:]
    cg = w._shape[1]
    wm = ops_pool.contiguous(backend, w).view(groups, oc // groups, cg * math.prod(kernel))
    gm = ops_pool.contiguous(backend, g).view(n, groups, oc // groups, -1)
    cols = get_op("matmul")(wm.transpose(1, 2), gm)               # (N, G, Cg*K, L)
    return ops_pool.col2im(backend, cols, (n, groups * cg) + tuple(in_sp), kernel, stride,
                           padding, dilation, out_sp)


def _weight_grad(backend, g, z, kernel, stride, padding, dilation, groups):
    n, oc = g._shape[:2]
    out_sp = g._shape[2:]
    cols = _columns(backend, _padded(backend, z, padding), groups, kernel, stride, dilation,
                    out_sp)
    gm = ops_pool.contiguous(backend, g).view(n, groups, oc // groups, -1)
    r = get_op("matmul")(gm, cols.transpose(2, 3))                 # (N, G, OCg, Cg*K)
    r = get_op("sum")(r, (0,), False, r.dtype)
    return r.reshape((oc, z._shape[1] // groups) + tuple(kernel))


def convolution(backend, input, weight, bias, stride, padding, dilation, transposed,
                output_padding, groups):
    if transposed:
        in_sp = tuple((i - 1) * s - 2 * p + d * (k - 1) + 1 + o for i, s, p, d, k, o in
                      zip(input._shape[2:], stride, padding, dilation, weight._shape[2:],
                          output_padding))
        r = _input_grad(backend, input, weight, in_sp, stride, padding, dilation, groups)
    else:
        r = _forward(backend, input, weight, stride, padding, dilation, groups)
    if bias is not None:
        get_op("add_")(r, bias.view((bias._shape[0],) + (1,) * (r.ndim - 2)), 1, r.dtype)
    return r


def convolution_backward(backend, grad_output, input, weight, bias_sizes, stride, padding,
                         dilation, transposed, output_padding, groups, output_mask):
    g = grad_output
    gi = gw = gb = None
    if output_mask[0]:
        if transposed:
            # output padding of a stride or more adds windows past the input's: crop them
            gi = _forward(backend, g, weight, stride, padding, dilation, groups)
            if gi._shape[2:] != input._shape[2:]:
                for d, n in enumerate(input._shape[2:]):
                    gi = gi.narrow(2 + d, 0, n)
                gi = gi.contiguous()
        else:
            gi = _input_grad(backend, g, weight, input._shape[2:], stride, padding, dilation,
                             groups)
    if output_mask[1]:
        if transposed:
            gw = _weight_grad(backend, input, g, weight._shape[2:], stride, padding, dilation,
                              groups)
        else:
            gw = _weight_grad(backend, g, input, weight._shape[2:], stride, padding, dilation,
                              groups)
    if output_mask[2]:
        gb = get_op("sum")(g, (0,) + tuple(range(2, g.ndim)), False, g.dtype)
    return gi, gw, gb


def register(backend):
    from functools import partial
    backend.kernels.register("convolution", partial(convolution, backend))
    backend.kernels.register("convolution_backward", partial(convolution_backward, backend))

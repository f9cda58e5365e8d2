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

from ember.kit.binding import bind
from ember.runtime import get_op, offset_of, shape_of, strides_of

from . import ops_pool


def _padded(backend, z, padding):
    if not any(padding):
        return ops_pool.contiguous(backend, z)
    st, _ = backend.state_queue(z.device)
    shape = shape_of(z)[:2] + tuple(s + 2 * p for s, p in zip(shape_of(z)[2:], padding))
    out = backend.new_tensor(st, shape, z.dtype, z.device)
    get_op("fill_")(out, 0)
    interior = out.as_strided(shape_of(z), strides_of(out),
                              sum(p * s for p, s in zip(padding, strides_of(out)[2:])))
    backend.copy_(interior, z)
    return out


def _columns(backend, zp, groups, kernel, stride, dilation, out_sp):
    """(N, G, C/G * prod(k), prod(out)), contiguous."""
    n, c = shape_of(zp)[:2]
    st = strides_of(zp)
    nsp = len(kernel)
    shape = (n, groups, c // groups) + tuple(kernel) + tuple(out_sp)
    strides = (st[0], st[1] * (c // groups), st[1]) + \
        tuple(st[2 + i] * dilation[i] for i in range(nsp)) + \
        tuple(st[2 + i] * stride[i] for i in range(nsp))
    win = zp.as_strided(shape, strides, offset_of(zp))
    stt, _ = backend.state_queue(zp.device)
    cols = backend.new_tensor(stt, shape, zp.dtype, zp.device)
    backend.copy_(cols, win)
    return cols.view(n, groups, (c // groups) * math.prod(kernel), math.prod(out_sp))


def _forward(backend, z, w, stride, padding, dilation, groups):
    kernel = shape_of(w)[2:]
    out_sp = tuple((s + 2 * p - d * (k - 1) - 1) // st + 1 for s, k, st, p, d in
                   zip(shape_of(z)[2:], kernel, stride, padding, dilation))
    n, oc = shape_of(z)[0], shape_of(w)[0]
    cols = _columns(backend, _padded(backend, z, padding), groups, kernel, stride, dilation,
                    out_sp)
    wm = ops_pool.contiguous(backend, w).view(groups, oc // groups, -1)
    return get_op("matmul")(wm, cols).view((n, oc) + out_sp)


def _input_grad(backend, g, w, in_sp, stride, padding, dilation, groups):
    n, oc = shape_of(g)[:2]
    out_sp = shape_of(g)[2:]
    kernel = shape_of(w)[2:]
    cg = shape_of(w)[1]
    wm = ops_pool.contiguous(backend, w).view(groups, oc // groups, cg * math.prod(kernel))
    gm = ops_pool.contiguous(backend, g).view(n, groups, oc // groups, -1)
    cols = get_op("matmul")(wm.transpose(1, 2), gm)               # (N, G, Cg*K, L)
    return ops_pool.col2im(backend, cols, (n, groups * cg) + tuple(in_sp), kernel, stride,
                           padding, dilation, out_sp)


def _weight_grad(backend, g, z, kernel, stride, padding, dilation, groups):
    n, oc = shape_of(g)[:2]
    out_sp = shape_of(g)[2:]
    cols = _columns(backend, _padded(backend, z, padding), groups, kernel, stride, dilation,
                    out_sp)
    gm = ops_pool.contiguous(backend, g).view(n, groups, oc // groups, -1)
    r = get_op("matmul")(gm, cols.transpose(2, 3))                 # (N, G, OCg, Cg*K)
    r = get_op("sum")(r, (0,), False, r.dtype)
    return r.reshape((oc, shape_of(z)[1] // groups) + tuple(kernel))


def convolution(backend, input, weight, bias, stride, padding, dilation, transposed,
                output_padding, groups):
    if transposed:
        in_sp = tuple((i - 1) * s - 2 * p + d * (k - 1) + 1 + o for i, s, p, d, k, o in
                      zip(shape_of(input)[2:], stride, padding, dilation, shape_of(weight)[2:],
                          output_padding))
        r = _input_grad(backend, input, weight, in_sp, stride, padding, dilation, groups)
    else:
        r = _forward(backend, input, weight, stride, padding, dilation, groups)
    if bias is not None:
        get_op("add_")(r, bias.view((shape_of(bias)[0],) + (1,) * (r.ndim - 2)), 1, r.dtype)
    return r


def convolution_backward(backend, grad_output, input, weight, bias_sizes, stride, padding,
                         dilation, transposed, output_padding, groups, output_mask):
    g = grad_output
    gi = gw = gb = None
    if output_mask[0]:
        if transposed:
            # output padding of a stride or more adds windows past the input's: crop them
            gi = _forward(backend, g, weight, stride, padding, dilation, groups)
            if shape_of(gi)[2:] != shape_of(input)[2:]:
                for d, n in enumerate(shape_of(input)[2:]):
                    gi = gi.narrow(2 + d, 0, n)
                gi = gi.contiguous()
        else:
            gi = _input_grad(backend, g, weight, shape_of(input)[2:], stride, padding, dilation,
                             groups)
    if output_mask[1]:
        if transposed:
            gw = _weight_grad(backend, input, g, shape_of(weight)[2:], stride, padding, dilation,
                              groups)
        else:
            gw = _weight_grad(backend, g, input, shape_of(weight)[2:], stride, padding, dilation,
                              groups)
    if output_mask[2]:
        gb = get_op("sum")(g, (0,) + tuple(range(2, g.ndim)), False, g.dtype)
    return gi, gw, gb


TABLE = {"convolution": convolution, "convolution_backward": convolution_backward}


def register(backend):
    bind(backend, TABLE)

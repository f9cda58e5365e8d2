"""Sampling at arbitrary points: ``grid_sampler`` (behind ``F.grid_sample``) and its own
backward op ``grid_sampler_backward``; ``affine_grid`` (a composite, as in PyTorch).

``grid_sampler(Tensor input, Tensor grid, int interpolation_mode, int padding_mode, bool
align_corners)``: input (N, C, H, W) with grid (N, Ho, Wo, 2), or (N, C, D, H, W) with grid
(N, Do, Ho, Wo, 3); grid values in [-1, 1] address the input's extent (x first: the last
dim). Modes 0 bilinear (trilinear in 3-D), 1 nearest (round half to even), 2 bicubic (2-D,
A = -0.75); padding 0 zeros, 1 border, 2 reflection — PyTorch's ``GridSampler.h`` formulas,
including the gradient multipliers of the clip and reflection (zero at and beyond a border).

``grid_sampler_backward(grad_output, input, grid, ...) -> (grad_input, grad_grid)`` is the
kernels' backward; its composite differentiates the forward composite (ember ops: gathers,
elementwise weights), which gives double backward.
"""
from __future__ import annotations

import itertools

from .. import _dtype
from .._tensor import Tensor
from ..dispatch.dispatcher import define
from ..dispatch.facets import Derivative
from ..dispatch.grad_mode import enable_grad
from . import _primitives, factories as _fac, linalg as _la
from . import elementwise as _ew
from .shape import stack

__all__ = ["grid_sampler", "affine_grid_generator"]

BILINEAR, NEAREST, BICUBIC = 0, 1, 2
ZEROS, BORDER, REFLECTION = 0, 1, 2
CUBIC_A = -0.75


# -- metas --------------------------------------------------------------------------------------
def check_operands(op, input, grid, mode):
    if not isinstance(input, Tensor) or not isinstance(grid, Tensor):
        raise TypeError(f"{op}(): expected input and grid to be Tensors")
    if input.ndim not in (4, 5) or grid.ndim != input.ndim:
        raise RuntimeError(f"{op}(): expected 4D or 5D input and grid with same number of "
                           f"dimensions, but got input with sizes {list(input._shape)} and grid "
                           f"with sizes {list(grid._shape)}")
    if input.dtype is not grid.dtype:
        raise RuntimeError(f"{op}(): expected input and grid to have same dtype, but input has "
                           f"{input.dtype.name} and grid has {grid.dtype.name}")
    if input._shape[0] != grid._shape[0]:
        raise RuntimeError(f"{op}(): expected grid and input to have same batch size, but got "
                           f"input with sizes {list(input._shape)} and grid with sizes "
                           f"{list(grid._shape)}")
    nd = input.ndim - 2
    if grid._shape[-1] != nd:
        raise RuntimeError(f"{op}(): expected grid to have size {nd} in last dimension, but got "
                           f"grid with sizes {list(grid._shape)}")
    if any(s == 0 for s in input._shape[2:]):
        raise RuntimeError(f"{op}(): expected input to have non-empty spatial dimensions, but "
                           f"input has sizes {list(input._shape)} with dimension "
                           f"{next(i for i, s in enumerate(input._shape) if i >= 2 and s == 0)} "
                           f"being empty")
    if mode == BICUBIC and nd != 2:
        raise RuntimeError(f"{op}(): bicubic interpolation only supports 4D input")
    if input.dtype.category != _dtype.FLOATING:
        raise NotImplementedError(f"\"grid_sampler_{nd}d_cpu_kernel_impl\" not implemented for "
                                  f"'{_title(input.dtype)}'")


def _title(d):
    return {"int64": "Long", "int32": "Int", "bool": "Bool", "uint8": "Byte"}.get(d.name, d.name)


def _grid_sampler_meta(input, grid, mode, padding_mode, align_corners):
    check_operands("grid_sampler", input, grid, mode)
    return tuple(input._shape[:2]) + tuple(grid._shape[1:-1]), input.dtype


def _grid_sampler_backward_meta(grad_output, input, grid, mode, padding_mode, align_corners):
    check_operands("grid_sampler_backward", input, grid, mode)
    expected = tuple(input._shape[:2]) + tuple(grid._shape[1:-1])
    if tuple(grad_output._shape) != expected:
        raise RuntimeError(f"grid_sampler_backward: expected grad_output of shape "
                           f"{list(expected)}, got {list(grad_output._shape)}")
    return (input._shape, input.dtype), (grid._shape, grid.dtype)


# -- the composite (ember ops) ------------------------------------------------------------------
def _unnormalize(g, size, align_corners):
    if align_corners:
        return (g + 1) * ((size - 1) / 2)
    return ((g + 1) * size - 1) / 2


def _reflect(x, twice_low, twice_high):
    if twice_low == twice_high:
        return x * 0
    lo = twice_low / 2
    span = (twice_high - twice_low) / 2
    x = (x - lo).abs()
    extra = _ew.binary_api["fmod"](x, span)
    flips = (x / span).floor()
    even = _ew.binary_api["remainder"](flips, 2).eq(0)
    return _ew.where(even, extra + lo, span - extra + lo)


def _coordinates(x, size, padding_mode, align_corners):
    if padding_mode == BORDER:
        return x.clamp(0, size - 1)
    if padding_mode == REFLECTION:
        x = _reflect(x, 0, 2 * (size - 1)) if align_corners else _reflect(x, -1, 2 * size - 1)
        return x.clamp(0, size - 1)
    return x


def _cubic_near(x):
    """Keys' cubic convolution kernel for 0 <= x <= 1."""
    A = CUBIC_A
    return ((A + 2) * x - (A + 3)) * x * x + 1


def _cubic_far(x):
    """Keys' cubic convolution kernel for 1 <= x <= 2."""
    A = CUBIC_A
    return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A


def cubic_coefficients(t):
    """The weights of the four taps around a point at fraction ``t`` past the second one
    (works on Tensors and numpy arrays alike)."""
    return [_cubic_far(t + 1), _cubic_near(t), _cubic_near(1 - t), _cubic_far(2 - t)]


def _gather(flat, index, valid):
    """flat (N, C, S) at index (N, L) -> (N, C, L); 0 where not ``valid``."""
    n, c = flat._shape[:2]
    v = flat.gather(2, index.clamp(0, flat._shape[2] - 1).unsqueeze(1).expand(
        n, c, index._shape[1]))
    return _ew.where(valid.unsqueeze(1), v, 0.0)


def _grid_sample_composite(input, grid, mode, padding_mode, align_corners):
    n, c = input._shape[:2]
    spatial = tuple(input._shape[2:])
    nd = len(spatial)
    out_spatial = tuple(grid._shape[1:-1])
    g = grid.reshape(n, -1, nd)
    flat = input.reshape(n, c, -1)
    sizes = spatial[::-1]  # coordinate k addresses spatial dim nd-1-k
    strides = []
    acc = 1
    for s in sizes:
        strides.append(acc)
        acc *= s
    coords = [_unnormalize(g[..., k], sizes[k], align_corners) for k in range(nd)]
    if mode != BICUBIC:
        coords = [_coordinates(x, sizes[k], padding_mode, align_corners)
                  for k, x in enumerate(coords)]
    out = None
    if mode == NEAREST:
        idx = [_ew.round(x) for x in coords]
        taps = [(idx, None)]
    elif mode == BILINEAR:
        base = [x.floor() for x in coords]
        frac = [x - b for x, b in zip(coords, base)]
        taps = []
        for corner in itertools.product((0, 1), repeat=nd):
            w = None
            for k, o in enumerate(corner):
                wk = frac[k] if o else 1 - frac[k]
                w = wk if w is None else w * wk
            taps.append(([b + o for b, o in zip(base, corner)], w))
    else:
        base = [x.floor() for x in coords]
        coef = [cubic_coefficients(x - b) for x, b in zip(coords, base)]
        taps = []
        for i, j in itertools.product(range(4), repeat=2):
            pos = [_coordinates(base[0] + (i - 1), sizes[0], padding_mode, align_corners),
                   _coordinates(base[1] + (j - 1), sizes[1], padding_mode, align_corners)]
            pos = [p.trunc() if padding_mode != ZEROS else p for p in pos]
            taps.append((pos, coef[0][i] * coef[1][j]))
    for pos, w in taps:
        valid = None
        lin = None
        for k, p in enumerate(pos):
            ok = p.ge(0).logical_and(p.le(sizes[k] - 1))
            valid = ok if valid is None else valid.logical_and(ok)
            term = p.detach() * strides[k]
            lin = term if lin is None else lin + term
        v = _gather(flat, lin.to(_dtype.int64), valid)
        term = v if w is None else v * w.unsqueeze(1)
        out = term if out is None else out + term
    return out.reshape((n, c) + out_spatial)


def _grid_sample_backward_composite(grad_output, input, grid, mode, padding_mode,
                                    align_corners):
    with enable_grad():
        x = input if input.requires_grad else input.detach().requires_grad_(True)
        g = grid if grid.requires_grad else grid.detach().requires_grad_(True)
        out = _grid_sample_composite(x, g, mode, padding_mode, align_corners)
        gi, gg = _primitives.grad(out, (x, g), grad_output, create_graph=True, allow_unused=True)
    gi = gi if gi is not None else input * 0
    gg = gg if gg is not None else grid * 0
    return gi, gg


def _node_name(input, *rest):
    return f"GridSampler{input.ndim - 2}DBackward0"


def _grid_sampler_derivative(ctx, g, input, grid, mode, padding_mode, align_corners):
    gi, gg = grid_sampler_backward_op(g, input, grid, mode, padding_mode, align_corners)
    return (gi if ctx.needs(0) else None, gg if ctx.needs(1) else None)


grid_sampler_op = define(
    "grid_sampler(Tensor input, Tensor grid, int interpolation_mode, int padding_mode, "
    "bool align_corners) -> Tensor", meta=_grid_sampler_meta, composite=_grid_sample_composite,
    derivative=Derivative(_grid_sampler_derivative, save=("input", "grid"), name=_node_name))
grid_sampler_backward_op = define(
    "grid_sampler_backward(Tensor grad_output, Tensor input, Tensor grid, int "
    "interpolation_mode, int padding_mode, bool align_corners) -> (Tensor grad_input, "
    "Tensor grad_grid)", meta=_grid_sampler_backward_meta,
    composite=_grid_sample_backward_composite)


def grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
    """``torch.grid_sampler``: the op with its checks (``F.grid_sample`` names the modes)."""
    check_operands("grid_sampler", input, grid, interpolation_mode)
    return grid_sampler_op(input, grid, int(interpolation_mode), int(padding_mode),
                           bool(align_corners))


# -- affine_grid --------------------------------------------------------------------------------
def _base_coordinates(n, align_corners, device, dtype):
    if n <= 1:
        return _fac.zeros(max(n, 0), dtype=dtype, device=device) if n == 0 else \
            _fac.zeros(1, dtype=dtype, device=device)
    r = _fac.linspace(-1, 1, n, dtype=dtype, device=device)
    return r if align_corners else r * ((n - 1) / n)


def affine_grid_generator(theta, size, align_corners):
    """(N, *spatial, 2|3) sample points of the affine maps ``theta`` (N, 2, 3) or (N, 3, 4):
    the base grid (x, y[, z], 1) of each output position times theta^T (one batched matmul)."""
    n, _, *spatial = size
    dev, dt = theta.device, theta.dtype
    axes = [_base_coordinates(s, align_corners, dev, dt) for s in spatial]
    nd = len(spatial)
    # coordinate k varies along spatial dim nd-1-k (x is the last dim)
    parts = []
    for k in range(nd):
        dim = nd - 1 - k
        shape = [1] * nd
        shape[dim] = spatial[dim]
        parts.append(axes[dim].reshape(shape).expand(*spatial))
    parts.append(_fac.ones(tuple(spatial), dtype=dt, device=dev))
    base = stack(parts, -1).reshape(1, -1, nd + 1)
    grid = _la.matmul(base, theta.transpose(1, 2))
    return grid.reshape(n, *spatial, nd)

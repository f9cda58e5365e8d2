"""The rest of torch's Tensor and function surface that composes from ember ops (issue #25):
Python protocol methods PyTorch keeps (``__contains__``, ``__reversed__``, the ``__div__``
family...), in-place forms (``clamp_min_``, ``fill_diagonal_``), ``addbmm``/``addr``/
``adjoint``, the remaining random fills (``log_normal_``, ``cauchy_``, ``geometric_``),
``nextafter``/``frexp``, ``unravel_index``, ``quantile``/``nanquantile``,
``unique_consecutive`` and ``nonzero_static``, in-place view and resize methods."""
from __future__ import annotations

import math
from collections import namedtuple

from .. import _dtype
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad

__all__ = ["addbmm", "addr", "adjoint", "clone", "detach", "nextafter", "frexp",
           "unravel_index", "quantile", "nanquantile", "unique_consecutive", "nonzero_static"]


def _ember():
    import ember
    return ember


def _tensor(x, fn, name="input"):
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument '{name}' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")


# -- products ---------------------------------------------------------------------------------
def addbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * sum_b batch1[b] @ batch2[b]``."""
    _tensor(input, "addbmm")
    if batch1.ndim != 3 or batch2.ndim != 3:
        raise RuntimeError(f"batch1 must be a 3D tensor; batch2 must be a 3D tensor (got "
                           f"{batch1.ndim}D and {batch2.ndim}D)")
    prod = (batch1 @ batch2).sum(0)
    result = _scaled_sum(input, prod, beta, alpha)
    return out.copy_(result) if out is not None else result


def addr(input, vec1, vec2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * outer(vec1, vec2)``."""
    _tensor(input, "addr")
    if vec1.ndim != 1 or vec2.ndim != 1:
        raise RuntimeError(f"addr: Expected 1-D argument vec1, but got {vec1.ndim}-D"
                           if vec1.ndim != 1 else
                           f"addr: Expected 1-D argument vec2, but got {vec2.ndim}-D")
    prod = vec1.unsqueeze(1) * vec2.unsqueeze(0)
    if prod.dtype is _dtype.bool_:
        result = (input & bool(beta)) | (prod & bool(alpha)) if input.dtype is _dtype.bool_ \
            else _scaled_sum(input, prod, beta, alpha)
    else:
        result = _scaled_sum(input, prod, beta, alpha)
    return out.copy_(result) if out is not None else result


def _scaled_sum(input, prod, beta, alpha):
    # beta == 0 ignores input entirely (NaN and inf included), as in PyTorch
    scaled = prod if alpha == 1 else prod * alpha
    if beta == 0:
        return scaled + input.new_zeros(()).expand(*input.shape) * 0 if \
            tuple(input.shape) != tuple(scaled.shape) else scaled.clone()
    return input * beta + scaled if beta != 1 else input + scaled


def adjoint(input):
    """The conjugate transpose of the last two dims, as a view."""
    _tensor(input, "adjoint")
    if input.ndim < 2:
        raise RuntimeError("tensor.adjoint() is only supported on matrices or batches of "
                           "matrices. Got 1-D tensor." if input.ndim == 1 else
                           "tensor.adjoint() is only supported on matrices or batches of "
                           "matrices. Got 0-D tensor.")
    t = input.transpose(-2, -1)
    return t.conj() if input.is_complex() else t


def clone(input, *, memory_format=None):
    _tensor(input, "clone")
    return input.clone(memory_format=memory_format)


def detach(input):
    _tensor(input, "detach")
    return input.detach()


# -- floating-point structure -------------------------------------------------------------------
_INT_OF = {"float32": _dtype.int32, "float64": _dtype.int64}


_PRECISION = {"float32": (24, -125, 3.4028234663852886e38),
              "float64": (53, -1021, 1.7976931348623157e308)}


def nextafter(input, other):
    """The next representable value after ``input`` toward ``other``: one unit in the last
    place (from ``frexp``'s exponent; half of it moving toward 0 from a power of two), in plain
    arithmetic, so it batches under ember.func.vmap like any elementwise composite."""
    _tensor(input, "nextafter")
    em = _ember()
    if not isinstance(other, Tensor):
        other = em.tensor(other, dtype=input.dtype, device=input.device)
    if input.dtype not in (_dtype.float32, _dtype.float64) or other.dtype is not input.dtype:
        raise RuntimeError(f"\"nextafter_cpu\" not implemented for '{input.dtype}' and "
                           f"'{other.dtype}' (expected float32 or float64, the same for both)")
    digits, emin, largest = _PRECISION[input.dtype.name]
    x, y = em.broadcast_tensors(input.detach(), other.detach())
    mantissa, exponent = frexp(x)
    e = exponent.to(_dtype.float64).clamp_min(emin)
    ulp = em.pow(2.0, e - digits)
    toward_zero = (y - x).sign().ne(x.sign())
    half = toward_zero & mantissa.abs().eq(0.5) & exponent.to(_dtype.float64).gt(emin)
    step = em.where(half, ulp / 2, ulp)
    up = y.gt(x)
    moved = (x.to(_dtype.float64) + em.where(up, step, -step)).to(x.dtype)
    tiny = em.tensor(2.0 ** (emin - digits), dtype=_dtype.float64, device=x.device).to(x.dtype)
    out = em.where(x.eq(0), em.where(y.gt(0), tiny, -tiny), moved)
    big = em.tensor(largest, dtype=x.dtype, device=x.device)
    out = em.where(x.isinf() & x.ne(y), em.where(x.gt(0), big, -big), out)
    out = em.where(x.eq(y), y, out)
    nan = x.ne(x) | y.ne(y)
    return em.where(nan, x + y, out)


def frexp(input):
    """(mantissa, exponent) with ``input = mantissa * 2 ** exponent``, |mantissa| in [0.5, 1)
    (0, inf and NaN keep themselves with exponent 0)."""
    _tensor(input, "frexp")
    em = _ember()
    if not input.is_floating_point():
        raise RuntimeError(f"torch.frexp() only supports floating-point dtypes, but got "
                           f"{input.dtype}")
    x = input.detach()
    finite = x.isfinite() & x.ne(0)
    safe = em.where(finite, x.abs(), em.ones((), dtype=x.dtype, device=x.device))
    e = safe.to(_dtype.float64).log2().floor() + 1
    m = safe.to(_dtype.float64) / em.pow(2.0, e)
    # log2 rounds near powers of two: one correction step each way
    e = em.where(m.ge(1), e + 1, em.where(m.lt(0.5), e - 1, e))
    m = safe.to(_dtype.float64) / em.pow(2.0, e)
    mantissa = em.where(finite, (m * x.sign().to(_dtype.float64)).to(x.dtype), x)
    exponent = em.where(finite, e, em.zeros((), dtype=e.dtype, device=e.device))
    return namedtuple("frexp", ["mantissa", "exponent"])(mantissa, exponent.to(_dtype.int32))


# -- indices ------------------------------------------------------------------------------------
def unravel_index(indices, shape):
    """The coordinates, one tensor per dim of ``shape``, of flat ``indices``."""
    em = _ember()
    if not isinstance(indices, Tensor):
        indices = em.tensor(indices)
    if indices.is_floating_point() or indices.is_complex() or indices.dtype is _dtype.bool_:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    shape = (shape,) if isinstance(shape, int) else tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError("'shape' cannot have negative values, but got "
                         f"{tuple(shape)}")
    numel = 1
    for s in shape:
        numel *= s
    if indices.numel() and type(indices) is Tensor:
        lo, hi = int(indices.min().item()), int(indices.max().item())
        if lo < -numel or hi >= numel:
            raise ValueError(f"'indices' must be in range [{-numel}, {numel - 1}]")
    flat = indices.to(_dtype.int64)
    flat = em.where(flat.lt(0), flat + numel, flat)
    coords = []
    for s in reversed(shape):
        coords.append(flat % s if s else flat * 0)
        flat = flat // s if s else flat
    return tuple(reversed(coords))


def nonzero_static(input, *, size, fill_value=-1):
    """``nonzero`` padded with ``fill_value`` (or truncated) to ``size`` rows."""
    _tensor(input, "nonzero_static")
    em = _ember()
    if size < 0:
        raise RuntimeError(f"nonzero_static: 'size' must be an non-negative integer, got {size}")
    nz = input.nonzero()
    k = nz.shape[0]
    if k >= size:
        return nz[:size]
    pad = em.full((size - k, max(input.ndim, 1) if input.ndim else 0), fill_value,
                  dtype=_dtype.int64, device=input.device)
    return em.cat([nz, pad], 0)


# -- order statistics ---------------------------------------------------------------------------
_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(input, q, dim, keepdim, interpolation, ignore_nan, fn):
    _tensor(input, fn)
    em = _ember()
    if interpolation not in _INTERPOLATIONS:
        raise ValueError(f"{fn}() interpolation must be one of linear, lower, higher, "
                         f"midpoint or nearest. Got {interpolation}")
    if input.dtype not in (_dtype.float32, _dtype.float64):
        raise RuntimeError(f"{fn}() input tensor must be either float or double dtype")
    scalar_q = not isinstance(q, Tensor)
    qt = em.tensor(q, dtype=input.dtype, device=input.device) if scalar_q else q
    if qt.ndim > 1:
        raise RuntimeError(f"{fn}() q must be a scalar or 1D tensor")
    if qt.dtype is not input.dtype:
        raise RuntimeError(f"{fn}() q tensor must be same dtype as the input tensor")
    # a host check, as PyTorch's; skipped where there are no values (meta) or they are
    # batched (ember.func.vmap)
    if type(qt) is Tensor and qt.numel() and qt.device.type != "meta" and \
            bool((qt.lt(0) | qt.gt(1)).any()):
        raise RuntimeError(f"{fn}() q values must be in the range [0, 1]")
    if input.numel() == 0 and dim is None:
        raise IndexError(f"{fn}() input tensor must be non-empty")
    x = input.reshape(-1) if dim is None else input
    d = 0 if dim is None else dim % max(input.ndim, 1)
    if x.ndim == 0:
        x = x.reshape(1)
    values = x.sort(d).values                    # NaN sorts last
    n = x.shape[d]
    valid = x.eq(x).to(_dtype.int64).sum(d, keepdim=True) if ignore_nan else None
    qv = qt.reshape(-1)
    shape = [1] * values.ndim
    shape[d] = -1
    last = (valid - 1).to(input.dtype) if ignore_nan else float(n - 1)
    pos = qv.reshape([-1] + [1] * values.ndim) * (last if ignore_nan else last)  # (Q, ...)
    if ignore_nan:
        pos = pos.clamp_min(0)
    lo = pos.floor()
    hi = pos.ceil()
    if interpolation == "lower":
        hi = lo
    elif interpolation == "higher":
        lo = hi
    elif interpolation == "nearest":
        lo = hi = pos.round()
    vexp = values.unsqueeze(0).expand(qv.shape[0], *values.shape)

    def take(p):
        idx = p.to(_dtype.int64).clamp(0, max(n - 1, 0))
        idx = idx.expand(*[qv.shape[0]] + [1 if k == d else s for k, s in
                                          enumerate(values.shape)])
        return vexp.gather(d + 1, idx)
    v_lo, v_hi = take(lo), take(hi)
    if interpolation == "midpoint":
        out = v_lo + (v_hi - v_lo) * 0.5
    else:
        out = v_lo + (v_hi - v_lo) * (pos - lo)
    if ignore_nan:
        out = em.where(valid.unsqueeze(0).eq(0), em.full((), float("nan"), dtype=out.dtype,
                                                         device=out.device), out)
    else:
        has_nan = x.ne(x).any(d, keepdim=True).unsqueeze(0)
        out = em.where(has_nan, em.full((), float("nan"), dtype=out.dtype, device=out.device),
                       out)
    out = out.squeeze(d + 1)                     # (Q, ...rest)
    if keepdim:
        if dim is None:
            out = out.reshape([qv.shape[0]] + [1] * input.ndim)
        else:
            out = out.unsqueeze(d + 1)
    if scalar_q or qt.ndim == 0:
        out = out.squeeze(0)
    return out


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """The q-th quantiles of ``input`` (flattened when ``dim`` is None); NaN propagates."""
    result = _quantile(input, q, dim, keepdim, interpolation, False, "quantile")
    return out.copy_(result) if out is not None else result


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """``quantile`` ignoring NaN (NaN only where a row is all NaN)."""
    result = _quantile(input, q, dim, keepdim, interpolation, True, "nanquantile")
    return out.copy_(result) if out is not None else result


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """The first element of every run of equal consecutive elements (slices along ``dim``),
    with the run index of each element and the run lengths on request."""
    _tensor(input, "unique_consecutive")
    em = _ember()
    if dim is None:
        x = input.reshape(-1)
        d = 0
    else:
        d = dim % max(input.ndim, 1)
        x = input
    n = x.shape[d] if x.ndim else 1
    if n == 0:
        out = x
        inverse = em.zeros(input.shape if dim is None else (0,), dtype=_dtype.int64,
                           device=input.device)
        counts = em.zeros(0, dtype=_dtype.int64, device=input.device)
    else:
        cur, prev = x.narrow(d, 1, n - 1), x.narrow(d, 0, n - 1)
        change = cur.ne(prev)
        if x.ndim > 1:
            change = change.movedim(d, 0).reshape(n - 1, -1).any(1)
        first = em.ones(1, dtype=_dtype.bool_, device=input.device)
        starts_mask = em.cat([first, change], 0)
        starts = starts_mask.nonzero().reshape(-1)
        out = x.index_select(d, starts)
        inverse = starts_mask.to(_dtype.int64).cumsum(0) - 1
        if dim is None:
            inverse = inverse.reshape(input.shape)
        ends = em.cat([starts[1:], em.tensor([n], dtype=_dtype.int64, device=input.device)])
        counts = ends - starts
    result = (out,)
    if return_inverse:
        result += (inverse,)
    if return_counts:
        result += (counts,)
    return result[0] if len(result) == 1 else result


# -- Tensor methods -----------------------------------------------------------------------------
def _contains(self, element):
    if isinstance(element, (Tensor, int, float, bool, complex)):
        return bool((self == element).any().item())
    raise RuntimeError(f"Tensor.__contains__ only supports Tensor or scalar, but you passed in "
                       f"a {type(element)}.")


def _reversed(self):
    return self if self.ndim == 0 else self.flip(0)


def _deepcopy(self, memo):
    """PyTorch's rule: only leaves deep-copy; the copy keeps requires_grad and a copy of
    ``.grad``. Subclasses (Parameter...) keep their own reduce protocol."""
    import copy
    if type(self) is not Tensor:
        rv = self.__reduce_ex__(4)
        return copy._reconstruct(self, memo, *rv)
    if not self.is_leaf:
        raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support "
                           "the deepcopy protocol at the moment.")
    if id(self) in memo:
        return memo[id(self)]
    with no_grad():
        new = self.clone()
    if self.requires_grad:
        new.requires_grad_(True)
    if self.grad is not None:
        new.grad = _deepcopy(self.grad, memo)
    memo[id(self)] = new
    return new


def _hardshrink(self, lambd=0.5):
    from ..nn._activations_more import hardshrink
    return hardshrink(self, lambd)


def _prelu(self, weight):
    from ..nn.functional import prelu
    return prelu(self, weight)


def _fill_diagonal_(self, fill_value, wrap=False):
    em = _ember()
    if self.ndim < 2:
        raise RuntimeError("dimensions must larger than 1")
    if self.ndim > 2 and len(set(self.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    if self.ndim > 2:
        n = self.shape[0]
        idx = em.arange(n, device=self.device)
        index = (idx,) * self.ndim
    else:
        rows, cols = self.shape
        if wrap and rows > cols + 1:
            pos = em.arange(0, rows * cols, cols + 1, device=self.device)
            index = (pos // cols, pos % cols)
        else:
            k = em.arange(min(rows, cols), device=self.device)
            index = (k, k)
    value = em.tensor(fill_value, dtype=self.dtype, device=self.device)
    return self.index_put_(index, value.expand(index[0].shape[0]))


def _log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    if std <= 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
    with no_grad():
        return self.normal_(mean, std, generator=generator).exp_()


def _cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    if sigma <= 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
    with no_grad():
        u = self.new_empty(self.shape).uniform_(generator=generator)
        return self.copy_((u - 0.5).mul_(math.pi).tan_().mul_(sigma).add_(median))


def _geometric_(self, p, *, generator=None):
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    with no_grad():
        u = self.new_empty(self.shape, dtype=_dtype.float64).uniform_(generator=generator)
        u = u.clamp_min(1e-300)
        return self.copy_((u.log() / math.log1p(-p)).ceil_().clamp_min_(1))


def _inplace(fn):
    def method(self, *args, **kwargs):
        return self.copy_(fn(self, *args, **kwargs))
    method.__name__ = fn.__name__ + "_"
    return method


def _refuse_batched(t, name):
    """Metadata changes in place cannot reach through ember.func.vmap's batched wrapper."""
    if type(t) is not Tensor and hasattr(t, "_like_factory"):
        raise RuntimeError(f"vmap: {name}() changes a tensor's shape in place, which is not "
                           f"supported under vmap; use the out-of-place form")


def _inplace_view(name, view):
    """``squeeze_`` and friends: the tensor itself takes the view's shape, strides and offset
    (its storage stays). A leaf that requires grad refuses, as in PyTorch; a tensor inside an
    autograd graph refuses too (ember does not rebase graphs on in-place view changes)."""
    def method(self, *args, **kwargs):
        from ..autograd.grad_mode import is_grad_enabled
        _refuse_batched(self, name)
        if self.requires_grad and is_grad_enabled():
            if self.is_leaf:
                raise RuntimeError("a leaf Variable that requires grad is being used in an "
                                   "in-place operation.")
            raise RuntimeError(f"{name}(): changing the shape in place of a tensor inside an "
                               f"autograd graph is not supported by ember; use the "
                               f"out-of-place {name[:-1]}()")
        v = view(self, *args, **kwargs)
        self._shape, self._stride, self._offset, self._native = (v._shape, v._stride, v._offset,
                                                                 v._native)
        return self
    method.__name__ = name
    return method


def _contiguous_strides(shape):
    strides, acc = [], 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(strides))


def _resize_(self, *sizes, memory_format=None):
    """The tensor takes ``sizes`` (contiguous strides) in place, over its storage when that
    holds enough elements after its offset, else over new storage that starts with the old
    storage's elements (the rest uninitialized)."""
    from .._tensor import Size
    from . import factories as _fac
    _refuse_batched(self, "resize_")
    if self.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    shape = tuple(sizes[0]) if len(sizes) == 1 and not isinstance(sizes[0], int) else \
        tuple(sizes)
    if any(n < 0 for n in shape):
        raise RuntimeError(f"Trying to create tensor with negative dimension: {list(shape)}")
    numel = 1
    for n in shape:
        numel *= n
    strides = _format_strides(shape, memory_format)
    capacity = self.untyped_storage().nbytes // self.element_size() - self._offset
    if numel <= capacity:
        self._shape, self._stride = Size(shape), strides
        self._native = self.as_strided(shape, strides, self._offset)._native
        return self
    grown = _fac.empty(numel, dtype=self.dtype, device=self.device)
    keep = min(capacity, numel)   # the old storage's elements survive, as in PyTorch
    if keep > 0:
        with no_grad():
            grown[:keep].copy_(self.as_strided((keep,), (1,), self._offset))
    view = grown.as_strided(shape, strides, 0)
    self._storage, self._shape, self._stride, self._offset, self._native = (
        view._storage, view._shape, view._stride, view._offset, view._native)
    return self


def _format_strides(shape, memory_format):
    """Contiguous strides of ``shape``, or channels-last ones under that memory format."""
    from .. import _memory_format as _mf
    if memory_format in (_mf.channels_last, _mf.channels_last_3d):
        order = _mf.channels_last_order(len(shape), memory_format)
        permuted = _contiguous_strides([shape[d] for d in order])
        strides = [0] * len(shape)
        for k, d in enumerate(order):
            strides[d] = permuted[k]
        return tuple(strides)
    return _contiguous_strides(shape)


def _resize_as_(self, other, *, memory_format=None):
    return _resize_(self, tuple(other.shape), memory_format=memory_format)


def _resize(self, *sizes):
    import warnings
    warnings.warn("non-inplace resize is deprecated")
    return self.reshape(*sizes)


def _resize_as(self, other):
    import warnings
    warnings.warn("non-inplace resize_as is deprecated")
    return self.reshape(other.shape)


def _attach():
    em = _ember()
    methods = {
        "__contains__": _contains, "__reversed__": _reversed, "__deepcopy__": _deepcopy,
        "__div__": Tensor.__truediv__, "__rdiv__": Tensor.__rtruediv__,
        "__idiv__": Tensor.__itruediv__, "__long__": lambda self: int(self.item()),
        "__nonzero__": Tensor.__bool__,
        "clamp_min_": lambda self, min: self.clamp_(min=min),
        "clamp_max_": lambda self, max: self.clamp_(max=max),
        "fill_diagonal_": _fill_diagonal_, "log_normal_": _log_normal_, "cauchy_": _cauchy_,
        "geometric_": _geometric_, "addbmm": addbmm, "addr": addr, "adjoint": adjoint,
        "nextafter": nextafter, "frexp": frexp, "quantile": quantile,
        "nanquantile": nanquantile, "unique_consecutive": unique_consecutive,
        "nonzero_static": nonzero_static,
        "addbmm_": _inplace(addbmm), "addr_": _inplace(addr), "nextafter_": _inplace(nextafter),
        "hardshrink": _hardshrink, "prelu": _prelu,
        "resize_": _resize_, "resize_as_": _resize_as_, "resize": _resize,
        "resize_as": _resize_as,
        "squeeze_": _inplace_view("squeeze_", lambda t, *a: t.squeeze(*a)),
        "unsqueeze_": _inplace_view("unsqueeze_", lambda t, d: t.unsqueeze(d)),
        "t_": _inplace_view("t_", lambda t: t.t()),
        "transpose_": _inplace_view("transpose_", lambda t, a, b: t.transpose(a, b)),
        "swapaxes_": _inplace_view("swapaxes_", lambda t, a, b: t.transpose(a, b)),
        "swapdims_": _inplace_view("swapdims_", lambda t, a, b: t.transpose(a, b)),
        "as_strided_": _inplace_view("as_strided_", lambda t, size, stride, offset=None:
                                     t.as_strided(size, stride, offset)),
    }
    for name, fn in methods.items():
        if name not in Tensor.__dict__:
            setattr(Tensor, name, fn)
    del em


_attach()

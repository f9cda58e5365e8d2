"""Statistics of a sample: ``cov`` and ``corrcoef`` of variables in rows, ``quantile`` and
``nanquantile`` (sort, then interpolate between order statistics) — compositions of ember
ops, so every backend runs them and autograd sees through them."""
from __future__ import annotations

from ... import _dtype
from ..._tensor import Tensor
from .._util import ember_namespace, require_tensor, tensor_method

__all__ = ["cov", "corrcoef", "quantile", "nanquantile"]


@tensor_method()
def cov(input, *, correction=1, fweights=None, aweights=None):
    """Covariance of the rows (variables) over the columns (observations)."""
    require_tensor(input, "cov")
    if input.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an "
                           f"input with {input.ndim} dimensions")
    x = input.reshape(1, -1) if input.ndim < 2 else input
    if not x.is_floating_point() and not x.is_complex():
        x = x.to(_dtype.get_default_dtype())
    n_obs = x.shape[1]
    w = None
    if fweights is not None:
        if fweights.ndim > 1 or fweights.shape[0] != n_obs:
            raise RuntimeError(f"cov(): expected fweights to have one dimension and the same "
                               f"number of observations ({n_obs}), got {list(fweights.shape)}")
        if fweights.is_floating_point():
            raise RuntimeError("cov(): expected fweights to have integral dtype")
        w = fweights
    if aweights is not None:
        if aweights.ndim > 1 or aweights.shape[0] != n_obs:
            raise RuntimeError(f"cov(): expected aweights to have one dimension and the same "
                               f"number of observations ({n_obs}), got {list(aweights.shape)}")
        if not aweights.is_floating_point():
            raise RuntimeError("cov(): expected aweights to have floating point dtype")
        w = aweights if w is None else w * aweights
    if w is None:
        w_sum = float(n_obs)
        avg = x.mean(1)
    else:
        # the weights keep their dtype, as in PyTorch: the normalisation is computed in it (a
        # float32 aweights gives a float32 norm) and is real for complex input
        w_sum = w.sum()
        avg = (x * w).sum(1) / w_sum
    if w is None:
        norm = w_sum - correction
    elif correction == 0:
        norm = w_sum
    elif aweights is None:
        norm = w_sum - correction
    else:
        norm = w_sum - correction * (w * aweights).sum() / w_sum
    if isinstance(norm, float):
        norm = max(norm, 0.0)
    else:
        norm = norm.clamp_min(0)
    xm = x - avg.unsqueeze(1)
    xw = xm if w is None else xm * w
    c = xw @ xm.t().conj() if x.is_complex() else xw @ xm.t()
    return (c / norm).squeeze()     # PyTorch squeezes always: one variable gives a 0-d result


@tensor_method()
def corrcoef(input):
    """Pearson correlation coefficients of the rows, clipped to [-1, 1]."""
    c = cov(input)
    if c.ndim == 0:
        return c / c
    d = c.diagonal()
    std = (d.real if d.is_complex() else d).sqrt()
    out = c / std.unsqueeze(1) / std.unsqueeze(0)
    if out.is_complex():      # PyTorch clips the real and imaginary parts separately
        em = ember_namespace()
        return em.complex(out.real.clamp(-1, 1), out.imag.clamp(-1, 1))
    return out.clamp(-1, 1)


_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(input, q, dim, keepdim, interpolation, ignore_nan, fn):
    require_tensor(input, fn)
    em = ember_namespace()
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
    if keepdim and input.ndim:                   # (a 0-d input keeps no dim)
        if dim is None:
            out = out.reshape([qv.shape[0]] + [1] * input.ndim)
        else:
            out = out.unsqueeze(d + 1)
    if scalar_q or qt.ndim == 0:
        out = out.squeeze(0)
    return out


@tensor_method()
def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """The q-th quantiles of ``input`` (flattened when ``dim`` is None); NaN propagates."""
    result = _quantile(input, q, dim, keepdim, interpolation, False, "quantile")
    return out.copy_(result) if out is not None else result


@tensor_method()
def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """``quantile`` ignoring NaN (NaN only where a row is all NaN)."""
    result = _quantile(input, q, dim, keepdim, interpolation, True, "nanquantile")
    return out.copy_(result) if out is not None else result

"""Normalizations of ``ember.nn.functional`` beyond ``functional.py``: ``instance_norm`` (per
sample and channel, optionally tracking running statistics like PyTorch) and
``local_response_norm`` (across neighbouring channels), plus the legacy cross-map LRN behind
``nn.CrossMapLRN2d``; compositions of ember ops."""
from __future__ import annotations

from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from ..ops import reduction as _red

__all__ = ["instance_norm", "local_response_norm"]


def _tensor(x, fn):
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument 'input' must be Tensor, not {type(x).__name__}")


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    """Normalize each (sample, channel) over its spatial dims; with ``use_input_stats`` and
    running buffers, those move toward the batch mean of the instance statistics."""
    _tensor(input, "instance_norm")
    if input.ndim < 3:
        raise ValueError(f"instance_norm: expected at least 3D input (N, C, ...), got "
                         f"{input.ndim}D input")
    n, c = input.shape[0], input.shape[1]
    spatial = tuple(range(2, input.ndim))
    bshape = (1, c) + (1,) * len(spatial)
    if use_input_stats:
        count = 1
        for d in spatial:
            count *= input.shape[d]
        if count <= 1:
            raise ValueError(f"Expected more than 1 spatial element when training, got input "
                             f"size {list(input.shape)}")
        var, mean = _red.var_mean(input, spatial, correction=0, keepdim=True)
        if running_mean is not None or running_var is not None:
            with no_grad():
                if running_mean is not None:
                    running_mean.mul_(1 - momentum).add_(mean.detach().mean((0,) + spatial),
                                                         alpha=momentum)
                if running_var is not None:
                    unbiased = var.detach() * (count / (count - 1))
                    running_var.mul_(1 - momentum).add_(unbiased.mean((0,) + spatial),
                                                        alpha=momentum)
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError("Expected running_mean and running_var to be defined when "
                               "use_input_stats is false")
        mean, var = running_mean.reshape(bshape), running_var.reshape(bshape)
    out = (input - mean) * (var + eps).rsqrt()
    if weight is not None:
        out = out * weight.reshape(bshape)
    if bias is not None:
        out = out + bias.reshape(bshape)
    return out


def _channel_window_sum(sq, before, after):
    """Sum over channels c - before .. c + after (zero beyond the edges) of ``sq``."""
    from ..ops.shape import cat
    c = sq.shape[1]
    shape = list(sq.shape)
    parts = []
    if before:
        shape[1] = before
        parts.append(sq.new_zeros(shape))
    parts.append(sq)
    if after:
        shape[1] = after
        parts.append(sq.new_zeros(shape))
    padded = cat(parts, 1) if len(parts) > 1 else sq
    total = padded.narrow(1, 0, c)
    for k in range(1, before + after + 1):
        total = total + padded.narrow(1, k, c)
    return total


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """``x / (k + alpha * mean of x^2 over the size channels around it) ** beta``."""
    _tensor(input, "local_response_norm")
    if input.ndim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {input.ndim} "
                         f"dimensions)")
    if input.numel() == 0:
        return input
    div = _channel_window_sum(input * input, size // 2, (size - 1) // 2) / size
    return input / (div * alpha + k).pow(beta)


def cross_map_lrn2d(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """PyTorch's legacy ``CrossMapLRN2d`` forward, running sums included: the window of
    channel c ends at c + (size-1)//2 + ... as its loop leaves it (channel 0 is never taken
    out of the running sum)."""
    _tensor(input, "CrossMapLRN2d")
    if input.ndim != 4:
        raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.ndim}D instead.")
    from ..ops import factories as _fac
    c = input.shape[1]
    pre_pad = int((size - 1) / 2 + 1)
    sq = input * input
    running = sq.cumsum(1)
    ch = list(range(c))
    upper = _fac.tensor([min(j + pre_pad - 1, c - 1) for j in ch], device=input.device)
    total = running.index_select(1, upper)
    drop = [j - pre_pad for j in ch]
    if any(d >= 1 for d in drop):
        lower = _fac.tensor([max(d, 0) for d in drop], device=input.device)
        keep = _fac.tensor([1.0 if d >= 1 else 0.0 for d in drop], dtype=input.dtype,
                           device=input.device).reshape(1, c, 1, 1)
        total = total - (running.index_select(1, lower) - running.narrow(1, 0, 1)) * keep
    scale = total * (alpha / size) + k
    return input * scale.pow(-beta)

"""``ember.stft`` / ``ember.istft`` (and the Tensor methods): PyTorch's short-time Fourier
transform, written in ember ops over ``ember.fft`` so every backend and autograd get it.

stft: optional centring pad (``pad_mode`` as ``nn.functional.pad``), frames as a strided view
(``unfold``), the window (zero-padded to ``n_fft`` in the middle) multiplied in, one
``rfft``/``fft`` over the frames. istft: the inverse transform of each frame, the window
multiplied in again, overlap-add (``index_add``) divided by the summed squared window, the
centring pad trimmed, as ATen's ``istft``.
"""
from __future__ import annotations

import warnings

from .. import _dtype
from .._tensor import Tensor
from ..nn import functional as F
from ..ops._util import require_tensor
from ..ops.factories import arange, ones
from .._warn import user_stacklevel


def _window(fname, window, n_fft, win_length, like):
    if win_length is None:
        win_length = n_fft
    if not 0 < win_length <= n_fft:
        raise RuntimeError(f"{fname}: expected 0 < win_length <= n_fft, but got "
                           f"win_length={win_length}")
    if window is not None:
        if not isinstance(window, Tensor):
            raise TypeError(f"{fname}(): argument 'window' must be Tensor, not "
                            f"{type(window).__name__}")
        if window.ndim != 1 or window.shape[0] != win_length:
            raise RuntimeError(f"{fname}: expected a 1D window tensor of size equal to "
                               f"win_length={win_length}, but got window with size "
                               f"{list(window.shape)}")
        if window.device is not like.device:
            raise RuntimeError(f"{fname}: window must be on the same device as input, got "
                               f"{window.device} and {like.device}")
    if win_length < n_fft:
        left = (n_fft - win_length) // 2
        base = window if window is not None else _ones(win_length, like)
        parts = [base.new_zeros(left), base, base.new_zeros(n_fft - win_length - left)]
        window = _shape_ops.cat(parts, 0)
    return window


def _ones(n, like):
    return ones(n, dtype=like.dtype.to_real() if like.dtype.is_complex else like.dtype,
                device=like.device)


def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True,
         pad_mode="reflect", normalized=False, onesided=None, return_complex=None,
         align_to_window=None):
    """Short-time Fourier transform: ``(n_fft // 2 + 1 or n_fft, n_frames)`` per signal.
    ``align_to_window`` (only without ``center``) pads the signal by the window's offset in
    the frame, so frames start where their windows do."""
    require_tensor(input, "stft")
    if center and align_to_window is not None:
        raise RuntimeError("stft align_to_window should only be set when center = false")
    complex_io = input.dtype.is_complex or (window is not None and window.dtype.is_complex)
    if return_complex is None:
        if not complex_io:
            raise RuntimeError("stft requires the return_complex parameter be given for real "
                               "inputs, and will further require that return_complex=True in "
                               "a future PyTorch release.")
        return_complex = True
    if not return_complex:
        warnings.warn("stft with return_complex=False is deprecated. In a future pytorch "
                      "release, stft will return complex tensors for all inputs, and "
                      "return_complex=False will raise an error.\nNote: you can still call "
                      "torch.view_as_real on the complex output to recover the old return "
                      "format.", UserWarning, stacklevel=user_stacklevel())
    if window is None:
        warnings.warn("A window was not provided. A rectangular window will be applied,which "
                      "is known to cause spectral leakage. Other windows such as torch.hann_"
                      "window or torch.hamming_window are recommended to reduce spectral "
                      "leakage.To suppress this warning and use a rectangular window, "
                      "explicitly set `window=torch.ones(n_fft, device=<device>)`.",
                      UserWarning, stacklevel=user_stacklevel())
    if input.ndim not in (1, 2):
        raise RuntimeError(f"stft: expected a 1D or 2D tensor, but got a tensor of shape "
                           f"{list(input.shape)}")
    x = input if input.ndim == 2 else input.unsqueeze(0)
    if x.dtype.category < _dtype.FLOATING:
        x = x.to(_dtype.get_default_dtype())
    pad = n_fft // 2 if center else (
        (n_fft - (n_fft if win_length is None else win_length)) // 2 if align_to_window else 0)
    if pad:
        x = F.pad(x.unsqueeze(1), (pad, pad), mode=pad_mode).squeeze(1)
    length = x.shape[-1]
    hop_length = n_fft // 4 if hop_length is None else hop_length
    if not 0 < n_fft <= length:
        raise RuntimeError(f"stft: expected 0 < n_fft <= {length}, but got n_fft={n_fft}")
    if hop_length <= 0:
        raise RuntimeError(f"stft: expected hop_length > 0, but got hop_length={hop_length}")
    win = _window("stft", window, n_fft, win_length, x)
    frames = x.unfold(-1, n_fft, hop_length)         # (batch, n_frames, n_fft), a view
    if win is not None:
        frames = frames * win
    if onesided is None:
        onesided = not complex_io
    if onesided and complex_io:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    norm = "ortho" if normalized else "backward"
    spec = _fft.rfft(frames, dim=-1, norm=norm) if onesided else \
        _fft.fft(frames, dim=-1, norm=norm)
    spec = spec.transpose(1, 2)                     # (batch, n_freq, n_frames)
    if input.ndim == 1:
        spec = spec.squeeze(0)
    return spec if return_complex else _views.view_as_real(spec)


def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True,
          normalized=False, onesided=None, length=None, return_complex=False):
    """Inverse short-time Fourier transform (least-squares overlap-add, as PyTorch)."""
    require_tensor(input, "istft")
    if not input.dtype.is_complex:
        raise RuntimeError(f"istft requires a complex-valued input tensor, but got "
                           f"{input.dtype} (shape {list(input.shape)})")
    if input.ndim not in (2, 3):
        raise RuntimeError(f"istft: expected a tensor with 2 or 3 dimensions of complex, got a "
                           f"tensor of shape {list(input.shape)}")
    hop_length = n_fft // 4 if hop_length is None else hop_length
    if hop_length <= 0:
        raise RuntimeError(f"istft: expected hop_length > 0, but got hop_length={hop_length}")
    spec = input if input.ndim == 3 else input.unsqueeze(0)
    n_freq, n_frames = spec.shape[-2], spec.shape[-1]
    if onesided is None:
        onesided = n_freq != n_fft
    if onesided:
        if n_fft // 2 + 1 != n_freq:
            raise RuntimeError(f"istft: expected the frequency dimension (3rd to the last) of "
                               f"the input tensor to match n_fft / 2 + 1 when onesided=True, "
                               f"but got {n_freq}")
    elif n_fft != n_freq:
        raise RuntimeError(f"istft: expected the frequency dimension (3rd to the last) of the "
                           f"input tensor to match n_fft when onesided=False, but got {n_freq}")
    if onesided and return_complex:
        raise RuntimeError("cannot have onesided output if window or input is complex")
    real = spec.dtype.to_real()
    win = _window("istft", window, n_fft, win_length, _zeros_like_real(spec, real))
    if win is None:
        win = _ones(n_fft, _zeros_like_real(spec, real))
    norm = "ortho" if normalized else "backward"
    frames_spec = spec.transpose(1, 2)             # (batch, n_frames, n_freq)
    if return_complex:
        frames = _fft.ifft(frames_spec, n=n_fft, dim=-1, norm=norm)
    else:
        # a real signal is read from the first n_fft // 2 + 1 bins, as PyTorch does (irfft
        # assumes Hermitian symmetry; the other bins of a two-sided input are ignored)
        if not onesided:
            frames_spec = frames_spec.narrow(-1, 0, n_fft // 2 + 1)
        frames = _fft.irfft(frames_spec, n=n_fft, dim=-1, norm=norm)
    frames = frames * win                           # (batch, n_frames, n_fft)
    expected = n_fft + hop_length * (n_frames - 1)
    pos = (arange(n_frames, device=spec.device).unsqueeze(1) * hop_length +
           arange(n_fft, device=spec.device)).reshape(-1)
    batch = frames.shape[0]
    y = frames.new_zeros(batch, expected).index_add(1, pos, frames.reshape(batch, -1))
    envelope = win.new_zeros(expected).index_add(0, pos, (win * win).repeat(n_frames))
    start = n_fft // 2 if center else 0
    end = expected
    if length is not None:
        end = start + length
    elif center:
        end = expected - n_fft // 2
    end = min(end, expected)
    y = y[:, start:end]
    envelope = envelope[start:end]
    if envelope.numel() and float(envelope.abs().min()) < 1e-11:
        raise RuntimeError("istft: window overlap add min: the window's summed squares are "
                           "(nearly) zero somewhere, so the signal cannot be recovered (NOLA "
                           "constraint failed)")
    y = y / envelope
    if length is not None and y.shape[-1] < length:
        y = _shape_ops.cat([y, y.new_zeros(batch, length - y.shape[-1])], -1)
    return y if input.ndim == 3 else y.squeeze(0)


def _zeros_like_real(spec, real):
    return spec.new_zeros(0, dtype=real)


Tensor.stft, Tensor.istft = stft, istft

from .. import fft as _fft  # noqa: E402 - the package imports this module last
from ..ops import shape as _shape_ops  # noqa: E402
from ..ops import views as _views  # noqa: E402

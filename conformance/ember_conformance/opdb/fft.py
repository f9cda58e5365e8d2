"""Entries for ``ember.fft``: every public function over the three primitives (``_fft_c2c``,
``_fft_r2c``, ``_fft_c2r``), each norm, odd, prime and power-of-two lengths, padding and
trimming (``n``/``s``), several dims and every layout.

An entry's dtype names the *precision*: ``float32`` runs the real transforms on float32 and the
complex ones on complex64, ``float64`` on float64/complex128 (so a device without fp64 reports
both as unsupported, and the float64 samples are the ones differenced against finite
differences, complex inputs as pairs of reals).
"""
from __future__ import annotations

import ember

from . import FLOATS, LAYOUTS, OpInfo, SampleInput, make_tensor

NORMS = (None, "ortho", "forward")
# FFTs sum n terms: rounding grows with log n
TOL = {"float32": (2e-5, 2e-5), "float64": (1e-10, 1e-10)}


def _complex(dtype):
    return ember._dtype.as_dtype(dtype).to_complex().name


def _samples(cases, complex_input):
    """cases: (shape, layout, kwargs); the input is complex for c2c/c2r functions."""
    def gen(dtype):
        dt = _complex(dtype) if complex_input else dtype
        for i, (shape, layout, kw) in enumerate(cases):
            args = ", ".join(f"{k}={v!r}" for k, v in kw.items())
            yield SampleInput(f"{dt}{list(shape)} {layout}" + (f" ({args})" if args else ""),
                              lambda dev, i=i, shape=shape, lay=layout, kw=kw: (
                                  (make_tensor(40 + i, shape, dt, dev, layout=lay),), dict(kw)))
    return gen


def C(shape, layout="contiguous", **kw):
    return tuple(shape), layout, kw


# 1-D: power of two, odd, prime, length 1; n pads/trims; every norm; every layout; a dim
ONE_D = [C((8,)), C((15,)), C((7,), norm="ortho"), C((1,)), C((3, 16), "transposed"),
         C((4, 10), "strided", norm="forward"), C((3, 6), "expanded"), C((5, 12), dim=0),
         C((2, 9), n=16), C((2, 9), n=5, norm="ortho"), C((4, 13), dim=-2, n=7),
         C((2, 11), norm="forward")]
# the Hermitian half: length m means 2 * (m - 1) points by default; n odd and even
HALF = [C((5,)), C((9,)), C((3, 6), n=11), C((3, 6), n=7, norm="ortho"), C((1,), n=1),
        C((4, 5), "transposed", norm="forward"), C((3, 7), "strided"), C((6, 4), dim=0),
        C((3, 6), "expanded", n=10)]
N_D = [C((4, 6)), C((3, 5, 7)), C((4, 6), "transposed", norm="ortho"),
       C((3, 5, 4), "strided", dim=(0, 2)), C((2, 3, 8), s=(5, 6)),
       C((3, 4, 5), s=(-1, 3), dim=(2, 0), norm="forward"), C((6, 5), "expanded"),
       C((2, 3, 4), dim=(1,))]
N_D_HALF = [C((4, 5)), C((3, 4, 5), dim=(0, 2)), C((4, 6), "transposed", norm="ortho"),
            C((3, 4, 6), "strided", s=(5, 7)), C((2, 3, 4), s=(3, -1), norm="forward"),
            C((5, 4), "expanded")]
TWO_D = [C((4, 6)), C((2, 5, 7), "transposed"), C((3, 4, 6), "strided", norm="ortho"),
         C((3, 6, 5), s=(4, 8), norm="forward"), C((4, 5, 3), dim=(0, 2))]


def _entry(name, fn, cases, complex_input, covers):
    return OpInfo(f"fft.{name}", fn, _samples(cases, complex_input), FLOATS, covers=covers,
                  tolerances=TOL)


F = ember.fft
C2C, R2C, C2R = "_fft_c2c", "_fft_r2c", "_fft_c2r"
OPS = [
    _entry("fft", F.fft, ONE_D, True, (C2C,)),
    _entry("fft real", F.fft, ONE_D, False, (R2C,)),
    _entry("ifft", F.ifft, ONE_D, True, (C2C,)),
    _entry("ifft real", F.ifft, ONE_D, False, (R2C,)),
    _entry("rfft", F.rfft, ONE_D, False, (R2C,)),
    _entry("irfft", F.irfft, HALF, True, (C2R,)),
    _entry("hfft", F.hfft, HALF, True, (C2R,)),
    _entry("ihfft", F.ihfft, ONE_D, False, (R2C,)),
    _entry("fft2", F.fft2, TWO_D, True, (C2C,)),
    _entry("ifft2", F.ifft2, TWO_D, True, (C2C,)),
    _entry("fftn", F.fftn, N_D, True, (C2C,)),
    _entry("fftn real", F.fftn, N_D, False, (C2C,)),
    _entry("ifftn", F.ifftn, N_D, True, (C2C,)),
    _entry("rfft2", F.rfft2, TWO_D, False, (R2C,)),
    _entry("irfft2", F.irfft2, TWO_D, True, (C2R,)),
    _entry("rfftn", F.rfftn, N_D, False, (R2C,)),
    _entry("irfftn", F.irfftn, N_D_HALF, True, (C2R,)),
    _entry("hfft2", F.hfft2, TWO_D, True, (C2C, C2R)),
    _entry("ihfft2", F.ihfft2, TWO_D, False, (R2C, C2C)),
    _entry("hfftn", F.hfftn, N_D_HALF, True, (C2C, C2R)),
    _entry("ihfftn", F.ihfftn, N_D, False, (R2C, C2C)),
    _entry("fftshift", F.fftshift, [C((5, 6)), C((4, 7), "transposed", dim=1)], True, ()),
    _entry("ifftshift", F.ifftshift, [C((5, 6)), C((3, 5), "strided", dim=(0, 1))], True, ()),
    OpInfo("fft.fftfreq", lambda n, **kw: F.fftfreq(n, **kw), lambda dt: [
        SampleInput(f"fftfreq({n}, d={d}) {dt}", lambda dev, n=n, d=d, dt=dt: (
            (n,), {"d": d, "dtype": ember._dtype.as_dtype(dt), "device": dev}))
        for n, d in ((1, 1.0), (8, 0.5), (9, 2.0))], FLOATS, covers=(), differentiable=False),
    OpInfo("fft.rfftfreq", lambda n, **kw: F.rfftfreq(n, **kw), lambda dt: [
        SampleInput(f"rfftfreq({n}, d={d}) {dt}", lambda dev, n=n, d=d, dt=dt: (
            (n,), {"d": d, "dtype": ember._dtype.as_dtype(dt), "device": dev}))
        for n, d in ((1, 1.0), (8, 0.5), (9, 2.0))], FLOATS, covers=(), differentiable=False),
]
# a layout every entry above should see at least once
assert all(lay in {c[1] for c in ONE_D} for lay in LAYOUTS)

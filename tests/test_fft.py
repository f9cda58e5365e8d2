"""ember.fft on the CPU against numpy.fft / scipy.fft (and torch where installed): every
function, norm, odd/prime/power-of-two lengths, n/s padding and trimming, several dims,
non-contiguous inputs, out=, dtype promotion, errors, autograd (gradcheck on real and complex
inputs), stft/istft, the thread setting."""
import warnings

import numpy as np
import pytest
import scipy.fft as sfft

import ember
from ember.autograd import gradcheck, gradgradcheck

F = ember.fft
RNG = np.random.default_rng(7)
NORMS = [None, "backward", "ortho", "forward"]


def rand(*shape, complex_=False, dtype=np.float64):
    a = RNG.standard_normal(shape)
    if complex_:
        a = a + 1j * RNG.standard_normal(shape)
    return a.astype(np.result_type(dtype, np.complex64) if complex_ else dtype)


def close(t, ref, tol=1e-10):
    got = t.numpy()
    assert got.shape == ref.shape, (got.shape, ref.shape)
    scale = max(1.0, float(np.abs(ref).max())) if ref.size else 1.0
    np.testing.assert_allclose(got, ref, rtol=0, atol=tol * scale)


# -- the example of the issue -------------------------------------------------------------------
def test_fft_of_arange_prints_like_torch():
    assert repr(F.fft(ember.arange(4))) == "tensor([ 6.+0.j, -2.+2.j, -2.+0.j, -2.-2.j])"


# -- 1-D against numpy --------------------------------------------------------------------------
ONE_D = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
COMPLEX_IN = {"fft", "ifft", "irfft", "hfft"}


@pytest.mark.parametrize("name", ONE_D)
@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("n_in", [1, 2, 7, 8, 12, 13, 16, 97])
def test_one_dim_matches_numpy(name, norm, n_in):
    x = rand(3, n_in, complex_=name in COMPLEX_IN)
    if name in ("irfft", "hfft") and n_in == 1:
        kwargs = {"n": 1}
    else:
        kwargs = {}
    close(getattr(F, name)(ember.tensor(x), norm=norm, **kwargs),
          getattr(np.fft, name)(x, norm=norm, **kwargs))


@pytest.mark.parametrize("name", ONE_D)
@pytest.mark.parametrize("n", [1, 5, 6, 11, 32])
def test_one_dim_n_pads_and_trims(name, n):
    x = rand(4, 9, complex_=name in COMPLEX_IN)
    for dim in (0, 1, -1):
        close(getattr(F, name)(ember.tensor(x), n=n, dim=dim),
              getattr(np.fft, name)(x, n=n, axis=dim))


@pytest.mark.parametrize("name", ["fft", "ifft"])
def test_real_input_to_complex_transforms(name):
    x = rand(5, 10)
    close(getattr(F, name)(ember.tensor(x), norm="ortho"), getattr(np.fft, name)(x, norm="ortho"))


# -- n-D ----------------------------------------------------------------------------------------
ND = ["fft2", "ifft2", "fftn", "ifftn", "rfft2", "irfft2", "rfftn", "irfftn"]


@pytest.mark.parametrize("name", ND)
@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("case", [
    {}, {"s": (5, 8)}, {"axes": (0, 2)}, {"s": (4, 7), "axes": (2, 0)}, {"axes": (1,)},
    {"s": (3, -1)}])
def test_n_dim_matches_numpy(name, norm, case):
    x = rand(4, 6, 5, complex_=not name.startswith("rfft"))
    np_case = dict(case)
    if "s" in case and -1 in case["s"]:
        axes = case.get("axes", tuple(range(x.ndim - len(case["s"]), x.ndim)))
        default = [x.shape[a] if name[:2] != "ir" or a != axes[-1]
                   else 2 * (x.shape[a] - 1) for a in axes]
        np_case["s"] = tuple(d if s == -1 else s for s, d in zip(case["s"], default))
    if name.endswith("2") and "axes" not in case:
        np_case.setdefault("axes", (-2, -1))
    if "s" in case and "axes" not in np_case:
        np_case["axes"] = tuple(range(x.ndim - len(case["s"]), x.ndim))
    if name.endswith("2") and "axes" in case and len(case["axes"]) != 2:
        pytest.skip("2-D functions take two dims")
    if name.endswith("2") and "s" in case and len(case["s"]) != 2:
        pytest.skip("2-D functions take two sizes")
    kw = {("dim" if k == "axes" else k): v for k, v in case.items()}
    close(getattr(F, name)(ember.tensor(x), norm=norm, **kw),
          getattr(np.fft, name)(x, norm=norm, **np_case))


@pytest.mark.parametrize("name", ["hfft2", "ihfft2", "hfftn", "ihfftn"])
@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("case", [{}, {"s": (6, 9)}, {"axes": (0, 2)}, {"s": (5, 4),
                                                                        "axes": (2, 1)}])
def test_hermitian_n_dim_matches_scipy(name, norm, case):
    if name.endswith("2") and "axes" in case and len(case["axes"]) != 2:
        pytest.skip("2-D functions take two dims")
    x = rand(4, 6, 5, complex_=name.startswith("h"))
    kw = {("dim" if k == "axes" else k): v for k, v in case.items()}
    ref = getattr(sfft, name)(x, norm=norm, **case)
    close(getattr(F, name)(ember.tensor(x), norm=norm, **kw), ref)


def test_non_contiguous_inputs():
    x = rand(6, 8, complex_=True)
    t = ember.tensor(x)
    close(F.fft(t.t()), np.fft.fft(x.T))
    close(F.fft(t[:, ::2], dim=0), np.fft.fft(x[:, ::2], axis=0))
    r = rand(5, 9)
    close(F.rfft(ember.tensor(r).t()[1:], n=6), np.fft.rfft(r.T[1:], n=6))
    close(F.irfft(t[1:, 1::2], n=7, dim=0), np.fft.irfft(x[1:, 1::2], n=7, axis=0))
    e = ember.tensor(x[:1]).expand(4, 8)
    close(F.fftn(e), np.fft.fftn(np.broadcast_to(x[:1], (4, 8))))


def test_promotion_like_torch():
    assert F.fft(ember.arange(4)).dtype is ember.complex64
    assert F.fft(ember.tensor([True, False])).dtype is ember.complex64
    assert F.fft(ember.ones(4, dtype=ember.float64)).dtype is ember.complex128
    assert F.rfft(ember.ones(4)).dtype is ember.complex64
    assert F.irfft(ember.ones(3, dtype=ember.complex128)).dtype is ember.float64
    assert F.irfft(ember.ones(3)).dtype is ember.float32
    assert F.hfft(ember.arange(3)).dtype is ember.float32
    with pytest.raises(RuntimeError, match="fft: Unsupported dtype Half"):
        F.fft(ember.ones(4, dtype=ember.float16))
    ember.set_default_dtype(ember.float64)
    try:
        assert F.fft(ember.arange(4)).dtype is ember.complex128
    finally:
        ember.set_default_dtype(ember.float32)


def test_float32_precision():
    x = rand(3, 1000, complex_=True, dtype=np.float32)
    got = F.fft(ember.tensor(x))
    assert got.dtype is ember.complex64
    close(got, np.fft.fft(x), tol=1e-5)


# -- out= ---------------------------------------------------------------------------------------
def test_out():
    x = ember.tensor(rand(3, 8))
    out = ember.empty(0, dtype=ember.complex128)
    r = F.rfft(x, out=out)
    assert r is out and out.shape == (3, 5)
    close(out, np.fft.rfft(x.numpy()))
    out = ember.zeros(3, 8, dtype=ember.complex128)
    F.fft2(x.to(ember.complex128), out=out)
    close(out, np.fft.fft2(x.numpy()))
    real_out = ember.empty(0, dtype=ember.float64)
    F.irfft(F.rfft(x), out=real_out)
    close(real_out, x.numpy())
    with pytest.raises(RuntimeError, match="rfft expects a complex output tensor, but got Float"):
        F.rfft(x, out=ember.empty(0))
    with pytest.raises(RuntimeError, match="irfft expects a floating point output tensor, but "
                                           "got ComplexFloat"):
        F.irfft(F.rfft(x), out=ember.empty(0, dtype=ember.complex64))
    with pytest.raises(RuntimeError, match="shape"):
        F.fft(x, out=ember.empty(2, 2, dtype=ember.complex128))


# -- errors -------------------------------------------------------------------------------------
def test_errors_name_function_argument_and_shape():
    x = ember.ones(3, 4)
    with pytest.raises(IndexError, match=r"fft: Dimension out of range \(expected to be in "
                                         r"range of \[-2, 1\], but got 2\).*'dim'.*\[3, 4\]"):
        F.fft(x, dim=2)
    with pytest.raises(IndexError, match="rfft: Dimension specified as -1 but tensor has no "
                                         "dimensions"):
        F.rfft(ember.tensor(1.0))
    with pytest.raises(RuntimeError, match=r"ifft: Invalid number of data points \(0\) "
                                           r"specified.*'n'.*\[3, 4\]"):
        F.ifft(x, n=0)
    with pytest.raises(RuntimeError, match=r"irfft: Invalid number of data points \(0\)"):
        F.irfft(ember.ones(1, dtype=ember.complex64))
    with pytest.raises(RuntimeError, match="ihfft expects a real input tensor, but got "
                                           "ComplexFloat"):
        F.ihfft(ember.ones(4, dtype=ember.complex64))
    with pytest.raises(RuntimeError, match="ihfftn expects a real-valued input tensor, but got "
                                           "ComplexDouble"):
        F.ihfftn(ember.ones(4, 4, dtype=ember.complex128))
    with pytest.raises(RuntimeError, match="rfft2 expects a real-valued input tensor"):
        F.rfft2(ember.ones(4, 4, dtype=ember.complex64))
    with pytest.raises(RuntimeError, match=r"fftn: When given, dim and shape arguments must "
                                           r"have the same length \(argument 's' = \[2, 3\], "
                                           r"argument 'dim' = \[0\]\)"):
        F.fftn(x, s=(2, 3), dim=(0,))
    with pytest.raises(RuntimeError, match="Got shape with 3 values but input tensor only has "
                                           "2 dimensions"):
        F.fftn(x, s=(2, 3, 4))
    with pytest.raises(RuntimeError, match="FFT dims must be unique"):
        F.fft2(x, dim=(1, -1))
    with pytest.raises(RuntimeError, match=r"Invalid number of data points \(-3\)"):
        F.rfftn(x, s=(2, -3))
    with pytest.raises(RuntimeError, match="Invalid normalization mode: \"sideways\""):
        F.fft(x, norm="sideways")
    with pytest.raises(RuntimeError, match="irfftn must transform at least one axis"):
        F.irfftn(ember.ones(3, dtype=ember.complex64), dim=())
    with pytest.raises(TypeError, match="argument 'input'"):
        F.fft([1.0, 2.0])


# -- helpers ------------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [1, 2, 7, 8, 10])
@pytest.mark.parametrize("d", [1.0, 0.25])
def test_freqs_match_numpy(n, d):
    f = F.fftfreq(n, d)
    assert f.dtype is ember.float32
    close(f, np.fft.fftfreq(n, d).astype(np.float32), tol=1e-7)
    close(F.rfftfreq(n, d, dtype=ember.float64), np.fft.rfftfreq(n, d))
    out = ember.empty(0, dtype=ember.float64)
    assert F.fftfreq(n, d, out=out) is out
    close(out, np.fft.fftfreq(n, d))


def test_freqs_errors_and_grad():
    with pytest.raises(RuntimeError, match="fftfreq requires a floating point or complex dtype"):
        F.fftfreq(4, dtype=ember.int64)
    assert F.fftfreq(4, requires_grad=True).requires_grad
    assert F.fftfreq(4, dtype=ember.complex64).dtype is ember.complex64


@pytest.mark.parametrize("shape", [(5,), (4, 7), (3, 4, 5)])
def test_shifts_match_numpy(shape):
    x = rand(*shape)
    t = ember.tensor(x)
    close(F.fftshift(t), np.fft.fftshift(x))
    close(F.ifftshift(t), np.fft.ifftshift(x))
    close(F.fftshift(t, dim=-1), np.fft.fftshift(x, axes=-1))
    close(F.ifftshift(t, dim=(0,)), np.fft.ifftshift(x, axes=(0,)))
    close(F.ifftshift(F.fftshift(t)), x)


# -- autograd -----------------------------------------------------------------------------------
def _leaf(*shape, complex_=False):
    return ember.tensor(rand(*shape, complex_=complex_), requires_grad=True)


GRAD_CASES = [
    ("fft complex", lambda x: F.fft(x), True), ("fft real n=7", lambda x: F.fft(x, n=7), False),
    ("ifft ortho dim 0", lambda x: F.ifft(x, dim=0, norm="ortho"), True),
    ("ifft real", lambda x: F.ifft(x, norm="forward"), False),
    ("rfft", lambda x: F.rfft(x), False), ("rfft n=6", lambda x: F.rfft(x, n=6), False),
    ("irfft", lambda x: F.irfft(x), True), ("irfft n=9", lambda x: F.irfft(x, n=9), True),
    ("hfft", lambda x: F.hfft(x, norm="ortho"), True), ("ihfft", lambda x: F.ihfft(x), False),
    ("fft2", lambda x: F.fft2(x, s=(4, 4)), True), ("fftn real", lambda x: F.fftn(x), False),
    ("rfftn", lambda x: F.rfftn(x, dim=(0, 1)), False), ("irfftn", lambda x: F.irfftn(x), True),
    ("irfft2 s", lambda x: F.irfft2(x, s=(3, 7)), True),
    ("hfftn", lambda x: F.hfftn(x, s=(3, 8)), True), ("ihfftn", lambda x: F.ihfftn(x), False),
    ("ihfft2 ortho", lambda x: F.ihfft2(x, norm="ortho"), False),
    ("fftshift", lambda x: F.fftshift(F.fft(x)), True),
]


@pytest.mark.parametrize("name,fn,complex_", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_gradcheck(name, fn, complex_):
    x = _leaf(3, 5, complex_=complex_)
    assert gradcheck(fn, (x,))
    assert gradgradcheck(fn, (x,))


def test_node_names_like_torch():
    x = _leaf(4, complex_=True)
    assert F.fft(x).grad_fn.name() == "FftC2CBackward0"
    assert F.rfft(x.real).grad_fn.name() == "FftR2CBackward0"
    assert F.irfft(x).grad_fn.name() == "FftC2RBackward0"


# -- stft / istft -------------------------------------------------------------------------------
def _hann(n):
    return ember.tensor(np.hanning(n + 1)[:-1])


@pytest.mark.parametrize("kw", [dict(n_fft=32), dict(n_fft=32, hop_length=5, win_length=20),
                                dict(n_fft=16, onesided=False), dict(n_fft=20, normalized=True),
                                dict(n_fft=24, center=False, hop_length=6)])
def test_stft_istft_round_trip(kw):
    x = ember.tensor(rand(2, 200))
    win = _hann(kw.get("win_length", kw["n_fft"]))
    spec = ember.stft(x, window=win, return_complex=True, **kw)
    n_freq = kw["n_fft"] if kw.get("onesided") is False else kw["n_fft"] // 2 + 1
    assert spec.shape[:2] == (2, n_freq) and spec.dtype is ember.complex128
    # frame 3 by hand: the windowed slice, transformed
    hop = kw.get("hop_length", kw["n_fft"] // 4)
    padded = x.numpy()
    if kw.get("center", True):
        padded = np.pad(padded, ((0, 0), (kw["n_fft"] // 2,) * 2), mode="reflect")
    w = np.zeros(kw["n_fft"])
    wl = win.shape[0]
    w[(kw["n_fft"] - wl) // 2:(kw["n_fft"] - wl) // 2 + wl] = win.numpy()
    frame = padded[:, 3 * hop:3 * hop + kw["n_fft"]] * w
    ref = np.fft.fft(frame, norm="ortho" if kw.get("normalized") else None)[:, :n_freq]
    np.testing.assert_allclose(spec[:, :, 3].numpy(), ref, atol=1e-10)
    ikw = {k: v for k, v in kw.items()}
    if kw.get("center", True) is False:
        with pytest.raises(RuntimeError, match="window overlap add min"):
            ember.istft(spec, window=win, **ikw)
        return
    y = ember.istft(spec, window=win, length=200, **ikw)
    np.testing.assert_allclose(y.numpy(), x.numpy(), atol=1e-10)
    assert x.stft(kw["n_fft"], window=win, return_complex=True,
                  **{k: v for k, v in kw.items() if k != "n_fft"}).shape == spec.shape


def test_stft_arguments_and_errors():
    x = ember.tensor(rand(100))
    with pytest.raises(RuntimeError, match="stft requires the return_complex parameter"):
        ember.stft(x, 16, window=_hann(16))
    with pytest.warns(UserWarning, match="A window was not provided"):
        ember.stft(x, 16, return_complex=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = ember.stft(x, 16, window=_hann(16), return_complex=False)
    assert r.shape == (9, 26, 2) and r.dtype is ember.float64
    with pytest.raises(RuntimeError, match=r"stft: expected 0 < n_fft <= 100, but got "
                                           r"n_fft=200"):
        ember.stft(x, 200, window=_hann(200), center=False, return_complex=True)
    with pytest.raises(RuntimeError, match="expected a 1D window tensor of size equal to "
                                           "win_length=16"):
        ember.stft(x, 16, window=_hann(10), return_complex=True)
    with pytest.raises(RuntimeError, match="istft requires a complex-valued input tensor"):
        ember.istft(x.reshape(10, 10), 18)
    with pytest.raises(RuntimeError, match="expected the frequency dimension"):
        ember.istft(ember.ones(7, 10, dtype=ember.complex64), 16)


def test_stft_gradcheck():
    x = _leaf(40)
    win = _hann(8)
    assert gradcheck(lambda t: ember.stft(t, 8, hop_length=3, window=win,
                                          return_complex=True), (x,))
    spec = ember.stft(x.detach(), 8, hop_length=2, window=win, return_complex=True)
    s = spec.clone().requires_grad_(True)
    assert gradcheck(lambda z: ember.istft(z, 8, hop_length=2, window=win, length=40), (s,))


# -- threads ------------------------------------------------------------------------------------
def test_num_threads():
    before = ember.get_num_threads()
    assert before >= 1
    x = rand(64, 64, complex_=True)
    try:
        ember.set_num_threads(1)
        assert ember.get_num_threads() == 1
        close(F.fft(ember.tensor(x), dim=0), np.fft.fft(x, axis=0))
    finally:
        ember.set_num_threads(before)
    assert ember.get_num_threads() == before
    for bad in (0, -2, 1.5, True):
        with pytest.raises(RuntimeError, match="set_num_threads expects a positive integer"):
            ember.set_num_threads(bad)

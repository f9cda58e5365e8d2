"""ember.fft against torch.fft (optional: skipped without torch): values, dtypes and gradients
of every function, with torch's own defaults."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
RNG = np.random.default_rng(3)

FUNCS = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "fftn", "ifftn",
         "rfft2", "irfft2", "rfftn", "irfftn", "hfft2", "ihfft2", "hfftn", "ihfftn"]
REAL_IN = {"rfft", "ihfft", "rfft2", "rfftn", "ihfft2", "ihfftn"}
KWARGS = [{}, {"norm": "ortho"}, {"norm": "forward"}]


def _pair(name, shape, dtype=np.float64):
    x = RNG.standard_normal(shape)
    if name not in REAL_IN:
        x = x + 1j * RNG.standard_normal(shape)
    x = x.astype(dtype if name in REAL_IN else np.result_type(dtype, np.complex64))
    return ember.tensor(x), torch.tensor(x)


def _extra(name):
    if name in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft"):
        return [{}, {"n": 7}, {"n": 12, "dim": 0}]
    return [{}, {"s": (5, 6)}, {"dim": (0, 2)}]


@pytest.mark.parametrize("name", FUNCS)
@pytest.mark.parametrize("norm", KWARGS, ids=["backward", "ortho", "forward"])
def test_values_and_dtypes(name, norm):
    for extra in _extra(name):
        if name.endswith("2") and "dim" in extra:
            continue
        for dtype in (np.float32, np.float64):
            e, t = _pair(name, (4, 6, 5), dtype)
            got = getattr(ember.fft, name)(e, **norm, **extra)
            want = getattr(torch.fft, name)(t, **norm, **extra)
            assert got.dtype.name == str(want.dtype).split(".")[1]
            tol = 1e-4 if dtype == np.float32 else 1e-10
            np.testing.assert_allclose(got.numpy(), want.resolve_conj().numpy(), rtol=tol,
                                       atol=tol * 10)


@pytest.mark.parametrize("name", FUNCS)
def test_gradients(name):
    e, t = _pair(name, (3, 4, 6))
    e.requires_grad_(True)
    t.requires_grad_(True)
    ge = getattr(ember.fft, name)(e, norm="ortho")
    gt = getattr(torch.fft, name)(t, norm="ortho")
    cot = RNG.standard_normal(tuple(gt.shape))
    if gt.is_complex():
        cot = cot + 1j * RNG.standard_normal(tuple(gt.shape))
    cot = cot.astype(np.complex128 if gt.is_complex() else np.float64)
    (de,) = ember.autograd.grad([ge], [e], [ember.tensor(cot)])
    (dt,) = torch.autograd.grad([gt], [t], [torch.tensor(cot)])
    np.testing.assert_allclose(de.numpy(), dt.resolve_conj().numpy(), atol=1e-10)
    # ember's conj is eager (no conjugate bit): its node is the physical conjugate's
    assert ge.grad_fn.name() == gt.grad_fn.name().replace("ConjBackward0",
                                                         "ConjPhysicalBackward0")


def test_printing_of_results():
    for x in ([0, 1, 2, 3], [1.5, -2.0, 3.25], [1e-5, 3.0, 1e4, 2.0]):
        assert repr(ember.fft.fft(ember.tensor(x))) == \
            repr(torch.fft.fft(torch.tensor(x))).replace("torch", "ember")
    assert repr(ember.fft.rfft(ember.arange(6))) == \
        repr(torch.fft.rfft(torch.arange(6))).replace("torch", "ember")


def test_freqs_and_stft():
    for n, d in ((7, 1.0), (8, 0.1)):
        np.testing.assert_array_equal(ember.fft.fftfreq(n, d).numpy(),
                                      torch.fft.fftfreq(n, d).numpy())
        np.testing.assert_array_equal(ember.fft.rfftfreq(n, d).numpy(),
                                      torch.fft.rfftfreq(n, d).numpy())
    x = RNG.standard_normal((2, 120))
    we, wt = ember.tensor(np.hanning(33)[:-1]), torch.tensor(np.hanning(33)[:-1])
    for kw in ({}, {"hop_length": 5, "win_length": 20}, {"onesided": False, "normalized": True},
               {"center": False}, {"pad_mode": "constant"}):
        wle = we if "win_length" not in kw else ember.tensor(np.hanning(21)[:-1])
        wlt = wt if "win_length" not in kw else torch.tensor(np.hanning(21)[:-1])
        a = ember.stft(ember.tensor(x), 32, window=wle, return_complex=True, **kw)
        b = torch.stft(torch.tensor(x), 32, window=wlt, return_complex=True, **kw)
        np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-10)
        if kw.get("center", True):
            ikw = {k: v for k, v in kw.items() if k != "pad_mode"}
            np.testing.assert_allclose(
                ember.istft(a, 32, window=wle, length=120, **ikw).numpy(),
                torch.istft(b, 32, window=wlt, length=120, **ikw).numpy(), atol=1e-10)

"""Complex tensors as first-class values: arithmetic, abs, angle, conj, sgn, the part views,
view_as_real/view_as_complex, polar, complex and printing, on the CPU against numpy and on
OpenCL against the CPU (natively: no CPU fallback), autograd against finite differences and
torch's formulas."""
import warnings

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck
from ember.runtime import CPUFallbackWarning

RNG = np.random.default_rng(5)
HAS_OPENCL = ember.opencl.is_available()
DEVICES = ["cpu"] + (["opencl"] if HAS_OPENCL else [])


def crand(*shape, dtype=np.complex128):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)


def dtypes_on(device):
    if device == "cpu" or ember.complex128 in ember.opencl._backend.dtypes:
        return [np.complex64, np.complex128]
    return [np.complex64]


def _native(device):
    """No CPU fallback may run inside (the op must have a kernel on ``device``)."""
    ctx = warnings.catch_warnings()
    ctx.__enter__()
    warnings.simplefilter("error", CPUFallbackWarning)
    return ctx


CASES = {
    "add": (lambda a, b: a + b, lambda a, b: a + b),
    "sub alpha": (lambda a, b: ember.sub(a, b, alpha=2 - 1j), lambda a, b: a - b * (2 - 1j)),
    "mul": (lambda a, b: a * b, lambda a, b: a * b),
    "div": (lambda a, b: a / b, lambda a, b: a / b),
    "scalar": (lambda a, b: a * 1j + 2.5, lambda a, b: a * 1j + 2.5),
    "neg": (lambda a, b: -a, lambda a, b: -a),
    "abs": (lambda a, b: a.abs(), lambda a, b: np.abs(a)),
    "angle": (lambda a, b: a.angle(), lambda a, b: np.angle(a)),
    "conj": (lambda a, b: a.conj(), lambda a, b: np.conj(a)),
    "sgn": (lambda a, b: ember.sgn(a), lambda a, b: a / np.abs(a)),
    "exp": (lambda a, b: a.exp(), lambda a, b: np.exp(a)),
    "log": (lambda a, b: a.log(), lambda a, b: np.log(a)),
    "sqrt": (lambda a, b: a.sqrt(), lambda a, b: np.sqrt(a)),
    "square": (lambda a, b: a.square(), lambda a, b: np.square(a)),
    "reciprocal": (lambda a, b: a.reciprocal(), lambda a, b: 1 / a),
    "eq": (lambda a, b: a == a.conj(), lambda a, b: a == np.conj(a)),
    "sum": (lambda a, b: a.sum(0), lambda a, b: a.sum(0)),
    "mean": (lambda a, b: a.mean(), lambda a, b: np.asarray(a.mean())),
    "real": (lambda a, b: a.real * 2, lambda a, b: a.real * 2),
    "imag": (lambda a, b: a.imag, lambda a, b: a.imag),
    "view_as_real": (lambda a, b: ember.view_as_real(a), lambda a, b: np.stack([a.real, a.imag],
                                                                                -1)),
    "polar": (lambda a, b: ember.polar(a.abs(), b.angle()),
              lambda a, b: np.abs(a) * np.exp(1j * np.angle(b))),
    "complex": (lambda a, b: ember.complex(a.real, b.imag), lambda a, b: a.real + 1j * b.imag),
    "where": (lambda a, b: ember.where(a.real > 0, a, b), lambda a, b: np.where(a.real > 0, a, b)),
    "cat flip": (lambda a, b: ember.cat([a, b.flip(0)], 1), lambda a, b: np.concatenate(
        [a, b[::-1]], 1)),
    "to real": (lambda a, b: a.real.to(ember.float64) + a.imag.contiguous(),
                lambda a, b: a.real.astype(np.float64) + a.imag),
    "from real": (lambda a, b: a.real.to(a.dtype), lambda a, b: a.real.astype(a.dtype)),
    "full": (lambda a, b: ember.full((2, 3), 1 - 2j, dtype=a.dtype, device=a.device),
             lambda a, b: np.full((2, 3), 1 - 2j, dtype=a.dtype)),
    "non-contiguous": (lambda a, b: a.t() * b.t()[:, :1] + 1, lambda a, b: a.T * b.T[:, :1] + 1),
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", list(CASES))
def test_complex_ops(device, name):
    fn, ref = CASES[name]
    for dt in dtypes_on(device):
        a, b = crand(4, 5, dtype=dt), crand(4, 5, dtype=dt)
        with warnings.catch_warnings():
            warnings.simplefilter("error", CPUFallbackWarning)
            got = fn(ember.tensor(a, device=device), ember.tensor(b, device=device))
        assert got.device.type == device
        want = np.asarray(ref(a, b))
        tol = 2e-6 if dt == np.complex64 else 1e-12
        np.testing.assert_allclose(got.cpu().numpy(), want, rtol=tol, atol=tol)
        assert got.cpu().numpy().dtype == want.dtype, (got.dtype, want.dtype)


@pytest.mark.parametrize("device", DEVICES)
def test_zero_and_special_values(device):
    z = ember.tensor([0j, 1j, -1 + 0j, complex("inf"), complex("nan")], device=device)
    np.testing.assert_array_equal(ember.sgn(z[:3]).cpu().numpy(), [0, 1j, -1])
    np.testing.assert_allclose(z[:3].angle().cpu().numpy(), [0, np.pi / 2, np.pi])
    assert z.isnan().tolist() == [False, False, False, False, True]
    assert z.isfinite().tolist() == [True, True, True, False, False]
    c = ember.complex(ember.tensor([0.0, 1.0], device=device),
                      ember.tensor([float("inf"), -0.0], device=device))
    np.testing.assert_array_equal(c.cpu().numpy(), np.array([complex(0, np.inf), 1 - 0j]))


def test_real_angle_like_torch():
    x = ember.tensor([-2.0, 0.0, -0.0, 3.0, float("nan")])
    np.testing.assert_array_equal(ember.angle(x).numpy(),
                                  np.array([np.pi, 0, 0, 0, np.nan], dtype=np.float32))
    assert ember.angle(ember.tensor([-1, 2])).dtype is ember.float32


def test_part_views_share_memory():
    z = ember.tensor(crand(3, 4))
    r = z.real
    r.mul_(0)
    assert np.all(z.numpy().real == 0)
    z.imag.add_(1)
    v = ember.view_as_real(z)
    assert v.shape == (3, 4, 2) and v.stride() == (8, 2, 1)
    back = ember.view_as_complex(v)
    assert back.shape == (3, 4) and back._storage is z._storage
    x = ember.ones(3, 2)
    assert ember.real(x) is x
    with pytest.raises(RuntimeError, match="imag is not implemented for tensors with non-complex"):
        ember.imag(x)


def test_view_errors():
    with pytest.raises(RuntimeError, match="view_as_real is only supported for complex tensors"):
        ember.view_as_real(ember.ones(3))
    with pytest.raises(RuntimeError, match="Tensor must have a last dimension of size 2"):
        ember.view_as_complex(ember.ones(3, 3))
    with pytest.raises(RuntimeError, match="last dimension with stride 1"):
        ember.view_as_complex(ember.ones(2, 4).t())
    with pytest.raises(RuntimeError, match="only supported for float and double tensors"):
        ember.view_as_complex(ember.ones(3, 2, dtype=ember.int64))
    with pytest.raises(RuntimeError, match="storage_offset divisible by 2"):
        ember.view_as_complex(ember.ones(7)[1:].view(3, 2))
    with pytest.raises(RuntimeError, match="Expected both inputs to be Half, Float or Double"):
        ember.complex(ember.ones(2, dtype=ember.int64), ember.ones(2, dtype=ember.int64))
    with pytest.raises(RuntimeError, match="Expected object of scalar type Float but got scalar "
                                           "type Double for second argument"):
        ember.polar(ember.ones(2), ember.ones(2, dtype=ember.float64))


# -- autograd -----------------------------------------------------------------------------------
def _leaf(*shape, positive=False):
    a = crand(*shape)
    if positive:
        a = a + 3
    return ember.tensor(a, requires_grad=True)


GRADS = [
    ("abs", lambda z: z.abs()), ("angle", lambda z: z.angle()), ("real", lambda z: z.real * 1),
    ("imag", lambda z: z.imag * z.real), ("view_as_real", lambda z: ember.view_as_real(z)),
    ("sgn", lambda z: ember.sgn(z)), ("conj", lambda z: z.conj() * z),
    ("mul/div", lambda z: z * z.conj() / (z + 5)), ("exp/log", lambda z: (z + 5).log().exp()),
    ("sum", lambda z: (z * 1j).sum()),
]


@pytest.mark.parametrize("name,fn", GRADS, ids=[g[0] for g in GRADS])
def test_complex_gradcheck(name, fn):
    z = _leaf(2, 3)
    assert gradcheck(fn, (z,))
    assert gradgradcheck(fn, (z,))


def test_real_to_complex_gradcheck():
    x = ember.tensor(RNG.standard_normal(4) + 2, requires_grad=True)
    y = ember.tensor(RNG.standard_normal(4), requires_grad=True)
    assert gradcheck(lambda a, b: ember.complex(a, b) * (1 + 2j), (x, y))
    assert gradcheck(lambda a, b: ember.polar(a, b), (x, y))
    assert gradcheck(lambda a: ember.view_as_complex(a.reshape(2, 2)), (x,))
    assert ember.polar(x, y).grad_fn.name() == "PolarBackward0"
    assert ember.complex(x, y).grad_fn.name() == "ComplexBackward0"


def test_gradients_like_torch():
    torch = pytest.importorskip("torch")
    a = crand(5)
    for name, fn in GRADS:
        z = ember.tensor(a, requires_grad=True)
        t = torch.tensor(a, requires_grad=True)
        tfn = {"sgn": lambda w: torch.sgn(w), "view_as_real": lambda w: torch.view_as_real(w)
               }.get(name, fn)
        out_e, out_t = fn(z), tfn(t)
        cot = crand(*out_t.shape) if out_t.is_complex() else RNG.standard_normal(out_t.shape)
        (ge,) = ember.autograd.grad([out_e], [z], [ember.tensor(cot)])
        (gt,) = torch.autograd.grad([out_t], [t], [torch.tensor(cot)])
        np.testing.assert_allclose(ge.numpy(), gt.resolve_conj().numpy(), atol=1e-12,
                                   err_msg=name)
    for name in ("abs", "angle"):
        z = ember.tensor(a, requires_grad=True)
        assert getattr(z, name)().grad_fn.name() == \
            getattr(torch.tensor(a, requires_grad=True), name)().grad_fn.name()


@pytest.mark.skipif(not HAS_OPENCL, reason="opencl unavailable")
def test_opencl_gradients_match_cpu():
    a = crand(3, 4, dtype=np.complex64)
    grads = []
    for dev in ("cpu", "opencl"):
        z = ember.tensor(a, device=dev, requires_grad=True)
        y = (z.abs() + z.angle() + z.real * z.imag).sum() + (z * z.conj()).real.sum()
        (g,) = ember.autograd.grad([y], [z])
        grads.append(g.cpu().numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-5, atol=1e-5)


@pytest.mark.skipif(not HAS_OPENCL, reason="opencl unavailable")
def test_opencl_ops_without_complex_kernels_fall_back():
    z = ember.tensor(crand(4, dtype=np.complex64), device="opencl")
    with pytest.warns(CPUFallbackWarning, match="cumsum"):
        got = z.cumsum(0)
    assert got.device.type == "opencl"
    np.testing.assert_allclose(got.cpu().numpy(), np.cumsum(z.cpu().numpy()), rtol=1e-6)
    backend = ember.opencl._backend
    assert ember.complex64 in backend.kernel_dtypes("mul")
    assert ember.complex64 not in backend.kernel_dtypes("cumsum")


# -- printing -----------------------------------------------------------------------------------
PRINT_CASES = [
    [0j, 1 + 2j, -3.5 - 1j], [1e-5 + 2j, 3 + 0j], [1e9 + 1j, 1 - 1e9j], [complex("nan"), 1 + 1j],
    [complex("inf"), -1j], [0.5 + 0.25j], [0j, -0.0 - 0.0j], [123456.0 + 1j, 0.001 - 2j],
]


@pytest.mark.parametrize("values", PRINT_CASES, ids=[str(i) for i in range(len(PRINT_CASES))])
def test_printing_like_torch(values):
    torch = pytest.importorskip("torch")
    for dt, tdt in ((ember.complex64, torch.complex64), (ember.complex128, torch.complex128)):
        e = ember.tensor(values, dtype=dt)
        t = torch.tensor(values, dtype=tdt)
        assert repr(e) == repr(t).replace("torch.", "ember.")
        assert repr(e.reshape(-1, 1)) == repr(t.reshape(-1, 1)).replace("torch.", "ember.")
        assert repr(e[0]) == repr(t[0]).replace("torch.", "ember.")


def test_printing_long_and_on_opencl():
    torch = pytest.importorskip("torch")
    a = crand(40, 30, dtype=np.complex64)
    assert repr(ember.tensor(a)) == repr(torch.tensor(a)).replace("torch.", "ember.")
    if HAS_OPENCL:
        on_device = ember.tensor(a[:2, :3], device="opencl")
        assert repr(on_device).endswith("device='opencl:0')")
        assert repr(on_device.cpu()) == repr(torch.tensor(a[:2, :3]))

"""OpenCL's fused layer norm (a work-item per row, ``ops_layer_norm``) against the CPU backend:
values, statistics and every gradient, over parameters and inputs that are strided views with
offsets, each subset of affine parameters and of requested gradients, and rows long enough to
take ``ops_norm``'s reductions instead."""
import numpy as np
import pytest

import ember

pytestmark = pytest.mark.skipif(not ember.opencl.is_available(),
                                reason=f"opencl unavailable: {ember.opencl.unavailable_reason()}")
DTYPES = [ember.float32] + ([ember.float64] if ember.opencl.is_available() and
                            ember.float64 in ember.opencl._backend.dtypes else [])
F = ember.nn.functional


def _run(device, x, ns, w, b, g, strided):
    def put(t):
        if t is None:
            return None
        t = t.to(device)
        if strided:   # the same values as a strided view with an offset
            wide = ember.zeros((2,) + tuple(t.shape), dtype=t.dtype, device=device)
            wide[1] = t
            t = wide.movedim(0, -1)[..., 1]
        return t.requires_grad_()
    xs, ws, bs = put(x), put(w), put(b)
    out, mean, rstd = ember.native_layer_norm(xs, ns, ws, bs, 1e-5)
    leaves = [t for t in (xs, ws, bs) if t is not None]
    grads = ember.autograd.grad(out, leaves, g.to(device))
    return [t.detach().cpu().numpy() for t in (out, mean, rstd, *grads)]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape,ns", [((4, 6, 32), (32,)), ((3, 5, 7), (5, 7)), ((9, 1), (1,)),
                                      ((2, 5000), (5000,))],
                         ids=["rows of 32", "over two dims", "rows of 1", "two long rows"])
@pytest.mark.parametrize("affine", ["both", "weight", "bias", "none"])
@pytest.mark.parametrize("strided", [False, True], ids=["contiguous", "strided"])
def test_matches_the_cpu(dtype, shape, ns, affine, strided):
    gen = ember.Generator().manual_seed(0)
    x = ember.randn(*shape, dtype=dtype, generator=gen) * 3 + 1
    w = ember.randn(*ns, dtype=dtype, generator=gen) if affine in ("both", "weight") else None
    b = ember.randn(*ns, dtype=dtype, generator=gen) if affine in ("both", "bias") else None
    g = ember.randn(*shape, dtype=dtype, generator=gen)
    want = _run("cpu", x, ns, w, b, g, strided)
    got = _run("opencl", x, ns, w, b, g, strided)
    tol = 1e-5 if dtype is ember.float32 else 1e-12
    for a, e in zip(got, want):
        np.testing.assert_allclose(a, e, rtol=tol, atol=tol * 10)


def test_only_some_gradients():
    # a frozen weight: the input and bias gradients alone (output_mask [True, False, True])
    gen = ember.Generator().manual_seed(1)
    x, w, b = (ember.randn(*s, generator=gen) for s in ((6, 16), (16,), (16,)))
    res = []
    for dev in ("cpu", "opencl"):
        xs, bs = x.to(dev).requires_grad_(), b.to(dev).requires_grad_()
        y = F.layer_norm(xs, (16,), w.to(dev), bs)
        res.append([t.cpu().numpy() for t in ember.autograd.grad((y * y).sum(), (xs, bs))])
    for a, e in zip(*res):
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-5)

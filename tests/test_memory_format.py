"""preserve_format: clone and the *_like factories keep a permuted, dense layout (PyTorch's
rule), contiguous_format and channels_last lay tensors out as named; on every backend."""
import pytest

import ember
from ember._memory_format import dense_order

DEVICES = ["cpu"] + (["opencl"] if ember.opencl.is_available() else [])


@pytest.mark.parametrize("device", DEVICES)
def test_clone_and_like_factories_preserve_a_permuted_dense_layout(device):
    p = ember.randn(2, 3, 4, device=device).permute(2, 0, 1)
    for t in (p.clone(), ember.empty_like(p), ember.zeros_like(p), ember.ones_like(p),
              ember.full_like(p, 2.0), ember.rand_like(p) if hasattr(ember, "rand_like") else p):
        assert t.stride() == (1, 12, 4)
        assert t._storage is not p._storage or t is p
    assert (p.clone() == p).all()
    assert p.clone(memory_format=ember.contiguous_format).stride() == (6, 3, 1)
    gap = ember.randn(4, 6, device=device)[:, ::2]  # not dense: row-major result
    assert gap.clone().stride() == (3, 1) and ember.empty_like(gap).stride() == (3, 1)


@pytest.mark.parametrize("device", DEVICES)
def test_channels_last_orders_channels_innermost(device):
    x = ember.randn(2, 3, 4, 5, device=device)
    y = x.contiguous(memory_format=ember.channels_last)
    assert y.stride() == (60, 1, 15, 3) and (y == x).all()
    assert y.contiguous(memory_format=ember.channels_last) is y
    with pytest.raises(RuntimeError, match="required rank 4"):
        ember.randn(3, 4).contiguous(memory_format=ember.channels_last)


def test_clone_records_clone_backward_and_passes_the_gradient():
    q = ember.randn(3, 4, dtype=ember.float64, requires_grad=True)
    c = q.t().clone()
    assert type(c.grad_fn).__name__ == "CloneBackward0" and c.stride() == (1, 4)
    assert ember.autograd.gradcheck(lambda t: t.t().clone(), (q,))
    z = ember.zeros_like(q.t(), requires_grad=True)
    assert z.is_leaf and z.requires_grad


def test_dense_order():
    assert dense_order((2, 3, 4), (12, 4, 1)) == [0, 1, 2]
    assert dense_order((4, 2, 3), (1, 12, 4)) == [1, 2, 0]
    assert dense_order((2, 3), (1, 3)) is None  # a gap
    assert dense_order((3,), (0,)) is None       # overlapping (expanded)


def test_memory_format_everywhere_torch_takes_it():
    """to/casts preserve a dense layout and take memory_format; randint_like, Module.to and
    resize_ honour it (issue #25)."""
    import ember.nn as nn
    cl = ember.channels_last
    nhwc = (60, 1, 15, 3)
    x = ember.randn(2, 3, 4, 5)
    xc = x.contiguous(memory_format=cl)
    assert x.to(memory_format=cl).stride() == nhwc
    assert xc.to(ember.float64).stride() == nhwc and xc.double().stride() == nhwc
    assert x.float(memory_format=cl).stride() == nhwc
    assert ember.randint_like(x, 5, memory_format=cl).stride() == nhwc
    assert ember.randint_like(xc, 5).stride() == nhwc
    m = nn.Conv2d(3, 4, 3).to(memory_format=cl)
    assert m.weight.stride() == (27, 1, 9, 3) and m.bias.stride() == (1,)
    assert ember.empty(2).resize_(2, 3, 4, 5, memory_format=cl).stride() == nhwc
    assert x.to(memory_format=ember.contiguous_format) is x
    assert xc.to(memory_format=ember.preserve_format) is xc


@pytest.mark.parametrize("shape,fmt", [((2, 3, 4, 5), "channels_last"),
                                       ((2, 3, 4, 5, 6), "channels_last_3d"),
                                       ((1, 3, 1, 5), "channels_last"),
                                       ((0, 3, 4, 5), "channels_last")])
def test_is_contiguous_asks_about_the_memory_format_given(shape, fmt):
    torch = pytest.importorskip("torch")
    for convert in (None, "contiguous_format", fmt):
        got, want = [], []
        for lib, out in ((ember, got), (torch, want)):
            x = lib.randn(*shape)
            if convert is not None:
                x = x.contiguous(memory_format=getattr(lib, convert))
            for ask in ("contiguous_format", "preserve_format", fmt):
                out.append(x.is_contiguous(memory_format=getattr(lib, ask)))
            out.append(lib.randn(3, 4).is_contiguous(memory_format=getattr(lib, fmt)))
        assert got == want, (convert, got, want)


def test_kinds_ember_has_no_tensors_of_read_false_like_torch():
    torch = pytest.importorskip("torch")
    for name in ("is_quantized", "is_nested", "is_sparse_csr"):
        assert getattr(ember.randn(2), name) is getattr(torch.randn(2), name) is False

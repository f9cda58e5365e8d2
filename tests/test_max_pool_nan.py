"""Max pooling with NaN windows against PyTorch: a NaN is every window's maximum, and the index
is the window's *last* NaN (torch's pooling kernels update on every NaN), while ties between
numbers keep the first. The compiled 2-D loop, the Python reference and OpenCL must all agree."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

CASES = [  # (op, spatial shape, args)
    ("max_pool1d", (9,), (3, 2, 1)),
    ("max_pool2d", (7, 9), ((3, 2), (2, 1), (1, 0))),
    ("max_pool2d", (8, 8), (2,)),
    ("max_pool3d", (4, 5, 5), (2, 1)),
    ("adaptive_max_pool1d", (9,), (4,)),
    ("adaptive_max_pool2d", (7, 6), ((3, 2),)),
]


def _input(spatial, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((2, 3) + spatial).round(1).astype(np.float32)   # ties
    flat = x.reshape(-1)
    flat[rng.random(flat.size) < 0.25] = np.nan    # windows with one, two or more NaNs
    return x


@pytest.mark.parametrize("op, spatial, args", CASES)
@pytest.mark.parametrize("pure", [False, True], ids=["compiled", "reference"])
def test_max_pool_index_is_the_last_nan_as_torch(op, spatial, args, pure, monkeypatch):
    if pure:
        from ember.kit import pooling
        monkeypatch.setattr(pooling, "_C", None)
    x = _input(spatial, len(spatial))
    ev, ei = getattr(ember.nn.functional, op)(ember.tensor(x), *args, return_indices=True)
    tv, ti = getattr(torch.nn.functional, op)(torch.from_numpy(x), *args, return_indices=True)
    assert np.isnan(tv.numpy()).any()
    np.testing.assert_array_equal(ev.numpy(), tv.numpy())
    np.testing.assert_array_equal(ei.numpy(), ti.numpy())


@pytest.mark.parametrize("op, spatial, args", CASES[:4])
def test_opencl_max_pool_index_is_the_last_nan(op, spatial, args):
    if not ember.opencl.is_available():
        pytest.skip(ember.opencl.unavailable_reason())
    x = _input(spatial, 7)
    cpu = getattr(ember.nn.functional, op)(ember.tensor(x), *args, return_indices=True)
    ocl = getattr(ember.nn.functional, op)(ember.tensor(x, device="opencl"), *args,
                                           return_indices=True)
    for a, b in zip(cpu, ocl):
        np.testing.assert_array_equal(a.numpy(), b.cpu().numpy())

"""The CPU backend's GEMM layout choices. kit/array_backend.py ``_swap_helps``: a few rows
times a transposed weight runs as the swapped product, which must give numpy's bits in C
order, as the unswapped one does (a linear layer's output is viewed and reshaped after).
kit/convolution.py ``_times_columns``: the weight gradient's GEMM over many positions."""
import numpy as np
import pytest

import ember
from ember.kit.array_backend import _swap_helps


@pytest.mark.parametrize("rows, inner, cols", [(1, 128, 64), (16, 1024, 1024), (64, 784, 256),
                                               (64, 64, 256), (256, 512, 512)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_linear_forward_gives_numpys_bits_in_c_order(rows, inner, cols, dtype):
    rng = np.random.default_rng(rows)
    x = rng.standard_normal((rows, inner)).astype(dtype)
    w = rng.standard_normal((cols, inner)).astype(dtype)
    b = rng.standard_normal(cols).astype(dtype)
    y = ember.nn.functional.linear(ember.tensor(x), ember.tensor(w), ember.tensor(b))
    assert y.is_contiguous()
    assert y.numpy().tobytes() == (x @ w.T + b).tobytes()
    y.view(-1)     # a view of the output works, as torch's


def test_the_swap_is_taken_only_where_it_was_measured_to_help():
    x = np.zeros((64, 784), np.float32)
    w = np.zeros((256, 784), np.float32)
    assert _swap_helps(x, w.T)
    assert not _swap_helps(x, np.ascontiguousarray(w.T))      # not a transposed weight
    assert not _swap_helps(np.zeros((256, 784), np.float32), w.T)    # many rows
    assert not _swap_helps(np.zeros((64, 64), np.float32), np.zeros((256, 64), np.float32).T)
    assert not _swap_helps(x.astype(np.int64), w.T.astype(np.int64))


@pytest.mark.parametrize("transposed", [False, True])
def test_convolution_weight_gradient_in_the_swapped_layout(transposed):
    # many positions and long columns: kit/convolution.py _times_columns swaps the GEMM; the
    # gradient must match the float64 computation of the same convolution
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 32, 32, 32))
    w = rng.standard_normal((32, 16, 3, 3) if transposed else (16, 32, 3, 3))
    conv = ember.nn.functional.conv_transpose2d if transposed else ember.nn.functional.conv2d
    grads = []
    for dtype in (ember.float32, ember.float64):
        wt = ember.tensor(w, dtype=dtype, requires_grad=True)
        y = conv(ember.tensor(x, dtype=dtype), wt, padding=1)
        (y * y).sum().backward()
        grads.append(wt.grad.numpy().astype(np.float64))
    assert grads[0].flags.c_contiguous
    np.testing.assert_allclose(grads[0], grads[1], rtol=2e-4, atol=1e-2)

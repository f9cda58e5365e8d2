"""Multi-output ops save only the outputs their backward reads (PyTorch's result1/result2):
an in-place write to the main output — ``out += shortcut`` after batch norm in a ResNet block,
a LeakyReLU(inplace=True) after it in DCGAN — must not fail the saved-version check, and the
gradients must still equal torch's."""
import numpy as np
import pytest

import ember
import ember.nn.functional as F

torch = pytest.importorskip("torch")


def _inplace_after(lib, fn, x_np, extra_np):
    x = lib.tensor(x_np, requires_grad=True)
    extra = lib.tensor(extra_np)
    out = fn(lib, x)
    out += extra                       # writes the op's output 0 in place
    out = out.relu()
    out.sum().backward()
    return x.grad.numpy()


CASES = {
    "batch_norm": (lambda lib, x: lib.nn.functional.batch_norm(
        x, None, None, training=True), (4, 3, 5, 5)),
    "layer_norm": (lambda lib, x: lib.nn.functional.layer_norm(x, (5,)), (4, 3, 5)),
    "group_norm": (lambda lib, x: lib.nn.functional.group_norm(x, 3), (4, 6, 5)),
    "max_pool2d": (lambda lib, x: lib.nn.functional.max_pool2d(x, 2), (2, 3, 6, 6)),
    "adaptive_max_pool2d": (lambda lib, x: lib.nn.functional.adaptive_max_pool2d(x, 3),
                            (2, 3, 6, 6)),
    "sort": (lambda lib, x: lib.sort(x, 1)[0], (4, 7)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_inplace_write_to_output_zero(name):
    fn, shape = CASES[name]
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(np.float32)
    probe = fn(torch, torch.tensor(x))
    extra = rng.standard_normal(tuple(probe.shape)).astype(np.float32)
    got = _inplace_after(ember, fn, x, extra)
    want = _inplace_after(torch, fn, x, extra)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_nll_loss_output_written_in_place():
    rng = np.random.default_rng(1)
    x_np = rng.standard_normal((5, 4)).astype(np.float32)
    t_np = rng.integers(0, 4, 5)
    grads = []
    for lib in (ember, torch):
        x = lib.tensor(x_np, requires_grad=True)
        loss = lib.nn.functional.nll_loss(x.log_softmax(1), lib.tensor(t_np))
        loss.mul_(2.0)
        loss.backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-5, atol=1e-6)


def test_saved_output_still_checked():
    """An output the formula does read stays version-checked (exp saves its result)."""
    x = ember.randn(3, requires_grad=True)
    y = x.exp()
    y.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()

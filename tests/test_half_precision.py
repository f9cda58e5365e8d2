"""Half-precision arithmetic as torch's CPU kernels do it, compared with torch.

* mul and div of a float16/bfloat16 tensor by a Python number compute in float32 with the
  number's full value and round once (numpy would round the number to the half dtype first:
  98304 is inf in float16, so a float16 mean's gradient over 98304 elements was 0);
* add and sub round the number to the tensor's dtype first (torch does, for these two);
* nll_loss/cross_entropy sum their rows and weights in float32 (summed in bfloat16 they stall:
  a loss of 8.0 where torch gives 6.34, which kept a bfloat16 GPT from training); compared to an
  ulp of the loss, since log_softmax may differ from torch's by an ulp.
"""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

X = np.random.default_rng(0).standard_normal(20000).astype(np.float32)
NUMBERS = [0.1, 3.7, 98304, 1e-3, -2.5]


def _pair(dtype):
    return (ember.tensor(X).to(getattr(ember, dtype)), torch.tensor(X).to(getattr(torch, dtype)))


def _same(e, t):
    return np.array_equal(e.float().numpy(), t.float().numpy(), equal_nan=True)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("op", ["mul", "div", "add", "sub"])
def test_a_half_tensor_and_a_number(dtype, op):
    e, t = _pair(dtype)
    for number in NUMBERS:
        assert _same(getattr(ember, op)(e, number), getattr(torch, op)(t, number)), number
        assert _same(getattr(e.clone(), op + "_")(number), getattr(t.clone(), op + "_")(number))
        if op in ("mul", "add"):
            assert _same(getattr(ember, op)(number, e), getattr(torch, op)(number, t)), number


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_a_mean_gradient_over_more_elements_than_float16_holds(dtype):
    grads = []
    for lib in (ember, torch):
        a = lib.ones(98304, dtype=getattr(lib, dtype), requires_grad=True)
        a.mean().backward()
        grads.append(a.grad)
    assert _same(*grads) and grads[0][0].item() > 0


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_cross_entropy_sums_in_float32(dtype, reduction):
    x = np.random.default_rng(1).standard_normal((512, 512)).astype(np.float32) * 0.5
    target = np.random.default_rng(2).integers(0, 512, 512)
    losses = []
    for lib in (ember, torch):
        logits = lib.tensor(x).to(getattr(lib, dtype))
        losses.append(lib.nn.functional.cross_entropy(logits, lib.tensor(target),
                                                      reduction=reduction))
    # log_softmax may differ from torch's by an ulp here and there (numpy's exp is not
    # torch's), so the losses agree to an ulp of the result, not bit for bit
    got, want = losses[0].item(), losses[1].item()
    assert abs(got - want) <= 2 * abs(want) * ember.finfo(getattr(ember, dtype)).eps, (got, want)

"""Saved tensors like torch's (issue #30, item 4): an op keeps for backward what torch's
derivative (``derivatives.yaml``) keeps, so modifying a tensor in place before backward raises
when torch raises. The comparison runs torch's OpInfo samples under both
(``bench/saved_tensors.py``): a quick set of ops here, every op under ``-m slow``.
"""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "bench"))
import saved_tensors  # noqa: E402

# where ember still raises and torch does not, and why (each a deliberate difference)
SAVES_MORE = {
    "kron": "torch reshapes through _unsafe_view, a view with its own version counter; "
            "ember's reshape views share the input's",
    "nn.functional.instance_norm": "torch normalizes with weight.repeat(N) (a copy); ember "
                                   "multiplies by a view of weight",
    "nn.functional.scaled_dot_product_attention":
        "ember's fused attention keeps query, key, value, output and logsumexp, like torch's "
        "flash/efficient kernels; torch's float64 CPU path (these samples) is the math "
        "composite, which keeps neither the inputs nor the output",
    "nn.functional.linear_cross_entropy.chunked": "torch's chunked path recomputes per chunk "
                                                  "from copies; ember's composite keeps views",
    **{name: "ember computes the eigen/singular vectors in backward from the saved input; "
             "torch computes them in forward when a gradient is needed and keeps those"
       for name in ("linalg.cond", "linalg.eigvals", "linalg.eigvalsh", "linalg.svdvals",
                    "norm.nuc")},
}

# the ops #30 fixed (they saved an output torch does not: an in-place ReLU after them broke
# backward), and a spread of others
QUICK = ["nn.functional.batch_norm", "native_batch_norm", "nn.functional.layer_norm",
         "native_layer_norm", "nn.functional.group_norm", "native_group_norm",
         "nn.functional.max_pool2d", "nn.functional.adaptive_max_pool2d", "max", "min",
         "sort", "mode", "msort", "nn.functional.nll_loss", "nn.functional.cross_entropy",
         "nn.functional.embedding_bag", "deg2rad", "rad2deg", "erfinv", "special.ndtr",
         "ldexp", "linalg.slogdet", "linalg.vander", "nn.functional.relu", "sigmoid", "tanh",
         "exp", "mul", "div", "matmul", "nn.functional.conv2d", "nn.functional.linear",
         "sum", "mean", "softmax", "log_softmax", "nn.functional.gelu", "pow"]


def _disagreements(rows):
    more = [r for r in rows if r[3] == "runs" and r[4] == "raises"]
    return [r for r in more if r[0] not in SAVES_MORE]


def test_quick_ops_save_what_torch_saves():
    rows = saved_tensors.compare(QUICK, n_samples=2)
    assert len({r[0] for r in rows}) >= 30
    bad = _disagreements(rows)
    assert not bad, "\n".join(f"{r[0]} sample {r[1]} {r[2]}: torch {r[3]}, ember {r[4]}"
                              for r in bad)
    fixed = [r for r in rows if r[0].split(".")[0] in ("native_batch_norm", "max", "sort")]
    assert any(r[2] == "output 0" and r[3] == r[4] == "runs" for r in fixed)


@pytest.mark.slow
def test_every_op_saves_no_more_than_torch():
    rows = saved_tensors.compare(("*",), n_samples=2)
    assert len({r[0] for r in rows}) > 400
    bad = _disagreements(rows)
    assert not bad, "\n".join(f"{r[0]} sample {r[1]} {r[2]}: torch {r[3]}, ember {r[4]}"
                              for r in bad)


@pytest.mark.parametrize("norm", ["BatchNorm2d", "GroupNorm", "LayerNorm", "InstanceNorm2d"])
def test_inplace_relu_after_normalization_like_torch(norm):
    """The block of every ResNet and GAN: norm, then ReLU(inplace=True)."""
    def run(lib):
        lib.manual_seed(0)
        nn = lib.nn
        make = {"BatchNorm2d": lambda: nn.BatchNorm2d(4),
                "GroupNorm": lambda: nn.GroupNorm(2, 4),
                "LayerNorm": lambda: nn.LayerNorm([4, 5, 5]),
                "InstanceNorm2d": lambda: nn.InstanceNorm2d(4, affine=True)}[norm]
        conv = nn.Conv2d(3, 4, 3, padding=1)
        model = nn.Sequential(conv, make(), nn.ReLU(inplace=True), nn.MaxPool2d(2),
                              nn.LeakyReLU(0.1, inplace=True))
        with lib.no_grad():
            for p, v in zip(model.parameters(), _params(len(list(model.parameters())))):
                p.copy_(lib.tensor(v[: p.numel()].reshape(tuple(p.shape)), dtype=p.dtype))
        x = lib.tensor(np.linspace(-2, 2, 2 * 3 * 5 * 5).reshape(2, 3, 5, 5),
                       dtype=lib.float32)
        model(x).pow(2).sum().backward()
        return [p.grad.numpy() for p in model.parameters()]
    for a, b in zip(run(ember), run(torch)):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def _params(n):
    rng = np.random.default_rng(1)
    return [rng.standard_normal(200) * 0.3 for _ in range(n)]


def test_batch_norm_keeps_its_statistics_not_its_output():
    x = ember.randn(4, 3, 2, requires_grad=True)
    y = ember.nn.functional.batch_norm(x * 1, None, None, training=True)
    node = y.grad_fn
    assert node.name() == "NativeBatchNormBackward0"
    saved = node._result
    assert saved[0] is None and saved[1] is not None and saved[2] is not None
    y.relu_()
    y.sum().backward()  # the output was overwritten; backward still runs, as in torch
    assert x.grad is not None

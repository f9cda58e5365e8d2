"""The last nn surface of issue #25: LazyConv3d / LazyConvTranspose3d (against torch's Conv3d and
ConvTranspose3d given the same weights) and the deprecated nn.Container."""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import nn


@pytest.mark.parametrize("lazy, plain", [(nn.LazyConv3d, "Conv3d"),
                                         (nn.LazyConvTranspose3d, "ConvTranspose3d")])
def test_lazy_conv3d_reads_in_channels_and_becomes_the_plain_module(lazy, plain):
    m = lazy(4, 3, stride=2, padding=1)
    x = ember.randn(2, 3, 5, 6, 7)
    y = m(x)
    assert type(m).__name__ == plain and m.in_channels == 3
    torch = pytest.importorskip("torch")
    ref = getattr(torch.nn, plain)(3, 4, 3, stride=2, padding=1)
    ref.weight.data = torch.tensor(m.weight.detach().numpy())
    ref.bias.data = torch.tensor(m.bias.detach().numpy())
    np.testing.assert_allclose(y.detach().numpy(),
                               ref(torch.tensor(x.numpy())).detach().numpy(), rtol=1e-4,
                               atol=1e-5)


def test_container_holds_its_keyword_modules_and_warns():
    with pytest.warns(DeprecationWarning, match="nn.Container is deprecated"):
        c = nn.Container(encoder=nn.Linear(2, 3), head=nn.ReLU())
    assert [n for n, _ in c.named_children()] == ["encoder", "head"]
    assert sum(p.numel() for p in c.parameters()) == 9

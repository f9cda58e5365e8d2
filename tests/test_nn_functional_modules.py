"""The modules that are one functional and its options (activations, Fold/Unfold, pixel and
channel shuffle) against torch.nn's: repr, the options as attributes, forward, pickling."""
import pickle

import numpy as np
import pytest

import ember
import ember.nn as nn

CASES = [
    ("ReLU", (), {}), ("ReLU", (True,), {}), ("ReLU6", (), {"inplace": True}), ("SiLU", (), {}),
    ("Mish", (), {}), ("SELU", (True,), {}), ("Hardsigmoid", (), {}), ("Hardswish", (), {}),
    ("Sigmoid", (), {}), ("Tanh", (), {}), ("Softsign", (), {}), ("LogSigmoid", (), {}),
    ("Tanhshrink", (), {}), ("LeakyReLU", (), {}), ("LeakyReLU", (0.2, True), {}),
    ("ELU", (), {}), ("ELU", (0.5,), {"inplace": True}), ("CELU", (2.0, True), {}),
    ("Hardtanh", (), {}), ("Hardtanh", (-2.0, 2.0, True), {}), ("Softplus", (2.0, 1.0), {}),
    ("Threshold", (0.1, 20.0), {}), ("Threshold", (0.1, 20.0, True), {}),
    ("RReLU", (0.1, 0.3), {}), ("RReLU", (0.1, 0.3, True), {}), ("GLU", (), {}), ("GLU", (1,), {}),
    ("Hardshrink", (), {}), ("Softshrink", (0.3,), {}), ("PixelShuffle", (2,), {}),
    ("PixelUnshuffle", (2,), {}), ("ChannelShuffle", (2,), {}),
    ("Fold", ((4, 5), (2, 2)), {}), ("Unfold", ((2, 2),), {"stride": 2, "padding": 1}),
]


def _input(name):
    rng = np.random.default_rng(0)
    if name == "Fold":
        return rng.standard_normal((2, 12, 12)).astype("float32")
    return rng.standard_normal((2, 8, 4, 4)).astype("float32")


@pytest.mark.parametrize("name,args,kwargs", CASES)
def test_against_torch(name, args, kwargs):
    torch = pytest.importorskip("torch")
    e, t = getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)
    assert repr(e) == repr(t)
    for key in type(e)._options:
        assert getattr(e, key) == getattr(t, key), key
    assert list(e.state_dict()) == list(t.state_dict()) == []
    if name == "RReLU":
        e.eval(), t.eval()   # the training slopes are random
    x = _input(name)
    got, want = e(ember.tensor(x.copy())), t(torch.tensor(x.copy()))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    again = pickle.loads(pickle.dumps(e))
    assert repr(again) == repr(e) and again.training == e.training


def test_shrink_reprs_print_the_value_as_pytorch_does():
    """Hardshrink formats lambd, Softshrink str()s it: they differ for a 0-d tensor."""
    torch = pytest.importorskip("torch")
    for name in ("Hardshrink", "Softshrink"):
        assert repr(getattr(nn, name)(ember.tensor(0.25))).replace("ember", "torch") == \
            repr(getattr(torch.nn, name)(torch.tensor(0.25)))

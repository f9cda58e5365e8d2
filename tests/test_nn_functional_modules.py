"""The modules that are one functional and its options (activations, Fold/Unfold, pixel and
channel shuffle) against torch.nn's: repr, the options as attributes, forward, pickling."""
import pickle

import numpy as np
import pytest

import ember
import ember.nn as nn

CASES = [
    ("ReLU", (), {}), ("ReLU", (True,), {}), ("ReLU6", (), {"inplace": True}), ("SiLU", (), {}),
    ("ReLU6", (), {}), ("Mish", (), {}), ("SELU", (True,), {}), ("Hardsigmoid", (), {}),
    ("Hardsigmoid", (True,), {}), ("Hardswish", (), {}), ("Hardswish", (True,), {}),
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


def test_activation_classes_match_torchs_bases_attributes_and_constants():
    """Over torch.nn.modules.activation.__all__: the public classes each derives from
    (ReLU6 is a Hardtanh, CELU is no ELU), __constants__, and the attributes a default
    instance has (ReLU6's min_val/max_val)."""
    torch = pytest.importorskip("torch")
    from torch.nn.modules import activation as TA
    public = set(TA.__all__)
    for name in TA.__all__:
        t_cls, e_cls = getattr(TA, name), getattr(nn, name)
        assert {b.__name__ for b in e_cls.__mro__[1:] if b.__name__ in public} == \
            {b.__name__ for b in t_cls.__mro__[1:] if b.__name__ in public}, name
        assert getattr(e_cls, "__constants__", None) == getattr(t_cls, "__constants__", None), \
            name
        if name in ("Threshold", "MultiheadAttention"):
            continue   # required arguments
        t, e = t_cls(), e_cls()
        public_attrs = {k for k in vars(t) if not k.startswith("_")}
        assert public_attrs == {k for k in vars(e) if not k.startswith("_")}, name
        for k in public_attrs:
            if not isinstance(getattr(t, k), (torch.Tensor, torch.nn.Module)):
                assert getattr(e, k) == getattr(t, k), (name, k)


def test_relu6_is_a_hardtanh_from_0_to_6():
    torch = pytest.importorskip("torch")
    for lib in (torch, ember):
        m = lib.nn.ReLU6(inplace=True)
        assert isinstance(m, lib.nn.Hardtanh) and (m.min_val, m.max_val, m.inplace) == (0., 6., True)
        x = lib.tensor([-1.0, 3.0, 7.0], requires_grad=True) * 1
        assert m(x).tolist() == [0.0, 3.0, 6.0]
        assert not isinstance(lib.nn.CELU(), lib.nn.ELU)

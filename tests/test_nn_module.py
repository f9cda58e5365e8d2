"""nn.Module: registration, traversal, state_dict, device/dtype moves, modes, hooks, printing and
containers, checked against PyTorch's documented behaviour (and torch itself when installed)."""
from __future__ import annotations

import copy
from collections import OrderedDict

import numpy as np
import pytest

import ember
from ember import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 4)
        self.act = nn.ReLU()
        self.block = nn.Sequential(nn.Linear(4, 4), nn.Tanh())
        self.scale = nn.Parameter(ember.ones(1))
        self.register_buffer("steps", ember.zeros((), dtype=ember.int64))
        self.register_buffer("cache", ember.zeros(2), persistent=False)

    def forward(self, x):
        return self.block(self.act(self.fc1(x))) * self.scale


# -- registration and traversal -----------------------------------------------------------------
def test_parameter_basics():
    p = nn.Parameter(ember.randn(2, 3))
    assert isinstance(p, nn.Parameter) and isinstance(p, ember.Tensor)
    assert p.requires_grad and p.is_leaf
    assert not nn.Parameter(ember.randn(2), requires_grad=False).requires_grad
    assert repr(p).startswith("Parameter containing:\ntensor([[")
    assert repr(p).endswith("requires_grad=True)")
    assert type(p * 2) is ember.Tensor
    # the parameter shares memory with the tensor it wraps
    t = ember.zeros(3)
    q = nn.Parameter(t)
    with ember.no_grad():
        q.add_(1)
    assert t.tolist() == [1.0, 1.0, 1.0]
    assert nn.Parameter().shape == (0,)
    d = copy.deepcopy(p)
    assert isinstance(d, nn.Parameter) and d is not p and d.requires_grad
    np.testing.assert_array_equal(d.detach().numpy(), p.detach().numpy())


def test_named_members_and_order():
    m = Net()
    names = [n for n, _ in m.named_parameters()]
    assert names == ["scale", "fc1.weight", "fc1.bias", "block.0.weight", "block.0.bias"]
    assert [n for n, _ in m.named_buffers()] == ["steps", "cache"]
    assert [n for n, _ in m.named_children()] == ["fc1", "act", "block"]
    assert [n for n, _ in m.named_modules()] == ["", "fc1", "act", "block", "block.0",
                                                 "block.1"]
    assert [n for n, _ in m.named_parameters(prefix="net", recurse=False)] == ["net.scale"]
    assert len(list(m.parameters())) == 5 and len(list(m.modules())) == 6
    assert m.get_submodule("block.0") is m.block[0]
    assert m.get_parameter("block.0.bias") is m.block[0].bias
    assert m.get_buffer("steps") is m.steps


def test_shared_parameters_deduplicated():
    lin = nn.Linear(2, 2)
    seq = nn.Sequential(lin, lin)
    assert len(list(seq.parameters())) == 2
    assert len(list(seq.named_parameters(remove_duplicate=False))) == 4
    assert [n for n, _ in seq.named_modules()] == ["", "0"]
    assert list(seq.state_dict()) == ["0.weight", "0.bias", "1.weight", "1.bias"]


def test_setattr_getattr_delattr_dir():
    m = nn.Module()
    m.w = nn.Parameter(ember.ones(2))
    m.sub = nn.Linear(1, 1)
    m.register_buffer("b", ember.zeros(1))
    m.plain = 3
    assert "w" in m._parameters and "sub" in m._modules and "b" in m._buffers
    assert "w" not in m.__dict__
    for name in ("w", "sub", "b", "plain", "forward"):
        assert name in dir(m)
    with pytest.raises(TypeError, match="cannot assign 'Tensor' as parameter 'w'"):
        m.w = ember.ones(2)
    with pytest.raises(TypeError, match="cannot assign 'int' as child module 'sub'"):
        m.sub = 1
    m.b = ember.ones(1)  # a tensor assigned to a buffer name replaces the buffer
    assert m._buffers["b"].tolist() == [1.0]
    m.w = None
    assert m.w is None and list(m.parameters()) == list(m.sub.parameters())
    del m.sub
    assert "sub" not in m._modules
    with pytest.raises(AttributeError, match="'Module' object has no attribute 'sub'"):
        m.sub
    with pytest.raises(KeyError, match="attribute 'plain' already exists"):
        m.register_buffer("plain", ember.ones(1))
    with pytest.raises(KeyError, match='contain "\\."'):
        m.register_parameter("a.b", None)
    with pytest.raises(TypeError, match="is not a Module subclass"):
        m.add_module("x", 3)
    with pytest.raises(TypeError, match="cannot assign 'Tensor' object to parameter"):
        m.register_parameter("q", ember.ones(1))
    m.register_module("again", nn.ReLU())
    assert isinstance(m.again, nn.ReLU)


def test_setattr_before_init_errors():
    class Bad(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(ember.ones(1))
    with pytest.raises(AttributeError, match="before Module.__init__"):
        Bad()


def test_forward_missing():
    with pytest.raises(NotImplementedError, match='missing the required "forward"'):
        nn.Module()(ember.ones(1))


# -- state_dict ---------------------------------------------------------------------------------
def test_state_dict_keys_and_roundtrip():
    ember.manual_seed(0)
    a, b = Net(), Net()
    sd = a.state_dict()
    assert isinstance(sd, OrderedDict)
    assert list(sd) == ["scale", "steps", "fc1.weight", "fc1.bias", "block.0.weight",
                        "block.0.bias"]
    assert all(not v.requires_grad for v in sd.values())
    assert a.state_dict(keep_vars=True)["fc1.weight"] is a.fc1.weight
    r = b.load_state_dict(sd)
    assert r.missing_keys == [] and r.unexpected_keys == []
    assert repr(r) == "<All keys matched successfully>"
    x = ember.randn(5, 3)
    np.testing.assert_array_equal(a(x).detach().numpy(), b(x).detach().numpy())
    # copies, not aliases
    w_before = b.fc1.weight
    with ember.no_grad():
        a.fc1.weight.add_(1)
    assert b.fc1.weight is w_before
    assert not np.allclose(a.fc1.weight.detach().numpy(), b.fc1.weight.detach().numpy())


def test_load_state_dict_errors_match_torch_format():
    m = nn.Linear(2, 3)
    sd = m.state_dict()
    sd.pop("bias")
    sd["extra"] = ember.zeros(1)
    with pytest.raises(RuntimeError) as e:
        m.load_state_dict(sd)
    # PyTorch's text, after the name of the call that failed (issue #36)
    assert str(e.value) == ('Linear.load_state_dict: Error(s) in loading state_dict for Linear:'
                            '\n\tMissing key(s) in state_dict: "bias". \n\tUnexpected key(s) in '
                            'state_dict: "extra". ')
    r = m.load_state_dict(sd, strict=False)
    assert r.missing_keys == ["bias"] and r.unexpected_keys == ["extra"]
    bad = {"weight": ember.zeros(3, 3), "bias": ember.zeros(3)}
    with pytest.raises(RuntimeError, match=r"size mismatch for weight: copying a param with "
                                           r"shape ember.Size\(\[3, 3\]\) from checkpoint, the "
                                           r"shape in current model is ember.Size\(\[3, 2\]\)"):
        m.load_state_dict(bad)


def test_load_state_dict_nested_missing_unexpected():
    m = Net()
    sd = m.state_dict()
    del sd["block.0.bias"]
    sd["block.2.weight"] = ember.zeros(1)
    r = m.load_state_dict(sd, strict=False)
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "block.0.bias"'):
        m.load_state_dict(sd)
    assert isinstance(r, tuple)


def test_load_state_dict_assign_and_nonpersistent():
    m = Net()
    assert "cache" not in m.state_dict()
    new = {k: v.clone() + 1 if v.is_floating_point() else v for k, v in
           m.state_dict().items()}
    m.load_state_dict(new, assign=True)
    assert isinstance(m.fc1.weight, nn.Parameter) and m.fc1.weight.requires_grad
    np.testing.assert_array_equal(m.fc1.weight.detach().numpy(), new["fc1.weight"].numpy())


def test_state_dict_matches_torch_keys():
    torch = pytest.importorskip("torch")
    tm = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.ReLU(),
                             torch.nn.LayerNorm(4), torch.nn.Embedding(5, 4, padding_idx=0))
    em = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.LayerNorm(4),
                       nn.Embedding(5, 4, padding_idx=0))
    assert list(tm.state_dict()) == list(em.state_dict())
    # load torch's values into ember and compare outputs
    em.load_state_dict({k: ember.from_numpy(v.numpy().copy()) for k, v in
                        tm.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((6, 3)).astype(np.float32)
    tm.eval()
    em.eval()
    want = tm[:4](torch.from_numpy(x)).detach().numpy()
    got = em[:4](ember.from_numpy(x)).detach().numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


# -- device and dtype moves ---------------------------------------------------------------------
def test_to_dtype_keeps_parameter_identity():
    m = Net()
    w = m.fc1.weight
    m(ember.randn(2, 3)).sum().backward()
    out = m.double()
    assert out is m
    assert m.fc1.weight is w and w.dtype is ember.float64 and isinstance(w, nn.Parameter)
    assert w.grad.dtype is ember.float64
    assert m.steps.dtype is ember.int64  # integer buffers keep their dtype
    m.to(ember.float32)
    assert w.dtype is ember.float32
    m.half()
    assert w.dtype is ember.float16
    m.float()
    m.to(ember.zeros(1, dtype=ember.float64))
    assert w.dtype is ember.float64
    m.type(ember.float32)
    assert m.steps.dtype is ember.float32  # type() casts everything, like PyTorch
    with pytest.raises(TypeError, match="only accepts floating point or complex dtypes"):
        m.to(ember.int32)


def test_to_device_cpu_and_backend_methods():
    m = Net()
    assert m.to("cpu") is m and m.cpu() is m
    from ember.runtime.registry import registry
    for name in registry.names():
        assert callable(getattr(nn.Module, name))


def test_optimizer_style_reference_survives_to():
    m = nn.Linear(2, 2)
    params = list(m.parameters())
    m.double()
    assert all(p is q for p, q in zip(params, m.parameters()))
    assert all(p.dtype is ember.float64 for p in params)


# -- modes, grads, apply --------------------------------------------------------------------------
def test_train_eval_requires_grad_zero_grad_apply():
    m = Net()
    assert m.training and m.block[0].training
    assert m.eval() is m and not m.block[1].training
    m.train()
    assert m.block[1].training
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        m.train("yes")
    m(ember.randn(4, 3)).sum().backward()
    assert m.fc1.weight.grad is not None
    m.zero_grad(set_to_none=False)
    assert m.fc1.weight.grad.abs().sum().item() == 0
    m.zero_grad()
    assert m.fc1.weight.grad is None
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())
    seen = []
    m.apply(lambda mod: seen.append(type(mod).__name__))
    assert seen == ["Linear", "ReLU", "Linear", "Tanh", "Sequential", "Net"]


# -- hooks --------------------------------------------------------------------------------------
def test_forward_hooks_order_and_replacement():
    m = nn.Linear(2, 2)
    calls = []
    h1 = m.register_forward_pre_hook(lambda mod, args: calls.append("pre") or (args[0] * 0,))
    h2 = m.register_forward_hook(lambda mod, args, out: calls.append("post") or out + 1)
    h3 = m.register_forward_hook(lambda mod, args, out: calls.append("first"), prepend=True)
    out = m(ember.randn(3, 2))
    assert calls == ["pre", "first", "post"]
    np.testing.assert_allclose(out.detach().numpy(),
                               np.broadcast_to(m.bias.detach().numpy() + 1, (3, 2)), rtol=1e-6)
    for h in (h1, h2, h3):
        h.remove()
    calls.clear()
    m(ember.randn(3, 2))
    assert calls == []


def test_forward_hooks_with_kwargs():
    class K(nn.Module):
        def forward(self, x, *, scale=1.0):
            return x * scale
    m = K()
    m.register_forward_pre_hook(lambda mod, args, kwargs: (args, {"scale": 3.0}),
                                with_kwargs=True)
    seen = {}
    m.register_forward_hook(lambda mod, args, kwargs, out: seen.update(kwargs),
                            with_kwargs=True)
    assert m(ember.ones(1), scale=2.0).item() == 3.0
    assert seen == {"scale": 3.0}


def test_full_backward_hook_values_and_replacement():
    m = nn.Linear(3, 2)
    x = ember.randn(4, 3, requires_grad=True)
    got = {}

    def hook(mod, gin, gout):
        got["gin"], got["gout"] = gin, gout
        return (gin[0] * 2,)
    m.register_full_backward_hook(hook)
    y = m(x)
    g = ember.randn(4, 2)
    y.backward(g)
    np.testing.assert_allclose(got["gout"][0].numpy(), g.numpy())
    expect = g.numpy() @ m.weight.detach().numpy()
    np.testing.assert_allclose(got["gin"][0].numpy(), expect, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), 2 * expect, rtol=1e-5, atol=1e-6)
    # parameters still get their gradients
    np.testing.assert_allclose(m.weight.grad.numpy(), g.numpy().T @ x.detach().numpy(),
                               rtol=1e-5, atol=1e-6)


def test_full_backward_hook_input_without_grad():
    m = nn.Linear(3, 2)
    got = {}
    m.register_full_backward_hook(lambda mod, gin, gout: got.update(gin=gin, gout=gout))
    m(ember.randn(4, 3)).sum().backward()
    assert got["gin"] == (None,)
    assert got["gout"][0].shape == (4, 2)


def test_full_backward_hook_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    w = rng.standard_normal((2, 3)).astype(np.float32)
    xs = rng.standard_normal((4, 3)).astype(np.float32)
    res = {}
    for lib, mk in (("torch", torch), ("ember", ember)):
        lin = (torch.nn if lib == "torch" else nn).Linear(3, 2, bias=False)
        with mk.no_grad():
            lin.weight.copy_(mk.from_numpy(w.copy()))
        x = mk.from_numpy(xs.copy()).requires_grad_()

        def hook(mod, gin, gout, lib=lib):
            res[lib] = (gin[0].detach().numpy().copy(), gout[0].detach().numpy().copy())
        lin.register_full_backward_hook(hook)
        (lin(x) ** 2).sum().backward()
    np.testing.assert_allclose(res["ember"][0], res["torch"][0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(res["ember"][1], res["torch"][1], rtol=1e-5, atol=1e-6)


def test_state_dict_hooks():
    m = nn.Linear(1, 1)
    m.register_state_dict_pre_hook(lambda mod, prefix, keep_vars: None)
    m._register_state_dict_hook(lambda mod, sd, prefix, meta: sd.update(extra=ember.ones(1)))
    assert "extra" in m.state_dict()
    seen = []
    m.register_load_state_dict_post_hook(lambda mod, keys: seen.append(keys))
    m.load_state_dict({"weight": ember.ones(1, 1), "bias": ember.ones(1)})
    assert len(seen) == 1


# -- printing -----------------------------------------------------------------------------------
def test_repr_tree_matches_torch_layout():
    m = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Sequential(nn.Dropout(0.1), nn.Tanh()))
    assert repr(m) == ("Sequential(\n"
                       "  (0): Linear(in_features=2, out_features=3, bias=True)\n"
                       "  (1): ReLU()\n"
                       "  (2): Sequential(\n"
                       "    (0): Dropout(p=0.1, inplace=False)\n"
                       "    (1): Tanh()\n"
                       "  )\n"
                       ")")
    ml = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)] + [nn.ReLU()])
    assert repr(ml) == ("ModuleList(\n"
                        "  (0-2): 3 x Linear(in_features=2, out_features=2, bias=True)\n"
                        "  (3): ReLU()\n"
                        ")")


def test_repr_same_as_torch():
    torch = pytest.importorskip("torch")
    build = lambda n: n.Sequential(  # noqa: E731
        n.Linear(4, 8), n.BatchNorm1d(8), n.BatchNorm2d(3, affine=False),
        n.BatchNorm1d(2, bias=False, momentum=None), n.GroupNorm(2, 4, bias=False), n.LeakyReLU(0.2), n.GELU(approximate="tanh"),
        n.LayerNorm((8,)), n.GroupNorm(2, 8), n.Embedding(10, 3, padding_idx=1),
        n.Flatten(), n.Unflatten(1, (2, 4)), n.Softmax(dim=1), n.Bilinear(2, 3, 4),
        n.ELU(alpha=0.5, inplace=True), n.Hardtanh(-2.0, 2.0), n.Softplus(2.0, 10.0),
        n.Identity(), n.ModuleDict({"a": n.ReLU()}), n.RMSNorm(8), n.Dropout(0.3),
        n.PReLU(), n.SiLU(), n.Mish(), n.Sigmoid(), n.LogSoftmax(1), n.ReLU(inplace=True))
    assert repr(build(nn)) == repr(build(torch.nn))


# -- containers ---------------------------------------------------------------------------------
def test_sequential_ops():
    a, b, c = nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 1)
    s = nn.Sequential(a, b, c)
    assert len(s) == 3 and s[0] is a and s[-1] is c and list(s) == [a, b, c]
    sl = s[1:]
    assert isinstance(sl, nn.Sequential) and list(sl) == [b, c]
    s.append(nn.Tanh())
    assert len(s) == 4 and list(s._modules) == ["0", "1", "2", "3"]
    del s[1]
    assert list(s._modules) == ["0", "1", "2"] and s[1] is c
    s[0] = nn.Identity()
    assert isinstance(s[0], nn.Identity)
    s.insert(0, nn.ReLU())
    assert isinstance(s[0], nn.ReLU) and len(s) == 4
    with pytest.raises(IndexError, match="index 10 is out of range"):
        s[10]
    od = nn.Sequential(OrderedDict([("fc", nn.Linear(2, 3)), ("act", nn.ReLU())]))
    assert isinstance(od.fc, nn.Linear) and od(ember.randn(5, 2)).shape == (5, 3)
    assert len(s + od) == 6


def test_module_list_dict():
    ml = nn.ModuleList([nn.Linear(1, 1)])
    ml.append(nn.ReLU())
    ml.extend([nn.Tanh()])
    ml += [nn.Sigmoid()]
    assert len(ml) == 4 and isinstance(ml[-1], nn.Sigmoid)
    assert len(list(ml.parameters())) == 2
    ml.insert(1, nn.Identity())
    assert isinstance(ml[1], nn.Identity) and isinstance(ml[2], nn.ReLU)
    del ml[0]
    assert len(ml) == 4 and isinstance(ml[0], nn.Identity)
    assert isinstance(ml[1:], nn.ModuleList)
    with pytest.raises(TypeError, match="should be called with an iterable"):
        ml.extend(nn.ReLU())
    md = nn.ModuleDict({"a": nn.Linear(1, 1), "b": nn.ReLU()})
    md["c"] = nn.Tanh()
    assert list(md.keys()) == ["a", "b", "c"] and "b" in md and len(md) == 3
    assert md.pop("b").__class__ is nn.ReLU and list(md) == ["a", "c"]
    md.update([("d", nn.Identity())])
    assert list(md.state_dict()) == ["a.weight", "a.bias"]


def test_parameter_list_dict():
    pl = nn.ParameterList([nn.Parameter(ember.ones(2)), ember.zeros(3)])
    assert len(pl) == 2 and all(isinstance(p, nn.Parameter) for p in pl)
    pl.append(ember.ones(1))
    assert [n for n, _ in pl.named_parameters()] == ["0", "1", "2"]
    assert "Parameter containing: [ember.float32 of size 3]" in repr(pl)
    pd = nn.ParameterDict({"w": ember.ones(2)})
    pd["b"] = nn.Parameter(ember.zeros(1))
    assert list(pd.keys()) == ["w", "b"] and isinstance(pd["w"], nn.Parameter)
    assert [n for n, _ in pd.named_parameters()] == ["w", "b"]
    assert pd.pop("w").shape == (2,) and list(pd) == ["b"]
    m = nn.Module()
    m.params = pd
    assert list(m.state_dict()) == ["params.b"]
    with pytest.raises(RuntimeError, match="should not be called"):
        pl()


def test_deepcopy_module():
    m = Net()
    d = copy.deepcopy(m)
    assert d.fc1.weight is not m.fc1.weight
    x = ember.randn(2, 3)
    np.testing.assert_array_equal(d(x).detach().numpy(), m(x).detach().numpy())


# -- to_empty, set_submodule, extra state (torch's Module API) -------------------------------------
def test_to_empty_keeps_shapes_and_dtypes_and_moves_the_device():
    m = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4)).double()
    ids = [id(p) for p in m.parameters()]
    assert m.to_empty(device="cpu") is m
    assert [id(p) for p in m.parameters()] == ids   # Parameters kept, their data replaced
    assert [(p.shape, p.dtype) for p in m.state_dict().values()] == \
        [(t.shape, t.dtype) for t in nn.Sequential(nn.Linear(3, 4),
                                                   nn.BatchNorm1d(4)).double().state_dict()
         .values()]
    if ember.opencl.is_available():
        m.to_empty(device="opencl", recurse=False)        # nothing of its own: unchanged
        assert all(p.device.type == "cpu" for p in m.parameters())
        m.to_empty(device="opencl")
        assert all(t.device.type == "opencl" for t in m.state_dict().values())


def test_set_submodule_like_torch():
    torch = pytest.importorskip("torch")
    outcomes = []
    for L in (ember, torch):
        net = L.nn.Sequential(L.nn.Linear(2, 2), L.nn.Sequential(L.nn.ReLU()))
        got = []
        for target, new, strict in [("1.0", L.nn.Tanh(), True), ("1.extra", L.nn.Tanh(), False),
                                    ("1.missing", L.nn.Tanh(), True), ("0.weight", L.nn.Tanh(),
                                                                        False),
                                    ("", L.nn.Tanh(), False), ("0", 3, False),
                                    ("2.x", L.nn.Tanh(), False)]:
            try:
                net.set_submodule(target, new, strict=strict)
                got.append(type(net.get_submodule(target)).__name__)
            except (ValueError, AttributeError) as e:
                got.append((type(e).__name__, str(e).replace("torch", "ember")))
        outcomes.append(got)
    assert outcomes[0] == outcomes[1]


def test_extra_state_round_trips_like_torch():
    torch = pytest.importorskip("torch")
    keys = []
    for L in (ember, torch):
        class Counter(L.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = L.nn.Linear(2, 1)
                self.calls = 0

            def get_extra_state(self):
                return {"calls": self.calls}

            def set_extra_state(self, state):
                self.calls = state["calls"]

        a, b = Counter(), Counter()
        a.calls = 7
        sd = a.state_dict()
        keys.append(list(sd))
        assert sd["_extra_state"] == {"calls": 7}
        b.load_state_dict(sd)
        assert b.calls == 7
        del sd["_extra_state"]
        r = b.load_state_dict(sd, strict=False)
        assert r.missing_keys == ["_extra_state"] and b.calls == 7   # reported, not raised
        with pytest.raises(RuntimeError, match="Missing key.*_extra_state"):
            b.load_state_dict(sd)
        plain = L.nn.Linear(2, 1)
        with pytest.raises(RuntimeError, match="Unexpected key.*_extra_state"):
            plain.load_state_dict({**plain.state_dict(), "_extra_state": 1})
        with pytest.raises(RuntimeError, match="should never be called"):
            plain.get_extra_state()
    assert keys[0] == keys[1]

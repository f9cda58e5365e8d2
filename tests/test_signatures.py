"""Signatures like torch's (issue #30, item 2): every parameter name, default and alias torch
2.13 accepts for a public function or Tensor method, ember accepts; a call matching none of
torch's signatures raises torch's TypeError naming the public op.

The reference is the snapshot ``ember/_api/torch_signatures.json`` (``tools/torch_signatures.py``),
so the structural tests run without torch; the behavioural ones compare with torch itself.
"""
from __future__ import annotations

import inspect
import json
import pickle
import warnings

import numpy as np
import pytest

import ember
from ember._api import binding, signature_check
from ember._api.shared_names import SHARED

# torch overloads that ember serves with one function dispatching on the argument's type, so a
# positional parameter of one torch overload sits elsewhere in ember's parameter list
# (``std(input, unbiased)`` vs ``std(input, dim, unbiased)``); each is called against torch in
# test_type_dispatched_overloads_like_torch
TYPE_DISPATCHED = {
    ("Tensor", "std"), ("Tensor", "var"), ("torch", "std"), ("torch", "var"),
    ("torch", "std_mean"), ("torch", "var_mean"), ("torch", "arange"),
    ("torch", "nuclear_norm"), ("torch", "repeat_interleave"), ("torch", "sparse_coo_tensor"),
}


@pytest.mark.parametrize("ns", sorted(binding.snapshot()["namespaces"]))
def test_every_torch_signature_binds(ns):
    checked, problems, defaults = signature_check.run(ember, [ns])[ns]
    unexpected = [str(p) for p in problems
                  if not (p.kind == "position" and (p.ns, p.name) in TYPE_DISPATCHED)]
    assert not unexpected, "\n".join(unexpected)
    assert not defaults, "\n".join(map(str, defaults))


def test_the_check_can_fail(monkeypatch):
    """A function missing torch's keywords, aliases and arguments is reported (``out=`` and
    numpy's ``axis`` the binding layer supplies: ember's ``dim`` takes ``axis``)."""
    def sum(input, dim, *, dtype=None):  # noqa: A001 - stands in for ember.sum
        return input
    monkeypatch.setattr(ember, "sum", sum)
    problems, _ = signature_check.check(ember, "torch", "sum")
    found = {(p.kind, p.detail.split()[0]) for p in problems}
    assert found == {("keyword", "'keepdim'"), ("keyword", "'keepdims'"), ("arity", "torch")}

    def sum(input, dims=None, keepdim=False, *, dtype=None):  # noqa: A001,F811
        return input
    monkeypatch.setattr(ember, "sum", sum)
    problems, _ = signature_check.check(ember, "torch", "sum")
    # torch's 'dim' lands on ember's 'dims' by position; the order check still passes
    assert not problems
    monkeypatch.setattr(ember, "sum", lambda input, keepdim=False, dim=None, *, dtype=None: 0)
    problems, _ = signature_check.check(ember, "torch", "sum")
    assert [p.kind for p in problems] == ["position", "position"]


def test_raw_functions_fail_the_check_the_layer_passes():
    """Without the binding layer's renaming, numpy's aliases are refused (the before count)."""
    raw, _ = signature_check.check(ember, "torch", "sum", raw=True)
    assert any("'axis'" in p.detail for p in raw)
    layered, _ = signature_check.check(ember, "torch", "sum")
    assert not layered


def test_shared_names_are_one_object():
    for key, owner in SHARED.items():
        ns, _, name = key.rpartition(".")
        a = signature_check.ember_object(ember, ns, name)
        b = signature_check.ember_object(ember, owner, name)
        if a is not None and b is not None:
            assert a is b, key


def test_wrappers_look_like_the_function():
    assert ember.sum.__name__ == "sum" and ember.Tensor.sum.__qualname__ == "Tensor.sum"
    assert inspect.signature(ember.sum) == inspect.signature(ember.sum.__wrapped__)
    assert pickle.loads(pickle.dumps(ember.sum)) is ember.sum
    assert pickle.loads(pickle.dumps(ember.Tensor.sum)) is ember.Tensor.sum
    assert pickle.loads(pickle.dumps(ember.nn.functional.relu)) is ember.nn.functional.relu


# -- messages -------------------------------------------------------------------------------------
_INTERNAL = ("<locals>", "<lambda>", "_make_", "ember.ops", "ember.nn._", ".fn(", "__wrapped__")


def _public_callables():
    for ns in ("torch", "Tensor", "nn.functional", "linalg", "fft", "special"):
        for name, entry in binding.snapshot()["namespaces"][ns].items():
            obj = signature_check.ember_object(ember, ns, name)
            if obj is None or not hasattr(obj, "_binding"):
                continue
            params = inspect.signature(obj).parameters.values()
            if any(p.kind == p.VAR_KEYWORD for p in params):
                continue  # takes any keyword by design (Tensor.new's legacy forms)
            yield ns, name, obj


def test_no_internal_name_in_any_binding_error():
    bad, seen = [], 0
    for ns, name, fn in _public_callables():
        x = ember.ones(2)
        try:
            fn(x, zzz_not_an_argument=1)
        except TypeError as e:
            seen += 1
            msg = str(e)
            if any(s in msg for s in _INTERNAL) or name.split("_")[0] not in msg:
                bad.append(f"{ns}.{name}: {msg[:200]}")
        except Exception:  # noqa: BLE001 - a call refused for another reason is not a binding error
            pass
    assert seen > 1000
    assert not bad, "\n".join(bad)


def test_issue_examples():
    x = ember.arange(6.0).reshape(2, 3)
    with pytest.raises(TypeError) as e:
        ember.sum(x, dims=1)
    assert str(e.value).startswith(
        "sum() received an invalid combination of arguments - got (Tensor, dims=int), but "
        "expected one of:\n * (Tensor input, *, ember.dtype dtype = None)\n")
    assert [t.tolist() for t in x.split(split_size=1)] == [[[0.0, 1.0, 2.0]], [[3.0, 4.0, 5.0]]]


torch = None


@pytest.fixture
def T():
    global torch
    torch = pytest.importorskip("torch")
    return torch


def _norm_torch(msg: str) -> str:
    return (msg.replace("torch.", "ember.").replace("TensorBase.", "Tensor.")
            .replace("linalg_", "linalg.").replace("fft_", "fft.").replace("special_", "special."))


# torch's message names an internal function (its Python implementation's helper) where ember
# names the public op, or torch's binding is hand-written and known to ember only from its
# docstring (so ember words CPython's message for its own signature)
MESSAGE_DIFFERS = {
    "torch.lu": "torch says _lu_no_infos()", "torch.unique": "torch says _return_output()",
    "torch.unique_consecutive": "torch says _consecutive_return_output()",
    "nn.functional.logsigmoid": "torch says log_sigmoid()",
    "nn.functional.threshold": "torch says _threshold()",
    **{f"nn.functional.{n}": f"torch says _{n}()" for n in (
        "max_pool1d", "max_pool2d", "max_pool3d", "adaptive_max_pool1d", "adaptive_max_pool2d",
        "adaptive_max_pool3d", "fractional_max_pool2d", "fractional_max_pool3d")},
    "torch.from_numpy": "torch says torch._VariableFunctionsClass.from_numpy()",
    "torch.spmm": "torch says mm()", "torch.symeig": "torch says _symeig()",
    "torch.frombuffer": "hand-written binding, known from its docstring",
    "torch.range": "hand-written binding, known from its docstring",
    "Tensor.as_subclass": "hand-written binding, known from its docstring",
    "Tensor.new_tensor": "hand-written binding, known from its docstring",
    "Tensor.new": "ember's legacy-constructor parser words its own listing",
}


def test_binding_errors_are_torchs(T):
    """For every public callable both have, ``f(x, zzz=1)`` fails with torch's message."""
    differ, compared = [], 0
    namespaces = {"torch": (ember, T), "Tensor": (ember.Tensor, T.Tensor),
                  "nn.functional": (ember.nn.functional, T.nn.functional),
                  "linalg": (ember.linalg, T.linalg), "fft": (ember.fft, T.fft),
                  "special": (ember.special, T.special)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for ns, (E, TT) in namespaces.items():
            for name, entry in binding.snapshot()["namespaces"][ns].items():
                ef, tf = getattr(E, name, None), getattr(TT, name, None)
                if ef is None or tf is None or f"{ns}.{name}" in MESSAGE_DIFFERS:
                    continue
                if entry["kind"] == "opaque":
                    continue  # pybind11/METH_O builtins: CPython's wording of torch's C names
                try:
                    tf(T.ones(2), zzz=1)
                    continue
                except TypeError as e:
                    expected = _norm_torch(str(e))
                except Exception:  # noqa: BLE001 - torch refused it for another reason
                    continue
                try:
                    ef(ember.ones(2), zzz=1)
                    got = None
                except TypeError as e:
                    got = str(e)
                compared += 1
                if got != expected:
                    differ.append(f"{ns}.{name}:\n  torch: {expected!r}\n  ember: {got!r}")
    assert compared > 1000
    assert not differ, "\n".join(differ)


@pytest.mark.parametrize("call", [
    lambda m, x: m.sum(x, dims=1),
    lambda m, x: x.sum(dims=1),
    lambda m, x: m.max(x, x, foo=1),
    lambda m, x: m.clamp(x, 1, 2, 3, 4, 5),
    lambda m, x: m.add(x, x, x, x, x),
    lambda m, x: m.relu(),
    lambda m, x: m.dropout(x),
    lambda m, x: m.nn.functional.gelu(x, 1, 2, 3),
    lambda m, x: m.cat(x, zzz=1),
    lambda m, x: m.zeros(x, zzz=1),
    lambda m, x: x.relu(1),
    lambda m, x: x.dim(foo=1),
    lambda m, x: x.split(foo=1),
    lambda m, x: m.nn.functional.relu(x, foo=2),
    lambda m, x: m.std(x, 0, True, True, True, True),
    lambda m, x: m.linalg.norm(x, zzz=1),
    lambda m, x: x.to(foo=1),
    lambda m, x: m.lstm(x, zzz=1),
], ids=range(18))
def test_binding_error_cases(T, call):
    def message(m):
        try:
            call(m, m.ones(2, 3))
        except TypeError as e:
            return str(e)
        return None
    assert message(ember) == _norm_torch(message(T))


# -- what torch accepts ---------------------------------------------------------------------------
def _same(a, b):
    if isinstance(a, (tuple, list)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
        return
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6)
    assert list(a.shape) == list(b.shape)


ALIASED_CALLS = [
    lambda m, x: m.sum(x, axis=1), lambda m, x: x.sum(axis=0, keepdims=True),
    lambda m, x: m.mean(x, axis=1, keepdims=True), lambda m, x: m.max(x, axis=1),
    lambda m, x: m.argmax(x, axis=0), lambda m, x: m.std(x, axis=1),
    lambda m, x: m.prod(x, axis=1), lambda m, x: m.amax(x, axis=(0, 1)),
    lambda m, x: m.softmax(x, axis=1), lambda m, x: m.cat([x, x], axis=0),
    lambda m, x: m.add(x1=x, x2=x), lambda m, x: m.sum(a=x), lambda m, x: m.abs(x=x),
    lambda m, x: m.sum(input=x, dim=0), lambda m, x: x.split(split_size=1),
    lambda m, x: m.split(x, split_size_or_sections=1, dim=0),
    lambda m, x: m.permute(x, dims=(1, 0)), lambda m, x: x.view(size=(3, 2)),
    lambda m, x: x.reshape(shape=(6,)), lambda m, x: x.expand(size=(2, 2, 3)),
    lambda m, x: m.zeros(size=(2, 3)), lambda m, x: x.new_zeros(size=(2,)),
    lambda m, x: m.arange(end=4), lambda m, x: m.logit(x / 10, eps=0.2),
    lambda m, x: m.linalg.matrix_rank(x, 1e-3), lambda m, x: m.linalg.pinv(x, 1e-3),
    lambda m, x: m.subtract(x, 2, 3), lambda m, x: x.norm(2, 0, False, m.float64),
    lambda m, x: m.histc(x, bins=4), lambda m, x: m.nn.functional.elu_(x.clone(), 1.0, 2.0, 0.5),
    lambda m, x: m.max(x, other=x), lambda m, x: m.clamp(x, min=1, max=3),
    lambda m, x: m.cumsum(x, axis=1), lambda m, x: m.special.softmax(x, 1, m.float64),
]


@pytest.mark.parametrize("call", ALIASED_CALLS, ids=range(len(ALIASED_CALLS)))
def test_torch_keywords_like_torch(T, call):
    x = np.arange(6.0).reshape(2, 3)
    _same(call(ember, ember.tensor(x)), call(T, T.tensor(x)))


TYPE_DISPATCH_CALLS = [
    lambda m, x: m.std(x, True), lambda m, x: m.var(x, False), lambda m, x: x.std(False),
    lambda m, x: x.var(True), lambda m, x: m.std(x, 0, False, True),
    lambda m, x: m.var_mean(x, True), lambda m, x: m.std_mean(x, 1, True, True),
    lambda m, x: m.nuclear_norm(x, True), lambda m, x: m.repeat_interleave(m.tensor([1, 2])),
    lambda m, x: m.arange(5), lambda m, x: m.sparse_coo_tensor((2, 3)).to_dense(),
]


@pytest.mark.parametrize("call", TYPE_DISPATCH_CALLS, ids=range(len(TYPE_DISPATCH_CALLS)))
def test_type_dispatched_overloads_like_torch(T, call):
    x = np.arange(6.0).reshape(2, 3) ** 1.5
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _same(call(ember, ember.tensor(x)), call(T, T.tensor(x)))


def test_deprecated_overload_like_torch(T):
    a, b = np.arange(3.0), np.ones(3)
    e, t = ember.tensor(a), T.tensor(a)
    with pytest.warns(UserWarning, match="This overload of addcmul_ is deprecated"):
        e.addcmul_(0.5, ember.tensor(b), ember.tensor(b))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t.addcmul_(0.5, T.tensor(b), T.tensor(b))
        _same(e, t)
        _same(ember.add(e, 2, ember.tensor(b)), T.add(t, 2, T.tensor(b)))
        _same(e.sub_(2, ember.tensor(b)), t.sub_(2, T.tensor(b)))


def test_out_like_torch(T):
    x = np.array([[1.0, 5.0, 3.0], [4.0, 2.0, 6.0]])
    ev, ei = ember.empty(0, dtype=ember.float64), ember.empty(0, dtype=ember.int64)
    tv, ti = T.empty(0, dtype=T.float64), T.empty(0, dtype=T.int64)
    r = ember.max(ember.tensor(x), 1, out=(ev, ei))
    T.max(T.tensor(x), 1, out=(tv, ti))
    assert r.values is ev and r.indices is ei
    _same((ev, ei), (tv, ti))
    eo, to = ember.empty(0, dtype=ember.float64), T.empty(0, dtype=T.float64)
    assert ember.cumsum(ember.tensor(x), 1, out=eo) is eo
    _same(eo, T.cumsum(T.tensor(x), 1, out=to))
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        ember.cumsum(ember.ones(2, requires_grad=True), 0, out=ember.empty(0))


def test_snapshot_is_current(T):
    """The checked-in snapshot is what the generator makes from the installed torch."""
    pytest.importorskip("yaml")
    pytest.importorskip("torchgen")
    from helpers_tools import load_tool
    fresh = json.loads(json.dumps(load_tool("torch_signatures").snapshot()))
    if fresh["torch"] != binding.snapshot()["torch"]:
        pytest.skip(f"snapshot is of torch {binding.snapshot()['torch']}, "
                    f"installed {fresh['torch']}")
    assert fresh == binding.snapshot()
    assert fresh["shared"] == SHARED

"""ember.save of what torch.save accepts beyond state dicts (whole modules, user classes): the
pickle form, loadable only through the allow-list unless weights_only=False; the safe-globals
API."""
import io
import pickle
import threading

import numpy as np
import pytest

import ember
from ember import nn
from ember.serialization import (add_safe_globals, clear_safe_globals, get_safe_globals,
                                 get_unsafe_globals_in_checkpoint, safe_globals)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 4)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(4, 2)
        self.register_buffer("steps", ember.tensor(5))
        self.note = {"epochs": 3, "tags": {"a", "b"}}

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y


class Slotted:
    __slots__ = ("a", "b")

    def __init__(self, a, b):
        self.a, self.b = a, b


@pytest.fixture(autouse=True)
def _clean_allow_list():
    clear_safe_globals()
    yield
    clear_safe_globals()


def _roundtrip(obj, **kw):
    buf = io.BytesIO()
    ember.save(obj, buf)
    buf.seek(0)
    return ember.load(buf, **kw)


NET_CLASSES = [Net, nn.Linear, nn.ReLU]


def test_whole_module_needs_its_classes_allowed():
    ember.manual_seed(0)
    net = Net()
    buf = io.BytesIO()
    ember.save(net, buf)
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError) as info:
        ember.load(buf)
    msg = str(info.value)
    assert "Weights only load failed" in msg
    assert f"Unsupported global: GLOBAL {__name__}.Net was not an allowed global by default" \
        in msg
    assert f"ember.serialization.add_safe_globals([{__name__}.Net])" in msg
    assert "weights_only` set to `False`" in msg
    buf.seek(0)
    assert get_unsafe_globals_in_checkpoint(buf) == sorted(
        f"{c.__module__}.{c.__qualname__}" for c in NET_CLASSES)
    x = ember.randn(5, 3)
    for how in ("context", "global", "unsafe"):
        buf.seek(0)
        if how == "context":
            with safe_globals(NET_CLASSES):
                out = ember.load(buf)
            assert get_safe_globals() == []
        elif how == "global":
            add_safe_globals(NET_CLASSES)
            out = ember.load(buf)
            clear_safe_globals()
        else:
            out = ember.load(buf, weights_only=False)
        assert type(out) is Net and type(out.fc1) is nn.Linear
        np.testing.assert_array_equal(out(x).detach().numpy(), net(x).detach().numpy())
        assert type(out.fc1.weight) is nn.Parameter and out.fc1.weight.requires_grad
        assert out.steps.item() == 5 and out.note == {"epochs": 3, "tags": {"a", "b"}}
        assert out.fc1.weight is not net.fc1.weight


def test_module_keeps_training_and_tied_weights():
    a = nn.Linear(2, 2)
    b = nn.Linear(2, 2)
    b.weight = a.weight  # tied: one tensor object
    seq = nn.Sequential(a, b).eval()
    with safe_globals([nn.Sequential, nn.Linear]):
        out = _roundtrip(seq)
    assert out[0].weight is out[1].weight and not out.training
    with ember.no_grad():
        out[0].weight.fill_(2.0)
    assert out[1].weight.tolist() == [[2.0, 2.0], [2.0, 2.0]]


def test_user_classes_slots_and_tuple_names():
    pts = [Point(1, ember.arange(3)), Slotted(2, "x")]
    with pytest.raises(pickle.UnpicklingError, match=f"GLOBAL {__name__}.Point"):
        _roundtrip(pts)
    with safe_globals([Point, (Slotted, f"{__name__}.Slotted")]):
        out = _roundtrip(pts)
    assert out[0].x == 1 and out[0].y.tolist() == [0, 1, 2]
    assert (out[1].a, out[1].b) == (2, "x")


def test_containers_without_classes_load_by_default():
    obj = {"set": {1, 2, 3}, "frozen": frozenset({"a"}), "bytes": b"\x00\xff", "ba":
           bytearray(b"xy"), "complex": 1 - 2j, "range_of_tensors": [ember.ones(2)] * 2,
           "dtype": ember.float16, "device": ember.device("cpu"), "size": ember.Size([1, 2]),
           "p": nn.Parameter(ember.zeros(2))}
    out = _roundtrip(obj)
    assert out["set"] == {1, 2, 3} and out["frozen"] == frozenset({"a"})
    assert out["bytes"] == b"\x00\xff" and out["ba"] == bytearray(b"xy")
    assert out["dtype"] is ember.float16 and out["device"] is ember.device("cpu")
    assert type(out["size"]) is ember.Size and type(out["p"]) is nn.Parameter
    assert out["range_of_tensors"][0] is out["range_of_tensors"][1]


def test_custom_pickle_module_and_protocol():
    obj = {"s": {1}, "t": ember.ones(2)}
    for protocol in (2, 4, 5, pickle.HIGHEST_PROTOCOL):
        buf = io.BytesIO()
        ember.save(obj, buf, pickle_protocol=protocol)
        buf.seek(0)
        out = ember.load(buf)
        assert out["s"] == {1} and out["t"].tolist() == [1.0, 1.0]
    buf = io.BytesIO()
    ember.save(obj, buf, pickle_module=pickle, pickle_protocol=0)
    buf.seek(0)
    out = ember.load(buf, weights_only=False, pickle_module=pickle)
    assert out["s"] == {1}


def test_tensors_stay_out_of_the_pickle(tmp_path):
    # the pickled object holds references; the values are ordinary safetensors entries
    import safetensors
    w = ember.arange(1000.0)
    path = tmp_path / "m.ember"
    ember.save({"w": w, "tags": {"x"}}, path)
    with safetensors.safe_open(str(path), framework="numpy") as f:
        meta = f.metadata()
        assert meta["object"] == "pickle"
        np.testing.assert_array_equal(f.get_tensor("t0"), np.arange(1000.0, dtype=np.float32))
        assert f.get_tensor("pickle").nbytes < 200


def test_add_safe_globals_errors_and_threads():
    with pytest.raises(TypeError, match="expects a list"):
        add_safe_globals(Point)
    with pytest.raises(ValueError, match=r"\(object, 'module.name'\)"):
        add_safe_globals([(Point,)])
    add_safe_globals([Point])
    assert get_safe_globals() == [Point]
    errors = []

    def worker():
        try:
            for _ in range(50):
                with safe_globals([Slotted]):
                    pass
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and get_safe_globals() == [Point]


def test_weights_only_false_is_needed_for_unlisted_functions():
    obj = {"fn": np.add}  # a global function: refused unless allowed or weights_only=False
    with pytest.raises(pickle.UnpicklingError, match="GLOBAL numpy.add"):
        _roundtrip(obj)
    assert _roundtrip(obj, weights_only=False)["fn"] is np.add

"""ember.load of checkpoints written by torch.save: committed fixtures (no torch needed), files
torch writes in the test (optional), map_location, and hostile files that must run nothing."""
import io
import math
import os
import pathlib
import pickle
import struct
import sys
import tarfile
import zipfile

import numpy as np
import pytest

import ember
from ember import nn, optim
from ember.serialization import DeviceMapError

FIXTURES = pathlib.Path(__file__).parent / "fixtures"


# -- the committed fixtures (tests/fixtures/make_torch_fixtures.py), loaded without torch -------
def _check_fixture_object(out):
    """The values make_torch_fixtures.py wrote, from their closed forms."""
    base = np.arange(24, dtype=np.float32).reshape(4, 6) / 4
    sd = out["model"]
    assert list(sd) == ["0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean",
                        "1.running_var", "1.num_batches_tracked"]
    # the parameters after one Adam step with unit gradients: each moved by -lr = -0.01
    np.testing.assert_allclose(sd["0.weight"].numpy(),
                               np.arange(12).reshape(3, 4) / 10 - 0.51, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(sd["0.bias"].numpy(), [0.09, 0.19, 0.29], rtol=1e-6)
    np.testing.assert_allclose(sd["1.weight"].numpy(), 0.99, rtol=1e-6)
    assert sd["1.num_batches_tracked"].dtype is ember.int64 and \
        int(sd["1.num_batches_tracked"]) == 7 and sd["1.num_batches_tracked"].dim() == 0
    assert type(sd).__name__ == "OrderedDict"
    st = out["optimizer"]["state"]
    assert sorted(st) == [0, 1, 2, 3]
    for s in st.values():
        assert float(s["step"]) == 1.0 and s["step"].dtype is ember.float32
        np.testing.assert_allclose(s["exp_avg"].numpy(), 0.1, rtol=1e-6)
        np.testing.assert_allclose(s["exp_avg_sq"].numpy(), 0.001, rtol=1e-6)
    group = out["optimizer"]["param_groups"][0]
    assert group["lr"] == 0.01 and group["betas"] == (0.9, 0.999) and group["params"] == \
        [0, 1, 2, 3] and group["foreach"] is None
    sh = out["shared"]
    for key, want in (("base", base), ("t", base.T), ("slice", base[1:3, ::2]),
                      ("row", base[2])):
        np.testing.assert_array_equal(sh[key].numpy(), want)
    assert sh["t"].stride() == (1, 6) and not sh["t"].is_contiguous()
    sh["base"][2, 0] = -1.0  # one storage in torch: one memory here too
    assert sh["row"][0].item() == -1.0 and sh["t"][0, 2].item() == -1.0
    assert out["expanded"].stride() == (0, 1)
    np.testing.assert_array_equal(out["expanded"].numpy(), [[1, 2, 3], [1, 2, 3]])
    d = out["dtypes"]
    r = np.arange(5)
    want = {"float32": r - 2.0, "float64": (r - 2) / 3, "float16": (r - 2) / 4,
            "bfloat16": (r - 2) * 8.0, "int64": r * -(10 ** 12), "int32": r * -7,
            "int16": r * 300, "int8": r - 100, "uint8": r + 250,
            "bool": [True, False, True, True, False],
            "complex64": r - 1j * r / 2, "complex128": r / 3 + 1j}
    for name, values in want.items():
        assert d[name].dtype is getattr(ember, name), name
        got = d[name].numpy().astype(np.complex128 if "complex" in name else np.float64)
        np.testing.assert_allclose(got, np.asarray(values), rtol=1e-3 if name in (
            "float16", "bfloat16") else 1e-7, err_msg=name)
    n = out["nested"]
    assert n["list"] == [1, 2.5, "s", None, (True, 3)]
    np.testing.assert_array_equal(n["tuple"][0].numpy(), base[0])
    np.testing.assert_array_equal(n["tuple"][1]["deep"][0].numpy(), base[3])
    assert type(n["size"]) is ember.Size and n["size"] == (2, 3)
    assert n["dtype"] is ember.bfloat16 and n["device"] == ember.device("cpu")
    assert type(out["param"]) is nn.Parameter and out["param"].requires_grad
    assert out["needs_grad"].requires_grad and out["needs_grad"].is_leaf
    assert tuple(out["empty"].shape) == (0, 3) and out["scalar"].item() == 3.5


@pytest.mark.parametrize("name", ["torch_state_zip.pt", "torch_state_legacy.pt"])
def test_committed_torch_fixtures_load_without_torch(name, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # importing torch would fail here
    _check_fixture_object(ember.load(FIXTURES / name))
    with open(FIXTURES / name, "rb") as f:  # a file object as well as a path
        _check_fixture_object(ember.load(io.BytesIO(f.read())))


def test_fixture_state_dict_and_optimizer_state_drive_ember():
    ck = ember.load(FIXTURES / "torch_state_zip.pt")
    model = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3))
    model.load_state_dict(ck["model"])
    opt = optim.Adam(model.parameters(), lr=0.5)
    opt.load_state_dict(ck["optimizer"])
    assert opt.param_groups[0]["lr"] == 0.01
    model.eval()
    x = ember.tensor([[1.0, 2.0, 3.0, 4.0]])
    w = np.arange(12).reshape(3, 4) / 10 - 0.51
    h = np.array([[1.0, 2, 3, 4]]) @ w.T + [0.09, 0.19, 0.29]
    want = (h - np.arange(3) / 3) / np.sqrt(2.0 + 1e-5) * 0.99 - 0.01
    np.testing.assert_allclose(model(x).detach().numpy(), want, rtol=1e-5)


def test_cuda_saved_tensors_need_map_location():
    path = FIXTURES / "torch_cuda_state.pt"
    with pytest.raises(DeviceMapError, match=r"storage '0' \(float32, 6 elements\) was saved on "
                                             r"'cuda:0', which this ember cannot use.*"
                                             r"map_location='cpu'"):
        ember.load(path)
    for ml in ("cpu", ember.device("cpu"), {"cuda:0": "cpu"}, {"cuda": "cpu"}):
        out = ember.load(path, map_location=ml)
        assert out["w"].device == ember.device("cpu")
        np.testing.assert_array_equal(out["w"].numpy(), np.arange(6.0).reshape(2, 3))
    seen = []
    out = ember.load(path, map_location=lambda s, loc: seen.append(loc) or s)
    assert seen == ["cuda:0", "cuda:0"] and out["b"].tolist() == [1, 1]


def test_mmap_and_pickle_module_arguments():
    with pytest.raises(ValueError, match="mmap=True is not supported"):
        ember.load(FIXTURES / "torch_cuda_state.pt", mmap=True)
    with pytest.raises(RuntimeError, match="Can not safely load weights when explicit "
                                           "pickle_module is specified"):
        ember.load(FIXTURES / "torch_cuda_state.pt", pickle_module=pickle)
    out = ember.load(FIXTURES / "torch_cuda_state.pt", map_location="cpu", weights_only=False,
                     pickle_module=pickle)
    assert out["b"].tolist() == [1, 1]


# -- hostile files: nothing may run --------------------------------------------------------------
def _global(module, name):
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def _str(s):
    b = s.encode()
    return b"X" + struct.pack("<I", len(b)) + b


def _call_pickle(module, name, *args, proto=2):
    """A pickle that calls module.name(*args) (string arguments)."""
    return b"\x80" + bytes([proto]) + _global(module, name) + b"(" + \
        b"".join(_str(a) for a in args) + b"tR."


def _torch_zip(pkl):
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("archive/data.pkl", pkl)
        z.writestr("archive/byteorder", "little")
        z.writestr("archive/version", "3\n")
    return out.getvalue()


def _legacy(pkl):
    return pickle.dumps(0x1950a86a20f9469cfc6c, protocol=2) + pickle.dumps(1001, protocol=2) + \
        pickle.dumps({"protocol_version": 1001, "little_endian": True}, protocol=2) + pkl + \
        pickle.dumps([], protocol=2)


@pytest.fixture
def side_file(tmp_path):
    path = tmp_path / "pwned"
    yield path
    assert not path.exists(), "a hostile checkpoint ran code"


def _posix_system():
    return ("posix" if os.name == "posix" else "nt"), "system"


HOSTILE = {
    "GLOBAL os.system": lambda cmd: _call_pickle(*_posix_system(), cmd),
    "builtins.eval": lambda cmd: _call_pickle("builtins", "eval",
                                              f"__import__('os').system({cmd!r})"),
    "builtins.exec": lambda cmd: _call_pickle("__builtin__", "exec",
                                              f"import os; os.system({cmd!r})"),
    "subprocess": lambda cmd: _call_pickle("subprocess", "check_call", cmd),
    "STACK_GLOBAL": lambda cmd: b"\x80\x04" + b"\x8c\x02os\x8c\x06system\x93" +
    b"\x8c" + bytes([len(cmd)]) + cmd.encode() + b"\x85R.",
    "INST": lambda cmd: b"(" + _str(cmd) + b"ios\nsystem\n.",
    "getattr chain": lambda cmd: b"\x80\x02" + _global("builtins", "getattr") + b"(" +
    _global("collections", "OrderedDict") + _str("fromkeys") + b"tR.",
    "extension registry": lambda cmd: b"\x80\x02\x82\x01.",
}


@pytest.mark.parametrize("name", list(HOSTILE))
@pytest.mark.parametrize("wrap", ["zip", "legacy"])
def test_hostile_torch_checkpoints_run_nothing(name, wrap, side_file, tmp_path):
    pkl = HOSTILE[name](f"touch {side_file}")
    data = _torch_zip(pkl) if wrap == "zip" else _legacy(pkl)
    path = tmp_path / "evil.pt"
    path.write_bytes(data)
    with pytest.raises(pickle.UnpicklingError) as info:
        ember.load(path)
    msg = str(info.value)
    if name != "extension registry":
        assert "Weights only load failed" in msg and "evil.pt" in msg
        assert "add_safe_globals" in msg or "unrecognized function" in msg, msg
    if name == "GLOBAL os.system":
        assert f"GLOBAL {'.'.join(_posix_system())} was not an allowed global" in msg
        assert "weights_only` set to `False`" in msg


def test_hostile_pickle_inside_an_ember_file(side_file, tmp_path):
    path = tmp_path / "m.ember"
    ember.save({"x": {1, 2}, "w": ember.ones(2)}, path)  # a set: the pickle form
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    import json
    header = json.loads(raw[8:8 + n])
    b, e = header["pickle"]["data_offsets"]
    evil = _call_pickle(*_posix_system(), f"touch {side_file}")
    meta = header["__metadata__"]
    import zlib
    meta["pickle_crc32"] = str(zlib.crc32(evil))
    header["pickle"] = {"dtype": "U8", "shape": [len(evil)], "data_offsets": [b, b + len(evil)]}
    head = json.dumps(header).encode()
    body = raw[8 + n:8 + n + b] + evil
    path.write_bytes(struct.pack("<Q", len(head)) + head + body)
    with pytest.raises(pickle.UnpicklingError, match=r"GLOBAL posix.system|GLOBAL nt.system"):
        ember.load(path)


def test_build_cannot_alter_ember_devices(tmp_path):
    # torch.device('cpu') is allowed; a BUILD that would set its attributes is not
    pkl = b"\x80\x02" + _global("torch", "device") + _str("cpu") + b"\x85R}" + \
        _str("type") + _str("opencl") + b"sb."
    path = tmp_path / "dev.pt"
    path.write_bytes(_torch_zip(pkl))
    with pytest.raises(pickle.UnpicklingError, match="Can only build OrderedDict"):
        ember.load(path)
    assert ember.device("cpu").type == "cpu"


@pytest.mark.parametrize("pkl,match", [
    (b"\x80\x02" + _global("_codecs", "encode") + b"(" + _str("x") + _str("rot13") + b"tR.",
     "encoding 'rot13' is not allowed"),
    (b"\x80\x02]q\x00h\x05.", "malformed pickle"),
    (b"\x80\x02(t", "truncated"),
    (b"\x80\x02" + _global("collections", "OrderedDict") + b")\x81.", "Can only create new"),
    (b"\x80\x02)\x85Q.", "unexpected persistent id"),
])
def test_malformed_and_refused_pickles(pkl, match, tmp_path):
    path = tmp_path / "bad.pt"
    path.write_bytes(_torch_zip(pkl))
    with pytest.raises(pickle.UnpicklingError, match=match):
        ember.load(path)


def _tuple(xs):
    return b"(" + b"".join(b"J" + struct.pack("<i", x) for x in xs) + b"t"


def _tensor_pickle(key, storage_type, numel, offset, size, stride):
    """The opcodes torch writes for one tensor: _rebuild_tensor_v2 on a persistent storage."""
    pid = b"(" + _str("storage") + _global("torch", storage_type) + _str(key) + _str("cpu") + \
        b"J" + struct.pack("<i", numel) + b"tQ"
    return _global("torch._utils", "_rebuild_tensor_v2") + b"(" + pid + b"J" + \
        struct.pack("<i", offset) + _tuple(size) + _tuple(stride) + b"\x89" + \
        _global("collections", "OrderedDict") + b")RtR"


def _storage_pickle(offset, size, stride, numel):
    return b"\x80\x02" + _tensor_pickle("0", "FloatStorage", numel, offset, size, stride) + b"."


def _zip_of(pkl, storages, byteorder=None):
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("archive/data.pkl", pkl)
        if byteorder:
            z.writestr("archive/byteorder", byteorder)
        for key, data in storages.items():
            z.writestr(f"archive/data/{key}", data)
    return out.getvalue()


def test_big_endian_zip_checkpoint(tmp_path):
    pkl = b"\x80\x02}(" + _str("f") + _tensor_pickle("0", "FloatStorage", 6, 0, [2, 3], [3, 1]) \
        + _str("l") + _tensor_pickle("1", "LongStorage", 3, 1, [2], [1]) + \
        _str("c") + _tensor_pickle("2", "ComplexDoubleStorage", 2, 0, [2], [1]) + b"u."
    f = np.arange(6, dtype=np.float32) - 2.5
    i = np.array([7, -(2 ** 40), 9], dtype=np.int64)
    c = np.array([1 + 2j, -3.5 + 0.25j])
    for order, dt in (("big", ">"), ("little", "<")):
        data = {"0": f.astype(dt + "f4").tobytes(), "1": i.astype(dt + "i8").tobytes(),
                "2": c.astype(dt + "c16").tobytes()}
        path = tmp_path / f"{order}.pt"
        path.write_bytes(_zip_of(pkl, data, order))
        out = ember.load(path)
        np.testing.assert_array_equal(out["f"].numpy(), f.reshape(2, 3))
        assert out["l"].tolist() == [-(2 ** 40), 9]
        np.testing.assert_array_equal(out["c"].numpy(), c)


def test_out_of_bounds_views_are_refused(tmp_path):
    def write(pkl, nbytes):
        path = tmp_path / "oob.pt"
        path.write_bytes(_zip_of(pkl, {"0": b"\0" * nbytes}))
        return path

    ok = ember.load(write(_storage_pickle(1, [2, 2], [2, 1], 6), 24))
    assert ok.tolist() == [[0.0, 0.0], [0.0, 0.0]]
    with pytest.raises(pickle.UnpicklingError, match="reaches past the end of storage '0'"):
        ember.load(write(_storage_pickle(3, [2, 2], [2, 1], 6), 24))
    with pytest.raises(ValueError, match="storage '0' has 20 bytes, its tensors need 24"):
        ember.load(write(_storage_pickle(0, [2], [1], 6), 20))


def _tar_checkpoint(pickled_obj):
    """A torch < 0.4 tar checkpoint of one float32 storage [0, 1, 2, 3] and a 2x2 tensor on it,
    written in the layout torch's legacy tar reader expects."""
    def member(tar, name, data):
        info = tarfile.TarInfo(name)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))

    p = lambda o: pickle.dumps(o, protocol=2)  # noqa: E731
    storage_record = b"\x80\x02(K\x01" + _str("cpu") + _global("torch", "FloatStorage") + b"t."
    storages = p(1) + storage_record + struct.pack("<q", 4) + \
        np.arange(4, dtype=np.float32).tobytes() + p([])
    tensor_record = b"\x80\x02(K\x02K\x01" + _global("torch", "FloatTensor") + b"t."
    tensors = p(1) + tensor_record + struct.pack("<ii", 2, 0) + struct.pack("<qq", 2, 2) + \
        struct.pack("<qq", 1, 2) + struct.pack("<q", 0)
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        member(tar, "sys_info", p({"little_endian": True}))
        member(tar, "storages", storages)
        member(tar, "tensors", tensors)
        member(tar, "pickle", pickled_obj)
    return out.getvalue()


def test_legacy_tar_format(tmp_path, side_file):
    # {"w": tensor 2 (a transposed 2x2 view), "s": storage 1}
    obj = b"\x80\x02}(" + _str("w") + b"K\x02Q" + _str("s") + b"K\x01Qu."
    path = tmp_path / "old.pt"
    path.write_bytes(_tar_checkpoint(obj))
    out = ember.load(path)
    assert out["w"].tolist() == [[0.0, 2.0], [1.0, 3.0]] and out["w"].stride() == (1, 2)
    path.write_bytes(_tar_checkpoint(_call_pickle(*_posix_system(), f"touch {side_file}")))
    with pytest.raises(pickle.UnpicklingError, match="not an allowed global"):
        ember.load(path)


def test_unsafe_globals_in_checkpoint(tmp_path):
    path = tmp_path / "evil.pt"
    path.write_bytes(_torch_zip(_call_pickle(*_posix_system(), "true")))
    assert ember.serialization.get_unsafe_globals_in_checkpoint(path) == \
        [".".join(_posix_system())]
    assert ember.serialization.get_unsafe_globals_in_checkpoint(
        FIXTURES / "torch_state_zip.pt") == []
    assert ember.serialization.get_unsafe_globals_in_checkpoint(
        FIXTURES / "torch_state_legacy.pt") == []


# -- files torch writes in the test (optional dependency) -----------------------------------------
def _same(ember_t, torch_t):
    torch = pytest.importorskip("torch")
    assert str(torch_t.dtype).removeprefix("torch.") == ember_t.dtype.name
    assert tuple(ember_t.shape) == tuple(torch_t.shape)
    assert ember_t.requires_grad == torch_t.requires_grad
    a = torch_t.detach()
    if a.dtype == torch.bfloat16:
        a = a.float()
    want = a.numpy()
    got = ember_t.detach().numpy()
    if ember_t.dtype is ember.bfloat16:
        got = got.astype(np.float32)
    np.testing.assert_array_equal(got, want)


def _walk(e, t):
    torch = pytest.importorskip("torch")
    if isinstance(t, torch.Tensor):
        _same(e, t)
        assert isinstance(e, nn.Parameter) == isinstance(t, torch.nn.Parameter)
    elif isinstance(t, dict):
        assert type(e).__name__ == type(t).__name__ and list(e) == list(t)
        for k in t:
            _walk(e[k], t[k])
    elif isinstance(t, (list, tuple)):
        assert type(e) is type(t) or (type(t).__name__ == "Size" and type(e) is ember.Size)
        for a, b in zip(e, t):
            _walk(a, b)
    elif isinstance(t, torch.dtype):
        assert e is getattr(ember, str(t).removeprefix("torch."))
    elif isinstance(t, torch.device):
        assert str(e) == str(t)
    elif isinstance(t, float) and math.isnan(t):
        assert math.isnan(e)
    else:
        assert e == t and type(e) is type(t)


def _torch_cases(torch):
    g = torch.Generator().manual_seed(0)
    conv = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4),
                               torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(16, 2))
    opts = {}
    for name in ("SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "NAdam", "RAdam", "Adamax",
                 "ASGD", "Adadelta", "Rprop"):
        p = torch.nn.Parameter(torch.randn(3, 2, generator=g))
        kw = {"momentum": 0.9} if name in ("SGD", "RMSprop") else {}
        o = getattr(torch.optim, name)([p], **kw)
        p.grad = torch.randn(3, 2, generator=g)
        o.step()
        opts[name] = o.state_dict()
    base = torch.randn(5, 7, generator=g)
    return {
        "state_dict": conv.state_dict(),
        "optimizers": opts,
        "views": {"base": base, "t": base.t(), "strided": base[::2, 1::3], "col": base[:, 2],
                  "narrow": base.narrow(1, 2, 3), "exp": base[0].expand(3, 7)},
        "dtypes": [torch.randn(3, generator=g).to(dt) for dt in (
            torch.bfloat16, torch.float16, torch.float64, torch.complex64, torch.complex128)]
        + [torch.tensor([True, False]), torch.arange(-3, 3, dtype=torch.int8),
           torch.arange(4, dtype=torch.int16), torch.arange(4, dtype=torch.int32) - 9,
           torch.arange(3, dtype=torch.uint8)],
        "nested": [({"a": (1, 2.5, "x", None, float("nan"), 2 ** 70, 1 + 2j, b"bytes")},),
                   torch.Size([3, 4]), torch.float16, torch.device("cpu"),
                   {"set": {1, 2}, "frozen": frozenset({3})}],
        "param": torch.nn.Parameter(torch.randn(2, generator=g)),
        "nograd_param": torch.nn.Parameter(torch.randn(2, generator=g), requires_grad=False),
        "grad": torch.randn(2, generator=g).requires_grad_(),
        "zero_d": torch.tensor(7), "empty": torch.empty(0, 2),
    }


@pytest.mark.parametrize("zip_format", [True, False], ids=["zip", "legacy"])
def test_torch_written_files(zip_format, tmp_path):
    torch = pytest.importorskip("torch")
    obj = _torch_cases(torch)
    path = tmp_path / "ck.pt"
    torch.save(obj, path, _use_new_zipfile_serialization=zip_format)
    out = ember.load(path)
    for key in ("state_dict", "optimizers", "views", "dtypes", "param", "nograd_param", "grad",
                "zero_d", "empty"):
        _walk(out[key], obj[key])
    n = out["nested"]
    assert n[0][0]["a"][:4] == (1, 2.5, "x", None) and math.isnan(n[0][0]["a"][4])
    assert n[0][0]["a"][5:] == (2 ** 70, 1 + 2j, b"bytes")
    assert n[1] == ember.Size([3, 4]) and n[2] is ember.float16 and str(n[3]) == "cpu"
    assert n[4] == {"set": {1, 2}, "frozen": frozenset({3})}
    # views of one storage share memory, like torch's
    v = out["views"]
    v["base"][0, 2] = 123.0
    assert v["t"][2, 0].item() == 123.0 and v["col"][0].item() == 123.0 and \
        v["narrow"][0, 0].item() == 123.0 and v["exp"][2, 2].item() == 123.0


def test_torch_optimizer_states_continue_in_ember(tmp_path):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    p0 = rng.standard_normal((3, 2)).astype(np.float32)
    grads = [rng.standard_normal((3, 2)).astype(np.float32) for _ in range(4)]
    for name, kw in (("Adam", {"amsgrad": True}), ("SGD", {"momentum": 0.9, "nesterov": True}),
                     ("NAdam", {}), ("ASGD", {"t0": 1}), ("Rprop", {})):
        tp = torch.nn.Parameter(torch.tensor(p0))
        topt = getattr(torch.optim, name)([tp], lr=0.05, **kw)
        for g in grads[:2]:
            tp.grad = torch.tensor(g)
            topt.step()
        torch.save({"p": tp, "opt": topt.state_dict()}, tmp_path / "o.pt")
        ck = ember.load(tmp_path / "o.pt")
        p = ck["p"]
        opt = getattr(optim, name)([p], lr=1.0, **kw)
        opt.load_state_dict(ck["opt"])
        for g in grads[2:]:
            tp.grad = torch.tensor(g)
            topt.step()
            p.grad = ember.tensor(g)
            opt.step()
        np.testing.assert_allclose(p.detach().numpy(), tp.detach().numpy(), rtol=1e-6,
                                   atol=1e-7, err_msg=name)


def test_torch_state_dict_gives_the_same_outputs():
    torch = pytest.importorskip("torch")
    tm = torch.nn.Sequential(torch.nn.Conv2d(2, 3, 3, padding=1), torch.nn.BatchNorm2d(3),
                             torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(48, 5))
    tm.eval()
    buf = io.BytesIO()
    torch.save(tm.state_dict(), buf)
    buf.seek(0)
    em = nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.BatchNorm2d(3), nn.ReLU(),
                       nn.Flatten(), nn.Linear(48, 5))
    em.load_state_dict(ember.load(buf))
    em.eval()
    x = np.random.default_rng(0).standard_normal((2, 2, 4, 4)).astype(np.float32)
    np.testing.assert_allclose(em(ember.tensor(x)).detach().numpy(),
                               tm(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # torch.jit's own deprecation notes
def test_torch_specific_contents_are_refused_clearly(tmp_path):
    torch = pytest.importorskip("torch")
    path = tmp_path / "m.pt"
    torch.save(torch.nn.Linear(2, 2), path)  # a whole torch module
    with pytest.raises(pickle.UnpicklingError,
                       match=r"GLOBAL torch.nn.modules.linear.Linear was not an allowed global"
                             r".*save its state_dict\(\) with torch instead"):
        ember.load(path)
    torch.save({"u": torch.ones(3, dtype=torch.uint16)}, path)
    with pytest.raises(pickle.UnpicklingError, match="dtype torch.uint16; ember has no such"):
        ember.load(path)
    torch.save({"s": torch.eye(2).to_sparse()}, path)
    with pytest.raises(pickle.UnpicklingError, match="a sparse tensor"):
        ember.load(path)
    torch.jit.save(torch.jit.script(torch.nn.Linear(2, 2)), path)
    with pytest.raises(ValueError, match="TorchScript archive"):
        ember.load(path)


def test_torch_file_with_map_location_to_opencl(tmp_path):
    torch = pytest.importorskip("torch")
    if not ember.opencl.is_available():
        pytest.skip(f"opencl unavailable: {ember.opencl.unavailable_reason()}")
    base = torch.arange(6.0).reshape(2, 3)
    torch.save({"w": base, "t": base.t()}, tmp_path / "x.pt")
    out = ember.load(tmp_path / "x.pt", map_location="opencl")
    assert out["w"].device.type == "opencl" and out["t"].device == out["w"].device
    np.testing.assert_array_equal(out["t"].cpu().numpy(), base.t().numpy())


SCHEDULERS = [("StepLR", dict(step_size=3, gamma=0.5)),
              ("CyclicLR", dict(base_lr=0.01, max_lr=0.1, step_size_up=3, mode="exp_range",
                                gamma=0.9)),
              ("CosineAnnealingWarmRestarts", dict(T_0=3, T_mult=2)),
              ("OneCycleLR", dict(max_lr=1.0, total_steps=30)),
              ("ReduceLROnPlateau", dict(patience=1)), ("PolynomialLR", dict(total_iters=8))]


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name,kw", SCHEDULERS, ids=[s[0] for s in SCHEDULERS])
def test_torch_scheduler_states_continue_in_ember(name, kw):
    torch = pytest.importorskip("torch")
    tp = torch.ones(1, requires_grad=True)
    topt = torch.optim.SGD([tp], lr=0.1, momentum=0.9)
    ts = getattr(torch.optim.lr_scheduler, name)(topt, **kw)
    plateau = name == "ReduceLROnPlateau"
    metric = lambda i: 1.0 if i % 3 else 0.5  # noqa: E731
    for i in range(5):
        topt.step()
        ts.step(metric(i)) if plateau else ts.step()
    buf = io.BytesIO()
    torch.save({"opt": topt.state_dict(), "sched": ts.state_dict()}, buf)
    buf.seek(0)
    ck = ember.load(buf)
    opt = optim.SGD([ember.ones(1, requires_grad=True)], lr=0.1, momentum=0.9)
    opt.load_state_dict(ck["opt"])
    s = getattr(optim.lr_scheduler, name)(opt, **kw)
    s.load_state_dict(ck["sched"])
    for i in range(5, 12):
        topt.step()
        opt.step()
        if plateau:
            ts.step(metric(i))
            s.step(metric(i))
        else:
            ts.step()
            s.step()
        assert s.get_last_lr() == pytest.approx(ts.get_last_lr(), rel=1e-12)
        assert opt.param_groups[0]["momentum"] == pytest.approx(topt.param_groups[0]["momentum"])


# -- issue #36: damaged and hostile files give clear errors naming the file ----------------------
def _set_zip_header_field(data, name, offset, fmt, value):
    """Set a field of ``name``'s local and central headers (``offset`` from each signature)."""
    raw = bytearray(data)
    for sig, name_at in ((b"PK\x03\x04", 30), (b"PK\x01\x02", 46)):
        pos = raw.find(sig)
        while pos >= 0:
            n = struct.unpack_from("<H", raw, pos + (26 if sig == b"PK\x03\x04" else 28))[0]
            if raw[pos + name_at:pos + name_at + n] == name.encode():
                struct.pack_into(fmt, raw, pos + offset, value)
            pos = raw.find(sig, pos + 4)
    return bytes(raw)


@pytest.mark.parametrize("field", ["strong encryption", "encrypted", "unknown method",
                                   "garbled deflate"])
def test_zip_damage_is_a_corrupted_file_error(field, tmp_path):
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("archive/data.pkl", pickle.dumps({"a": 1}, protocol=2))
        z.writestr("archive/byteorder", "little")
    data = out.getvalue()
    if field == "strong encryption":   # flag bit 6: zipfile raises NotImplementedError
        data = _set_zip_header_field(data, "archive/data.pkl", 6, "<H", 0x41)
        data = _set_zip_header_field(data, "archive/data.pkl", 8, "<H", 0x41)
    elif field == "encrypted":         # flag bit 0: zipfile asks for a password
        data = _set_zip_header_field(data, "archive/data.pkl", 6, "<H", 0x01)
        data = _set_zip_header_field(data, "archive/data.pkl", 8, "<H", 0x01)
    elif field == "unknown method":
        data = _set_zip_header_field(data, "archive/data.pkl", 8, "<H", 99)
        data = _set_zip_header_field(data, "archive/data.pkl", 10, "<H", 99)
    else:
        start = data.find(b"archive/data.pkl") + len("archive/data.pkl")
        data = data[:start] + bytes(b ^ 0x5A for b in data[start:start + 12]) + \
            data[start + 12:]
    path = tmp_path / "damaged.pt"
    path.write_bytes(data)
    with pytest.raises(ValueError, match=r"damaged\.pt' is a corrupted file") as e:
        ember.load(path)
    assert not isinstance(e.value, NotImplementedError)


def test_fuzzed_torch_zip_checkpoints_fail_clearly(tmp_path):
    torch = pytest.importorskip("torch")
    buf = io.BytesIO()
    torch.save({"w": torch.arange(6.0).reshape(2, 3), "b": torch.ones(3, dtype=torch.float64),
                "n": 3}, buf)
    raw = buf.getvalue()
    rng = np.random.default_rng(36)
    path = tmp_path / "fuzzed.pt"
    for _ in range(400):
        data = bytearray(raw)
        for j in rng.integers(0, len(data), size=int(rng.integers(1, 5))):
            data[j] = int(rng.integers(0, 256))
        path.write_bytes(bytes(data))
        try:
            ember.load(path)
        except (ValueError, pickle.UnpicklingError) as e:  # CorruptCheckpoint is a ValueError
            assert "fuzzed.pt" in str(e), str(e)
            assert not type(e).__name__.startswith("_"), type(e)


@pytest.mark.parametrize("which", [0, 1, 2, 3], ids=["magic", "protocol", "sys_info", "keys"])
@pytest.mark.parametrize("weights_only", [True, False])
def test_refused_legacy_header_pickle_names_the_file(which, weights_only, side_file, tmp_path):
    parts = [pickle.dumps(0x1950a86a20f9469cfc6c, protocol=2), pickle.dumps(1001, protocol=2),
             pickle.dumps({"protocol_version": 1001, "little_endian": True}, protocol=2),
             pickle.dumps({}, protocol=2), pickle.dumps([], protocol=2)]
    parts[which if which < 3 else 4] = _call_pickle(*_posix_system(), f"touch {side_file}")
    path = tmp_path / "legacy_evil.pt"
    path.write_bytes(b"".join(parts))
    with pytest.raises(pickle.UnpicklingError) as e:
        ember.load(path, weights_only=weights_only)
    assert type(e.value) is pickle.UnpicklingError  # not the private _Refused
    assert "legacy_evil.pt" in str(e.value)

"""ember.save / ember.load: round trips, map_location, atomic writes, damaged and hostile files,
and no pickle for state-dict-like objects."""
import io
import json
import math
import os
import pathlib
import pickle
import struct
import zlib
from collections import Counter, OrderedDict

import numpy as np
import pytest
import safetensors

import ember
from ember import optim

ALL_DTYPES = [ember.bool, ember.uint8, ember.int8, ember.int16, ember.int32, ember.int64,
              ember.float16, ember.bfloat16, ember.float32, ember.float64, ember.complex64,
              ember.complex128]


def _sample(dtype, shape=(2, 3)):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(shape) * 50
    if dtype.is_complex:
        a = a + 1j * rng.standard_normal(shape)
    if dtype is ember.bool:
        a = a > 0
    if dtype is ember.uint8:
        a = np.abs(a)
    return ember.tensor(a, dtype=dtype)


def _same(a, b):
    assert type(a) is type(b)
    assert a.dtype is b.dtype and tuple(a.shape) == tuple(b.shape) and a.device == b.device
    assert a.requires_grad == b.requires_grad
    x, y = a.detach().cpu()._host(), b.detach().cpu()._host()
    assert x.tobytes() == np.ascontiguousarray(y).tobytes() or np.array_equal(x, y)


def _roundtrip(obj, **load_kw):
    buf = io.BytesIO()
    ember.save(obj, buf)
    buf.seek(0)
    return ember.load(buf, **load_kw)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("shape", [(2, 3), (), (0, 4)], ids=["2x3", "0d", "empty"])
def test_every_dtype_round_trips(dtype, shape):
    t = _sample(dtype, shape)
    _same(t, _roundtrip(t))


def test_views_keep_strides_and_share_their_storage_as_in_torch(tmp_path):
    # issue #36: torch.save keeps each view's strides and offset, and views of one storage load
    # as views of one storage; ember.save does the same (the whole storage is saved)
    torch = pytest.importorskip("torch")
    base = ember.arange(24.0).reshape(4, 6)
    views = {"base": base, "t": base.t(), "slice": base[1:3, ::2], "row": base[2],
             "expanded": ember.ones(3)[None].expand(4, 3)}
    tbase = torch.arange(24.0).reshape(4, 6)
    tviews = {"base": tbase, "t": tbase.t(), "slice": tbase[1:3, ::2], "row": tbase[2],
              "expanded": torch.ones(3)[None].expand(4, 3)}
    torch.save(tviews, tmp_path / "t.pt")
    want = torch.load(tmp_path / "t.pt")
    out = _roundtrip(views)
    for k in views:
        np.testing.assert_array_equal(out[k].numpy(), want[k].numpy())
        assert out[k].stride() == want[k].stride(), k
        assert out[k].storage_offset() == want[k].storage_offset(), k
    for k in ("t", "slice", "row"):
        assert out[k].untyped_storage() is out["base"].untyped_storage()
        assert want[k].untyped_storage().data_ptr() == want["base"].untyped_storage().data_ptr()
    out["base"][2, 0] = -1.0  # one storage: a write shows through every view
    assert out["row"][0].item() == -1.0 and out["t"][0, 2].item() == -1.0
    path = tmp_path / "row.ember"
    ember.save(base[3], path)
    # as torch, a view saves its whole storage (clone() it to save only its values)
    assert os.path.getsize(path) >= 24 * 4 and ember.load(path).tolist() == base[3].tolist()
    ember.save(base[3].clone(), path)
    assert os.path.getsize(path) < 24 * 4 + 1024


@pytest.mark.parametrize("device", ["cpu", "opencl"])
def test_shared_storage_round_trips_on_a_device_and_across_dtypes(device):
    if device == "opencl" and not ember.opencl.is_available():
        pytest.skip("no OpenCL device")
    base = ember.arange(12.0, device=device).reshape(3, 4)
    obj = {"a": base[1:], "b": base.t(), "bits": base.view(ember.int32),
           "c": ember.arange(6.0, dtype=ember.complex128, device=device).reshape(2, 3).t()}
    out = _roundtrip(obj)
    for k, v in obj.items():
        assert out[k].device == v.device and out[k].dtype == v.dtype
        np.testing.assert_array_equal(out[k].cpu().numpy(), v.cpu().numpy())
        assert out[k].stride() == v.stride() and out[k].storage_offset() == v.storage_offset()
    assert out["a"].untyped_storage() is out["b"].untyped_storage() is \
        out["bits"].untyped_storage()
    moved = _roundtrip(obj, map_location="cpu")
    assert moved["a"].untyped_storage() is moved["b"].untyped_storage()
    assert moved["b"].device.type == "cpu" and moved["b"].stride() == (1, 4)


def test_a_view_reaching_past_its_storage_is_refused(tmp_path):
    p = tmp_path / "v.ember"
    info = {"dtype": "float32", "device": "cpu", "shape": [3, 3], "stride": [3, 1],
            "offset": 2, "storage": "t0", "requires_grad": False,
            "crc32": zlib.crc32(np.ones(9, np.float32).tobytes())}
    _craft(p, {"t0": info}, {"$": "tensor", "v": "t0"}, {"t0": np.ones(9, np.float32)},
           version="3")
    with pytest.raises(ValueError, match=r"reaches byte 44 of its 36-byte storage 't0'"):
        ember.load(p)


def test_paths_and_file_objects(tmp_path):
    obj = {"a": ember.arange(5)}
    for p in (str(tmp_path / "a.ember"), tmp_path / "b.ember"):
        ember.save(obj, p)
        assert ember.load(p)["a"].tolist() == [0, 1, 2, 3, 4]
    with open(tmp_path / "c.ember", "wb") as f:
        ember.save(obj, f)
    with open(tmp_path / "c.ember", "rb") as f:
        assert ember.load(f)["a"].tolist() == [0, 1, 2, 3, 4]
    # it is a plain safetensors file
    with safetensors.safe_open(str(tmp_path / "c.ember"), framework="numpy") as f:
        assert f.metadata()["format"] == "ember"
        np.testing.assert_array_equal(f.get_tensor("t0"), np.arange(5))
    with pytest.raises(TypeError, match="path .* or a binary file object"):
        ember.save(obj, 42)
    with pytest.raises(TypeError, match="binary mode"):
        ember.load(io.StringIO("x"))
    with pytest.raises(FileNotFoundError):
        ember.load(tmp_path / "missing.ember")


def test_unpicklable_objects_are_refused_before_writing(tmp_path):
    with pytest.raises(TypeError, match=r"ember.save: the object is not one of the types saved "
                                        r"as data .* cannot be pickled either"):
        _roundtrip({"a": [1, lambda: 0]})
    path = tmp_path / "x.ember"
    with pytest.raises(TypeError):
        ember.save(lambda: 0, path)
    assert os.listdir(tmp_path) == []


def test_map_location_on_cpu():
    obj = {"a": ember.ones(2), "b": [ember.zeros(1, dtype=ember.int64)]}
    for ml in (None, "cpu", ember.device("cpu"), {"cpu": "cpu"}):
        out = _roundtrip(obj, map_location=ml)
        assert out["a"].device == ember.device("cpu")
    seen = []

    def fn(t, loc):
        seen.append(loc)
        return t * 2 if t.dtype is ember.float32 else None

    out = _roundtrip(obj, map_location=fn)
    assert seen == ["cpu", "cpu"] and out["a"].tolist() == [2.0, 2.0]
    with pytest.raises(TypeError, match="map_location must be"):
        _roundtrip(obj, map_location=3)
    with pytest.raises(TypeError, match="returned int"):
        _roundtrip(obj, map_location=lambda t, loc: 3)


needs_opencl = pytest.mark.skipif(not ember.opencl.is_available(), reason="opencl unavailable")


@needs_opencl
def test_map_location_with_opencl(tmp_path):
    g = ember.arange(6.0).reshape(2, 3).to("opencl")
    obj = {"gpu": g, "cpu": ember.ones(2), "idx": ember.tensor([1, 2], device="opencl")}
    path = tmp_path / "dev.ember"
    ember.save(obj, path)
    out = ember.load(path)  # each tensor back where it was
    assert out["gpu"].device == g.device and out["cpu"].device == ember.device("cpu")
    np.testing.assert_array_equal(out["gpu"].cpu().numpy(), g.cpu().numpy())
    for ml in ("cpu", {str(g.device): "cpu"}, {"opencl": "cpu"}):
        out = ember.load(path, map_location=ml)
        assert out["gpu"].device == ember.device("cpu") and out["idx"].tolist() == [1, 2]
    for ml in ("opencl", "opencl:0", ember.device("opencl:0")):
        out = ember.load(path, map_location=ml)
        assert out["cpu"].device.type == "opencl"
        assert out["cpu"].cpu().tolist() == [1.0, 1.0]


def _craft(path, tensors, tree, arrays, version="1", fmt="ember"):
    """Write a file in ember's layout by hand (to test what a hostile writer could do)."""
    keep = [np.ascontiguousarray(a) for a in arrays.values()]
    specs = {n: safetensors.TensorSpec(dtype=a.dtype.name, shape=list(a.shape),
                                       data_ptr=a.ctypes.data, data_len=a.nbytes)
             for n, a in zip(arrays, keep)}
    meta = {"format": fmt, "format_version": version, "tensors": json.dumps(tensors),
            "tree": json.dumps(tree)}
    pathlib.Path(path).write_bytes(bytes(safetensors.serialize(specs, metadata=meta)))


def test_unavailable_saved_device_gives_clear_error(tmp_path):
    p = tmp_path / "x.ember"
    _craft(p, {"t0": {"dtype": "float32", "device": "nosuchdev:0", "shape": [2],
                      "requires_grad": False}},
           {"$": "dict", "v": [["w", {"$": "tensor", "v": "t0"}]]},
           {"t0": np.ones(2, np.float32)})
    with pytest.raises(RuntimeError, match=r"obj\['w'\] \(t0\) was saved on 'nosuchdev:0', "
                                           r"which this ember cannot use.*map_location"):
        ember.load(p)
    assert ember.load(p, map_location="cpu")["w"].tolist() == [1.0, 1.0]


def test_atomic_write_keeps_old_file(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.ember"
    ember.save({"v": ember.ones(3)}, path)
    before = path.read_bytes()
    with pytest.raises(TypeError):
        ember.save({"v": ember.zeros(3), "bad": lambda: 0}, path)
    assert path.read_bytes() == before

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", boom)
    with pytest.raises(OSError, match="disk full"):
        ember.save({"v": ember.zeros(3)}, path)
    monkeypatch.undo()
    assert path.read_bytes() == before and ember.load(path)["v"].tolist() == [1.0] * 3
    assert sorted(os.listdir(tmp_path)) == ["ckpt.ember"]  # no temporary file left behind


@pytest.mark.parametrize("cut", [0, 5, 8, 20, -7, -1])
def test_truncated_file(tmp_path, cut):
    path = tmp_path / "t.ember"
    ember.save({"a": ember.arange(10.0), "b": "x"}, path)
    data = path.read_bytes()
    path.write_bytes(data[:cut] if cut > 0 else data[:len(data) + cut] if cut else b"")
    with pytest.raises(ValueError, match=r"ember.load: .*t\.ember.*"):
        ember.load(path)


def test_corrupted_and_foreign_files(tmp_path):
    path = tmp_path / "c.ember"
    ember.save({"a": ember.arange(10.0)}, path)
    data = bytearray(path.read_bytes())
    data[12] ^= 0xFF  # inside the JSON header
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="c.ember"):
        ember.load(path)
    foreign = tmp_path / "plain.safetensors"
    foreign.write_bytes(bytes(safetensors.serialize(
        {"x": safetensors.TensorSpec(dtype="float32", shape=[0], data_ptr=0, data_len=0)})))
    with pytest.raises(ValueError, match="not an ember file.*ember.save"):
        ember.load(foreign)
    junk = tmp_path / "junk.bin"
    junk.write_bytes(pickle.dumps({"a": 1}))
    with pytest.raises(ValueError, match=r"junk\.bin' is a pickle but not a torch checkpoint"):
        ember.load(junk)
    text = tmp_path / "notes.txt"
    text.write_bytes(b"hello world, not a checkpoint")
    with pytest.raises(ValueError, match=r"notes\.txt' is not an ember file or a torch "
                                         r"checkpoint"):
        ember.load(text)
    newer = tmp_path / "newer.ember"
    _craft(newer, {}, None, {}, version="99")
    with pytest.raises(ValueError, match="version 99"):
        ember.load(newer)


HOSTILE = [
    ("unknown tag", {"$": "pickle", "v": "cos\nsystem\n(S'echo hi'\ntR."}, "unknown or malformed"),
    ("class node", {"$": "object", "v": {"module": "os", "name": "system"}}, "unknown or malf"),
    ("missing tensor", {"$": "tensor", "v": "t9"}, "does not hold"),
    ("extra keys", {"$": "list", "v": [], "cls": "os.system"}, "unexpected node"),
    ("bad dict pair", {"$": "dict", "v": [[1]]}, "key, value"),
    ("unhashable key", {"$": "dict", "v": [[{"$": "list", "v": []}, 1]]}, "unhashable"),
    ("bad payload", {"$": "list", "v": "abc"}, "must hold a list"),
    ("deep", json.loads('{"$": "list", "v": [' * 300 + "]}" * 300), "levels deep"),
]


@pytest.mark.parametrize("name,tree,match", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_malicious_trees_are_refused(tmp_path, name, tree, match):
    p = tmp_path / "evil.ember"
    _craft(p, {"t0": {"dtype": "float32", "device": "cpu", "shape": [2]}}, tree,
           {"t0": np.ones(2, np.float32)})
    with pytest.raises(ValueError, match=match):
        ember.load(p)


@pytest.mark.parametrize("info,arr,match", [
    ({"dtype": "float64", "device": "cpu", "shape": [2]}, np.ones(2, np.float32), "stored as"),
    ({"dtype": "float32", "device": "cpu", "shape": [3]}, np.ones(2, np.float32), "stored as"),
    ({"dtype": "object", "device": "cpu", "shape": [2]}, np.ones(2, np.float32), "invalid desc"),
    ({"dtype": "float32", "device": "cpu", "shape": [-2]}, np.ones(2, np.float32), "invalid"),
])
def test_inconsistent_tensor_descriptions(tmp_path, info, arr, match):
    p = tmp_path / "bad.ember"
    _craft(p, {"t0": info}, {"$": "tensor", "v": "t0"}, {"t0": arr})
    with pytest.raises(ValueError, match=match):
        ember.load(p)


def test_load_never_uses_pickle(monkeypatch, tmp_path):
    def refuse(*a, **k):
        raise AssertionError("pickle used")

    for name in ("load", "loads", "Unpickler", "dump", "dumps", "Pickler"):
        monkeypatch.setattr(pickle, name, refuse)
    p = ember.ones(3, requires_grad=True)
    opt = optim.Adam([p], lr=0.1)
    p.grad = ember.ones(3)
    opt.step()
    ember.save({"opt": opt.state_dict(), "p": p}, tmp_path / "o.ember")
    out = ember.load(tmp_path / "o.ember")
    assert sorted(out["opt"]["state"]) == [0]


def test_optimizer_and_scheduler_state_round_trip(tmp_path):
    rng = np.random.default_rng(0)
    grads = [rng.standard_normal(4) for _ in range(6)]
    a = ember.ones(4, requires_grad=True)
    opt = optim.Adam([a], lr=0.1, amsgrad=True)
    sched = optim.lr_scheduler.MultiStepLR(opt, milestones=[2, 2, 4], gamma=0.5)
    plateau = optim.lr_scheduler.ReduceLROnPlateau(opt)
    for g in grads[:3]:
        a.grad = ember.tensor(g, dtype=ember.float32)
        opt.step()
        sched.step()
    path = tmp_path / "ckpt.ember"
    ember.save({"a": a, "opt": opt.state_dict(), "sched": sched.state_dict(),
                "plateau": plateau.state_dict()}, path)
    ck = ember.load(path)
    assert ck["plateau"]["best"] == math.inf and type(ck["sched"]["milestones"]) is Counter
    b = ck["a"]
    opt2 = optim.Adam([b], lr=0.5)
    opt2.load_state_dict(ck["opt"])
    sched2 = optim.lr_scheduler.MultiStepLR(opt2, milestones=[9], last_epoch=2)
    sched2.load_state_dict(ck["sched"])
    for g in grads[3:]:
        for t, o, s in ((a, opt, sched), (b, opt2, sched2)):
            t.grad = ember.tensor(g, dtype=ember.float32)
            o.step()
            s.step()
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
        assert sched.get_last_lr() == sched2.get_last_lr()


def _with_data(path, transform):
    raw = pathlib.Path(path).read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    header, data = transform(header, raw[8 + n:])
    head = json.dumps(header).encode()
    head += b" " * (-len(head) % 8)
    pathlib.Path(path).write_bytes(struct.pack("<Q", len(head)) + head + data)


def _shift(header, by, after=0):
    for k, v in header.items():
        if k != "__metadata__" and v["data_offsets"][0] >= after:
            v["data_offsets"] = [o + by for o in v["data_offsets"]]
    return header


@pytest.mark.parametrize("where", ["between", "before", "after"])
def test_safetensors_holes_and_trailing_data_are_refused(where, tmp_path):
    # the safetensors format: "the byte buffer needs to be entirely indexed, and cannot contain
    # holes" (no polyglot files); garbage after the last entry is such a hole
    path = tmp_path / "h.ember"
    ember.save({"a": ember.ones(4), "b": ember.arange(3.0)}, path)
    assert ember.load(path)["b"].tolist() == [0.0, 1.0, 2.0]
    junk = b"<script>payload</script>"
    if where == "between":
        _with_data(path, lambda h, d: (_shift(h, len(junk), after=16), d[:16] + junk + d[16:]))
        match = f"{len(junk)} bytes between entries"
    elif where == "before":
        _with_data(path, lambda h, d: (_shift(h, len(junk)), junk + d))
        match = f"the first {len(junk)} bytes of the data section belong to no entry"
    else:
        _with_data(path, lambda h, d: (h, d + junk))
        match = f"{len(junk)} bytes follow the last entry"
    with pytest.raises(ValueError, match=match):
        ember.load(path)

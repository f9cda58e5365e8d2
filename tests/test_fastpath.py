"""The compiled hot path (ember._C) and its Python reference: which one runs, and that they
make the same objects and graphs.

The whole suite runs on both in CI (.ci/run runs it again with EMBER_PURE_PYTHON=1); the
tests here compare the two directly in one process where they can, and through a subprocess
with the other setting where the choice is made at import."""
import json
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import ember
from ember import _fastpath
from ember.dispatch import keys as K
from ember.dispatch.dispatcher import Op, get_op
from ember.runtime.registry import registry as _registry

compiled = pytest.mark.skipif(_fastpath.C is None, reason=f"hot path not compiled: "
                              f"{_fastpath.REASON}")


def _run(code, pure):
    env = dict(os.environ)
    env.pop("EMBER_PURE_PYTHON", None)
    if pure:
        env["EMBER_PURE_PYTHON"] = "1"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_the_environment_variable_selects_the_python_reference():
    code = "from ember import _fastpath; print(_fastpath.C is None, _fastpath.describe())"
    pure = _run(code, pure=True)
    assert pure.startswith("True Python reference (EMBER_PURE_PYTHON is set)")
    default = _run(code, pure=False)
    if _fastpath.C is not None:
        assert default.startswith("False compiled")
    assert "ember._C" in _run(
        "from ember import cli; cli.main(['info'])", pure=False) or _fastpath.C is None


def test_ember_info_names_the_active_path():
    out = _run("from ember import cli; cli.main(['info'])", pure=True)
    assert "hot path" in out and "Python reference" in out


# a small training step whose results and graph both implementations must agree on
_STEP = r"""
import json, numpy as np, ember
rng = np.random.default_rng(0)
w = ember.tensor(rng.standard_normal((5, 4)).astype(np.float32), requires_grad=True)
b = ember.tensor(rng.standard_normal(4).astype(np.float32), requires_grad=True)
x = ember.tensor(rng.standard_normal((3, 5)).astype(np.float32))
h = (x @ w + b).tanh()
y = (h * h).sigmoid().log_softmax(1)
loss = -y[:, 1].mean() + (h - 1.0).abs().sum() * 0.1
loss.backward()
def names(fn, seen):
    if fn is None or id(fn) in seen:
        return []
    seen.add(id(fn))
    out = [fn.name()]
    for nxt, _ in fn.next_functions:
        out += names(nxt, seen)
    return out
print(json.dumps({"loss": loss.item(), "gw": w.grad.numpy().tolist(),
                  "gb": b.grad.numpy().tolist(), "graph": names(loss.grad_fn, set()),
                  "ks": [h._ks & 255, x._ks & 255, loss.requires_grad, h.is_leaf]}))
"""


def test_training_step_equal_on_both_paths():
    pure = json.loads(_run(_STEP, pure=True))
    fast = json.loads(_run(_STEP, pure=False))
    assert pure["graph"] == fast["graph"]
    assert pure["ks"] == fast["ks"]
    assert pure["loss"] == fast["loss"]
    np.testing.assert_array_equal(pure["gw"], fast["gw"])
    np.testing.assert_array_equal(pure["gb"], fast["gb"])


def test_masks_are_per_thread_and_read_back():
    st = K.state
    prev = st.masks
    try:
        st.masks = (prev[0] | K.PYTHON, prev[1])
        assert st.masks == (prev[0] | K.PYTHON, prev[1])
        seen = []
        t = threading.Thread(target=lambda: seen.append(K.state.masks))
        t.start()
        t.join()
        assert seen == [(0, -1)]          # a new thread starts with nothing forced on
    finally:
        st.masks = prev
    assert st.masks == prev
    if _fastpath.C is not None:
        with pytest.raises(TypeError):
            st.masks = (1, 2, 3)


def test_no_grad_reaches_the_dispatcher():
    x = ember.ones(3, requires_grad=True)
    with ember.no_grad():
        assert (x * 2).grad_fn is None
    assert (x * 2).grad_fn.name() == "MulBackward0"


@compiled
def test_compiled_tensor_equals_python_make():
    from ember.runtime.storage import Storage
    st = Storage(np.zeros(4, np.uint8), 4, ember.device("cpu"))
    args = (st, (2, 2), (2, 1), 0, ember.uint8, ember.device("cpu"))
    c = _fastpath.C.new_tensor(*args)
    assert type(c) is ember.Tensor
    assert (c._storage, c._shape, c._stride, c._offset, c.dtype, c.device, c._native, c._ag) \
        == (st, (2, 2), (2, 1), 0, ember.uint8, ember.device("cpu"), None, None)
    assert c._ks == ember.device("cpu")._key
    assert not hasattr(c, "_view_base")
    p = ember.nn.Parameter._make(*args)
    assert type(p) is ember.nn.Parameter and p._shape == (2, 2)
    with pytest.raises(TypeError):
        _fastpath.C.make_tensor(int, *args)


@compiled
def test_compiled_wrap_matches_the_python_method():
    be = _registry.get("cpu")
    python_wrap = be.wrap.__self__[1]
    for arr in (np.arange(6, dtype=np.float32).reshape(2, 3),
                np.arange(12, dtype=np.int64).reshape(3, 4)[:, ::2],    # strided
                np.arange(5.0)[::-1],                                    # negative stride
                np.float64(3.0),                                         # not an ndarray
                np.zeros((0, 3), np.float16)):
        c = be.wrap(arr, ember.device("cpu"))
        p = python_wrap(arr, ember.device("cpu"))
        assert (c._shape, c._stride, c._offset, c.dtype) == (p._shape, p._stride, p._offset,
                                                             p.dtype)
        np.testing.assert_array_equal(c.numpy(), p.numpy())


@compiled
def test_calls_the_compiled_path_hands_back_to_python():
    add = get_op("add")
    a, b = ember.ones(3), ember.full((3,), 2.0)
    # keywords, and an untyped op, go through Op._call_python
    assert add(a, b, alpha=1, compute=ember.float32).tolist() == [3.0, 3.0, 3.0]
    assert Op._call_python(add, a, b, 1, ember.float32).tolist() == [3.0, 3.0, 3.0]
    # a Tensor[] argument
    assert ember.cat([a, b]).tolist() == [1.0, 1.0, 1.0, 2.0, 2.0, 2.0]


@compiled
def test_ieee_call_silences_numpy_only_inside():
    be = _registry.get("cpu")
    with np.errstate(all="raise"):
        assert np.isinf(be.ieee(np.divide, np.float32(1), np.float32(0)))
        with pytest.raises(FloatingPointError):
            np.divide(np.float32(1), np.float32(0))
    with pytest.raises(ZeroDivisionError):
        be.ieee(lambda: 1 / 0)
    assert np.geterr()["divide"] == "warn"


@compiled
def test_compiled_recorder_keeps_the_python_handler():
    x = ember.ones(2, requires_grad=True)
    (x * x).sum()
    handler = get_op("mul")._cache[x._ks | ember.device("cpu")._key]
    assert isinstance(handler, _fastpath.C.FormulaRecorder)
    assert handler.__name__ == "autograd_mul" and callable(handler.fallback)


@compiled
def test_compiled_native_view_matches_the_python_method():
    be = _registry.get("cpu")
    python_native = be.native.__self__     # the bound Python method it falls back to
    x = ember.arange(60.0).reshape(3, 4, 5)
    views = [x.permute(2, 0, 1), x[1:, ::2, 1:4], x[2:2], x.t() if x.ndim == 2 else x.mT,
             x.reshape(12, 5)[3], x.expand(2, 3, 4, 5)]
    for v in views:
        a = be.native(v)
        v2 = ember.Tensor._make(v._storage, v._shape, v._stride, v._offset, v.dtype, v.device)
        b = python_native(v2)
        assert a.shape == b.shape and a.strides == b.strides and a.flags.writeable
        np.testing.assert_array_equal(a, b)
        assert be.native(v) is a                # cached on the tensor


@compiled
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("batch, hidden", [(20, 200), (64, 64), (1, 3), (0, 5)])
def test_compiled_lstm_cell_backward_gives_the_references_bits(dtype, batch, hidden):
    from ember.kit.rnn import _lstm_cell_backward
    rng = np.random.default_rng(batch + hidden)
    gh, gcy, c = (rng.standard_normal((batch, hidden)).astype(dtype) for _ in range(3))
    ws = rng.random((batch, 5 * hidden)).astype(dtype)
    d, gc = np.empty((batch, 4 * hidden), dtype), np.empty((batch, hidden), dtype)
    d_ref, gc_ref = np.empty_like(d), np.empty_like(gc)
    assert _fastpath.C.lstm_cell_backward(gh, gcy, c, ws, d, gc) is True
    _lstm_cell_backward(np, gh, gcy, c, ws, d_ref, gc_ref)
    assert np.array_equal(d, d_ref) and np.array_equal(gc, gc_ref)


@compiled
def test_compiled_lstm_cell_backward_declines_other_layouts():
    a = np.zeros((4, 3), np.float32)
    ws, d = np.zeros((4, 15), np.float32), np.zeros((4, 12), np.float32)
    cell = _fastpath.C.lstm_cell_backward
    assert cell(a, a, a, ws, d, a) is True
    assert cell(a.T.copy().T, a, a, ws, d, a) is False                 # not C-contiguous
    assert cell(a.astype(np.float64), a, a, ws, d, a) is False         # mixed dtypes
    assert cell(a.astype(np.int32), a.astype(np.int32), a.astype(np.int32), ws, d, a) is False
    assert cell(a, a, a, ws[:, :10], d, a) is False                     # workspace not (B, 5H)
    assert cell(a, a, a, ws, d, a[:, :2]) is False


@compiled
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("batch, hidden", [(20, 200), (64, 64), (1, 3), (0, 5)])
def test_compiled_lstm_cell_gates_give_the_references_bits(monkeypatch, dtype, batch, hidden):
    """The step with ember._C and with the reference it replaces (signed zeros and the
    activations' ends included): the same activations, cell and hidden state, bit for bit."""
    from ember.kit import rnn
    rng = np.random.default_rng(batch + hidden)
    gates = (rng.standard_normal((batch, 4 * hidden)) * 4).astype(dtype)
    gates[:, ::7] = -0.0
    gates[:, 1::11] = 60.0     # tanh saturates
    c = rng.standard_normal((batch, hidden)).astype(dtype)
    scales = rnn._gate_scales(np, hidden, np.dtype(dtype))
    results = []
    for fast in (True, False):
        if not fast:
            monkeypatch.setattr(rnn, "_C", None)
        ws, cy, hy = (np.full((batch, k * hidden), np.nan, dtype) for k in (5, 1, 1))
        rnn._lstm_cell(np, gates.copy(), c, ws, cy, hy, scales)
        results.append((ws, cy, hy))
    for got, want in zip(*results):
        assert np.array_equal(got, want) and np.array_equal(np.signbit(got), np.signbit(want))


@compiled
def test_compiled_lstm_cell_gates_decline_other_layouts():
    t, ws = np.zeros((4, 12), np.float32), np.zeros((4, 15), np.float32)
    a = np.zeros((4, 3), np.float32)
    gates = _fastpath.C.lstm_cell_gates
    assert gates(t, a, ws, a) is True
    assert gates(t, a.T.copy().T, ws, a) is False                 # not C-contiguous
    assert gates(t.astype(np.float64), a, ws, a) is False         # mixed dtypes
    assert gates(t, a, ws[:, :10], a) is False                    # workspace not (B, 5H)
    assert gates(t[:, :8], a, ws, a) is False


def _col2im_reference(acc, cols, stride, dilation):
    import itertools
    kernel, out_sp = cols.shape[2:4], cols.shape[4:]
    for offset in itertools.product(*(range(k) for k in kernel)):
        region = tuple(slice(o * d, o * d + (m - 1) * s + 1, s) for o, d, m, s in
                       zip(offset, dilation, out_sp, stride))
        acc[(Ellipsis,) + region] += cols[(slice(None), slice(None)) + offset]


@compiled
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kernel, out, stride, dilation, strided_cols", [
    ((3, 3), (5, 4), (1, 1), (1, 1), False), ((4, 4), (6, 6), (2, 2), (1, 1), True),
    ((3, 2), (4, 5), (2, 3), (2, 1), False), ((1, 1), (3, 3), (1, 1), (1, 1), True)])
def test_compiled_col2im_gives_the_references_bits(dtype, kernel, out, stride, dilation,
                                                   strided_cols):
    rng = np.random.default_rng(sum(kernel + out))
    batch, channels = 2, 3
    if strided_cols:    # the whole-batch GEMM's layout: a transposed view
        cols = rng.standard_normal((channels,) + kernel + (batch,) + out).astype(dtype)
        cols = cols.transpose(3, 0, 1, 2, 4, 5)
    else:
        cols = rng.standard_normal((batch, channels) + kernel + out).astype(dtype)
    size = [(o - 1) * s + (k - 1) * d + 2 for o, s, k, d in zip(out, stride, kernel, dilation)]
    acc = rng.standard_normal((batch, channels, *size)).astype(dtype)
    want = acc.copy()
    _col2im_reference(want, cols, stride, dilation)
    assert _fastpath.C.col2im2d(acc, cols, stride, dilation) is True
    assert np.array_equal(acc, want)


@compiled
def test_compiled_col2im_declines_what_it_does_not_take():
    cols = np.ones((1, 2, 3, 3, 4, 4), np.float32)
    col2im = _fastpath.C.col2im2d
    assert col2im(np.zeros((1, 2, 6, 6), np.float32), cols, (1, 1), (1, 1)) is True
    assert col2im(np.zeros((1, 2, 5, 6), np.float32), cols, (1, 1), (1, 1)) is False  # too small
    assert col2im(np.zeros((1, 2, 6, 6), np.float64), cols, (1, 1), (1, 1)) is False  # dtypes
    assert col2im(np.zeros((1, 2, 6, 6), np.float32).transpose(0, 1, 3, 2), cols, (1, 1),
                  (1, 1)) is False                                       # acc not C-contiguous
    assert col2im(np.zeros((2, 2, 6, 6), np.float32), cols, (1, 1), (1, 1)) is False  # batch


@compiled
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_compiled_relu_and_its_backward_give_torchs_bits(dtype, monkeypatch):
    # -0.0 and NaN stay through relu, the backward keeps +0.0 where self <= 0 and a NaN self's
    # gradient: the compiled loops, the Python reference and torch agree bit for bit
    torch = pytest.importorskip("torch")
    from ember.kit import activation_backward
    from ember import _fastpath
    x = np.array([-1.5, -0.0, 0.0, 2.0, np.nan, -np.inf, np.inf, 1e-40] * 3, dtype)
    g = np.array([1, -2, 3, 4, 5, np.nan, -0.0, 7] * 3, dtype)
    t = torch.tensor(x, requires_grad=True)
    t.relu().backward(torch.tensor(g))
    expected = (t.relu().detach().numpy(), t.grad.numpy())
    for c in (_fastpath.C, None):
        monkeypatch.setattr(_fastpath, "C", c)
        monkeypatch.setattr(activation_backward, "_C", c)
        e = ember.tensor(x, requires_grad=True)
        y = e.relu()
        y.backward(ember.tensor(g))
        for got, want in zip((y.detach().numpy(), e.grad.numpy()), expected):
            assert got.tobytes() == want.tobytes()


@compiled
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
@pytest.mark.parametrize("numel", [7, 40000, 300000])
def test_compiled_axpy_gives_the_references_bits(dtype, numel, monkeypatch):
    # an optimizer's p.add_(buf, alpha=-lr): one compiled pass against the reference's
    # slices of alpha * buf, rounded the same way (no fused multiply-add)
    from ember.kit import foreach
    rng = np.random.default_rng(numel)
    p0 = rng.standard_normal(numel)
    buf = ember.tensor(rng.standard_normal(numel), dtype=dtype)
    results = []
    for c in (foreach._C, None):
        monkeypatch.setattr(foreach, "_C", c)
        p = ember.tensor(p0, dtype=dtype)
        ember._foreach_add_([p], [buf], alpha=-0.0123)
        results.append(p.numpy().tobytes())
    assert results[0] == results[1]
    dt = p.numpy().dtype
    assert not np.array_equal(np.frombuffer(results[0], dt), p0.astype(dt))   # it did add
    from ember._fastpath import C
    y = np.zeros(4, np.float32)
    assert C.axpy_(y, y, 2.0) is False                      # overlapping: the reference
    assert C.axpy_(y, np.zeros(4, np.float64), 2.0) is False  # dtypes differ


@compiled
@pytest.mark.parametrize("rows", [1, 17, 32, 5000])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("weighted", [False, True])
def test_compiled_nll_loss_gives_torchs_bits(rows, reduction, weighted):
    # csrc/nll_loss.c sums as torch's CPU kernel does (a cascade of partial sums), so loss and
    # gradient match torch's bits; ignored rows add nothing and get no gradient
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(rows)
    x = rng.standard_normal((rows, 10)).astype(np.float32)
    t = rng.integers(0, 10, rows)
    t[::5] = 3
    w = rng.random(10).astype(np.float32) if weighted else None
    results = []
    for lib in (torch, ember):
        xt = lib.tensor(x, requires_grad=True)
        loss = lib.nn.functional.nll_loss(xt, lib.tensor(t), None if w is None else lib.tensor(w),
                                          reduction=reduction, ignore_index=3)
        loss.backward()
        results.append((loss.detach().numpy().tobytes(), xt.grad.numpy().tobytes()))
    assert results[0] == results[1]


@compiled
def test_compiled_erf32_gives_the_references_bits(monkeypatch):
    # csrc/erf32.c evaluates kit/erf32.py's float64 rational approximation in the same
    # order (vectorized for the CPU it runs on, never fused): bit for bit, NaN and the clip too
    from ember import _fastpath
    from ember.kit import erf32

    class Host:
        xp = np

    rng = np.random.default_rng(11)
    x = np.concatenate([rng.uniform(-6, 6, 100003).astype(np.float32),
                        np.array([np.nan, np.inf, -np.inf, 0, -0.0, 4, -4, 3.9999], np.float32)])
    compiled = erf32.erf(Host, x)
    monkeypatch.setattr(_fastpath, "C", None)
    assert compiled.tobytes() == erf32.erf(Host, x).tobytes()


@compiled
@pytest.mark.parametrize("whole", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kernel, stride, dilation, groups", [
    ((3, 3), (1, 1), (1, 1), 1), ((2, 1), (2, 1), (1, 2), 2), ((1, 3), (2, 3), (2, 1), 1)])
def test_compiled_im2col_copies_the_references_columns(kernel, stride, dilation, groups, dtype,
                                                       whole, monkeypatch):
    from ember.kit import convolution
    z = np.random.default_rng(5).standard_normal((3, 4, 9, 10)).astype(dtype)
    out_sp = tuple((s - d * (k - 1) - 1) // st + 1
                   for s, k, st, d in zip(z.shape[2:], kernel, stride, dilation))
    compiled = convolution._columns(np, z, groups, kernel, stride, dilation, out_sp, whole)
    monkeypatch.setattr(convolution, "_C", None)
    reference = convolution._columns(np, z, groups, kernel, stride, dilation, out_sp, whole)
    assert compiled.shape == reference.shape
    np.testing.assert_array_equal(compiled, reference)


@compiled
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
@pytest.mark.parametrize("shape, kernel, stride, padding, dilation, ceil_mode", [
    ((2, 3, 8, 8), (2, 2), (2, 2), (0, 0), (1, 1), False),
    ((1, 2, 9, 7), (3, 3), (2, 2), (1, 1), (1, 1), True),
    ((2, 2, 10, 11), (3, 2), (1, 2), (1, 0), (2, 3), False),
    ((1, 1, 5, 5), (2, 2), (3, 3), (1, 1), (1, 1), True),
    ((2, 3, 26, 26), (2, 2), (2, 2), (0, 0), (1, 1), False),     # whole rows of windows
    ((1, 2, 13, 17), (3, 3), (2, 2), (1, 1), (1, 1), False),     # ResNet's stem pool
    ((1, 2, 12, 19), (2, 3), (1, 1), (0, 1), (1, 2), True)])
def test_compiled_max_pool2d_gives_the_references_values_and_indices(
        dtype, shape, kernel, stride, padding, dilation, ceil_mode, monkeypatch):
    from ember.kit import pooling
    rng = np.random.default_rng(sum(shape))
    x = rng.standard_normal(shape).round(1)     # ties: the first maximum must win
    x.reshape(-1)[::7] = -np.inf
    x.reshape(-1)[5::11] = np.nan               # NaN windows: the last NaN wins
    x.reshape(-1)[6::11] = np.nan
    t = ember.tensor(x, dtype=dtype)
    compiled = ember.nn.functional.max_pool2d(t, kernel, stride, padding, dilation, ceil_mode,
                                              return_indices=True)
    monkeypatch.setattr(pooling, "_C", None)
    reference = ember.nn.functional.max_pool2d(t, kernel, stride, padding, dilation, ceil_mode,
                                               return_indices=True)
    for a, b in zip(compiled, reference):
        assert a.shape == b.shape and a.dtype is b.dtype
        np.testing.assert_array_equal(a.numpy(), b.numpy())


@compiled
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_compiled_max_pool2d_backward_gives_the_references_gradient(dtype, monkeypatch):
    from ember.kit import pooling
    x = ember.tensor(np.random.default_rng(3).standard_normal((2, 3, 9, 8)), dtype=dtype,
                     requires_grad=True)
    g = ember.tensor(np.random.default_rng(4).standard_normal((2, 3, 4, 4)), dtype=dtype)
    grads = []
    for c in (pooling._C, None):
        monkeypatch.setattr(pooling, "_C", c)
        x.grad = None
        ember.nn.functional.max_pool2d(x, 2).backward(g)
        grads.append(x.grad.numpy())
    np.testing.assert_array_equal(grads[0], grads[1])
    assert np.count_nonzero(grads[0]) == g.numel()
    from ember._fastpath import C
    out = np.zeros((2, 5), np.float32)
    assert C.scatter_rows(out, np.array([[0, 5]] * 2), np.ones((2, 2), np.float32)) is False


@compiled
def test_compiled_collect_matches_the_python_reference():
    # Tensor[] ops record through collect: leaves, interior nodes, views, tensors that do not
    # require grad and absent optional arguments, in a list slot and in plain slots
    from types import SimpleNamespace
    from ember.autograd import record
    a = ember.randn(3, requires_grad=True)
    b = a * 2
    c = b[1:]
    args = ([a, b, ember.randn(3), c], a, None, ember.randn(2))
    slots = [(0, True), (1, False), (2, False), (3, False)]
    real_only = SimpleNamespace(formula=SimpleNamespace(complex_ok=False), op_name="demo")
    want = record.collect_reference(real_only, args, slots)   # holds a's accumulator alive
    got = record.collect(real_only, args, slots)
    assert got == want and len(got[0]) == 7 and got[0][2] is None
    assert got[0][0][0] is want[0][0][0] and got[0][3][0] is c._ag.grad_fn
    none = ([ember.randn(3)], ember.randn(3), None, None)
    assert record.collect(real_only, none, slots) is None
    assert record.collect_reference(real_only, none, slots) is None
    z = [ember.randn(2, dtype=ember.complex64, requires_grad=True)]
    for fn in (record.collect, record.collect_reference):
        with pytest.raises(NotImplementedError, match="derivative of 'demo'"):
            fn(real_only, (z,), [(0, True)])
        ok = SimpleNamespace(formula=SimpleNamespace(complex_ok=True), op_name="demo")
        assert fn(ok, (z,), [(0, True)])[1] == [((2,), ember.complex64, z[0].device)]


def test_recorded_views_and_setup_match_the_python_outputs():
    # the compiled recorder attaches a view's base and a formula's setup info itself; the
    # Python reference (record._outputs, run here on a fresh node) must give the same
    from ember.autograd import record
    x = ember.randn(3, 4, requires_grad=True)
    y = x.permute(1, 0)
    z = y[0]
    for out, args in ((y, (x, [1, 0])), (z, (y, 0, 0))):
        assert out._ag.base is x and out._ag.view_version == out._storage.version
        spec = out.grad_fn._spec
        twin = ember.Tensor._make(out._storage, out._shape, out._stride, out._offset,
                                  out.dtype, out.device)
        record._outputs(spec, type(out.grad_fn)([]), args, twin, spec.diff_out)
        assert twin._ag.base is out._ag.base and twin._ag.view_version == out._ag.view_version
    m = ember.randn(2, 3, requires_grad=True)
    w = ember.addmm(ember.randn(4), m, x)
    info, f = w.grad_fn._info, w.grad_fn._spec.formula
    assert f.setup is not None and info is not None
    assert info == f.setup(ember.randn(4), m, x, 1, 1)
    w.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.repeat(m.detach().numpy().sum(0)[:, None], 4, 1),
                               rtol=1e-6)


def test_a_tensor_list_op_may_be_the_first_recorded_op():
    # collect() once read a constant only a formula recorder's construction made: a fresh
    # process whose first recorded op was stack/cat of a leaf crashed
    out = _run("import ember\nv = ember.randn(1, requires_grad=True)\n"
               "y = ember.stack([v, v, v]).sum()\ny.backward()\nprint(v.grad.item())", pure=False)
    assert out.strip() == "3.0"

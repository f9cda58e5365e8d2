"""Autograd scenarios: values checked against PyTorch when it is installed, else against
hand-derived values; grad modes, hooks, graph freeing, in-place rules and their errors."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import ember
from ember.testing import assert_close

try:
    import torch
except ImportError:  # the hand-derived expectations below still run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed")


def t(values, grad=True, dtype=ember.float64):
    return ember.tensor(values, dtype=dtype, requires_grad=grad)


def close(a, b, **kw):
    assert_close(a.detach() if isinstance(a, ember.Tensor) else a,
                 ember.tensor(np.asarray(b.detach().numpy() if hasattr(b, "detach") else b),
                              dtype=a.dtype), **kw)


# -- basics ---------------------------------------------------------------------------------------
def test_leaf_and_graph_metadata():
    x = t([1.0, 2.0])
    assert x.is_leaf and x.requires_grad and x.grad_fn is None and x.grad is None
    y = x * 2 + 1
    assert not y.is_leaf and y.requires_grad
    assert y.grad_fn.name() == "AddBackward0"
    (mul, nr), (none, _) = y.grad_fn.next_functions
    assert mul.name() == "MulBackward0" and nr == 0 and none is None
    (acc, _), (scalar, _) = mul.next_functions
    assert acc.name() == "AccumulateGrad" and acc.variable is x and scalar is None
    assert (x > 0).requires_grad is False and (x > 0).grad_fn is None
    assert x.long().requires_grad is False
    assert y.output_nr == 0


def test_requires_grad_rules():
    with pytest.raises(RuntimeError, match="only Tensors of floating point and complex dtype"):
        ember.tensor([1, 2]).requires_grad_()
    y = t([1.0]) * 2
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf"):
        y.requires_grad = False
    x = ember.ones(2)
    x.requires_grad = True
    assert x.requires_grad and x.is_leaf
    x.requires_grad_(False)
    assert not (x * 2).requires_grad


def test_grad_accumulates_and_can_be_reset():
    x = t([1.0, 2.0, 3.0])
    (x * x).sum().backward()
    (x * 3).sum().backward()
    close(x.grad, [5.0, 7.0, 9.0])
    x.grad = None
    x.sum().backward()
    close(x.grad, [1.0, 1.0, 1.0])
    with pytest.raises(RuntimeError, match="different size"):
        x.grad = ember.zeros(2, dtype=ember.float64)


def test_gradient_argument_and_shape_errors():
    x = t([1.0, 2.0])
    y = x * x
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar"):
        y.backward()
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        y.backward(ember.ones(3, dtype=ember.float64))
    y.backward(ember.tensor([1.0, 0.5], dtype=ember.float64))
    close(x.grad, [2.0, 2.0])
    with pytest.raises(RuntimeError, match="does not require grad and does not have a grad_fn"):
        ember.ones(2).sum().backward()


def test_broadcast_gradients_are_reduced_to_input_shapes():
    a, b, c = t(np.ones((2, 3))), t(np.ones(3)), t(2.0)
    (a * b * c).sum().backward()
    assert a.grad.shape == (2, 3) and b.grad.shape == (3,) and c.grad.shape == ()
    close(b.grad, [4.0, 4.0, 4.0])
    close(c.grad, 6.0)
    assert ember.ones(2, 3).sum_to_size(3).tolist() == [2.0, 2.0, 2.0]


def test_mixed_dtypes_give_gradients_in_each_input_dtype():
    x = t([1.0, 2.0], dtype=ember.float32)
    y = t([3.0, 4.0])
    (x * y).sum().backward()
    assert x.grad.dtype is ember.float32 and y.grad.dtype is ember.float64
    close(x.grad, [3.0, 4.0])
    z = t([1.0, 2.0], dtype=ember.float32)
    (z.double() ** 2).sum().backward()
    assert z.grad.dtype is ember.float32
    close(z.grad, [2.0, 4.0])


def test_retain_graph_and_freed_graph_error():
    x = t([1.0, 2.0])
    y = (x.exp() * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    close(x.grad, 2 * (np.exp([1.0, 2.0]) * (1 + np.array([1.0, 2.0]))))
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()


def test_saved_tensor_modified_in_place_error():
    a = t([1.0, 2.0])
    b = a * 2
    c = b * b
    b.add_(1)
    with pytest.raises(RuntimeError) as e:
        c.sum().backward()
    msg = str(e.value)
    assert "one of the variables needed for gradient computation has been modified by an " \
           "inplace operation: [ember.DoubleTensor [2]], which is output 0 of MulBackward0, is " \
           "at version 1; expected version 0 instead." in msg


def test_leaf_in_place_errors():
    x = t([1.0, 2.0])
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in "
                                           "an in-place operation."):
        x.add_(1)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        x[0].mul_(2)
    with ember.no_grad():  # allowed without grad mode (optimizer steps)
        x.add_(1)
    close(x, [2.0, 3.0])


def test_in_place_on_non_leaf_rebases_history():
    x = t([1.0, 2.0])
    y = x * 2
    y.mul_(x)          # y = 2x^2
    y.add_(1).exp_()   # y = exp(2x^2 + 1)
    assert y.grad_fn.name() == "ExpBackward0"
    y.sum().backward()
    xv = np.array([1.0, 2.0])
    close(x.grad, np.exp(2 * xv ** 2 + 1) * 4 * xv)


def test_in_place_on_view_goes_through_copy_slices():
    x = t([[1.0, 2.0], [3.0, 4.0]])
    y = x * 1
    v = y[0]
    v.mul_(5)
    assert y.grad_fn.name() == "CopySlices"
    assert v.grad_fn.name() == "AsStridedBackward0"
    (y * y).sum().backward()
    close(x.grad, [[50.0, 100.0], [6.0, 8.0]])


def test_setitem_into_a_buffer_that_does_not_require_grad():
    w = t([1.0, 2.0])
    buf = ember.zeros(2, 2, dtype=ember.float64)
    buf[1] = w * 3
    assert buf.requires_grad and buf.grad_fn.name() == "CopySlices"
    (buf * buf).sum().backward()
    close(w.grad, [18.0, 36.0])


def test_views_see_in_place_changes_of_their_base():
    x = t([1.0, 2.0, 3.0])
    y = x * 1
    v = y[1:]          # made before the in-place op
    y.mul_(x)          # y = x^2
    v.sum().backward()
    close(x.grad, [0.0, 4.0, 6.0])


# -- grad modes -----------------------------------------------------------------------------------
def test_no_grad_enable_grad_set_grad_enabled_inference_mode():
    x = t([1.0])
    with ember.no_grad():
        assert not (x * 2).requires_grad and not ember.is_grad_enabled()
        with ember.enable_grad():
            assert (x * 2).requires_grad
    assert ember.is_grad_enabled()
    with ember.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert (x * 2).requires_grad
    ember.set_grad_enabled(False)
    try:
        assert not (x * 2).requires_grad
    finally:
        ember.set_grad_enabled(True)
    with ember.inference_mode():
        assert ember.is_inference_mode_enabled() and not (x * 2).requires_grad
    assert not ember.is_inference_mode_enabled()


def test_grad_modes_as_decorators():
    x = t([1.0])

    @ember.no_grad()
    def f(a):
        return a * 2

    @ember.inference_mode()
    def g(a):
        return a * 2

    @ember.set_grad_enabled(False)
    def h(a):
        return a * 2

    @ember.no_grad
    def bare(a):
        return a * 2

    @ember.inference_mode
    def bare_inference(a):
        return a * 2

    @ember.no_grad()
    def gen(a):
        yield a * 2
        yield a * 3

    assert not f(x).requires_grad and not g(x).requires_grad and not h(x).requires_grad
    assert not bare(x).requires_grad and not bare_inference(x).requires_grad
    assert all(not r.requires_grad for r in gen(x))
    assert (x * 2).requires_grad and ember.is_grad_enabled()


def test_grad_mode_is_thread_local():
    x = t([1.0])
    seen = {}
    inside = threading.Event()
    release = threading.Event()

    def worker():
        with ember.no_grad():
            inside.set()
            release.wait(5)
            seen["worker"] = (x * 2).requires_grad

    th = threading.Thread(target=worker)
    th.start()
    inside.wait(5)
    seen["main"] = (x * 2).requires_grad   # the other thread is inside no_grad right now
    release.set()
    th.join()
    assert seen == {"main": True, "worker": False}
    fresh = {}
    th = threading.Thread(target=lambda: fresh.setdefault("ok", (x * 2).requires_grad))
    with ember.no_grad():
        th.start()
        th.join()
    assert fresh["ok"] is True   # a new thread starts with grad enabled, as in PyTorch


# -- higher order -------------------------------------------------------------------------------
def test_third_derivative_of_a_polynomial():
    x = t(2.0)
    y = x ** 4 + 3 * x ** 3
    (g1,) = ember.autograd.grad(y, x, create_graph=True)
    (g2,) = ember.autograd.grad(g1, x, create_graph=True)
    (g3,) = ember.autograd.grad(g2, x)
    close(g1, 4 * 8 + 9 * 4)
    close(g2, 12 * 4 + 18 * 2)
    close(g3, 24 * 2 + 18)
    assert not g3.requires_grad


def test_hessian_vector_product():
    w = t([1.0, 2.0, 3.0])
    f = (w ** 3).sum() + (w[0] * w[1])
    (g,) = ember.autograd.grad(f, w, create_graph=True)
    v = ember.tensor([1.0, 0.0, 1.0], dtype=ember.float64)
    (hv,) = ember.autograd.grad(g, w, grad_outputs=v)
    # H = diag(6w) + [[0,1,0],[1,0,0],[0,0,0]]
    close(hv, [6.0, 1.0, 18.0])


def _penalty_step(lib, w0, x0):
    w = lib.tensor(w0, dtype=lib.float64, requires_grad=True)
    x = lib.tensor(x0, dtype=lib.float64, requires_grad=True)
    out = (lib.tanh(x @ w) ** 2).sum()
    (gx,) = lib.autograd.grad(out, x, create_graph=True)
    loss = out + ((gx.norm(2, dim=1) - 1) ** 2).mean()
    loss.backward()
    with lib.no_grad():
        w -= 0.1 * w.grad
    return w.detach().numpy(), loss.item()


def test_gradient_penalty_step():
    rng = np.random.default_rng(0)
    w0, x0 = rng.standard_normal((3, 2)), rng.standard_normal((4, 3))
    w, loss = _penalty_step(ember, w0, x0)
    if torch is not None:
        tw, tloss = _penalty_step(torch, w0, x0)
        np.testing.assert_allclose(w, tw, rtol=1e-10)
        np.testing.assert_allclose(loss, tloss, rtol=1e-10)
    else:
        assert np.isfinite(w).all() and not np.allclose(w, w0)


@needs_torch
def test_mlp_gradients_match_torch():
    rng = np.random.default_rng(1)
    xs = rng.standard_normal((5, 4))
    w1, b1 = rng.standard_normal((4, 6)), rng.standard_normal(6)
    w2, b2 = rng.standard_normal((6, 3)), rng.standard_normal(3)
    labels = [0, 2, 1, 1, 0]

    def run(lib):
        p = [lib.tensor(a, dtype=lib.float64, requires_grad=True) for a in (w1, b1, w2, b2)]
        h = (lib.tensor(xs, dtype=lib.float64) @ p[0] + p[1]).relu()
        logp = (h @ p[2] + p[3]).log_softmax(1)
        loss = -logp[lib.arange(5), lib.tensor(labels)].mean()
        loss.backward()
        return [q.grad.numpy() for q in p], loss.item()

    got, loss = run(ember)
    ref, tloss = run(torch)
    assert abs(loss - tloss) < 1e-12
    for g, r in zip(got, ref):
        np.testing.assert_allclose(g, r, rtol=1e-10, atol=1e-12)


# -- hooks, retain_grad, detach -----------------------------------------------------------------
def test_hooks_replace_gradients_and_can_be_removed():
    x = t([1.0, 2.0])
    h = x.register_hook(lambda g: g * 10)
    (x * 2).sum().backward()
    close(x.grad, [20.0, 20.0])
    h.remove()
    x.grad = None
    (x * 2).sum().backward()
    close(x.grad, [2.0, 2.0])
    y = x * 3
    seen = []
    y.register_hook(lambda g: seen.append(g.tolist()))
    y.register_hook(lambda g: g + 1)
    x.grad = None
    (y * y).sum().backward()
    assert seen == [[6.0, 12.0]]
    close(x.grad, [21.0, 39.0])
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        ember.ones(1).register_hook(lambda g: g)


def test_node_hooks_and_post_accumulate_hook():
    x = t([1.0, 2.0])
    y = x * 2
    calls = []
    y.grad_fn.register_prehook(lambda gout: calls.append("pre"))
    y.grad_fn.register_hook(lambda gin, gout: (gin[0] * 0,))
    x.register_post_accumulate_grad_hook(lambda p: calls.append(p.grad.tolist()))
    y.sum().backward()
    assert calls == ["pre", [0.0, 0.0]]


def test_retain_grad():
    x = t([1.0, 2.0])
    y = x * 3
    y.retain_grad()
    assert y.retains_grad and not x.retains_grad
    z = y * 2
    with pytest.warns(UserWarning, match="not a leaf Tensor"):
        assert z.grad is None
    (y * y).sum().backward()
    close(y.grad, [6.0, 12.0])
    close(x.grad, [18.0, 36.0])


def test_detach_and_data():
    x = t([1.0, 2.0])
    y = x * 2
    d = y.detach()
    assert not d.requires_grad and d.grad_fn is None and d.data_ptr() == y.data_ptr()
    z = (d * x).sum()
    z.backward()
    close(x.grad, [2.0, 4.0])
    y2 = x * 2
    y2.detach_()
    assert not y2.requires_grad and y2.is_leaf
    with pytest.raises(RuntimeError, match="Can't detach views in-place"):
        (x * 1)[0].detach_()
    with ember.no_grad():
        x.data.mul_(0)
    close(x, [0.0, 0.0])
    x.data = ember.tensor([5.0, 6.0], dtype=ember.float64)
    assert x.requires_grad and x.tolist() == [5.0, 6.0]


# -- autograd.grad and backward(inputs=) --------------------------------------------------------
def test_autograd_grad_options():
    x, y = t([1.0, 2.0]), t([3.0, 4.0])
    u = t([0.0])
    z = (x * y).sum()
    gx, gy = ember.autograd.grad(z, (x, y), retain_graph=True)
    close(gx, [3.0, 4.0])
    close(gy, [1.0, 2.0])
    assert x.grad is None
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
        ember.autograd.grad(z, [x, u], retain_graph=True)
    gx, gu = ember.autograd.grad(z, [x, u], retain_graph=True, allow_unused=True)
    assert gu is None
    gx, gu = ember.autograd.grad(z, [x, u], retain_graph=True, materialize_grads=True)
    close(gu, [0.0])
    with pytest.raises(RuntimeError, match="does not require grad"):
        ember.autograd.grad(z, ember.ones(2), retain_graph=True)
    # a non-leaf input: the gradient flowing into it
    w = x * 2
    (gw,) = ember.autograd.grad((w * w).sum(), w)
    close(gw, [4.0, 8.0])


def test_backward_with_inputs_only_fills_those():
    x, y = t([1.0, 2.0]), t([3.0, 4.0])
    m = x * y
    m.retain_grad()
    (m * 2).sum().backward(inputs=[x, m])
    close(x.grad, [6.0, 8.0])
    close(m.grad, [2.0, 2.0])
    assert y.grad is None


def test_multiple_roots_and_shared_subgraph():
    x = t([1.0, 2.0])
    h = x.exp()
    a, b = h.sum(), (h * h).sum()
    ember.autograd.backward([a, b])
    e = np.exp([1.0, 2.0])
    close(x.grad, e + 2 * e * e)


def test_gradients_never_alias_between_leaves():
    a, b = t([1.0, 2.0]), t([3.0, 4.0])
    (a + b).sum().backward()
    (a + b).sum().backward()
    close(a.grad, [2.0, 2.0])
    close(b.grad, [2.0, 2.0])
    assert a.grad.data_ptr() != b.grad.data_ptr()
    g = ember.ones(2, dtype=ember.float64)
    c = t([1.0, 1.0])
    c.backward(g)
    c.backward(g)
    close(g, [1.0, 1.0])   # accumulation never writes into the caller's gradient


# -- anomaly detection --------------------------------------------------------------------------
def test_detect_anomaly_names_the_forward_op():
    x = t([0.0, 1.0])
    with pytest.warns(UserWarning):
        with ember.autograd.detect_anomaly():
            y = x.sqrt()           # d sqrt / dx = inf at 0; times 0 gives nan
            z = (y * 0).sum()
            with pytest.raises(RuntimeError, match="Function 'SqrtBackward0' returned nan "
                                                   "values in its 0th output.*'Sqrt'"):
                z.backward()
    assert not ember.autograd.is_anomaly_enabled()
    z = (x.sqrt() * 0).sum()
    z.backward()     # without anomaly mode the nan just flows
    assert np.isnan(x.grad.numpy(force=True)[0])


def test_derivative_not_implemented_is_reported_at_backward():
    # linalg_ldl_factor_ex has no derivative (as in PyTorch)
    x = t([[3.0, 1.0], [1.0, 2.0]])
    LD = ember.linalg.ldl_factor_ex(x)[0]
    assert LD.requires_grad and LD.grad_fn.name() == "NotImplemented"
    with pytest.raises(NotImplementedError, match="the derivative for 'linalg_ldl_factor_ex' is "
                                                  "not implemented"):
        LD.sum().backward()


def test_complex_gradients_follow_pytorch_convention():
    z = ember.tensor([1 + 2j, 3 - 1j], requires_grad=True)
    w = ember.tensor([0.5 - 1j, 2 + 0j], requires_grad=True)
    # |z|^2 has gradient 2z in PyTorch's (conjugate Wirtinger) convention
    (z * z.conj_physical()).sum().backward(ember.tensor(1 + 0j))
    close(z.grad, np.array([2 + 4j, 6 - 2j]))
    out = (w.exp() * z / w).sum()
    out.backward(ember.tensor(1 - 1j))
    if torch is not None:
        tz = torch.tensor([1 + 2j, 3 - 1j], requires_grad=True)
        tw = torch.tensor([0.5 - 1j, 2 + 0j], requires_grad=True)
        (tz * tz.conj_physical()).sum().backward(torch.tensor(1 + 0j))
        (tw.exp() * tz / tw).sum().backward(torch.tensor(1 - 1j))
        close(z.grad, tz.grad.numpy())
        close(w.grad, tw.grad.numpy())


def test_view_made_in_no_grad_then_modified_in_place_is_refused():
    x = t([1.0, 2.0])
    y = x * 1
    with ember.no_grad():
        v = y[0]
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode"):
        v.mul_(t(2.0))


def test_in_place_on_an_op_output_that_aliases_a_temporary():
    # logsumexp's implementation returns a view of an internal tensor: to autograd it is a new
    # tensor, so an in-place op on it keeps its history (and the saved result is checked)
    x = t([[1.0, 2.0], [0.5, -1.0]])
    y = x.logsumexp(1)
    y.mul_(2)
    with pytest.raises(RuntimeError, match="output 0 of LogsumexpBackward0"):
        y.sum().backward()
    z = x.logsumexp(1)
    w = z * 1
    w.mul_(2)
    w.sum().backward()
    e = np.exp([[1.0, 2.0], [0.5, -1.0]])
    close(x.grad, 2 * e / e.sum(1, keepdims=True))


def _other_devices():
    found = []
    for name in ember._registry.names():
        if name == "cpu":
            continue
        try:
            if getattr(ember, name).is_available():
                found.append(name)
        except Exception:  # a backend that fails to load is the conformance suite's business
            continue
    return found


@pytest.mark.parametrize("device", _other_devices() or [
    pytest.param("none", marks=pytest.mark.skip(reason="no non-CPU backend available"))])
def test_gradients_stay_on_the_device(device):
    rng = np.random.default_rng(3)
    xs, ws = rng.standard_normal((3, 2)), rng.standard_normal(2)

    def run(dev):
        x = ember.tensor(xs, dtype=ember.float32, device=dev, requires_grad=True)
        w = ember.tensor(ws, dtype=ember.float32, device=dev, requires_grad=True)
        y = ((x @ w).tanh() * x.sum(1)).log_softmax(0)
        y[0].backward()
        return x.grad, w.grad

    with _no_fail():
        gx, gw = run(device)
    assert gx.device.type == device and gw.device.type == device
    cx, cw = run("cpu")
    if not ember._registry.get(device).has_data:   # the meta device: shapes and dtypes only
        assert [(g.shape, g.dtype) for g in (gx, gw)] == [(g.shape, g.dtype) for g in (cx, cw)]
        return
    assert_close(gx.cpu(), cx, rtol=1e-4, atol=1e-5)
    assert_close(gw.cpu(), cw, rtol=1e-4, atol=1e-5)


class _no_fail:
    """Backends may warn about CPU fallbacks; that is not what this test checks."""

    def __enter__(self):
        import warnings
        self._ctx = warnings.catch_warnings()
        self._ctx.__enter__()
        warnings.simplefilter("ignore")

    def __exit__(self, *exc):
        self._ctx.__exit__(*exc)


def test_backward_inputs_runs_leaf_hooks_once():
    x, y = t([1.0, 2.0]), t([3.0, 4.0])
    calls = []
    x.register_hook(lambda g: calls.append(1))
    (x * y).sum().backward(inputs=[x])
    assert calls == [1] and y.grad is None
    close(x.grad, [3.0, 4.0])


NAMED = {
    "AddBackward0": lambda x: x + x, "SubBackward0": lambda x: x - 1,
    "MulBackward0": lambda x: x * x, "DivBackward0": lambda x: x / 2,
    "MeanBackward0": lambda x: x.mean(), "MeanBackward1": lambda x: x.mean(1),
    "SumBackward0": lambda x: x.sum(), "SumBackward1": lambda x: x.sum(0),
    "ExpBackward0": lambda x: x.exp(), "ViewBackward0": lambda x: x.view(6),
    "PermuteBackward0": lambda x: x.permute(1, 0), "ExpandBackward0": lambda x: x[:1].expand(2, 3),
    "SliceBackward0": lambda x: x[:, 1:], "SelectBackward0": lambda x: x[0],
    "UnsqueezeBackward0": lambda x: x.unsqueeze(0), "PowBackward0": lambda x: x ** 2,
    "MmBackward0": lambda x: x @ x.t(), "CatBackward0": lambda x: ember.cat([x, x]),
    "IndexBackward0": lambda x: x[ember.tensor([0, 1])], "LogSoftmaxBackward0":
    lambda x: x.log_softmax(1), "SoftmaxBackward0": lambda x: x.softmax(1),
    "MaxBackward0": lambda x: x.max(1).values, "MaxBackward1": lambda x: x.max(),
    "ReluBackward0": lambda x: x.relu(), "WhereBackward0": lambda x: ember.where(x > 0, x, 0.0),
    "ToCopyBackward0": lambda x: x.float(), "CloneBackward0": lambda x: x.clone(),
    "GatherBackward0": lambda x: x.gather(1, ember.tensor([[0], [1]])),
    "SortBackward0": lambda x: x.sort().values, "ClampBackward1": lambda x: x.clamp(0, 1),
    "AddmmBackward0": lambda x: ember.nn.functional.linear(x, x, x[:, 0]),
}


@pytest.mark.parametrize("name", sorted(NAMED))
def test_node_names_follow_pytorch(name):
    x = t(np.arange(6.0).reshape(2, 3))
    assert NAMED[name](x).grad_fn.name() == name


def _model(lib, a, b, c):
    """Views, in-place ops on views, setitem, indexing, sorting, scans and reductions."""
    h = (a @ b + c).tanh()
    h2 = h.clone()
    h2[1:3] = h2[1:3] * 2 - h[:2].exp()
    h2[:, 0].mul_(c[1])
    m = h2.max(1).values + h2.logsumexp(0).sum()
    z = lib.cat([h2.flip(0), h2.t().reshape(4, 3)], 0)
    sel = z[lib.tensor([0, 3, 5, 7])].softmax(1)
    g = sel.gather(1, lib.tensor([[2], [0], [1], [1]])).squeeze(1)
    srt = (h2.sum(0) * b[0]).sort(descending=True).values
    out = (m * g).sum() + srt.cumsum(0).prod() + z.var(0).norm() + h2.diagonal().pow(2).sum()
    w = out * 1
    w += (a.abs() + 1).log().mean()
    return w


@needs_torch
def test_model_first_and_second_order_gradients_match_torch():
    rng = np.random.default_rng(5)
    arrays = rng.standard_normal((4, 5)), rng.standard_normal((5, 3)), rng.standard_normal(3)
    results = []
    for lib in (ember, torch):
        a, b, c = (lib.tensor(x, dtype=lib.float64, requires_grad=True) for x in arrays)
        w = _model(lib, a, b, c)
        grads = lib.autograd.grad(w, (a, b, c), create_graph=True)
        sum((g * g).sum() for g in grads).backward()
        results.append([w.item()] + [g.detach().numpy() for g in grads] +
                       [x.grad.numpy() for x in (a, b, c)])
    for got, ref in zip(*results):
        np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("fn", ["log1p", "expm1", "log2", "exp2", "special.i0e", "special.i1e",
                                "special.ndtri", "deg2rad"])
def test_node_names_follow_torchs_codegen(fn):
    # torch titles each part of the op's name: a letter after a digit is upper case (Log1P)
    torch = pytest.importorskip("torch")

    def call(lib):
        f = lib
        for part in fn.split("."):
            f = getattr(f, part)
        x = lib.tensor([0.25, 0.5], dtype=lib.float64, requires_grad=True)
        node = f(x).grad_fn
        return node.name() if lib is ember else type(node).__name__
    assert call(ember) == call(torch)

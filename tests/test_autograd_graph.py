"""ember.autograd.graph against torch.autograd.graph: saved-tensor hooks (what is packed, the
gradients through them, their errors), save_on_cpu, disable_saved_tensors_hooks, gradient
edges, increment_version and multi-grad hooks — on the compiled path and the pure-Python one."""
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

A = np.array([0.5, -1.25, 2.0])
B = np.array([1.5, 0.25, -0.75])


def leaves(L):
    return (L.tensor(A, dtype=L.float64, requires_grad=True),
            L.tensor(B, dtype=L.float64, requires_grad=True))


PROGRAMS = {
    "mul_exp": lambda a, b: ((a * b).exp() * a).sum(),
    "matmul_tanh": lambda a, b: (a.unsqueeze(1) @ b.unsqueeze(0)).tanh().sum(),
    "sigmoid_sin": lambda a, b: (a.sigmoid() * a.cos() + b.sin() * b).sum(),
}


def run_with_hooks(L, program, pack_clone=True):
    """(what each pack hook saw, the gradients) with clone-packing hooks on."""
    a, b = leaves(L)
    seen = []

    def pack(x):
        seen.append((tuple(x.shape), x.requires_grad, L.is_grad_enabled()))
        return x.clone() if pack_clone else x

    def unpack(x):
        return x

    with L.autograd.graph.saved_tensors_hooks(pack, unpack):
        out = PROGRAMS[program](a, b)
    ga, gb = L.autograd.grad(out, (a, b))
    return sorted(seen), ga.detach().numpy(), gb.detach().numpy()


@pytest.mark.parametrize("program", list(PROGRAMS))
def test_pack_sees_what_torch_saves_and_gradients_match(program):
    e_seen, *e_grads = run_with_hooks(ember, program)
    t_seen, *t_grads = run_with_hooks(torch, program)
    assert e_seen == t_seen
    for e, t in zip(e_grads, t_grads):
        np.testing.assert_allclose(e, t, rtol=1e-12)


def test_double_backward_through_hooks():
    results = []
    for L in (ember, torch):
        x = L.tensor([1.0, 2.0, -0.5], dtype=L.float64, requires_grad=True)
        with L.autograd.graph.saved_tensors_hooks(lambda t: t.clone(), lambda t: t):
            y = (x ** 3 * x.sin()).sum()
        (g,) = L.autograd.grad(y, x, create_graph=True)
        (gg,) = L.autograd.grad(g.sum(), x)
        results.append((g.detach().numpy(), gg.numpy()))
    for e, t in zip(*results):
        np.testing.assert_allclose(e, t, rtol=1e-12)


def test_unpacked_value_is_used_and_not_version_checked():
    """With hooks, an in-place change after saving is not caught (torch skips the check); the
    gradient reads what unpack returns."""
    results = []
    for L in (ember, torch):
        a = L.tensor(A, dtype=L.float64, requires_grad=True)
        b = a * 1
        with L.autograd.graph.saved_tensors_hooks(lambda t: t.clone(), lambda t: t * 2):
            y = (b * b).sum()
        with L.no_grad():
            b.mul_(10)
        y.backward()
        results.append(a.grad.numpy())
    np.testing.assert_allclose(*results)


def test_custom_function_saved_tensors_go_through_hooks():
    counts = []
    for L in (ember, torch):
        class Square(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return 2 * x * g

        calls = []
        x = L.tensor(A, dtype=L.float64, requires_grad=True)
        with L.autograd.graph.saved_tensors_hooks(lambda t: calls.append("p") or t,
                                                  lambda t: calls.append("u") or t):
            y = Square.apply(x).sum()
        y.backward()
        counts.append((calls.count("p") >= 1, calls.count("u") >= 1, x.grad.numpy().tolist()))
    assert counts[0] == counts[1]


def _message(L, fn):
    with pytest.raises(Exception) as info:
        fn(L)
    return type(info.value), str(info.value).replace("ember", "torch")


def _unpack_not_a_tensor(L):
    a, _ = leaves(L)
    with L.autograd.graph.saved_tensors_hooks(lambda x: x, lambda x: 3):
        y = (a * a).sum()
    y.backward()


def _pack_in_place(L):
    a, _ = leaves(L)
    b = a * 1
    with L.autograd.graph.saved_tensors_hooks(lambda x: x.add_(1), lambda x: x):
        (b * b).sum()


def _enter_while_disabled(L):
    with L.autograd.graph.disable_saved_tensors_hooks("no hooks here"):
        with L.autograd.graph.saved_tensors_hooks(lambda x: x, lambda x: x):
            pass


def _disable_while_active(L):
    with L.autograd.graph.saved_tensors_hooks(lambda x: x, lambda x: x):
        with L.autograd.graph.disable_saved_tensors_hooks("hooks are on"):
            pass


def _backward_twice(L):
    a, _ = leaves(L)
    with L.autograd.graph.saved_tensors_hooks(lambda x: x.clone(), lambda x: x):
        y = (a * a).sum()
    y.backward()
    y.backward()


@pytest.mark.parametrize("fn", [_unpack_not_a_tensor, _pack_in_place, _enter_while_disabled,
                                _disable_while_active, _backward_twice])
def test_errors_match_torch(fn):
    assert _message(ember, fn) == _message(torch, fn)


def test_disable_restores_and_hooks_stay_per_thread():
    with ember.autograd.graph.disable_saved_tensors_hooks("outer"):
        with ember.autograd.graph.disable_saved_tensors_hooks("inner"):
            pass
        with pytest.raises(RuntimeError, match="outer"):
            ember.autograd.graph.saved_tensors_hooks(lambda x: x, lambda x: x).__enter__()
    calls = []
    a, _ = leaves(ember)
    with ember.autograd.graph.saved_tensors_hooks(lambda x: calls.append(1) or x, lambda x: x):
        t = threading.Thread(target=lambda: a * a)
        t.start()
        t.join()
    assert calls == []          # torch's hooks are thread-local too
    y = (a * a).sum()           # and gone after the block
    assert calls == []
    y.backward()


@pytest.mark.parametrize("device", ["cpu", "opencl"])
def test_save_on_cpu(device):
    devices = []
    x = ember.tensor(A, dtype=ember.float32, device=device, requires_grad=True)
    with ember.autograd.graph.save_on_cpu():
        y = (x.exp() * x).sum()
    real = ember.autograd.graph.saved_tensors_hooks.__init__

    def spy(self, pack, unpack):
        real(self, lambda t: devices.append(pack(t)[1].device.type) or pack(t), unpack)
    ember.autograd.graph.saved_tensors_hooks.__init__ = spy
    try:
        with ember.autograd.graph.save_on_cpu():
            y2 = (x.exp() * x).sum()
    finally:
        ember.autograd.graph.saved_tensors_hooks.__init__ = real
    assert devices and set(devices) == {"cpu"}
    (g,) = ember.autograd.grad(y, x)
    (g2,) = ember.autograd.grad(y2, x)
    assert g.device.type == device
    t = torch.tensor(A, dtype=torch.float32, requires_grad=True)
    with torch.autograd.graph.save_on_cpu():
        (t.exp() * t).sum().backward()
    np.testing.assert_allclose(g.cpu().numpy(), t.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(g2.cpu().numpy(), t.grad.numpy(), rtol=1e-6)


def test_gradient_edge_as_grad_input():
    results = []
    for L in (ember, torch):
        a, _ = leaves(L)
        b = a.exp()
        edge = L.autograd.graph.get_gradient_edge(b)
        assert edge.node is b.grad_fn and edge.output_nr == 0
        assert L.autograd.graph.get_gradient_edge(a).node.name().endswith("AccumulateGrad")
        y = (b * 3).sum()
        (gb,) = L.autograd.grad(y, edge, retain_graph=True)
        (gb2,) = L.autograd.grad(y, (edge,))
        results.append((gb.numpy(), gb2.numpy()))
    np.testing.assert_allclose(results[0][0], results[1][0])
    np.testing.assert_allclose(results[0][1], results[1][1])
    plain = ember.tensor(A)
    assert _message(ember, lambda L: L.autograd.graph.get_gradient_edge(plain)) == \
        _message(torch, lambda L: L.autograd.graph.get_gradient_edge(torch.tensor(A)))


def test_increment_version_makes_backward_raise():
    types = []
    for L in (ember, torch):
        a, _ = leaves(L)
        b = a * 1
        y = (b * b).sum()
        L.autograd.graph.increment_version(b)
        L.autograd.graph.increment_version([a])
        with pytest.raises(RuntimeError) as info:
            y.backward()
        types.append("modified by an inplace operation" in str(info.value))
        assert b._version == 1 if L is torch else True
    assert types == [True, True]


def multi_hook_trace(L, mode, which):
    a, b = leaves(L)
    c = L.tensor(B, dtype=L.float64, requires_grad=True)
    # hooks on non-leaves: torch refuses leaves under autograd.grad
    a1, b1, c1 = a * 1, b * 1, c * 1
    calls = []

    def fn(grads):
        if mode == "all":
            calls.append([None if g is None else g.numpy().round(6).tolist() for g in grads])
        else:
            calls.append(grads.numpy().round(6).tolist())
    handle = L.autograd.graph.register_multi_grad_hook((a1, b1, c1), fn, mode=mode)
    out = (a1 * b1).exp().sum() + (c1 * 2).sum()
    if which == "all":
        out.backward(retain_graph=True)
    else:
        L.autograd.grad(out, (a,), retain_graph=True)
    handle.remove()
    out.backward()
    return calls


@pytest.mark.parametrize("mode", ["all", "any"])
@pytest.mark.parametrize("which", ["all", "grad_a"])
def test_multi_grad_hook(mode, which):
    assert multi_hook_trace(ember, mode, which) == multi_hook_trace(torch, mode, which)


def test_multi_grad_hook_bad_mode():
    a, _ = leaves(ember)
    with pytest.raises(ValueError, match="Expects mode to be one of"):
        ember.autograd.graph.register_multi_grad_hook((a,), print, mode="some")


def test_pure_python_path_packs_the_same():
    """EMBER_PURE_PYTHON=1 (the reference the compiled recorder transcribes) packs as many
    tensors and gets the same gradients."""
    script = ("import ember, numpy as np\n"
              "a = ember.tensor([0.5, -1.25, 2.0], dtype=ember.float64, requires_grad=True)\n"
              "seen = []\n"
              "with ember.autograd.graph.saved_tensors_hooks(lambda x: seen.append(1) or "
              "x.clone(), lambda x: x):\n"
              "    y = ((a * a).exp() * a).sum()\n"
              "y.backward()\n"
              "print(len(seen), ember._fastpath.C is None, a.grad.numpy().round(8).tolist())\n")
    outs = []
    for pure in ("1", "0"):
        env = dict(os.environ, EMBER_PURE_PYTHON=pure)
        outs.append(subprocess.run([sys.executable, "-c", script], env=env, check=True,
                                   capture_output=True, text=True).stdout.split(" ", 2))
    assert outs[0][1] == "True"
    assert outs[0][0] == outs[1][0] and outs[0][2] == outs[1][2]

"""Recurrent layers and cells: outputs, final states and gradients against torch (optional),
finite differences (gradcheck) and independent compositions; parameters, init, errors, repr;
the fused step ops' dispatch count; every backend against the CPU."""
from __future__ import annotations

import math

import numpy as np
import pytest

import ember
from ember import nn
from ember.autograd import gradcheck

F64 = ember.float64


def close(a, b, rtol=1e-6, atol=1e-8):
    a = a.detach().cpu().numpy() if isinstance(a, ember.Tensor) else np.asarray(a)
    b = b.detach().cpu().numpy() if hasattr(b, "detach") else np.asarray(b)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def _pair(torch, cls, *args, **kwargs):
    """A torch module and an ember module with the same weights (float64)."""
    torch.manual_seed(0)
    tm = getattr(torch.nn, cls)(*args, **kwargs).double()
    em = getattr(nn, cls)(*args, **kwargs).double()
    em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    return tm, em


def _states(h):
    return tuple(h) if isinstance(h, tuple) else (h,)


CONFIGS = [
    ("LSTM", {}), ("GRU", {}), ("RNN", {}), ("RNN", {"nonlinearity": "relu"}),
    ("LSTM", {"num_layers": 2, "bidirectional": True}),
    ("GRU", {"num_layers": 3, "batch_first": True}),
    ("RNN", {"num_layers": 2, "bidirectional": True, "bias": False}),
    ("LSTM", {"proj_size": 3, "num_layers": 2, "bidirectional": True, "batch_first": True}),
    ("LSTM", {"bias": False, "proj_size": 2}),
]


@pytest.mark.parametrize("cls,kw", CONFIGS, ids=[f"{c}-{k}" for c, k in CONFIGS])
def test_layers_match_torch(cls, kw):
    torch = pytest.importorskip("torch")
    tm, em = _pair(torch, cls, 5, 7, **kw)
    shape = (3, 4, 5) if kw.get("batch_first") else (4, 3, 5)
    x = torch.randn(*shape, dtype=torch.float64, requires_grad=True)
    xe = ember.tensor(x.detach().numpy(), requires_grad=True)
    directions = 2 if kw.get("bidirectional") else 1
    layers = kw.get("num_layers", 1)
    h_size = kw.get("proj_size") or 7
    h0 = torch.randn(layers * directions, 3, h_size, dtype=torch.float64)
    c0 = torch.randn(layers * directions, 3, 7, dtype=torch.float64)
    hx = (h0, c0) if cls == "LSTM" else h0
    hxe = tuple(ember.tensor(t.numpy()) for t in _states(hx))
    hxe = hxe if cls == "LSTM" else hxe[0]
    for t_args, e_args in (((x,), (xe,)), ((x, hx), (xe, hxe))):
        to, th = tm(*t_args)
        eo, eh = em(*e_args)
        close(eo, to)
        assert eo.shape == tuple(to.shape)
        for a, b in zip(_states(eh), _states(th)):
            assert a.shape == tuple(b.shape)
            close(a, b)
    loss_t = (to * to).sum() + sum(h.sum() * (i + 2) for i, h in enumerate(_states(th)))
    loss_e = (eo * eo).sum() + sum(h.sum() * (i + 2) for i, h in enumerate(_states(eh)))
    loss_t.backward()
    loss_e.backward()
    close(xe.grad, x.grad)
    params = dict(em.named_parameters())
    for name, p in tm.named_parameters():
        close(params[name].grad, p.grad, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("cls", ["LSTM", "GRU", "RNN"])
def test_unbatched_input_matches_torch(cls):
    torch = pytest.importorskip("torch")
    tm, em = _pair(torch, cls, 4, 3, num_layers=2)
    x = torch.randn(6, 4, dtype=torch.float64)
    to, th = tm(x)
    eo, eh = em(ember.tensor(x.numpy()))
    assert eo.shape == (6, 3)
    close(eo, to)
    for a, b in zip(_states(eh), _states(th)):
        assert a.shape == (2, 3)
        close(a, b)


@pytest.mark.parametrize("cls,gates", [("RNNCell", 1), ("LSTMCell", 4), ("GRUCell", 3)])
def test_cells_match_torch(cls, gates):
    torch = pytest.importorskip("torch")
    tm, em = _pair(torch, cls, 5, 4)
    assert em.weight_ih.shape == (gates * 4, 5)
    x = torch.randn(3, 5, dtype=torch.float64, requires_grad=True)
    xe = ember.tensor(x.detach().numpy(), requires_grad=True)
    h = torch.randn(3, 4, dtype=torch.float64)
    state = (h, torch.randn(3, 4, dtype=torch.float64)) if cls == "LSTMCell" else h
    estate = tuple(ember.tensor(s.numpy()) for s in _states(state))
    estate = estate if cls == "LSTMCell" else estate[0]
    for t_out, e_out in ((tm(x, state), em(xe, estate)), (tm(x), em(xe)),
                         (tm(x[0]), em(xe[0]))):
        for a, b in zip(_states(e_out), _states(t_out)):
            assert a.shape == tuple(b.shape)
            close(a, b)
    sum(s.sum() for s in _states(tm(x, state))).backward()
    sum(s.sum() for s in _states(em(xe, estate))).backward()
    close(xe.grad, x.grad)
    params = dict(em.named_parameters())
    for name, p in tm.named_parameters():
        close(params[name].grad, p.grad)


def test_relu_cell_and_functional_cells_match_torch():
    torch = pytest.importorskip("torch")
    tm, em = _pair(torch, "RNNCell", 3, 4, nonlinearity="relu")
    x = torch.randn(2, 3, dtype=torch.float64)
    close(em(ember.tensor(x.numpy())), tm(x))
    args = [torch.randn(*s, dtype=torch.float64) for s in [(2, 3), (2, 4), (2, 4), (16, 3),
                                                           (16, 4), (16,), (16,)]]
    e = [ember.tensor(a.numpy()) for a in args]
    for a, b in zip(ember.lstm_cell(e[0], (e[1], e[2]), *e[3:]),
                    torch.lstm_cell(args[0], (args[1], args[2]), *args[3:])):
        close(a, b)


# -- parameters, init, state dicts, repr ---------------------------------------------------------
def test_parameter_names_shapes_and_state_dict_keys_match_torch():
    torch = pytest.importorskip("torch")
    for cls, kw in CONFIGS:
        tm = getattr(torch.nn, cls)(5, 7, **kw)
        em = getattr(nn, cls)(5, 7, **kw)
        assert [(k, tuple(v.shape)) for k, v in em.state_dict().items()] == \
            [(k, tuple(v.shape)) for k, v in tm.state_dict().items()]
        assert em._flat_weights_names == tm._flat_weights_names
        assert em._all_weights == tm._all_weights
        assert repr(em) == repr(tm)
    for cls in ("RNNCell", "LSTMCell", "GRUCell"):
        assert repr(getattr(nn, cls)(3, 4, bias=False)) == repr(getattr(torch.nn, cls)(3, 4,
                                                                                        bias=False))
    assert repr(nn.RNNCell(3, 4, nonlinearity="relu")) == "RNNCell(3, 4, nonlinearity=relu)"


def test_default_init_is_uniform_in_one_over_sqrt_hidden():
    ember.manual_seed(0)
    m = nn.LSTM(10, 64, num_layers=2, proj_size=16)
    bound = 1 / math.sqrt(64)
    for name, p in m.named_parameters():
        v = p.detach().numpy()
        assert np.abs(v).max() <= bound, name
        assert np.abs(v).max() > 0.8 * bound, name
    assert m.weight_hr_l0.shape == (16, 64) and m.weight_hh_l1.shape == (256, 16)
    assert nn.GRU(3, 4, dtype=F64).weight_ih_l0.dtype is F64
    m.flatten_parameters()   # accepted, does nothing
    assert len(m.all_weights) == 2 and len(m.all_weights[0]) == 5


def test_constructor_and_forward_errors_match_torch():
    with pytest.raises(ValueError, match="dropout should be a number in range"):
        nn.LSTM(3, 4, dropout=1.5)
    with pytest.raises(ValueError, match="proj_size has to be smaller than hidden_size"):
        nn.LSTM(3, 4, proj_size=4)
    with pytest.raises(ValueError, match="proj_size argument is only supported for LSTM"):
        nn.GRU(3, 4, proj_size=2)
    with pytest.raises(ValueError, match="Unknown nonlinearity 'sigmoid'"):
        nn.RNN(3, 4, nonlinearity="sigmoid")
    with pytest.raises(TypeError, match="hidden_size should be of type int, got: float"):
        nn.GRU(3, 4.0)
    with pytest.raises(ValueError, match="hidden_size must be greater than zero"):
        nn.GRU(3, 0)
    with pytest.raises(TypeError, match="bias should be of type bool"):
        nn.RNN(3, 4, bias=1)
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        nn.GRU(3, 4, dropout=0.2)
    m = nn.LSTM(3, 4, num_layers=2)
    with pytest.raises(RuntimeError, match=r"input.size\(-1\) must be equal to input_size. "
                                           r"Expected 3, got 5"):
        m(ember.randn(2, 1, 5))
    with pytest.raises(ValueError, match="LSTM: Expected input to be 2D or 3D, got 4D"):
        m(ember.randn(2, 1, 5, 3))
    with pytest.raises(RuntimeError, match=r"Expected hidden\[0\] size \(2, 1, 4\), got "
                                           r"\[2, 3, 4\]"):
        m(ember.randn(2, 1, 3), (ember.zeros(2, 3, 4), ember.zeros(2, 1, 4)))
    with pytest.raises(RuntimeError, match="For batched 3-D input, hx and cx should also be 3-D"):
        m(ember.randn(2, 1, 3), (ember.zeros(2, 4), ember.zeros(2, 4)))
    with pytest.raises(ValueError, match=r"RNN input dtype \(ember.float64\) does not match "
                                         r"weight dtype \(ember.float32\)"):
        m(ember.randn(2, 1, 3, dtype=F64))
    with pytest.raises(RuntimeError, match=r"Expected hidden size \(1, 2, 4\), got \[1, 3, 4\]"):
        nn.GRU(3, 4)(ember.randn(5, 2, 3), ember.zeros(1, 3, 4))
    with pytest.raises(ValueError, match="LSTMCell: Expected input to be 1D or 2D, got 3D"):
        nn.LSTMCell(3, 4)(ember.randn(1, 2, 3))
    with pytest.raises(RuntimeError, match="input has inconsistent input_size: got 2 expected 3"):
        nn.GRUCell(3, 4)(ember.randn(5, 2))


def test_step_op_errors_name_the_op():
    from ember.ops import rnn as R
    gx, h, c, w = ember.randn(3, 16), ember.randn(3, 4), ember.randn(3, 4), ember.randn(16, 4)
    with pytest.raises(RuntimeError, match=r"lstm_step: w_hh has shape \[16, 5\], expected "
                                           r"\[16, 4\]"):
        R.lstm_step_op.meta(gx, h, c, ember.randn(16, 5), None, None)
    with pytest.raises(RuntimeError, match="gru_step: gates_x has 16 columns, expected 3"):
        R.gru_step_op.meta(gx, h, w, None)
    with pytest.raises(RuntimeError, match="rnn_step: nonlinearity must be 'tanh' or 'relu'"):
        R.rnn_step_op.meta(h, h, ember.randn(4, 4), None, "sigmoid")
    assert R.lstm_step_op.meta(gx, h, c, w, None, None) == (((3, 4), ember.float32),
                                                           ((3, 4), ember.float32),
                                                           ((3, 20), ember.float32))


# -- maths without torch ---------------------------------------------------------------------------
@pytest.mark.parametrize("cls,kw", [("LSTM", {"proj_size": 2}), ("GRU", {}),
                                    ("RNN", {"nonlinearity": "relu"}),
                                    ("LSTM", {"bidirectional": True, "num_layers": 2})])
def test_layer_gradcheck(cls, kw):
    ember.manual_seed(1)
    m = getattr(nn, cls)(2, 3, dtype=F64, **kw)
    params = list(m.parameters())
    x = ember.randn(3, 2, 2, dtype=F64, requires_grad=True)

    def f(x, *ps):
        with _swapped(m, ps):
            out, h = m(x)
        return (out,) + _states(h)
    assert gradcheck(f, (x, *params))


class _swapped:
    """Run ``m`` with ``ps`` as its parameters (functional gradcheck over the weights)."""

    def __init__(self, m, ps):
        self.m, self.ps = m, ps

    def __enter__(self):
        self.saved = dict(self.m._parameters)
        for (name, _), p in zip(list(self.m._parameters.items()), self.ps):
            self.m._parameters[name] = p

    def __exit__(self, *exc):
        self.m._parameters.update(self.saved)


def test_lstm_matches_a_numpy_reference():
    ember.manual_seed(2)
    m = nn.LSTM(3, 4, dtype=F64)
    x = np.random.default_rng(0).standard_normal((5, 2, 3))
    out, (h, c) = m(ember.tensor(x))
    W = {k: v.detach().numpy() for k, v in m.state_dict().items()}
    hs, cs = np.zeros((2, 4)), np.zeros((2, 4))
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    for t in range(5):
        g = x[t] @ W["weight_ih_l0"].T + W["bias_ih_l0"] + hs @ W["weight_hh_l0"].T + \
            W["bias_hh_l0"]
        i, f, gg, o = np.split(g, 4, axis=1)
        cs = sig(f) * cs + sig(i) * np.tanh(gg)
        hs = sig(o) * np.tanh(cs)
        close(out[t], hs)
    close(h[0], hs)
    close(c[0], cs)


def test_dropout_between_layers():
    ember.manual_seed(3)
    two = nn.GRU(3, 4, num_layers=2, dropout=1.0, dtype=F64)
    top = nn.GRU(4, 4, dtype=F64)
    top.load_state_dict({k.replace("l1", "l0"): v for k, v in two.state_dict().items()
                         if k.endswith("l1")})
    x = ember.randn(5, 2, 3, dtype=F64)
    out, h = two(x)           # training: the second layer sees zeros
    ref, ref_h = top(ember.zeros(5, 2, 4, dtype=F64))
    close(out, ref)
    close(h[1], ref_h[0])
    two.eval()
    assert float((two(x)[0] - out).abs().max()) > 1e-3   # no dropout in eval mode


def test_double_backward_through_lstm():
    ember.manual_seed(4)
    m = nn.LSTM(2, 3, dtype=F64)
    x = ember.randn(3, 1, 2, dtype=F64, requires_grad=True)
    ember.autograd.gradgradcheck(lambda x: m(x)[0], (x,))


# -- dispatch count --------------------------------------------------------------------------------
def _ops_per_step(fn, steps):
    from ember.profiler import profile
    counts = []
    for t in steps:
        with profile() as prof:
            fn(t)
        counts.append(sum(1 for e in prof.events() if e.kind == "op" and e.cpu_parent is None))
    return (counts[1] - counts[0]) / (steps[1] - steps[0])


@pytest.mark.parametrize("cls", ["GRU", "RNN"])
def test_one_fused_op_per_time_step(cls):
    m = getattr(nn, cls)(8, 8)
    x = {t: ember.randn(t, 2, 8) for t in (4, 12)}

    def forward(t):
        with ember.no_grad():
            m(x[t])
    # each step: one fused step op (the projected inputs are split into steps by one op,
    # split_with_sizes, whatever the length)
    assert _ops_per_step(forward, (4, 12)) == 1

    def train(t):
        out, _ = m(x[t])
        out.sum().backward()
    # with autograd: the same forward, and per step in backward the fused backward op,
    # the weight gradients (a transpose view + matmul, a sum) and their accumulation (adds)
    assert _ops_per_step(train, (4, 12)) <= 12


def test_a_padded_lstm_layer_is_one_op():
    m = nn.LSTM(8, 8, num_layers=2, bidirectional=True)
    x = {t: ember.randn(t, 2, 8) for t in (4, 12)}

    def train(t):
        out, _ = m(x[t])
        out.sum().backward()
    # the steps run inside lstm_layer and lstm_layer_backward: no op is dispatched per step
    assert _ops_per_step(train, (4, 12)) == 0
    out, _ = m(x[4])
    assert out.grad_fn.name() == "ViewBackward0" or "Cat" in out.grad_fn.name()
    names = set()
    todo = [out.grad_fn]
    while todo:
        n = todo.pop()
        if n is not None and n.name() not in names:
            names.add(n.name())
            todo.extend(f for f, _ in n.next_functions)
    assert "MkldnnRnnLayerBackward0" in names and "LstmStepBackward0" not in names


# -- backends ----------------------------------------------------------------------------------------
def _backends():
    out = []
    if ember.opencl.is_available():
        out.append("opencl")
    return out


@pytest.mark.parametrize("device", _backends() or [pytest.param("opencl", marks=pytest.mark.skip(
    reason="opencl unavailable"))])
@pytest.mark.parametrize("cls,kw", [("LSTM", {"bidirectional": True, "proj_size": 2}),
                                    ("LSTM", {"bidirectional": True, "num_layers": 2}),
                                    ("GRU", {"num_layers": 2}), ("RNN", {"nonlinearity": "relu"})])
def test_layers_on_backend_match_cpu(device, cls, kw):
    from ember.nn.utils.rnn import pack_sequence, pad_packed_sequence
    ember.manual_seed(5)
    cpu = getattr(nn, cls)(3, 4, **kw)
    dev = getattr(nn, cls)(3, 4, **kw)
    dev.load_state_dict(cpu.state_dict())
    dev.to(device)
    seqs = [ember.randn(n, 3) for n in (5, 2, 4)]
    for inputs in ((ember.randn(6, 2, 3),), (pack_sequence(seqs, enforce_sorted=False),)):
        outs = []
        for m, d in ((cpu, "cpu"), (dev, device)):
            x = inputs[0].to(d)
            out, h = m(x)
            if not isinstance(out, ember.Tensor):
                out = pad_packed_sequence(out)[0]
            assert out.device.type == d
            (out.pow(2).sum() + sum(s.sum() for s in _states(h))).backward()
            outs.append((out, _states(h), {k: p.grad for k, p in m.named_parameters()}))
            m.zero_grad()
        (oc, hc, gc), (od, hd, gd) = outs
        close(od, oc, rtol=1e-4, atol=1e-5)
        for a, b in zip(hd, hc):
            close(a, b, rtol=1e-4, atol=1e-5)
        for k in gc:
            close(gd[k], gc[k], rtol=1e-4, atol=1e-4)


def test_layers_run_on_a_backend_without_kernels():
    """The step ops' composites: a backend with no rnn kernels runs them in ember ops."""
    from ember.ops import rnn as R
    from ember.runtime.registry import registry
    cpu = registry.get("cpu")
    saved = {name: cpu.kernels.get(name) for name in
             ("lstm_step", "lstm_step_backward", "gru_step", "gru_step_backward")}
    m = nn.LSTM(3, 4, dtype=F64)
    x = ember.randn(4, 2, 3, dtype=F64, requires_grad=True)
    out, (h, c) = m(x)
    out.sum().backward()
    want = (out.detach(), h.detach(), x.grad)
    x.grad = None
    try:
        for name in saved:
            del cpu.kernels._kernels[name]   # KernelTable has no public removal
        ember.dispatch.dispatcher.invalidate()
        assert cpu.kernels.get("lstm_step") is None
        out, (h, c) = m(x)
        out.sum().backward()
    finally:
        for name, k in saved.items():
            cpu.kernels.register(name, k)
        ember.dispatch.dispatcher.invalidate()
    for a, b in zip((out, h, x.grad), want):
        close(a, b, rtol=1e-10, atol=1e-12)
    assert R.lstm_step_op.composite is not None

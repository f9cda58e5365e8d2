"""Recurrent cell steps: one fused op per time step per cell type, with its derivative.

A recurrent layer projects the whole input sequence once (``x @ W_ih^T + b_ih``, one matmul up
front, as PyTorch does); what is left per time step is the hidden-to-hidden product and the gate
math. Each cell type does that as *one* dispatched op, so a step costs one dispatch instead of
the dozen a composition of ember ops would (matmul, adds, chunk, sigmoids, tanhs, products):

``lstm_step(gates_x, hx, cx, w_hh, b_hh, w_hr) -> (hy, cy, workspace)``
    gates = gates_x + hx @ w_hh^T + b_hh, split (i, f, g, o); c' = f*c + i*g;
    h' = o * tanh(c') (then @ w_hr^T with a projection, LSTM's proj_size). ``workspace`` holds
    the activated gates and tanh(c') (B, 5H) for the backward op; it has no gradient.
``gru_step(gates_x, hx, w_hh, b_hh) -> (hy, workspace)``
    PyTorch's GRU: r, z = sigmoid(x_rz + h_rz); n = tanh(x_n + r * h_n), with h = hx @ w_hh^T +
    b_hh; h' = n + z * (hx - n). ``workspace`` is (r, z, n, h_n), (B, 4H).
``rnn_step(gates_x, hx, w_hh, b_hh, nonlinearity) -> hy``
    h' = tanh or relu(gates_x + hx @ w_hh^T + b_hh).

``lstm_layer(gates_x, hx, cx, w_hh, b_hh, w_hr, steps, reverse) -> (output, hy, cy, cells,
workspace)``
    A whole padded LSTM layer direction: ``steps`` lstm_steps over the (steps * B, 4H) rows of
    ``gates_x``, B rows a step (last to first when ``reverse``), as *one* op and one autograd
    node (PyTorch's CPU LSTM is one MkldnnRnnLayer node a layer too). ``output`` holds every
    step's h', ``cells`` every step's c' and ``workspace`` every step's; its backward op walks
    the steps back with one fused cell backward each, and the weight gradients are one matmul
    over all steps, where per-step nodes made one matmul and one accumulation a step.

Their derivatives call a fused backward op per step (``*_step_backward``: the gate gradients
and the gradient of ``hx`` in one dispatch); the weight gradients are one matmul each. Every op
has a composite in ember ops, so a backend without kernels (a plug-in, the meta device) runs
them, and autograd differentiates the backward ops' composites for double backward. There,
the LSTM/GRU formulas recompute the workspace from the inputs with ember ops (the saved one is
a value without history).

The public functions are PyTorch's cell functions (``lstm_cell``, ``gru_cell``,
``rnn_tanh_cell``, ``rnn_relu_cell``: input projection + one step). The layers are in
``ember.nn.modules.rnn``; the kernels in ``ember.kit.rnn`` (array modules) and the OpenCL
backend's ``ops_rnn``.
"""
from __future__ import annotations

import numpy as np

from .. import _dtype
from .._tensor import Tensor
from ..dispatch import keys as _keys
from ..dispatch.dispatcher import define
from ..dispatch.facets import Derivative
from . import _grad
from . import linalg as _la
from . import shape as _shape

__all__ = ["lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell"]


# -- shape rules (meta) -----------------------------------------------------------------------
def _dims(op, name, t, ndim):
    if t.ndim != ndim:
        raise RuntimeError(f"{op}: expected {name} to be {ndim}-D, got shape {list(t.shape)}")
    return t._shape


def _same_dtype(op, *named):
    ref_name, ref = named[0]
    for name, t in named[1:]:
        if t is not None and t.dtype is not ref.dtype:
            raise RuntimeError(f"{op}: expected {name} to have dtype {ref.dtype} like "
                               f"{ref_name}, got {t.dtype}")
    if ref.dtype.category != _dtype.FLOATING:
        raise RuntimeError(f"{op}: expected floating-point tensors, got {ref.dtype}")


def _check_step(op, gates_x, hx, w_hh, b_hh, gates, steps=1):
    """(batch, hidden size, hx features) of a step's arguments (``gates_x`` holds ``steps``
    steps' rows, a layer's); errors name the op."""
    b, g = _dims(op, "gates_x", gates_x, 2)
    hb, p = _dims(op, "hx", hx, 2)
    if g % gates:
        raise RuntimeError(f"{op}: gates_x has {g} columns, expected {gates} * hidden_size")
    if steps < 1:
        raise RuntimeError(f"{op}: expected at least one step, got {steps}")
    if hb * steps != b:
        raise RuntimeError(f"{op}: hx has batch size {hb}, gates_x has {b}" if steps == 1 else
                           f"{op}: {b} rows of gates are not {steps} steps of hx's batch {hb}")
    if _dims(op, "w_hh", w_hh, 2) != (g, p):
        raise RuntimeError(f"{op}: w_hh has shape {list(w_hh.shape)}, expected {[g, p]} for "
                           f"gates_x {list(gates_x.shape)} and hx {list(hx.shape)}")
    if b_hh is not None and b_hh._shape != (g,):
        raise RuntimeError(f"{op}: b_hh has shape {list(b_hh.shape)}, expected {[g]}")
    return hb, g // gates, p


def _check_lstm(op, gates_x, hx, cx, w_hh, b_hh, w_hr, steps=1):
    """(batch, hidden size, hx features) of an LSTM step's (or layer's) arguments."""
    _same_dtype(op, ("gates_x", gates_x), ("hx", hx), ("cx", cx), ("w_hh", w_hh),
                ("b_hh", b_hh), ("w_hr", w_hr))
    b, h, p = _check_step(op, gates_x, hx, w_hh, b_hh, 4, steps)
    if _dims(op, "cx", cx, 2) != (b, h):
        raise RuntimeError(f"{op}: cx has shape {list(cx.shape)}, expected {[b, h]}")
    if w_hr is None and p != h:
        raise RuntimeError(f"{op}: hx has {p} features, expected hidden_size {h} (no w_hr)")
    if w_hr is not None and _dims(op, "w_hr", w_hr, 2) != (p, h):
        raise RuntimeError(f"{op}: w_hr has shape {list(w_hr.shape)}, expected {[p, h]}")
    return b, h, p


def _lstm_step_meta(gates_x, hx, cx, w_hh, b_hh, w_hr):
    b, h, p = _check_lstm("lstm_step", gates_x, hx, cx, w_hh, b_hh, w_hr)
    d = gates_x.dtype
    return ((b, p), d), ((b, h), d), ((b, 5 * h), d)


def _lstm_layer_meta(gates_x, hx, cx, w_hh, b_hh, w_hr, steps, reverse):
    b, h, p = _check_lstm("lstm_layer", gates_x, hx, cx, w_hh, b_hh, w_hr, steps)
    rows, d = b * steps, gates_x.dtype
    return ((rows, p), d), ((b, p), d), ((b, h), d), ((rows, h), d), ((rows, 5 * h), d)


def _check_lstm_backward(op, grad_hy, grad_cy, cx, workspace, w_hh, w_hr, steps=1,
                         grad_output=None, cells=None):
    """(batch, hidden size, hx features) of an LSTM backward op's arguments: a step's, or with
    ``steps`` (and a layer's ``grad_output`` and ``cells``) a layer's of that many steps."""
    _same_dtype(op, ("cx", cx), ("grad_hy", grad_hy), ("grad_cy", grad_cy),
                ("workspace", workspace), ("w_hh", w_hh), ("w_hr", w_hr),
                ("grad_output", grad_output), ("cells", cells))
    if steps < 1:
        raise RuntimeError(f"{op}: expected at least one step, got {steps}")
    b, h = _dims(op, "cx", cx, 2)
    p = h if w_hr is None else _dims(op, "w_hr", w_hr, 2)[0]
    rows = steps * b
    for name, t, shape in (("grad_hy", grad_hy, (b, p)), ("grad_cy", grad_cy, (b, h)),
                           ("workspace", workspace, (rows, 5 * h)), ("w_hh", w_hh, (4 * h, p)),
                           ("grad_output", grad_output, (rows, p)), ("cells", cells, (rows, h))):
        if t is not None and t._shape != shape:
            raise RuntimeError(f"{op}: {name} has shape {list(t.shape)}, expected {list(shape)}")
    return b, h, p


def _lstm_step_backward_meta(grad_hy, grad_cy, cx, workspace, w_hh, w_hr):
    b, h, p = _check_lstm_backward("lstm_step_backward", grad_hy, grad_cy, cx, workspace, w_hh,
                                   w_hr)
    d = cx.dtype
    return ((b, 4 * h), d), ((b, p), d), ((b, h), d)


def _lstm_layer_backward_meta(grad_output, grad_hy, grad_cy, cx, cells, workspace, w_hh, w_hr,
                              steps, reverse):
    b, h, p = _check_lstm_backward("lstm_layer_backward", grad_hy, grad_cy, cx, workspace, w_hh,
                                   w_hr, steps, grad_output, cells)
    rows, d = steps * b, cx.dtype
    return ((rows, 4 * h), d), ((b, p), d), ((b, h), d), ((rows, p), d)


def _gru_step_meta(gates_x, hx, w_hh, b_hh):
    op = "gru_step"
    _same_dtype(op, ("gates_x", gates_x), ("hx", hx), ("w_hh", w_hh), ("b_hh", b_hh))
    b, h, p = _check_step(op, gates_x, hx, w_hh, b_hh, 3)
    if p != h:
        raise RuntimeError(f"{op}: hx has {p} features, expected hidden_size {h}")
    return ((b, h), gates_x.dtype), ((b, 4 * h), gates_x.dtype)


def _gru_step_backward_meta(grad_hy, hx, workspace, w_hh):
    op = "gru_step_backward"
    _same_dtype(op, ("hx", hx), ("grad_hy", grad_hy), ("workspace", workspace), ("w_hh", w_hh))
    b, h = _dims(op, "hx", hx, 2)
    for name, t, shape in (("grad_hy", grad_hy, (b, h)), ("workspace", workspace, (b, 4 * h)),
                           ("w_hh", w_hh, (3 * h, h))):
        if t._shape != shape:
            raise RuntimeError(f"{op}: {name} has shape {list(t.shape)}, expected {list(shape)}")
    d = hx.dtype
    return ((b, 3 * h), d), ((b, 3 * h), d), ((b, h), d)


_NONLINEARITIES = ("tanh", "relu")


def _check_nonlinearity(op, nonlinearity):
    if nonlinearity not in _NONLINEARITIES:
        raise RuntimeError(f"{op}: nonlinearity must be 'tanh' or 'relu', got {nonlinearity!r}")


def _rnn_step_meta(gates_x, hx, w_hh, b_hh, nonlinearity):
    op = "rnn_step"
    _check_nonlinearity(op, nonlinearity)
    _same_dtype(op, ("gates_x", gates_x), ("hx", hx), ("w_hh", w_hh), ("b_hh", b_hh))
    b, h, p = _check_step(op, gates_x, hx, w_hh, b_hh, 1)
    if p != h:
        raise RuntimeError(f"{op}: hx has {p} features, expected hidden_size {h}")
    return (b, h), gates_x.dtype


def _rnn_step_backward_meta(grad_hy, hy, w_hh, nonlinearity):
    op = "rnn_step_backward"
    _check_nonlinearity(op, nonlinearity)
    _same_dtype(op, ("hy", hy), ("grad_hy", grad_hy), ("w_hh", w_hh))
    b, h = _dims(op, "hy", hy, 2)
    for name, t, shape in (("grad_hy", grad_hy, (b, h)), ("w_hh", w_hh, (h, h))):
        if t._shape != shape:
            raise RuntimeError(f"{op}: {name} has shape {list(t.shape)}, expected {list(shape)}")
    return ((b, h), hy.dtype), ((b, h), hy.dtype)


# -- composites: the same maths in ember ops ---------------------------------------------------
def _hidden(hx, w_hh, b_hh):
    """hx @ w_hh^T + b_hh (PyTorch adds this to the projected input as one term)."""
    h = hx.matmul(w_hh.t())
    return h if b_hh is None else h + b_hh


def _hidden_gates(gates_x, hx, w_hh, b_hh):
    return gates_x + _hidden(hx, w_hh, b_hh)


def _lstm_workspace(gates_x, hx, cx, w_hh, b_hh):
    """(activated gates and tanh(c') as one (B, 5H) tensor, c')."""
    i, f, g, o = _hidden_gates(gates_x, hx, w_hh, b_hh).chunk(4, 1)
    i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
    cy = f * cx + i * g
    tc = cy.tanh()
    return _shape.cat([i, f, g, o, tc], 1), cy


def _lstm_step(gates_x, hx, cx, w_hh, b_hh, w_hr):
    ws, cy = _lstm_workspace(gates_x, hx, cx, w_hh, b_hh)
    h = cx._shape[1]
    hy = ws.narrow(1, 3 * h, h) * ws.narrow(1, 4 * h, h)
    if w_hr is not None:
        hy = hy.matmul(w_hr.t())
    return hy, cy, ws


def _lstm_step_backward(grad_hy, grad_cy, cx, workspace, w_hh, w_hr):
    i, f, g, o, tc = workspace.chunk(5, 1)
    gh = grad_hy if w_hr is None else grad_hy.matmul(w_hr)
    gc = grad_cy + gh * o * (1 - tc * tc)
    d = _shape.cat([gc * g * i * (1 - i), gc * cx * f * (1 - f), gc * i * (1 - g * g),
                    gh * tc * o * (1 - o)], 1)
    return d, d.matmul(w_hh), gc * f


def _step_order(steps, reverse):
    return range(steps - 1, -1, -1) if reverse else range(steps)


def _lstm_layer(gates_x, hx, cx, w_hh, b_hh, w_hr, steps, reverse, step=None):
    """The layer as ``step`` (the lstm_step op; for double backward its composite, whose
    workspace keeps its history) once a time step."""
    step = step or lstm_step_op
    b = hx._shape[0]
    outs, cells, spaces = [None] * steps, [None] * steps, [None] * steps
    h, c = hx, cx
    for t in _step_order(steps, reverse):
        h, c, ws = step(gates_x.narrow(0, t * b, b), h, c, w_hh, b_hh, w_hr)
        outs[t], cells[t], spaces[t] = h, c, ws
    return _shape.cat(outs, 0), h, c, _shape.cat(cells, 0), _shape.cat(spaces, 0)


def _lstm_layer_backward(grad_output, grad_hy, grad_cy, cx, cells, workspace, w_hh, w_hr,
                         steps, reverse):
    b = cx._shape[0]
    order = list(_step_order(steps, reverse))
    d, gh = [None] * steps, [None] * steps
    g_h, g_c = grad_hy, grad_cy
    for k in range(steps - 1, -1, -1):
        t = order[k]
        gh[t] = g_h + grad_output.narrow(0, t * b, b)
        c_prev = cx if k == 0 else cells.narrow(0, order[k - 1] * b, b)
        d[t], g_h, g_c = lstm_step_backward_op(gh[t], g_c, c_prev,
                                               workspace.narrow(0, t * b, b), w_hh, w_hr)
    return _shape.cat(d, 0), g_h, g_c, _shape.cat(gh, 0)


def _gru_workspace(gates_x, hx, w_hh, b_hh):
    xr, xz, xn = gates_x.chunk(3, 1)
    hr, hz, hn = _hidden(hx, w_hh, b_hh).chunk(3, 1)
    r, z = (xr + hr).sigmoid(), (xz + hz).sigmoid()
    n = (xn + r * hn).tanh()
    return _shape.cat([r, z, n, hn], 1)


def _gru_step(gates_x, hx, w_hh, b_hh):
    ws = _gru_workspace(gates_x, hx, w_hh, b_hh)
    _, z, n, _ = ws.chunk(4, 1)
    return n + z * (hx - n), ws


def _gru_step_backward(grad_hy, hx, workspace, w_hh):
    r, z, n, hn = workspace.chunk(4, 1)
    dn = grad_hy * (1 - z) * (1 - n * n)
    dr = dn * hn * r * (1 - r)
    dz = grad_hy * (hx - n) * z * (1 - z)
    d_h = _shape.cat([dr, dz, dn * r], 1)
    return _shape.cat([dr, dz, dn], 1), d_h, grad_hy * z + d_h.matmul(w_hh)


def _rnn_step(gates_x, hx, w_hh, b_hh, nonlinearity):
    pre = _hidden_gates(gates_x, hx, w_hh, b_hh)
    return pre.tanh() if nonlinearity == "tanh" else pre.relu()


def _rnn_step_backward(grad_hy, hy, w_hh, nonlinearity):
    if nonlinearity == "tanh":
        d = grad_hy * (1 - hy * hy)
    else:
        d = _grad.keep_where(grad_hy, hy.gt(0))
    return d, d.matmul(w_hh)


# -- derivatives ------------------------------------------------------------------------------
def _weight_grads(ctx, d_hidden, hx, positions):
    """Gradients of w_hh and b_hh from the gradient of the hidden gates (B, G)."""
    w_pos, b_pos = positions
    gw = d_hidden.t().matmul(hx) if ctx.needs(w_pos) else None
    gb = d_hidden.sum(0) if ctx.needs(b_pos) else None
    return gw, gb


def _recording_backward() -> bool:
    """Is this backward itself being recorded (create_graph)? Then the gates are recomputed
    with ember ops: the saved workspace is a value without history."""
    return _keys.state.grad_enabled


def _lstm_step_derivative(ctx, grads, gates_x, hx, cx, w_hh, b_hh, w_hr):
    g_hy, g_cy = grads[0], grads[1]
    if _recording_backward():
        ws, _ = _lstm_workspace(gates_x, hx, cx, w_hh, b_hh)
    else:
        ws = ctx.result[2]
    d, g_hx, g_cx = lstm_step_backward_op(g_hy, g_cy, cx, ws, w_hh, w_hr)
    gw, gb = _weight_grads(ctx, d, hx, (3, 4))
    g_hr = None
    if w_hr is not None and ctx.needs(5):
        h = cx._shape[1]
        g_hr = g_hy.t().matmul(ws.narrow(1, 3 * h, h) * ws.narrow(1, 4 * h, h))
    return d, g_hx, g_cx, gw, gb, g_hr


def _previous_hidden(hx, output, steps, reverse):
    """The h each step of a layer read, in the rows of ``output``: hx, then the steps' own."""
    if steps == 1:
        return hx
    b = hx._shape[0]
    if reverse:
        return _shape.cat([output.narrow(0, b, (steps - 1) * b), hx], 0)
    return _shape.cat([hx, output.narrow(0, 0, (steps - 1) * b)], 0)


def _lstm_layer_derivative(ctx, grads, gates_x, hx, cx, w_hh, b_hh, w_hr, steps, reverse):
    output, hy, cy, cells, ws = ctx.result
    grads = [g if g is not None else t.new_zeros(t._shape)
             for g, t in zip(grads, (output, hy, cy))]
    if _recording_backward():
        # double backward: the steps replayed in ember ops (the saved results are values
        # without the steps' history), and the backward composed over them
        output, _, _, cells, ws = _lstm_layer(gates_x, hx, cx, w_hh, b_hh, w_hr, steps,
                                              reverse, step=_lstm_step)
        backward = _lstm_layer_backward
    else:
        backward = lstm_layer_backward_op
    d, g_hx, g_cx, gh = backward(grads[0], grads[1], grads[2], cx, cells, ws, w_hh, w_hr, steps,
                                 reverse)
    gw = d.t().matmul(_previous_hidden(hx, output, steps, reverse)) if ctx.needs(3) else None
    gb = d.sum(0) if ctx.needs(4) else None
    g_hr = None
    if w_hr is not None and ctx.needs(5):
        h = cx._shape[1]
        g_hr = gh.t().matmul(ws.narrow(1, 3 * h, h) * ws.narrow(1, 4 * h, h))
    return d, g_hx, g_cx, gw, gb, g_hr


def _gru_step_derivative(ctx, grads, gates_x, hx, w_hh, b_hh):
    if _recording_backward():
        ws = _gru_workspace(gates_x, hx, w_hh, b_hh)
    else:
        ws = ctx.result[1]
    d_x, d_h, g_hx = gru_step_backward_op(grads[0], hx, ws, w_hh)
    gw, gb = _weight_grads(ctx, d_h, hx, (2, 3))
    return d_x, g_hx, gw, gb


def _rnn_step_derivative(ctx, g, gates_x, hx, w_hh, b_hh, nonlinearity):
    d, g_hx = rnn_step_backward_op(g, ctx.result, w_hh, nonlinearity)
    gw, gb = _weight_grads(ctx, d, hx, (2, 3))
    return d, g_hx, gw, gb


_ALL_STEP_INPUTS = ("gates_x", "hx", "w_hh", "b_hh")

lstm_step_op = define(
    "lstm_step(Tensor gates_x, Tensor hx, Tensor cx, Tensor w_hh, Tensor? b_hh, Tensor? w_hr) "
    "-> (Tensor hy, Tensor cy, Tensor workspace)",
    meta=_lstm_step_meta, composite=_lstm_step,
    derivative=Derivative(_lstm_step_derivative, save=_ALL_STEP_INPUTS + ("cx", "w_hr", "result"),
                          outputs=(True, True, False)),
    doc="One LSTM time step from the projected input gates (B, 4H): (h', c', workspace).")
lstm_step_backward_op = define(
    "lstm_step_backward(Tensor grad_hy, Tensor grad_cy, Tensor cx, Tensor workspace, "
    "Tensor w_hh, Tensor? w_hr) -> (Tensor grad_gates, Tensor grad_hx, Tensor grad_cx)",
    meta=_lstm_step_backward_meta, composite=_lstm_step_backward,
    doc="The gradients of an LSTM step's pre-activation gates, hx and cx.")
lstm_layer_op = define(
    "lstm_layer(Tensor gates_x, Tensor hx, Tensor cx, Tensor w_hh, Tensor? b_hh, Tensor? w_hr, "
    "int steps, bool reverse) -> (Tensor output, Tensor hy, Tensor cy, Tensor cells, "
    "Tensor workspace)",
    meta=_lstm_layer_meta, composite=_lstm_layer,
    derivative=Derivative(_lstm_layer_derivative,
                          save=_ALL_STEP_INPUTS + ("cx", "w_hr", "result"),
                          outputs=(True, True, True, False, False),
                          name="MkldnnRnnLayerBackward0"),
    doc="A padded LSTM layer direction: `steps` lstm_steps over the rows of gates_x, as one op.")
lstm_layer_backward_op = define(
    "lstm_layer_backward(Tensor grad_output, Tensor grad_hy, Tensor grad_cy, Tensor cx, "
    "Tensor cells, Tensor workspace, Tensor w_hh, Tensor? w_hr, int steps, bool reverse) -> "
    "(Tensor grad_gates, Tensor grad_hx, Tensor grad_cx, Tensor grad_hidden)",
    meta=_lstm_layer_backward_meta, composite=_lstm_layer_backward,
    doc="The gradients of an LSTM layer's pre-activation gates (every step), hx and cx, and "
        "each step's output gradient with the recurrent part added (for w_hr's).")
gru_step_op = define(
    "gru_step(Tensor gates_x, Tensor hx, Tensor w_hh, Tensor? b_hh) -> (Tensor hy, "
    "Tensor workspace)",
    meta=_gru_step_meta, composite=_gru_step,
    derivative=Derivative(_gru_step_derivative, save=_ALL_STEP_INPUTS + ("result",),
                          outputs=(True, False)),
    doc="One GRU time step from the projected input gates (B, 3H): (h', workspace).")
gru_step_backward_op = define(
    "gru_step_backward(Tensor grad_hy, Tensor hx, Tensor workspace, Tensor w_hh) -> "
    "(Tensor grad_gates_x, Tensor grad_gates_h, Tensor grad_hx)",
    meta=_gru_step_backward_meta, composite=_gru_step_backward,
    doc="The gradients of a GRU step's input gates, hidden gates and hx.")
rnn_step_op = define(
    "rnn_step(Tensor gates_x, Tensor hx, Tensor w_hh, Tensor? b_hh, str nonlinearity) -> Tensor",
    meta=_rnn_step_meta, composite=_rnn_step,
    derivative=Derivative(_rnn_step_derivative, save=("hx", "w_hh", "result")),
    doc="One Elman RNN time step (tanh or relu) from the projected input (B, H).")
rnn_step_backward_op = define(
    "rnn_step_backward(Tensor grad_hy, Tensor hy, Tensor w_hh, str nonlinearity) -> "
    "(Tensor grad_pre, Tensor grad_hx)",
    meta=_rnn_step_backward_meta, composite=_rnn_step_backward,
    doc="The gradients of an RNN step's pre-activation and hx, from its output.")


# -- ONNX: each step as its gate arithmetic ----------------------------------------------------
def _split_gates(b, gates, hidden, n=4):
    return b.op("Split", [gates, b.ints([hidden] * n)], n_out=n, axis=-1)


def _recurrent_input(b, h, w_hh, b_hh):
    """``h @ w_hh^T + b_hh``: the hidden state's contribution to every gate."""
    gh = b.op("MatMul", [h, b.op("Transpose", [w_hh], perm=[1, 0])])
    if b_hh is not None:
        gh = b.op("Add", [gh, b_hh])
    return gh


@lstm_step_op.def_onnx
def _lstm_step_onnx(b, c, gx, h, cell, w_hh, b_hh=None, w_hr=None, *rest):
    hidden = c.shape(2)[-1]
    gates = b.op("Add", [gx, _recurrent_input(b, h, w_hh, b_hh)])
    i, f, g, o = _split_gates(b, gates, hidden)
    cy = b.op("Add", [b.op("Mul", [b.op("Sigmoid", [f]), cell]),
                      b.op("Mul", [b.op("Sigmoid", [i]), b.op("Tanh", [g])])])
    hy = b.op("Mul", [b.op("Sigmoid", [o]), b.op("Tanh", [cy])])
    if w_hr is not None:
        hy = b.op("MatMul", [hy, b.op("Transpose", [w_hr], perm=[1, 0])])
    return [hy, cy, None]


@lstm_layer_op.def_onnx
def _lstm_layer_onnx(b, c, gx, h, cell, w_hh, b_hh=None, w_hr=None, steps=1, reverse=False,
                     *rest):
    """The steps unrolled: step t's gates are row block t of gates_x, read as (steps, B, 4H)."""
    per_step = b.op("Reshape", [gx, b.ints([steps, -1, c.shape(0)[1]])])
    outs = [None] * steps
    for t in _step_order(steps, reverse):
        gx_t = b.op("Gather", [per_step, b.const(np.asarray(t, dtype=np.int64), "step")], axis=0)
        h, cell, _ = _lstm_step_onnx(b, c, gx_t, h, cell, w_hh, b_hh, w_hr)
        outs[t] = h
    return [b.op("Concat", outs, axis=0) if steps > 1 else outs[0], h, cell, None, None]


@gru_step_op.def_onnx
def _gru_step_onnx(b, c, gx, h, w_hh, b_hh=None, *rest):
    hidden = c.shape(1)[-1]
    gh = _recurrent_input(b, h, w_hh, b_hh)
    xr, xz, xn = _split_gates(b, gx, hidden, 3)
    hr, hz, hn = _split_gates(b, gh, hidden, 3)
    r = b.op("Sigmoid", [b.op("Add", [xr, hr])])
    z = b.op("Sigmoid", [b.op("Add", [xz, hz])])
    n = b.op("Tanh", [b.op("Add", [xn, b.op("Mul", [r, hn])])])
    one = c.scalar(1.0, c.meta(1)[1])
    hy = b.op("Add", [b.op("Mul", [b.op("Sub", [one, z]), n]), b.op("Mul", [z, h])])
    return [hy, None]


@rnn_step_op.def_onnx
def _rnn_step_onnx(b, c, gx, h, w_hh, b_hh=None, nonlinearity="tanh", *rest):
    pre = b.op("Add", [gx, _recurrent_input(b, h, w_hh, b_hh)])
    return b.op("Tanh" if nonlinearity == "tanh" else "Relu", [pre])


# -- PyTorch's cell functions: the input projection, then one step ----------------------------
def _cell_args(fn, input, hx, w_ih, w_hh, b_ih, b_hh, hidden_size=None):
    for name, t in (("input", input), ("w_ih", w_ih), ("w_hh", w_hh)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{fn}(): argument '{name}' must be Tensor, not {type(t).__name__}")
    for name, t in (("b_ih", b_ih), ("b_hh", b_hh)):
        if t is not None and not isinstance(t, Tensor):
            raise TypeError(f"{fn}(): argument '{name}' must be Tensor, not {type(t).__name__}")
    if input.ndim != 2 or w_ih.ndim != 2:
        raise RuntimeError(f"{fn}(): expected 2-D input and w_ih, got input "
                           f"{list(input.shape)} and w_ih {list(w_ih.shape)}")
    if input._shape[1] != w_ih._shape[1]:
        raise RuntimeError(f"input has inconsistent input_size: got {input._shape[1]} expected "
                           f"{w_ih._shape[1]}")
    for name, t in (("hx", hx[0]),) + ((("cx", hx[1]),) if len(hx) > 1 else ()):
        if not isinstance(t, Tensor) or t.ndim != 2:
            raise RuntimeError(f"{fn}(): expected {name} to be a 2-D Tensor, got "
                               f"{list(t.shape) if isinstance(t, Tensor) else type(t).__name__}")
        if t._shape[0] != input._shape[0]:
            raise RuntimeError(f"Input batch size {input._shape[0]} doesn't match hidden0 batch "
                               f"size {t._shape[0]}")
    for t in (hx[0], w_ih, w_hh, b_ih, b_hh) + tuple(hx[1:]):
        if t is not None and t.dtype is not input.dtype:
            raise RuntimeError(f"{fn}(): expected all tensors to have dtype {input.dtype} like "
                               f"the input, got {t.dtype}")
    if input.dtype.category != _dtype.FLOATING:
        raise RuntimeError(f"{fn}(): expected a floating-point input, got {input.dtype}")


def project(input, w_ih, b_ih):
    """input @ w_ih^T + b_ih (the input gates of every step at once)."""
    if b_ih is None:
        return _la.matmul(input, w_ih.t())
    return _la.addmm(b_ih, input, w_ih.t())


def project_with_bias(input, w_ih, b_ih, b_hh):
    """(input @ w_ih^T, b_ih + b_hh): for LSTM and RNN steps both biases are one term, added
    inside the fused step."""
    if b_ih is None or b_hh is None:
        return project(input, w_ih, b_ih), b_hh
    return _la.matmul(input, w_ih.t()), b_ih + b_hh


def _check_gates(fn, w_ih, w_hh, b_ih, b_hh, gates, hidden, proj):
    g = gates * hidden
    if w_ih._shape[0] != g or w_hh._shape != (g, proj):
        raise RuntimeError(f"{fn}(): w_ih {list(w_ih.shape)} and w_hh {list(w_hh.shape)} do not "
                           f"fit hidden_size {hidden} (expected [{g}, *] and [{g}, {proj}])")
    for name, b in (("b_ih", b_ih), ("b_hh", b_hh)):
        if b is not None and b._shape != (g,):
            raise RuntimeError(f"{fn}(): {name} has shape {list(b.shape)}, expected [{g}]")


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One LSTM step on a batch: ``hx = (h, c)``; returns ``(h', c')`` (PyTorch's
    ``torch.lstm_cell``)."""
    if not isinstance(hx, (list, tuple)) or len(hx) != 2:
        raise RuntimeError("lstm_cell(): hx must be a list or tuple of two Tensors (h, c)")
    _cell_args("lstm_cell", input, hx, w_ih, w_hh, b_ih, b_hh)
    hidden = hx[1]._shape[1]
    _check_gates("lstm_cell", w_ih, w_hh, b_ih, b_hh, 4, hidden, hidden)
    if hx[0]._shape[1] != hidden:
        raise RuntimeError(f"hidden0 has inconsistent hidden_size: got {hx[0]._shape[1]}, "
                           f"expected {hidden}")
    gates_x, bias = project_with_bias(input, w_ih, b_ih, b_hh)
    hy, cy, _ = lstm_step_op(gates_x, hx[0], hx[1], w_hh, bias, None)
    return hy, cy


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One GRU step on a batch (PyTorch's ``torch.gru_cell``)."""
    _cell_args("gru_cell", input, (hx,), w_ih, w_hh, b_ih, b_hh)
    hidden = hx._shape[1]
    _check_gates("gru_cell", w_ih, w_hh, b_ih, b_hh, 3, hidden, hidden)
    return gru_step_op(project(input, w_ih, b_ih), hx, w_hh, b_hh)[0]


def _rnn_cell(fn, nonlinearity, input, hx, w_ih, w_hh, b_ih, b_hh):
    _cell_args(fn, input, (hx,), w_ih, w_hh, b_ih, b_hh)
    hidden = hx._shape[1]
    _check_gates(fn, w_ih, w_hh, b_ih, b_hh, 1, hidden, hidden)
    gates_x, bias = project_with_bias(input, w_ih, b_ih, b_hh)
    return rnn_step_op(gates_x, hx, w_hh, bias, nonlinearity)


def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One Elman RNN step with tanh (PyTorch's ``torch.rnn_tanh_cell``)."""
    return _rnn_cell("rnn_tanh_cell", "tanh", input, hx, w_ih, w_hh, b_ih, b_hh)


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One Elman RNN step with relu (PyTorch's ``torch.rnn_relu_cell``)."""
    return _rnn_cell("rnn_relu_cell", "relu", input, hx, w_ih, w_hh, b_ih, b_hh)

"""The recurrent layers' time loop: layers, directions, packed batches, dropout between layers.

Every layer works on 2-D data (N, features): a padded (T, B, *) input is N = T * B rows taken
B at a time, a packed one is its ``data`` taken ``batch_sizes[t]`` rows at a time. Per layer
and direction:

* the input projection for all time steps is one matmul. LSTM and RNN steps add both biases
  inside the fused step (``b_ih + b_hh`` is made once per layer): a bias pass over the whole
  projection would cost as much as a quarter of the forward. GRU adds ``b_ih`` in the
  projection (``addmm``): its ``b_hn`` sits inside ``r * (h W_hn^T + b_hn)``;
* ``_Steps`` splits the projected rows into one (B_t, G) view per step; it is one autograd
  node whose backward concatenates the steps' gradients once (per-step ``select`` views would
  each scatter into a zero tensor of the whole sequence: quadratic in T);
* each time step is one fused op (``lstm_step``, ``gru_step``, ``rnn_step``);
* the outputs are concatenated once.

A padded LSTM direction is instead one ``lstm_layer`` op over the projected rows (the steps
inside it; one autograd node, like PyTorch's MkldnnRnnLayer).

With a packed batch the batch shrinks as sequences end (longest first): the forward direction
narrows its state when ``batch_sizes`` drops and keeps the finished rows as their final
state; the reverse direction starts with the shortest batch and grows it with the initial
states of sequences that start later. A padded batch never changes size, so its loop makes one
dispatch per step.
"""
from __future__ import annotations

import inspect

from .._api.binding import NoMatchingSignature
from .._tensor import Tensor
from ..autograd.function import Function
from ..ops import rnn as _rnn
from ..ops import shape as _shape
from ..ops._util import torch_function
from . import functional as F

GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


class _Steps(Function):
    """The projected rows split into per-time-step views; backward is one concatenation."""

    @staticmethod
    def forward(ctx, rows, sizes):
        return tuple(rows.split(sizes, 0))

    @staticmethod
    def backward(ctx, *grads):
        return _shape.cat(list(grads), 0), None


def _project(mode, x, w_ih, b_ih, b_hh):
    """(projected inputs for every step, the bias the step op adds)."""
    if mode == "GRU":
        return _rnn.project(x, w_ih, b_ih), b_hh
    return _rnn.project_with_bias(x, w_ih, b_ih, b_hh)


def _stepper(mode, w_hh, b_hh, w_hr):
    """``step(gates_x, state) -> state``; the state is (h,) or (h, c)."""
    if mode == "LSTM":
        def step(gx, state):
            hy, cy, _ = _rnn.lstm_step_op(gx, state[0], state[1], w_hh, b_hh, w_hr)
            return hy, cy
    elif mode == "GRU":
        def step(gx, state):
            return (_rnn.gru_step_op(gx, state[0], w_hh, b_hh)[0],)
    else:
        nonlinearity = "tanh" if mode == "RNN_TANH" else "relu"

        def step(gx, state):
            return (_rnn.rnn_step_op(gx, state[0], w_hh, b_hh, nonlinearity),)
    return step


def _forward_direction(step, steps, sizes, state):
    outs = []
    finished = []   # final states of sequences that ended early (the highest rows first)
    for gx, bs in zip(steps, sizes):
        if bs != state[0]._shape[0]:
            finished.append(tuple(s.narrow(0, bs, s._shape[0] - bs) for s in state))
            state = tuple(s.narrow(0, 0, bs) for s in state)
        state = step(gx, state)
        outs.append(state[0])
    if finished:
        state = tuple(_shape.cat([s] + [f[k] for f in reversed(finished)], 0)
                      for k, s in enumerate(state))
    return outs, state


def _reverse_direction(step, steps, sizes, initial):
    outs = [None] * len(sizes)
    last = sizes[-1]
    state = initial if last == initial[0]._shape[0] else \
        tuple(s.narrow(0, 0, last) for s in initial)
    for t in range(len(sizes) - 1, -1, -1):
        bs = sizes[t]
        have = state[0]._shape[0]
        if bs != have:  # sequences that start here (shorter ones run at the end) join
            state = tuple(_shape.cat([s, s0.narrow(0, have, bs - have)], 0)
                          for s, s0 in zip(state, initial))
        state = step(steps[t], state)
        outs[t] = state[0]
    return outs, state


def run(mode, data, sizes, hx, weights, num_layers, dropout, training, bidirectional):
    """The layers over 2-D ``data`` with per-step batch ``sizes`` (a list of ints).

    ``hx``: (h0,) or (h0, c0), each (layers * directions, B, features); ``weights``: per layer
    and direction ``(w_ih, w_hh, b_ih, b_hh, w_hr)`` (None where absent). Returns the last
    layer's output rows and the final states, each (layers * directions, B, features).
    """
    directions = 2 if bidirectional else 1
    # every step the same batch: an LSTM direction is one op (a packed batch shrinks, and
    # takes the step loop below)
    padded = len(sizes) > 0 and sizes.count(sizes[0]) == len(sizes)
    finals = [[] for _ in hx]
    layer_input = data
    for layer in range(num_layers):
        outputs = []
        for d in range(directions):
            k = layer * directions + d
            w_ih, w_hh, b_ih, b_hh, w_hr = weights[k]
            gates_x, bias = _project(mode, layer_input, w_ih, b_ih, b_hh)
            initial = tuple(h.select(0, k) for h in hx)
            if mode == "LSTM" and padded:
                out, *state = _rnn.lstm_layer_op(gates_x, initial[0], initial[1], w_hh, bias,
                                                 w_hr, len(sizes), d == 1)[:3]
                outputs.append(out)
            else:
                steps = _Steps.apply(gates_x, sizes)
                run_direction = _reverse_direction if d == 1 else _forward_direction
                outs, state = run_direction(_stepper(mode, w_hh, bias, w_hr), steps, sizes,
                                            initial)
                outputs.append(_shape.cat(outs, 0))
            for acc, s in zip(finals, state):
                acc.append(s)
        layer_input = outputs[0] if directions == 1 else _shape.cat(outputs, 1)
        if dropout and training and layer < num_layers - 1:
            layer_input = F.dropout(layer_input, dropout, True)
    return layer_input, tuple(_shape.stack(acc, 0) for acc in finals)


# -- the native forms torch.lstm, torch.gru, torch.rnn_tanh, torch.rnn_relu -----------------------
# Both overloads of each: padded (input, hx, params, has_biases, num_layers, dropout, train,
# bidirectional, batch_first) -> (output, h_n[, c_n]) and packed (data, batch_sizes, hx, params,
# has_biases, num_layers, dropout, train, bidirectional) -> the output rows and final states.
# params is torch's order per layer and direction: w_ih, w_hh[, b_ih, b_hh][, w_hr].
def _weights(name, params, has_biases, num_layers, bidirectional, lstm_proj):
    groups = num_layers * (2 if bidirectional else 1)
    params = list(params)
    if groups == 0 or len(params) % groups:
        raise RuntimeError(f"{name}: got {len(params)} parameters for {num_layers} layers"
                           f"{' (bidirectional)' if bidirectional else ''}: expected a multiple "
                           f"of {groups}")
    per = len(params) // groups
    want = 2 + 2 * bool(has_biases)
    if per not in (want, want + 1) or (per == want + 1 and not lstm_proj):
        raise RuntimeError(f"{name}: expected {want} parameters per layer and direction "
                           f"(w_ih, w_hh{', b_ih, b_hh' if has_biases else ''}), got {per}")
    out = []
    for g in range(groups):
        chunk = params[g * per:(g + 1) * per]
        w_ih, w_hh = chunk[0], chunk[1]
        b_ih, b_hh = (chunk[2], chunk[3]) if has_biases else (None, None)
        w_hr = chunk[-1] if per == want + 1 else None
        out.append((w_ih, w_hh, b_ih, b_hh, w_hr))
    return out


# torch's two overloads of torch.lstm & co (every argument required)
def _overload(*names):
    return inspect.Signature([inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD)
                              for n in names])


_PACKED = _overload("data", "batch_sizes", "hx", "params", "has_biases", "num_layers", "dropout",
                    "train", "bidirectional")
_PADDED = _overload("input", "hx", "params", "has_biases", "num_layers", "dropout", "train",
                    "bidirectional", "batch_first")


def _bind(name, args, kwargs):
    """(arguments, packed) of the overload the call matches: the packed one's second argument
    is the integer batch_sizes, the padded one's the (floating) hidden state or a tuple."""
    second = args[1] if len(args) > 1 else kwargs.get("batch_sizes")
    packed = isinstance(second, Tensor) and not second.dtype.is_floating_point
    try:
        bound = (_PACKED if packed else _PADDED).bind(*args, **kwargs)
    except TypeError as e:
        raise NoMatchingSignature(name, str(e)) from None
    return bound.arguments, packed


def _call(mode, name, args, kwargs, n_states):
    a, packed = _bind(name, args, kwargs)
    hx, params, has_biases, num_layers, dropout, train, bidir = (
        a["hx"], a["params"], a["has_biases"], a["num_layers"], a["dropout"], a["train"],
        a["bidirectional"])
    if packed:
        data, batch_first = a["data"], False
        sizes = [int(s) for s in a["batch_sizes"].tolist()]
    else:
        data, batch_first = a["input"], a["batch_first"]
    hx = tuple(hx) if isinstance(hx, (list, tuple)) else (hx,)
    if len(hx) != n_states:
        raise RuntimeError(f"{name}: expected {n_states} hidden state tensor(s), got {len(hx)}")
    weights = _weights(name, params, has_biases, num_layers, bidir,
                       lstm_proj=mode == "LSTM" and hx[0].shape[-1] != hx[-1].shape[-1])
    if packed:
        rows, finals = run(mode, data, sizes, hx, weights, num_layers, dropout, train,
                                bidir)
        return (rows,) + finals
    x = data.transpose(0, 1) if batch_first else data
    if x.ndim != 3:
        raise RuntimeError(f"{name}: expected a 3-D input (seq, batch, features), got "
                           f"{list(data.shape)}")
    steps, batch = x.shape[0], x.shape[1]
    rows, finals = run(mode, x.reshape(steps * batch, x.shape[2]), [batch] * steps, hx,
                            weights, num_layers, dropout, train, bidir)
    out = rows.reshape(steps, batch, rows.shape[-1])
    if batch_first:
        out = out.transpose(0, 1)
    return (out,) + finals


@torch_function("lstm")
def lstm(*args, **kwargs):
    """``torch.lstm``: -> (output, h_n, c_n)."""
    return _call("LSTM", "lstm", args, kwargs, 2)


@torch_function("gru")
def gru(*args, **kwargs):
    """``torch.gru``: -> (output, h_n)."""
    return _call("GRU", "gru", args, kwargs, 1)


@torch_function("rnn_tanh")
def rnn_tanh(*args, **kwargs):
    """``torch.rnn_tanh``: -> (output, h_n)."""
    return _call("RNN_TANH", "rnn_tanh", args, kwargs, 1)


@torch_function("rnn_relu")
def rnn_relu(*args, **kwargs):
    """``torch.rnn_relu``: -> (output, h_n)."""
    return _call("RNN_RELU", "rnn_relu", args, kwargs, 1)

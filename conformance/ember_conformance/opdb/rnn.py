"""Entries for ``ember.ops.rnn`` (the fused recurrent steps and their backward ops), PyTorch's
cell functions, and the recurrent layers' time loop as a composition.

Every tensor argument of a step comes in each layout (a transposed weight, strided or expanded
states), with and without biases, with LSTM's projection, a batch of one and an empty batch.
The backward ops are checked as functions of their own (their inputs need not come from a
forward step). The layer entries run ``ember.nn._rnn.run`` with the weights as inputs: stacked
layers, both directions, and a packed batch whose size shrinks over time (tiny sizes: the
finite-difference rows difference every weight).
"""
from __future__ import annotations

import ember

from . import FLOATS, LAYOUTS, OpInfo, SampleInput, make_tensor

LOOSE = {"float32": (1e-4, 1e-5)}
B, H, P, I = 3, 4, 2, 5


def _rnn_ops():
    from ember.ops import rnn
    return rnn


def _samples(cases):
    """``cases``: (description, operand shapes (None for an absent tensor), layout, extra
    positional arguments, low/high of the values)."""
    def gen(dtype):
        for i, (desc, shapes, layout, extra, bounds) in enumerate(cases):
            def build(dev, shapes=shapes, layout=layout, extra=extra, i=i, bounds=bounds):
                args = tuple(None if s is None else make_tensor(
                    40 * i + j, s, dtype, dev, low=bounds[0], high=bounds[1], layout=layout)
                    for j, s in enumerate(shapes))
                return args + tuple(extra), {}
            yield SampleInput(f"{dtype} {desc} {layout}", build)
    return gen


def _layouts(desc, shapes, extra=(), bounds=(-1.5, 1.5), layouts=LAYOUTS):
    return [(desc, shapes, lay, extra, bounds) for lay in layouts]


def _op(name, outputs=None):
    """The op ``name`` of ember.ops.rnn; ``outputs``: how many leading outputs to keep (the
    differentiable ones: gradcheck would difference the workspace too)."""
    def run(*args):
        out = getattr(_rnn_ops(), name)(*args)
        return out if outputs is None else out[:outputs]
    run.__name__ = name
    return run


G4, G3 = 4 * H, 3 * H
LSTM_STEP = (
    _layouts("gates[3,16] h[3,4] c[3,4] w_hh[16,4] b[16]",
             [(B, G4), (B, H), (B, H), (G4, H), (G4,), None])
    + _layouts("no bias", [(B, G4), (B, H), (B, H), (G4, H), None, None], layouts=LAYOUTS[:2])
    + _layouts("proj h[3,2] w_hh[16,2] w_hr[2,4]",
               [(B, G4), (B, P), (B, H), (G4, P), (G4,), (P, H)], layouts=LAYOUTS[:3])
    + _layouts("batch 1", [(1, G4), (1, H), (1, H), (G4, H), (G4,), None], layouts=LAYOUTS[:1])
    + _layouts("empty batch", [(0, G4), (0, H), (0, H), (G4, H), (G4,), None],
               layouts=LAYOUTS[:1]))
LSTM_BACKWARD = (
    _layouts("grads[3,4] c[3,4] ws[3,20] w_hh[16,4]",
             [(B, H), (B, H), (B, H), (B, 5 * H), (G4, H), None], bounds=(-0.9, 0.9))
    + _layouts("proj", [(B, P), (B, H), (B, H), (B, 5 * H), (G4, P), (P, H)],
               bounds=(-0.9, 0.9), layouts=LAYOUTS[:2]))
T = 3   # an LSTM layer's steps
LSTM_LAYER = (
    _layouts("3 steps gates[9,16] h[3,4] c[3,4] w_hh[16,4] b[16]",
             [(T * B, G4), (B, H), (B, H), (G4, H), (G4,), None], extra=(T, False))
    + _layouts("reverse", [(T * B, G4), (B, H), (B, H), (G4, H), (G4,), None],
               extra=(T, True), layouts=LAYOUTS[:2])
    + _layouts("proj h[3,2] w_hh[16,2] w_hr[2,4]",
               [(T * B, G4), (B, P), (B, H), (G4, P), None, (P, H)], extra=(T, True),
               layouts=LAYOUTS[:2])
    + _layouts("one step", [(B, G4), (B, H), (B, H), (G4, H), (G4,), None], extra=(1, False),
               layouts=LAYOUTS[:1]))
LSTM_LAYER_BACKWARD = (
    _layouts("3 steps grads c[3,4] cells[9,4] ws[9,20] w_hh[16,4]",
             [(T * B, H), (B, H), (B, H), (B, H), (T * B, H), (T * B, 5 * H), (G4, H), None],
             extra=(T, False), bounds=(-0.9, 0.9))
    + _layouts("proj reverse", [(T * B, P), (B, P), (B, H), (B, H), (T * B, H), (T * B, 5 * H),
                                (G4, P), (P, H)], extra=(T, True), bounds=(-0.9, 0.9),
               layouts=LAYOUTS[:2]))
GRU_STEP = (
    _layouts("gates[3,12] h[3,4] w_hh[12,4] b[12]", [(B, G3), (B, H), (G3, H), (G3,)])
    + _layouts("no bias", [(B, G3), (B, H), (G3, H), None], layouts=LAYOUTS[:2])
    + _layouts("empty batch", [(0, G3), (0, H), (G3, H), (G3,)], layouts=LAYOUTS[:1]))
GRU_BACKWARD = _layouts("grad[3,4] h[3,4] ws[3,16] w_hh[12,4]",
                        [(B, H), (B, H), (B, 4 * H), (G3, H)], bounds=(-0.9, 0.9))


def _rnn_cases(nonlinearity):
    return (_layouts(f"{nonlinearity} gates[3,4] h[3,4] w_hh[4,4] b[4]",
                     [(B, H), (B, H), (H, H), (H,)], extra=(nonlinearity,))
            + _layouts(f"{nonlinearity} no bias", [(B, H), (B, H), (H, H), None],
                       extra=(nonlinearity,), layouts=LAYOUTS[:1]))


def _rnn_backward_cases(nonlinearity):
    return _layouts(f"{nonlinearity} grad[3,4] hy[3,4] w_hh[4,4]", [(B, H), (B, H), (H, H)],
                    extra=(nonlinearity,), bounds=(-0.9, 0.9))


# -- PyTorch's cell functions -----------------------------------------------------------------
def _lstm_cell(x, h, c, w_ih, w_hh, b_ih, b_hh):
    return ember.lstm_cell(x, (h, c), w_ih, w_hh, b_ih, b_hh)


CELL = {
    "lstm_cell": (_lstm_cell, [(B, I), (B, H), (B, H), (G4, I), (G4, H), (G4,), (G4,)]),
    "gru_cell": (ember.gru_cell, [(B, I), (B, H), (G3, I), (G3, H), (G3,), (G3,)]),
    "rnn_tanh_cell": (ember.rnn_tanh_cell, [(B, I), (B, H), (H, I), (H, H), (H,), (H,)]),
    "rnn_relu_cell": (ember.rnn_relu_cell, [(B, I), (B, H), (H, I), (H, H), (H,), (H,)]),
}
COVERS = {"lstm_cell": "lstm_step", "gru_cell": "gru_step", "rnn_tanh_cell": "rnn_step",
          "rnn_relu_cell": "rnn_step"}


# -- the layers' time loop as a composition ---------------------------------------------------
def _layer_weights(flat):
    """``flat`` per layer and direction (w_ih, w_hh, b_ih, b_hh) -> the loop's 5-tuples."""
    return [tuple(flat[k:k + 4]) + (None,) for k in range(0, len(flat), 4)]


def _layers(mode, sizes, bidirectional, layers):
    def run(x, h0, *rest):
        from ember.nn import _rnn
        if mode == "LSTM":
            c0, flat = rest[0], rest[1:]
            hx = (h0, c0)
        else:
            flat, hx = rest, (h0,)
        out, states = _rnn.run(mode, x, list(sizes), hx, _layer_weights(flat), layers, 0.0,
                               False, bidirectional)
        return (out,) + tuple(states)
    run.__name__ = f"{mode} layers"
    return run


LAYER_I = LAYER_H = 2   # small: the finite-difference rows difference every weight


def _layer_shapes(mode, sizes, bidirectional, layers):
    h = LAYER_H
    gates = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1}[mode] * h
    directions = 2 if bidirectional else 1
    shapes = [(sum(sizes), LAYER_I), (layers * directions, sizes[0], h)]
    if mode == "LSTM":
        shapes.append((layers * directions, sizes[0], h))
    for layer in range(layers):
        for _ in range(directions):
            inp = LAYER_I if layer == 0 else h * directions
            shapes += [(gates, inp), (gates, h), (gates,), (gates,)]
    return shapes


def _layer_entry(mode, sizes, bidirectional, layers, desc):
    shapes = _layer_shapes(mode, sizes, bidirectional, layers)
    return OpInfo(f"nn.{mode} layers {desc}", _layers(mode, sizes, bidirectional, layers),
                  _samples([(desc, shapes, "contiguous", (), (-1.0, 1.0))]), FLOATS, covers=(),
                  tolerances=dict(LOOSE))


OPS = [
    OpInfo("lstm_step", _op("lstm_step_op", 2), _samples(LSTM_STEP), FLOATS,
           covers=("lstm_step",), tolerances=dict(LOOSE)),
    OpInfo("lstm_step workspace", _op("lstm_step_op"), _samples(LSTM_STEP), FLOATS,
           covers=("lstm_step",), differentiable=False, tolerances=dict(LOOSE)),
    OpInfo("lstm_step_backward", _op("lstm_step_backward_op"), _samples(LSTM_BACKWARD), FLOATS,
           covers=("lstm_step_backward",), tolerances=dict(LOOSE)),
    OpInfo("lstm_layer", _op("lstm_layer_op", 3), _samples(LSTM_LAYER), FLOATS,
           covers=("lstm_layer",), tolerances=dict(LOOSE)),
    OpInfo("lstm_layer cells and workspace", _op("lstm_layer_op"), _samples(LSTM_LAYER), FLOATS,
           covers=("lstm_layer",), differentiable=False, tolerances=dict(LOOSE)),
    OpInfo("lstm_layer_backward", _op("lstm_layer_backward_op"), _samples(LSTM_LAYER_BACKWARD),
           FLOATS, covers=("lstm_layer_backward",), tolerances=dict(LOOSE)),
    OpInfo("gru_step", _op("gru_step_op", 1), _samples(GRU_STEP), FLOATS, covers=("gru_step",),
           tolerances=dict(LOOSE)),
    OpInfo("gru_step workspace", _op("gru_step_op"), _samples(GRU_STEP), FLOATS,
           covers=("gru_step",), differentiable=False, tolerances=dict(LOOSE)),
    OpInfo("gru_step_backward", _op("gru_step_backward_op"), _samples(GRU_BACKWARD), FLOATS,
           covers=("gru_step_backward",), tolerances=dict(LOOSE)),
    OpInfo("rnn_step tanh", _op("rnn_step_op"), _samples(_rnn_cases("tanh")), FLOATS,
           covers=("rnn_step",), tolerances=dict(LOOSE)),
    OpInfo("rnn_step relu", _op("rnn_step_op"), _samples(_rnn_cases("relu")), FLOATS,
           covers=("rnn_step",), tolerances=dict(LOOSE)),
    OpInfo("rnn_step_backward tanh", _op("rnn_step_backward_op"),
           _samples(_rnn_backward_cases("tanh")), FLOATS, covers=("rnn_step_backward",),
           tolerances=dict(LOOSE)),
    OpInfo("rnn_step_backward relu", _op("rnn_step_backward_op"),
           _samples(_rnn_backward_cases("relu")), FLOATS, covers=("rnn_step_backward",),
           tolerances=dict(LOOSE)),
] + [
    OpInfo(name, fn, _samples(_layouts(name, shapes, layouts=LAYOUTS[:2])), FLOATS,
           covers=(COVERS[name],), tolerances=dict(LOOSE))
    for name, (fn, shapes) in CELL.items()
] + [
    _layer_entry("LSTM", (3, 2, 1), True, 2, "packed bidirectional 2 layers"),
    _layer_entry("GRU", (3, 2, 1), True, 1, "packed bidirectional"),
    _layer_entry("RNN_TANH", (2, 2, 1), False, 2, "packed 2 layers"),
]


# -- torch.lstm / gru / rnn_tanh / rnn_relu: the layers' native forms (padded input) ----------
def _native(name, n_states):
    def run(x, h0, *rest):
        states = (h0, rest[0]) if n_states == 2 else h0
        params = list(rest[n_states - 1:])
        return getattr(ember, name)(x, states, params, True, 1, 0.0, False, True, False)
    run.__name__ = f"torch.{name}"
    return run


def _native_entry(name, mode):
    n_states = 2 if mode == "LSTM" else 1
    h = LAYER_H
    gates = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}[mode] * h
    shapes = [(3, 2, LAYER_I), (2, 2, h)] + ([(2, 2, h)] if n_states == 2 else [])
    shapes += [(gates, LAYER_I), (gates, h), (gates,), (gates,)] * 2
    return OpInfo(f"torch.{name} bidirectional", _native(name, n_states),
                  _samples([("padded", shapes, "contiguous", (), (-1.0, 1.0))]), FLOATS,
                  covers=(), tolerances=dict(LOOSE))


OPS += [_native_entry("lstm", "LSTM"), _native_entry("gru", "GRU"),
        _native_entry("rnn_tanh", "RNN_TANH"), _native_entry("rnn_relu", "RNN_RELU")]

"""Recurrent layers: RNN, LSTM, GRU and their cells, with PyTorch's parameters and semantics.

Parameter names, shapes, order and initialization (uniform(-1/sqrt(hidden), 1/sqrt(hidden)))
are PyTorch's, so state dicts load either way: ``weight_ih_l{k}``, ``weight_hh_l{k}``,
``bias_ih_l{k}``, ``bias_hh_l{k}`` (and ``weight_hr_l{k}`` for an LSTM with ``proj_size``),
with ``_reverse`` for the second direction. Gate order is PyTorch's: LSTM (i, f, g, o), GRU
(r, z, n). The time loop is ``ember.nn._rnn``: one input projection per layer and direction,
then one fused op per time step (``ember.ops.rnn``).
"""
from __future__ import annotations

import math
import numbers
import warnings

from ... import _dtype
from ..._tensor import Tensor
from ...ops import factories as _fac
from ...ops import indexing as _idx
from ...ops import rnn as _rnn_ops
from ...ops.factories import empty
from .. import _rnn
from .. import init
from ..parameter import Parameter
from .._packed_sequence import PackedSequence
from .module import Module
from ..._warn import user_stacklevel

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]


def _factory(device, dtype):
    return {"device": device, "dtype": dtype if dtype is not None else _dtype.get_default_dtype()}


def _check_flag(name, value):
    if not isinstance(value, bool):
        raise TypeError(f"{name} should be of type bool, got: {type(value).__name__}")


def _check_size(name, value):
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} should be of type int, got: {type(value).__name__}")
    if value <= 0:
        raise ValueError(f"{name} must be greater than zero")


class RNNBase(Module):
    """The layers' shared machinery (PyTorch's ``nn.RNNBase``): ``mode`` is "LSTM", "GRU",
    "RNN_TANH" or "RNN_RELU"."""

    __constants__ = ["mode", "input_size", "hidden_size", "num_layers", "bias", "batch_first",
                     "dropout", "bidirectional", "proj_size"]

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        if (not isinstance(dropout, numbers.Number) or isinstance(dropout, bool)
                or not 0 <= dropout <= 1):
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn(f"dropout option adds dropout after all but last recurrent layer, so "
                          f"non-zero dropout expects num_layers greater than 1, but got "
                          f"dropout={dropout} and num_layers={num_layers}",
                          stacklevel=user_stacklevel())
        _check_flag("bias", bias)
        _check_flag("batch_first", batch_first)
        _check_size("input_size", input_size)
        _check_size("hidden_size", hidden_size)
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable "
                             "projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode not in _rnn.GATES:
            raise ValueError("Unrecognized RNN mode: " + mode)
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        kw = _factory(device, dtype)
        gate_size = _rnn.GATES[mode] * hidden_size
        real_hidden = proj_size if proj_size > 0 else hidden_size
        directions = 2 if bidirectional else 1
        self._flat_weights_names = []
        self._all_weights = []
        for layer in range(num_layers):
            for direction in range(directions):
                layer_input = input_size if layer == 0 else real_hidden * directions
                params = [("weight_ih", (gate_size, layer_input)),
                          ("weight_hh", (gate_size, real_hidden))]
                if bias:
                    params += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                if proj_size > 0:
                    params.append(("weight_hr", (proj_size, hidden_size)))
                suffix = "_reverse" if direction == 1 else ""
                names = []
                for kind, shape in params:
                    name = f"{kind}_l{layer}{suffix}"
                    setattr(self, name, Parameter(empty(shape, **kw)))
                    names.append(name)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    @property
    def _flat_weights(self):
        return [getattr(self, name) for name in self._flat_weights_names]

    @property
    def all_weights(self):
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def flatten_parameters(self):
        """Accepted for PyTorch compatibility; does nothing (ember keeps no fused weight
        buffer: each step reads the parameters as they are)."""

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    # -- argument checks (PyTorch's messages) -------------------------------------------------
    def check_input(self, input, batch_sizes):
        w = self._flat_weights[0]
        if input.dtype is not w.dtype:
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype "
                             f"({w.dtype}). Convert input: input.to({w.dtype}), or convert "
                             f"model: model.to({input.dtype})")
        expected = 2 if batch_sizes is not None else 3
        if input.dim() != expected:
            raise RuntimeError(f"input must have {expected} dimensions, got {input.dim()}")
        if self.input_size != input.size(-1):
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {input.size(-1)}")

    def get_expected_hidden_size(self, input, batch_sizes):
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.size(0) if self.batch_first else input.size(1)
        directions = 2 if self.bidirectional else 1
        features = self.proj_size if self.proj_size > 0 else self.hidden_size
        return (self.num_layers * directions, mini_batch, features)

    def check_hidden_size(self, hx, expected_hidden_size, msg="Expected hidden size {}, got {}"):
        if tuple(hx.size()) != tuple(expected_hidden_size):
            raise RuntimeError(msg.format(tuple(expected_hidden_size), list(hx.size())))

    def check_forward_args(self, input, hidden, batch_sizes):
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def permute_hidden(self, hx, permutation):
        if permutation is None:
            return hx
        return _idx.index_select(hx, 1, permutation)

    # -- the forward pass ---------------------------------------------------------------------
    def _states_shapes(self, batch):
        directions = 2 if self.bidirectional else 1
        features = self.proj_size if self.proj_size > 0 else self.hidden_size
        shapes = [(self.num_layers * directions, batch, features)]
        if self.mode == "LSTM":
            shapes.append((self.num_layers * directions, batch, self.hidden_size))
        return shapes

    def _weights(self):
        """Per layer and direction: (w_ih, w_hh, b_ih, b_hh, w_hr)."""
        out = []
        for params in self.all_weights:
            b_ih, b_hh = (params[2], params[3]) if self.bias else (None, None)
            w_hr = params[-1] if self.proj_size > 0 else None
            out.append((params[0], params[1], b_ih, b_hh, w_hr))
        return out

    def _run(self, input, hx):
        """``input`` is a PackedSequence or a batched (3-D) tensor; ``hx`` a tuple of states in
        the caller's batch order or None. Returns (output, states)."""
        if isinstance(input, PackedSequence):
            data, batch_sizes, sorted_indices, unsorted_indices = input
            self.check_input(data, batch_sizes)
            sizes = [int(v) for v in batch_sizes.tolist()]
            batch = sizes[0] if sizes else 0
        else:
            batch_sizes = sorted_indices = unsorted_indices = None
            self.check_input(input, None)
            if self.batch_first:
                input = input.transpose(0, 1)
            steps, batch = input._shape[0], input._shape[1]
            data = input.reshape((steps * batch, input._shape[2]))
            sizes = [batch] * steps
        if not sizes or batch == 0:
            raise RuntimeError(f"{type(self).__name__}: the input has no time steps or an empty "
                               f"batch (input shape {list((data if batch_sizes is not None else input).shape)})")
        shapes = self._states_shapes(batch)
        if hx is None:
            hx = tuple(_fac.zeros(s, dtype=data.dtype, device=data.device) for s in shapes)
        else:
            msgs = ("Expected hidden size {}, got {}",) if len(shapes) == 1 else \
                ("Expected hidden[0] size {}, got {}", "Expected hidden[1] size {}, got {}")
            for h, s, msg in zip(hx, shapes, msgs):
                self.check_hidden_size(h, s, msg)
            hx = tuple(self.permute_hidden(h, sorted_indices) for h in hx)
        out, states = _rnn.run(self.mode, data, sizes, hx, self._weights(), self.num_layers,
                               self.dropout, self.training, self.bidirectional)
        states = tuple(self.permute_hidden(s, unsorted_indices) for s in states)
        if batch_sizes is not None:
            return PackedSequence(out, batch_sizes, sorted_indices, unsorted_indices), states
        out = out.view((len(sizes), batch, out._shape[1]))
        return (out.transpose(0, 1) if self.batch_first else out), states

    def _forward_any(self, input, state, name):
        """(output, states) of a PackedSequence or a padded input (``name``: the module, for
        errors)."""
        if isinstance(input, PackedSequence):
            return self._run(input, state)
        return self._forward_unpacked(input, state, name)

    def _forward_unpacked(self, input, hx, name):
        """Batch handling of a tensor input; ``hx`` a tuple of states or None."""
        if input.dim() not in (2, 3):
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D instead")
        batched = input.dim() == 3
        if not batched:
            input = input.unsqueeze(0 if self.batch_first else 1)
            if hx is not None:
                hx = tuple(h.unsqueeze(1) for h in hx)
        out, states = self._run(input, hx)
        if not batched:
            out = out.squeeze(0 if self.batch_first else 1)
            states = tuple(s.squeeze(1) for s in states)
        return out, states

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)


def _single_state_dims(input, hx):
    if hx is None or isinstance(input, PackedSequence):
        return
    if input.dim() == 3 and hx.dim() != 3:
        raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got "
                           f"{hx.dim()}-D tensor")
    if input.dim() == 2 and hx.dim() != 2:
        raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but got "
                           f"{hx.dim()}-D tensor")


class RNN(RNNBase):
    """Elman RNN: ``h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)`` (or relu).

    ``RNN(input_size, hidden_size, num_layers=1, nonlinearity='tanh', bias=True,
    batch_first=False, dropout=0.0, bidirectional=False, device=None, dtype=None)``; forward
    takes ``(input, hx=None)`` and returns ``(output, h_n)``."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' or "
                             f"'relu'.")
        super().__init__(mode, *args, **kwargs)

    def forward(self, input, hx=None):
        _single_state_dims(input, hx)
        out, states = self._forward_any(input, None if hx is None else (hx,), "RNN")
        return out, states[0]


class LSTM(RNNBase):
    """Long short-term memory, PyTorch's ``nn.LSTM`` (``proj_size`` included): forward takes
    ``(input, (h_0, c_0)=None)`` and returns ``(output, (h_n, c_n))``."""

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def get_expected_cell_size(self, input, batch_sizes):
        expected = self.get_expected_hidden_size(input, batch_sizes)
        return expected[:2] + (self.hidden_size,)

    def forward(self, input, hx=None):
        if hx is not None and not isinstance(input, PackedSequence):
            if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                raise RuntimeError("LSTM: hx must be a tuple (h_0, c_0) of two Tensors")
            if input.dim() == 3 and (hx[0].dim() != 3 or hx[1].dim() != 3):
                raise RuntimeError(f"For batched 3-D input, hx and cx should also be 3-D but got "
                                   f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
            if input.dim() == 2 and (hx[0].dim() != 2 or hx[1].dim() != 2):
                raise RuntimeError(f"For unbatched 2-D input, hx and cx should also be 2-D but "
                                   f"got ({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
        return self._forward_any(input, None if hx is None else tuple(hx), "LSTM")


class GRU(RNNBase):
    """Gated recurrent unit, PyTorch's ``nn.GRU``: forward takes ``(input, hx=None)`` and
    returns ``(output, h_n)``."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input, hx=None):
        _single_state_dims(input, hx)
        out, states = self._forward_any(input, None if hx is None else (hx,), "GRU")
        return out, states[0]


# -- cells -----------------------------------------------------------------------------------
class RNNCellBase(Module):
    __constants__ = ["input_size", "hidden_size", "bias"]

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        kw = _factory(device, dtype)
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(empty((num_chunks * hidden_size, input_size), **kw))
        self.weight_hh = Parameter(empty((num_chunks * hidden_size, hidden_size), **kw))
        if bias:
            self.bias_ih = Parameter(empty(num_chunks * hidden_size, **kw))
            self.bias_hh = Parameter(empty(num_chunks * hidden_size, **kw))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _batched(self, input, hx, name):
        """(input as 2-D, states as 2-D or None, was the input batched)."""
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}: expected input to be a Tensor, got "
                            f"{type(input).__name__}")
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        batched = input.dim() == 2
        if not batched:
            input = input.unsqueeze(0)
            if hx is not None:
                hx = tuple(h.unsqueeze(0) for h in hx)
        return input, hx, batched

    def _zeros(self, input):
        return _fac.zeros((input.size(0), self.hidden_size), dtype=input.dtype,
                          device=input.device)


class RNNCell(RNNCellBase):
    """An Elman RNN cell (tanh or relu): ``h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh)``."""

    __constants__ = ["input_size", "hidden_size", "bias", "nonlinearity"]

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None,
                 dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        if hx is not None and hx.dim() not in (1, 2):
            raise ValueError(f"RNNCell: Expected hidden to be 1D or 2D, got {hx.dim()}D instead")
        input, state, batched = self._batched(input, None if hx is None else (hx,), "RNNCell")
        h = self._zeros(input) if state is None else state[0]
        if self.nonlinearity == "tanh":
            fn = _rnn_ops.rnn_tanh_cell
        elif self.nonlinearity == "relu":
            fn = _rnn_ops.rnn_relu_cell
        else:
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        ret = fn(input, h, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return ret if batched else ret.squeeze(0)


class LSTMCell(RNNCellBase):
    """An LSTM cell: forward takes ``(input, (h, c)=None)`` and returns ``(h', c')``."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        if hx is not None:
            for idx, value in enumerate(hx):
                if value.dim() not in (1, 2):
                    raise ValueError(f"LSTMCell: Expected hx[{idx}] to be 1D or 2D, got "
                                     f"{value.dim()}D instead")
        input, state, batched = self._batched(input, None if hx is None else tuple(hx),
                                              "LSTMCell")
        if state is None:
            zeros = self._zeros(input)
            state = (zeros, zeros)
        h, c = _rnn_ops.lstm_cell(input, state, self.weight_ih, self.weight_hh, self.bias_ih,
                                  self.bias_hh)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """A GRU cell: ``(input, h=None) -> h'``."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        if hx is not None and hx.dim() not in (1, 2):
            raise ValueError(f"GRUCell: Expected hidden to be 1D or 2D, got {hx.dim()}D instead")
        input, state, batched = self._batched(input, None if hx is None else (hx,), "GRUCell")
        h = self._zeros(input) if state is None else state[0]
        ret = _rnn_ops.gru_cell(input, h, self.weight_ih, self.weight_hh, self.bias_ih,
                                self.bias_hh)
        return ret if batched else ret.squeeze(0)

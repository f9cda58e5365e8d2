"""``torch.lstm``, ``torch.gru``, ``torch.rnn_tanh``, ``torch.rnn_relu``: the recurrent layers'
native forms (what ``nn.LSTM`` & co. call in torch), over a flat parameter list.

Both overloads of each: padded ``(input, hx, params, has_biases, num_layers, dropout, train,
bidirectional, batch_first)`` returning ``(output, h_n[, c_n])``, and packed ``(data,
batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional)`` returning
the output rows and final states. ``params`` is torch's order per layer and direction:
``w_ih, w_hh[, b_ih, b_hh][, w_hr]``. Both run ``nn/_rnn.py``'s time loop, as the modules do."""
from __future__ import annotations

from ._tensor import Tensor

__all__ = ["lstm", "gru", "rnn_tanh", "rnn_relu"]


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


def _call(mode, name, args, kwargs, n_states):
    from .nn import _rnn
    # the packed overload's second argument is the integer batch_sizes; the padded one's is
    # the (floating) hidden state, or a tuple of them
    packed = len(args) > 1 and isinstance(args[1], Tensor) and \
        not args[1].dtype.is_floating_point
    if packed:
        data, batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidir = args[:9]
        sizes = [int(s) for s in batch_sizes.tolist()]
        batch_first = False
    else:
        (data, hx, params, has_biases, num_layers, dropout, train, bidir,
         batch_first) = (list(args) + [kwargs.get("batch_first", False)])[:9]
    hx = tuple(hx) if isinstance(hx, (list, tuple)) else (hx,)
    if len(hx) != n_states:
        raise RuntimeError(f"{name}: expected {n_states} hidden state tensor(s), got {len(hx)}")
    weights = _weights(name, params, has_biases, num_layers, bidir,
                       lstm_proj=mode == "LSTM" and hx[0].shape[-1] != hx[-1].shape[-1])
    if packed:
        rows, finals = _rnn.run(mode, data, sizes, hx, weights, num_layers, dropout, train,
                                bidir)
        return (rows,) + finals
    x = data.transpose(0, 1) if batch_first else data
    if x.ndim != 3:
        raise RuntimeError(f"{name}: expected a 3-D input (seq, batch, features), got "
                           f"{list(data.shape)}")
    steps, batch = x.shape[0], x.shape[1]
    rows, finals = _rnn.run(mode, x.reshape(steps * batch, x.shape[2]), [batch] * steps, hx,
                            weights, num_layers, dropout, train, bidir)
    out = rows.reshape(steps, batch, rows.shape[-1])
    if batch_first:
        out = out.transpose(0, 1)
    return (out,) + finals


def lstm(*args, **kwargs):
    """``torch.lstm``: -> (output, h_n, c_n)."""
    return _call("LSTM", "lstm", args, kwargs, 2)


def gru(*args, **kwargs):
    """``torch.gru``: -> (output, h_n)."""
    return _call("GRU", "gru", args, kwargs, 1)


def rnn_tanh(*args, **kwargs):
    """``torch.rnn_tanh``: -> (output, h_n)."""
    return _call("RNN_TANH", "rnn_tanh", args, kwargs, 1)


def rnn_relu(*args, **kwargs):
    """``torch.rnn_relu``: -> (output, h_n)."""
    return _call("RNN_RELU", "rnn_relu", args, kwargs, 1)

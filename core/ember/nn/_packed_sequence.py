"""Packed sequences (public as ``ember.nn.utils.rnn``), with PyTorch's names, layouts and errors.

A ``PackedSequence`` holds a batch of sequences of different lengths, time step by time step:
``data`` is (sum of lengths, *) with the time step ``t`` of every sequence still running at
``t`` stored together (longest sequences first), and ``batch_sizes[t]`` (an int64 CPU tensor)
is how many those are. The recurrent layers step through it with a shrinking batch.

Packing and padding are gathers: one ``index_select`` of the padded rows (packing) or of the
packed rows plus one padding row (padding), so both are differentiable and run on any device.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from .. import _dtype
from .._tensor import Tensor
from ..ops import factories as _fac
from ..ops import indexing as _idx
from ..ops import shape as _shape

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence",
           "pad_sequence", "unpad_sequence", "pack_sequence", "unpack_sequence"]

def _converts_to(dtype):
    """A PackedSequence method (``double``, ``int``, ...): ``self.to(dtype=dtype)``."""
    def convert(self):
        return self.to(dtype=dtype)
    convert.__doc__ = f"The sequence with its data converted to {dtype}."
    return convert


_PackedSequenceBase = namedtuple("PackedSequence_",
                                 ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])


class PackedSequence(_PackedSequenceBase):
    """Holds the data and list of ``batch_sizes`` of a packed sequence (see the module doc).

    Build one with :func:`pack_padded_sequence` or :func:`pack_sequence`; ``sorted_indices``
    says which input sequence each packed column is (None when the input was sorted), and
    ``unsorted_indices`` is its inverse."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None and sorted_indices is not None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is not None:
            if not isinstance(batch_sizes, Tensor) or batch_sizes.device.type != "cpu":
                raise ValueError("batch_sizes should always be on CPU. Instances of "
                                 "PackedSequence should never be created manually. They should "
                                 "be instantiated by functions like pack_sequence and "
                                 "pack_padded_sequences in nn.utils.rnn. "
                                 "https://pytorch.org/docs/stable/nn.html#torch.nn.utils.rnn."
                                 "pack_sequence")
            return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)
        if not isinstance(data, (list, tuple)) or len(data) != 2:
            raise TypeError("PackedSequence(data, batch_sizes): expected data and batch_sizes, "
                            "or a (data, batch_sizes) pair")
        return super().__new__(cls, data[0], data[1], sorted_indices, unsorted_indices)

    def _with_data(self, data):
        idx = self.sorted_indices
        moved = [None if t is None else t.to(data.device) for t in (idx, self.unsorted_indices)]
        return type(self)(data, self.batch_sizes, *moved)

    def to(self, *args, **kwargs):
        """The data converted like ``Tensor.to``; indices follow the data's device and
        ``batch_sizes`` stays on the CPU."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        return self._with_data(data)

    def cpu(self, *args, **kwargs):
        return self.to("cpu")

    double = _converts_to(_dtype.float64)
    float = _converts_to(_dtype.float32)
    half = _converts_to(_dtype.float16)
    long = _converts_to(_dtype.int64)
    int = _converts_to(_dtype.int32)
    short = _converts_to(_dtype.int16)
    char = _converts_to(_dtype.int8)
    byte = _converts_to(_dtype.uint8)

    @property
    def is_cuda(self):
        return self.data.device.type == "cuda"

    def is_pinned(self):
        return False


def invert_permutation(permutation):
    """The inverse of a permutation tensor (None stays None)."""
    if permutation is None:
        return None
    out = _fac.empty_like(permutation)
    out.scatter_(0, permutation, _fac.arange(permutation.numel(), device=permutation.device))
    return out


def _lengths_list(lengths):
    if isinstance(lengths, Tensor):
        if lengths.ndim != 1:
            raise RuntimeError(f"lengths must be a 1-D tensor, got shape {list(lengths.shape)}")
        return [int(v) for v in lengths.tolist()]
    return [int(v) for v in lengths]


def _batch_sizes(lengths):
    """Per time step, how many of the (descending) ``lengths`` are still running."""
    arr = np.asarray(lengths, dtype=np.int64)
    steps = np.arange(int(arr[0]) if arr.size else 0)
    return (arr[None, :] > steps[:, None]).sum(1)


def _cpu_int64(values):
    return _fac.tensor(np.asarray(values, dtype=np.int64), device="cpu")


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Pack a padded batch (T, B, *) (B, T, * with ``batch_first``) of sequences of the given
    ``lengths``. With ``enforce_sorted=False`` the batch is sorted by length here and the
    permutation kept in the result."""
    if not isinstance(input, Tensor):
        raise TypeError(f"pack_padded_sequence(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    lens = _lengths_list(lengths)
    batch_dim = 0 if batch_first else 1
    if input.ndim < 2:
        raise RuntimeError(f"pack_padded_sequence(): expected input of at least 2 dimensions "
                           f"(time and batch), got shape {list(input.shape)}")
    if len(lens) != input._shape[batch_dim]:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got "
                           f"{len(lens)} (batch_size={input._shape[batch_dim]})")
    if any(n <= 0 for n in lens):
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element "
                           "in 'lengths' that is <= 0")
    sorted_indices = None
    if enforce_sorted:
        if any(a < b for a, b in zip(lens, lens[1:])):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when "
                               "`enforce_sorted` is True. You can pass `enforce_sorted=False` "
                               "to pack_padded_sequence and/or pack_sequence to sidestep this "
                               "requirement if you do not need ONNX exportability.")
    else:
        order = sorted(range(len(lens)), key=lambda i: -lens[i])  # stable: ties keep order
        lens = [lens[i] for i in order]
        sorted_indices = _cpu_int64(order).to(input.device)
        input = _idx.index_select(input, batch_dim, sorted_indices)
    steps = input._shape[1 - batch_dim]
    if lens[0] > steps:
        raise RuntimeError(f"pack_padded_sequence(): a length is {lens[0]} but the input has "
                           f"only {steps} time steps")
    if batch_first:
        input = input.transpose(0, 1)
    batch_sizes = _batch_sizes(lens)
    B = input._shape[1]
    rows = [t * B + b for t, n in enumerate(batch_sizes) for b in range(int(n))]
    flat = input.reshape((steps * B,) + tuple(input._shape[2:]))
    data = _idx.index_select(flat, 0, _cpu_int64(rows).to(input.device))
    return PackedSequence(data, _cpu_int64(batch_sizes), sorted_indices, None)


def _padded_rows(batch_sizes, total_length, batch):
    """For each (t, b) of the padded layout, its row in the packed data, or -1."""
    rows = np.full((total_length, batch), -1, dtype=np.int64)
    start = 0
    for t, n in enumerate(batch_sizes):
        rows[t, :n] = np.arange(start, start + n)
        start += n
    return rows


def _gather_with_padding(data, rows, padding_value):
    """``data[rows]`` with -1 rows filled with ``padding_value`` (one cat, one gather)."""
    pad = _fac.full((1,) + tuple(data._shape[1:]), padding_value, dtype=data.dtype,
                    device=data.device)
    src = _shape.cat([data, pad], 0)
    flat = np.where(rows < 0, data._shape[0], rows).reshape(-1)
    out = _idx.index_select(src, 0, _cpu_int64(flat).to(data.device))
    return out.reshape(tuple(rows.shape) + tuple(data._shape[1:]))


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """The inverse of :func:`pack_padded_sequence`: ``(padded, lengths)``, in the input's
    original batch order; ``total_length`` pads to that many time steps."""
    if not isinstance(sequence, PackedSequence):
        raise TypeError(f"pad_packed_sequence(): expected a PackedSequence, got "
                        f"{type(sequence).__name__}")
    sizes = [int(v) for v in sequence.batch_sizes.tolist()]
    max_len = len(sizes)
    if total_length is not None:
        if total_length < max_len:
            raise ValueError(f"Expected total_length to be at least the length of the longest "
                             f"sequence in input, but got total_length={total_length} and max "
                             f"sequence length being {max_len}")
        max_len = total_length
    batch = sizes[0] if sizes else 0
    padded = _gather_with_padding(sequence.data, _padded_rows(sizes, max_len, batch),
                                  padding_value)
    lengths = np.array([sum(1 for n in sizes if n > b) for b in range(batch)], dtype=np.int64)
    if sequence.unsorted_indices is not None:
        unsorted = sequence.unsorted_indices
        padded = _idx.index_select(padded, 1, unsorted)
        lengths = lengths[np.asarray(unsorted.cpu().tolist(), dtype=np.int64)]
    if batch_first:
        padded = padded.transpose(0, 1)
    return padded, _cpu_int64(lengths)


def _sequence_list(sequences, fn):
    if isinstance(sequences, Tensor):
        sequences = list(sequences.unbind(0))
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError(f"{fn}(): received an empty list of sequences")
    ref = sequences[0]
    for i, s in enumerate(sequences):
        if not isinstance(s, Tensor):
            raise TypeError(f"{fn}(): expected a list of Tensors, got {type(s).__name__} at "
                            f"index {i}")
        if s.ndim == 0 or s._shape[1:] != ref._shape[1:]:
            raise RuntimeError(f"{fn}(): sequence {i} has shape {list(s.shape)}; every sequence "
                               f"must be (L, {', '.join(map(str, ref.shape[1:])) or '*'}) like "
                               f"sequence 0 {list(ref.shape)}")
        if s.dtype is not ref.dtype or s.device is not ref.device:
            raise RuntimeError(f"{fn}(): sequence {i} is {s.dtype} on {s.device}, sequence 0 is "
                               f"{ref.dtype} on {ref.device}")
    return sequences


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack sequences of different lengths (L_i, *) into (T, B, *) (``batch_first``:
    (B, T, *)), padding with ``padding_value`` on ``padding_side``."""
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got "
                         f"{padding_side}.")
    sequences = _sequence_list(sequences, "pad_sequence")
    lens = [s._shape[0] for s in sequences]
    T = max(lens)
    rows = np.full((T, len(lens)), -1, dtype=np.int64)
    start = 0
    for b, n in enumerate(lens):
        first = T - n if padding_side == "left" else 0
        rows[first:first + n, b] = np.arange(start, start + n)
        start += n
    data = _shape.cat(sequences, 0)
    padded = _gather_with_padding(data, rows, padding_value)
    return padded.transpose(0, 1) if batch_first else padded


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """The inverse of :func:`pad_sequence` (right padding): a list of (L_i, *) tensors."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [seq.narrow(0, 0, n) for seq, n in zip(padded_sequences.unbind(0),
                                                   _lengths_list(lengths))]


def pack_sequence(sequences, enforce_sorted=True):
    """Pack a list of sequences (L_i, *) (descending lengths unless ``enforce_sorted=False``)."""
    sequences = _sequence_list(sequences, "pack_sequence")
    lengths = [s._shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """The inverse of :func:`pack_sequence`: a list of (L_i, *) tensors in the original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)


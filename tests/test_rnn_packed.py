"""Packed sequences: packing and padding against numpy and torch (optional), and the layers on
packed batches of mixed lengths against running every sequence alone."""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import nn
from ember.nn.utils.rnn import (PackedSequence, invert_permutation, pack_padded_sequence,
                                pack_sequence, pad_packed_sequence, pad_sequence,
                                unpack_sequence, unpad_sequence)

F64 = ember.float64
RNG = np.random.default_rng(0)


def close(a, b, rtol=1e-7, atol=1e-9):
    a = a.detach().cpu().numpy() if isinstance(a, ember.Tensor) else np.asarray(a)
    b = b.detach().cpu().numpy() if hasattr(b, "detach") else np.asarray(b)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def _seqs(lengths, feat=3):
    return [RNG.standard_normal((n, feat)) for n in lengths]


def test_pack_padded_sequence_layout():
    lengths = [4, 2, 1]
    padded = np.zeros((4, 3, 2))
    for b, n in enumerate(lengths):
        padded[:n, b] = RNG.standard_normal((n, 2))
    p = pack_padded_sequence(ember.tensor(padded), lengths)
    assert isinstance(p, PackedSequence) and isinstance(p, tuple)
    assert p.batch_sizes.tolist() == [3, 2, 1, 1]
    assert p.batch_sizes.dtype is ember.int64 and p.batch_sizes.device.type == "cpu"
    want = np.concatenate([padded[t, :bs] for t, bs in enumerate([3, 2, 1, 1])])
    close(p.data, want)
    assert p.sorted_indices is None and p.unsorted_indices is None
    back, lens = pad_packed_sequence(p)
    close(back, padded)
    assert lens.tolist() == lengths
    back, _ = pad_packed_sequence(p, batch_first=True, padding_value=-1.0, total_length=6)
    assert back.shape == (3, 6, 2) and float(back[2, 1, 0]) == -1.0
    data, sizes, s_idx, u_idx = p   # unpacks like a namedtuple
    assert sizes is p.batch_sizes


def test_unsorted_batches_round_trip_and_permutations():
    seqs = [ember.tensor(s) for s in _seqs([2, 5, 3])]
    p = pack_sequence(seqs, enforce_sorted=False)
    assert p.sorted_indices.tolist() == [1, 2, 0]
    assert p.unsorted_indices.tolist() == [2, 0, 1]
    assert invert_permutation(p.sorted_indices).tolist() == p.unsorted_indices.tolist()
    for got, want in zip(unpack_sequence(p), seqs):
        close(got, want)
    padded = pad_sequence(seqs, batch_first=True)
    assert padded.shape == (3, 5, 3)
    for got, want in zip(unpad_sequence(padded, [2, 5, 3], batch_first=True), seqs):
        close(got, want)
    left = pad_sequence(seqs, padding_value=7.0, padding_side="left")
    close(left[:, 0], np.concatenate([np.full((3, 3), 7.0), seqs[0].numpy()]))


def test_packing_errors_match_torch():
    x = ember.zeros(4, 3, 2)
    with pytest.raises(RuntimeError, match="`lengths` array must be sorted in decreasing order"):
        pack_padded_sequence(x, [1, 3, 2])
    with pytest.raises(RuntimeError, match="Length of all samples has to be greater than 0"):
        pack_padded_sequence(x, [3, 2, 0], enforce_sorted=False)
    with pytest.raises(RuntimeError, match=r"Expected `len\(lengths\)` to be equal to "
                                           r"batch_size, but got 2 \(batch_size=3\)"):
        pack_padded_sequence(x, [3, 2])
    p = pack_padded_sequence(x, [4, 2, 1])
    with pytest.raises(ValueError, match="Expected total_length to be at least the length of "
                                         "the longest sequence in input, but got "
                                         "total_length=3 and max sequence length being 4"):
        pad_packed_sequence(p, total_length=3)
    with pytest.raises(ValueError, match="Expected padding_side to be one of left or right"):
        pad_sequence([x[0]], padding_side="middle")


def test_packing_matches_torch():
    torch = pytest.importorskip("torch")
    from torch.nn.utils import rnn as tr
    seqs = _seqs([3, 6, 1, 4])
    tp = tr.pack_sequence([torch.tensor(s) for s in seqs], enforce_sorted=False)
    ep = pack_sequence([ember.tensor(s) for s in seqs], enforce_sorted=False)
    close(ep.data, tp.data)
    assert ep.batch_sizes.tolist() == tp.batch_sizes.tolist()
    assert ep.sorted_indices.tolist() == tp.sorted_indices.tolist()
    for bf in (False, True):
        tpad, tl = tr.pad_packed_sequence(tp, batch_first=bf, padding_value=0.5)
        epad, el = pad_packed_sequence(ep, batch_first=bf, padding_value=0.5)
        close(epad, tpad)
        assert el.tolist() == tl.tolist()
    padded = torch.tensor(np.stack([np.pad(s, ((0, 6 - len(s)), (0, 0))) for s in seqs], 1))
    tq = tr.pack_padded_sequence(padded, [3, 6, 1, 4], enforce_sorted=False)
    eq = pack_padded_sequence(ember.tensor(padded.numpy()), ember.tensor([3, 6, 1, 4]),
                              enforce_sorted=False)
    close(eq.data, tq.data)


@pytest.mark.parametrize("cls,kw", [("LSTM", {"bidirectional": True, "num_layers": 2}),
                                    ("GRU", {"bidirectional": True}),
                                    ("RNN", {"num_layers": 2}),
                                    ("LSTM", {"proj_size": 2, "bidirectional": True})])
def test_packed_batch_equals_each_sequence_alone(cls, kw):
    """The independent reference: each sequence run by itself as a batch of one."""
    ember.manual_seed(0)
    m = getattr(nn, cls)(3, 4, dtype=F64, **kw)
    lengths = [2, 5, 1, 4]
    seqs = [ember.tensor(s) for s in _seqs(lengths)]
    directions = 2 if kw.get("bidirectional") else 1
    features = kw.get("proj_size") or 4
    layers = kw.get("num_layers", 1)
    h0 = ember.randn(layers * directions, 4, features, dtype=F64)
    c0 = ember.randn(layers * directions, 4, 4, dtype=F64)
    hx = (h0, c0) if cls == "LSTM" else h0
    out, h = m(pack_sequence(seqs, enforce_sorted=False), hx)
    assert isinstance(out, PackedSequence)
    padded, lens = pad_packed_sequence(out)
    assert lens.tolist() == lengths
    states = h if isinstance(h, tuple) else (h,)
    for b, s in enumerate(seqs):
        one_hx = tuple(x[:, b:b + 1] for x in (hx if isinstance(hx, tuple) else (hx,)))
        o, hb = m(s.unsqueeze(1), one_hx if cls == "LSTM" else one_hx[0])
        close(padded[:lengths[b], b], o[:, 0])
        close(padded[lengths[b]:, b], np.zeros((max(lengths) - lengths[b], directions * features)))
        for got, want in zip(states, hb if isinstance(hb, tuple) else (hb,)):
            close(got[:, b], want[:, 0])


def test_packed_gradients_equal_each_sequence_alone():
    ember.manual_seed(1)
    m = nn.LSTM(3, 4, bidirectional=True, dtype=F64)
    seqs = [ember.tensor(s, requires_grad=True) for s in _seqs([3, 1, 2])]
    out, (h, c) = m(pack_sequence(seqs, enforce_sorted=False))
    (pad_packed_sequence(out)[0].pow(2).sum() + h.sum() + c.sum()).backward()
    got = [s.grad.numpy().copy() for s in seqs]
    grads = {k: p.grad.numpy().copy() for k, p in m.named_parameters()}
    m.zero_grad()
    total = 0
    for s in seqs:
        s.grad = None
        o, (hb, cb) = m(s.unsqueeze(1))
        total = total + o.pow(2).sum() + hb.sum() + cb.sum()
    total.backward()
    for s, g in zip(seqs, got):
        close(g, s.grad)
    for k, p in m.named_parameters():
        close(grads[k], p.grad)


def test_packed_sequence_to_moves_data_not_batch_sizes():
    p = pack_sequence([ember.ones(3, 2), ember.ones(1, 2)])
    q = p.double()
    assert q.data.dtype is F64 and q.batch_sizes is p.batch_sizes
    assert p.to(ember.float32) is p
    if ember.opencl.is_available():
        r = pack_sequence([ember.ones(1, 2), ember.ones(3, 2)], enforce_sorted=False).to("opencl")
        assert r.data.device.type == "opencl" and r.batch_sizes.device.type == "cpu"
        assert r.sorted_indices.device.type == "opencl"
    with pytest.raises(ValueError, match="batch_sizes should always be on CPU"):
        PackedSequence(ember.ones(2), [1, 1])

"""View ops: metadata-only, but every backend must read and write through them correctly."""
from __future__ import annotations

import ember

from . import ALL_REAL, LAYOUTS, OpInfo, SampleInput, make_tensor


def _samples(shape, layouts=LAYOUTS):
    def samples(dtype):
        for i, layout in enumerate(layouts):
            yield SampleInput(f"{dtype}{list(shape)} {layout}",
                              lambda dev, i=i, lay=layout, dt=dtype: (
                                  (make_tensor(10 + i, shape, dt, dev, layout=lay),), {}))
    return samples


def _write_through(view_fn):
    """Write through the view with an in-place op, then read the base back."""
    def run(x):
        base = x.clone()
        view_fn(base).mul_(2)
        return base
    return run


S34 = _samples((3, 4))
S234 = _samples((2, 3, 4))
OPS = [
    OpInfo("view", lambda x: x.contiguous().view(4, 3), S34, ALL_REAL, covers=("view",)),
    OpInfo("reshape", lambda x: x.reshape(2, -1), S34, ALL_REAL, covers=("view",)),
    # a transposed matrix's rows split: an alias with computed strides; flattened: a copy
    OpInfo("reshape alias", lambda x: x.t().reshape(2, 2, 3), S34, ALL_REAL,
           covers=("t", "_reshape_alias")),
    OpInfo("reshape copy", lambda x: x.t().reshape(-1), S34, ALL_REAL,
           covers=("t", "_unsafe_view")),
    OpInfo("flatten", lambda x: x.flatten(), S234, ALL_REAL, covers=("view",)),
    OpInfo("permute", lambda x: x.permute(2, 0, 1), S234, ALL_REAL, covers=("permute",)),
    OpInfo("transpose", lambda x: x.transpose(0, 1), S34, ALL_REAL, covers=("transpose",)),
    OpInfo("transpose 3d", lambda x: x.transpose(-1, 0), S234, ALL_REAL, covers=("transpose",)),
    OpInfo("mT", lambda x: x.mT, S234, ALL_REAL, covers=("transpose",)),
    OpInfo("t", lambda x: x.t(), S34, ALL_REAL, covers=("t",)),
    OpInfo("t 1d", lambda x: x[0].t(), S34, ALL_REAL, covers=("t", "select")),
    OpInfo("expand", lambda x: x[..., :1].expand(3, 5) if hasattr(ember.Tensor, "__getitem__")
           else x.narrow(1, 0, 1).expand(3, 5), S34, ALL_REAL, covers=("expand", "slice")),
    OpInfo("unsqueeze/squeeze", lambda x: x.unsqueeze(1).squeeze(1).unsqueeze(-1), S34,
           ALL_REAL, covers=("as_strided", "squeeze_dim")),
    OpInfo("squeeze", lambda x: x.unsqueeze(0).unsqueeze(-1).squeeze(), S34, ALL_REAL,
           covers=("as_strided", "squeeze")),
    OpInfo("squeeze dims", lambda x: x.unsqueeze(0).unsqueeze(2).squeeze((0, 1, 2)), S34,
           ALL_REAL, covers=("as_strided", "squeeze_dims")),
    OpInfo("as_strided", lambda x: x.contiguous().as_strided((2, 2), (1, 2), 1), S34, ALL_REAL,
           covers=("as_strided",)),
    OpInfo("as_strided_scatter", lambda x: ember.as_strided_scatter(
        x, x.reshape(-1)[-4:].reshape(2, 2), (2, 2), (1, 2), 1), S34, ALL_REAL,
        covers=("as_strided_scatter",)),
    OpInfo("narrow", lambda x: x.narrow(1, 1, 2), S34, ALL_REAL, covers=("slice",)),
    OpInfo("select", lambda x: x.select(1, 2), S34, ALL_REAL, covers=("select",)),
    OpInfo("unbind", lambda x: x.unbind(1), S34, ALL_REAL, covers=("unbind",)),
    OpInfo("split", lambda x: x.split([1, 3], dim=1), S34, ALL_REAL, covers=("split_with_sizes",)),
    OpInfo("split int", lambda x: x.split(3, dim=1), S34, ALL_REAL, covers=("split",)),
    OpInfo("chunk", lambda x: x.chunk(2, dim=0), S34, ALL_REAL, covers=("split",)),
    OpInfo("unfold", lambda x: x.unfold(1, 2, 1), S34, ALL_REAL, covers=("unfold",)),
    OpInfo("diagonal", lambda x: x.diagonal(offset=1), S34, ALL_REAL, covers=("diagonal",)),
    OpInfo("diagonal 3d", lambda x: x.diagonal(0, 1, 2), S234, ALL_REAL, covers=("diagonal",)),
    OpInfo("write through narrow", _write_through(lambda b: b.narrow(1, 1, 2)), S34,
           ("float32", "int64"), covers=("slice",), differentiable=False),
    OpInfo("write through t", _write_through(lambda b: b.t()), S34,
           ("float32", "int64"), covers=("t",), differentiable=False),
    OpInfo("write through transpose", _write_through(lambda b: b.transpose(0, 2)), S234,
           ("float32", "int64"), covers=("transpose",), differentiable=False),
    OpInfo("write through diagonal", _write_through(lambda b: b.diagonal()), S34,
           ("float32", "int64"), covers=("diagonal",), differentiable=False),
]

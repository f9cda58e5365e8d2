"""Entries for ``ember.nn.functional``: layers and losses, forward and backward on every backend.

nn functions are compositions of registry ops (no kernels of their own), so these entries cover
no registry op; they exist because a backend can pass every op alone and still fail a layer —
a strided view that im2col reads, a reduction over a dim a kernel mishandles, an index op that a
loss relies on. Each entry runs the functional form with its weights as inputs, so the gradient
check compares the gradients of inputs, weights and biases with the CPU's.
"""
from __future__ import annotations

from . import FLOATS, OpInfo, SampleInput, make_tensor

# layers sum many products: a backend may order the sums as it likes
LOOSE = {"float32": (1e-4, 1e-5)}


def _samples(*cases):
    """``cases``: (description, [(shape, kind)], kwargs); kind "x" a float operand, "l" a
    float operand in a layout other than contiguous, or ("i", high) an int64 one in [0, high)."""
    def gen(dtype):
        for i, (desc, operands, kw) in enumerate(cases):
            def build(dev, operands=operands, kw=kw, i=i):
                args = []
                for j, (shape, kind) in enumerate(operands):
                    seed = 100 * i + j
                    if isinstance(kind, tuple):
                        args.append(make_tensor(seed, shape, "int64", dev, low=0,
                                                high=kind[1] - 1))
                    else:
                        layout = "transposed" if kind == "l" else "contiguous"
                        args.append(make_tensor(seed, shape, dtype, dev, low=-1.5, high=1.5,
                                                layout=layout))
                return tuple(args), dict(kw)
            yield SampleInput(f"{dtype} {desc}", build)
    return gen


def _f():
    from ember.nn import functional
    return functional


def _entry(name, call, *cases, tolerances=LOOSE, differentiable=True, covers=()):
    return OpInfo(f"nn.{name}", call, _samples(*cases), dtypes=FLOATS, covers=covers,
                  differentiable=differentiable, tolerances=dict(tolerances))


def _batch_norm(x, w, b, running_stats=False):
    import ember
    c = x.shape[1]
    mean = ember.zeros(c, dtype=x.dtype, device=x.device)
    var = ember.ones(c, dtype=x.dtype, device=x.device)
    out = _f().batch_norm(x, mean, var, w, b, training=True, momentum=0.1, eps=1e-5)
    # the running statistics the call updated in place (not differentiable: a separate entry)
    return (mean, var) if running_stats else out


OPS = [
    _entry("linear", lambda x, w, b: _f().linear(x, w, b),
           ("x[4,5] w[3,5] b[3]", [((4, 5), "x"), ((3, 5), "x"), ((3,), "x")], {}),
           ("x[2,4,5] w^T b", [((2, 4, 5), "x"), ((3, 5), "l"), ((3,), "x")], {}),
           # torch's other paths: a vector folded to one row; a transposed input through
           # matmul with the bias added after
           ("x[5] w b", [((5,), "x"), ((3, 5), "x"), ((3,), "x")], {}),
           ("x[2,4,5]^T w b", [((2, 4, 5), "l"), ((3, 5), "x"), ((3,), "x")], {})),
    _entry("conv1d", lambda x, w, b, **kw: _f().conv1d(x, w, b, **kw),
           ("stride 2 pad 1", [((2, 3, 9), "x"), ((4, 3, 3), "x"), ((4,), "x")],
            dict(stride=2, padding=1)),
           ("dilation 2 groups 3", [((1, 3, 10), "x"), ((6, 1, 3), "x"), ((6,), "x")],
            dict(dilation=2, groups=3))),
    _entry("conv2d", lambda x, w, b, **kw: _f().conv2d(x, w, b, **kw),
           ("3x3 pad 1", [((2, 3, 7, 7), "x"), ((4, 3, 3, 3), "x"), ((4,), "x")],
            dict(padding=1)),
           ("stride 2 groups 2 dilation 2", [((2, 4, 9, 8), "x"), ((6, 2, 3, 2), "x"),
                                            ((6,), "x")], dict(stride=2, groups=2, dilation=2)),
           ("transposed input", [((1, 2, 5, 5), "l"), ((3, 2, 2, 2), "x"), ((3,), "x")], {})),
    _entry("conv_transpose2d", lambda x, w, b, **kw: _f().conv_transpose2d(x, w, b, **kw),
           ("stride 2 pad 1 out_pad 1", [((2, 3, 4, 4), "x"), ((3, 2, 3, 3), "x"), ((2,), "x")],
            dict(stride=2, padding=1, output_padding=1))),
    _entry("max_pool2d", lambda x, **kw: _f().max_pool2d(x, **kw),
           ("k2", [((2, 3, 6, 6), "x")], dict(kernel_size=2)),
           ("k3 s2 p1", [((1, 2, 7, 7), "l")], dict(kernel_size=3, stride=2, padding=1))),
    _entry("avg_pool2d", lambda x, **kw: _f().avg_pool2d(x, **kw),
           ("k3 s2 p1 exclude pad", [((2, 3, 6, 6), "x")],
            dict(kernel_size=3, stride=2, padding=1, count_include_pad=False))),
    _entry("adaptive_avg_pool2d", lambda x: _f().adaptive_avg_pool2d(x, (3, 2)),
           ("7x7 -> 3x2", [((2, 3, 7, 7), "x")], {})),
    _entry("layer_norm", lambda x, w, b: _f().layer_norm(x, (6,), w, b),
           ("[4,6]", [((4, 6), "x"), ((6,), "x"), ((6,), "x")], {})),
    _entry("group_norm", lambda x, w, b: _f().group_norm(x, 3, w, b),
           ("[2,6,4] 3 groups", [((2, 6, 4), "x"), ((6,), "x"), ((6,), "x")], {})),
    _entry("batch_norm", _batch_norm,
           ("training [4,3,5]", [((4, 3, 5), "x"), ((3,), "x"), ((3,), "x")], {})),
    _entry("batch_norm running stats", _batch_norm,
           ("training [4,3,5]", [((4, 3, 5), "x"), ((3,), "x"), ((3,), "x")],
            dict(running_stats=True)), differentiable=False),
    # padding_idx rows get no gradient by definition, which finite differences can't know
    _entry("embedding", lambda i, w: _f().embedding(i, w),
           ("[3,4] of 10", [((3, 4), ("i", 10)), ((10, 5), "x")], {}), covers=("embedding",)),
    _entry("embedding padding_idx", lambda i, w: _f().embedding(i, w, padding_idx=0),
           ("padding_idx 0", [((3, 4), ("i", 10)), ((10, 5), "x")], {}), differentiable=False),
    _entry("pad constant", lambda x: _f().pad(x, (1, 2, -1, 1), value=0.5),
           ("[2,3,5]", [((2, 3, 5), "x")], {}), covers=("constant_pad_nd",)),
    _entry("pad reflect", lambda x: _f().pad(x, (2, 1, 1, 0), mode="reflect"),
           ("[2,3,5]", [((2, 3, 5), "x")], {}), covers=("reflection_pad",)),
    _entry("pad replicate", lambda x: _f().pad(x, (3, -1), mode="replicate"),
           ("[2,3,5]", [((2, 3, 5), "x")], {}), covers=("replication_pad",)),
    _entry("cross_entropy", lambda x, t, w, **kw: _f().cross_entropy(x, t, weight=w, **kw),
           ("weights", [((6, 5), "x"), ((6,), ("i", 5)), ((5,), "x")], {}),
           ("label_smoothing, K-dim", [((2, 5, 3), "x"), ((2, 3), ("i", 5)), ((5,), "x")],
            dict(label_smoothing=0.1))),
    _entry("nll_loss", lambda x, t, **kw: _f().nll_loss(x, t, **kw),
           ("ignore_index 1, sum", [((6, 4), "x"), ((6,), ("i", 4))],
            dict(ignore_index=1, reduction="sum"))),
    _entry("mse_loss", lambda x, y: _f().mse_loss(x, y),
           ("mean", [((3, 4), "x"), ((3, 4), "l")], {})),
    _entry("smooth_l1_loss", lambda x, y: _f().smooth_l1_loss(x, y, beta=0.5),
           ("beta 0.5", [((3, 4), "x"), ((3, 4), "x")], {})),
    _entry("binary_cross_entropy_with_logits",
           lambda x, y, pw: _f().binary_cross_entropy_with_logits(x, y.sigmoid(), pos_weight=pw),
           ("pos_weight", [((4, 3), "x"), ((4, 3), "x"), ((3,), "x")], {})),
    _entry("kl_div", lambda x, y: _f().kl_div(x.log_softmax(-1), y.log_softmax(-1),
                                              reduction="batchmean", log_target=True),
           ("batchmean log_target", [((4, 5), "x"), ((4, 5), "x")], {})),
]

"""Compare the backward graphs ember and torch record for one function: node names,
next_functions structure, which outputs share a node (and their output_nr), values, gradients
and second-order gradients."""
from __future__ import annotations

import numpy as np

import ember


def graph(node, none_edges=True):
    """(name, children) of a backward graph, the accumulators named alike in both libraries.
    ``none_edges=False`` leaves out empty edges (both libraries now agree on them, number
    arguments included: tests/test_torch_nodes_numbers.py)."""
    if node is None:
        return None
    name = node.name().replace("torch::autograd::", "")
    return (name, tuple(graph(f, none_edges) for f, _ in node.next_functions
                        if none_edges or f is not None))


def leaves(lib, shapes, dtype="float64", seed=0):
    rs = np.random.RandomState(seed)
    return [lib.tensor(rs.randn(*s), dtype=getattr(lib, dtype), requires_grad=True)
            for s in shapes]


def _differentiable(lib, out):
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return [o for o in outs if isinstance(o, lib.Tensor) and o.requires_grad]


def structure(lib, out, none_edges=True):
    """Per differentiable output: its graph, its output_nr and the first output sharing its
    node (torch records one node for all outputs of a split, a sort, a std_mean)."""
    outs = _differentiable(lib, out)
    firsts = {}
    return [(graph(o.grad_fn, none_edges), o.output_nr, firsts.setdefault(id(o.grad_fn), k))
            for k, o in enumerate(outs)]


def _weighted_sum(lib, outs):
    total = 0
    for o in outs:
        w = lib.tensor(np.linspace(-1, 1, o.numel()).reshape(tuple(o.shape)), dtype=o.dtype)
        total = total + (o * w).sum()
    return total


def compare(fn, shapes, dtype="float64", double=True, rtol=1e-10, atol=1e-12, none_edges=True):
    """fn(lib, *leaves) under both libraries: graphs, values, gradients of a weighted sum of
    the differentiable outputs and (``double``) gradients of the gradients' squares."""
    seen = {}
    for lib in (torch_module(), ember):
        xs = leaves(lib, shapes, dtype)
        out = fn(lib, *xs)
        outs = _differentiable(lib, out)
        values = [o.detach().numpy() for o in
                  (out if isinstance(out, (tuple, list)) else (out,)) if isinstance(o, lib.Tensor)]
        grads = lib.autograd.grad(_weighted_sum(lib, outs), xs, allow_unused=True,
                                  create_graph=double)
        # second order: a gradient that does not depend on the inputs (a linear op's) may or
        # may not require grad in either library; its derivative is zero either way
        second = [np.zeros(tuple(x.shape)) for x in xs]
        used = [(k, g) for k, g in enumerate(grads) if g is not None and g.requires_grad]
        if double and used:
            got = lib.autograd.grad(sum((g * g).sum() for _, g in used), xs, allow_unused=True)
            second = [s if g is None else g.detach().numpy() for s, g in zip(second, got)]
        seen[lib] = (structure(lib, out, none_edges), values,
                     [None if g is None else g.detach().numpy() for g in grads] + second)
    (ts, tv, tg), (es, ev, eg) = seen.values()
    assert es == ts
    assert len(ev) == len(tv)
    for a, b in zip(ev, tv):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)
    assert len(eg) == len(tg)
    for a, b in zip(eg, tg):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def torch_module():
    import torch
    return torch

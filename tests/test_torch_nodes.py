"""Ops record the backward nodes torch records: torch's overload numbering (SqueezeBackward1
for squeeze(dim), SortBackward1 for sort(stable=), NormalBackward1..3 by which of mean and
std are tensors) and one node for all outputs of a multi-output op (TopkBackward0,
StdMeanBackward0, CummaxBackward0, …) with torch's output_nr — compared with torch 2.13 on
names, next_functions, values, gradients and second-order gradients."""
from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

from helpers_graph import compare, leaves  # noqa: E402 - after torch's importorskip


def F(lib):
    return lib.nn.functional


OVERLOADS = {
    "squeeze()": (lambda L, x: x.reshape(1, 3, 1, 4).squeeze(), [(3, 4)]),
    "squeeze(dim)": (lambda L, x: x.unsqueeze(1).squeeze(1), [(3, 4)]),
    "squeeze(-1) no-op": (lambda L, x: x.squeeze(-1), [(3, 4)]),
    "squeeze(dim) 0-d": (lambda L, x: x.squeeze(0), [()]),
    "squeeze(dims)": (lambda L, x: x.reshape(1, 3, 1, 4).squeeze((0, 2)), [(3, 4)]),
    "squeeze(()) keeps all": (lambda L, x: x.squeeze(()), [(1, 3)]),
    "squeeze(list) negative": (lambda L, x: x.reshape(3, 1, 4, 1).squeeze([-1, 1]), [(3, 4)]),
    "torch.squeeze(dim)": (lambda L, x: L.squeeze(x.unsqueeze(0), 0), [(3, 4)]),
    "conv1d unbatched": (lambda L, x, w: F(L).conv1d(x, w), [(2, 7), (3, 2, 3)]),
    "avg_pool1d": (lambda L, x: F(L).avg_pool1d(x, 2), [(2, 3, 6)]),
    "max_pool1d": (lambda L, x: F(L).max_pool1d(x, 2), [(2, 3, 6)]),
    "adaptive_avg_pool1d": (lambda L, x: F(L).adaptive_avg_pool1d(x, 3), [(2, 3, 7)]),
    "sort": (lambda L, x: x.sort(1)[0], [(3, 5)]),
    "sort(stable=True)": (lambda L, x: x.sort(dim=0, stable=True)[0], [(4, 3)]),
    "sort(stable=False)": (lambda L, x: L.sort(x, stable=False, descending=True)[0], [(4, 3)]),
}


@pytest.mark.parametrize("case", list(OVERLOADS))
def test_overloads_record_torchs_node_numbers(case):
    fn, shapes = OVERLOADS[case]
    compare(fn, shapes)


@pytest.mark.parametrize("form", ["tensor, float", "float, tensor", "tensor, tensor"])
def test_normal_names_its_overload(form):
    names = []
    for lib in (torch, ember):
        m, s = leaves(lib, [(3,), (3,)])
        args = {"tensor, float": (m, 0.5), "float, tensor": (0.5, s.abs()),
                "tensor, tensor": (m, s.abs())}[form]
        out = lib.normal(*args)
        names.append(out.grad_fn.name())
        grads = lib.autograd.grad(out.sum(), [a for a in args if isinstance(a, lib.Tensor)])
        assert all(np.all(g.numpy() == 0) for g in grads)  # a draw's gradient is zero
    assert names[0] == names[1]


MULTI = {
    "topk": (lambda L, x: x.topk(2, dim=1), [(3, 5)]),
    "topk smallest unsorted": (lambda L, x: L.topk(x, 3, 0, largest=False), [(4, 2)]),
    "topk 0-d": (lambda L, x: x.topk(1), [()]),
    "kthvalue": (lambda L, x: x.kthvalue(2, 0), [(4, 3)]),
    "kthvalue keepdim": (lambda L, x: x.kthvalue(3, -1, keepdim=True), [(2, 5)]),
    "median(dim)": (lambda L, x: x.median(1), [(3, 5)]),
    "median(dim) keepdim": (lambda L, x: x.median(0, keepdim=True), [(4, 2)]),
    "nanmedian(dim)": (lambda L, x: x.nanmedian(-1), [(3, 4)]),
    "median()": (lambda L, x: x.median(), [(3, 5)]),
    "cummax": (lambda L, x: x.cummax(1), [(3, 5)]),
    "cummin": (lambda L, x: L.cummin(x, 0), [(4, 3)]),
    "cummax 0-d": (lambda L, x: x.cummax(0), [()]),
    "std_mean": (lambda L, x: L.std_mean(x, 1), [(3, 5)]),
    "std_mean all": (lambda L, x: L.std_mean(x), [(3, 5)]),
    "var_mean": (lambda L, x: L.var_mean(x, 0, keepdim=True), [(4, 3)]),
    "var_mean correction": (lambda L, x: L.var_mean(x, (0, 1), correction=0), [(2, 3)]),
    "std_mean then only the mean": (lambda L, x: L.std_mean(x, 1)[1], [(3, 4)]),
    "var_mean then only the var": (lambda L, x: L.var_mean(x, 1)[0], [(3, 4)]),
}


@pytest.mark.parametrize("case", list(MULTI))
def test_multi_output_ops_record_one_node(case):
    fn, shapes = MULTI[case]
    compare(fn, shapes)


def test_cummax_and_median_keep_torchs_tie_and_nan_rules():
    rows = [[1.0, 3.0, 3.0, 2.0, np.nan, 5.0], [2.0, 2.0, 1.0, 1.0, 0.0, 0.0]]
    for fn in (lambda L, x: x.cummax(1), lambda L, x: x.cummin(1),
               lambda L, x: x.nanmedian(1), lambda L, x: x.median(1)):
        got = []
        for lib in (torch, ember):
            x = lib.tensor(rows, dtype=lib.float64, requires_grad=True)
            v, i = fn(lib, x)
            (g,) = lib.autograd.grad(v.nan_to_num().sum(), [x])
            got.append((v.detach().numpy(), i.numpy(), g.numpy()))
        for a, b in zip(*got):
            np.testing.assert_array_equal(a, b)


def test_selection_ops_under_vmap_and_jvp():
    x = ember.randn(4, 3, 5)
    for fn in (lambda a: a.topk(2).values, lambda a: a.kthvalue(2, 0).values,
               lambda a: a.median(1).values, lambda a: a.cummax(1).values,
               lambda a: ember.std_mean(a, 1)[0], lambda a: a.squeeze(0),
               lambda a: a.unsqueeze(0).squeeze(), lambda a: a.unsqueeze(1).squeeze((1,))):
        batched = ember.func.vmap(fn)(x)
        looped = ember.stack([fn(x[i]) for i in range(4)])
        np.testing.assert_allclose(batched.numpy(), looped.numpy(), rtol=1e-6)
        t = ember.randn(3, 5)
        _, jt = ember.func.jvp(fn, (x[0],), (t,))
        eps = 1e-3
        fd = (fn(x[0].double() + eps * t.double()) - fn(x[0].double() - eps * t.double())) / (2 * eps)
        np.testing.assert_allclose(jt.numpy(), fd.numpy(), rtol=1e-3, atol=1e-3)


# -- ops torch records as their own node -----------------------------------------------------
def _indices(lib):
    return lib.tensor([[0, 2, 2], [3, 0, 1]])


COMPOSED = {
    "zero_": (lambda L, x: (x * 2).zero_() + x, [(2, 3)]),
    "embedding": (lambda L, w: F(L).embedding(_indices(L), w), [(4, 3)]),
    "embedding padding_idx": (lambda L, w: F(L).embedding(_indices(L), w, padding_idx=2),
                              [(4, 3)]),
    "embedding negative padding_idx": (lambda L, w: F(L).embedding(_indices(L), w,
                                                                    padding_idx=-4), [(4, 3)]),
    "embedding 0-d indices": (lambda L, w: F(L).embedding(L.tensor(1), w), [(4, 3)]),
    "nn.Embedding": (lambda L, w: L.nn.Embedding.from_pretrained(w, freeze=False)(_indices(L)),
                     [(4, 3)]),
}


@pytest.mark.parametrize("case", list(COMPOSED))
def test_composed_ops_record_torchs_node(case):
    fn, shapes = COMPOSED[case]
    compare(fn, shapes)


def test_embedding_scale_grad_by_freq_first_order():
    # torch's double backward of embedding_dense_backward ignores scale_grad_by_freq (its
    # embedding_dense_double_backward); ember's is the exact derivative of the scaled
    # gradient, so only first order is compared here
    compare(lambda L, w: F(L).embedding(_indices(L), w, scale_grad_by_freq=True, padding_idx=3),
            [(4, 3)], double=False)


def test_embedding_under_vmap_jvp_and_bad_indices():
    w = ember.randn(5, 3)
    idx = ember.tensor([[0, 4], [2, 2], [1, 3]])
    batched = ember.func.vmap(lambda i: F(ember).embedding(i, w))(idx)
    np.testing.assert_array_equal(batched.numpy(), w.numpy()[idx.numpy()])
    ws = ember.randn(3, 5, 3)
    batched = ember.func.vmap(lambda i, ww: F(ember).embedding(i, ww))(idx, ws)
    np.testing.assert_array_equal(batched.numpy(), np.stack([ws.numpy()[k][idx.numpy()[k]]
                                                             for k in range(3)]))
    t = ember.randn(5, 3)
    _, jt = ember.func.jvp(lambda ww: F(ember).embedding(idx, ww), (w,), (t,))
    np.testing.assert_array_equal(jt.numpy(), t.numpy()[idx.numpy()])
    with pytest.raises(IndexError, match="index out of range in self"):
        F(ember).embedding(ember.tensor([5]), w)
    with pytest.raises(IndexError, match="index out of range in self"):
        F(ember).embedding(ember.tensor([-1]), w.requires_grad_())


BOUNDS = {
    "clamp_min number": (lambda L, x: x.clamp_min(0.25), [(3, 4)]),
    "clamp_max number": (lambda L, x: L.clamp_max(x, -0.25), [(3, 4)]),
    "clamp_min tensor": (lambda L, x, b: x.clamp_min(b), [(3, 4), (4,)]),
    "clamp_max tensor": (lambda L, x, b: L.clamp_max(x, b), [(3, 4), (3, 1)]),
    "clamp(min=) stays clamp": (lambda L, x: x.clamp(min=0.1), [(3, 4)]),
    "margin_ranking_loss's clamp": (
        lambda L, a, b: F(L).margin_ranking_loss(a, b, L.ones(5), reduction="none").grad_fn
        .name(), [(5,), (5,)]),
}


@pytest.mark.parametrize("case", list(BOUNDS))
def test_one_sided_clamps_record_torchs_nodes(case):
    fn, shapes = BOUNDS[case]
    if case == "margin_ranking_loss's clamp":
        assert fn(torch, *leaves(torch, shapes)) == fn(ember, *leaves(ember, shapes))
        return
    compare(fn, shapes)


def test_one_sided_clamps_on_integers_nan_and_errors():
    for lib in (torch, ember):
        x = lib.tensor([-3, 0, 5])
        assert x.clamp_min(1).tolist() == [1, 1, 5] and x.clamp_max(1).tolist() == [-3, 0, 1]
        assert x.clamp_min(0.5).dtype == lib.float32
        y = lib.tensor([float("nan"), 1.0])
        assert np.isnan(y.clamp_min(2.0)[0].item())
    with pytest.raises(RuntimeError, match="clamp is not supported for complex types"):
        ember.zeros(2, dtype=ember.complex64).clamp_min(0)
    with pytest.raises(RuntimeError, match="clamp_max"):
        ember.zeros(2, 3).clamp_max(ember.zeros(4))


PADS = {
    "constant": (lambda L, x: F(L).pad(x, (1, 2)), [(2, 3, 5)]),
    "constant value, 2 dims": (lambda L, x: F(L).pad(x, (2, 1, 1, 0), value=-1.5), [(2, 3, 5)]),
    "constant crop": (lambda L, x: F(L).pad(x, (-1, 2, 0, -1)), [(2, 3, 5)]),
    "constant nothing": (lambda L, x: F(L).pad(x, (0, 0)), [(2, 3)]),
    "torch.constant_pad_nd": (lambda L, x: L.constant_pad_nd(x, (1, 1), 2.0), [(3, 4)]),
    "reflect 1-D": (lambda L, x: F(L).pad(x, (2, 3), mode="reflect"), [(2, 3, 5)]),
    "reflect 2-D": (lambda L, x: F(L).pad(x, (1, 1, 2, 0), mode="reflect"), [(1, 2, 3, 4)]),
    "reflect 3-D": (lambda L, x: F(L).pad(x, (1, 0, 0, 1, 1, 1), mode="reflect"),
                    [(1, 2, 3, 3, 3)]),
    "replicate 1-D": (lambda L, x: F(L).pad(x, (3, 1), mode="replicate"), [(2, 3, 4)]),
    "replicate 2-D crop": (lambda L, x: F(L).pad(x, (1, -2, 2, 1), mode="replicate"),
                           [(2, 3, 4)]),
    "nn.ReflectionPad2d": (lambda L, x: L.nn.ReflectionPad2d(1)(x), [(1, 2, 3, 3)]),
    "nn.ZeroPad2d": (lambda L, x: L.nn.ZeroPad2d((1, 0, 2, 1))(x), [(1, 2, 3, 3)]),
}


@pytest.mark.parametrize("case", list(PADS))
def test_pads_record_torchs_nodes(case):
    fn, shapes = PADS[case]
    compare(fn, shapes)


def test_pads_on_other_dtypes_under_vmap_and_jvp():
    for lib in (torch, ember):
        x = lib.tensor([[1, 2], [3, 4]])
        assert F(lib).pad(x, (1, 0), value=7).tolist() == [[7, 1, 2], [7, 3, 4]]
        b = lib.tensor([True, False])
        assert F(lib).pad(b, (0, 1)).tolist() == [True, False, False]
    x = ember.randn(4, 3, 5)
    for mode in ("constant", "reflect", "replicate"):
        fn = lambda a: F(ember).pad(a, (2, 1), mode=mode)   # noqa: E731
        np.testing.assert_array_equal(ember.func.vmap(fn)(x).numpy(),
                                      np.stack([fn(x[i]).numpy() for i in range(4)]))
        t = ember.randn(3, 5)
        _, jt = ember.func.jvp(fn, (x[0],), (t,))
        np.testing.assert_array_equal(jt.numpy(), fn(t).numpy())
    _, jt = ember.func.jvp(lambda a: F(ember).pad(a, (1, 1), value=3.0), (x[0],), (x[1],))
    np.testing.assert_array_equal(jt.numpy(), F(ember).pad(x[1], (1, 1)).numpy())
    with pytest.raises(RuntimeError, match="negative output size"):
        F(ember).pad(ember.zeros(2, 3), (-2, -2))


RSUB = {
    "1 - x": (lambda L, x: 1 - x, [(3, 4)]),
    "rsub number": (lambda L, x: L.rsub(x, 2.5), [(3, 4)]),
    "rsub tensors": (lambda L, x, y: L.rsub(x, y), [(3, 4), (4,)]),
    "rsub alpha": (lambda L, x, y: L.rsub(x, y, alpha=-0.5), [(3, 1), (2, 1, 4)]),
    "tensor.__rsub__(tensor)": (lambda L, x, y: x.__rsub__(y), [(3, 4), (3, 4)]),
}


@pytest.mark.parametrize("case", list(RSUB))
def test_rsub_records_torchs_nodes(case):
    fn, shapes = RSUB[case]
    compare(fn, shapes)


def test_rsub_dtypes_and_errors_match_torch():
    for lib in (torch, ember):
        assert str(lib.rsub(lib.tensor([1, 2]), 3).dtype).split(".")[-1] == "int64"
        assert lib.rsub(lib.tensor([1, 2]), lib.tensor([0.5])).tolist() == [-0.5, -1.5]
        with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with two bool"):
            lib.rsub(lib.tensor([True]), lib.tensor([False]))


# -- composites torch records as one node: activations -----------------------------------------
ACTIVATIONS = {
    "glu": (lambda L, x: F(L).glu(x), [(3, 4)]),
    "glu dim=0": (lambda L, x: F(L).glu(x, 0), [(4, 3)]),
    "glu transposed": (lambda L, x: F(L).glu(x.t(), -2), [(3, 4)]),
    "nn.GLU": (lambda L, x: L.nn.GLU(1)(x), [(2, 6, 2)]),
    "logsigmoid": (lambda L, x: F(L).logsigmoid(x * 8), [(3, 4)]),
    "nn.LogSigmoid": (lambda L, x: L.nn.LogSigmoid()(x), [(5,)]),
    "hardshrink": (lambda L, x: F(L).hardshrink(x, 0.6), [(3, 4)]),
    "Tensor.hardshrink": (lambda L, x: x.hardshrink(), [(3, 4)]),
    "softshrink": (lambda L, x: F(L).softshrink(x, 0.3), [(3, 4)]),
    "celu": (lambda L, x: F(L).celu(x), [(3, 4)]),
    "celu alpha": (lambda L, x: L.celu(x, 1.5), [(3, 4)]),
    "celu_": (lambda L, x: L.celu_(x * 1, 2.0), [(3, 4)]),
    "F.celu inplace": (lambda L, x: F(L).celu(x + 0, inplace=True), [(3, 4)]),
}


@pytest.mark.parametrize("case", list(ACTIVATIONS))
def test_activations_record_torchs_node(case):
    fn, shapes = ACTIVATIONS[case]
    compare(fn, shapes)


_EDGES = [float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 0.5, -0.5, 0.25, -40.0, 40.0, 3.0]


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
@pytest.mark.parametrize("name", ["logsigmoid", "hardshrink", "softshrink", "celu", "glu"])
def test_activation_kernels_match_torch_at_the_edges(name, dtype):
    values = np.array(_EDGES + [1.5, -2.5, 7.0], dtype=np.float64).reshape(2, 7)
    args = (0,) if name == "glu" else ()
    got, want = (getattr(F(L), name)(L.tensor(values, dtype=getattr(L, dtype)), *args)
                 for L in (ember, torch))
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    g, w = got.float().numpy(), want.float().numpy()
    np.testing.assert_allclose(g, w, rtol=1e-6 if dtype in ("float64", "float32") else 0,
                               atol=0, equal_nan=True)
    # torch's softshrink zero is x * 0 in its vector loop and +0 in its scalar tail: ember's +0
    signed = ~np.isnan(w) & ((w != 0) | (name != "softshrink"))
    assert (np.signbit(g) == np.signbit(w))[signed].all()


@pytest.mark.parametrize("name", ["logsigmoid", "hardshrink", "softshrink", "glu"])
def test_activations_refuse_integers_as_torch(name):
    for L in (torch, ember):
        with pytest.raises(RuntimeError, match="not implemented for"):
            getattr(F(L), name)(L.tensor([[1, -2]]))


def test_glu_errors_match_torch():
    for L in (torch, ember):
        with pytest.raises(RuntimeError, match="Halving dimension must be even"):
            F(L).glu(L.zeros(3, 3))
        with pytest.raises(RuntimeError, match="glu does not support scalars"):
            F(L).glu(L.tensor(1.0))
        with pytest.raises(IndexError, match="Dimension out of range"):
            F(L).glu(L.zeros(2, 2), 2)


# -- composites torch records as one node: products ---------------------------------------------
PRODUCTS = {
    "baddbmm": (lambda L, s, a, b: L.baddbmm(s, a, b), [(2, 3, 5), (2, 3, 4), (2, 4, 5)]),
    "baddbmm broadcast self, scaled": (lambda L, s, a, b: L.baddbmm(s, a, b, beta=0.5, alpha=-2),
                                       [(5,), (2, 3, 4), (2, 4, 5)]),
    "Tensor.baddbmm beta=0": (lambda L, s, a, b: s.baddbmm(a, b, beta=0),
                              [(1, 3, 1), (2, 3, 4), (2, 4, 5)]),
    "addmv": (lambda L, s, m, v: L.addmv(s, m, v), [(3,), (3, 4), (4,)]),
    "addmv broadcast, scaled": (lambda L, s, m, v: L.addmv(s, m, v, beta=2, alpha=0.5),
                                [(1,), (3, 4), (4,)]),
    "addr": (lambda L, s, a, b: L.addr(s, a, b), [(3, 4), (3,), (4,)]),
    "addr broadcast, scaled": (lambda L, s, a, b: s.addr(a, b, beta=-1, alpha=3),
                               [(4,), (3,), (4,)]),
    "addbmm": (lambda L, s, a, b: L.addbmm(s, a, b), [(3, 5), (2, 3, 4), (2, 4, 5)]),
    "addbmm broadcast, scaled": (lambda L, s, a, b: L.addbmm(s, a, b, beta=0.5, alpha=2),
                                 [(5,), (2, 3, 4), (2, 4, 5)]),
    "trace": (lambda L, x: L.trace(x), [(3, 3)]),
    "Tensor.trace wide": (lambda L, x: (x * 2).trace(), [(2, 5)]),
    "vdot": (lambda L, a, b: L.vdot(a, b), [(5,), (5,)]),
    "vdot one leaf": (lambda L, a, b: L.vdot(a.detach(), b * 1), [(5,), (5,)]),
}


@pytest.mark.parametrize("case", list(PRODUCTS))
def test_products_record_torchs_node(case):
    fn, shapes = PRODUCTS[case]
    compare(fn, shapes)


@pytest.mark.parametrize("name", ["vdot", "addmv", "addr", "baddbmm", "addbmm", "trace"])
def test_complex_products_take_torchs_conjugates(name):
    shapes = {"vdot": [(4,), (4,)], "addmv": [(3,), (3, 4), (4,)], "addr": [(3, 4), (3,), (4,)],
              "baddbmm": [(2, 3, 5), (2, 3, 4), (2, 4, 5)],
              "addbmm": [(3, 5), (2, 3, 4), (2, 4, 5)], "trace": [(3, 3)]}[name]
    rs = np.random.RandomState(1)
    values = [rs.randn(*s) + 1j * rs.randn(*s) for s in shapes]
    seen = []
    for L in (torch, ember):
        xs = [L.tensor(v, requires_grad=True) for v in values]
        kw = {} if name in ("vdot", "trace") else {"beta": 0.5 - 1j, "alpha": 2 + 1j}
        out = getattr(L, name)(*xs, **kw)
        loss = (out * out.conj()).real.sum() + out.imag.sum()
        grads = L.autograd.grad(loss, xs)
        seen.append((out.grad_fn.name(), out.detach().numpy(), [g.numpy() for g in grads]))
    (tn, tv, tg), (en, ev, eg) = seen
    assert en == tn
    np.testing.assert_allclose(ev, tv, rtol=1e-12, atol=1e-12)
    for a, b in zip(eg, tg):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int64", "int32"])
def test_product_kernels_match_torch_across_dtypes(dtype):
    rs = np.random.RandomState(2)
    shapes = {"addmv": [(3,), (3, 4), (4,)], "addr": [(3, 4), (3,), (4,)],
              "baddbmm": [(2, 3, 5), (2, 3, 4), (2, 4, 5)],
              "addbmm": [(3, 5), (2, 3, 4), (2, 4, 5)], "trace": [(4, 3)]}
    for name, ss in shapes.items():
        values = [rs.randint(-4, 5, size=s) for s in ss]
        kw = {} if name == "trace" else {"beta": 2, "alpha": 3}
        got, want = (getattr(L, name)(*[L.tensor(v, dtype=getattr(L, dtype)) for v in values],
                                      **kw) for L in (ember, torch))
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1], name
        np.testing.assert_array_equal(got.float().numpy(), want.float().numpy(), err_msg=name)


def test_fused_product_errors_name_the_shapes():
    for L in (torch, ember):
        with pytest.raises(RuntimeError):
            L.addr(L.zeros(2, 4), L.zeros(3), L.zeros(4))
        with pytest.raises(RuntimeError):
            L.addbmm(L.zeros(3, 5), L.zeros(2, 3, 4), L.zeros(3, 4, 5))
        with pytest.raises(RuntimeError):
            L.baddbmm(L.zeros(2, 2, 5), L.zeros(2, 3, 4), L.zeros(2, 4, 5))


# -- sgn: its own node for real and complex inputs ------------------------------------------------
def test_sgn_records_torchs_node_for_real_inputs():
    # (torch's zero gradient is a ZeroTensor, which refuses .numpy(): first order only)
    compare(lambda L, x: L.sgn(x) * x, [(3, 4)], double=False)
    compare(lambda L, x: x.sgn() + x, [(5,)], double=False)


def test_sgn_of_complex_values_matches_torch():
    values = np.array([1 + 1j, -2j, 0j, 3 + 0j, -0.5 + 2j, complex("nan+1j"), complex("inf")])
    seen = []
    for L in (torch, ember):
        z = L.tensor(values[:5], requires_grad=True)
        out = L.sgn(z)
        w = L.tensor(np.linspace(-1, 1, 5) + 0.3j)
        (g,) = L.autograd.grad((out * w).real.sum(), z, create_graph=True)
        (gg,) = L.autograd.grad((g * g.conj()).real.sum(), z)
        edge = L.sgn(L.tensor(values)).numpy()
        seen.append((out.grad_fn.name(), out.detach().numpy(), g.detach().numpy(), gg.numpy(),
                     edge))
    (tn, *t), (en, *e) = seen
    assert en == tn == "SgnBackward0"
    for a, b in zip(e, t):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12, equal_nan=True)


def test_0d_results_of_the_new_kernels_match_torch():
    calls = [lambda L: L.sgn(L.tensor(1 + 1j)), lambda L: L.sgn(L.tensor(0j)),
             lambda L: L.sgn(L.tensor(-2.0)), lambda L: L.trace(L.ones(0, 0)),
             lambda L: L.vdot(L.ones(0), L.ones(0)), lambda L: L.take(L.ones(2, 2), L.tensor(3)),
             lambda L: F(L).logsigmoid(L.tensor(-1.0)), lambda L: F(L).softshrink(L.tensor(2.0)),
             lambda L: F(L).hardshrink(L.tensor(0.1)), lambda L: F(L).celu(L.tensor(-1.0))]
    for call in calls:
        got, want = call(ember), call(torch)
        assert tuple(got.shape) == tuple(want.shape) == ()
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int64", "int8", "bool"])
def test_sgn_of_real_dtypes_matches_torch(dtype):
    values = [0, 1, -2, 3, float("nan"), -0.0] if dtype.startswith("float") else [0, 1, -2, 3]
    if dtype == "bool":
        values = [True, False]
    got, want = (L.sgn(L.tensor(values, dtype=getattr(L, dtype))) for L in (ember, torch))
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_array_equal(got.numpy(), want.numpy())


# -- take and put: flat indexing, one node each ---------------------------------------------------
def _flat(lib, values):
    return lib.tensor(values)


FLAT = {
    "take": (lambda L, x: L.take(x, _flat(L, [[0, 11], [5, -1]])), [(3, 4)]),
    "Tensor.take 0-d index": (lambda L, x: x.t().take(_flat(L, 7)), [(3, 4)]),
    "take repeated": (lambda L, x: x.take(_flat(L, [2, 2, 2, 0])), [(5,)]),
    "put": (lambda L, x, s: x.put(_flat(L, [1, -1, 4]), s), [(3, 4), (3,)]),
    "put from a slice": (lambda L, x, s: x.put(_flat(L, [[1, 3]]), s[:2].reshape(1, 2)),
                         [(2, 3), (4,)]),
    "put accumulate": (lambda L, x, s: L.put(x, _flat(L, [2, 2, -10]), s, accumulate=True),
                       [(3, 4), (3,)]),
    "put into a non-leaf": (lambda L, x, s: (x * 2).put(_flat(L, [0, 5]), s * s), [(2, 3), (2,)]),
}


@pytest.mark.parametrize("case", list(FLAT))
def test_take_and_put_record_torchs_node(case):
    fn, shapes = FLAT[case]
    compare(fn, shapes)


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "complex64"])
def test_take_and_put_on_other_dtypes_match_torch(dtype):
    rs = np.random.RandomState(3)
    x = rs.randn(3, 4) * 4
    seen = []
    for L in (torch, ember):
        t = L.tensor(x).to(getattr(L, dtype))
        src = L.tensor(x[0, :3]).to(getattr(L, dtype))
        idx = L.tensor([3, -2, 0])
        acc = dtype != "bool"
        seen.append([r.numpy() for r in (t.take(idx), t.t().take(idx), t.put(idx, src),
                                         t.put(idx, src, accumulate=acc))])
    for a, b in zip(*seen):
        np.testing.assert_array_equal(a, b)


def test_take_and_put_errors_match_torch():
    for L in (torch, ember):
        x = L.zeros(2, 3)
        with pytest.raises(IndexError, match="out of range: tried to access index 6 on a tensor "
                                             "of 6 elements"):
            x.take(L.tensor([6]))
        with pytest.raises(IndexError, match="tried to access index -7"):
            x.put(L.tensor([-7]), L.tensor([1.0]))
        with pytest.raises(RuntimeError, match="Expected a long tensor for index"):
            x.put(L.tensor([0], dtype=L.int32), L.tensor([1.0]))
        with pytest.raises(IndexError, match="same number of elements"):
            x.put(L.tensor([0, 1]), L.tensor([1.0]))


# -- masked_fill: a number is no input of torch's node (MaskedFillBackward0), a tensor is (…1) --
MASKED_FILL = {
    "number": (lambda L, x: x.masked_fill(x > 0, 2.5), [(3, 4)]),
    "int number, broadcast mask": (lambda L, x: x.masked_fill(L.tensor([True, False, True, False]),
                                                              -1), [(3, 4)]),
    "torch.masked_fill number": (lambda L, x: L.masked_fill(x * 2, x < 0, 0.0), [(3, 4)]),
    "tensor value": (lambda L, x, v: x.masked_fill(x > 0, v.sum()), [(3, 4), (2,)]),
    "tensor value without grad": (lambda L, x: x.masked_fill(x > 0, L.tensor(3.0,
                                                                            dtype=x.dtype)),
                                  [(3, 4)]),
}


@pytest.mark.parametrize("case", list(MASKED_FILL))
def test_masked_fill_records_torchs_overload(case):
    fn, shapes = MASKED_FILL[case]
    compare(fn, shapes)


# -- in place: torch records the functional op's node --------------------------------------------
INPLACE = {
    "addmm_": (lambda L, s, a, b: (s * 1).addmm_(a, b, beta=0.5), [(3, 4), (3, 2), (2, 4)]),
    "addmv_": (lambda L, s, m, v: (s * 1).addmv_(m, v, alpha=2), [(3,), (3, 4), (4,)]),
    "addr_": (lambda L, s, a, b: (s * 1).addr_(a, b), [(3, 4), (3,), (4,)]),
    "baddbmm_": (lambda L, s, a, b: (s * 1).baddbmm_(a, b), [(2, 3, 5), (2, 3, 4), (2, 4, 5)]),
    "addbmm_": (lambda L, s, a, b: (s * 1).addbmm_(a, b, beta=-1), [(3, 5), (2, 3, 4), (2, 4, 5)]),
    "put_": (lambda L, x, s: (x * 1).put_(L.tensor([1, -1]), s), [(3, 4), (2,)]),
    "put_ accumulate": (lambda L, x, s: (x * 1).put_(L.tensor([1, 1]), s, accumulate=True),
                        [(3, 4), (2,)]),
    "masked_fill_ number": (lambda L, x: (x * 1).masked_fill_(x > 0, -2.0), [(3, 4)]),
    "masked_fill_ tensor": (lambda L, x, v: (x * 1).masked_fill_(x > 0, v[0]), [(3, 4), (2,)]),
    "masked_fill_ on a view": (lambda L, x: (x * 1).t().masked_fill_(L.tensor([True, False, True]),
                                                                     0.5), [(3, 4)]),
}


@pytest.mark.parametrize("case", list(INPLACE))
def test_inplace_forms_record_torchs_node(case):
    fn, shapes = INPLACE[case]
    compare(fn, shapes)


def test_inplace_forms_check_shapes_and_versions_as_torch():
    for L in (torch, ember):
        x = L.zeros(3, 4)
        v = x._version
        x.masked_fill_(x == 0, 1.0)
        x.put_(L.tensor([0]), L.tensor([5.0]))
        x.addmm_(L.ones(3, 2), L.ones(2, 4))
        assert x._version == v + 3
        with pytest.raises(RuntimeError):
            L.zeros(4).masked_fill_(L.ones(2, 4, dtype=L.bool), 1.0)
        with pytest.raises(RuntimeError):
            L.zeros(1, 4).addmm_(L.ones(3, 2), L.ones(2, 4))
        z = L.tensor([0j, 3 + 4j])
        z.sgn_()
        np.testing.assert_allclose(z.numpy(), [0, 0.6 + 0.8j])

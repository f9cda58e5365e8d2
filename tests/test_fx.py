"""ember.fx against torch.fx: the same programs traced by both give the same graphs and the
same generated code (with ``torch`` read as ``ember``), and the documented torch.fx examples —
graph surgery, Interpreter/Transformer, replace_pattern, ShapeProp — behave alike."""
from __future__ import annotations

import copy
import io
import contextlib
import operator
import time

import pytest

import ember
import ember.fx as fx
from ember import nn
from ember.nn import functional as F

torch = pytest.importorskip("torch")
import torch.fx  # noqa: E402


def _twins(make):
    """The module ``make(lib)`` builds, for ember and for torch, with equal parameters."""
    ember.manual_seed(0)
    e = make(ember)
    t = make(torch)
    t.load_state_dict({k: torch.tensor(v.detach().numpy()) for k, v in e.state_dict().items()})
    return e, t


def _code(gm, lib):
    # torch names F.gelu by its C binding (torch._C._nn.gelu); ember by its public name
    return gm.code.replace("torch._C._nn.", "torch.nn.functional.") \
        .replace(f"{lib}.", "LIB.").replace(f"{lib}_", "LIB_")


def _nodes(gm):
    out = []
    for n in gm.graph.nodes:
        target = n.target if isinstance(n.target, str) else n.target.__name__
        out.append((n.op, n.name, target, len(n.args), tuple(n.kwargs), len(n.users)))
    return out


def make_net(lib):
    class Net(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.param = lib.nn.Parameter(lib.rand(3, 4))
            self.linear = lib.nn.Linear(4, 5)
            self.seq = lib.nn.Sequential(lib.nn.Linear(5, 5), lib.nn.ReLU())

        def forward(self, x, y=2):
            a = self.linear(x + self.param).clamp(min=0.0, max=1.0)
            b = self.seq(lib.relu(a) * y)
            c = b.shape[0]
            d = b.view(c, -1)
            e = lib.cat([d, d], dim=1)
            f = -e @ e.t()
            return lib.nn.functional.gelu(f).sum(dim=-1), x.size(1)
    return Net()


def test_symbolic_trace_gives_torch_fx_graph_and_code():
    e, t = _twins(make_net)
    ge, gt = fx.symbolic_trace(e), torch.fx.symbolic_trace(t)
    assert _nodes(ge) == _nodes(gt)
    assert _code(ge, "ember") == _code(gt, "torch")
    x = ember.randn(3, 4)
    got, want = ge(x), t(torch.tensor(x.numpy()))
    assert got[1] == want[1] == 4
    assert (got[0].detach().numpy() - want[0].detach().numpy()).__abs__().max() < 1e-5
    assert str(ge.graph).startswith("graph(x, y):\n    %x : [num_users=2] = placeholder")
    assert "class Net(ember.nn.Module):\n    def forward(self, x, y = 2):" in \
        ge.print_readable(print_output=False)


def test_print_tabular_lists_every_node():
    ge = fx.symbolic_trace(make_net(ember))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        ge.graph.print_tabular()
    lines = out.getvalue().splitlines()
    assert lines[0].split() == ["opcode", "name", "target", "args", "kwargs"]
    assert len(lines) == 2 + len(ge.graph.nodes)
    assert any(line.split()[:3] == ["call_function", "relu", "ember.relu"] for line in lines)


def test_concrete_args_specialise_control_flow_and_data_dependent_flow_raises():
    def f(x, flag):
        if flag:
            return x + 1
        return x - 1
    for lib, trace in ((ember, fx.symbolic_trace), (torch, torch.fx.symbolic_trace)):
        g = trace(f, concrete_args={"flag": True})
        assert "eq = flag_1 == True" in g.code and "add = x + 1" in g.code
        assert g(lib.ones(2), True).tolist() == [2.0, 2.0]
        with pytest.raises(AssertionError, match="specialized to have value True"):
            g(lib.ones(2), False)

    def data_dependent(x):
        if x.sum() > 0:
            return x
        return -x
    with pytest.raises(fx.TraceError, match="control flow"):
        fx.symbolic_trace(data_dependent)


def my_ratio(x):
    return len(x) / x.shape[-1]


fx.wrap("my_ratio")


def test_wrap_records_a_global_function_and_leaf_modules_are_configurable():
    def f(x):
        return x * my_ratio(x)
    gm = fx.symbolic_trace(f)
    (call,) = [n for n in gm.graph.nodes if n.op == "call_function" and n.target is my_ratio]
    x = ember.ones(2, 4)
    assert gm(x).tolist() == [[0.5] * 4] * 2

    class Block(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = ember.nn.Linear(3, 3)

        def forward(self, x):
            return self.a(x).relu()

    class Outer(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.block = Block()

        def forward(self, x):
            return self.block(x) + 1

    class BlockLeaf(fx.Tracer):
        def is_leaf_module(self, m, qualname):
            return isinstance(m, Block) or super().is_leaf_module(m, qualname)
    default = fx.symbolic_trace(Outer())
    assert [n.target for n in default.graph.nodes if n.op == "call_module"] == ["block.a"]
    graph = BlockLeaf().trace(Outer())
    assert [n.target for n in graph.nodes if n.op == "call_module"] == ["block"]


def test_graph_surgery_as_in_the_torch_fx_docs():
    """Insert a relu after every add, swap ``add`` for ``mul``, delete dead code."""
    def f(x, y):
        z = x + y
        unused = z * 3  # noqa: F841 - dead code the pass removes
        return ember.neg(z)

    def f_torch(x, y):
        z = x + y
        unused = z * 3  # noqa: F841
        return torch.neg(z)
    results = []
    for lib, trace, fn in ((ember, fx.symbolic_trace, f), (torch, torch.fx.symbolic_trace,
                                                          f_torch)):
        gm = trace(fn)
        g = gm.graph
        for node in g.nodes:
            if node.op == "call_function" and node.target is operator.add:
                with g.inserting_after(node):
                    new = g.call_function(lib.relu, args=(node,))
                    node.replace_all_uses_with(new)
                    new.args = (node,)              # the relu itself still reads the add
                node.target = operator.mul
        assert g.eliminate_dead_code()
        g.lint()
        gm.recompile()
        x, y = lib.tensor([1.0, -2.0]), lib.tensor([3.0, 1.0])
        results.append((gm(x, y).tolist(), _code(gm, lib.__name__)))
    assert results[0] == results[1]
    assert results[0][0] == [-3.0, -0.0]
    gm = fx.symbolic_trace(f)
    add = next(n for n in gm.graph.nodes if n.target is operator.add)
    with pytest.raises(RuntimeError, match="still had 2 users"):
        gm.graph.erase_node(add)


class _Profiler(fx.Interpreter):
    """The torch.fx docs' profiling interpreter: the time each node takes."""

    def run(self, *args):
        self.times = {}
        return super().run(*args)

    def run_node(self, n):
        t0 = time.perf_counter()
        out = super().run_node(n)
        self.times[n.name] = time.perf_counter() - t0
        return out


def test_interpreter_profiles_each_node_and_transformer_rewrites():
    e, _ = _twins(make_net)
    gm = fx.symbolic_trace(e)
    x = ember.randn(3, 4)
    prof = _Profiler(gm)
    got = prof.run(x)
    assert (got[0] - gm(x)[0]).abs().max().item() == 0 and got[1] == 4
    assert set(prof.times) == {n.name for n in gm.graph.nodes}

    class ReluToSigmoid(fx.Transformer):
        def call_function(self, target, args, kwargs):
            if target is ember.relu:
                target = ember.sigmoid
            return super().call_function(target, args, kwargs)
    new = ReluToSigmoid(gm).transform()
    assert "ember.sigmoid(clamp)" in new.code and "ember.relu" not in new.code
    want = e.seq(ember.sigmoid(e.linear(x + e.param).clamp(0.0, 1.0)) * 2)
    assert new(x)[0].shape == got[0].shape
    inner = fx.Interpreter(new)
    assert (inner.run(x)[0] - new(x)[0]).abs().max().item() == 0
    del want


def test_replace_pattern_matches_torch_fx():
    def make(lib):
        class M(lib.nn.Module):
            def forward(self, x, w1, w2):
                m1 = lib.cat([w1, w2]).sum()
                m2 = lib.cat([w1, w2]).sum()
                return x + lib.max(m1) + lib.max(m2)

        def pattern(w1, w2):
            return lib.cat([w1, w2]).sum()

        def replacement(w1, w2):
            return lib.stack([w1, w2])
        return M(), pattern, replacement
    codes = []
    for lib, trace, replace in ((ember, fx.symbolic_trace, fx.replace_pattern),
                                (torch, torch.fx.symbolic_trace,
                                 torch.fx.subgraph_rewriter.replace_pattern)):
        m, pattern, replacement = make(lib)
        gm = trace(m)
        matches = replace(gm, pattern, replacement)
        assert len(matches) == 2
        codes.append(_code(gm, lib.__name__))
        x, w = lib.ones(2), lib.ones(2)
        assert gm(x, w, w).tolist() == [3.0, 3.0]
    assert codes[0] == codes[1]


def test_shape_prop_records_torchs_shapes_dtypes_and_strides():
    e, t = _twins(make_net)
    ge, gt = fx.symbolic_trace(e), torch.fx.symbolic_trace(t)
    x = ember.randn(3, 4)
    fx.passes.shape_prop.ShapeProp(ge).propagate(x)
    from torch.fx.passes.shape_prop import ShapeProp as TorchShapeProp
    TorchShapeProp(gt).propagate(torch.tensor(x.numpy()))
    compared = 0
    for a, b in zip(ge.graph.nodes, gt.graph.nodes):
        ma, mb = a.meta.get("tensor_meta"), b.meta.get("tensor_meta")
        assert (ma is None) == (mb is None), a.name
        if ma is not None and hasattr(ma, "shape"):
            assert tuple(ma.shape) == tuple(mb.shape) and tuple(ma.stride) == tuple(mb.stride)
            assert ma.dtype.name == str(mb.dtype).split(".")[1]
            assert ma.requires_grad == mb.requires_grad
            compared += 1
    assert compared >= 12


def test_a_traced_graph_module_compiles_and_deep_copies():
    e, _ = _twins(make_net)
    gm = fx.symbolic_trace(e)
    compiled = ember.compile(gm)
    x = ember.randn(3, 4)
    with ember.no_grad():
        for _ in range(2):
            a, b = compiled(x), gm(x)
            assert (a[0] - b[0]).abs().max().item() < 1e-6 and a[1] == b[1]
    (entry,) = compiled._compiled.entries()
    assert entry.graph is not None and "addmm" in entry.graph.op_names()
    twin = copy.deepcopy(gm)
    assert twin.code == gm.code and twin.param is not gm.param
    assert (twin(x)[0] - gm(x)[0]).abs().max().item() == 0


# -- ember's functional modules traced through, and proxies outside a trace (pytorch/examples fx) --
def test_a_functional_module_traced_as_the_root_records_its_functional():
    gm = fx.symbolic_trace(nn.LeakyReLU(0.2))
    calls = [n for n in gm.graph.nodes if n.op == "call_function"]
    assert [n.target for n in calls] == [F.leaky_relu]
    x = ember.randn(4, 3)
    assert ember.equal(gm(x), F.leaky_relu(x, 0.2))


def test_a_custom_tracer_can_trace_through_relu():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.relu = nn.ReLU()

        def forward(self, x):
            return self.relu(x)

    class Lowering(fx.Tracer):
        def is_leaf_module(self, m, qualname):
            return not isinstance(m, nn.ReLU) and super().is_leaf_module(m, qualname)

    graph = Lowering().trace(M())
    assert [(n.op, n.target) for n in graph.nodes if n.op.startswith("call")] == \
        [("call_function", F.relu)]


def test_a_module_called_with_proxies_outside_a_trace_inlines_into_their_graph():
    """pytorch/examples fx/inline_function.py: replace a call_module node by the module's body."""
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.relu = nn.ReLU()

        def forward(self, x):
            return self.relu(x) + 1.0

    m = fx.symbolic_trace(M())
    for node in list(m.graph.nodes):
        if (node.op, node.target) == ("call_module", "relu"):
            with m.graph.inserting_before(node):
                out = m.relu(*(fx.Proxy(a) for a in node.args))
                node.replace_all_uses_with(out.node)
                m.graph.erase_node(node)
    m.recompile()
    assert [n.op for n in m.graph.nodes] == ["placeholder", "call_function", "call_function",
                                             "output"]
    x = ember.randn(5)
    assert ember.equal(m(x), x.relu() + 1.0)
    assert isinstance(out.tracer, fx.proxy.GraphAppendingTracer)   # where torch.fx has it


def test_a_refused_argument_with_torch_function_gets_the_call():
    """torch's protocol, where ember refuses the argument: the type's __torch_function__ runs."""
    class Boxed:
        def __init__(self, t):
            self.t = t

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            unbox = [a.t if isinstance(a, Boxed) else a for a in args]
            return Boxed(func(*unbox, **(kwargs or {})))

    r = ember.add(Boxed(ember.ones(2)), 2)
    assert isinstance(r, Boxed) and r.t.tolist() == [3.0, 3.0]
    r = F.relu(Boxed(ember.tensor([-1.0, 2.0])))
    assert r.t.tolist() == [0.0, 2.0]
    with pytest.raises(TypeError, match="must be Tensor"):
        F.relu([1.0])        # no protocol: the usual error

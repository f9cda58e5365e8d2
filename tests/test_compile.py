"""ember.compile: capture through the dispatcher, guards, graph breaks, replay (values and
gradients against eager), explain, the torch.compile surface."""
from __future__ import annotations

import pytest

import ember
from ember import nn
from ember.compiler import GraphBreak, explain


def _close(a, b, tol=1e-6):
    assert (a - b).abs().max().item() <= tol


def test_compiled_function_equals_eager_and_captures_ops():
    def foo(x, y):
        a = ember.sin(x)
        b = ember.cos(y)
        return a + b, a * 2
    opt = ember.compile(foo)
    x, y = ember.randn(10), ember.randn(10)
    for _ in range(3):   # the capture run, then replays
        got = opt(x, y)
        want = foo(x, y)
        _close(got[0], want[0])
        _close(got[1], want[1])
    (entry,) = opt.cache.values()
    assert entry.graph.op_names() == ["sin", "cos", "add", "mul"] and entry.calls == 2
    assert "sin(x0" in str(entry.graph) and "return (v2, v3)" in str(entry.graph)


def test_replay_sees_new_values_and_draws_random_numbers_anew():
    opt = ember.compile(lambda x: x * 2 + ember.rand(3))
    x = ember.zeros(3)
    opt(x)
    a, b = opt(x), opt(x + 1)
    assert not ember.equal(a, b - 2)   # fresh random numbers on each replay
    assert ((b - 2) >= 0).all().item() and ((a >= 0) & (a < 1)).all().item()


def test_module_training_step_matches_eager_and_gradients_flow():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))
    twin = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))
    twin.load_state_dict(model.state_dict())
    compiled = ember.compile(model)
    opt_a = ember.optim.SGD(model.parameters(), lr=0.1)
    opt_b = ember.optim.SGD(twin.parameters(), lr=0.1)
    x, target = ember.randn(5, 6), ember.randint(0, 3, (5,))
    for _ in range(3):
        for net, opt in ((compiled, opt_a), (twin, opt_b)):
            opt.zero_grad()
            nn.functional.cross_entropy(net(x), target).backward()
            opt.step()
    for p, q in zip(model.parameters(), twin.parameters()):
        _close(p, q, 1e-6)
    assert compiled._orig_mod is model and compiled.training is model.training


def test_graph_break_on_data_dependent_python_is_explained():
    def f(x):
        if x.sum() > 0:
            return x * 2
        return x - 1
    opt = ember.compile(f)
    pos, neg = ember.ones(3), -ember.ones(3)
    assert ember.equal(opt(pos), pos * 2) and ember.equal(opt(neg), neg - 1)
    assert ember.equal(opt(pos), pos * 2)
    report = explain(f)(pos)
    # the test runs eagerly, each branch as a compiled piece (tests/test_compile_resume.py)
    assert report.graph_count == 1 and report.graph_break_count == 1
    assert report.pieces[0].startswith("if (line") and report.ops_per_graph == [["mul"]]
    assert "data-dependent" in report.break_reasons[0][0]
    assert "test_compile.py" in report.break_reasons[0][1]
    with pytest.raises(GraphBreak, match=r"fullgraph=True\): graph break at .*test_compile\.py"):
        ember.compile(f, fullgraph=True)(pos)


def test_guards_recompile_on_shape_dtype_and_grad_mode_with_a_limit():
    opt = ember.compile(lambda x: x.reshape(x.shape[0], -1).sum(1), dynamic=False)
    for n in (2, 3, 2):
        _close(opt(ember.ones(n, 4)), ember.full((n,), 4.0))
    assert len(opt.cache) == 2 and opt.recompiles == 1
    opt(ember.ones(2, 4, dtype=ember.float64))
    with ember.no_grad():
        opt(ember.ones(2, 4))
    assert len(opt.cache) == 4
    with pytest.warns(UserWarning, match="recompile limit"):
        for n in range(10, 20):
            _close(opt(ember.ones(n, 2)), ember.full((n,), 2.0))


def test_a_graph_with_nothing_to_fuse_still_generalizes_to_new_sizes():
    # lowering its layer norm must not rewrite the captured graph that generalization compares
    norm = ember.nn.LayerNorm(8)
    opt = ember.compile(lambda x: norm(x), dynamic=None)
    for n in (2, 3, 4, 5, 6):
        x = ember.randn(n, 8)
        _close(opt(x), norm(x))
    assert opt.recompiles == 1


def test_torch_compile_surface():
    def foo(x):
        return ember.sin(x) + ember.cos(x)
    x = ember.randn(4)
    assert ember.compile(foo, disable=True) is foo
    _close(ember.compile(backend="inductor")(foo)(x), foo(x))
    with pytest.warns(UserWarning, match="'matmul-padding' is not used"):
        ember.compile(foo, options={"matmul-padding": True})
    with pytest.raises(RuntimeError, match="Unrecognized mode=fast"):
        ember.compile(foo, mode="fast")
    seen = []

    def my_backend(graph, example_inputs):
        seen.append((graph.op_names(), len(example_inputs)))
        return lambda *inputs: ember.compiler.run_graph(graph, inputs)
    opt = ember.compile(foo, backend=my_backend)
    _close(opt(x), foo(x))
    _close(opt(x), foo(x))
    assert seen == [(["sin", "cos", "add"], 1)]

    model = nn.Linear(3, 2)
    model.compile()
    inp = ember.randn(4, 3)
    _close(model(inp), inp @ model.weight.T + model.bias)
    _close(model(inp), inp @ model.weight.T + model.bias)
    assert len(model.forward.cache) == 1


def test_decorator_form_and_factories_inside():
    @ember.compile
    def make(x):
        return ember.zeros(x.shape) + x

    @ember.compile(fullgraph=True)
    def twice(x):
        return x + x
    x = ember.randn(3)
    for _ in range(2):
        _close(make(x), x)
        _close(twice(x), 2 * x)


def test_backward_and_vmap_inside_are_graph_breaks_not_wrong_replays():
    w = ember.randn(3, requires_grad=True)

    def step(x):
        loss = (w * x).sum()
        loss.backward()
        return loss
    opt = ember.compile(step)
    x = ember.randn(3)
    for _ in range(2):
        w.grad = None
        opt(x)
        _close(w.grad, x)          # each call really ran its backward
    assert "backward" in explain(step)(x).break_reasons[0][0]

    from ember.func import vmap
    f = ember.compile(lambda x: vmap(lambda r: r.sin() * 2)(x))
    xs = ember.randn(4, 3)
    for _ in range(2):
        _close(f(xs), xs.sin() * 2)
        xs = ember.randn(4, 3)


def test_the_same_tensor_twice_is_a_guarded_case():
    opt = ember.compile(lambda a, b: a * 2 + b)
    x, y = ember.ones(3), ember.full((3,), 5.0)
    _close(opt(x, x), ember.full((3,), 3.0))
    _close(opt(x, y), ember.full((3,), 7.0))    # not the graph captured for (x, x)
    assert len(opt.cache) == 2

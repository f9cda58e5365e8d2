"""ember.compile and Python state: guards on what the function reads (globals, closure cells
and containers in them, module/object/class attributes, a global tensor rebound), side effects
redone on replay, and per-thread capture. Each case changes the state between calls and
compares with the eager function."""
from __future__ import annotations

import threading

import pytest

import ember
from ember import nn
from ember.compiler import GraphBreak, explain

S = 2.0
W = ember.ones(3)
MODE = "double"
SCALES = [1.0, 2.0]


def _close(a, b, tol=1e-6):
    assert (a - b).abs().max().item() <= tol


def _differential(fn, change, x, rounds=3):
    """Calls compiled and eager ``fn`` on ``x`` around each ``change(i)``."""
    compiled = ember.compile(fn)
    for i in range(rounds):
        _close(compiled(x), fn(x))
        _close(compiled(x), fn(x))        # a replay, not only the capture
        change(i)
    _close(compiled(x), fn(x))
    return compiled


def test_a_global_number_changed_between_calls():
    def f(x):
        return x * S

    def change(i):
        global S
        S = 3.0 + i
    try:
        compiled = _differential(f, change, ember.randn(4))
    finally:
        globals()["S"] = 2.0
    assert compiled.recompiles == 3 and len(compiled.entries()) == 4


def test_a_global_string_in_a_branch_and_a_global_list_read_in_a_loop():
    def f(x):
        y = x * 2 if MODE == "double" else x - 1
        for s in SCALES:
            y = y * s
        return y

    def change(i):
        global MODE
        if i == 0:
            MODE = "minus"
        else:
            SCALES.append(0.5)          # changed in place: the list's contents are guarded
    try:
        _differential(f, change, ember.randn(4))
    finally:
        globals()["MODE"] = "double"
        del SCALES[2:]


def test_a_global_tensor_rebound_to_a_new_object():
    def f(x):
        return x + W

    def change(i):
        global W
        W = ember.full((3,), float(i + 5))
    old = W
    try:
        _differential(f, change, ember.randn(3))
    finally:
        globals()["W"] = old


def test_a_closure_cell_and_a_dict_inside_one():
    scale = 2.0
    cfg = {"bias": 1.0}

    def f(x):
        return x * scale + cfg["bias"]

    def change(i):
        nonlocal scale
        if i == 0:
            scale = 5.0
        else:
            cfg["bias"] = float(i)
    _differential(f, change, ember.randn(4))


def test_module_attributes_a_replaced_submodule_a_hook_and_training_mode():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)
            self.act = nn.ReLU()
            self.scale = 2.0
            self.kind = "plain"

        def forward(self, x):
            y = self.act(self.lin(x)) * self.scale
            if self.kind == "residual":
                y = y + x
            return y
    net = Net()
    compiled = ember.compile(net)
    x = ember.randn(3, 4)
    changes = [lambda: setattr(net, "scale", 5.0), lambda: setattr(net, "kind", "residual"),
               lambda: setattr(net, "act", nn.Tanh()),
               lambda: net.lin.register_forward_hook(lambda m, a, out: out * 0 + 7),
               lambda: setattr(net.lin, "bias", None)]
    with ember.no_grad():
        for change in changes:
            _close(compiled(x), net(x))
            _close(compiled(x), net(x))
            change()
        _close(compiled(x), net(x))


def test_plain_object_and_class_attributes():
    class Config:
        gain = 1.0

        def __init__(self):
            self.offset = 0.5
    cfg = Config()

    def f(x):
        return x * cfg.gain + cfg.offset

    def change(i):
        if i == 0:
            cfg.offset = -2.0
        elif i == 1:
            Config.gain = 4.0
        else:
            cfg.gain = 9.0             # an instance attribute now shadows the class's
    _differential(f, change, ember.randn(4))


def test_a_number_is_guarded_by_type_too():
    flag = [True]

    def f(x):
        return x * flag[0]

    def change(i):
        flag[0] = 1.5 if i == 0 else 1
    x = ember.arange(4)
    compiled = ember.compile(f)
    for i in range(3):
        got, want = compiled(x), f(x)
        assert got.dtype == want.dtype and ember.equal(got, want)
        change(i)


def test_state_guards_are_one_generated_check_without_ember_internals():
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    compiled = ember.compile(model)
    x = ember.randn(2, 4)
    compiled(x)
    (entry,) = compiled._compiled.entries()
    described = [slot.describe() for slot, _, _ in entry.state.slots]
    # the modules' own parameters, submodules and hooks; nothing of ember's globals/builtins
    assert not [d for d in described if d.startswith(("global", "builtin"))], described
    assert any("Sequential._modules" in d for d in described)
    assert entry.state.check() and "def guard" in entry.state.source
    model[0].weight = nn.Parameter(ember.randn(8, 4))
    assert not entry.state.check() and "weight changed" in entry.state.why()


def test_a_capture_on_one_thread_does_not_break_another():
    stop = threading.Event()
    errors = []

    def reader():
        t = ember.ones(3)
        while not stop.is_set():
            try:
                assert t.sum().item() == 3.0
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)
                return

    def f(x):
        y = x
        for _ in range(200):
            y = ember.sin(y) * 0.5 + y
        return y
    th = threading.Thread(target=reader)
    th.start()
    try:
        for _ in range(3):
            compiled = ember.compile(f, fullgraph=True)
            x = ember.randn(5)
            _close(compiled(x), f(x), 1e-5)
            (entry,) = compiled.entries()
            assert entry.graph is not None and not entry.breaks
    finally:
        stop.set()
        th.join()
    assert not errors, errors


def test_two_threads_capturing_at_once_keep_their_own_graphs():
    results = {}
    barrier = threading.Barrier(2)

    def run(name, k):
        def f(x):
            barrier.wait()
            y = x
            for _ in range(50):
                y = y * k + 1
            return y.sum()
        compiled = ember.compile(f, fullgraph=True)
        x = ember.ones(4)
        results[name] = (compiled(x).item(), compiled.entries()[0].graph.op_names().count("mul"))
    ts = [threading.Thread(target=run, args=(n, k)) for n, k in (("a", 0.5), ("b", 0.25))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert results["a"][1] == 50 and results["b"][1] == 50


# -- side effects ---------------------------------------------------------------------------------
def _opencl():
    try:
        return ember.opencl.is_available()
    except Exception:  # noqa: BLE001 - no OpenCL plug-in
        return False


DEVICES = ["cpu"] + (["opencl"] if _opencl() else [])
LAST = None


class _Stats:
    def __init__(self):
        self.last = None
        self.calls = 0


@pytest.mark.parametrize("device", DEVICES)
def test_a_loss_stored_on_the_module_is_the_replays_and_backward_works_each_call(device):
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 3)
            self.last_loss = None

        def forward(self, x, y):
            loss = nn.functional.cross_entropy(self.lin(x), y)
            self.last_loss = loss
            return loss
    ember.manual_seed(0)
    net = Net().to(device)
    compiled = ember.compile(net)
    for i in range(4):
        x, y = ember.randn(5, 4, device=device), ember.randint(0, 3, (5,), device=device)
        net.zero_grad()
        loss = compiled(x, y)
        assert net.last_loss is loss
        net.last_loss.backward()          # the second call's loss: a fresh autograd graph
        want = nn.functional.cross_entropy(net.lin(x), y)
        _close(loss, want)
        g = net.lin.weight.grad.clone()
        net.zero_grad()
        want.backward()
        _close(g, net.lin.weight.grad)
    assert len(compiled._compiled.entries()) == 1


@pytest.mark.parametrize("device", DEVICES)
def test_attribute_list_dict_and_global_writes_are_redone_with_the_replays_values(device):
    stats, history, cache = _Stats(), [], {}

    def f(x):
        global LAST
        y = ember.sin(x) * 2
        stats.last = y.sum()
        history.append(y.mean())
        cache["y"] = y
        cache["n"] = 3
        LAST = y * 0 + 1
        return y
    compiled = ember.compile(f)
    xs = [ember.randn(6, device=device) for _ in range(4)]
    for x in xs:
        y = compiled(x)
        _close(y, ember.sin(x) * 2)
        _close(stats.last, y.sum(), 1e-5)
        assert cache["y"] is y and cache["n"] == 3
        _close(LAST, ember.ones(6, device=device))
    assert len(history) == 4
    for h, x in zip(history, xs):
        _close(h, (ember.sin(x) * 2).mean(), 1e-6)
    assert len(compiled.entries()) == 1 and compiled.entries()[0].effects is not None
    assert "global LAST" in str(compiled.entries()[0].effects)


def test_a_counter_attribute_counts_every_call():
    stats = _Stats()

    def f(x):
        stats.calls += 1
        return x + 1
    compiled = ember.compile(f)
    counts = {}

    def bump(d):
        d["n"] += 1
        return d
    with pytest.warns(UserWarning, match="recompile limit"):
        for i in range(12):
            compiled(ember.ones(2))
            assert stats.calls == i + 1     # each new count is a new guarded case, then eager
    bump_c = ember.compile(lambda x, d=counts: (bump(d), x + 1)[1])
    counts["n"] = 0
    for i in range(3):
        bump_c(ember.ones(2))
        assert counts["n"] == i + 1


def test_a_nonlocal_write_is_redone():
    seen = None

    def f(x):
        nonlocal seen
        seen = x * 3
        return x
    compiled = ember.compile(f)
    for v in (1.0, 2.0, 5.0):
        compiled(ember.full((2,), v))
        _close(seen, ember.full((2,), 3 * v))


def test_side_effects_a_replay_cannot_redo_are_graph_breaks_with_reasons():
    class Box:
        pass
    stats = _Stats()
    items = [1, 2, 3]

    def new_object(x):
        stats.last = Box()
        return x + 1

    def pops(x):
        items.pop()
        return x + 1

    def prints(x):
        print("value", x.shape)
        return x + 1

    def returns_object(x):
        box = Box()
        box.t = x + 1
        return box
    x = ember.ones(2)
    for fn, reason in ((new_object, "stores a new Box object in _Stats.last"),
                       (pops, "removes or reorders items"),
                       (prints, "calls builtins.print()"),
                       (returns_object, "returns a new Box object")):
        report = explain(fn)(x)
        assert report.graph_break_count == 1 and reason in report.break_reasons[0][0], \
            (fn.__name__, report.break_reasons)
        with pytest.raises(GraphBreak):
            ember.compile(fn, fullgraph=True)(x)
    items[:] = [1, 2, 3]
    compiled = ember.compile(pops)
    for n in (2, 1, 0):
        compiled(x)
        assert len(items) == n          # eager every call: the pops really happen


def test_a_python_number_read_by_a_training_step_is_a_guard_not_a_frozen_constant():
    ember.manual_seed(0)
    model = nn.Linear(4, 2)
    calls = [0]

    def step(x):
        calls[0] += 1
        loss = model(x).sum() * (1.0 / calls[0])
        model.zero_grad()
        loss.backward()
        with ember.no_grad():
            for p in model.parameters():
                p.sub_(p.grad * 0.1)
        return loss
    twin = nn.Linear(4, 2)
    twin.load_state_dict(model.state_dict())
    compiled = ember.compile(step, mode="reduce-overhead")
    x = ember.randn(3, 4)
    for i in range(4):
        got = compiled(x)
        want = twin(x).sum() * (1.0 / (i + 1))
        twin.zero_grad()
        want.backward()
        with ember.no_grad():
            for p in twin.parameters():
                p.sub_(p.grad * 0.1)
        _close(got, want, 1e-5)
    assert calls[0] == 4


def test_a_list_extended_in_place_without_a_method_call_is_redone():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 2)
            self.history = []

        def forward(self, x):
            y = self.lin(x).sum()
            self.history += [y * 2]          # list.__iadd__: no method call the tracer sees
            return y
    net = Net()
    compiled = ember.compile(net)
    with ember.no_grad():
        xs = [ember.randn(4, 3) for _ in range(4)]
        outs = [compiled(x) for x in xs]
    assert len(net.history) == 4
    for h, y in zip(net.history, outs):
        _close(h, y * 2)

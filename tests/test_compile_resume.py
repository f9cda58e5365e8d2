"""ember.compile resuming after graph breaks (compiler/resume.py): the statements before and
after a host read, a print or a data-dependent ``if`` run as compiled pieces, each guarded and
replayed, with the same values and gradients as eager; explain() lists the pieces."""
from __future__ import annotations

import pytest

import ember
from ember import nn
from ember.compiler import explain

F = nn.functional


def _close(a, b, tol=1e-5):
    assert (a - b).abs().max().item() <= tol


def _replayed_pieces(compiled):
    (entry,) = [e for e in compiled.entries() if e.resumed is not None]
    return entry.resumed.compiled_pieces()


def chain(x, y):
    a = ember.sin(x) * 2
    b = a + y
    scale = b.abs().max().item()          # a host read in the middle
    c = ember.cos(b) * b / (1.0 + scale)
    if c.sum() > 0:                       # data-dependent control flow
        d = c * 2
    else:
        d = c - 1
    return d + a


def test_a_function_with_a_host_read_and_a_data_dependent_if_runs_as_pieces():
    compiled = ember.compile(chain)
    ember.manual_seed(0)
    signs = set()
    for i in range(8):
        x, y = ember.randn(6), ember.randn(6) + (3.0 if i % 2 else -3.0)
        signs.add(bool(chain(x, y).sum() > 0))
        _close(compiled(x, y), chain(x, y))
    assert signs == {True, False}            # both branches were taken
    pieces = _replayed_pieces(compiled)
    assert len(pieces) == 5                  # before, after the read, each branch, the end
    replays = [e.calls for p in pieces for e in p.entries()]
    assert all(e.graph is not None and not e.breaks for p in pieces for e in p.entries())
    assert sum(replays) > 8                  # the pieces replay, not only capture


def test_explain_shows_the_pieces_and_their_graphs():
    x, y = ember.randn(6), ember.randn(6)
    report = explain(chain)(x, y)
    assert report.graph_break_count == 2
    assert [p.split(" ")[0] for p in report.pieces] == ["graph", "eager", "graph", "if", "graph"]
    assert report.graph_count >= 4 and report.ops_per_graph[0] == ["sin", "mul", "add"]
    text = str(report)
    assert "Pieces (resumed around the breaks):" in text and "eager lines" in text


class _Noisy(nn.Module):
    """A forward with a print of a value in the middle (a common debugging line)."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(5, 8)
        self.b = nn.Linear(8, 3)
        self.seen = []

    def forward(self, x):
        h = F.gelu(self.a(x))
        self.seen.append(round(float(h.mean().item()), 6))
        return self.b(h * 2).tanh()


def test_a_module_with_a_host_read_in_forward_trains_like_eager():
    ember.manual_seed(0)
    net, twin = _Noisy(), _Noisy()
    twin.load_state_dict(net.state_dict())
    compiled = ember.compile(net)
    opt_a = ember.optim.SGD(net.parameters(), lr=0.1)
    opt_b = ember.optim.SGD(twin.parameters(), lr=0.1)
    for _ in range(4):
        x = ember.randn(4, 5)
        for model, opt in ((compiled, opt_a), (twin, opt_b)):
            opt.zero_grad()
            model(x).pow(2).sum().backward()
            opt.step()
    for p, q in zip(net.parameters(), twin.parameters()):
        _close(p, q, 1e-6)
    assert net.seen == twin.seen and len(net.seen) == 4
    pieces = _replayed_pieces(compiled._compiled)
    assert len(pieces) == 2 and all(e.joint is not None for p in pieces for e in p.entries()
                                    if e.calls)   # each piece has its compiled backward


def test_a_training_step_with_a_print_compiles_the_step_before_it():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))
    twin = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))
    twin.load_state_dict(model.state_dict())
    logged = []

    def make(m, log):
        opt = ember.optim.SGD(m.parameters(), lr=0.05, momentum=0.9)

        def step(x, y):
            loss = F.cross_entropy(m(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            log.append(loss.item())
            return loss
        return step
    eager_log = []
    compiled = ember.compile(make(model, logged), mode="reduce-overhead")
    eager = make(twin, eager_log)
    x, y = ember.randn(8, 6), ember.randint(0, 3, (8,))
    for _ in range(6):
        compiled(x, y)
        eager(x, y)
    assert logged == pytest.approx(eager_log, abs=1e-6)
    (piece, _) = _replayed_pieces(compiled)
    assert any(e.step for e in piece.entries())     # forward+backward+SGD: one replay


def test_returns_before_a_break_super_and_nonlocal_writes_in_pieces():
    class Base(nn.Module):
        def forward(self, x):
            return x * 3

    class Child(Base):
        def forward(self, x, early=False):
            y = super().forward(x) + 1
            if early:
                return y
            n = int(y.sum().item())
            return y * n

    child = Child()
    compiled = ember.compile(child)
    x = ember.ones(2)
    for early in (False, True, False):
        _close(compiled(x, early=early), child(x, early=early))

    total = 0.0

    def g(x):
        nonlocal total
        y = x * 2
        total = total + float(y.sum().item())
        return y + total
    compiled = ember.compile(g)
    results = [compiled(ember.ones(3)) for _ in range(3)]
    assert total == 18.0
    _close(results[-1], ember.full((3,), 20.0))


def test_what_cannot_be_resumed_still_runs_eagerly():
    compiled = ember.compile(lambda x: x * 2 if x.sum() > 0 else x - 1)
    for v in (1.0, -1.0, 1.0):
        _close(compiled(ember.full((2,), v)), ember.full((2,), v * 2 if v > 0 else v - 1))
    assert all(e.resumed is None and e.graph is None for e in compiled.entries())

"""ember.compile, ember.onnx.export and sparse COO tensors in one script.

    python examples/compile_and_export.py

1. An MLP's whole training step (forward, backward, SGD with momentum) compiled with
   mode="reduce-overhead", trained beside an eager twin: the parameters must stay equal.
2. The trained model exported to ONNX with a dynamic batch axis and run in onnxruntime (when
   installed) against ember's output.
3. A two-layer GCN on a sparse adjacency matrix (a ring graph), trained for a few steps."""
from __future__ import annotations

import io
import time

import ember
from ember import nn


def mlp():
    return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))


def training_step(model, opt):
    loss_fn = nn.CrossEntropyLoss()

    def step(x, y):
        loss = loss_fn(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss
    return step


def compile_a_training_step():
    ember.manual_seed(0)
    eager_model, model = mlp(), mlp()
    model.load_state_dict(eager_model.state_dict())
    eager = training_step(eager_model, ember.optim.SGD(eager_model.parameters(), lr=0.05,
                                                       momentum=0.9))
    compiled = ember.compile(training_step(model, ember.optim.SGD(model.parameters(), lr=0.05,
                                                                  momentum=0.9)),
                             mode="reduce-overhead")
    x, y = ember.randn(32, 64), ember.randint(0, 10, (32,))
    for i in range(20):
        a, b = eager(x, y), compiled(x, y)
    drift = max((p - q).abs().max().item() for p, q in zip(eager_model.parameters(),
                                                           model.parameters()))
    t0 = time.perf_counter()
    for _ in range(50):
        compiled(x, y)
    ms = (time.perf_counter() - t0) / 50 * 1e3
    print(f"compiled step: loss {b.item():.4f} (eager {a.item():.4f}), parameter drift "
          f"{drift:.1e}, {ms:.2f} ms/step")
    assert drift < 1e-5
    return model


def export_to_onnx(model):
    f = io.BytesIO()
    x = ember.randn(6, 64)
    ember.onnx.export(model, (x,), f, input_names=["x"], output_names=["logits"],
                      dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}})
    print(f"ONNX model: {len(f.getvalue())} bytes")
    try:
        import onnxruntime
    except ImportError:
        print("onnxruntime is not installed: skipping the run")
        return
    session = onnxruntime.InferenceSession(f.getvalue())
    x = ember.randn(9, 64)
    got = session.run(None, {"x": x.numpy()})[0]
    with ember.no_grad():
        want = model(x).numpy()
    err = abs(got - want).max()
    print(f"onnxruntime on a batch of 9: max difference from ember {err:.1e}")
    assert err < 1e-4


def gcn_on_a_sparse_graph():
    ember.manual_seed(0)
    n = 50
    src = list(range(n)) + [(i + 1) % n for i in range(n)] + list(range(n))
    dst = [(i + 1) % n for i in range(n)] + list(range(n)) + list(range(n))
    adj = ember.sparse_coo_tensor([src, dst], [1.0 / 3] * len(src), (n, n)).coalesce()
    features = ember.randn(n, 8)
    labels = (ember.arange(n) % 2)
    w1, w2 = nn.Linear(8, 16), nn.Linear(16, 2)
    opt = ember.optim.Adam(list(w1.parameters()) + list(w2.parameters()), lr=0.05)
    for epoch in range(30):
        h = (adj @ w1(features)).relu()
        logits = adj @ w2(h)
        loss = nn.functional.cross_entropy(logits, labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"GCN on a {n}-node ring ({adj._nnz()} stored entries): loss {loss.item():.4f}")


if __name__ == "__main__":
    model = compile_a_training_step()
    export_to_onnx(model)
    gcn_on_a_sparse_graph()

"""ember.export and ember.onnx.export: the captured graph as an ExportedProgram and as an ONNX
model, checked by running the model in onnxruntime against ember's eager outputs — MLP, CNN,
ResNet block with batch norm, LSTM, GRU, transformer encoder, GPT block with causal SDPA,
U-Net with upsampling — at three batch sizes of a dynamic axis, the export's example batch
equal to another dimension."""
from __future__ import annotations

import io
import warnings

import numpy as np
import pytest

import ember
from ember import nn
from ember.compiler import GraphBreak

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


F = nn.functional


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(50, 16)
        self.lstm = nn.LSTM(16, 32, batch_first=True)
        self.out = nn.Linear(32, 50)

    def forward(self, x):
        h, _ = self.lstm(self.emb(x))
        return self.out(h)


class GRUTagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(6, 8, num_layers=2, batch_first=True)
        self.out = nn.Linear(8, 3)

    def forward(self, x):
        h, _ = self.gru(x)
        return self.out(h)


class ResBlock(nn.Module):
    """ResNet's BasicBlock: two 3x3 convolutions with batch norm, and the identity shortcut."""

    def __init__(self, c=8):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
        self.conv2, self.bn2 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(y)) + x)


class GPTBlock(nn.Module):
    """nanoGPT's Block: pre-norm causal self-attention through SDPA and a GELU MLP."""

    def __init__(self, d=16, h=4):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.h = h

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.attn(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.h, C // self.h).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).contiguous().view(B, T, C))
        return x + self.mlp(self.ln2(x))


class UNet(nn.Module):
    """A two-level U-Net: max-pool down, nearest and bilinear upsampling back, skip concat."""

    def __init__(self):
        super().__init__()
        self.down = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU())
        self.mid = nn.Sequential(nn.Conv2d(4, 8, 3, padding=1), nn.ReLU())
        self.up_nearest = nn.Upsample(scale_factor=2, mode="nearest")
        self.up_linear = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
        self.dec = nn.Conv2d(8 + 4 + 8, 2, 3, padding=1)

    def forward(self, x):
        a = self.down(x)
        m = self.mid(F.max_pool2d(a, 2))
        return self.dec(ember.cat([self.up_nearest(m), a, self.up_linear(m)], dim=1))


def _models():
    """name -> (model, input of batch b, batch sizes: the export's first, equal to another
    dimension of the input or of the model — the case value matching got wrong)."""
    ember.manual_seed(0)
    return {
        "mlp": (nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Dropout(0.1), nn.Linear(32, 10),
                              nn.GELU(), nn.LogSoftmax(-1)), lambda b: ember.randn(b, 20),
                (20, 3, 9)),
        "cnn": (nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                              nn.MaxPool2d(2), nn.Conv2d(4, 8, 3), nn.AdaptiveAvgPool2d(1),
                              nn.Flatten(), nn.Linear(8, 10)),
                lambda b: ember.randn(b, 1, 12, 12), (8, 3, 12)),
        "resnet_block": (ResBlock(), lambda b: ember.randn(b, 8, 6, 6), (6, 2, 8)),
        "lstm_lm": (TinyLM(), lambda b: ember.randint(0, 50, (b, 7)), (7, 3, 16)),
        "gru": (GRUTagger(), lambda b: ember.randn(b, 5, 6), (6, 5, 2)),
        "transformer_encoder": (nn.TransformerEncoderLayer(16, 4, 32, dropout=0.1,
                                                           batch_first=True),
                                lambda b: ember.randn(b, 5, 16), (4, 5, 9)),
        "gpt_block": (GPTBlock(), lambda b: ember.randn(b, 5, 16), (4, 3, 16)),
        "unet": (UNet(), lambda b: ember.randn(b, 1, 8, 8), (8, 3, 4)),
    }


@pytest.mark.parametrize("name", list(_models()))
def test_onnxruntime_matches_eager_with_a_dynamic_batch(name):
    model, make, batches = _models()[name]
    model.train()     # export switches to eval mode and back, as torch's does
    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # no fallback to matching sizes by value
        ember.onnx.export(model, (make(batches[0]),), f, input_names=["x"], output_names=["y"],
                          dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    assert model.training
    model.eval()
    proto = onnx.load_from_string(f.getvalue())
    onnx.checker.check_model(proto)
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    session = ort.InferenceSession(f.getvalue())
    for batch in batches:
        x = make(batch)
        with ember.no_grad():
            want = model(x).numpy()
        got = session.run(["y"], {"x": x.numpy()})[0]
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_a_dynamic_sequence_length_builds_the_causal_mask_at_run_time():
    ember.manual_seed(1)
    model = GPTBlock().eval()
    f = io.BytesIO()
    ember.onnx.export(model, (ember.randn(2, 4, 16),), f, input_names=["x"],
                      output_names=["y"], dynamic_axes={"x": {0: "b", 1: "t"}})
    session = ort.InferenceSession(f.getvalue())
    for shape in ((2, 4, 16), (3, 7, 16), (1, 16, 16)):
        x = ember.randn(*shape)
        with ember.no_grad():
            want = model(x).numpy()
        np.testing.assert_allclose(session.run(["y"], {"x": x.numpy()})[0], want, rtol=1e-4,
                                   atol=1e-5)


def test_a_scalar_picked_from_a_parameter_keeps_its_0d_shape():
    class Scaled(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(ember.tensor([2.0, 3.0]))

        def forward(self, x):
            return (x * self.w[1]).sum() + self.w[0]
    model = Scaled()
    f = io.BytesIO()
    ember.onnx.export(model, (ember.ones(4),), f, input_names=["x"], output_names=["y"])
    proto = onnx.load_from_string(f.getvalue())
    assert all(len(i.dims) == 0 for i in proto.graph.initializer if i.name.startswith("fold"))
    got = ort.InferenceSession(f.getvalue()).run(["y"], {"x": np.ones(4, np.float32)})[0]
    assert got.shape == () and got == 14.0


def test_parameters_are_named_initializers_and_export_to_a_path(tmp_path):
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    path = tmp_path / "m.onnx"
    ember.onnx.export(model, ember.randn(2, 3), str(path), do_constant_folding=False)
    proto = onnx.load(str(path))
    names = {i.name for i in proto.graph.initializer}
    assert {"0.weight", "0.bias", "2.weight", "2.bias"} <= names
    assert [i.name for i in proto.graph.input] == ["input_0"]
    assert [o.name for o in proto.graph.output] == ["output_0"]


def test_an_op_without_onnx_form_raises_naming_it():
    with pytest.raises(ember.onnx.errors.UnsupportedOperatorError, match="erfinv"):
        ember.onnx.export(lambda x: ember.erfinv(x), (ember.rand(4),), io.BytesIO())


def test_an_op_exports_by_its_onnx_facet_and_its_refusal_names_it():
    # an op defined outside the core: no onnx facet, no export; with one, its nodes are used
    from ember.library import Library
    lib = Library("onnx_facet_test", "DEF")
    softsign = lib.define("softsign(Tensor x, float k) -> Tensor",
                          meta=lambda x, k: (tuple(x.shape), x.dtype))
    lib.impl("softsign", lambda x, k: x / (x.abs() + k), "cpu")
    x = ember.randn(5)
    with pytest.raises(ember.onnx.errors.UnsupportedOperatorError,
                       match="onnx_facet_test::softsign"):
        ember.onnx.export(lambda x: softsign(x, 1.0), (x,), io.BytesIO())

    @softsign.def_onnx
    def _(b, c, x, k):
        if k <= 0:
            c.refuse(f"k={k}")
        return b.op("Div", [x, b.op("Add", [b.op("Abs", [x]), c.scalar(k)])])
    f = io.BytesIO()
    ember.onnx.export(lambda x: softsign(x, 2.0) * 3, (x,), f, input_names=["x"])
    got = ort.InferenceSession(f.getvalue()).run(None, {"x": x.numpy()})[0]
    np.testing.assert_allclose(got, (softsign(x, 2.0) * 3).numpy(), rtol=1e-6)
    with pytest.raises(ember.onnx.errors.UnsupportedOperatorError, match="softsign.*k=-1"):
        ember.onnx.export(lambda x: softsign(x, -1.0), (x,), io.BytesIO())


def test_data_dependent_python_raises_naming_the_line():
    def f(x):
        if x.sum() > 0:
            return x * 2
        return x
    with pytest.raises(GraphBreak, match="test_onnx_export.py"):
        ember.export(f, (ember.randn(3),))
    with pytest.raises(GraphBreak):
        ember.onnx.export(f, (ember.randn(3),), io.BytesIO())


def test_exported_program_prints_names_and_runs_on_new_inputs():
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU())
    program = ember.export(model, (ember.randn(2, 3),))
    assert program is not None and ember.export.export is not None
    text = str(program)
    assert "addmm" in text and "0.weight" in text
    assert set(program.state_dict) == {"0.weight", "0.bias"}
    x = ember.randn(2, 3)
    got = program.module()(x)
    with ember.no_grad():
        assert (got - model(x)).abs().max().item() < 1e-6
    with pytest.raises(TypeError, match="expected args to be a tuple"):
        ember.export(model, ember.randn(2, 3))


class _Pieces(nn.Module):
    """split, chunk and unbind (one op each, with a Tensor[] output) on a batch-dynamic input."""

    def forward(self, x):
        a, b = x.chunk(2, -1)                    # ONNX Split along a fixed dim
        first, rest = x.split([1, 5], dim=1)
        rows = x.unbind(1)                       # Split + Squeeze
        return a * b.sigmoid() + first + rest[:, :1] + sum(rows).unsqueeze(1)


def test_split_chunk_and_unbind_export_with_a_dynamic_batch():
    model = _Pieces()
    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ember.onnx.export(model, (ember.randn(3, 6),), f, input_names=["x"], output_names=["y"],
                          dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    proto = onnx.load_from_string(f.getvalue())
    onnx.checker.check_model(proto)
    assert "Split" in {n.op_type for n in proto.graph.node}
    session = ort.InferenceSession(f.getvalue())
    for batch in (3, 5, 1):
        x = ember.randn(batch, 6)
        with ember.no_grad():
            want = model(x).numpy()
        np.testing.assert_allclose(session.run(["y"], {"x": x.numpy()})[0], want, rtol=1e-5,
                                   atol=1e-6)


class _FirstRow(nn.Module):
    def forward(self, x):
        return x.unbind(0)[0] * 2 + x.split(1)[0].squeeze(0)


def test_unbinding_the_dynamic_batch_exports_the_pieces_as_slices():
    # the batch is split into as many pieces as the capture had; the first stays the first row
    f = io.BytesIO()
    ember.onnx.export(_FirstRow(), (ember.randn(3, 4),), f, input_names=["x"],
                      output_names=["y"], dynamic_axes={"x": {0: "batch"}})
    session = ort.InferenceSession(f.getvalue())
    for batch in (3, 6):
        x = ember.randn(batch, 4)
        np.testing.assert_allclose(session.run(["y"], {"x": x.numpy()})[0],
                                   (x[0] * 3).numpy(), rtol=1e-6)


# the activations torch records as one node are one ONNX rule each (glu as Split/Sigmoid/Mul)
_NODE_ACTIVATIONS = {
    "glu": nn.GLU(1), "glu dim 0": nn.GLU(0), "logsigmoid": nn.LogSigmoid(),
    "hardshrink": nn.Hardshrink(0.3), "softshrink": nn.Softshrink(0.3), "celu": nn.CELU(1.5),
}


@pytest.mark.parametrize("name", list(_NODE_ACTIVATIONS))
def test_activation_nodes_export_and_match_eager(name):
    model = _NODE_ACTIVATIONS[name]
    x = ember.tensor(np.linspace(-3, 3, 24, dtype=np.float32).reshape(4, 6))
    f = io.BytesIO()
    ember.onnx.export(model, (x,), f, input_names=["x"], output_names=["y"])
    onnx.checker.check_model(onnx.load_from_string(f.getvalue()))
    got = ort.InferenceSession(f.getvalue()).run(["y"], {"x": x.numpy()})[0]
    np.testing.assert_allclose(got, model(x).numpy(), rtol=1e-5, atol=1e-6)


# the products, sgn and masked_fill are ops with torch's nodes now: each exports by its own rule
# (their compositions used to be recorded and exported op by op)
_NODE_OPS = {
    "baddbmm": lambda x: ember.baddbmm(x[:, :, :3], x, x.transpose(1, 2)[:, :, :3], beta=0.5,
                                       alpha=2),
    "baddbmm beta=0": lambda x: ember.baddbmm(x[0, 0], x, x, beta=0),
    "addmv": lambda x: ember.addmv(x[0, 0], x[0], x[0, 1], beta=2),
    "addr": lambda x: ember.addr(x[0], x[0, :, 0], x[0, 0], alpha=3),
    "addbmm": lambda x: ember.addbmm(x[0, :, :3], x, x.transpose(1, 2)[:, :, :3]),
    "trace": lambda x: ember.trace(x[0, :, :2]),
    "vdot": lambda x: ember.vdot(x[0, 0], x[1, 0]),
    "sgn": lambda x: ember.sgn(x - x[0, 0, 0]),
    "masked_fill number": lambda x: x.masked_fill(x > 0, 0.5),
    "masked_fill tensor": lambda x: x.masked_fill(x[0] > 0, x[1, 1, 1]),
}


class _Fn(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


@pytest.mark.parametrize("name", list(_NODE_OPS))
def test_node_ops_export_and_match_eager(name):
    model = _Fn(_NODE_OPS[name])
    x = ember.tensor(np.random.default_rng(5).standard_normal((2, 3, 3)).astype(np.float32))
    f = io.BytesIO()
    ember.onnx.export(model, (x,), f, input_names=["x"], output_names=["y"])
    onnx.checker.check_model(onnx.load_from_string(f.getvalue()))
    got = ort.InferenceSession(f.getvalue()).run(["y"], {"x": x.numpy()})[0]
    np.testing.assert_allclose(got, model(x).numpy(), rtol=1e-5, atol=1e-6)

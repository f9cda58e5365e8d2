"""ember.export and ember.onnx.export: the captured graph as an ExportedProgram and as an ONNX
model, checked by running the model in onnxruntime against ember's eager outputs (MLP, CNN,
LSTM language model, transformer block), with a dynamic batch axis."""
from __future__ import annotations

import io

import numpy as np
import pytest

import ember
from ember import nn
from ember.compiler import GraphBreak

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(50, 16)
        self.lstm = nn.LSTM(16, 32, batch_first=True)
        self.out = nn.Linear(32, 50)

    def forward(self, x):
        h, _ = self.lstm(self.emb(x))
        return self.out(h)


def _models():
    ember.manual_seed(0)
    return {
        "mlp": (nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Dropout(0.1), nn.Linear(32, 10),
                              nn.GELU(), nn.LogSoftmax(-1)), lambda b: ember.randn(b, 20)),
        "cnn": (nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                              nn.MaxPool2d(2), nn.Conv2d(4, 8, 3), nn.AdaptiveAvgPool2d(1),
                              nn.Flatten(), nn.Linear(8, 10)),
                lambda b: ember.randn(b, 1, 12, 12)),
        "lstm_lm": (TinyLM(), lambda b: ember.randint(0, 50, (b, 7))),
        "transformer_block": (nn.TransformerEncoderLayer(16, 4, 32, dropout=0.1,
                                                         batch_first=True),
                              lambda b: ember.randn(b, 5, 16)),
    }


@pytest.mark.parametrize("name", list(_models()))
def test_onnxruntime_matches_eager_with_a_dynamic_batch(name):
    model, make = _models()[name]
    model.train()     # export switches to eval mode and back, as torch's does
    f = io.BytesIO()
    ember.onnx.export(model, (make(6),), f, input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    assert model.training
    model.eval()
    proto = onnx.load_from_string(f.getvalue())
    onnx.checker.check_model(proto)
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    session = ort.InferenceSession(f.getvalue())
    for batch in (6, 3, 9):
        x = make(batch)
        with ember.no_grad():
            want = model(x).numpy()
        got = session.run(["y"], {"x": x.numpy()})[0]
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


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

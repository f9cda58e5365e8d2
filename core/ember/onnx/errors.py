"""The errors ``ember.onnx.export`` raises (``torch.onnx.errors``' names)."""
from __future__ import annotations


class OnnxExporterError(RuntimeError):
    """Something in the program can't be written as ONNX."""


class UnsupportedOperatorError(OnnxExporterError):
    """An op with no ONNX translation at the requested opset."""

    def __init__(self, name, version, supported_version=None, detail=""):
        if supported_version is not None:
            msg = (f"Exporting the operator '{name}' to ONNX opset version {version} is not "
                   f"supported. Support for this operator was added in version "
                   f"{supported_version}, try exporting with this version.")
        else:
            msg = (f"Exporting the operator '{name}' to ONNX opset version {version} is not "
                   f"supported{': ' + detail if detail else ''}.")
        super().__init__(msg)
        self.op_name = name

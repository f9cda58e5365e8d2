"""``ShapeProp`` (torch.fx.passes.shape_prop): runs a ``GraphModule`` on example inputs and
stores each node's result description in ``node.meta['tensor_meta']`` (a ``TensorMetadata``,
or the same structure of them for tuple/list results) and its type in ``node.meta['type']``."""
from __future__ import annotations

from typing import Any, NamedTuple
import ember

from ..interpreter import Interpreter
from ..node import map_aggregate
from ..._tensor import Tensor

__all__ = ["TensorMetadata", "ShapeProp", "extract_tensor_metadata"]


class TensorMetadata(NamedTuple):
    shape: Any
    dtype: Any
    requires_grad: bool
    stride: tuple
    memory_format: Any
    is_quantized: bool
    qparams: dict


def extract_tensor_metadata(result):
    """The ``TensorMetadata`` of a tensor."""
    memory_format = None
    for fmt in (ember.contiguous_format, ember.channels_last, ember.channels_last_3d):
        try:
            if result.is_contiguous(memory_format=fmt):
                memory_format = fmt
                break
        except RuntimeError:
            continue
    return TensorMetadata(result.shape, result.dtype, result.requires_grad, result.stride(),
                          memory_format, False, {})


class ShapeProp(Interpreter):
    """``ShapeProp(gm).propagate(*args)``: the outputs, with every node's metadata recorded."""

    def __init__(self, gm, fake_mode=None):
        super().__init__(gm)
        self.fake_mode = fake_mode

    def run_node(self, n):
        result = super().run_node(n)
        found = [False]

        def meta(obj):
            if isinstance(obj, Tensor):
                found[0] = True
                return extract_tensor_metadata(obj)
            return obj
        described = map_aggregate(result, meta)
        if found[0]:
            n.meta["tensor_meta"] = described
        n.meta["type"] = type(result)
        return result

    def propagate(self, *args):
        """Runs the module on ``args``, recording metadata; returns its output."""
        return super().run(*args)

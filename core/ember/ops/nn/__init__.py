"""Neural-network ops: each op with its meta and derivative beside its ``define``.

* ``conv``     convolution / convolution_backward (every rank, transposed too)
* ``pool``     max (with indices), average and adaptive pooling, 1-3 spatial dims, and their
               backward ops
* ``norm``     native_batch_norm, native_layer_norm, native_group_norm and their backward ops
* ``loss``     nll_loss_forward / nll_loss_backward (class targets, (N, C) inputs)
* ``_rules``   output sizes and checks the family shares

The ``nn.functional`` API (``ember.nn``) validates user input with PyTorch's messages and calls
these ops; kernels live in ``ember.kit`` (array backends) and each backend's package.
"""
from . import conv, loss, norm, pool  # noqa: F401
from .conv import convolution, convolution_backward_op, convolution_op
from .norm import native_batch_norm, native_group_norm, native_layer_norm

__all__ = ["convolution", "native_batch_norm", "native_layer_norm", "native_group_norm"]

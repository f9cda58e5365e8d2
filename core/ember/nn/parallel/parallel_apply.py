"""``parallel_apply(modules, inputs, kwargs_tup, devices)``: run each replica on its inputs.

Replicas are dispatched one after the other on the calling thread (ember's per-thread state —
grad mode, autocast — is the caller's). Devices with asynchronous kernels (OpenCL queues, the
openreg plug-in's streams) still compute concurrently: dispatch only queues work. An error is
re-raised naming the replica and its device, as PyTorch's ExceptionWrapper does."""
from __future__ import annotations

from ..._device import as_device

__all__ = ["parallel_apply"]


def parallel_apply(modules, inputs, kwargs_tup=None, devices=None):
    if len(modules) != len(inputs):
        raise AssertionError(f"The number of modules {len(modules)} is not equal to the number "
                             f"of inputs {len(inputs)}")
    kwargs_tup = kwargs_tup if kwargs_tup is not None else ({},) * len(modules)
    if len(modules) != len(kwargs_tup):
        raise AssertionError(f"The number of modules {len(modules)} is not equal to the number "
                             f"of kwargs {len(kwargs_tup)}")
    devices = [None] * len(modules) if devices is None else [as_device(d) for d in devices]
    outputs = []
    for i, (module, args, kwargs, device) in enumerate(zip(modules, inputs, kwargs_tup,
                                                           devices)):
        if not isinstance(args, (list, tuple)):
            args = (args,)
        try:
            outputs.append(module(*args, **kwargs))
        except Exception as e:
            where = f" on device {device}" if device is not None else ""
            raise type(e)(f"Caught {type(e).__name__} in replica {i}{where}.\n{e}") from e
    return outputs

"""``nn.DataParallel``: single-process data parallelism over the devices of one backend.

The devices are those of the current accelerator (``ember.accelerator``): each forward splits
the inputs along ``dim`` (``scatter``), runs a replica of the module per device (``replicate``,
``parallel_apply``) and joins the outputs on ``output_device`` (``gather``); the backward sums
the replicas' gradients into the original parameters. With no accelerator the module runs as
is; with one device the module is moved there and run directly, as PyTorch does with one GPU.
"""
from __future__ import annotations

from ... import accelerator
from ..._device import as_device
from ..._device import device as _device_cls
from ..modules.module import Module
from .parallel_apply import parallel_apply
from .replicate import replicate
from .scatter_gather import gather, scatter_kwargs

__all__ = ["DataParallel", "data_parallel"]


def _device_index(d, device_type):
    if isinstance(d, int) and not isinstance(d, bool):
        return d
    d = d if isinstance(d, _device_cls) else _device_cls(d)
    if d.type != device_type:
        raise ValueError(f"DataParallel: device {d} is not a {device_type} device (DataParallel "
                         f"runs on the devices of one backend)")
    return 0 if d.index is None else d.index


class DataParallel(Module):
    """``DataParallel(module, device_ids=None, output_device=None, dim=0)``."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DataParallel: module must be an ember.nn.Module, got "
                            f"{type(module).__name__}")
        acc = accelerator.current_accelerator(check_available=True)
        if acc is None:
            self.module = module
            self.device_ids = []
            return
        self.device_type = acc.type
        if device_ids is None:
            device_ids = list(range(accelerator.device_count()))
        if len(device_ids) == 0:
            raise ValueError("DataParallel: device_ids is empty")
        self.device_ids = [_device_index(d, acc.type) for d in device_ids]
        if output_device is None:
            output_device = self.device_ids[0]
        self.dim = dim
        self.module = module
        self.output_device = _device_index(output_device, acc.type)
        self.src_device_obj = as_device(f"{acc.type}:{self.device_ids[0]}")
        if len(self.device_ids) == 1:
            self.module.to(self.src_device_obj)

    def forward(self, *inputs, **kwargs):
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        for t in list(self.module.parameters()) + list(self.module.buffers()):
            if t.device is not self.src_device_obj:
                raise RuntimeError(f"module must have its parameters and buffers on device "
                                   f"{self.src_device_obj} (device_ids[0]) but found one of "
                                   f"them on device: {t.device}")
        inputs, module_kwargs = self.scatter(inputs, kwargs, self.device_ids)
        if not inputs and not module_kwargs:
            inputs, module_kwargs = ((),), ({},)
        if len(self.device_ids) == 1:
            return self.module(*inputs[0], **module_kwargs[0])
        replicas = self.replicate(self.module, self.device_ids[:len(inputs)])
        outputs = self.parallel_apply(replicas, inputs, module_kwargs)
        return self.gather(outputs, self.output_device)

    def _devices(self, ids):
        return [f"{self.device_type}:{i}" for i in ids]

    def replicate(self, module, device_ids):
        return replicate(module, self._devices(device_ids))

    def scatter(self, inputs, kwargs, device_ids):
        return scatter_kwargs(inputs, kwargs, self._devices(device_ids), dim=self.dim)

    def parallel_apply(self, replicas, inputs, kwargs):
        return parallel_apply(replicas, inputs, kwargs,
                              self._devices(self.device_ids[:len(replicas)]))

    def gather(self, outputs, output_device):
        return gather(outputs, f"{self.device_type}:{output_device}", dim=self.dim)


def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0,
                  module_kwargs=None):
    """The functional form: one DataParallel forward of ``module`` on ``inputs``."""
    if not isinstance(inputs, tuple):
        inputs = (inputs,) if inputs is not None else ()
    dp = DataParallel.__new__(DataParallel)
    Module.__init__(dp)
    acc = accelerator.current_accelerator(check_available=True)
    if acc is None:
        return module(*inputs, **(module_kwargs or {}))
    dp.device_type = acc.type
    ids = list(range(accelerator.device_count())) if device_ids is None else device_ids
    dp.device_ids = [_device_index(d, acc.type) for d in ids]
    dp.output_device = dp.device_ids[0] if output_device is None else _device_index(
        output_device, acc.type)
    dp.dim = dim
    dp.module = module
    dp.src_device_obj = as_device(f"{acc.type}:{dp.device_ids[0]}")
    return dp(*inputs, **(module_kwargs or {}))

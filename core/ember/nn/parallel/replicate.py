"""``replicate(module, devices)``: one copy of a module tree per device whose parameters are
differentiable copies of the originals (PyTorch's Broadcast), so the replicas' gradients sum
into the original parameters. The first device keeps the original tensors themselves."""
from __future__ import annotations

from ..._device import as_device
from ..modules.module import Module

__all__ = ["replicate"]


def _shallow_copy(module):
    replica = module.__new__(type(module))
    replica.__dict__ = module.__dict__.copy()
    replica._parameters = dict(module._parameters)
    replica._buffers = dict(module._buffers)
    replica._modules = dict(module._modules)
    return replica


def _copy_to(t, device):
    """A differentiable copy of ``t`` on ``device`` (a new tensor even on ``t``'s own)."""
    return t.clone() if t.device is device else t.to(device)


def replicate(network, devices, detach=False):
    """A list of ``len(devices)`` replicas of ``network``; with ``detach=True`` the copies are
    cut from the graph."""
    if not isinstance(network, Module):
        raise TypeError(f"replicate: expected an ember.nn.Module, got "
                        f"{type(network).__name__}")
    devices = [as_device(d) for d in devices]
    modules = list(network.modules())
    index = {id(m): i for i, m in enumerate(modules)}
    replicas = [[_shallow_copy(m) for m in modules] for _ in devices]
    for k, device in enumerate(devices):
        copies = replicas[k]
        for m, replica in zip(modules, copies):
            for name, child in m._modules.items():
                replica._modules[name] = None if child is None else copies[index[id(child)]]
            for name, p in m._parameters.items():
                if p is None or (k == 0 and p.device is device and not detach):
                    continue
                value = _copy_to(p.detach() if detach else p, device)
                # a replica's parameters are not leaves: kept as plain attributes, as in torch
                replica._parameters[name] = None
                replica.__dict__[name] = value
            for name, b in m._buffers.items():
                if b is None or (k == 0 and b.device is device):
                    continue
                replica._buffers[name] = _copy_to(b if b.requires_grad and not detach
                                                  else b.detach(), device)
    return [copies[0] for copies in replicas]

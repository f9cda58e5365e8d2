"""``ember.nn.utils.init`` (torch.nn.utils.init): ``skip_init``, a module built without running
its parameter initialisation."""
from __future__ import annotations

import inspect

from ...runtime.device_types import DeviceNotInstalled
from ..modules.module import Module

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """``module_cls(*args, **kwargs)`` with uninitialised parameters and buffers: built on the
    meta device (no memory, no init kernels) and moved with ``to_empty`` to ``device``
    (default cpu). The class must accept a ``device`` argument. Without the ember-meta
    plug-in the module is built on ``device`` directly: its values are then its usual
    initialisation, which is as valid as any for values the caller must overwrite."""
    if not isinstance(module_cls, type) or not issubclass(module_cls, Module):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    final_device = kwargs.pop("device", "cpu")
    try:
        kwargs["device"] = "meta"
        return module_cls(*args, **kwargs).to_empty(device=final_device)
    except DeviceNotInstalled as e:
        if "'meta'" not in str(e):
            raise
    kwargs["device"] = final_device
    return module_cls(*args, **kwargs)

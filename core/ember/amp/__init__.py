"""``ember.amp``: automatic mixed precision — ``autocast`` (a dispatch layer, see
``dispatch.py`` and the op lists in ``policy.py``) and ``GradScaler``; ``ember.<device>.amp``
keeps PyTorch's deprecated per-device spellings."""
from ..runtime import device_module as _device_module
from . import dispatch as _dispatch
from . import device_amp as _device_amp
from .autocast_mode import autocast, custom_bwd, custom_fwd, is_autocast_available
from .grad_scaler import GradScaler

__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd", "is_autocast_available"]

_dispatch.install()
_device_module.register_extension("amp", _device_amp.make)

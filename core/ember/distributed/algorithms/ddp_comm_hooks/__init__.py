"""DDP communication hooks (``torch.distributed.algorithms.ddp_comm_hooks``): register one with
``ddp_model.register_comm_hook(state, hook)`` or by type with ``register_ddp_comm_hook``."""
from __future__ import annotations

from enum import Enum
from functools import partial

from . import default_hooks  # noqa: F401

__all__ = ["DDPCommHookType", "register_ddp_comm_hook", "default_hooks"]


def _with_group(hook, model, state):
    model.register_comm_hook(state, hook)


class DDPCommHookType(Enum):
    """The built-in hooks, by name."""
    ALLREDUCE = partial(_with_group, default_hooks.allreduce_hook)
    FP16_COMPRESS = partial(_with_group, default_hooks.fp16_compress_hook)
    BF16_COMPRESS = partial(_with_group, default_hooks.bf16_compress_hook)


def register_ddp_comm_hook(comm_hook_type, model, state=None) -> None:
    """Register a built-in hook on a DDP model; ``state`` is the process group (None: the
    model's)."""
    comm_hook_type.value(model=model, state=state)

"""``ember.multiprocessing``: torch.multiprocessing's face — Python's ``multiprocessing`` (all
of its names), plus tensors that cross processes in shared memory (``reductions``), the
sharing strategy, and ``spawn``/``start_processes`` (``spawn.py``).

Importing it registers the reducers, so a CPU tensor put on a ``Queue``, sent through a
``Pipe`` or passed to a ``Process`` is moved to shared memory and the receiving process's
tensor writes to the same memory (pytorch/examples' mnist_hogwild: ``model.share_memory()``
then workers' in-place optimizer steps are seen by the parent)."""
from __future__ import annotations

import multiprocessing
from multiprocessing import *  # noqa: F401,F403 - torch.multiprocessing re-exports it all

from . import reductions
from .reductions import init_reductions
from .spawn import (ProcessContext, ProcessException, ProcessExitedException,  # noqa: F401
                    ProcessRaisedException, SpawnContext, spawn, start_processes)

__all__ = ["set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies"]
__all__ += multiprocessing.__all__  # type: ignore[attr-defined]
__all__ += ["ProcessContext", "ProcessExitedException", "ProcessRaisedException", "spawn",
            "SpawnContext", "start_processes", "init_reductions"]

# torch's "file_system" strategy names shared files in /dev/shm and needs a manager process to
# unlink them; ember passes descriptors only
_STRATEGIES = {"file_descriptor"}
_sharing_strategy = "file_descriptor"


def set_sharing_strategy(new_strategy: str) -> None:
    """Choose how CPU tensors are shared; ember has ``"file_descriptor"`` only."""
    if new_strategy not in _STRATEGIES:
        raise ValueError(f"set_sharing_strategy: {new_strategy!r} is not a sharing strategy "
                         f"ember has (it has {sorted(_STRATEGIES)}; torch's 'file_system' "
                         f"needs its shared-memory manager process)")
    global _sharing_strategy
    _sharing_strategy = new_strategy


def get_sharing_strategy() -> str:
    return _sharing_strategy


def get_all_sharing_strategies() -> set:
    return set(_STRATEGIES)


init_reductions()

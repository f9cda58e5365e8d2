"""``ember.distributed``: process groups, collectives with timeouts, and the ``ember-run``
launcher, on real engines (MPI through mpi4py and the ``mpich`` wheel; plug-ins such as NCCL
through the ``ember_register_process_groups`` hook).

Start a job with ``ember-run -n 4 train.py`` (or ``python -m ember.distributed.run``), then in
the script::

    import ember.distributed as dist
    dist.init_process_group("mpi")
    dist.all_reduce(t)                       # every device; host-staged for non-CPU tensors

Every collective honours the group's timeout: instead of hanging, it raises a
``DistBackendError`` naming the op, the group, the ranks that never arrived and the time waited.
Importing this package does not import mpi4py.
"""
from __future__ import annotations

from . import backend  # noqa: F401
from ._types import (DistBackendError, DistError, DistNetworkError, DistStoreError,  # noqa: F401
                     GroupMember, RedOpType, ReduceOp, default_pg_timeout, group)
from .backend import Backend, BackendContext, ProcessGroupBackend  # noqa: F401
from .collectives import (P2POp, all_gather, all_gather_into_tensor, all_reduce,  # noqa: F401
                          all_to_all, all_to_all_single, barrier, batch_isend_irecv, broadcast,
                          gather, irecv, isend, monitored_barrier, recv, reduce, reduce_scatter,
                          reduce_scatter_tensor, scatter, send)
from .objects import (all_gather_object, broadcast_object_list, gather_object,  # noqa: F401
                      scatter_object_list)
from .process_group import (ProcessGroup, destroy_process_group, get_backend,  # noqa: F401
                            get_global_rank, get_group_rank, get_process_group_ranks, get_rank,
                            get_world_size, init_process_group, is_backend_available,
                            is_gloo_available, is_initialized, is_mpi_available,
                            is_nccl_available, is_torchelastic_launched, new_group)
from .work import Work  # noqa: F401
from . import algorithms  # noqa: F401,E402
from .algorithms.ddp_comm_hooks import default_hooks as _default_hooks  # noqa: F401,E402


def is_available() -> bool:
    """True: the distributed package is part of ember (engines may still be missing; see
    ``is_mpi_available``)."""
    return True

"""The contract a process-group engine implements: :class:`ProcessGroupBackend`, made by a
factory from a :class:`BackendContext` (see ``backend.py`` for how engines are registered and
chosen). Engines (``mpi/``, a backend package's NCCL group) import only this module."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

__all__ = ["BackendContext", "ProcessGroupBackend"]


@dataclass
class BackendContext:
    """What a backend factory gets."""
    group_name: str
    rank: int                      # this process's rank in the group
    size: int
    global_ranks: list             # group rank -> global rank
    timeout: timedelta
    device_types: list             # the device types this instance will serve ("*": any)
    bootstrap: object = None       # an MPI ProcessGroup over the same members (or None)
    options: dict = field(default_factory=dict)   # pg_options passed by the user


class ProcessGroupBackend:
    """The collectives a backend implements. Every method gets contiguous tensors on a device the
    backend serves, ranks are *group* ranks, and each returns an :class:`ember.distributed.Work`
    right away (the collective runs asynchronously and honours ``self.timeout``: on expiry the
    Work fails with a ``DistBackendError`` naming the op, the group and the missing ranks).
    ``ember.distributed`` builds PyTorch's whole API (list forms, object collectives, DDP) on
    these; a backend that lacks one raises ``NotImplementedError`` and users get an error naming
    the backend and the op."""

    #: the name users pass as ``backend=``
    name = ""

    def __init__(self, context: BackendContext):
        self.context = context
        self.timeout = context.timeout

    def rank(self) -> int:
        return self.context.rank

    def size(self) -> int:
        return self.context.size

    # tensor collectives -------------------------------------------------------------------------
    def allreduce(self, tensor, op):
        raise NotImplementedError

    def broadcast(self, tensor, src):
        raise NotImplementedError

    def reduce(self, tensor, dst, op):
        raise NotImplementedError

    def allgather_into(self, output, input):
        """``output`` (``size * input.numel()`` elements) = every rank's ``input``, in rank
        order."""
        raise NotImplementedError

    def reduce_scatter_into(self, output, input, op):
        """``output`` = this rank's block of the reduction of every rank's ``input``
        (``size * output.numel()`` elements)."""
        raise NotImplementedError

    def gather_into(self, output, input, dst):
        """On ``dst``, ``output`` = every rank's ``input`` in rank order; ``output`` is None
        elsewhere."""
        raise NotImplementedError

    def scatter_from(self, output, input, src):
        """``output`` = block ``rank`` of ``src``'s ``input`` (None on the other ranks)."""
        raise NotImplementedError

    def alltoall_into(self, output, input, output_splits, input_splits):
        """Block ``j`` of ``input`` (``input_splits[j]`` elements) goes to rank ``j``; block
        ``i`` of ``output`` (``output_splits[i]`` elements) comes from rank ``i``."""
        raise NotImplementedError

    def barrier(self):
        raise NotImplementedError

    def monitored_barrier(self, timeout, wait_all_ranks):
        """A barrier that reports which ranks did not reach it. Default: ``barrier()``, whose
        timeout error already names the missing ranks."""
        return self.barrier()

    def send(self, tensor, dst, tag):
        raise NotImplementedError

    def recv(self, tensor, src, tag):
        """``src`` None: from any rank (``Work.source_rank()`` says which)."""
        raise NotImplementedError

    # life cycle ---------------------------------------------------------------------------------
    def shutdown(self) -> None:
        """Release the backend's resources (``destroy_process_group``)."""

    def abort(self) -> None:
        """Give up on outstanding work after a failure; later collectives must raise."""

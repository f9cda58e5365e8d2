"""Small public types of ``ember.distributed``: ReduceOp, the error classes, the default
timeout and the group sentinels (PyTorch's names and values)."""
from __future__ import annotations

import enum
from datetime import timedelta

__all__ = ["ReduceOp", "RedOpType", "DistError", "DistBackendError", "DistNetworkError",
           "DistStoreError", "default_pg_timeout", "GroupMember", "group"]

#: the timeout of a process group when ``init_process_group``/``new_group`` get none
default_pg_timeout = timedelta(minutes=30)


class RedOpType(enum.IntEnum):
    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7
    PREMUL_SUM = 8
    UNUSED = 9

    def __repr__(self):
        return f"<RedOpType.{self.name}: {self.value}>"


class ReduceOp:
    """Reduction operations of ``all_reduce``, ``reduce`` and ``reduce_scatter``:
    ``ReduceOp.SUM``, ``AVG``, ``PRODUCT``, ``MIN``, ``MAX``, ``BAND``, ``BOR``, ``BXOR``."""

    RedOpType = RedOpType
    SUM = RedOpType.SUM
    AVG = RedOpType.AVG
    PRODUCT = RedOpType.PRODUCT
    MIN = RedOpType.MIN
    MAX = RedOpType.MAX
    BAND = RedOpType.BAND
    BOR = RedOpType.BOR
    BXOR = RedOpType.BXOR
    PREMUL_SUM = RedOpType.PREMUL_SUM
    UNUSED = RedOpType.UNUSED

    def __new__(cls, op=RedOpType.SUM):
        return as_red_op(op, "ReduceOp")


def as_red_op(op, fn: str) -> RedOpType:
    if isinstance(op, RedOpType):
        return op
    if isinstance(op, int) and not isinstance(op, bool) and 0 <= op <= 7:
        return RedOpType(op)
    raise ValueError(f"{fn}: op must be a torch.distributed.ReduceOp (SUM, AVG, PRODUCT, MIN, "
                     f"MAX, BAND, BOR, BXOR), got {op!r}")


class DistError(RuntimeError):
    """Base of the errors the distributed package raises (``torch.distributed.DistError``)."""


class DistBackendError(DistError):
    """A collective failed in the backend: timed out, a peer is gone, or the group was aborted
    after an earlier failure."""


class DistNetworkError(DistError):
    """The transport between processes failed."""


class DistStoreError(DistError):
    """Rendezvous failed (ember's engines rendezvous through MPI, which has no store)."""


class GroupMember:
    """``GroupMember.WORLD`` is the default group once ``init_process_group`` ran;
    ``NON_GROUP_MEMBER`` is what ``new_group`` returns on ranks outside the new group."""

    WORLD = None
    NON_GROUP_MEMBER = object()


class _WorldAlias:
    """``torch.distributed.group``: ``group.WORLD`` reads the current default group."""

    @property
    def WORLD(self):  # noqa: N802 - PyTorch's name
        return GroupMember.WORLD


group = _WorldAlias()

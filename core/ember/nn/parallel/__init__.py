"""``ember.nn.parallel``: ``DistributedDataParallel`` (data parallelism over
``ember.distributed`` process groups)."""
from .distributed import DistributedDataParallel  # noqa: F401

__all__ = ["DistributedDataParallel"]

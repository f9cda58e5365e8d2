"""``ember.distributed.algorithms``: ``Join`` for uneven inputs and DDP communication hooks."""
from .join import Join, JoinHook, Joinable  # noqa: F401

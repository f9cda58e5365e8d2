"""Storage lives in the runtime (``ember.runtime.Storage``); this name is kept for old imports."""
from .runtime.storage import Storage

__all__ = ["Storage"]
